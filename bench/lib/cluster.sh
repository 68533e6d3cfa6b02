# A search_engine cluster on one machine for the benchmarks (sourced after
# lib/common.sh): three etcd members on loopback ports and PostgreSQL nodes
# that find each other through them.  Peers log in as se_peer, a LOGIN
# member of search_engine_node, with SCRAM over 127.0.0.1 (pg_hba.conf) and
# a passfile: no trust between nodes.
#
# Expects CLUSTER_DIR (data), ETCD_BASE and PG_BASE (first ports).

ETCD_BASE=${ETCD_BASE:-23790}
PG_BASE=${PG_BASE:-5511}
PEER_PASSWORD=${PEER_PASSWORD:-se-peer-$(hostname | md5sum | cut -c1-12)}

etcd_endpoints() {
  echo "http://127.0.0.1:$ETCD_BASE,http://127.0.0.1:$((ETCD_BASE + 2)),http://127.0.0.1:$((ETCD_BASE + 4))"
}

# Start the three etcd members (unless they answer already).
etcd_start() {
  local i initial=""
  if ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" --command-timeout=2s endpoint health >/dev/null 2>&1; then
    return 0
  fi
  for i in 0 1 2; do
    initial+="${initial:+,}e$i=http://127.0.0.1:$((ETCD_BASE + 2 * i + 1))"
  done
  mkdir -p "$CLUSTER_DIR/etcd"
  for i in 0 1 2; do
    nohup etcd --name "e$i" --data-dir "$CLUSTER_DIR/etcd/e$i" \
      --listen-client-urls "http://127.0.0.1:$((ETCD_BASE + 2 * i))" \
      --advertise-client-urls "http://127.0.0.1:$((ETCD_BASE + 2 * i))" \
      --listen-peer-urls "http://127.0.0.1:$((ETCD_BASE + 2 * i + 1))" \
      --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_BASE + 2 * i + 1))" \
      --initial-cluster "$initial" --initial-cluster-token se-bench \
      --initial-cluster-state new --log-level warn \
      > "$CLUSTER_DIR/etcd/e$i.log" 2>&1 &
    echo $! > "$CLUSTER_DIR/etcd/e$i.pid"
  done
  for i in $(seq 1 100); do
    ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" --command-timeout=2s endpoint health >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "etcd did not become healthy (logs in $CLUSTER_DIR/etcd)" >&2
  return 1
}

etcd_stop() {
  local f
  for f in "$CLUSTER_DIR"/etcd/e*.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  return 0
}

# node_start NAME INDEX ROLES [CONF...]: node NAME on port PG_BASE+INDEX (extra
# postgresql.conf lines when its directory is created)
node_start() {
  local name=$1 i=$2 roles=$3 port=$((PG_BASE + $2)) dir=$CLUSTER_DIR/$1
  local passfile=$CLUSTER_DIR/pgpass
  if [ ! -f "$passfile" ]; then
    mkdir -p "$CLUSTER_DIR"
    echo "127.0.0.1:*:postgres:se_peer:$PEER_PASSWORD" > "$passfile"
    chown postgres:postgres "$passfile"
    chmod 600 "$passfile"
  fi
  local fresh=0
  [ -f "$dir/PG_VERSION" ] || fresh=1
  PGDIR=$dir PORT=$port server_start \
    "search_engine.node_name = '$name'" \
    "search_engine.cluster_name = 'bench'" \
    "search_engine.node_roles = '$roles'" \
    "search_engine.etcd_endpoints = '$(etcd_endpoints)'" \
    "search_engine.publish_conninfo = 'host=127.0.0.1 port=$port dbname=postgres'" \
    "search_engine.transport_conninfo = 'user=se_peer passfile=$passfile'" \
    "password_encryption = 'scram-sha-256'" "${@:4}"
  if [ "$fresh" = 1 ]; then
    # peers: SCRAM over TCP for se_peer, before the trust lines initdb wrote
    as_pg sed -i "1i host all se_peer 127.0.0.1/32 scram-sha-256" "$dir/pg_hba.conf"
    PORT=$port sql -c "SELECT pg_reload_conf()" >/dev/null
  fi
  PORT=$port sql >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'se_peer') THEN
    CREATE ROLE se_peer LOGIN PASSWORD '$PEER_PASSWORD' IN ROLE search_engine_node;
  END IF;
END \$\$;
SQL
}

node_stop() {
  "$REPO/test/pg_instance.sh" stop "$CLUSTER_DIR/$1"
}

# Wait until node on port $1 knows a master and $2 members.
cluster_wait() {
  local port=$1 want=$2 i
  for i in $(seq 1 150); do
    if [ "$(PORT=$port sqlv -c "SELECT count(*) FROM search_engine.nodes WHERE EXISTS (SELECT 1 FROM search_engine.nodes WHERE master)")" = "$want" ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "the cluster did not form ($want nodes)" >&2
  return 1
}

# The setup the replica benchmarks share (recovery_bench.sh,
# relocation_bench.sh): a private build (SKIP_BUILD=1 reuses one), the load
# generator ($L) and the Debian corpus, three etcd members and two
# master-eligible data nodes n1 and n2 ($N1, $N2), stopped when the script
# exits; dsn PORT gives a node's connection string.
two_data_nodes_start() {
  [ "${SKIP_BUILD:-0}" = 1 ] || build_private
  make -C "$BENCH/loadgen" -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
  L=$BENCH/loadgen/se-loadgen
  corpus_ready
  echo "== commit ${PRIVATE_REV:-$(git -C "$REPO" rev-parse --short HEAD)}; cluster in $CLUSTER_DIR"
  trap two_data_nodes_stop EXIT
  etcd_start
  node_start n1 1 master,data
  node_start n2 2 master,data
  N1=$((PG_BASE + 1))
  N2=$((PG_BASE + 2))
  cluster_wait "$N1" 2
}
two_data_nodes_stop() {
  node_stop n1 || true
  node_stop n2 || true
  etcd_stop
}
dsn() { echo "host=/tmp port=$1 user=postgres dbname=postgres"; }
