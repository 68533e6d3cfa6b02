/*-------------------------------------------------------------------------
 *
 * recovery_target.c
 *	  Peer recovery, the replica's side: the node's table of recoveries,
 *	  the owner's entry point se_recovery_start_replica, and the recovery
 *	  worker that copies a shard from its primary's node.
 *
 * The owner of a replica slot never waits on the network: it starts a
 * recovery worker (a dynamic background worker, one per recovering shard)
 * and goes on serving its other shards; it opens the shard once the worker
 * says the files are in place (stage READY), which the worker signals
 * through the owner's latch.  The worker:
 *
 *	 1. recovery_start on the source: the source pins its newest commit and
 *		the translog from it, and lists the commit's files with length and
 *		CRC32C (the files' footers);
 *	 2. INDEX: compares with the files already in the target's index
 *		directory -- same name, length and checksum is the same file (ES's
 *		Store.MetadataSnapshot.recoveryDiff) and is reused -- and fetches
 *		the others as streams of 1 MB rows (recovery_file), a file cut
 *		into 64 MB windows, indices.recovery.max_concurrent_file_chunks
 *		(2) windows at a time, throttled by
 *		indices.recovery.max_bytes_per_sec; every chunk's CRC32C and
 *		every file's footer CRC32C is checked, a mismatch fails the attempt
 *		(ES's "checksum failed"), and the files are written to a temporary
 *		directory, fsynced, then renamed into place;
 *	 3. VERIFY_INDEX: files of the target not in the source's commit go
 *		(an older commit point would otherwise be opened), the directory is
 *		fsynced;
 *	 4. TRANSLOG: the source's translog records from the commit's
 *		generation are written into the target's translog, same
 *		generations (recovery_ops);
 *	 5. READY: the owner opens the shard, which is an ordinary local
 *		recovery (commit + translog replay): the copy has the primary's
 *		documents with their _seq_no, _primary_term and _version;
 *	 6. FINALIZE: recovery_finalize drops the source's pins; DONE.
 *
 * A failed attempt is retried by the owner (1 s, 2 s, ... later) up to
 * SE_RECOVERY_MAX_ATTEMPTS times, reusing what the earlier attempts
 * copied; then the slot fails and the master hears shard_failed.
 *
 * A closed index's copy has no slot and no owner: the shard-state worker
 * starts and follows its recovery (se_recovery_closed_copy, slot -1),
 * which stops after step 4 with recovery_finalize -- nothing is opened,
 * and nothing can have been written to a closed index since the copy.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_crc32c.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/api.h"
#include "cluster/cluster_settings.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "replication/recovery.h"
#include "replication/replication.h"
#include "shard/engine.h"
#include "shard/translog.h"
#include "transport/transport.h"
#include "util/crc32c.h"
#include "util/fileio.h"
#include "util/units.h"
#include "util/varint.h"

#define CALL_TIMEOUT_MS		60000
#define RETRY_BASE_MS		1000
#define THROTTLE_QUANTUM_MS	200

typedef struct SeRecoveryShared
{
	slock_t		mutex;			/* allocating and freeing entries */
	SeRecovery	recs[SE_MAX_RECOVERIES];
} SeRecoveryShared;

static SeRecoveryShared *RecShmem = NULL;

/* the owner's handles of the workers it started, by entry */
static BackgroundWorkerHandle *handles[SE_MAX_RECOVERIES];

Size
se_recovery_shmem_size(void)
{
	return MAXALIGN(sizeof(SeRecoveryShared));
}

void
se_recovery_shmem_init(void)
{
	bool		found;

	RecShmem = ShmemInitStruct("search_engine recoveries", se_recovery_shmem_size(), &found);
	if (!found)
	{
		memset(RecShmem, 0, se_recovery_shmem_size());
		SpinLockInit(&RecShmem->mutex);
	}
}

/* indices.recovery.max_bytes_per_sec in bytes a second; 0 = unthrottled */
int64
se_recovery_max_bytes_per_sec(void)
{
	const SeClusterState *st = se_state_current();
	const char *v = se_csettings_get(&st->persistent, &st->transient,
									 "indices.recovery.max_bytes_per_sec");
	int64		b = 0;

	if (v == NULL || strcmp(v, "-1") == 0 || !se_parse_byte_size(v, &b))
		return 0;
	return b;
}

/* ---------- the owner's side ---------- */

static bool
rec_matches(const SeRecovery *r, int slot_no)
{
	const SeShardSlot *s;

	if (slot_no < 0)
		return false;			/* a closed copy's recovery has no slot */
	s = &SeSlots[slot_no];
	return r->stage != SE_REC_FREE && r->slot == slot_no && r->shard == s->shard &&
		strcmp(r->index_uuid, s->index_uuid) == 0;
}

/* A free entry, else the oldest finished one (its row leaves _cat/recovery). */
static int
rec_allocate(void)
{
	int			i;
	int			best = -1;

	SpinLockAcquire(&RecShmem->mutex);
	for (i = 0; i < SE_MAX_RECOVERIES; i++)
		if (RecShmem->recs[i].stage == SE_REC_FREE)
		{
			best = i;
			break;
		}
	if (best < 0)
		for (i = 0; i < SE_MAX_RECOVERIES; i++)
		{
			SeRecovery *r = &RecShmem->recs[i];

			if ((r->stage == SE_REC_DONE ||
				 (r->stage == SE_REC_FAILED && (r->slot < 0 || SeSlots[r->slot].state != SE_SLOT_OPENING))) &&
				(best < 0 || r->stop_time < RecShmem->recs[best].stop_time))
				best = i;
		}
	if (best >= 0)
	{
		memset(&RecShmem->recs[best], 0, sizeof(SeRecovery));
		RecShmem->recs[best].stage = SE_REC_INIT;
	}
	SpinLockRelease(&RecShmem->mutex);
	return best;
}

static void
rec_fail(SeRecovery *r, const char *why)
{
	r->attempts++;
	strlcpy(r->failure, why, sizeof(r->failure));
	r->stop_time = GetCurrentTimestamp();
	r->retry_at = TimestampTzPlusMilliseconds(r->stop_time, RETRY_BASE_MS * r->attempts);
	pg_write_barrier();
	r->stage = SE_REC_FAILED;
}

