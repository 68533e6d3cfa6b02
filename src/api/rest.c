/*-------------------------------------------------------------------------
 *
 * rest.c
 *	  search_engine.request(method, path, body): the ES REST interface.
 *
 * Routes an ES REST call (path with query string, JSON or NDJSON body) to
 * the same se_op_* operations the typed SQL functions use, and returns the
 * HTTP status ES would answer with ES's response body.  ES-level errors
 * come back as ES error bodies, not as PostgreSQL errors.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "api/api.h"
#include "api/byquery.h"

#define MAX_PARTS 8

typedef struct RestReq
{
	const char *method;
	int			nparts;
	char	   *parts[MAX_PARTS];
	List	   *param_names;
	List	   *param_values;
	const char *body;
	size_t		body_len;
} RestReq;

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *
url_decode(const char *s, size_t len)
{
	char	   *out = palloc(len + 1);
	size_t		i,
				o = 0;

	for (i = 0; i < len; i++)
	{
		if (s[i] == '%' && i + 2 < len &&
			hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0)
		{
			out[o++] = (char) (hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		else if (s[i] == '+')
			out[o++] = ' ';
		else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return out;
}

static bool
parse_path(const char *path, RestReq *rq, SeError *err)
{
	const char *q = strchr(path, '?');
	size_t		plen = q ? (size_t) (q - path) : strlen(path);
	size_t		i = 0;

	rq->nparts = 0;
	while (i < plen)
	{
		size_t		start;

		while (i < plen && path[i] == '/')
			i++;
		if (i >= plen)
			break;
		start = i;
		while (i < plen && path[i] != '/')
			i++;
		if (rq->nparts == MAX_PARTS)
		{
			se_error_set(err, 400, "illegal_argument_exception", "path has too many parts");
			return false;
		}
		rq->parts[rq->nparts++] = url_decode(path + start, i - start);
	}
	if (q)
	{
		char	   *qs = pstrdup(q + 1);
		char	   *save = NULL;
		char	   *kv;

		for (kv = strtok_r(qs, "&", &save); kv; kv = strtok_r(NULL, "&", &save))
		{
			char	   *eq = strchr(kv, '=');

			if (eq)
			{
				rq->param_names = lappend(rq->param_names, url_decode(kv, eq - kv));
				rq->param_values = lappend(rq->param_values, url_decode(eq + 1, strlen(eq + 1)));
			}
			else
			{
				rq->param_names = lappend(rq->param_names, url_decode(kv, strlen(kv)));
				rq->param_values = lappend(rq->param_values, pstrdup(""));
			}
		}
	}
	return true;
}

static const char *
param(const RestReq *rq, const char *name)
{
	ListCell   *a,
			   *b;

	forboth(a, rq->param_names, b, rq->param_values)
		if (strcmp(lfirst(a), name) == 0)
		return lfirst(b);
	return NULL;
}

static bool
param_bool(const RestReq *rq, const char *name)
{
	const char *v = param(rq, name);

	return v != NULL && (v[0] == '\0' || strcmp(v, "true") == 0);
}

static int
param_int(const RestReq *rq, const char *name, int dflt)
{
	const char *v = param(rq, name);

	return v ? atoi(v) : dflt;
}

static bool
method_is(const RestReq *rq, const char *m)
{
	return pg_strcasecmp(rq->method, m) == 0;
}

/* Parse the JSON body (NULL when empty). */
static bool
json_body(const RestReq *rq, SeJson **out, SeError *err)
{
	SeJsonParseOptions opts = {0};
	size_t		i;

	*out = NULL;
	for (i = 0; i < rq->body_len; i++)
		if (!isspace((unsigned char) rq->body[i]))
			break;
	if (rq->body == NULL || i == rq->body_len)
		return true;
	opts.reject_duplicate_keys = true;
	*out = se_json_parse(rq->body, rq->body_len, &opts, err);
	return *out != NULL;
}

static bool
no_handler(const RestReq *rq, const char *path, SeResponse *r)
{
	r->status = 400;
	appendStringInfoString(&r->body, "{\"error\":");
	{
		char	   *msg = psprintf("no handler found for uri [%s] and method [%s]", path, rq->method);

		se_json_write_string(&r->body, msg, strlen(msg));
	}
	appendStringInfoString(&r->body, ",\"status\":400}");
	return true;
}

