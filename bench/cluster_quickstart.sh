#!/usr/bin/env bash
# A three-node search_engine cluster on this machine, as root: installs the
# dependencies, builds and installs search_engine, starts three etcd
# members and three PostgreSQL nodes -- n1 and n2 master-eligible data
# nodes, n3 coordinating-only -- loads the Debian packages corpus through
# n3, and prints _cat/nodes, _cat/shards and a search.  Re-running reuses
# the cluster and the index.
#   bench/cluster_quickstart.sh      (CLUSTER_DIR=... PG_BASE=... ETCD_BASE=...)
set -euo pipefail
CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/search_engine_cluster}
INDEX=debian
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/cluster.sh"
need_root

echo "== dependencies, build, install"
build_install

echo "== etcd (3 members, ports $ETCD_BASE..$((ETCD_BASE + 5))) and nodes n1 n2 n3 (ports $((PG_BASE + 1))..$((PG_BASE + 3)))"
etcd_start
node_start n1 1 master,data
node_start n2 2 master,data
node_start n3 3 ''
PORT=$((PG_BASE + 3))
cluster_wait "$PORT" 3
corpus_ready

echo "== index \"$INDEX\" through the coordinating-only node n3: $CORPUS_DOCS documents"
if [ "$(sqlv -c "SELECT search_engine.count('$INDEX', NULL)" 2>/dev/null)" = "$CORPUS_DOCS" ]; then
  echo "already indexed (to index again: SELECT search_engine.delete_index('$INDEX'); then re-run)"
else
  se_create_index "$INDEX"
  times=$(se_ingest "$INDEX")
  read -r secs _ <<<"$times"
  awk -v n="$CORPUS_DOCS" -v s="$secs" 'BEGIN { printf "indexed %d documents in %.1f s: %.0f docs/s\n", n, s, n / s }'
fi

cat_api() {
  echo
  echo "== GET $1"
  sqlv -c "SELECT (search_engine.request('GET', '$1')).body #>> '{}'"
}
cat_api '/_cat/nodes?v'
cat_api '/_cat/shards?v'
echo
echo "== search through n3: match description \"python library\", top 5"
sql -c "SELECT _source->>'package' AS package, round(_score::numeric, 3) AS score, left(_source->>'summary', 60) AS summary
        FROM search_engine.search_hits('$INDEX', '{\"query\": {\"match\": {\"description\": \"python library\"}}, \"size\": 5}')"

echo
echo "The cluster keeps running (data in $CLUSTER_DIR)."
echo "  connect:  psql -h /tmp -p $PORT -U postgres     (n3; n1 and n2 on ports $((PG_BASE + 1)) and $((PG_BASE + 2)))"
echo "  stop:     for n in n1 n2 n3; do $REPO/test/pg_instance.sh stop $CLUSTER_DIR/\$n; done; kill \$(cat $CLUSTER_DIR/etcd/*.pid)"
