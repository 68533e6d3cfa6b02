/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  ES errors as PostgreSQL errors and as ES error bodies; jsonb <-> text.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "mb/pg_wchar.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "node/node.h"

void
se_response_init(SeResponse *r)
{
	r->status = 200;
	r->is_text = false;
	r->is_yaml = false;
	r->jsonb = NULL;
	r->allow = NULL;
	initStringInfo(&r->body);
}

void
se_raise(const SeError *err)
{
	se_error_raise(err);
}

/* ES error body: {"error":{"root_cause":[..],"type":..,"reason":..},"status":N} */
void
se_error_body(const SeError *err, StringInfo out)
{
	const char *reason = err->reason ? err->reason : "";
	StringInfoData cause;

	initStringInfo(&cause);
	appendStringInfoString(&cause, "{\"type\":");
	se_json_write_string(&cause, err->type, strlen(err->type));
	appendStringInfoString(&cause, ",\"reason\":");
	se_json_write_string(&cause, reason, strlen(reason));
	appendStringInfoChar(&cause, '}');
	appendStringInfo(out, "{\"error\":{\"root_cause\":[%s],\"type\":", cause.data);
	se_json_write_string(out, err->type, strlen(err->type));
	appendStringInfoString(out, ",\"reason\":");
	se_json_write_string(out, reason, strlen(reason));
	appendStringInfo(out, "},\"status\":%d}", err->status);
	pfree(cause.data);
}

/*
 * A PostgreSQL ERROR caught where ES's error body must be answered (the
 * HTTP server): the ES type and status its SQLSTATE stands for -- the
 * inverse of se_error_sqlstate.  An error se_error_raise made carries its
 * ES type in errdetail; that type is kept, with the status of its class.
 */
void
se_error_from_edata(const ErrorData *edata, SeError *err)
{
	static const struct
	{
		int			code;
		int			status;
		const char *type;
	}			map[] = {
		{ERRCODE_INSUFFICIENT_PRIVILEGE, 403, "security_exception"},
		{ERRCODE_UNDEFINED_OBJECT, 404, "resource_not_found_exception"},
		{ERRCODE_NO_DATA_FOUND, 404, "resource_not_found_exception"},
		{ERRCODE_DUPLICATE_OBJECT, 400, "resource_already_exists_exception"},
		{ERRCODE_T_R_SERIALIZATION_FAILURE, 409, "version_conflict_engine_exception"},
		{ERRCODE_INSUFFICIENT_RESOURCES, 429, "es_rejected_execution_exception"},
		{ERRCODE_OUT_OF_MEMORY, 429, "circuit_breaking_exception"},
		{ERRCODE_READ_ONLY_SQL_TRANSACTION, 403, "cluster_block_exception"},
		{ERRCODE_QUERY_CANCELED, 400, "task_cancelled_exception"},
		{ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, 400, "illegal_state_exception"},
		{ERRCODE_FEATURE_NOT_SUPPORTED, 400, "illegal_argument_exception"},
		{ERRCODE_STATEMENT_TOO_COMPLEX, 400, "too_many_clauses"},
		{ERRCODE_CONNECTION_FAILURE, 503, "node_disconnected_exception"},
	};
	int			status = 500;
	const char *type = "exception";
	int			i;

	for (i = 0; i < lengthof(map); i++)
		if (map[i].code == edata->sqlerrcode)
		{
			status = map[i].status;
			type = map[i].type;
			break;
		}
	if (i == lengthof(map))
	{
		int			class = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

		/* data exceptions and syntax or access rule errors: the request's */
		if (class == ERRCODE_DATA_EXCEPTION ||
			class == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION)
		{
			status = 400;
			type = "illegal_argument_exception";
		}
		else if (class == ERRCODE_CONNECTION_EXCEPTION)
		{
			status = 503;
			type = "node_disconnected_exception";
		}
		else if (class == ERRCODE_INSUFFICIENT_RESOURCES)
		{
			status = 429;
			type = "es_rejected_execution_exception";
		}
	}
	if (edata->detail && se_error_sqlstate(edata->detail) == edata->sqlerrcode &&
		strspn(edata->detail, "abcdefghijklmnopqrstuvwxyz_") == strlen(edata->detail))
		type = edata->detail;
	se_error_set(err, status, type, "%s", edata->message ? edata->message : type);
}

/* a result this large keeps freed heap for the next one (bgw.c) */
#define SE_LARGE_RESULT		(256 * 1024)

/*
 * JSON text for jsonb_in with each \u0000 escape made \ufffd (our JSON
 * writer escapes a NUL so): jsonb cannot hold U+0000 (see jsonb_encode.c).
 */
