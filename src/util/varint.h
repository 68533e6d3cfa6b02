/*-------------------------------------------------------------------------
 *
 * varint.h
 *	  Variable-length integer coding on StringInfo buffers (pure).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_VARINT_H
#define SE_VARINT_H

#include "util/se_common.h"

static inline void
se_put_vint(StringInfo buf, uint64 v)
{
	char		tmp[10];
	int			n = 0;

	while (v >= 0x80)
	{
		tmp[n++] = (char) ((v & 0x7F) | 0x80);
		v >>= 7;
	}
	tmp[n++] = (char) v;
	appendBinaryStringInfo(buf, tmp, n);
}

/* Read a varint at *p (bounded by end); returns false on truncation. */
static inline bool
se_get_vint(const uint8 **p, const uint8 *end, uint64 *out)
{
	uint64		v = 0;
	int			shift = 0;

	while (*p < end && shift < 64)
	{
		uint8		b = *(*p)++;

		v |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
		{
			*out = v;
			return true;
		}
		shift += 7;
	}
	return false;
}

static inline void
se_put_u32(StringInfo buf, uint32 v)
{
	appendBinaryStringInfo(buf, (const char *) &v, 4);	/* little-endian hosts */
}

static inline void
se_put_u64(StringInfo buf, uint64 v)
{
	appendBinaryStringInfo(buf, (const char *) &v, 8);
}

static inline uint32
se_read_u32(const uint8 *p)
{
	uint32		v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64
se_read_u64(const uint8 *p)
{
	uint64		v;

	memcpy(&v, p, 8);
	return v;
}

#endif							/* SE_VARINT_H */
