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
 * One table lists the routes as ES registers them (methods, path pattern,
 * handler), so a known path asked with a method it does not take answers
 * ES's 405 and the methods it takes, from the table, for every route.
 *
 * URL parameters are read as ES's RestRequest reads them: integers whole
 * and in range (param_integer), time values with a unit; anything else is
 * ES's 400 naming the parameter, never a silent 0 or a wrapped number.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "api/api.h"
#include "api/filter_path.h"
#include "api/byquery.h"
#include "cluster/coordinator.h"
#include "search/search.h"
#include "util/units.h"

#define MAX_PARTS 8

/* HTTP methods in the order of ES's RestRequest.Method, the order 405 lists */
typedef enum RestMethod
{
	M_GET,
	M_POST,
	M_PUT,
	M_DELETE,
	M_OPTIONS,
	M_HEAD,
	M_PATCH,
	M_TRACE,
	M_CONNECT,
	M_UNKNOWN					/* not an HTTP method ES knows */
} RestMethod;

static const char *const method_names[M_UNKNOWN] = {
	"GET", "POST", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE", "CONNECT"
};

/* method sets of the route table */
#define GET		(1 << M_GET)
#define POST	(1 << M_POST)
#define PUT		(1 << M_PUT)
#define DELETE	(1 << M_DELETE)
#define HEAD	(1 << M_HEAD)

typedef struct RestReq
{
	const char *method_text;	/* as the caller wrote it */
	RestMethod	method;
	int			nparts;
	char	   *parts[MAX_PARTS];
	List	   *param_names;
	List	   *param_values;
	const char *body;
	size_t		body_len;
	/* the {index}, {id} and {task_id} parts of the route that matched */
	const char *index;
	const char *id;
	const char *task_id;
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

/*
 * Split the path into decoded parts and the query string into parameters.
 * A %00 is refused: every name, id, routing value and task id is a C
 * string from here on, and a NUL would cut it short -- the request would
 * act on another name than the one it sent.
 */
static bool
parse_path(const char *path, RestReq *rq, SeError *err)
{
	const char *q = strchr(path, '?');
	size_t		plen = q ? (size_t) (q - path) : strlen(path);
	size_t		i = 0;

	if (strstr(path, "%00") != NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "uri [%s] must not contain a NUL byte (%%00)", path);
		return false;
	}
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

/*
 * A boolean URL parameter as ES's paramAsBoolean reads it: absent is dflt,
 * empty is true, anything but true/false is a 400.
 */
static bool
param_boolean(const RestReq *rq, const char *name, bool dflt, bool *out, SeError *err)
{
	const char *v = param(rq, name);

	if (v == NULL)
	{
		*out = dflt;
		return true;
	}
	return se_parse_es_boolean(v, out, err);
}

/*
 * An integer URL parameter, read as ES's paramAsInt / paramAsLong read it
 * (Java's parseInt / parseLong): an optional sign and decimal digits, in
 * the type's range; anything else is a 400 naming the parameter.  *out is
 * dflt when the parameter is absent.
 */
static bool
param_integer(const RestReq *rq, const char *name, bool is_long, int64 dflt,
			  int64 *out, SeError *err)
{
	const char *v = param(rq, name);
	const char *p = v;
	int64		n = 0;
	bool		neg;

	if (v == NULL)
	{
		*out = dflt;
		return true;
	}
	neg = (*p == '-');
	if (*p == '-' || *p == '+')
		p++;
	if (*p == '\0')
		goto bad;
	/* accumulate negatively: -9223372036854775808 is a long */
	for (; *p; p++)
		if (!isdigit((unsigned char) *p) ||
			pg_mul_s64_overflow(n, 10, &n) || pg_sub_s64_overflow(n, *p - '0', &n))
			goto bad;
	if (!neg && pg_sub_s64_overflow(0, n, &n))
		goto bad;
	if (!is_long && (n < PG_INT32_MIN || n > PG_INT32_MAX))
		goto bad;
	*out = n;
	return true;

bad:
	se_error_set(err, 400, "illegal_argument_exception",
				 "Failed to parse %s parameter [%s] with value [%s]",
				 is_long ? "long" : "int", name, v);
	return false;
}

static bool
param_int(const RestReq *rq, const char *name, int dflt, int *out, SeError *err)
{
	int64		n;

	if (!param_integer(rq, name, false, dflt, &n, err))
		return false;
	*out = (int) n;
	return true;
}

/*
 * A float URL parameter (requests_per_second): the whole value must be a
 * number; NaN when absent or not a number, which the operation refuses
 * with ES's message for the parameter.
 */
static float4
param_float(const RestReq *rq, const char *name)
{
	const char *v = param(rq, name);
	char	   *end;
	double		d;

	if (v == NULL || *v == '\0' || isspace((unsigned char) *v))
		return get_float4_nan();
	d = strtod(v, &end);
	return *end == '\0' ? (float4) d : get_float4_nan();
}

/* s without its leading and trailing white space, as Java's trim; in place */
static char *
trim(char *s)
{
	size_t		len;

	while (isspace((unsigned char) *s))
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char) s[len - 1]))
		s[--len] = '\0';
	return s;
}

/*
 * A time value as ES's TimeValue.parseTimeValue reads a URL parameter:
 * lower-cased and trimmed, a whole number (Java's parseLong) with a unit
 * (nanos, micros, ms, s, m, h, d), or exactly "-1" or "0".  In
 * milliseconds, a sub-millisecond value rounded up (it still limits);
 * -1 for "-1" with or without a unit.
 */
