/*-------------------------------------------------------------------------
 *
 * engine.h
 *	  One shard's engine, driven only by the write worker that owns it:
 *	  recovery, writes (translog + in-memory buffer + version checks),
 *	  refresh (publish a new segment snapshot), flush (commit point),
 *	  merges and close.
 *
 * Directory <data_dir>/indices/<uuid>/<shard>/ holds index/ (segment files
 * _<gen>.seg, live docs _<gen>_<delgen>.liv, commit points segments_<N>)
 * and translog/ (translog-<gen>.tlog).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_ENGINE_H
#define SE_ENGINE_H

#include "postgres.h"

#include "cluster/state.h"
#include "index/segment.h"
#include "shard/bulk_protocol.h"
#include "replication/checkpoint.h"
#include "shard/translog.h"
#include "util/fileio.h"

typedef struct SeSegEntry
{
	uint64		gen;
	uint64		del_gen;
	SeMappedFile mf;
	SeSegmentReader *reader;
	uint64	   *live;			/* NULL = all live */
	bool		live_dirty;		/* deletes not yet written to a .liv */
	bool		synced;			/* fsynced (part of a commit) */
	uint32		max_doc;
	uint32		live_count;
	MemoryContext cxt;
	/* Bloom filter of the segment's _id terms, built by the first lookup */
	bool		id_bloom_built;
	uint64	   *id_bloom;		/* NULL: none, every lookup seeks */
	uint64		id_bloom_mask;	/* words - 1 */
} SeSegEntry;

/* A background merge the shard handed to a merge worker. */
typedef struct SeShardMerge
{
	int			task;			/* merge task number; -1 = none */
	int			n;
	uint64		gens[SE_MERGE_MAX_INPUTS];
	uint64		del_gens[SE_MERGE_MAX_INPUTS];
	uint64	   *live[SE_MERGE_MAX_INPUTS];	/* live docs the merge saw */
	uint32		max_doc[SE_MERGE_MAX_INPUTS];
	uint64		out_gen;
	int64		submitted;		/* GetCurrentTimestamp() at submit (_stats) */
} SeShardMerge;

typedef struct SeShard
{
	int			slot;
	char		uuid[SE_UUID_LEN + 1];
	int			shard;
	char	   *index_name;
	char	   *path;
	char	   *index_dir;
	char	   *tlog_dir;
	MemoryContext cxt;
	SeIndexSettings settings;
	int64		primary_term;
	SeMapping  *mapping;
	uint64		mapping_state_version;
	bool		mapping_dirty;
	SeSegmentBuilder *buffer;
	int			nsegs;
	SeSegEntry	segs[SE_MAX_SEGMENTS];
	SeTranslog	tl;
	int64		max_seq_no;
	/* replication (src/replication/README.md) */
	SeCheckpointTracker ckpt;	/* local checkpoint: processed seq_nos */
	int64		global_checkpoint;	/* as known by this copy; -1 = none */
	int64		persisted_gcp;	/* in the translog's global_checkpoint file */
	bool		replicated;		/* cluster mode with number_of_replicas > 0 */
	struct SeTombstone *tombstones; /* deletes applied out of order (replica) */
	int			ntombstones;
	int			captombstones;
	int64		rollback_to;	/* replaying for a rollback: up to here; -1 = all */
	int64		commit_gen;
	int64		commit_max_seq_no;	/* the last commit's */
	int64		commit_tlog_gen;	/* its first translog generation */
	/*
	 * A replicated copy also keeps its safe commit (ES CombinedDeletionPolicy:
	 * the newest whose max_seq_no <= the global checkpoint) when the last is
	 * past it, and the translog from it: a rollback after a promotion resets
	 * to it instead of a fresh peer recovery.  0: the last commit is safe.
	 */
	int64		safe_gen;
	int64		safe_tlog_gen;
	int64		next_seg_gen;
	TimestampTz last_refresh;
	TimestampTz last_sync;
	uint64		write_gen;
	uint64		refreshed_gen;
	bool		recovering;
	/* background merges in flight: index.merge.scheduler.max_thread_count */
	SeShardMerge merges[SE_SHARD_MAX_MERGES];
	/* acknowledged, logged, not yet in the buffer (se_shard_index_pending) */
	MemoryContext pending_cxt;
	struct SePendingDoc *pending;
	int			npending;
	int			cappending;
	size_t		pending_bytes;	/* their _source bytes */
	uint32	   *pending_slots;	/* open addressing over pending ids: index+1 */
	uint32		pending_mask;
} SeShard;

