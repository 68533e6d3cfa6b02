/*-------------------------------------------------------------------------
 *
 * sql_funcs.c
 *	  The typed SQL functions of schema search_engine.
 *
 * Thin wrappers: arguments -> se_op_* -> jsonb, or a PostgreSQL ERROR with
 * the SQLSTATE of the ES error type and the type in errdetail.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api/api.h"

static char *
text_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

static Datum
finish(bool ok, SeResponse *r, SeError *err)
{
	if (!ok)
		se_raise(err);
	return se_response_jsonb(r);
}

/* a boolean argument, NULL as false */
static bool
bool_arg(FunctionCallInfo fcinfo, int n)
{
	return !PG_ARGISNULL(n) && PG_GETARG_BOOL(n);
}

static SeJson *
body_arg(FunctionCallInfo fcinfo, int n, SeError *err)
{
	SeJson	   *j = se_json_from_jsonb_arg(fcinfo, n, err);

	if (j == NULL && se_error_is_set(err))
		se_raise(err);
	return j;
}

static char *
required_text(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *s = text_arg(fcinfo, n);

	if (s == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what),
				 errdetail("action_request_validation_exception")));
	return s;
}

static SeRefresh
refresh_arg(FunctionCallInfo fcinfo, int n)
{
	SeRefresh	r;
	SeError		err;

	se_error_init(&err);
	if (!se_parse_refresh(text_arg(fcinfo, n), &r, &err))
		se_raise(&err);
	return r;
}

PG_FUNCTION_INFO_V1(se_sql_create_index);
Datum
se_sql_create_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	char	   *name = required_text(fcinfo, 0, "index");
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 1, &err);
	PG_RETURN_DATUM(finish(se_op_create_index(name, body, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_delete_index);
Datum
se_sql_delete_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_delete_index(required_text(fcinfo, 0, "index"), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_get_index);
Datum
se_sql_get_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_get_index(required_text(fcinfo, 0, "index"), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_get_mapping);
Datum
se_sql_get_mapping(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_get_mapping(required_text(fcinfo, 0, "index"), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_put_mapping);
Datum
se_sql_put_mapping(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	char	   *name = required_text(fcinfo, 0, "index");
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 1, &err);
	PG_RETURN_DATUM(finish(se_op_put_mapping(name, body, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_put_settings);
Datum
se_sql_put_settings(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	char	   *name = required_text(fcinfo, 0, "index");
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 1, &err);
	PG_RETURN_DATUM(finish(se_op_put_settings(name, body, &r, &err), &r, &err));
}

/* cluster_settings(flat_settings, include_defaults) */
PG_FUNCTION_INFO_V1(se_sql_cluster_settings);
Datum
se_sql_cluster_settings(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_cluster_settings_get(bool_arg(fcinfo, 0),
													  bool_arg(fcinfo, 1),
													  &r, &err), &r, &err));
}

/* put_cluster_settings(body) */
PG_FUNCTION_INFO_V1(se_sql_put_cluster_settings);
Datum
se_sql_put_cluster_settings(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 0, &err);
	PG_RETURN_DATUM(finish(se_op_cluster_settings_put(body, &r, &err), &r, &err));
}

/* allocation_explain(body, include_yes_decisions) */
PG_FUNCTION_INFO_V1(se_sql_allocation_explain);
Datum
se_sql_allocation_explain(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 0, &err);
	PG_RETURN_DATUM(finish(se_op_allocation_explain(body, bool_arg(fcinfo, 1),
													&r, &err), &r, &err));
}

/* cluster_reroute(body, dry_run, explain, retry_failed) */
PG_FUNCTION_INFO_V1(se_sql_cluster_reroute);
Datum
se_sql_cluster_reroute(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 0, &err);
	PG_RETURN_DATUM(finish(se_op_cluster_reroute(body, bool_arg(fcinfo, 1),
												 bool_arg(fcinfo, 2),
												 bool_arg(fcinfo, 3),
												 &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_close_index);
Datum
se_sql_close_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_open_close(required_text(fcinfo, 0, "index"), true, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_open_index);
Datum
se_sql_open_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_open_close(required_text(fcinfo, 0, "index"), false, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_refresh);
Datum
se_sql_refresh(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_refresh(text_arg(fcinfo, 0), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_flush);
Datum
se_sql_flush(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_flush(text_arg(fcinfo, 0), &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_force_merge);
Datum
se_sql_force_merge(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	int			max = PG_ARGISNULL(1) ? 1 : PG_GETARG_INT32(1);

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_force_merge(text_arg(fcinfo, 0), max, &r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_bulk);
Datum
se_sql_bulk(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	text	   *body;
	SeBulkOptions opts;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("bulk body must not be null"),
				 errdetail("action_request_validation_exception")));
	body = PG_GETARG_TEXT_PP(0);
	memset(&opts, 0, sizeof(opts));
	opts.default_index = text_arg(fcinfo, 1);
	opts.refresh = refresh_arg(fcinfo, 2);
	opts.max_retries = PG_ARGISNULL(3) ? 0 : Max(0, PG_GETARG_INT32(3));
	opts.require_alias = false; /* SQL callers may omit the final newline */
	se_response_init(&r);
	se_error_init(&err);
	if (!se_op_bulk(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body), &opts, &r, &err))
		se_raise(&err);
	/* json, not jsonb: the answer's text as written, in ES's key order */
	PG_RETURN_TEXT_P(cstring_to_text_with_len(r.body.data, r.body.len));
}

static Datum
doc_write(FunctionCallInfo fcinfo, const char *op, int body_arg_no, int refresh_no,
		  int routing_no, int seq_no, int term_no)
{
	SeResponse	r;
	SeError		err;
	SeDocWrite	w;

	memset(&w, 0, sizeof(w));
	w.index = required_text(fcinfo, 0, "index");
	w.id = text_arg(fcinfo, 1);
	w.op = op;
	if (body_arg_no >= 0)
	{
		size_t		len;

		if (PG_ARGISNULL(body_arg_no))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("document must not be null"),
					 errdetail("action_request_validation_exception")));
		w.body = se_text_from_jsonb(PG_GETARG_DATUM(body_arg_no), &len);
		w.body_len = len;
	}
	w.refresh = refresh_no >= 0 ? refresh_arg(fcinfo, refresh_no) : SE_REFRESH_FALSE;
	w.routing = routing_no >= 0 ? text_arg(fcinfo, routing_no) : NULL;
	w.if_seq_no = (seq_no >= 0 && !PG_ARGISNULL(seq_no)) ?
		PG_GETARG_INT64(seq_no) : SE_UNASSIGNED_SEQ_NO;
	w.if_primary_term = (term_no >= 0 && !PG_ARGISNULL(term_no)) ? PG_GETARG_INT64(term_no) : 0;
	se_response_init(&r);
	se_error_init(&err);
	return finish(se_cas_check(&w.if_seq_no, w.if_primary_term, &err) &&
				  se_op_doc_write(&w, &r, &err), &r, &err);
}

