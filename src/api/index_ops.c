/*-------------------------------------------------------------------------
 *
 * index_ops.c
 *	  Index management: create, delete, get, mappings, settings, open,
 *	  close, refresh, flush, force merge, cluster health.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/templates.h"
#include "node/node.h"
#include "security/acl.h"
#include "shard/engine.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/fileio.h"
#include "util/varint.h"

/*
 * Lifecycle locks.  Create, auto-create, open, close, delete and mapping
 * or settings updates of one index name run one at a time: each holds the
 * name's lock from its first look at the cluster state until its shards
 * are open or closed.  A heavyweight lock (an advisory tag in database 0,
 * so node-wide like the state, keyed by a 64-bit hash of the name, with
 * its own class in field4 so that it never meets a user's advisory locks),
 * because it is held across waits on the write workers -- which never take
 * it -- and must give way to cancel; it belongs to the transaction, so an
 * error releases it, and the operation releases it when it ends.  Names
 * are locked in hash order: two operations on several names cannot
 * deadlock.
 */
#define SE_LOCKTAG_INDEX_NAME	0x5345	/* "SE" */

/*
 * The shard-room lock: one node-wide lock of its own class, taken after the
 * name locks, held from the check that the shards fit in the free slots
 * (search_engine.max_shards) until they are allocated, so that two
 * operations on different names cannot both count the same free slots.
 */
#define SE_LOCKTAG_SHARD_ROOM	0x5346

typedef struct NameLocks
{
	int			n;
	uint64	   *keys;			/* sorted, unique */
} NameLocks;

/* Take or release the lifecycle lock of key. */
static void
name_lock(uint64 key, bool acquire)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, InvalidOid, (uint32) (key >> 32), (uint32) key,
						 SE_LOCKTAG_INDEX_NAME);
	if (acquire)
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	else
		LockRelease(&tag, ExclusiveLock, false);
}

/* Take or release the shard-room lock (re-entrant, like any lock). */
static void
room_lock(bool acquire)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, InvalidOid, 0, 0, SE_LOCKTAG_SHARD_ROOM);
	if (acquire)
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	else
		LockRelease(&tag, ExclusiveLock, false);
}

/*
 * Refuse, as ES's shard limit does (with its words), to start shards
 * 0..nshards-1 of uuid (NULL: a new index) that the free slots cannot
 * hold.  The caller holds the shard-room lock.
 */
static bool
check_shard_room(const char *uuid, int nshards, SeError *err)
{
	int			used;
	int			add = se_slot_missing(uuid, nshards, &used);

	if (add <= 0 || used + add <= SeShmem->nslots)
		return true;
	se_error_set(err, 400, "validation_exception",
				 "Validation Failed: 1: this action would add [%d] shards, but this cluster "
				 "currently has [%d]/[%d] maximum normal shards open;",
				 add, used, SeShmem->nslots);
	return false;
}

static int
cmp_key(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y);
}

/* Lock every name of names (a List of char *). */
static void
lock_names(List *names, NameLocks *locks)
{
	ListCell   *lc;
	int			i,
				n = 0;

	locks->keys = palloc(sizeof(uint64) * Max(1, list_length(names)));
	foreach(lc, names)
	{
		const char *name = lfirst(lc);

		locks->keys[n++] = hash_bytes_extended((const unsigned char *) name, strlen(name), 0);
	}
	qsort(locks->keys, n, sizeof(uint64), cmp_key);
	locks->n = 0;
	for (i = 0; i < n; i++)
		if (locks->n == 0 || locks->keys[locks->n - 1] != locks->keys[i])
			locks->keys[locks->n++] = locks->keys[i];
	for (i = 0; i < locks->n; i++)
		name_lock(locks->keys[i], true);
}

static void
unlock_names(NameLocks *locks)
{
	int			i;

	for (i = 0; i < locks->n; i++)
		name_lock(locks->keys[i], false);
	locks->n = 0;
}

/*
 * Resolve expr (closed indices included), lock the names found and resolve
 * again: the second answer, restricted to the names locked, is what the
 * operation acts on (an index created in between is left out, as if it
 * came after; one deleted in between is a 404 if named, skipped if a
 * wildcard matched it).  Returns names (char *); on error nothing stays
 * locked.
 */
static List *
lock_resolved(const char *expr, NameLocks *locks, SeError *err)
{
	List	   *targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	List	   *names = NIL;
	List	   *result = NIL;
	ListCell   *lc;

	if (se_error_is_set(err))
		return NIL;
	foreach(lc, targets)
		names = lappend(names, pstrdup(((SeIndexMeta *) lfirst(lc))->name));
	lock_names(names, locks);
	targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	if (se_error_is_set(err))
	{
		unlock_names(locks);
		return NIL;
	}
	foreach(lc, targets)
	{
		const char *name = ((SeIndexMeta *) lfirst(lc))->name;
		ListCell   *lc2;

		foreach(lc2, names)
			if (strcmp(lfirst(lc2), name) == 0)
				result = lappend(result, pstrdup(name));
	}
	return result;
}

/*
 * What closing an index's shards needs of it, copied: a state update
 * invalidates the SeIndexMeta it came from.
 */
typedef struct IndexShards
{
	char		uuid[SE_UUID_LEN + 1];
	int			nshards;
} IndexShards;

