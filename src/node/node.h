/*-------------------------------------------------------------------------
 *
 * node.h
 *	  The node: GUCs, shared memory, the write pool and its bounded queue,
 *	  shard slots and their published snapshots.
 *
 * Lock order (acquire in this order; 1-4 never held across I/O waits):
 *   0. index name lifecycle locks (heavyweight, api/index_ops.c; held
 *      across waits on write workers, which never take them), then the
 *      node-wide shard-room lock (heavyweight, same file; held from the
 *      check that shards fit in the free slots until they are allocated)
 *   1. SeShared->state_lock   (cluster state file + version)
 *   2. SeShared->slots_lock   (allocating / freeing shard slots)
 *   3. SeShardSlot->lock      (a slot's published segment list)
 *   4. SeShared->queue_mutex  (spinlock: queue entries, counters)
 *
 * Backends never wait on a lock a write worker holds across I/O: workers
 * take a slot's lock exclusively only to swap its segment list.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_NODE_H
#define SE_NODE_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "util/se_common.h"
#include "replication/lease.h"

#include <signal.h>

#define SE_MAX_WRITE_THREADS	64
#define SE_MAX_SEGMENTS			128		/* published per shard */
#define SE_UUID_LEN				22		/* base64url of 16 bytes, ES style */
#define SE_CONTROL_SLOTS		256		/* queue entries beyond the bound, for control requests */

/* ---------- GUCs (in guc.c) ---------- */
extern char *se_allowed_script_languages;
extern char *se_database;
extern char *se_data_directory_setting;
extern int	se_write_threads;
extern int	se_write_queue_size;
extern int	se_indexing_pressure_limit_kb;
extern int	se_index_buffer_size_kb;
extern int	se_max_shards;
extern char *se_node_name;
extern char *se_override_main_response_version;
extern int	se_merge_threads;
extern int	se_max_document_size_kb;
extern int	se_search_threads;
extern int	se_search_queue_size;
extern bool se_search_parallel;
extern int	se_search_parallel_min_docs;
extern int	se_search_debug_delay_ms;
extern bool se_debug_waitpoints;
extern int	se_sql_script_timeout_ms;
extern int	se_sql_script_memory_kb;

extern void se_guc_define(void);
extern const char *se_data_directory(void);
extern bool se_script_lang_allowed(const char *lang, SeError *err);

/* ---------- shard slots ---------- */
typedef enum SeSlotState
{
	SE_SLOT_FREE = 0,
	SE_SLOT_OPENING,			/* allocated, owner worker recovering it */
	SE_SLOT_STARTED,			/* serving reads and writes */
	SE_SLOT_CLOSING,			/* owner closing it (close/delete index) */
	SE_SLOT_FAILED				/* recovery or I/O failed; see failure */
} SeSlotState;

typedef struct SeSegRef
{
	uint64		seg_gen;		/* file _<gen>.seg */
	uint64		del_gen;		/* live docs _<gen>_<del_gen>.liv, 0 = none */
	uint32		max_doc;
	uint32		live_docs;
	uint64		size_bytes;
	bool		committed;		/* part of the last commit point */
} SeSegRef;

/*
 * A copy the primary replicates to (src/replication/replicate.c): an
 * in-sync copy of the routing, or one a running peer recovery tracks.
 */
#define SE_REPL_MAX_TARGETS		8

typedef struct SeReplTarget
{
	char		allocation_id[SE_UUID_LEN + 1];
	char		node[NAMEDATALEN];
	bool		tracked;		/* a recovery streams to it (P) */
	bool		in_sync;		/* marked in-sync locally (recovery finalized) */
	bool		failed;			/* reported failed to the master: skipped */
	bool		must_fail;		/* failed a write, but the master could not be
								 * told: every round reports it again (and
								 * acknowledges nothing) until it is */
	int64		local_checkpoint;	/* its last reported one, -1 = unknown */
	bool		seen;			/* this node's routing has shown the copy */
	int64		absent_since;	/* TimestampTz first seen missing from the
								 * routing; 0 = in it */
} SeReplTarget;

