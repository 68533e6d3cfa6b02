#!/usr/bin/env bash
# Whole-corpus scroll vs COPY, A/B of two builds of search_engine.so on one
# server (issue 17: scrolling the Debian corpus was 6-8x a COPY of the
# table).  The .so files are swapped into the installation on PATH and the
# server restarted between rounds; rounds interleave A and B so that the
# machine's load hits both alike.  Each round: one warm-up scroll, REPS
# timed scrolls (pages of 1000, every hit's _source, as
# bench/search_breadth_bench.sh), REPS COPYs of the jsonb table to
# /dev/null; the backend's CPU time over the round (perf stat task-clock,
# when perf is installed) is the steadier figure on a loaded machine.
#   SO_A=old.so SO_B=new.so bench/scroll_ab.sh   (env: ROUNDS=2 REPS=3
#                                    PORT=5496 PGDIR=... ; run as root, with
#                                    the private installation first in PATH)
set -euo pipefail
PORT=${PORT:-5496}
PGDIR=${PGDIR:-/var/tmp/se_scroll_ab}
ROUNDS=${ROUNDS:-2}
REPS=${REPS:-3}
: "${SO_A:?SO_A=path of the A build's search_engine.so}" "${SO_B:?SO_B=path of the B build's}"
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/scroll.sh"
LIB=$(pg_config --pkglibdir)/search_engine.so
ORIG=$(mktemp)
cp "$LIB" "$ORIG"
SKIP_BUILD=1 latency_server "shared_buffers = '512MB'"
trap 'latency_server_cleanup; cp "$ORIG" "$LIB.tmp" && chmod 755 "$LIB.tmp" && mv "$LIB.tmp" "$LIB"; rm -f "$ORIG"' EXIT
se_create_index debian
read -r s _ < <(se_ingest debian)
echo "debian: $(se_docs_count debian) documents in ${s}s"
deb_raw_load
sql -c "VACUUM ANALYZE deb_raw"
scroll_bench_sql
# the merged index, as a scroll of a settled index would see it
sql -c "SELECT search_engine.request('POST', '/debian/_forcemerge?max_num_segments=1')" >/dev/null

round() {  # round NAME SO: prints NAME scroll-median scroll-p95 copy-median cpu-ms docs
  local out pid sp cpu=-
  # stopped first, and renamed into place: a running server's mapped
  # library must never change under it
  as_pg "$(pg_config --bindir)/pg_ctl" -D "$PGDIR" -w -m fast stop >/dev/null
  cp "$2" "$LIB.tmp" && chmod 755 "$LIB.tmp" && mv "$LIB.tmp" "$LIB"
  as_pg "$(pg_config --bindir)/pg_ctl" -D "$PGDIR" -l "$PGDIR/server.log" -w start >/dev/null
  out=$(mktemp); chmod 666 "$out"
  sql -At > "$out" <<SQL &
SELECT pg_backend_pid();
SELECT (bench.scroll_all('debian', 1000))->>0;
SELECT pg_sleep(1);
SELECT round(median_ms::numeric, 1) || ' ' || round(p95_ms::numeric, 1) FROM bench.time_ms('SELECT bench.scroll_all(''debian'', 1000)', 0, $REPS);
SELECT round(median_ms::numeric, 1) FROM bench.time_ms('COPY deb_raw TO ''/dev/null''', 0, $REPS);
SQL
  local job=$!
  until [ -s "$out" ]; do sleep 0.2; done
  pid=$(head -1 "$out")
  # CPU of the timed part only: from the pause after the warm-up scroll
  # (its third line, pg_sleep's empty one)
  until [ "$(wc -l < "$out")" -ge 3 ]; do sleep 0.2; done
  if command -v perf >/dev/null; then
    perf stat -x, -e task-clock -p "$pid" -o "$out.cpu" >/dev/null 2>&1 & sp=$!
  fi
  wait "$job"
  if [ -n "${sp:-}" ]; then
    kill -INT "$sp"; wait "$sp" 2>/dev/null || true
    cpu=$(awk -F, '/task-clock/ { printf "%.0f", $1 }' "$out.cpu")
  fi
  echo "$1 $(sed -n 4p "$out") $(sed -n 5p "$out") $cpu $(sed -n 2p "$out")"
  rm -f "$out" "$out.cpu"
}

echo
echo "whole corpus, pages of 1000; $REPS runs per round, rounds interleaved; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| round | build | scroll median ms | scroll p95 ms | COPY median ms | scroll / COPY | backend CPU ms (scrolls + COPYs) | docs |'
echo '|---|---|---:|---:|---:|---:|---:|---:|'
for r in $(seq 1 "$ROUNDS"); do
  for b in A B; do
    so=SO_$b
    read -r name m p c cpu docs < <(round "$b" "${!so}")
    [ "$docs" = "$(se_docs_count debian)" ] || { echo "scroll returned $docs documents" >&2; exit 1; }
    printf '| %s | %s | %s | %s | %s | %s× | %s | %s |\n' "$r" "$name" "$m" "$p" "$c" \
      "$(awk -v a="$m" -v b="$c" 'BEGIN { printf "%.2f", a / b }')" "$cpu" "$docs"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
