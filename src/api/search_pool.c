/*-------------------------------------------------------------------------
 *
 * search_pool.c
 *	  The search thread pool: shard query phases run by search workers in
 *	  parallel with the coordinating backend.
 *
 * A search over several shards keeps its first shard for the backend and
 * sends one shard-level query request per other shard (up to one per
 * search worker; the rest also run in the backend) to the pool.  All
 * requests of a search live in one DSM segment: a header, the common part
 * (the request body as JSON text, the URL from/size/timeout,
 * max_result_window, the session's query knobs and, for
 * dfs_query_then_fetch, the global term statistics), and per shard its
 * address (index uuid, shard, mapping version), its point in time (the
 * segment and live-docs generations the backend is searching) and an
 * shm_mq for the answer.
 * Requests and answers are serialized messages, not pointers: the same
 * request and the same answer (search/shard_wire.c) are what the
 * multi-node transport will carry.
 *
 * A worker maps exactly the backend's point in time.  A segment that a
 * refresh or merge removed since is still served from the worker's own
 * mapping when it has one; otherwise the worker answers with an empty
 * message and the backend runs that shard itself (it has the segments
 * mapped).  Likewise when the queue is full, the index or its mapping
 * changed, the worker fails or exits (its shm_mq detaches), or a taken
 * request is never picked up: results never depend on the pool.  A
 * backend that errors out (statement_timeout, cancel, terminate) detaches
 * the DSM, and its detach callback raises the segment's cancel flag first:
 * the workers' interrupt checks see it within a check interval of the
 * search module and abandon the query phase (a shutdown request makes
 * them abandon it too, answering empty so the backend runs the shard).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "node/node.h"
#include "search/search.h"
#include "shard/snapshot.h"
#include "util/varint.h"

#define SEARCH_DSM_MAGIC	0x53455231	/* "SER1" */
#define SEARCH_MQ_SIZE		16384

typedef struct ShardRequestRef
{
	Size		req_off;
	Size		req_len;
	Size		mq_off;
} ShardRequestRef;

typedef struct SearchDsmHeader
{
	uint32		magic;
	pg_atomic_uint32 cancelled; /* set when the backend detaches */
	int			nrequests;
	Size		common_off;
	Size		common_len;
	ShardRequestRef req[FLEXIBLE_ARRAY_MEMBER];
} SearchDsmHeader;

struct SePoolSearch
{
	dsm_segment *seg;
	int			nshards;
	bool	   *remote;			/* per shard */
	int		   *request;		/* per shard: request number, -1 = local */
	shm_mq_handle **mqh;		/* per request */
	SeShardTransport transport;
};

/* ---------------------------------------------------------------------
 * Coordinator side
 * ---------------------------------------------------------------------
 */
/*
 * What every shard request of a search shares: the body, URL from/size
 * and timeout (-2: none), max_result_window, the session's query knobs
 * and the global statistics of a DFS phase, if any (the pool's workers and
 * other nodes decode it with se_search_common_request).
 */
void
se_search_common_encode(const SeJson *body, const SeSearchParams *p, int64 url_timeout_ms,
						int window, const SeDfsStats *dfs, StringInfo out)
{
	StringInfoData text;

	initStringInfo(&text);
	if (body)
		se_json_write(&text, body);
	se_put_str(out, body ? text.data : NULL, text.len);
	se_put_svint(out, p ? p->from : -1);
	se_put_svint(out, p ? p->size : -1);
	se_put_svint(out, url_timeout_ms);
	se_put_svint(out, window);
	se_put_vint(out, se_search_block_max ? 1 : 0);
	se_put_vint(out, (uint64) se_search_debug_delay_ms);
	se_put_vint(out, (uint64) se_search_max_clause_count);
	se_put_vint(out, dfs ? 1 : 0);
	if (dfs)
	{
		resetStringInfo(&text);
		se_dfs_stats_encode(dfs, &text);
		se_put_str(out, text.data, text.len);
	}
	se_peer_role_put(out, GetUserId());
	pfree(text.data);
}

