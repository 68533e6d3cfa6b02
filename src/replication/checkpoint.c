/*-------------------------------------------------------------------------
 *
 * checkpoint.c
 *	  Local checkpoint tracker (see checkpoint.h).
 *
 * The window covers seq_nos [base, base + 64 * nwords); base is a multiple
 * of 64 at or below checkpoint + 1, so whole words drop off the front as
 * the checkpoint passes them.  Memory is bounded by the spread of the
 * operations in flight (one bit each), as in ES.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "replication/checkpoint.h"

#define WORD_BITS 64

static int64
word_floor(int64 seq_no)
{
	/* seq_nos are >= 0 here: checkpoint >= -1 */
	return seq_no - (seq_no % WORD_BITS);
}

void
se_checkpoint_init(SeCheckpointTracker *t, int64 checkpoint)
{
	memset(t, 0, sizeof(*t));
	t->checkpoint = checkpoint;
	t->max_seq_no = checkpoint;
	t->base = word_floor(checkpoint + 1);
}

bool
se_checkpoint_contains(const SeCheckpointTracker *t, int64 seq_no)
{
	int64		i;

	if (seq_no <= t->checkpoint)
		return true;
	if (seq_no > t->max_seq_no || t->bits == NULL)
		return false;
	i = seq_no - t->base;
	if (i >= (int64) t->nwords * WORD_BITS)
		return false;
	return (t->bits[i / WORD_BITS] >> (i % WORD_BITS)) & 1;
}

/* Drop the words wholly below checkpoint + 1. */
static void
compact(SeCheckpointTracker *t)
{
	int64		nb = word_floor(t->checkpoint + 1);
	int			drop = (int) ((nb - t->base) / WORD_BITS);

	if (t->checkpoint == t->max_seq_no)
	{
		/* nothing pending above: back to the in-order fast path */
		t->nwords = 0;
		t->base = nb;
		return;
	}
	if (drop <= 0)
		return;
	if (drop >= t->nwords)
		t->nwords = 0;
	else
	{
		memmove(t->bits, t->bits + drop, sizeof(uint64) * (t->nwords - drop));
		t->nwords -= drop;
	}
	t->base = nb;
}

int64
se_checkpoint_mark(SeCheckpointTracker *t, int64 seq_no)
{
	int64		i;
	int			w;

	if (seq_no > t->max_seq_no)
		t->max_seq_no = seq_no;
	if (seq_no <= t->checkpoint)
		return t->checkpoint;
	/* in order with nothing pending: the primary's case */
	if (seq_no == t->checkpoint + 1 && t->nwords == 0)
	{
		t->checkpoint = seq_no;
		t->base = word_floor(seq_no + 1);
		return t->checkpoint;
	}
	i = seq_no - t->base;
	w = (int) (i / WORD_BITS);
	if (w >= t->nwords)
	{
		if (w >= t->capwords)
		{
			int			cap = Max(4, t->capwords * 2);

			while (cap <= w)
				cap *= 2;
			t->bits = t->bits ? repalloc(t->bits, sizeof(uint64) * cap)
				: palloc(sizeof(uint64) * cap);
			t->capwords = cap;
		}
		memset(t->bits + t->nwords, 0, sizeof(uint64) * (w + 1 - t->nwords));
		t->nwords = w + 1;
	}
	t->bits[w] |= UINT64CONST(1) << (i % WORD_BITS);
	/* move the checkpoint over the run of processed seq_nos after it */
	for (;;)
	{
		int64		j = t->checkpoint + 1 - t->base;
		int			wj = (int) (j / WORD_BITS);
		uint64		word;
		int			bit;

		if (wj >= t->nwords)
			break;
		word = t->bits[wj] >> (j % WORD_BITS);
		if (word == ~UINT64CONST(0) >> (j % WORD_BITS))
		{
			/* the rest of this word is processed */
			t->checkpoint += WORD_BITS - (j % WORD_BITS);
			continue;
		}
		/* count trailing ones */
		bit = 0;
		while (word & 1)
		{
			word >>= 1;
			bit++;
		}
		t->checkpoint += bit;
		break;
	}
	compact(t);
	return t->checkpoint;
}

void
se_checkpoint_reset(SeCheckpointTracker *t, int64 checkpoint)
{
	t->checkpoint = checkpoint;
	t->max_seq_no = checkpoint;
	t->base = word_floor(checkpoint + 1);
	t->nwords = 0;
}

void
se_checkpoint_free(SeCheckpointTracker *t)
{
	if (t->bits)
		pfree(t->bits);
	t->bits = NULL;
	t->nwords = t->capwords = 0;
}
