/*-------------------------------------------------------------------------
 *
 * conn.c
 *	  libpq, wrapped once: connect, run a command with the failure policy
 *	  in the function's name, install the server-side helpers.
 *
 * lg_exec_critical exits the program on failure (setup, verification);
 * lg_exec_optional warns and goes on (cleanup).  The timed requests of
 * ingest and query use libpq directly: their failures are data.
 *
 * The helpers live in schema se_loadgen of the target database:
 * timed_search() measures search_engine.search() with clock_timestamp()
 * inside the server, so a query's server time excludes the network, the
 * protocol and the jsonb output of the response, and its client time
 * includes them; es_to_pg() translates an ES query body into the pieces
 * of a PostgreSQL full-text query (see compare.c).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

PGconn *
lg_connect(const char *dsn, const char *appname)
{
	const char *keys[] = {"dbname", "application_name", NULL};
	const char *vals[] = {dsn, appname, NULL};
	PGconn	   *conn;

	/* dbname with expand_dbname = 1 takes a whole conninfo string or URI */
	conn = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		lg_log("connection failed: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	PQclear(PQexec(conn, "SET client_min_messages = warning"));
	return conn;
}

static PGresult *
exec(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	if (nparams == 0)
		return PQexec(conn, sql);
	return PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
}

static bool
res_ok(PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);

	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Run sql; any failure ends the program. */
PGresult *
lg_exec_critical(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = exec(conn, sql, nparams, params);

	if (!res_ok(res))
		lg_die("%s\n  in: %.200s", PQerrorMessage(conn), sql);
	return res;
}

/* Run sql; a failure is reported and otherwise ignored. */
bool
lg_exec_optional(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = exec(conn, sql, nparams, params);
	bool		ok = res_ok(res);

	if (!ok)
		lg_log("warning: %s  in: %.200s", PQerrorMessage(conn), sql);
	PQclear(res);
	return ok;
}

/* The first column of the first row (malloc'd), NULL for SQL NULL or no row; failure ends the program. */
char *
lg_query_value(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = lg_exec_critical(conn, sql, nparams, params);
	char	   *v = NULL;

	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
		v = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

char *
lg_quote_ident(PGconn *conn, const char *name)
{
	char	   *q = PQescapeIdentifier(conn, name, strlen(name));
	char	   *r;

	if (q == NULL)
		lg_die("cannot quote identifier \"%s\": %s", name, PQerrorMessage(conn));
	r = strdup(q);
	PQfreemem(q);
	return r;
}

static const char helpers_sql[] =
"CREATE SCHEMA IF NOT EXISTS se_loadgen;\n"
/* server-side time of one search: clock_timestamp() around the call */
"CREATE OR REPLACE FUNCTION se_loadgen.timed_search(idx text, body jsonb,\n"
"    OUT server_ms float8, OUT response jsonb)\n"
"LANGUAGE plpgsql VOLATILE AS $f$\n"
"DECLARE t0 timestamptz := clock_timestamp();\n"
"BEGIN\n"
"  response := search_engine.search(idx, body);\n"
"  server_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);\n"
"END $f$;\n"
/*
 * An ES body -> (kind, text, size) for PostgreSQL full-text search.
 * match (operator or, the default) -> or; match with operator and -> and;
 * match_phrase -> phrase; multi_match likewise on its "query".  Anything
 * else: all NULL (the query is left out of the comparison).
 */
"CREATE OR REPLACE FUNCTION se_loadgen.es_to_pg(body jsonb,\n"
"    OUT kind text, OUT qtext text, OUT lim int)\n"
"LANGUAGE plpgsql IMMUTABLE AS $f$\n"
"DECLARE q jsonb := body->'query'; k text; v jsonb;\n"
"BEGIN\n"
"  lim := coalesce((body->>'size')::int, 10);\n"
"  IF q IS NULL OR jsonb_typeof(q) <> 'object' THEN RETURN; END IF;\n"
"  SELECT key, value INTO k, v FROM jsonb_each(q) LIMIT 1;\n"
"  IF k IN ('match', 'match_phrase') THEN\n"
"    SELECT value INTO v FROM jsonb_each(v) LIMIT 1;\n"
"    IF jsonb_typeof(v) = 'object' THEN\n"
"      qtext := v->>'query';\n"
"      kind := CASE WHEN k = 'match_phrase' OR v->>'type' = 'phrase' THEN 'phrase'\n"
"                   WHEN lower(v->>'operator') = 'and' THEN 'and' ELSE 'or' END;\n"
"    ELSE\n"
"      qtext := v #>> '{}';\n"
"      kind := CASE WHEN k = 'match_phrase' THEN 'phrase' ELSE 'or' END;\n"
"    END IF;\n"
"  ELSIF k = 'multi_match' THEN\n"
"    qtext := v->>'query';\n"
"    kind := CASE WHEN v->>'type' = 'phrase' THEN 'phrase'\n"
"                 WHEN lower(v->>'operator') = 'and' THEN 'and' ELSE 'or' END;\n"
"  END IF;\n"
"  IF qtext IS NULL THEN kind := NULL; END IF;\n"
"END $f$;\n";

/* Create (or replace) schema se_loadgen and its functions. */
void
lg_install_helpers(PGconn *conn)
{
	/* concurrent CREATE OR REPLACE from two runs can collide; retry once */
	PGresult   *res = PQexec(conn, helpers_sql);

	if (!(PQresultStatus(res) == PGRES_COMMAND_OK))
	{
		PQclear(res);
		lg_sleep_ms(200);
		res = lg_exec_critical(conn, helpers_sql, 0, NULL);
	}
	PQclear(res);
}
