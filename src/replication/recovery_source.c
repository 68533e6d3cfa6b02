/*-------------------------------------------------------------------------
 *
 * recovery_source.c
 *	  Peer recovery, the primary's side: transport actions recovery_start,
 *	  recovery_file (a stream), recovery_ops, recovery_track and
 *	  recovery_finalize.
 *
 * recovery_start pins what the target will copy: the newest commit point
 * and its segment and live-docs files, and the translog generations from
 * the commit's, hard-linked into <shard>/recovery/<id>/.  Segment files
 * never change once written, so a link is a snapshot; when the owner's
 * cleanup unlinks an original (a merge, a newer commit) the pinned copy
 * lives on until recovery_finalize removes the directory.  The linking
 * happens under the slot's lock held shared, which the owner's cleanup
 * takes exclusively, so no file of the commit goes between reading the
 * commit and linking its files.  The live translog generation is linked
 * too: appends stay visible through the link, and its trimming after a
 * flush does not remove the pinned one.
 *
 * None of this asks the write worker for anything: the files are read
 * directly (pread of immutable files and of whole, checksummed translog
 * records), so a recovery costs the primary's writes nothing but disk and
 * network bandwidth.  The translog is read record by record, never through
 * se_translog_replay, which truncates a torn tail: on a linked live
 * generation that would cut records the writer is appending.
 *
 * A closed index's primary has no slot (a closed copy holds none) and
 * takes no writes: recovery_start pins its newest commit and translog from
 * its directory the same way, without the slot's lock, always file-based
 * (no retention leases), and recovery_finalize only drops the pins.  That
 * is how a closed copy moves and a closed index gets replicas (ES 7.2+).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "replication/recovery.h"
#include "replication/relocation.h"
#include "replication/replication.h"
#include "shard/engine.h"
#include "shard/translog.h"
#include "transport/transport.h"
#include "util/fileio.h"
#include "util/varint.h"

#define TLOG_HEADER_LEN_V1 16
#define TLOG_HEADER_LEN_V2 24
#define TLOG_MAX_RECORD ((uint32) 1 << 30)
#define PIN_STALE_SECS	3600	/* pins of a target that vanished */

/* a file or recovery name travelling in a request: no path separators */
static bool
name_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && s[0] != '.' && strchr(s, '/') == NULL;
}

static char *
pins_dir(const char *uuid, int shard)
{
	return psprintf("%s/recovery", se_shard_path(uuid, shard));
}

/*
 * Length and CRC32C of a file as its footer states it (every file of a
 * shard ends with magic, CRC32C, length: fileformat.c); ok false when the
 * file is missing or too short to have one.  Lucene's and ES's recovery
 * compare files the same way: name, length and stored checksum.
 */
uint32
se_recovery_file_crc(const char *path, uint64 *length, bool *ok)
{
	int			fd = open(path, O_RDONLY | PG_BINARY);
	struct stat st;
	uint8		foot[SE_FILE_FOOTER_LEN];
	uint32		crc = 0;

	*ok = false;
	*length = 0;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size >= SE_FILE_FOOTER_LEN &&
		pread(fd, foot, sizeof(foot), st.st_size - SE_FILE_FOOTER_LEN) == sizeof(foot))
	{
		memcpy(&crc, foot + 4, 4);
		*length = st.st_size;
		*ok = true;
	}
	close(fd);
	return crc;
}

/* link src into dir (same base name); false on ENOENT, ERROR otherwise */
static bool
link_into(const char *src_dir, const char *name, const char *dst_dir)
{
	char	   *src = psprintf("%s/%s", src_dir, name);
	char	   *dst = psprintf("%s/%s", dst_dir, name);

	if (link(src, dst) != 0 && errno != EEXIST)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not link \"%s\" to \"%s\" for a peer recovery: %m", src, dst)));
	}
	pfree(src);
	pfree(dst);
	return true;
}

static char *
seg_name(uint64 gen)
{
	return psprintf("_" UINT64_FORMAT ".seg", gen);
}

static char *
liv_name(uint64 gen, uint64 del_gen)
{
	return psprintf("_" UINT64_FORMAT "_" UINT64_FORMAT ".liv", gen, del_gen);
}

static char *
tlog_name(int64 gen)
{
	return psprintf("translog-" INT64_FORMAT ".tlog", gen);
}

