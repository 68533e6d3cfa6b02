/*-------------------------------------------------------------------------
 *
 * checkpoint.h
 *	  A copy's local checkpoint: the highest seq_no below which every
 *	  operation was processed (Elasticsearch's LocalCheckpointTracker).
 *
 * Operations reach a replica out of order (concurrent replication
 * requests, recovery replay beside live writes), so the tracker keeps a
 * bitset window of the seq_nos processed above the checkpoint and moves
 * the checkpoint over every run of processed ones.  A primary processes
 * its seq_nos in order: then the window stays empty and marking is one
 * comparison.  Pure module: compiles in the unit tests.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CHECKPOINT_H
#define SE_CHECKPOINT_H

#include "util/se_common.h"

typedef struct SeCheckpointTracker
{
	int64		checkpoint;		/* every seq_no <= it processed; -1 = none */
	int64		max_seq_no;		/* highest seq_no marked (or the checkpoint) */
	int64		base;			/* seq_no of bit 0 of bits[0] (checkpoint + 1
								 * rounded down to a word) */
	int			nwords;			/* words in use */
	int			capwords;
	uint64	   *bits;			/* NULL until an operation arrives out of order */
} SeCheckpointTracker;

/* Start at checkpoint (every seq_no <= it processed); memory in the current context. */
extern void se_checkpoint_init(SeCheckpointTracker *t, int64 checkpoint);
/* seq_no was processed; returns the checkpoint after it. */
extern int64 se_checkpoint_mark(SeCheckpointTracker *t, int64 seq_no);
/* Was seq_no processed? */
extern bool se_checkpoint_contains(const SeCheckpointTracker *t, int64 seq_no);
/* Forget everything above checkpoint (rollback to it). */
extern void se_checkpoint_reset(SeCheckpointTracker *t, int64 checkpoint);
extern void se_checkpoint_free(SeCheckpointTracker *t);

#endif							/* SE_CHECKPOINT_H */