static char *
nul_escapes_replaced(const char *data, size_t len)
{
	StringInfoData out;
	size_t		i;

	initStringInfo(&out);
	for (i = 0; i < len; i++)
	{
		if (data[i] != '\\' || i + 1 == len)
			appendStringInfoChar(&out, data[i]);
		else if (len - i >= 6 && memcmp(data + i, "\\u0000", 6) == 0)
		{
			appendStringInfoString(&out, "\\ufffd");
			i += 5;
		}
		else
		{
			/* any other escape, \\ included, is copied whole */
			appendBinaryStringInfo(&out, data + i, 2);
			i++;
		}
	}
	return out.data;
}

/*
 * JSON text as jsonb, exactly as jsonb_in builds it.  Every typed SQL
 * function returns its ES body through here, so text our strict parser
 * accepts is written from its DOM straight into jsonb's format
 * (jsonb_encode.c: several times faster than jsonb_in, whose object-key
 * sort dominated a bulk's coordinator time); anything else
 * (invalid JSON: jsonb_in raises its error; other server encodings) goes to
 * jsonb_in.  Either way a NUL reads as U+FFFD.
 */
Datum
se_jsonb_from_text(const char *data, size_t len)
{
	/*
	 * A large result (a scroll's page, a search of 1000 hits) is a bulk's
	 * pattern: MBs of text, DOM, jsonb and PostgreSQL's copies of the row,
	 * allocated and freed per request, each mapped and faulted in afresh with
	 * glibc's defaults (a quarter of a whole-corpus scroll's CPU).
	 */
	if (len >= SE_LARGE_RESULT)
		se_keep_freed_heap(SE_BULK_MMAP_ABOVE, SE_BULK_TRIM_KEEP);
	if (GetDatabaseEncoding() == PG_UTF8 && len <= SE_JSON_MAX_INPUT)
	{
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "search_engine jsonb",
												  ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		SeJsonParseOptions opts = {0};
		SeError		err;
		SeJson	   *j;
		Jsonb	   *jb = NULL;

		se_error_init(&err);
		j = se_json_parse(data, len, &opts, &err);
		if (j != NULL)
		{
			/* the result outlives the DOM's context */
			MemoryContextSwitchTo(old);
			jb = se_jsonb_encode(j, len);
		}
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		if (jb != NULL)
			return JsonbPGetDatum(jb);
	}
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(nul_escapes_replaced(data, len)));
}

/* The response body as jsonb: built directly, or converted from its text. */
Datum
se_response_jsonb(const SeResponse *r)
{
	if (r->jsonb != NULL)
		return JsonbPGetDatum(r->jsonb);
	return se_jsonb_from_text(r->body.data, r->body.len);
}

char *
se_text_from_jsonb(Datum jsonb, size_t *len)
{
	Jsonb	   *jb = DatumGetJsonbP(jsonb);
	char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

	*len = strlen(s);
	return s;
}

/* The jsonb argument argno as our DOM; NULL argument gives NULL. */
SeJson *
se_json_from_jsonb_arg(FunctionCallInfo fcinfo, int argno, SeError *err)
{
	size_t		len;
	char	   *s;
	SeJsonParseOptions opts = {0};

	if (PG_ARGISNULL(argno))
		return NULL;
	s = se_text_from_jsonb(PG_GETARG_DATUM(argno), &len);
	return se_json_parse(s, len, &opts, err);
}

bool
se_parse_refresh(const char *s, SeRefresh *out, SeError *err)
{
	if (s == NULL || strcmp(s, "false") == 0)
		*out = SE_REFRESH_FALSE;
	else if (strcmp(s, "true") == 0 || s[0] == '\0')
		*out = SE_REFRESH_TRUE;
	else if (strcmp(s, "wait_for") == 0)
		*out = SE_REFRESH_WAIT_FOR;
	else
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Unknown value for refresh: [%s].", s);
		return false;
	}
	return true;
}

/*
 * wait_for_status, as ES reads it (ClusterHealthStatus.valueOf of the value
 * in upper case): green, yellow or red in any case; *out is lower case.
 */
bool
se_parse_health_status(const char *s, const char **out, SeError *err)
{
	static const char *const statuses[] = {"green", "yellow", "red"};
	char	   *upper;
	int			i;

	*out = NULL;
	if (s == NULL)
		return true;
	for (i = 0; i < lengthof(statuses); i++)
		if (pg_strcasecmp(s, statuses[i]) == 0)
		{
			*out = statuses[i];
			return true;
		}
	upper = pstrdup(s);
	for (i = 0; upper[i]; i++)
		upper[i] = pg_ascii_toupper((unsigned char) upper[i]);
	se_error_set(err, 400, "illegal_argument_exception",
				 "No enum constant org.elasticsearch.cluster.health.ClusterHealthStatus.%s", upper);
	return false;
}

int64
se_now_millis(void)
{
	return (int64) (GetCurrentTimestamp() / 1000) +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400 * 1000);
}

/* The write pool must be up (it is started by the postmaster). */
void
se_require_started(void)
{
	if (SeShmem == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("search_engine shared memory is not initialized"),
				 errhint("Add search_engine to shared_preload_libraries and restart the server.")));
}
