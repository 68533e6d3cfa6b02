# Private build of the committed tree (sourced after lib/common.sh).
#
# private_install DIR [REV]
#   Copies the PostgreSQL 15 installation (/usr/lib/postgresql/15 and
#   /usr/share/postgresql/15) to DIR/root/usr/..., extracts `git archive REV`
#   (default HEAD) of the repository into DIR/src, builds it there against
#   the system's headers and installs it into the copy (DESTDIR=DIR/root).  Then puts the copy's bin/
#   first in PATH: PostgreSQL finds lib/ and share/ relative to its binaries,
#   so a server started from it (test/pg_instance.sh uses `pg_config
#   --bindir`) loads this search_engine.so and not the system-wide one that
#   others rebuild.  Sets PRIVATE_REV (short commit) and PRIVATE_PGBIN.
private_install() {
  local dir=$1 rev=${2:-HEAD} pgver=15 root src
  root=$dir/root
  src=$dir/src
  PRIVATE_REV=$(git -C "$REPO" rev-parse --short "$rev")
  rm -rf "$root" "$src"
  mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$src"
  cp -a "/usr/lib/postgresql/$pgver" "$root/usr/lib/postgresql/"
  cp -a "/usr/share/postgresql/$pgver" "$root/usr/share/postgresql/"
  # the system copy may hold someone's search_engine: start from none
  rm -f "$root/usr/lib/postgresql/$pgver/lib/search_engine.so" \
        "$root/usr/share/postgresql/$pgver/extension/search_engine"*
  git -C "$REPO" archive "$rev" | tar -x -C "$src"
  PRIVATE_PGBIN=$root/usr/lib/postgresql/$pgver/bin
  make -C "$src" -s -j"$(nproc)" PG_CONFIG="/usr/lib/postgresql/$pgver/bin/pg_config" >/dev/null
  make -C "$src" -s install DESTDIR="$root" PG_CONFIG="/usr/lib/postgresql/$pgver/bin/pg_config" >/dev/null
  chmod -R a+rX "$dir"
  export PATH=$PRIVATE_PGBIN:$PATH
  # refuse to go on if the copy does not resolve its own directories
  case "$(pg_config --pkglibdir)" in
    "$root"/*) ;;
    *) echo "private_install: pg_config --pkglibdir is $(pg_config --pkglibdir), not under $root" >&2
       return 1 ;;
  esac
  [ -f "$(pg_config --pkglibdir)/search_engine.so" ] || {
    echo "private_install: no search_engine.so in $(pg_config --pkglibdir)" >&2; return 1; }
}
