#!/usr/bin/env bash
# bench/rejection_experiment.sh: the bulk-rejection experiment on one node.
#
#   bench/rejection_experiment.sh            (as root; ~20 minutes on 2 cores)
#
# A fresh server with search_engine.write_queue_size = 200 (the bound on
# waiting shard sub-requests, node-wide, as Elasticsearch's write queue).
# Cells: shards {2,4,8,16,32} x concurrent clients {8,16,24,32,48,64} x
# batch {100,200} documents of the Debian Contents corpus
# (bench/contents_corpus.sh).  Every cell recreates the index and every
# client sends a fixed number of bulk requests (REQUESTS, default 200; the
# sizing is explained below), without retries, and se-loadgen classifies
# each request as fully successful / partially rejected / fully rejected
# and verifies that the final count equals what was acknowledged.  The
# x axis of the plots is the client-shard concurrency, shards x clients:
# the most shard sub-requests that can be outstanding at once.
#
# Second pass ("retries"): a few cells again with client-side retries of
# the rejected items (exponential backoff with jitter, until indexed) and
# with the engine's own bulk(max_retries => n); the tool checks that every
# document sent ends up indexed.
#
# Sizing: 200 requests per client is 288,000 x 200 = 57.6 M documents sent
# over the 60 cells (sum over cells of clients x batch x requests).
# Accepted documents go in at ~110 k docs/s on 2 cores with <= 16 shards
# (~50 k/s with 32: one translog fsync per shard per worker batch), and a
# rejected request costs the client and the server ~1 ms, so the main pass
# takes ~10 minutes, plus ~1 s per cell to create and drop the index; the
# retry pass resends up to 94% of a cell's documents, hence its smaller
# RETRY_REQUESTS.  Fewer requests make the start-up transient (the queue
# filling) a larger part of each cell.
#
# With replicas on a cluster (issue 16): NODES="1 2 3" runs, for each count
# of data nodes, a fresh cluster (three etcd members, NODES master,data
# nodes, one coordinating-only node the clients talk to) and the cells
# SHARDS x CLIENTS x BATCHES with number_of_replicas REPLICAS (default 1)
# into OUT/cells-nodesN.csv; no retry pass.  Each replica write takes a
# slot in its node's write queue too, so the x axis is the client-shard
# concurrency PER NODE: shards x clients x copies / nodes, copies = 1 +
# the replicas that can be assigned (none on one node: they stay
# unassigned, the index yellow).  Plot: OUT/rejection-replicas.png.
#   NODES="1 2 3" SHARDS="2 4 8" CLIENTS="8 16 32 64" BATCHES=100 REQUESTS=30 \
#     OUT=bench/loadgen/results/rejection-replicas bench/rejection_experiment.sh
#
# Over HTTP (issue 18): TRANSPORT=http runs the cells through the
# server's ES endpoint (se-loadgen --http: POST /rejection/_bulk, one
# keep-alive connection per client, the same batches, classification and
# client retries; the engine's max_retries is a bulk() argument, so the
# retry cells of mode server are SQL-only and skipped); TRANSPORT=both
# runs every cell over SQL and over HTTP on the same server, one after
# the other (which goes first alternates), and plots them on the same
# axes. The server gets
# search_engine.http_port = HTTP_PORT (default 9294) and HTTP_WORKERS
# workers (default: the most clients of a cell, at most 64: each runs one
# request at a time, as one SQL backend per client does); HTTP_AUTH=
# anonymous (default: http_anonymous_role postgres) or password (a LOGIN
# SUPERUSER role with a random password, so Basic auth is on the path).
#   TRANSPORT=both SHARDS="4 8 16 32" CLIENTS="8 16 32 64" BATCHES=100 \
#     REQUESTS=40 RETRY_CELLS="16:32:100:client" \
#     OUT=bench/loadgen/results/rejection-http bench/rejection_experiment.sh
#
# Outputs (OUT, default bench/loadgen/results/rejection): cells.csv and
# retries.csv (one se-loadgen row per cell), summary.md (tables), and the
# plots rejection-requests.png, rejection-docs.png, rejection-throughput.png.
# Over HTTP: cells-http.csv, retries-http.csv, summary-http.md; with both
# also http-vs-sql.md (per cell, HTTP / SQL) and rejection-http.png.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
PORT=${PORT:-5494}
PGDIR=${PGDIR:-/var/tmp/se_rejection_experiment}
OUT=${OUT:-$BENCH/loadgen/results/rejection}
CORPUS=${CORPUS:-$BENCH/data/contents.ndjson}
# another corpus: CORPUS=bench/data/debian.ndjson INDEX_BODY=bench/lib/debian_index.json
INDEX_BODY=${INDEX_BODY:-$BENCH/contents_corpus.json}
QUEUE=${QUEUE:-200}
REQUESTS=${REQUESTS:-200}
SHARDS=${SHARDS:-"2 4 8 16 32"}
CLIENTS=${CLIENTS:-"8 16 24 32 48 64"}
BATCHES=${BATCHES:-"100 200"}
# shards:clients:batch:mode   (mode client = resend 429 items until indexed; server = max_retries 10);
# RETRY_CELLS= (set and empty) skips the retry pass
RETRY_CELLS=${RETRY_CELLS-"8:32:100:client 16:24:200:client 32:48:100:client 32:64:200:client 16:24:200:server 32:64:200:server"}
RETRY_REQUESTS=${RETRY_REQUESTS:-50}
TRANSPORT=${TRANSPORT:-sql}
HTTP_PORT=${HTTP_PORT:-9294}
HTTP_AUTH=${HTTP_AUTH:-anonymous}
LOADGEN=$BENCH/loadgen/se-loadgen
DSN="host=/tmp port=$PORT user=postgres dbname=postgres"
case $TRANSPORT in
  sql) TRANSPORTS=sql ;;
  http) TRANSPORTS=http ;;
  both) TRANSPORTS="sql http" ;;
  *) echo "$0: TRANSPORT is sql, http or both" >&2; exit 1 ;;
