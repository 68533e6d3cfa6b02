/*-------------------------------------------------------------------------
 *
 * translog.h
 *	  A shard's write-ahead operation log.
 *
 * One file per generation, translog-<gen>.tlog: a 24-byte header
 * ("SETLOG02", generation, the shard's max_seq_no when the generation was
 * started; "SETLOG01" files have 16 bytes, without it) then records
 * [u32 len][u32 crc32c][payload].
 * An operation is acknowledged only after the record is written and (with
 * durability "request") fsynced.  Recovery replays every record of the
 * generations at or after the last commit point's; a torn record at the
 * tail (crash mid-write) ends the log and is truncated away.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_TRANSLOG_H
#define SE_TRANSLOG_H

#include "postgres.h"
#include "lib/stringinfo.h"

typedef enum SeOpType
{
	SE_OP_INDEX = 1,
	SE_OP_DELETE = 2,
	SE_OP_NOOP = 3				/* fills a seq_no gap after a promotion (ES NoOp) */
} SeOpType;

typedef struct SeTranslogOp
{
	SeOpType	op;
	int64		seq_no;
	int64		primary_term;
	int64		version;
	const char *id;
	int			id_len;
	const char *routing;		/* NULL if none */
	int			routing_len;
	const char *source;			/* SE_OP_INDEX */
	size_t		source_len;
} SeTranslogOp;

typedef struct SeTranslog
{
	char	   *dir;
	int64		gen;
	int			fd;
	uint64		size;			/* bytes in the current generation */
	uint64		total_size;		/* all generations kept */
	bool		dirty;			/* written since last sync */
	StringInfoData buf;			/* records not yet written */
} SeTranslog;

extern void se_translog_open(SeTranslog *tl, const char *dir, int64 gen, bool create);
extern void se_translog_add(SeTranslog *tl, const SeTranslogOp *op);
/* Write buffered records; fsync when sync. */
extern void se_translog_sync(SeTranslog *tl, bool sync);
/* Start a new generation (fsynced, empty); returns it.  max_seq_no: the
 * shard's, which bounds every seq_no of the generations before it. */
extern int64 se_translog_roll(SeTranslog *tl, int64 max_seq_no);
/* Remove generations older than keep_gen but those that may hold an
 * operation with seq_no >= retain_seq_no (-1: none retained). */
extern void se_translog_trim(SeTranslog *tl, int64 keep_gen, int64 retain_seq_no);
/* Append op's record to b (the replication wire carries the same bytes). */
extern void se_translog_encode(StringInfo b, const SeTranslogOp *op);
extern void se_translog_close(SeTranslog *tl);

typedef void (*SeTranslogReplayFn) (const SeTranslogOp *op, void *arg);
/* Replay generations >= from_gen in order; returns ops replayed.  Sets *last_gen. */
extern int64 se_translog_replay(const char *dir, int64 from_gen,
								SeTranslogReplayFn fn, void *arg, int64 *last_gen);
/* Call fn per whole record of data (fn NULL: only check); returns bytes used. */
extern size_t se_translog_decode(const char *data, size_t len,
								 SeTranslogReplayFn fn, void *arg);
/* Operations with from <= seq_no <= to of every retained generation. */
extern int64 se_translog_read_ops(const char *dir, int64 from, int64 to,
								  SeTranslogReplayFn fn, void *arg);
/* Bytes [start, end) of generation gen; false if not (or no longer) there. */
extern bool se_translog_read_range(const char *dir, int64 gen, uint64 start,
								   uint64 end, StringInfo out);

/* The oldest generation holding history from seq_no from, or -1 (see translog.c). */
extern int64 se_translog_first_gen_for(const char *dir, int64 from);

#endif
