/*-------------------------------------------------------------------------
 *
 * recovery.h
 *	  Peer recovery: a replica copy is built from its primary over the
 *	  transport (files of the primary's last commit, then the operations of
 *	  its translog from that commit), as Elasticsearch's peer recovery.
 *
 * Source side (recovery_source.c, transport actions on the primary's
 * node): recovery_start pins the last commit's files and the translog
 * from that commit by hard links in <shard>/recovery/<id>/ (segment files
 * are immutable; an unlinked original lives on through the link), and
 * answers the file list with lengths and CRC32C footers; recovery_file
 * streams a pinned file or a window of it; recovery_ops reads whole translog
 * records; recovery_finalize drops the pins.
 *
 * Target side (recovery_target.c): the owner of a replica slot calls
 * se_recovery_start_replica, which starts a recovery worker (a dynamic
 * background worker) and returns; the worker copies the files the target
 * lacks (same name, length and checksum = reused), verifies every chunk
 * and every file's CRC32C, writes them durably, writes the source's
 * translog records into the target's translog, and tells the owner to open
 * the shard, which then recovers it locally as after a restart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_RECOVERY_H
#define SE_RECOVERY_H

#include "util/se_common.h"

#include "node/node.h"

#include "lib/stringinfo.h"
#include "datatype/timestamp.h"

struct SeWireReader;

#define SE_MAX_RECOVERIES		32	/* recoveries remembered per node */
#define SE_RECOVERY_MAX_ATTEMPTS	3
/* the unit of recovery_ops answers */
#define SE_RECOVERY_CHUNK		(4 * 1024 * 1024)
/*
 * A row of a recovery_file stream: its CRC32C is checked and it is written
 * on arrival, while the source reads the next (ES sends 512 KB chunks, two
 * files at a time).
 */
#define SE_RECOVERY_ROW			(1024 * 1024)

/* ES RecoveryState.Stage, plus READY: files and translog are in place */
typedef enum SeRecoveryStage
{
	SE_REC_FREE = 0,
	SE_REC_INIT,
	SE_REC_INDEX,
	SE_REC_VERIFY_INDEX,
	SE_REC_TRANSLOG,
	SE_REC_READY,				/* the owner may open the shard */
	SE_REC_FINALIZE,
	SE_REC_DONE,
	SE_REC_FAILED
} SeRecoveryStage;

typedef struct SeRecovery
{
	int			stage;			/* SeRecoveryStage */
	int			slot;
	char		index_uuid[SE_UUID_LEN + 1];
	int			shard;
	char		source_node[NAMEDATALEN];
	char		target_node[NAMEDATALEN];
	char		allocation_id[SE_UUID_LEN + 1];	/* the target copy's */
	TimestampTz start_time;
	TimestampTz stop_time;
	int			attempts;		/* failed attempts so far */
	TimestampTz retry_at;
	int			worker_pid;
	/* progress, written by the recovery worker */
	int			files_total;
	int			files_reused;
	int			files_recovered;
	int			files_to_recover;
	uint64		bytes_total;
	uint64		bytes_reused;
	uint64		bytes_recovered;
	uint64		bytes_to_recover;
	int64		ops_recovered;
	int64		ops_total;		/* -1: not known yet */
	uint64		throttle_ms;
	char		failure[256];
} SeRecovery;

/* shared memory */
extern Size se_recovery_shmem_size(void);
extern void se_recovery_shmem_init(void);

/*
 * The owner of an OPENING replica slot: true when the slot's directory
 * holds the recovered commit and translog (open the shard now); false
 * while a recovery worker works on it (started here when none does).
 * Never waits.  ERROR after SE_RECOVERY_MAX_ATTEMPTS failed attempts.
 */
extern bool se_recovery_start_replica(int slot_no);
/*
 * Is a recovery of slot_no's copy under way (its owner may have opened it
 * already, it is not caught up yet)?  The shard-state worker reports the
 * copy started only once it is not.
 */
extern bool se_recovery_in_progress(int slot_no);
/* The slot was freed or failed: forget its recovery (owner). */
extern void se_recovery_forget_slot(int slot_no);

/*
 * A closed index's copy placed here to be built (no slot, never opened):
 * start or follow the recovery of its files from source_node (the
 * shard-state worker calls it every scan).  1: done, report it started;
 * -1: failed for good (failure says why); 0: under way.
 */
extern int	se_recovery_closed_copy(const char *uuid, int shard, const char *allocation_id,
									const char *source_node, char *failure,
									size_t failure_len);

/* transport actions of both sides */
extern void se_recovery_register_actions(void);

/* transport action "recovery_stats": this node's recoveries (recovery_target.c) */
extern bool se_recovery_stats_action(const char *payload, size_t len, StringInfo reply,
									 SeError *err);
/* read one recovery of a recovery_stats reply; false at the end */
extern bool se_recovery_stats_read(struct SeWireReader *r, SeRecovery *out);

/* source side helpers (recovery_source.c) */
extern uint32 se_recovery_file_crc(const char *path, uint64 *length, bool *ok);

/* indices.recovery.max_bytes_per_sec in bytes (0: unthrottled) */
extern int64 se_recovery_max_bytes_per_sec(void);

#endif