/* Start a recovery worker for entry i; false (entry failed) when none can be. */
static bool
rec_launch(int i)
{
	BackgroundWorker bgw;
	SeRecovery *r = &RecShmem->recs[i];

	if (handles[i])
	{
		pfree(handles[i]);
		handles[i] = NULL;
	}
	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "search_engine");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "se_recovery_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "search_engine recovery %s[%d]", r->index_uuid, r->shard);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "search_engine recovery");
	bgw.bgw_main_arg = Int32GetDatum(i);
	bgw.bgw_notify_pid = MyProcPid;
	r->worker_pid = 0;
	r->start_time = GetCurrentTimestamp();
	r->stop_time = 0;
	pg_write_barrier();
	r->stage = SE_REC_INIT;
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		bool		ok = RegisterDynamicBackgroundWorker(&bgw, &handles[i]);

		MemoryContextSwitchTo(old);
		if (!ok)
		{
			handles[i] = NULL;
			rec_fail(r, "no background worker slot for a recovery worker (max_worker_processes)");
			return false;
		}
	}
	return true;
}

/* Did entry i's worker go away without saying how it ended? */
static bool
rec_worker_gone(int i)
{
	SeRecovery *r = &RecShmem->recs[i];
	pid_t		pid;

	if (handles[i])
		return GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED;
	/* started by an earlier incarnation of this owner */
	return r->worker_pid != 0 && kill(r->worker_pid, 0) != 0 && errno == ESRCH;
}

/*
 * Is a closed copy's recovery of (uuid, shard) still writing into the
 * shard's directory here?  The index was reopened under it: the worker
 * stops at its next check, and an open copy's recovery must not share the
 * directory with it until then.
 */
static bool
closed_recovery_running(const char *uuid, int shard)
{
	int			i;

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
	{
		SeRecovery *r = &RecShmem->recs[i];
		int			stage = r->stage;

		if (r->slot < 0 && stage >= SE_REC_INIT && stage <= SE_REC_FINALIZE &&
			r->shard == shard && strcmp(r->index_uuid, uuid) == 0 &&
			r->worker_pid > 0 && !(kill(r->worker_pid, 0) != 0 && errno == ESRCH))
			return true;
	}
	return false;
}

bool
se_recovery_start_replica(int slot_no)
{
	SeShardSlot *s = &SeSlots[slot_no];
	int			i;
	SeRecovery *r;

	if (closed_recovery_running(s->index_uuid, s->shard))
		return false;			/* try again on the next scan */

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
		if (rec_matches(&RecShmem->recs[i], slot_no))
			break;
	if (i < SE_MAX_RECOVERIES)
	{
		r = &RecShmem->recs[i];
		pg_read_barrier();
		switch ((SeRecoveryStage) r->stage)
		{
			case SE_REC_READY:
				if (strcmp(r->allocation_id, s->allocation_id) == 0)
					return true;
				break;			/* another copy's files: recover this one */
			case SE_REC_FAILED:
				if (strcmp(r->allocation_id, s->allocation_id) != 0)
					break;		/* another copy in this slot now: start afresh */
				if (r->attempts >= SE_RECOVERY_MAX_ATTEMPTS)
					ereport(ERROR,
							(errcode(ERRCODE_CONNECTION_FAILURE),
							 errmsg("peer recovery of shard [%s][%d] from node [%s] failed %d times: %s",
									r->index_uuid, r->shard, r->source_node, r->attempts,
									r->failure),
							 errdetail("recovery_failed_exception")));
				if (GetCurrentTimestamp() >= r->retry_at)
				{
					strlcpy(r->source_node, s->primary_node, sizeof(r->source_node));
					(void) rec_launch(i);
				}
				return false;
			case SE_REC_DONE:
				/* an earlier recovery of this slot: the copy is opening again */
				break;
			default:
				if (rec_worker_gone(i))
					rec_fail(r, "the recovery worker exited");
				return false;
		}
	}
	else if ((i = rec_allocate()) < 0)
		return false;			/* every entry busy: try on the next scan */
	r = &RecShmem->recs[i];
	r->slot = slot_no;
	strlcpy(r->index_uuid, s->index_uuid, sizeof(r->index_uuid));
	r->shard = s->shard;
	strlcpy(r->source_node, s->primary_node, sizeof(r->source_node));
	strlcpy(r->target_node, se_cluster_node_name(), sizeof(r->target_node));
	strlcpy(r->allocation_id, s->allocation_id, sizeof(r->allocation_id));
	r->attempts = 0;
	r->failure[0] = '\0';
	/* a new copy's recovery: no progress of an earlier copy in its row */
	r->files_total = r->files_reused = r->files_recovered = r->files_to_recover = 0;
	r->bytes_total = r->bytes_reused = r->bytes_recovered = r->bytes_to_recover = 0;
	r->ops_recovered = 0;
	r->ops_total = -1;
	r->throttle_ms = 0;
	(void) rec_launch(i);
	return false;
}

bool
se_recovery_in_progress(int slot_no)
{
	int			i;

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
	{
		SeRecovery *r = &RecShmem->recs[i];
		int			stage = r->stage;

		if (rec_matches(r, slot_no) && stage >= SE_REC_INIT && stage <= SE_REC_FINALIZE)
			return true;
	}
	return false;
}

void
se_recovery_forget_slot(int slot_no)
{
	int			i;

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
	{
		SeRecovery *r = &RecShmem->recs[i];

		if (r->slot == slot_no && r->stage != SE_REC_FREE &&
			r->stage != SE_REC_DONE && r->stage != SE_REC_FAILED)
		{
			if (r->worker_pid > 0)
				(void) kill(r->worker_pid, SIGTERM);
		}
	}
}

/*
 * A closed index's copy placed on this node to be built (a replica, a
 * moving copy's target): it has no slot and is never opened, so the
 * shard-state worker drives its recovery here instead of an owner.  The
 * recovery worker copies the primary's files and translog as for an open
 * copy (steps 1-4) and finalizes at once: a closed index takes no writes,
 * so there is nothing to track or catch up, and nothing is opened.
 * Returns 1 when the files are in place (report the copy started), -1
 * when it failed SE_RECOVERY_MAX_ATTEMPTS times (failure says why), 0
 * while it runs or waits to retry.  Entries are keyed by the copy's
 * allocation id (slot -1).
 */