/* This process's copy of index name (and ix), or NULL with a 404 in err. */
static SeIndexMeta *
find_index(const char *name, IndexShards *ix, SeError *err)
{
	SeIndexMeta *im = se_state_find(se_state_current(), name);

	if (im == NULL)
	{
		se_index_status_error(SE_INDEX_MISSING, name, err);
		return NULL;
	}
	strlcpy(ix->uuid, im->uuid, sizeof(ix->uuid));
	ix->nshards = im->settings.number_of_shards;
	return im;
}

/*
 * Allocate and start the shards of im on this node; wait until started.
 * The caller holds im's lifecycle lock, and the shard-room lock if
 * room_held; that lock is released once the slots are allocated.  Shards
 * that the free slots cannot hold are refused before any is allocated.  A
 * shard still closing (a close whose caller was cancelled before the owner
 * finished) is waited for and then opened anew.
 */
static bool
open_shards(const SeIndexMeta *im, bool room_held, SeError *err)
{
	int			n = im->settings.number_of_shards;
	int		   *slots = palloc(sizeof(int) * n);
	int		   *opening = palloc(sizeof(int) * n);
	int			nopening = 0;
	int			s;

	if (!room_held)
		room_lock(true);
	if (!check_shard_room(im->uuid, n, err))
	{
		room_lock(false);
		return false;
	}
	for (s = 0; s < n; s++)
	{
		slots[s] = -1;
		if (!se_state_shard_local(im, s))
			continue;			/* its node starts it */
		for (;;)
		{
			slots[s] = se_slot_allocate(im->uuid, s);
			if (SeSlots[slots[s]].state != SE_SLOT_CLOSING)
			{
				(void) se_state_slot_copy(im, s, slots[s]);
				break;
			}
			if (se_slot_wait_while(slots[s], SE_SLOT_CLOSING, 60000) == SE_SLOT_CLOSING)
			{
				room_lock(false);
				se_error_set(err, 500, "shard_failed_exception",
							 "[%s][%d] failed to start: still closing", im->name, s);
				return false;
			}
		}
		if (SeSlots[slots[s]].state == SE_SLOT_OPENING)
			opening[nopening++] = slots[s];
	}
	room_lock(false);
	/* the owners recover their shards in parallel */
	if (nopening > 0)
		(void) se_queue_control_many(opening, nopening, SE_REQ_OPEN_SHARD, 0);
	for (s = 0; s < n; s++)
	{
		if (slots[s] < 0)
			continue;
		if (se_slot_wait_while(slots[s], SE_SLOT_OPENING, 60000) != SE_SLOT_STARTED)
		{
			se_error_set(err, 500, "shard_failed_exception",
						 "[%s][%d] failed to start: %s", im->name, s,
						 SeSlots[slots[s]].failure[0] ? SeSlots[slots[s]].failure : "timed out");
			return false;
		}
	}
	return true;
}

/*
 * Close the shards of an index on this node -- flushed, or with their
 * files deleted -- and wait for their owners.  True if no shard of the
 * index is open here any more.
 */
static bool
close_shards(const IndexShards *ix, bool delete_files)
{
	int		   *slots = palloc(sizeof(int) * ix->nshards);
	int			n = 0;
	int			s;

	for (s = 0; s < ix->nshards; s++)
	{
		int			slot = se_slot_mark_closing(ix->uuid, s, delete_files);

		if (slot >= 0)
			slots[n++] = slot;
	}
	if (n > 0)
		(void) se_queue_control_many(slots, n, SE_REQ_CLOSE_SHARD, 0);
	for (s = 0; s < ix->nshards; s++)
		if (se_slot_find(ix->uuid, s) >= 0)
			return false;
	return true;
}

SeIndexMeta *
se_index_for_read(const char *name, SeError *err)
{
	const SeClusterState *st = se_state_current();
	SeIndexMeta *im = se_state_find(st, name);

	if (im == NULL || im->closed)
	{
		se_index_status_error(im ? SE_INDEX_CLOSED : SE_INDEX_MISSING, name, err);
		return NULL;
	}
	return im;
}

/*
 * Whether a new index of body fits in the free slots (the caller holds the
 * shard-room lock).  A body whose settings do not parse passes: creating
 * the index reports what is wrong with it.
 */
static bool
new_index_fits(const SeJson *body, SeError *err)
{
	const SeJson *settings = NULL;
	SeIndexSettings s;
	SeError		ignored;

	if (body && body->type == SE_JSON_OBJECT)
		settings = se_json_get(body, "settings");
	se_error_init(&ignored);
	if (!se_settings_parse(settings, &s, false, &ignored))
		return true;
	return check_shard_room(NULL, s.number_of_shards, err);
}

/*
 * Create index name and start its shards, under its lifecycle lock.  With
 * exists_ok (a bulk's auto-creation) an index that exists already is
 * fine: its shards are started unless it is closed.  An index whose
 * shards would not fit in the free slots is refused before it is written
 * to the state; the shard-room lock, held until its slots are allocated,
 * keeps another create or open from taking them in between.
 */
static bool
create_index(const char *name, const SeJson *body, bool exists_ok, SeError *err)
{
	NameLocks	locks;
	SeIndexMeta *im = NULL;
	bool		ok;
	SeError		terr;

	se_error_init(&terr);
	lock_names(list_make1((char *) name), &locks);
	if (exists_ok)
		im = se_state_find(se_state_current(), name);
	if (im != NULL)
		ok = im->closed || open_shards(im, false, err);
	/* the index templates that match the name, the body over them */
	else if ((body = se_templates_apply(se_state_current(), name, body, NULL, NULL, &terr)) == NULL &&
			 se_error_is_set(&terr))
	{
		*err = terr;
		ok = false;
	}
	else
	{
		room_lock(true);
		im = new_index_fits(body, err) ? se_state_create_index(name, body, err) : NULL;
		if (im == NULL)
			room_lock(false);
		ok = im != NULL && open_shards(im, true, err);
	}
	unlock_names(&locks);
	return ok;
}

