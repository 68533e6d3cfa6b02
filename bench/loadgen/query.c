/*-------------------------------------------------------------------------
 *
 * query.c
 *	  `se-loadgen query`: N clients run a file of ES queries for a
 *	  duration or a number of iterations; latency percentiles and QPS.
 *
 * Two clocks per query.  Client: wall time of the round trip, as an
 * application sees it (protocol, the jsonb response turned into text and
 * sent).  Server: clock_timestamp() around the search call inside the
 * server (se_loadgen.timed_search, see conn.c), so the difference is the
 * cost of getting the answer out.  Both sides of a comparison go through
 * the same kind of plpgsql wrapper.
 *
 * With --http URL each client POSTs the same bodies to URL/<index>/_search
 * over its own keep-alive connection (http.c) instead: the client clock is
 * then the HTTP round trip, comparable with the SQL one run for run, and
 * the server clock is the answer's "took" (whole milliseconds: ES's
 * clock, there is no wrapper to time the call over HTTP).
 *
 * Every client first runs the whole query list `warmup` times on its own
 * connection (a backend maps and checksums each segment on first use, so
 * a fresh connection's first query is slow; its time is reported as the
 * cold latency), then all clients start together.  Client k starts at
 * query k and cycles through the list.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

#define GET_FAILED(run) __atomic_load_n(&(run)->failed_setup, __ATOMIC_RELAXED)

typedef struct QSamples
{
	double	   *c;
	double	   *s;
	long		n;
	long		cap;
} QSamples;

typedef struct QRun
{
	const LgOptions *o;
	LgTarget	target;
	LgQueryStat *qs;
	int			nq;
	int		   *active;			/* indexes of the queries this target runs */
	int			nactive;
	const char *stmt;
	pthread_barrier_t ready;
	long		done_queries;
	long		errors;
	int			done;
	int			failed_setup;
	double		t0;
} QRun;

typedef struct QClient
{
	QRun	   *run;
	int			id;
	pthread_t	thread;
	QSamples   *per_query;
	double		cold;
	double		t_end;
	long		n;
} QClient;

LgQueryStat *
lg_queries_load(const char *path, int *n)
{
	FILE	   *f = fopen(path, "r");
	LgQueryStat *qs = NULL;
	int			cap = 0;
	char	   *line = NULL;
	size_t		lcap = 0;
	ssize_t		len;

	if (f == NULL)
		lg_die("cannot read %s: %s", path, strerror(errno));
	*n = 0;
	while ((len = getline(&line, &lcap, f)) >= 0)
	{
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		if (*n == cap)
		{
			cap = cap ? cap * 2 : 16;
			qs = realloc(qs, sizeof(LgQueryStat) * cap);
		}
		memset(&qs[*n], 0, sizeof(LgQueryStat));
		qs[*n].text = strdup(line);
		qs[*n].matches = -1;
		(*n)++;
	}
	free(line);
	fclose(f);
	if (*n == 0)
		lg_die("no query in %s", path);
	return qs;
}

char *
lg_pg_function_name(PGconn *conn, const char *prefix, const char *table)
{
	char		name[256];

	snprintf(name, sizeof(name), "%s_%s", prefix, table);
	return lg_quote_ident(conn, name);
}

/*
 * The PostgreSQL side of a query: se_loadgen."search_<table>"(kind, text,
 * limit), top-k by ts_rank with the document, timed inside as
 * timed_search is; and se_loadgen."count_<table>"(kind, text).
 */