int
se_recovery_closed_copy(const char *uuid, int shard, const char *allocation_id,
						const char *source_node, char *failure, size_t failure_len)
{
	int			i;
	SeRecovery *r;

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
	{
		r = &RecShmem->recs[i];
		if (r->stage != SE_REC_FREE && r->slot < 0 && r->shard == shard &&
			strcmp(r->index_uuid, uuid) == 0 && strcmp(r->allocation_id, allocation_id) == 0)
			break;
	}
	if (i < SE_MAX_RECOVERIES)
	{
		pg_read_barrier();
		switch ((SeRecoveryStage) r->stage)
		{
			case SE_REC_DONE:
				return 1;
			case SE_REC_FAILED:
				if (r->attempts >= SE_RECOVERY_MAX_ATTEMPTS)
				{
					snprintf(failure, failure_len,
							 "peer recovery of closed shard [%s][%d] from node [%s] failed %d times: %s",
							 r->index_uuid, r->shard, r->source_node, r->attempts, r->failure);
					return -1;
				}
				if (GetCurrentTimestamp() >= r->retry_at)
				{
					strlcpy(r->source_node, source_node, sizeof(r->source_node));
					(void) rec_launch(i);
				}
				return 0;
			default:
				if (rec_worker_gone(i))
					rec_fail(r, "the recovery worker exited");
				return 0;
		}
	}
	if ((i = rec_allocate()) < 0)
		return 0;				/* every entry busy: try on the next scan */
	r = &RecShmem->recs[i];
	r->slot = -1;
	strlcpy(r->index_uuid, uuid, sizeof(r->index_uuid));
	r->shard = shard;
	strlcpy(r->source_node, source_node, sizeof(r->source_node));
	strlcpy(r->target_node, se_cluster_node_name(), sizeof(r->target_node));
	strlcpy(r->allocation_id, allocation_id, sizeof(r->allocation_id));
	r->attempts = 0;
	r->failure[0] = '\0';
	r->ops_total = -1;
	(void) rec_launch(i);
	return 0;
}

/* ---------- the recovery worker ---------- */

/* this worker's entry (check_stop looks whether a closed copy is still wanted) */
static SeRecovery *MyRecovery = NULL;

/* A closed copy's recovery goes on while the routing still wants that copy here. */
static bool
closed_copy_wanted(const SeRecovery *r)
{
	SeIndexMeta *im = se_state_find_uuid(se_state_current(), r->index_uuid);
	const SeShardCopy *c;

	if (im == NULL || !im->closed || im->routing == NULL ||
		r->shard >= im->settings.number_of_shards)
		return false;
	c = se_state_local_copy(im, r->shard);
	return c != NULL && c->state == SE_SHARD_INITIALIZING &&
		strcmp(c->allocation_id, r->allocation_id) == 0;
}

typedef struct RecFile
{
	char	   *name;
	uint64		length;
	uint32		crc;
	bool		reuse;
} RecFile;

typedef struct RecCtx
{
	SeRecovery *r;
	const char *index_name;
	const char *conninfo;
	char	   *rid;
	char	   *shard_path;
	/* throttling window */
	int64		rate;
	TimestampTz window_start;
	uint64		window_bytes;
} RecCtx;

static void
wake_owner(const SeRecovery *r)
{
	int			owner;
	int			procno;

	if (r->slot < 0)
	{
		/* a closed copy: the shard-state worker waits on slot_cv */
		ConditionVariableBroadcast(&SeShmem->slot_cv);
		return;
	}
	owner = SeSlots[r->slot].owner;
	procno = owner >= 0 ? SeShmem->workers[owner].procno : -1;
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* One call to the source; its error (or ours) is raised. */
static void
call_source(RecCtx *c, const char *action, StringInfo payload, StringInfo reply)
{
	SeTransportCall call;

	memset(&call, 0, sizeof(call));
	call.node = c->r->source_node;
	call.conninfo = c->conninfo;
	call.action = action;
	call.payload = payload->data;
	call.payload_len = payload->len;
	se_transport_call_all_or_error(&call, 1, CALL_TIMEOUT_MS);
	resetStringInfo(reply);
	appendBinaryStringInfo(reply, call.reply.data, call.reply.len);
}

static void
put_pin(RecCtx *c, StringInfo p)
{
	se_put_str(p, c->r->index_uuid, strlen(c->r->index_uuid));
	se_put_vint(p, (uint64) c->r->shard);
	se_put_str(p, c->rid, strlen(c->rid));
}

/*
 * Keep to indices.recovery.max_bytes_per_sec (read again as it may change
 * during a recovery, as ES's is dynamic): after n more bytes, sleep until
 * the window's bytes are due.
 */
static void check_stop(void);

static void
throttle(RecCtx *c, size_t n)
{
	int64		rate = se_recovery_max_bytes_per_sec();
	TimestampTz now = GetCurrentTimestamp();
	long		due_ms;
	long		elapsed_ms;

	if (rate != c->rate)
	{
		c->rate = rate;
		c->window_start = now;
		c->window_bytes = 0;
	}
	if (rate <= 0)
		return;
	c->window_bytes += n;
	due_ms = (long) ((double) c->window_bytes * 1000.0 / (double) rate);
	elapsed_ms = (long) ((now - c->window_start) / 1000);
	/*
	 * Pause only once ahead by a quantum: a short pause per 1 MB row stops
	 * the stream (the source blocks on a full socket) as often, and on a
	 * loaded machine each restart waits for both processes to be scheduled
	 * again -- the copy then falls well below the rate it is held to.
	 */
	if (due_ms - elapsed_ms < THROTTLE_QUANTUM_MS)
		return;
	while (due_ms > elapsed_ms && !se_bgw_got_sigterm)
	{
		/* a second at most: a closed copy's recovery looks if it is wanted still */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(due_ms - elapsed_ms, 1000), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		check_stop();
		now = GetCurrentTimestamp();
		c->r->throttle_ms += (uint64) Max(0, (long) ((now - c->window_start) / 1000) - elapsed_ms);
		elapsed_ms = (long) ((now - c->window_start) / 1000);
	}
}

static void
check_stop(void)
{
	CHECK_FOR_INTERRUPTS();
	if (se_bgw_got_sigterm)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("peer recovery cancelled"),
				 errdetail("recovery_failed_exception")));
	/* no owner stops a closed copy's recovery: the routing says */
	if (MyRecovery && MyRecovery->slot < 0 && !closed_copy_wanted(MyRecovery))
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("peer recovery cancelled: the closed copy is no longer placed on this node"),
				 errdetail("recovery_failed_exception")));
}

/* write len bytes at off, or at the file's position when off < 0 */
static void
pwrite_all(int fd, const char *data, size_t len, off_t off, const char *path)
{
	while (len > 0)
	{
		ssize_t		n = off < 0 ? write(fd, data, len) : pg_pwrite(fd, data, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write \"%s\" during a peer recovery: %m", path)));
		data += n;
		len -= n;
		if (off >= 0)
			off += n;
	}
}

static void
write_all(int fd, const char *data, size_t len, const char *path)
{
	pwrite_all(fd, data, len, -1, path);
}

static void
fsync_fd(int fd, const char *path)
{
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync \"%s\" during a peer recovery: %m", path)));
}

/*
 * The files to fetch, cut into windows of at most WINDOW bytes; up to
 * indices.recovery.max_concurrent_file_chunks windows (ES's setting: its
 * chunks in flight at once, default 2) stream at a time, each its own
 * recovery_file call on a connection of its own, so that several backends
 * of the source read and send while this worker checks and writes.
 */
#define WINDOW			(64 * 1024 * 1024)
#define MAX_LANES		8

