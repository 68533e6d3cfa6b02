#!/usr/bin/env bash
# Term dictionary benchmark: TERMS section and segment size, exact lookups,
# prefix seeks and enumeration, HEAD against a baseline commit, on the
# Debian corpus and a Contents sample.  Replaces its section of
# bench/RESULTS.md and prints it.
#   bench/termdict_bench.sh      (env: BASE=<commit> (default: the merge base with main),
#                                 ROUNDS=3, LOOKUPS=500000, CONTENTS_LINES=1000000)
#
# Both sides are test/unit/bench_termdict.c built with -O2 from `git archive`
# of their commit (no server involved).  Each of ROUNDS rounds runs the
# baseline then HEAD on each corpus (alternating, so both see the same
# machine load); each run builds one segment from the corpus through the
# mapping and document parser, then times every operation 3 times in CPU
# time and reports the median.  Ratios are HEAD / baseline per round.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
DATA=$BENCH/data
BASE=${BASE:-$(git -C "$REPO" merge-base HEAD main)}
ROUNDS=${ROUNDS:-3}
LOOKUPS=${LOOKUPS:-500000}
CONTENTS_LINES=${CONTENTS_LINES:-1000000}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
WORK=$(mktemp -d /var/tmp/termdict_bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

head_rev=$(git -C "$REPO" rev-parse --short HEAD)
base_rev=$(git -C "$REPO" rev-parse --short "$BASE")
for side in base head; do
  rev=$([ $side = base ] && echo "$base_rev" || echo "$head_rev")
  mkdir -p "$WORK/$side"
  git -C "$REPO" archive "$rev" src test/unit | tar -x -C "$WORK/$side"
  # the benchmark source is HEAD's on both sides (the baseline may predate it)
  cp "$REPO"/test/unit/{bench_termdict.c,Makefile.bench,unit_test.h} "$WORK/$side/test/unit/"
  make -s -C "$WORK/$side/test/unit" -f Makefile.bench PG_CONFIG="$PG_CONFIG" bench_termdict >/dev/null
done
# the Contents sample only when its corpus is there (bench/contents_corpus.sh)
CORPORA=debian
if [ -s "$DATA/contents.ndjson" ]; then
  head -n "$CONTENTS_LINES" "$DATA/contents.ndjson" > "$WORK/contents.ndjson"
  CORPORA="debian contents"
fi

RAW=$WORK/raw.txt
: > "$RAW"
for r in $(seq 1 "$ROUNDS"); do
  for corpus in $CORPORA; do
    case $corpus in
      debian) file=$DATA/debian.ndjson; body=$BENCH/lib/debian_index.json ;;
      contents) file=$WORK/contents.ndjson; body=$BENCH/contents_corpus.json ;;
    esac
    for side in base head; do
      echo "== round $r $corpus $side" >&2
      BENCH_LOOKUPS=$LOOKUPS BENCH_ROUNDS=3 "$WORK/$side/test/unit/bench_termdict" "$file" "$body" |
        sed "s/^/$r $corpus $side | /" >> "$RAW"
    done
  done
done

python3 - "$RAW" "$BENCH/RESULTS.md" "$base_rev" "$head_rev" "$ROUNDS" "$LOOKUPS" "$CONTENTS_LINES" <<'PY'
import re, sys, statistics, datetime, os
raw, results, base_rev, head_rev, rounds, lookups, clines = sys.argv[1:]
runs = {}   # (corpus, side) -> list of dicts per round
for line in open(raw):
    head, _, text = line.partition(' | ')
    r, corpus, side = head.split()
    d = runs.setdefault((corpus, side), {}).setdefault(r, {})
    m = re.match(r'segment (\d+) bytes, TERMS section (\d+) bytes', text)
    if m:
        d['segment'], d['terms'] = int(m.group(1)), int(m.group(2))
    m = re.match(r'corpus: \S+, (\d+) docs, (\d+) fields, (\d+) terms', text)
    if m:
        d['docs'], d['nterms'] = int(m.group(1)), int(m.group(3))
    m = re.match(r'(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+ops/s', text)
    if m:
        d[m.group(1).strip()] = int(m.group(3))     # median of the run
    m = re.match(r'\(checksum (\d+)\)', text)
    if m:
        d['checksum'] = int(m.group(1))
ops = ['exact lookups (present)', 'exact lookups (absent)',
       'prefix seeks (<= 10 terms each)', 'enumerate all terms (terms/s)',
       'fuzzy walks, AUTO (walks/s)']
out = []
out.append('<!-- termdict_bench: begin -->')
out.append('## Term dictionary (bench/termdict_bench.sh)')
out.append('')
out.append('%s, %d CPUs, baseline %s against HEAD %s, '
           '%s rounds alternating baseline and HEAD; one segment per corpus built through the mapping and document '
           'parser; %s random lookups per timing, CPU time, each run\'s median of 3 timings. Ratios are HEAD / baseline '
           'per round (min / median / max); sizes do not vary between rounds.' %
           (datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC'), os.cpu_count(), base_rev, head_rev,
            rounds, lookups))
out.append('')
out.append('| corpus | measure | baseline | HEAD | HEAD / baseline (min / median / max) |')
out.append('|---|---|---:|---:|---|')
for corpus in ('debian', 'contents'):
    if (corpus, 'base') not in runs:
        continue
    b, h = runs[(corpus, 'base')], runs[(corpus, 'head')]
    rs = sorted(b)
    b0, h0 = b[rs[0]], h[rs[0]]
    name = 'Debian (%d docs, %d terms)' % (b0['docs'], b0['nterms']) if corpus == 'debian' else \
        'Contents, first %s lines (%d docs, %d terms)' % (clines, b0['docs'], b0['nterms'])
    same = all(b[r].get('checksum') == h[r].get('checksum') for r in rs)
    for key, label in (('terms', 'TERMS section, bytes'), ('segment', 'segment file, bytes')):
        out.append('| %s | %s | %s | %s | %.3f |' % (name, label, format(b0[key], ','), format(h0[key], ','),
                                                     h0[key] / b0[key]))
        name = ''
    for op in ops:
        if not all(op in b[r] and op in h[r] for r in rs):
            continue            # the fuzzy walks: Debian's description only
        ratios = sorted(h[r][op] / b[r][op] for r in rs)
        out.append('| | %s, ops/s (median of rounds) | %s | %s | %.2f / %.2f / %.2f |' % (
            op, format(int(statistics.median(b[r][op] for r in rs)), ','),
            format(int(statistics.median(h[r][op] for r in rs)), ','),
            ratios[0], statistics.median(ratios), ratios[-1]))
    out.append('| | same terms found (checksum) | | | %s |' % ('yes' if same else '**NO**'))
out.append('')
out.append('```')
out.append('bench/termdict_bench.sh   # BASE=%s ROUNDS=%s LOOKUPS=%s CONTENTS_LINES=%s' % (base_rev, rounds, lookups, clines))
out.append('# which runs, per round and corpus: test/unit/bench_termdict CORPUS INDEX_BODY (built from git archive')
out.append('#   of each commit with make -f Makefile.bench bench_termdict), baseline first')
out.append('```')
out.append('<!-- termdict_bench: end -->')
section = '\n'.join(out) + '\n'
text = open(results).read() if os.path.exists(results) else ''
m = re.search(r'<!-- termdict_bench: begin -->.*?<!-- termdict_bench: end -->\n', text, re.S)
text = text[:m.start()] + section + text[m.end():] if m else text.rstrip('\n') + '\n\n' + section
open(results, 'w').write(text)
print(section)
PY
