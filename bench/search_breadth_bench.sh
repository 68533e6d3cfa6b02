#!/usr/bin/env bash
# Issue 17's benchmarks beyond bench/aggs_bench.sh, on the Debian packages
# corpus, each against PostgreSQL in the same run, with equal work:
#   1. GROUP BY through a foreign table: the issue's case -- an index made
#      by dynamic mapping (section is text + section.keyword), IMPORT
#      FOREIGN SCHEMA, SELECT section, count(*), avg(installed_size) ...
#      GROUP BY section -- vs the same GROUP BY on a plain table (loaded
#      from the same debian.jsonl) vs search() with terms + avg.  The three
#      answers are checked equal (NULL section included).
#   2. highlight overhead: top-10 match on description with and without
#      "highlight" on description (both return _source).
#   3. the whole corpus: scroll (pages of 1000, every hit's _source) vs
#      COPY of the table holding the documents (jsonb) to /dev/null.
#   4. fuzzy match top-10 (fuzziness AUTO on description, _source: package)
#      vs pg_trgm: the 10 most word-similar descriptions (GIN trgm index,
#      the <% operator), package returned.
#   5. highlighters (session 14): top-10 with the unified highlighter (ES 8's
#      default) and with plain vs without highlight, for match, match_phrase
#      and fuzzy match on description (all return _source).
# Server-side latency (bench/lib/latency.sql: clock_timestamp around each
# EXECUTE, parsing and planning included), WARMUP then REPS runs, median
# and p95.  Run as root.
#   bench/search_breadth_bench.sh   (env: REPS=30 WARMUP=5 SCROLL_REPS=5 FUZZY_PG_REPS=5
#                                    PORT=5495 PGDIR=... SKIP_BUILD=1)
set -euo pipefail
PORT=${PORT:-5495}
PGDIR=${PGDIR:-/var/tmp/se_breadth_bench}
REPS=${REPS:-30}
WARMUP=${WARMUP:-5}
SCROLL_REPS=${SCROLL_REPS:-5}
FUZZY_PG_REPS=${FUZZY_PG_REPS:-5}   # pg_trgm takes seconds on some words
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/scroll.sh"
latency_server "shared_buffers = '512MB'"
sql -f "$BENCH/lib/latency.sql" >/dev/null

# the index of the issue's case: no mapping given (dynamic mapping)
sql -c "SELECT search_engine.delete_index('deb_dyn') FROM search_engine.indices WHERE index = 'deb_dyn'" >/dev/null
sql -c "SELECT search_engine.create_index('deb_dyn', '{\"settings\":{\"number_of_shards\":2,\"number_of_replicas\":0,\"translog.durability\":\"request\"}}')" >/dev/null
read -r s _ < <(se_ingest deb_dyn)
echo "deb_dyn (dynamic mapping): $(se_docs_count deb_dyn) documents in ${s}s"
se_create_index debian
read -r s _ < <(se_ingest debian)
echo "debian (bench/lib/debian_index.json): $(se_docs_count debian) documents in ${s}s"

deb_raw_load
sql <<SQL
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DROP TABLE IF EXISTS deb;
CREATE TABLE deb AS
  SELECT j->>'package' AS package, j->>'section' AS section,
         (j->>'installed_size')::bigint AS installed_size, j->>'description' AS description
    FROM deb_raw;
CREATE INDEX deb_description_trgm ON deb USING gin (description gin_trgm_ops);
VACUUM ANALYZE deb_raw, deb;
DROP SERVER IF EXISTS se CASCADE;
CREATE SERVER se FOREIGN DATA WRAPPER search_engine;
DROP SCHEMA IF EXISTS f CASCADE;
CREATE SCHEMA f;
IMPORT FOREIGN SCHEMA "deb_dyn" FROM SERVER se INTO f;
SQL
scroll_bench_sql
echo "foreign table: $(sqlv -c "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'f.deb_dyn'::regclass AND attnum > 0 AND attname IN ('section', 'installed_size')")"

Q_FDW='SELECT section, count(*), avg(installed_size) FROM f.deb_dyn GROUP BY section'
Q_PG='SELECT section, count(*), avg(installed_size) FROM deb GROUP BY section'
ES_TERMS='{"size":0,"aggs":{"s":{"terms":{"field":"section.keyword","size":500,"missing":"(none)"},"aggs":{"a":{"avg":{"field":"installed_size"}}}}}}'
plan=$(sqlv -c "EXPLAIN (VERBOSE, COSTS OFF) $Q_FDW")
grep -q 'aggregation over doc values' <<<"$plan" && ! grep -q 'Aggregate' <<<"$plan" ||
  { echo "the foreign GROUP BY is not pushed down:" >&2; echo "$plan" >&2; exit 1; }
