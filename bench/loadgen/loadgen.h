/*-------------------------------------------------------------------------
 *
 * loadgen.h
 *	  se-loadgen: the search_engine load generator (libpq + pthreads).
 *
 * One header for the whole tool; prototypes are grouped by the file that
 * defines them.  Subcommands: ingest (bulk an NDJSON corpus with N
 * clients, classify every request as Rally does, verify the final count),
 * query (latency percentiles and QPS, client and server side) and compare
 * (the same corpus and queries against PostgreSQL full-text search).
 *
 *-------------------------------------------------------------------------
 */
#ifndef LOADGEN_H
#define LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

/* where a run sends its documents and queries */
typedef enum LgTarget
{
	LG_TARGET_SE,				/* search_engine.bulk / search_engine.search */
	LG_TARGET_PG				/* a table with a tsvector column and GIN */
} LgTarget;

typedef enum LgRetryMode
{
	LG_RETRY_NONE,
	LG_RETRY_SERVER,			/* bulk(..., max_retries => n) */
	LG_RETRY_CLIENT				/* resend only the 429 items, backoff */
} LgRetryMode;

typedef enum LgProgress
{
	LG_PROGRESS_AUTO,			/* only when stderr is a terminal */
	LG_PROGRESS_ALWAYS,
	LG_PROGRESS_NEVER
} LgProgress;

typedef struct LgOptions
{
	const char *dsn;
	const char *http_url;		/* ingest / query over HTTP (_bulk, _search) */
	const char *http_user;		/* Basic credentials, if any */
	const char *http_password;
	bool		http_insecure;	/* https: do not verify the certificate */
	const char *index;
	const char *corpus;
	const char *index_body;		/* file: create_index body (settings, mappings) */
	int			clients;
	int			batch;
	int			shards;			/* -1: from the body / engine default */
	int			replicas;
	const char *refresh_interval;
	const char *durability;
	long		max_docs;		/* 0: the whole corpus */
	long		requests_per_client;	/* 0: until the corpus (or max_docs) ends */
	bool		append;			/* keep an existing index / table */
	LgRetryMode retry;
	int			retries;		/* -1: client-side, until indexed */
	int			backoff_ms;
	int			backoff_max_ms;
	int			timeout_ms;		/* statement_timeout of every request */
	const char *queries;
	double		duration;		/* seconds; 0: use iterations */
	long		iterations;		/* per client */
	int			warmup;			/* passes over the queries per client */
	const char *pg_table;
	const char *pg_fields;		/* comma-separated source fields */
	const char *ts_config;
	const char *json_out;
	const char *csv_out;
	const char *plot_prefix;
	const char *label;
	LgProgress	progress;
	bool		quiet;
} LgOptions;

/* one batch of items: contiguous bytes of the corpus plus item boundaries */
typedef struct LgBatch
{
	const char *base;			/* start of the first item */
	size_t		len;			/* bytes of all items */
	int			n;
	size_t	   *start;			/* item i = base[start[i] .. start[i+1]) */
	long		first_doc;		/* ordinal of item 0 in the corpus */
} LgBatch;

typedef struct LgCorpus
{
	const char *path;
	const char *data;
	size_t		size;
	long		ndocs;			/* items (action + source line pairs) */
	size_t		pos;			/* next unread byte, under the mutex */
	long		handed;			/* items handed out */
	long		limit;			/* hand out at most this many */
	bool		wrap;			/* start over at the end */
} LgCorpus;

/* ingest results, for one target */
typedef struct LgIngestResult
{
	const char *target;
	int			clients;
	int			batch;
	int			shards;
	double		seconds;		/* first request to last response */
	double		refresh_seconds;	/* the final refresh after it */
	long		requests;		/* first attempts */
	long		req_ok;
	long		req_partial;
	long		req_rejected;
	long		req_item_errors;
	long		req_timeout;
	long		req_failed;
	long		docs_sent;		/* items of first attempts */
	long		docs_acked;		/* 200/201 in the end */
	long		docs_created;	/* 201 */
	long		docs_rejected_first;	/* 429 on the first attempt */
	long		docs_given_up;	/* still 429 after the retries */
	long		docs_item_errors;
	long		docs_lost;		/* items of timed out / failed requests */
	long		retry_requests;
	long		retry_items;
	double		rejected_share_sum; /* sum over requests of 429 items / items */
	double		rejected_share_partial_sum;
	double		lat_p50,
				lat_p95,
				lat_p99,
				lat_max;
	double		lat_rejected_mean;	/* ms, fully rejected requests */
	long		final_count;
	bool		verified;
	long		pool_rejected;	/* thread_pool deltas (search_engine only) */
	long		pool_completed;
	long		size_bytes;
} LgIngestResult;

