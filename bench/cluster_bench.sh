#!/usr/bin/env bash
# The cost of the cluster on this machine, as root: a three-node cluster
# (n1, n2 master-eligible data nodes, n3 coordinating-only, three etcd
# members) against one single-node server, built from the same commit,
# with the same index (bench/lib/debian_index.json: 2 shards) and the same
# clients.
#   1. bulk ingest of the Debian corpus through n3 vs into the single node
#      (se-loadgen, CLIENTS clients, 1000-document requests, until searchable);
#   2. top-10 search latency through n3 vs on the single node (se-loadgen
#      query, one client, DURATION seconds, the Debian queries);
#   3. the time for every node to apply a committed cluster state change
#      (ROUNDS mapping updates through the master; each node polls its applied
#      version): median and max;
#   4. the time from PUT /{index} through n3 (2 shards, one per data node) to
#      every shard STARTED in the master's applied state (the data nodes'
#      shard_started reports committed), ROUNDS indices: median and max.
#   5. a foreign table over the index (src/fdw) through n3 vs on the single
#      node: a scan + aggregate, a GROUP BY, count(*) and a top-10 query,
#      REPS runs each after one warm-up, server-side median (needs the
#      corpus loaded by part 1).
#   bench/cluster_bench.sh     (CLIENTS=2 DURATION=15 ROUNDS=30 REPS=5 CLUSTER_DIR=... PARTS="1 2 3 4 5")
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_cluster_bench}
CLIENTS=${CLIENTS:-2}
DURATION=${DURATION:-15}
ROUNDS=${ROUNDS:-30}
REPS=${REPS:-5}
PARTS=${PARTS:-1 2 3 4 5}
PGDIR=$CLUSTER_DIR/solo
ETCD_BASE=${ETCD_BASE:-23890}
PG_BASE=${PG_BASE:-5611}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

build_private
make -C "$BENCH/loadgen" -s >/dev/null
L=$BENCH/loadgen/se-loadgen
corpus_ready
echo "== commit $PRIVATE_REV; cluster in $CLUSTER_DIR"
etcd_start
node_start n1 1 master,data
node_start n2 2 master,data
node_start n3 3 ''
SOLO=$((PG_BASE + 4))
PGDIR=$CLUSTER_DIR/solo PORT=$SOLO server_start
N3=$((PG_BASE + 3))
cluster_wait "$N3" 3
OUT=$CLUSTER_DIR/results
mkdir -p "$OUT"

part() { [[ " $PARTS " == *" $1 "* ]]; }

if part 1; then
echo "== 1. ingest: $CORPUS_DOCS documents, $CLIENTS clients"
for target in solo n3; do
  port=$([ $target = solo ] && echo $SOLO || echo $N3)
  "$L" ingest -d "$(dsn $port)" --corpus "$DATA/debian.ndjson" --index debian \
    --index-body "$BENCH/lib/debian_index.json" --clients "$CLIENTS" --batch 1000 \
    --progress never -q --json "$OUT/ingest-$target.json"
done
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
solo = json.load(open(f"{d}/ingest-solo.json"))
n3 = json.load(open(f"{d}/ingest-n3.json"))
a, b = solo["docs_per_s_searchable"], n3["docs_per_s_searchable"]
print(f"single node: {a:.0f} docs/s; cluster through n3: {b:.0f} docs/s; "
      f"time ratio cluster/single = {a / b:.2f}")
PY
fi

if part 2; then
echo "== 2. search: top-10, 1 client, ${DURATION}s"
for target in solo n3; do
  port=$([ $target = solo ] && echo $SOLO || echo $N3)
  "$L" query -d "$(dsn $port)" --index debian --queries "$BENCH/loadgen/queries/debian.queries" \
    --clients 1 --duration "$DURATION" --progress never -q --json "$OUT/query-$target.json"
done
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
def lat(f):
    j = json.load(open(f))["server_ms"]
    return j["p50"], j["p99"]