esac
case $HTTP_AUTH in anonymous|password) ;; *) echo "$0: HTTP_AUTH is anonymous or password" >&2; exit 1 ;; esac
if [ -n "${NODES:-}" ] && [ "$TRANSPORT" != sql ]; then
  echo "$0: the cluster cells (NODES) run over SQL only" >&2
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  echo "$0: run as root (PostgreSQL is started as postgres)" >&2
  exit 1
fi
command -v gnuplot >/dev/null || {
  apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null; }
[ -f /usr/include/postgresql/libpq-fe.h ] && [ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || {
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpq-dev libcurl4-openssl-dev >/dev/null; }
make -s -C "$BENCH/loadgen" >/dev/null
[ -s "$CORPUS" ] || "$BENCH/contents_corpus.sh" "$CORPUS"

psql_() { psql -X -q -At -h /tmp -p "$PORT" -U postgres -d postgres "$@"; }

if [ -n "${NODES:-}" ]; then
  REPLICAS=${REPLICAS:-1}
  cells_batches=$BATCHES
  source "$BENCH/lib/common.sh"   # server_start, sql, as_pg for lib/cluster.sh
  BATCHES=$cells_batches
  CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/se_rejection_cluster}
  ETCD_BASE=${ETCD_BASE:-27190}
  PG_BASE=${PG_BASE:-6911}
  source "$BENCH/lib/cluster.sh"
  stop_cluster() {
    local d
    for d in "$CLUSTER_DIR"/n* "$CLUSTER_DIR"/c; do
      [ -d "$d" ] && "$REPO/test/pg_instance.sh" stop "$d"
    done
    etcd_stop
    sleep 1
    rm -rf "$CLUSTER_DIR"
  }
  trap stop_cluster EXIT
  mkdir -p "$OUT"
  conf=("shared_buffers = '256MB'" "max_connections = 300" "search_engine.write_queue_size = $QUEUE")
  for nodes in $NODES; do
    [ -d "$CLUSTER_DIR" ] && stop_cluster
    etcd_start
    for i in $(seq 1 "$nodes"); do node_start "n$i" "$i" master,data "${conf[@]}"; done
    node_start c $((nodes + 1)) '' "${conf[@]}"
    PORT=$((PG_BASE + nodes + 1))
    cluster_wait "$PORT" $((nodes + 1))
    DSN="host=/tmp port=$PORT user=postgres dbname=postgres"
    threads=$(PORT=$((PG_BASE + 1)) sqlv -c "SHOW search_engine.write_threads")
    copies=$(( 1 + (REPLICAS < nodes - 1 ? REPLICAS : nodes - 1) ))
    csv="$OUT/cells-nodes$nodes.csv"
    rm -f "$csv"
    echo "$nodes data node(s), $REPLICAS replica(s) asked, $copies copies assigned per shard, write_queue_size $QUEUE, $threads write threads per node" >&2
    for batch in $BATCHES; do
      for shards in $SHARDS; do
        for clients in $CLIENTS; do
          rc=0
          "$LOADGEN" ingest -q -d "$DSN" --corpus "$CORPUS" --index-body "$INDEX_BODY" \
            --index rejection --shards "$shards" --replicas "$REPLICAS" --clients "$clients" --batch "$batch" \
            --requests-per-client "$REQUESTS" --csv "$csv" --label "nodes$nodes" || rc=$?
          IFS=, read -r -a f <<<"$(tail -n 1 "$csv")"
          printf '  %2d shards x %2d clients x %d copies / %d nodes = %5d per node, batch %3d: docs rejected %5.1f%%, requests ok %5.1f%%, %6.0f docs/s%s\n' \
            "$shards" "$clients" "$copies" "$nodes" "$((shards * clients * copies / nodes))" "$batch" \
            "$(awk -v x="${f[24]}" 'BEGIN{print 100*x}')" "$(awk -v x="${f[17]}" 'BEGIN{print 100*x}')" "${f[9]}" \
            "$([ "$rc" = 0 ] && echo "" || echo "  VERIFY FAILED (rc $rc)")" >&2
        done
      done
    done
    sqlv -c "SELECT (search_engine.request('GET', '/_cat/shards/rejection?h=shard,prirep,state,node')).body" > "$OUT/shards-nodes$nodes.txt" || true
    sqlv -c "SELECT (search_engine.request('GET', '/_nodes/stats/thread_pool')).body" > "$OUT/nodes-stats-nodes$nodes.json" || true
    echo "server log PANIC/FATAL/TRAP lines: $(cat "$CLUSTER_DIR"/*/server.log 2>/dev/null | grep -cE 'PANIC|FATAL|TRAP' || true)" >&2
    # x: concurrency per node; docs rejected %, requests fully successful %, docs/s, shards, clients, batch
    awk -F, -v c="$copies" -v n="$nodes" 'NR > 1 { print $6 * c / n, 100 * $25, 100 * $18, $10, $5, $3, $4 }' \
      "$csv" | sort -n > "$OUT/nodes$nodes.dat"
  done
  cat > "$OUT/rejection-replicas.gp" <<EOF
