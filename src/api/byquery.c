/*-------------------------------------------------------------------------
 *
 * byquery.c
 *	  Update-by-query, delete-by-query and reindex as sliced tasks, the
 *	  task workers that run the slices, and the tasks API.
 *
 * The calling backend validates the request (indices, query, script),
 * registers a task with N slices (node/tasks.c), writes the request to the
 * task's file and queues the slices.  Task workers (background workers
 * connected to search_engine.database, so `lang: sql` scripts can use SPI)
 * run the slices: each takes a point-in-time snapshot of its part -- whole
 * shards when slices <= shards, else a shard split by murmur3(_id) -- scans
 * the matching live documents, runs the script, and writes back through
 * the shards' write path (se_bulk_execute) with if_seq_no/if_primary_term,
 * so concurrent writes surface as counted version conflicts.  Batches are
 * throttled by requests_per_second (rethrottle changes it on the fly);
 * cancellation is seen before every document and inside a shard's scan
 * (the search interrupt hook, slice_interrupt_check).  The last slice to
 * finish writes the ES response into the task file, where get_task finds
 * it even after a restart.  In a cluster a task's slices also run as
 * child tasks on the other nodes holding its shards (see "Across nodes").
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include <dirent.h>
#include "storage/fd.h"

#include "api/api.h"
#include "api/byquery.h"
#include "cluster/coordinator.h"
#include "cluster/scripts.h"
#include "cluster/state.h"
#include "node/tasks.h"
#include "security/acl.h"
#include "search/search.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/fileio.h"
#include "util/hash.h"

#define KIND_UPDATE 1
#define KIND_DELETE 2
#define KIND_REINDEX 3

static const char *
kind_action(int kind)
{
	switch (kind)
	{
		case KIND_UPDATE:
			return "indices:data/write/update/byquery";
		case KIND_DELETE:
			return "indices:data/write/delete/byquery";
		default:
			return "indices:data/write/reindex";
	}
}

static int64
now_millis(void)
{
	return se_now_millis();
}

/* ---------------------------------------------------------------------
 * Scripts: painless subset (src/script) or lang "sql"
 * ---------------------------------------------------------------------
 */
static bool
parse_script(const SeJson *script, ScriptSpec *spec, SeError *err)
{
	memset(spec, 0, sizeof(*spec));
	if (script == NULL || script->type == SE_JSON_NULL)
		return true;
	spec->present = true;
	if (script->type == SE_JSON_STRING)
	{
		spec->source = pstrdup(script->u.s.str);
		return se_script_lang_allowed(NULL, err) && se_script_check(spec, err);
	}
	if (script->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[script] must be an object or a string");
		return false;
	}
	{
		SeJson	   *src = se_json_get(script, "source");
		SeJson	   *lang = se_json_get(script, "lang");
		SeJson	   *id = se_json_get(script, "id");

		if (src == NULL)
			src = se_json_get(script, "inline");
		if (src == NULL && id != NULL && id->type == SE_JSON_STRING)
		{
			/* a stored script: painless, its source from the cluster state */
			const char *stored = se_stored_script_source(id->u.s.str, err);

			if (stored == NULL)
				return false;
			spec->source = pstrdup(stored);
			spec->params = se_json_get(script, "params");
			return se_script_lang_allowed(NULL, err) && se_script_check(spec, err);
		}
		if (src == NULL || src->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "parsing_exception", "[script] requires [source]");
			return false;
		}
		spec->source = pstrdup(src->u.s.str);
		spec->params = se_json_get(script, "params");
		if (lang && lang->type != SE_JSON_STRING)
			lang = NULL;
		if (!se_script_lang_allowed(lang ? lang->u.s.str : NULL, err))
			return false;
		spec->is_sql = lang && strcmp(lang->u.s.str, "sql") == 0;
	}
	return se_script_check(spec, err);
}

/* ---------------------------------------------------------------------
 * Request parsing and validation (coordinating backend)
 * ---------------------------------------------------------------------
 */
typedef struct ByQueryRequest
{
	int			kind;
	char	   *index;			/* source index expression */
	char	   *dest;			/* reindex destination */
	char	   *dest_op_type;	/* "index" or "create" */
	SeJson	   *query;			/* may be NULL: match_all */
	ScriptSpec	script;
	bool		conflicts_proceed;
	int			scroll_size;
	int64		max_docs;		/* -1 = all */
	bool		refresh;
	int			nslices;
} ByQueryRequest;

/* across nodes (below) */
#define BYQUERY_DISPATCH_TIMEOUT_MS	30000
#define CHILD_POLL_TIMEOUT_MS		3000
#define CHILD_POLL_INTERVAL_MS		250
/* polls failing in a row before a child's node is given up */
#define CHILD_MAX_POLL_FAILURES		3
#define TASKS_REMOTE_TIMEOUT_MS		30000
static bool poll_children(Oid worker_user);
static bool dispatch_children(int t, int64 id, List *targets, const char *request_json,
							  const char *description, SeError *err);
static bool forward_task_op(const char *node, const char *op, const char *task_id, float4 rps,
							const char *actions, SeResponse *r, SeError *err);
static bool get_remote_task(const char *node, const char *task_id, bool wait_for_completion,
							SeResponse *r, SeError *err);
static void list_local_tasks(const char *actions, StringInfo out);
static void task_failure(int t, const char *index, const char *id, const char *node,
						 int status, const char *type, const char *reason);
static bool serving_tasks_op;

/* Slices: an integer or "auto" (the number of shards). */
static bool
parse_slices(const char *s, int nshards, int *out, SeError *err)
{
	char	   *end;
	long		v;

	if (s == NULL || strcmp(s, "auto") == 0)
	{
		*out = (s == NULL) ? 1 : Max(1, nshards);
		return true;
	}
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < 1 || v > 1024)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Failed to parse int parameter [slices] with value [%s]: must be auto or between 1 and 1024", s);
		return false;
	}
	*out = (int) v;
	return true;
}

static int
count_shards(List *indices)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, indices)
		n += ((SeIndexMeta *) lfirst(lc))->settings.number_of_shards;
	return n;
}

/*
 * The indices a by-query request works on, authorized for the role in
 * effect: update/delete-by-query read and write their indices, reindex
 * reads its sources and writes its destination.
 */
static List *
resolve_targets(const ByQueryRequest *rq, SeError *err)
{
	List	   *targets;

	targets = se_acl_resolve(rq->index, rq->kind == KIND_REINDEX ? SE_ACL_READ : SE_ACL_BY_QUERY,
							 false, err);
	if (se_error_is_set(err))
		return NIL;
	if (rq->dest && !se_acl_check(rq->dest, SE_ACL_WRITE, err))
		return NIL;
	return targets;
}

static void
write_request_json(const ByQueryRequest *rq, StringInfo out)
{
	appendStringInfo(out, "{\"kind\":%d,\"index\":", rq->kind);
	se_json_write_string(out, rq->index, strlen(rq->index));
	if (rq->dest)
	{
		appendStringInfoString(out, ",\"dest\":");
		se_json_write_string(out, rq->dest, strlen(rq->dest));
		appendStringInfo(out, ",\"dest_op_type\":\"%s\"", rq->dest_op_type ? rq->dest_op_type : "index");
	}
	if (rq->query)
	{
		appendStringInfoString(out, ",\"query\":");
		se_json_write(out, rq->query);
	}
	if (rq->script.present)
	{
		appendStringInfoString(out, ",\"script\":{\"source\":");
		se_json_write_string(out, rq->script.source, strlen(rq->script.source));
		appendStringInfo(out, ",\"lang\":\"%s\"", rq->script.is_sql ? "sql" : "painless");
		if (rq->script.params)
		{
			appendStringInfoString(out, ",\"params\":");
			se_json_write(out, rq->script.params);
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfo(out, ",\"conflicts\":\"%s\",\"scroll_size\":%d,\"max_docs\":" INT64_FORMAT
					 ",\"refresh\":%s,\"slices\":%d}",
					 rq->conflicts_proceed ? "proceed" : "abort", rq->scroll_size,
					 rq->max_docs, rq->refresh ? "true" : "false", rq->nslices);
}

static bool
read_request_json(const SeJson *j, ByQueryRequest *rq, SeError *err)
{
	SeJson	   *v;

	memset(rq, 0, sizeof(*rq));
	rq->kind = (int) se_json_get(j, "kind")->u.n.i;
	rq->index = pstrdup(se_json_get(j, "index")->u.s.str);
	if ((v = se_json_get(j, "dest")) != NULL)
	{
		rq->dest = pstrdup(v->u.s.str);
		rq->dest_op_type = pstrdup(se_json_get(j, "dest_op_type")->u.s.str);
	}
	rq->query = se_json_get(j, "query");
	if (!parse_script(se_json_get(j, "script"), &rq->script, err))
		return false;
	rq->conflicts_proceed = strcmp(se_json_get(j, "conflicts")->u.s.str, "proceed") == 0;
	rq->scroll_size = (int) se_json_get(j, "scroll_size")->u.n.i;
	rq->max_docs = se_json_get(j, "max_docs")->u.n.i;
	rq->refresh = se_json_get(j, "refresh")->type == SE_JSON_TRUE;
	rq->nslices = (int) se_json_get(j, "slices")->u.n.i;
	return true;
}

static SeSearchRequest *
build_search(const SeJson *query, SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};
	SeJson	   *body;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":");
	if (query)
		se_json_write(&b, query);
	else
		appendStringInfoString(&b, "{\"match_all\":{}}");
	appendStringInfoChar(&b, '}');
	body = se_json_parse(b.data, b.len, &opts, err);
	if (body == NULL)
		return NULL;
	return se_search_parse_count(body, err);
}

/* ---------------------------------------------------------------------
 * Task files and responses
 * ---------------------------------------------------------------------
 */
static void
write_counters(StringInfo out, const SeSliceCounters *c, float4 rps)
{
	appendStringInfo(out, "\"total\":" INT64_FORMAT ",\"updated\":" INT64_FORMAT
					 ",\"created\":" INT64_FORMAT ",\"deleted\":" INT64_FORMAT
					 ",\"batches\":" INT64_FORMAT ",\"version_conflicts\":" INT64_FORMAT
					 ",\"noops\":" INT64_FORMAT ",\"retries\":{\"bulk\":" INT64_FORMAT ",\"search\":0}"
					 ",\"throttled_millis\":" INT64_FORMAT ",\"requests_per_second\":%s"
					 ",\"throttled_until_millis\":0",
					 c->total, c->updated, c->created, c->deleted, c->batches,
					 c->version_conflicts, c->noops, c->retries_bulk, c->throttled_millis,
					 rps < 0 ? "-1.0" : psprintf("%.1f", rps));
}

/* Per-slice counters (",\"slices\":[...]") when the task is sliced. */
static void
write_slices(StringInfo out, int t, bool with_state)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	int			i;

	if (tk->nslices <= 1)
		return;
	appendStringInfoString(out, ",\"slices\":[");
	for (i = 0; i < tk->nslices; i++)
	{
		SeTaskSlice *sl = &SeTasks->slices[tk->first_slice + i];
		SeSliceCounters c = sl->c;	/* its part here and on other nodes */

		se_slice_counters_add(&c, &sl->rc);
		if (i > 0)
			appendStringInfoChar(out, ',');
		appendStringInfo(out, "{\"slice_id\":%d,", i);
		write_counters(out, &c,
					   tk->requests_per_second < 0 ? -1 : tk->requests_per_second / tk->nslices);
		if (with_state)
			appendStringInfo(out, ",\"state\":\"%s\"",
							 sl->state == SE_SLICE_DONE ? (sl->cancelled ? "cancelled" : "completed") :
							 (sl->state == SE_SLICE_RUNNING ? "running" : "queued"));
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, ']');
}

/* The task's "status" object (BulkByScrollTask.Status), live from shmem. */
static void
task_status_json(int t, StringInfo out)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	SeSliceCounters sum;

	se_task_counters(t, &sum);
	appendStringInfoChar(out, '{');
	write_counters(out, &sum, tk->requests_per_second);
	if (tk->cancel_requested && !tk->failed)
		appendStringInfoString(out, ",\"canceled\":\"by user request\"");
	write_slices(out, t, true);
	appendStringInfoChar(out, '}');
}

static void
task_info_json(int t, StringInfo out)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	int64		end = tk->end_millis > 0 ? tk->end_millis : now_millis();

	appendStringInfo(out, "{\"node\":\"%s\",\"id\":" INT64_FORMAT ",\"type\":\"transport\",\"action\":\"%s\",\"status\":",
					 se_node_name_get(), tk->id, tk->action);
	task_status_json(t, out);
	appendStringInfoString(out, ",\"description\":");
	se_json_write_string(out, tk->description, strlen(tk->description));
	if (tk->parent[0])
		appendStringInfo(out, ",\"parent_task_id\":\"%s\"", tk->parent);
	appendStringInfo(out, ",\"start_time_in_millis\":" INT64_FORMAT ",\"running_time_in_nanos\":" INT64_FORMAT
					 ",\"cancellable\":true,\"cancelled\":%s,\"headers\":{}}",
					 tk->start_millis, (end - tk->start_millis) * 1000000,
					 tk->cancel_requested ? "true" : "false");
}

