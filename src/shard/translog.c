/*-------------------------------------------------------------------------
 *
 * translog.c
 *	  A shard's write-ahead operation log (see translog.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "shard/translog.h"
#include "util/fileio.h"
#include "util/varint.h"

#define TLOG_MAGIC "SETLOG01"
#define TLOG_HEADER_LEN 16
#define TLOG_MAX_RECORD ((uint32) 1 << 30)

static char *
gen_path(const char *dir, int64 gen)
{
	return psprintf("%s/translog-" INT64_FORMAT ".tlog", dir, gen);
}

static void
open_gen(SeTranslog *tl, bool create)
{
	char	   *path = gen_path(tl->dir, tl->gen);
	struct stat st;

	if (create)
	{
		char		hdr[TLOG_HEADER_LEN];

		memcpy(hdr, TLOG_MAGIC, 8);
		memcpy(hdr + 8, &tl->gen, 8);
		se_file_write_plain(path, hdr, sizeof(hdr), true);
		se_fsync_dir(tl->dir);
	}
	tl->fd = open(path, O_WRONLY | O_APPEND | PG_BINARY);
	if (tl->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open translog \"%s\": %m", path)));
	if (fstat(tl->fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat translog \"%s\": %m", path)));
	tl->size = st.st_size;
	pfree(path);
}

void
se_translog_open(SeTranslog *tl, const char *dir, int64 gen, bool create)
{
	tl->dir = pstrdup(dir);
	tl->gen = gen;
	tl->fd = -1;
	tl->dirty = false;
	tl->total_size = 0;
	initStringInfo(&tl->buf);
	open_gen(tl, create);
	tl->total_size = tl->size;
}

void
se_translog_add(SeTranslog *tl, const SeTranslogOp *op)
{
	StringInfo	b = &tl->buf;
	int			start = b->len;
	uint32		len;
	pg_crc32c	crc;
	uint32		rl = op->routing ? (uint32) op->routing_len : PG_UINT32_MAX;
	uint8		opc = (uint8) op->op;

	se_put_u32(b, 0);			/* len, patched */
	se_put_u32(b, 0);			/* crc, patched */
	appendBinaryStringInfo(b, (const char *) &opc, 1);
	se_put_u64(b, (uint64) op->seq_no);
	se_put_u64(b, (uint64) op->primary_term);
	se_put_u64(b, (uint64) op->version);
	se_put_u32(b, (uint32) op->id_len);
	appendBinaryStringInfo(b, op->id, op->id_len);
	se_put_u32(b, rl);
	if (op->routing)
		appendBinaryStringInfo(b, op->routing, op->routing_len);
	se_put_u32(b, (uint32) op->source_len);
	if (op->source_len > 0)
		appendBinaryStringInfo(b, op->source, op->source_len);
	len = b->len - start - 8;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, b->data + start + 8, len);
	FIN_CRC32C(crc);
	memcpy(b->data + start, &len, 4);
	memcpy(b->data + start + 4, &crc, 4);
	tl->dirty = true;
	/* keep the buffer small: write through past 1 MB */
	if (b->len > 1024 * 1024)
		se_translog_sync(tl, false);
}

void
se_translog_sync(SeTranslog *tl, bool sync)
{
	char	   *p = tl->buf.data;
	size_t		left = tl->buf.len;

	while (left > 0)
	{
		ssize_t		n = write(tl->fd, p, left);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write translog of \"%s\": %m", tl->dir)));
		}
		p += n;
		left -= n;
	}
	tl->size += tl->buf.len;
	tl->total_size += tl->buf.len;
	resetStringInfo(&tl->buf);
	if (sync && tl->dirty)
	{
		if (pg_fdatasync(tl->fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync translog of \"%s\": %m", tl->dir)));
		tl->dirty = false;
	}
}

