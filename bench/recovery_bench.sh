#!/usr/bin/env bash
# Peer recovery speed on loopback (issue 16), as root: two data nodes (n1,
# n2, master-eligible) and three etcd members; a one-shard index holds the
# Debian corpus REPEAT times over (ids prefixed per copy), flushed.
#   1. file-based recovery: number_of_replicas 0 -> 1 with
#      indices.recovery.max_bytes_per_sec -1 (unthrottled); the time from
#      the settings change to green, and _cat/recovery's own figures
#      (bytes copied, time): MB/s;
#   2. a returning node: n2 stops, GONE seconds of writes (BATCHES_GONE bulk
#      requests of 1000 documents) go to the primary, n2 starts; the bytes
#      the second recovery copied against the shard's size, and its
#      translog operations;
#   3. throttled: the first recovery again with max_bytes_per_sec THROTTLE.
#   The CPU seconds both nodes spent on part 1 are printed too: on a shared
#   machine the elapsed time says more about the other load than about us.
#   bench/recovery_bench.sh    (REPEAT=6 GONE=30 THROTTLE=40mb CLUSTER_DIR=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_recovery_bench}
REPEAT=${REPEAT:-6}
GONE=${GONE:-30}
THROTTLE=${THROTTLE:-40mb}
PGDIR=$CLUSTER_DIR/n1
ETCD_BASE=${ETCD_BASE:-23990}
PG_BASE=${PG_BASE:-5711}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

[ "${SKIP_BUILD:-0}" = 1 ] || build_private
make -C "$BENCH/loadgen" -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
L=$BENCH/loadgen/se-loadgen
corpus_ready
echo "== commit ${PRIVATE_REV:-$(git -C "$REPO" rev-parse --short HEAD)}; cluster in $CLUSTER_DIR"
cleanup() {
  node_stop n1 || true
  node_stop n2 || true
  etcd_stop
}
trap cleanup EXIT
etcd_start
node_start n1 1 master,data
node_start n2 2 master,data
N1=$((PG_BASE + 1))
N2=$((PG_BASE + 2))
cluster_wait "$N1" 2
dsn() { echo "host=/tmp port=$1 user=postgres dbname=postgres"; }
# req METHOD PATH [BODY]: status and body of a REST call on n1
req() {
  local body=${3:-}
  if [ -n "$body" ]; then
    PORT=$N1 sqlv -c "SELECT status || ' ' || coalesce(body::text, '') FROM search_engine.request('$1', '$2', \$b\$$body\$b\$)"
  else
    PORT=$N1 sqlv -c "SELECT status || ' ' || coalesce(body::text, '') FROM search_engine.request('$1', '$2', NULL)"
  fi
}
# wait for green in one session (a new backend per poll would cost more CPU
# than the recovery it waits for: cluster_cpu counts every backend)
wait_green() {
  PORT=$N1 sql >/dev/null <<'SQL'
DO $$
BEGIN
  FOR i IN 1 .. 6000 LOOP
    EXIT WHEN (SELECT body->>'status' FROM search_engine.request('GET', '/_cluster/health/rbench', NULL)) = 'green';
    PERFORM pg_sleep(0.1);
    IF i = 6000 THEN RAISE EXCEPTION 'no green after 600 s'; END IF;
  END LOOP;
END $$;
SQL
}
# CPU seconds the two nodes used so far: each postmaster with its live
# children, and the children it reaped (the recovery worker exits)
cluster_cpu() {
  local n pm total=0 pid
  for n in n1 n2; do
    pm=$(head -1 "$CLUSTER_DIR/$n/postmaster.pid" 2>/dev/null) || continue
    for pid in $pm $(pgrep -P "$pm"); do
      total=$(awk -v t="$total" '{ print t + $14 + $15 + $16 + $17 }' "/proc/$pid/stat" 2>/dev/null || echo "$total")
    done
  done
  echo "$total / $(getconf CLK_TCK)" | bc -l
}
recovery_row() {
  PORT=$N1 sqlv -F ' ' -c "SELECT time, bytes_recovered, bytes_total, files_recovered, files_total,
    translog_ops_recovered, throttle_time FROM search_engine.recovery
    WHERE index = 'rbench' ORDER BY start_time_millis DESC LIMIT 1"
}

