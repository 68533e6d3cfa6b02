#!/usr/bin/env bash
# The Debian Contents corpus (7.3 M one-line documents, path -> package):
# ingest against PostgreSQL's tsvector + GIN table on to_tsvector('simple',
# path), the write workers' peak private memory during the load, and the
# top-10 latency of the one- and two-term queries.  Issue 3's targets:
# ingest >= 3x the GIN table's docs/s; every worker's peak memory within
# index_buffer_size + 256 MB; median top-10 < 5 ms for one- and two-term
# queries.  Run as root; replaces its section of bench/RESULTS.md.
#   bench/contents_bench.sh   (env: RUNS=3 CLIENTS=8 BATCH=1000 SHARDS=4
#                              QUERY_SECONDS=20 PORT=5475 PGDIR=... SKIP_BUILD=1)
#
# One fresh server running the committed HEAD from a private copy of the
# installation (index_buffer_size 64MB, write_threads 2).  Per round,
# `se-loadgen compare` recreates index `contents` (bench/contents_corpus.json,
# SHARDS shards, durability request) and table `contents_pg`, loads the same
# NDJSON batches into each with CLIENTS clients (counts verified), then
# runs the queries of bench/loadgen/queries/contents_short.queries on both;
# a sampler reads RssAnon of every write worker from /proc each second
# during the search_engine load.  Then `se-loadgen query` with ONE client
# for QUERY_SECONDS measures the engine's latency per query, server-side
# (the figure the < 5 ms target is about; PostgreSQL's parser keeps a path
# as one token, so its query side is not comparable and is not reported).
set -euo pipefail
PORT=${PORT:-5475}
PGDIR=${PGDIR:-/var/tmp/se_contents_bench}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-1000}
SHARDS=${SHARDS:-4}
QUERY_SECONDS=${QUERY_SECONDS:-20}
source "$(dirname "$0")/lib/common.sh"
need_root
OUT=$BENCH/out/contents
mkdir -p "$OUT"
rm -f "$OUT"/*.json
started=$(date +%s)
CONTENTS=$DATA/contents.ndjson
QUERIES=$BENCH/loadgen/queries/contents_short.queries
[ -s "$CONTENTS" ] || "$BENCH/contents_corpus.sh" "$CONTENTS"
command -v gnuplot >/dev/null || {
  apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null; }
[ -f /usr/include/postgresql/libpq-fe.h ] || {
  apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpq-dev >/dev/null; }
# the load generator links the system libpq (before PATH points at the copy)
make -s -C "$BENCH/loadgen" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
LOADGEN=$BENCH/loadgen/se-loadgen
[ "${SKIP_BUILD:-0}" = 1 ] || build_private

cleanup() { [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null; "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "shared_buffers = '1GB'" "search_engine.write_threads = 2" \
  "search_engine.index_buffer_size = '64MB'" "max_connections = 120" "max_wal_size = '16GB'"
sql -c "CREATE EXTENSION IF NOT EXISTS search_engine"
DSN="host=/tmp port=$PORT user=postgres dbname=postgres"

# peak RssAnon (kB) of the write workers, sampled every second into $1
sample_workers() {
  local peak=0 v pid
  while :; do
    for pid in $(pgrep -f 'search_engine write worker' || true); do
      v=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
      [ "${v:-0}" -gt "$peak" ] && peak=$v && echo "$peak" > "$1"
    done
    sleep 1
  done
}

for run in $(seq 1 "$RUNS"); do
  echo "== round $run: compare (ingest + queries), $CLIENTS clients x $BATCH docs, $SHARDS shards"
  echo 0 > "$OUT/rss_$run"
  sample_workers "$OUT/rss_$run" & sampler=$!
  "$LOADGEN" compare -d "$DSN" --corpus "$CONTENTS" --index-body "$BENCH/contents_corpus.json" \
    --index contents --shards "$SHARDS" --replicas 0 --durability request --clients "$CLIENTS" --batch "$BATCH" \
    --pg-fields path --ts-config simple --queries "$QUERIES" --duration 5 \
    --json "$OUT/compare_$run.json" --progress never > "$OUT/compare_$run.txt"
  kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=
  echo "== round $run: one client, $QUERY_SECONDS s of queries on the engine"
  "$LOADGEN" query -d "$DSN" --index contents --queries "$QUERIES" --clients 1 \
    --duration "$QUERY_SECONDS" --json "$OUT/query_$run.json" --progress never > "$OUT/query_$run.txt"
  grep -E "docs/s|p50" "$OUT/compare_$run.txt" | head -4 || true
done
echo "$(( $(date +%s) - started ))" > "$OUT/elapsed"
commit=${PRIVATE_REV:-installed build (SKIP_BUILD)}

python3 - "$OUT" "$RUNS" "$commit" "$BENCH/RESULTS.md" "$(nproc)" <<'PY'
import json, re, statistics, sys
out, runs, commit, results, nproc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
cmp = [json.load(open("%s/compare_%d.json" % (out, r))) for r in range(1, runs + 1)]
qry = [json.load(open("%s/query_%d.json" % (out, r))) for r in range(1, runs + 1)]
rss = [int(open("%s/rss_%d" % (out, r)).read().strip() or 0) / 1024.0 for r in range(1, runs + 1)]
def mmm(v, f="%.0f"):
    v = sorted(v); return " / ".join(f % x for x in (v[0], statistics.median(v), v[-1]))
se = [c["ingest"]["search_engine"] for c in cmp]
pg = [c["ingest"]["postgresql"] for c in cmp]
ratios = sorted(a["docs_per_s_searchable"] / b["docs_per_s_searchable"] for a, b in zip(se, pg))
size = sorted(a["size_bytes"] / b["size_bytes"] for a, b in zip(se, pg))
ok = all(a["verified"] and b["verified"] for a, b in zip(se, pg))
L = ["<!-- contents_bench: begin -->", "## Debian Contents corpus (bench/contents_bench.sh)", "",
     "%d documents (one per `path -> section/package` line of the Contents indices), %d rounds, each cell **min / median / max**; %s CPUs; search_engine at commit %s (private build), `index_buffer_size` 64MB, 2 write workers; whole run %s s." % (se[0]["docs_sent"], runs, nproc, commit, open(out + "/elapsed").read().strip()), "",
     "| measurement | search_engine | PostgreSQL (`to_tsvector('simple', path)` + GIN) | ratio (median, min–max) |", "|---|---:|---:|---:|",
     "| ingest, docs/s until searchable (load + final refresh; %d clients × %d docs, durability request) | %s | %s | %.2f× (%.2f×–%.2f×) |" % (se[0]["clients"], se[0]["batch"], mmm([x["docs_per_s_searchable"] for x in se]), mmm([x["docs_per_s_searchable"] for x in pg]), statistics.median(ratios), ratios[0], ratios[-1]),
     "| size after the load, MB | %s | %s | %.2f× (%.2f×–%.2f×) |" % (mmm([x["size_bytes"] / 1e6 for x in se]), mmm([x["size_bytes"] / 1e6 for x in pg]), statistics.median(size), size[0], size[-1]),
     "| peak private memory (RssAnon) of a write worker during the load, MB | %s | | |" % mmm(rss, "%.1f"), ""]
L.append("Counts verified after every load: %s. Top-10 latency with one client (`se-loadgen query --clients 1`, %s s per round), server-side median per query, ms:" % ("yes" if ok else "**NO**", "%.0f" % qry[0]["seconds"]))
L += ["", "| query | server p50, ms | client p50, ms | < 5 ms |", "|---|---:|---:|---|"]
worst = 0
for i, q in enumerate(qry[0]["per_query"]):
    s = [r["per_query"][i]["server_ms"]["p50"] for r in qry]
    c = [r["per_query"][i]["client_ms"]["p50"] for r in qry]
    worst = max(worst, statistics.median(s))
    L.append("| `%s` | %s | %s | %s |" % (q["query"], mmm(s, "%.2f"), mmm(c, "%.2f"), "yes" if statistics.median(s) < 5 else "**no**"))
L += ["", "Targets (issue 3): ingest ≥ 3× the GIN table: %.2f× — %s; worker peak memory ≤ index_buffer_size + 256 MB = 320 MB: %.1f MB — %s; one- and two-term queries < 5 ms median: worst %.2f ms — %s." % (
    statistics.median(ratios), "met" if statistics.median(ratios) >= 3 else "**not met**",
    max(rss), "met" if max(rss) <= 320 else "**not met**", worst, "met" if worst < 5 else "**not met**"),
    "", "PostgreSQL's default parser keeps a whole path such as `/usr/share/doc/x/copyright` as one `file` token, so its GIN index holds one lexeme per document: cheap to build, and its query side matches almost nothing, so only the engine's latencies are reported.",
    "<!-- contents_bench: end -->"]
section = "\n".join(L) + "\n"
text = open(results).read()
if "<!-- contents_bench: begin -->" in text:
    text = re.sub(r"<!-- contents_bench: begin -->.*?<!-- contents_bench: end -->\n?", lambda m: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section
open(results, "w").write(text)
print(section)
PY
