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

#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "shard/translog.h"
#include "util/fileio.h"
#include "util/varint.h"

#define TLOG_MAGIC_V1 "SETLOG01"
#define TLOG_MAGIC "SETLOG02"
#define TLOG_HEADER_LEN_V1 16
#define TLOG_HEADER_LEN 24
#define TLOG_MAX_RECORD ((uint32) 1 << 30)

static char *
gen_path(const char *dir, int64 gen)
{
	return psprintf("%s/translog-" INT64_FORMAT ".tlog", dir, gen);
}

/*
 * A generation's header: magic, generation and (since SETLOG02) the
 * shard's max_seq_no when it was created, which bounds every seq_no of the
 * generations before it -- what retention by seq_no (flush, peer recovery)
 * goes by.  Operations arrive out of order on a replica, so a generation
 * may hold seq_nos below its own bound, never above the next one's.
 */
static void
open_gen(SeTranslog *tl, bool create, int64 prev_max_seq_no)
{
	char	   *path = gen_path(tl->dir, tl->gen);
	struct stat st;

	if (create)
	{
		char		hdr[TLOG_HEADER_LEN];

		memcpy(hdr, TLOG_MAGIC, 8);
		memcpy(hdr + 8, &tl->gen, 8);
		memcpy(hdr + 16, &prev_max_seq_no, 8);
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
	open_gen(tl, create, -1);
	tl->total_size = tl->size;
}

/* Append op's record ([len][crc32c][payload]) to b. */
void
se_translog_encode(StringInfo b, const SeTranslogOp *op)
{
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
}

void
se_translog_add(SeTranslog *tl, const SeTranslogOp *op)
{
	StringInfo	b = &tl->buf;

	se_translog_encode(b, op);
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
se_translog_roll(SeTranslog *tl, int64 max_seq_no)
{
	se_translog_sync(tl, true);
	close(tl->fd);
	tl->gen++;
	open_gen(tl, true, max_seq_no);
	return tl->gen;
}

/*
 * The bound a generation's header gives the generations before it (see
 * open_gen); INT64_MAX when unknown (missing, or a SETLOG01 file).
 */
static int64
gen_prev_max(const char *dir, int64 gen)
{
	char	   *path = gen_path(dir, gen);
	char		hdr[TLOG_HEADER_LEN];
	int			fd = open(path, O_RDONLY | PG_BINARY);
	int64		v = PG_INT64_MAX;

	pfree(path);
	if (fd < 0)
		return v;
	if (read(fd, hdr, sizeof(hdr)) == sizeof(hdr) && memcmp(hdr, TLOG_MAGIC, 8) == 0)
		memcpy(&v, hdr + 16, 8);
	close(fd);
	return v;
}

void
se_translog_trim(SeTranslog *tl, int64 keep_gen, int64 retain_seq_no)
{
	DIR		   *d = AllocateDir(tl->dir);
	struct dirent *de;
	while ((de = ReadDir(d, tl->dir)) != NULL)
	{
		int64		g;
		char	   *p;

		if (sscanf(de->d_name, "translog-" INT64_FORMAT ".tlog", &g) != 1 || g >= keep_gen)
			continue;
		p = psprintf("%s/%s", tl->dir, de->d_name);
		/* every seq_no of g is <= the next generation's bound */
		if (retain_seq_no < 0 || gen_prev_max(tl->dir, g + 1) < retain_seq_no)
			(void) unlink(p);
		pfree(p);
	}
	FreeDir(d);
	/* what a flush would commit: retained generations are committed */
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

/*
 * Call fn for each whole, checksummed record of data[0..len); returns the
 * bytes they took (a torn or corrupt record ends the walk).
 */
size_t
se_translog_decode(const char *data, size_t len, SeTranslogReplayFn fn, void *arg)
{
	size_t		off = 0;

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
		if (rlen > TLOG_MAX_RECORD || rlen > len - off - 8)
			break;
		INIT_CRC32C(crc);
		COMP_CRC32C(crc, data + off + 8, rlen);
		FIN_CRC32C(crc);
		if (crc != rcrc)
			break;
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
		if (fn)
			fn(&op, arg);
		off += 8 + rlen;
	}
	return off;
}

typedef struct CountArg
{
	SeTranslogReplayFn fn;
	void	   *arg;
	int64	   *count;
	int64		from;			/* read_ops: seq_no range */
	int64		to;
} CountArg;

static void
count_op(const SeTranslogOp *op, void *arg)
{
	CountArg   *c = arg;

	c->fn(op, c->arg);
	(*c->count)++;
}

/* Bytes of a generation's header, or -1 if data is not a translog file. */
static int
header_len(const char *data, size_t len)
{
	if (len >= TLOG_HEADER_LEN && memcmp(data, TLOG_MAGIC, 8) == 0)
		return TLOG_HEADER_LEN;
	if (len >= TLOG_HEADER_LEN_V1 && memcmp(data, TLOG_MAGIC_V1, 8) == 0)
		return TLOG_HEADER_LEN_V1;
	return -1;
}

/* Replay one generation file; returns false if the file is missing. */
static bool
replay_file(const char *path, SeTranslogReplayFn fn, void *arg, int64 *count)
{
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	int			hlen;
	size_t		off;
	CountArg	c = {fn, arg, count};

	if (data == NULL)
		return false;
	hlen = header_len(data, len);
	if (hlen < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("translog file \"%s\" has a bad header", path),
				 errdetail("translog_corrupted_exception")));
	off = hlen + se_translog_decode(data + hlen, len - hlen, count_op, &c);
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

static void
range_op(const SeTranslogOp *op, void *arg)
{
	CountArg   *c = arg;

	if (op->seq_no >= c->from && op->seq_no <= c->to)
	{
		c->fn(op, c->arg);
		(*c->count)++;
	}
}

/*
 * Call fn for every operation with from <= seq_no <= to in the
 * generations present in dir, oldest first; returns how many.  Read-only
 * (any process may call it while the owner appends): a record being
 * written ends its generation's walk.
 */
int64
se_translog_read_ops(const char *dir, int64 from, int64 to,
					 SeTranslogReplayFn fn, void *arg)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	int64	   *gens = NULL;
	int			ngens = 0;
	int			cap = 0;
	int64		count = 0;
	CountArg	c = {fn, arg, &count, from, to};
	int			i;

	if (d == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open translog directory \"%s\": %m", dir)));
	while ((de = ReadDir(d, dir)) != NULL)
	{
		int64		g;

		if (sscanf(de->d_name, "translog-" INT64_FORMAT ".tlog", &g) != 1)
			continue;
		if (ngens == cap)
		{
			cap = Max(8, cap * 2);
			gens = gens ? repalloc(gens, sizeof(int64) * cap) : palloc(sizeof(int64) * cap);
		}
		gens[ngens++] = g;
	}
	FreeDir(d);
	/* few generations: insertion sort */
	for (i = 1; i < ngens; i++)
	{
		int64		g = gens[i];
		int			j = i;

		for (; j > 0 && gens[j - 1] > g; j--)
			gens[j] = gens[j - 1];
		gens[j] = g;
	}
	for (i = 0; i < ngens; i++)
	{
		char	   *path;
		char	   *data;
		size_t		len;
		int			hlen;

		/* every seq_no of gens[i] is <= the next one's bound */
		if (i + 1 < ngens && gens[i + 1] == gens[i] + 1 &&
			gen_prev_max(dir, gens[i + 1]) < from)
			continue;
		path = gen_path(dir, gens[i]);
		data = se_file_read_all(path, &len, true);
		pfree(path);
		if (data == NULL)
			continue;			/* trimmed meanwhile */
		hlen = header_len(data, len);
		if (hlen >= 0)
			(void) se_translog_decode(data + hlen, len - hlen, range_op, &c);
		pfree(data);
		CHECK_FOR_INTERRUPTS();
	}
	if (gens)
		pfree(gens);
	return count;
}

