/*-------------------------------------------------------------------------
 *
 * commit.c
 *	  Fenced cluster-state commits handed from a backend to the coordinator.
 *
 * A backend on the master never calls etcd: se_cluster_commit serializes
 * the ops into a DSM segment (a mapping can be megabytes), puts its handle
 * in a free commit slot in shared memory, wakes the coordinator and waits
 * on a condition variable.  The coordinator copies the ops out, runs them
 * as one txn conditioned on the leader key still being its own (its term),
 * and answers once its watch has applied the txn's revision, so a backend
 * that returns sees its own change in the applied view.  A backend that
 * times out or is cancelled abandons its slot; the coordinator frees it
 * when it answers.  The coordinator answers from the slot's generation, so
 * a slot freed and reused meanwhile is never answered for its old use.
 *
 * Payload layout: int32 nops, then per op int32 kind, int32 prefix,
 * int64 lease, int32 key_len, int32 value_len, key bytes, value bytes;
 * then int32 ncmps, per compare int32 target, int32 op, int64 number,
 * int32 key_len, int32 value_len, key bytes, value bytes.  The caller's
 * compares go into the txn beside the fence: when they fail (and the
 * fence holds) the answer is a conflict with etcd's current revision.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"

/* Full etcd key of suffix under this cluster's prefix. */
char *
se_cluster_key(const char *suffix)
{
	return psprintf("/search_engine/%s/%s", se_cluster_name, suffix);
}

static void
put_bytes(StringInfo buf, const void *p, int len)
{
	appendBinaryStringInfo(buf, (const char *) p, len);
}

static void
serialize_ops(const SeEtcdOp *ops, int nops, StringInfo buf)
{
	int32		n = nops;
	int			i;

	put_bytes(buf, &n, sizeof(n));
	for (i = 0; i < nops; i++)
	{
		int32		kind = ops[i].kind;
		int32		prefix = ops[i].prefix;
		int64		lease = ops[i].lease;
		int32		klen = strlen(ops[i].key);
		int32		vlen = ops[i].value ? ops[i].value_len : 0;

		put_bytes(buf, &kind, sizeof(kind));
		put_bytes(buf, &prefix, sizeof(prefix));
		put_bytes(buf, &lease, sizeof(lease));
		put_bytes(buf, &klen, sizeof(klen));
		put_bytes(buf, &vlen, sizeof(vlen));
		put_bytes(buf, ops[i].key, klen);
		if (vlen > 0)
			put_bytes(buf, ops[i].value, vlen);
	}
}

static void
serialize_cmps(const SeEtcdCmp *cmps, int ncmps, StringInfo buf)
{
	int32		n = ncmps;
	int			i;

	put_bytes(buf, &n, sizeof(n));
	for (i = 0; i < ncmps; i++)
	{
		int32		target = cmps[i].target;
		int32		op = cmps[i].op;
		int64		number = cmps[i].number;
		int32		klen = strlen(cmps[i].key);
		int32		vlen = cmps[i].value ? cmps[i].value_len : 0;

		put_bytes(buf, &target, sizeof(target));
		put_bytes(buf, &op, sizeof(op));
		put_bytes(buf, &number, sizeof(number));
		put_bytes(buf, &klen, sizeof(klen));
		put_bytes(buf, &vlen, sizeof(vlen));
		put_bytes(buf, cmps[i].key, klen);
		if (vlen > 0)
			put_bytes(buf, cmps[i].value, vlen);
	}
}

/* Read len bytes at *pos of data[0..size); false past the end. */
static bool
get_bytes(const char *data, Size size, Size *pos, void *out, Size len)
{
	if (*pos + len > size)
		return false;
	memcpy(out, data + *pos, len);
	*pos += len;
	return true;
}

static char *
get_string(const char *data, Size size, Size *pos, int32 len)
{
	char	   *s;

	if (len < 0 || *pos + len > size)
		return NULL;
	s = palloc(len + 1);
	memcpy(s, data + *pos, len);
	s[len] = '\0';
	*pos += len;
	return s;
}

