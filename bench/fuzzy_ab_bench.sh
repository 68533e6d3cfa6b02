#!/usr/bin/env bash
# Fuzzy match top-10 latency, A/B in one run: two servers on the same
# machine, A running BASE's build (default: the merge base with main) and
# B running HEAD's, each holding the Debian corpus in the same index
# (bench/lib/debian_index.json, 2 shards).  The words of
# bench/search_breadth_bench.sh's fuzzy part are timed on both, alternating
# A, B per word and round (ROUNDS rounds of REPS runs after WARMUP), so both
# see the same machine load, in two states:
#   unmerged  after the bulk with the default refresh (1s), merges held off
#             (index.merge.policy.segments_per_tier 1000): many segments
#   merged    after _forcemerge?max_num_segments=1
# Server-side latency (bench/lib/latency.sql); prints per word the median of
# the rounds' medians, the segment counts and `uptime` before and after.
#   bench/fuzzy_ab_bench.sh   (env: BASE=<commit> A_INSTALL=<dir> B_INSTALL=<dir>
#                              (private installs to reuse), ROUNDS=5 REPS=20 WARMUP=3,
#                              PORT_A=5497 PORT_B=5498)
set -euo pipefail
PORT=${PORT_A:-5497}
PORT_A=$PORT
PORT_B=${PORT_B:-5498}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-20}
WARMUP=${WARMUP:-3}
source "$(dirname "$0")/lib/common.sh"
source "$BENCH/lib/private_install.sh"
need_root
BASE=${BASE:-$(git -C "$REPO" merge-base HEAD main)}
WORDS=(libary pyhton kernal databse netwrok)
ORIG_PATH=$PATH

# installs: reuse A_INSTALL/B_INSTALL (bin/ of a private install) or build
bindir() {  # side rev
  local v=${1^}_INSTALL
  if [ -n "${!v:-}" ]; then echo "${!v}"; return; fi
  private_install "/var/tmp/fuzzy_ab_$1.install" "$2" >&2
  echo "$PRIVATE_PGBIN"
}
"$REPO/test/setup_deps.sh"
corpus_ready
BIN_A=$(bindir a "$BASE")
BIN_B=$(bindir b HEAD)

on() {  # side cmd...: run with that side's PATH, PORT and PGDIR
  local side=$1; shift
  if [ "$side" = a ]; then PATH=$BIN_A:$ORIG_PATH PORT=$PORT_A PGDIR=/var/tmp/fuzzy_ab_a "$@"
  else PATH=$BIN_B:$ORIG_PATH PORT=$PORT_B PGDIR=/var/tmp/fuzzy_ab_b "$@"; fi
}
cleanup() {
  for s in a b; do on $s bash -c '"$0"/test/pg_instance.sh stop "$PGDIR"; rm -rf "$PGDIR"' "$REPO" || true; done
}
trap cleanup EXIT
setup() {
  [ -d "$PGDIR" ] && { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
  server_start "shared_buffers = '256MB'"
  sql -f "$BENCH/lib/latency.sql" >/dev/null
  local body
  body=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); b["settings"]["merge.policy.segments_per_tier"]=1000; print(json.dumps(b))' "$BENCH/lib/debian_index.json")
  sql -c "SELECT search_engine.delete_index('debian') FROM search_engine.indices WHERE index = 'debian'" >/dev/null
  sql -v body="$body" >/dev/null <<'SQL'
SELECT search_engine.create_index('debian', :'body');
SQL
  read -r s _ < <(se_ingest debian) || exit 1
  echo "$(git -C "$REPO" rev-parse --short HEAD) side on port $PORT: $(se_docs_count debian) documents in ${s}s" >&2
}
nsegs() { sqlv -c "SELECT count(*) FROM jsonb_array_elements((search_engine.request('GET', '/_cat/segments/debian?format=json')).body::jsonb)"; }
med() {  # median ms of the fuzzy top-10 of word $1
  local es="{\"query\":{\"match\":{\"description\":{\"query\":\"$1\",\"fuzziness\":\"AUTO\"}}},\"size\":10,\"_source\":[\"package\"]}"
  sqlv -v q="SELECT search_engine.search('debian', '$es')" -v w="$WARMUP" -v r="$REPS" <<'SQL'
SELECT round(median_ms::numeric, 2) || ' ' || hits FROM bench.latency(:'q', :w, :r)
SQL
}
export -f setup nsegs med sql sqlv se_ingest se_docs_count se_create_index server_start server_running as_pg now
export BENCH REPO DATA BATCHES NBATCHES WARMUP REPS

# both servers loaded at once (the same load on both)
on a bash -c setup & pa=$!
on b bash -c setup & pb=$!
wait $pa; wait $pb

measure() {  # state
  local w r side
  declare -A all
  echo "segments ($1): A $(on a nsegs), B $(on b nsegs); $(uptime)"
  for r in $(seq 1 "$ROUNDS"); do
    for w in "${WORDS[@]}"; do
      for side in a b; do
        read -r m h < <(on $side med "$w")
        all[$side.$w]+="$m "
        all[$side.$w.hits]=$h
      done
    done
  done
  for w in "${WORDS[@]}"; do
    ma=$(tr ' ' '\n' <<<"${all[a.$w]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    mb=$(tr ' ' '\n' <<<"${all[b.$w]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    printf '| %s | `%s` | %s | %s | %s |\n' "$1" "$w" "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')"
  done
  echo "($(uptime))"
}
echo "A = $(git -C "$REPO" rev-parse --short "$BASE"), B = $(git -C "$REPO" rev-parse --short HEAD); medians of $ROUNDS rounds of $REPS runs (ms)"
echo '| state | word | A median | B median | B / A |'
echo '|---|---|---:|---:|---:|'
measure unmerged
for s in a b; do on $s sqlv -c "SELECT (search_engine.request('POST', '/debian/_forcemerge?max_num_segments=1')).status" >/dev/null; done
measure merged