static void
encode_shard(const SeSearchShard *sh, const SeIndexMeta *im, int shard_idx,
			 StringInfo out)
{
	int			i;

	se_put_str(out, sh->index_uuid, strlen(sh->index_uuid));
	se_put_vint(out, (uint64) sh->shard);
	se_put_svint(out, im->mapping_version);
	se_put_vint(out, (uint64) shard_idx);
	se_put_vint(out, (uint64) sh->nsegments);
	for (i = 0; i < sh->nsegments; i++)
	{
		se_put_vint(out, sh->seg_gens[i]);
		se_put_vint(out, sh->del_gens[i]);
	}
}

/*
 * Wait for the answer of shard i's request.  false (run the shard here)
 * when the worker detached without answering, answered empty, or the
 * request was taken and its worker never attached (it died in between).
 */
static bool
pool_receive(void *arg, int i, StringInfo msg)
{
	SePoolSearch *ps = arg;
	shm_mq_handle *mqh = ps->mqh[ps->request[i]];
	shm_mq	   *mq = shm_mq_get_queue(mqh);
	bool		suspect = false;

	for (;;)
	{
		Size		nbytes;
		void	   *data;
		shm_mq_result res = shm_mq_receive(mqh, &nbytes, &data, true);

		if (res == SHM_MQ_SUCCESS)
		{
			if (nbytes == 0)
				return false;
			appendBinaryStringInfo(msg, data, nbytes);
			return true;
		}
		if (res == SHM_MQ_DETACHED)
			return false;
		if (WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					  1000, PG_WAIT_EXTENSION) & WL_TIMEOUT)
		{
			/* taken (not queued) yet nobody attached for a whole second */
			if (shm_mq_get_sender(mq) == NULL &&
				!se_search_queue_pending(dsm_segment_handle(ps->seg), ps->request[i]))
			{
				if (suspect)
					return false;
				suspect = true;
			}
		}
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The backend leaves the search (done, or an error): its workers stop. */
static void
mark_cancelled(dsm_segment *seg, Datum arg)
{
	SearchDsmHeader *hdr = (SearchDsmHeader *) DatumGetPointer(arg);

	pg_atomic_write_u32(&hdr->cancelled, 1);
}

/*
 * Send the query phase of shards 1.. to the search pool, at most one per
 * running worker.  NULL when the pool is off, the search has one shard, or
 * nothing could be queued: run everything here.
 */
SePoolSearch *
se_search_pool_dispatch(const StringInfoData *common, SeSearchShard *shards,
						SeIndexMeta **metas, int nshards)
{
	SePoolSearch *ps;
	StringInfoData *reqs;
	int			nworkers;
	int			nreq;
	Size		size;
	Size		off;
	SearchDsmHeader *hdr;
	int			queued;
	int			i;

	if (se_search_threads <= 0 || !se_search_parallel || nshards < 2 ||
		CurrentResourceOwner == NULL)
		return NULL;
	nworkers = se_search_queue_workers();
	nreq = Min(nshards - 1, nworkers);
	if (nreq <= 0)
		return NULL;
	for (i = 1; i <= nreq; i++)
	{
		int64		docs = 0;
		int			s;

		if (shards[i].seg_gens == NULL)
			return NULL;
		for (s = 0; s < shards[i].nsegments; s++)
			docs += se_segment_max_doc(shards[i].segments[s]);
		/* a shard too small to pay for the handoff stops the sending */
		if (docs < se_search_parallel_min_docs)
		{
			nreq = i - 1;
			break;
		}
	}
	if (nreq <= 0)
		return NULL;

	reqs = palloc(sizeof(StringInfoData) * nreq);
	size = MAXALIGN(offsetof(SearchDsmHeader, req) + sizeof(ShardRequestRef) * nreq);
	size += MAXALIGN(common->len);
	for (i = 0; i < nreq; i++)
	{
		initStringInfo(&reqs[i]);
		encode_shard(&shards[i + 1], metas[i + 1], i + 1, &reqs[i]);
		size += MAXALIGN(reqs[i].len) + SEARCH_MQ_SIZE;
	}

	ps = palloc0(sizeof(SePoolSearch));
	ps->seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (ps->seg == NULL)
		return NULL;
	hdr = dsm_segment_address(ps->seg);
	hdr->magic = SEARCH_DSM_MAGIC;
	pg_atomic_init_u32(&hdr->cancelled, 0);
	on_dsm_detach(ps->seg, mark_cancelled, PointerGetDatum(hdr));
	hdr->nrequests = nreq;
	off = MAXALIGN(offsetof(SearchDsmHeader, req) + sizeof(ShardRequestRef) * nreq);
	hdr->common_off = off;
	hdr->common_len = common->len;
	memcpy((char *) hdr + off, common->data, common->len);
	off += MAXALIGN(common->len);
	ps->nshards = nshards;
	ps->remote = palloc0(sizeof(bool) * nshards);
	ps->request = palloc(sizeof(int) * nshards);
	ps->mqh = palloc0(sizeof(shm_mq_handle *) * nreq);
	for (i = 0; i < nshards; i++)
		ps->request[i] = -1;
	for (i = 0; i < nreq; i++)
	{
		shm_mq	   *mq;

		hdr->req[i].req_off = off;
		hdr->req[i].req_len = reqs[i].len;
		memcpy((char *) hdr + off, reqs[i].data, reqs[i].len);
		off += MAXALIGN(reqs[i].len);
		hdr->req[i].mq_off = off;
		mq = shm_mq_create((char *) hdr + off, SEARCH_MQ_SIZE);
		shm_mq_set_receiver(mq, MyProc);
		ps->mqh[i] = shm_mq_attach(mq, ps->seg, NULL);
		off += SEARCH_MQ_SIZE;
	}

	queued = se_search_queue_submit(dsm_segment_handle(ps->seg), 0, nreq);
	if (queued == 0)
	{
		dsm_detach(ps->seg);
		return NULL;
	}
	for (i = 0; i < queued; i++)
	{
		ps->remote[i + 1] = true;
		ps->request[i + 1] = i;
	}
	ps->transport.arg = ps;
	ps->transport.remote = ps->remote;
	ps->transport.receive = pool_receive;
	return ps;
}

const SeShardTransport *
se_search_pool_transport(SePoolSearch *ps)
{
	return ps ? &ps->transport : NULL;
}

/* Done with the search: release its DSM segment (workers may still hold it). */
void
se_search_pool_finish(SePoolSearch *ps)
{
	if (ps != NULL && ps->seg != NULL)
	{
		dsm_detach(ps->seg);
		ps->seg = NULL;
	}
}

/* ---------------------------------------------------------------------
 * Worker side
 * ---------------------------------------------------------------------
 */
static int	my_worker = -1;
static dsm_segment *current_seg = NULL;
static SearchDsmHeader *serving = NULL; /* current_seg's header */

/* Asked to shut down, or the backend of the request left. */
static bool
worker_should_stop(void)
{
	return se_bgw_got_sigterm ||
		(serving != NULL && pg_atomic_read_u32(&serving->cancelled) != 0);
}

/* The search module's interrupt checks in a search worker. */
static bool
worker_interrupt_check(void)
{
	CHECK_FOR_INTERRUPTS();
	return !worker_should_stop();
}

void
se_search_workers_register(void)
{
	se_bgw_register("se_search_worker_main", "search_engine search worker",
					se_search_threads, false);
}

/* Sleep for the testing delay; false when told to stop meanwhile. */
static bool
debug_delay(int ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	while (!worker_should_stop())
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);

		if (left <= 0)
			return true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return false;
}