set terminal pngcairo size 1400,600 font 'Sans,10' noenhanced
set output '$OUT/rejection-replicas.png'
set multiplot layout 1,2 title "Bulk rejections with number_of_replicas $REPLICAS vs client-shard concurrency per node = shards x clients x assigned copies / data nodes\nwrite_queue_size $QUEUE per node, batch $BATCHES, $REQUESTS requests per client, through a coordinating-only node"
set logscale x 2
set xlabel 'concurrency per node (log2)'
set grid
set key top left
set arrow 1 from $QUEUE, graph 0 to $QUEUE, graph 1 nohead dt 2 lc rgb 'gray40'
colors = "#264653 #e76f51 #2a9d8f"
nodes = "$NODES"
set title '% of the documents sent rejected (429)'
set ylabel '% of documents'
set yrange [-2:102]
plot for [i=1:words(nodes)] sprintf('$OUT/nodes%s.dat', word(nodes, i)) using 1:2 with linespoints pt 7 lw 2 lc rgb word(colors, i) \
  title sprintf('%s data node(s)%s', word(nodes, i), word(nodes, i) eq "1" ? " (replica unassigned)" : "")
set title 'bulk requests fully successful'
set ylabel '% of requests'
set key bottom left
plot for [i=1:words(nodes)] sprintf('$OUT/nodes%s.dat', word(nodes, i)) using 1:3 with linespoints pt 7 lw 2 lc rgb word(colors, i) \
  title sprintf('%s data node(s)', word(nodes, i))
