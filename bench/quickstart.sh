#!/usr/bin/env bash
# Quickstart on a fresh Debian 12 machine, as root: install the dependencies,
# build and install search_engine, start a preloaded server on port 5499
# (data in /var/tmp/search_engine_quickstart) that also serves the
# Elasticsearch REST API over HTTP on localhost:9200, index the Debian
# packages corpus (~64k documents) and run a few searches, from SQL and with
# curl.  Re-running reuses the server and the index.
#   bench/quickstart.sh            (PORT=... HTTP_PORT=... PGDIR=... override the defaults)
set -euo pipefail
PORT=${PORT:-5499}
HTTP_PORT=${HTTP_PORT:-9200}
PGDIR=${PGDIR:-/var/tmp/search_engine_quickstart}
INDEX=debian
source "$(dirname "$0")/lib/common.sh"
need_root

echo "== dependencies, build, install"
build_install

echo "== server on port $PORT ($PGDIR), HTTP on localhost:$HTTP_PORT"
# HTTP requests without credentials run as a role that may only read the
# index (others log in with HTTP Basic as a PostgreSQL role)
server_start "search_engine.http_port = $HTTP_PORT" \
  "search_engine.http_listen_addresses = 'localhost'" \
  "search_engine.http_anonymous_role = 'se_quickstart_reader'"
sql -c "DO \$\$BEGIN CREATE ROLE se_quickstart_reader NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$"
corpus_ready

echo "== index \"$INDEX\": $CORPUS_DOCS documents"
if [ "$(se_docs_count "$INDEX")" = "$CORPUS_DOCS" ]; then
  echo "already indexed (to index again: SELECT search_engine.delete_index('$INDEX'); then re-run)"
else
  se_create_index "$INDEX"
  times=$(se_ingest "$INDEX")
  read -r secs _ <<<"$times"
  docs=$(se_docs_count "$INDEX")
  awk -v n="$docs" -v s="$secs" -v b="$BATCH_SIZE" 'BEGIN {
    printf "indexed %d documents in %.1f s: %.0f docs/s (search_engine.bulk calls of %d documents, final refresh included)\n",
           n, s, n / s, b }'
fi
sql -c "SELECT index, \"docs.count\", pg_size_pretty(\"store.size\") AS \"store.size\" FROM search_engine.indices"
sql -qAt -c "SELECT search_engine.grant('read', '$INDEX', 'se_quickstart_reader')" >/dev/null

# Prints the total and the top hits of search body $2 under the title $1.
show() {
  echo
  echo "== $1"
  echo "   $2"
  sql -v body="$2" <<'SQL'
SELECT CASE WHEN t->>'relation' = 'gte' THEN 'at least ' ELSE '' END || (t->>'value') AS total
FROM (SELECT search_engine.search('debian', (:'body')::jsonb || '{"size": 0}') -> 'hits' -> 'total') AS s(t) \gset
\echo :total matching documents; the top 5:
SELECT _source->>'package' AS package, round(_score::numeric, 3) AS score,
       left(_source->>'summary', 64) AS summary
FROM search_engine.search_hits('debian', (:'body')::jsonb || '{"size": 5}');
SQL
}

show 'match: library'        '{"query": {"match": {"description": "library"}}}'
show 'match: python library' '{"query": {"match": {"description": "python library"}}}'
show 'match_phrase: command line' '{"query": {"match_phrase": {"description": "command line"}}}'
show 'bool: "json parser" in the description, filtered to section python' \
     '{"query": {"bool": {"must": [{"match": {"description": "json parser"}}], "filter": [{"term": {"section": "python"}}]}}}'

HTTP_BODY='{"size": 3, "_source": ["package", "summary"], "query": {"match": {"description": "web server"}}}'
echo
echo "== the same engine over HTTP, as an Elasticsearch client sees it"
echo "   curl -s 'localhost:$HTTP_PORT/$INDEX/_search' -H 'Content-Type: application/json' -d '$HTTP_BODY'"
if [ "$(sql -qAt -c 'SHOW search_engine.http_port')" = "$HTTP_PORT" ]; then
  curl -sS --max-time 30 "localhost:$HTTP_PORT/$INDEX/_search" \
    -H 'Content-Type: application/json' -d "$HTTP_BODY"
  echo
else
  echo "   (this server was created before the quickstart served HTTP: remove it to get HTTP)"
fi

cat <<EOF

The server keeps running.
  connect:  psql -h /tmp -p $PORT -U postgres
            SELECT * FROM search_engine.search_hits('$INDEX', '{"query": {"match": {"summary": "web server"}}}');
  HTTP:     curl 'localhost:$HTTP_PORT/_cat/indices?v'   (read-only without credentials;
            with HTTP Basic as a PostgreSQL role that has a password, that role's privileges)
  stop:     $REPO/test/pg_instance.sh stop $PGDIR
  remove:   $REPO/test/pg_instance.sh stop $PGDIR && rm -rf $PGDIR
EOF
