/*-------------------------------------------------------------------------
 *
 * smallfloat.c
 *	  Lucene's SmallFloat int <-> byte coding of field lengths for BM25.
 *
 * A length is stored as an 8-bit "float" with 3 explicit mantissa bits: the
 * first NUM_FREE values (0..23) stand for themselves, larger lengths keep
 * their 4 most significant bits.  Scores only match Elasticsearch if these
 * bytes (and the decoded lengths) are exactly Lucene's, so this follows
 * SmallFloat.intToByte4 / byte4ToInt bit for bit.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment.h"
#include "port/pg_bitutils.h"

/*
 * Bytes 0..NUM_FREE-1 are lengths 0..NUM_FREE-1; the rest encode
 * length - NUM_FREE with int4 coding.  NUM_FREE = 255 - int4(INT32_MAX),
 * i.e. 255 - 231.
 */
#define NUM_FREE 24

/* Float-like coding of a non-negative value keeping 4 significant bits. */
static uint32
long_to_int4(uint64 v)
{
	int			nbits;
	int			shift;
	uint32		enc;

	if (v < 8)
		return (uint32) v;		/* subnormal: fewer than 4 bits */
	nbits = pg_leftmost_one_pos64(v) + 1;
	shift = nbits - 4;
	enc = (uint32) (v >> shift) & 0x07;	/* drop the implicit leading bit */
	return enc | ((uint32) (shift + 1) << 3);
}

static uint64
int4_to_long(uint32 i)
{
	uint64		bits = i & 0x07;
	int			shift = (int) (i >> 3) - 1;

	if (shift < 0)
		return bits;
	return (bits | 0x08) << shift;
}

/* Negative lengths cannot occur; they encode as 0 rather than failing. */
uint8
se_smallfloat_int_to_byte4(int32 i)
{
	if (i < 0)
		return 0;
	if (i < NUM_FREE)
		return (uint8) i;
	return (uint8) (NUM_FREE + long_to_int4((uint64) (i - NUM_FREE)));
}

int32
se_smallfloat_byte4_to_int(uint8 b)
{
	if (b < NUM_FREE)
		return b;
	return (int32) (NUM_FREE + int4_to_long((uint32) b - NUM_FREE));
}