static void
pg_install_functions(PGconn *conn, const LgOptions *o)
{
	char	   *table = lg_quote_ident(conn, o->pg_table);
	char	   *fsearch = lg_pg_function_name(conn, "search", o->pg_table);
	char	   *fcount = lg_pg_function_name(conn, "count", o->pg_table);
	char	   *cfg = PQescapeLiteral(conn, o->ts_config, strlen(o->ts_config));
	char		tsq[1024];
	char		sql[4096];

	snprintf(tsq, sizeof(tsq),
			 "CASE kind WHEN 'phrase' THEN phraseto_tsquery(%s::regconfig, qtext)"
			 " WHEN 'and' THEN plainto_tsquery(%s::regconfig, qtext)"
			 " ELSE replace(plainto_tsquery(%s::regconfig, qtext)::text, ' & ', ' | ')::tsquery END",
			 cfg, cfg, cfg);
	snprintf(sql, sizeof(sql),
			 "CREATE OR REPLACE FUNCTION se_loadgen.%s(kind text, qtext text, lim int,"
			 "    OUT server_ms float8, OUT response jsonb)\n"
			 "LANGUAGE plpgsql VOLATILE AS $f$\n"
			 "DECLARE t0 timestamptz := clock_timestamp(); q tsquery;\n"
			 "BEGIN\n"
			 "  q := %s;\n"
			 "  SELECT coalesce(jsonb_agg(h), '[]') INTO response FROM (\n"
			 "    SELECT t.id AS _id, ts_rank(t.tsv, q) AS _score, t.doc AS _source\n"
			 "    FROM %s t WHERE t.tsv @@ q ORDER BY 2 DESC LIMIT lim) h;\n"
			 "  server_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);\n"
			 "END $f$;\n"
			 "CREATE OR REPLACE FUNCTION se_loadgen.%s(kind text, qtext text) RETURNS bigint\n"
			 "LANGUAGE plpgsql STABLE AS $f$\n"
			 "DECLARE q tsquery; n bigint;\n"
			 "BEGIN\n"
			 "  q := %s;\n"
			 "  SELECT count(*) INTO n FROM %s t WHERE t.tsv @@ q;\n"
			 "  RETURN n;\n"
			 "END $f$;\n",
			 fsearch, tsq, table, fcount, tsq, table);
	PQclear(lg_exec_critical(conn, sql, 0, NULL));
	PQfreemem(cfg);
	free(table);
	free(fsearch);
	free(fcount);
}

/* Fill pg_kind / pg_text / pg_limit of every query (NULL kind: not translatable). */
void
lg_queries_translate(PGconn *conn, LgQueryStat *qs, int nq)
{
	int			i;

	for (i = 0; i < nq; i++)
	{
		const char *p[1] = {qs[i].text};
		PGresult   *res = lg_exec_critical(conn,
										   "SELECT kind, qtext, lim FROM se_loadgen.es_to_pg($1::jsonb)",
										   1, p);

		if (!PQgetisnull(res, 0, 0))
		{
			qs[i].pg_kind = strdup(PQgetvalue(res, 0, 0));
			qs[i].pg_text = strdup(PQgetvalue(res, 0, 1));
			qs[i].pg_limit = atoi(PQgetvalue(res, 0, 2));
		}
		PQclear(res);
	}
}

/* One query over HTTP; false on error.  As run_one. */
static bool
run_one_http(LgHttp *http, LgQueryStat *q, double *client_ms, double *server_ms)
{
	char		err[512];
	double		t = lg_now();
	int			hits;
	LgHttpResult res = lg_http_search(http, q->text, strlen(q->text), &hits, server_ms,
									  err, sizeof(err));

	*client_ms = (lg_now() - t) * 1000;
	if (res == LG_HTTP_OK)
	{
		q->hits = hits;
		return true;
	}
	{
		static int	shown = 0;

		if (__atomic_fetch_add(&shown, 1, __ATOMIC_RELAXED) < 3)
			lg_log("query failed: %s  query: %.200s", err, q->text);
	}
	return false;
}