/*
 * Remove the pins of earlier recoveries of this shard to target (a new
 * recovery supersedes them) and any pin older than PIN_STALE_SECS (its
 * target went away without finalizing).
 */
static void
drop_stale_pins(const char *dir, const char *target)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	size_t		tl = strlen(target);
	time_t		now = time(NULL);

	if (d == NULL)
		return;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		char	   *p;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		p = psprintf("%s/%s", dir, de->d_name);
		if ((strncmp(de->d_name, target, tl) == 0 && de->d_name[tl] == '~') ||
			(stat(p, &st) == 0 && now - st.st_mtime > PIN_STALE_SECS))
			se_remove_tree(p);
		pfree(p);
	}
	FreeDir(d);
}

/*
 * Pin the newest commit of the shard in slot and its translog from the
 * commit's generation into pin; false when a flush raced and trimmed the
 * commit's first translog generation (try again: the next commit is newer).
 */
static bool
pin_commit(int slot, const char *shard_path, const char *pin, SeCommitInfo *ci, SeError *err)
{
	char	   *index_dir = psprintf("%s/index", shard_path);
	char	   *tlog_dir = psprintf("%s/translog", shard_path);
	char	   *pin_index = psprintf("%s/index", pin);
	char	   *pin_tlog = psprintf("%s/translog", pin);
	bool		ok = true;
	int64		g;
	int			i;

	se_remove_tree(pin);
	se_mkdir_p(pin_index);
	se_mkdir_p(pin_tlog);
	/* a closed copy has no slot: no owner writes or cleans up its files */
	if (slot >= 0)
		LWLockAcquire(&SeSlots[slot].lock, LW_SHARED);
	PG_TRY();
	{
		int64		gen = se_commit_newest(index_dir);

		if (gen == 0 && slot < 0)
			se_error_set(err, 500, "index_corrupted_exception",
						 "closed shard directory [%s] has no commit point", shard_path);
		if (gen == 0 || !se_commit_read(index_dir, gen, ci, err))
			ok = false;
		if (ok)
		{
			char	   *cname = psprintf("segments_" INT64_FORMAT, gen);

			ok = link_into(index_dir, cname, pin_index);
			for (i = 0; ok && i < ci->nsegs; i++)
			{
				ok = link_into(index_dir, seg_name(ci->gens[i]), pin_index);
				if (ok && ci->del_gens[i] > 0)
					ok = link_into(index_dir, liv_name(ci->gens[i], ci->del_gens[i]), pin_index);
			}
			if (!ok)
				se_error_set(err, 500, "index_corrupted_exception",
							 "a file of commit point [%s] is missing", cname);
		}
	}
	PG_FINALLY();
	{
		if (slot >= 0)
			LWLockRelease(&SeSlots[slot].lock);
	}
	PG_END_TRY();
	if (!ok)
		return false;
	/* the translog from the commit's generation, the live one included */
	if (!link_into(tlog_dir, tlog_name(ci->translog_gen), pin_tlog))
		return false;			/* trimmed by a flush since: retry */
	for (g = ci->translog_gen + 1; link_into(tlog_dir, tlog_name(g), pin_tlog); g++)
		;
	se_fsync_dir(pin_index);
	return true;
}

/* source_slot's answer for a closed index's primary here: no slot */
#define SOURCE_CLOSED	(-2)

/*
 * The shard in slot must be this node's started primary copy; or, with
 * closed_ok, a closed index's STARTED primary here (SOURCE_CLOSED): a
 * closed index takes no writes and its copy has no slot, so its files are
 * served straight from its directory (ES 7.2+ replicates and relocates
 * closed indices the same way: their files never change).
 */
static int
source_slot(const char *uuid, int shard, bool closed_ok, SeError *err)
{
	SeIndexMeta *im = se_state_find_uuid(se_state_current(), uuid);
	int			slot = im ? se_slot_find(uuid, shard) : -1;

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", uuid);
		return -1;
	}
	if (im->closed && closed_ok && im->routing && shard >= 0 &&
		shard < im->settings.number_of_shards &&
		im->routing[shard].copies[0].state == SE_SHARD_STARTED &&
		se_state_shard_local(im, shard))
		return SOURCE_CLOSED;
	if (slot < 0 || SeSlots[slot].state != SE_SLOT_STARTED || !se_state_shard_local(im, shard))
	{
		/* ES: DelayRecoveryException -- the target tries again */
		se_error_set(err, 503, "delay_recovery_exception",
					 "source shard [%s][%d] is not an active primary on node [%s]",
					 im->name, shard, se_cluster_node_name());
		return -1;
	}
	return slot;
}

