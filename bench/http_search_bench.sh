#!/usr/bin/env bash
# Top-10 search latency over HTTP vs SQL (issue 18): the Debian corpus's
# query list (bench/loadgen/queries/debian.queries, top 10 each) run by
# `se-loadgen query` through search_engine.search() over libpq and through
# POST /debian/_search over HTTP (libcurl, one keep-alive connection per
# client, HTTP Basic as a SCRAM role: the realm cache makes that one
# PBKDF2 per connection's first request, as ES's does), alternating sides
# in each round, same clients, same duration, one run on one throwaway
# server.  http_workers = the largest client count, so each HTTP client has
# a worker as each SQL client has its backend.  Prints per client count the
# medians over the rounds of each side's client-clock p50 / p95 and QPS and
# the HTTP / SQL ratio of the p50 medians (and per round, same load).
#   bench/http_search_bench.sh   (env: ROUNDS, CLIENTS="1 4", DURATION, PORT,
#                                 HTTP_PORT, PGDIR, SKIP_BUILD=1: the PG on PATH)
set -euo pipefail
PORT=${PORT:-5497}
HTTP_PORT=${HTTP_PORT:-9297}
PGDIR=${PGDIR:-/var/tmp/search_engine_http_search_bench}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-"1 4"}
DURATION=${DURATION:-10}
source "$(dirname "$0")/lib/common.sh"
maxc=$(tr ' ' '\n' <<<"$CLIENTS" | sort -n | tail -1)
latency_server "search_engine.http_port = $HTTP_PORT" "search_engine.http_listen_addresses = '127.0.0.1'" \
  "search_engine.http_workers = $maxc"
make -C "$BENCH/loadgen" -s >/dev/null
L=$BENCH/loadgen/se-loadgen
OUT=$(mktemp -d)
trap 'latency_server_cleanup; rm -rf "$OUT"' EXIT
sql -c "ALTER ROLE postgres PASSWORD 'bench-pw'" >/dev/null
se_create_index debian
se_ingest debian >/dev/null
sql -c "SELECT search_engine.force_merge('debian', 1)" >/dev/null
for _ in $(seq 1 100); do curl -s -o /dev/null -u postgres:bench-pw "http://127.0.0.1:$HTTP_PORT/" && break; sleep 0.2; done
DSN="host=/tmp port=$PORT user=postgres dbname=postgres"
export SE_LOADGEN_HTTP_PASSWORD=bench-pw

for r in $(seq 1 "$ROUNDS"); do
  for c in $CLIENTS; do
    for side in sql http; do
      extra=()
      [ $side = http ] && extra=(--http "http://127.0.0.1:$HTTP_PORT" --http-user postgres)
      nice "$L" query -d "$DSN" "${extra[@]}" --index debian --queries "$BENCH/loadgen/queries/debian.queries" \
        --clients "$c" --duration "$DURATION" --progress never -q --json "$OUT/$side-c$c-r$r.json"
    done
    echo "round $r, $c clients: done"
  done
done

python3 - "$OUT" "$ROUNDS" "$CLIENTS" "$DURATION" <<'PY'
import json, statistics, sys, datetime, os
d, rounds, clients, dur = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
med = statistics.median
print(f"\nDebian corpus, debian.queries (top 10), {rounds} rounds x {dur} s per side, "
      f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
      f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC")
print("| clients | path | client p50 ms | client p95 ms | QPS | errors |")
print("|---|---|---|---|---|---|")
for c in clients:
    runs = {s: [json.load(open(f"{d}/{s}-c{c}-r{r}.json")) for r in range(1, rounds + 1)]
            for s in ("sql", "http")}
    for s, name in (("sql", "search_engine.search() over libpq"), ("http", "POST /_search over HTTP")):
        j = runs[s]
        print(f"| {c} | {name} | {med(x['client_ms']['p50'] for x in j):.3f} | "
              f"{med(x['client_ms']['p95'] for x in j):.3f} | {med(x['qps'] for x in j):.0f} | "
              f"{sum(x['errors'] for x in j)} |")
    ratios = [h["client_ms"]["p50"] / s["client_ms"]["p50"] for s, h in zip(runs["sql"], runs["http"])]
    p50 = {s: med(x["client_ms"]["p50"] for x in runs[s]) for s in runs}
    print(f"|  | {c} clients: HTTP / SQL p50 (medians) {p50['http'] / p50['sql']:.3f}; "
          f"per round {', '.join(f'{x:.2f}' for x in ratios)} | | | | |")
PY