s50, s99 = lat(f"{d}/query-solo.json")
c50, c99 = lat(f"{d}/query-n3.json")
print(f"server-side latency, single node: p50 {s50:.2f} ms p99 {s99:.2f} ms; cluster through n3: p50 {c50:.2f} ms p99 {c99:.2f} ms; "
      f"p50 ratio = {c50 / s50:.2f}")
PY
fi

if part 3; then
echo "== 3. applying a committed state change on every node: $ROUNDS mapping updates"
version() { PORT=$1 sqlv -c "SELECT (search_engine.request('GET', '/_cluster/state/version')).body->>'version'"; }
poll_sql="DO \$\$ DECLARE v0 bigint := (search_engine.request('GET', '/_cluster/state/version')).body->>'version';
BEGIN
  PERFORM pg_advisory_lock(4242);   -- the writer holds it until it is about to commit
  PERFORM pg_advisory_unlock(4242);
  LOOP
    EXIT WHEN ((search_engine.request('GET', '/_cluster/state/version')).body->>'version')::bigint > v0;
    PERFORM pg_sleep(0.001);
  END LOOP;
  RAISE WARNING 'applied %', extract(epoch FROM clock_timestamp());
END \$\$;"
: > "$OUT/apply.txt"
for r in $(seq 1 "$ROUNDS"); do
  # pollers on every node wait for the version to move; the master's commit starts the clock
  pids=()
  for port in $((PG_BASE + 1)) $((PG_BASE + 2)) $N3; do
    ( PORT=$port sql -c "$poll_sql" 2>&1 | sed -n 's/.*applied \([0-9.]*\).*/\1/p' > "$OUT/apply.$port" ) &
    pids+=($!)
  done
  sleep 0.3
  t0=$(PORT=$N3 sqlv -c "SELECT extract(epoch FROM clock_timestamp()) FROM (SELECT search_engine.put_mapping('debian', '{\"properties\":{\"f$r\":{\"type\":\"keyword\"}}}')) x" | tail -1)
  wait "${pids[@]}"
  # the commit returns once the master applied it; t0 is taken after it, so
  # use the latest node minus the earliest as the spread, and latest - start
  for port in $((PG_BASE + 1)) $((PG_BASE + 2)) $N3; do cat "$OUT/apply.$port"; done |
    awk -v t0="$t0" '{ if (NR == 1 || $1 > max) max = $1; if (NR == 1 || $1 < min) min = $1 } END { printf "%.1f\n", (max - min) * 1000 }' >> "$OUT/apply.txt"
done
sort -n "$OUT/apply.txt" | awk '{ a[NR] = $1 } END { printf "from the master applying a change to the last node applying it: median %.1f ms, max %.1f ms (%d rounds)\n", a[int((NR + 1) / 2)], a[NR], NR }'
fi