bool
se_rest_time_value(const char *name, const char *v, int64 *ms, SeError *err)
{
	static const struct
	{
		const char *unit;
		int64		num;		/* value * num / den milliseconds */
		int64		den;
	}			units[] = {
		{"nanos", 1, 1000000}, {"micros", 1, 1000}, {"ms", 1, 1}, {"s", 1000, 1},
		{"m", 60000, 1}, {"h", 3600000, 1}, {"d", 86400000, 1}
	};
	char	   *t = pstrdup(v);
	size_t		len;
	int			i;

	for (len = 0; t[len]; len++)
		t[len] = pg_ascii_tolower((unsigned char) t[len]);
	t = trim(t);
	len = strlen(t);
	for (i = 0; i < lengthof(units); i++)
	{
		size_t		ul = strlen(units[i].unit);
		char	   *num;
		char	   *end;
		int64		n;

		/* "ms" also ends in "s": the table has it first */
		if (len < ul || strcmp(t + len - ul, units[i].unit) != 0)
			continue;
		num = trim(pnstrdup(t, len - ul));
		errno = 0;
		n = strtoi64(num, &end, 10);
		if (num[0] == '\0' || *end != '\0' || errno == ERANGE)
		{
			bool		fractional = num[0] != '\0' && (strtod(num, &end), *end == '\0');

			se_error_set(err, 400, "illegal_argument_exception", "failed to parse [%s]%s", v,
						 fractional ? ", fractional time values are not supported" : "");
			return false;
		}
		if (n < -1)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "failed to parse setting [%s] with value [%s] as a time value: negative durations are not supported",
						 name, v);
			return false;
		}
		if (n == -1)
			*ms = -1;
		else if (n > PG_INT64_MAX / units[i].num)
			*ms = PG_INT64_MAX;
		else
			*ms = (n * units[i].num + units[i].den - 1) / units[i].den;
		return true;
	}
	if (strcmp(t, "0") == 0 || strcmp(t, "-1") == 0)
	{
		*ms = t[0] == '0' ? 0 : -1;
		return true;
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "failed to parse setting [%s] with value [%s] as a time value: unit is missing or unrecognized",
				 name, v);
	return false;
}

/* A time URL parameter in whole milliseconds up to INT_MAX ("-1": INT_MAX). */
static bool
param_time_ms(const RestReq *rq, const char *name, int dflt, int *out, SeError *err)
{
	const char *v = param(rq, name);
	int64		ms;

	if (v == NULL)
	{
		*out = dflt;
		return true;
	}
	if (!se_rest_time_value(name, v, &ms, err))
		return false;
	*out = ms < 0 ? PG_INT32_MAX : (int) Min(ms, PG_INT32_MAX);
	return true;
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

/*
 * The URL's q (with df, default_operator, analyzer, lenient and
 * analyze_wildcard) as ES reads it: a query_string query that takes the
 * place of the body's query; the rest of the body stays.
 */
static bool
uri_query(const RestReq *rq, SeJson **body, SeError *err)
{
	static const char *const opts[][2] = {
		{"df", "default_field"}, {"default_operator", "default_operator"},
		{"analyzer", "analyzer"}, {"lenient", "lenient"},
		{"analyze_wildcard", "analyze_wildcard"},
	};
	const char *q = param(rq, "q");
	SeJsonParseOptions popts = {0};
	StringInfoData b;
	int			i;

	if (q == NULL)
		return true;
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":{\"query_string\":{\"query\":");
	se_json_write_string(&b, q, -1);
	for (i = 0; i < lengthof(opts); i++)
	{
		const char *v = param(rq, opts[i][0]);

		if (v == NULL)
			continue;
		appendStringInfo(&b, ",\"%s\":", opts[i][1]);
		se_json_write_string(&b, v, -1);
	}
	appendStringInfoString(&b, "}}");
	if (*body != NULL && (*body)->type == SE_JSON_OBJECT)
	{
		for (i = 0; i < (*body)->u.o.count; i++)
		{
			const SeJsonMember *m = &(*body)->u.o.members[i];

			if (strcmp(m->key, "query") == 0)
				continue;
			appendStringInfoChar(&b, ',');
			se_json_write_string(&b, m->key, m->keylen);
			appendStringInfoChar(&b, ':');
			se_json_write(&b, m->value);
		}
	}
	appendStringInfoChar(&b, '}');
	*body = se_json_parse(b.data, b.len, &popts, err);
	return *body != NULL;
}

/* ---------------------------------------------------------------------
 * Handlers: one per operation, reading the matched route's parts.
 * ---------------------------------------------------------------------
 */
/*
 * GET /: what clients read to tell they talk to Elasticsearch (the Python
 * and Node clients' product check, curator's and the exporter's version
 * parse).
 */
static bool
h_main(RestReq *rq, SeResponse *r, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeEsVersion ver;

	se_cluster_view(v);
	se_es_version(&ver);
	appendStringInfoString(&r->body, "{\"name\":");
	se_json_write_string(&r->body, se_node_name_get(), -1);
	appendStringInfoString(&r->body, ",\"cluster_name\":");
	se_json_write_string(&r->body, v->cluster_name, -1);
	/* ES answers _na_ until the cluster has its uuid */
	appendStringInfoString(&r->body, ",\"cluster_uuid\":");
	se_json_write_string(&r->body, v->cluster_uuid[0] ? v->cluster_uuid : "_na_", -1);
	appendStringInfoString(&r->body, ",\"version\":{\"number\":");
	se_json_write_string(&r->body, ver.number, -1);
	appendStringInfoString(&r->body, ",\"build_flavor\":\"default\",\"build_type\":\"deb\","
						   "\"build_hash\":\"search_engine-" SE_EXTENSION_VERSION "\",\"build_date\":");
	se_json_write_string(&r->body, se_es_build_date(), -1);
	appendStringInfo(&r->body, ",\"build_snapshot\":false,\"lucene_version\":\"%s\","
					 "\"minimum_wire_compatibility_version\":\"%s\","
					 "\"minimum_index_compatibility_version\":\"%s\"},"
					 "\"tagline\":\"You Know, for Search\"}", ver.lucene, ver.wire, ver.index);
	return true;
}

/* wait_for_active_shards=N|all (default 1, the primary); all = -1 */
static bool
param_active_shards(const RestReq *rq, int *wait, SeError *err)
{
	const char *w = param(rq, "wait_for_active_shards");

	*wait = 1;
	if (w && strcmp(w, "all") == 0)
		*wait = -1;
	else if (w && !param_int(rq, "wait_for_active_shards", 1, wait, err))
		return false;
	if (*wait < -1)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "shard count cannot be a negative value");
		return false;
	}
	return true;
}

static bool
h_bulk(RestReq *rq, SeResponse *r, SeError *err)
{
	SeBulkOptions o;

	memset(&o, 0, sizeof(o));
	o.default_index = rq->index;
	o.default_routing = param(rq, "routing");
	if (!se_parse_refresh(param(rq, "refresh"), &o.refresh, err))
		return false;
	o.require_alias = true;		/* ES requires the final newline */
	if (!param_boolean(rq, "require_alias", false, &o.url_require_alias, err))
		return false;
	/* ES's bulk: wait_for_active_shards before writing, within timeout (1m) */
	if (!param_active_shards(rq, &o.wait_for_active_shards, err) ||
		!param_time_ms(rq, "timeout", 60000, &o.timeout_ms, err))
		return false;
	return se_op_bulk(rq->body ? rq->body : "", rq->body_len, &o, r, err);
}

