/*-------------------------------------------------------------------------
 *
 * main.c
 *	  se-loadgen: command line, defaults, dispatch to the subcommands.
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

LgOptions	lg_opts;

static const char usage_text[] =
"se-loadgen: load generator for search_engine (a PostgreSQL extension)\n"
"\n"
"usage: se-loadgen ingest  --corpus FILE --index NAME [options]\n"
"       se-loadgen query   --queries FILE --index NAME [options]\n"
"       se-loadgen compare --corpus FILE --queries FILE --index NAME --pg-fields F1,F2 [options]\n"
"\n"
"connection\n"
"  -d, --dsn CONNINFO        libpq conninfo or URI (default: libpq's environment)\n"
"      --http URL            ingest: bulk over HTTP, POST URL/<index>/_bulk (search_engine.http_port);\n"
"                            query: POST URL/<index>/_search (server clock: the answer's took);\n"
"                            index setup, refresh, count and thread_pool still go over -d\n"
"      --http-user ROLE      HTTP Basic credentials; the password from --http-password\n"
"      --http-password PW    or $SE_LOADGEN_HTTP_PASSWORD\n"
"      --http-insecure       https: do not verify the server's certificate\n"
"ingest (and compare)\n"
"      --corpus FILE         NDJSON in bulk format: an action line and a source line per item\n"
"  -c, --clients N           concurrent client connections (default 8)\n"
"  -b, --batch N             documents per bulk request (default 1000)\n"
"      --index-body FILE     create_index body (settings, mappings); the index is recreated\n"
"      --shards N --replicas N --refresh-interval T --durability request|async\n"
"                            index settings, over those of --index-body\n"
"      --docs N              at most N documents (default: the whole corpus)\n"
"      --requests-per-client N  each client sends N bulk requests (the corpus wraps if short)\n"
"      --append              keep an existing index / table\n"
"      --retry none|server|client  what to do with 429 items (default none)\n"
"      --retries N           server: bulk(max_retries => N); client: N resends, -1 = until indexed\n"
"      --backoff-ms N        client retry backoff start, doubling, equal jitter (default 50)\n"
"      --backoff-max-ms N    its cap (default 5000)\n"
"      --timeout-ms N        statement_timeout of every request (default none)\n"
"query (and compare)\n"
"      --queries FILE        one ES query body (JSON) per line; # comments\n"
"      --duration S          run S seconds (default 10)\n"
"      --iterations N        or N queries per client\n"
"      --warmup N            passes over the queries per client before timing (default 1)\n"
"compare\n"
"      --pg-table NAME       PostgreSQL table (default <index>_pg)\n"
"      --pg-fields F1,F2     source fields in its tsvector\n"
"      --ts-config CFG       text search configuration (default english)\n"
"output\n"
"      --json FILE           summary as JSON\n"
"      --csv FILE            append one summary row (ingest)\n"
"      --plot PREFIX         PNG plots (gnuplot) and their CSVs at PREFIX-*.png\n"
"      --label TEXT          label column of the CSV row\n"
"      --progress auto|always|never  progress bar on stderr (default auto: a terminal)\n"
"  -q, --quiet               no report on stdout, no progress\n";

void
lg_log(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fputs("se-loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', stderr);
}

void
lg_die(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fputs("se-loadgen: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', stderr);
	exit(1);
}

static long
parse_long(const char *opt, const char *v, long min)
{
	char	   *e;
	long		n = strtol(v, &e, 10);

	if (*v == '\0' || *e != '\0' || n < min)
		lg_die("invalid value for --%s: \"%s\"", opt, v);
	return n;
}

enum
{
	OPT_CORPUS = 256, OPT_INDEX, OPT_INDEX_BODY, OPT_SHARDS, OPT_REPLICAS, OPT_REFRESH,
	OPT_DURABILITY, OPT_DOCS, OPT_RPC, OPT_APPEND, OPT_RETRY, OPT_RETRIES, OPT_BACKOFF,
	OPT_BACKOFF_MAX, OPT_TIMEOUT, OPT_QUERIES, OPT_DURATION, OPT_ITERATIONS, OPT_WARMUP,
	OPT_PG_TABLE, OPT_PG_FIELDS, OPT_TS_CONFIG, OPT_JSON, OPT_CSV, OPT_PLOT, OPT_LABEL,
	OPT_PROGRESS, OPT_HTTP, OPT_HTTP_USER, OPT_HTTP_PASSWORD, OPT_HTTP_INSECURE
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dsn", required_argument, NULL, 'd'},
		{"clients", required_argument, NULL, 'c'},
		{"batch", required_argument, NULL, 'b'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"corpus", required_argument, NULL, OPT_CORPUS},
		{"index", required_argument, NULL, OPT_INDEX},
		{"index-body", required_argument, NULL, OPT_INDEX_BODY},
		{"shards", required_argument, NULL, OPT_SHARDS},
		{"replicas", required_argument, NULL, OPT_REPLICAS},
		{"refresh-interval", required_argument, NULL, OPT_REFRESH},
		{"durability", required_argument, NULL, OPT_DURABILITY},
		{"docs", required_argument, NULL, OPT_DOCS},
		{"requests-per-client", required_argument, NULL, OPT_RPC},
		{"append", no_argument, NULL, OPT_APPEND},
		{"retry", required_argument, NULL, OPT_RETRY},
		{"retries", required_argument, NULL, OPT_RETRIES},
		{"backoff-ms", required_argument, NULL, OPT_BACKOFF},
		{"backoff-max-ms", required_argument, NULL, OPT_BACKOFF_MAX},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
		{"queries", required_argument, NULL, OPT_QUERIES},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"iterations", required_argument, NULL, OPT_ITERATIONS},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"pg-table", required_argument, NULL, OPT_PG_TABLE},
		{"pg-fields", required_argument, NULL, OPT_PG_FIELDS},
		{"ts-config", required_argument, NULL, OPT_TS_CONFIG},
		{"json", required_argument, NULL, OPT_JSON},
		{"csv", required_argument, NULL, OPT_CSV},
		{"plot", required_argument, NULL, OPT_PLOT},
		{"label", required_argument, NULL, OPT_LABEL},
		{"progress", required_argument, NULL, OPT_PROGRESS},
		{"http", required_argument, NULL, OPT_HTTP},
		{"http-user", required_argument, NULL, OPT_HTTP_USER},
		{"http-password", required_argument, NULL, OPT_HTTP_PASSWORD},
		{"http-insecure", no_argument, NULL, OPT_HTTP_INSECURE},
		{NULL, 0, NULL, 0}
	};
	LgOptions  *o = &lg_opts;
	const char *cmd;
	int			c;
	bool		retries_given = false;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
	{
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 1 : 0;
	}
	cmd = argv[1];
	memset(o, 0, sizeof(*o));
	o->dsn = "";
	o->clients = 8;
	o->batch = 1000;
	o->shards = -1;
	o->replicas = -1;
	o->backoff_ms = 50;
	o->backoff_max_ms = 5000;
	o->duration = 0;
	o->warmup = 1;
	o->ts_config = "english";
	o->progress = LG_PROGRESS_AUTO;
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:c:b:qh", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				o->dsn = optarg;
				break;
			case 'c':
				o->clients = (int) parse_long("clients", optarg, 1);
				break;
			case 'b':
				o->batch = (int) parse_long("batch", optarg, 1);
				break;
			case 'q':
				o->quiet = true;
				break;
			case 'h':
				fputs(usage_text, stdout);
				return 0;
			case OPT_CORPUS:
				o->corpus = optarg;
				break;
			case OPT_INDEX:
				o->index = optarg;
				break;
			case OPT_INDEX_BODY:
				o->index_body = optarg;
				break;
			case OPT_SHARDS:
				o->shards = (int) parse_long("shards", optarg, 1);
				break;
			case OPT_REPLICAS:
				o->replicas = (int) parse_long("replicas", optarg, 0);
				break;
			case OPT_REFRESH:
				o->refresh_interval = optarg;
				break;
			case OPT_DURABILITY:
				if (strcmp(optarg, "request") != 0 && strcmp(optarg, "async") != 0)
					lg_die("--durability is request or async");
				o->durability = optarg;
				break;
			case OPT_DOCS:
				o->max_docs = parse_long("docs", optarg, 1);
				break;
			case OPT_RPC:
				o->requests_per_client = parse_long("requests-per-client", optarg, 1);
				break;
			case OPT_APPEND:
				o->append = true;
				break;
			case OPT_RETRY:
				if (strcmp(optarg, "none") == 0)
					o->retry = LG_RETRY_NONE;
				else if (strcmp(optarg, "server") == 0)
					o->retry = LG_RETRY_SERVER;
				else if (strcmp(optarg, "client") == 0)
					o->retry = LG_RETRY_CLIENT;
				else
					lg_die("--retry is none, server or client");
				break;
			case OPT_RETRIES:
				o->retries = (int) parse_long("retries", optarg, -1);
				retries_given = true;
				break;
			case OPT_BACKOFF:
				o->backoff_ms = (int) parse_long("backoff-ms", optarg, 0);
				break;
			case OPT_BACKOFF_MAX:
				o->backoff_max_ms = (int) parse_long("backoff-max-ms", optarg, 0);
				break;
			case OPT_TIMEOUT:
				o->timeout_ms = (int) parse_long("timeout-ms", optarg, 0);
				break;
			case OPT_QUERIES:
				o->queries = optarg;
				break;
			case OPT_DURATION:
				o->duration = atof(optarg);
				if (o->duration <= 0)
					lg_die("invalid value for --duration: \"%s\"", optarg);
				break;
			case OPT_ITERATIONS:
				o->iterations = parse_long("iterations", optarg, 1);
				break;
			case OPT_WARMUP:
				o->warmup = (int) parse_long("warmup", optarg, 0);
				break;
			case OPT_PG_TABLE:
				o->pg_table = optarg;
				break;
			case OPT_PG_FIELDS:
				o->pg_fields = optarg;
				break;
			case OPT_TS_CONFIG:
				o->ts_config = optarg;
				break;
			case OPT_JSON:
				o->json_out = optarg;
				break;
			case OPT_CSV:
				o->csv_out = optarg;
				break;
			case OPT_PLOT:
				o->plot_prefix = optarg;
				break;
			case OPT_LABEL:
				o->label = optarg;
				break;
			case OPT_PROGRESS:
				if (strcmp(optarg, "auto") == 0)
					o->progress = LG_PROGRESS_AUTO;
				else if (strcmp(optarg, "always") == 0)
					o->progress = LG_PROGRESS_ALWAYS;
				else if (strcmp(optarg, "never") == 0)
					o->progress = LG_PROGRESS_NEVER;
				else
					lg_die("--progress is auto, always or never");
				break;
			case OPT_HTTP:
				if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0)
					lg_die("--http takes an http:// or https:// URL");
				o->http_url = optarg;
				break;
			case OPT_HTTP_USER:
				o->http_user = optarg;
				break;
			case OPT_HTTP_PASSWORD:
				o->http_password = optarg;
				break;
			case OPT_HTTP_INSECURE:
				o->http_insecure = true;
				break;
			default:
				fputs(usage_text, stderr);
				return 1;
		}
	}
	if (optind < argc)
		lg_die("unexpected argument \"%s\"", argv[optind]);
	if (o->retry != LG_RETRY_NONE && !retries_given)
		o->retries = o->retry == LG_RETRY_CLIENT ? -1 : 8;
	if (o->retry == LG_RETRY_SERVER && o->retries < 0)
		lg_die("--retry server needs --retries >= 0");
	if (o->duration == 0 && o->iterations == 0)
		o->duration = 10;
	if (o->index == NULL)
		lg_die("--index is required");
	if (o->http_url && strcmp(cmd, "ingest") != 0 && strcmp(cmd, "query") != 0)
		lg_die("--http is an ingest and query option");
	/* max_retries is an argument of bulk(), not a parameter of ES's _bulk */
	if (o->http_url && o->retry == LG_RETRY_SERVER)
		lg_die("--retry server needs SQL (bulk(max_retries => n)); over --http use --retry client");
	if (o->http_user && o->http_password == NULL)
		o->http_password = getenv("SE_LOADGEN_HTTP_PASSWORD");

	if (strcmp(cmd, "ingest") == 0)
	{
		if (o->corpus == NULL)
			lg_die("ingest needs --corpus");
		return lg_cmd_ingest(o);
	}
	if (strcmp(cmd, "query") == 0)
	{
		if (o->queries == NULL)
			lg_die("query needs --queries");
		return lg_cmd_query(o);
	}
	if (strcmp(cmd, "compare") == 0)
	{
		static char table[256];

		if (o->corpus == NULL || o->queries == NULL || o->pg_fields == NULL)
			lg_die("compare needs --corpus, --queries and --pg-fields");
		if (o->pg_table == NULL)
		{
			snprintf(table, sizeof(table), "%s_pg", o->index);
			o->pg_table = table;
		}
		return lg_cmd_compare(o);
	}
	lg_die("unknown subcommand \"%s\" (ingest, query, compare)", cmd);
}