req DELETE /rbench >/dev/null || true
req PUT /_cluster/settings '{"persistent":{"indices.recovery.max_bytes_per_sec":"-1"}}' >/dev/null
req PUT /rbench '{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"30s","unassigned.node_left.delayed_timeout":"0"}}' >/dev/null
echo "== loading the corpus $REPEAT times into one shard"
CORPUS=$CLUSTER_DIR/corpus
mkdir -p "$CORPUS"
for r in $(seq 1 "$REPEAT"); do
  f=$CORPUS/copy$r.ndjson
  [ -s "$f" ] || sed "s/^{\"index\":{\"_id\":\"/{\"index\":{\"_id\":\"r$r-/" "$DATA/debian.ndjson" > "$f"
  # (its final count check counts the earlier copies too: not an error here)
  "$L" ingest -d "$(dsn $N1)" --corpus "$f" --index rbench --append --clients 2 --batch 1000 \
    --progress never >/dev/null || true
done
req POST /rbench/_flush | cut -c1-80
STORE=$(PORT=$N1 sqlv -c "SELECT sum(store) FROM search_engine.shards WHERE index = 'rbench'")
DOCS=$(PORT=$N1 sqlv -c "SELECT sum(docs) FROM search_engine.shards WHERE index = 'rbench'")
echo "shard: $DOCS documents, $((STORE / 1048576)) MB"

echo "== 1. file-based recovery, unthrottled"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
c0=$(cluster_cpu)
t0=$(now)
req PUT /rbench/_settings '{"index":{"number_of_replicas":1}}' >/dev/null
wait_green
t1=$(now)
c1=$(cluster_cpu)
read -r ms bytes total files ftotal ops thr <<<"$(recovery_row)"
awk -v b="$bytes" -v ms="$ms" -v w="$(echo "$t1 - $t0" | bc)" -v f="$files" -v ft="$ftotal" -v ops="$ops" \
  -v cpu="$(echo "$c1 - $c0" | bc -l)" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "copied %.1f MB in %d files (of %d) in %.2f s (recovery) / %.2f s (settings to green): %.1f MB/s, %d translog ops\n",
    b / 1048576, f, ft, ms / 1000, w, (b / 1048576) / (ms / 1000), ops
  printf "  both nodes used %.2f CPU s for it: %.1f MB per CPU second (load average %s on %s cores)\n",
    cpu, (b / 1048576) / cpu, load, "'"$(nproc)"'" }'

echo "== 2. n2 gone ${GONE}s under writes, then back"
node_stop n2
for i in $(seq 1 600); do
  req GET /_cluster/health/rbench | grep -q '"status": *"yellow"' && break
  sleep 0.1
done
f=$CORPUS/gone.ndjson
sed "s/^{\"index\":{\"_id\":\"/{\"index\":{\"_id\":\"gone-/" "$DATA/debian.ndjson" > "$f"
end=$(( $(date +%s) + GONE ))
"$L" ingest -d "$(dsn $N1)" --corpus "$f" --index rbench --append --clients 1 --batch 1000 \
  --progress never >/dev/null &
LG=$!
while [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
kill "$LG" 2>/dev/null || true
wait "$LG" 2>/dev/null || true
node_start n2 2 master,data
t0=$(now)
wait_green
t1=$(now)
read -r ms bytes total files ftotal ops thr <<<"$(recovery_row)"
awk -v b="$bytes" -v t="$total" -v ms="$ms" -v f="$files" -v ft="$ftotal" -v ops="$ops" 'BEGIN {
  printf "copied %.2f MB of %.1f MB (%.2f%%), %d of %d files, %d translog ops, in %.2f s\n",
    b / 1048576, t / 1048576, 100 * b / t, f, ft, ops, ms / 1000 }'

echo "== 3. file-based recovery, max_bytes_per_sec $THROTTLE"
req PUT /rbench/_settings '{"index":{"number_of_replicas":0}}' >/dev/null
sleep 3
req PUT /_cluster/settings "{\"persistent\":{\"indices.recovery.max_bytes_per_sec\":\"$THROTTLE\"}}" >/dev/null
req PUT /rbench/_settings '{"index":{"number_of_replicas":1}}' >/dev/null
wait_green
read -r ms bytes total files ftotal ops thr <<<"$(recovery_row)"
awk -v b="$bytes" -v ms="$ms" -v thr="$thr" 'BEGIN {
  printf "copied %.1f MB in %.2f s: %.1f MB/s, %.2f s of it throttled\n",
    b / 1048576, ms / 1000, (b / 1048576) / (ms / 1000), thr / 1000 }'
req PUT /_cluster/settings '{"persistent":{"indices.recovery.max_bytes_per_sec":null}}' >/dev/null
