#!/usr/bin/env bash
# Foreign data wrapper benchmark (src/fdw): what the FDW costs over the SQL
# functions it is an alternative to, on the Debian packages corpus.
#   (1) top-10 full-text query through the foreign table
#         SELECT _index, _id, _score, _source FROM debian WHERE description @@@ '...'
#           ORDER BY _score DESC LIMIT 10
#       against search_engine.search_hits('debian', '{"query": ...}') (which
#       returns the same columns), both wrapped in jsonb_agg; four queries;
#       server-side latency (plpgsql, clock_timestamp around each EXECUTE, so
#       parsing and planning count), WARMUP then REPS runs, median and p95.
#       The two forms are checked to return the same ids and scores.
#   (2) loading the corpus: INSERT INTO <foreign table> SELECT * FROM a typed
#       table holding it (one statement; the writes go out through the bulk
#       path at COMMIT, then a refresh) against search_engine.bulk() of the
#       same documents in 64 batches of 1000 + the final refresh (as
#       bench/foundation_bench.sh loads); also INSERT of (_id, _source jsonb)
#       rows, the cheapest conversion.
# Run as root.  Builds the working tree (tracked and untracked files, the
# FDW being uncommitted work) into a private copy of the PostgreSQL
# installation, so others rebuilding the system-wide search_engine.so do not
# change what is measured; starts one fresh server; writes
# bench/out/fdw_raw.tsv and bench/out/fdw_section.md and splices the section
# into bench/RESULTS.md (between the fdw_bench markers).
#   bench/fdw_bench.sh   (env: RUNS=3 REPS=500 WARMUP=50 PORT=5483
#                         PGDIR=... PRIVDIR=... SKIP_BUILD=1 RESULTS=...)
set -euo pipefail
PORT=${PORT:-5483}
PGDIR=${PGDIR:-/var/tmp/search_engine_fdw_bench}
PRIVDIR=${PRIVDIR:-/var/tmp/search_engine_fdw_install}
RUNS=${RUNS:-3}
REPS=${REPS:-500}
WARMUP=${WARMUP:-50}
source "$(dirname "$0")/lib/common.sh"
need_root
OUT=$BENCH/out
RAW=$OUT/fdw_raw.tsv
mkdir -p "$OUT"
started=$(date +%s)

# ------------------------------------------------------- private install
pgver=15
root=$PRIVDIR/root
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$root/usr/lib/postgresql/$pgver/bin/postgres" ]; then
  REV="$(cat "$PRIVDIR/rev" 2>/dev/null || echo unknown) (SKIP_BUILD)"
else
  echo "== building the working tree into $PRIVDIR"
  rm -rf "$PRIVDIR"
  mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$PRIVDIR/src"
  cp -a "/usr/lib/postgresql/$pgver" "$root/usr/lib/postgresql/"
  cp -a "/usr/share/postgresql/$pgver" "$root/usr/share/postgresql/"
  rm -f "$root/usr/lib/postgresql/$pgver/lib/search_engine.so" \
        "$root/usr/share/postgresql/$pgver/extension/search_engine"*
  (cd "$REPO" && git ls-files -co --exclude-standard | grep -v '^bench/data/' |
     tar -cf - -T -) | tar -xf - -C "$PRIVDIR/src"
  make -C "$PRIVDIR/src" -s PG_CONFIG="/usr/lib/postgresql/$pgver/bin/pg_config" >/dev/null
  make -C "$PRIVDIR/src" -s install DESTDIR="$root" PG_CONFIG="/usr/lib/postgresql/$pgver/bin/pg_config" >/dev/null
  chmod -R a+rX "$PRIVDIR"
  REV="$(git -C "$REPO" rev-parse --short HEAD) + working tree"
  echo "$REV" > "$PRIVDIR/rev"