/* ES's SearchSourceBuilder refuses a negative from or size */
static bool
negative_param(const char *name, int v, SeError *err)
{
	se_error_set(err, 400, "illegal_argument_exception",
				 "[%s] parameter cannot be negative, found [%d]", name, v);
	return false;
}

/* A search of body with the URL's options (_search, _search/template). */
static bool
search_with_body(RestReq *rq, SeJson *body, SeResponse *r, SeError *err)
{
	SeSearchParams sp;

	memset(&sp, 0, sizeof(sp));
	if (!param_int(rq, "from", -1, &sp.from, err) ||
		!param_int(rq, "size", -1, &sp.size, err))
		return false;
	/* -1 stands for "not given": a negative value given is ES's 400 */
	if (param(rq, "from") && sp.from < 0)
		return negative_param("from", sp.from, err);
	if (param(rq, "size") && sp.size < 0)
		return negative_param("size", sp.size, err);
	sp.routing = param(rq, "routing");
	sp.track_total_hits = -2;
	sp.timeout = param(rq, "timeout");
	sp.search_type = param(rq, "search_type");
	sp.preference = param(rq, "preference");
	/* ES: only true sets it (the body's stays otherwise) */
	sp.seq_no_primary_term = param_bool(rq, "seq_no_primary_term");
	sp.scroll = param(rq, "scroll");
	sp.source = param(rq, "_source");
	sp.source_includes = param(rq, "_source_includes");
	sp.source_excludes = param(rq, "_source_excludes");
	sp.version = param_bool(rq, "version");
	sp.rest_total_hits_as_int = param_bool(rq, "rest_total_hits_as_int");
	sp.typed_keys = param_bool(rq, "typed_keys");
	if (body && se_json_get(body, "pit") != NULL)
	{
		/* a point in time names its shards */
		if (rq->index)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: [indices] cannot be used with point in time. Do not specify any index with point in time.;");
			return false;
		}
		if (sp.scroll == NULL)
			return se_search_exec(NULL, body, &sp, NULL, r, err);
	}
	return se_op_search(rq->index ? rq->index : "_all", body, &sp, r, err);
}

static bool
h_search(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	return json_body(rq, &body, err) && uri_query(rq, &body, err) &&
		search_with_body(rq, body, r, err);
}

/* _search/template: the rendered template searched as _search would */
static bool
h_search_template(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	if (!json_body(rq, &body, err))
		return false;
	if (body == NULL)
	{
		se_error_set(err, 400, "parse_exception", "request body is required");
		return false;
	}
	se_require_started();
	return (body = se_search_template_body(body, err)) != NULL &&
		search_with_body(rq, body, r, err);
}

/* _render/template[/{id}] */
static bool
h_render_template(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	return json_body(rq, &body, err) &&
		se_op_render_template(body, rq->nparts > 2 ? rq->parts[2] : NULL, r, err);
}

/* POST /{index}/_pit?keep_alive= */
static bool
h_open_pit(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_open_pit(rq->index, param(rq, "keep_alive"), param(rq, "routing"),
						  param(rq, "preference"), r, err);
}

/* DELETE /_pit {"id": ...} */
static bool
h_close_pit(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	return json_body(rq, &body, err) && se_op_close_pit(body, r, err);
}

/*
 * _search/scroll: the next page (GET/POST: body {"scroll", "scroll_id"}
 * or URL parameters, the id also in the path), or freeing scrolls (DELETE).
 */
static bool
h_scroll(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;
	const SeJson *v;
	const char *id = rq->id ? rq->id : param(rq, "scroll_id");
	const char *scroll = param(rq, "scroll");

	if (!json_body(rq, &body, err))
		return false;
	if (rq->method == M_DELETE)
		return se_op_scroll_clear(body ? se_json_get(body, "scroll_id") : NULL, id, r, err);
	if (body && (v = se_json_get(body, "scroll_id")) != NULL && v->type == SE_JSON_STRING)
		id = v->u.s.str;
	if (body && (v = se_json_get(body, "scroll")) != NULL && v->type == SE_JSON_STRING)
		scroll = v->u.s.str;
	return se_op_scroll_next(id, scroll, param_bool(rq, "rest_total_hits_as_int"),
							 param_bool(rq, "typed_keys"), r, err);
}

/*
 * _msearch and _msearch/template: NDJSON of header and body lines; URL
 * options apply to each
 */
static bool
h_msearch(RestReq *rq, SeResponse *r, SeError *err)
{
	SeSearchParams sp;

	memset(&sp, 0, sizeof(sp));
	sp.from = sp.size = -1;
	sp.track_total_hits = -2;
	sp.search_type = param(rq, "search_type");
	sp.rest_total_hits_as_int = param_bool(rq, "rest_total_hits_as_int");
	sp.typed_keys = param_bool(rq, "typed_keys");
	if (rq->nparts > 0 && strcmp(rq->parts[rq->nparts - 1], "template") == 0)
		return se_op_msearch_template(rq->index, rq->body ? rq->body : "", rq->body_len,
									  &sp, r, err);
	return se_op_msearch(rq->index, rq->body ? rq->body : "", rq->body_len, &sp, r, err);
}

static bool
h_count(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	if (!json_body(rq, &body, err) || !uri_query(rq, &body, err))
		return false;
	return se_op_count(rq->index ? rq->index : "_all", body,
					   param(rq, "preference"), NULL, r, err);
}

static bool
h_forcemerge(RestReq *rq, SeResponse *r, SeError *err)
{
	int			max_num_segments;

	return param_int(rq, "max_num_segments", 1, &max_num_segments, err) &&
		se_op_force_merge(rq->index, max_num_segments, r, err);
}

