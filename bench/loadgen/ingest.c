/*-------------------------------------------------------------------------
 *
 * ingest.c
 *	  `se-loadgen ingest`: N client connections bulk an NDJSON corpus.
 *
 * Every client owns one connection and sends one batch at a time
 * (a synchronous client, as a Rally client or a Beats output worker is).
 * search_engine: `SELECT search_engine.bulk($1, $2, 'false', $3)` with the
 * batch's bytes as a binary text parameter, or with --http the same bytes
 * POSTed to <url>/<index>/_bulk?refresh=false (http.c).  PostgreSQL
 * (compare): the same bytes to one INSERT ... ON CONFLICT that pairs the
 * lines in SQL, one transaction per batch.  The transports sit behind
 * Transport (open, send, close); batches, classification, retries, counters
 * and the final verification (over SQL either way) are shared, so both
 * paths do the same work.
 *
 * Each first attempt is classified as Rally does for bulk requests with
 * detailed results: fully successful, partially rejected (some items 429),
 * fully rejected (every item 429), item errors (non-429 item failures),
 * timed out (statement_timeout, SQLSTATE 57014) or failed (any other
 * error; the connection is reset).  Retries, when asked for:
 *   server  bulk(..., max_retries => n): the engine retries its 429 items
 *           with backoff, and the classes describe the final answer;
 *   client  resend only the items that got 429, with exponential backoff
 *           and equal jitter (as Beats does), n times or (n = -1) until
 *           they are indexed; the classes describe the first attempt.
 * At the end: refresh, count, and the count must equal the documents
 * acknowledged as created (201).  Documents of timed-out requests may have
 * been applied anyway (a statement timeout does not withdraw a queued
 * shard request, as in Elasticsearch): the count may then exceed it, which
 * is reported as such.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

#define ADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

typedef struct Counters
{
	long		requests;
	long		req_ok;
	long		req_partial;
	long		req_rejected;
	long		req_item_errors;
	long		req_timeout;
	long		req_failed;
	long		docs_sent;
	long		docs_acked;
	long		docs_created;
	long		docs_rejected_first;
	long		docs_given_up;
	long		docs_item_errors;
	long		docs_lost;
	long		retry_requests;
	long		retry_items;
} Counters;

typedef struct Transport Transport;

typedef struct Run
{
	const LgOptions *o;
	LgTarget	target;
	const Transport *transport;
	LgCorpus	corpus;
	const char *stmt;			/* the prepared statement's text */
	char	   *table;			/* PG: quoted table name */
	Counters	c;
	pthread_barrier_t ready;
	int			done;			/* clients finished */
	int			failed_setup;
	double		t0;
} Run;

typedef struct Client
{
	Run		   *run;
	int			id;
	pthread_t	thread;
	PGconn	   *conn;			/* SQL transport */
	LgHttp	   *http;			/* HTTP transport */
	double	   *lat;
	long		nlat;
	long		cap;
	double		share_sum;		/* sum of 429 share over first attempts */
	double		share_partial_sum;
	double		rejected_ms_sum;	/* latency of fully rejected requests */
	double		t_end;			/* when its last request ended */
	int		   *status;
	size_t	   *start;
	char	   *buf;			/* a retry's body */
	size_t		bufcap;
	int		   *pending;		/* items still to send */
	unsigned int seed;
} Client;

typedef enum Outcome
{
	OUT_OK,
	OUT_PARTIAL,
	OUT_REJECTED,
	OUT_ITEM_ERRORS,
	OUT_TIMEOUT,
	OUT_FAILED
} Outcome;

/*
 * How a client sends one bulk.  send fills cl->status[] with the item
 * statuses and returns OUT_OK, or returns OUT_TIMEOUT / OUT_FAILED; *ms is
 * the request's round trip.  max_retries is bulk()'s (SQL only; main.c
 * refuses --retry server with --http).
 */
struct Transport
{
	const char *label;			/* the result's target, the progress label */
	bool		(*open) (Client *cl);
	Outcome		(*send) (Client *cl, const char *body, size_t len, int nitems,
						 int max_retries, double *ms);
	void		(*close) (Client *cl);
};

static const char se_bulk_sql[] =
"SELECT search_engine.bulk($1, $2, 'false', $3)";

/*
 * The same NDJSON, paired into rows in SQL.  RETURNING (xmax = 0) tells an
 * insert from an update, as 201 from 200.
 */
static const char pg_insert_fmt[] =
"WITH l AS (SELECT line, row_number() OVER (ORDER BY ord) AS n"
"           FROM unnest(string_to_array($1, E'\\n')) WITH ORDINALITY AS u(line, ord)"
"           WHERE line <> ''),"
"     ins AS (INSERT INTO %s AS t (id, doc)"
"             SELECT coalesce(a.line::jsonb->'index'->>'_id', a.line::jsonb->'create'->>'_id',"
"                             gen_random_uuid()::text), s.line::jsonb"
"             FROM l a JOIN l s ON s.n = a.n + 1 WHERE a.n %% 2 = 1"
"             ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc"
"             RETURNING (t.xmax = 0) AS created)"
"SELECT count(*) FILTER (WHERE created), count(*) FROM ins";

