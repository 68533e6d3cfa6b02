#!/usr/bin/env bash
# Aggregations at the Contents corpus' scale (issue 17): date_histogram,
# cardinality and terms over ~7.3 M documents against the SQL they replace
# on a plain table of the same rows, same server, same run.
#   date_histogram ts, calendar month   vs GROUP BY date_trunc('month', ts)
#   cardinality package (ES's default precision_threshold 3000: HyperLogLog++)
#                                      vs count(DISTINCT package)
#   terms section (size 100)           vs GROUP BY section
#   date_histogram month + cardinality package per month
#                                      vs GROUP BY date_trunc(..), count(DISTINCT package)
# The Contents lines (bench/contents_corpus.sh) have no date: each document
# gets a synthetic "ts", 2023-01-01T00:00:00Z plus 4 s times its line number
# (about eleven months), the same value in both stores.  Lines shipped by
# several packages (arrays; a few thousand) are left out so that both sides
# hold exactly one value per field and their answers can be checked equal
# (date_histogram and terms: every bucket; cardinality: the estimate's
# error against the exact count is reported).  Server-side latency
# (bench/lib/latency.sql), WARMUP then REPS runs, median and p95, ms.
#   bench/contents_aggs_bench.sh [CONTENTS.ndjson]
#     (env: REPS=5 WARMUP=1 PORT=5493 PGDIR=... SKIP_BUILD=1 CLIENTS=4 SHARDS=2)
set -euo pipefail
PORT=${PORT:-5493}
PGDIR=${PGDIR:-/var/tmp/se_contents_aggs_bench}
REPS=${REPS:-5}
WARMUP=${WARMUP:-1}
CLIENTS=${CLIENTS:-4}
SHARDS=${SHARDS:-2}
source "$(dirname "$0")/lib/common.sh"
need_root
CONTENTS=${1:-$DATA/contents.ndjson}
[ -s "$CONTENTS" ] || "$BENCH/contents_corpus.sh" "$CONTENTS"
WORK=${WORK:-$PGDIR.work}
mkdir -p "$WORK"

# the derived corpus: scalar documents only, with ts; NDJSON for the engine,
# CSV for COPY
if [ ! -s "$WORK/contents_ts.ndjson" ] || [ "$CONTENTS" -nt "$WORK/contents_ts.ndjson" ]; then
  python3 - "$CONTENTS" "$WORK/contents_ts.ndjson" "$WORK/contents_ts.csv" <<'PY'
import csv, datetime, json, sys
src, nd, cs = sys.argv[1:4]
base = datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc)
n = skipped = 0
with open(src, encoding="utf-8") as f, open(nd + ".tmp", "w", encoding="utf-8") as o, \
        open(cs + ".tmp", "w", encoding="utf-8", newline="") as c:
    w = csv.writer(c)
    line = 0
    for action in f:
        doc = json.loads(next(f))
        line += 1
        if isinstance(doc["section"], list) or isinstance(doc["package"], list):
            skipped += 1
            continue
        ts = (base + datetime.timedelta(seconds=4 * line)).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc["ts"] = ts
        n += 1
        o.write('{"index":{"_id":"%d"}}\n' % line)
        o.write(json.dumps(doc, ensure_ascii=False) + "\n")
        w.writerow([doc["path"], doc["section"], doc["package"], ts])
import os
os.rename(nd + ".tmp", nd)
os.rename(cs + ".tmp", cs)
print("derived corpus: %d documents, %d multi-valued lines left out" % (n, skipped))
PY
fi
chmod -R a+rX "$WORK"

make -s -C "$BENCH/loadgen" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
LOADGEN=$BENCH/loadgen/se-loadgen
latency_server "shared_buffers = '1GB'" "search_engine.write_threads = 2" \
  "search_engine.index_buffer_size = '64MB'" "max_wal_size = '16GB'" "work_mem = '64MB'"
sql -f "$BENCH/lib/latency.sql" >/dev/null
DSN="host=/tmp port=$PORT user=postgres dbname=postgres"

cat > "$WORK/index.json" <<JSON
{"settings": {"number_of_shards": $SHARDS, "number_of_replicas": 0},
 "mappings": {"properties": {"path": {"type": "text", "analyzer": "standard"},
   "section": {"type": "keyword"}, "package": {"type": "keyword"}, "ts": {"type": "date"}}}}
JSON
t0=$(now)
"$LOADGEN" ingest -d "$DSN" --corpus "$WORK/contents_ts.ndjson" --index contents \
  --index-body "$WORK/index.json" --clients "$CLIENTS" --batch 1000 --progress never -q