/* _update_by_query, _delete_by_query (the last part names which) and _reindex */
static bool
h_by_query(RestReq *rq, SeResponse *r, SeError *err)
{
	const char *what = rq->parts[rq->nparts - 1];
	SeByQueryOptions o;
	SeJson	   *body;
	const char *v;

	memset(&o, 0, sizeof(o));
	if (!json_body(rq, &body, err) ||
		(strcmp(what, "_reindex") != 0 && !uri_query(rq, &body, err)) ||
		!param_int(rq, "scroll_size", 1000, &o.scroll_size, err) ||
		!param_integer(rq, "max_docs", false, -1, &o.max_docs, err))
		return false;
	o.max_docs_given = param(rq, "max_docs") != NULL;
	o.kind = strcmp(what, "_update_by_query") == 0 ? 1 :
		strcmp(what, "_delete_by_query") == 0 ? 2 : 3;
	o.index = rq->index;
	o.slices = param(rq, "slices");
	o.conflicts = param(rq, "conflicts");
	o.requests_per_second = param(rq, "requests_per_second") ?
		param_float(rq, "requests_per_second") : -1;
	/* by-query takes a boolean refresh only (no wait_for), as ES's */
	if (!param_boolean(rq, "refresh", false, &o.refresh, err))
		return false;
	o.wait_for_completion = !((v = param(rq, "wait_for_completion")) && strcmp(v, "false") == 0);
	return se_op_by_query(&o, body, r, err);
}

static bool
h_rethrottle(RestReq *rq, SeResponse *r, SeError *err)
{
	float4		rps = param_float(rq, "requests_per_second");

	return se_op_rethrottle_task(rq->task_id, param(rq, "requests_per_second") ? &rps : NULL,
								 r, err);
}

static bool
h_tasks_list(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_list_tasks(param(rq, "actions"), r, err);
}

static bool
h_task_get(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_get_task(rq->task_id, param_bool(rq, "wait_for_completion"), r, err);
}

static bool
h_task_cancel(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_cancel_task(rq->task_id, r, err);
}

/* _cat/{indices,segments,shards,recovery,thread_pool}[/{index}], _cat/{nodes,master} */
/*
 * The aliases API: POST /_aliases, GET|HEAD /_alias[/{name}],
 * {index}/_alias[/{name}] (GET, HEAD, PUT, POST, DELETE) and _aliases/{name}.
 */
static bool
h_alias(RestReq *rq, SeResponse *r, SeError *err)
{
	bool		global = rq->index == NULL;
	const char *name = rq->nparts > (global ? 1 : 2) ? rq->parts[global ? 1 : 2] : NULL;
	SeJson	   *body;

	if (global && rq->method == M_POST)
		return json_body(rq, &body, err) && se_op_update_aliases(body, r, err);
	if (rq->method == M_GET || rq->method == M_HEAD)
		return se_op_get_alias(rq->index, name, rq->method == M_HEAD, r, err);
	if (rq->method == M_DELETE)
		return se_op_delete_alias(rq->index, name, r, err);
	return json_body(rq, &body, err) && se_op_put_alias(rq->index, name, body, r, err);
}

static bool
h_cat(RestReq *rq, SeResponse *r, SeError *err)
{
	const char *what = rq->parts[1];
	const char *format = param(rq, "format");
	SeCatParams p;

	/* ES's binary formats (smile, cbor) are not served; yaml is written from json */
	if (format && strcmp(format, "json") != 0 && strcmp(format, "text") != 0 &&
		strcmp(format, "yaml") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "format [%s] is not supported: use json, yaml or text", format);
		return false;
	}
	p.json = format && (strcmp(format, "json") == 0 || strcmp(format, "yaml") == 0);
	p.v = param_bool(rq, "v");
	p.h = param(rq, "h");
	p.full_id = param_bool(rq, "full_id");
	p.bytes = param(rq, "bytes");
	p.s = param(rq, "s");
	p.help = param_bool(rq, "help");
	if (p.bytes && !se_cat_bytes_unit_valid(p.bytes))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "failed to parse setting [bytes] with value [%s] as a size in bytes: unit is missing or unrecognized",
					 p.bytes);
		return false;
	}
	if (strcmp(what, "aliases") == 0)
		return se_op_cat_aliases(rq->nparts > 2 ? rq->parts[2] : NULL, &p, r, err);
	if (strcmp(what, "indices") == 0)
		return se_op_cat_indices(rq->index, &p, r, err);
	if (strcmp(what, "segments") == 0)
		return se_op_cat_segments(rq->index, &p, r, err);
	if (strcmp(what, "shards") == 0)
		return se_op_cat_shards(rq->index, &p, r, err);
	if (strcmp(what, "nodes") == 0)
		return se_op_cat_nodes(&p, r, err);
	if (strcmp(what, "allocation") == 0)
		return se_op_cat_allocation(&p, r, err);
	if (strcmp(what, "master") == 0)
		return se_op_cat_master(&p, r, err);
	if (strcmp(what, "health") == 0)
		return se_op_cat_health(&p, r, err);
	if (strcmp(what, "count") == 0)
		return se_op_cat_count(rq->index, &p, r, err);
	if (strcmp(what, "recovery") == 0)
		return se_op_cat_recovery(rq->index, &p, r, err);
	if (strcmp(what, "templates") == 0)
		return se_op_cat_templates(rq->nparts > 2 ? rq->parts[2] : NULL, &p, r, err);
	return se_op_cat_thread_pool(&p, r, err);
}

static int	route_count(void);
static const char *route_path(int i);

/* GET /_cat: ES's "=^.^=" and the _cat endpoints served, from the route table */
static bool
h_cat_list(RestReq *rq, SeResponse *r, SeError *err)
{
	int			i;

	appendStringInfoString(&r->body, "=^.^=\n");
	for (i = 0; i < route_count(); i++)
		if (strncmp(route_path(i), "/_cat/", 6) == 0)
			appendStringInfo(&r->body, "%s\n", route_path(i));
	r->is_text = true;
	return true;
}

/* _index_template, _component_template, _template [/{name}] */
static bool
h_template(RestReq *rq, SeResponse *r, SeError *err)
{
	SeTemplateKind kind = strcmp(rq->parts[0], "_index_template") == 0 ? SE_TEMPLATE_INDEX :
		strcmp(rq->parts[0], "_component_template") == 0 ? SE_TEMPLATE_COMPONENT : SE_TEMPLATE_LEGACY;
	const char *name = rq->nparts > 1 ? rq->parts[1] : NULL;
	SeJson	   *body;

	if (rq->method == M_PUT || rq->method == M_POST)
		return json_body(rq, &body, err) &&
			se_op_template_put(kind, name, body, param_bool(rq, "create"), r, err);
	if (rq->method == M_DELETE)
		return se_op_template_delete(kind, name, r, err);
	return se_op_template_get(kind, name, r, err);
}