/*
 * A shard copy's operation counters for _stats (api/stats.c), added by
 * whoever does the operation on this node (the owner for refresh, flush
 * and merges; any backend or search worker for gets and query phases).
 * Times are in microseconds; the *_CURRENT ones go up and down.
 */
typedef enum SeSlotStat
{
	SE_STAT_REFRESH = 0,
	SE_STAT_REFRESH_US,
	SE_STAT_FLUSH,
	SE_STAT_FLUSH_US,
	SE_STAT_MERGE,
	SE_STAT_MERGE_US,
	SE_STAT_MERGE_DOCS,
	SE_STAT_MERGE_BYTES,
	SE_STAT_QUERY,
	SE_STAT_QUERY_US,
	SE_STAT_QUERY_CURRENT,
	SE_STAT_GET,
	SE_STAT_GET_US,
	SE_STAT_GET_EXISTS,
	SE_STAT_GET_EXISTS_US,
	SE_STAT_GET_CURRENT,
	SE_STAT_OPEN_CONTEXTS,		/* not counted: read from the PIT registry */
	SE_STAT_SCROLL_CURRENT,		/* the same, scrolls only */
	SE_STAT_N
} SeSlotStat;

typedef struct SeShardSlot
{
	LWLock		lock;			/* protects the published snapshot */
	int			state;			/* SeSlotState; under SeShared->slots_lock */
	char		index_uuid[SE_UUID_LEN + 1];
	int			shard;
	int			owner;			/* write worker number */
	bool		delete_files;	/* CLOSING: remove the shard's files */
	char		failure[256];
	bool		failure_corrupted;	/* failed with INDEX_CORRUPTED */
	bool		failure_disk_full;	/* failed on ENOSPC/EDQUOT: its owner retries,
									 * readers keep the published list */
	char		merge_failure[256];	/* why the last force merge was abandoned */
	/* published snapshot (under lock) */
	uint64		snapshot_gen;
	int			nsegments;
	SeSegRef	segs[SE_MAX_SEGMENTS];
	/* counters written by the owner, read by anyone */
	pg_atomic_uint64 write_gen;		/* bumped per write applied */
	pg_atomic_uint64 refreshed_gen; /* write_gen covered by last refresh */
	pg_atomic_uint32 refresh_listeners; /* refresh=wait_for writes waiting */
	pg_atomic_uint64 docs_count;	/* live docs in the published snapshot */
	pg_atomic_uint64 docs_deleted;
	pg_atomic_uint64 store_bytes;
	pg_atomic_uint64 translog_bytes;
	pg_atomic_uint64 max_seq_no;
	pg_atomic_uint64 indexing_ops;
	/* replication (REPLICATION.md section 2): set under slots_lock */
	bool		replica;		/* this node's copy is a replica */
	char		allocation_id[SE_UUID_LEN + 1]; /* this copy's id ("" single node) */
	bool		reopen;			/* OPENING: the owner closes the engine it still
								 * has and recovers the copy again (a replica
								 * placed here again under a new id) */
	int64		primary_term;	/* routing's term for the shard (0: the index's) */
	char		primary_node[NAMEDATALEN];	/* where the primary is ("" = here) */
	/* published by the owner: int64 values stored as uint64 (-1 = none) */
	pg_atomic_uint64 local_checkpoint;
	pg_atomic_uint64 global_checkpoint;
	/* min seq_no the translog must keep (recoveries, leases); -1 = none */
	pg_atomic_uint64 retain_seq_no;
	/* the primary's replication targets (src/replication/replicate.c) */
	slock_t		repl_mutex;
	int			repl_ntargets;
	SeReplTarget repl_targets[SE_REPL_MAX_TARGETS];
	/* after a promotion: ops resync_from..resync_to go to the copies again */
	int64		resync_term;	/* 0 = none owed */
	int64		resync_from;
	int64		resync_to;
	bool		resync_running;
	int64		gcp_sent;		/* global checkpoint the copies were last sent */
	/* a primary's retention leases (replication/retention.c), repl_mutex */
	bool		leases_loaded;	/* read from the shard's file since allocated */
	bool		leases_dirty;	/* a recovery added one: persist it */
	int64		leases_saved_ms;	/* when the lease file was last written */
	bool		leases_unsaved; /* retaining seq_nos moved since then */
	int64		leases_synced_ms;	/* when the copies were last sent the set */
	SeLeaseSet	leases;
	/* a primary relocation's handoff (replication/relocation.c) */
	pg_atomic_uint32 writes_in_flight;	/* bulk rounds admitted, not yet replicated */
	pg_atomic_uint32 handoff;	/* 1: handed off to handoff_id: no new writes */
	char		handoff_id[SE_UUID_LEN + 1];	/* the relocation target's id */
	/* _stats counters (SeSlotStat), zeroed when the slot is allocated */
	pg_atomic_uint64 stats[SE_STAT_N];
} SeShardSlot;

