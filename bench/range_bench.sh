#!/usr/bin/env bash
# Numeric and date range queries on a large segment: search_engine with
# search_engine.range_doc_values on (wide ranges read doc values) and off
# (one term + posting list per distinct value, the old path), against
# PostgreSQL btree indexes on the same values, in the same run.
# Run as root; replaces its section of bench/RESULTS.md.
#   bench/range_bench.sh   (env: EVENTS=1000000 RUNS=3 REPS=20 WARMUP=3 -- not DOCS,
#                           which PGXS's make would take for its own variable;
#                           PORT=5474 PGDIR=... SKIP_BUILD=1)
#
# One fresh server, the committed HEAD built into a private copy of the
# installation.  Index `events` (2 shards, force-merged to one segment per
# shard) and table `events_pg` hold $EVENTS documents {"n": long, "ts": date,
# "tag": keyword}: n is a pseudo-random long in [0, 1e9) (nearly every value
# distinct), ts a second of 2025.  Each query asks for the top 10 and the
# exact total: search_engine `{"query": {"range": ...}, "size": 10,
# "track_total_hits": true}`; PostgreSQL count(*) plus 10 rows with the same
# WHERE (btree on n and on ts; VACUUM ANALYZE first).  Totals must agree.
set -euo pipefail
PORT=${PORT:-5474}
PGDIR=${PGDIR:-/var/tmp/se_range_bench}
EVENTS=${EVENTS:-1000000}
RUNS=${RUNS:-3}
REPS=${REPS:-20}
WARMUP=${WARMUP:-3}
source "$(dirname "$0")/lib/common.sh"
need_root
OUT=$BENCH/out
RAW=$OUT/range_raw.tsv
mkdir -p "$OUT"
started=$(date +%s)
[ "${SKIP_BUILD:-0}" = 1 ] || build_private

cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "shared_buffers = '1GB'" "search_engine.write_threads = 2" "max_wal_size = '8GB'"
sql -c "CREATE EXTENSION IF NOT EXISTS search_engine"
: > "$RAW"
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }
rec meta date 0 "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta nproc 0 "$(nproc)"
rec meta postgres 0 "$(sqlv -c 'SHOW server_version')"
rec meta commit 0 "${PRIVATE_REV:-installed build (SKIP_BUILD)}"
rec meta docs 0 "$EVENTS"
rec meta reps 0 "$REPS"
rec meta warmup 0 "$WARMUP"
rec meta runs 0 "$RUNS"

echo "== loading $EVENTS documents into index events and table events_pg"
sql -f "$BENCH/lib/latency.sql"
sql <<SQL
CREATE SCHEMA IF NOT EXISTS bench;
-- the documents, generated once: n pseudo-random in [0, 1e9), ts in 2025
CREATE TABLE bench.gen AS
  SELECT i, (i::bigint * 2654435761 % 1000000000) AS n,
         timestamptz '2025-01-01 00:00:00+00' + ((i::bigint * 7919) % 31536000) * interval '1 second' AS ts,
         'tag' || (i % 50) AS tag
  FROM generate_series(1, $EVENTS) i;
SELECT search_engine.create_index('events', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "-1"},
  "mappings": {"properties": {"n": {"type": "long"}, "ts": {"type": "date"}, "tag": {"type": "keyword"}}}}')->'acknowledged';
DO \$\$
DECLARE b int;
BEGIN
  FOR b IN 0..(($EVENTS - 1) / 20000) LOOP
    PERFORM search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n{"n": %s, "ts": "%s", "tag": "%s"}',
                                                 i, n, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), tag), E'\n') || E'\n',
                               'events')
      FROM bench.gen WHERE i > b * 20000 AND i <= (b + 1) * 20000;
  END LOOP;
END \$\$;
SELECT search_engine.refresh('events')->'_shards'->'failed';
SELECT search_engine.force_merge('events', 1)->'_shards'->'failed';
CREATE TABLE events_pg (id bigint PRIMARY KEY, doc jsonb NOT NULL, n bigint NOT NULL, ts timestamptz NOT NULL);
INSERT INTO events_pg SELECT i, jsonb_build_object('n', n, 'ts', ts, 'tag', tag), n, ts FROM bench.gen;
CREATE INDEX ON events_pg (n);
CREATE INDEX ON events_pg (ts);
VACUUM ANALYZE events_pg;
DROP TABLE bench.gen;
CHECKPOINT;
SQL
rec meta segments 0 "$(sqlv -c "SELECT count(*) FROM search_engine.segments WHERE index = 'events'")"
rec meta se_count 0 "$(sqlv -c "SELECT search_engine.count('events')")"

# name, range clause (search_engine), WHERE (PostgreSQL)
QNAMES=("n, 0.1 % of values" "n, 1 %" "n, 10 %" "n, 50 %" "ts, one day" "ts, one month")
QSE=('{"n": {"gte": 0, "lt": 1000000}}' '{"n": {"gte": 0, "lt": 10000000}}'
     '{"n": {"gte": 0, "lt": 100000000}}' '{"n": {"gte": 0, "lt": 500000000}}'
     '{"ts": {"gte": "2025-06-01", "lt": "2025-06-02"}}' '{"ts": {"gte": "2025-06-01", "lt": "2025-07-01"}}')
QPG=("n >= 0 AND n < 1000000" "n >= 0 AND n < 10000000" "n >= 0 AND n < 100000000" "n >= 0 AND n < 500000000"
     "ts >= '2025-06-01+00' AND ts < '2025-06-02+00'" "ts >= '2025-06-01+00' AND ts < '2025-07-01+00'")