/*
 * Operations-based recovery (ES 7.4+): the target's safe commit holds
 * every operation up to start - 1, and this primary retains history from
 * start for the target's node (its retention lease) -- then no file needs
 * copying, only the operations from start.  Pins every translog generation
 * present (links: a flush's trimming does not take them) and checks on the
 * pins that nothing at or above start was trimmed before; the first
 * generation to read, or -1 (copy files instead).
 */
static int64
pin_history(const char *shard_path, const char *pin, int64 start)
{
	char	   *tlog_dir = psprintf("%s/translog", shard_path);
	char	   *pin_tlog = psprintf("%s/translog", pin);
	DIR		   *d;
	struct dirent *de;
	int64		first;

	se_remove_tree(pin);
	se_mkdir_p(psprintf("%s/index", pin));
	se_mkdir_p(pin_tlog);
	d = AllocateDir(tlog_dir);
	while (d && (de = ReadDir(d, tlog_dir)) != NULL)
	{
		int64		g;

		if (sscanf(de->d_name, "translog-" INT64_FORMAT ".tlog", &g) == 1)
			(void) link_into(tlog_dir, de->d_name, pin_tlog);	/* trimmed: skipped */
	}
	if (d)
		FreeDir(d);
	first = se_translog_first_gen_for(pin_tlog, start);
	if (first < 0)
		se_remove_tree(pin);
	return first;
}

/*
 * recovery_start: shard (se_peer_shard_put), target node, and the seq_no
 * from which the target would need operations on top of its safe commit
 * (-1: it has none).  Answer: recovery id, commit generation, its translog
 * generation and max_seq_no, then per file: name, length, CRC32C; then the
 * seq_no the operations start from when the recovery is operations-based
 * (no files: commit generation 0, the translog generation to read from),
 * else -1.  Either way the target's node gets a retention lease from
 * where its copy will replay.
 */