unset multiplot
EOF
  gnuplot "$OUT/rejection-replicas.gp"
  echo "results: $OUT/cells-nodes*.csv, $OUT/rejection-replicas.png" >&2
  exit 0
fi
stop_server() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }

if pg_isready -q -h /tmp -p "$PORT" && [ ! -f "$PGDIR/postmaster.pid" ]; then
  echo "$0: port $PORT is taken by another server; choose another with PORT=..." >&2
  exit 1
fi
[ -d "$PGDIR" ] && stop_server
http_conf=()
if [ "$TRANSPORT" != sql ]; then
  max_clients=$(tr ' ' '\n' <<<"$CLIENTS $(for c in $RETRY_CELLS; do cut -d: -f2 <<<"$c"; done)" | sort -n | tail -n 1)
  HTTP_WORKERS=${HTTP_WORKERS:-$(( max_clients < 64 ? max_clients : 64 ))}
  http_conf=("search_engine.http_port = $HTTP_PORT" "search_engine.http_listen_addresses = '127.0.0.1'"
    "search_engine.http_workers = $HTTP_WORKERS" "max_worker_processes = $((HTTP_WORKERS + 24))")
  [ "$HTTP_AUTH" = anonymous ] && http_conf+=("search_engine.http_anonymous_role = 'postgres'")
fi
"$REPO/test/pg_instance.sh" start "$PGDIR" "$PORT" "shared_buffers = '512MB'" \
  "max_connections = 120" "search_engine.write_queue_size = $QUEUE" "${http_conf[@]}"
trap stop_server EXIT
psql_ -c "CREATE EXTENSION IF NOT EXISTS search_engine"
threads=$(psql_ -c "SHOW search_engine.write_threads")
http_args=()
if [ "$TRANSPORT" != sql ]; then
  URL=http://127.0.0.1:$HTTP_PORT
  http_args=(--http "$URL")
  if [ "$HTTP_AUTH" = password ]; then
    SE_LOADGEN_HTTP_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    export SE_LOADGEN_HTTP_PASSWORD
    psql_ -c "DROP ROLE IF EXISTS se_loadgen_http" -c "CREATE ROLE se_loadgen_http LOGIN SUPERUSER PASSWORD '$SE_LOADGEN_HTTP_PASSWORD'"
    http_args+=(--http-user se_loadgen_http)
  fi
  for _ in $(seq 1 100); do curl -s -o /dev/null "$URL/" && break; sleep 0.2; done
  echo "HTTP: $URL, $HTTP_WORKERS workers, auth $HTTP_AUTH" >&2
fi
# per transport: the CSV of a pass and se-loadgen's extra arguments
csv_of() { if [ "$2" = sql ]; then echo "$OUT/$1.csv"; else echo "$OUT/$1-http.csv"; fi; }
targs() { if [ "$1" = http ]; then echo "${http_args[@]}"; fi; }

