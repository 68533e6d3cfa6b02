#!/usr/bin/env bash
# Relocation on loopback (issues 15/16), as root: two data nodes (n1, n2,
# master-eligible) and three etcd members; a one-shard index without
# replicas holds the Debian corpus, flushed.
#   1. the time to relocate its primary n1 -> n2 (POST /_cluster/reroute
#      move, unthrottled recoveries) until the routing shows it STARTED on
#      n2 with no relocation left;
#   2. writes during a primary relocation against writes without one: one
#      client sends bulks of BATCH documents through n1 for SECONDS seconds
#      (a) with the primary staying where it is, (b) while it moves back
#      n2 -> n1; per-bulk latency p50/p99/max and documents per second.
#   bench/relocation_bench.sh    (SECONDS_RUN=15 BATCH=100 CLUSTER_DIR=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_relocation_bench}
SECONDS_RUN=${SECONDS_RUN:-15}
BATCH=${BATCH:-100}
PGDIR=$CLUSTER_DIR/n1
ETCD_BASE=${ETCD_BASE:-24090}
PG_BASE=${PG_BASE:-5731}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

two_data_nodes_start
req() {
  local body=${3:-NULL}
  [ "$body" = NULL ] || body="\$b\$$body\$b\$"
  PORT=$N1 sqlv -c "SELECT status || ' ' || coalesce(body::text, '') FROM search_engine.request('$1', '$2', $body)"
}
primary_on() {
  PORT=$N1 sqlv -c "SELECT r->>'node' FROM jsonb_array_elements((search_engine.request('GET', '/_cat/shards/mvbench?format=json&h=prirep,node,state', NULL)).body) r WHERE r->>'prirep' = 'p' AND r->>'state' = 'STARTED'"
}
# wait (one session) until the primary is STARTED on node $1 and nothing moves
wait_moved() {
  PORT=$N1 sql >/dev/null <<SQL
DO \$\$
BEGIN
  FOR i IN 1 .. 6000 LOOP
    EXIT WHEN (SELECT (body->>'relocating_shards')::int = 0 AND body->>'status' = 'green'
               FROM search_engine.request('GET', '/_cluster/health/mvbench', NULL))
      AND EXISTS (SELECT 1 FROM jsonb_array_elements((search_engine.request('GET', '/_cat/shards/mvbench?format=json&h=prirep,node,state', NULL)).body) r
                  WHERE r->>'prirep' = 'p' AND r->>'node' = '$1' AND r->>'state' = 'STARTED');
    PERFORM pg_sleep(0.05);
    IF i = 6000 THEN RAISE EXCEPTION 'not moved after 300 s'; END IF;
  END LOOP;
END \$\$;
SQL
}
move() { req POST /_cluster/reroute "{\"commands\":[{\"move\":{\"index\":\"mvbench\",\"shard\":0,\"from_node\":\"$1\",\"to_node\":\"$2\"}}]}" | cut -c1-60; }

req DELETE /mvbench >/dev/null || true
req PUT /_cluster/settings '{"persistent":{"indices.recovery.max_bytes_per_sec":"-1","cluster.routing.rebalance.enable":"none"}}' >/dev/null
req PUT /mvbench '{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"30s","index.routing.allocation.include._name":"n1"}}' >/dev/null
echo "== loading the corpus into one shard on n1"
"$L" ingest -d "$(dsn $N1)" --corpus "$DATA/debian.ndjson" --index mvbench --append --clients 2 --batch 1000 \
  --progress never >/dev/null || true
req PUT /mvbench/_settings '{"index.routing.allocation.include._name":null}' >/dev/null
req POST /mvbench/_flush | cut -c1-60
STORE=$(PORT=$N1 sqlv -c "SELECT sum(store) FROM search_engine.shards WHERE index = 'mvbench'")
DOCS=$(PORT=$N1 sqlv -c "SELECT sum(docs) FROM search_engine.shards WHERE index = 'mvbench'")
echo "shard: $DOCS documents, $((STORE / 1048576)) MB, primary on $(primary_on)"

echo "== 1. relocate the primary n1 -> n2 (idle)"
t0=$(now)
move n1 n2
wait_moved n2
t1=$(now)
awk -v w="$(echo "$t1 - $t0" | bc)" -v s="$STORE" 'BEGIN {
  printf "relocated %.1f MB in %.2f s (%.1f MB/s), reroute to STARTED on n2\n", s / 1048576, w, (s / 1048576) / w }'

# writes: one session sending bulks of $BATCH through n1 for $SECONDS_RUN s
writes() {
  PORT=$N1 sqlv <<SQL
DO \$\$
DECLARE
  t0 timestamptz;
  stop timestamptz := clock_timestamp() + interval '$SECONDS_RUN seconds';
  lat float8[] := '{}';
  body text;
  n int := 0;
  errs int := 0;
  r jsonb;
BEGIN
  WHILE clock_timestamp() < stop LOOP
    SELECT string_agg(format('{"index":{"_id":"%s-%s"}}' || chr(10) || '{"title":"relocation bench %s","n":%s}', '$1', n + g, n + g, n + g), chr(10)) || chr(10)
      INTO body FROM generate_series(1, $BATCH) g;
    t0 := clock_timestamp();
    r := search_engine.bulk(body, 'mvbench')::jsonb;
    lat := lat || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
    IF (r->>'errors')::bool THEN errs := errs + 1; END IF;
    n := n + $BATCH;
  END LOOP;
  RAISE WARNING 'RESULT % bulks, % docs/s, p50 % ms, p99 % ms, max % ms, % bulks with errors',
    array_length(lat, 1),
    round(n / $SECONDS_RUN::numeric),
    round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(lat) x)::numeric, 1),
    round((SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY x) FROM unnest(lat) x)::numeric, 1),
    round((SELECT max(x) FROM unnest(lat) x)::numeric, 1), errs;
END \$\$;
SQL
}

echo "== 2a. writes, primary on n2, no relocation (${SECONDS_RUN}s, bulks of $BATCH)"
writes a 2>&1 | grep -o 'RESULT.*'
echo "== 2b. writes while the primary relocates n2 -> n1"
( sleep 2; t0=$(now); move n2 n1 >/dev/null; wait_moved n1; t1=$(now);
  echo "   (relocation under writes took $(echo "$t1 - $t0" | bc) s)" ) &
MV=$!
writes b 2>&1 | grep -o 'RESULT.*'
wait "$MV"
req POST /mvbench/_refresh >/dev/null
echo "count after: $(req GET /mvbench/_count | grep -o '"count": *[0-9]*')"
