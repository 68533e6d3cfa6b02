#!/usr/bin/env bash
# Probe for bench/ubq_bench.sh: where the time of a sliced update-by-query
# goes.  Loads the index only (no PostgreSQL table), then runs the sequence
# SEQ of slices settings, each after refresh + flush + an idle server, and
# samples the task and write workers (bench/lib/cpu_sampler.py): their CPU
# and how long 0, 1 or 2 of them were running at once.  Run as root, after
# bench/ubq_bench.sh has built its private install (or set PRIVDIR).
#   bench/lib/ubq_probe.sh   (env: SEQ="500 500 auto 500 auto 1" COPIES=16
#                             PORT=5483 PERF_RUN=n: perf record the task and
#                             write workers during run n)
set -euo pipefail
PORT=${PORT:-5483}
PGDIR=${PGDIR:-/var/tmp/search_engine_ubq_probe}
PRIVDIR=${PRIVDIR:-/var/tmp/search_engine_ubq_install}
COPIES=${COPIES:-16}
SEQ=${SEQ:-"500 500 auto 500 auto 1"}
FIELD=${FIELD:-section}
VALUE=${VALUE:-doc}
source "$(dirname "$0")/common.sh"
need_root
export PATH=$PRIVDIR/root/usr/lib/postgresql/15/bin:$PATH
[ -f "$(pg_config --pkglibdir)/search_engine.so" ] || { echo "no private install in $PRIVDIR" >&2; exit 1; }
echo "search_engine at $(cat "$PRIVDIR/rev" 2>/dev/null || echo '?'), $(pg_config --pkglibdir)"
cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "shared_buffers = '2GB'" "search_engine.write_threads = 2" "search_engine.task_threads = 2"
postmaster=$(head -1 "$PGDIR/postmaster.pid")
kids() {  # pids of our postmaster's children whose command line matches $1
  local p
  for p in $(pgrep -P "$postmaster"); do
    tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$1" && printf '%s,' "$p"
  done
  return 0
}
ticks() { local p t=0 f; for p in $(pgrep -P "$postmaster"); do
  f=$(cut -d')' -f2- "/proc/$p/stat" 2>/dev/null) || continue; set -- $f; t=$(( t + ${12} + ${13} )); done; echo "$t"; }
quiet() { local a b q=0; a=$(ticks); while [ $q -lt 2 ]; do sleep 1; b=$(ticks)
  if [ $((b - a)) -lt 3 ]; then q=$((q + 1)); else q=0; fi; a=$b; done; }

sql -c "CREATE TABLE corpus (ord serial PRIMARY KEY, src text, id text)"
sql -c "\\copy corpus (src) FROM '$DATA/debian.jsonl' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
sql -c "UPDATE corpus SET id = concat_ws('_', src::jsonb->>'package', src::jsonb->>'version', src::jsonb->>'architecture')"
sql -c "SELECT search_engine.create_index('ubq', jsonb_set('$(cat "$BENCH/lib/debian_index.json")'::jsonb,
          '{mappings,properties,bench_flag}', '{\"type\": \"long\"}'))" >/dev/null
t0=$(now)
sql -v copies="$COPIES" <<'SQL'
SET probe.copies = :copies;
DO $$
DECLARE r jsonb; body text; nb int;
BEGIN
  SELECT (max(ord) + 999) / 1000 INTO nb FROM corpus;
  FOR c IN 0 .. current_setting('probe.copies')::int - 1 LOOP
    FOR b IN 0 .. nb - 1 LOOP
      SELECT string_agg(format('{"index":{"_id":%s}}', to_json(id || '_c' || c)) || E'\n' || src,
                        E'\n' ORDER BY ord) || E'\n'
        INTO body FROM corpus WHERE ord > b * 1000 AND ord <= (b + 1) * 1000;
      r := search_engine.bulk(body, 'ubq', max_retries => 10);
      IF (r->>'errors')::boolean THEN RAISE EXCEPTION 'bulk errors'; END IF;
    END LOOP;
  END LOOP;
END $$;
SQL
sql -c "SELECT search_engine.refresh('ubq')" >/dev/null
echo "loaded $(se_docs_count ubq) documents in $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
task=$(kids 'task worker'); write=$(kids 'write worker'); merge=$(kids 'merge worker')
echo "task workers ${task%,}, write workers ${write%,}, merge worker ${merge%,}"
n=0
for s in $SEQ; do
  n=$((n + 1))
  sql -c "SELECT search_engine.refresh('ubq')" -c "SELECT search_engine.flush('ubq')" >/dev/null
  quiet
  stopf=$(mktemp -u /tmp/ubq_probe_stop.XXXXXX)
  python3 "$BENCH/lib/cpu_sampler.py" "$stopf" 20 "task=$task" "write=$write" "merge=$merge" > "$stopf.out" &
  sampler=$!
  perf=
  if [ "${PERF_RUN:-0}" = "$n" ]; then
    perf record -q -g -o "$BENCH/out/ubq_probe_run$n.perf" -p "${task%,},${write%,}" 2>/dev/null &
    perf=$!
    sleep 0.5
  fi
  r=$(sqlv -c "SELECT format('%s s, took %s ms, updated %s, batches %s',
                 round(extract(epoch FROM clock_timestamp() - t0)::numeric, 3), r->>'took', r->>'updated', r->>'batches')
               FROM (SELECT clock_timestamp() AS t0) a,
                    LATERAL (SELECT search_engine.update_by_query('ubq',
                      jsonb_build_object('query', jsonb_build_object('term', jsonb_build_object('$FIELD', '$VALUE')),
                                         'script', jsonb_build_object('source', 'ctx._source.bench_flag = params.v',
                                                                      'params', jsonb_build_object('v', $n))),
                      slices => '$s') AS r) b")
  [ -n "$perf" ] && { kill -INT "$perf"; wait "$perf" || true; }
  touch "$stopf"; wait "$sampler"
  sql -c "SELECT search_engine.refresh('ubq')" >/dev/null
  check=$(sqlv -c "SELECT format('docs.count %s, bench_flag = $n: %s, $FIELD = $VALUE: %s',
                     (SELECT \"docs.count\" FROM search_engine.indices WHERE index = 'ubq'),
                     search_engine.count('ubq', '{\"query\": {\"term\": {\"bench_flag\": $n}}}'),
                     search_engine.count('ubq', '{\"query\": {\"term\": {\"$FIELD\": \"$VALUE\"}}}'))")
  echo "== run $n slices=$s: $r ($check)"
  sed 's/^/   /' "$stopf.out"
  rm -f "$stopf" "$stopf.out"
done