static void
record_latency(Client *cl, double ms)
{
	if (cl->nlat == cl->cap)
	{
		cl->cap = cl->cap ? cl->cap * 2 : 1024;
		cl->lat = realloc(cl->lat, sizeof(double) * cl->cap);
		if (cl->lat == NULL)
			lg_die("out of memory");
	}
	cl->lat[cl->nlat++] = ms;
}

static bool
client_prepare(Client *cl)
{
	Run		   *run = cl->run;
	PGresult   *res;
	char		sql[128];

	if (run->o->timeout_ms > 0)
	{
		snprintf(sql, sizeof(sql), "SET statement_timeout = %d", run->o->timeout_ms);
		PQclear(PQexec(cl->conn, sql));
	}
	if (run->target == LG_TARGET_PG && run->o->durability &&
		strcmp(run->o->durability, "async") == 0)
		PQclear(PQexec(cl->conn, "SET synchronous_commit = off"));
	res = PQprepare(cl->conn, "lg_bulk", run->stmt, 0, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		lg_log("client %d: cannot prepare: %s", cl->id, PQerrorMessage(cl->conn));
		PQclear(res);
		return false;
	}
	PQclear(res);
	return true;
}

static void
client_reconnect(Client *cl)
{
	PQreset(cl->conn);
	if (PQstatus(cl->conn) == CONNECTION_OK)
		(void) client_prepare(cl);
	else
		lg_sleep_ms(500);
}

/*
 * SQL: send body (nitems items) once.  On an answer, status[] gets the item
 * statuses (PostgreSQL: 201/200 for all, from the row counts).
 */
static Outcome
sql_send(Client *cl, const char *body, size_t len, int nitems, int max_retries, double *ms)
{
	Run		   *run = cl->run;
	char		retries[16];
	const char *values[3];
	int			lengths[3];
	int			formats[3] = {1, 0, 0};
	PGresult   *res;
	double		t;
	Outcome		out;

	snprintf(retries, sizeof(retries), "%d", max_retries);
	values[0] = body;
	lengths[0] = (int) len;
	values[1] = run->o->index;
	lengths[1] = 0;
	values[2] = retries;
	lengths[2] = 0;
	t = lg_now();
	res = PQexecPrepared(cl->conn, "lg_bulk", run->target == LG_TARGET_SE ? 3 : 1,
						 values, lengths, formats, 0);
	*ms = (lg_now() - t) * 1000;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		out = (state && strcmp(state, "57014") == 0) ? OUT_TIMEOUT : OUT_FAILED;
		if (out == OUT_FAILED)
		{
			static int	shown = 0;

			if (__atomic_fetch_add(&shown, 1, __ATOMIC_RELAXED) < 3)
				lg_log("client %d: request failed: %s", cl->id, PQerrorMessage(cl->conn));
		}
		PQclear(res);
		if (PQstatus(cl->conn) != CONNECTION_OK)
			client_reconnect(cl);
		return out;
	}
	if (run->target == LG_TARGET_SE)
	{
		int			n = lg_bulk_statuses(PQgetvalue(res, 0, 0), PQgetlength(res, 0, 0),
										 cl->status, nitems);

		if (n != nitems)
		{
			lg_log("client %d: bulk answered %d items for %d", cl->id, n, nitems);
			PQclear(res);
			return OUT_FAILED;
		}
	}
	else
	{
		long		created = atol(PQgetvalue(res, 0, 0));
		long		rows = atol(PQgetvalue(res, 0, 1));
		int			i;

		for (i = 0; i < nitems; i++)
			cl->status[i] = i < created ? 201 : (i < rows ? 200 : 500);
	}
	PQclear(res);
	return OUT_OK;				/* refined by the caller from status[] */
}

static bool
sql_open(Client *cl)
{
	char		app[64];

	snprintf(app, sizeof(app), "se-loadgen ingest %d", cl->id);
	cl->conn = lg_connect(cl->run->o->dsn, app);
	return cl->conn != NULL && client_prepare(cl);
}

static void
sql_close(Client *cl)
{
	if (cl->conn)
		PQfinish(cl->conn);
}

/* HTTP: POST body to _bulk once (http.c); a 429 for the whole request is all items 429. */
static Outcome
http_send(Client *cl, const char *body, size_t len, int nitems, int max_retries, double *ms)
{
	char		err[512];
	double		t = lg_now();
	LgHttpResult res = lg_http_bulk(cl->http, body, len, nitems, cl->status, err, sizeof(err));

	*ms = (lg_now() - t) * 1000;
	if (res == LG_HTTP_OK)
		return OUT_OK;			/* refined by the caller from status[] */
	if (res == LG_HTTP_FAILED)
	{
		static int	shown = 0;

		if (__atomic_fetch_add(&shown, 1, __ATOMIC_RELAXED) < 3)
			lg_log("client %d: request failed: %s", cl->id, err);
	}
	return res == LG_HTTP_TIMEOUT ? OUT_TIMEOUT : OUT_FAILED;
}

