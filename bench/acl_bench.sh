#!/usr/bin/env bash
# What index-level privileges cost on the hot paths (issue 12): the same
# searches and bulks as the superuser (who skips every check), as a member
# of search_engine_write (group-role checks), and as a role whose access
# comes from a grant on an index pattern among 200 other grants (the grant
# list is scanned for every index a request names).  Equal work, one
# client, one server, in one run; ratios against the superuser.
# Run as root; replaces its section of bench/RESULTS.md.
#   bench/acl_bench.sh   (env: NDOCS=200000 RUNS=3 REPS=200 BULKS=40 PORT=5476
#                         PGDIR=... SKIP_BUILD=1)
set -euo pipefail
PORT=${PORT:-5476}
PGDIR=${PGDIR:-/var/tmp/se_acl_bench}
NDOCS=${NDOCS:-200000}
RUNS=${RUNS:-3}
REPS=${REPS:-200}
BULKS=${BULKS:-40}
source "$(dirname "$0")/lib/common.sh"
need_root
OUT=$BENCH/out
RAW=$OUT/acl_raw.tsv
mkdir -p "$OUT"
[ "${SKIP_BUILD:-0}" = 1 ] || build_private

cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
server_start "shared_buffers = '512MB'" "search_engine.write_threads = 2"
sql -f "$BENCH/lib/latency.sql"
: > "$RAW"
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }
rec meta date 0 "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta commit 0 "${PRIVATE_REV:-installed build (SKIP_BUILD)}"
rec meta docs 0 "$NDOCS"

echo "== $NDOCS documents into logs-bench; roles"
sql <<SQL
SELECT search_engine.create_index('logs-bench', '{"settings": {"number_of_shards": 2, "refresh_interval": "-1"},
  "mappings": {"properties": {"msg": {"type": "text"}, "tag": {"type": "keyword"}, "n": {"type": "long"}}}}');
SELECT count(*) FROM (SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n{"msg": "event %s word%s", "tag": "t%s", "n": %s}', i, i, i % 1000, i % 50, i), E'\n') || E'\n', 'logs-bench')
  FROM generate_series(1, $NDOCS) i GROUP BY i / 5000) b;
SELECT search_engine.refresh('logs-bench');
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'acl_group') THEN CREATE ROLE acl_group IN ROLE search_engine_write; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'acl_grant') THEN CREATE ROLE acl_grant; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'acl_other') THEN CREATE ROLE acl_other; END IF;
END \$\$;
SELECT count(search_engine.grant('read', 'app' || i || '-*', 'acl_other')) FROM generate_series(1, 200) i;
SELECT search_engine.grant('read', 'logs-*', 'acl_grant');
SELECT search_engine.grant('write', 'logs-*', 'acl_grant');
GRANT USAGE ON SCHEMA bench TO search_engine_user;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA bench TO search_engine_user;
SQL

Q="SELECT search_engine.search('logs-bench', '{\"query\": {\"match\": {\"msg\": \"word7\"}}, \"size\": 10}')"
for run in $(seq 1 "$RUNS"); do
  for role in postgres acl_group acl_grant; do
    ms=$(sqlv -c "SET ROLE $role; SELECT median_ms FROM bench.latency(\$q\$$Q\$q\$, 20, $REPS)" | tail -1)
    rec search "$role" "$run" "$ms"
    # BULKS bulks of 1000 new documents, timed server-side
    bs=$(sqlv <<SQL | tail -1
SET ROLE $role;
DO \$\$ BEGIN PERFORM 1; END \$\$;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT count(*) FROM (SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s-%s-%s"}}\n{"msg": "bulk %s", "n": %s}', '$role', $run, i, i, i), E'\n') || E'\n', 'logs-bulk')
  FROM generate_series(1, $BULKS * 1000) i GROUP BY i / 1000) b;
SELECT extract(epoch FROM clock_timestamp()) - :t0;
SQL
)
    rec bulk "$role" "$run" "$bs"
    echo "run $run $role: search median ${ms} ms, $BULKS bulks ${bs} s"
  done
done

python3 - "$RAW" "$BENCH/RESULTS.md" <<'PY'
import sys, statistics, collections
raw, results = sys.argv[1], sys.argv[2]
meta, vals = {}, collections.defaultdict(list)
for line in open(raw):
    kind, role, run, v = line.rstrip('\n').split('\t')
    if kind == 'meta': meta[role] = v
    else: vals[(kind, role)].append(float(v))
def med(k): return statistics.median(vals[k])
lines = ["## Index-level privileges (bench/acl_bench.sh)", "",
         f"{meta['date']}, commit {meta['commit']}, {meta['docs']} documents in a 2-shard index, one client.",
         "Medians of the runs; ratio = time as that role / time as the superuser (1.00 = no cost).", "",
         "| role | search top-10 median (ms) | ratio | 40 bulks of 1000 docs (s) | ratio |",
         "|---|---:|---:|---:|---:|"]
base_s, base_b = med(('search', 'postgres')), med(('bulk', 'postgres'))
names = {'postgres': 'superuser (no checks)', 'acl_group': 'member of search_engine_write',
         'acl_grant': 'grants on logs-* among 200 other grants'}
for role in ('postgres', 'acl_group', 'acl_grant'):
    s, b = med(('search', role)), med(('bulk', role))
    lines.append(f"| {names[role]} | {s:.3f} | {s / base_s:.2f} | {b:.2f} | {b / base_b:.2f} |")
section = "\n".join(lines) + "\n"
text = open(results).read()
start = text.find("## Index-level privileges (bench/acl_bench.sh)")
if start >= 0:
    end = text.find("\n## ", start + 1)
    text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
else:
    text = text.rstrip('\n') + "\n\n" + section
open(results, 'w').write(text)
print(section)
PY