check=$(sqlv <<SQL
SELECT NOT EXISTS (($Q_FDW) EXCEPT ($Q_PG)) AND NOT EXISTS (($Q_PG) EXCEPT ($Q_FDW))
   AND (SELECT count(*) FROM ($Q_PG) x) = (SELECT count(*) FROM ($Q_FDW) x)
   AND (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, round((b->'a'->>'value')::numeric, 6)) ORDER BY b->>'key')
          FROM jsonb_array_elements(search_engine.search('deb_dyn', '$ES_TERMS')->'aggregations'->'s'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(coalesce(section, '(none)'), c, round(a, 6)) ORDER BY coalesce(section, '(none)'))
          FROM ($Q_PG) s(section, c, a))
SQL
)
echo "foreign GROUP BY = plain GROUP BY = search() terms: $check"
[ "$check" = t ] || { echo "the answers differ" >&2; exit 1; }

lat() {  # median p95 hits of statement $1
  sqlv -v q="$1" -v w="$WARMUP" -v r="$REPS" <<'SQL'
SELECT round(median_ms::numeric, 2) || ' ' || round(p95_ms::numeric, 2) || ' ' || hits FROM bench.latency(:'q', :w, :r)
SQL
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() {  # name, se median p95, pg median p95, ratio text
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$6"
}

echo
echo "Debian corpus, $(se_docs_count debian) packages, 2 shards, $(nproc) CPUs; medians / p95 of $REPS runs after $WARMUP (ms)"
echo
echo '| measurement: A vs B | A median | A p95 | B median | B p95 | ratio |'
echo '|---|---:|---:|---:|---:|---:|'
read -r fm fp _ < <(lat "SELECT to_jsonb(array_agg(x)) FROM ($Q_FDW) x")
read -r pm pp _ < <(lat "SELECT to_jsonb(array_agg(x)) FROM ($Q_PG) x")
read -r sm sp _ < <(lat "SELECT search_engine.search('deb_dyn', '$ES_TERMS')")
row "GROUP BY section, count(*), avg(installed_size): foreign table (dynamic mapping) vs plain table" "$fm" "$fp" "$pm" "$pp" "table / foreign: $(ratio "$pm" "$fm")×"
row "the same: search() terms section.keyword + avg vs plain table" "$sm" "$sp" "$pm" "$pp" "table / search(): $(ratio "$pm" "$sm")×; foreign / search(): $(ratio "$fm" "$sm")×"

for q in library 'python library' kernel; do
  plain="{\"query\":{\"match\":{\"description\":\"$q\"}},\"size\":10}"
  hl="{\"query\":{\"match\":{\"description\":\"$q\"}},\"size\":10,\"highlight\":{\"fields\":{\"description\":{}}}}"
  read -r am ap ah < <(lat "SELECT search_engine.search('debian', '$plain')")
  read -r bm bp bh < <(lat "SELECT search_engine.search('debian', '$hl')")
  [ "$ah" = 10 ] && [ "$bh" = 10 ] || { echo "top-10 of '$q' returned $ah / $bh hits" >&2; exit 1; }
  row "top-10 \`$q\`: with highlight vs without (search())" "$bm" "$bp" "$am" "$ap" "highlight / plain: $(ratio "$bm" "$am")×"
done

docs=$(sqlv -c "SELECT (bench.scroll_all('debian', 1000))->>0")
[ "$docs" = "$(se_docs_count debian)" ] || { echo "scroll returned $docs documents" >&2; exit 1; }
read -r cm cp < <(sqlv -F ' ' -c "SELECT round(median_ms::numeric, 1), round(p95_ms::numeric, 1) FROM bench.time_ms('COPY deb_raw TO ''/dev/null''', 1, $SCROLL_REPS)")
read -r rm rp _ < <(WARMUP=1 REPS=$SCROLL_REPS lat "SELECT bench.scroll_all('debian', 1000)")
row "whole corpus ($docs docs): scroll (pages of 1000) vs COPY of the jsonb table" "$rm" "$rp" "$cm" "$cp" "scroll / COPY: $(ratio "$rm" "$cm")×"

for w in libary pyhton kernal databse netwrok; do
  es="{\"query\":{\"match\":{\"description\":{\"query\":\"$w\",\"fuzziness\":\"AUTO\"}}},\"size\":10,\"_source\":[\"package\"]}"
  pg="SELECT to_jsonb(array_agg(package)) FROM (SELECT package FROM deb WHERE '$w' <% description ORDER BY word_similarity('$w', description) DESC, package LIMIT 10) x"
  read -r em ep eh < <(lat "SELECT search_engine.search('debian', '$es')")
  read -r gm gp gh < <(WARMUP=1 REPS=$FUZZY_PG_REPS lat "$pg")
  row "top-10 \`$w\`: fuzzy match ($eh hits) vs pg_trgm <% ($gh rows)" "$em" "$ep" "$gm" "$gp" "pg_trgm / search_engine: $(ratio "$gm" "$em")×"
done

# 5. highlighters: the same top-10 without highlight, with unified, with
#    plain -- interleaved (none, unified, plain, none, ...) so that the
#    machine's load falls on the three alike; medians and p95 (ms)
sql <<'SQL'
CREATE OR REPLACE FUNCTION bench.latency_interleaved(qs text[], warmup int, reps int,
                                                     OUT i int, OUT median_ms float8, OUT p95_ms float8,
                                                     OUT hits int)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
  t float8[] := '{}';
  n int := array_length(qs, 1);
  t0 timestamptz;
  r jsonb;
BEGIN
  FOR k IN 1..warmup LOOP FOR j IN 1..n LOOP EXECUTE qs[j] INTO r; END LOOP; END LOOP;
  FOR k IN 1..reps LOOP
    FOR j IN 1..n LOOP
      t0 := clock_timestamp();
      EXECUTE qs[j] INTO r;
      t := t || ARRAY[j::float8, extract(epoch FROM clock_timestamp() - t0)::float8 * 1000];
    END LOOP;
  END LOOP;
  FOR j IN 1..n LOOP
    EXECUTE qs[j] INTO r;
    i := j;
    hits := jsonb_array_length(r->'hits'->'hits');
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY t[2 * x]),
           percentile_cont(0.95) WITHIN GROUP (ORDER BY t[2 * x])
      INTO median_ms, p95_ms
      FROM generate_series(1, array_length(t, 1) / 2) x WHERE t[2 * x - 1] = j;
    RETURN NEXT;
  END LOOP;