static bool
http_open(Client *cl)
{
	cl->http = lg_http_open(cl->run->o, "_bulk?refresh=false", "application/x-ndjson");
	return cl->http != NULL;
}

static void
http_close(Client *cl)
{
	lg_http_close(cl->http);
}

static const Transport sql_transport = {"search_engine", sql_open, sql_send, sql_close};
static const Transport pg_transport = {"postgresql", sql_open, sql_send, sql_close};
static const Transport http_transport = {"search_engine_http", http_open, http_send, http_close};

/* Copy the pending items of batch b into cl->buf, newline-terminated. */
static size_t
build_body(Client *cl, const LgBatch *b, int npending)
{
	size_t		need = 0;
	size_t		len = 0;
	int			i;

	for (i = 0; i < npending; i++)
		need += b->start[cl->pending[i] + 1] - b->start[cl->pending[i]] + 1;
	if (need > cl->bufcap)
	{
		cl->bufcap = need * 2;
		cl->buf = realloc(cl->buf, cl->bufcap);
		if (cl->buf == NULL)
			lg_die("out of memory");
	}
	for (i = 0; i < npending; i++)
	{
		size_t		s = b->start[cl->pending[i]];
		size_t		e = b->start[cl->pending[i] + 1];

		memcpy(cl->buf + len, b->base + s, e - s);
		len += e - s;
		if (cl->buf[len - 1] != '\n')
			cl->buf[len++] = '\n';
	}
	return len;
}

/* Exponential backoff with equal jitter: half fixed, half random. */
static long
backoff_ms(Client *cl, int attempt)
{
	const LgOptions *o = cl->run->o;
	double		d = (double) o->backoff_ms * pow(2.0, attempt < 20 ? attempt : 20);

	if (d > o->backoff_max_ms)
		d = o->backoff_max_ms;
	return (long) (d / 2 + (d / 2) * ((double) rand_r(&cl->seed) / RAND_MAX));
}

/* One batch: the first attempt, its classification, the client retries. */
static void
client_batch(Client *cl, const LgBatch *b)
{
	Run		   *run = cl->run;
	const LgOptions *o = run->o;
	Counters   *c = &run->c;
	int			server_retries = o->retry == LG_RETRY_SERVER ? o->retries : 0;
	double		ms;
	Outcome		out;
	int			i,
				n429 = 0,
				nok = 0,
				ncreated = 0,
				nother = 0,
				npending = 0,
				attempt;

	ADD(c->docs_sent, b->n);
	out = run->transport->send(cl, b->base, b->len, b->n, server_retries, &ms);
	record_latency(cl, ms);
	ADD(c->requests, 1);
	if (out == OUT_TIMEOUT || out == OUT_FAILED)
	{
		ADD(*(out == OUT_TIMEOUT ? &c->req_timeout : &c->req_failed), 1);
		ADD(c->docs_lost, b->n);
		return;
	}
	for (i = 0; i < b->n; i++)
	{
		int			st = cl->status[i];

		if (st == 429)
		{
			n429++;
			cl->pending[npending++] = i;
		}
		else if (st == 200 || st == 201)
		{
			nok++;
			ncreated += st == 201;
		}
		else
			nother++;
	}
	if (n429 == b->n)
		out = OUT_REJECTED;
	else if (n429 > 0)
		out = OUT_PARTIAL;
	else if (nother > 0)
		out = OUT_ITEM_ERRORS;
	else
		out = OUT_OK;
	switch (out)
	{
		case OUT_OK:
			ADD(c->req_ok, 1);
			break;
		case OUT_PARTIAL:
			ADD(c->req_partial, 1);
			cl->share_partial_sum += (double) n429 / b->n;
			break;
		case OUT_REJECTED:
			ADD(c->req_rejected, 1);
			cl->rejected_ms_sum += ms;
			break;
		default:
			ADD(c->req_item_errors, 1);
			break;
	}
	cl->share_sum += (double) n429 / b->n;
	ADD(c->docs_acked, nok);
	ADD(c->docs_created, ncreated);
	ADD(c->docs_rejected_first, n429);
	ADD(c->docs_item_errors, nother);

	/* client-side retries: resend only what got 429 */
	for (attempt = 0; npending > 0 && o->retry == LG_RETRY_CLIENT &&
		 (o->retries < 0 || attempt < o->retries); attempt++)
	{
		size_t		len;
		int			k = 0;

		lg_sleep_ms(backoff_ms(cl, attempt));
		len = build_body(cl, b, npending);
		ADD(c->retry_requests, 1);
		ADD(c->retry_items, npending);
		out = run->transport->send(cl, cl->buf, len, npending, 0, &ms);
		if (out == OUT_TIMEOUT || out == OUT_FAILED)
		{
			ADD(c->docs_lost, npending);
			npending = 0;
			break;
		}
		for (i = 0; i < npending; i++)
		{
			int			st = cl->status[i];

			if (st == 429)
				cl->pending[k++] = cl->pending[i];
			else if (st == 200 || st == 201)
			{
				ADD(c->docs_acked, 1);
				ADD(c->docs_created, st == 201);
			}
			else
				ADD(c->docs_item_errors, 1);
		}
		npending = k;
	}
	ADD(c->docs_given_up, npending);
}

