/*-------------------------------------------------------------------------
 *
 * compare.c
 *	  `se-loadgen compare`: the same corpus and the same queries against
 *	  search_engine and against PostgreSQL's own full-text search, in one
 *	  run, with the ratios.
 *
 * PostgreSQL side: table <pg-table>(id text primary key, doc jsonb, tsv
 * tsvector GENERATED ALWAYS AS (to_tsvector(<ts-config>, <pg-fields>
 * joined by spaces)) STORED) with a GIN index on tsv, created before the
 * load so the index is maintained during it; the same clients send the
 * same batches (the NDJSON bytes, paired into rows by one INSERT ... ON
 * CONFLICT per batch, one transaction each, synchronous_commit on unless
 * --durability async).  After the load: VACUUM ANALYZE (search_engine:
 * refresh).  Queries: match (or) -> plainto_tsquery with & turned into |,
 * match with operator and -> plainto_tsquery, match_phrase ->
 * phraseto_tsquery; top `size` (10) by ts_rank with the document; only
 * queries with a translation run, on both sides.  ts_rank is not BM25 and
 * the tsvector may cover more fields than the ES query does: the match
 * counts are printed so that such differences are visible.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static const char *
faster(double se_ms, double pg_ms, char *buf, size_t size)
{
	double		r = ratio(pg_ms, se_ms);

	if (isnan(r))
		snprintf(buf, size, "-");
	else if (r >= 1)
		snprintf(buf, size, "search_engine %.1fx faster", r);
	else
		snprintf(buf, size, "search_engine %.1fx slower", 1 / r);
	return buf;
}

static void
row_ms(FILE *out, const char *what, double se, double pg)
{
	char		b[64];

	fprintf(out, "| %s | %.3f | %.3f | %s |\n", what, se, pg, faster(se, pg, b, sizeof(b)));
}

static void
plot_queries(const LgQueryResult *se, const LgQueryResult *pg, const char *prefix)
{
	char		path[1100],
				png[1100],
				script[2048];
	FILE	   *f;
	int			k,
				n = 0;

	snprintf(path, sizeof(path), "%s-compare-queries.csv", prefix);
	snprintf(png, sizeof(png), "%s-compare-queries.png", prefix);
	f = fopen(path, "w");
	if (f == NULL)
		return;
	fprintf(f, "query,se_p50,se_p95,pg_p50,pg_p95\n");
	for (k = 0; k < se->nstats; k++)
	{
		char		label[48];
		const char *t = se->stats[k].pg_text ? se->stats[k].pg_text : "?";

		if (se->stats[k].n == 0)
			continue;
		snprintf(label, sizeof(label), "%s %.24s", se->stats[k].pg_kind ? se->stats[k].pg_kind : "",
				 t);
		for (char *p = label; *p; p++)
			if (*p == '"' || *p == ',')
				*p = ' ';
		fprintf(f, "\"%s\",%.4f,%.4f,%.4f,%.4f\n", label, se->stats[k].c50, se->stats[k].c95,
				pg->stats[k].c50, pg->stats[k].c95);
		n++;
	}
	fclose(f);
	if (n == 0)
		return;
	snprintf(script, sizeof(script),
			 "set datafile separator ','\n"
			 "set title 'Median and p95 query latency (client round trip), %d clients: search_engine vs PostgreSQL FTS'\n"
			 "set ylabel 'ms (log)'\nset logscale y\nset grid ytics\n"
			 "set style data histogram\nset style histogram cluster gap 1\n"
			 "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
			 "set xtics rotate by 30 right\nset key outside top center horizontal\nset bmargin 9\n"
			 "plot DATA using 2:xtic(1) skip 1 title 'search_engine p50', "
			 "'' using 3 skip 1 title 'search_engine p95', "
			 "'' using 4 skip 1 title 'PostgreSQL p50', "
			 "'' using 5 skip 1 title 'PostgreSQL p95'\n",
			 se->clients);
	lg_plot(png, script, NULL, path);
}

int
lg_cmd_compare(const LgOptions *o)
{
	LgIngestResult ise,
				ipg;
	LgQueryResult qse,
				qpg;
	LgQueryStat *qs,
			   *qs_pg;
	int			nq,
				k,
				kept = 0;
	PGconn	   *conn;
	char		b[64];
	char		sql[512];
	char	   *table;
	char	   *fcount;
	FILE	   *out = stdout;

	/* the queries both sides can run */
	qs = lg_queries_load(o->queries, &nq);
	conn = lg_connect(o->dsn, "se-loadgen");
	if (conn == NULL)
		lg_die("cannot connect");
	lg_install_helpers(conn);
	lg_queries_translate(conn, qs, nq);
	for (k = 0; k < nq; k++)
		if (qs[k].pg_kind)
			qs[kept++] = qs[k];
		else
			lg_log("query %d has no PostgreSQL translation; left out on both sides: %.120s",
				   k + 1, qs[k].text);
	if (kept == 0)
		lg_die("no query translates to PostgreSQL full-text search (match, match_phrase, multi_match)");
	nq = kept;

	lg_ingest_run(LG_TARGET_SE, o, &ise);
	lg_ingest_run(LG_TARGET_PG, o, &ipg);
	if (!o->quiet)
	{
		lg_ingest_print(&ise, stdout);
		lg_ingest_print(&ipg, stdout);
	}
	table = lg_quote_ident(conn, o->pg_table);
	snprintf(sql, sizeof(sql), "VACUUM ANALYZE %s", table);
	PQclear(lg_exec_critical(conn, sql, 0, NULL));
	snprintf(sql, sizeof(sql), "SELECT pg_total_relation_size('%s'::regclass)", table);
	{
		char	   *v = lg_query_value(conn, sql, 0, NULL);

		ipg.size_bytes = atol(v);
		free(v);
	}

	/* the same query list for both, separate stats */
	qs_pg = malloc(sizeof(LgQueryStat) * nq);
	memcpy(qs_pg, qs, sizeof(LgQueryStat) * nq);
	lg_query_run(LG_TARGET_SE, o, qs, nq, &qse);
	lg_query_run(LG_TARGET_PG, o, qs_pg, nq, &qpg);

	/* match counts (not timed) */
	fcount = lg_pg_function_name(conn, "count", o->pg_table);
	for (k = 0; k < nq; k++)
	{
		const char *p[2] = {o->index, qs[k].text};
		const char *pp[2] = {qs[k].pg_kind, qs[k].pg_text};
		char	   *v;

		v = lg_query_value(conn, "SELECT search_engine.count($1, jsonb_build_object('query', $2::jsonb->'query'))",
						   2, p);
		qs[k].matches = v ? atol(v) : -1;
		free(v);
		snprintf(sql, sizeof(sql), "SELECT se_loadgen.%s($1, $2)", fcount);
		v = lg_query_value(conn, sql, 2, pp);
		qs_pg[k].matches = v ? atol(v) : -1;
		free(v);
	}

	fprintf(out, "\n## search_engine vs PostgreSQL full-text search\n\n");
	fprintf(out, "corpus %s, %d clients, batch %d, %d shards; queries %s (%d), %s per side\n\n",
			o->corpus, o->clients, o->batch, ise.shards, o->queries, nq,
			o->duration > 0 ? "a duration" : "iterations");
	fprintf(out, "| measurement | search_engine | PostgreSQL | ratio |\n|---|---:|---:|---|\n");
	fprintf(out, "| ingest to searchable (load + final refresh), docs/s | %.0f | %.0f | search_engine %.2fx the docs/s |\n",
			lg_ingest_docs_per_s(&ise), lg_ingest_docs_per_s(&ipg),
			ratio(lg_ingest_docs_per_s(&ise), lg_ingest_docs_per_s(&ipg)));
	fprintf(out, "| ingest acknowledged, docs/s | %.0f | %.0f | search_engine %.2fx the docs/s |\n",
			ise.docs_acked / ise.seconds, ipg.docs_acked / ipg.seconds,
			ratio(ise.docs_acked / ise.seconds, ipg.docs_acked / ipg.seconds));
	row_ms(out, "bulk / INSERT batch p50, ms", ise.lat_p50, ipg.lat_p50);
	row_ms(out, "bulk / INSERT batch p99, ms", ise.lat_p99, ipg.lat_p99);
	fprintf(out, "| documents after the load (count) | %ld | %ld | %s |\n", ise.final_count,
			ipg.final_count, ise.verified && ipg.verified ? "both verified" : "NOT VERIFIED");
	fprintf(out, "| size after the load, MB | %.1f | %.1f | search_engine %.2fx the size |\n",
			ise.size_bytes / 1048576.0, ipg.size_bytes / 1048576.0,
			ratio(ise.size_bytes, ipg.size_bytes));
	fprintf(out, "| queries/s (%d clients) | %.1f | %.1f | search_engine %.2fx the QPS |\n",
			o->clients, qse.qps, qpg.qps, ratio(qse.qps, qpg.qps));
	row_ms(out, "query latency p50, client ms", qse.c50, qpg.c50);
	row_ms(out, "query latency p95, client ms", qse.c95, qpg.c95);
	row_ms(out, "query latency p99, client ms", qse.c99, qpg.c99);
	row_ms(out, "query latency p50, server ms", qse.s50, qpg.s50);
	row_ms(out, "query latency p99, server ms", qse.s99, qpg.s99);
	row_ms(out, "first query of a connection, median ms", qse.cold50, qpg.cold50);
	fprintf(out, "\n| query | SE p50 ms | PG p50 ms | SE p99 ms | PG p99 ms | ratio (p50) | SE matches | PG matches |\n"
			"|---|---:|---:|---:|---:|---|---:|---:|\n");
	for (k = 0; k < nq; k++)
		fprintf(out, "| %s: %s | %.3f | %.3f | %.3f | %.3f | %s | %ld | %ld |\n",
				qs[k].pg_kind, qs[k].pg_text, qs[k].c50, qs_pg[k].c50, qs[k].c99,
				qs_pg[k].c99, faster(qs[k].c50, qs_pg[k].c50, b, sizeof(b)), qs[k].matches,
				qs_pg[k].matches);
	fprintf(out, "\n");
	if (qse.errors || qpg.errors)
		fprintf(out, "query errors: search_engine %ld, PostgreSQL %ld\n", qse.errors, qpg.errors);

	if (o->json_out)
	{
		FILE	   *f = fopen(o->json_out, "w");

		if (f == NULL)
			lg_die("cannot write %s: %s", o->json_out, strerror(errno));
		fprintf(f, "{\"ingest\": {\"search_engine\": ");
		lg_ingest_write_json(&ise, f);
		fprintf(f, ", \"postgresql\": ");
		lg_ingest_write_json(&ipg, f);
		fprintf(f, "}, \"query\": {\"search_engine\": ");
		lg_query_write_json(&qse, f);
		fprintf(f, ", \"postgresql\": ");
		lg_query_write_json(&qpg, f);
		fprintf(f, "}, \"matches\": [");
		for (k = 0; k < nq; k++)
		{
			fprintf(f, "%s{\"query\": ", k ? ", " : "");
			lg_json_string(f, qs[k].text);
			fprintf(f, ", \"search_engine\": %ld, \"postgresql\": %ld}", qs[k].matches,
					qs_pg[k].matches);
		}
		fprintf(f, "]}\n");
		fclose(f);
	}
	if (o->csv_out)
	{
		lg_ingest_append_csv(&ise, o, o->csv_out);
		lg_ingest_append_csv(&ipg, o, o->csv_out);
	}
	if (o->plot_prefix)
		plot_queries(&qse, &qpg, o->plot_prefix);
	free(table);
	free(fcount);
	free(qs_pg);
	PQfinish(conn);
	return ise.verified && ipg.verified && qse.errors == 0 && qpg.errors == 0 ? 0 : 1;
}
