#!/usr/bin/env bash
# The long form of the Jepsen-style replication test (as root):
# test/tap/310_replication_jepsen.pl with its four bounded scenarios and
# then kill -9 of a primary's node every 20 s for SECONDS seconds, checked
# like the others after healing.  Needs the build installed (make install,
# or PATH with test/dev_check.sh --install-only's private copy first).
#   bench/jepsen_long.sh            (LONG=600: seconds of the kill loop)
# The clients' logs stay in the test's tmp_check/log/jepsen_jep310/ when it
# fails (run_all.sh keeps the copy of the tree then).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "$0: run as root (the test runs as postgres)" >&2
  exit 1
fi
SE_JEPSEN_LONG=${LONG:-600} exec test/run_all.sh test/tap/310_replication_jepsen.pl