/* The ES response of a finished by-query task. */
static void
task_response_json(int t, StringInfo out)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	SeSliceCounters sum;

	se_task_counters(t, &sum);
	appendStringInfo(out, "{\"took\":" INT64_FORMAT ",\"timed_out\":false,", tk->end_millis - tk->start_millis);
	write_counters(out, &sum, tk->requests_per_second);
	if (tk->cancel_requested && !tk->failed)
		appendStringInfoString(out, ",\"canceled\":\"by user request\"");
	appendStringInfo(out, ",\"failures\":[%s]", tk->failures_len > 0 ? tk->failures : "");
	write_slices(out, t, false);
	appendStringInfoChar(out, '}');
}

static void
write_task_file(int t, const char *request_json, bool completed)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"completed\":%s,\"owner\":%u,\"task\":",
					 completed ? "true" : "false", tk->owner);
	task_info_json(t, &buf);
	if (completed)
	{
		appendStringInfoString(&buf, ",\"response\":");
		task_response_json(t, &buf);
	}
	appendStringInfoString(&buf, ",\"request\":");
	appendStringInfoString(&buf, request_json);
	appendStringInfoChar(&buf, '}');
	se_file_write_durable(se_task_file(tk->id), buf.data, buf.len);
	pfree(buf.data);
}

static SeJson *
read_task_file(int64 id, SeError *err)
{
	size_t		len;
	char	   *data = se_file_read_all(se_task_file(id), &len, true);
	SeJsonParseOptions opts = {0};

	if (data == NULL)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "task [%s:" INT64_FORMAT "] isn't running and hasn't stored its results",
					 se_node_name_get(), id);
		return NULL;
	}
	return se_json_parse(data, len, &opts, err);
}

/*
 * Parse "node:id" (or a bare number): digits only, as Long.parseLong takes
 * them; the node part is this node's whole name, or another member's
 * (*remote: that node answers).
 */
static bool
parse_task_id(const char *s, int64 *id, char **remote, SeError *err)
{
	const char *colon = strrchr(s, ':');
	const char *num = colon ? colon + 1 : s;
	char	   *end;

	errno = 0;
	*id = strtoll(num, &end, 10);
	if (!isdigit((unsigned char) *num) || *end != '\0' || errno == ERANGE || *id <= 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "malformed task id %s", s);
		return false;
	}
	*remote = NULL;
	if (colon && (strlen(se_node_name_get()) != (size_t) (colon - s) ||
				  strncmp(s, se_node_name_get(), colon - s) != 0))
	{
		char	   *node = pnstrdup(s, colon - s);

		/* another member's task: its node answers (a peer's call stops here) */
		if (!serving_tasks_op && se_cluster_conninfo(node)[0] != '\0')
		{
			*remote = node;
			return true;
		}
		se_error_set(err, 404, "resource_not_found_exception",
					 "task [%s] belongs to a node that is not part of this cluster", s);
		return false;
	}
	return true;
}

/* A task's owner is the role that submitted it; only it, roles with its
 * privileges and admins see and steer the task (else ES's 403). */
static bool
task_visible(const char *task_id, Oid owner, SeError *err)
{
	if (se_acl_may_steer(owner))
		return true;
	se_error_set(err, 403, "security_exception",
				 "action [cluster:monitor/task] is unauthorized for user [%s] on task [%s], "
				 "which another role started",
				 GetUserNameFromId(GetUserId(), true) ? GetUserNameFromId(GetUserId(), true) : "?",
				 task_id);
	return false;
}

/*
 * Which task slots' tasks the caller may see, decided before taking the
 * tasks lock (the checks read catalogs): a slot counts only while its
 * owner is still owners[t].
 */
static void
visible_tasks(Oid *owners, bool *visible)
{
	int			t;

	for (t = 0; t < SE_MAX_TASKS; t++)
	{
		owners[t] = SeTasks->tasks[t].owner;
		visible[t] = se_acl_may_steer(owners[t]);
	}
}

/* The owner recorded in a task file (InvalidOid, seen by admins only, if none). */
static Oid
stored_owner(const SeJson *stored)
{
	SeJson	   *o = se_json_get(stored, "owner");

	return o && o->type == SE_JSON_NUMBER ? (Oid) o->u.n.i : InvalidOid;
}

/* ---------------------------------------------------------------------
 * The coordinator: validate, register, queue, maybe wait
 * ---------------------------------------------------------------------
 */
static bool wait_task(int t, int64 id, SeResponse *r, SeError *err, bool cancel_on_interrupt);

/* requests_per_second as ES takes it: -1 (no throttle) or above 0 */
static bool
check_rps(float4 rps, SeError *err)
{
	if (rps == -1 || rps > 0)	/* false for NaN: not a number */
		return true;
	se_error_set(err, 400, "illegal_argument_exception",
				 "[requests_per_second] must be a float greater than 0. Use -1 to disable throttling.");
	return false;
}

/*
 * ES's checks of the batch size (scroll_size, or reindex's source.size)
 * and max_docs, as its request setters and validate() make them.
 */
static bool
check_batch(const ByQueryRequest *rq, bool max_docs_given, SeError *err)
{
	if (rq->scroll_size < 0)
		se_error_set(err, 400, "illegal_argument_exception",
					 "[size] parameter cannot be negative, found [%d]", rq->scroll_size);
	else if (rq->scroll_size == 0)
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [size] cannot be [0] in a scroll context;");
	else if (max_docs_given && rq->max_docs < 0)
		se_error_set(err, 400, "illegal_argument_exception",
					 "[max_docs] parameter cannot be negative, found [" INT64_FORMAT "]", rq->max_docs);
	else if (max_docs_given && rq->max_docs == 0)
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: maxDocs should be greater than 0 if the request is limited to some number of documents or -1 if it isn't but it was [0];");
	else
		return true;
	return false;
}

/* A batch costs what a result window costs: ES holds it to max_result_window */
static bool
check_batch_window(const ByQueryRequest *rq, List *targets, SeError *err)
{
	ListCell   *lc;

	foreach(lc, targets)
	{
		int			window = ((SeIndexMeta *) lfirst(lc))->settings.max_result_window;

		if (rq->scroll_size > window)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Batch size is too large, size must be less than or equal to: [%d] but was [%d]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.",
						 window, rq->scroll_size);
			return false;
		}
	}
	return true;
}

/* The task's file, with its request, before any slice runs. */
static void
store_task(int t, const char *request_json)
{
	PG_TRY();
	{
		write_task_file(t, request_json, false);
	}
	PG_CATCH();
	{
		LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
		SeTasks->tasks[t].state = SE_TASK_COMPLETED;
		LWLockRelease(&SeTasks->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

static void
queue_slices(int t)
{
	int			i;

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	for (i = 0; i < SeTasks->tasks[t].nslices; i++)
		SeTasks->slices[SeTasks->tasks[t].first_slice + i].state = SE_SLICE_QUEUED;
	LWLockRelease(&SeTasks->lock);
	se_tasks_wake_workers();
}

bool
se_op_by_query(const SeByQueryOptions *o, const SeJson *body, SeResponse *r, SeError *err)
{
	ByQueryRequest rq;
	List	   *targets;
	int			nshards;
	int			t;
	int64		id;
	StringInfoData req;
	char	   *description;
	int			i;
	SeJson	   *v;
	bool		max_docs_given = o->max_docs_given;

	se_require_started();
	if (!check_rps(o->requests_per_second, err))
		return false;
	memset(&rq, 0, sizeof(rq));
	rq.kind = o->kind;
	rq.max_docs = max_docs_given ? o->max_docs : -1;
	rq.conflicts_proceed = o->conflicts && strcmp(o->conflicts, "proceed") == 0;
	if (o->conflicts && strcmp(o->conflicts, "proceed") != 0 && strcmp(o->conflicts, "abort") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "conflicts may only be \"proceed\" or \"abort\" but was [%s]", o->conflicts);
		return false;
	}
	rq.scroll_size = o->scroll_size;
	rq.refresh = o->refresh;
	if (body && body->type != SE_JSON_OBJECT && body->type != SE_JSON_NULL)
	{
		se_error_set(err, 400, "parsing_exception", "request body must be an object");
		return false;
	}
	if (o->kind == KIND_REINDEX)
	{
		SeJson	   *src = body ? se_json_get(body, "source") : NULL;
		SeJson	   *dst = body ? se_json_get(body, "dest") : NULL;
		SeJson	   *si = src ? se_json_get(src, "index") : NULL;
		SeJson	   *di = dst ? se_json_get(dst, "index") : NULL;

		if (si == NULL || di == NULL || di->type != SE_JSON_STRING ||
			(si->type != SE_JSON_STRING && si->type != SE_JSON_ARRAY))
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: use _reindex with [source.index] and [dest.index];");
			return false;
		}
		if (!se_name_check_json(si, SE_NAME_INDEX, err) ||
			!se_name_check_json(di, SE_NAME_INDEX, err))
			return false;
		if (si->type == SE_JSON_STRING)
			rq.index = pstrdup(si->u.s.str);
		else
		{
			StringInfoData b;

			initStringInfo(&b);
			for (i = 0; i < si->u.a.count; i++)
			{
				SeJson	   *item = si->u.a.items[i];

				if (item->type != SE_JSON_STRING)
				{
					se_error_set(err, 400, "action_request_validation_exception",
								 "Validation Failed: 1: use _reindex with [source.index] and [dest.index];");
					return false;
				}
				if (!se_name_check_json(item, SE_NAME_INDEX, err))
					return false;
				appendStringInfo(&b, "%s%s", i ? "," : "", item->u.s.str);
			}
			rq.index = b.data;
		}
		rq.dest = pstrdup(di->u.s.str);
		rq.dest_op_type = (v = se_json_get(dst, "op_type")) && v->type == SE_JSON_STRING ?
			pstrdup(v->u.s.str) : "index";
		rq.query = se_json_get(src, "query");
		if ((v = se_json_get(src, "size")) && v->type == SE_JSON_NUMBER)
			rq.scroll_size = (int) Max(Min(v->u.n.i, PG_INT32_MAX), PG_INT32_MIN);
		if (!se_index_name_valid(rq.dest, err))
			return false;
	}
	else
	{
		rq.index = pstrdup(o->index);
		if (body)
			rq.query = se_json_get(body, "query");
	}
	if (body)
	{
		if ((v = se_json_get(body, "max_docs")) && v->type == SE_JSON_NUMBER)
		{
			rq.max_docs = v->u.n.i;
			max_docs_given = true;
		}
		if ((v = se_json_get(body, "conflicts")) && v->type == SE_JSON_STRING)
			rq.conflicts_proceed = strcmp(v->u.s.str, "proceed") == 0;
		if (!parse_script(se_json_get(body, "script"), &rq.script, err))
			return false;
		for (i = 0; i < body->u.o.count; i++)
		{
			const char *k = body->u.o.members[i].key;

			if (strcmp(k, "query") && strcmp(k, "script") && strcmp(k, "max_docs") &&
				strcmp(k, "conflicts") && strcmp(k, "source") && strcmp(k, "dest") &&
				strcmp(k, "size") && strcmp(k, "slice"))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] unknown field [%s]", o->kind == KIND_REINDEX ? "reindex" : "update_by_query", k);
				return false;
			}
		}
	}
	if (o->kind == KIND_DELETE && rq.script.present)
	{
		se_error_set(err, 400, "parsing_exception", "[delete_by_query] unknown field [script]");
		return false;
	}
	if (!check_batch(&rq, max_docs_given, err))
		return false;
	/* the query must parse and the indices exist now, as ES validates up front */
	if (build_search(rq.query, err) == NULL)
		return false;
	targets = resolve_targets(&rq, err);
	if (se_error_is_set(err))
		return false;
	/* through an alias: its filter joins the query (alias_ops.c) */
	if (targets != NIL)
	{
		StringInfoData q;
		SeJsonParseOptions qo = {0};
		const SeJson *b;

		initStringInfo(&q);
		appendStringInfoString(&q, "{\"query\":");
		if (rq.query)
			se_json_write(&q, rq.query);
		else
			appendStringInfoString(&q, "{\"match_all\":{}}");
		appendStringInfoChar(&q, '}');
		b = se_json_parse(q.data, q.len, &qo, err);
		if (b == NULL || (b = se_alias_search_body(rq.index, targets, b, err)) == NULL)
			return false;
		rq.query = se_json_get(b, "query");
	}
	if (targets == NIL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", rq.index);
		return false;
	}
	if (se_indices_options != NULL)
	{
		/* the slices resolve the names the URL's indices options left */
		StringInfoData names;
		ListCell   *lc;

		initStringInfo(&names);
		foreach(lc, targets)
			appendStringInfo(&names, "%s%s", names.len ? "," : "",
							 ((SeIndexMeta *) lfirst(lc))->name);
		rq.index = names.data;
	}
	if (!check_batch_window(&rq, targets, err))
		return false;
	if (rq.dest)
	{
		ListCell   *lc;

		foreach(lc, targets)
			if (strcmp(((SeIndexMeta *) lfirst(lc))->name, rq.dest) == 0)
			{
				se_error_set(err, 400, "action_request_validation_exception",
							 "Validation Failed: 1: reindex cannot write into an index its reading from [%s];",
							 rq.dest);
				return false;
			}
	}
	nshards = count_shards(targets);
	if (!parse_slices(o->slices, nshards, &rq.nslices, err))
		return false;

	se_tasks_bootstrap();
	description = psprintf("%s [%s]%s%s", o->kind == KIND_UPDATE ? "update-by-query" :
						   (o->kind == KIND_DELETE ? "delete-by-query" : "reindex from"),
						   rq.index, rq.dest ? " to " : "", rq.dest ? rq.dest : "");
	t = se_task_create(kind_action(o->kind), description, rq.nslices,
					   o->requests_per_second > 0 ? o->requests_per_second : -1,
					   GetUserId(), &id);
	if (t < 0)
	{
		se_error_set(err, 429, "es_rejected_execution_exception",
					 "rejected execution of %s: the task table is full", description);
		return false;
	}
	initStringInfo(&req);
	write_request_json(&rq, &req);
	store_task(t, req.data);
	if (!dispatch_children(t, id, targets, req.data, description, err))
	{
		/* a node refused its part: the request fails, the parts started stop */
		LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
		SeTasks->tasks[t].failed = true;
		SeTasks->tasks[t].cancel_requested = true;
		LWLockRelease(&SeTasks->lock);
		queue_slices(t);
		return false;
	}
	queue_slices(t);

	if (!o->wait_for_completion)
	{
		appendStringInfo(&r->body, "{\"task\":\"%s:" INT64_FORMAT "\"}", se_node_name_get(), id);
		return true;
	}
	return wait_task(t, id, r, err, true);
}