/*
 * Run one shard request; appends the answer to out, or nothing when this
 * worker cannot serve it (the coordinator then runs the shard).
 */
/*
 * The search request of a shard request's common part, and the knobs of
 * the session that sent it; NULL (err set) if it does not parse.
 */
SeSearchRequest *
se_search_common_request(const char *common, Size common_len, SeSearchKnobs *knobs,
						 SeError *err)
{
	SeWireReader c;
	char	   *body_text;
	int			from,
				size,
				window;
	int64		url_timeout_ms;
	uint64		n;
	SeJson	   *body = NULL;
	SeDfsStats *dfs = NULL;
	SeSearchRequest *sreq;
	SeSearchLimits lim;

	se_wire_init(&c, common, common_len);
	body_text = se_wire_str(&c, NULL);
	from = (int) se_wire_svint(&c);
	size = (int) se_wire_svint(&c);
	url_timeout_ms = se_wire_svint(&c);
	window = (int) se_wire_svint(&c);
	knobs->block_max = se_wire_vint(&c) != 0;
	knobs->delay_ms = (int) se_wire_vint(&c);
	n = se_wire_vint(&c);
	knobs->max_clauses = (int) Min(n, INT_MAX);
	if (se_wire_vint(&c) != 0)
	{
		int			len;
		char	   *blob = se_wire_str(&c, &len);

		if (blob == NULL || (dfs = se_dfs_stats_decode(blob, len)) == NULL)
			c.bad = true;
	}
	/* a name: the pool's workers have no catalog to look it up in */
	knobs->role = se_wire_str(&c, NULL);
	if (knobs->role == NULL)
		c.bad = true;
	if (c.bad || c.p != c.end)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard search request");
		return NULL;
	}
	if (body_text)
	{
		SeJsonParseOptions opts = {0};

		body = se_json_parse(body_text, strlen(body_text), &opts, err);
		if (body == NULL)
			return NULL;
	}
	/* the coordinator held the body to the index's other limits */
	memset(&lim, 0, sizeof(lim));
	lim.max_result_window = window;
	lim.max_inner_result_window = lim.max_docvalue_fields_search = lim.max_script_fields =
		lim.max_rescore_window = lim.max_slices_per_scroll = INT_MAX;
	sreq = se_search_parse_limited(body, &lim, err);
	if (sreq == NULL)
		return NULL;
	if (from >= 0 || size >= 0)
		se_search_set_from_size(sreq, from, size);
	if (url_timeout_ms != -2)
		se_search_set_timeout(sreq, url_timeout_ms);
	se_search_set_dfs(sreq, dfs);
	return sreq;
}

