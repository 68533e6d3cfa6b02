#!/usr/bin/env bash
# Update-by-query across nodes, as root: the Debian corpus in a 2-shard
# index (bench/lib/debian_index.json) on a cluster of two master,data nodes
# (three etcd members) with 0 and with 1 replica (index debian_r0: one
# shard per node; debian_r1: every node holds one copy of each shard, so
# each update is also replicated), against one single-node server, all
# built from the same commit.  Each run sets bench_flag on every document
# with a painless script and slices=auto, through n1 (whose task runs the
# slices of the shards whose primary it holds and child tasks on n2 for
# the others) and on the single node; server-side time (clock_timestamp
# around the waiting call), after one untimed run per target (the dynamic
# mapping update of bench_flag, and the same layout for every timed run).
#   bench/cluster_ubq_bench.sh     (RUNS=3 CLUSTER_DIR=... ETCD_BASE PG_BASE SKIP_BUILD=1 PRIVDIR=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_cluster_ubq}
RUNS=${RUNS:-3}
PGDIR=$CLUSTER_DIR/solo
ETCD_BASE=${ETCD_BASE:-23990}
PG_BASE=${PG_BASE:-5711}
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

PRIVDIR=${PRIVDIR:-$CLUSTER_DIR.install}
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  # SKIP_BUILD=1: the installation in $PRIVDIR/root (e.g. test/dev_check.sh's /tmp/se-dev-<tree>)
  export PATH=$PRIVDIR/root/usr/lib/postgresql/15/bin:$PATH
  PRIVATE_REV="$(git -C "$REPO" rev-parse --short HEAD) (SKIP_BUILD: the build in $PRIVDIR)"
else
  build_private
fi
# the system libpq headers: the private install has no libpq-dev
make -C "$BENCH/loadgen" -s PG_CONFIG=/usr/bin/pg_config >/dev/null
L=$BENCH/loadgen/se-loadgen
corpus_ready
echo "== commit $PRIVATE_REV; cluster in $CLUSTER_DIR"
etcd_start
node_start n1 1 master,data
node_start n2 2 master,data
SOLO=$((PG_BASE + 3))
PGDIR=$CLUSTER_DIR/solo PORT=$SOLO server_start
N1=$((PG_BASE + 1))
cluster_wait "$N1" 2
stop_all() {
  for n in n1 n2 solo; do "$REPO/test/pg_instance.sh" stop "$CLUSTER_DIR/$n" || true; done
  etcd_stop
}
trap stop_all EXIT
OUT=$CLUSTER_DIR/results
mkdir -p "$OUT"

TARGETS="solo r0 r1"
port_of() { [ "$1" = solo ] && echo $SOLO || echo $N1; }
index_of() { [ "$1" = solo ] && echo debian || echo "debian_$1"; }
for target in $TARGETS; do
  port=$(port_of $target); index=$(index_of $target)
  PORT=$port sql -c "SELECT search_engine.delete_index('$index')" >/dev/null 2>&1 || true
  "$L" ingest -d "$(dsn $port)" --corpus "$DATA/debian.ndjson" --index "$index" \
    --index-body "$BENCH/lib/debian_index.json" --clients 2 --batch 1000 \
    --replicas "$([ $target = r1 ] && echo 1 || echo 0)" \
    --progress never -q --json "$OUT/ingest-$target.json"
done
PORT=$N1 sqlv -c "SELECT search_engine.cluster_health('debian_r1', 'green', 300000)" >/dev/null
PORT=$N1 sqlv -c "SELECT (search_engine.request('GET', '/_cat/shards/debian_r*?h=index,shard,prirep,state,node')).body" || true

ubq() {
  PORT=$1 sqlv -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); r jsonb;
BEGIN
  r := search_engine.update_by_query('$3', '{\"script\":{\"source\":\"ctx._source.bench_flag = params.v\",\"params\":{\"v\":$2}}}',
                                     slices => 'auto', wait_for_completion => true);
  RAISE WARNING 'ubq % % %', r->>'updated', jsonb_array_length(r->'failures'),
    extract(epoch FROM clock_timestamp() - t0);
END \$\$;" 2>&1 | sed -n 's/.*ubq \([0-9]*\) \([0-9]*\) \([0-9.]*\).*/\1 \2 \3/p'
}
: > "$OUT/ubq.txt"
v=0
for target in $TARGETS; do
  v=$((v + 1)); ubq "$(port_of $target)" "$v" "$(index_of $target)" >/dev/null      # untimed
done
for r in $(seq 1 "$RUNS"); do
  for target in $TARGETS; do
    v=$((v + 1))
    echo "$target $(ubq "$(port_of $target)" "$v" "$(index_of $target)")" | tee -a "$OUT/ubq.txt"
  done
done
python3 - "$OUT/ubq.txt" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
def med(t):
    xs = [int(r[1]) / float(r[3]) for r in rows if r[0] == t]
    return statistics.median(xs), int([r for r in rows if r[0] == t][0][1]), sum(int(r[2]) for r in rows if r[0] == t)
s, sn, sf = med("solo")
c, cn, cf = med("r0")
r, rn, rf = med("r1")
print(f"update-by-query, slices=auto, {sn} documents (median of the runs): single node {s:.0f} docs/s; "
      f"2-data-node cluster through n1, 0 replicas {c:.0f} docs/s ({cn} documents, {cf} failures), "
      f"1 replica {r:.0f} docs/s ({rn} documents, {rf} failures); "
      f"cluster r0/single = {c / s:.2f}, r1/r0 = {r / c:.2f}")
PY