static void *
client_main(void *arg)
{
	Client	   *cl = arg;
	Run		   *run = cl->run;
	const LgOptions *o = run->o;
	LgBatch		b;
	long		sent = 0;

	cl->status = malloc(sizeof(int) * (o->batch + 1));
	cl->pending = malloc(sizeof(int) * (o->batch + 1));
	cl->start = malloc(sizeof(size_t) * (o->batch + 1));
	cl->seed = 0x9e3779b9u * (unsigned) (cl->id + 1);
	if (!run->transport->open(cl))
		__atomic_fetch_add(&run->failed_setup, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&run->ready);
	if (GET(run->failed_setup) == 0)
	{
		b.start = cl->start;
		while (o->requests_per_client == 0 || sent < o->requests_per_client)
		{
			if (!lg_corpus_next(&run->corpus, o->batch, &b))
				break;
			client_batch(cl, &b);
			sent++;
		}
	}
	cl->t_end = lg_now();
	run->transport->close(cl);
	__atomic_fetch_add(&run->done, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Timeline samples (one a second) for the plot. */
typedef struct Sample
{
	double		t;
	long		acked;
	long		rejected_docs;
	long		req_ok,
				req_partial,
				req_rejected;
} Sample;

static void
monitor(Run *run, long total_docs, Sample **samples, int *nsamples)
{
	int			cap = 0;
	double		next_sample = run->t0 + 1;
	double		last_t = run->t0;
	long		last_acked = 0;
	double		rate = 0;
	double		next_draw = 0;

	*samples = NULL;
	*nsamples = 0;
	while (GET(run->done) < run->o->clients)
	{
		double		t;
		long		acked,
					sent;
		char		extra[96];

		lg_sleep_ms(20);
		t = lg_now();
		if (t < next_draw && t < next_sample)
			continue;
		next_draw = t + 0.25;
		acked = GET(run->c.docs_acked);
		sent = GET(run->c.docs_sent);
		if (t - last_t >= 1.0 || rate == 0)
		{
			rate = (acked - last_acked) / (t - last_t);
			last_acked = acked;
			last_t = t;
		}
		snprintf(extra, sizeof(extra), "acked, 429 items %.1f%%, %ld retried",
				 sent ? 100.0 * GET(run->c.docs_rejected_first) / sent : 0.0,
				 GET(run->c.retry_items));
		lg_progress_draw(run->transport == &sql_transport ? "ingest" :
						 run->transport == &pg_transport ? "ingestpg" : "ingest-http",
						 (double) acked, (double) total_docs, "docs", rate, extra);
		if (t >= next_sample)
		{
			Sample	   *s;

			if (*nsamples == cap)
			{
				cap = cap ? cap * 2 : 256;
				*samples = realloc(*samples, sizeof(Sample) * cap);
			}
			s = &(*samples)[(*nsamples)++];
			s->t = t - run->t0;
			s->acked = acked;
			s->rejected_docs = GET(run->c.docs_rejected_first);
			s->req_ok = GET(run->c.req_ok);
			s->req_partial = GET(run->c.req_partial);
			s->req_rejected = GET(run->c.req_rejected);
			next_sample += 1;
		}
	}
	lg_progress_end();
}

static void
plot_timeline(const LgIngestResult *r, const Sample *s, int n, const char *prefix)
{
	char		path[1100];
	char		png[1100];
	char		script[2048];
	FILE	   *f;
	int			i;

	snprintf(path, sizeof(path), "%s-timeline.csv", prefix);
	snprintf(png, sizeof(png), "%s-timeline.png", prefix);
	f = fopen(path, "w");
	if (f == NULL)
	{
		lg_log("cannot write %s: %s", path, strerror(errno));
		return;
	}
	fprintf(f, "t,docs_per_s,rejected_docs_per_s,requests_ok,requests_partial,requests_rejected\n");
	for (i = 0; i < n; i++)
	{
		const Sample *p = i ? &s[i - 1] : NULL;
		double		dt = p ? s[i].t - p->t : s[i].t;

		fprintf(f, "%.2f,%.1f,%.1f,%ld,%ld,%ld\n", s[i].t,
				(s[i].acked - (p ? p->acked : 0)) / dt,
				(s[i].rejected_docs - (p ? p->rejected_docs : 0)) / dt,
				s[i].req_ok - (p ? p->req_ok : 0),
				s[i].req_partial - (p ? p->req_partial : 0),
				s[i].req_rejected - (p ? p->req_rejected : 0));
	}
	fclose(f);
	snprintf(script, sizeof(script),
			 "set datafile separator ','\n"
			 "set title \"%s ingest: %d clients, batch %d, %d shards (%.0f docs/s overall)\"\n"
			 "set xlabel 'seconds'\nset ylabel 'documents/s'\n"
			 "set key top right\nset grid\nset yrange [0:*]\n"
			 "plot DATA using 1:2 skip 1 with lines lw 2 title 'indexed docs/s', "
			 "DATA using 1:3 skip 1 with lines lw 1 title 'rejected (429) docs/s'\n",
			 r->target, r->clients, r->batch, r->shards,
			 r->seconds > 0 ? r->docs_acked / r->seconds : 0);
	lg_plot(png, script, NULL, path);
}

static long
pool_counter(PGconn *conn, const char *col)
{
	char		sql[256];
	char	   *v;
	long		n;

	snprintf(sql, sizeof(sql),
			 "SELECT coalesce(sum(%s), 0) FROM search_engine.thread_pool WHERE name = 'write'", col);
	v = lg_query_value(conn, sql, 0, NULL);
	n = v ? atol(v) : 0;
	free(v);
	return n;
}

/* The settings given on the command line, as a JSON object. */
static char *
settings_json(const LgOptions *o)
{
	static char buf[512];
	int			n = 0;

	n += snprintf(buf + n, sizeof(buf) - n, "{");
	if (o->shards > 0)
		n += snprintf(buf + n, sizeof(buf) - n, "\"number_of_shards\": %d,", o->shards);
	if (o->replicas >= 0)
		n += snprintf(buf + n, sizeof(buf) - n, "\"number_of_replicas\": %d,", o->replicas);
	if (o->refresh_interval)
		n += snprintf(buf + n, sizeof(buf) - n, "\"refresh_interval\": \"%s\",", o->refresh_interval);
	if (o->durability)
		n += snprintf(buf + n, sizeof(buf) - n, "\"translog.durability\": \"%s\",", o->durability);
	if (buf[n - 1] == ',')
		n--;
	snprintf(buf + n, sizeof(buf) - n, "}");
	return buf;
}

static char *
read_file(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *s;
	long		n;

	if (f == NULL)
		lg_die("cannot read %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = malloc(n + 1);
	if (fread(s, 1, n, f) != (size_t) n)
		lg_die("cannot read %s", path);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Fresh target: the index (from --index-body + command-line settings) or the table. */
static void
setup_target(PGconn *conn, Run *run)
{
	const LgOptions *o = run->o;

	if (run->target == LG_TARGET_SE)
	{
		char	   *body = o->index_body ? read_file(o->index_body) : strdup("{}");
		const char *p[3] = {o->index, body, settings_json(o)};

		if (!o->append)
			PQclear(lg_exec_critical(conn,
									 "SELECT search_engine.delete_index(index) FROM search_engine.indices WHERE index = $1",
									 1, p));
		if (!o->append || lg_query_value(conn, "SELECT 1 FROM search_engine.indices WHERE index = $1", 1, p) == NULL)
			PQclear(lg_exec_critical(conn,
									 "SELECT search_engine.create_index($1, b || jsonb_build_object('settings',"
									 " coalesce(b->'settings', '{}') || $3::jsonb)) FROM (SELECT $2::jsonb AS b) x",
									 3, p));
		free(body);
	}
	else
	{
		char		sql[4096];
		char		expr[2048] = "";
		char	   *fields = strdup(o->pg_fields);
		char	   *tok,
				   *save = NULL;
		int			n = 0;

		for (tok = strtok_r(fields, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			char	   *lit = PQescapeLiteral(conn, tok, strlen(tok));

			n += snprintf(expr + n, sizeof(expr) - n, "%scoalesce(doc->>%s, '')",
						  n ? " || ' ' || " : "", lit);
			PQfreemem(lit);
		}
		free(fields);
		if (!o->append)
		{
			snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s", run->table);
			PQclear(lg_exec_critical(conn, sql, 0, NULL));
		}
		{
			char	   *cfg = PQescapeLiteral(conn, o->ts_config, strlen(o->ts_config));

			snprintf(sql, sizeof(sql),
					 "CREATE TABLE IF NOT EXISTS %s (id text PRIMARY KEY, doc jsonb NOT NULL,"
					 " tsv tsvector GENERATED ALWAYS AS (to_tsvector(%s::regconfig, %s)) STORED);"
					 " CREATE INDEX IF NOT EXISTS %s_tsv ON %s USING gin (tsv)",
					 run->table, cfg, expr, o->pg_table, run->table);
			PQfreemem(cfg);
		}
		PQclear(lg_exec_critical(conn, sql, 0, NULL));
		/* a checkpoint first, so that the load does not pay for the setup's */
		PQclear(lg_exec_critical(conn, "CHECKPOINT", 0, NULL));
	}
}

/* Ingest o->corpus into the target; fills r.  Exits on setup errors. */
void
lg_ingest_run(LgTarget target, const LgOptions *o, LgIngestResult *r)
{
	Run			run;
	Client	   *cls;
	PGconn	   *conn;
	Sample	   *samples;
	int			nsamples;
	int			i;
	long		total_docs;
	double	   *all;
	long		nall = 0;
	char		sql[2048];
	long		rej0 = 0,
				comp0 = 0;

	memset(&run, 0, sizeof(run));
	memset(r, 0, sizeof(*r));
	run.o = o;
	run.target = target;
	run.transport = target == LG_TARGET_PG ? &pg_transport :
		o->http_url ? &http_transport : &sql_transport;
	if (run.transport == &http_transport)
		lg_http_global_init();
	conn = lg_connect(o->dsn, "se-loadgen");
	if (conn == NULL)
		lg_die("cannot connect");
	if (target == LG_TARGET_PG)
	{
		run.table = lg_quote_ident(conn, o->pg_table);
		snprintf(sql, sizeof(sql), pg_insert_fmt, run.table);
		run.stmt = strdup(sql);
	}
	else
		run.stmt = se_bulk_sql;
	setup_target(conn, &run);
	if (target == LG_TARGET_SE)
	{
		const char *p[1] = {o->index};
		char	   *v = lg_query_value(conn,
									   "SELECT pri FROM search_engine.indices WHERE index = $1", 1, p);

		r->shards = v ? atoi(v) : 0;
		free(v);
		rej0 = pool_counter(conn, "rejected");
		comp0 = pool_counter(conn, "completed");
	}
	lg_corpus_open(&run.corpus, o->corpus);
	if (o->requests_per_client > 0)
	{
		run.corpus.limit = o->requests_per_client * o->clients * (long) o->batch;
		run.corpus.wrap = run.corpus.limit > run.corpus.ndocs;
	}
	if (o->max_docs > 0 && o->max_docs < run.corpus.limit)
		run.corpus.limit = o->max_docs;
	total_docs = run.corpus.limit;

	cls = calloc(o->clients, sizeof(Client));
	pthread_barrier_init(&run.ready, NULL, o->clients + 1);
	for (i = 0; i < o->clients; i++)
	{
		cls[i].run = &run;
		cls[i].id = i;
		if (pthread_create(&cls[i].thread, NULL, client_main, &cls[i]) != 0)
			lg_die("cannot start client thread %d", i);
	}
	pthread_barrier_wait(&run.ready);
	run.t0 = lg_now();
	if (run.failed_setup)
		lg_die("%d of %d clients could not connect (max_connections?)", run.failed_setup, o->clients);
	monitor(&run, total_docs, &samples, &nsamples);
	for (i = 0; i < o->clients; i++)
	{
		pthread_join(cls[i].thread, NULL);
		if (cls[i].t_end - run.t0 > r->seconds)
			r->seconds = cls[i].t_end - run.t0;
	}
	pthread_barrier_destroy(&run.ready);

	r->target = run.transport->label;
	r->clients = o->clients;
	r->batch = o->batch;
	r->requests = run.c.requests;
	r->req_ok = run.c.req_ok;
	r->req_partial = run.c.req_partial;
	r->req_rejected = run.c.req_rejected;
	r->req_item_errors = run.c.req_item_errors;
	r->req_timeout = run.c.req_timeout;
	r->req_failed = run.c.req_failed;
	r->docs_sent = run.c.docs_sent;
	r->docs_acked = run.c.docs_acked;
	r->docs_created = run.c.docs_created;
	r->docs_rejected_first = run.c.docs_rejected_first;
	r->docs_given_up = run.c.docs_given_up;
	r->docs_item_errors = run.c.docs_item_errors;
	r->docs_lost = run.c.docs_lost;
	r->retry_requests = run.c.retry_requests;
	r->retry_items = run.c.retry_items;

	for (i = 0; i < o->clients; i++)
		nall += cls[i].nlat;
	all = malloc(sizeof(double) * (nall + 1));
	nall = 0;
	for (i = 0; i < o->clients; i++)
	{
		memcpy(all + nall, cls[i].lat, sizeof(double) * cls[i].nlat);
		nall += cls[i].nlat;
		r->rejected_share_sum += cls[i].share_sum;
		r->rejected_share_partial_sum += cls[i].share_partial_sum;
		r->lat_rejected_mean += cls[i].rejected_ms_sum;
		free(cls[i].lat);
		free(cls[i].status);
		free(cls[i].pending);
		free(cls[i].start);
		free(cls[i].buf);
	}
	qsort(all, nall, sizeof(double), lg_cmp_double);
	r->lat_p50 = lg_percentile(all, nall, 50);
	r->lat_p95 = lg_percentile(all, nall, 95);
	r->lat_p99 = lg_percentile(all, nall, 99);
	r->lat_max = nall ? all[nall - 1] : NAN;
	r->lat_rejected_mean = r->req_rejected ? r->lat_rejected_mean / r->req_rejected : NAN;
	free(all);
	free(cls);
	lg_corpus_close(&run.corpus);

	/* verify: everything acknowledged is there */
	if (target == LG_TARGET_SE)
	{
		const char *p[1] = {o->index};
		double		t = lg_now();
		char	   *v;

		PQclear(lg_exec_critical(conn, "SELECT search_engine.refresh($1)", 1, p));
		r->refresh_seconds = lg_now() - t;
		v = lg_query_value(conn, "SELECT search_engine.count($1)", 1, p);
		r->final_count = v ? atol(v) : -1;
		free(v);
		r->pool_rejected = pool_counter(conn, "rejected") - rej0;
		r->pool_completed = pool_counter(conn, "completed") - comp0;
		v = lg_query_value(conn, "SELECT \"store.size\" FROM search_engine.indices WHERE index = $1", 1, p);
		r->size_bytes = v ? atol(v) : 0;
		free(v);
	}
	else
	{
		char	   *v;

		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", run.table);
		r->final_count = atol((v = lg_query_value(conn, sql, 0, NULL)));
		free(v);
		snprintf(sql, sizeof(sql), "SELECT pg_total_relation_size('%s'::regclass)", run.table);
		r->size_bytes = atol((v = lg_query_value(conn, sql, 0, NULL)));
		free(v);
	}
	r->verified = r->final_count == r->docs_created;
	if (o->plot_prefix && nsamples > 0)
	{
		char		prefix[1024];

		snprintf(prefix, sizeof(prefix), "%s%s", o->plot_prefix,
				 target == LG_TARGET_SE ? "" : "-pg");
		plot_timeline(r, samples, nsamples, prefix);
	}
	free(samples);
	PQfinish(conn);
}

double
lg_ingest_docs_per_s(const LgIngestResult *r)
{
	double		t = r->seconds + r->refresh_seconds;

	return t > 0 ? r->docs_acked / t : 0;
}

void
lg_ingest_print(const LgIngestResult *r, FILE *out)
{
	double		req = r->requests > 0 ? (double) r->requests : 1;

	fprintf(out, "%s ingest: %d clients, batch %d%s%.0d%s\n", r->target, r->clients, r->batch,
			r->shards ? ", " : "", r->shards, r->shards ? " shards" : "");
	fprintf(out, "  %ld documents acknowledged in %.2f s (%.0f docs/s), searchable after the final"
			" refresh (%.2f s): %.0f docs/s\n",
			r->docs_acked, r->seconds, r->seconds > 0 ? r->docs_acked / r->seconds : 0,
			r->refresh_seconds, lg_ingest_docs_per_s(r));
	fprintf(out, "  requests %ld: fully successful %ld (%.1f%%), partially rejected %ld (%.1f%%),"
			" fully rejected %ld (%.1f%%), item errors %ld, timed out %ld, failed %ld\n",
			r->requests, r->req_ok, 100 * r->req_ok / req, r->req_partial,
			100 * r->req_partial / req, r->req_rejected, 100 * r->req_rejected / req,
			r->req_item_errors, r->req_timeout, r->req_failed);
	fprintf(out, "  documents sent %ld, rejected (429) on the first attempt %ld (%.2f%%), mean 429"
			" share of a partially rejected request %.1f%%\n",
			r->docs_sent, r->docs_rejected_first,
			r->docs_sent ? 100.0 * r->docs_rejected_first / r->docs_sent : 0,
			r->req_partial ? 100 * r->rejected_share_partial_sum / r->req_partial : 0);
	if (r->retry_requests)
		fprintf(out, "  client retries: %ld requests, %ld items; given up %ld\n",
				r->retry_requests, r->retry_items, r->docs_given_up);
	else if (r->docs_given_up)
		fprintf(out, "  given up (429, no retry): %ld\n", r->docs_given_up);
	fprintf(out, "  bulk latency ms: p50 %.1f, p95 %.1f, p99 %.1f, max %.1f",
			r->lat_p50, r->lat_p95, r->lat_p99, r->lat_max);
	if (r->req_rejected)
		fprintf(out, "; a fully rejected request: %.2f on average", r->lat_rejected_mean);
	fputc('\n', out);
	if (r->pool_rejected || r->pool_completed)
		fprintf(out, "  thread_pool write: rejected %ld, completed %ld shard sub-requests\n",
				r->pool_rejected, r->pool_completed);
	fprintf(out, "  verify: count %ld %s %ld documents acknowledged as created%s\n",
			r->final_count, r->verified ? "==" : "!=", r->docs_created,
			r->verified ? " (ok)" :
			(r->final_count > r->docs_created && (r->req_timeout || r->req_failed) ?
			 " (requests that timed out or failed were applied anyway)" : " (MISMATCH)"));
}

void
lg_ingest_write_json(const LgIngestResult *r, FILE *out)
{
	fprintf(out, "{\"target\": \"%s\", \"clients\": %d, \"batch\": %d, \"shards\": %d,"
			" \"seconds\": %.3f, \"docs_per_s\": %.1f, \"refresh_seconds\": %.3f,"
			" \"docs_per_s_searchable\": %.1f,"
			" \"requests\": %ld, \"requests_ok\": %ld, \"requests_partial\": %ld,"
			" \"requests_rejected\": %ld, \"requests_item_errors\": %ld,"
			" \"requests_timeout\": %ld, \"requests_failed\": %ld,"
			" \"docs_sent\": %ld, \"docs_acked\": %ld, \"docs_created\": %ld,"
			" \"docs_rejected_first\": %ld, \"docs_given_up\": %ld, \"docs_item_errors\": %ld,"
			" \"docs_lost\": %ld, \"retry_requests\": %ld, \"retry_items\": %ld,"
			" \"latency_ms\": {\"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f, \"max\": %.3f,"
			" \"fully_rejected_mean\": %.3f},"
			" \"final_count\": %ld, \"verified\": %s, \"pool_rejected\": %ld,"
			" \"pool_completed\": %ld, \"size_bytes\": %ld}",
			r->target, r->clients, r->batch, r->shards, r->seconds,
			r->seconds > 0 ? r->docs_acked / r->seconds : 0, r->refresh_seconds,
			lg_ingest_docs_per_s(r), r->requests, r->req_ok, r->req_partial, r->req_rejected, r->req_item_errors,
			r->req_timeout, r->req_failed, r->docs_sent, r->docs_acked, r->docs_created,
			r->docs_rejected_first, r->docs_given_up, r->docs_item_errors, r->docs_lost,
			r->retry_requests, r->retry_items, r->lat_p50, r->lat_p95, r->lat_p99, r->lat_max,
			r->req_rejected ? r->lat_rejected_mean : 0, r->final_count, r->verified ? "true" : "false", r->pool_rejected,
			r->pool_completed, r->size_bytes);
}

/* One row per run, header when the file is new. */
void
lg_ingest_append_csv(const LgIngestResult *r, const LgOptions *o, const char *path)
{
	FILE	   *f = fopen(path, "a");
	double		req = r->requests > 0 ? (double) r->requests : 1;
	static const char *const retry_names[] = {"none", "server", "client"};

	if (f == NULL)
		lg_die("cannot write %s: %s", path, strerror(errno));
	if (ftell(f) == 0)
		fprintf(f, "label,target,clients,batch,shards,concurrency,retry,retries,seconds,docs_per_s,"
				"requests,req_ok,req_partial,req_rejected,req_item_errors,req_timeout,req_failed,"
				"share_ok,share_partial,share_rejected,docs_sent,docs_acked,docs_created,"
				"docs_rejected_first,rejected_doc_share,mean_share_partial,docs_given_up,"
				"retry_requests,retry_items,lat_p50_ms,lat_p95_ms,lat_p99_ms,lat_max_ms,"
				"final_count,verified,pool_rejected,pool_completed\n");
	fprintf(f, "%s,%s,%d,%d,%d,%d,%s,%d,%.3f,%.1f,%ld,%ld,%ld,%ld,%ld,%ld,%ld,%.4f,%.4f,%.4f,"
			"%ld,%ld,%ld,%ld,%.4f,%.4f,%ld,%ld,%ld,%.2f,%.2f,%.2f,%.2f,%ld,%s,%ld,%ld\n",
			o->label ? o->label : "", r->target, r->clients, r->batch, r->shards,
			r->shards * r->clients, retry_names[o->retry],
			o->retry == LG_RETRY_NONE ? 0 : o->retries, r->seconds,
			r->seconds > 0 ? r->docs_acked / r->seconds : 0,
			r->requests, r->req_ok, r->req_partial, r->req_rejected, r->req_item_errors,
			r->req_timeout, r->req_failed, r->req_ok / req, r->req_partial / req,
			r->req_rejected / req, r->docs_sent, r->docs_acked, r->docs_created,
			r->docs_rejected_first, r->docs_sent ? (double) r->docs_rejected_first / r->docs_sent : 0,
			r->req_partial ? r->rejected_share_partial_sum / r->req_partial : 0,
			r->docs_given_up, r->retry_requests, r->retry_items, r->lat_p50, r->lat_p95,
			r->lat_p99, r->lat_max, r->final_count, r->verified ? "true" : "false",
			r->pool_rejected, r->pool_completed);
	fclose(f);
}

int
lg_cmd_ingest(const LgOptions *o)
{
	LgIngestResult r;

	lg_ingest_run(LG_TARGET_SE, o, &r);
	if (!o->quiet)
		lg_ingest_print(&r, stdout);
	if (o->json_out)
	{
		FILE	   *f = fopen(o->json_out, "w");

		if (f == NULL)
			lg_die("cannot write %s: %s", o->json_out, strerror(errno));
		lg_ingest_write_json(&r, f);
		fputc('\n', f);
		fclose(f);
	}
	if (o->csv_out)
		lg_ingest_append_csv(&r, o, o->csv_out);
	return r.verified ? 0 : 2;
}