lit() { printf "'%s'" "${1//\'/\'\'}"; }
for run in $(seq 1 "$RUNS"); do
  echo "== round $run"
  for i in "${!QNAMES[@]}"; do
    q=${QNAMES[$i]}
    body="{\"query\": {\"range\": ${QSE[$i]}}, \"size\": 10, \"track_total_hits\": true}"
    se_q="SELECT search_engine.search('events', $(lit "$body"))"
    pg_q="SELECT jsonb_build_object('hits', jsonb_build_object('total', jsonb_build_object('value', (SELECT count(*) FROM events_pg WHERE ${QPG[$i]})), 'hits', (SELECT coalesce(jsonb_agg(doc), '[]') FROM (SELECT doc FROM events_pg WHERE ${QPG[$i]} LIMIT 10) s)))"
    for mode in on off; do
      IFS=$'\t' read -r med p95 tot hits_ok <<<"$(sqlv -F $'\t' -c "SET search_engine.range_doc_values = $mode" -c "SELECT median_ms, p95_ms, total, hits = LEAST(10, total) FROM bench.latency($(lit "$se_q"), $WARMUP, $REPS)")"
      [ "$hits_ok" = t ] || { echo "search_engine: wrong number of hits for $q ($mode)" >&2; exit 1; }
      rec "lat:$q" "se_$mode" "$run" "$med"; rec "total:$q" "se_$mode" "$run" "$tot"
      eval "tot_$mode=$tot; med_$mode=$med"
    done
    IFS=$'\t' read -r med p95 tot hits_ok <<<"$(sqlv -F $'\t' -c "SELECT median_ms, p95_ms, total, hits = LEAST(10, total) FROM bench.latency($(lit "$pg_q"), $WARMUP, $REPS)")"
    [ "$hits_ok" = t ] || { echo "PostgreSQL: wrong number of hits for $q" >&2; exit 1; }
    rec "lat:$q" pg "$run" "$med"; rec "total:$q" pg "$run" "$tot"
    if [ "$tot_on" != "$tot" ] || [ "$tot_off" != "$tot" ]; then
      echo "totals differ for $q: search_engine $tot_on / $tot_off, PostgreSQL $tot" >&2; exit 1
    fi
    printf '   %-20s %9s hits  doc values %8.3f ms  terms %9.3f ms  PostgreSQL %8.3f ms\n' "$q" "$tot" "$med_on" "$med_off" "$med"
  done
done
rec meta elapsed 0 "$(( $(date +%s) - started ))"

python3 - "$RAW" "$BENCH/RESULTS.md" <<'PY'
import re, statistics, sys
from collections import defaultdict
raw, meta, order = defaultdict(list), {}, []
for line in open(sys.argv[1]):
    m, s, r, v = line.rstrip("\n").split("\t")
    if m == "meta":
        meta[s] = v
        continue
    raw[(m, s)].append(float(v))
    q = m.split(":", 1)[1]
    if q not in order:
        order.append(q)
def mmm(k):
    v = sorted(raw[k]); return "%.3f / %.3f / %.3f" % (v[0], statistics.median(v), v[-1])
def ratio(a, b):
    r = sorted(x / y for x, y in zip(raw[a], raw[b]))
    return "%.1f× (%.1f×–%.1f×)" % (statistics.median(r), r[0], r[-1])
L = ["<!-- range_bench: begin -->", "## Numeric and date ranges (bench/range_bench.sh)", "",
     "%s documents `{\"n\": long, \"ts\": date, \"tag\": keyword}` (n pseudo-random in [0, 1e9), nearly all distinct; ts a second of 2025) in index `events` (2 shards, force-merged: %s segments) and table `events_pg` (btree on n and on ts). Each query returns the top 10 and the exact total (`track_total_hits: true`; PostgreSQL `count(*)` + `LIMIT 10`), server-side median over %s runs after %s warm-ups; each cell **min / median / max** over %s rounds; totals agree on all three sides." % (meta["docs"], meta["segments"], meta["reps"], meta["warmup"], meta["runs"]),
     "", "- date: %s; %s CPUs; PostgreSQL %s; search_engine at commit %s; whole run %s s" % (meta["date"], meta["nproc"], meta["postgres"], meta["commit"], meta["elapsed"]), "",
     "| range | matches | search_engine, doc values (ms) | search_engine, terms only (ms) | PostgreSQL btree (ms) | doc values vs terms | search_engine vs PostgreSQL |",
     "|---|---:|---:|---:|---:|---:|---:|"]
for q in order:
    L.append("| %s | %d | %s | %s | %s | %s faster | %s |" % (q, raw[("total:" + q, "pg")][0], mmm(("lat:" + q, "se_on")), mmm(("lat:" + q, "se_off")), mmm(("lat:" + q, "pg")), ratio(("lat:" + q, "se_off"), ("lat:" + q, "se_on")), ratio(("lat:" + q, "pg"), ("lat:" + q, "se_on")) + " faster"))
L += ["", "`search_engine.range_doc_values = off` walks one term and one posting list per distinct value in the range (the only path before); on, a range over more than max_doc/32 distinct values reads the segment's doc values in one pass instead. The last column is PostgreSQL's time over search_engine's (doc values on).", "<!-- range_bench: end -->"]
section = "\n".join(L).strip() + "\n"
path = sys.argv[2]
text = open(path).read()
if "<!-- range_bench: begin -->" in text:
    text = re.sub(r"<!-- range_bench: begin -->.*?<!-- range_bench: end -->\n?", lambda m: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text)
print(section)
PY