/* An int64 published in a slot's pg_atomic_uint64 (checkpoints: -1 = none). */
static inline int64
se_slot_read_i64(pg_atomic_uint64 *v)
{
	return (int64) pg_atomic_read_u64(v);
}

static inline void
se_slot_write_i64(pg_atomic_uint64 *v, int64 x)
{
	pg_atomic_write_u64(v, (uint64) x);
}

/* ---------- the bounded write queue ---------- */
typedef enum SeRequestKind
{
	SE_REQ_BULK = 1,			/* shard sub-request of a bulk */
	SE_REQ_REFRESH,
	SE_REQ_FLUSH,
	SE_REQ_OPEN_SHARD,
	SE_REQ_CLOSE_SHARD,
	SE_REQ_FORCE_MERGE,
	SE_REQ_REPLICA				/* replica_ops of a primary (replicate.c) */
} SeRequestKind;

typedef struct SeQueueEntry
{
	int			next;			/* next entry in FIFO / free list, -1 = end */
	int			kind;			/* SeRequestKind */
	int			slot;			/* shard slot */
	dsm_handle	handle;			/* requester's DSM segment (bulk) */
	int			sub;			/* sub-request number within it */
	int			requester_procno;	/* pgprocno to wake */
	uint64		bytes;			/* payload bytes (indexing pressure) */
	int64		arg;			/* control argument (max_num_segments) */
	int			state;			/* SeEntryState (control requests) */
	bool		failed;			/* control request failed */
	uint64		taker_generation;	/* owner's generation when taken */
} SeQueueEntry;

typedef enum SeEntryState
{
	SE_ENTRY_FREE = 0,
	SE_ENTRY_QUEUED,
	SE_ENTRY_ACTIVE,
	SE_ENTRY_DONE,
	SE_ENTRY_ABANDONED,			/* requester left; worker frees it */
	SE_ENTRY_RESERVED			/* bulk room reserved, request being filled */
} SeEntryState;

typedef struct SeWorkerState
{
	int			pid;
	int			procno;			/* pgprocno for SetLatch */
	int			head;			/* FIFO of waiting entries */
	int			tail;
	int			queued;
	int			active;
	uint64		completed;
	uint64		rejected;
	uint64		generation;		/* bumped at each (re)start */
} SeWorkerState;

/* ---------- background merges ---------- */
#define SE_MAX_MERGE_TASKS		64
#define SE_MERGE_MAX_INPUTS		16
#define SE_SHARD_MAX_MERGES		8		/* merges in flight per shard, at most */
#define SE_MAX_MERGE_THREADS	8

typedef enum SeMergeState
{
	SE_MERGE_FREE = 0,
	SE_MERGE_QUEUED,
	SE_MERGE_RUNNING,
	SE_MERGE_DONE,
	SE_MERGE_FAILED,
	SE_MERGE_ABANDONED			/* owner gave up; merge worker discards output */
} SeMergeState;