/* a file being fetched, possibly by several windows at once */
typedef struct FetchFile
{
	const RecFile *f;
	char	   *path;
	int			fd;				/* open from its first window to its last */
	uint64		body;			/* bytes the footer's CRC32C covers */
	int			nwindows;
	int			windows_done;
	uint32	   *crc;			/* per window: CRC32C of its bytes below body */
} FetchFile;

/* a window in flight: the rows of one recovery_file stream */
typedef struct FetchWindow
{
	RecCtx	   *c;
	FetchFile  *ff;
	int			w;				/* its number in ff */
	uint64		start;
	uint64		end;
	uint64		off;			/* the next byte expected */
	uint64		flushed;		/* handed to the kernel's write-back up to */
	StringInfoData payload;
} FetchWindow;

typedef struct Fetch
{
	RecCtx	   *c;
	const char *dir;
	FetchFile  *files;
	int			nfiles;
	int			next_file;		/* the next window to hand out */
	int			next_window;
	FetchWindow lanes[MAX_LANES];
	bool		busy[MAX_LANES];
} Fetch;

/* write-back is started every this many bytes, so the fsync finds little */
#define FLUSH_AFTER		(8 * 1024 * 1024)

/*
 * One row of recovery_file: the chunk's CRC32C, then the chunk.  Its bytes
 * are read once here: the chunk's CRC is computed in two parts where the
 * file's footer begins, and the file's CRC32C is had by combining (no
 * second pass over the bytes, in any order of the windows).
 */
static void
file_row(void *arg, const char *row, size_t len)
{
	FetchWindow *fw = arg;
	FetchFile  *ff = fw->ff;
	const uint8 *b = (const uint8 *) row;
	const char *data = row + 4;
	size_t		n = len >= 4 ? len - 4 : 0;
	size_t		in_body;
	uint32		sent_crc;
	uint32		body_crc;
	uint32		crc;

	check_stop();
	if (len < 4 || fw->off + n > fw->end)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("peer recovery: malformed chunk of [%s] at offset " UINT64_FORMAT,
						ff->f->name, fw->off),
				 errdetail("recovery_failed_exception")));
	sent_crc = (uint32) b[0] | ((uint32) b[1] << 8) | ((uint32) b[2] << 16) | ((uint32) b[3] << 24);
	in_body = fw->off >= ff->body ? 0 : (size_t) Min((uint64) n, ff->body - fw->off);
	body_crc = se_crc32c(data, in_body);
	crc = in_body == n ? body_crc
		: se_crc32c_combine(body_crc, se_crc32c(data + in_body, n - in_body), n - in_body);
	if (crc != sent_crc)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("checksum failed (hardware problem?) : expected=%08x actual=%08x "
						"in chunk of file [%s] at offset " UINT64_FORMAT,
						sent_crc, crc, ff->f->name, fw->off),
				 errdetail("corrupt_index_exception")));
	ff->crc[fw->w] = se_crc32c_combine(ff->crc[fw->w], body_crc, in_body);
	pwrite_all(ff->fd, data, n, (off_t) fw->off, ff->path);
	fw->off += n;
	if (fw->off - fw->flushed >= FLUSH_AFTER)
	{
		pg_flush_data(ff->fd, fw->flushed, fw->off - fw->flushed);
		fw->flushed = fw->off;
	}
	fw->c->r->bytes_recovered += n;
	throttle(fw->c, n);
}

/*
 * A file's windows are all in: its length and its footer's CRC32C (of
 * every byte before the footer, combined from the windows') are checked
 * against the source's; one fsync per file.
 */
static void
file_done(Fetch *fe, FetchFile *ff)
{
	uint32		crc = 0;
	int			w;

	for (w = 0; w < ff->nwindows; w++)
	{
		uint64		ws = (uint64) w * WINDOW;
		uint64		we = Min(ws + WINDOW, ff->body);

		crc = se_crc32c_combine(crc, ff->crc[w], we > ws ? we - ws : 0);
	}
	if (crc != ff->f->crc)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("checksum failed (hardware problem?) : expected=%08x actual=%08x in file [%s]",
						ff->f->crc, crc, ff->f->name),
				 errdetail("corrupt_index_exception")));
	fsync_fd(ff->fd, ff->path);
	CloseTransientFile(ff->fd);
	ff->fd = -1;
	fe->c->r->files_recovered++;
}

/*
 * se_transport_streams' next: the lane's window ended (if it had one: it
 * must have come whole), then the lane takes the next window, files in
 * order (a file is opened with its first window).
 */
static bool
next_window(void *ctx, int lane, SeTransportStreamReq *req)
{
	Fetch	   *fe = ctx;
	FetchWindow *fw = &fe->lanes[lane];
	FetchFile  *ff;

	if (fe->busy[lane])
	{
		fe->busy[lane] = false;
		if (fw->off != fw->end)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("peer recovery: file [%s] ended at " UINT64_FORMAT " of " UINT64_FORMAT " bytes",
							fw->ff->f->name, fw->off, fw->ff->f->length),
					 errdetail("recovery_failed_exception")));
		if (++fw->ff->windows_done == fw->ff->nwindows)
			file_done(fe, fw->ff);
	}
	if (fe->next_file >= fe->nfiles)
		return false;
	ff = &fe->files[fe->next_file];
	if (fe->next_window == 0)
	{
		ff->fd = OpenTransientFile(ff->path, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
		if (ff->fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create \"%s\" during a peer recovery: %m", ff->path)));
	}
	fw->c = fe->c;
	fw->ff = ff;
	fw->w = fe->next_window;
	fw->start = fw->off = fw->flushed = (uint64) fw->w * WINDOW;
	fw->end = Min(fw->start + WINDOW, ff->f->length);
	resetStringInfo(&fw->payload);
	put_pin(fe->c, &fw->payload);
	se_put_str(&fw->payload, ff->f->name, strlen(ff->f->name));
	se_put_vint(&fw->payload, fw->start);
	se_put_vint(&fw->payload, fw->end);
	if (++fe->next_window == ff->nwindows)
	{
		fe->next_file++;
		fe->next_window = 0;
	}
	fe->busy[lane] = true;
	req->payload = fw->payload.data;
	req->payload_len = fw->payload.len;
	req->arg = fw;
	check_stop();
	return true;
}

/* indices.recovery.max_concurrent_file_chunks, within 1 .. MAX_LANES */
static int
recovery_lanes(void)
{
	const SeClusterState *st = se_state_current();
	int			n = se_csettings_int(&st->persistent, &st->transient,
									 "indices.recovery.max_concurrent_file_chunks");

	return Max(1, Min(n, MAX_LANES));
}

