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
#   The ceiling, measured in the same run: the shard's files copied with cp
#   and synced, from a cold cache, on the same disk.  RUNS=n repeats part 1
#   (and the ceiling) n times; PERF=1 records a perf profile of part 1's
#   first run (both nodes, perf.data in CLUSTER_DIR); KEEP=1 reuses a
#   cluster and index loaded by an earlier run (same REPEAT; flushed
#   first); BENCH_REV=commit measures another build; SYNTH_MB=n
#   loads n MB of synthetic 64 KB documents instead of the Debian corpus;
#   PARTS=1 stops after part 1.
#   bench/recovery_bench.sh    (REPEAT=18 (about 1 GB) GONE=30 THROTTLE=40mb RUNS=3 CLUSTER_DIR=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_recovery_bench}
REPEAT=${REPEAT:-18}
RUNS=${RUNS:-3}
PERF=${PERF:-0}
KEEP=${KEEP:-0}
SYNTH_MB=${SYNTH_MB:-0}
GONE=${GONE:-30}
THROTTLE=${THROTTLE:-40mb}
PARTS=${PARTS:-1 2 3}
PGDIR=$CLUSTER_DIR/n1
ETCD_BASE=${ETCD_BASE:-23990}
PG_BASE=${PG_BASE:-5711}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

two_data_nodes_start
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

req PUT /_cluster/settings '{"persistent":{"indices.recovery.max_bytes_per_sec":"-1"}}' >/dev/null
CORPUS=$CLUSTER_DIR/corpus
mkdir -p "$CORPUS"
if [ "$KEEP" = 1 ] && [ "$(PORT=$N1 sqlv -c "SELECT count(*) FROM search_engine.indices WHERE index = 'rbench'")" = 1 ]; then
  echo "== reusing the loaded index"
  # as loaded: the copies recovered, what the last run's part 2 wrote
  # flushed (no translog to replay), then no replica
  wait_green
  req POST /rbench/_flush | cut -c1-80
  req PUT /rbench/_settings '{"index":{"number_of_replicas":0}}' >/dev/null
  sleep 3
else
req DELETE /rbench >/dev/null || true
if [ "$SYNTH_MB" -gt 0 ]; then
# a synthetic corpus: documents of 64 KB of random base64 in an unindexed
# object (ES "enabled": false) and a few words, SYNTH_MB MB of them -- a
# large shard loads in seconds where the Debian corpus takes many minutes
req PUT /rbench '{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"30s","unassigned.node_left.delayed_timeout":"0"},"mappings":{"properties":{"title":{"type":"text"},"blob":{"type":"object","enabled":false}}}}' >/dev/null
echo "== loading $SYNTH_MB MB of synthetic documents into one shard"
f=$CORPUS/synthetic.ndjson
[ -s "$f" ] || python3 - "$f" "$SYNTH_MB" <<'PY'
import base64, os, sys
path, mb = sys.argv[1], int(sys.argv[2])
with open(path, "w") as out:
    for i in range(mb * 16):
        data = base64.b64encode(os.urandom(48 * 1024)).decode()
        out.write('{"index":{"_id":"s%d"}}\n{"title":"synthetic document %d","blob":{"data":"%s"}}\n' % (i, i % 97, data))
PY
"$L" ingest -d "$(dsn $N1)" --corpus "$f" --index rbench --append --clients 2 --batch 50 \
  --progress never >/dev/null || true
REPEAT=0
else
req PUT /rbench '{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"30s","unassigned.node_left.delayed_timeout":"0"}}' >/dev/null
echo "== loading the corpus $REPEAT times into one shard"
fi
for r in $(seq 1 "$REPEAT"); do
  f=$CORPUS/copy$r.ndjson
  [ -s "$f" ] || sed "s/^{\"index\":{\"_id\":\"/{\"index\":{\"_id\":\"r$r-/" "$DATA/debian.ndjson" > "$f"
  # (its final count check counts the earlier copies too: not an error here)
  "$L" ingest -d "$(dsn $N1)" --corpus "$f" --index rbench --append --clients 2 --batch 1000 \
    --progress never >/dev/null || true