typedef struct SeMergeTask
{
	int			state;			/* SeMergeState, under merge_mutex */
	int			slot;
	char		index_uuid[SE_UUID_LEN + 1];
	int			shard;
	int			owner_procno;
	int			ninputs;
	uint64		gens[SE_MERGE_MAX_INPUTS];
	uint64		del_gens[SE_MERGE_MAX_INPUTS];
	uint64		out_gen;
	int			zstd_level;
	bool		urgent;			/* the shard is far over its segment budget */
	char		error[256];
} SeMergeTask;

typedef struct SeShared
{
	LWLock		state_lock;		/* cluster state file */
	LWLock		slots_lock;		/* slot allocation */
	pg_atomic_uint64 state_version;
	int			launcher_pid;

	slock_t		queue_mutex;
	int			free_head;
	int			nentries;
	int			queued;			/* bulk sub-requests in flight (reserved, waiting
								 * or being applied), node-wide */
	uint64		inflight_bytes; /* indexing pressure */
	uint64		rejected;		/* rejected sub-requests, node-wide */
	uint64		completed;
	int			largest_active; /* most write threads busy at once (ES's "largest") */
	/* the HTTP workers' in-flight request bodies (ES's in_flight_requests breaker) */
	pg_atomic_uint64 http_held_bytes;
	pg_atomic_uint64 http_breaker_trips;
	/*
	 * The transport's traffic, as ES's _nodes/stats transport section:
	 * server_open = backends that served a peer's call and are still
	 * connected; outbound_opened = connections this node's processes
	 * opened to peers; rx/tx = requests and replies (and stream rows)
	 * received and sent, both sides, with their payload bytes.
	 */
	pg_atomic_uint64 transport_server_open;
	pg_atomic_uint64 transport_outbound_opened;
	pg_atomic_uint64 transport_rx_count;
	pg_atomic_uint64 transport_rx_bytes;
	pg_atomic_uint64 transport_tx_count;
	pg_atomic_uint64 transport_tx_bytes;
	pg_atomic_uint64 last_bulk_at;	/* when a write worker last finished a
									 * bulk batch (TimestampTz) */
	int			nworkers;
	SeWorkerState workers[SE_MAX_WRITE_THREADS];

	slock_t		merge_mutex;
	int			nmerge_workers;
	int			merge_procnos[SE_MAX_MERGE_THREADS];
	uint64		merges_completed;
	SeMergeTask merge_tasks[SE_MAX_MERGE_TASKS];

	ConditionVariable control_cv;	/* control request completions */
	ConditionVariable slot_cv;		/* slot state changes */
	ConditionVariable refresh_cv;	/* a shard refreshed (refresh=wait_for) */

	int			nslots;
	/* SeQueueEntry entries[nentries] and SeShardSlot slots[nslots] follow */
} SeShared;

extern SeShared *SeShmem;
extern SeQueueEntry *SeEntries;
extern SeShardSlot *SeSlots;

/* Count one more (or n) of a slot's stat; a slot < 0 is no shard's. */
static inline void
se_slot_stat_add(int slot, SeSlotStat which, int64 n)
{
	if (slot >= 0)
		pg_atomic_add_fetch_u64(&SeSlots[slot].stats[which], (uint64) n);
}

/* in shmem.c */
extern void se_shmem_request(void);
extern void se_shmem_startup(void);
extern int	se_shmem_queue_capacity(void);

/* in bgw.c */
extern volatile sig_atomic_t se_bgw_got_sigterm;
extern void se_bgw_register(const char *function, const char *kind, int count,
							bool database);
extern void se_bgw_start(void);
extern bool se_bgw_loop_top(void);
extern void se_check_wait_interrupts(void);
extern void se_keep_freed_heap(int mmap_above, int trim_keep);

/* in waitpoint.c */
extern void se_debug_waitpoint(const char *name);
extern void se_debug_pausepoint(const char *name);
extern bool se_debug_skip(const char *name);
extern bool se_debug_fault(const char *name);

/* in worker.c */
extern void se_launcher_register(void);
PGDLLEXPORT void se_write_worker_main(Datum arg);