/*
 * Fetch files[] (those not reused) into dir, each chunk's and each file's
 * CRC32C checked against the source's.
 */
static void
fetch_files(RecCtx *c, RecFile *files, int nfiles, const char *dir)
{
	Fetch		fe;
	SeError		err;
	int			i;

	memset(&fe, 0, sizeof(fe));
	fe.c = c;
	fe.dir = dir;
	fe.files = palloc0(sizeof(FetchFile) * Max(1, nfiles));
	for (i = 0; i < nfiles; i++)
	{
		FetchFile  *ff;

		if (files[i].reuse)
			continue;
		ff = &fe.files[fe.nfiles++];
		ff->f = &files[i];
		ff->path = psprintf("%s/%s", dir, files[i].name);
		ff->fd = -1;
		ff->body = files[i].length >= SE_FILE_FOOTER_LEN ? files[i].length - SE_FILE_FOOTER_LEN : 0;
		/* an empty file is one empty window */
		ff->nwindows = Max(1, (int) ((files[i].length + WINDOW - 1) / WINDOW));
		ff->crc = palloc0(sizeof(uint32) * ff->nwindows);
	}
	for (i = 0; i < MAX_LANES; i++)
		initStringInfo(&fe.lanes[i].payload);
	se_error_init(&err);
	check_stop();
	if (fe.nfiles > 0 &&
		!se_transport_streams(c->r->source_node, c->conninfo, "recovery_file",
							  Min(recovery_lanes(), fe.nfiles == 1 ? fe.files[0].nwindows : MAX_LANES),
							  next_window, &fe, file_row, CALL_TIMEOUT_MS, &err))
		se_raise(&err);
	for (i = 0; i < fe.nfiles; i++)
	{
		pfree(fe.files[i].path);
		pfree(fe.files[i].crc);
	}
	for (i = 0; i < MAX_LANES; i++)
		pfree(fe.lanes[i].payload.data);
	pfree(fe.files);
}

/* Files of dir that are not in files (by name) go. */
static void
remove_others(const char *dir, RecFile *files, int nfiles)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	while ((de = ReadDir(d, dir)) != NULL)
	{
		int			i;
		bool		keep = false;

		if (de->d_name[0] == '.')
			continue;
		for (i = 0; i < nfiles && !keep; i++)
			keep = strcmp(files[i].name, de->d_name) == 0;
		if (!keep)
		{
			char	   *p = psprintf("%s/%s", dir, de->d_name);

			(void) unlink(p);
			pfree(p);
		}
	}
	FreeDir(d);
}

static size_t tlog_header_len(const char *buf, size_t len);

/* an operation of this copy's own translog kept by an ops-based recovery */
static void
own_op(const SeTranslogOp *op, void *arg)
{
	se_translog_encode((StringInfo) arg, op);
}

/* create translog generation gen of dir (its header comes from the source) */
static int
new_tlog(const char *dir, int64 gen, char **path)
{
	int			fd;

	*path = psprintf("%s/translog-" INT64_FORMAT ".tlog", dir, gen);
	fd = open(*path, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY, 0600);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create \"%s\" during a peer recovery: %m", *path)));
	return fd;
}

/*
 * One recovery_ops call from (gen, off): the generation and offset the
 * answer ends at, its operations, and its bytes (*n of them; 0: nothing
 * more for now).
 */
static char *
fetch_ops(RecCtx *c, int64 gen, uint64 off, int64 *rgen, uint64 *roff, int64 *nops, int *n)
{
	StringInfoData payload;
	StringInfoData reply;
	SeWireReader rd;
	char	   *recs;

	check_stop();
	initStringInfo(&payload);
	initStringInfo(&reply);
	put_pin(c, &payload);
	se_put_vint(&payload, (uint64) gen);
	se_put_vint(&payload, off);
	se_put_vint(&payload, (uint64) 2 * SE_RECOVERY_CHUNK);
	call_source(c, "recovery_ops", &payload, &reply);
	se_wire_init(&rd, reply.data, reply.len);
	*rgen = (int64) se_wire_vint(&rd);
	*roff = se_wire_vint(&rd);
	*nops = (int64) se_wire_vint(&rd);
	recs = se_wire_str(&rd, n);
	pfree(payload.data);
	pfree(reply.data);
	if (rd.bad || *rgen < gen)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("peer recovery: malformed recovery_ops answer"),
				 errdetail("recovery_failed_exception")));
	return recs;
}

/*
 * TRANSLOG: the source's records from its commit's generation, written
 * into the same generations here; *end_gen / *end_off: where the copy ends
 * in the source's translog.
 */
static void
copy_translog(RecCtx *c, int64 first_gen, int64 local_first, const StringInfo own,
			  int64 own_max, int64 *end_gen, uint64 *end_off)
{
	char	   *dir = psprintf("%s/translog", c->shard_path);
	int64		gen = first_gen;
	int64		shift;
	uint64		off = 0;
	char	   *path;
	int			fd;

	se_remove_tree(dir);
	se_mkdir_p(dir);
	if (own)
	{
		/* this copy's own operations up to its global checkpoint first */
		fd = new_tlog(dir, local_first, &path);
		write_all(fd, own->data, own->len, path);
		fsync_fd(fd, path);
		close(fd);
		local_first++;
	}
	shift = local_first - first_gen;
	fd = new_tlog(dir, gen + shift, &path);
	for (;;)
	{
		int64		rgen;
		uint64		roff;
		int64		nops;
		int			n;
		char	   *recs = fetch_ops(c, gen, off, &rgen, &roff, &nops, &n);
		bool		fresh = rgen > gen || off == 0;

		if (n == 0)
			break;
		/* a generation the source rolled to: start it here too */
		while (gen < rgen)
		{
			fsync_fd(fd, path);
			close(fd);
			gen++;
			fd = new_tlog(dir, gen + shift, &path);
		}
		/*
		 * A generation's header names it: renumbered here when the copy
		 * keeps its own commit, which names its own first generation; and
		 * bounds the seq_nos of the generations before it, which now
		 * include this copy's own operations up to own_max.
		 */
		if (shift != 0 && fresh && tlog_header_len(recs, n) == 24)
		{
			int64		local = gen + shift;
			int64		bound;

			memcpy(recs + 8, &local, 8);
			memcpy(&bound, recs + 16, 8);
			bound = Max(bound, own_max);
			memcpy(recs + 16, &bound, 8);
		}
		write_all(fd, recs, n, path);
		pfree(recs);
		c->r->ops_recovered += nops;
		off = roff;
		throttle(c, n);
	}
	fsync_fd(fd, path);
	close(fd);
	se_fsync_dir(dir);
	*end_gen = gen;
	*end_off = off;
}

