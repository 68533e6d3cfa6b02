/*-------------------------------------------------------------------------
 *
 * script_runner.c
 *	  Run an update script on one document: the painless subset
 *	  (src/script) or `lang: sql` -- a SQL expression over $1 (the _source
 *	  as jsonb) that returns the new _source, NULL meaning noop.
 *
 * A SQL script runs through SPI with a plan prepared once per slice; each
 * document runs in its own subtransaction so that an error in the
 * expression fails that document only (reported in the task's failures).
 * As Painless runs within a statement and a memory budget, each run of a
 * SQL script has a time and a memory budget (run_budget_begin).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/resource.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "api/byquery.h"
#include "node/node.h"
#include "script/script.h"

struct SeScriptRunner
{
	bool		is_sql;
	char	   *sql;
	SPIPlanPtr	plan;
	SeScript   *painless;
};

bool
se_script_check(ScriptSpec *spec, SeError *err)
{
	if (spec->is_sql)
	{
		if (strchr(spec->source, ';') != NULL)
		{
			se_error_set(err, 400, "script_exception",
						 "compile error: a [sql] script is one expression over $1 and may not contain ';'");
			return false;
		}
		return true;
	}
	return se_script_compile(spec->source, spec->params, err) != NULL;
}

SeScriptRunner *
se_script_runner_create(ScriptSpec *spec, SeError *err)
{
	SeScriptRunner *r = palloc0(sizeof(SeScriptRunner));

	r->is_sql = spec->is_sql;
	if (r->is_sql)
	{
		r->sql = psprintf("SELECT (%s)::jsonb", spec->source);
		return r;
	}
	r->painless = se_script_compile(spec->source, spec->params, err);
	return r->painless ? r : NULL;
}

void
se_script_runner_free(SeScriptRunner *r)
{
	if (r->plan)
		SPI_freeplan(r->plan);
	r->plan = NULL;
}

/*
 * The budget of one run of a SQL script.  Time: PostgreSQL's own
 * statement timeout, armed for the run (SPI does not arm
 * statement_timeout), whose handler cancels the statement as a backend's
 * statement_timeout does.  Memory: a soft RLIMIT_DATA of the process's
 * data size now plus search_engine.sql_script_memory, so a malloc past it
 * fails and palloc raises "out of memory" in the script's subtransaction
 * -- an ERROR that fails the document -- instead of the server's memory
 * running out (and the OOM killer restarting the server).  Memory freed
 * to malloc but kept in its heap counts as the process's, so it may be
 * reused by the next run on top of its budget.
 */
typedef struct RunBudget
{
	bool		timed;
	bool		limited;
	struct rlimit saved;
	TimestampTz start;
} RunBudget;

/* The process's data size (private writable memory + stack), or -1. */
static int64
data_size_bytes(void)
{
	FILE	   *f = fopen("/proc/self/statm", "r");
	long		size,
				resident,
				shared,
				text,
				lib,
				data;
	int			n;

	if (f == NULL)
		return -1;
	n = fscanf(f, "%ld %ld %ld %ld %ld %ld", &size, &resident, &shared, &text, &lib, &data);
	fclose(f);
	return n == 6 ? (int64) data * sysconf(_SC_PAGESIZE) : -1;
}

static void
run_budget_begin(RunBudget *b)
{
	memset(b, 0, sizeof(*b));
	b->start = GetCurrentTimestamp();
	if (se_sql_script_memory_kb > 0 && getrlimit(RLIMIT_DATA, &b->saved) == 0)
	{
		int64		now = data_size_bytes();
		struct rlimit lim = b->saved;

		if (now >= 0)
		{
			rlim_t		want = (rlim_t) (now + (int64) se_sql_script_memory_kb * 1024);

			if (lim.rlim_max == RLIM_INFINITY || want < lim.rlim_max)
				lim.rlim_cur = want;
			b->limited = setrlimit(RLIMIT_DATA, &lim) == 0;
		}
	}
	if (se_sql_script_timeout_ms > 0)
	{
		enable_timeout_after(STATEMENT_TIMEOUT, se_sql_script_timeout_ms);
		b->timed = true;
	}
}

/* Lift the budget; idempotent. */
static void
run_budget_end(RunBudget *b)
{
	if (b->timed)
		disable_timeout(STATEMENT_TIMEOUT, false);
	b->timed = false;
	if (b->limited)
		(void) setrlimit(RLIMIT_DATA, &b->saved);
	b->limited = false;
}