/* Wait for task t to complete and answer its stored response. */
static bool
wait_task(int t, int64 id, SeResponse *r, SeError *err, bool cancel_on_interrupt)
{
	SeJson	   *stored;
	SeJson	   *resp;

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&SeTasks->cv);
		for (;;)
		{
			bool		done;

			LWLockAcquire(&SeTasks->lock, LW_SHARED);
			done = SeTasks->tasks[t].id != id || SeTasks->tasks[t].state != SE_TASK_RUNNING;
			LWLockRelease(&SeTasks->lock);
			if (done)
				break;
			ConditionVariableTimedSleep(&SeTasks->cv, 1000, PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		/* the statement was cancelled: so is the job it started */
		if (cancel_on_interrupt)
		{
			LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
			if (SeTasks->tasks[t].id == id)
				SeTasks->tasks[t].cancel_requested = true;
			LWLockRelease(&SeTasks->lock);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	stored = read_task_file(id, err);
	if (stored == NULL)
		return false;
	resp = se_json_get(stored, "response");
	if (resp == NULL)
	{
		SeJson	   *e = se_json_get(stored, "error");

		se_error_set(err, 500, e ? se_json_get(e, "type")->u.s.str : "exception", "%s",
					 e ? se_json_get(e, "reason")->u.s.str : "task failed");
		return false;
	}
	se_json_write(&r->body, resp);
	return true;
}

/* ---------------------------------------------------------------------
 * Tasks API
 * ---------------------------------------------------------------------
 */
bool
se_op_get_task(const char *task_id, bool wait_for_completion, SeResponse *r, SeError *err)
{
	int64		id;
	int			t;
	char	   *remote;

	se_require_started();
	if (!parse_task_id(task_id, &id, &remote, err))
		return false;
	if (remote)
		return get_remote_task(remote, task_id, wait_for_completion, r, err);
	t = se_task_find(id);
	if (t >= 0 && !task_visible(task_id, SeTasks->tasks[t].owner, err))
		return false;
	if (t >= 0 && SeTasks->tasks[t].state == SE_TASK_RUNNING)
	{
		if (!wait_for_completion)
		{
			appendStringInfoString(&r->body, "{\"completed\":false,\"task\":");
			task_info_json(t, &r->body);
			appendStringInfoChar(&r->body, '}');
			return true;
		}
		{
			SeResponse	tmp;

			se_response_init(&tmp);
			(void) wait_task(t, id, &tmp, err, false);
			se_error_init(err);
		}
	}
	{
		SeJson	   *stored = read_task_file(id, err);
		int			i;

		if (stored == NULL)
			return false;
		if (t < 0 && !task_visible(task_id, stored_owner(stored), err))
			return false;
		/* answer without our private "request" and "owner" members */
		appendStringInfoChar(&r->body, '{');
		for (i = 0; i < stored->u.o.count; i++)
		{
			if (strcmp(stored->u.o.members[i].key, "request") == 0 ||
				strcmp(stored->u.o.members[i].key, "owner") == 0)
				continue;
			if (r->body.len > 1)
				appendStringInfoChar(&r->body, ',');
			se_json_write_string(&r->body, stored->u.o.members[i].key, stored->u.o.members[i].keylen);
			appendStringInfoChar(&r->body, ':');
			se_json_write(&r->body, stored->u.o.members[i].value);
		}
		appendStringInfoChar(&r->body, '}');
	}
	return true;
}

/* This node's member of ES's "nodes" object, open at its "tasks". */
static void
node_member_open(StringInfo out)
{
	SeClusterMember m;

	se_cluster_local_member(&m);
	appendStringInfo(out, "\"%s\":{\"name\":\"%s\",\"roles\":", se_node_name_get(), se_node_name_get());
	se_node_roles_json(m.roles, out);
	appendStringInfoString(out, ",\"tasks\":{");
}

static void
nodes_wrapper_open(StringInfo out)
{
	appendStringInfoString(out, "{\"nodes\":{");
	node_member_open(out);
}

static bool
action_matches(const char *pattern, const char *action)
{
	char	   *copy;
	char	   *tok;
	char	   *save = NULL;

	if (pattern == NULL || pattern[0] == '\0')
		return true;
	copy = pstrdup(pattern);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (se_wildcard_match(tok, action))
			return true;
	return false;
}

/* This node's running tasks the caller may see: its "nodes" member. */
static void
list_local_tasks(const char *actions, StringInfo out)
{
	int			t;
	bool		first = true;
	Oid			owners[SE_MAX_TASKS];
	bool		visible[SE_MAX_TASKS];

	visible_tasks(owners, visible);
	node_member_open(out);
	LWLockAcquire(&SeTasks->lock, LW_SHARED);
	for (t = 0; t < SE_MAX_TASKS; t++)
	{
		SeTask	   *tk = &SeTasks->tasks[t];

		if (tk->state != SE_TASK_RUNNING || !action_matches(actions, tk->action) ||
			tk->owner != owners[t] || !visible[t])
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		appendStringInfo(out, "\"%s:" INT64_FORMAT "\":", se_node_name_get(), tk->id);
		task_info_json(t, out);
	}
	LWLockRelease(&SeTasks->lock);
	appendStringInfoString(out, "}}");
}

/*
 * The running tasks of every node, under each node's name as ES lists
 * them; a node that does not answer is in node_failures.
 */
bool
se_op_list_tasks(const char *actions, SeResponse *r, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	StringInfoData failures;
	int			i;

	se_require_started();
	se_cluster_view(v);
	initStringInfo(&failures);
	appendStringInfoString(&r->body, "{\"nodes\":{");
	list_local_tasks(actions, &r->body);
	for (i = 0; i < v->nmembers && !v->single_node; i++)
	{
		const char *node = v->members[i].name;
		SeError		e;
		int			mark;

		if (strcmp(node, v->local_name) == 0)
			continue;
		se_error_init(&e);
		appendStringInfoChar(&r->body, ',');
		mark = r->body.len;
		if (!forward_task_op(node, "list", NULL, 0, actions, r, &e))
		{
			r->body.len = mark - 1;
			r->body.data[r->body.len] = '\0';
			appendStringInfo(&failures, "%s{\"type\":\"failed_node_exception\",\"reason\":",
							 failures.len ? "," : "");
			se_json_write_string(&failures, psprintf("Failed node [%s]", node), -1);
			appendStringInfoString(&failures, ",\"node_id\":");
			se_json_write_string(&failures, node, -1);
			appendStringInfoString(&failures, ",\"caused_by\":{\"type\":");
			se_json_write_string(&failures, e.type ? e.type : "exception", -1);
			appendStringInfoString(&failures, ",\"reason\":");
			se_json_write_string(&failures, e.reason ? e.reason : "", -1);
			appendStringInfoString(&failures, "}}");
		}
	}
	appendStringInfoChar(&r->body, '}');
	if (failures.len)
		appendStringInfo(&r->body, ",\"node_failures\":[%s]", failures.data);
	appendStringInfoChar(&r->body, '}');
	return true;
}

/* Cancel (rps < 0 ignored) or rethrottle a running task. */
static bool
modify_task(const char *task_id, bool cancel, float4 rps, SeResponse *r, SeError *err)
{
	int64		id;
	int			t;
	char	   *remote;

	se_require_started();
	if (!parse_task_id(task_id, &id, &remote, err))
		return false;
	if (remote)
		return forward_task_op(remote, cancel ? "cancel" : "rethrottle", task_id, rps, NULL, r, err);
	t = se_task_find(id);
	if (t < 0 || SeTasks->tasks[t].state != SE_TASK_RUNNING)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "task [%s] is missing or not running", task_id);
		return false;
	}
	if (!task_visible(task_id, SeTasks->tasks[t].owner, err))
		return false;
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	if (cancel)
		SeTasks->tasks[t].cancel_requested = true;
	else
		SeTasks->tasks[t].requests_per_second = rps;
	LWLockRelease(&SeTasks->lock);
	se_tasks_wake_workers();
	nodes_wrapper_open(&r->body);
	appendStringInfo(&r->body, "\"%s:" INT64_FORMAT "\":", se_node_name_get(), id);
	task_info_json(t, &r->body);
	appendStringInfoString(&r->body, "}}}}");
	return true;
}

bool
se_op_cancel_task(const char *task_id, SeResponse *r, SeError *err)
{
	return modify_task(task_id, true, 0, r, err);
}

/* rps NULL: not given, which ES refuses */
bool
se_op_rethrottle_task(const char *task_id, const float4 *rps, SeResponse *r, SeError *err)
{
	if (rps == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "requests_per_second is a required parameter");
		return false;
	}
	if (!check_rps(*rps, err))
		return false;
	return modify_task(task_id, false, *rps > 0 ? *rps : -1, r, err);
}

/* ---------------------------------------------------------------------
 * Slices (task workers)
 * ---------------------------------------------------------------------
 */
typedef struct SliceRun
{
	int			task;
	SeTaskSlice *slice;
	ByQueryRequest rq;
	char	   *request_json;
	SeSearchRequest *search;
	SeScriptRunner *runner;
	MemoryContext cxt;
	int64		processed;
	int64		max_docs;		/* this slice's share; -1 = all */
	bool		stop;
	/* current shard being scanned and its matches */
	int32	   *segs;
	int32	   *docs;
	SeTaskSlice **match_slice;	/* slice each match is counted for */
	int			nmatch;
	int			cap;
	/* sibling slices of the same shard run together with this one */
	SeTaskSlice **claimed;
	int			nclaimed;
	int			hash_mod;		/* > 1: keep docs with hash(_id) % hash_mod == hash_rem */
	int			hash_rem;
	TimestampTz batch_start;
	int			throttle_docs;	/* documents of the last batch, to throttle by */
	TimestampTz batch_end;
	/* where the slice is: it runs one step at a time (see run_step) */
	int			step;			/* RunStep */
	Oid			owner;			/* the task's submitter: every step runs as it */
	struct ShardRef *refs;		/* shards of the source indices, in order */
	int			nrefs;
	int			r;				/* current shard in refs */
	SeSearchShard shard;		/* its snapshot, pinned while batches run */
	bool		pinned;
	int			next;			/* next match of the shard to process */
} SliceRun;

static void
add_match(SliceRun *run, int32 segment, int32 doc, SeTaskSlice *slice)
{
	if (run->nmatch == run->cap)
	{
		run->cap = Max(1024, run->cap * 2);
		run->segs = run->segs ? repalloc_huge(run->segs, sizeof(int32) * run->cap) :
			palloc_extended(sizeof(int32) * run->cap, MCXT_ALLOC_HUGE);
		run->docs = run->docs ? repalloc_huge(run->docs, sizeof(int32) * run->cap) :
			palloc_extended(sizeof(int32) * run->cap, MCXT_ALLOC_HUGE);
		run->match_slice = run->match_slice ?
			repalloc_huge(run->match_slice, sizeof(SeTaskSlice *) * run->cap) :
			palloc_extended(sizeof(SeTaskSlice *) * run->cap, MCXT_ALLOC_HUGE);
	}
	run->segs[run->nmatch] = segment;
	run->docs[run->nmatch] = doc;
	run->match_slice[run->nmatch] = slice;
	run->nmatch++;
}

static bool
collect_match(SeSearchShard *shard, int segment, int32 doc, void *arg)
{
	SliceRun   *run = arg;

	add_match(run, segment, doc, run->slice);
	return true;
}

/*
 * With more slices than shards, claim the other queued slices of this
 * task on the same shard and run them together: their documents are the
 * same scan split by hash, and one stream of full batches writes far fewer
 * translog syncs than hundreds of tiny ones.  Each document still counts
 * for its own slice.
 */