/* URL parameters of _update_by_query, _delete_by_query and _reindex. */
static void
by_query_options(const RestReq *rq, int kind, const char *index, SeByQueryOptions *o)
{
	const char *v;

	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->index = index;
	o->slices = param(rq, "slices");
	o->conflicts = param(rq, "conflicts");
	o->scroll_size = param_int(rq, "scroll_size", 1000);
	o->max_docs = (v = param(rq, "max_docs")) ? strtoll(v, NULL, 10) : -1;
	o->requests_per_second = (v = param(rq, "requests_per_second")) ? (float4) strtod(v, NULL) : -1;
	o->refresh = param_bool(rq, "refresh");
	o->wait_for_completion = !((v = param(rq, "wait_for_completion")) && strcmp(v, "false") == 0);
}

static bool
route(RestReq *rq, const char *path, SeResponse *r, SeError *err)
{
	int			n = rq->nparts;
	char	  **p = rq->parts;
	SeJson	   *body = NULL;
	const char *p0 = n > 0 ? p[0] : "";
	const char *p1 = n > 1 ? p[1] : "";

	if (n == 0)
	{
		if (method_is(rq, "GET") || method_is(rq, "HEAD"))
		{
			appendStringInfo(&r->body,
							 "{\"name\":\"%s\",\"cluster_name\":\"search_engine\",\"version\":{\"number\":\"8.11.0\",\"build_flavor\":\"default\",\"lucene_version\":\"9.8.0\",\"minimum_wire_compatibility_version\":\"7.17.0\",\"minimum_index_compatibility_version\":\"7.0.0\"},\"tagline\":\"You Know, for Search\"}",
							 se_node_name_get());
			return true;
		}
		return no_handler(rq, path, r);
	}

	/* ---- endpoints that start with "_" ---- */
	if (strcmp(p0, "_bulk") == 0 && n == 1 && (method_is(rq, "POST") || method_is(rq, "PUT")))
	{
		SeBulkOptions o;

		memset(&o, 0, sizeof(o));
		o.default_routing = param(rq, "routing");
		if (!se_parse_refresh(param(rq, "refresh"), &o.refresh, err))
			return false;
		o.require_alias = true; /* ES requires the final newline */
		return se_op_bulk(rq->body ? rq->body : "", rq->body_len, &o, r, err);
	}
	if (strcmp(p0, "_mget") == 0 && n == 1)
	{
		if (!json_body(rq, &body, err))
			return false;
		return se_op_mget(NULL, body, r, err);
	}
	if ((strcmp(p0, "_search") == 0 || strcmp(p0, "_count") == 0) && n == 1)
	{
		p1 = p0;
		p0 = "_all";
		goto index_search;
	}
	if (strcmp(p0, "_refresh") == 0 && n == 1)
		return se_op_refresh(NULL, r, err);
	if (strcmp(p0, "_reindex") == 0 && n == 1 && method_is(rq, "POST"))
	{
		SeByQueryOptions o;

		if (!json_body(rq, &body, err))
			return false;
		by_query_options(rq, 3, NULL, &o);
		return se_op_by_query(&o, body, r, err);
	}
	if ((strcmp(p0, "_update_by_query") == 0 || strcmp(p0, "_delete_by_query") == 0 ||
		 strcmp(p0, "_reindex") == 0) && n == 3 && strcmp(p[2], "_rethrottle") == 0)
	{
		const char *v = param(rq, "requests_per_second");

		return se_op_rethrottle_task(p1, v ? (float4) strtod(v, NULL) : -1, r, err);
	}
	if (strcmp(p0, "_tasks") == 0)
	{
		if (n == 1 && method_is(rq, "GET"))
			return se_op_list_tasks(param(rq, "actions"), r, err);
		if (n == 2 && method_is(rq, "GET"))
			return se_op_get_task(p1, param_bool(rq, "wait_for_completion"), r, err);
		if (n == 3 && strcmp(p[2], "_cancel") == 0 && method_is(rq, "POST"))
			return se_op_cancel_task(p1, r, err);
		return no_handler(rq, path, r);
	}
	if (strcmp(p0, "_flush") == 0 && n == 1)
		return se_op_flush(NULL, r, err);
	if (strcmp(p0, "_forcemerge") == 0 && n == 1)
		return se_op_force_merge(NULL, param_int(rq, "max_num_segments", 1), r, err);
	if (strcmp(p0, "_cat") == 0 && n >= 2 && method_is(rq, "GET"))
	{
		bool		json = param(rq, "format") && strcmp(param(rq, "format"), "json") == 0;
		bool		v = param_bool(rq, "v");

		if (strcmp(p1, "indices") == 0)
			return se_op_cat_indices(n > 2 ? p[2] : NULL, json, v, r, err);
		if (strcmp(p1, "thread_pool") == 0)
			return se_op_cat_thread_pool(json, v, r, err);
		if (strcmp(p1, "segments") == 0)
			return se_op_cat_segments(n > 2 ? p[2] : NULL, json, v, r, err);
		if (strcmp(p1, "shards") == 0)
			return se_op_cat_shards(n > 2 ? p[2] : NULL, json, v, r, err);
		return no_handler(rq, path, r);
	}
	if (strcmp(p0, "_cluster") == 0 && n >= 2 && strcmp(p1, "health") == 0)
	{
		const char *t = param(rq, "timeout");
		int			timeout = 30000;

		if (t)
		{
			timeout = atoi(t) * (strstr(t, "ms") ? 1 : 1000);
		}
		return se_op_cluster_health(n > 2 ? p[2] : NULL, param(rq, "wait_for_status"), timeout, r, err);
	}
	if (p0[0] == '_')
		return no_handler(rq, path, r);

	/* ---- /{index} ---- */
	if (n == 1)
	{
		if (method_is(rq, "PUT"))
		{
			if (!json_body(rq, &body, err))
				return false;
			return se_op_create_index(p0, body, r, err);
		}
		if (method_is(rq, "GET"))
			return se_op_get_index(p0, r, err);
		if (method_is(rq, "HEAD"))
		{
			r->status = se_op_index_exists(p0) ? 200 : 404;
			return true;
		}
		if (method_is(rq, "DELETE"))
			return se_op_delete_index(p0, r, err);
		return no_handler(rq, path, r);
	}

	if (strcmp(p1, "_mapping") == 0 && n == 2)
	{
		if (method_is(rq, "GET"))
			return se_op_get_mapping(p0, r, err);
		if (method_is(rq, "PUT") || method_is(rq, "POST"))
		{
			if (!json_body(rq, &body, err))
				return false;
			return se_op_put_mapping(p0, body, r, err);
		}
	}
	if (strcmp(p1, "_settings") == 0 && n == 2)
	{
		if (method_is(rq, "GET"))
			return se_op_get_settings(p0, r, err);
		if (method_is(rq, "PUT"))
		{
			if (!json_body(rq, &body, err))
				return false;
			return se_op_put_settings(p0, body, r, err);
		}
	}
	if ((strcmp(p1, "_open") == 0 || strcmp(p1, "_close") == 0) && n == 2 && method_is(rq, "POST"))
		return se_op_open_close(p0, strcmp(p1, "_close") == 0, r, err);
	if (strcmp(p1, "_refresh") == 0 && n == 2)
		return se_op_refresh(p0, r, err);
	if (strcmp(p1, "_flush") == 0 && n == 2)
		return se_op_flush(p0, r, err);
	if (strcmp(p1, "_forcemerge") == 0 && n == 2)
		return se_op_force_merge(p0, param_int(rq, "max_num_segments", 1), r, err);
	if ((strcmp(p1, "_update_by_query") == 0 || strcmp(p1, "_delete_by_query") == 0) && n == 2 &&
		method_is(rq, "POST"))
	{
		SeByQueryOptions o;

		if (!json_body(rq, &body, err))
			return false;
		by_query_options(rq, strcmp(p1, "_update_by_query") == 0 ? 1 : 2, p0, &o);
		return se_op_by_query(&o, body, r, err);
	}
	if (strcmp(p1, "_bulk") == 0 && n == 2 && (method_is(rq, "POST") || method_is(rq, "PUT")))
	{
		SeBulkOptions o;

		memset(&o, 0, sizeof(o));
		o.default_index = p0;
		o.default_routing = param(rq, "routing");
		if (!se_parse_refresh(param(rq, "refresh"), &o.refresh, err))
			return false;
		o.require_alias = true;
		return se_op_bulk(rq->body ? rq->body : "", rq->body_len, &o, r, err);
	}
	if (strcmp(p1, "_mget") == 0 && n == 2)
	{
		if (!json_body(rq, &body, err))
			return false;
		return se_op_mget(p0, body, r, err);
	}
	if ((strcmp(p1, "_search") == 0 || strcmp(p1, "_count") == 0) && n == 2)
	{
index_search:
		if (!json_body(rq, &body, err))
			return false;
		if (strcmp(p1, "_count") == 0)
			return se_op_count(p0, body, param(rq, "q"), NULL, r, err);
		{
			SeSearchParams sp;

			sp.from = param_int(rq, "from", -1);
			sp.size = param_int(rq, "size", -1);
			sp.q = param(rq, "q");
			sp.routing = param(rq, "routing");
			sp.track_total_hits = -2;
			return se_op_search(p0, body, &sp, r, err);
		}
	}
	if (strcmp(p1, "_doc") == 0 || strcmp(p1, "_create") == 0 || strcmp(p1, "_update") == 0 ||
		strcmp(p1, "_source") == 0)
	{
		const char *id = n > 2 ? p[2] : NULL;
		SeDocWrite	w;

		if (n > 3)
			return no_handler(rq, path, r);
		memset(&w, 0, sizeof(w));
		w.index = p0;
		w.id = id;
		w.routing = param(rq, "routing");
		w.if_seq_no = param(rq, "if_seq_no") ? strtoll(param(rq, "if_seq_no"), NULL, 10) : -1;
		w.if_primary_term = param(rq, "if_primary_term") ? strtoll(param(rq, "if_primary_term"), NULL, 10) : 0;
		if (!se_parse_refresh(param(rq, "refresh"), &w.refresh, err))
			return false;
		w.body = rq->body;
		w.body_len = rq->body_len;

		if (strcmp(p1, "_source") == 0 && id && method_is(rq, "GET"))
			return se_op_get(p0, id, w.routing, NULL, true, r, err);
		if (strcmp(p1, "_doc") == 0 && id && (method_is(rq, "GET") || method_is(rq, "HEAD")))
		{
			SeJson	   *sf = NULL;

			if (param(rq, "_source") && strcmp(param(rq, "_source"), "false") == 0)
				sf = se_json_make_bool(false);
			if (!se_op_get(p0, id, w.routing, sf, false, r, err))
				return false;
			if (method_is(rq, "HEAD"))
				resetStringInfo(&r->body);
			return true;
		}
		if (strcmp(p1, "_doc") == 0 && id && method_is(rq, "DELETE"))
		{
			w.op = "delete";
			w.body = NULL;
			w.body_len = 0;
			if (!se_op_doc_write(&w, r, err))
			{
				/* ES answers a missing doc delete with the item body and 404 */
				return false;
			}
			return true;
		}
		if (!method_is(rq, "PUT") && !method_is(rq, "POST"))
			return no_handler(rq, path, r);
		if (rq->body == NULL || rq->body_len == 0)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: source is missing;");
			return false;
		}
		if (strcmp(p1, "_update") == 0)
		{
			if (id == NULL)
				return no_handler(rq, path, r);
			w.op = "update";
		}
		else if (strcmp(p1, "_create") == 0)
		{
			if (id == NULL)
				return no_handler(rq, path, r);
			w.op = "create";
		}
		else
		{
			if (id == NULL && method_is(rq, "PUT"))
				return no_handler(rq, path, r);
			w.op = param(rq, "op_type") ? param(rq, "op_type") : "index";
		}
		return se_op_doc_write(&w, r, err);
	}
	return no_handler(rq, path, r);
}