static bool
wake_coordinator(void)
{
	int			procno = SeCluster->worker_procno;

	if (procno < 0)
		return false;
	SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	return true;
}

/* Give up our use of slot: free it if not taken yet, else leave it to the worker. */
static void
abandon(int slot, uint64 generation)
{
	SeCommitSlot *cs = &SeCluster->commits[slot];

	SpinLockAcquire(&SeCluster->commit_mutex);
	if (cs->generation == generation)
	{
		if (cs->state == SE_COMMIT_SUBMITTED || cs->state == SE_COMMIT_DONE)
			cs->state = SE_COMMIT_FREE;
		else if (cs->state == SE_COMMIT_RUNNING)
			cs->state = SE_COMMIT_ABANDONED;
	}
	SpinLockRelease(&SeCluster->commit_mutex);
}

/* Is slot answered?  Copies the answer and frees the slot if so. */
static bool
take_answer(int slot, uint64 generation, int64 *revision, SeError *err)
{
	SeCommitSlot *cs = &SeCluster->commits[slot];
	bool		done = false;
	SeCommitSlot copy;

	SpinLockAcquire(&SeCluster->commit_mutex);
	if (cs->generation == generation && cs->state == SE_COMMIT_DONE)
	{
		copy = *cs;
		cs->state = SE_COMMIT_FREE;
		done = true;
	}
	SpinLockRelease(&SeCluster->commit_mutex);
	if (!done)
		return false;
	*revision = copy.revision;
	if (!copy.ok)
		se_error_set(err, copy.err_status, pstrdup(copy.err_type), "%s", copy.err_reason);
	return true;
}

bool
se_cluster_commit(const SeEtcdOp *ops, int nops, int64 *revision, SeError *err)
{
	bool		conflict;

	if (se_cluster_commit_if(NULL, 0, ops, nops, revision, &conflict, err))
		return true;
	if (conflict)
		se_error_set(err, 409, "illegal_state_exception",
					 "cluster state commit without compares met a conflict");
	return false;
}

/*
 * se_cluster_commit, only if every compare of cmps holds as well; when one
 * does not (and the fence holds), false with *conflict and *revision
 * etcd's revision then: the caller waits until it applied that revision,
 * reads again and retries.
 */
