#!/usr/bin/env bash
# The shard allocator alone on synthetic clusters of 15 data nodes
# (test/unit/bench_alloc.c; indices of 5 shards x 1 replica, 90% of them
# closed, disks 30-70% used), built twice with -O2: as the master runs it
# (bookkeeping kept per node, every decider O(1)) and with
# -DSE_ALLOC_SCAN_NODE_SHARDS, where the deciders walk a node's copies on
# every decision as Elasticsearch did before 7.5 (the O(n^2) reroute of the
# seed).  Measures, per cluster size:
#   - a reroute that allocates every copy of a new cluster (throttles lifted),
#   - a no-op reroute of the settled cluster,
#   - the same with 1,000 copies initializing or relocating,
# in CPU time (median of 9), prints growth per doubling, plots
# bench/allocator_reroute.png (gnuplot) and replaces its section of
# bench/RESULTS.md.
#   bench/allocator_bench.sh   (env: SIZES, SCAN_SIZES, SCAN_INITIAL_MAX)
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
SIZES=${SIZES:-"25000 50000 100000 200000"}
SCAN_SIZES=${SCAN_SIZES:-"12500 25000 50000 100000"}
SCAN_INITIAL_MAX=${SCAN_INITIAL_MAX:-25000}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
OUT=$BENCH/out
mkdir -p "$OUT"
command -v gnuplot >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null

make -s -C "$REPO/test/unit" -f Makefile.bench PG_CONFIG="$PG_CONFIG" bench_alloc bench_alloc_scan
echo "== linear bookkeeping: $SIZES"
"$REPO/test/unit/bench_alloc" 100000000 $SIZES | tee "$OUT/alloc_linear.tsv"
echo "== O(n^2) deciders: $SCAN_SIZES"
"$REPO/test/unit/bench_alloc_scan" "$SCAN_INITIAL_MAX" $SCAN_SIZES | tee "$OUT/alloc_scan.tsv"

gnuplot <<EOF
set terminal pngcairo size 900,560 font "sans,10"
set output "$BENCH/allocator_reroute.png"
set title "Reroute of a 15-node cluster (90% of copies in closed indices), CPU time"
set xlabel "shard copies"
set ylabel "ms (log scale)"
set logscale xy
set key bottom right
set xrange [10000:300000]
set grid
plot "$OUT/alloc_linear.tsv" using 1:3 with linespoints title "no-op reroute (bookkeeping)", \
     "$OUT/alloc_linear.tsv" using 1:4 with linespoints title "no-op, 1,000 copies in flight (bookkeeping)", \
     "$OUT/alloc_linear.tsv" using 1:2 with linespoints title "initial allocation (bookkeeping)", \
     "$OUT/alloc_scan.tsv" using 1:3 with linespoints dt 2 title "no-op reroute (per-decision scan, ES < 7.5)", \
     "$OUT/alloc_scan.tsv" using 1:4 with linespoints dt 2 title "no-op, 1,000 in flight (per-decision scan)", \
     "$OUT/alloc_scan.tsv" using 1:(\$2 > 0 ? \$2 : 1/0) with linespoints dt 2 title "initial allocation (per-decision scan)"
EOF

python3 - "$OUT/alloc_linear.tsv" "$OUT/alloc_scan.tsv" "$BENCH/RESULTS.md" <<'PY'
import re, sys
def load(p):
    return [tuple(float(x) for x in l.split('\t')) for l in open(p) if l.strip()]
lin, scan = load(sys.argv[1]), load(sys.argv[2])
def growth(rows, col):
    return ', '.join('%.2fx' % (b[col] / a[col]) for a, b in zip(rows, rows[1:])
                     if a[col] > 0 and b[col] > 0 and b[0] == 2 * a[0])
at = {int(r[0]): r for r in lin}
out = ['<!-- allocator_bench: begin -->',
       '## Shard allocator (bench/allocator_bench.sh)', '',
       'The master\'s allocator alone (`src/cluster/allocator.c`) on synthetic clusters of 15 data nodes: '
       'indices of 5 shards x 1 replica, 90% of them closed, disks 30-70% used. CPU time of the '
       'reroute, median of 9. "scan" is the same allocator built with `-DSE_ALLOC_SCAN_NODE_SHARDS`: '
       'its deciders count a node\'s initializing/relocating copies and relocating bytes by walking '
       'the node\'s copies on every decision, as Elasticsearch did before 7.5. Plot: '
       '`bench/allocator_reroute.png`.', '',
       '| copies | initial allocation ms | no-op reroute ms | no-op, 1,000 in flight ms | scan: initial ms | scan: no-op ms | scan: in flight ms |',
       '|---:|---:|---:|---:|---:|---:|---:|']
sc = {int(r[0]): r for r in scan}
for n in sorted(set(at) | set(sc)):
    l, s = at.get(n), sc.get(n)
    f = lambda r, i: ('%.2f' % r[i]) if r and r[i] >= 0 else '-'
    out.append('| %d | %s | %s | %s | %s | %s | %s |' % (n, f(l, 1), f(l, 2), f(l, 3), f(s, 1), f(s, 2), f(s, 3)))
out += ['', 'Growth per doubling of the copies (target at most 2.3x):',
        '- no-op reroute: %s; with 1,000 in flight: %s; initial allocation: %s' %
        (growth(lin, 2), growth(lin, 3), growth(lin, 1)),
        '- scan variant, no-op reroute: %s; with 1,000 in flight: %s' % (growth(scan, 2), growth(scan, 3))]
if 50000 in at:
    r = at[50000]
    out.append('- 50,000 copies: no-op %.2f ms (target < 50), with 1,000 in flight %.2f ms (target < 50), '
               'initial allocation %.1f ms (target < 1000)' % (r[2], r[3], r[1]))
out.append('<!-- allocator_bench: end -->')
section = '\n'.join(out) + '\n'
print(section)
text = open(sys.argv[3]).read()
pat = re.compile(r'<!-- allocator_bench: begin -->.*?<!-- allocator_bench: end -->\n', re.S)
text = pat.sub(lambda _: section, text) if pat.search(text) else text.rstrip('\n') + '\n\n' + section
open(sys.argv[3], 'w').write(text)
PY
