#!/usr/bin/env bash
# Run the index lifecycle chaos test (test/tap/140_lifecycle_chaos.pl)
# against a server whose code, PostgreSQL's and search_engine.so's, is
# compiled with AddressSanitizer and UndefinedBehaviorSanitizer.  The run
# fails on any sanitizer report from any process (postmaster, backends,
# background workers), as well as on what 140 itself checks (crash, PANIC,
# "terminated by signal", cassert warnings in the server log, lost
# acknowledged writes).
#
# Preloading libasan into Debian's postgres hangs, so PostgreSQL is built
# from Debian's source package of postgresql-15 (its upstream tarball,
# minimal features, --enable-cassert) into /opt/se-asan/pg: the installed
# server's version, or the newest one the mirror serves when its pool no
# longer has that (minor versions share the ABI).  The build is skipped
# while a stamp says the prefix holds that version with these flags; it is
# ~20 CPU-minutes.  search_engine
# is built from a copy of this tree with that pg_config (its CFLAGS carry
# the sanitizers) and installed into the same prefix.
#
#   test/asan_check.sh                      (as root, like CI)
#   SE_CHAOS_SECONDS=300 test/asan_check.sh longer churn
#   SE_ASAN_PREFIX=/opt/x test/asan_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$(pwd)
PREFIX=${SE_ASAN_PREFIX:-/opt/se-asan/pg}
PG_PKG=postgresql-15
SAN_CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer"
CONFIGURE_OPTS="--enable-debug --enable-cassert --enable-tap-tests --without-icu --without-llvm
  --without-readline --without-zlib"
DEPS=(build-essential libipc-run-perl)

if [ "$(id -u)" != 0 ]; then
  echo "asan_check: run as root (it installs packages and runs the server as postgres)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
t_start=$(date +%s)

# --- 1. PostgreSQL with the sanitizers ------------------------------------
missing=()
for p in "${DEPS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# the source of the installed server's version if the mirror still has it
installed=$(dpkg-query -W -f='${Version}' "$PG_PKG")
source_versions() { apt-cache showsrc "$PG_PKG" 2>/dev/null | sed -n 's/^Version: //p'; }
if [ -z "$(source_versions)" ]; then
  # deb-src entries for the suites the machine already uses
  src_list=/etc/apt/sources.list.d/se-asan-src.sources
  : >"$src_list.tmp"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ "$f" = "$src_list" ] && continue
    grep -q '^URIs: .*debian' "$f" && sed 's/^Types: deb$/Types: deb-src/' "$f" >>"$src_list.tmp" && echo >>"$src_list.tmp"
  done
  if grep -q '^deb .*debian' /etc/apt/sources.list 2>/dev/null; then
    sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list >/etc/apt/sources.list.d/se-asan-src.list
  fi
  mv "$src_list.tmp" "$src_list"
  apt-get update -q >/dev/null
fi
# the installed server's version first, then the newest the mirror serves
# (the security suite's source pool may not be reachable)
candidates=$( (source_versions | grep -xF "$installed"; source_versions | sort -Vr) | awk '!seen[$0]++')
[ -n "$candidates" ] || { echo "asan_check: no source package for $PG_PKG" >&2; exit 1; }
build=$(mktemp -d /tmp/se-asan-pg.XXXXXX)
trap 'rm -rf "$build"' EXIT
version=
stamp_ok() {  # stamp_ok VERSION: is $PREFIX that version with these flags?
  [ "$(cat "$PREFIX/.se-asan-stamp" 2>/dev/null)" = "$1 | $SAN_CFLAGS | $(echo $CONFIGURE_OPTS)" ]
}
for v in $candidates; do
  if stamp_ok "$v"; then version=$v; break; fi