/* the header length of a translog generation's first bytes (0: none) */
static size_t
tlog_header_len(const char *buf, size_t len)
{
	if (len >= 24 && memcmp(buf, "SETLOG02", 8) == 0)
		return 24;
	if (len >= 16 && memcmp(buf, "SETLOG01", 8) == 0)
		return 16;
	return 0;
}

/*
 * After recovery_finalize: the source answered its max_seq_no, every
 * operation up to which it replicated here before it answered (a moving
 * primary stopped taking writes first, relocation.c).  This copy reports
 * started -- and a relocated primary's target becomes the primary -- only
 * once its own local checkpoint covers them (the replica_ops are applied
 * through the owner; their answers came back, so this is short).
 */
static void
wait_handed_off(RecCtx *c, const char *data, int len)
{
	SeShardSlot *slot = &SeSlots[c->r->slot];
	SeWireReader rd;
	int64		max_seq_no;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);

	se_wire_init(&rd, data, len);
	max_seq_no = se_wire_svint(&rd);
	if (rd.bad)
		return;
	while (se_slot_read_i64(&slot->local_checkpoint) < max_seq_no)
	{
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("recovery of shard [%d] of index [%s]: local checkpoint [" INT64_FORMAT "] did not reach the source's max_seq_no [" INT64_FORMAT "]",
							c->r->shard, c->r->index_uuid,
							se_slot_read_i64(&slot->local_checkpoint), max_seq_no)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * FINALIZE, once the owner opened the copy: the source replicates every
 * new write here from now on (recovery_track); then the operations that
 * reached its translog after the copy's end are applied through the owner
 * (the copy's bounded write queue, as replica_ops are: one that arrives
 * both ways is applied once, by seq_no); then recovery_finalize.
 */
static void
catch_up(RecCtx *c, int64 gen, uint64 off)
{
	SeRecovery *r = c->r;
	StringInfoData payload;
	StringInfoData reply;
	SeWireReader rd;
	int64		term;
	int64		gcp;
	int64		lcp = -1;

	initStringInfo(&payload);
	initStringInfo(&reply);
	put_pin(c, &payload);
	se_put_str(&payload, r->allocation_id, strlen(r->allocation_id));
	se_put_str(&payload, r->target_node, strlen(r->target_node));
	call_source(c, "recovery_track", &payload, &reply);
	se_wire_init(&rd, reply.data, reply.len);
	term = se_wire_svint(&rd);
	gcp = se_wire_svint(&rd);
	for (;;)
	{
		int64		rgen;
		uint64		roff;
		int64		nops;
		int			n;
		char	   *recs = fetch_ops(c, gen, off, &rgen, &roff, &nops, &n);
		size_t		hlen = 0;
		SeError		err;

		if (n == 0)
			break;
		if (rgen > gen || off == 0)
			hlen = tlog_header_len(recs, n);
		gen = rgen;
		off = roff;
		if ((size_t) n > hlen)
		{
			se_error_init(&err);
			if (!se_replication_apply_local(r->slot, r->allocation_id, term, gcp,
											recs + hlen, n - hlen, &lcp, &err))
				se_raise(&err);
		}
		pfree(recs);
		r->ops_recovered += nops;
		throttle(c, n);
	}
	r->ops_total = r->ops_recovered;
	resetStringInfo(&payload);
	put_pin(c, &payload);
	se_put_str(&payload, r->allocation_id, strlen(r->allocation_id));
	/* (no operation to catch up: the copy's checkpoint as it opened) */
	se_put_svint(&payload, Max(lcp, se_slot_read_i64(&SeSlots[r->slot].local_checkpoint)));
	call_source(c, "recovery_finalize", &payload, &reply);
	if (reply.len > 0)
		wait_handed_off(c, reply.data, reply.len);
}

/*
 * Where this copy would need operations from if it kept its files (ES
 * 7.x: the safe commit, then its own translog replayed up to its global
 * checkpoint): its newest commit must be safe (ES CombinedDeletionPolicy:
 * every operation in it is at or below the global checkpoint this copy
 * persisted, so all of it is in the primary's history too), and its own
 * translog from the commit on holds what it processed after; then it
 * needs the operations above its global checkpoint, which is what its
 * retention lease on the primary retains.  Its own operations from the
 * commit's local checkpoint + 1 to the global checkpoint go to own (a
 * translog generation's bytes, header first), the commit's first
 * translog generation to *tlog_gen.  -1: no safe commit.
 */
static int64
safe_commit_start(const char *shard_path, int64 *commit_gen, int64 *tlog_gen, StringInfo own)
{
	char	   *index_dir = psprintf("%s/index", shard_path);
	char	   *tlog_dir = psprintf("%s/translog", shard_path);
	struct stat st;
	SeCommitInfo *ci = palloc0(sizeof(SeCommitInfo));
	int64		gcp = se_shard_read_global_checkpoint(tlog_dir);
	int64		gen = stat(index_dir, &st) == 0
		? se_commit_newest_upto(index_dir, gcp, 0, ci) : 0;
	int64		start = -1;
	char	   *first;
	int			fd;

	if (gen <= 0)
		return -1;
	first = psprintf("%s/translog-" INT64_FORMAT ".tlog", tlog_dir, ci->translog_gen);
	if ((fd = open(first, O_RDONLY | PG_BINARY)) < 0)
		return -1;
	/* the header of the commit's generation, or one that bounds nothing */
	enlargeStringInfo(own, 24);
	if (read(fd, own->data, 24) != 24 || tlog_header_len(own->data, 24) != 24)
	{
		int64		unknown = PG_INT64_MAX;

		memcpy(own->data, "SETLOG02", 8);
		memcpy(own->data + 16, &unknown, 8);
	}
	close(fd);
	memcpy(own->data + 8, &ci->translog_gen, 8);
	own->len = 24;
	(void) se_translog_read_ops(tlog_dir, ci->local_checkpoint + 1, gcp, own_op, own);
	start = gcp + 1;
	*commit_gen = gen;
	*tlog_gen = ci->translog_gen;
	pfree(ci);
	return start;
}

static void
run_recovery(SeRecovery *r)
{
	RecCtx		c;
	SeIndexMeta *im = se_state_find_uuid(se_state_current(), r->index_uuid);
	StringInfoData payload;
	StringInfoData reply;
	SeWireReader rd;
	int64		tlog_gen;
	int64		end_gen;
	uint64		end_off;
	int			nfiles;
	RecFile    *files;
	int			i;
	char	   *index_dir;
	char	   *tmp_dir;
	SeShardSlot *slot = r->slot >= 0 ? &SeSlots[r->slot] : NULL;
	int64		start;
	int64		local_tlog_gen = 0;
	int64		local_commit = 0;
	int64		ops_from;
	StringInfoData own;
	bool		closed = r->slot < 0;

	memset(&c, 0, sizeof(c));
	c.r = r;
	c.rate = -1;
	if (im == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index with uuid \"%s\" is not in the cluster state", r->index_uuid),
				 errdetail("index_not_found_exception")));
	c.index_name = im->name;
	c.conninfo = se_cluster_conninfo(r->source_node);
	if (r->source_node[0] == '\0' || c.conninfo[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("source node [%s] of shard [%s][%d] is not in the cluster",
						r->source_node, im->name, r->shard),
				 errdetail("delay_recovery_exception")));
	c.shard_path = se_shard_path(r->index_uuid, r->shard);
	index_dir = psprintf("%s/index", c.shard_path);
	tmp_dir = psprintf("%s/recovery.tmp", c.shard_path);

	/* 1. the source pins its commit and lists its files */
	initStringInfo(&own);
	/* a closed copy's recovery copies files (no lease, no operations) */
	start = closed ? -1
		: safe_commit_start(c.shard_path, &local_commit, &local_tlog_gen, &own);
	initStringInfo(&payload);
	initStringInfo(&reply);
	se_peer_shard_put(&payload, im->name, im->uuid, r->shard);
	se_put_str(&payload, r->target_node, strlen(r->target_node));
	se_put_svint(&payload, start);
	call_source(&c, "recovery_start", &payload, &reply);
	se_wire_init(&rd, reply.data, reply.len);
	c.rid = se_wire_str(&rd, NULL);
	(void) se_wire_vint(&rd);	/* commit generation */
	tlog_gen = (int64) se_wire_vint(&rd);
	(void) se_wire_svint(&rd);	/* max_seq_no */
	nfiles = (int) se_wire_vint(&rd);
	if (rd.bad || c.rid == NULL || nfiles < 0 || nfiles > 4 * SE_MAX_SEGMENTS + 8)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("peer recovery: malformed recovery_start answer"),
				 errdetail("recovery_failed_exception")));
	files = palloc0(sizeof(RecFile) * Max(1, nfiles));
	for (i = 0; i < nfiles; i++)
	{
		files[i].name = se_wire_str(&rd, NULL);
		files[i].length = se_wire_vint(&rd);
		files[i].crc = (uint32) se_wire_vint(&rd);
		if (files[i].name == NULL || strchr(files[i].name, '/') || files[i].name[0] == '.')
			rd.bad = true;
	}
	ops_from = se_wire_svint(&rd);
	if (rd.bad || (ops_from >= 0 && (ops_from != start || nfiles != 0)))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("peer recovery: malformed file list"),
				 errdetail("recovery_failed_exception")));
	if (ops_from >= 0)
	{
		/*
		 * Operations-based: this copy keeps its own commit and files and
		 * replays the source's operations from ops_from on top of it.
		 */
		r->stage = SE_REC_INDEX;
		r->files_total = r->files_reused = r->files_recovered = r->files_to_recover = 0;
		r->bytes_total = r->bytes_reused = r->bytes_recovered = r->bytes_to_recover = 0;
		r->ops_recovered = 0;
		r->ops_total = -1;
		r->stage = SE_REC_TRANSLOG;
		/* the owner opens the newest commit: the safe one */
		se_commit_drop_newer(index_dir, local_commit);
		copy_translog(&c, tlog_gen, local_tlog_gen, &own, start - 1, &end_gen, &end_off);
		se_fsync_dir(c.shard_path);
		goto ready;
	}

	/* 2. INDEX: reuse identical files, fetch the others */
	r->stage = SE_REC_INDEX;
	r->files_total = nfiles;
	r->files_reused = r->files_recovered = r->files_to_recover = 0;
	r->bytes_total = r->bytes_reused = r->bytes_recovered = r->bytes_to_recover = 0;
	r->ops_recovered = 0;
	r->ops_total = -1;
	for (i = 0; i < nfiles; i++)
	{
		char	   *p = psprintf("%s/%s", index_dir, files[i].name);
		uint64		len;
		bool		ok;
		uint32		crc = se_recovery_file_crc(p, &len, &ok);

		files[i].reuse = ok && len == files[i].length && crc == files[i].crc;
		r->bytes_total += files[i].length;
		if (files[i].reuse)
		{
			r->files_reused++;
			r->bytes_reused += files[i].length;
		}
		else
		{
			r->files_to_recover++;
			r->bytes_to_recover += files[i].length;
		}
		pfree(p);
	}
	se_remove_tree(tmp_dir);
	se_mkdir_p(tmp_dir);
	fetch_files(&c, files, nfiles, tmp_dir);

	/* 3. VERIFY_INDEX: put them in place; nothing else stays */
	r->stage = SE_REC_VERIFY_INDEX;
	se_mkdir_p(index_dir);
	remove_others(index_dir, files, nfiles);
	for (i = 0; i < nfiles; i++)
	{
		char	   *from;
		char	   *to;

		if (files[i].reuse)
			continue;
		from = psprintf("%s/%s", tmp_dir, files[i].name);
		to = psprintf("%s/%s", index_dir, files[i].name);
		if (rename(from, to) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rename \"%s\" to \"%s\": %m", from, to)));
	}
	se_fsync_dir(index_dir);
	se_remove_tree(tmp_dir);

	/* 4. TRANSLOG */
	r->stage = SE_REC_TRANSLOG;
	copy_translog(&c, tlog_gen, tlog_gen, NULL, -1, &end_gen, &end_off);
	se_fsync_dir(c.shard_path);

	if (closed)
	{
		/*
		 * A closed copy is complete once its files are here: nothing is
		 * opened, no write came after the copy.  recovery_finalize drops
		 * the source's pins; the shard-state worker reports it started.
		 */
		r->stage = SE_REC_FINALIZE;
		r->ops_total = r->ops_recovered;
		resetStringInfo(&payload);
		put_pin(&c, &payload);
		se_put_str(&payload, r->allocation_id, strlen(r->allocation_id));
		se_put_svint(&payload, -1);
		call_source(&c, "recovery_finalize", &payload, &reply);
		r->stop_time = GetCurrentTimestamp();
		r->failure[0] = '\0';
		pg_write_barrier();
		r->stage = SE_REC_DONE;
		ConditionVariableBroadcast(&SeShmem->slot_cv);
		return;
	}

	/* 5. the owner opens the shard from what is here now */