extern SeShard *se_shard_open(int slot);
/*
 * Apply a shard sub-request.  defer: check, version and log each index or
 * create item, but leave adding it to the buffer (its text analysis and
 * inversion) for se_shard_index_pending, which the owner calls once the
 * batch is acknowledged.
 */
extern void se_shard_apply_bulk(SeShard *sh, SeBulkHeader *hdr, SeBulkSub *sub,
								 char *base, bool defer);
/* Add what se_shard_apply_bulk deferred to the buffer; cannot fail. */
extern void se_shard_index_pending(SeShard *sh);
/* After a batch: publish dynamic mapping changes (before acknowledging). */
extern void se_shard_publish_mapping(SeShard *sh);
extern void se_shard_sync_translog(SeShard *sh);

/*
 * Apply operations a primary already sequenced (replica_ops, peer
 * recovery): refused with err (illegal_state_exception, "primary term")
 * if primary_term is older than the shard's; a newer one is taken.  An
 * operation whose _id already holds a newer seq_no (or a newer delete's
 * tombstone) is only marked processed.  Logged in the translog; the
 * caller syncs it (se_shard_sync_translog) before answering.
 */
extern void se_shard_apply_replica_ops(SeShard *sh, const SeTranslogOp *ops, int n,
									   int64 primary_term, int64 global_checkpoint,
									   SeError *err);
/* Take a promotion the routing made (term + 1); true if it did. */
extern bool se_shard_promote_if_needed(SeShard *sh);
/* Raise this copy's global checkpoint (never past its local checkpoint). */
extern void se_shard_update_global_checkpoint(SeShard *sh, int64 gcp);
/*
 * Operations with from <= seq_no <= to of a shard's retained translog, by
 * any process (peer recovery, resync); returns how many were passed to fn.
 */
extern int64 se_shard_read_ops(const char *uuid, int shard, int64 from, int64 to,
							   SeTranslogReplayFn fn, void *arg);
extern void se_shard_refresh(SeShard *sh);
extern void se_shard_flush(SeShard *sh);
/* false: a merge found no room for its output and was abandoned, the shard
 * stays open (the reason is in its slot's merge_failure) */
extern bool se_shard_force_merge(SeShard *sh, int max_segments);
extern void se_shard_close(SeShard *sh, bool flush);
extern void se_shard_discard(SeShard *sh);
extern void se_shard_remove_files(const char *uuid, int shard);
extern void se_remove_leftover_indices(void);
/* Periodic work; returns ms until this shard next needs attention. */
extern long se_shard_periodic(SeShard *sh, TimestampTz now);
extern size_t se_shard_buffer_bytes(SeShard *sh);
/* Install a finished background merge; true if the shard changed. */
extern bool se_shard_merge_poll(SeShard *sh);
extern bool se_shard_translog_over_threshold(SeShard *sh);

/* A commit point's contents (segments_N), for peer recovery. */
typedef struct SeCommitInfo
{
	int64		generation;
	int64		translog_gen;	/* first translog generation it needs */
	int64		max_seq_no;
	int64		local_checkpoint;	/* every seq_no <= it is in the commit */
	int			nsegs;
	uint64		gens[SE_MAX_SEGMENTS];
	uint64		del_gens[SE_MAX_SEGMENTS];	/* 0: no live-docs file */
} SeCommitInfo;

/* Newest segments_N in index_dir (0: none). */
extern int64 se_commit_newest(const char *index_dir);
/*
 * Newest commit of index_dir whose max_seq_no <= max_seq_no and older than
 * before (0: any), read into ci; 0 when there is none.
 */
extern int64 se_commit_newest_upto(const char *index_dir, int64 max_seq_no, int64 before,
								   SeCommitInfo *ci);
/* Remove the commit points of index_dir newer than gen (their segments go at cleanup). */
extern void se_commit_drop_newer(const char *index_dir, int64 gen);
extern bool se_commit_read(const char *index_dir, int64 gen, SeCommitInfo *ci, SeError *err);

extern char *se_shard_path(const char *uuid, int shard);
/* The global checkpoint persisted in a shard's translog dir (-1: none). */
extern int64 se_shard_read_global_checkpoint(const char *tlog_dir);
extern char *se_index_path(const char *uuid);

#endif
