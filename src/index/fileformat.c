/*-------------------------------------------------------------------------
 *
 * fileformat.c
 *	  Header and CRC32C footer shared by every search_engine file format,
 *	  plus small allocation helpers of the codec.
 *
 * Header: u32 magic, u8 format name length, format name, i32 version,
 * 16-byte id.  Footer (SE_FILE_FOOTER_LEN bytes): u32 footer magic,
 * u32 CRC32C of every byte before the footer, u64 total file length.  The
 * length catches truncation and appended garbage even when the caller
 * skips the (whole-file) checksum.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment_internal.h"
#include "port/pg_crc32c.h"

#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

#define SE_FILE_HEADER_MAGIC	0x53454831	/* "1HES" on disk */
#define SE_FILE_FOOTER_MAGIC	(~(uint32) SE_FILE_HEADER_MAGIC)

void
se_file_id_hex(const uint8 *id, char *out)
{
	static const char hex[] = "0123456789abcdef";
	int			i;

	for (i = 0; i < SE_SEGMENT_ID_LEN; i++)
	{
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * SE_SEGMENT_ID_LEN] = '\0';
}

void
se_file_write_header(StringInfo out, const char *format_name, int32 version,
					 const uint8 id[SE_SEGMENT_ID_LEN])
{
	size_t		name_len = strlen(format_name);
	uint8		nl;

	/* Format names are our own short constants. */
	Assert(name_len <= 255);
	nl = (uint8) Min(name_len, 255);
	se_put_u32(out, SE_FILE_HEADER_MAGIC);
	appendBinaryStringInfo(out, (const char *) &nl, 1);
	appendBinaryStringInfo(out, format_name, nl);
	se_put_u32(out, (uint32) version);
	appendBinaryStringInfo(out, (const char *) id, SE_SEGMENT_ID_LEN);
}

/* The file is taken to start at out->data[0]. */
void
se_file_write_footer(StringInfo out)
{
	se_file_write_footer_at(out, 0);
}

/* Footer for a file that starts at out->data[start] (appended files). */
void
se_file_write_footer_at(StringInfo out, int start)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, out->data + start, out->len - start);
	FIN_CRC32C(crc);
	se_put_u32(out, SE_FILE_FOOTER_MAGIC);
	se_put_u32(out, crc);
	se_put_u64(out, (uint64) (out->len - start) + 8);
}

int
se_file_check(const uint8 *data, size_t len, const char *format_name,
			  int32 min_version, int32 max_version, const uint8 *expect_id,
			  bool verify, SeError *err)
{
	size_t		name_len = strlen(format_name);
	size_t		hdr_len = 4 + 1 + name_len + 4 + SE_SEGMENT_ID_LEN;
	char		idhex[SE_SEGMENT_ID_LEN * 2 + 1];
	const uint8 *foot;
	int32		version;

	if (expect_id)
		se_file_id_hex(expect_id, idhex);
	else
		strcpy(idhex, "unknown");

	if (data == NULL || len < hdr_len + SE_FILE_FOOTER_LEN)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: header: file too short (%zu bytes)",
					 format_name, idhex, len);
		return -1;
	}
	if (se_read_u32(data) != SE_FILE_HEADER_MAGIC)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: header: bad magic",
					 format_name, idhex);
		return -1;
	}
	if (data[4] != name_len || memcmp(data + 5, format_name, name_len) != 0)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: header: format name mismatch",
					 format_name, idhex);
		return -1;
	}
	/* From here on the header's own id names the file in messages. */
	se_file_id_hex(data + 5 + name_len + 4, idhex);
	version = (int32) se_read_u32(data + 5 + name_len);
	if (version < min_version || version > max_version)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: header: unsupported version %d (supported %d to %d)",
					 format_name, idhex, version, min_version, max_version);
		return -1;
	}
	if (expect_id &&
		memcmp(data + 5 + name_len + 4, expect_id, SE_SEGMENT_ID_LEN) != 0)
	{
		char		want[SE_SEGMENT_ID_LEN * 2 + 1];

		se_file_id_hex(expect_id, want);
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: header: id mismatch (expected %s)",
					 format_name, idhex, want);
		return -1;
	}
	foot = data + len - SE_FILE_FOOTER_LEN;
	if (se_read_u32(foot) != SE_FILE_FOOTER_MAGIC)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: footer: bad magic (truncated file?)",
					 format_name, idhex);
		return -1;
	}
	if (se_read_u64(foot + 8) != (uint64) len)
	{
		se_error_set(err, 500, SE_CORRUPTED,
					 "%s file [%s] is corrupted: footer: recorded length " UINT64_FORMAT " but file has %zu bytes",
					 format_name, idhex, se_read_u64(foot + 8), len);
		return -1;
	}
	if (verify)
	{
		pg_crc32c	crc;

		INIT_CRC32C(crc);
		COMP_CRC32C(crc, data, len - SE_FILE_FOOTER_LEN);
		FIN_CRC32C(crc);
		if (crc != se_read_u32(foot + 4))
		{
			se_error_set(err, 500, SE_CORRUPTED,
						 "%s file [%s] is corrupted: footer: checksum failed (expected %08x, actual %08x)",
						 format_name, idhex, se_read_u32(foot + 4), crc);
			return -1;
		}
	}
	return (int) hdr_len;
}

/* Allocation that may exceed 1 GB in the server. */
void *
se_index_alloc_huge(size_t size, bool zero)
{
#ifndef SE_FRONTEND
	return MemoryContextAllocExtended(CurrentMemoryContext, Max(size, 1),
									  MCXT_ALLOC_HUGE | (zero ? MCXT_ALLOC_ZERO : 0));
#else
	return zero ? palloc0(Max(size, 1)) : palloc(Max(size, 1));
#endif
}

/*
 * Grow *ptr (NULL or palloc'd) to at least need elements, doubling, and
 * return it; *cap is updated.  repalloc keeps the chunk's memory context.
 */
void *
se_index_grow(void *ptr, size_t *cap, size_t need, size_t elem)
{
	size_t		ncap;

	if (ptr != NULL && need <= *cap)
		return ptr;
	ncap = Max(*cap, 16);
	while (ncap < need)
		ncap *= 2;
	if (ptr == NULL)
		ptr = se_index_alloc_huge(ncap * elem, false);
	else
	{
#ifndef SE_FRONTEND
		ptr = repalloc_huge(ptr, ncap * elem);
#else
		ptr = repalloc(ptr, ncap * elem);
#endif
	}
	*cap = ncap;
	return ptr;
}