ready:
	pg_write_barrier();
	r->stage = SE_REC_READY;
	wake_owner(r);
	while (slot->state == SE_SLOT_OPENING && rec_matches(r, r->slot) && !se_bgw_got_sigterm)
	{
		(void) se_slot_wait_while(r->slot, SE_SLOT_OPENING, 1000);
		CHECK_FOR_INTERRUPTS();
	}
	if (slot->state != SE_SLOT_STARTED)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("shard [%s][%d] did not open after its peer recovery: %s",
						im->name, r->shard, slot->failure[0] ? slot->failure : "closed"),
				 errdetail("recovery_failed_exception")));

	/* 6. FINALIZE: tracked by the primary, caught up, in sync */
	r->stage = SE_REC_FINALIZE;
	catch_up(&c, end_gen, end_off);

	/*
	 * ES's post_recovery refresh: what the translog replay and the catch-up
	 * applied is searchable before the copy reports started, not one
	 * refresh_interval later (a search routed to the new copy would miss
	 * documents its primary shows).
	 */
	if (pg_atomic_read_u64(&slot->write_gen) != pg_atomic_read_u64(&slot->refreshed_gen))
		(void) se_queue_control(r->slot, SE_REQ_REFRESH, 0);
	r->stop_time = GetCurrentTimestamp();
	r->failure[0] = '\0';
	pg_write_barrier();
	r->stage = SE_REC_DONE;
	/* the shard-state worker reports the copy started now */
	ConditionVariableBroadcast(&SeShmem->slot_cv);
}

