#!/usr/bin/env bash
# bench/lifecycle_chaos.sh: the long form of test/tap/140_lifecycle_chaos.pl.
#
#   bench/lifecycle_chaos.sh [SECONDS]     (as root; default 600 s of churn)
#
# Create/open/close/delete/auto-create of the same index names under bulk
# and search load for SECONDS (CI runs 80), then kill -9 and restart: no
# crash or PANIC, clean ES errors, every acknowledged item of an index that
# was not deleted afterwards survives.  Runs against the installed
# extension (or a private one: PATH from test/dev_check.sh --install-only).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$(pwd)
PGBIN=$(pg_config --bindir)
PGXS_DIR=$(dirname "$(pg_config --pgxs)")/../..
WORK=$(mktemp -d /tmp/se-chaos.XXXXXX)
cp -a "$TOP/." "$WORK/"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$WORK"
run() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- env PATH="$PGBIN:$PATH" "$@"; else env PATH="$PGBIN:$PATH" "$@"; fi
}
run bash -c "cd '$WORK' && SE_CHAOS_SECONDS='${1:-600}' PG_REGRESS='$PGXS_DIR/src/test/regress/pg_regress' \
  TESTDIR='$WORK' PGXS_PERL='$PGXS_DIR/src/test/perl' \
  prove -v -I '$PGXS_DIR/src/test/perl' -I '$WORK/test/tap' test/tap/140_lifecycle_chaos.pl" && rm -rf "$WORK"
