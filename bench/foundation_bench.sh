#!/usr/bin/env bash
# Foundation benchmark: search_engine against PostgreSQL's own full-text
# search (tsvector + GIN) on the Debian packages corpus, in one run on one
# throwaway server.  Run as root; replaces its section of bench/RESULTS.md
# and prints it.
#   bench/foundation_bench.sh     (env: RUNS, REPS, WARMUP, PORT, PGDIR,
#                                  SKIP_BUILD=1, SE_VERSION=label for the report)
#
# Each of RUNS rounds: (a) ingest the corpus into a fresh search_engine index
# and into a fresh table with a GIN index, the same 1000-document batches
# through the same psql client, one statement and transaction per batch,
# durable; (c) on-disk sizes; (b) top-10 latency of four queries measured
# server-side (plpgsql, clock_timestamp around each query); (d) the ingest
# again with bench/loadgen/se-loadgen (libpq, one client, both sides).
set -euo pipefail
PORT=${PORT:-5497}
PGDIR=${PGDIR:-/var/tmp/search_engine_bench}
RUNS=${RUNS:-3}
REPS=${REPS:-500}
WARMUP=${WARMUP:-50}
source "$(dirname "$0")/lib/common.sh"
need_root
OUT=$BENCH/out
RAW=$OUT/foundation_raw.tsv
mkdir -p "$OUT"
started=$(date +%s)

[ "${SKIP_BUILD:-0}" = 1 ] || build_private
corpus_ready
make -s -C "$BENCH/loadgen" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
LOADGEN=$BENCH/loadgen/se-loadgen

# A fresh server, removed again at exit.
cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
# shared_buffers large enough to hold the table and its GIN index (the
# extension reads its segments through the OS page cache).
server_start "shared_buffers = '1GB'"

rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }
: > "$RAW"
rec meta date 0 "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta nproc 0 "$(nproc)"
rec meta memory 0 "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
rec meta cpu 0 "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
rec meta kernel 0 "$(uname -sr)"
rec meta postgres 0 "$(sqlv -c 'SHOW server_version')"
rec meta commit 0 "${SE_VERSION:-${PRIVATE_REV:-installed build (SKIP_BUILD)}}"
rec meta docs 0 "$CORPUS_DOCS"
rec meta corpus_mb 0 "$(awk -v b="$(stat -c %s "$DATA/debian.jsonl")" 'BEGIN { printf "%.1f", b / 1e6 }')"
rec meta batch 0 "$BATCH_SIZE"
rec meta batches 0 "$NBATCHES"
rec meta reps 0 "$REPS"
rec meta warmup 0 "$WARMUP"
rec meta runs 0 "$RUNS"
rec meta write_threads 0 "$(sqlv -c 'SHOW search_engine.write_threads')"

sql -f "$BENCH/lib/latency.sql"

# The queries: name, search_engine body, tsquery.  match on description (the
# ES default operator is OR) against the table's summary+description tsvector.
QNAMES=(library "python library (OR)" "python library (AND)" '"command line" (phrase)'
        "web server (AND)" kernel)
QSE=('{"query": {"match": {"description": "library"}}}'
     '{"query": {"match": {"description": "python library"}}}'
     '{"query": {"match": {"description": {"query": "python library", "operator": "and"}}}}'
     '{"query": {"match_phrase": {"description": "command line"}}}'
     '{"query": {"match": {"description": {"query": "web server", "operator": "and"}}}}'
     '{"query": {"match": {"description": "kernel"}}}')
QPG=("plainto_tsquery('english', 'library')"
     "to_tsquery('english', 'python | library')"
     "plainto_tsquery('english', 'python library')"
     "phraseto_tsquery('english', 'command line')"
     "plainto_tsquery('english', 'web server')"
     "plainto_tsquery('english', 'kernel')")
pg_top10() {
  echo "SELECT jsonb_agg(t) FROM (SELECT id AS _id, ts_rank(tsv, q) AS _score, doc AS _source
        FROM debian_pg, $1 AS q WHERE tsv @@ q ORDER BY _score DESC LIMIT 10) AS t"
}
lit() { printf "'%s'" "${1//\'/\'\'}"; }

