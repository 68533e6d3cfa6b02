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
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "node/node.h"

void
se_response_init(SeResponse *r)
{
	r->status = 200;
	r->is_text = false;
	initStringInfo(&r->body);
}

void
se_raise(const SeError *err)
{
	ereport(ERROR,
			(errcode(se_error_sqlstate(err->type)),
			 errmsg("%s", err->reason ? err->reason : err->type),
			 errdetail("%s", err->type)));
	pg_unreachable();
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

Datum
se_jsonb_from_text(const char *data, size_t len)
{
	char	   *s = pnstrdup(data, len);

	return DirectFunctionCall1(jsonb_in, CStringGetDatum(s));
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
