/*-------------------------------------------------------------------------
 *
 * index_ops.c
 *	  Index management: create, delete, get, mappings, settings, open,
 *	  close, refresh, flush, force merge, cluster health.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/api.h"
#include "node/node.h"
#include "security/acl.h"
#include "shard/engine.h"
#include "shard/snapshot.h"
#include "util/fileio.h"

/* Allocate and start the shards of im on this node; wait until started. */
bool
se_index_open_shards(const SeIndexMeta *im, SeError *err)
{
	int			s;

	for (s = 0; s < im->settings.number_of_shards; s++)
	{
		int			slot = se_slot_allocate(im->uuid, s);

		if (SeSlots[slot].state == SE_SLOT_OPENING)
			(void) se_queue_control(slot, SE_REQ_OPEN_SHARD, 0);
		if (se_slot_wait_while(slot, SE_SLOT_OPENING, 60000) != SE_SLOT_STARTED)
		{
			se_error_set(err, 500, "shard_failed_exception",
						 "[%s][%d] failed to start: %s", im->name, s,
						 SeSlots[slot].failure[0] ? SeSlots[slot].failure : "timed out");
			return false;
		}
	}
	return true;
}

/* Close the shards of im on this node (flush, or delete their files). */
static void
close_shards(const SeIndexMeta *im, bool delete_files)
{
	int			s;

	for (s = 0; s < im->settings.number_of_shards; s++)
	{
		int			slot = se_slot_mark_closing(im->uuid, s, delete_files);

		if (slot >= 0)
			(void) se_queue_control(slot, SE_REQ_CLOSE_SHARD, 0);
	}
}

SeIndexMeta *
se_index_for_read(const char *name, SeError *err)
{
	const SeClusterState *st = se_state_current();
	SeIndexMeta *im = se_state_find(st, name);

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", name);
		return NULL;
	}
	if (im->closed)
	{
		se_error_set(err, 400, "index_closed_exception", "closed");
		return NULL;
	}
	return im;
}

bool
se_op_create_index(const char *name, const SeJson *body, SeResponse *r, SeError *err)
{
	SeIndexMeta *im;

	se_require_started();
	if (!se_acl_check(name, SE_ACL_MANAGE, err))
		return false;
	im = se_state_create_index(name, body, err);
	if (im == NULL)
		return false;
	if (!se_index_open_shards(im, err))
		return false;
	r->status = 200;
	appendStringInfoString(&r->body, "{\"acknowledged\":true,\"shards_acknowledged\":true,\"index\":");
	se_json_write_string(&r->body, name, strlen(name));
	appendStringInfoChar(&r->body, '}');
	return true;
}

bool
se_op_delete_index(const char *expr, SeResponse *r, SeError *err)
{
	List	   *targets;
	ListCell   *lc;
	List	   *uuids = NIL;
	List	   *names = NIL;

	se_require_started();
	if (strchr(expr, '*') || strcmp(expr, "_all") == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Wildcard expressions or all indices are not allowed");
		return false;
	}
	targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	if (se_error_is_set(err))
		return false;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);

		close_shards(im, true);
		uuids = lappend(uuids, pstrdup(im->uuid));
		names = lappend(names, pstrdup(im->name));
	}
	foreach(lc, names)
	{
		if (!se_state_delete_index(lfirst(lc), err))
			return false;
	}
	foreach(lc, uuids)
		se_remove_tree(se_index_path(lfirst(lc)));
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
			appendStringInfoString(&r->body, "\"aliases\":{}");
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
	List	   *targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	List	   *names = NIL;
	ListCell   *lc;

	if (se_error_is_set(err))
		return false;
	if (body == NULL || body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: mapping source is empty;");
		return false;
	}
	foreach(lc, targets)
		names = lappend(names, pstrdup(((SeIndexMeta *) lfirst(lc))->name));
	foreach(lc, names)
		if (!se_state_put_mapping(lfirst(lc), body, err))
			return false;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

/* PUT /{index}/_settings: {"index": {...}} or flat "index.x" keys. */
bool
se_op_put_settings(const char *expr, const SeJson *body, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	List	   *names = NIL;
	ListCell   *lc;
	const SeJson *settings = body;

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
	foreach(lc, targets)
		names = lappend(names, pstrdup(((SeIndexMeta *) lfirst(lc))->name));
	foreach(lc, names)
		if (!se_state_update_settings(lfirst(lc), settings, err))
			return false;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

bool
se_op_open_close(const char *expr, bool close, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);
	List	   *names = NIL;
	ListCell   *lc;
	bool		first = true;

	se_require_started();
	if (se_error_is_set(err))
		return false;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);

		names = lappend(names, pstrdup(im->name));
		if (close && !im->closed)
			close_shards(im, false);
	}
	foreach(lc, names)
	{
		if (!se_state_set_closed(lfirst(lc), close, err))
			return false;
		if (!close)
		{
			SeIndexMeta *im = se_state_find(se_state_current(), lfirst(lc));

			if (!se_index_open_shards(im, err))
				return false;
		}
	}
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