/* _scripts/{id}: stored scripts */
static bool
h_script(RestReq *rq, SeResponse *r, SeError *err)
{
	const char *id = rq->parts[1];
	SeJson	   *body;

	if (rq->method == M_PUT || rq->method == M_POST)
		return json_body(rq, &body, err) && se_op_script_put(id, body, r, err);
	if (rq->method == M_DELETE)
		return se_op_script_delete(id, r, err);
	return se_op_script_get(id, r, err);
}

static bool
h_simulate_index(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_simulate_index(rq->index, r, err);
}

/* _cluster/state[/{metrics}] */
static bool
h_cluster_state(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_cluster_state_of(rq->nparts > 2 ? rq->parts[2] : NULL,
								  rq->nparts > 3 ? rq->parts[3] : NULL, r, err);
}

/* _nodes/stats[/{metric}], _nodes/{node_id}/stats[/{metric}] */
static bool
h_nodes_stats(RestReq *rq, SeResponse *r, SeError *err)
{
	bool		all_nodes = strcmp(rq->parts[1], "stats") == 0;
	const char *nodes = all_nodes ? NULL : rq->parts[1];
	int			at = all_nodes ? 2 : 3;
	int			timeout;

	return param_time_ms(rq, "timeout", 30000, &timeout, err) &&
		se_op_nodes_stats(nodes, rq->nparts > at ? rq->parts[at] : NULL, timeout, r, err);
}

/* _nodes, _nodes/{node_id}: what each node is */
static bool
h_nodes_info(RestReq *rq, SeResponse *r, SeError *err)
{
	int			timeout;

	return param_time_ms(rq, "timeout", 30000, &timeout, err) &&
		se_op_nodes_info(rq->nparts > 1 ? rq->parts[1] : NULL, timeout, r, err);
}

/* _stats[/{metric}], /{index}/_stats[/{metric}]?level=cluster|indices|shards */
static bool
h_stats(RestReq *rq, SeResponse *r, SeError *err)
{
	const char *last = rq->parts[rq->nparts - 1];

	return se_op_stats(rq->index, strcmp(last, "_stats") == 0 ? NULL : last,
					   param(rq, "level"), r, err);
}

/* PUT /{index}?wait_for_active_shards=N|all&timeout=T */
static bool
h_create_index(RestReq *rq, SeResponse *r, SeError *err)
{
	int			wait;
	int			timeout;
	SeJson	   *body;

	if (!param_active_shards(rq, &wait, err))
		return false;
	return param_time_ms(rq, "timeout", 30000, &timeout, err) &&
		json_body(rq, &body, err) &&
		se_op_create_index_wait(rq->index, body, wait, timeout, r, err);
}

static bool
h_cluster_health(RestReq *rq, SeResponse *r, SeError *err)
{
	int			timeout;
	SeHealthWait w = {0};
	const char *nodes = param(rq, "wait_for_nodes");
	const char *active = param(rq, "wait_for_active_shards");

	w.level = param(rq, "level");
	if (nodes && !se_parse_wait_for_nodes(nodes, &w.nodes_op, &w.nodes, err))
		return false;
	if (active && strcmp(active, "all") == 0)
		w.active_shards = -1;
	else if (active && !param_int(rq, "wait_for_active_shards", 0, &w.active_shards, err))
		return false;
	return param_time_ms(rq, "timeout", 30000, &timeout, err) &&
		param_time_ms(rq, "master_timeout", 30000, &w.master_timeout_ms, err) &&
		(w.master_timeout_ms = Max(w.master_timeout_ms, 1)) > 0 &&
		se_parse_health_status(param(rq, "wait_for_status"), &w.wait_for_status, err) &&
		se_op_cluster_health(rq->index, &w, timeout, r, err);
}

static bool
h_cluster_settings(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	if (rq->method == M_GET)
		return se_op_cluster_settings_get(param_bool(rq, "flat_settings"),
										  param_bool(rq, "include_defaults"), r, err);
	return json_body(rq, &body, err) && se_op_cluster_settings_put(body, r, err);
}

static bool
h_cluster_reroute(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body = NULL;

	return json_body(rq, &body, err) &&
		se_op_cluster_reroute(body, param_bool(rq, "dry_run"), param_bool(rq, "explain"),
							  param_bool(rq, "retry_failed"), r, err);
}

static bool
h_allocation_explain(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body = NULL;

	return (rq->body == NULL || json_body(rq, &body, err)) &&
		se_op_allocation_explain(body, param_bool(rq, "include_yes_decisions"), r, err);
}

static bool
h_index_exists(RestReq *rq, SeResponse *r, SeError *err)
{
	r->status = se_op_index_exists(rq->index) ? 200 : 404;
	return true;
}

static bool
h_open_close(RestReq *rq, SeResponse *r, SeError *err)
{
	return se_op_open_close(rq->index, strcmp(rq->parts[1], "_close") == 0, r, err);
}

/* GET and HEAD of _doc/{id} and _source/{id} (HEAD's body is dropped later) */
static bool
h_doc_get(RestReq *rq, SeResponse *r, SeError *err)
{
	bool		source_only = strcmp(rq->parts[1], "_source") == 0;
	SeJson	   *sf = se_source_url_spec(param(rq, "_source"), param(rq, "_source_includes"),
										param(rq, "_source_excludes"), err);

	int64		version;

	if (se_error_is_set(err) ||
		!param_integer(rq, "version", true, -1, &version, err) ||
		!se_get_version_type_check(param(rq, "version_type"), err))
		return false;
	return se_op_get(rq->index, rq->id, param(rq, "routing"), param(rq, "preference"), sf,
					 source_only, version, r, err);
}

/* _mget, /{index}/_mget (preference as get's) */
static bool
h_mget(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	SeJson	   *sf = se_source_url_spec(param(rq, "_source"), param(rq, "_source_includes"),
										param(rq, "_source_excludes"), err);

	return !se_error_is_set(err) && json_body(rq, &body, err) &&
		se_op_mget(rq->index, body, param(rq, "preference"), sf, r, err);
}

/*
 * An update's _source (what its answer's "get" shows): the URL's
 * _source* parameters, else the body's "_source", as ES's RestUpdateAction.
 */
