#!/usr/bin/env bash
# Parallel search benchmark: top-10 latency of searches over several shards
# with the search thread pool (search_engine.search_parallel = on, the
# default) and without it (off: every shard in the backend, as with
# search_threads = 0), measured in the same run on the same server and the
# same indices, alternating the two modes within each round.
#   bench/parallel_search_bench.sh   (env: PORT, PGDIR, ROUNDS, REPS, WARMUP,
#                                     CONTENTS_DOCS: Contents prefix, default 1000000)
# Debian packages corpus: index with 2 shards (bench/lib/debian_index.json).
# Debian Contents corpus: the first CONTENTS_DOCS documents, 4 shards.
# Prints, per query and mode, min/median/max over ROUNDS of the per-round
# median latency (server-side, plpgsql clock_timestamp), and the ratio of the
# medians (on / off).
set -euo pipefail
PORT=${PORT:-5473}
PGDIR=${PGDIR:-/var/tmp/se_bench_parsearch}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-200}
WARMUP=${WARMUP:-20}
CONTENTS_DOCS=${CONTENTS_DOCS:-1000000}
source "$(dirname "$0")/lib/common.sh"
latency_server "shared_buffers = '256MB'"

se_create_index debian
se_ingest debian >/dev/null
echo "debian: $(se_docs_count debian) docs, 2 shards"
# Contents prefix in bulk chunks of 10000 documents, read by the server
CHUNKS=$PGDIR.chunks
rm -rf "$CHUNKS"; mkdir -p "$CHUNKS"
head -n $((CONTENTS_DOCS * 2)) "$DATA/contents.ndjson" | split -l 20000 - "$CHUNKS/c"
chmod -R a+rX "$CHUNKS"
sql -v body="$(sed 's/"number_of_shards": 2/"number_of_shards": 4/' "$BENCH/contents_corpus.json")" >/dev/null <<'SQL'
SELECT search_engine.create_index('contents', :'body');
SQL
for f in "$CHUNKS"/c*; do
  echo "SELECT search_engine.bulk(pg_read_file('$f'), 'contents')->'errors';"
done | sqlv | grep -v '^false$' && { echo "contents bulk reported errors" >&2; exit 1; }
rm -rf "$CHUNKS"
sql -c "SELECT search_engine.refresh('contents')" >/dev/null
echo "contents: $(se_docs_count contents) docs, 4 shards"

sql -f "$BENCH/lib/latency.sql"
sql <<'SQL'
CREATE TABLE IF NOT EXISTS bench.par (round int, idx text, q text, mode text, ms float8);
TRUNCATE bench.par;
SQL
QS=("debian|library|{\"query\": {\"match\": {\"description\": \"library\"}}}"
    "debian|python library (OR)|{\"query\": {\"match\": {\"description\": \"python library\"}}}"
    "debian|python library (AND)|{\"query\": {\"match\": {\"description\": {\"query\": \"python library\", \"operator\": \"and\"}}}}"
    "debian|\"command line\" (phrase)|{\"query\": {\"match_phrase\": {\"description\": \"command line\"}}}"
    "contents|python3|{\"query\": {\"match\": {\"path\": \"python3\"}}}"
    "contents|locale|{\"query\": {\"match\": {\"path\": \"locale\"}}}"
    "contents|share doc (OR)|{\"query\": {\"match\": {\"path\": \"share doc\"}}}"
    "contents|usr lib (AND)|{\"query\": {\"match\": {\"path\": {\"query\": \"usr lib\", \"operator\": \"and\"}}}}")
for round in $(seq 1 "$ROUNDS"); do
  for entry in "${QS[@]}"; do
    IFS='|' read -r idx name body <<<"$entry"
    for mode in off on; do
      sql -v idx="$idx" -v name="$name" -v body="$body" -v mode="$mode" -v round="$round" \
          -v reps="$REPS" -v warmup="$WARMUP" >/dev/null <<'SQL'
SET search_engine.search_parallel = :'mode';
INSERT INTO bench.par SELECT :round, :'idx', :'name', :'mode',
  (SELECT median_ms FROM bench.latency(format('SELECT search_engine.search(%L, %L)', :'idx', :'body'), :warmup, :reps));
SQL
    done
  done
done
sql -c "
SELECT idx, q,
       round(min(ms) FILTER (WHERE mode = 'off')::numeric, 3) AS off_min,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'off'))::numeric, 3) AS off_med,
       round(max(ms) FILTER (WHERE mode = 'off')::numeric, 3) AS off_max,
       round(min(ms) FILTER (WHERE mode = 'on')::numeric, 3) AS on_min,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'on'))::numeric, 3) AS on_med,
       round(max(ms) FILTER (WHERE mode = 'on')::numeric, 3) AS on_max,
       round(((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'on')) /
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE mode = 'off')))::numeric, 2) AS ratio
FROM bench.par GROUP BY idx, q ORDER BY idx DESC, min(round), q"
sql -c "SELECT name, threads, completed, rejected FROM search_engine.thread_pool"