static bool
recovery_start_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	SeIndexMeta *im;
	int			shard;
	char	   *target;
	char	   *rid;
	char	   *dir;
	char	   *pin = NULL;
	int			slot;
	int			attempt;
	SeCommitInfo *ci = palloc0(sizeof(SeCommitInfo));
	DIR		   *d;
	struct dirent *de;
	int			nfiles = 0;
	StringInfoData files;
	int64		start;

	se_wire_init(&r, payload, len);
	im = se_peer_shard_get(&r, &shard, err);
	if (im == NULL)
		return false;
	target = se_wire_str(&r, NULL);
	start = r.p < r.end ? se_wire_svint(&r) : -1;
	if (r.bad || !name_ok(target) || strchr(target, '~'))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_start request");
		return false;
	}
	if ((slot = source_slot(im->uuid, shard, true, err)) == -1)
		return false;
	dir = pins_dir(im->uuid, shard);
	se_mkdir_p(dir);
	drop_stale_pins(dir, target);
	rid = psprintf("%s~" INT64_FORMAT, target, (int64) GetCurrentTimestamp());
	pin = psprintf("%s/%s", dir, rid);
	/*
	 * ES: only for a copy that holds a retention lease here (a copy whose
	 * lease expired was away too long), and only when the history from
	 * start is all here -- the lease retains from the copy's last reported
	 * checkpoints, which may be a little above what its safe commit and
	 * own translog give it when it went away under writes; the pins say.
	 */
	{
		/* a closed copy holds no leases: its recovery copies files */
		int64		lease = slot >= 0 ? se_retention_lease_of(slot, target) : -1;
		int64		first = start >= 0 && lease >= 0
			? pin_history(se_shard_path(im->uuid, shard), pin, start) : -1;

		ereport(LOG,
				(errmsg("search_engine: peer recovery of [%s][%d] to [%s]: %s (operations needed from seq_no " INT64_FORMAT ", its lease retains from " INT64_FORMAT ")",
						im->name, shard, target,
						first >= 0 ? "operations-based"
						: start < 0 ? "file-based, the copy has no safe commit"
						: lease < 0 ? "file-based, no retention lease"
						: "file-based, that history was trimmed",
						start, lease)));
		if (first >= 0)
		{
			se_retention_renew(slot, target, start);
			se_put_str(reply, rid, strlen(rid));
			se_put_vint(reply, 0);
			se_put_vint(reply, (uint64) first);
			se_put_svint(reply, (int64) pg_atomic_read_u64(&SeSlots[slot].max_seq_no));
			se_put_vint(reply, 0);
			se_put_svint(reply, start);
			return true;
		}
	}
	for (attempt = 0; attempt < 10; attempt++)
	{
		CHECK_FOR_INTERRUPTS();
		if (pin_commit(slot, se_shard_path(im->uuid, shard), pin, ci, err))
			break;
		if (se_error_is_set(err))
		{
			se_remove_tree(pin);
			return false;
		}
	}
	if (attempt == 10)
	{
		se_remove_tree(pin);
		se_error_set(err, 503, "delay_recovery_exception",
					 "the source's commit kept changing while it was pinned");
		return false;
	}
	se_put_str(reply, rid, strlen(rid));
	se_put_vint(reply, (uint64) ci->generation);
	se_put_vint(reply, (uint64) ci->translog_gen);
	se_put_svint(reply, ci->max_seq_no);
	/* every pinned index file with its footer's length and checksum */
	initStringInfo(&files);
	{
		char	   *pin_index = psprintf("%s/index", pin);

		d = AllocateDir(pin_index);
		while ((de = ReadDir(d, pin_index)) != NULL)
		{
			char	   *p;
			uint64		flen;
			bool		ok;
			uint32		crc;

			if (de->d_name[0] == '.')
				continue;
			p = psprintf("%s/%s", pin_index, de->d_name);
			crc = se_recovery_file_crc(p, &flen, &ok);
			if (!ok)
			{
				FreeDir(d);
				se_remove_tree(pin);
				se_error_set(err, 500, "index_corrupted_exception",
							 "file [%s] of shard [%s][%d] has no checksum footer",
							 de->d_name, im->name, shard);
				return false;
			}
			se_put_str(&files, de->d_name, strlen(de->d_name));
			se_put_vint(&files, flen);
			se_put_vint(&files, crc);
			nfiles++;
			pfree(p);
		}
		FreeDir(d);
	}
	se_put_vint(reply, (uint64) nfiles);
	appendBinaryStringInfo(reply, files.data, files.len);
	se_put_svint(reply, -1);	/* file-based */
	/* the copy replays from the commit's local checkpoint + 1: keep that */
	if (slot >= 0)
		se_retention_renew(slot, target, ci->local_checkpoint + 1);
	return true;
}

static char *request_pin_shard(SeWireReader *r, char **uuid_out, int *shard_out,
							   SeError *err);

/* the pin directory a request names, or NULL with err set */
static char *
request_pin(SeWireReader *r, SeError *err)
{
	char	   *uuid;
	int			shard;

	return request_pin_shard(r, &uuid, &shard, err);
}

/* the same, and the shard it pins (uuid, shard) */
static char *
request_pin_shard(SeWireReader *r, char **uuid_out, int *shard_out, SeError *err)
{
	char	   *uuid = se_wire_str(r, NULL);
	int			shard = (int) se_wire_vint(r);
	char	   *rid = se_wire_str(r, NULL);
	char	   *pin;
	struct stat st;

	*uuid_out = uuid;
	*shard_out = shard;
	if (r->bad || !name_ok(uuid) || !name_ok(rid))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery request");
		return NULL;
	}
	pin = psprintf("%s/%s", pins_dir(uuid, shard), rid);
	if (stat(pin, &st) != 0)
	{
		/* ES: the source's RecoveriesCollection no longer has it */
		se_error_set(err, 404, "resource_not_found_exception",
					 "no recovery [%s] of shard [%s][%d] on this node", rid, uuid, shard);
		return NULL;
	}
	return pin;
}

/*
 * With search_engine.debug_waitpoints on, the file
 * <PGDATA>/search_engine_corrupt_recovery_chunk makes the next chunk sent
 * arrive with a flipped byte (the file is consumed; a file that says
 * "always" stays, and every recovery from this node fails): how the tests
 * show that a target refuses a chunk whose checksum does not match, and
 * keep a replica out of sync.
 */