/* index_doc(index, id, doc, refresh, routing, op_type, if_seq_no, if_primary_term) */
PG_FUNCTION_INFO_V1(se_sql_index_doc);
Datum
se_sql_index_doc(PG_FUNCTION_ARGS)
{
	char	   *op = PG_ARGISNULL(5) ? "index" : text_to_cstring(PG_GETARG_TEXT_PP(5));

	PG_RETURN_DATUM(doc_write(fcinfo, op, 2, 3, 4, 6, 7));
}

/* delete_doc(index, id, refresh, routing, if_seq_no, if_primary_term) */
PG_FUNCTION_INFO_V1(se_sql_delete_doc);
Datum
se_sql_delete_doc(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(doc_write(fcinfo, "delete", -1, 2, 3, 4, 5));
}

/* update_doc(index, id, body, refresh, routing, if_seq_no, if_primary_term) */
PG_FUNCTION_INFO_V1(se_sql_update_doc);
Datum
se_sql_update_doc(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(doc_write(fcinfo, "update", 2, 3, 4, 5, 6));
}

/* get_doc(index, id, routing) */
PG_FUNCTION_INFO_V1(se_sql_get_doc);
Datum
se_sql_get_doc(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_get(required_text(fcinfo, 0, "index"),
									 required_text(fcinfo, 1, "id"),
									 text_arg(fcinfo, 2), NULL, NULL, false, -1, &r, &err), &r, &err));
}

/* mget(body, index) */
PG_FUNCTION_INFO_V1(se_sql_mget);
Datum
se_sql_mget(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeJson	   *body;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 0, &err);
	PG_RETURN_DATUM(finish(se_op_mget(text_arg(fcinfo, 1), body, NULL, NULL, &r, &err), &r, &err));
}

/* search(index, body, search_type): search_type as the URL parameter */
PG_FUNCTION_INFO_V1(se_sql_search);
Datum
se_sql_search(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeJson	   *body;
	SeSearchParams sp;

	se_response_init(&r);
	se_error_init(&err);
	body = body_arg(fcinfo, 1, &err);
	memset(&sp, 0, sizeof(sp));
	sp.from = sp.size = -1;
	sp.track_total_hits = -2;
	sp.search_type = PG_NARGS() > 2 ? text_arg(fcinfo, 2) : NULL;
	PG_RETURN_DATUM(finish(se_op_search(text_arg(fcinfo, 0), body, &sp, &r, &err), &r, &err));
}

/* count(index, body) */
PG_FUNCTION_INFO_V1(se_sql_count);
Datum
se_sql_count(PG_FUNCTION_ARGS)
{
	SeError		err;
	SeJson	   *body;
	int64		c = 0;

	se_error_init(&err);
	body = body_arg(fcinfo, 1, &err);
	if (!se_op_count(text_arg(fcinfo, 0), body, NULL, &c, NULL, &err))
		se_raise(&err);
	PG_RETURN_INT64(c);
}

/* cluster_health(index, wait_for_status, timeout_ms) */
PG_FUNCTION_INFO_V1(se_sql_cluster_health);
Datum
se_sql_cluster_health(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;
	SeHealthWait w = {0};

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_parse_health_status(text_arg(fcinfo, 1), &w.wait_for_status, &err) &&
						   se_op_cluster_health(text_arg(fcinfo, 0), &w,
												PG_ARGISNULL(2) ? 30000 : PG_GETARG_INT32(2),
												&r, &err), &r, &err));
}

PG_FUNCTION_INFO_V1(se_sql_verify_index);
Datum
se_sql_verify_index(PG_FUNCTION_ARGS)
{
	SeResponse	r;
	SeError		err;

	se_response_init(&r);
	se_error_init(&err);
	PG_RETURN_DATUM(finish(se_op_verify(required_text(fcinfo, 0, "index"), &r, &err), &r, &err));
}