/*
 * Whether every shard of index name has wait active copies (ES's
 * wait_for_active_shards; -1 = all copies) in this node's applied state,
 * as ES's ActiveShardsObserver watches the cluster state: in a cluster
 * the master's routing (a copy is active once its node reported it
 * started), on a single node the local slots (only primaries: asking for
 * more than one copy waits in vain there).
 */
static bool
shards_active(const char *name, int wait)
{
	SeIndexMeta *im = se_state_find(se_state_current(), name);
	int			s,
				k;

	if (im == NULL || im->closed)
		return false;
	if (wait < 0)
		wait = 1 + im->settings.number_of_replicas;
	if (wait == 0)
		return true;
	for (s = 0; s < im->settings.number_of_shards; s++)
	{
		int			active = 0;

		if (im->routing == NULL)
			active = se_state_shard_state(im, s) == SE_SHARD_STARTED;
		for (k = 0; im->routing && k < im->routing[s].ncopies; k++)
			active += im->routing[s].copies[k].state == SE_SHARD_STARTED;
		if (active < wait)
			return false;
	}
	return true;
}

/*
 * PUT /{index}: create it, then wait (up to timeout_ms) until its shards
 * have wait_for_active_shards active copies on their nodes, as ES does;
 * shards_acknowledged says whether they did in time.
 */
bool
se_op_create_index_wait(const char *name, const SeJson *body, int wait_for_active_shards,
						int timeout_ms, SeResponse *r, SeError *err)
{
	TimestampTz deadline;
	bool		active;

	se_require_started();
	if (!se_acl_check(name, SE_ACL_MANAGE, err) ||
		!se_alias_body_filters_valid(body && body->type == SE_JSON_OBJECT ?
									 se_json_get(body, "aliases") : NULL, err) ||
		!create_index(name, body, false, err))
		return false;
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	while (!(active = shards_active(name, wait_for_active_shards)) &&
		   GetCurrentTimestamp() < deadline)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	r->status = 200;
	appendStringInfo(&r->body, "{\"acknowledged\":true,\"shards_acknowledged\":%s,\"index\":",
					 active ? "true" : "false");
	se_json_write_string(&r->body, name, strlen(name));
	appendStringInfoChar(&r->body, '}');
	return true;
}

bool
se_op_create_index(const char *name, const SeJson *body, SeResponse *r, SeError *err)
{
	/* ES's defaults: the primaries, 30 s */
	return se_op_create_index_wait(name, body, 1, 30000, r, err);
}

/* A bulk's auto-creation of index name, with default settings. */
bool
se_index_auto_create(const char *name, SeError *err)
{
	return create_index(name, NULL, true, err);
}

/*
 * A router found no slot for a shard of im, which its copy of the state
 * says is open: if im is still open, start its shards, else answer why
 * not.  This process's copy of the state is left as it is (the router
 * holds pointers into it).
 */
bool
se_index_open_routed(const SeIndexMeta *im, SeError *err)
{
	NameLocks	locks;
	SeIndexStatus status;
	bool		ok;
	int			s;

	lock_names(list_make1(im->name), &locks);
	status = se_state_index_status(im->uuid);
	if (status != SE_INDEX_OPEN)
		se_index_status_error(status, im->name, err);
	ok = status == SE_INDEX_OPEN && open_shards(im, false, err);
	for (s = 0; ok && s < im->settings.number_of_shards; s++)
		if (!se_state_shard_local(im, s))
		{
			/* writing to another node's shard: not built yet */
			se_error_set(err, 503, "no_shard_available_action_exception",
						 "[%s][%d] is on node [%s]: requests to shards on other nodes are "
						 "not built yet", im->name, s,
						 im->shard_nodes[s][0] ? im->shard_nodes[s] : "(unassigned)");
			ok = false;
		}
	unlock_names(&locks);
	return ok;
}

/*
 * Run op on each index of expr, under the names' lifecycle locks, until
 * one fails; *names are the indices it ran on.
 */
typedef bool (*IndexOp) (const char *name, const SeJson *arg, SeError *err);

static bool
each_locked(const char *expr, IndexOp op, const SeJson *arg, List **names, SeError *err)
{
	NameLocks	locks;
	ListCell   *lc;
	bool		ok = true;

	*names = lock_resolved(expr, &locks, err);
	if (se_error_is_set(err))
		return false;
	foreach(lc, *names)
		if (!(ok = op(lfirst(lc), arg, err)))
			break;
	unlock_names(&locks);
	return ok;
}

/*
 * Delete one index (its lifecycle lock held).  The state first: from now
 * on routers answer 404, and a crash before the files are gone leaves a
 * directory that the next start removes.  The owners delete their shards'
 * files; the rest of the index directory goes once none of its shards is
 * open here.
 */
static bool
delete_index(const char *name, const SeJson *arg, SeError *err)
{
	IndexShards ix;

	if (find_index(name, &ix, err) == NULL || !se_state_delete_index(name, err))
		return false;
	if (close_shards(&ix, true))
		se_remove_tree(se_index_path(ix.uuid));
	return true;
}