typedef struct LgQueryStat
{
	char	   *text;			/* the ES body */
	char	   *pg_kind;		/* or, and, phrase; NULL: not translatable */
	char	   *pg_text;
	int			pg_limit;
	long		n;
	double		c50,
				c95,
				c99;			/* client wall ms */
	double		s50,
				s95,
				s99;			/* server ms */
	long		matches;		/* count, or -1 */
	int			hits;			/* hits returned by the last call */
} LgQueryStat;

typedef struct LgQueryResult
{
	const char *target;
	int			clients;
	double		seconds;
	long		queries;
	long		errors;
	double		qps;
	double		c50,
				c95,
				c99,
				cmax;
	double		s50,
				s95,
				s99;
	double		cold50;			/* first query of each connection */
	double		cold_max;
	int			nstats;
	LgQueryStat *stats;
} LgQueryResult;

/* in main.c */
extern LgOptions lg_opts;
extern void lg_die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern void lg_log(const char *fmt,...) __attribute__((format(printf, 1, 2)));

/* in conn.c */
extern PGconn *lg_connect(const char *dsn, const char *appname);
extern PGresult *lg_exec_critical(PGconn *conn, const char *sql, int nparams,
								  const char *const *params);
extern bool lg_exec_optional(PGconn *conn, const char *sql, int nparams,
							 const char *const *params);
extern char *lg_query_value(PGconn *conn, const char *sql, int nparams,
							const char *const *params);
extern void lg_install_helpers(PGconn *conn);
extern char *lg_quote_ident(PGconn *conn, const char *name);

/* in http.c */
typedef struct LgHttp LgHttp;
typedef enum LgHttpResult
{
	LG_HTTP_OK,					/* item statuses filled in */
	LG_HTTP_TIMEOUT,
	LG_HTTP_FAILED
} LgHttpResult;
extern void lg_http_global_init(void);
extern LgHttp *lg_http_open(const LgOptions *o, const char *endpoint, const char *content_type);
extern void lg_http_close(LgHttp *h);
extern LgHttpResult lg_http_search(LgHttp *h, const char *body, size_t len, int *hits,
									double *took_ms, char *errbuf, size_t errlen);
extern LgHttpResult lg_http_bulk(LgHttp *h, const char *body, size_t len, int nitems,
								 int *status, char *errbuf, size_t errlen);

/* in corpus.c */
extern void lg_corpus_open(LgCorpus *c, const char *path);
extern void lg_corpus_close(LgCorpus *c);
extern bool lg_corpus_next(LgCorpus *c, int batch, LgBatch *out);

/* in json.c */
extern int	lg_bulk_statuses(const char *json, size_t len, int *status, int max);
extern bool lg_json_number_at(const char *json, size_t len, const char *const *path,
							  int depth, double *out);
extern int	lg_json_array_length_at(const char *json, size_t len, const char *const *path,
									int depth);

/* in stats.c */
extern double lg_now(void);
extern void lg_sleep_ms(long ms);
extern int	lg_cmp_double(const void *a, const void *b);
extern double lg_percentile(const double *sorted, long n, double p);
extern bool lg_progress_enabled(void);
extern void lg_progress_draw(const char *label, double done, double total,
							 const char *unit, double rate, const char *extra);
extern void lg_progress_end(void);
extern char *lg_fmt_count(double v, char *buf, size_t size);

/* in ingest.c */
extern void lg_ingest_run(LgTarget target, const LgOptions *o, LgIngestResult *r);
/*
 * Documents per second until every acknowledged document is searchable:
 * the load and the final refresh (what the benchmarks compare); r->seconds
 * alone is the acknowledged rate.
 */
extern double lg_ingest_docs_per_s(const LgIngestResult *r);
extern void lg_ingest_print(const LgIngestResult *r, FILE *out);
extern void lg_ingest_write_json(const LgIngestResult *r, FILE *out);
extern void lg_ingest_append_csv(const LgIngestResult *r, const LgOptions *o, const char *path);
extern int	lg_cmd_ingest(const LgOptions *o);

/* in query.c */
extern LgQueryStat *lg_queries_load(const char *path, int *n);
extern void lg_queries_translate(PGconn *conn, LgQueryStat *qs, int nq);
extern char *lg_pg_function_name(PGconn *conn, const char *prefix, const char *table);
extern void lg_query_run(LgTarget target, const LgOptions *o, LgQueryStat *qs, int nq,
						 LgQueryResult *r);
extern void lg_query_print(const LgQueryResult *r, FILE *out);
extern void lg_query_write_json(const LgQueryResult *r, FILE *out);
extern int	lg_cmd_query(const LgOptions *o);

/* in compare.c */
extern int	lg_cmd_compare(const LgOptions *o);

/* in plot.c */
extern bool lg_plot(const char *png, const char *script, const char *data, const char *data_path);
extern void lg_json_string(FILE *out, const char *s);

#endif							/* LOADGEN_H */