static void
claim_siblings(SliceRun *run, int nrefs, int r)
{
	SeTask	   *tk = &SeTasks->tasks[run->task];
	int			i;

	run->claimed = palloc(sizeof(SeTaskSlice *) * tk->nslices);
	run->nclaimed = 0;
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	for (i = tk->first_slice; i < tk->first_slice + tk->nslices; i++)
	{
		SeTaskSlice *sl = &SeTasks->slices[i];

		if (sl != run->slice && sl->state == SE_SLICE_QUEUED &&
			sl->slice_id % nrefs == r)
		{
			sl->state = SE_SLICE_RUNNING;
			run->claimed[run->nclaimed++] = sl;
		}
	}
	LWLockRelease(&SeTasks->lock);
}

/*
 * The task whose slice this worker is stepping (-1: none).  The search
 * module's interrupt hook of a task worker reads it: a scan of a shard
 * for a cancelled task stops at its next check (every 1024 units of
 * work, tens of microseconds), not at the end of the shard.
 */
static int	stepping_task = -1;

static bool
slice_interrupt_check(void)
{
	CHECK_FOR_INTERRUPTS();
	if (stepping_task < 0)
		return true;
	/* unlocked: a stale false only delays the stop to the next check */
	return !SeTasks->tasks[stepping_task].cancel_requested && !se_bgw_got_sigterm;
}

static bool
task_cancelled(int t)
{
	bool		c;

	LWLockAcquire(&SeTasks->lock, LW_SHARED);
	c = SeTasks->tasks[t].cancel_requested;
	LWLockRelease(&SeTasks->lock);
	return c;
}

/*
 * A failure of task t, as ES lists them: a document's (index, id) or a
 * node's (node) that could not do its part.
 */
static void
task_failure(int t, const char *index, const char *id, const char *node,
			 int status, const char *type, const char *reason)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	if (index)
	{
		appendStringInfoString(&b, "\"index\":");
		se_json_write_string(&b, index, strlen(index));
	}
	if (id)
	{
		appendStringInfoString(&b, ",\"id\":");
		se_json_write_string(&b, id, strlen(id));
	}
	if (node)
	{
		appendStringInfoString(&b, index ? ",\"node\":" : "\"node\":");
		se_json_write_string(&b, node, strlen(node));
	}
	appendStringInfo(&b, ",\"cause\":{\"type\":");
	se_json_write_string(&b, type ? type : "exception", -1);
	appendStringInfoString(&b, ",\"reason\":");
	se_json_write_string(&b, reason ? reason : "", -1);
	appendStringInfo(&b, "},\"status\":%d}", status);
	se_task_add_failure(t, b.data);
}

static void
add_failure(SliceRun *run, const char *index, const char *id, int status,
			const char *type, const char *reason)
{
	task_failure(run->task, index, id, NULL, status, type, reason);
}

/* Abort the whole task (conflicts=abort, bulk failure). */
static void
abort_task(SliceRun *run)
{
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	SeTasks->tasks[run->task].failed = true;
	SeTasks->tasks[run->task].cancel_requested = true;
	LWLockRelease(&SeTasks->lock);
	run->stop = true;
}

/*
 * How long this slice must still wait to keep to its share of
 * requests_per_second after its last batch (0: it may run now).  Read
 * afresh each time, so a rethrottle or a cancel takes effect at once.
 */
static long
throttle_wait_ms(SliceRun *run)
{
	float4		rps = SeTasks->tasks[run->task].requests_per_second *
		SeTasks->tasks[run->task].rps_share;
	int			nslices = SeTasks->tasks[run->task].nslices;
	double		elapsed_ms,
				target_ms;

	if (run->throttle_docs == 0 || rps <= 0 || run->stop || task_cancelled(run->task))
		return 0;
	elapsed_ms = (double) (GetCurrentTimestamp() - run->batch_start) / 1000.0;
	target_ms = run->throttle_docs * 1000.0 / (rps / nslices * (1 + run->nclaimed));
	return elapsed_ms >= target_ms ? 0 : (long) (target_ms - elapsed_ms) + 1;
}

static void
process_batch(SliceRun *run, SeSearchShard *shard, const char *index, int from, int to)
{
	int			n = to - from;
	SeWriteItem *items = palloc0(sizeof(SeWriteItem) * n);
	int		   *map = palloc(sizeof(int) * n);
	int			nitems = 0;
	int			i;
	SeBulkOptions bo;
	MemoryContext batchcxt = CurrentMemoryContext;

	/* what a script allocates is bounded per document: free it per document */
	MemoryContext doccxt = AllocSetContextCreate(batchcxt, "search_engine script document",
												 ALLOCSET_DEFAULT_SIZES);

	run->batch_start = GetCurrentTimestamp();
	for (i = from; i < to && !run->stop; i++)
	{
		SeSegmentReader *seg = shard->segments[run->segs[i]];
		int32		doc = run->docs[i];
		SeDocMeta	meta;
		StringInfoData src;
		SeScriptOutcome out;
		SeWriteItem *it;
		SeError		serr;

		if (run->max_docs >= 0 && run->processed >= run->max_docs)
		{
			run->stop = true;
			break;
		}
		/*
		 * Cancelled (or shutting down) between two documents: the batch
		 * is not sent, as ES checks before each bulk; what earlier
		 * batches wrote stays written.
		 */
		if (SeTasks->tasks[run->task].cancel_requested || se_bgw_got_sigterm)
		{
			run->stop = true;
			nitems = 0;
			break;
		}
		run->processed++;
		run->match_slice[i]->c.total++;
		se_segment_doc_meta(seg, doc, &meta);
		initStringInfo(&src);
		if (run->rq.kind != KIND_DELETE && !se_segment_source(seg, doc, &src))
		{
			add_failure(run, index, pnstrdup(meta.id, meta.id_len), 500,
						"index_corrupted_exception", se_segment_error(seg)->reason);
			abort_task(run);
			break;
		}
		memset(&out, 0, sizeof(out));
		out.op = SE_SCRIPTOP_INDEX;
		se_error_init(&serr);
		if (run->runner)
		{
			bool		ok;

			MemoryContextSwitchTo(doccxt);
			ok = se_script_runner_run(run->runner, index, &meta, src.data, src.len, &out, &serr);
			MemoryContextSwitchTo(batchcxt);
			if (!ok)
			{
				/* a script error fails this document only */
				add_failure(run, index, pnstrdup(meta.id, meta.id_len), serr.status ? serr.status : 400,
							serr.type ? serr.type : "script_exception", serr.reason ? serr.reason : "script failed");
				MemoryContextReset(doccxt);
				continue;
			}
			if (out.source)
			{
				char	   *copy = palloc(out.source_len + 1);

				memcpy(copy, out.source, out.source_len + 1);
				out.source = copy;
			}
			MemoryContextReset(doccxt);
		}
		if (run->rq.kind == KIND_DELETE)
			out.op = SE_SCRIPTOP_DELETE;
		if (out.op == SE_SCRIPTOP_NOOP)
		{
			run->match_slice[i]->c.noops++;
			continue;
		}
		it = &items[nitems];
		map[nitems] = i;
		nitems++;
		it->id = pnstrdup(meta.id, meta.id_len);
		it->routing = meta.routing ? pnstrdup(meta.routing, meta.routing_len) : NULL;
		if (run->rq.kind == KIND_REINDEX)
		{
			it->index = run->rq.dest;
			it->op = (run->rq.dest_op_type && strcmp(run->rq.dest_op_type, "create") == 0) ?
				SE_ITEM_CREATE : SE_ITEM_INDEX;
			it->if_seq_no = -1;
		}
		else
		{
			it->index = (char *) index;
			it->if_seq_no = meta.seq_no;
			it->if_primary_term = meta.primary_term;
			it->op = SE_ITEM_INDEX;
		}
		if (out.op == SE_SCRIPTOP_DELETE)
		{
			it->op = SE_ITEM_DELETE;
			it->body = NULL;
			it->body_len = 0;
		}
		else if (out.source)
		{
			it->body = out.source;
			it->body_len = out.source_len;
		}
		else
		{
			it->body = src.data;
			it->body_len = src.len;
		}
	}
	if (nitems > 0)
	{
		memset(&bo, 0, sizeof(bo));
		bo.max_retries = 10;
		bo.refresh = SE_REFRESH_FALSE;
		/* an index deleted under an update/delete-by-query stays deleted */
		bo.no_auto_create = run->rq.kind != KIND_REINDEX;
		se_bulk_execute(items, nitems, &bo);
		run->slice->c.retries_bulk += bo.retried;
		for (i = 0; i < nitems; i++)
		{
			SeWriteItem *it = &items[i];
			SeSliceCounters *c = &run->match_slice[map[i]]->c;

			if (it->err_type == NULL)
			{
				if (it->op == SE_ITEM_DELETE)
					c->deleted++;
				else if (it->resp.result == SE_RESULT_CREATED)
					c->created++;
				else
					c->updated++;
			}
			else if (it->resp.status == 409)
			{
				c->version_conflicts++;
				if (!run->rq.conflicts_proceed)
				{
					add_failure(run, it->index, it->id, 409, it->err_type, it->err_reason);
					abort_task(run);
				}
			}
			else if (it->op == SE_ITEM_DELETE && it->resp.status == 404)
				c->version_conflicts++;	/* deleted meanwhile */
			else
			{
				add_failure(run, it->index, it->id, it->resp.status, it->err_type, it->err_reason);
				abort_task(run);
			}
		}
	}
	MemoryContextDelete(doccxt);
	run->slice->c.batches++;
	run->throttle_docs = to - from;
	run->batch_end = GetCurrentTimestamp();
	if (task_cancelled(run->task) || se_bgw_got_sigterm)
		run->stop = true;
}

/*
 * With more slices than shards, every slice of a shard needs the same scan
 * of that shard (it keeps the documents whose murmur3(_id) falls in its
 * share).  A task worker scans a shard once per task, keeps the matches
 * with their hashes and the pinned snapshot, and hands each later slice
 * its share in one pass over the cached hashes -- so 500 slices cost about
 * what 2 do.  Slices of a shard may also run in another worker with a
 * later snapshot: partitioning by _id keeps every document in exactly one
 * slice either way.
 */
typedef struct MatchCache
{
	bool		used;
	int64		task_id;
	char		index[256];
	int			shard;
	MemoryContext cxt;
	SeSearchShard snap;
	int32	   *segs;
	int32	   *docs;
	uint32	   *hashes;
	int			n;
} MatchCache;

#define MATCH_CACHE_SLOTS 4
static MatchCache match_cache[MATCH_CACHE_SLOTS];

static void
match_cache_drop(MatchCache *mc)
{
	se_snapshot_pin(&mc->snap, false);
	MemoryContextDelete(mc->cxt);
	memset(mc, 0, sizeof(*mc));
}

/* Drop entries of tasks that are no longer running. */
static void
match_cache_sweep(void)
{
	int			i;

	for (i = 0; i < MATCH_CACHE_SLOTS; i++)
	{
		MatchCache *mc = &match_cache[i];
		int			t;

		if (!mc->used)
			continue;
		t = se_task_find(mc->task_id);
		if (t < 0 || SeTasks->tasks[t].state != SE_TASK_RUNNING)
			match_cache_drop(mc);
	}
}

typedef struct HashScan
{
	MatchCache *mc;
	int			cap;
} HashScan;

static bool
collect_hashed(SeSearchShard *shard, int segment, int32 doc, void *arg)
{
	HashScan   *hs = arg;
	MatchCache *mc = hs->mc;
	int			len;
	const char *id = se_segment_doc_id(shard->segments[segment], doc, &len);

	if (mc->n == hs->cap)
	{
		hs->cap = Max(1024, hs->cap * 2);
		mc->segs = mc->segs ? repalloc_huge(mc->segs, sizeof(int32) * hs->cap) :
			MemoryContextAllocHuge(mc->cxt, sizeof(int32) * hs->cap);
		mc->docs = mc->docs ? repalloc_huge(mc->docs, sizeof(int32) * hs->cap) :
			MemoryContextAllocHuge(mc->cxt, sizeof(int32) * hs->cap);
		mc->hashes = mc->hashes ? repalloc_huge(mc->hashes, sizeof(uint32) * hs->cap) :
			MemoryContextAllocHuge(mc->cxt, sizeof(uint32) * hs->cap);
	}
	mc->segs[mc->n] = segment;
	mc->docs[mc->n] = doc;
	mc->hashes[mc->n] = (uint32) se_routing_hash(id, len);
	mc->n++;
	return true;
}

