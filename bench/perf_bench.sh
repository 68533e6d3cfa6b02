#!/usr/bin/env bash
# bench/perf_bench.sh: the "Performance" benchmark, with bench/loadgen/se-loadgen.
#
#   bench/perf_bench.sh          (as root; ~10 minutes on 2 cores)
#
# On a fresh server (default queue bounds, shared_buffers 1GB):
#   1. ingest: the whole Debian Contents corpus (bench/contents_corpus.sh,
#      7.3 M small documents) with CLIENTS clients x BATCH documents into
#      SHARDS shards, translog durability request, refresh_interval 1s; the
#      count is verified; timeline plot.
#   2. query: the Contents queries (bench/loadgen/queries/contents.queries)
#      on that index, CLIENTS clients for QUERY_SECONDS; latency plot.
#   3. compare: the Debian packages corpus (bench/data/debian.ndjson, from
#      the other benchmark's make_debian_corpus) into search_engine and into
#      a PostgreSQL tsvector + GIN table with the same clients and batches,
#      then the same queries (bench/loadgen/queries/debian.queries) on both.
# Outputs in OUT (default bench/loadgen/results/perf): the se-loadgen
# reports (*.txt), JSON summaries and PNGs.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
PORT=${PORT:-5496}
PGDIR=${PGDIR:-/var/tmp/se_perf_bench}
OUT=${OUT:-$BENCH/loadgen/results/perf}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-1000}
SHARDS=${SHARDS:-4}
QUERY_SECONDS=${QUERY_SECONDS:-30}
CMP_CLIENTS=${CMP_CLIENTS:-4}
CMP_BATCH=${CMP_BATCH:-500}
CONTENTS=${CONTENTS:-$BENCH/data/contents.ndjson}
DEBIAN=${DEBIAN:-$BENCH/data/debian.ndjson}
LOADGEN=$BENCH/loadgen/se-loadgen
DSN="host=/tmp port=$PORT user=postgres dbname=postgres"

if [ "$(id -u)" != 0 ]; then
  echo "$0: run as root (PostgreSQL is started as postgres)" >&2
  exit 1
fi
command -v gnuplot >/dev/null || {
  apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null; }
[ -f /usr/include/postgresql/libpq-fe.h ] || {
  apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpq-dev >/dev/null; }
make -s -C "$BENCH/loadgen" >/dev/null
[ -s "$CONTENTS" ] || "$BENCH/contents_corpus.sh" "$CONTENTS"
if [ ! -s "$DEBIAN" ]; then
  if [ -x "$BENCH/make_debian_corpus.py" ]; then "$BENCH/make_debian_corpus.py" "$(dirname "$DEBIAN")"
  elif [ -x "$BENCH/make_debian_corpus.sh" ]; then "$BENCH/make_debian_corpus.sh" "$(dirname "$DEBIAN")"
  else echo "$0: no $DEBIAN and no make_debian_corpus to build it" >&2; exit 1; fi
fi

stop_server() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
if pg_isready -q -h /tmp -p "$PORT" && [ ! -f "$PGDIR/postmaster.pid" ]; then
  echo "$0: port $PORT is taken by another server; choose another with PORT=..." >&2
  exit 1
fi
[ -d "$PGDIR" ] && stop_server
"$REPO/test/pg_instance.sh" start "$PGDIR" "$PORT" "shared_buffers = '1GB'" "max_connections = 120"
trap stop_server EXIT
psql -X -q -h /tmp -p "$PORT" -U postgres -d postgres -c "CREATE EXTENSION IF NOT EXISTS search_engine"

mkdir -p "$OUT"
progress=(--progress auto)
start=$(date +%s)

echo "== ingest: Contents corpus, $CLIENTS clients x $BATCH docs, $SHARDS shards" >&2
"$LOADGEN" ingest -d "$DSN" --corpus "$CONTENTS" --index-body "$BENCH/contents_corpus.json" \
  --index contents --shards "$SHARDS" --clients "$CLIENTS" --batch "$BATCH" \
  --json "$OUT/ingest-contents.json" --plot "$OUT/ingest-contents" "${progress[@]}" \
  | tee "$OUT/ingest-contents.txt"

echo "== query: Contents queries, $CLIENTS clients, $QUERY_SECONDS s" >&2
"$LOADGEN" query -d "$DSN" --index contents --queries "$BENCH/loadgen/queries/contents.queries" \
  --clients "$CLIENTS" --duration "$QUERY_SECONDS" --json "$OUT/query-contents.json" \
  --plot "$OUT/query-contents" "${progress[@]}" | tee "$OUT/query-contents.txt"
psql -X -q -h /tmp -p "$PORT" -U postgres -d postgres -c "SELECT search_engine.delete_index('contents')" >/dev/null

echo "== compare: Debian packages corpus, $CMP_CLIENTS clients x $CMP_BATCH docs, $QUERY_SECONDS s of queries per side" >&2
"$LOADGEN" compare -d "$DSN" --corpus "$DEBIAN" --index-body "$BENCH/lib/debian_index.json" \
  --index debian --pg-fields description --queries "$BENCH/loadgen/queries/debian.queries" \
  --clients "$CMP_CLIENTS" --batch "$CMP_BATCH" --duration "$QUERY_SECONDS" \
  --json "$OUT/compare-debian.json" --plot "$OUT/compare-debian" "${progress[@]}" \
  | tee "$OUT/compare-debian.txt"

echo "done in $(( $(date +%s) - start )) s; outputs in $OUT" >&2