for run in $(seq 1 "$RUNS"); do
  echo "== run $run/$RUNS"

  # (a) ingest, search_engine: index created empty, bulk batches, final refresh
  sql -c "DROP TABLE IF EXISTS debian_pg"
  se_create_index debian
  sql -c CHECKPOINT
  times=$(se_ingest debian)
  read -r secs refresh_secs <<<"$times"
  n=$(se_docs_count debian)
  [ "$n" = "$CORPUS_DOCS" ] || { echo "search_engine holds $n documents, expected $CORPUS_DOCS" >&2; exit 1; }
  rec ingest_s se "$run" "$secs"
  rec refresh_s se "$run" "$refresh_secs"
  rec size_loaded se "$run" "$(sqlv -c "SELECT \"store.size\" FROM search_engine.indices WHERE index = 'debian'")"
  rec rejected se "$run" "$(sqlv -c "SELECT rejected FROM search_engine.thread_pool WHERE name = 'write'")"
  echo "   search_engine: $n docs in $secs s"

  # (a) ingest, PostgreSQL: table with its GIN index created empty, INSERTs
  sql <<'SQL'
CREATE TABLE debian_pg (
  id  text GENERATED ALWAYS AS ((doc->>'package') || '_' || (doc->>'version') || '_' ||
                                (doc->>'architecture')) STORED PRIMARY KEY,
  doc jsonb NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english',
        coalesce(doc->>'summary', '') || ' ' || coalesce(doc->>'description', ''))) STORED);
CREATE INDEX debian_pg_tsv ON debian_pg USING gin (tsv);
CHECKPOINT;
SQL
  t0=$(now)
  sql -v table=debian_pg -f "$BATCHES/pg.sql"
  t1=$(now)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }')
  n=$(sqlv -c "SELECT count(*) FROM debian_pg")
  [ "$n" = "$CORPUS_DOCS" ] || { echo "debian_pg holds $n rows, expected $CORPUS_DOCS" >&2; exit 1; }
  rec ingest_s pg "$run" "$secs"
  rec size_loaded pg "$run" "$(sqlv -c "SELECT pg_total_relation_size('debian_pg')")"
  echo "   PostgreSQL:    $n rows in $secs s"

  # settle before searching: VACUUM ANALYZE (GIN pending list, statistics);
  # search_engine needs nothing beyond the refresh above.
  sql -c "VACUUM ANALYZE debian_pg"
  rec size_settled pg "$run" "$(sqlv -c "SELECT pg_total_relation_size('debian_pg')")"
  rec size_gin pg "$run" "$(sqlv -c "SELECT pg_relation_size('debian_pg_tsv')")"
  rec size_heap pg "$run" "$(sqlv -c "SELECT pg_relation_size('debian_pg')")"
  rec size_toast pg "$run" "$(sqlv -c "SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'debian_pg'::regclass")"
  rec segments se "$run" "$(sqlv -c "SELECT count(*) FROM search_engine.segments WHERE index = 'debian'")"

  # (b) top-10 latency, server-side
  for i in "${!QNAMES[@]}"; do
    q=${QNAMES[$i]}
    se_q="SELECT search_engine.search('debian', $(lit "${QSE[$i]}"))"
    pg_q=$(pg_top10 "${QPG[$i]}")
    lat=$(sqlv -F $'\t' -c "SELECT median_ms, p95_ms, hits FROM bench.latency($(lit "$se_q"), $WARMUP, $REPS)")
    IFS=$'\t' read -r med p95 hits <<<"$lat"
    rec "lat_median:$q" se "$run" "$med"; rec "lat_p95:$q" se "$run" "$p95"
    [ "$hits" = 10 ] || { echo "search_engine: $hits hits for $q" >&2; exit 1; }
    lat=$(sqlv -F $'\t' -c "SELECT median_ms, p95_ms, hits FROM bench.latency($(lit "$pg_q"), $WARMUP, $REPS)")
    IFS=$'\t' read -r med2 p952 hits <<<"$lat"
    rec "lat_median:$q" pg "$run" "$med2"; rec "lat_p95:$q" pg "$run" "$p952"
    [ "$hits" = 10 ] || { echo "PostgreSQL: $hits hits for $q" >&2; exit 1; }
    printf '   %-26s search_engine %7.3f ms   PostgreSQL %7.3f ms (medians)\n' "$q" "$med" "$med2"
    if [ "$run" = 1 ]; then
      rec "matches:$q" se 0 "$(sqlv -c "SELECT search_engine.count('debian', $(lit "${QSE[$i]}"))")"
      rec "matches:$q" pg 0 "$(sqlv -c "SELECT count(*) FROM debian_pg, ${QPG[$i]} AS q WHERE tsv @@ q")"
    fi
  done

  # (c) search_engine after a flush (segments fsynced, translog trimmed)
  sql -c "SELECT search_engine.flush('debian')" >/dev/null
  rec size_settled se "$run" "$(sqlv -c "SELECT \"store.size\" FROM search_engine.indices WHERE index = 'debian'")"
  uuid=$(sqlv -c "SELECT uuid FROM search_engine.indices WHERE index = 'debian'")
  rec size_du se "$run" "$(du -sb "$PGDIR/search_engine/indices/$uuid" | cut -f1)"

  # (d) ingest again through se-loadgen, the issue's load generator: libpq,
  # each batch sent as a bound parameter (no SQL literal for psql and the
  # server to lex), one client, the same NDJSON and batch size for both
  # sides; search_engine's time includes its final refresh.
  lg=$OUT/foundation_loadgen_$run.json
  "$LOADGEN" compare -d "host=/tmp port=$PORT user=postgres dbname=postgres" \
    --corpus "$DATA/debian.ndjson" --queries "$BENCH/loadgen/queries/debian.queries" \
    --index debian_lg --pg-table debian_lg_pg --index-body "$BENCH/lib/debian_index.json" \
    --pg-fields summary,description --clients 1 --batch "$BATCH_SIZE" --duration 0.2 \
    --progress never -q --json "$lg" >/dev/null
  python3 - "$lg" "$run" "$CORPUS_DOCS" >> "$RAW" <<'PY'