/* The cached scan of (task, index, shard), scanning it on a miss. */
static MatchCache *
match_cache_get(SliceRun *run, SeIndexMeta *im, int shard, SeError *err)
{
	int64		task_id = SeTasks->tasks[run->task].id;
	MatchCache *mc = NULL;
	MemoryContext old;
	HashScan	hs;
	bool		ok;
	int			i;

	match_cache_sweep();
	for (i = 0; i < MATCH_CACHE_SLOTS; i++)
		if (match_cache[i].used && match_cache[i].task_id == task_id &&
			match_cache[i].shard == shard && strcmp(match_cache[i].index, im->name) == 0)
			return &match_cache[i];
	for (i = 0; i < MATCH_CACHE_SLOTS && mc == NULL; i++)
		if (!match_cache[i].used)
			mc = &match_cache[i];
	if (mc == NULL)
	{
		mc = &match_cache[0];
		match_cache_drop(mc);
	}
	mc->cxt = AllocSetContextCreate(TopMemoryContext, "search_engine slice matches",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(mc->cxt);
	if (!se_snapshot_acquire(im, shard, &mc->snap, err))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(mc->cxt);
		mc->cxt = NULL;
		return NULL;
	}
	/* the mapping pointer belongs to the state copy: do not keep it */
	MemoryContextSwitchTo(old);
	se_snapshot_pin(&mc->snap, true);
	mc->used = true;
	mc->task_id = task_id;
	strlcpy(mc->index, im->name, sizeof(mc->index));
	mc->shard = shard;
	hs.mc = mc;
	hs.cap = 0;
	PG_TRY();
	{
		ok = se_search_scan(run->search, &mc->snap, collect_hashed, &hs, err);
	}
	PG_CATCH();
	{
		/* interrupted: a half-filled entry must not serve a later slice */
		match_cache_drop(mc);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!ok)
	{
		match_cache_drop(mc);
		return NULL;
	}
	return mc;
}

/*
 * Shards of the source indices, in a fixed order (index name, shard).  By
 * name, not SeIndexMeta pointer: writes may grow the mapping, which
 * reloads this process's cluster state and frees the old copy.
 */
typedef struct ShardRef
{
	char	   *index;
	int			shard;
	bool		local;			/* on this node (else a child task's) */
} ShardRef;

typedef enum RunStep
{
	RUN_START,					/* resolve and authorize the indices, compile the script */
	RUN_NEXT_SHARD,				/* scan the next shard of this slice for matches */
	RUN_BATCHES,				/* process the shard's matches, a batch per step */
	RUN_DONE
} RunStep;

/* Start a slice: its indices (authorized again, as the submitter), its shards, its script. */
static bool
slice_start(SliceRun *run, SeError *err)
{
	List	   *targets;
	ListCell   *lc;
	int			total_shards = 0;
	int			nslices = run->rq.nslices;
	int			sid = run->slice->slice_id;

	run->search = build_search(run->rq.query, err);
	if (run->search == NULL)
		return false;
	/* a grant may have gone since the task was submitted */
	StartTransactionCommand();
	targets = resolve_targets(&run->rq, err);
	CommitTransactionCommand();
	MemoryContextSwitchTo(run->cxt);
	if (se_error_is_set(err))
		return false;
	foreach(lc, targets)
		total_shards += ((SeIndexMeta *) lfirst(lc))->settings.number_of_shards;
	run->refs = palloc(sizeof(ShardRef) * Max(1, total_shards));
	run->nrefs = 0;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			run->refs[run->nrefs].index = pstrdup(im->name);
			run->refs[run->nrefs].shard = s;
			run->refs[run->nrefs].local = se_state_shard_local(im, s);
			run->nrefs++;
		}
	}
	/* max_docs is divided among slices, as ES does */
	run->max_docs = run->rq.max_docs < 0 ? -1 :
		run->rq.max_docs / nslices + (sid < run->rq.max_docs % nslices ? 1 : 0);
	if (run->max_docs >= 0 && nslices < run->nrefs)
	{
		/*
		 * The slice's shards may be on several nodes, each running its part:
		 * its limit is divided among its shards, and this part takes those
		 * of its own, so the parts never exceed it together (one node: all).
		 */
		int64		limit = run->max_docs;
		int			k = (run->nrefs - sid + nslices - 1) / nslices;
		int			j = 0;
		int			r;

		run->max_docs = 0;
		for (r = sid; r < run->nrefs; r += nslices, j++)
			if (run->refs[r].local)
				run->max_docs += limit / k + (j < limit % k ? 1 : 0);
	}
	if (run->rq.script.present)
	{
		run->runner = se_script_runner_create(&run->rq.script, err);
		if (run->runner == NULL)
			return false;
	}
	run->r = -1;
	return true;
}

/* Let go of the current shard's snapshot. */
static void
release_shard(SliceRun *run)
{
	if (run->pinned)
		se_snapshot_pin(&run->shard, false);
	run->pinned = false;
	run->nmatch = 0;
	run->next = 0;
}

/*
 * Hold a snapshot across steps: other slices run in this worker between
 * two of ours and may acquire (and prune) the same shard, or evict the
 * match cache entry the snapshot came from, so the run keeps its own copy
 * of the arrays and its own pin.
 */
static void
hold_shard(SliceRun *run, const SeSearchShard *src)
{
	int			n = src->nsegments;

	run->shard = *src;
	run->shard.segments = palloc(sizeof(SeSegmentReader *) * Max(n, 1));
	run->shard.live_docs = palloc(sizeof(uint64 *) * Max(n, 1));
	memcpy(run->shard.segments, src->segments, sizeof(SeSegmentReader *) * n);
	memcpy((void *) run->shard.live_docs, src->live_docs, sizeof(uint64 *) * n);
	if (src->all_live_docs)
	{
		run->shard.all_live_docs = palloc(sizeof(uint64 *) * Max(n, 1));
		memcpy((void *) run->shard.all_live_docs, src->all_live_docs, sizeof(uint64 *) * n);
	}
	run->shard.seg_gens = NULL;
	run->shard.del_gens = NULL;
	se_snapshot_pin(&run->shard, true);
	run->pinned = true;
}

/*
 * Advance to the next shard this slice covers and collect its matches;
 * false when there is none left (or on error, with err set).
 */
static bool
next_shard(SliceRun *run, SeError *err)
{
	int			nslices = run->rq.nslices;
	int			sid = run->slice->slice_id;
	int			r;

	for (r = run->r + 1; r < run->nrefs; r++)
	{
		SeIndexMeta *im;

		if (nslices <= run->nrefs)
		{
			if (r % nslices != sid)
				continue;
			run->hash_mod = 1;
		}
		else
		{
			/* more slices than shards: split shard r by murmur3(_id) */
			int			k = nslices / run->nrefs + (r < nslices % run->nrefs ? 1 : 0);

			if (sid % run->nrefs != r)
				continue;
			run->hash_mod = k;
			run->hash_rem = sid / run->nrefs;
		}
		run->r = r;
		im = se_index_for_read(run->refs[r].index, err);
		if (im == NULL)
			return false;
		if (!se_state_shard_local(im, run->refs[r].shard))
		{
			/* another node's: its child task of this task runs it */
			if (im->shard_nodes[run->refs[r].shard][0] == '\0' &&
				SeTasks->tasks[run->task].parent[0] == '\0')
				add_failure(run, run->refs[r].index, "", 503, "no_shard_available_action_exception",
							psprintf("[%s][%d] is unassigned", run->refs[r].index, run->refs[r].shard));
			continue;
		}
		run->nmatch = 0;
		if (run->hash_mod > 1)
		{
			MatchCache *mc = match_cache_get(run, im, run->refs[r].shard, err);
			SeTaskSlice **by_rem;
			int			j;

			if (mc == NULL)
				return false;
			hold_shard(run, &mc->snap);
			/* max_docs is per slice: only then run the slices one by one */
			if (run->rq.max_docs < 0)
				claim_siblings(run, run->nrefs, r);
			by_rem = palloc0(sizeof(SeTaskSlice *) * run->hash_mod);
			by_rem[run->hash_rem] = run->slice;
			for (j = 0; j < run->nclaimed; j++)
				by_rem[run->claimed[j]->slice_id / run->nrefs] = run->claimed[j];
			for (j = 0; j < mc->n; j++)
			{
				SeTaskSlice *owner = by_rem[mc->hashes[j] % (uint32) run->hash_mod];

				if (owner != NULL)
					add_match(run, mc->segs[j], mc->docs[j], owner);
			}
		}
		else
		{
			SeSearchShard snap;

			if (!se_snapshot_acquire(im, run->refs[r].shard, &snap, err))
				return false;
			hold_shard(run, &snap);
			if (!se_search_scan(run->search, &run->shard, collect_match, run, err))
				return false;
		}
		run->shard.mapping = im->mapping;
		run->shard.index = run->refs[r].index;
		run->next = 0;
		return true;
	}
	return false;
}

/*
 * One step of a slice: start it, move to its next shard, or process one
 * batch.  A slice never sleeps in a step; throttling is the time the
 * worker lets pass before the slice's next step (throttle_wait_ms), during
 * which it runs other slices.
 */
static void
run_step(SliceRun *run)
{
	SeError		err;

	se_error_init(&err);
	switch ((RunStep) run->step)
	{
		case RUN_START:
			if (!slice_start(run, &err))
				break;
			run->step = RUN_NEXT_SHARD;
			return;
		case RUN_NEXT_SHARD:
			release_shard(run);
			if (task_cancelled(run->task))
				run->stop = true;
			if (!run->stop && next_shard(run, &err))
				run->step = RUN_BATCHES;
			else if (!se_error_is_set(&err) ||
					 strcmp(err.type, "task_cancelled_exception") == 0)
			{
				/* a scan stopped by the cancel is no failure: the task is cancelled */
				release_shard(run);
				run->step = RUN_DONE;
			}
			else
				break;
			return;
		case RUN_BATCHES:
			if (run->stop || run->next >= run->nmatch)
				run->step = RUN_NEXT_SHARD;
			else
			{
				int			to = Min(run->nmatch, run->next + run->rq.scroll_size);

				StartTransactionCommand();
				PushActiveSnapshot(GetTransactionSnapshot());
				process_batch(run, &run->shard, run->refs[run->r].index, run->next, to);
				PopActiveSnapshot();
				CommitTransactionCommand();
				MemoryContextSwitchTo(run->cxt);
				run->next = to;
			}
			return;
		case RUN_DONE:
			return;
	}
	add_failure(run, run->rq.index, "", err.status ? err.status : 500,
				err.type ? err.type : "exception", err.reason ? err.reason : "slice failed");
	abort_task(run);
	release_shard(run);
	run->step = RUN_DONE;
}

/* The last slice: write the response, free the waiters. */
static void
finalize_task(int t, const char *request_json)
{
	bool		refresh = false;
	ByQueryRequest rq;
	SeError		err;
	SeJson	   *req;
	SeJsonParseOptions opts = {0};

	se_error_init(&err);
	req = se_json_parse(request_json, strlen(request_json), &opts, &err);
	if (req && read_request_json(req, &rq, &err))
		refresh = rq.refresh;
	if (refresh)
	{
		SeResponse	r;

		se_response_init(&r);
		se_error_init(&err);
		(void) se_op_refresh(rq.kind == KIND_REINDEX ? rq.dest : rq.index, &r, &err);
	}
	/* the file first: whoever sees COMPLETED must find the response */
	SeTasks->tasks[t].end_millis = now_millis();
	write_task_file(t, request_json, true);
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	SeTasks->tasks[t].state = SE_TASK_COMPLETED;
	LWLockRelease(&SeTasks->lock);
	ConditionVariableBroadcast(&SeTasks->cv);
}

void
se_task_workers_register(void)
{
	/* connected to search_engine.database: lang sql scripts use SPI */
	se_bgw_register("se_task_worker_main", "search_engine task worker",
					se_task_threads, true);
}

/* Read the request stored in task t's file. */
static char *
load_request(int64 id)
{
	SeError		err;
	SeJson	   *stored;
	StringInfoData b;

	se_error_init(&err);
	stored = read_task_file(id, &err);
	if (stored == NULL || se_json_get(stored, "request") == NULL)
		return NULL;
	initStringInfo(&b);
	se_json_write(&b, se_json_get(stored, "request"));
	return b.data;
}

/*
 * Slices a task worker runs at once.  It takes queued slices up to this,
 * steps whichever is ready in turn (round robin), and lets a throttled one
 * wait without holding the worker: two tasks at requests_per_second=0.01
 * no longer stop every other by-query job on the node.
 */
#define SLICES_PER_WORKER 16

/* Claim a queued slice (RUNNING), or -1. */
static int
take_queued_slice(void)
{
	int			i;
	int			found = -1;

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	for (i = 0; i < SE_MAX_SLICES && found < 0; i++)
	{
		if (SeTasks->slices[i].state == SE_SLICE_QUEUED)
		{
			SeTasks->slices[i].state = SE_SLICE_RUNNING;
			found = i;
		}
	}
	LWLockRelease(&SeTasks->lock);
	return found;
}

/* A run for slice i, in its own memory context under parent. */
static SliceRun *
run_begin(int i, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "search_engine slice", ALLOCSET_DEFAULT_SIZES);
	SliceRun   *run = MemoryContextAllocZero(cxt, sizeof(SliceRun));
	SeError		err;
	SeJsonParseOptions opts = {0};
	SeJson	   *req;

	run->slice = &SeTasks->slices[i];
	run->task = run->slice->task;
	run->owner = SeTasks->tasks[run->task].owner;
	run->cxt = cxt;
	run->step = RUN_START;
	MemoryContextSwitchTo(cxt);
	run->request_json = load_request(SeTasks->tasks[run->task].id);
	se_error_init(&err);
	req = run->request_json ?
		se_json_parse(run->request_json, strlen(run->request_json), &opts, &err) : NULL;
	if (req == NULL || !read_request_json(req, &run->rq, &err))
	{
		/* e.g. its script language was disabled since it was queued */
		add_failure(run, "", "", err.status ? err.status : 500,
					err.type ? err.type : "exception",
					err.reason ? err.reason : "could not read the task request");
		abort_task(run);
		run->step = RUN_DONE;
	}
	else if (task_cancelled(run->task))
		run->step = RUN_DONE;
	return run;
}