/* The local shards of an index the state no longer has, and its files. */
void
se_index_dropped(const char *uuid, int nshards)
{
	IndexShards ix;

	strlcpy(ix.uuid, uuid, sizeof(ix.uuid));
	ix.nshards = nshards;
	if (close_shards(&ix, true))
		se_remove_tree(se_index_path(ix.uuid));
}

bool
se_op_delete_index(const char *expr, SeResponse *r, SeError *err)
{
	List	   *names;

	se_require_started();
	if (strchr(expr, '*') || strcmp(expr, "_all") == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Wildcard expressions or all indices are not allowed");
		return false;
	}
	/* an alias is not deleted through its indices (ES) */
	if (se_alias_refused_as_index(se_state_current(), expr, err))
		return false;
	if (!each_locked(expr, delete_index, NULL, &names, err))
		return false;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

bool
se_op_index_exists(const char *expr)
{
	SeError		err;
	List	   *l;

	se_error_init(&err);
	l = se_acl_resolve(expr, SE_ACL_VIEW, true, &err);
	return !se_error_is_set(&err) && l != NIL;
}

/* Which parts of an index GET /{index}, _mapping and _settings show. */
#define PART_ALIASES	0x01
#define PART_MAPPINGS	0x02
#define PART_SETTINGS	0x04

/* {"<index>": {"aliases":..,"mappings":..,"settings":..}, ...} for expr. */
static bool
get_index_parts(const char *expr, int parts, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr, SE_ACL_VIEW, true, err);
	ListCell   *lc;
	bool		first = true;

	if (se_error_is_set(err))
		return false;
	appendStringInfoChar(&r->body, '{');
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		const char *sep = "";

		if (!first)
			appendStringInfoChar(&r->body, ',');
		first = false;
		se_json_write_string(&r->body, im->name, strlen(im->name));
		appendStringInfoString(&r->body, ":{");
		if (parts & PART_ALIASES)
		{
			appendStringInfoString(&r->body, "\"aliases\":");
			se_aliases_to_json(im, NULL, &r->body);
			sep = ",";
		}
		if (parts & PART_MAPPINGS)
		{
			appendStringInfo(&r->body, "%s\"mappings\":%s", sep, im->mappings_json);
			sep = ",";
		}
		if (parts & PART_SETTINGS)
		{
			appendStringInfo(&r->body, "%s\"settings\":", sep);
			se_settings_to_json(im, &r->body);
		}
		appendStringInfoChar(&r->body, '}');
	}
	appendStringInfoChar(&r->body, '}');
	return true;
}

bool
se_op_get_index(const char *expr, SeResponse *r, SeError *err)
{
	return get_index_parts(expr, PART_ALIASES | PART_MAPPINGS | PART_SETTINGS, r, err);
}

bool
se_op_get_mapping(const char *expr, SeResponse *r, SeError *err)
{
	return get_index_parts(expr, PART_MAPPINGS, r, err);
}

bool
se_op_get_settings(const char *expr, SeResponse *r, SeError *err)
{
	return get_index_parts(expr, PART_SETTINGS, r, err);
}

