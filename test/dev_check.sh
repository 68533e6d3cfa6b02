#!/usr/bin/env bash
# Build this working tree into a private copy of the PostgreSQL installation
# and run every suite (test/run_all.sh) against it.  Several checkouts on one
# machine can then build and test side by side without overwriting each
# other's installed search_engine.so, and without touching the system copy.
#
#   test/dev_check.sh            # private root under /tmp/se-dev-<tree name>
#   SE_DEV_ROOT=/tmp/x test/dev_check.sh
#   test/dev_check.sh --install-only   # build + install, print the PATH to use
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$(pwd)
PGVER=15
ROOT=${SE_DEV_ROOT:-/tmp/se-dev-$(basename "$TOP")}/root
SYS_PGCONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config

if [ ! -x "$ROOT/usr/lib/postgresql/$PGVER/bin/postgres" ]; then
  mkdir -p "$ROOT/usr/lib/postgresql" "$ROOT/usr/share/postgresql"
  cp -a "/usr/lib/postgresql/$PGVER" "$ROOT/usr/lib/postgresql/"
  cp -a "/usr/share/postgresql/$PGVER" "$ROOT/usr/share/postgresql/"
fi
# headers for the unit tests (pg_config of the copy points here)
mkdir -p "$ROOT/usr/include"
[ -e "$ROOT/usr/include/postgresql" ] || ln -s /usr/include/postgresql "$ROOT/usr/include/postgresql"
rm -f "$ROOT/usr/lib/postgresql/$PGVER/lib/search_engine.so"
make -s -j"$(nproc)" PG_CONFIG="$SYS_PGCONFIG" >/dev/null
make -s install DESTDIR="$ROOT" PG_CONFIG="$SYS_PGCONFIG" >/dev/null
chmod -R a+rX "$(dirname "$ROOT")"
PGBIN=$ROOT/usr/lib/postgresql/$PGVER/bin
case "$(PATH=$PGBIN:$PATH pg_config --pkglibdir)" in
  "$ROOT"/*) ;;
  *) echo "dev_check: the private pg_config does not resolve under $ROOT" >&2; exit 1 ;;
esac
if [ "${1:-}" = --install-only ]; then
  echo "export PATH=$PGBIN:\$PATH"
  exit 0
fi
# a regress port of our own: other checkouts may be testing at the same time
port=$((20000 + $(echo "$TOP" | cksum | cut -d' ' -f1) % 20000))
PATH=$PGBIN:$PATH SE_REGRESS_PORT=$port exec test/run_all.sh "$@"