/*
 * One step of run as the role that submitted its task, in a
 * security-restricted operation (no SET ROLE, no temporary objects), as
 * PostgreSQL runs maintenance code for a table's owner: lang-sql scripts,
 * reads and writes get exactly the submitter's privileges, never this
 * worker's.  An ERROR fails the slice (and its task), not the worker.
 */
static void
run_step_as_owner(SliceRun *run, Oid worker_user)
{
	SetUserIdAndSecContext(run->owner, SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	MemoryContextSwitchTo(run->cxt);
	stepping_task = run->task;
	PG_TRY();
	{
		run_step(run);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(run->cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		add_failure(run, run->rq.index ? run->rq.index : "", "", 500, "exception", edata->message);
		abort_task(run);
		release_shard(run);
		run->step = RUN_DONE;
	}
	PG_END_TRY();
	stepping_task = -1;
	SetUserIdAndSecContext(worker_user, 0);
}

/* Answer task t: the refresh it may ask for is the submitter's request too. */
static void
finalize_as_owner(int t, Oid owner, const char *request_json, Oid worker_user)
{
	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	StartTransactionCommand();
	finalize_task(t, request_json);
	CommitTransactionCommand();
	SetUserIdAndSecContext(worker_user, 0);
}

/* A finished run: mark its slices done, answer the task if it was the last. */
static void
run_end(SliceRun *run, Oid worker_user)
{
	int			t = run->task;
	SeTaskSlice *sl = run->slice;
	bool		last;
	int			i;

	release_shard(run);
	if (run->runner)
		se_script_runner_free(run->runner);
	if (task_cancelled(t))
		sl->cancelled = true;
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	sl->state = SE_SLICE_DONE;
	SeTasks->tasks[t].slices_done++;
	for (i = 0; i < run->nclaimed; i++)
	{
		run->claimed[i]->cancelled = sl->cancelled;
		run->claimed[i]->state = SE_SLICE_DONE;
		SeTasks->tasks[t].slices_done++;
	}
	last = se_task_claim_finalize(t);
	LWLockRelease(&SeTasks->lock);
	if (last)
		finalize_as_owner(t, run->owner, run->request_json ? run->request_json : "{}",
						  worker_user);
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextDelete(run->cxt);
	match_cache_sweep();		/* release snapshots of finished tasks */
}

void
se_task_worker_main(Datum arg)
{
	int			me = DatumGetInt32(arg);
	MemoryContext cxt;
	Oid			worker_user;
	SliceRun   *active[SLICES_PER_WORKER];
	int			nactive = 0;
	int			rr = 0;

	se_bgw_start();
	BackgroundWorkerInitializeConnection(se_database, NULL, 0);
	worker_user = GetUserId();
	se_search_interrupt_hook = slice_interrupt_check;
	/* scripts name what they call from pg_catalog, or schema-qualified */
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
	SeTasks->worker_procnos[me] = MyProc->pgprocno;
	se_tasks_bootstrap();
	cxt = AllocSetContextCreate(TopMemoryContext, "search_engine slices", ALLOCSET_DEFAULT_SIZES);

	while (se_bgw_loop_top())
	{
		SliceRun   *run = NULL;
		long		wait_ms = 1000;
		int			k;

		while (nactive < SLICES_PER_WORKER)
		{
			int			i = take_queued_slice();

			if (i < 0)
				break;
			active[nactive++] = run_begin(i, cxt);
		}
		/* worker 0 follows the child tasks of this node's tasks on other nodes */
		if (me == 0 && poll_children(worker_user))
			wait_ms = Min(wait_ms, CHILD_POLL_INTERVAL_MS);
		/* the next ready slice after the last one stepped */
		for (k = 0; k < nactive && run == NULL; k++)
		{
			int			j = (rr + k) % nactive;
			long		w = throttle_wait_ms(active[j]);

			if (w == 0)
			{
				run = active[j];
				rr = j + 1;
			}
			else
				wait_ms = Min(wait_ms, w);
		}
		if (run == NULL)
		{
			/* wake at least every 100ms to see a rethrottle or a cancel */
			if (nactive > 0)
				wait_ms = Min(wait_ms, 100);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		if (run->throttle_docs > 0)
		{
			/* a throttled slice waited since its last batch ended */
			if (SeTasks->tasks[run->task].requests_per_second > 0)
				run->slice->c.throttled_millis += (GetCurrentTimestamp() - run->batch_end) / 1000;
			run->throttle_docs = 0;
		}
		if (run->step != RUN_DONE)
			run_step_as_owner(run, worker_user);
		if (se_bgw_got_sigterm)
		{
			/*
			 * Shutting down mid-slice: leave the tasks unfinished on disk;
			 * the next start marks them failed, keeping what was applied.
			 */
			break;
		}
		if (run->step == RUN_DONE)
		{
			for (k = 0; k < nactive; k++)
				if (active[k] == run)
					break;
			active[k] = active[--nactive];
			run_end(run, worker_user);
		}
	}
	SeTasks->worker_procnos[me] = -1;
	proc_exit(1);
}

/* ---------------------------------------------------------------------
 * Across nodes: child tasks, their poller, the tasks API's routing
 *
 * In cluster mode the task on the node that took the request (the
 * parent) runs its slices over the shards it holds; every other node
 * holding shards of the source indices gets a child task (transport
 * action byquery_slice) with the same request and slices, which its task
 * workers run over that node's shards exactly as local slices, as the
 * role that asked (carried by name).  Task worker 0 of the parent's node
 * polls the children (tasks_op "get", CHILD_POLL_INTERVAL_MS) for their
 * per-slice counters, sends them the parent's cancel and its throttle
 * share, records a node that stops answering as a failure of the task,
 * and answers the task once its slices and children are all done.
 * ---------------------------------------------------------------------
 */

/* Serving a peer's tasks_op: never forwarded again. */
static bool serving_tasks_op = false;

static const char *
json_str(const SeJson *j, const char *key)
{
	const SeJson *v = j ? se_json_get(j, key) : NULL;

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

static int64
json_int(const SeJson *j, const char *key)
{
	const SeJson *v = j ? se_json_get(j, key) : NULL;

	return v && v->type == SE_JSON_NUMBER ? (int64) v->u.n.d : 0;
}

/* The name of a role, carried to another node; "" if it is gone. */
static const char *
role_name(Oid role)
{
	char	   *n = GetUserNameFromId(role, true);

	return n ? n : "";
}

/*
 * The role of the name a peer sent: work done for a request runs as the
 * role that asked, never as more.  It must exist on this node too (403).
 */
static Oid
peer_role(const SeJson *j, const char *action, SeError *err)
{
	const char *name = json_str(j, "role");
	Oid			role = name && name[0] ? get_role_oid(name, true) : InvalidOid;

	if (!OidIsValid(role))
		se_error_set(err, 403, "security_exception",
					 "action [%s] is unauthorized for user [%s]: no such role on node [%s]",
					 action, name ? name : "", se_node_name_get());
	return role;
}

/* A failure of task t at the level of a node (it refused, or stopped answering). */
static void
node_failure(int t, const char *node, int status, const char *type, const char *reason)
{
	task_failure(t, NULL, NULL, node, status, type, reason);
}

/*
 * Register a child of task t on every other node holding shards of the
 * targets.  A node that refuses the request (4xx: the role is missing
 * there, or a privilege) fails it as this node would; one that cannot be
 * reached is a failure of the task.  Each child's part of the throttle is
 * its part of the shards, as is this node's.
 */
static bool
dispatch_children(int t, int64 id, List *targets, const char *request_json,
				  const char *description, SeError *err)
{
	List	   *nodes = se_state_nodes_elsewhere(targets);
	int			n = list_length(nodes);
	int			total = Max(1, count_shards(targets));
	int			local = 0;
	SeTask	   *tk = &SeTasks->tasks[t];
	SeTransportCall *calls;
	ListCell   *lc;
	int			k = 0;
	int			i;

	if (n == 0)
		return true;
	if (n > SE_MAX_TASK_CHILDREN)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "a by-query task reaches at most %d other nodes, this one %d",
					 SE_MAX_TASK_CHILDREN, n);
		return false;
	}
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
			if (se_state_shard_local(im, s))
				local++;
	}
	calls = palloc0(sizeof(SeTransportCall) * n);
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	tk->rps_share = (float4) local / total;
	foreach(lc, nodes)
	{
		const char *node = lfirst(lc);
		SeTaskChild *ch = &tk->children[k];
		ListCell   *lc2;
		int			mine = 0;

		foreach(lc2, targets)
		{
			SeIndexMeta *im = lfirst(lc2);
			int			s;

			for (s = 0; s < im->settings.number_of_shards; s++)
				if (strcmp(im->shard_nodes[s], node) == 0)
					mine++;
		}
		memset(ch, 0, sizeof(*ch));
		strlcpy(ch->node, node, sizeof(ch->node));
		ch->share = (float4) mine / total;
		ch->rps_sent = tk->requests_per_second < 0 ? -1 : tk->requests_per_second * ch->share;
		k++;
	}
	tk->nchildren = n;
	LWLockRelease(&SeTasks->lock);
	for (i = 0; i < n; i++)
	{
		StringInfoData p;

		initStringInfo(&p);
		appendStringInfo(&p, "{\"parent\":\"%s:" INT64_FORMAT "\",\"role\":", se_node_name_get(), id);
		se_json_write_string(&p, role_name(GetUserId()), -1);
		appendStringInfo(&p, ",\"rps\":%g,\"description\":", (double) tk->children[i].rps_sent);
		se_json_write_string(&p, description, -1);
		appendStringInfo(&p, ",\"request\":%s}", request_json);
		calls[i].node = pstrdup(tk->children[i].node);
		calls[i].conninfo = se_cluster_conninfo(calls[i].node);
		calls[i].action = "byquery_slice";
		calls[i].payload = p.data;
		calls[i].payload_len = p.len;
	}
	se_transport_call_each(calls, n, BYQUERY_DISPATCH_TIMEOUT_MS);
	for (i = 0; i < n; i++)
	{
		SeTransportCall *c = &calls[i];
		int64		cid = 0;

		if (c->ok)
		{
			SeJsonParseOptions opts = {0};
			SeJson	   *j = se_json_parse(c->reply.data, c->reply.len, &opts, &c->err);

			cid = json_int(j, "id");
			if (cid <= 0 && !se_error_is_set(&c->err))
				se_error_set(&c->err, 500, "remote_transport_exception",
							 "[%s][byquery_slice] malformed answer", c->node);
		}
		if (cid > 0)
		{
			LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
			tk->children[i].id = cid;
			LWLockRelease(&SeTasks->lock);
			continue;
		}
		if (c->err.status >= 400 && c->err.status < 500)
		{
			if (!se_error_is_set(err))
				se_error_set(err, c->err.status, c->err.type, "%s", c->err.reason);
		}
		node_failure(t, c->node, c->err.status, c->err.type, c->err.reason);
		LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
		tk->children[i].done = true;
		tk->children_done++;
		LWLockRelease(&SeTasks->lock);
	}
	return !se_error_is_set(err);
}

/* Transport action "byquery_slice": register a child task of a peer's task. */
static bool
byquery_slice_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	SeJson	   *req = j ? se_json_get(j, "request") : NULL;
	const char *parent = json_str(j, "parent");
	const char *description = json_str(j, "description");
	SeJson	   *rpsj = j ? se_json_get(j, "rps") : NULL;
	ByQueryRequest rq;
	Oid			role;
	Oid			save_user;
	int			save_sec;
	bool		ok;
	int			t;
	int64		id;
	StringInfoData rj;

	if (j == NULL)
		return false;
	if (req == NULL || req->type != SE_JSON_OBJECT || parent == NULL || description == NULL ||
		rpsj == NULL || rpsj->type != SE_JSON_NUMBER)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed byquery_slice request");
		return false;
	}
	role = peer_role(j, "indices:data/write/byquery", err);
	if (!OidIsValid(role))
		return false;
	se_require_started();
	/* the same checks as on the node that took the request, as that role */
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(role, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		ok = read_request_json(req, &rq, err);
		if (ok)
		{
			(void) resolve_targets(&rq, err);
			ok = !se_error_is_set(err);
		}
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
	if (!ok)
		return false;
	rq.refresh = false;			/* the parent refreshes once every part is done */
	initStringInfo(&rj);
	write_request_json(&rq, &rj);
	se_tasks_bootstrap();
	t = se_task_create(kind_action(rq.kind), description, rq.nslices,
					   rpsj->u.n.d > 0 ? (float4) rpsj->u.n.d : -1, role, &id);
	if (t < 0)
	{
		se_error_set(err, 429, "es_rejected_execution_exception",
					 "rejected execution of %s: the task table is full", description);
		return false;
	}
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	strlcpy(SeTasks->tasks[t].parent, parent, sizeof(SeTasks->tasks[t].parent));
	LWLockRelease(&SeTasks->lock);
	store_task(t, rj.data);
	queue_slices(t);
	appendStringInfo(reply, "{\"id\":" INT64_FORMAT "}", id);
	return true;
}