/* One query; false on error.  *client_ms, *server_ms; qs->hits updated. */
static bool
run_one(PGconn *conn, QRun *run, LgQueryStat *q, double *client_ms, double *server_ms)
{
	const char *values[3];
	char		lim[16];
	PGresult   *res;
	double		t;
	bool		ok;

	if (run->target == LG_TARGET_SE)
	{
		values[0] = run->o->index;
		values[1] = q->text;
	}
	else
	{
		snprintf(lim, sizeof(lim), "%d", q->pg_limit);
		values[0] = q->pg_kind;
		values[1] = q->pg_text;
		values[2] = lim;
	}
	t = lg_now();
	res = PQexecPrepared(conn, "lg_query", run->target == LG_TARGET_SE ? 2 : 3,
						 values, NULL, NULL, 0);
	*client_ms = (lg_now() - t) * 1000;
	ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	if (ok)
	{
		const char *body = PQgetvalue(res, 0, 1);
		size_t		len = PQgetlength(res, 0, 1);
		static const char *const hits_path[] = {"hits", "hits"};

		*server_ms = atof(PQgetvalue(res, 0, 0));
		q->hits = run->target == LG_TARGET_SE ?
			lg_json_array_length_at(body, len, hits_path, 2) :
			lg_json_array_length_at(body, len, NULL, 0);
	}
	else
	{
		static int	shown = 0;

		if (__atomic_fetch_add(&shown, 1, __ATOMIC_RELAXED) < 3)
			lg_log("query failed: %s  query: %.200s", PQerrorMessage(conn), q->text);
	}
	PQclear(res);
	return ok;
}

static void
add_sample(QSamples *s, double c, double sv)
{
	if (s->n == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 256;
		s->c = realloc(s->c, sizeof(double) * s->cap);
		s->s = realloc(s->s, sizeof(double) * s->cap);
		if (s->c == NULL || s->s == NULL)
			lg_die("out of memory");
	}
	s->c[s->n] = c;
	s->s[s->n] = sv;
	s->n++;
}

