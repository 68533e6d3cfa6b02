#!/usr/bin/env bash
# HTTP bulk vs SQL bulk (issue 18): the Debian corpus ingested in the same
# 1000-document batches through search_engine.bulk() (one psql session, one
# statement per batch) and through POST /{index}/_bulk over HTTP (one curl
# process, one keep-alive connection, HTTP Basic as a SCRAM role), into
# fresh indices, alternating, in one run on one throwaway server.  Prints a
# table (min / median / max seconds, HTTP / SQL ratio of the medians).
#   bench/http_bulk_bench.sh      (env: RUNS, PORT, HTTP_PORT, PGDIR, SKIP_BUILD=1)
set -euo pipefail
PORT=${PORT:-5498}
HTTP_PORT=${HTTP_PORT:-9298}
PGDIR=${PGDIR:-/var/tmp/search_engine_http_bench}
RUNS=${RUNS:-3}
source "$(dirname "$0")/lib/common.sh"
need_root
[ "${SKIP_BUILD:-0}" = 1 ] || build_private
corpus_ready
command -v curl >/dev/null || { echo "$0: needs curl" >&2; exit 1; }

cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR" "$WORK"; }
WORK=$(mktemp -d)
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "search_engine.http_port = $HTTP_PORT" "search_engine.http_listen_addresses = '127.0.0.1'"
sql -c "ALTER ROLE postgres PASSWORD 'bench-pw'" >/dev/null

# the same batches as the SQL side: 2000 lines (1000 documents) per request
split -l $((2 * BATCH_SIZE)) -d -a 4 "$DATA/debian.ndjson" "$WORK/b"
: > "$WORK/curl.cfg"
first=1
for f in "$WORK"/b*; do
  # curl's "next" resets every option: each request names all of its own
  [ $first = 1 ] || echo next >> "$WORK/curl.cfg"
  first=0
  printf 'url = "http://127.0.0.1:%s/%%INDEX%%/_bulk"\ndata-binary = "@%s"\nuser = "postgres:bench-pw"\nheader = "Content-Type: application/x-ndjson"\noutput = "%s.%%INDEX%%.out"\nwrite-out = "%%{http_code}\\n"\nsilent\n' \
    "$HTTP_PORT" "$f" "$f" >> "$WORK/curl.cfg"
done
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$HTTP_PORT/" && break; sleep 0.2; done

http_ingest() {
  local t0 t1 t2 codes
  sed "s/%INDEX%/$1/" "$WORK/curl.cfg" > "$WORK/curl.$1.cfg"
  t0=$(now)
  codes=$(curl -K "$WORK/curl.$1.cfg")
  t1=$(now)
  sql -c "SELECT search_engine.refresh('$1')" >/dev/null
  t2=$(now)
  if [ "$(grep -c '^200$' <<<"$codes")" != "$NBATCHES" ] || grep -lq '"errors":true' "$WORK"/b*."$1".out; then
    echo "HTTP bulk into $1 failed: $(sort <<<"$codes" | uniq -c | tr '\n' ' ' | cut -c1-300)" >&2
    return 1
  fi
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", c - a, c - b }'
}

: > "$WORK/raw"
for r in $(seq 1 "$RUNS"); do
  for side in sql http; do
    idx=bench_$side
    se_create_index "$idx"
    if [ $side = sql ]; then t=$(se_ingest "$idx"); else t=$(http_ingest "$idx"); fi
    n=$(se_docs_count "$idx")
    [ "$n" = "$CORPUS_DOCS" ] || { echo "$idx has $n documents, expected $CORPUS_DOCS" >&2; exit 1; }
    echo "$side ${t%% *}" >> "$WORK/raw"
    echo "round $r $side: ${t%% *} s ($n documents)"
  done
done
stats() { grep "^$1 " "$WORK/raw" | awk '{ print $2 }' | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f / %.2f / %.2f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
med() { grep "^$1 " "$WORK/raw" | awk '{ print $2 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "Debian corpus ($CORPUS_DOCS documents, $NBATCHES batches of $BATCH_SIZE), $RUNS rounds, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "| path | ingest + refresh, s (min / median / max) |"
echo "|---|---|"
echo "| search_engine.bulk() over psql | $(stats sql) |"
echo "| POST /_bulk over HTTP (curl, keep-alive, Basic/SCRAM) | $(stats http) |"
awk -v h="$(med http)" -v s="$(med sql)" 'BEGIN { printf "HTTP / SQL (medians): %.3f (%+.1f %%)\n", h / s, 100 * (h / s - 1) }'
# each round's HTTP time over the SQL time just before it (same load)
paste <(grep '^sql ' "$WORK/raw" | awk '{ print $2 }') <(grep '^http ' "$WORK/raw" | awk '{ print $2 }') |
  awk '{ r = $2 / $1; s += r; if (r > m) m = r; printf "round %d: HTTP / SQL %.3f\n", NR, r } END { printf "paired mean %.3f, worst %.3f\n", s / NR, m }'