static bool
corrupt_next_chunk(void)
{
	char	   *path;
	char		buf[8] = {0};
	FILE	   *f;
	bool		yes = false;

	if (!se_debug_waitpoints)
		return false;
	path = psprintf("%s/search_engine_corrupt_recovery_chunk", DataDir);
	if ((f = AllocateFile(path, "r")) != NULL)
	{
		yes = true;
		if (fread(buf, 1, 6, f) != 6 || strncmp(buf, "always", 6) != 0)
			yes = unlink(path) == 0;
		FreeFile(f);
	}
	pfree(path);
	return yes;
}

/* a file streamed by recovery_file, between rows */
typedef struct FileStream
{
	char	   *path;
	int			fd;				/* transient: closed by an abort too */
	uint64		offset;
	uint64		length;			/* where the stream ends */
} FileStream;

/*
 * recovery_file (a stream): uuid, shard, recovery id, file name, offset,
 * and optionally where to stop (0 or absent: the file's end).  Rows:
 * CRC32C of the chunk (4 bytes, little-endian), then the chunk (at most
 * SE_RECOVERY_ROW bytes), from offset to the end.  One call per file or
 * window of a file: the source reads the next chunk while the target
 * checks and writes this one (the socket buffers between), where a call
 * per chunk made both sides wait for each other on every chunk; the
 * target runs several at once, each served by its own backend here.
 */
static void *
recovery_file_open(const char *payload, size_t len, SeError *err)
{
	SeWireReader r;
	char	   *pin;
	char	   *name;
	FileStream *fs = palloc0(sizeof(FileStream));
	struct stat st;
	uint64		end;

	se_wire_init(&r, payload, len);
	if ((pin = request_pin(&r, err)) == NULL)
		return NULL;
	name = se_wire_str(&r, NULL);
	fs->offset = se_wire_vint(&r);
	end = r.p < r.end ? se_wire_vint(&r) : 0;
	if (r.bad || !name_ok(name))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_file request");
		return NULL;
	}
	fs->path = psprintf("%s/index/%s", pin, name);
	fs->fd = OpenTransientFile(fs->path, O_RDONLY | PG_BINARY);
	if (fs->fd < 0 || fstat(fs->fd, &st) != 0)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "file [%s] is not part of recovery [%s]", name, pin);
		return NULL;
	}
	fs->length = st.st_size;
	if (end > 0 && end < fs->length)
		fs->length = end;
	(void) posix_fadvise(fs->fd, (off_t) fs->offset, (off_t) (fs->length - fs->offset),
						 POSIX_FADV_SEQUENTIAL);
	return fs;
}

static bool
recovery_file_next(void *state, StringInfo row, SeError *err)
{
	FileStream *fs = state;
	size_t		want;
	ssize_t		n;
	pg_crc32c	crc;
	char	   *data;

	if (fs->offset >= fs->length)
	{
		if (fs->fd >= 0)
			CloseTransientFile(fs->fd);
		fs->fd = -1;
		return false;
	}
	want = Min((uint64) SE_RECOVERY_ROW, fs->length - fs->offset);
	enlargeStringInfo(row, 4 + want);
	data = row->data + row->len + 4;
	n = pg_pread(fs->fd, data, want, (off_t) fs->offset);
	if (n != (ssize_t) want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read \"%s\" for a peer recovery: %m", fs->path)));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, n);
	FIN_CRC32C(crc);
	if (corrupt_next_chunk())
		data[n / 2] ^= 0x5a;
	row->data[row->len] = (char) (crc & 0xff);
	row->data[row->len + 1] = (char) ((crc >> 8) & 0xff);
	row->data[row->len + 2] = (char) ((crc >> 16) & 0xff);
	row->data[row->len + 3] = (char) ((crc >> 24) & 0xff);
	row->len += 4 + n;
	row->data[row->len] = '\0';
	fs->offset += n;
	return true;
}

static void
count_op(const SeTranslogOp *op, void *arg)
{
	(*(int64 *) arg)++;
}