bool
se_op_put_mapping(const char *expr, const SeJson *body, SeResponse *r, SeError *err)
{
	List	   *names;

	/* a missing or forbidden index is reported before a bad body */
	(void) se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	if (se_error_is_set(err))
		return false;
	if (body == NULL || body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: mapping source is empty;");
		return false;
	}
	if (!each_locked(expr, se_state_put_mapping, body, &names, err))
		return false;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

/* PUT /{index}/_settings: {"index": {...}} or flat "index.x" keys. */
bool
se_op_put_settings(const char *expr, const SeJson *body, SeResponse *r, SeError *err)
{
	const SeJson *settings = body;
	List	   *names;

	/* a missing or forbidden index is reported before a bad body */
	(void) se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	if (se_error_is_set(err))
		return false;
	if (body != NULL && body->type == SE_JSON_OBJECT && se_json_get(body, "settings") != NULL)
		settings = se_json_get(body, "settings");
	if (settings == NULL || settings->type != SE_JSON_OBJECT || settings->u.o.count == 0)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no settings to update;");
		return false;
	}
	if (!each_locked(expr, se_state_update_settings, settings, &names, err))
		return false;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

/*
 * Close one index (its lifecycle lock held): closed in the state first, so
 * that routers answer index_closed_exception, then its shards are flushed
 * and closed here (also those of an index already closed, left open by a
 * close that was cancelled while it waited).
 */
static bool
close_index(const char *name, const SeJson *arg, SeError *err)
{
	IndexShards ix;
	SeIndexMeta *im = find_index(name, &ix, err);

	if (im == NULL || (!im->closed && !se_state_set_closed(name, true, err)))
		return false;
	(void) close_shards(&ix, false);
	return true;
}

/*
 * Open one index (its lifecycle lock held): its shards start first and the
 * state says open only then, so that routers and searches never see it
 * open with shards missing; if they fail to start, it stays closed.
 */
static bool
open_index(const char *name, const SeJson *arg, SeError *err)
{
	IndexShards ix;
	SeIndexMeta *im = find_index(name, &ix, err);

	if (im == NULL || !im->closed)
		return im != NULL && open_shards(im, false, err);
	if (!open_shards(im, false, err) || !se_state_set_closed(name, false, err))
	{
		(void) close_shards(&ix, false);
		return false;
	}
	se_debug_waitpoint("se:open_index:after_state");
	return true;
}

bool
se_op_open_close(const char *expr, bool close, SeResponse *r, SeError *err)
{
	List	   *names;
	ListCell   *lc;
	bool		first = true;

	se_require_started();
	if (!each_locked(expr, close ? close_index : open_index, NULL, &names, err))
		return false;
	if (close)
	{
		appendStringInfoString(&r->body, "{\"acknowledged\":true,\"shards_acknowledged\":true,\"indices\":{");
		foreach(lc, names)
		{
			if (!first)
				appendStringInfoChar(&r->body, ',');
			first = false;
			se_json_write_string(&r->body, lfirst(lc), strlen(lfirst(lc)));
			appendStringInfoString(&r->body, ":{\"closed\":true}");
		}
		appendStringInfoString(&r->body, "}}");
	}
	else
		appendStringInfoString(&r->body, "{\"acknowledged\":true,\"shards_acknowledged\":true}");
	return true;
}

/* Shards of one broadcast on this node: their slots, names, failures. */
typedef struct BroadcastShards
{
	int			n;
	int			cap;
	int		   *slots;
	const char **index;
	int		   *shard;
} BroadcastShards;

static void
broadcast_add(BroadcastShards *b, int slot, const char *index, int shard)
{
	if (b->n == b->cap)
	{
		b->cap = Max(16, b->cap * 2);
		b->slots = b->slots ? repalloc(b->slots, sizeof(int) * b->cap) : palloc(sizeof(int) * b->cap);
		b->index = b->index ? repalloc(b->index, sizeof(char *) * b->cap) : palloc(sizeof(char *) * b->cap);
		b->shard = b->shard ? repalloc(b->shard, sizeof(int) * b->cap) : palloc(sizeof(int) * b->cap);
	}
	b->slots[b->n] = slot;
	b->index[b->n] = index;
	b->shard[b->n] = shard;
	b->n++;
}

/*
 * Refresh, flush or force-merge the shards of b (this node's); returns how
 * many succeeded and appends ES's failure entries to failures.  Refresh
 * and flush go to every shard at once (their owners work in parallel);
 * force merges run one shard after another, as ES's force_merge pool of
 * one thread does; a shard whose merge failed is reported with its reason,
 * as ES lists shard failures: a merge with no room for its output
 * (io_exception) leaves its shard open, any other failure fails the shard.
 */
static int
broadcast_local(BroadcastShards *b, SeRequestKind kind, int64 arg, StringInfo failures)
{
	int			ok = 0;
	int			i;

	if (kind != SE_REQ_FORCE_MERGE)
		return se_queue_control_many(b->slots, b->n, kind, arg);
	for (i = 0; i < b->n; i++)
	{
		SeShardSlot *sl = &SeSlots[b->slots[i]];
		bool		abandoned;
		const char *why;

		if (se_queue_control(b->slots[i], kind, arg))
		{
			ok++;
			continue;
		}
		/* a merge with no room for its output leaves its shard open */
		abandoned = sl->state == SE_SLOT_STARTED && sl->merge_failure[0];
		why = abandoned ? sl->merge_failure : sl->failure;
		appendStringInfo(failures, "%s{\"index\":", failures->len ? "," : "");
		se_json_write_string(failures, b->index[i], strlen(b->index[i]));
		appendStringInfo(failures, ",\"shard\":%d,\"status\":\"INTERNAL_SERVER_ERROR\","
						 "\"reason\":{\"type\":\"%s\",\"reason\":", b->shard[i],
						 abandoned ? "io_exception" : "shard_failed_exception");
		why = why[0] ? why : "force merge failed";
		se_json_write_string(failures, why, strlen(why));
		appendStringInfoString(failures, "}}");
	}
	return ok;
}

/*
 * Transport action "broadcast_shards": a peer's refresh/flush/force merge
 * of shards of this node.  Payload: kind, arg, count, then per shard
 * index name, uuid, shard.  Answer: shards attempted, succeeded, and the
 * failures' JSON.
 */
static bool
broadcast_shards_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	SeRequestKind kind;
	int64		arg;
	uint64		n,
				i;
	BroadcastShards b = {0};
	StringInfoData failures;
	int			ok;

	se_wire_init(&r, payload, len);
	kind = (SeRequestKind) se_wire_vint(&r);
	arg = se_wire_svint(&r);
	n = se_wire_vint(&r);
	if (r.bad || (kind != SE_REQ_REFRESH && kind != SE_REQ_FLUSH && kind != SE_REQ_FORCE_MERGE))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed broadcast_shards request");
		return false;
	}
	for (i = 0; i < n; i++)
	{
		SeError		serr;
		int			shard;
		SeIndexMeta *im;
		int			slot;

		se_error_init(&serr);
		im = se_peer_shard_get(&r, &shard, &serr);
		if (r.bad)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed broadcast_shards request");
			return false;
		}
		if (im == NULL)
			continue;			/* not a shard of ours any more: counted failed */
		se_error_init(&serr);
		slot = se_snapshot_slot(im, shard, &serr);
		if (slot >= 0)
			broadcast_add(&b, slot, im->name, shard);
	}
	initStringInfo(&failures);
	ok = broadcast_local(&b, kind, arg, &failures);
	se_put_vint(reply, (uint64) ok);
	se_put_str(reply, failures.data, failures.len);
	return true;
}

void
se_index_ops_register_actions(void)
{
	se_transport_register("broadcast_shards", broadcast_shards_action);
}

