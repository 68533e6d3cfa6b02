#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL 15 server with search_engine
# preloaded, run as the postgres user (PostgreSQL refuses to run as root).
#   test/pg_instance.sh start DIR PORT [extra postgresql.conf lines...]
#   test/pg_instance.sh stop DIR
set -euo pipefail
PGBIN=$(pg_config --bindir)
cmd=$1; dir=$2
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    port=$3; shift 3
    if [ ! -f "$dir/PG_VERSION" ]; then
      mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
      as_pg "$PGBIN/initdb" -D "$dir" -A trust -U postgres >/dev/null
      {
        echo "shared_preload_libraries = 'search_engine'"
        echo "port = $port"
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '/tmp'"
        echo "max_worker_processes = 16"
        for l in "$@"; do echo "$l"; done
      } | as_pg tee -a "$dir/postgresql.conf" >/dev/null
    fi
    as_pg "$PGBIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w start >/dev/null
    ;;
  stop)
    as_pg "$PGBIN/pg_ctl" -D "$dir" -m fast -w stop >/dev/null || true
    ;;
esac