static bool
update_source(RestReq *rq, SeDocWrite *w, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *body;

	w->source = se_source_url_spec(param(rq, "_source"), param(rq, "_source_includes"),
								   param(rq, "_source_excludes"), err);
	if (se_error_is_set(err))
		return false;
	if (w->source == NULL && w->body_len > 0)
	{
		SeError		perr;

		/* a body that is not JSON fails in the update itself, as before */
		se_error_init(&perr);
		body = se_json_parse(w->body, w->body_len, &opts, &perr);
		if (body != NULL && body->type == SE_JSON_OBJECT)
			w->source = se_json_get(body, "_source");
	}
	if (w->source != NULL && se_source_filter_parse(w->source, err) == NULL)
		return false;
	return true;
}

/* /{index}/_explain/{id}: the query's explanation for one document */
static bool
h_explain(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	return json_body(rq, &body, err) &&
		se_op_explain(rq->index, rq->id, param(rq, "routing"), param(rq, "preference"),
					  body, r, err);
}

/* [/{index}]/_validate/query (explain: each index's bound query or error) */
static bool
h_validate_query(RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;
	bool		explain;

	return param_boolean(rq, "explain", false, &explain, err) &&
		json_body(rq, &body, err) &&
		se_op_validate_query(rq->index, body, explain, r, err);
}

/* A single-document write from the route's index, id and URL parameters. */
static bool
doc_write(RestReq *rq, const char *op, SeResponse *r, SeError *err)
{
	SeDocWrite	w;

	memset(&w, 0, sizeof(w));
	w.index = rq->index;
	w.id = rq->id;
	w.op = op;
	w.routing = param(rq, "routing");
	/* absent, they are what ES's request holds when not given */
	if (!param_integer(rq, "if_seq_no", true, SE_UNASSIGNED_SEQ_NO, &w.if_seq_no, err) ||
		!param_integer(rq, "if_primary_term", true, 0, &w.if_primary_term, err) ||
		!se_cas_check(&w.if_seq_no, w.if_primary_term, err) ||
		!se_parse_refresh(param(rq, "refresh"), &w.refresh, err) ||
		!param_active_shards(rq, &w.wait_for_active_shards, err) ||
		!param_time_ms(rq, "timeout", 60000, &w.timeout_ms, err) ||
		!param_boolean(rq, "require_alias", false, &w.require_alias, err))
		return false;
	if (strcmp(op, "delete") != 0)
	{
		if (rq->body == NULL || rq->body_len == 0)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: source is missing;");
			return false;
		}
		w.body = rq->body;
		w.body_len = rq->body_len;
	}
	if (strcmp(op, "update") == 0 && !update_source(rq, &w, err))
		return false;
	return se_op_doc_write(&w, r, err);
}

/* _doc (index, or op_type), _create and _update */
static bool
h_doc_write(RestReq *rq, SeResponse *r, SeError *err)
{
	const char *endpoint = rq->parts[1];
	const char *op_type = param(rq, "op_type");

	if (strcmp(endpoint, "_update") == 0)
		return doc_write(rq, "update", r, err);
	if (strcmp(endpoint, "_create") == 0)
		return doc_write(rq, "create", r, err);
	return doc_write(rq, op_type ? op_type : "index", r, err);
}

/* ES answers a delete of a missing doc with the item body and 404 */
static bool
h_doc_delete(RestReq *rq, SeResponse *r, SeError *err)
{
	return doc_write(rq, "delete", r, err);
}

/* ---------------------------------------------------------------------
 * The route table and the router
 * ---------------------------------------------------------------------
 */
typedef bool (*RestHandler) (RestReq *rq, SeResponse *r, SeError *err);
typedef bool (*IndexOp) (const char *index, SeResponse *r, SeError *err);
typedef bool (*IndexBodyOp) (const char *index, const SeJson *body, SeResponse *r,
							 SeError *err);

/* A route runs its handler, or else an se_op_* on its {index} (and body) */
typedef struct RestRoute
{
	int			methods;		/* the methods this route takes */
	const char *path;			/* literal parts and {index}, {id}, {task_id} */
	RestHandler handler;
	IndexOp		index_op;
	IndexBodyOp body_op;
} RestRoute;

/*
 * ES's REST routes that we serve, as ES registers them: a path may appear
 * once per handler, and a path's methods are the union of its rows.  A
 * parameter matches any part, so routes whose parts are all literal come
 * before those a parameter could shadow (/_search before /{index}), as ES's
 * path trie tries explicit parts before wildcards.
 */