done
for v in $candidates; do
  [ -z "$version" ] || break
  if (cd "$build" && apt-get source -q --download-only "$PG_PKG=$v" >/dev/null 2>&1); then
    version=$v
    break
  fi
  rm -f "$build"/*
done
[ -n "$version" ] || { echo "asan_check: could not download the source of $PG_PKG ($candidates)" >&2; exit 1; }

if ! stamp_ok "$version"; then
  echo "asan_check: building PostgreSQL $version with sanitizers into $PREFIX"
  t0=$(date +%s)
  tar -C "$build" -xf "$build"/"${PG_PKG}"_*.orig.tar.*
  src=$(find "$build" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-*')
  # never remove a directory this script did not make
  if [ -n "$(ls -A "$PREFIX" 2>/dev/null)" ] && [ ! -e "$PREFIX/.se-asan-owned" ]; then
    echo "asan_check: $PREFIX exists and is not ours; set SE_ASAN_PREFIX" >&2
    exit 1
  fi
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  touch "$PREFIX/.se-asan-owned"
  # the release tarball holds the files bison and flex would generate
  # shellcheck disable=SC2086  # CONFIGURE_OPTS is a word list
  if ! (cd "$src" && ./configure --prefix="$PREFIX" $CONFIGURE_OPTS \
      CFLAGS="$SAN_CFLAGS" LDFLAGS="-fsanitize=address,undefined" \
      && make -j"$(nproc)" && make install) >"$build/build.log" 2>&1; then
    tail -40 "$build/build.log"
    echo "asan_check: the PostgreSQL build failed" >&2
    exit 1
  fi
  echo "$version | $SAN_CFLAGS | $(echo $CONFIGURE_OPTS)" >"$PREFIX/.se-asan-stamp"
  echo "asan_check: PostgreSQL build took $(( $(date +%s) - t0 )) s"
fi

# --- 2. search_engine with the same flags (from a copy: the tree's own
# objects stay those of the ordinary build)
PG_CONFIG=$PREFIX/bin/pg_config
export ASAN_OPTIONS=detect_leaks=0	# pg_config too is built with ASan
build_se=$(mktemp -d /tmp/se-asan-build.XXXXXX)
reports=$(mktemp -d /tmp/se-asan-reports.XXXXXX)
trap 'rm -rf "$build" "$build_se"' EXIT
cp -a "$TOP/." "$build_se/"
make -s -C "$build_se" clean PG_CONFIG="$PG_CONFIG" >/dev/null 2>&1
make -s -C "$build_se" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >/dev/null
make -s -C "$build_se" install PG_CONFIG="$PG_CONFIG" >/dev/null
case "$(PATH=$PREFIX/bin:$PATH pg_config --pkglibdir)" in
  "$PREFIX"/*) ;;
  *) echo "asan_check: pg_config on PATH does not resolve under $PREFIX" >&2; exit 1 ;;
esac

# --- 3. the chaos test.  Every process of the server (and psql) writes
# its ASan reports to $reports, and aborts.  UBSan's reports ignore any
# log_path beside ASan: they go to stderr, the server log, where 140 looks
# for "runtime error:".  Leak checks are off: memory contexts are released
# by process exit, by design.
chown postgres:postgres "$reports"
chmod 0700 "$reports"
t0=$(date +%s)
rc=0
PATH=$PREFIX/bin:$PATH SE_CHAOS_SECONDS=${SE_CHAOS_SECONDS:-60} \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:log_path=$reports/asan" \
  UBSAN_OPTIONS=print_stacktrace=1 \
  "$TOP/test/run_all.sh" test/tap/140_lifecycle_chaos.pl || rc=$?
echo "asan_check: chaos run took $(( $(date +%s) - t0 )) s"

found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
  echo "asan_check: ASan reports (kept in $reports):"
  for f in $found; do echo "--- $f"; head -60 "$f"; done
  rc=1
else
  rmdir "$reports"
fi
echo "asan_check: $( [ $rc = 0 ] && echo ok || echo FAILED ) after $(( $(date +%s) - t_start )) s"
exit $rc