import json, sys
j, run, docs = json.load(open(sys.argv[1]))["ingest"], sys.argv[2], int(sys.argv[3])
for side, key in (("se", "search_engine"), ("pg", "postgresql")):
    r = j[key]
    if not r["verified"] or r["final_count"] != docs:
        sys.exit("se-loadgen: %s holds %s documents, expected %d" % (key, r["final_count"], docs))
    print("ingest_lg_s\t%s\t%s\t%.3f" % (side, run, r["seconds"] + r["refresh_seconds"]))
print("refresh_lg_s\tse\t%s\t%.3f" % (run, j["search_engine"]["refresh_seconds"]))
PY
  sql -c "SELECT search_engine.delete_index('debian_lg')" >/dev/null
  sql -c "DROP TABLE debian_lg_pg"
  echo "   through se-loadgen: $(awk -F'\t' -v r="$run" '$1 == "ingest_lg_s" && $3 == r { printf "%s %s s  ", $2, $4 }' "$RAW")"
done

rec meta elapsed 0 "$(( $(date +%s) - started ))"
# replace only this benchmark's section: other benchmarks keep theirs
python3 "$BENCH/lib/report.py" "$RAW" > "$OUT/foundation.md"
python3 - "$BENCH/RESULTS.md" "$OUT/foundation.md" <<'PY'
import sys
path, part = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
block = "<!-- foundation: begin -->\n" + part + "\n<!-- foundation: end -->"
try:
    s = open(path).read()
except FileNotFoundError:
    s = ""
b, e = "<!-- foundation: begin -->", "<!-- foundation: end -->"
if b in s and e in s:
    s = s[:s.index(b)] + block + s[s.index(e) + len(e):]
else:
    s = block + "\n\n" + s
open(path, "w").write(s)
PY
cat "$OUT/foundation.md"