static const RestRoute routes[] = {
	{GET | HEAD, "/", h_main},
	{POST | PUT, "/_bulk", h_bulk},
	{GET | POST, "/_mget", h_mget},
	{GET | POST, "/_search", h_search},
	{GET | POST | DELETE, "/_search/scroll", h_scroll},
	{GET | POST, "/_msearch", h_msearch},
	{GET | POST | DELETE, "/_search/scroll/{id}", h_scroll},
	{GET | POST, "/_search/template", h_search_template},
	{GET | POST, "/_msearch/template", h_msearch},
	{GET | POST, "/_render/template", h_render_template},
	{GET | POST, "/_render/template/{name}", h_render_template},
	{DELETE, "/_pit", h_close_pit},
	{GET | POST, "/_count", h_count},
	{GET | POST, "/_validate/query", h_validate_query},
	{GET | POST, "/_refresh", .index_op = se_op_refresh},
	{GET | POST, "/_flush", .index_op = se_op_flush},
	{POST, "/_forcemerge", h_forcemerge},
	{GET, "/_cat/aliases", h_cat},
	{GET | HEAD, "/_alias", h_alias},
	{POST, "/_aliases", h_alias},
	{GET | HEAD, "/_alias/{name}", h_alias},
	{GET, "/_cat/aliases/{name}", h_cat},
	{POST, "/_reindex", h_by_query},
	{GET, "/_tasks", h_tasks_list},
	{GET, "/_cat", h_cat_list},
	{GET, "/_cat/indices", h_cat},
	{GET, "/_cat/segments", h_cat},
	{GET, "/_cat/shards", h_cat},
	{GET, "/_cat/thread_pool", h_cat},
	{GET, "/_cat/nodes", h_cat},
	{GET, "/_cat/master", h_cat},
	{GET, "/_cat/health", h_cat},
	{GET, "/_cat/count", h_cat},
	{GET, "/_cat/allocation", h_cat},
	{GET, "/_cat/recovery", h_cat},
	{GET, "/_cat/templates", h_cat},
	{GET, "/_index_template", h_template},
	{GET | PUT | POST | DELETE | HEAD, "/_index_template/{name}", h_template},
	{POST, "/_index_template/_simulate_index/{index}", h_simulate_index},
	{GET, "/_component_template", h_template},
	{GET | PUT | POST | DELETE | HEAD, "/_component_template/{name}", h_template},
	{GET, "/_template", h_template},
	{GET | PUT | POST | DELETE, "/_scripts/{name}", h_script},
	{GET | PUT | POST | DELETE | HEAD, "/_template/{name}", h_template},
	{GET, "/_cluster/health", h_cluster_health},
	{GET, "/_nodes/stats", h_nodes_stats},
	{GET, "/_nodes/stats/{metric}", h_nodes_stats},
	{GET, "/_nodes/{node_id}/stats", h_nodes_stats},
	{GET, "/_nodes/{node_id}/stats/{metric}", h_nodes_stats},
	{GET, "/_nodes", h_nodes_info},
	{GET, "/_nodes/{node_id}", h_nodes_info},
	{GET, "/_cluster/state", h_cluster_state},
	{GET, "/_stats", h_stats},
	{GET, "/_stats/{metric}", h_stats},
	{GET | PUT, "/_cluster/settings", h_cluster_settings},
	{GET | POST, "/_cluster/allocation/explain", h_allocation_explain},
	{POST, "/_cluster/reroute", h_cluster_reroute},
	{GET, "/_cat/indices/{index}", h_cat},
	{GET, "/_cat/segments/{index}", h_cat},
	{GET, "/_cat/shards/{index}", h_cat},
	{GET, "/_cat/recovery/{index}", h_cat},
	{GET, "/_cat/templates/{name}", h_cat},
	{GET, "/_cat/count/{index}", h_cat},
	{GET, "/_cat/thread_pool/{thread_pool_patterns}", h_cat},
	{GET, "/_cluster/health/{index}", h_cluster_health},
	{GET, "/_cluster/state/{metric}", h_cluster_state},
	{GET, "/_cluster/state/{metric}/{index}", h_cluster_state},
	{GET, "/_tasks/{task_id}", h_task_get},
	{POST, "/_tasks/{task_id}/_cancel", h_task_cancel},
	{POST, "/_update_by_query/{task_id}/_rethrottle", h_rethrottle},
	{POST, "/_delete_by_query/{task_id}/_rethrottle", h_rethrottle},
	{POST, "/_reindex/{task_id}/_rethrottle", h_rethrottle},
	{PUT, "/{index}", h_create_index},
	{GET, "/{index}", .index_op = se_op_get_index},
	{HEAD, "/{index}", h_index_exists},
	{DELETE, "/{index}", .index_op = se_op_delete_index},
	{POST | PUT, "/{index}/_bulk", h_bulk},
	{GET | POST, "/{index}/_mget", h_mget},
	{GET | POST, "/{index}/_search", h_search},
	{POST, "/{index}/_pit", h_open_pit},
	{GET | POST, "/{index}/_msearch", h_msearch},
	{GET | POST, "/{index}/_search/template", h_search_template},
	{GET | POST, "/{index}/_msearch/template", h_msearch},
	{GET | POST, "/{index}/_count", h_count},
	{GET, "/{index}/_stats", h_stats},
	{GET, "/{index}/_stats/{metric}", h_stats},
	{GET | POST, "/{index}/_refresh", .index_op = se_op_refresh},
	{GET | POST, "/{index}/_flush", .index_op = se_op_flush},
	{POST, "/{index}/_forcemerge", h_forcemerge},
	{GET, "/{index}/_mapping", .index_op = se_op_get_mapping},
	{PUT | POST, "/{index}/_mapping", .body_op = se_op_put_mapping},
	{GET, "/{index}/_settings", .index_op = se_op_get_settings},
	{PUT, "/{index}/_settings", .body_op = se_op_put_settings},
	{POST, "/{index}/_open", h_open_close},
	{POST, "/{index}/_close", h_open_close},
	{POST, "/{index}/_update_by_query", h_by_query},
	{POST, "/{index}/_delete_by_query", h_by_query},
	{POST, "/{index}/_doc", h_doc_write},
	{GET | HEAD, "/{index}/_doc/{id}", h_doc_get},
	{PUT | POST, "/{index}/_doc/{id}", h_doc_write},
	{DELETE, "/{index}/_doc/{id}", h_doc_delete},
	{PUT | POST, "/{index}/_create/{id}", h_doc_write},
	{POST, "/{index}/_update/{id}", h_doc_write},
	{GET | HEAD, "/{index}/_source/{id}", h_doc_get},
	{GET | POST, "/{index}/_explain/{id}", h_explain},
	{GET | POST, "/{index}/_validate/query", h_validate_query},
	{GET | HEAD, "/{index}/_alias", h_alias},
	{GET | HEAD | PUT | POST | DELETE, "/{index}/_alias/{name}", h_alias},
	{PUT | POST | DELETE, "/{index}/_aliases/{name}", h_alias},
};

static int
route_count(void)
{
	return lengthof(routes);
}

static const char *
route_path(int i)
{
	return routes[i].path;
}

static bool
part_is(const char *p, size_t len, const char *s)
{
	return strlen(s) == len && strncmp(p, s, len) == 0;
}

/* Does the request's path match the route's?  Binds its parameters if so. */
static bool
route_match(const char *path, RestReq *rq)
{
	const char *p = path;
	int			i;

	rq->index = rq->id = rq->task_id = NULL;
	for (i = 0;; i++)
	{
		size_t		len;

		while (*p == '/')
			p++;
		if (*p == '\0' || i == rq->nparts)
			return *p == '\0' && i == rq->nparts;
		len = strcspn(p, "/");
		if (part_is(p, len, "{index}"))
			rq->index = rq->parts[i];
		else if (part_is(p, len, "{id}"))
			rq->id = rq->parts[i];
		else if (part_is(p, len, "{task_id}"))
			rq->task_id = rq->parts[i];
		else if (p[0] != '{' && !part_is(p, len, rq->parts[i]))
			return false;
		p += len;
	}
}

static bool
run_route(const RestRoute *rt, RestReq *rq, SeResponse *r, SeError *err)
{
	SeJson	   *body;

	if (rt->handler)
		return rt->handler(rq, r, err);
	if (rt->index_op)
		return rt->index_op(rq->index, r, err);
	if (!json_body(rq, &body, err))
		return false;
	return rt->body_op(rq->index, body, r, err);
}