bool
se_cluster_commit_if(const SeEtcdCmp *cmps, int ncmps, const SeEtcdOp *ops, int nops,
					 int64 *revision, bool *conflict, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	StringInfoData buf;
	dsm_segment *seg;
	int			slot = -1;
	uint64		generation = 0;
	TimestampTz deadline;
	volatile bool answered = false;
	int			i;

	se_cluster_view(v);
	if (v->single_node)
	{
		se_error_set(err, 500, "illegal_state_exception",
					 "cluster state commits need etcd: search_engine.etcd_endpoints is empty");
		return false;
	}
	if (!v->acting_master)
	{
		if (v->master[0] == '\0')
			se_error_set(err, 503, "master_not_discovered_exception",
						 "no master is known to node [%s]", v->local_name);
		else
			se_error_set(err, 503, "master_not_discovered_exception",
						 "node [%s] is not the elected master; the master is [%s]",
						 v->local_name, v->master);
		return false;
	}
	*conflict = false;
	initStringInfo(&buf);
	serialize_ops(ops, nops, &buf);
	serialize_cmps(cmps, ncmps, &buf);
	seg = dsm_create(buf.len, 0);
	memcpy(dsm_segment_address(seg), buf.data, buf.len);
	pfree(buf.data);

	SpinLockAcquire(&SeCluster->commit_mutex);
	for (i = 0; i < SE_CLUSTER_COMMIT_SLOTS; i++)
		if (SeCluster->commits[i].state == SE_COMMIT_FREE)
		{
			SeCommitSlot *cs = &SeCluster->commits[i];

			slot = i;
			cs->generation++;
			generation = cs->generation;
			cs->handle = dsm_segment_handle(seg);
			cs->requester_procno = MyProc->pgprocno;
			cs->state = SE_COMMIT_SUBMITTED;
			break;
		}
	SpinLockRelease(&SeCluster->commit_mutex);
	if (slot < 0)
	{
		dsm_detach(seg);
		se_error_set(err, 429, "es_rejected_execution_exception",
					 "rejected cluster state commit: %d commits are already waiting for the master",
					 SE_CLUSTER_COMMIT_SLOTS);
		return false;
	}
	if (!wake_coordinator())
	{
		abandon(slot, generation);
		dsm_detach(seg);
		se_error_set(err, 503, "master_not_discovered_exception",
					 "the coordinator of node [%s] is not running", v->local_name);
		return false;
	}

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SE_CLUSTER_COMMIT_TIMEOUT_MS);
	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&SeCluster->commit_cv);
		for (;;)
		{
			long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

			if (take_answer(slot, generation, revision, err))
			{
				answered = true;
				break;
			}
			if (left <= 0)
				break;
			(void) ConditionVariableTimedSleep(&SeCluster->commit_cv, Min(left, 1000),
											   PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		abandon(slot, generation);
		PG_RE_THROW();
	}
	PG_END_TRY();
	dsm_detach(seg);
	if (answered && se_error_is_set(err) && strcmp(err->type, SE_COMMIT_CONFLICT) == 0)
	{
		*conflict = true;
		se_error_init(err);
		return false;
	}
	if (!answered)
	{
		abandon(slot, generation);
		se_error_set(err, 503, "process_cluster_event_timeout_exception",
					 "failed to process cluster event (cluster state commit) within %ds",
					 SE_CLUSTER_COMMIT_TIMEOUT_MS / 1000);
		return false;
	}
	return !se_error_is_set(err);
}

/* ---------- the coordinator's side ---------- */

/* Take the next submitted commit (RUNNING from now on); -1 if none. */
int
se_commit_take(uint64 *generation)
{
	int			i;
	int			slot = -1;

	SpinLockAcquire(&SeCluster->commit_mutex);
	for (i = 0; i < SE_CLUSTER_COMMIT_SLOTS; i++)
		if (SeCluster->commits[i].state == SE_COMMIT_SUBMITTED)
		{
			SeCluster->commits[i].state = SE_COMMIT_RUNNING;
			*generation = SeCluster->commits[i].generation;
			slot = i;
			break;
		}
	SpinLockRelease(&SeCluster->commit_mutex);
	return slot;
}

/*
 * Copy a taken commit's ops out of its requester's DSM segment into
 * CurrentMemoryContext; NULL (err set) if the requester left or the
 * payload is malformed.
 */