static void *
qclient_main(void *arg)
{
	QClient    *cl = arg;
	QRun	   *run = cl->run;
	const LgOptions *o = run->o;
	PGconn	   *conn = NULL;
	LgHttp	   *http = NULL;
	bool		ready;
	char		app[64];
	long		i;
	int			w;
	double		cms,
				sms;

	snprintf(app, sizeof(app), "se-loadgen query %d", cl->id);
	cl->per_query = calloc(run->nq, sizeof(QSamples));
	cl->cold = NAN;
	if (o->http_url)
		http = lg_http_open(o, "_search", "application/json");
	else
		conn = lg_connect(o->dsn, app);
	if (conn)
	{
		PGresult   *res;

		if (o->timeout_ms > 0)
		{
			char		sql[64];

			snprintf(sql, sizeof(sql), "SET statement_timeout = %d", o->timeout_ms);
			PQclear(PQexec(conn, sql));
		}
		res = PQprepare(conn, "lg_query", run->stmt, 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			lg_log("client %d: cannot prepare: %s", cl->id, PQerrorMessage(conn));
			PQfinish(conn);
			conn = NULL;
		}
		PQclear(res);
	}
	ready = conn != NULL || http != NULL;
	if (!ready)
		__atomic_fetch_add(&run->failed_setup, 1, __ATOMIC_RELAXED);
	else
		for (w = 0; w < o->warmup; w++)
			for (i = 0; i < run->nactive; i++)
			{
				LgQueryStat *q = &run->qs[run->active[(cl->id + i) % run->nactive]];
				bool		ok = http ? run_one_http(http, q, &cms, &sms) :
					run_one(conn, run, q, &cms, &sms);

				if (ok && w == 0 && i == 0)
					cl->cold = cms;
			}
	pthread_barrier_wait(&run->ready);
	if (ready && GET_FAILED(run) == 0)
	{
		double		deadline = lg_now() + o->duration;	/* run->t0 may not be set yet */

		for (i = 0;; i++)
		{
			int			qi = run->active[(cl->id + i) % run->nactive];

			if (o->duration > 0 ? lg_now() >= deadline : i >= o->iterations)
				break;
			if (http ? run_one_http(http, &run->qs[qi], &cms, &sms) :
				run_one(conn, run, &run->qs[qi], &cms, &sms))
			{
				add_sample(&cl->per_query[qi], cms, sms);
				__atomic_fetch_add(&run->done_queries, 1, __ATOMIC_RELAXED);
			}
			else
			{
				__atomic_fetch_add(&run->errors, 1, __ATOMIC_RELAXED);
				/* curl reopens a dropped connection on its next request */
				if (conn && PQstatus(conn) != CONNECTION_OK)
				{
					PQreset(conn);
					if (PQstatus(conn) == CONNECTION_OK)
						PQclear(PQprepare(conn, "lg_query", run->stmt, 0, NULL));
					else
						lg_sleep_ms(500);
				}
			}
		}
	}
	cl->t_end = lg_now();
	if (conn)
		PQfinish(conn);
	lg_http_close(http);
	__atomic_fetch_add(&run->done, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void
plot_cdf(const LgQueryResult *r, const double *c, const double *s, long n, const char *prefix)
{
	char		path[1100],
				png[1100],
				script[2048];
	FILE	   *f;
	long		i,
				step = n > 2000 ? n / 2000 : 1;

	snprintf(path, sizeof(path), "%s-latency.csv", prefix);
	snprintf(png, sizeof(png), "%s-latency.png", prefix);
	f = fopen(path, "w");
	if (f == NULL)
		return;
	fprintf(f, "percentile,client_ms,server_ms\n");
	for (i = 0; i < n; i += step)
		fprintf(f, "%.3f,%.4f,%.4f\n", 100.0 * i / (n > 1 ? n - 1 : 1), c[i], s[i]);
	fprintf(f, "100,%.4f,%.4f\n", c[n - 1], s[n - 1]);
	fclose(f);
	snprintf(script, sizeof(script),
			 "set datafile separator ','\n"
			 "set title \"%s queries: %d clients, %.0f QPS; latency distribution\"\n"
			 "set xlabel 'latency, ms (log)'\nset ylabel 'percentile'\nset logscale x\n"
			 "set key bottom right\nset grid\nset yrange [0:100]\n"
			 "plot DATA using 2:1 skip 1 with lines lw 2 title 'client (round trip)', "
			 "DATA using 3:1 skip 1 with lines lw 2 title 'server (clock_timestamp around the call)'\n",
			 r->target, r->clients, r->qps);
	lg_plot(png, script, NULL, path);
}

/* Run the queries against the target; fills r (r->stats points into qs). */
void
lg_query_run(LgTarget target, const LgOptions *o, LgQueryStat *qs, int nq, LgQueryResult *r)
{
	QRun		run;
	QClient    *cls;
	PGconn	   *conn;
	int			i,
				k;
	long		total = 0;
	double	   *ac,
			   *as,
			   *cold;
	long		na = 0;
	int			ncold = 0;

	memset(&run, 0, sizeof(run));
	memset(r, 0, sizeof(*r));
	run.o = o;
	run.target = target;
	run.qs = qs;
	run.nq = nq;
	conn = lg_connect(o->dsn, "se-loadgen");
	if (conn == NULL)
		lg_die("cannot connect");
	lg_install_helpers(conn);
	run.active = malloc(sizeof(int) * nq);
	if (target == LG_TARGET_SE)
	{
		run.stmt = "SELECT server_ms, response FROM se_loadgen.timed_search($1, $2::jsonb)";
		for (i = 0; i < nq; i++)
			run.active[run.nactive++] = i;
	}
	else
	{
		char	   *fn = lg_pg_function_name(conn, "search", o->pg_table);
		char		sql[512];

		pg_install_functions(conn, o);
		lg_queries_translate(conn, qs, nq);
		snprintf(sql, sizeof(sql),
				 "SELECT server_ms, response FROM se_loadgen.%s($1, $2, $3::int)", fn);
		run.stmt = strdup(sql);
		free(fn);
		for (i = 0; i < nq; i++)
			if (qs[i].pg_kind)
				run.active[run.nactive++] = i;
			else
				lg_log("query %d has no PostgreSQL translation; left out: %.120s", i + 1, qs[i].text);
		if (run.nactive == 0)
			lg_die("no query translates to PostgreSQL full-text search (match, match_phrase, multi_match)");
	}

	cls = calloc(o->clients, sizeof(QClient));
	pthread_barrier_init(&run.ready, NULL, o->clients + 1);
	for (i = 0; i < o->clients; i++)
	{
		cls[i].run = &run;
		cls[i].id = i;
		if (pthread_create(&cls[i].thread, NULL, qclient_main, &cls[i]) != 0)
			lg_die("cannot start client thread %d", i);
	}
	pthread_barrier_wait(&run.ready);
	run.t0 = lg_now();
	if (run.failed_setup)
		lg_die("%d of %d clients could not connect or prepare", run.failed_setup, o->clients);
	{
		double		total_work = o->duration > 0 ? o->duration : (double) o->iterations * o->clients;
		double		last_t = run.t0;
		long		last_n = 0;
		double		rate = 0;

		while (__atomic_load_n(&run.done, __ATOMIC_RELAXED) < o->clients)
		{
			double		t;
			long		n;

			lg_sleep_ms(50);
			t = lg_now();
			if (t - last_t < 0.25)
				continue;
			n = __atomic_load_n(&run.done_queries, __ATOMIC_RELAXED);
			rate = (n - last_n) / (t - last_t);
			last_n = n;
			last_t = t;
			if (o->duration > 0)
				lg_progress_draw(target == LG_TARGET_SE ? "query" : "querypg", t - run.t0,
								 total_work, "s", rate, "queries");
			else
				lg_progress_draw(target == LG_TARGET_SE ? "query" : "querypg", (double) n,
								 total_work, "queries", rate, "");
		}
		lg_progress_end();
	}
	for (i = 0; i < o->clients; i++)
	{
		pthread_join(cls[i].thread, NULL);
		if (cls[i].t_end - run.t0 > r->seconds)
			r->seconds = cls[i].t_end - run.t0;
	}
	pthread_barrier_destroy(&run.ready);

	/* per query, then overall */
	for (i = 0; i < o->clients; i++)
		for (k = 0; k < nq; k++)
			total += cls[i].per_query[k].n;
	ac = malloc(sizeof(double) * (total + 1));
	as = malloc(sizeof(double) * (total + 1));
	cold = malloc(sizeof(double) * o->clients);
	for (k = 0; k < nq; k++)
	{
		long		n0 = na;

		for (i = 0; i < o->clients; i++)
		{
			QSamples   *s = &cls[i].per_query[k];

			memcpy(ac + na, s->c, sizeof(double) * s->n);
			memcpy(as + na, s->s, sizeof(double) * s->n);
			na += s->n;
		}
		qs[k].n = na - n0;
		qsort(ac + n0, na - n0, sizeof(double), lg_cmp_double);
		qsort(as + n0, na - n0, sizeof(double), lg_cmp_double);
		qs[k].c50 = lg_percentile(ac + n0, na - n0, 50);
		qs[k].c95 = lg_percentile(ac + n0, na - n0, 95);
		qs[k].c99 = lg_percentile(ac + n0, na - n0, 99);
		qs[k].s50 = lg_percentile(as + n0, na - n0, 50);
		qs[k].s95 = lg_percentile(as + n0, na - n0, 95);
		qs[k].s99 = lg_percentile(as + n0, na - n0, 99);
	}
	for (i = 0; i < o->clients; i++)
	{
		if (!isnan(cls[i].cold))
			cold[ncold++] = cls[i].cold;
		for (k = 0; k < nq; k++)
		{
			free(cls[i].per_query[k].c);
			free(cls[i].per_query[k].s);
		}
		free(cls[i].per_query);
	}
	qsort(ac, na, sizeof(double), lg_cmp_double);
	qsort(as, na, sizeof(double), lg_cmp_double);
	qsort(cold, ncold, sizeof(double), lg_cmp_double);
	r->target = target == LG_TARGET_PG ? "postgresql" :
		o->http_url ? "search_engine_http" : "search_engine";
	r->clients = o->clients;
	r->queries = na;
	r->errors = run.errors;
	r->qps = r->seconds > 0 ? na / r->seconds : 0;
	r->c50 = lg_percentile(ac, na, 50);
	r->c95 = lg_percentile(ac, na, 95);
	r->c99 = lg_percentile(ac, na, 99);
	r->cmax = na ? ac[na - 1] : NAN;
	r->s50 = lg_percentile(as, na, 50);
	r->s95 = lg_percentile(as, na, 95);
	r->s99 = lg_percentile(as, na, 99);
	r->cold50 = lg_percentile(cold, ncold, 50);
	r->cold_max = ncold ? cold[ncold - 1] : NAN;
	r->nstats = nq;
	r->stats = qs;
	if (o->plot_prefix && na > 0)
	{
		char		prefix[1024];

		snprintf(prefix, sizeof(prefix), "%s%s", o->plot_prefix,
				 target == LG_TARGET_SE ? "" : "-pg");
		plot_cdf(r, ac, as, na, prefix);
	}
	free(ac);
	free(as);
	free(cold);
	free(cls);
	free(run.active);
	PQfinish(conn);
}

void
lg_query_print(const LgQueryResult *r, FILE *out)
{
	int			k;

	fprintf(out, "%s queries: %d clients, %ld queries in %.2f s: %.1f QPS, %ld errors\n",
			r->target, r->clients, r->queries, r->seconds, r->qps, r->errors);
	fprintf(out, "  client ms: p50 %.3f, p95 %.3f, p99 %.3f, max %.3f\n",
			r->c50, r->c95, r->c99, r->cmax);
	fprintf(out, "  server ms%s: p50 %.3f, p95 %.3f, p99 %.3f\n",
			strcmp(r->target, "search_engine_http") == 0 ? " (took, whole ms)" : "",
			r->s50, r->s95, r->s99);
	if (!isnan(r->cold50))
		fprintf(out, "  first query on a new connection (cold), ms: median %.3f, max %.3f\n",
				r->cold50, r->cold_max);
	fprintf(out, "  %-4s %8s %9s %9s %9s %9s %5s  %s\n", "#", "n", "client50", "client95",
			"client99", "server50", "hits", "query");
	for (k = 0; k < r->nstats; k++)
	{
		const LgQueryStat *q = &r->stats[k];

		if (q->n == 0)
			continue;
		fprintf(out, "  %-4d %8ld %9.3f %9.3f %9.3f %9.3f %5d  %.70s\n", k + 1, q->n, q->c50,
				q->c95, q->c99, q->s50, q->hits, q->text);
	}
}

void
lg_query_write_json(const LgQueryResult *r, FILE *out)
{
	int			k;
	bool		first = true;

	fprintf(out, "{\"target\": \"%s\", \"clients\": %d, \"seconds\": %.3f, \"queries\": %ld,"
			" \"errors\": %ld, \"qps\": %.2f,"
			" \"client_ms\": {\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f, \"max\": %.4f},"
			" \"server_ms\": {\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f},"
			" \"cold_ms\": {\"p50\": %.4f, \"max\": %.4f}, \"per_query\": [",
			r->target, r->clients, r->seconds, r->queries, r->errors, r->qps,
			r->c50, r->c95, r->c99, r->cmax, r->s50, r->s95, r->s99, r->cold50, r->cold_max);
	for (k = 0; k < r->nstats; k++)
	{
		const LgQueryStat *q = &r->stats[k];

		if (q->n == 0)
			continue;
		fprintf(out, "%s{\"query\": ", first ? "" : ", ");
		lg_json_string(out, q->text);
		fprintf(out, ", \"n\": %ld, \"client_ms\": {\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f},"
				" \"server_ms\": {\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f}, \"hits\": %d}",
				q->n, q->c50, q->c95, q->c99, q->s50, q->s95, q->s99, q->hits);
		first = false;
	}
	fprintf(out, "]}");
}

int
lg_cmd_query(const LgOptions *o)
{
	int			nq;
	LgQueryStat *qs = lg_queries_load(o->queries, &nq);
	LgQueryResult r;

	if (o->http_url)
		lg_http_global_init();
	lg_query_run(LG_TARGET_SE, o, qs, nq, &r);
	if (!o->quiet)
		lg_query_print(&r, stdout);
	if (o->json_out)
	{
		FILE	   *f = fopen(o->json_out, "w");

		if (f == NULL)
			lg_die("cannot write %s: %s", o->json_out, strerror(errno));
		lg_query_write_json(&r, f);
		fputc('\n', f);
		fclose(f);
	}
	return r.errors == 0 ? 0 : 1;
}