static RestMethod
method_parse(const char *m)
{
	int			i;

	for (i = 0; i < M_UNKNOWN; i++)
		if (pg_strcasecmp(m, method_names[i]) == 0)
			return (RestMethod) i;
	return M_UNKNOWN;
}

/* ES's answer to a known path and a method none of its routes takes */
static void
method_not_allowed(const RestReq *rq, const char *uri, int allowed, SeResponse *r)
{
	StringInfoData msg;
	int			m;
	bool		first = true;

	initStringInfo(&msg);
	if (rq->method == M_UNKNOWN)
		appendStringInfo(&msg, "Unexpected http method: %s", rq->method_text);
	else
		appendStringInfo(&msg, "Incorrect HTTP method for uri [%s] and method [%s]",
						 uri, method_names[rq->method]);
	if (allowed)
	{
		appendStringInfoString(&msg, ", allowed: [");
		for (m = 0; m < M_UNKNOWN; m++)
			if (allowed & (1 << m))
			{
				appendStringInfo(&msg, "%s%s", first ? "" : ", ", method_names[m]);
				first = false;
			}
		appendStringInfoChar(&msg, ']');
	}
	r->status = 405;
	appendStringInfoString(&r->body, "{\"error\":");
	se_json_write_string(&r->body, msg.data, msg.len);
	appendStringInfoString(&r->body, ",\"status\":405}");
}

static void
no_handler(const RestReq *rq, const char *uri, SeResponse *r)
{
	char	   *msg = psprintf("no handler found for uri [%s] and method [%s]", uri,
							   method_names[rq->method]);

	r->status = 400;
	appendStringInfoString(&r->body, "{\"error\":");
	se_json_write_string(&r->body, msg, strlen(msg));
	appendStringInfoString(&r->body, ",\"status\":400}");
}

/*
 * Run the first route whose path matches and that takes the method.  As in
 * ES's RestController: a path some route matches but none for this method
 * is 405 with the methods they take; OPTIONS is answered 200 (ES adds an
 * Allow header, which request() cannot return); any other path is 400.
 */
static bool
route(RestReq *rq, const char *uri, SeResponse *r, SeError *err)
{
	int			allowed = 0;
	int			i;

	for (i = 0; i < lengthof(routes); i++)
	{
		if (!route_match(routes[i].path, rq))
			continue;
		if (rq->method != M_UNKNOWN && (routes[i].methods & (1 << rq->method)))
			return run_route(&routes[i], rq, r, err);
		allowed |= routes[i].methods;
	}
	if (allowed != 0)
	{
		StringInfoData a;
		int			m;

		/* the HTTP server sends it as ES's Allow header */
		initStringInfo(&a);
		for (m = 0; m < M_UNKNOWN; m++)
			if (allowed & (1 << m))
				appendStringInfo(&a, "%s%s", a.len ? "," : "", method_names[m]);
		r->allow = a.data;
	}
	if (rq->method == M_OPTIONS)
		r->status = 200;
	else if (allowed != 0 || rq->method == M_UNKNOWN)
		method_not_allowed(rq, uri, allowed, r);
	else
		no_handler(rq, uri, r);
	return true;
}

/* The JSON answer in r cut to ES's filter_path spec. */
static void
response_filter_path(SeResponse *r, const char *spec)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeError		perr;
	SeJson	   *v;
	const char *text = r->body.data;
	size_t		len = r->body.len;

	if (r->jsonb)
		text = se_text_from_jsonb(JsonbPGetDatum(r->jsonb), &len);
	if (len == 0)
		return;					/* HEAD, or no body */
	se_error_init(&perr);
	if ((v = se_json_parse(text, len, &opts, &perr)) == NULL)
		return;
	v = se_filter_path(v, spec);
	resetStringInfo(&r->body);
	se_json_write(&r->body, v);
	r->jsonb = NULL;
}

/*
 * One ES REST call through the router: what search_engine.request() and the
 * HTTP server (src/http/) both answer.  r gets the status and the body (JSON
 * text, plain text when r->is_text, or r->jsonb); an ES error is answered as
 * ES's error body.  A PostgreSQL ERROR raised below propagates: the SQL
 * caller reports it as such, the HTTP worker catches it and answers ES's
 * error body for its SQLSTATE (se_error_from_edata).
 */
void
se_rest_dispatch(const char *method, const char *path, const char *body,
				 size_t body_len, SeResponse *r)
{
	RestReq		rq;
	SeError		err;
	volatile bool ok;

	memset(&rq, 0, sizeof(rq));
	rq.method_text = method;
	rq.method = method_parse(method);
	rq.body = body;
	rq.body_len = body ? body_len : 0;
	se_response_init(r);
	se_error_init(&err);
	ok = parse_path(path, &rq, &err) &&
		se_indices_options_set(param(&rq, "ignore_unavailable"), param(&rq, "allow_no_indices"),
							   param(&rq, "expand_wildcards"), &err);
	/* the URL's indices options hold for this request only */
	PG_TRY();
	{
		ok = ok && route(&rq, path, r, &err);
	}
	PG_FINALLY();
	{
		se_indices_options_reset();
	}
	PG_END_TRY();
	if (!ok)
	{
		if (!se_error_is_set(&err))
			se_error_set(&err, 500, "exception", "request failed");
		r->status = err.status;
		resetStringInfo(&r->body);
		se_error_body(&err, &r->body);
		r->is_text = false;
		r->jsonb = NULL;
	}
	/* ES cuts any JSON answer to filter_path, errors too */
	if (param(&rq, "filter_path") != NULL && !r->is_text)
		response_filter_path(r, param(&rq, "filter_path"));
	if (ok)
	{
		const char *format = param(&rq, "format");

		/* ES answers any API in YAML when asked (its body stays JSON otherwise) */
		if (format && strcmp(format, "yaml") == 0 && !r->is_text)
			(void) se_response_to_yaml(r);
	}
}

PG_FUNCTION_INFO_V1(se_sql_request);
Datum
se_sql_request(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	char	   *method;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	text	   *body = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("method and path must not be null")));
	method = text_to_cstring(PG_GETARG_TEXT_PP(0));
	se_rest_dispatch(method, text_to_cstring(PG_GETARG_TEXT_PP(1)),
					 body ? VARDATA_ANY(body) : NULL,
					 body ? VARSIZE_ANY_EXHDR(body) : 0, &r);
	values[0] = Int32GetDatum(r.status);
	if (method_parse(method) == M_HEAD ||
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
