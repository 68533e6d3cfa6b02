#!/usr/bin/env bash
# Sliced update-by-query benchmark: search_engine.update_by_query with
# slices = 1, auto (= the 2 shards) and 500 on a ~1M-document index, against
# PostgreSQL's own UPDATE ... jsonb_set on a table holding the same documents
# (GIN full-text index + a btree expression index for the WHERE).
# Run as root; appends (or replaces) its section of bench/RESULTS.md.
#   bench/ubq_bench.sh   (env: COPIES=16 RUNS=3 REPEAT_RUNS=3 FIELD=section
#                         VALUE=doc SLICES="1 auto 500" PORT=5481 PGDIR=...
#                         PRIVDIR=... GATE_MAX=60 GATE_CORES=0.3
#                         SKIP_BUILD=1 to reuse the private install in PRIVDIR)
#
# The committed tree (git archive HEAD) is built into a private copy of the
# PostgreSQL installation (bench/lib/private_install.sh), so that others
# rebuilding the system-wide search_engine.so do not change what is measured.
#
# One fresh server.  The corpus (bench/data/debian.jsonl) is loaded COPIES
# times with distinct _id (<package>_<version>_<arch>_c<copy>) and identical
# _source, into index `ubq` (bench/lib/debian_index.json: 2 shards,
# translog.durability request, default refresh_interval; plus bench_flag:
# long in the mapping so no run pays for a mapping update) and into table
# ubq_pg.  Every run updates the documents with FIELD = VALUE (a term query /
# an indexed WHERE), setting bench_flag to a value no earlier run used.
#   Phase 1 "first touch", RUNS rounds: each slices setting (order rotated
#   from round to round) on a freshly reloaded index, then the PostgreSQL
#   UPDATE (its table is not reloaded: VACUUM ANALYZE between runs).
#   Phase 2 "repeated job", REPEAT_RUNS rounds: each slices setting right
#   after an untimed run with the same slices (update-by-query rewrites the
#   documents in the order it visits them, so the layout a job meets depends
#   on which job wrote the documents last).
# Before each timed run: refresh + flush of the index, VACUUM ANALYZE of the
# table, CHECKPOINT, a wait until the server's processes are idle, and a
# wait (at most GATE_MAX s) until the rest of the machine is nearly idle.
# Timing is server-side: clock_timestamp() around the call in plpgsql
# (update_by_query waits for its task), and around UPDATE + COMMIT in a
# procedure for PostgreSQL; CPU time of every server process from /proc.
set -euo pipefail
PORT=${PORT:-5481}
PGDIR=${PGDIR:-/var/tmp/search_engine_ubq}
PRIVDIR=${PRIVDIR:-/var/tmp/search_engine_ubq_install}
COPIES=${COPIES:-16}
RUNS=${RUNS:-3}
REPEAT_RUNS=${REPEAT_RUNS:-3}
FIELD=${FIELD:-section}
VALUE=${VALUE:-doc}
SLICES=${SLICES:-"1 auto 500"}
source "$(dirname "$0")/lib/common.sh"
source "$BENCH/lib/private_install.sh"
lit() { printf "'%s'" "${1//\'/\'\'}"; }
FL=$(lit "$FIELD")
VL=$(lit "$VALUE")
need_root
OUT=$BENCH/out
RAW=$OUT/ubq_raw.tsv
mkdir -p "$OUT"
started=$(date +%s)

if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$PRIVDIR/root/usr/lib/postgresql/15/bin/postgres" ]; then
  export PATH=$PRIVDIR/root/usr/lib/postgresql/15/bin:$PATH
  PRIVATE_REV="$(cat "$PRIVDIR/rev" 2>/dev/null || echo unknown) (SKIP_BUILD)"
else
  echo "== building git archive HEAD into $PRIVDIR"
  private_install "$PRIVDIR" HEAD
  echo "$PRIVATE_REV" > "$PRIVDIR/rev"
fi
[ -s "$DATA/debian.jsonl" ] || "$BENCH/make_debian_corpus.sh" "$DATA"
CORPUS_DOCS=$(wc -l < "$DATA/debian.jsonl")

cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
SERVER_CONF=("shared_buffers = '2GB'" "maintenance_work_mem = '1GB'"
             "max_wal_size = '16GB'" "checkpoint_timeout = '30min'"
             "search_engine.write_threads = 2" "search_engine.task_threads = 2")
server_start "${SERVER_CONF[@]}"
postmaster=$(head -1 "$PGDIR/postmaster.pid")

rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }
: > "$RAW"
rec meta date 0 "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta nproc 0 "$(nproc)"
rec meta memory 0 "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
rec meta cpu 0 "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
rec meta kernel 0 "$(uname -sr)"
rec meta postgres 0 "$(sqlv -c 'SHOW server_version')"
rec meta commit 0 "$PRIVATE_REV"
rec meta pkglibdir 0 "$(pg_config --pkglibdir)"
rec meta corpus_docs 0 "$CORPUS_DOCS"
rec meta copies 0 "$COPIES"
rec meta runs 0 "$RUNS"
rec meta repeat_runs 0 "$REPEAT_RUNS"
rec meta field 0 "$FIELD"
rec meta value 0 "$VALUE"
rec meta slices 0 "$SLICES"
for g in search_engine.write_threads search_engine.task_threads search_engine.merge_threads \
         shared_buffers max_wal_size; do
  rec meta "$g" 0 "$(sqlv -c "SHOW $g")"