fi
export PATH=$root/usr/lib/postgresql/$pgver/bin:$PATH
case "$(pg_config --pkglibdir)" in
  "$root"/*) ;;
  *) echo "$0: pg_config --pkglibdir is $(pg_config --pkglibdir), not the private copy" >&2; exit 1 ;;
esac

corpus_ready
cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "shared_buffers = '1GB'" "max_wal_size = '8GB'"

rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }
: > "$RAW"
rec meta date 0 "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta nproc 0 "$(nproc)"
rec meta memory 0 "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
rec meta cpu 0 "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
rec meta kernel 0 "$(uname -sr)"
rec meta postgres 0 "$(sqlv -c 'SHOW server_version')"
rec meta commit 0 "$REV"
rec meta docs 0 "$CORPUS_DOCS"
rec meta runs 0 "$RUNS"
rec meta reps 0 "$REPS"
rec meta warmup 0 "$WARMUP"
rec meta write_threads 0 "$(sqlv -c 'SHOW search_engine.write_threads')"
rec meta loadavg_start 0 "$(cut -d' ' -f1-3 /proc/loadavg)"

# The corpus as rows: jsonb, and typed columns (prepared once, not timed).
cp "$DATA/debian.jsonl" "$PGDIR/debian.jsonl"
chown postgres "$PGDIR/debian.jsonl"
sql -v file="$PGDIR/debian.jsonl" <<'SQL'
CREATE SCHEMA bench;
CREATE TABLE bench.deb_json (doc jsonb);
COPY bench.deb_json FROM :'file' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02');
CREATE TABLE bench.deb_rows AS SELECT
  (doc->>'package') || '_' || (doc->>'version') || '_' || (doc->>'architecture') AS _id,
  doc->>'package' AS package, doc->>'version' AS version, doc->>'section' AS section,
  doc->>'priority' AS priority, doc->>'architecture' AS architecture, doc->>'maintainer' AS maintainer,
  (doc->>'installed_size')::bigint AS installed_size, (doc->>'size')::bigint AS size,
  ARRAY(SELECT jsonb_array_elements_text(doc->'depends')) AS depends,
  doc->>'homepage' AS homepage, doc->>'summary' AS summary, doc->>'description' AS description
  FROM bench.deb_json;
CREATE TABLE bench.deb_docs AS SELECT
  (doc->>'package') || '_' || (doc->>'version') || '_' || (doc->>'architecture') AS _id, doc
  FROM bench.deb_json;
VACUUM ANALYZE bench.deb_rows;
VACUUM ANALYZE bench.deb_docs;
CREATE SERVER se FOREIGN DATA WRAPPER search_engine;
SQL
sql -f "$BENCH/lib/latency.sql"
COLS="_id text, package text, version text, section text, priority text, architecture text,
  maintainer text, installed_size bigint, size bigint, depends text[], homepage text, summary text,
  description text"

# fresh index $1 + foreign table $2 with the given columns over it
fresh() {
  se_create_index "$1"
  sql -c "DROP FOREIGN TABLE IF EXISTS $2" -c "CREATE FOREIGN TABLE $2 ($3) SERVER se OPTIONS (index '$1')"
}
# wall seconds of one psql -c (one statement = one transaction: COMMIT included)
timed() {
  local t0 t1
  t0=$(now); sql -c "$1" >/dev/null; t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

QNAMES=(library "python library (OR)" "python library (AND)" '"command line" (phrase)')
QBODY=('{"match": {"description": "library"}}'
       '{"match": {"description": "python library"}}'
       '{"match": {"description": {"query": "python library", "operator": "and"}}}'
       '{"match_phrase": {"description": "command line"}}')
# (@@@ is in schema search_engine, not on the default search_path)
OP='OPERATOR(search_engine.@@@)'
QFDW=("description $OP 'library'"
      "description $OP 'python library'"
      "debian $OP '{\"match\": {\"description\": {\"query\": \"python library\", \"operator\": \"and\"}}}'"
      "debian $OP '{\"match_phrase\": {\"description\": \"command line\"}}'")
lit() { printf "'%s'" "${1//\'/\'\'}"; }

for run in $(seq 1 "$RUNS"); do
  echo "== run $run/$RUNS"
  # (2) loads; order alternates between rounds
  order=(bulk fdw src); [ $((run % 2)) = 0 ] && order=(fdw src bulk)
  for how in "${order[@]}"; do
    sql -c CHECKPOINT
    case $how in
      bulk)
        se_create_index debian_bulk
        read -r secs refresh_secs <<<"$(se_ingest debian_bulk)"
        n=$(se_docs_count debian_bulk) ;;
      fdw)
        fresh debian_fdw deb_fdw "$COLS"
        secs=$(timed "INSERT INTO deb_fdw SELECT * FROM bench.deb_rows")
        n=$(se_docs_count debian_fdw) ;;
      src)
        fresh debian_src deb_src "_id text, _source jsonb"
        secs=$(timed "INSERT INTO deb_src SELECT _id, doc FROM bench.deb_docs")
        n=$(se_docs_count debian_src) ;;
    esac
    [ "$n" = "$CORPUS_DOCS" ] || { echo "$how: $n documents, expected $CORPUS_DOCS" >&2; exit 1; }
    rec "ingest_s:$how" x "$run" "$secs"
    printf '   load %-4s %7.3f s  (%s docs/s)\n' "$how" "$secs" "$(awk -v s="$secs" -v n="$n" 'BEGIN { printf "%.0f", n / s }')"
  done
  # same content whichever way it was loaded
  for idx in debian_fdw debian_src; do
    same=$(sqlv -c "SELECT count(*) FROM bench.deb_docs d
                    WHERE search_engine.get_doc('$idx', d._id)->'_source' IS DISTINCT FROM
                          search_engine.get_doc('debian_bulk', d._id)->'_source'
                      AND d._id IN (SELECT _id FROM bench.deb_docs ORDER BY md5(_id) LIMIT 500)")
    rec "differing_docs:$idx" x "$run" "$same"
  done
  sql -c "DROP FOREIGN TABLE IF EXISTS deb_fdw, deb_src"
  sql -c "SELECT search_engine.delete_index('debian_fdw,debian_src')" >/dev/null

  # (1) latency on a fresh, flushed index
  fresh debian debian "$COLS, _index text, _score real, _source jsonb"
  se_ingest debian >/dev/null
  sql -c "SELECT search_engine.flush('debian')" -c "ANALYZE debian" >/dev/null
  for i in "${!QNAMES[@]}"; do
    q=${QNAMES[$i]}
    hits="SELECT jsonb_agg(t) FROM search_engine.search_hits('debian', $(lit "{\"query\": ${QBODY[$i]}}")) t"
    fdw="SELECT jsonb_agg(t) FROM (SELECT _index, _id, _score, _source FROM debian WHERE ${QFDW[$i]} ORDER BY _score DESC LIMIT 10) t"
    same=$(sqlv -c "SELECT ($fdw) = ($hits)")
    rec "same_result:$q" x "$run" "$same"
    for how in $( [ $((run % 2)) = 1 ] && echo "hits fdw" || echo "fdw hits" ); do
      [ "$how" = hits ] && stmt=$hits || stmt=$fdw
      read -r med p95 <<<"$(sqlv -F ' ' -c "SELECT round(median_ms::numeric, 4), round(p95_ms::numeric, 4) FROM bench.latency($(lit "$stmt"), $WARMUP, $REPS)")"
      rec "lat_median:$q" "$how" "$run" "$med"
      rec "lat_p95:$q" "$how" "$run" "$p95"
    done
    printf '   %-26s search_hits %7.3f ms   foreign table %7.3f ms (medians)  same result: %s\n' "$q" \
      "$(awk -F'\t' -v k="lat_median:$q" -v r="$run" '$1 == k && $2 == "hits" && $3 == r { print $4 }' "$RAW")" \
      "$(awk -F'\t' -v k="lat_median:$q" -v r="$run" '$1 == k && $2 == "fdw" && $3 == r { print $4 }' "$RAW")" "$same"
  done
  sql -c "DROP FOREIGN TABLE debian" -c "SELECT search_engine.delete_index('debian,debian_bulk')" >/dev/null
done
rec meta loadavg_end 0 "$(cut -d' ' -f1-3 /proc/loadavg)"
rec meta seconds 0 "$(( $(date +%s) - started ))"

# ------------------------------------------------------------------ report
python3 - "$RAW" "$OUT/fdw_section.md" <<'PY'
import sys, statistics as st
raw, out = sys.argv[1], sys.argv[2]
meta, data = {}, {}
for line in open(raw):
    k, how, run, v = line.rstrip('\n').split('\t')
    if k == 'meta': meta[how] = v; continue
    data.setdefault((k, how), []).append(v)
def nums(k, how): return [float(x) for x in data.get((k, how), [])]
def mmm(xs): return '%.3f / %.3f / %.3f' % (min(xs), st.median(xs), max(xs))
L = []
L.append('<!-- fdw_bench: begin -->')
L.append('## Foreign data wrapper (bench/fdw_bench.sh)')
L.append('')
L.append('Debian packages corpus, %s documents. %s rounds; each cell is **min / median / max** over the rounds.' % (meta['docs'], meta['runs']))
L.append('')
L.append('- date: %s; machine: %s CPUs (`nproc`), %s RAM, %s, %s; load average %s at the start, %s at the end (the CPUs were shared with other sessions)' % (
    meta['date'], meta['nproc'], meta['memory'], meta['cpu'].split(' ')[0] + ' ' + (meta['cpu'].split(' ')[1] if len(meta['cpu'].split(' ')) > 1 else ''), meta['kernel'], meta['loadavg_start'], meta['loadavg_end']))
L.append('- PostgreSQL %s; search_engine %s built into a private copy of the installation; `search_engine.write_threads` = %s; `shared_buffers` = 1GB' % (meta['postgres'], meta['commit'], meta['write_threads']))
L.append('- whole run: %s s' % meta['seconds'])
L.append('')
L.append('| top-10 query | `search_hits()` median ms | foreign table median ms | foreign table / search_hits (median of rounds) | p95 ms: search_hits / foreign table (medians) | same ids and scores |')
L.append('|---|---:|---:|---:|---:|---|')
for q in ['library', 'python library (OR)', 'python library (AND)', '"command line" (phrase)']:
    h, f = nums('lat_median:' + q, 'hits'), nums('lat_median:' + q, 'fdw')
    ratios = [b / a for a, b in zip(h, f)]
    ph, pf = nums('lat_p95:' + q, 'hits'), nums('lat_p95:' + q, 'fdw')
    same = data.get(('same_result:' + q, 'x'), [])
    L.append('| %s | %s | %s | %.2f× (%.2f×–%.2f×) | %.3f / %.3f | %s |' % (q, mmm(h), mmm(f), st.median(ratios), min(ratios), max(ratios),
             st.median(ph), st.median(pf), 'yes' if same and all(s == 't' for s in same) else 'NO'))
L.append('')
b = nums('ingest_s:bulk', 'x'); fd = nums('ingest_s:fdw', 'x'); sr = nums('ingest_s:src', 'x')
n = float(meta['docs'])
L.append('| load of the corpus | seconds | docs/s | time / bulk() time (median of rounds) |')
L.append('|---|---:|---:|---:|')
L.append('| `search_engine.bulk()`, 64 batches of 1000 + refresh | %s | %.0f | 1 |' % (mmm(b), n / st.median(b)))
rf = [y / x for x, y in zip(b, fd)]
L.append('| `INSERT INTO` foreign table (13 typed columns) `SELECT * FROM` table | %s | %.0f | %.2f× (%.2f×–%.2f×) |' % (mmm(fd), n / st.median(fd), st.median(rf), min(rf), max(rf)))
rs = [y / x for x, y in zip(b, sr)]
L.append('| `INSERT INTO` foreign table `(_id, _source jsonb) SELECT` | %s | %.0f | %.2f× (%.2f×–%.2f×) |' % (mmm(sr), n / st.median(sr), st.median(rs), min(rs), max(rs)))
diff = sum(int(x) for k, v in data.items() if k[0].startswith('differing_docs') for x in v)
L.append('')
L.append('A sample of 500 documents loaded each way has the same `_source` as through bulk(): %s.' % ('yes' if diff == 0 else 'NO (%d differ)' % diff))
L.append('')
L.append('What is measured: latency server-side (`bench.latency`: %s warm-up runs, then %s runs with `clock_timestamp()` around each `EXECUTE`, so parsing and planning count); `search_hits()` is `SELECT jsonb_agg(t) FROM search_engine.search_hits(\'debian\', \'{"query": ...}\') t` (size 10, `_index, _id, _score, _source`); the foreign table form is `SELECT jsonb_agg(t) FROM (SELECT _index, _id, _score, _source FROM debian WHERE description @@@ \'...\' ORDER BY _score DESC LIMIT 10) t`, the AND and phrase queries as `debian @@@ \'{DSL}\'`; EXPLAIN shows it pushed down as one top-k request (`"size":10`). Loads: wall time of the client statement(s), into a fresh index (`bench/lib/debian_index.json`: 2 shards, `translog.durability` request), each ending with every document searchable (bulk: the final `refresh`; the foreign table: its commit, which sends the buffered rows through the bulk path in rounds of 1000 (`batch_size`) and refreshes); the typed table and the jsonb table are prepared before the timing.' % (meta['warmup'], meta['reps']))
L.append('<!-- fdw_bench: end -->')
open(out, 'w').write('\n'.join(L) + '\n')
PY
cat "$OUT/fdw_section.md"

# splice into RESULTS.md (replace our section, or append it)
results=${RESULTS:-$BENCH/RESULTS.md}
python3 - "$results" "$OUT/fdw_section.md" <<'PY'
import sys, re
path, sec = sys.argv[1], open(sys.argv[2]).read()
try:
    text = open(path).read()
except FileNotFoundError:
    text = ''
pat = re.compile(r'<!-- fdw_bench: begin -->.*?<!-- fdw_bench: end -->\n?', re.S)
text = pat.sub(lambda m: sec, text) if pat.search(text) else text.rstrip('\n') + '\n\n' + sec
open(path, 'w').write(text)
PY
echo "== section written to $results"