PG_FUNCTION_INFO_V1(se_sql_request);
Datum
se_sql_request(PG_FUNCTION_ARGS)
{
	RestReq		rq;
	SeResponse	r;
	SeError		err;
	char	   *path;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	bool		ok;
	text	   *body = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("method and path must not be null")));
	memset(&rq, 0, sizeof(rq));
	rq.method = text_to_cstring(PG_GETARG_TEXT_PP(0));
	path = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (body)
	{
		rq.body = VARDATA_ANY(body);
		rq.body_len = VARSIZE_ANY_EXHDR(body);
	}
	se_response_init(&r);
	se_error_init(&err);
	ok = parse_path(path, &rq, &err) && route(&rq, path, &r, &err);
	if (!ok)
	{
		if (!se_error_is_set(&err))
			se_error_set(&err, 500, "exception", "request failed");
		r.status = err.status;
		resetStringInfo(&r.body);
		se_error_body(&err, &r.body);
		r.is_text = false;
		r.jsonb = NULL;
	}
	values[0] = Int32GetDatum(r.status);
	if (pg_strcasecmp(rq.method, "HEAD") == 0 ||
		(r.body.len == 0 && !r.is_text && r.jsonb == NULL))
		nulls[1] = true;
	else if (r.is_text)
	{
		StringInfoData s;

		initStringInfo(&s);
		se_json_write_string(&s, r.body.data, r.body.len);
		values[1] = se_jsonb_from_text(s.data, s.len);
	}
	else
		values[1] = se_response_jsonb(&r);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