done
rec meta loadavg_start 0 "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------- helpers
# CPU ticks (utime + stime) of every process forked by our postmaster (for
# the idle waits; a run's own CPU comes from bench.ticks() in SQL), and the
# machine's busy ticks (all CPUs).
server_ticks() {
  local p t=0 f
  for p in $(pgrep -P "$postmaster"); do
    f=$(cut -d')' -f2- "/proc/$p/stat" 2>/dev/null) || continue
    set -- $f
    t=$(( t + ${12} + ${13} ))
  done
  echo "$t"
}
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
# Wait until our server's processes used < 0.03 CPU-s per second, twice in a
# row (background merges, refreshes and checkpoints done); at most 180 s.
wait_quiet() {
  local a b quiet=0 i
  a=$(server_ticks)
  for i in $(seq 1 180); do
    sleep 1
    b=$(server_ticks)
    if [ $(( b - a )) -lt 3 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    a=$b
    [ "$quiet" -ge 2 ] && return 0
  done
  echo "   (server not idle after 180 s)" >&2
}
# The CPUs are shared: before a run, wait (at most GATE_MAX s) until the
# other processes of the machine used less than GATE_CORES cores over 2 s.
# Prints the seconds waited.
GATE_MAX=${GATE_MAX:-60}
GATE_CORES=${GATE_CORES:-0.3}
wait_machine() {
  local t0 b0 s0 b1 s1 other
  t0=$(now)
  while :; do
    b0=$(machine_busy); s0=$(server_ticks)
    sleep 2
    b1=$(machine_busy); s1=$(server_ticks)
    other=$(awk -v b=$(( b1 - b0 )) -v s=$(( s1 - s0 )) 'BEGIN { printf "%.2f", (b - s) / 200 }')
    awk -v o="$other" -v g="$GATE_CORES" 'BEGIN { exit !(o < g) }' && break
    awk -v a="$t0" -v b="$(now)" -v m="$GATE_MAX" 'BEGIN { exit !(b - a >= m) }' && break
  done
  secs_since "$t0"
}
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
settle() {
  local t0
  t0=$(now)
  sql -c "SELECT search_engine.refresh('ubq')" -c "SELECT search_engine.flush('ubq')" >/dev/null
  sql -c "VACUUM ANALYZE ubq_pg" -c CHECKPOINT
  wait_quiet
  secs_since "$t0"
}

sql -v field="$FIELD" -v value="$VALUE" <<'SQL'
CREATE SCHEMA bench;
-- utime + stime (clock ticks) of every process of this server (the children
-- of our postmaster, found in /proc: write and merge workers have no
-- pg_stat_activity entry), summed by kind: task worker, write worker, merge
-- worker, this backend, other
CREATE FUNCTION bench.ticks() RETURNS jsonb LANGUAGE sql AS $$
  WITH me AS (
    SELECT split_part(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ', 2) AS ppid),
  st AS (
    SELECT d::int AS pid,
           string_to_array(split_part(pg_read_file('/proc/' || d || '/stat', 0, 4096, true), ') ', 2), ' ') AS f,
           encode(pg_read_binary_file('/proc/' || d || '/cmdline', 0, 256, true), 'escape') AS cmd
    FROM pg_ls_dir('/proc') AS d WHERE d ~ '^[0-9]+$')
  SELECT jsonb_object_agg(kind, t) FROM (
    SELECT CASE WHEN pid = pg_backend_pid() THEN 'backend'
                WHEN cmd LIKE '%search_engine task worker%' THEN 'task'
                WHEN cmd LIKE '%search_engine write worker%' THEN 'write'
                WHEN cmd LIKE '%search_engine merge worker%' THEN 'merge'
                ELSE 'other' END AS kind,
           sum(f[12]::bigint + f[13]::bigint) AS t
    FROM st, me WHERE f[2] = me.ppid GROUP BY 1) x $$;
CREATE FUNCTION bench.ticks_delta(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_object_agg(k, coalesce((b->>k)::bigint, 0) - coalesce((a->>k)::bigint, 0))
  FROM (SELECT jsonb_object_keys(a || b) AS k) s $$;
CREATE TABLE bench.conf (field text, value text);
INSERT INTO bench.conf VALUES (:'field', :'value');
-- search_engine: one update_by_query, waited for
CREATE FUNCTION bench.ubq(slices text, v int, OUT secs float8, OUT ticks jsonb, OUT resp jsonb)
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz; c0 jsonb; f text; val text; body jsonb;
BEGIN
  SELECT field, value INTO f, val FROM bench.conf;
  body := jsonb_build_object(
    'query', jsonb_build_object('term', jsonb_build_object(f, val)),
    'script', jsonb_build_object('source', 'ctx._source.bench_flag = params.v',
                                 'params', jsonb_build_object('v', v)));
  c0 := bench.ticks();
  t0 := clock_timestamp();
  resp := search_engine.update_by_query('ubq', body, slices => slices);
  secs := extract(epoch FROM clock_timestamp() - t0);
  ticks := bench.ticks_delta(c0, bench.ticks());
END $$;
-- PostgreSQL: the UPDATE and its commit (WAL flush)
CREATE PROCEDURE bench.pg_update(v int, INOUT secs float8 DEFAULT NULL,
                                 INOUT n bigint DEFAULT NULL, INOUT ticks jsonb DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz; c0 jsonb; f text; val text;
BEGIN
  SELECT field, value INTO f, val FROM bench.conf;
  c0 := bench.ticks();
  t0 := clock_timestamp();
  EXECUTE format('UPDATE ubq_pg SET doc = jsonb_set(doc, ''{bench_flag}'', to_jsonb($1)) WHERE doc->>%L = %L', f, val)
    USING v;
  GET DIAGNOSTICS n = ROW_COUNT;
  COMMIT;
  secs := extract(epoch FROM clock_timestamp() - t0);
  ticks := bench.ticks_delta(c0, bench.ticks());
END $$;
-- the corpus once, as text lines (search_engine's _source) and jsonb
CREATE TABLE bench.corpus (ord serial PRIMARY KEY, src text NOT NULL, doc jsonb, id text);
SQL
sql -c "\\copy bench.corpus (src) FROM '$DATA/debian.jsonl' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
sql -c "UPDATE bench.corpus SET doc = src::jsonb" \
    -c "UPDATE bench.corpus SET id = concat_ws('_', doc->>'package', doc->>'version', doc->>'architecture')" \
    -c "VACUUM ANALYZE bench.corpus"
n=$(sqlv -c "SELECT count(DISTINCT id) FROM bench.corpus")
[ "$n" = "$CORPUS_DOCS" ] || { echo "corpus ids not unique: $n of $CORPUS_DOCS" >&2; exit 1; }

# ---------------------------------------------------------------- load
# (Re)create index ubq and bulk-load COPIES copies of the corpus into it,
# 1000 documents per bulk (durable), then refresh; prints the seconds.
se_load() {
  local t0
  t0=$(now)
  sql -c "SELECT search_engine.delete_index('ubq') FROM search_engine.indices WHERE index = 'ubq'" \
      -c "SELECT search_engine.create_index('ubq', jsonb_set('$(cat "$BENCH/lib/debian_index.json")'::jsonb,
            '{mappings,properties,bench_flag}', '{\"type\": \"long\"}'))" >/dev/null
  sql -v copies="$COPIES" >/dev/null <<'SQL'
SET bench.copies = :copies;
DO $$
DECLARE
  r jsonb; body text; nb int;
BEGIN
  SELECT (max(ord) + 999) / 1000 INTO nb FROM bench.corpus;
  FOR c IN 0 .. current_setting('bench.copies')::int - 1 LOOP
    FOR b IN 0 .. nb - 1 LOOP
      SELECT string_agg(format('{"index":{"_id":%s}}', to_json(id || '_c' || c)) || E'\n' || src,
                        E'\n' ORDER BY ord) || E'\n'
        INTO body FROM bench.corpus WHERE ord > b * 1000 AND ord <= (b + 1) * 1000;
      r := search_engine.bulk(body, 'ubq', max_retries => 10);
      IF (r->>'errors')::boolean THEN
        RAISE EXCEPTION 'bulk errors: %', left(r::text, 500);
      END IF;
    END LOOP;
  END LOOP;
END $$;
SQL
  sql -c "SELECT search_engine.refresh('ubq')" >/dev/null
  local n
  n=$(se_docs_count ubq)
  [ "$n" = $(( COPIES * CORPUS_DOCS )) ] || { echo "ubq holds $n documents after the load" >&2; return 1; }
  secs_since "$t0"
}
echo "== loading $COPIES copies of $CORPUS_DOCS documents"
t=$(se_load)
rec load_s se 0 "$t"
t0=$(now)
sql -v copies="$COPIES" <<'SQL'
CREATE TABLE ubq_pg (
  id  text PRIMARY KEY,
  doc jsonb NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english',
        coalesce(doc->>'summary', '') || ' ' || coalesce(doc->>'description', ''))) STORED);
INSERT INTO ubq_pg (id, doc)
  SELECT id || '_c' || c, doc FROM generate_series(0, :copies - 1) AS c, bench.corpus ORDER BY c, ord;
CREATE INDEX ubq_pg_tsv ON ubq_pg USING gin (tsv);
SQL
sql -c "CREATE INDEX ubq_pg_field ON ubq_pg ((doc->>$FL))"
sql -c "VACUUM ANALYZE ubq_pg"
rec load_s pg 0 "$(secs_since "$t0")"

docs=$(se_docs_count ubq)
rows=$(sqlv -c "SELECT count(*) FROM ubq_pg")
want=$(( COPIES * CORPUS_DOCS ))
[ "$docs" = "$want" ] && [ "$rows" = "$want" ] ||
  { echo "loaded $docs documents / $rows rows, expected $want" >&2; exit 1; }
TERM_Q=$(sqlv -c "SELECT jsonb_build_object('query', jsonb_build_object('term', jsonb_build_object(field, value))) FROM bench.conf")
se_match=$(sqlv -c "SELECT search_engine.count('ubq', '$TERM_Q')")
pg_match=$(sqlv -c "SELECT count(*) FROM ubq_pg WHERE doc->>$FL = $VL")
one_copy=$(sqlv -c "SELECT count(*) FROM bench.corpus WHERE doc->>$FL = $VL")
[ "$se_match" = "$pg_match" ] && [ "$se_match" = $(( COPIES * one_copy )) ] ||
  { echo "matches differ: search_engine $se_match, PostgreSQL $pg_match, $COPIES x $one_copy" >&2; exit 1; }
rec meta docs 0 "$docs"
rec meta matches 0 "$se_match"
rec meta matches_one_copy 0 "$one_copy"
rec meta plan 0 "$(sqlv -c "EXPLAIN (COSTS OFF) UPDATE ubq_pg SET doc = jsonb_set(doc, '{bench_flag}', to_jsonb(1)) WHERE doc->>$FL = $VL" | sed 's/^ *//; s/ *$//' | paste -sd';' | sed 's/;/; /g')"
rec meta avg_src_bytes 0 "$(sqlv -c "SELECT round(avg(length(src))) FROM bench.corpus WHERE doc->>$FL = $VL")"
rec meta avg_src_bytes_all 0 "$(sqlv -c "SELECT round(avg(length(src))) FROM bench.corpus")"
rec size se loaded "$(sqlv -c "SELECT \"store.size\" FROM search_engine.indices WHERE index = 'ubq'")"
rec size pg loaded "$(sqlv -c "SELECT pg_total_relation_size('ubq_pg')")"
echo "   $docs documents; $FIELD = $VALUE matches $se_match ($one_copy per copy)"

# ---------------------------------------------------------------- runs
# One timed run: run_one KEY ROUND SLICES|pg V (V: the new bench_flag value)
tick() { jq -r --arg k "$2" '.[$k] // 0' <<<"$1"; }
run_one() {
  local key=$1 run=$2 s=$3 v=$4 segs deleted waited load b0 b1 secs ticks updated
  local conflicts=0 failures=0 batches= smin= smax= sempty= server=0 machine t k st
  segs=$(sqlv -c "SELECT count(*) FROM search_engine.segments WHERE index = 'ubq'")
  deleted=$(sqlv -c "SELECT \"docs.deleted\" FROM search_engine.indices WHERE index = 'ubq'")
  waited=$(wait_machine)
  load=$(cut -d' ' -f1 /proc/loadavg)
  b0=$(machine_busy)
  if [ "$s" = pg ]; then
    IFS='|' read -r secs ticks updated < <(sqlv -c "CALL bench.pg_update($v)" |
                                           awk -F'|' '{ print $1 "|" $3 "|" $2 }')
  else
    IFS='|' read -r secs ticks updated conflicts failures batches smin smax sempty < <(
      sqlv -c "SELECT secs, ticks, resp->>'updated', resp->>'version_conflicts',
                      jsonb_array_length(resp->'failures'), resp->>'batches',
                      (SELECT min((x->>'updated')::int) FROM jsonb_array_elements(resp->'slices') x),
                      (SELECT max((x->>'updated')::int) FROM jsonb_array_elements(resp->'slices') x),
                      (SELECT count(*) FILTER (WHERE (x->>'updated')::int = 0)
                         FROM jsonb_array_elements(resp->'slices') x)
               FROM bench.ubq('$s', $v)")
  fi
  b1=$(machine_busy)
  if [ "$updated" != "$se_match" ] || [ "$conflicts" != 0 ] || [ "$failures" != 0 ]; then
    echo "round $run $key: updated $updated of $se_match, $conflicts conflicts, $failures failures" >&2
    exit 1
  fi
  for k in backend task write merge other; do
    t=$(tick "$ticks" "$k"); server=$(( server + t ))
    rec "cpu_$k" "$key" "$run" "$(awk -v t="$t" 'BEGIN { printf "%.2f", t / 100 }')"
  done
  machine=$(( b1 - b0 ))
  order=$((order + 1))
  rec "secs" "$key" "$run" "$secs"
  rec "docs_per_s" "$key" "$run" "$(awk -v n="$updated" -v t="$secs" 'BEGIN { printf "%.1f", n / t }')"
  rec "server_cpu_s" "$key" "$run" "$(awk -v t="$server" 'BEGIN { printf "%.2f", t / 100 }')"
  rec "machine_cpu_s" "$key" "$run" "$(awk -v t="$machine" 'BEGIN { printf "%.2f", t / 100 }')"
  rec "loadavg1" "$key" "$run" "$load"
  rec "gate_wait_s" "$key" "$run" "$waited"
  rec "order" "$key" "$run" "$order"
  if [ "$s" != pg ]; then
    rec "batches" "$key" "$run" "$batches"
    rec "segments_before" "$key" "$run" "$segs"
    rec "deleted_before" "$key" "$run" "$deleted"
    [ -n "$smin" ] && { rec "slice_updated_min" "$key" "$run" "$smin"
                        rec "slice_updated_max" "$key" "$run" "$smax"
                        rec "slices_empty" "$key" "$run" "$sempty"; }
  fi
  st=$(settle)
  rec "settle_s" "$key" "$run" "$st"
  printf '   round %d %-18s %7.3f s %7.0f docs/s  server CPU %5.2f s (task %s, write %s, merge %s)  others %4.2f cores  (waited %s s)\n' \
    "$run" "$key" "$secs" "$(awk -v n="$updated" -v t="$secs" 'BEGIN { print n / t }')" \
    "$(awk -v t="$server" 'BEGIN { print t / 100 }')" \
    "$(awk -v t="$(tick "$ticks" task)" 'BEGIN { print t / 100 }')" \
    "$(awk -v t="$(tick "$ticks" write)" 'BEGIN { print t / 100 }')" \
    "$(awk -v t="$(tick "$ticks" merge)" 'BEGIN { print t / 100 }')" \
    "$(awk -v m="$machine" -v t="$server" -v s="$secs" 'BEGIN { o = (m - t) / 100 / s; print o < 0 ? 0 : o }')" \
    "$waited"
}
# Untimed run (warm-up of the repeat phase).
run_untimed() {
  sqlv -c "SELECT resp->>'updated' FROM bench.ubq('$1', $2)" >/dev/null
  settle >/dev/null
}

read -r -a SL <<<"$SLICES"
v=0
order=0
fresh=1    # the index is as loaded: no update has touched it
echo "   settling: $(settle) s"
# Phase 1, first touch: every search_engine run on a freshly loaded index
# (the documents still where the bulk load put them); the PostgreSQL run
# closes each round (its table is not reloaded: VACUUMed between runs).
echo "== first touch: each search_engine run on a freshly loaded index"
for run in $(seq 1 "$RUNS"); do
  for i in "${!SL[@]}"; do
    s=${SL[$(( (i + run - 1) % ${#SL[@]} ))]}
    if [ "$fresh" = 0 ]; then
      t=$(se_load); rec reload_s "slices=$s" "$run" "$t"
      settle >/dev/null
    fi
    fresh=0
    v=$((v + 1)); run_one "slices=$s" "$run" "$s" "$v"
  done
  v=$((v + 1)); run_one pg "$run" pg "$v"
done
# Phase 2, repeated job: each timed run follows an untimed run of the same
# job (same slices), i.e. it rewrites documents that job wrote last time.
if [ "$REPEAT_RUNS" -gt 0 ]; then
  echo "== repeated job: each timed run right after an untimed run with the same slices"
  for run in $(seq 1 "$REPEAT_RUNS"); do
    for i in "${!SL[@]}"; do
      s=${SL[$(( (i + run - 1) % ${#SL[@]} ))]}
      v=$((v + 1)); run_untimed "$s" "$v"
      v=$((v + 1)); run_one "repeat:slices=$s" "$run" "$s" "$v"
    done
  done
fi
rec size se end "$(sqlv -c "SELECT \"store.size\" FROM search_engine.indices WHERE index = 'ubq'")"
rec size pg end "$(sqlv -c "SELECT pg_total_relation_size('ubq_pg')")"
rec meta loadavg_end 0 "$(cut -d' ' -f1-3 /proc/loadavg)"
rec meta elapsed 0 "$(( $(date +%s) - started ))"

python3 "$BENCH/lib/ubq_report.py" "$RAW" > "$OUT/ubq_section.md"
python3 "$BENCH/lib/ubq_report.py" --splice "${RESULTS:-$BENCH/RESULTS.md}" "$OUT/ubq_section.md"
cat "$OUT/ubq_section.md"