/* A shard's phase of sreq under the sender's knobs (query: into out; DFS: into dfs). */
static bool
phase_with(SeSearchRequest *sreq, const SeSearchKnobs *knobs, SeSearchShard *sh,
		   int shard_idx, StringInfo out, SeDfsStats *dfs, SeError *err)
{
	bool		saved_block_max = se_search_block_max;
	int			saved_max_clauses = se_search_max_clause_count;
	bool		ok = true;
	/* a query phase counts in the search stats of the copy it ran on */
	int			slot = dfs == NULL && sh->index_uuid ? se_slot_find(sh->index_uuid, sh->shard) : -1;
	TimestampTz start = GetCurrentTimestamp();

	se_search_block_max = knobs->block_max;
	se_search_max_clause_count = knobs->max_clauses;
	se_slot_stat_add(slot, SE_STAT_QUERY_CURRENT, 1);
	PG_TRY();
	{
		if (dfs != NULL)
			ok = se_search_dfs_phase(sreq, sh, dfs, err);
		else
			se_search_query_phase(sreq, sh, shard_idx, out);
	}
	PG_FINALLY();
	{
		se_search_block_max = saved_block_max;
		se_search_max_clause_count = saved_max_clauses;
		se_slot_stat_add(slot, SE_STAT_QUERY_CURRENT, -1);
	}
	PG_END_TRY();
	se_slot_stat_add(slot, SE_STAT_QUERY, 1);
	se_slot_stat_add(slot, SE_STAT_QUERY_US, GetCurrentTimestamp() - start);
	return ok;
}

/* The query phase of sreq on sh under the sender's knobs, into out. */
void
se_search_query_phase_with(SeSearchRequest *sreq, const SeSearchKnobs *knobs,
						   SeSearchShard *sh, int shard_idx, StringInfo out)
{
	(void) phase_with(sreq, knobs, sh, shard_idx, out, NULL, NULL);
}

/* The DFS phase of sreq on sh under the sender's knobs, added to into. */
bool
se_search_dfs_phase_with(SeSearchRequest *sreq, const SeSearchKnobs *knobs,
						 SeSearchShard *sh, SeDfsStats *into, SeError *err)
{
	return phase_with(sreq, knobs, sh, -1, NULL, into, err);
}

/*
 * Run one shard request; appends the answer to out, or nothing when this
 * worker cannot serve it (the coordinator then runs the shard).
 */