SeEtcdOp *
se_commit_read_ops(int slot, int *nops, SeEtcdCmp **cmps_out, int *ncmps, SeError *err)
{
	dsm_segment *seg = dsm_attach(SeCluster->commits[slot].handle);
	const char *data;
	Size		size;
	Size		pos = 0;
	int32		n;
	SeEtcdOp   *ops = NULL;
	int			i;

	if (seg == NULL)
	{
		se_error_set(err, 503, "process_cluster_event_timeout_exception",
					 "the requester of the cluster state commit left");
		return NULL;
	}
	data = dsm_segment_address(seg);
	size = dsm_segment_map_length(seg);
	if (!get_bytes(data, size, &pos, &n, sizeof(n)) || n < 0 || n > 100000)
		goto bad;
	ops = palloc0(sizeof(SeEtcdOp) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		int32		kind,
					prefix,
					klen,
					vlen;
		int64		lease;

		if (!get_bytes(data, size, &pos, &kind, sizeof(kind)) ||
			!get_bytes(data, size, &pos, &prefix, sizeof(prefix)) ||
			!get_bytes(data, size, &pos, &lease, sizeof(lease)) ||
			!get_bytes(data, size, &pos, &klen, sizeof(klen)) ||
			!get_bytes(data, size, &pos, &vlen, sizeof(vlen)))
			goto bad;
		ops[i].kind = (SeEtcdOpKind) kind;
		ops[i].prefix = prefix != 0;
		ops[i].lease = lease;
		if ((ops[i].key = get_string(data, size, &pos, klen)) == NULL ||
			(ops[i].value = get_string(data, size, &pos, vlen)) == NULL)
			goto bad;
		ops[i].value_len = vlen;
	}
	*nops = n;
	if (!get_bytes(data, size, &pos, &n, sizeof(n)) || n < 0 || n > 100000)
		goto bad;
	*cmps_out = palloc0(sizeof(SeEtcdCmp) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		SeEtcdCmp  *c = &(*cmps_out)[i];
		int32		target,
					op,
					klen,
					vlen;
		int64		number;

		if (!get_bytes(data, size, &pos, &target, sizeof(target)) ||
			!get_bytes(data, size, &pos, &op, sizeof(op)) ||
			!get_bytes(data, size, &pos, &number, sizeof(number)) ||
			!get_bytes(data, size, &pos, &klen, sizeof(klen)) ||
			!get_bytes(data, size, &pos, &vlen, sizeof(vlen)))
			goto bad;
		c->target = (SeEtcdTarget) target;
		c->op = (SeEtcdCmpOp) op;
		c->number = number;
		if ((c->key = get_string(data, size, &pos, klen)) == NULL ||
			(c->value = get_string(data, size, &pos, vlen)) == NULL)
			goto bad;
		c->value_len = vlen;
	}
	*ncmps = n;
	dsm_detach(seg);
	return ops;

bad:
	dsm_detach(seg);
	se_error_set(err, 500, "illegal_state_exception", "malformed cluster state commit");
	return NULL;
}

/* Answer a taken commit (a slot its requester abandoned is freed). */
void
se_commit_answer(int slot, uint64 generation, bool ok, int64 revision, const SeError *err)
{
	SeCommitSlot *cs = &SeCluster->commits[slot];

	SpinLockAcquire(&SeCluster->commit_mutex);
	if (cs->generation == generation)
	{
		if (cs->state == SE_COMMIT_ABANDONED)
			cs->state = SE_COMMIT_FREE;
		else if (cs->state == SE_COMMIT_RUNNING)
		{
			cs->ok = ok;
			cs->revision = revision;
			if (!ok)
			{
				cs->err_status = err->status;
				strlcpy(cs->err_type, err->type, sizeof(cs->err_type));
				strlcpy(cs->err_reason, err->reason ? err->reason : "", sizeof(cs->err_reason));
			}
			cs->state = SE_COMMIT_DONE;
		}
	}
	SpinLockRelease(&SeCluster->commit_mutex);
	ConditionVariableBroadcast(&SeCluster->commit_cv);
}

/*
 * At the coordinator's start: commits a previous run took and never
 * answered (it exited) are answered with an error, abandoned ones freed.
 */
void
se_commit_worker_start(void)
{
	int			i;

	SpinLockAcquire(&SeCluster->commit_mutex);
	for (i = 0; i < SE_CLUSTER_COMMIT_SLOTS; i++)
	{
		SeCommitSlot *cs = &SeCluster->commits[i];

		if (cs->state == SE_COMMIT_ABANDONED)
			cs->state = SE_COMMIT_FREE;
		else if (cs->state == SE_COMMIT_RUNNING)
		{
			cs->ok = false;
			cs->err_status = 503;
			strlcpy(cs->err_type, "process_cluster_event_timeout_exception", sizeof(cs->err_type));
			strlcpy(cs->err_reason, "the coordinator restarted while it ran this cluster state commit; it may or may not have been applied",
					sizeof(cs->err_reason));
			cs->state = SE_COMMIT_DONE;
		}
	}
	SpinLockRelease(&SeCluster->commit_mutex);
	ConditionVariableBroadcast(&SeCluster->commit_cv);
}