done
req POST /rbench/_flush | cut -c1-80
req POST '/rbench/_forcemerge?max_num_segments=1' | cut -c1-80
req POST /rbench/_flush | cut -c1-80
fi
STORE=$(PORT=$N1 sqlv -c "SELECT sum(store) FROM search_engine.shards WHERE index = 'rbench'")
DOCS=$(PORT=$N1 sqlv -c "SELECT sum(docs) FROM search_engine.shards WHERE index = 'rbench'")
UUID=$(PORT=$N1 sqlv -c "SELECT uuid FROM search_engine.indices WHERE index = 'rbench'")
# (the primary may be on n2 when an earlier run left it there)
SHARD_DIR=$(find "$CLUSTER_DIR/n1" "$CLUSTER_DIR/n2" -type d -path "*/indices/$UUID/0/index" | head -1)
echo "shard: $DOCS documents, $((STORE / 1048576)) MB ($(ls "$SHARD_DIR" | wc -l) files in $SHARD_DIR)"

# The ceiling: the same files copied by cp and synced, from a cold cache
ceiling() {
  local dst=$CLUSTER_DIR/ceiling t0 t1 mb
  rm -rf "$dst"
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  t0=$(now)
  cp -r "$SHARD_DIR" "$dst" && sync
  t1=$(now)
  mb=$(du -sm "$dst" | cut -f1)
  rm -rf "$dst"
  awk -v mb="$mb" -v s="$(echo "$t1 - $t0" | bc)" 'BEGIN { printf "ceiling: cp + sync of %d MB in %.2f s: %.1f MB/s\n", mb, s, mb / s }'
}

for run in $(seq 1 "$RUNS"); do
echo "== 1. file-based recovery, unthrottled (run $run of $RUNS)"
if [ "$run" -gt 1 ]; then
  req PUT /rbench/_settings '{"index":{"number_of_replicas":0}}' >/dev/null
  sleep 3
fi
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
if [ "$PERF" = 1 ] && [ "$run" = 1 ]; then
  perf record -g -o "$CLUSTER_DIR/perf.data" \
    -p "$(head -1 "$CLUSTER_DIR/n1/postmaster.pid"),$(head -1 "$CLUSTER_DIR/n2/postmaster.pid")" \
    --inherit >/dev/null 2>&1 &
  PERF_PID=$!
  sleep 1
fi
c0=$(cluster_cpu)
t0=$(now)
req PUT /rbench/_settings '{"index":{"number_of_replicas":1}}' >/dev/null
wait_green
t1=$(now)
c1=$(cluster_cpu)
if [ -n "${PERF_PID:-}" ]; then kill -INT "$PERF_PID"; wait "$PERF_PID" || true; PERF_PID=; fi
read -r ms bytes total files ftotal ops thr <<<"$(recovery_row)"
awk -v b="$bytes" -v ms="$ms" -v w="$(echo "$t1 - $t0" | bc)" -v f="$files" -v ft="$ftotal" -v ops="$ops" \
  -v cpu="$(echo "$c1 - $c0" | bc -l)" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "copied %.1f MB in %d files (of %d) in %.2f s (recovery) / %.2f s (settings to green): %.1f MB/s, %d translog ops\n",
    b / 1048576, f, ft, ms / 1000, w, (b / 1048576) / (ms / 1000), ops
  printf "  both nodes used %.2f CPU s for it: %.1f MB per CPU second (load average %s on %s cores)\n",
    cpu, (b / 1048576) / cpu, load, "'"$(nproc)"'" }'
ceiling
done

[[ " $PARTS " == *" 2 "* ]] || [[ " $PARTS " == *" 3 "* ]] || exit 0
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
# part 2's writes flushed: the time is the copy's, not a replay of them
req POST /rbench/_flush >/dev/null
req PUT /rbench/_settings '{"index":{"number_of_replicas":0}}' >/dev/null
sleep 3
req PUT /_cluster/settings "{\"persistent\":{\"indices.recovery.max_bytes_per_sec\":\"$THROTTLE\"}}" >/dev/null
req PUT /rbench/_settings '{"index":{"number_of_replicas":1}}' >/dev/null
wait_green
read -r ms bytes total files ftotal ops thr <<<"$(recovery_row)"
awk -v b="$bytes" -v ms="$ms" -v thr="$thr" -v ops="$ops" 'BEGIN {
  printf "copied %.1f MB in %.2f s: %.1f MB/s, %.2f s of it throttled, %d translog ops\n",
    b / 1048576, ms / 1000, (b / 1048576) / (ms / 1000), thr / 1000, ops }'
req PUT /_cluster/settings '{"persistent":{"indices.recovery.max_bytes_per_sec":null}}' >/dev/null
