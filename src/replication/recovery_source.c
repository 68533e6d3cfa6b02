/*-------------------------------------------------------------------------
 *
 * recovery_source.c
 *	  Peer recovery, the primary's side: transport actions recovery_start,
 *	  recovery_chunk, recovery_ops and recovery_finalize.
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
#include "utils/timestamp.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "replication/recovery.h"
#include "replication/relocation.h"
#include "replication/replication.h"
#include "shard/engine.h"
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
	LWLockAcquire(&SeSlots[slot].lock, LW_SHARED);
	PG_TRY();
	{
		int64		gen = se_commit_newest(index_dir);

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

/* The shard in slot must be this node's started primary copy. */
static int
source_slot(const char *uuid, int shard, SeError *err)
{
	SeIndexMeta *im = se_state_find_uuid(se_state_current(), uuid);
	int			slot = im ? se_slot_find(uuid, shard) : -1;

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", uuid);
		return -1;
	}
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
 * recovery_start: shard (se_peer_shard_put), target node, target
 * allocation id.  Answer: recovery id, commit generation, its translog
 * generation and max_seq_no, then per file: name, length, CRC32C.
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

	se_wire_init(&r, payload, len);
	im = se_peer_shard_get(&r, &shard, err);
	if (im == NULL)
		return false;
	target = se_wire_str(&r, NULL);
	if (r.bad || !name_ok(target) || strchr(target, '~'))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_start request");
		return false;
	}
	if ((slot = source_slot(im->uuid, shard, err)) < 0)
		return false;
	dir = pins_dir(im->uuid, shard);
	se_mkdir_p(dir);
	drop_stale_pins(dir, target);
	rid = psprintf("%s~" INT64_FORMAT, target, (int64) GetCurrentTimestamp());
	pin = psprintf("%s/%s", dir, rid);
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

/*
 * recovery_chunk: uuid, shard, recovery id, file name, offset, length.
 * Answer: CRC32C of the bytes, then the bytes (at most SE_RECOVERY_CHUNK).
 */
static bool
recovery_chunk_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *pin;
	char	   *name;
	uint64		offset;
	uint64		want;
	char	   *path;
	int			fd;
	char	   *buf;
	ssize_t		n;
	pg_crc32c	crc;

	se_wire_init(&r, payload, len);
	if ((pin = request_pin(&r, err)) == NULL)
		return false;
	name = se_wire_str(&r, NULL);
	offset = se_wire_vint(&r);
	want = se_wire_vint(&r);
	want = Min(want, (uint64) SE_RECOVERY_CHUNK);
	if (r.bad || !name_ok(name))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_chunk request");
		return false;
	}
	path = psprintf("%s/index/%s", pin, name);
	fd = open(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "file [%s] is not part of recovery [%s]", name, pin);
		return false;
	}
	buf = palloc(Max(want, 1));
	n = pread(fd, buf, want, (off_t) offset);
	close(fd);
	if (n < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read \"%s\" for a peer recovery: %m", path)));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf, n);
	FIN_CRC32C(crc);
	if (n > 0 && corrupt_next_chunk())
		buf[n / 2] ^= 0x5a;
	se_put_vint(reply, crc);
	se_put_str(reply, buf, (int) n);
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
	if ((slot = source_slot(uuid, shard, err)) < 0)
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

	se_wire_init(&r, payload, len);
	if ((pin = request_pin_shard(&r, &uuid, &shard, err)) == NULL)
		return false;
	aid = se_wire_str(&r, NULL);
	(void) se_wire_svint(&r);	/* the target's local checkpoint */
	if (r.bad || !name_ok(aid))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed recovery_finalize request");
		return false;
	}
	if ((slot = source_slot(uuid, shard, err)) < 0)
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
	se_replication_mark_in_sync(slot, aid);
	se_remove_tree(pin);
	/* what the target must hold before it reports started */
	se_put_svint(reply, (int64) pg_atomic_read_u64(&SeSlots[slot].max_seq_no));
	return true;
}

void
se_recovery_register_actions(void)
{
	se_transport_register("recovery_start", recovery_start_action);
	se_transport_register("recovery_chunk", recovery_chunk_action);
	se_transport_register("recovery_ops", recovery_ops_action);
	se_transport_register("recovery_track", recovery_track_action);
	se_transport_register("recovery_finalize", recovery_finalize_action);
	se_transport_register("recovery_stats", se_recovery_stats_action);
}
