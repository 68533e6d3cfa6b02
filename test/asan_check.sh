#!/usr/bin/env bash
# Build search_engine with AddressSanitizer + UBSan into a private copy of
# the PostgreSQL installation and run the given Perl TAP tests against it
# (default: the lifecycle chaos test).  PostgreSQL itself is not built with
# ASan: the runtime is preloaded into every process of the run instead, so
# the sanitizers watch the extension's code in backends and workers.
#
#   test/asan_check.sh                       # test/tap/140_lifecycle_chaos.pl
#   test/asan_check.sh test/tap/010_crash_durability.pl
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$(pwd)
ROOT=${SE_ASAN_ROOT:-/tmp/se-asan-$(basename "$TOP")}
export SE_DEV_ROOT=$ROOT
# a separate object tree: the sanitized objects must not mix with plain ones
BUILD=$ROOT/build
rm -rf "$BUILD"; mkdir -p "$BUILD"
cp -a "$TOP/." "$BUILD/"
make -s -C "$BUILD" clean >/dev/null 2>&1 || true
LIBASAN=$(gcc -print-file-name=libasan.so)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
PATHLINE=$(cd "$BUILD" && COPT="$SAN" test/dev_check.sh --install-only | tail -1)
eval "$PATHLINE"
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(test/tap/140_lifecycle_chaos.pl)
PGXS_DIR=$(dirname "$(pg_config --pgxs)")/../..
WORK=$(mktemp -d /tmp/se-asan-tests.XXXXXX)
cp -a "$TOP/." "$WORK/"
LOGS=$WORK/asan-logs
mkdir -p "$LOGS"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$WORK"
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- env PATH="$PATH" "$@"; else env PATH="$PATH" "$@"; fi
}
# leaks are PostgreSQL's business (memory contexts live until exit); every
# report goes to a file per process, and any report fails the run
rc=0
as_pg env LD_PRELOAD="$LIBASAN" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:log_path=$LOGS/asan:allow_user_segv_handler=1:handle_segv=1" \
  UBSAN_OPTIONS="print_stacktrace=1:log_path=$LOGS/ubsan" \
  bash -c "cd '$WORK' && PG_REGRESS='$PGXS_DIR/src/test/regress/pg_regress' TESTDIR='$WORK' \
    PGXS_PERL='$PGXS_DIR/src/test/perl' prove -I '$PGXS_DIR/src/test/perl' -I '$WORK/test/tap' ${TESTS[*]}" || rc=$?
if ls "$LOGS"/* >/dev/null 2>&1; then
  echo "sanitizer reports:"; cat "$LOGS"/* | head -200
  exit 1
fi
echo "asan: no sanitizer report"
rm -rf "$WORK"
exit $rc