/*
 * A closed copy's recovery ended unfinished because the routing no longer
 * has any copy of the shard on this node (its move was cancelled, or the
 * index was reopened and the copy placed elsewhere): its partial files are
 * no one's, and no slot owner will ever delete them, so they go here.  An
 * open recovery of the shard placed here meanwhile waits for this worker
 * (closed_recovery_running), so it never shares the directory with it.
 */
static void
drop_abandoned_closed_copy(const SeRecovery *r)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		SeIndexMeta *im = se_state_find_uuid(se_state_current(), r->index_uuid);

		if (im != NULL && im->routing != NULL && r->shard < im->settings.number_of_shards &&
			se_state_local_copy(im, r->shard) == NULL)
		{
			ereport(LOG,
					(errmsg("search_engine: removing the partial files of closed shard [%s][%d]: no copy of it is on this node any more",
							im->name, r->shard)));
			se_remove_tree(se_shard_path(r->index_uuid, r->shard));
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();		/* the files stay; nothing else depends on it */
	}
	PG_END_TRY();
}

void		se_recovery_worker_main(Datum arg);

void
se_recovery_worker_main(Datum arg)
{
	int			i = DatumGetInt32(arg);
	SeRecovery *r;
	MemoryContext cxt;

	se_bgw_start();
	r = &RecShmem->recs[i];
	r->worker_pid = MyProcPid;
	MyRecovery = r;
	/* the owner's queue requests live in DSM segments */
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "search_engine recovery");
	cxt = AllocSetContextCreate(TopMemoryContext, "search_engine recovery",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		run_recovery(r);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(LOG,
				(errmsg("search_engine: peer recovery of shard [%s][%d] from [%s] failed: %s",
						r->index_uuid, r->shard, r->source_node, edata->message)));
		/*
		 * Opened but not caught up: the copy must not pass for started
		 * (its node would report it so); failing it makes its node report
		 * shard_failed, and the master allocates it afresh.
		 */
		if (r->stage == SE_REC_FINALIZE && rec_matches(r, r->slot))
			(void) se_slot_advance(r->slot, SE_SLOT_FAILED, edata->message);
		/* before the entry says failed: an open recovery waits for it */
		if (r->slot < 0)
			drop_abandoned_closed_copy(r);
		rec_fail(r, edata->message);
		wake_owner(r);
	}
	PG_END_TRY();
	se_transport_disconnect_all();
	proc_exit(0);
}

/* ---------- _cat/recovery ---------- */

bool
se_recovery_stats_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	int			i;

	for (i = 0; i < SE_MAX_RECOVERIES; i++)
	{
		SeRecovery	r = RecShmem->recs[i];	/* a copy: the worker moves on */

		if (r.stage == SE_REC_FREE)
			continue;
		se_put_vint(reply, (uint64) r.stage);
		se_put_str(reply, r.index_uuid, strlen(r.index_uuid));
		se_put_vint(reply, (uint64) r.shard);
		se_put_str(reply, r.source_node, strnlen(r.source_node, NAMEDATALEN - 1));
		se_put_str(reply, r.target_node, strnlen(r.target_node, NAMEDATALEN - 1));
		se_put_svint(reply, r.start_time);
		se_put_svint(reply, r.stop_time);
		se_put_vint(reply, (uint64) r.attempts);
		se_put_vint(reply, (uint64) r.files_total);
		se_put_vint(reply, (uint64) r.files_reused);
		se_put_vint(reply, (uint64) r.files_recovered);
		se_put_vint(reply, (uint64) r.files_to_recover);
		se_put_vint(reply, r.bytes_total);
		se_put_vint(reply, r.bytes_reused);
		se_put_vint(reply, r.bytes_recovered);
		se_put_vint(reply, r.bytes_to_recover);
		se_put_svint(reply, r.ops_recovered);
		se_put_svint(reply, r.ops_total);
		se_put_vint(reply, r.throttle_ms);
		se_put_str(reply, r.failure, strnlen(r.failure, sizeof(r.failure) - 1));
	}
	return true;
}

bool
se_recovery_stats_read(SeWireReader *rd, SeRecovery *r)
{
	char	   *s;

	if (rd->p >= rd->end || rd->bad)
		return false;
	memset(r, 0, sizeof(*r));
	r->stage = (int) se_wire_vint(rd);
	if ((s = se_wire_str(rd, NULL)) != NULL)
		strlcpy(r->index_uuid, s, sizeof(r->index_uuid));
	r->shard = (int) se_wire_vint(rd);
	if ((s = se_wire_str(rd, NULL)) != NULL)
		strlcpy(r->source_node, s, sizeof(r->source_node));
	if ((s = se_wire_str(rd, NULL)) != NULL)
		strlcpy(r->target_node, s, sizeof(r->target_node));
	r->start_time = se_wire_svint(rd);
	r->stop_time = se_wire_svint(rd);
	r->attempts = (int) se_wire_vint(rd);
	r->files_total = (int) se_wire_vint(rd);
	r->files_reused = (int) se_wire_vint(rd);
	r->files_recovered = (int) se_wire_vint(rd);
	r->files_to_recover = (int) se_wire_vint(rd);
	r->bytes_total = se_wire_vint(rd);
	r->bytes_reused = se_wire_vint(rd);
	r->bytes_recovered = se_wire_vint(rd);
	r->bytes_to_recover = se_wire_vint(rd);
	r->ops_recovered = se_wire_svint(rd);
	r->ops_total = se_wire_svint(rd);
	r->throttle_ms = se_wire_vint(rd);
	if ((s = se_wire_str(rd, NULL)) != NULL)
		strlcpy(r->failure, s, sizeof(r->failure));
	return !rd->bad;
}