END $$;
SQL
echo
echo "highlight on description, top-10, interleaved; medians / p95 of $REPS runs after $WARMUP (ms)"
echo
echo '| query | none | unified | plain | unified / none | plain / none |'
echo '|---|---:|---:|---:|---:|---:|'
for qq in 'match:library' 'match:python library' 'match:kernel' 'match_phrase:python library' 'fuzzy:libary'; do
  kind=${qq%%:*}; text=${qq#*:}
  case $kind in
    fuzzy) query="{\"match\":{\"description\":{\"query\":\"$text\",\"fuzziness\":\"AUTO\"}}}" ;;
    *) query="{\"$kind\":{\"description\":\"$text\"}}" ;;
  esac
  qs=()
  for h in '' ',"highlight":{"fields":{"description":{}}}' ',"highlight":{"type":"plain","fields":{"description":{}}}'; do
    qs+=("SELECT search_engine.search('debian', '{\"query\":$query,\"size\":10$h}')")
  done
  out=$(sqlv -F ' ' -v a="${qs[0]}" -v b="${qs[1]}" -v c="${qs[2]}" -v w="$WARMUP" -v r="$REPS" <<'SQL'
SELECT i, round(median_ms::numeric, 2), round(p95_ms::numeric, 2), hits
  FROM bench.latency_interleaved(ARRAY[:'a', :'b', :'c'], :w, :r) ORDER BY i
SQL
)
  read -r _ nm np nh _ um up uh _ pm2 pp2 ph <<<"$(echo $out)"
  [ "$nh" = 10 ] && [ "$uh" = 10 ] && [ "$ph" = 10 ] || { echo "top-10 of $qq returned $nh / $uh / $ph hits" >&2; exit 1; }
  printf '| %s `%s` | %s / %s | %s / %s | %s / %s | %s× | %s× |\n' "$kind" "$text" "$nm" "$np" "$um" "$up" "$pm2" "$pp2" \
    "$(ratio "$um" "$nm")" "$(ratio "$pm2" "$nm")"
done
