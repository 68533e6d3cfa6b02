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

/*
 * Bounds-checked reading of a message built with the functions above (the
 * shard request/response wire): every getter returns 0 / NULL once the
 * input is exhausted and leaves bad set, so a decoder checks once at the end.
 */
typedef struct SeWireReader
{
	const uint8 *p;
	const uint8 *end;
	bool		bad;
} SeWireReader;

static inline void
se_wire_init(SeWireReader *r, const void *data, size_t len)
{
	r->p = (const uint8 *) data;
	r->end = r->p + len;
	r->bad = false;
}

static inline uint64
se_wire_vint(SeWireReader *r)
{
	uint64		v = 0;

	if (!r->bad && !se_get_vint(&r->p, r->end, &v))
		r->bad = true;
	return r->bad ? 0 : v;
}

/* Signed values travel zigzag-coded so small negatives stay short. */
static inline void
se_put_svint(StringInfo buf, int64 v)
{
	se_put_vint(buf, ((uint64) v << 1) ^ (uint64) (v >> 63));
}

static inline int64
se_wire_svint(SeWireReader *r)
{
	uint64		v = se_wire_vint(r);

	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

static inline uint32
se_wire_u32(SeWireReader *r)
{
	if (r->bad || r->end - r->p < 4)
	{
		r->bad = true;
		return 0;
	}
	r->p += 4;
	return se_read_u32(r->p - 4);
}

static inline void
se_put_float(StringInfo buf, float f)
{
	uint32		bits;

	memcpy(&bits, &f, 4);
	se_put_u32(buf, bits);
}

static inline float
se_wire_float(SeWireReader *r)
{
	uint32		bits = se_wire_u32(r);
	float		f;

	memcpy(&f, &bits, 4);
	return f;
}

/* Length-prefixed bytes; NULL travels as length 0 with a flag. */
static inline void
se_put_str(StringInfo buf, const char *s, int len)
{
	se_put_vint(buf, s ? (uint64) len + 1 : 0);
	if (s && len > 0)
		appendBinaryStringInfo(buf, s, len);
}

/* A palloc'd NUL-terminated copy (NULL when NULL was sent); *len if wanted. */
static inline char *
se_wire_str(SeWireReader *r, int *len)
{
	uint64		n = se_wire_vint(r);
	char	   *s;

	if (len)
		*len = 0;
	if (r->bad || n == 0)
		return NULL;
	n--;
	if ((uint64) (r->end - r->p) < n || n > (uint64) 0x3ffffffe)
	{
		r->bad = true;
		return NULL;
	}
	s = palloc(n + 1);
	memcpy(s, r->p, n);
	s[n] = '\0';
	r->p += n;
	if (len)
		*len = (int) n;
	return s;
}

#endif							/* SE_VARINT_H */
