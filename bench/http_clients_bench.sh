#!/usr/bin/env bash
# The Python client over HTTP vs SQL (issue 18), one server, one run:
#  1. Debian corpus ingest: helpers.parallel_bulk (python3-elasticsearch
#     7.17, 2 threads, 1000 documents a request) vs search_engine.bulk()
#     (one psql session, 1000 a statement), fresh index each, alternating.
#  2. top-10 match queries on description: the Python client (one
#     keep-alive connection) vs psql (\timing, one session), same queries.
#  3. the bulk-rejection experiment over HTTP: CLIENTS concurrent clients
#     bulk the corpus (BATCH documents a request) into an 8-shard index on
#     a node whose write queue holds WRITE_QUEUE shard requests; over HTTP
#     each is a Python client whose streaming_bulk retries rejected (429)
#     items (max_retries, backoff 10 ms doubling to 200 ms), beside the
#     same shares through SQL with the engine's bulk(max_retries => ...).
#     Every document must end up indexed on both sides.
#   bench/http_clients_bench.sh  (as root; env: RUNS, CLIENTS, BATCH,
#                                 WRITE_QUEUE, HTTP_WORKERS, PORT, HTTP_PORT,
#                                 PGDIR, SKIP_BUILD=1)
set -euo pipefail
PORT=${PORT:-5497}
HTTP_PORT=${HTTP_PORT:-9297}
PGDIR=${PGDIR:-/var/tmp/search_engine_http_clients_bench}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-"4 8 16"}
BATCH=${BATCH:-500}
WRITE_QUEUE=${WRITE_QUEUE:-16}
# HTTP requests run one at a time per worker: as many workers as clients
HTTP_WORKERS=${HTTP_WORKERS:-8}
source "$(dirname "$0")/lib/common.sh"
need_root
[ "${SKIP_BUILD:-0}" = 1 ] || build_private
corpus_ready
PY=/usr/bin/python3
HELPER="$BENCH/lib/http_clients.py"
$PY -c 'import elasticsearch' || { echo "$0: needs python3-elasticsearch (test/setup_deps.sh)" >&2; exit 1; }

cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR" "$WORK"; }
WORK=$(mktemp -d)
chmod 755 "$WORK"
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "search_engine.http_port = $HTTP_PORT" "search_engine.http_listen_addresses = '127.0.0.1'" \
  "search_engine.http_anonymous_role = 'postgres'" "search_engine.write_queue_size = $WRITE_QUEUE" \
  "search_engine.http_workers = $HTTP_WORKERS" "max_worker_processes = $((HTTP_WORKERS + 16))"
URL=http://127.0.0.1:$HTTP_PORT
for _ in $(seq 1 100); do curl -s -o /dev/null "$URL/" && break; sleep 0.2; done
echo "$(nproc) cores, write_threads $(sqlv -c 'SHOW search_engine.write_threads'), write_queue_size $WRITE_QUEUE, http_workers $HTTP_WORKERS, $(date -u '+%Y-%m-%d %H:%M UTC')"

med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.5); if (i < 1) i = 1; printf "%.2f", v[i] }'; }

echo "== 1. ingest"
: > "$WORK/ingest"
for r in $(seq 1 "$RUNS"); do
  se_create_index bench_sql
  t=$(se_ingest bench_sql); echo "sql ${t%% *}" >> "$WORK/ingest"
  [ "$(se_docs_count bench_sql)" = "$CORPUS_DOCS" ] || { echo "bench_sql incomplete" >&2; exit 1; }
  se_create_index bench_py
  t0=$(now)
  $PY "$HELPER" ingest "$URL" bench_py "$DATA/debian.jsonl" > "$WORK/py.out"
  sql -c "SELECT search_engine.refresh('bench_py')" >/dev/null
  t1=$(now)
  echo "py $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >> "$WORK/ingest"
  [ "$(se_docs_count bench_py)" = "$CORPUS_DOCS" ] || { echo "bench_py incomplete" >&2; exit 1; }
  echo "round $r: $(tail -2 "$WORK/ingest" | tr '\n' ' ')"
done
sql_i=$(grep '^sql ' "$WORK/ingest" | awk '{ print $2 }' | med)
py_i=$(grep '^py ' "$WORK/ingest" | awk '{ print $2 }' | med)

