/*-------------------------------------------------------------------------
 *
 * livedocs.c
 *	  Live-docs bitsets and their "se_livedocs" files.
 *
 * File body (between header and footer): u32 max_doc, i64 generation,
 * u32 live count, then ceil(max_doc / 64) little-endian u64 words, bit
 * (doc & 63) of word (doc >> 6) set when doc is live.  The file is small,
 * so parsing always verifies the checksum, the count and that the bits past
 * max_doc are clear.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment_internal.h"
#include "port/pg_bitutils.h"

static inline size_t
nwords(uint32 max_doc)
{
	return ((size_t) max_doc + 63) / 64;
}

uint64 *
se_livedocs_new(uint32 max_doc)
{
	size_t		n = nwords(max_doc);
	uint64	   *bits = se_index_alloc_huge(sizeof(uint64) * Max(n, 1), true);

	if (n > 0)
	{
		memset(bits, 0xFF, sizeof(uint64) * n);
		if (max_doc % 64 != 0)
			bits[n - 1] = ((uint64) 1 << (max_doc % 64)) - 1;
	}
	return bits;
}

uint32
se_livedocs_count(const uint64 *bits, uint32 max_doc)
{
	size_t		n = nwords(max_doc);
	size_t		i;
	uint64		count = 0;

	if (bits == NULL)
		return max_doc;
	for (i = 0; i < n; i++)
	{
		uint64		w = bits[i];

		/* ignore stray bits past max_doc */
		if (i == n - 1 && max_doc % 64 != 0)
			w &= ((uint64) 1 << (max_doc % 64)) - 1;
		count += pg_popcount64(w);
	}
	return (uint32) count;
}

void
se_livedocs_serialize(const uint64 *bits, uint32 max_doc,
					  const uint8 segment_id[SE_SEGMENT_ID_LEN], int64 gen,
					  StringInfo out)
{
	size_t		n = nwords(max_doc);
	size_t		i;
	int			start = out->len;

	se_file_write_header(out, SE_LIVEDOCS_FORMAT, SE_LIVEDOCS_VERSION, segment_id);
	se_put_u32(out, max_doc);
	se_put_u64(out, (uint64) gen);
	se_put_u32(out, se_livedocs_count(bits, max_doc));
	for (i = 0; i < n; i++)
	{
		uint64		w = bits ? bits[i] : ~UINT64CONST(0);

		if (i == n - 1 && max_doc % 64 != 0)
			w &= ((uint64) 1 << (max_doc % 64)) - 1;
		se_put_u64(out, w);
	}
	se_file_write_footer_at(out, start);
}

uint64 *
se_livedocs_parse(const uint8 *data, size_t len, uint32 max_doc,
				  const uint8 segment_id[SE_SEGMENT_ID_LEN], SeError *err)
{
	int			hdr;
	size_t		n = nwords(max_doc);
	const uint8 *p;
	uint64	   *bits;
	char		idhex[SE_SEGMENT_ID_LEN * 2 + 1];

	hdr = se_file_check(data, len, SE_LIVEDOCS_FORMAT, SE_LIVEDOCS_VERSION,
						SE_LIVEDOCS_VERSION, segment_id, true, err);
	if (hdr < 0)
		return NULL;
	se_file_id_hex(data + hdr - SE_SEGMENT_ID_LEN, idhex);
	p = data + hdr;
	if (len - hdr - SE_FILE_FOOTER_LEN != 16 + 8 * (uint64) n ||
		se_read_u32(p) != max_doc)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "se_livedocs file [%s] is corrupted: body: size does not match %u docs",
					 idhex, max_doc);
		return NULL;
	}
	bits = se_index_alloc_huge(sizeof(uint64) * Max(n, 1), true);
	if (n > 0)
		memcpy(bits, p + 16, sizeof(uint64) * n);
	if (n > 0 && max_doc % 64 != 0 &&
		(bits[n - 1] & ~(((uint64) 1 << (max_doc % 64)) - 1)) != 0)
	{
		pfree(bits);
		se_error_set(err, 500, SE_CORRUPTED,
					 "se_livedocs file [%s] is corrupted: body: bits set past max_doc",
					 idhex);
		return NULL;
	}
	if (se_livedocs_count(bits, max_doc) != se_read_u32(p + 12))
	{
		pfree(bits);
		se_error_set(err, 500, SE_CORRUPTED,
					 "se_livedocs file [%s] is corrupted: body: live count mismatch",
					 idhex);
		return NULL;
	}
	return bits;
}