/* The script_exception reason of a run's error, naming the budget it passed. */
static void
run_error(const RunBudget *b, const ErrorData *edata, SeError *err)
{
	long		secs;
	int			usecs;

	TimestampDifference(b->start, GetCurrentTimestamp(), &secs, &usecs);
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && se_sql_script_timeout_ms > 0 && b->start != 0 &&
		secs * 1000 + usecs / 1000 >= se_sql_script_timeout_ms)
		se_error_set(err, 400, "script_exception",
					 "sql script exceeded the time limit of %d ms (search_engine.sql_script_timeout)",
					 se_sql_script_timeout_ms);
	else if (edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY && se_sql_script_memory_kb > 0)
		se_error_set(err, 400, "script_exception",
					 "sql script exceeded the memory limit of " INT64_FORMAT " bytes (search_engine.sql_script_memory): %s",
					 (int64) se_sql_script_memory_kb * 1024, edata->message);
	else
		se_error_set(err, 400, "script_exception", "sql script error: %s", edata->message);
}

static bool
run_sql(SeScriptRunner *r, const char *src, size_t len, SeScriptOutcome *out, SeError *err)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		ok = true;

	/* static: it is set in PG_TRY and read in PG_CATCH */
	static RunBudget budget;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		Datum		arg;
		Oid			argtype = JSONBOID;
		int			rc;

		memset(&budget, 0, sizeof(budget));
		arg = DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(src, len)));
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		/* planning may run the script too (constant folding) */
		run_budget_begin(&budget);
		if (r->plan == NULL)
		{
			SPIPlanPtr	p = SPI_prepare(r->sql, 1, &argtype);

			if (p == NULL)
				elog(ERROR, "could not prepare script: %s", SPI_result_code_string(SPI_result));
			if (SPI_keepplan(p) != 0)
				elog(ERROR, "could not keep script plan");
			r->plan = p;
		}
		rc = SPI_execute_plan(r->plan, &arg, NULL, true, 1);
		run_budget_end(&budget);
		/* a timeout that fired as the statement ended is this run's */
		CHECK_FOR_INTERRUPTS();
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "script returned no row");
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (isnull)
				out->op = SE_SCRIPTOP_NOOP;
			else
			{
				Jsonb	   *jb = DatumGetJsonbP(d);
				char	   *text;

				if (!JB_ROOT_IS_OBJECT(jb) || JB_ROOT_IS_SCALAR(jb))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("a sql script must return a JSON object (the new _source) or NULL")));
				text = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
				out->op = SE_SCRIPTOP_INDEX;
				out->source = MemoryContextStrdup(oldcxt, text);
				out->source_len = strlen(out->source);
			}
		}
		SPI_finish();
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		run_budget_end(&budget);
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		/* the plan survives (it was kept); SPI was reset by the abort */
		run_error(&budget, edata, err);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

static bool
run_painless(SeScriptRunner *r, const char *index, const SeDocMeta *meta,
			 const char *src, size_t len, SeScriptOutcome *out, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *doc = se_json_parse(src, len, &opts, err);
	SeScriptCtx ctx;
	SeScriptResult res;
	StringInfoData b;

	if (doc == NULL)
		return false;
	se_script_ctx_init(&ctx, doc);
	ctx.max_source_bytes = (int64) se_max_document_size_kb * 1024;
	ctx.id = pnstrdup(meta->id, meta->id_len);
	ctx.index = index;
	ctx.routing = meta->routing ? pnstrdup(meta->routing, meta->routing_len) : NULL;
	ctx.version = meta->version;
	ctx.seq_no = meta->seq_no;
	ctx.primary_term = meta->primary_term;
	ctx.now = se_now_millis();
	res = se_script_run(r->painless, &ctx, err);
	switch (res)
	{
		case SE_SCRIPT_ERROR:
			return false;
		case SE_SCRIPT_NOOP:
			out->op = SE_SCRIPTOP_NOOP;
			return true;
		case SE_SCRIPT_DELETE:
			out->op = SE_SCRIPTOP_DELETE;
			return true;
		case SE_SCRIPT_INDEX:
			break;
	}
	if (ctx.source == NULL || ctx.source->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "script_exception", "ctx._source must be a map after the script ran");
		return false;
	}
	initStringInfo(&b);
	se_json_write(&b, ctx.source);
	out->op = SE_SCRIPTOP_INDEX;
	out->source = b.data;
	out->source_len = b.len;
	return true;
}

bool
se_script_runner_run(SeScriptRunner *r, const char *index, const SeDocMeta *meta,
					 const char *src, size_t len, SeScriptOutcome *out, SeError *err)
{
	if (r->is_sql)
		return run_sql(r, src, len, out, err);
	return run_painless(r, index, meta, src, len, out, err);
}
