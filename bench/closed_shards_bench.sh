#!/usr/bin/env bash
# Index creation while the cluster holds many mostly closed shard copies
# (issue 15's end-to-end figure), as root: three etcd members, n1 and n2
# (master, data), n3 coordinating-only.  Creates INDICES indices of SHARDS
# shards each (no replicas) through n3 and closes all but OPEN of them, then
# times ROUNDS creations of a 2-shard index through n3 (PUT until acknowledged
# with its shards active, i.e. the master's reroute, the commit, the data
# nodes' apply, open and shard_started report), and reports what a closed
# copy costs a node: no shard slot (shared memory), no open file, and its
# share of every process's parsed cluster state (pg_backend_memory_contexts)
# and of the state file.
#   bench/closed_shards_bench.sh   (INDICES=100 SHARDS=100 OPEN=10 ROUNDS=10 CLUSTER_DIR=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_closed_bench}
INDICES=${INDICES:-100}
SHARDS=${SHARDS:-100}
OPEN=${OPEN:-10}
ROUNDS=${ROUNDS:-10}
PGDIR=$CLUSTER_DIR/n1
ETCD_BASE=${ETCD_BASE:-23990}
PG_BASE=${PG_BASE:-5711}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

build_private
echo "== commit $PRIVATE_REV; cluster in $CLUSTER_DIR"
etcd_start
node_start n1 1 master,data
node_start n2 2 master,data
node_start n3 3 ''
N1=$((PG_BASE + 1))
N3=$((PG_BASE + 3))
cluster_wait "$N3" 3

# state memory of a fresh backend on n1 after it read the cluster state
state_mem() {
  PORT=$N1 sqlv -c "SELECT count(*) FROM search_engine.indices" \
    -c "SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts WHERE name IN ('search_engine cluster state', 'search_engine index state')" | tail -1
}

existing=$(PORT=$N3 sqlv -c "SELECT count(*) FROM search_engine.indices WHERE index LIKE 'bulk_%'")
mem_before=$(state_mem)
echo "== $INDICES indices x $SHARDS shards ($existing there already), all but $OPEN closed"
t0=$(now)
for i in $(seq "$existing" $((INDICES - 1))); do
  name=$(printf 'bulk_%04d' "$i")
  PORT=$N3 sqlv -c "SELECT (search_engine.request('PUT', '/$name?timeout=120s',
    '{\"settings\": {\"number_of_shards\": $SHARDS, \"number_of_replicas\": 0}}')).status" >/dev/null
  if [ "$i" -ge "$OPEN" ]; then
    PORT=$N3 sqlv -c "SELECT (search_engine.request('POST', '/$name/_close')).status" >/dev/null
  fi
done
echo "   built in $(echo "$(now) - $t0" | bc) s"
copies=$((INDICES * SHARDS))
mem_after=$(state_mem)
dd=$(PORT=$N1 sqlv -c "SHOW search_engine.data_directory")
[ -n "$dd" ] || dd=$CLUSTER_DIR/n1/search_engine
state_bytes=$(du -sb "$dd/_state" 2>/dev/null | cut -f1 || echo 0)
slots_used=$(PORT=$N1 sqlv -c "SELECT count(*) FROM search_engine.shards WHERE node = 'n1'")

# a restarted cluster first recovers its open copies: time creations after
PORT=$N3 sqlv -c "SELECT (search_engine.request('GET', '/_cluster/health?wait_for_status=green&timeout=900s')).body->>'status'" >/dev/null
echo "== $ROUNDS index creations through n3 with $copies copies in the cluster"
times=()
cold=()
for r in $(seq 1 "$ROUNDS"); do
  name="probe_$(date +%s%N)"
  # a session whose backend has read the state already (as a pooled
  # connection's has): the first read of a fresh backend is timed apart
  t=$(PORT=$N3 sqlv <<SQL
\\timing on
SELECT count(*) FROM search_engine.indices;
SELECT (search_engine.request('PUT', '/$name', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}')).status;
SQL
)
  ms=$(echo "$t" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
  cold+=("$(echo "$ms" | sed -n 1p)")
  times+=("$(echo "$ms" | sed -n 2p)")
  PORT=$N3 sqlv -c "SELECT (search_engine.request('DELETE', '/$name')).status" >/dev/null
done
python3 - "$copies" "$OPEN" "$SHARDS" "$mem_before" "$mem_after" "$state_bytes" "$slots_used" "$(IFS=,; echo "${cold[*]}")" "${times[@]}" <<'PY'
import statistics, sys
copies, open_, shards, mb, ma, sb, slots = (int(float(x)) for x in sys.argv[1:8])
cold = [float(x) for x in sys.argv[8].split(',')]
t = [float(x) for x in sys.argv[9:]]
closed = copies - open_ * shards
print(f"index creation with {copies} copies ({closed} closed) in the cluster: "
      f"median {statistics.median(t):.1f} ms, max {max(t):.1f} ms (target < 500 ms)")
print(f"a fresh backend's first read of that state: median {statistics.median(cold):.1f} ms")
print(f"parsed cluster state in a backend: {ma/1024:.0f} KiB ({(ma-mb)/copies:.0f} bytes per copy, "
      f"index metadata included); state file {sb/1024:.0f} KiB ({sb/copies:.0f} bytes per copy)")
print(f"shard slots (shared memory) used on n1: {slots} -- a closed copy holds none, nor any open file")
PY
echo "(the cluster stays up: node_stop n1 n2 n3 and etcd_stop, or remove $CLUSTER_DIR)"