sql -c "SELECT search_engine.refresh('contents')" >/dev/null
t1=$(now)
sql <<SQL
DROP TABLE IF EXISTS contents_pg;
CREATE TABLE contents_pg (path text, section text, package text, ts timestamptz);
COPY contents_pg FROM '$WORK/contents_ts.csv' WITH (FORMAT csv);
VACUUM ANALYZE contents_pg;
SQL
t2=$(now)
docs=$(se_docs_count contents)
rows=$(sqlv -c "SELECT count(*) FROM contents_pg")
echo "engine: $docs documents ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s to load and refresh); table: $rows rows ($(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", b - a }') s COPY + VACUUM ANALYZE)"
[ "$docs" = "$rows" ] || { echo "the engine and the table hold different counts" >&2; exit 1; }

check=$(sqlv <<'SQL'
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key_as_string', (b->>'doc_count')::bigint) ORDER BY b->>'key_as_string')
          FROM jsonb_array_elements(search_engine.search('contents', '{"size":0,"aggs":{"m":{"date_histogram":{"field":"ts","calendar_interval":"month"}}}}')->'aggregations'->'m'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(to_char(m AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), c) ORDER BY m)
          FROM (SELECT date_trunc('month', ts, 'UTC') m, count(*) c FROM contents_pg GROUP BY 1) s)
   AND (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::bigint) ORDER BY b->>'key')
          FROM jsonb_array_elements(search_engine.search('contents', '{"size":0,"aggs":{"s":{"terms":{"field":"section","size":100}}}}')->'aggregations'->'s'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(section, c) ORDER BY section)
          FROM (SELECT section, count(*) c FROM contents_pg GROUP BY section ORDER BY c DESC, section LIMIT 100) s)
SQL
)
echo "date_histogram and terms equal to GROUP BY: $check"
[ "$check" = t ] || { echo "an aggregation differs from its GROUP BY" >&2; exit 1; }
card=$(sqlv -c "SELECT (search_engine.search('contents', '{\"size\":0,\"aggs\":{\"c\":{\"cardinality\":{\"field\":\"package\"}}}}')->'aggregations'->'c'->>'value') || ' ' || count(DISTINCT package) FROM contents_pg")
echo "cardinality package: estimate ${card% *}, exact ${card#* } ($(awk -v e="${card% *}" -v x="${card#* }" 'BEGIN { printf "%+.3f%%", (e - x) * 100 / x }'))"

lat() {
  sqlv -v q="$1" -v w="$WARMUP" -v r="$REPS" <<'SQL'
SELECT round(median_ms::numeric, 1) || ' ' || round(p95_ms::numeric, 1) FROM bench.latency(:'q', :w, :r)
SQL
}
run() {
  local name=$1 es=$2 pg=$3
  local e p
  e=$(lat "SELECT search_engine.search('contents', '$es')")
  p=$(lat "SELECT to_jsonb(array_agg(x)) FROM ($pg) x")
  printf '| %s | %s | %s | %s | %s | %.1f× |\n' "$name" ${e} ${p} \
    "$(awk -v a="${e%% *}" -v b="${p%% *}" 'BEGIN { print b / a }')"
}
echo
echo "Contents corpus, $docs documents, $SHARDS shards; $(nproc) CPUs; medians of $REPS runs after $WARMUP (ms)"
echo
echo '| aggregation | search() median | p95 | SQL median | p95 | SQL / search() |'
echo '|---|---|---|---|---|---|'
run 'date_histogram ts, month' \
  '{"size":0,"aggs":{"m":{"date_histogram":{"field":"ts","calendar_interval":"month"}}}}' \
  "SELECT date_trunc('month', ts, 'UTC'), count(*) FROM contents_pg GROUP BY 1"
run 'cardinality package (HLL++, threshold 3000)' \
  '{"size":0,"aggs":{"c":{"cardinality":{"field":"package"}}}}' \
  'SELECT count(DISTINCT package) FROM contents_pg'
run 'terms section (size 100)' \
  '{"size":0,"aggs":{"s":{"terms":{"field":"section","size":100}}}}' \
  'SELECT section, count(*) FROM contents_pg GROUP BY section ORDER BY 2 DESC, 1 LIMIT 100'
run 'date_histogram month + cardinality package' \
  '{"size":0,"aggs":{"m":{"date_histogram":{"field":"ts","calendar_interval":"month"},"aggs":{"c":{"cardinality":{"field":"package"}}}}}}' \
  "SELECT date_trunc('month', ts, 'UTC'), count(*), count(DISTINCT package) FROM contents_pg GROUP BY 1"
