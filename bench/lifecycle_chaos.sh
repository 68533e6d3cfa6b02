#!/usr/bin/env bash
# bench/lifecycle_chaos.sh: the long form of test/tap/140_lifecycle_chaos.pl.
#
#   bench/lifecycle_chaos.sh [SECONDS]     (as root; default 600 s of churn)
#
# Create/open/close/delete/auto-create of the same index names under bulk
# and search load for SECONDS (CI runs 80), then kill -9 and restart: no
# crash or PANIC, clean ES errors, every acknowledged item of an index that
# was not deleted afterwards survives.  Builds this tree into a private
# installation (test/dev_check.sh) and runs only that test.
set -euo pipefail
cd "$(dirname "$0")/.."
SE_CHAOS_SECONDS=${1:-600} exec test/dev_check.sh test/tap/140_lifecycle_chaos.pl
