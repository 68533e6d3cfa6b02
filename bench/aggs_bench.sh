#!/usr/bin/env bash
# Aggregations (issue 17) against PostgreSQL's GROUP BY on the Debian
# packages corpus: each aggregation through search_engine.search() with
# "size": 0, and the SQL it replaces on a plain table holding the same
# fields (loaded from the same debian.jsonl):
#   terms      section (size 500) + avg(installed_size)
#              vs SELECT section, count(*), avg(installed_size) ... GROUP BY section
#   cardinality maintainer (precision_threshold 40000: exact at this size)
#              vs count(DISTINCT maintainer)
#   histogram  installed_size, interval 1000, min_doc_count 1
#              vs GROUP BY floor(installed_size / 1000)
#   stats      size vs count/min/max/avg/sum(size)
# Server-side latency (bench/lib/latency.sql: clock_timestamp around each
# EXECUTE), WARMUP then REPS runs, median and p95; the terms answer is
# checked to equal the GROUP BY (every section's count and average).
#   bench/aggs_bench.sh   (env: REPS=30 WARMUP=5 PORT=5491 PGDIR=... SKIP_BUILD=1)
set -euo pipefail
PORT=${PORT:-5491}
PGDIR=${PGDIR:-/var/tmp/se_aggs_bench}
REPS=${REPS:-30}
WARMUP=${WARMUP:-5}
source "$(dirname "$0")/lib/common.sh"
latency_server "shared_buffers = '512MB'"
sql -f "$BENCH/lib/latency.sql" >/dev/null

se_create_index debian
read -r ingest_s _ < <(se_ingest debian)
echo "ingested $(se_docs_count debian) documents in ${ingest_s}s"
sql <<SQL
DROP TABLE IF EXISTS deb_raw, deb;
CREATE TABLE deb_raw (j jsonb);
COPY deb_raw FROM '$DATA/debian.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02');
CREATE TABLE deb AS
  SELECT j->>'package' AS package, j->>'section' AS section, j->>'maintainer' AS maintainer,
         (j->>'installed_size')::bigint AS installed_size, (j->>'size')::bigint AS size
    FROM deb_raw;
VACUUM ANALYZE deb;
SQL

check=$(sqlv <<'SQL'
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, round((b->'a'->>'value')::numeric, 6)) ORDER BY b->>'key')
          FROM jsonb_array_elements(search_engine.search('debian', '{"size":0,"aggs":{"s":{"terms":{"field":"section","size":500},"aggs":{"a":{"avg":{"field":"installed_size"}}}}}}')->'aggregations'->'s'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(section, c, round(a, 6)) ORDER BY section)
          FROM (SELECT section, count(*) c, avg(installed_size) a FROM deb WHERE section IS NOT NULL GROUP BY section) s)
SQL
)
echo "terms equal to GROUP BY: $check"
[ "$check" = t ] || { echo "the terms aggregation differs from GROUP BY" >&2; exit 1; }

# median and p95 (ms) of statement $1 (psql does not interpolate -c)
lat() {
  sqlv -v q="$1" -v w="$WARMUP" -v r="$REPS" <<'SQL'
SELECT round(median_ms::numeric, 2) || ' ' || round(p95_ms::numeric, 2) FROM bench.latency(:'q', :w, :r)
SQL
}
run() {
  local name=$1 es=$2 pg=$3
  local e p
  e=$(lat "SELECT search_engine.search('debian', '$es')")
  p=$(lat "SELECT to_jsonb(array_agg(x)) FROM ($pg) x")
  printf '| %s | %s | %s | %s | %s | %.1f× |\n' "$name" ${e} ${p} \
    "$(awk -v a="${e%% *}" -v b="${p%% *}" 'BEGIN { print b / a }')"
}
echo
echo "Debian corpus, $(se_docs_count debian) packages, 2 shards; $(nproc) CPUs; medians of $REPS runs (ms)"
echo
echo '| aggregation | search() median | p95 | GROUP BY median | p95 | GROUP BY / search() |'
echo '|---|---|---|---|---|---|'
run 'terms section + avg(installed_size)' \
  '{"size":0,"aggs":{"s":{"terms":{"field":"section","size":500},"aggs":{"a":{"avg":{"field":"installed_size"}}}}}}' \
  'SELECT section, count(*), avg(installed_size) FROM deb GROUP BY section'
run 'cardinality maintainer' \
  '{"size":0,"aggs":{"c":{"cardinality":{"field":"maintainer","precision_threshold":40000}}}}' \
  'SELECT count(DISTINCT maintainer) FROM deb'
run 'histogram installed_size / 1000' \
  '{"size":0,"aggs":{"h":{"histogram":{"field":"installed_size","interval":1000,"min_doc_count":1}}}}' \
  'SELECT floor(installed_size / 1000.0) * 1000, count(*) FROM deb WHERE installed_size IS NOT NULL GROUP BY 1'
run 'stats size' \
  '{"size":0,"aggs":{"s":{"stats":{"field":"size"}}}}' \
  'SELECT count(size), min(size), max(size), avg(size), sum(size) FROM deb'