mkdir -p "$OUT"
rm -f "$OUT"/cells*.csv "$OUT"/retries*.csv "$OUT"/batch*.dat "$OUT"/cmp-*.dat
ncells=$(( $(wc -w <<<"$SHARDS") * $(wc -w <<<"$CLIENTS") * $(wc -w <<<"$BATCHES") ))
start=$(date +%s)
i=0
echo "main pass: $ncells cells over $TRANSPORTS, $REQUESTS requests per client, write_queue_size $QUEUE, $threads write threads" >&2
for batch in $BATCHES; do
  for shards in $SHARDS; do
    for clients in $CLIENTS; do
      i=$((i + 1))
      # both: alternate which goes first, so neither always meets the other's leftovers
      order=$TRANSPORTS
      [ "$TRANSPORT" = both ] && [ $((i % 2)) = 0 ] && order="http sql"
      for t in $order; do
        t0=$(date +%s.%N)
        rc=0
        csv=$(csv_of cells "$t")
        # shellcheck disable=SC2046 # targs: zero or more words, none with spaces
        "$LOADGEN" ingest -q -d "$DSN" $(targs "$t") --corpus "$CORPUS" --index-body "$INDEX_BODY" \
          --index rejection --shards "$shards" --clients "$clients" --batch "$batch" \
          --requests-per-client "$REQUESTS" --csv "$csv" --label main || rc=$?
        row=$(tail -n 1 "$csv")
        IFS=, read -r -a f <<<"$row"
        printf '\r[%2d/%d] %-4s %3d shards x %2d clients = %4d, batch %3d: ok %5.1f%% partial %5.1f%% rejected %5.1f%%, %6.0f docs/s, %4.1f s%s\033[K' \
          "$i" "$ncells" "$t" "$shards" "$clients" "$((shards * clients))" "$batch" \
          "$(awk -v x="${f[17]}" 'BEGIN{print 100*x}')" "$(awk -v x="${f[18]}" 'BEGIN{print 100*x}')" \
          "$(awk -v x="${f[19]}" 'BEGIN{print 100*x}')" "${f[9]}" \
          "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" \
          "$([ "$rc" = 0 ] && echo "" || echo "  VERIFY FAILED (rc $rc)")" >&2
        [ "$rc" = 0 ] || echo >&2
      done
    done
  done
done
echo >&2
main_seconds=$(( $(date +%s) - start ))

echo "retry pass: $RETRY_CELLS, $RETRY_REQUESTS requests per client" >&2
for cell in $RETRY_CELLS; do
  IFS=: read -r shards clients batch mode <<<"$cell"
  if [ "$mode" = server ]; then retry=(--retry server --retries 10); else retry=(--retry client --retries -1); fi
  for t in $TRANSPORTS; do
    if [ "$t" = http ] && [ "$mode" = server ]; then
      echo "  $shards shards x $clients clients, batch $batch, server retries: not over HTTP (max_retries is a bulk() argument)" >&2
      continue
    fi
    rc=0
    csv=$(csv_of retries "$t")
    # shellcheck disable=SC2046
    "$LOADGEN" ingest -q -d "$DSN" $(targs "$t") --corpus "$CORPUS" --index-body "$INDEX_BODY" \
      --index rejection --shards "$shards" --clients "$clients" --batch "$batch" \
      --requests-per-client "$RETRY_REQUESTS" "${retry[@]}" --csv "$csv" --label "retry-$mode" || rc=$?
    IFS=, read -r -a f <<<"$(tail -n 1 "$csv")"
    echo "  $t: $shards shards x $clients clients, batch $batch, $mode retries: sent ${f[20]}, indexed ${f[22]}, count ${f[33]}, verified ${f[34]}, first-attempt 429 items ${f[23]}, ${f[9]} docs/s (rc $rc)" >&2
  done
done
psql_ -c "SELECT search_engine.delete_index(index) FROM search_engine.indices WHERE index = 'rejection'" >/dev/null
for t in $TRANSPORTS; do touch "$(csv_of retries "$t")"; done
total_seconds=$(( $(date +%s) - start ))
errors=$(grep -cE 'PANIC|FATAL|TRAP' "$PGDIR/server.log" || true)