/*
 * Is the copy of shard s on node a target of a broadcast (refresh, flush,
 * force merge)?  Its primary wherever it is placed (the node answers for
 * it), and a STARTED replica, which reads may reach.
 */
static bool
broadcast_target(const SeIndexMeta *im, int s, const char *node)
{
	const SeShardCopy *c;

	if (im->routing == NULL)
		return se_state_shard_local(im, s);
	c = se_routing_copy_on(&im->routing[s], node);
	return c != NULL && (c->primary || c->state == SE_SHARD_STARTED);
}

/*
 * Send the shards of other nodes their part of a broadcast (one request per
 * node, all at once); returns how many succeeded there.
 */
static int
broadcast_remote(List *targets, SeRequestKind kind, int64 arg, int *attempted,
				 StringInfo failures)
{
	List	   *nodes = NIL;
	ListCell   *lc,
			   *ln;
	SeTransportCall *calls;
	int			ok = 0;
	int			k = 0;
	int			i;

	nodes = se_state_copy_nodes_elsewhere(targets);
	*attempted = 0;
	if (nodes == NIL)
		return 0;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	foreach(ln, nodes)
	{
		const char *node = lfirst(ln);
		StringInfoData shards;
		StringInfoData payload;
		int			n = 0;

		initStringInfo(&shards);
		foreach(lc, targets)
		{
			SeIndexMeta *im = lfirst(lc);
			int			s;

			for (s = 0; s < im->settings.number_of_shards; s++)
				if (broadcast_target(im, s, node))
				{
					se_peer_shard_put(&shards, im->name, im->uuid, s);
					n++;
				}
		}
		*attempted += n;
		initStringInfo(&payload);
		se_put_vint(&payload, (uint64) kind);
		se_put_svint(&payload, arg);
		se_put_vint(&payload, (uint64) n);
		appendBinaryStringInfo(&payload, shards.data, shards.len);
		calls[k].node = node;
		calls[k].conninfo = se_cluster_conninfo(node);
		calls[k].action = "broadcast_shards";
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
		k++;
	}
	/* a force merge may take long; ES waits for it */
	se_transport_call_each(calls, k, kind == SE_REQ_FORCE_MERGE ? 3600 * 1000 : 120000);
	for (i = 0; i < k; i++)
	{
		SeWireReader r;
		int			len;
		char	   *f;

		if (!calls[i].ok)
			continue;			/* that node's shards count as failed */
		se_wire_init(&r, calls[i].reply.data, calls[i].reply.len);
		ok += (int) se_wire_vint(&r);
		f = se_wire_str(&r, &len);
		if (!r.bad && f && len > 0)
			appendStringInfo(failures, "%s%.*s", failures->len ? "," : "", len, f);
	}
	return ok;
}

static bool
broadcast(const char *expr, SeRequestKind kind, int64 arg, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr ? expr : "_all",
										 kind == SE_REQ_REFRESH ? SE_ACL_REFRESH : SE_ACL_MANAGE,
										 false, err);
	ListCell   *lc;
	int			total = 0,
				ok = 0,
				attempted = 0;
	BroadcastShards b = {0};
	StringInfoData failures;

	se_require_started();
	if (se_error_is_set(err))
		return false;
	initStringInfo(&failures);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			SeError		serr;
			int			slot;

			total += 1 + im->settings.number_of_replicas;
			if (!broadcast_target(im, s, se_cluster_node_name()))
				continue;
			se_error_init(&serr);
			slot = se_snapshot_slot(im, s, &serr);
			if (slot >= 0)
				broadcast_add(&b, slot, im->name, s);
		}
	}
	ok = broadcast_remote(targets, kind, arg, &attempted, &failures);
	ok += broadcast_local(&b, kind, arg, &failures);
	attempted += b.n;
	appendStringInfo(&r->body, "{\"_shards\":{\"total\":%d,\"successful\":%d,\"failed\":%d",
					 total, ok, attempted - ok);
	if (failures.len > 0)
		appendStringInfo(&r->body, ",\"failures\":[%s]", failures.data);
	appendStringInfoString(&r->body, "}}");
	return true;
}

bool
se_op_refresh(const char *expr, SeResponse *r, SeError *err)
{
	return broadcast(expr, SE_REQ_REFRESH, 0, r, err);
}

bool
se_op_flush(const char *expr, SeResponse *r, SeError *err)
{
	return broadcast(expr, SE_REQ_FLUSH, 0, r, err);
}

bool
se_op_force_merge(const char *expr, int max_num_segments, SeResponse *r, SeError *err)
{
	return broadcast(expr, SE_REQ_FORCE_MERGE, max_num_segments, r, err);
}

/*
 * Health of the matching indices: red / yellow / green as ES computes it,
 * from the shard copies' states in this node's applied state (the
 * master's routing in a cluster).
 */
/* Shard copies by state, and the worst status (2 green, 1 yellow, 0 red). */
typedef struct HealthCounts
{
	int			active_primary;
	int			active;
	int			initializing;
	int			unassigned;
	int			rank;
	int			relocating;		/* started copies moving (ES relocating_shards) */
} HealthCounts;

static const char *const health_names[] = {"red", "yellow", "green"};

/*
 * Whether node is in the membership the master published (a single node
 * has no routing).
 */
static bool
health_node_present(const SeClusterView *v, const char *node)
{
	int			i;

	for (i = 0; i < v->nmembers; i++)
		if (v->members[i].published && strcmp(v->members[i].name, node) == 0)
			return true;
	return false;
}