int64
se_translog_roll(SeTranslog *tl)
{
	se_translog_sync(tl, true);
	close(tl->fd);
	tl->gen++;
	open_gen(tl, true);
	return tl->gen;
}

void
se_translog_trim(SeTranslog *tl, int64 keep_gen)
{
	DIR		   *d = AllocateDir(tl->dir);
	struct dirent *de;

	while ((de = ReadDir(d, tl->dir)) != NULL)
	{
		int64		g;

		if (sscanf(de->d_name, "translog-" INT64_FORMAT ".tlog", &g) == 1 && g < keep_gen)
		{
			char	   *p = psprintf("%s/%s", tl->dir, de->d_name);

			(void) unlink(p);
			pfree(p);
		}
	}
	FreeDir(d);
	tl->total_size = tl->size;
}

void
se_translog_close(SeTranslog *tl)
{
	if (tl->fd >= 0)
	{
		se_translog_sync(tl, true);
		close(tl->fd);
	}
	tl->fd = -1;
}

/* Replay one generation file; returns false if the file is missing. */
static bool
replay_file(const char *path, SeTranslogReplayFn fn, void *arg, int64 *count)
{
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	size_t		off = TLOG_HEADER_LEN;

	if (data == NULL)
		return false;
	if (len < TLOG_HEADER_LEN || memcmp(data, TLOG_MAGIC, 8) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("translog file \"%s\" has a bad header", path),
				 errdetail("translog_corrupted_exception")));
	while (off + 8 <= len)
	{
		uint32		rlen;
		uint32		rcrc;
		pg_crc32c	crc;
		const uint8 *p;
		const uint8 *end;
		SeTranslogOp op;
		uint32		l;

		memcpy(&rlen, data + off, 4);
		memcpy(&rcrc, data + off + 4, 4);
		if (rlen > TLOG_MAX_RECORD || off + 8 + rlen > len)
			break;				/* torn tail */
		INIT_CRC32C(crc);
		COMP_CRC32C(crc, data + off + 8, rlen);
		FIN_CRC32C(crc);
		if (crc != rcrc)
			break;				/* torn tail */
		p = (const uint8 *) data + off + 8;
		end = p + rlen;
		if (rlen < 1 + 24 + 12)
			break;
		memset(&op, 0, sizeof(op));
		op.op = (SeOpType) p[0];
		p += 1;
		op.seq_no = (int64) se_read_u64(p);
		op.primary_term = (int64) se_read_u64(p + 8);
		op.version = (int64) se_read_u64(p + 16);
		p += 24;
		l = se_read_u32(p);
		p += 4;
		if (l > (uint32) (end - p))
			break;
		op.id = (const char *) p;
		op.id_len = l;
		p += l;
		if (end - p < 4)
			break;
		l = se_read_u32(p);
		p += 4;
		if (l != PG_UINT32_MAX)
		{
			if (l > (uint32) (end - p))
				break;
			op.routing = (const char *) p;
			op.routing_len = l;
			p += l;
		}
		if (end - p < 4)
			break;
		l = se_read_u32(p);
		p += 4;
		if (l > (uint32) (end - p))
			break;
		op.source = (const char *) p;
		op.source_len = l;
		fn(&op, arg);
		(*count)++;
		off += 8 + rlen;
	}
	if (off < len)
	{
		/* drop the torn tail so new records append after the good ones */
		if (truncate(path, off) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not truncate translog \"%s\": %m", path)));
	}
	pfree(data);
	return true;
}

int64
se_translog_replay(const char *dir, int64 from_gen, SeTranslogReplayFn fn,
				   void *arg, int64 *last_gen)
{
	int64		count = 0;
	int64		g = from_gen;

	*last_gen = from_gen;
	for (;;)
	{
		char	   *path = gen_path(dir, g);
		bool		found = replay_file(path, fn, arg, &count);

		pfree(path);
		if (!found)
			break;
		*last_gen = g;
		g++;
	}
	return count;
}
