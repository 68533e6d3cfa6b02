#!/usr/bin/env bash
# Run every test suite: C unit tests (ASan/UBSan), pg_regress, pgTAP and
# Perl TAP.  The extension must be installed (make install).  PostgreSQL
# refuses to run as root, so the server-based suites run as the postgres
# user from a copy of the tree that user owns.
#
#   test/run_all.sh                          every suite
#   test/run_all.sh test/tap/140_*.pl ...    only these TAP tests
set -uo pipefail
cd "$(dirname "$0")/.."
TOP=$(pwd)
PGBIN=$(pg_config --bindir)
PGXS_DIR=$(dirname "$(pg_config --pgxs)")/../..
fail=0
passed_suites=0
failed_suites=0

suite() {  # suite NAME CMD...
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed_suites=$((passed_suites+1)); echo "=== $name: ok"
  else failed_suites=$((failed_suites+1)); fail=1; echo "=== $name: FAILED"; fi
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- env PATH="$PGBIN:$PATH" "$@"; else env PATH="$PGBIN:$PATH" "$@"; fi
}

WORK=$(mktemp -d "${SE_TEST_TMP:-/tmp}/se-tests.XXXXXX")
cp -a "$TOP/." "$WORK/"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$WORK"

# a small tmpfs for the disk-full test (test/tap/180_disk_full.pl), which
# skips without it: mounting needs root
SE_TMPFS_DIR=
if [ "$(id -u)" = 0 ]; then
  tmpfs=$(mktemp -d /tmp/se-tmpfs.XXXXXX)
  if mount -t tmpfs -o size=48m,uid=postgres,gid=postgres,mode=0700 tmpfs "$tmpfs"; then
    SE_TMPFS_DIR=$tmpfs
    trap 'umount "$tmpfs" 2>/dev/null; rmdir "$tmpfs"' EXIT
  else
    rmdir "$tmpfs"
  fi
fi

if [ $# -gt 0 ]; then
  suite "TAP ($*)" as_pg bash -c "cd '$WORK' && PG_REGRESS='$PGXS_DIR/src/test/regress/pg_regress' \
    TESTDIR='$WORK' PGXS_PERL='$PGXS_DIR/src/test/perl' SE_CHAOS_SECONDS='${SE_CHAOS_SECONDS:-}' SE_JEPSEN_LONG='${SE_JEPSEN_LONG:-}' SE_JEPSEN_REPLICAS='${SE_JEPSEN_REPLICAS:-}' SE_JEPSEN_SCENARIOS='${SE_JEPSEN_SCENARIOS:-}' SE_TMPFS_DIR='$SE_TMPFS_DIR' \
    prove -v -I '$PGXS_DIR/src/test/perl' -I '$WORK/test/tap' $*"
  [ "$fail" = 0 ] && rm -rf "$WORK"
  exit $fail
fi

# 1. standalone C tests under sanitizers
suite "unit (C, ASan+UBSan)" as_pg make -s -C "$WORK/test/unit" check

# 2. pg_regress with a temporary preloaded instance
REGRESS=$(cd "$WORK" && ls sql/*.sql | sed 's|sql/||; s|\.sql$||' | sort | tr '\n' ' ')
suite "pg_regress" as_pg bash -c "cd '$WORK' && mkdir -p test/results && \
  '$PGXS_DIR/src/test/regress/pg_regress' --bindir='$PGBIN' --inputdir=. \
  --outputdir=test/results --temp-instance=test/tmp_check --temp-config=test/regress.conf \
  --port=${SE_REGRESS_PORT:-58110} --dbname=contrib_regression $REGRESS || { cat test/results/regression.diffs 2>/dev/null | head -200; exit 1; }"

# 3. pgTAP and Perl TAP (each TAP test starts its own servers)
if ls "$WORK"/test/tap/*.pl >/dev/null 2>&1 || ls "$WORK"/test/pgtap/*.sql >/dev/null 2>&1; then
  suite "TAP (pgTAP + Perl)" as_pg bash -c "cd '$WORK' && PG_REGRESS='$PGXS_DIR/src/test/regress/pg_regress' \
    TESTDIR='$WORK' PGXS_PERL='$PGXS_DIR/src/test/perl' SE_TMPFS_DIR='$SE_TMPFS_DIR' \
    prove -I '$PGXS_DIR/src/test/perl' -I '$WORK/test/tap' test/tap/*.pl"
fi

echo
echo "suites: $passed_suites passed, $failed_suites failed"
[ "$fail" = 0 ] && rm -rf "$WORK"
exit $fail