# ---------- tables ----------
summarize() {   # cells.csv retries.csv > summary.md
awk -F, -v main_s="$main_seconds" -v total_s="$total_seconds" -v queue="$QUEUE" -v req="$REQUESTS" \
    -v threads="$threads" -v errors="$errors" -v batches="$BATCHES" -v shardss="$SHARDS" -v clientss="$CLIENTS" '
NR == FNR { if (FNR > 1) { key = $4 SUBSEP $5 SUBSEP $3; ok[key] = $18; pa[key] = $19; rj[key] = $20;
            ds[key] = $25; dps[key] = $10; ver[key] = $35;
            if ($35 != "true") bad++ } next }
FNR > 1 { rrow[++nr] = $0 }
END {
  printf "Main pass: write_queue_size %d, %d write threads, %d requests per client per cell, %d s; whole run %d s; server log PANIC/FATAL lines: %d; cells whose final count did not match: %d.\n\n", queue, threads, req, main_s, total_s, errors, bad + 0
  nb = split(batches, B, " "); ns = split(shardss, S, " "); nc = split(clientss, C, " ")
  for (b = 1; b <= nb; b++) {
    printf "Batch %d: share of bulk requests fully successful / partially rejected / fully rejected, %% (rows: shards; columns: clients; concurrency = product)\n\n", B[b]
    printf "| shards \\\\ clients |"; for (c = 1; c <= nc; c++) printf " %d |", C[c]; printf "\n|---|"; for (c = 1; c <= nc; c++) printf "---|"; printf "\n"
    for (s = 1; s <= ns; s++) {
      printf "| %d |", S[s]
      for (c = 1; c <= nc; c++) { k = B[b] SUBSEP S[s] SUBSEP C[c]; printf " %.0f / %.0f / %.0f |", 100 * ok[k], 100 * pa[k], 100 * rj[k] }
      printf "\n"
    }
    printf "\nBatch %d: documents rejected (429), %% of those sent; indexed docs/s\n\n", B[b]
    printf "| shards \\\\ clients |"; for (c = 1; c <= nc; c++) printf " %d |", C[c]; printf "\n|---|"; for (c = 1; c <= nc; c++) printf "---|"; printf "\n"
    for (s = 1; s <= ns; s++) {
      printf "| %d |", S[s]
      for (c = 1; c <= nc; c++) { k = B[b] SUBSEP S[s] SUBSEP C[c]; printf " %.1f%%, %.0f/s |", 100 * ds[k], dps[k] }
      printf "\n"
    }
    printf "\n"
  }
  printf "Retry pass (%d cells):\n\n| shards | clients | batch | retries | docs sent | 429 items on first attempts | resent items (requests) | rejected shard sub-requests (thread_pool) | indexed | final count | all indexed | docs/s |\n|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|\n", nr
  for (r = 1; r <= nr; r++) {
    split(rrow[r], f, ",")
    mode = f[7] == "client" ? "client, until indexed" : "server, max_retries " f[8]
    printf "| %d | %d | %d | %s | %d | %d | %d (%d) | %d | %d | %d | %s | %.0f |\n", f[5], f[3], f[4], mode, f[21], f[24], f[29], f[28], f[36], f[23], f[34], (f[22] == f[21] && f[27] == 0 && f[35] == "true") ? "yes" : "NO", f[10]
  }
}' "$1" "$2"
}
for t in $TRANSPORTS; do
  if [ "$t" = sql ]; then summarize "$OUT/cells.csv" "$OUT/retries.csv" > "$OUT/summary.md"
  else summarize "$OUT/cells-http.csv" "$OUT/retries-http.csv" > "$OUT/summary-http.md"; fi
done

# ---------- plots ----------
if [[ " $TRANSPORTS " == *" sql "* ]]; then
for batch in $BATCHES; do
  awk -F, -v b="$batch" 'NR > 1 && $4 == b { print $6, 100 * $18, 100 * $19, 100 * $20, 100 * $25, 100 * $26, $5, $3, $10 }' \
    "$OUT/cells.csv" | sort -n > "$OUT/batch$batch.dat"
  for shards in $SHARDS; do
    awk -v s="$shards" '$7 == s { print $8, $9 }' "$OUT/batch$batch.dat" | sort -n > "$OUT/batch$batch-shards$shards.dat"
  done