/* Run a control request on every shard of the matching open indices. */
static bool
broadcast(const char *expr, SeRequestKind kind, int64 arg, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr ? expr : "_all",
										 kind == SE_REQ_REFRESH ? SE_ACL_REFRESH : SE_ACL_MANAGE,
										 false, err);
	ListCell   *lc;
	int			total = 0,
				ok = 0;
	int		   *slots;
	int			nslots = 0;
	int			cap = 16;

	se_require_started();
	if (se_error_is_set(err))
		return false;
	slots = palloc(sizeof(int) * cap);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			SeError		serr;
			int			slot;

			se_error_init(&serr);
			slot = se_snapshot_slot(im, s, &serr);
			total += 1 + im->settings.number_of_replicas;
			if (slot < 0)
				continue;
			if (nslots == cap)
			{
				cap *= 2;
				slots = repalloc(slots, sizeof(int) * cap);
			}
			slots[nslots++] = slot;
		}
	}

	/*
	 * Refresh and flush go to every shard at once (their owners work in
	 * parallel); force merges run one shard after another, as ES's
	 * force_merge pool of one thread does.
	 */
	if (kind == SE_REQ_FORCE_MERGE)
	{
		int			i;

		for (i = 0; i < nslots; i++)
			if (se_queue_control(slots[i], kind, arg))
				ok++;
	}
	else
		ok = se_queue_control_many(slots, nslots, kind, arg);
	pfree(slots);
	appendStringInfo(&r->body, "{\"_shards\":{\"total\":%d,\"successful\":%d,\"failed\":0}}", total, ok);
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

/* Health of the matching indices: red / yellow / green as ES computes it. */
static const char *
health_counts(List *targets, int *active_primary, int *initializing, int *unassigned, int *active)
{
	ListCell   *lc;
	bool		red = false,
				yellow = false;

	*active_primary = *initializing = *unassigned = *active = 0;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		if (im->closed)
			continue;
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			int			slot = se_slot_find(im->uuid, s);
			int			st = slot >= 0 ? SeSlots[slot].state : SE_SLOT_FREE;

			if (st == SE_SLOT_STARTED)
			{
				(*active_primary)++;
				(*active)++;
			}
			else if (st == SE_SLOT_OPENING)
			{
				(*initializing)++;
				red = true;
			}
			else
			{
				(*unassigned)++;
				red = true;
			}
			*unassigned += im->settings.number_of_replicas;
			if (im->settings.number_of_replicas > 0)
				yellow = true;
		}
	}
	return red ? "red" : (yellow ? "yellow" : "green");
}

static int
status_rank(const char *s)
{
	return strcmp(s, "green") == 0 ? 2 : (strcmp(s, "yellow") == 0 ? 1 : 0);
}

bool
se_op_cluster_health(const char *expr, const char *wait_for_status, int timeout_ms,
					 SeResponse *r, SeError *err)
{
	TimestampTz start = GetCurrentTimestamp();
	int			ap,
				init,
				unas,
				act;
	const char *status;
	bool		timed_out = false;

	se_require_started();
	for (;;)
	{
		List	   *targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, false, err);

		if (se_error_is_set(err))
			return false;
		status = health_counts(targets, &ap, &init, &unas, &act);
		if (wait_for_status == NULL || status_rank(status) >= status_rank(wait_for_status))
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
	r->status = timed_out ? 408 : 200;
	appendStringInfo(&r->body,
					 "{\"cluster_name\":\"search_engine\",\"status\":\"%s\",\"timed_out\":%s,"
					 "\"number_of_nodes\":1,\"number_of_data_nodes\":1,"
					 "\"active_primary_shards\":%d,\"active_shards\":%d,\"relocating_shards\":0,"
					 "\"initializing_shards\":%d,\"unassigned_shards\":%d,\"delayed_unassigned_shards\":0,"
					 "\"number_of_pending_tasks\":0,\"number_of_in_flight_fetch\":0,"
					 "\"task_max_waiting_in_queue_millis\":0,\"active_shards_percent_as_number\":%.1f}",
					 status, timed_out ? "true" : "false", ap, act, init, unas,
					 (act + init + unas) > 0 ? 100.0 * act / (act + init + unas) : 100.0);
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