/* The published members: all of them, and (into *data) the data nodes. */
static int
health_nodes(const SeClusterView *v, int *data)
{
	int			n = 0;
	int			i;

	if (data)
		*data = 0;
	for (i = 0; i < v->nmembers; i++)
	{
		if (!v->members[i].published)
			continue;
		n++;
		if (data && (v->members[i].roles & SE_NODE_ROLE_DATA))
			(*data)++;
	}
	return n;
}

static void
health_add_shard(const SeIndexMeta *im, int s, const SeClusterView *v, HealthCounts *h)
{
	/* a single node has no routing: its replicas are never allocated */
	int			ncopies = im->routing ? im->routing[s].ncopies
		: 1 + im->settings.number_of_replicas;
	int			rank = 2;
	int			k;

	for (k = 0; k < ncopies; k++)
	{
		SeShardState st = im->routing ? im->routing[s].copies[k].state
			: k == 0 ? (im->closed ? SE_SHARD_STARTED : se_state_shard_state(im, s))
			: SE_SHARD_UNASSIGNED;

		/*
		 * A copy on a node that has left, or has not joined this master
		 * (a dead process whose lease still runs), is not active, even
		 * before the master's reroute (a separate commit) has said so.
		 */
		if (st == SE_SHARD_STARTED && im->routing &&
			!health_node_present(v, im->routing[s].copies[k].node))
			st = SE_SHARD_UNASSIGNED;
		if (st == SE_SHARD_STARTED)
		{
			h->active_primary += k == 0;
			h->active++;
			h->relocating += im->routing && se_routing_relocating(&im->routing[s].copies[k]);
			continue;
		}
		if (st == SE_SHARD_INITIALIZING)
			h->initializing++;
		else
			h->unassigned++;
		/* red: the primary is not active; yellow: a replica is not */
		rank = Min(rank, k == 0 ? 0 : 1);
	}
	h->rank = Min(h->rank, rank);
}

static void
health_counts_json(const HealthCounts *h, StringInfo out)
{
	appendStringInfo(out, "\"active_primary_shards\":%d,\"active_shards\":%d,\"relocating_shards\":%d,"
					 "\"initializing_shards\":%d,\"unassigned_shards\":%d",
					 h->active_primary, h->active, h->relocating, h->initializing, h->unassigned);
}

/*
 * The health of targets (closed ones too): totals in *total, and with level
 * "indices" or "shards" ES's "indices" object into detail.
 */
static void
health_collect(List *targets, const char *level, const SeClusterView *v,
			   HealthCounts *total, StringInfo detail)
{
	ListCell   *lc;
	bool		first = true;

	memset(total, 0, sizeof(*total));
	total->rank = 2;
	if (detail)
		appendStringInfoString(detail, ",\"indices\":{");
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		HealthCounts ih = {0, 0, 0, 0, 2};
		StringInfoData shards;
		int			s;

		/*
		 * A closed index's copies count as an open one's (ES 7.2+): in a
		 * cluster its routing has them; a single node holds its primaries'
		 * files, no shard open.  One closed in a cluster with no routing
		 * (never allocated) has no copy to count.
		 */
		if (im->closed && im->routing == NULL && !se_cluster_single_node())
			continue;
		initStringInfo(&shards);
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			HealthCounts sh = {0, 0, 0, 0, 2};

			health_add_shard(im, s, v, &sh);
			health_add_shard(im, s, v, &ih);
			if (detail && strcmp(level, "shards") == 0)
			{
				appendStringInfo(&shards, "%s\"%d\":{\"status\":\"%s\",\"primary_active\":%s,"
								 "\"active_shards\":%d,\"relocating_shards\":%d,"
								 "\"initializing_shards\":%d,\"unassigned_shards\":%d}",
								 s ? "," : "", s, health_names[sh.rank],
								 sh.active_primary ? "true" : "false", sh.active, sh.relocating,
								 sh.initializing, sh.unassigned);
			}
		}
		total->active_primary += ih.active_primary;
		total->active += ih.active;
		total->initializing += ih.initializing;
		total->unassigned += ih.unassigned;
		total->relocating += ih.relocating;
		total->rank = Min(total->rank, ih.rank);
		if (detail)
		{
			if (!first)
				appendStringInfoChar(detail, ',');
			first = false;
			se_json_write_string(detail, im->name, -1);
			appendStringInfo(detail, ":{\"status\":\"%s\",\"number_of_shards\":%d,\"number_of_replicas\":%d,",
							 health_names[ih.rank], im->settings.number_of_shards,
							 im->settings.number_of_replicas);
			health_counts_json(&ih, detail);
			if (strcmp(level, "shards") == 0)
				appendStringInfo(detail, ",\"shards\":{%s}", shards.data);
			appendStringInfoChar(detail, '}');
		}
	}
	if (detail)
		appendStringInfoChar(detail, '}');
}

static int
status_rank(const char *s)
{
	return strcmp(s, "green") == 0 ? 2 : (strcmp(s, "yellow") == 0 ? 1 : 0);
}

/*
 * ES's wait_for_nodes: "N", ">=N", "<=N", ">N", "<N", "ge(N)", "le(N)",
 * "gt(N)", "lt(N)".  Sets *op ('=', 'g' >=, 'l' <=, '>', '<') and *n.
 */