done
nb=$(wc -w <<<"$BATCHES")
cat > "$OUT/rejection-requests.gp" <<EOF
set terminal pngcairo size $((700 * nb)),600 font 'Sans,10' noenhanced
set output '$OUT/rejection-requests.png'
set multiplot layout 1,$nb title "Bulk requests by outcome vs client-shard concurrency (one node, write_queue_size $QUEUE, $threads write threads, $REQUESTS requests per client)"
set logscale x 2
set xlabel 'concurrency = shards x clients (log2)'
set ylabel '% of bulk requests'
set yrange [-2:102]
set grid
set key center left
set arrow 1 from $QUEUE, graph 0 to $QUEUE, graph 1 nohead dt 2 lc rgb 'gray40'
set label 1 'queue size' at $QUEUE, graph 0.96 right offset -0.5,0 tc rgb 'gray40'
do for [f in "$BATCHES"] {
  set title sprintf('batch of %s documents (points: cells; lines: mean at equal concurrency)', f)
  file = sprintf('$OUT/batch%s.dat', f)
  plot file using 1:2 with points pt 7 ps 0.8 lc rgb '#2a9d8f' notitle, \\
       file using 1:2 smooth unique with lines lw 2 lc rgb '#2a9d8f' title 'fully successful', \\
       file using 1:3 with points pt 5 ps 0.8 lc rgb '#e9c46a' notitle, \\
       file using 1:3 smooth unique with lines lw 2 lc rgb '#e9c46a' title 'partially rejected', \\
       file using 1:4 with points pt 9 ps 0.8 lc rgb '#e76f51' notitle, \\
       file using 1:4 smooth unique with lines lw 2 lc rgb '#e76f51' title 'fully rejected'
}
unset multiplot
EOF
cat > "$OUT/rejection-docs.gp" <<EOF
set terminal pngcairo size 1000,600 font 'Sans,10' noenhanced
set output '$OUT/rejection-docs.png'
set title "Share of a bulk request's documents rejected (429) vs client-shard concurrency (write_queue_size $QUEUE)"
set logscale x 2
set xlabel 'concurrency = shards x clients (log2)'
set ylabel '% of the documents of a request'
set yrange [-2:102]
set grid
set key top left
set arrow 1 from $QUEUE, graph 0 to $QUEUE, graph 1 nohead dt 2 lc rgb 'gray40'
colors = "#264653 #e76f51 #2a9d8f #e9c46a"
batches = "$BATCHES"
plot for [i=1:words(batches)] sprintf('$OUT/batch%s.dat', word(batches, i)) using 1:5 smooth unique \\
       with linespoints pt 7 lw 2 lc rgb word(colors, i) title sprintf('batch %s: mean over all requests', word(batches, i)), \\
     for [i=1:words(batches)] sprintf('$OUT/batch%s.dat', word(batches, i)) using 1:(\$3 > 0 ? \$6 : 1/0) \\
       with points pt 6 ps 1.2 lc rgb word(colors, i) title sprintf('batch %s: mean within partially rejected requests', word(batches, i))
EOF
cat > "$OUT/rejection-throughput.gp" <<EOF
set terminal pngcairo size $((700 * nb)),600 font 'Sans,10' noenhanced
set output '$OUT/rejection-throughput.png'
set multiplot layout 1,$nb title "Documents indexed per second (no retries; rejected documents are not counted) by shard count"
set xlabel 'concurrent clients'
set ylabel 'indexed documents/s'
set yrange [0:*]
set grid
set key top right
do for [f in "$BATCHES"] {
  set title sprintf('batch of %s documents', f)
  plot for [s in "$SHARDS"] sprintf('$OUT/batch%s-shards%s.dat', f, s) using 1:2 with linespoints pt 7 lw 2 title sprintf('%s shards', s)
}
unset multiplot
EOF
for p in requests docs throughput; do gnuplot "$OUT/rejection-$p.gp"; done
echo "results: $OUT/summary.md, $OUT/rejection-{requests,docs,throughput}.png (${total_seconds:-?} s)" >&2
fi

# ---------- over HTTP, on the axes of SQL ----------
[[ " $TRANSPORTS " == *" http "* ]] || exit 0
for t in $TRANSPORTS; do
  for batch in $BATCHES; do
    # concurrency, requests fully successful %, documents rejected %, indexed docs/s, p50 ms, shards, clients
    awk -F, -v b="$batch" 'NR > 1 && $4 == b { print $6, 100 * $18, 100 * $25, $10, $30, $5, $3 }' \
      "$(csv_of cells "$t")" | sort -n > "$OUT/cmp-$t-batch$batch.dat"
  done