/*
 * The oldest generation of dir that may hold an operation with seq_no >=
 * from, when every such operation is in the generations present from
 * there on; -1 when some may have been trimmed (every seq_no of the
 * trimmed generations is <= the oldest present one's bound, which must be
 * below from; a SETLOG01 generation has no bound).
 */
int64
se_translog_first_gen_for(const char *dir, int64 from)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	int64		lo = -1;
	int64		hi = -1;
	int64		g;

	if (d == NULL)
		return -1;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		if (sscanf(de->d_name, "translog-" INT64_FORMAT ".tlog", &g) != 1)
			continue;
		lo = lo < 0 ? g : Min(lo, g);
		hi = Max(hi, g);
	}
	FreeDir(d);
	if (lo < 0 || gen_prev_max(dir, lo) >= from)
		return -1;
	/* the generations are consecutive; skip those wholly below from */
	for (g = lo; g < hi && gen_prev_max(dir, g + 1) < from; g++)
		;
	return g;
}

/*
 * Append bytes [start, end) of generation gen to out; false if the file
 * is gone or shorter (trimmed, or not written yet).
 */
bool
se_translog_read_range(const char *dir, int64 gen, uint64 start, uint64 end,
					   StringInfo out)
{
	char	   *path = gen_path(dir, gen);
	int			fd = open(path, O_RDONLY | PG_BINARY);
	uint64		off = start;

	pfree(path);
	if (fd < 0)
		return false;
	enlargeStringInfo(out, (int) (end - start));
	while (off < end)
	{
		ssize_t		n = pread(fd, out->data + out->len, end - off, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			close(fd);
			return false;
		}
		out->len += n;
		off += n;
	}
	out->data[out->len] = '\0';
	close(fd);
	return true;
}