static void
run_request(const char *common, Size common_len, const char *req, Size req_len,
			StringInfo out)
{
	SeWireReader r;
	char	   *uuid;
	int			shard;
	int64		mapping_version;
	int			shard_idx;
	int			nseg;
	uint64		n;
	uint64	   *gens;
	uint64	   *dels;
	int			i;
	const SeClusterState *st;
	SeIndexMeta *im;
	SeSearchShard sh;
	SeError		err;
	SeSearchRequest *sreq;
	SeSearchKnobs knobs;

	se_error_init(&err);
	se_wire_init(&r, req, req_len);
	uuid = se_wire_str(&r, NULL);
	shard = (int) se_wire_vint(&r);
	mapping_version = se_wire_svint(&r);
	shard_idx = (int) se_wire_vint(&r);
	n = se_wire_vint(&r);		/* Min() evaluates its arguments twice */
	nseg = (int) Min(n, SE_MAX_SEGMENTS + 1);
	gens = palloc(sizeof(uint64) * (nseg + 1));
	dels = palloc(sizeof(uint64) * (nseg + 1));
	for (i = 0; i < nseg; i++)
	{
		gens[i] = se_wire_vint(&r);
		dels[i] = se_wire_vint(&r);
	}
	if (r.bad || uuid == NULL)
		return;
	sreq = se_search_common_request(common, common_len, &knobs, &err);
	if (sreq == NULL)
		return;
	if (knobs.delay_ms > 0 && !debug_delay(knobs.delay_ms))
		return;
	st = se_state_current();
	im = se_state_find_uuid(st, uuid);
	if (im == NULL || im->closed || im->mapping_version != mapping_version)
		return;
	if (!se_snapshot_acquire_at(im, shard, gens, dels, nseg, &sh, &err))
		return;
	se_search_query_phase_with(sreq, &knobs, &sh, shard_idx, out);
}

static void
serve(dsm_handle handle, int request)
{
	SearchDsmHeader *hdr;
	shm_mq	   *mq;
	shm_mq_handle *mqh;
	StringInfoData answer;

	current_seg = dsm_attach(handle);
	if (current_seg == NULL)
		return;					/* the coordinator is gone */
	hdr = dsm_segment_address(current_seg);
	if (hdr->magic != SEARCH_DSM_MAGIC || request < 0 || request >= hdr->nrequests)
	{
		dsm_detach(current_seg);
		current_seg = NULL;
		return;
	}
	mq = (shm_mq *) ((char *) hdr + hdr->req[request].mq_off);
	shm_mq_set_sender(mq, MyProc);
	mqh = shm_mq_attach(mq, current_seg, NULL);
	initStringInfo(&answer);
	serving = hdr;
	run_request((char *) hdr + hdr->common_off, hdr->common_len,
				(char *) hdr + hdr->req[request].req_off, hdr->req[request].req_len,
				&answer);
	/* abandoned: no answer (the backend, if still there, runs the shard) */
	if (worker_should_stop())
		resetStringInfo(&answer);
	serving = NULL;
	/* SHM_MQ_DETACHED: the coordinator left (cancelled); nothing to do */
	(void) shm_mq_send(mqh, answer.len, answer.data, false, true);
	dsm_detach(current_seg);
	current_seg = NULL;
}

void
se_search_worker_main(Datum arg)
{
	sigjmp_buf	local_sigjmp_buf;
	MemoryContext loop_cxt;

	my_worker = DatumGetInt32(arg);
	se_bgw_start();
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine search worker loop",
									 ALLOCSET_DEFAULT_SIZES);
	se_search_queue_attach_worker(my_worker);
	se_search_interrupt_hook = worker_interrupt_check;

	/* After an ERROR: give the request back to its coordinator and go on. */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(loop_cxt);
		EmitErrorReport();
		FlushErrorState();
		LWLockReleaseAll();
		serving = NULL;
		if (current_seg != NULL)
			dsm_detach(current_seg);	/* the coordinator sees DETACHED */
		current_seg = NULL;
		se_search_queue_done(my_worker);
		MemoryContextReset(loop_cxt);
		RESUME_INTERRUPTS();
	}
	PG_exception_stack = &local_sigjmp_buf;

	while (se_bgw_loop_top())
	{
		dsm_handle	handle;
		int			request;

		MemoryContextSwitchTo(loop_cxt);
		if (se_search_queue_take(my_worker, &handle, &request))
		{
			serve(handle, request);
			se_search_queue_done(my_worker);
			MemoryContextReset(loop_cxt);
			continue;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	/* exit code 1: if the server is not shutting down, restart this worker */
	proc_exit(1);
}