/* the header length of a translog generation (SETLOG01: 16, SETLOG02: 24) */
static size_t
tlog_header_len(const char *buf, size_t len)
{
	if (len >= TLOG_HEADER_LEN_V2 && memcmp(buf, "SETLOG02", 8) == 0)
		return TLOG_HEADER_LEN_V2;
	if (len >= TLOG_HEADER_LEN_V1 && memcmp(buf, "SETLOG01", 8) == 0)
		return TLOG_HEADER_LEN_V1;
	return 0;
}

/*
 * Bytes of translog generation path from offset, ending at a whole record,
 * up to about max (one record at least): at offset 0 the generation's
 * header comes first, as the target's file starts with the same one.
 * Returns the bytes taken (0: nothing complete yet) and counts the
 * operations in *nops.  A record still being appended is not complete yet:
 * it stops the read, as the end of the file does.
 */
static size_t
read_records(const char *path, uint64 offset, size_t max, StringInfo out, int64 *nops)
{
	int			fd = open(path, O_RDONLY | PG_BINARY);
	struct stat st;
	size_t		avail;
	size_t		take;
	size_t		hlen = 0;
	size_t		used;
	char	   *buf;

	*nops = 0;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || (uint64) st.st_size <= offset)
	{
		close(fd);
		return 0;
	}
	avail = st.st_size - offset;
	take = Min(avail, max);
	buf = palloc(take);
	if (pread(fd, buf, take, (off_t) offset) != (ssize_t) take)
	{
		close(fd);
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read translog \"%s\" for a peer recovery: %m", path)));
	}
	if (offset == 0 && (hlen = tlog_header_len(buf, take)) == 0)
	{
		close(fd);
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("translog file \"%s\" has a bad header", path),
				 errdetail("translog_corrupted_exception")));
	}
	/* a first record larger than max: read it whole */
	if (take >= hlen + 8)
	{
		uint32		rlen;

		memcpy(&rlen, buf + hlen, 4);
		if (rlen <= TLOG_MAX_RECORD && hlen + 8 + (size_t) rlen > take &&
			hlen + 8 + (size_t) rlen <= avail)
		{
			take = hlen + 8 + rlen;
			buf = repalloc(buf, take);
			if (pread(fd, buf, take, (off_t) offset) != (ssize_t) take)
			{
				close(fd);
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not read translog \"%s\" for a peer recovery: %m", path)));
			}
		}
	}
	close(fd);
	used = hlen + se_translog_decode(buf + hlen, take - hlen, count_op, nops);
	if (used == hlen && offset > 0)
		used = 0;
	appendBinaryStringInfo(out, buf, used);
	pfree(buf);
	return used;
}

/*
 * recovery_ops: uuid, shard, recovery id, translog generation, offset
 * (0: from its header), max bytes.  Answer: the generation and offset the
 * bytes returned end at, the operations they hold, then the bytes (as the
 * translog holds them: the target writes them into the same generation of
 * its own translog).  No bytes: nothing more now.
 */
static bool
recovery_ops_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *pin;
	int64		gen;
	uint64		offset;
	size_t		max;
	StringInfoData recs;
	int64		nops = 0;
	char	   *uuid;
	int			shard;

	se_wire_init(&r, payload, len);
	if ((pin = request_pin_shard(&r, &uuid, &shard, err)) == NULL)
		return false;
	gen = (int64) se_wire_vint(&r);
	offset = se_wire_vint(&r);
	max = se_wire_vint(&r);
	max = Min(max, (size_t) 4 * SE_RECOVERY_CHUNK);
	if (r.bad)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_ops request");
		return false;
	}
	initStringInfo(&recs);
	for (;;)
	{
		char	   *pin_tlog = psprintf("%s/translog", pin);
		char	   *path = psprintf("%s/%s", pin_tlog, tlog_name(gen));
		char	   *next = psprintf("%s/%s", pin_tlog, tlog_name(gen + 1));
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (read_records(path, offset, max, &recs, &nops) > 0)
		{
			offset += recs.len;
			break;
		}
		if (offset == 0)
			break;				/* not even a header yet: later */
		/* a generation rolled since the pin: pin it too, and go on there */
		if (stat(next, &st) != 0)
			(void) link_into(psprintf("%s/translog", se_shard_path(uuid, shard)),
							 tlog_name(gen + 1), pin_tlog);
		if (stat(next, &st) != 0)
			break;				/* the end, for now */
		gen++;
		offset = 0;
	}
	se_put_vint(reply, (uint64) gen);
	se_put_vint(reply, offset);
	se_put_vint(reply, (uint64) nops);
	se_put_str(reply, recs.data, recs.len);
	return true;
}