if part 4; then
echo "== 4. PUT /{index} through n3 to every shard STARTED in the master's state: $ROUNDS indices"
master=$(PORT=$N3 sqlv -c "SELECT (search_engine.request('GET', '/_cat/master?format=json')).body->0->>'node'")
MPORT=$((PG_BASE + ${master#n}))
: > "$OUT/started.txt"
for r in $(seq 1 "$ROUNDS"); do
  # the master polls its own applied routing until both shards are STARTED
  ( PORT=$MPORT sql -c "DO \$\$ BEGIN
    LOOP
      EXIT WHEN (SELECT count(*) FROM jsonb_each((search_engine.request('GET', '/_cluster/state/routing_table')).body
                   #> '{routing_table,indices,started_$r,shards}') s, jsonb_array_elements(s.value) c
                 WHERE c->>'state' = 'STARTED') = 2;
      PERFORM pg_sleep(0.001);
    END LOOP;
    RAISE WARNING 'started %', extract(epoch FROM clock_timestamp());
  END \$\$;" 2>&1 | sed -n 's/.*started \([0-9.]*\).*/\1/p' > "$OUT/started.$r" ) &
  poller=$!
  sleep 0.2
  out=$(PORT=$N3 sqlv -c "SELECT extract(epoch FROM clock_timestamp()) FROM (SELECT 1) x" -c \
    "SELECT status FROM search_engine.request('PUT', '/started_$r?wait_for_active_shards=0', '{\"settings\":{\"number_of_shards\":2,\"number_of_replicas\":0}}')")
  t0=${out%%$'\n'*}
  wait $poller
  awk -v t0="$t0" '{ printf "%.1f\n", ($1 - t0) * 1000 }' "$OUT/started.$r" >> "$OUT/started.txt"
  PORT=$N3 sqlv -c "SELECT status FROM search_engine.request('DELETE', '/started_$r', NULL)" >/dev/null
done
sort -n "$OUT/started.txt" | awk '{ a[NR] = $1 } END { printf "from PUT through n3 to both shards STARTED in the master'"'"'s state: median %.1f ms, max %.1f ms (%d indices)\n", a[int((NR + 1) / 2)], a[NR], NR }'
fi

if part 5; then
echo "== 5. foreign table: scan + aggregate, GROUP BY, count(*), top-10; median of $REPS"
fdw_setup="CREATE SERVER IF NOT EXISTS se FOREIGN DATA WRAPPER search_engine;
DROP FOREIGN TABLE IF EXISTS debian_ft;
CREATE FOREIGN TABLE debian_ft (_id text, package text, section text, installed_size bigint,
  description text, _score real) SERVER se OPTIONS (index 'debian');
CREATE OR REPLACE FUNCTION pg_temp.median_ms(q text, reps int) RETURNS numeric LANGUAGE plpgsql AS \$f\$
DECLARE t timestamptz; ms numeric[] := '{}';
BEGIN
  EXECUTE q;   -- warm-up
  FOR i IN 1 .. reps LOOP
    t := clock_timestamp();
    EXECUTE q;
    ms := ms || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
  END LOOP;
  RETURN (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY m)::numeric, 2) FROM unnest(ms) m);
END \$f\$;"
queries=(
  "scan + aggregate|SELECT count(*), sum(installed_size), sum(length(package)) FROM debian_ft"
  "GROUP BY section|SELECT section, count(*), avg(installed_size) FROM debian_ft GROUP BY section"
  "count(*)|SELECT count(*) FROM debian_ft"
  "top-10 @@@|SELECT _id, _score FROM debian_ft WHERE description OPERATOR(search_engine.@@@) 'network file system' ORDER BY _score DESC LIMIT 10"
)
: > "$OUT/fdw.tsv"
for target in solo n3; do
  port=$([ $target = solo ] && echo $SOLO || echo $N3)
  for qq in "${queries[@]}"; do
    name=${qq%%|*}; q=${qq#*|}
    ms=$(PORT=$port sqlv -c "$fdw_setup" -c "SELECT pg_temp.median_ms(\$q\$$q\$q\$, $REPS)" | tail -1)
    printf '%s\t%s\t%s\n' "$target" "$name" "$ms" >> "$OUT/fdw.tsv"
  done
done
# the same answers from both
for qq in "${queries[@]:0:2}"; do
  q=${qq#*|}
  a=$(PORT=$SOLO sqlv -c "$fdw_setup" -c "SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM ($q) x" | tail -1)
  b=$(PORT=$N3 sqlv -c "$fdw_setup" -c "SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM ($q) x" | tail -1)
  [ "$a" = "$b" ] || { echo "different answers through n3 for: $q" >&2; exit 1; }
done
awk -F'\t' '{ v[$2, $1] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
  END { for (i = 1; i <= n; i++) { k = order[i]; printf "%s: single node %s ms, through n3 %s ms (%.1fx)\n", k, v[k, "solo"], v[k, "n3"], v[k, "n3"] / v[k, "solo"] } }' "$OUT/fdw.tsv"
fi

echo
echo "Results in $OUT.  Stop: for n in n1 n2 n3 solo; do $REPO/test/pg_instance.sh stop $CLUSTER_DIR/\$n; done; kill \$(cat $CLUSTER_DIR/etcd/*.pid)"
