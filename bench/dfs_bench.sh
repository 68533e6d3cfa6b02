#!/usr/bin/env bash
# DFS benchmark: the latency cost of search_type=dfs_query_then_fetch (a
# first round over every shard gathers the query's term statistics) over
# query_then_fetch, top-10 by relevance on the Debian packages corpus in an
# index of SHARDS shards, both modes alternating within each round on the
# same server and index.
#   bench/dfs_bench.sh   (env: PORT, PGDIR, ROUNDS, REPS, WARMUP, SHARDS (4),
#                         SKIP_BUILD=1: use the installation on PATH)
#   CLUSTER=1 bench/dfs_bench.sh   the same on a three-node cluster (lib/cluster.sh:
#                         n1, n2 data nodes, searched through the coordinating-only
#                         n3; env CLUSTER_DIR, ETCD_BASE, PG_BASE), where the DFS
#                         phase is one more round trip to each data node
# Prints, per query and mode, min/median/max over ROUNDS of the per-round
# median latency (server-side, plpgsql clock_timestamp), and the ratio of
# the medians (dfs / query_then_fetch).
set -euo pipefail
PORT=${PORT:-5474}
PGDIR=${PGDIR:-/var/tmp/se_bench_dfs}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-200}
WARMUP=${WARMUP:-20}
SHARDS=${SHARDS:-4}
source "$(dirname "$0")/lib/common.sh"
if [ "${CLUSTER:-0}" = 1 ]; then
  CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/se_bench_dfs_cluster}
  ETCD_BASE=${ETCD_BASE:-23990}
  PG_BASE=${PG_BASE:-5711}
  source "$BENCH/lib/cluster.sh"
  need_root
  [ "${SKIP_BUILD:-0}" = 1 ] || build_private
  corpus_ready
  cluster_cleanup() { for n in n1 n2 n3; do node_stop $n; done; etcd_stop; rm -rf "$CLUSTER_DIR"; }
  [ -d "$CLUSTER_DIR" ] && cluster_cleanup
  trap cluster_cleanup EXIT
  etcd_start
  node_start n1 1 master,data
  node_start n2 2 master,data
  node_start n3 3 ''
  PORT=$((PG_BASE + 3))
  cluster_wait "$PORT" 3
  echo "cluster: n1, n2 data nodes; searches through the coordinating-only n3, nproc $(nproc)"
else
  latency_server "shared_buffers = '256MB'"
fi

sql -v body="$(sed "s/\"number_of_shards\": 2/\"number_of_shards\": $SHARDS/" "$BENCH/lib/debian_index.json")" >/dev/null <<'SQL'
SELECT search_engine.create_index('debian', :'body');
SQL
se_ingest debian >/dev/null
echo "debian: $(se_docs_count debian) docs, $SHARDS shards"

# each mode in a session of its own, the two alternating within a round:
# searches of both modes in turns in one backend would measure glibc
# returning the heap's top to the kernel (brk) after one and faulting it
# back in for the other, not the search
sql -f "$BENCH/lib/latency.sql"
sql <<'SQL'
CREATE TABLE IF NOT EXISTS bench.dfs (round int, q text, mode text, ms float8, top text);
TRUNCATE bench.dfs;
SQL
QS=("library|{\"query\": {\"match\": {\"description\": \"library\"}}}"
    "python library (OR)|{\"query\": {\"match\": {\"description\": \"python library\"}}}"
    "python library (AND)|{\"query\": {\"match\": {\"description\": {\"query\": \"python library\", \"operator\": \"and\"}}}}"
    "\"command line\" (phrase)|{\"query\": {\"match_phrase\": {\"description\": \"command line\"}}}"
    "multi_match (4 terms, 2 fields)|{\"query\": {\"multi_match\": {\"query\": \"web server http proxy\", \"fields\": [\"summary^2\", \"description\"]}}}"
    "kernel|{\"query\": {\"match\": {\"description\": \"kernel\"}}}")
for round in $(seq 1 "$ROUNDS"); do
  for entry in "${QS[@]}"; do
    IFS='|' read -r name body <<<"$entry"
    for mode in query_then_fetch dfs_query_then_fetch; do
      sql -v name="$name" -v body="$body" -v mode="$mode" -v round="$round" \
          -v reps="$REPS" -v warmup="$WARMUP" >/dev/null <<'SQL'
INSERT INTO bench.dfs SELECT :round, :'name', :'mode',
  (SELECT median_ms FROM bench.latency(format('SELECT search_engine.search(%L, %L, %L)', 'debian', :'body', :'mode'), :warmup, :reps)),
  (SELECT string_agg(h->>'_id', ',') FROM jsonb_array_elements(search_engine.search('debian', :'body', :'mode')->'hits'->'hits') h);
SQL
    done
  done
done
sql -c "
SELECT q,
       round(min(ms) FILTER (WHERE mode = 'query_then_fetch')::numeric, 3) AS qtf_min,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'query_then_fetch'))::numeric, 3) AS qtf_med,
       round(max(ms) FILTER (WHERE mode = 'query_then_fetch')::numeric, 3) AS qtf_max,
       round(min(ms) FILTER (WHERE mode = 'dfs_query_then_fetch')::numeric, 3) AS dfs_min,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'dfs_query_then_fetch'))::numeric, 3) AS dfs_med,
       round(max(ms) FILTER (WHERE mode = 'dfs_query_then_fetch')::numeric, 3) AS dfs_max,
       round(((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'dfs_query_then_fetch')) /
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'query_then_fetch')))::numeric, 2) AS ratio,
       count(DISTINCT top) FILTER (WHERE mode = 'query_then_fetch') = 1
         AND count(DISTINCT top) FILTER (WHERE mode = 'dfs_query_then_fetch') = 1 AS stable,
       min(top) FILTER (WHERE mode = 'query_then_fetch') = min(top) FILTER (WHERE mode = 'dfs_query_then_fetch') AS same_top10
FROM bench.dfs GROUP BY q ORDER BY min(round), q"