/*
 * recovery_track: uuid, shard, recovery id, target allocation id, target
 * node.  From now on the primary replicates every write to the target too
 * (replicate.c's target table), before the target reads the operations
 * that came after its copy: nothing falls between the two.  Answer: the
 * primary term and the global checkpoint to apply them with.
 */
static bool
recovery_track_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *uuid;
	int			shard;
	char	   *aid;
	char	   *node;
	int			slot;
	SeIndexMeta *im;

	se_wire_init(&r, payload, len);
	if (request_pin_shard(&r, &uuid, &shard, err) == NULL)
		return false;
	aid = se_wire_str(&r, NULL);
	node = se_wire_str(&r, NULL);
	if (r.bad || !name_ok(aid) || !name_ok(node))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_track request");
		return false;
	}
	if ((slot = source_slot(uuid, shard, false, err)) < 0)
		return false;
	im = se_state_find_uuid(se_state_current(), uuid);
	se_replication_track(slot, aid, node);
	se_put_svint(reply, se_state_shard_primary_term(im, shard));
	se_put_svint(reply, se_slot_read_i64(&SeSlots[slot].global_checkpoint));
	return true;
}

/*
 * recovery_finalize: uuid, shard, recovery id, target allocation id, the
 * target's local checkpoint.  The target has every operation: it counts
 * among the in-sync copies here (the master adds it to in_sync when the
 * target reports shard_started), and the pins go.
 */
static bool
recovery_finalize_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *pin;
	char	   *uuid;
	int			shard;
	char	   *aid;
	int			slot;
	int64		lcp;

	se_wire_init(&r, payload, len);
	if ((pin = request_pin_shard(&r, &uuid, &shard, err)) == NULL)
		return false;
	aid = se_wire_str(&r, NULL);
	lcp = se_wire_svint(&r);	/* the target's local checkpoint */
	if (r.bad || !name_ok(aid))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_finalize request");
		return false;
	}
	slot = source_slot(uuid, shard, true, err);
	if (slot == SOURCE_CLOSED)
	{
		/* a closed copy: nothing to hand off or track, only the pins go */
		se_remove_tree(pin);
		return true;
	}
	if (slot < 0)
	{
		se_remove_tree(pin);
		return false;
	}
	/* a moving primary hands off here (relocation.c) */
	if (!se_relocation_handoff(slot, se_state_find_uuid(se_state_current(), uuid), shard,
							   aid, err))
	{
		se_remove_tree(pin);
		return false;
	}
	{
		int64		gcp = se_slot_read_i64(&SeSlots[slot].global_checkpoint);
		const char *node = strchr(pin, '/') ? strrchr(pin, '/') + 1 : pin;
		char	   *target = pnstrdup(node, strcspn(node, "~"));

		se_replication_mark_in_sync(slot, aid);
		/*
		 * The new copy has not heard the global checkpoint unless
		 * operations came after its copy: the idle sync sends it again
		 * (the copy's commit is safe only once it persisted one).
		 */
		SpinLockAcquire(&SeSlots[slot].repl_mutex);
		SeSlots[slot].gcp_sent = -1;
		SpinLockRelease(&SeSlots[slot].repl_mutex);
		/* the copy's lease follows it from here (ES: renewed at finalize) */
		if (lcp >= 0)
			se_retention_advance(slot, target, Min(lcp, gcp) + 1);
	}
	se_remove_tree(pin);
	/* what the target must hold before it reports started */
	se_put_svint(reply, (int64) pg_atomic_read_u64(&SeSlots[slot].max_seq_no));
	return true;
}

void
se_recovery_register_actions(void)
{
	se_transport_register("recovery_start", recovery_start_action);
	se_transport_register_stream("recovery_file", recovery_file_open, recovery_file_next);
	se_transport_register("recovery_ops", recovery_ops_action);
	se_transport_register("recovery_track", recovery_track_action);
	se_transport_register("recovery_finalize", recovery_finalize_action);
	se_transport_register("recovery_stats", se_recovery_stats_action);
}