/* Counters of a status or response object. */
static void
counters_from_json(const SeJson *o, SeSliceCounters *c)
{
	c->total = json_int(o, "total");
	c->updated = json_int(o, "updated");
	c->created = json_int(o, "created");
	c->deleted = json_int(o, "deleted");
	c->batches = json_int(o, "batches");
	c->version_conflicts = json_int(o, "version_conflicts");
	c->noops = json_int(o, "noops");
	c->retries_bulk = json_int(o ? se_json_get(o, "retries") : NULL, "bulk");
	c->throttled_millis = json_int(o, "throttled_millis");
}

/*
 * The children's per-slice counters as they last answered, kept by the
 * poller (worker 0) in its own memory; the slices' rc in shared memory
 * are their sums.
 */
typedef struct ChildCounters
{
	int64		task_id;
	int			child;
	int			nslices;
	SeSliceCounters *c;
} ChildCounters;

static List *child_counters = NIL;

static SeSliceCounters *
child_counters_get(int64 task_id, int child, int nslices)
{
	ListCell   *lc;
	ChildCounters *cc;
	MemoryContext old;

	foreach(lc, child_counters)
	{
		cc = lfirst(lc);
		if (cc->task_id == task_id && cc->child == child)
			return cc->c;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	cc = palloc0(sizeof(ChildCounters));
	cc->task_id = task_id;
	cc->child = child;
	cc->nslices = nslices;
	cc->c = palloc0(sizeof(SeSliceCounters) * nslices);
	child_counters = lappend(child_counters, cc);
	MemoryContextSwitchTo(old);
	return cc->c;
}

/* rc of task t's slices: the sums of its children's; caller holds the lock. */
static void
sum_children(int t)
{
	SeTask	   *tk = &SeTasks->tasks[t];
	ListCell   *lc;
	int			i;

	for (i = 0; i < tk->nslices; i++)
		memset(&SeTasks->slices[tk->first_slice + i].rc, 0, sizeof(SeSliceCounters));
	foreach(lc, child_counters)
	{
		ChildCounters *cc = lfirst(lc);

		if (cc->task_id != tk->id)
			continue;
		for (i = 0; i < Min(cc->nslices, tk->nslices); i++)
			se_slice_counters_add(&SeTasks->slices[tk->first_slice + i].rc, &cc->c[i]);
	}
}

/* Forget the counters of tasks no longer running. */
static void
child_counters_sweep(void)
{
	ListCell   *lc;

	foreach(lc, child_counters)
	{
		ChildCounters *cc = lfirst(lc);
		int			t = se_task_find(cc->task_id);

		if (t < 0 || SeTasks->tasks[t].state != SE_TASK_RUNNING)
		{
			child_counters = foreach_delete_current(child_counters, lc);
			pfree(cc->c);
			pfree(cc);
		}
	}
}

typedef enum ChildOp
{
	CHILD_GET,
	CHILD_CANCEL,
	CHILD_RETHROTTLE
} ChildOp;

typedef struct ChildJob
{
	int			t;
	int64		task_id;
	int			child;
	ChildOp		op;
	float4		rps;
	Oid			owner;
} ChildJob;

/* A child's answer to "get": its counters, and when done its failures. */
static void
child_answered(ChildJob *job, SeTransportCall *c, List **finalize)
{
	SeTask	   *tk = &SeTasks->tasks[job->t];
	SeTaskChild *ch = &tk->children[job->child];
	SeJsonParseOptions opts = {0};
	SeJson	   *root = se_json_parse(c->reply.data, c->reply.len, &opts, &c->err);
	bool		completed = root && se_json_get(root, "completed") &&
		se_json_get(root, "completed")->type == SE_JSON_TRUE;
	SeJson	   *src;
	SeJson	   *slices;
	SeJson	   *failures = NULL;
	SeSliceCounters *cc = child_counters_get(job->task_id, job->child, tk->nslices);
	int			i;

	if (root == NULL)
		return;
	src = completed ? se_json_get(root, "response") : se_json_get(se_json_get(root, "task"), "status");
	if (completed && src == NULL)
	{
		SeJson	   *e = se_json_get(root, "error");

		node_failure(job->t, ch->node, 500, json_str(e, "type") ? json_str(e, "type") : "exception",
					 json_str(e, "reason") ? json_str(e, "reason") : "the child task failed");
	}
	else if (src)
	{
		slices = se_json_get(src, "slices");
		if (slices && slices->type == SE_JSON_ARRAY)
		{
			for (i = 0; i < slices->u.a.count; i++)
			{
				int			sid = (int) json_int(slices->u.a.items[i], "slice_id");

				if (sid >= 0 && sid < tk->nslices)
					counters_from_json(slices->u.a.items[i], &cc[sid]);
			}
		}
		else
			counters_from_json(src, &cc[0]);
		failures = completed ? se_json_get(src, "failures") : NULL;
		if (failures && failures->type == SE_JSON_ARRAY)
			for (i = 0; i < failures->u.a.count; i++)
			{
				StringInfoData b;

				initStringInfo(&b);
				se_json_write(&b, failures->u.a.items[i]);
				se_task_add_failure(job->t, b.data);
			}
	}
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	sum_children(job->t);
	if (completed)
	{
		/* a part that failed (conflicts=abort, a bulk failure) aborts the task */
		if ((failures && failures->type == SE_JSON_ARRAY && failures->u.a.count > 0) ||
			src == NULL)
		{
			tk->failed = true;
			tk->cancel_requested = true;
		}
		ch->done = true;
		tk->children_done++;
		if (se_task_claim_finalize(job->t))
			*finalize = lappend_int(*finalize, job->t);
	}
	LWLockRelease(&SeTasks->lock);
}

/*
 * A call to a child that failed: a cancel of a child already finished is
 * no failure; else its node is given up after CHILD_MAX_POLL_FAILURES
 * (the transport's deadline bounds each), with a failure of the task.
 */
static void
child_unanswered(ChildJob *job, SeTransportCall *c, List **finalize)
{
	SeTask	   *tk = &SeTasks->tasks[job->t];
	SeTaskChild *ch = &tk->children[job->child];
	bool		give_up;

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	if (job->op == CHILD_CANCEL && c->err.status == 404)
	{
		ch->cancel_sent = true;
		LWLockRelease(&SeTasks->lock);
		return;
	}
	give_up = ++ch->poll_failures >= CHILD_MAX_POLL_FAILURES || c->err.status < 500;
	LWLockRelease(&SeTasks->lock);
	if (!give_up)
		return;
	node_failure(job->t, ch->node, c->err.status, c->err.type, c->err.reason);
	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	ch->done = true;
	tk->children_done++;
	if (se_task_claim_finalize(job->t))
		*finalize = lappend_int(*finalize, job->t);
	LWLockRelease(&SeTasks->lock);
}

static void finalize_as_owner(int t, Oid owner, const char *request_json, Oid worker_user);

/*
 * One round of the poller (task worker 0): ask every running child for
 * its status, or send it its parent's cancel or new throttle share.
 * Returns whether children are still running (the worker then wakes
 * every CHILD_POLL_INTERVAL_MS).
 */
static bool
poll_children(Oid worker_user)
{
	static TimestampTz last_poll = 0;
	ChildJob   *jobs;
	SeTransportCall *calls;
	int			n = 0;
	int			t;
	int			i;
	List	   *finalize = NIL;
	ListCell   *lc;
	MemoryContext cxt,
				old;

	if (!TimestampDifferenceExceeds(last_poll, GetCurrentTimestamp(), CHILD_POLL_INTERVAL_MS))
		return true;
	last_poll = GetCurrentTimestamp();
	cxt = AllocSetContextCreate(TopMemoryContext, "search_engine child polls", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	jobs = palloc(sizeof(ChildJob) * SE_MAX_TASKS * SE_MAX_TASK_CHILDREN);
	LWLockAcquire(&SeTasks->lock, LW_SHARED);
	for (t = 0; t < SE_MAX_TASKS; t++)
	{
		SeTask	   *tk = &SeTasks->tasks[t];

		if (tk->state != SE_TASK_RUNNING)
			continue;
		for (i = 0; i < tk->nchildren; i++)
		{
			SeTaskChild *ch = &tk->children[i];
			float4		rps = tk->requests_per_second < 0 ? -1 : tk->requests_per_second * ch->share;
			ChildJob   *job = &jobs[n];

			if (ch->done || ch->id <= 0)
				continue;
			job->t = t;
			job->task_id = tk->id;
			job->child = i;
			job->owner = tk->owner;
			job->rps = rps;
			job->op = tk->cancel_requested && !ch->cancel_sent ? CHILD_CANCEL :
				(rps != ch->rps_sent && !tk->cancel_requested ? CHILD_RETHROTTLE : CHILD_GET);
			n++;
		}
	}
	LWLockRelease(&SeTasks->lock);
	if (n == 0)
	{
		child_counters_sweep();
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		return false;
	}
	calls = palloc0(sizeof(SeTransportCall) * n);
	StartTransactionCommand();
	MemoryContextSwitchTo(cxt);
	for (i = 0; i < n; i++)
	{
		SeTaskChild *ch = &SeTasks->tasks[jobs[i].t].children[jobs[i].child];
		StringInfoData p;

		initStringInfo(&p);
		appendStringInfo(&p, "{\"op\":\"%s\",\"task\":\"%s:" INT64_FORMAT "\",\"rps\":%g,\"role\":",
						 jobs[i].op == CHILD_CANCEL ? "cancel" :
						 (jobs[i].op == CHILD_RETHROTTLE ? "rethrottle" : "get"),
						 ch->node, ch->id, (double) jobs[i].rps);
		se_json_write_string(&p, role_name(jobs[i].owner), -1);
		appendStringInfoChar(&p, '}');
		calls[i].node = pstrdup(ch->node);
		calls[i].conninfo = se_cluster_conninfo(ch->node);
		calls[i].action = "tasks_op";
		calls[i].payload = p.data;
		calls[i].payload_len = p.len;
	}
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	se_transport_call_each(calls, n, CHILD_POLL_TIMEOUT_MS);
	for (i = 0; i < n; i++)
	{
		ChildJob   *job = &jobs[i];
		SeTaskChild *ch = &SeTasks->tasks[job->t].children[job->child];

		if (SeTasks->tasks[job->t].id != job->task_id)
			continue;
		if (!calls[i].ok)
			child_unanswered(job, &calls[i], &finalize);
		else
		{
			LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
			ch->poll_failures = 0;
			if (job->op == CHILD_CANCEL)
				ch->cancel_sent = true;
			else if (job->op == CHILD_RETHROTTLE)
				ch->rps_sent = job->rps;
			LWLockRelease(&SeTasks->lock);
			if (job->op == CHILD_GET)
				child_answered(job, &calls[i], &finalize);
		}
	}
	foreach(lc, finalize)
	{
		int			ft = lfirst_int(lc);
		char	   *req = load_request(SeTasks->tasks[ft].id);

		finalize_as_owner(ft, SeTasks->tasks[ft].owner, req ? req : "{}", worker_user);
		MemoryContextSwitchTo(cxt);
	}
	child_counters_sweep();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return true;
}

/* Send a tasks API call for a task of another node to that node. */
static bool
forward_task_op(const char *node, const char *op, const char *task_id, float4 rps,
				const char *actions, SeResponse *r, SeError *err)
{
	SeTransportCall call;
	StringInfoData p;

	memset(&call, 0, sizeof(call));
	initStringInfo(&p);
	appendStringInfo(&p, "{\"op\":\"%s\",\"rps\":%g,\"role\":", op, (double) rps);
	se_json_write_string(&p, role_name(GetUserId()), -1);
	if (task_id)
	{
		appendStringInfoString(&p, ",\"task\":");
		se_json_write_string(&p, task_id, -1);
	}
	if (actions)
	{
		appendStringInfoString(&p, ",\"actions\":");
		se_json_write_string(&p, actions, -1);
	}
	appendStringInfoChar(&p, '}');
	call.node = node;
	call.conninfo = se_cluster_conninfo(node);
	call.action = "tasks_op";
	call.payload = p.data;
	call.payload_len = p.len;
	se_transport_call_each(&call, 1, TASKS_REMOTE_TIMEOUT_MS);
	if (!call.ok)
	{
		se_error_set(err, call.err.status, call.err.type, "%s", call.err.reason);
		return false;
	}
	appendBinaryStringInfo(&r->body, call.reply.data, call.reply.len);
	return true;
}

/*
 * get_task of another node's task; waiting for its completion polls it,
 * so no transport call is held open for the length of the task.
 */
static bool
get_remote_task(const char *node, const char *task_id, bool wait_for_completion,
				SeResponse *r, SeError *err)
{
	for (;;)
	{
		SeJsonParseOptions opts = {0};
		SeJson	   *root;
		SeJson	   *done;
		int			mark = r->body.len;

		if (!forward_task_op(node, "get", task_id, 0, NULL, r, err))
			return false;
		if (!wait_for_completion)
			return true;
		root = se_json_parse(r->body.data + mark, r->body.len - mark, &opts, err);
		if (root == NULL)
			return false;
		done = se_json_get(root, "completed");
		if (done == NULL || done->type != SE_JSON_FALSE)
			return true;
		r->body.len = mark;
		r->body.data[mark] = '\0';
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 CHILD_POLL_INTERVAL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Transport action "tasks_op": the tasks API on this node for a peer,
 * as the role that asked there (get, cancel, rethrottle, list).
 */
static bool
tasks_op_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	const char *op = json_str(j, "op");
	const char *task = json_str(j, "task");
	SeJson	   *rpsj = j ? se_json_get(j, "rps") : NULL;
	float4		rps = rpsj && rpsj->type == SE_JSON_NUMBER ? (float4) rpsj->u.n.d : -1;
	SeResponse	r;
	Oid			role;
	Oid			save_user;
	int			save_sec;
	bool		ok = false;

	if (j == NULL)
		return false;
	if (op == NULL || (strcmp(op, "list") != 0 && task == NULL))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed tasks_op request");
		return false;
	}
	role = peer_role(j, "cluster:monitor/task", err);
	if (!OidIsValid(role))
		return false;
	se_response_init(&r);
	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(role, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	serving_tasks_op = true;
	PG_TRY();
	{
		if (strcmp(op, "get") == 0)
			ok = se_op_get_task(task, false, &r, err);
		else if (strcmp(op, "cancel") == 0)
			ok = se_op_cancel_task(task, &r, err);
		else if (strcmp(op, "rethrottle") == 0)
			ok = se_op_rethrottle_task(task, &rps, &r, err);
		else if (strcmp(op, "list") == 0)
		{
			list_local_tasks(json_str(j, "actions"), &r.body);
			ok = true;
		}
		else
			se_error_set(err, 400, "illegal_argument_exception", "unknown tasks_op [%s]", op);
	}
	PG_FINALLY();
	{
		serving_tasks_op = false;
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
	if (ok)
		appendBinaryStringInfo(reply, r.body.data, r.body.len);
	return ok;
}

void
se_byquery_register_actions(void)
{
	se_transport_register("byquery_slice", byquery_slice_action);
	se_transport_register("tasks_op", tasks_op_action);
}

/* ---------------------------------------------------------------------
 * SQL functions and the tasks view
 * ---------------------------------------------------------------------
 */
static char *
opt_text(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

static Datum
finish_json(bool ok, SeResponse *r, SeError *err)
{
	if (!ok)
		se_raise(err);
	return se_jsonb_from_text(r->body.data, r->body.len);
}

/*
 * update_by_query / delete_by_query (index, body, slices, conflicts,
 * scroll_size, max_docs, requests_per_second, refresh, wait_for_completion)
 */
static Datum
by_query_sql(FunctionCallInfo fcinfo, int kind)
{
	SeByQueryOptions o;
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_error_init(&err);
	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.index = opt_text(fcinfo, 0);
	if (o.index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("index must not be null"),
				 errdetail("action_request_validation_exception")));
	body = se_json_from_jsonb_arg(fcinfo, 1, &err);
	if (body == NULL && se_error_is_set(&err))
		se_raise(&err);
	o.slices = opt_text(fcinfo, 2);
	o.conflicts = opt_text(fcinfo, 3);
	o.scroll_size = PG_ARGISNULL(4) ? 1000 : PG_GETARG_INT32(4);
	o.max_docs_given = !PG_ARGISNULL(5);
	o.max_docs = o.max_docs_given ? PG_GETARG_INT64(5) : -1;
	o.requests_per_second = PG_ARGISNULL(6) ? -1 : PG_GETARG_FLOAT4(6);
	o.refresh = PG_ARGISNULL(7) ? false : PG_GETARG_BOOL(7);
	o.wait_for_completion = PG_ARGISNULL(8) ? true : PG_GETARG_BOOL(8);
	se_response_init(&r);
	return finish_json(se_op_by_query(&o, body, &r, &err), &r, &err);
}

PG_FUNCTION_INFO_V1(se_sql_update_by_query);
Datum
se_sql_update_by_query(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(by_query_sql(fcinfo, KIND_UPDATE));
}

PG_FUNCTION_INFO_V1(se_sql_delete_by_query);
Datum
se_sql_delete_by_query(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(by_query_sql(fcinfo, KIND_DELETE));
}

/* reindex(body, slices, requests_per_second, refresh, wait_for_completion) */
PG_FUNCTION_INFO_V1(se_sql_reindex);
Datum
se_sql_reindex(PG_FUNCTION_ARGS)
{
	SeByQueryOptions o;
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_error_init(&err);
	memset(&o, 0, sizeof(o));
	o.kind = KIND_REINDEX;
	body = se_json_from_jsonb_arg(fcinfo, 0, &err);
	if (body == NULL && se_error_is_set(&err))
		se_raise(&err);
	o.slices = opt_text(fcinfo, 1);
	o.requests_per_second = PG_ARGISNULL(2) ? -1 : PG_GETARG_FLOAT4(2);
	o.refresh = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	o.wait_for_completion = PG_ARGISNULL(4) ? true : PG_GETARG_BOOL(4);
	o.scroll_size = 1000;
	o.max_docs = -1;
	se_response_init(&r);
	PG_RETURN_DATUM(finish_json(se_op_by_query(&o, body, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_get_task);
Datum
se_sql_get_task(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_error_init(&err);
	se_response_init(&r);
	PG_RETURN_DATUM(finish_json(se_op_get_task(text_to_cstring(PG_GETARG_TEXT_PP(0)),
											   PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1),
											   &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_cancel_task);
Datum
se_sql_cancel_task(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_error_init(&err);
	se_response_init(&r);
	PG_RETURN_DATUM(finish_json(se_op_cancel_task(text_to_cstring(PG_GETARG_TEXT_PP(0)), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_rethrottle_task);
Datum
se_sql_rethrottle_task(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	float4		rps = PG_ARGISNULL(1) ? 0 : PG_GETARG_FLOAT4(1);

	se_error_init(&err);
	se_response_init(&r);
	PG_RETURN_DATUM(finish_json(se_op_rethrottle_task(text_to_cstring(PG_GETARG_TEXT_PP(0)),
													  PG_ARGISNULL(1) ? NULL : &rps,
													  &r, &err), &r, &err));
}

/* One row of the tasks view from a task-file JSON object. */
static void
tasks_row_from_json(ReturnSetInfo *rsinfo, const SeJson *root)
{
	Datum		values[17];
	bool		nulls[17];
	SeJson	   *task = se_json_get(root, "task");
	SeJson	   *status = task ? se_json_get(task, "status") : NULL;
	SeJson	   *completed = se_json_get(root, "completed");
	SeJson	   *v;
	bool		done = completed && completed->type == SE_JSON_TRUE;
	const char *state;
	static const char *counters[] = {"total", "updated", "created", "deleted", "batches",
	"version_conflicts", "noops"};
	int			i;
	StringInfoData b;

	if (task == NULL)
		return;
	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(psprintf("%s:" INT64_FORMAT, se_json_get(task, "node")->u.s.str,
											 se_json_get(task, "id")->u.n.i));
	values[1] = CStringGetTextDatum(se_json_get(task, "node")->u.s.str);
	values[2] = CStringGetTextDatum(se_json_get(task, "action")->u.s.str);
	if (!done)
		state = (v = se_json_get(task, "cancelled")) && v->type == SE_JSON_TRUE ? "cancelling" : "running";
	else if (se_json_get(root, "error"))
		state = "failed";
	else if ((v = se_json_get(root, "response")) && se_json_get(v, "canceled"))
		state = "cancelled";
	else if ((v = se_json_get(root, "response")) && se_json_get(v, "failures") &&
			 se_json_get(v, "failures")->u.a.count > 0)
		state = "failed";
	else
		state = "completed";
	values[3] = CStringGetTextDatum(state);
	{
		int64		ms = se_json_get(task, "start_time_in_millis")->u.n.i;
		int64		ns = se_json_get(task, "running_time_in_nanos")->u.n.i;

		values[4] = TimestampTzGetDatum((TimestampTz) (ms * 1000 -
													   ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400 * 1000000)));
		values[5] = DirectFunctionCall3(interval_in, CStringGetDatum(psprintf("%.3f seconds", ns / 1e9)),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	}
	/* finished tasks report their response's counters */
	if (done && (v = se_json_get(root, "response")) != NULL)
		status = v;
	for (i = 0; i < lengthof(counters); i++)
	{
		v = status ? se_json_get(status, counters[i]) : NULL;
		if (v && v->type == SE_JSON_NUMBER)
			values[6 + i] = Int64GetDatum(v->u.n.i);
		else
			nulls[6 + i] = true;
	}
	v = status ? se_json_get(status, "requests_per_second") : NULL;
	if (v && v->type == SE_JSON_NUMBER)
		values[13] = Float4GetDatum((float4) v->u.n.d);
	else
		nulls[13] = true;
	values[14] = BoolGetDatum(!done);
	v = status ? se_json_get(status, "slices") : NULL;
	if (v)
	{
		initStringInfo(&b);
		se_json_write(&b, v);
		values[15] = se_jsonb_from_text(b.data, b.len);
	}
	else
		nulls[15] = true;
	values[16] = CStringGetTextDatum(se_json_get(task, "description")->u.s.str);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The running tasks of the other nodes (a node that does not answer is
 * left out); their finished tasks stay in their nodes' files.
 */
static void
remote_running_rows(ReturnSetInfo *rsinfo)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	int			i;

	se_cluster_view(v);
	for (i = 0; i < v->nmembers && !v->single_node; i++)
	{
		SeResponse	r;
		SeError		e;
		SeJson	   *nodes;
		SeJson	   *tasks;
		SeJsonParseOptions opts = {0};
		int			k;

		if (strcmp(v->members[i].name, v->local_name) == 0)
			continue;
		se_response_init(&r);
		se_error_init(&e);
		/* the answer is the node's member of "nodes": make it an object */
		appendStringInfoChar(&r.body, '{');
		if (!forward_task_op(v->members[i].name, "list", NULL, 0, NULL, &r, &e))
			continue;
		appendStringInfoChar(&r.body, '}');
		nodes = se_json_parse(r.body.data, r.body.len, &opts, &e);
		tasks = nodes && nodes->u.o.count == 1 ?
			se_json_get(nodes->u.o.members[0].value, "tasks") : NULL;
		for (k = 0; tasks && tasks->type == SE_JSON_OBJECT && k < tasks->u.o.count; k++)
		{
			SeJson	   *root;
			StringInfoData b;

			initStringInfo(&b);
			appendStringInfoString(&b, "{\"completed\":false,\"task\":");
			se_json_write(&b, tasks->u.o.members[k].value);
			appendStringInfoChar(&b, '}');
			root = se_json_parse(b.data, b.len, &opts, &e);
			if (root)
				tasks_row_from_json(rsinfo, root);
		}
	}
}

PG_FUNCTION_INFO_V1(se_sql_tasks);
Datum
se_sql_tasks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			t;
	List	   *running = NIL;
	List	   *running_ids = NIL;
	char	   *dir;
	DIR		   *d;
	struct dirent *de;
	SeJsonParseOptions opts = {0};
	Oid			owners[SE_MAX_TASKS];
	bool		visible[SE_MAX_TASKS];

	se_require_started();
	InitMaterializedSRF(fcinfo, 0);
	visible_tasks(owners, visible);
	/* running tasks, live from shared memory */
	LWLockAcquire(&SeTasks->lock, LW_SHARED);
	for (t = 0; t < SE_MAX_TASKS; t++)
	{
		if (SeTasks->tasks[t].state == SE_TASK_RUNNING &&
			SeTasks->tasks[t].owner == owners[t] && visible[t])
		{
			StringInfoData b;
			SeError		err;
			SeJson	   *j;
			int64	   *idp = palloc(sizeof(int64));

			initStringInfo(&b);
			appendStringInfoString(&b, "{\"completed\":false,\"task\":");
			task_info_json(t, &b);
			appendStringInfoChar(&b, '}');
			se_error_init(&err);
			j = se_json_parse(b.data, b.len, &opts, &err);
			*idp = SeTasks->tasks[t].id;
			running_ids = lappend(running_ids, idp);
			if (j)
				running = lappend(running, j);
		}
	}
	LWLockRelease(&SeTasks->lock);
	{
		ListCell   *lc;

		foreach(lc, running)
			tasks_row_from_json(rsinfo, lfirst(lc));
	}
	remote_running_rows(rsinfo);
	/* finished ones from their files */
	dir = se_tasks_dir();
	d = AllocateDir(dir);
	while (d && (de = ReadDir(d, dir)) != NULL)
	{
		int64		id;
		char		tail;
		size_t		len;
		char	   *data;
		SeError		err;
		SeJson	   *root;
		ListCell   *lc;
		bool		live = false;

		if (sscanf(de->d_name, INT64_FORMAT ".jso%c", &id, &tail) != 2)
			continue;
		foreach(lc, running_ids)
			if (*(int64 *) lfirst(lc) == id)
				live = true;
		if (live)
			continue;
		data = se_file_read_all(psprintf("%s/%s", dir, de->d_name), &len, true);
		se_error_init(&err);
		root = data ? se_json_parse(data, len, &opts, &err) : NULL;
		if (root && se_json_get(root, "completed") &&
			se_json_get(root, "completed")->type == SE_JSON_TRUE &&
			se_acl_may_steer(stored_owner(root)))
			tasks_row_from_json(rsinfo, root);
	}
	if (d)
		FreeDir(d);
	return (Datum) 0;
}