bool
se_parse_wait_for_nodes(const char *s, char *op, int *n, SeError *err)
{
	const char *num = s;
	char	   *end;
	long		v;
	size_t		len;

	*op = '=';
	if (s == NULL)
		return true;
	len = strlen(s);
	if (strncmp(s, ">=", 2) == 0 || strncmp(s, "<=", 2) == 0)
	{
		*op = s[0] == '>' ? 'g' : 'l';
		num = s + 2;
	}
	else if (s[0] == '>' || s[0] == '<')
	{
		*op = s[0];
		num = s + 1;
	}
	else if (len > 4 && s[2] == '(' && s[len - 1] == ')' &&
			 (strncmp(s, "ge", 2) == 0 || strncmp(s, "le", 2) == 0 ||
			  strncmp(s, "gt", 2) == 0 || strncmp(s, "lt", 2) == 0))
	{
		*op = s[1] == 'e' ? (s[0] == 'g' ? 'g' : 'l') : (s[0] == 'g' ? '>' : '<');
		num = pnstrdup(s + 3, len - 4);
	}
	v = strtol(num, &end, 10);
	if (*num == '\0' || *end != '\0' || v < 0 || v > INT_MAX)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "cannot parse wait_for_nodes [%s]: expected N, >=N, <=N, >N, <N, ge(N), le(N), gt(N) or lt(N)", s);
		return false;
	}
	*n = (int) v;
	return true;
}

static bool
nodes_condition(char op, int want, int have)
{
	switch (op)
	{
		case 'g':
			return have >= want;
		case 'l':
			return have <= want;
		case '>':
			return have > want;
		case '<':
			return have < want;
		default:
			return have == want;
	}
}

bool
se_op_cluster_health(const char *expr, const SeHealthWait *w, int timeout_ms,
					 SeResponse *r, SeError *err)
{
	TimestampTz start = GetCurrentTimestamp();
	HealthCounts h;
	bool		timed_out = false;
	SeClusterView *v = palloc(sizeof(SeClusterView));
	int			nodes = 0;
	int			data_nodes = 0;
	StringInfoData detail;
	const char *level = w->level ? w->level : "cluster";

	if (strcmp(level, "cluster") != 0 && strcmp(level, "indices") != 0 &&
		strcmp(level, "shards") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "level must be one of [cluster, indices, shards] but was [%s]", level);
		return false;
	}
	se_require_started();
	for (;;)
	{
		List	   *targets;
		bool		done;
		int			copies;

		/*
		 * ES asks the master, waiting master_timeout for one.  Here the
		 * master's published state is applied on every node, but a node
		 * the current master has not yet listed (a restarted one, whose
		 * state is what it persisted before it stopped) would answer from
		 * a cluster that may no longer exist.
		 */
		se_cluster_view(v);
		if (!v->joined)
		{
			if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(),
										   w->master_timeout_ms > 0 ? w->master_timeout_ms : 30000))
			{
				se_error_set(err, 503, "master_not_discovered_exception",
							 "node [%s] has not joined a cluster with a master", v->local_name);
				return false;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		/* ES 7.2+: closed (and hidden) indices count too (expand_wildcards=all) */
		targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, SE_EXPAND_ALL, err);
		if (se_error_is_set(err))
			return false;
		health_collect(targets, level, v, &h, NULL);
		copies = h.active + h.initializing + h.unassigned;
		done = (w->wait_for_status == NULL || h.rank >= status_rank(w->wait_for_status)) &&
			(w->nodes_op == 0 || nodes_condition(w->nodes_op, w->nodes, health_nodes(v, NULL))) &&
			(w->active_shards == 0 ||
			 h.active >= (w->active_shards < 0 ? copies : w->active_shards));
		if (done)
			break;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), timeout_ms))
		{
			timed_out = true;
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	initStringInfo(&detail);
	if (strcmp(level, "cluster") != 0)
	{
		List	   *targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, SE_EXPAND_ALL, err);

		if (se_error_is_set(err))
			return false;
		health_collect(targets, level, v, &h, &detail);
	}
	nodes = health_nodes(v, &data_nodes);
	r->status = timed_out ? 408 : 200;
	appendStringInfoString(&r->body, "{\"cluster_name\":");
	se_json_write_string(&r->body, v->cluster_name, -1);
	appendStringInfo(&r->body, ",\"status\":\"%s\",\"timed_out\":%s,\"number_of_nodes\":%d,\"number_of_data_nodes\":%d,",
					 health_names[h.rank], timed_out ? "true" : "false", nodes, data_nodes);
	health_counts_json(&h, &r->body);
	appendStringInfo(&r->body,
					 ",\"delayed_unassigned_shards\":0,"
					 "\"number_of_pending_tasks\":0,\"number_of_in_flight_fetch\":0,"
					 "\"task_max_waiting_in_queue_millis\":0,\"active_shards_percent_as_number\":%.1f%s}",
					 (h.active + h.initializing + h.unassigned) > 0
					 ? 100.0 * h.active / (h.active + h.initializing + h.unassigned) : 100.0,
					 detail.data);
	return true;
}

/* Full checksum of every shard file of the matching indices (a scrub). */
bool
se_op_verify(const char *expr, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr, SE_ACL_MANAGE, false, err);
	ListCell   *lc;
	int			n = 0;

	se_require_started();
	if (se_error_is_set(err))
		return false;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			se_snapshot_verify(im, s);
			n++;
		}
	}
	appendStringInfo(&r->body, "{\"_shards\":{\"total\":%d,\"successful\":%d,\"failed\":0},\"verified\":true}", n, n);
	return true;
}