done
if [ "$TRANSPORT" = both ]; then
  awk -F, '
  FNR == 1 { file++; next }
  { k = $4 SUBSEP $5 SUBSEP $3; if (file == 1) { sql[k] = $0; order[++n] = k } else http[k] = $0 }
  function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
  END {
    printf "Per cell, the same server and run, SQL (search_engine.bulk() over libpq) and HTTP (POST _bulk, keep-alive) one after the other (the first alternates), no retries.\n\n"
    printf "| batch | shards | clients | concurrency | requests fully ok %%, SQL / HTTP | docs rejected %%, SQL / HTTP | docs/s SQL | docs/s HTTP | HTTP / SQL | p50 ms SQL | p50 ms HTTP | HTTP / SQL | counts verified |\n"
    printf "|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|\n"
    for (i = 1; i <= n; i++) {
      k = order[i]; if (!(k in http)) continue
      split(sql[k], a, ","); split(http[k], h, ",")
      printf "| %d | %d | %d | %d | %.0f / %.0f | %.1f / %.1f | %.0f | %.0f | %s | %.1f | %.1f | %s | %s |\n", a[4], a[5], a[3], a[6],
        100 * a[18], 100 * h[18], 100 * a[25], 100 * h[25], a[10], h[10], r(h[10], a[10]), a[30], h[30], r(h[30], a[30]),
        (a[35] == "true" && h[35] == "true") ? "yes" : "NO"
    }
  }' "$OUT/cells.csv" "$OUT/cells-http.csv" > "$OUT/http-vs-sql.md"
fi
cat > "$OUT/rejection-http.gp" <<EOF
set terminal pngcairo size 1800,600 font 'Sans,10' noenhanced
set output '$OUT/rejection-http.png'
set multiplot layout 1,3 title "Bulk rejections over HTTP (POST _bulk, one keep-alive connection per client, $HTTP_WORKERS HTTP workers) and over SQL (search_engine.bulk()), same server\nwrite_queue_size $QUEUE, $threads write threads, $REQUESTS requests per client, no retries; points: cells, lines: mean at equal concurrency"
set logscale x 2
set xlabel 'concurrency = shards x clients (log2)'
set grid
set arrow 1 from $QUEUE, graph 0 to $QUEUE, graph 1 nohead dt 2 lc rgb 'gray40'
transports = "$TRANSPORTS"
batches = "$BATCHES"
file(t, b) = sprintf('$OUT/cmp-%s-batch%s.dat', t, b)
col(t) = t eq "sql" ? "#264653" : "#e76f51"
dash(b) = b eq word(batches, 1) ? 1 : 2
set yrange [-2:102]
set key bottom left
set title 'bulk requests fully successful'
set ylabel '% of requests'
plot for [t in transports] for [b in batches] file(t, b) using 1:2 with points pt 7 ps 0.7 lc rgb col(t) notitle, \\
     for [t in transports] for [b in batches] file(t, b) using 1:2 smooth unique with lines lw 2 dt dash(b) lc rgb col(t) title sprintf('%s, batch %s', t, b)
set key top left
set title 'documents rejected (429)'
set ylabel '% of the documents sent'
plot for [t in transports] for [b in batches] file(t, b) using 1:3 with points pt 7 ps 0.7 lc rgb col(t) notitle, \\
     for [t in transports] for [b in batches] file(t, b) using 1:3 smooth unique with lines lw 2 dt dash(b) lc rgb col(t) title sprintf('%s, batch %s', t, b)
set yrange [0:*]
set key top right
set title 'documents indexed per second'
set ylabel 'acknowledged docs/s'
plot for [t in transports] for [b in batches] file(t, b) using 1:4 with points pt 7 ps 0.7 lc rgb col(t) notitle, \\
     for [t in transports] for [b in batches] file(t, b) using 1:4 smooth unique with lines lw 2 dt dash(b) lc rgb col(t) title sprintf('%s, batch %s', t, b)
unset multiplot
EOF
gnuplot "$OUT/rejection-http.gp"
echo "results: $OUT/summary-http.md$([ "$TRANSPORT" = both ] && echo ", $OUT/http-vs-sql.md"), $OUT/rejection-http.png" >&2