/* in merge_worker.c */
extern int	se_merge_submit(const SeMergeTask *task);
extern SeMergeState se_merge_state(int task, char *error, size_t errlen);
extern void se_merge_release(int task);
extern void se_merge_abandon(int task);
extern void se_merge_register(void);
PGDLLEXPORT void se_merge_worker_main(Datum arg);

/* in queue.c */
typedef enum SeEnqueueResult
{
	SE_ENQUEUE_OK,
	SE_ENQUEUE_REJECTED_QUEUE,	/* write queue full */
	SE_ENQUEUE_REJECTED_PRESSURE	/* indexing pressure over the limit */
} SeEnqueueResult;

extern int	se_queue_reserve_bulk(int slot, uint64 bytes, SeEnqueueResult *why);
extern int	se_queue_reserve(int slot, SeRequestKind kind, uint64 bytes,
							 SeEnqueueResult *why);
extern void se_queue_submit_reserved(int entry, dsm_handle handle, int sub);
extern void se_queue_cancel_reserved(int entry);
extern int	se_queue_take(int worker);	/* -1 if none */
extern void se_queue_free_bulk_entry(int entry);
extern void se_queue_bulk_done(int worker, uint64 bytes, bool applied);
extern bool se_queue_control(int slot, SeRequestKind kind, int64 arg);
extern int	se_queue_control_many(const int *slots, int n, SeRequestKind kind, int64 arg);
extern void se_queue_control_done(int worker, int entry, bool failed);

/* in slots.c: refresh=wait_for (ES's RefreshListeners) */
extern bool se_slot_wait_refresh(int slot, const char *uuid, int shard, uint64 gen,
								 int max_listeners);

/* ---------- the search pool's queue (search_queue.c) ---------- */
#define SE_MAX_SEARCH_THREADS	64

typedef struct SeSearchQueueEntry
{
	int			next;			/* FIFO / free list, -1 = end */
	dsm_handle	handle;			/* the coordinator's DSM segment */
	int			request;		/* shard request number within it */
} SeSearchQueueEntry;

typedef struct SeSearchQueue
{
	slock_t		mutex;
	int			procnos[SE_MAX_SEARCH_THREADS]; /* -1 = not running */
	bool		idle[SE_MAX_SEARCH_THREADS];	/* waiting for a submit */
	bool		busy[SE_MAX_SEARCH_THREADS];	/* running a request */
	int			capacity;
	int			free_head;
	int			head;
	int			tail;
	int			queued;			/* waiting requests */
	int			active;			/* requests being run */
	uint64		completed;
	uint64		rejected;		/* did not fit: run by their coordinator */
	int			largest;		/* most requests run at once */
	SeSearchQueueEntry entries[FLEXIBLE_ARRAY_MEMBER];
} SeSearchQueue;

extern SeSearchQueue *SeSearchQ;
extern Size se_search_queue_shmem_size(void);
extern void se_search_queue_shmem_init(void);
extern int	se_search_queue_workers(void);
extern int	se_search_queue_submit(dsm_handle handle, int first, int n);
extern bool se_search_queue_pending(dsm_handle handle, int request);
extern bool se_search_queue_take(int me, dsm_handle *handle, int *request);
extern void se_search_queue_done(int me);
extern void se_search_queue_attach_worker(int me);
extern int	se_search_queue_largest(void);
extern void se_search_queue_stats(int *active, int *queued, uint64 *rejected,
								  uint64 *completed);

/* in slots.c */
extern int	se_slot_find(const char *uuid, int shard);
extern int	se_slot_allocate(const char *uuid, int shard);
extern bool se_slot_set_copy(int slot, const char *uuid, int shard, bool replica,
							 const char *allocation_id, int64 primary_term,
							 const char *primary_node);
extern int	se_slot_missing(const char *uuid, int nshards, int *used);
extern bool se_slot_advance(int slot, SeSlotState state, const char *failure);
extern int	se_slot_mark_closing(const char *uuid, int shard, bool delete_files);
extern void se_slot_free(int slot);
extern void se_slot_unpublish(int slot);
extern SeSlotState se_slot_wait_while(int slot, SeSlotState state, int timeout_ms);

#endif							/* SE_NODE_H */