echo "== 2. top-10 latency"
cat > "$WORK/queries" <<'Q'
python library
network file system
web server
command line tool
video player
database server
font
kernel module
game
documentation
perl module
compression utility
image viewer
text editor
ssl certificate
Q
sql -c "SELECT search_engine.refresh('bench_sql')" >/dev/null
$PY "$HELPER" search "$URL" bench_sql "$WORK/queries" 1 >/dev/null   # warm
$PY "$HELPER" search "$URL" bench_sql "$WORK/queries" 20 > "$WORK/lat_http"
$PY "$HELPER" sqlsearch bench_sql "$WORK/queries" 20 > "$WORK/sqlsearch.sql"
sql -f "$WORK/sqlsearch.sql" | awk '/^Time:/ { print $2 }' > "$WORK/lat_sql"
[ "$(wc -l < "$WORK/lat_sql")" = "$(wc -l < "$WORK/lat_http")" ] || { echo "latency runs differ in length" >&2; exit 1; }

echo "== 3. rejections with client retries"
: > "$WORK/reject"
for c in $CLIENTS; do
  rej() { sqlv -c "SELECT rejected FROM search_engine.thread_pool WHERE name = 'write'"; }
  sql -c "SELECT search_engine.delete_index('rj') FROM search_engine.indices WHERE index = 'rj'" >/dev/null
  sql -c "SELECT search_engine.create_index('rj', '{\"settings\": {\"number_of_shards\": 8, \"number_of_replicas\": 0}}')" >/dev/null
  r0=$(rej)
  out=$($PY "$HELPER" reject "$URL" rj "$DATA/debian.jsonl" "$c" "$BATCH")
  r1=$(rej)
  n=$(se_docs_count rj); sql -c "SELECT search_engine.refresh('rj')" >/dev/null; n=$(se_docs_count rj)
  [ "$n" = "$CORPUS_DOCS" ] || { echo "HTTP with $c clients: $n documents, expected $CORPUS_DOCS" >&2; exit 1; }
  set -- $out
  echo "http $c $1 $((r1 - r0)) $3" >> "$WORK/reject"

  sql -c "SELECT search_engine.delete_index('rj')" >/dev/null
  sql -c "SELECT search_engine.create_index('rj', '{\"settings\": {\"number_of_shards\": 8, \"number_of_replicas\": 0}}')" >/dev/null
  rm -f "$WORK"/client*.sql
  $PY "$HELPER" sqlfiles rj "$DATA/debian.jsonl" "$c" "$BATCH" "$WORK" 1000
  chmod a+r "$WORK"/client*.sql
  r0=$(rej)
  t0=$(now)
  for f in "$WORK"/client*.sql; do sql -At -f "$f" > "$f.out" & done
  wait
  t1=$(now)
  r1=$(rej)
  sql -c "SELECT search_engine.refresh('rj')" >/dev/null; n=$(se_docs_count rj)
  [ "$n" = "$CORPUS_DOCS" ] || { echo "SQL with $c clients: $n documents, expected $CORPUS_DOCS" >&2; exit 1; }
  failed=$(cat "$WORK"/client*.sql.out | grep -c '^true$' || true)
  echo "sql $c $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $((r1 - r0)) $failed" >> "$WORK/reject"
  tail -2 "$WORK/reject"
done

echo
echo "Debian corpus ($CORPUS_DOCS documents), $RUNS rounds, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| ingest (incl. refresh) | median s | docs/s |"
echo "|---|---|---|"
echo "| search_engine.bulk() over psql, 1000/statement | $sql_i | $(awk -v t="$sql_i" -v n="$CORPUS_DOCS" 'BEGIN { printf "%.0f", n / t }') |"
echo "| helpers.parallel_bulk over HTTP, 2 threads, 1000/request | $py_i | $(awk -v t="$py_i" -v n="$CORPUS_DOCS" 'BEGIN { printf "%.0f", n / t }') |"
echo
echo "| top-10 match, $(wc -l < "$WORK/lat_http") queries | p50 ms | p95 ms | p99 ms |"
echo "|---|---|---|---|"
echo "| search_engine.search() over psql | $(pct 50 < "$WORK/lat_sql") | $(pct 95 < "$WORK/lat_sql") | $(pct 99 < "$WORK/lat_sql") |"
echo "| es.search() over HTTP (Python client) | $(pct 50 < "$WORK/lat_http") | $(pct 95 < "$WORK/lat_http") | $(pct 99 < "$WORK/lat_http") |"
echo
echo "| rejections, 8 shards, $BATCH/request | clients | s | docs/s | shard requests rejected | items failed at the end |"
echo "|---|---|---|---|---|---|"
awk -v n="$CORPUS_DOCS" '{ printf "| %s | %d | %.2f | %.0f | %d | %d |\n", ($1 == "http" ? "HTTP, Python streaming_bulk retries" : "SQL, bulk(max_retries => 1000)"), $2, $3, n / $3, $4, $5 }' "$WORK/reject"
