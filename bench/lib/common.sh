# Shared by bench/quickstart.sh and bench/foundation_bench.sh (sourced).
# Expects $PORT and $PGDIR; run as root, PostgreSQL runs as postgres.

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$BENCH/.." && pwd)
DATA=$BENCH/data
BATCH_SIZE=${BATCH_SIZE:-1000}
BATCHES=$DATA/batches_$BATCH_SIZE

as_pg() { runuser -u postgres -- "$@"; }
# psql as the postgres superuser over the Unix socket in /tmp
sql() { PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$PORT" -U postgres -d postgres "$@"; }
sqlv() { sql -At "$@"; }
now() { date +%s.%N; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "$0: run as root (it installs packages and starts PostgreSQL as postgres)" >&2
    exit 1
  fi
}

# Debian packages, build, install (quiet; make is a no-op when up to date).
# build_install: build the working tree and install it system-wide (the
# quickstart).  build_private: build the committed HEAD into a private copy of the PostgreSQL installation
# ($PRIVDIR, default next to $PGDIR) and put it first in PATH, so that a
# benchmark measures exactly one commit and never replaces the system-wide
# search_engine.so that tests or other checkouts use.
build_install() {
  "$REPO/test/setup_deps.sh"
  make -C "$REPO" -s -j"$(nproc)" >/dev/null
  make -C "$REPO" -s install >/dev/null
}

build_private() {
  "$REPO/test/setup_deps.sh"
  source "$BENCH/lib/private_install.sh"
  PRIVDIR=${PRIVDIR:-$PGDIR.install}
  # BENCH_REV: measure another commit with this checkout's scripts (A/B)
  echo "== building git archive ${BENCH_REV:-HEAD} into $PRIVDIR"
  private_install "$PRIVDIR" "${BENCH_REV:-HEAD}"
}

# A fresh server for a latency benchmark: the build (unless SKIP_BUILD=1:
# the installation on PATH), the corpus, and $PGDIR started anew (extra
# args: postgresql.conf lines) and removed at exit.
latency_server() {
  need_root
  [ "${SKIP_BUILD:-0}" = 1 ] || build_private
  corpus_ready
  [ -d "$PGDIR" ] && latency_server_cleanup
  trap latency_server_cleanup EXIT
  server_start "$@"
  echo "search_threads: $(sqlv -c 'SHOW search_engine.search_threads'), nproc $(nproc)"
}
latency_server_cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }

server_running() {
  [ -f "$PGDIR/PG_VERSION" ] &&
    as_pg "$(pg_config --bindir)/pg_ctl" -D "$PGDIR" status >/dev/null 2>&1
}

# Start the server on $PORT in $PGDIR unless it is already up; extra args are
# postgresql.conf lines used when the directory is created.
server_start() {
  if ! server_running; then
    if pg_isready -q -h /tmp -p "$PORT" || pg_isready -q -h 127.0.0.1 -p "$PORT"; then
      echo "$0: port $PORT is taken by another server; choose another with PORT=..." >&2
      exit 1
    fi
    "$REPO/test/pg_instance.sh" start "$PGDIR" "$PORT" "$@"
  fi
  sql -c "CREATE EXTENSION IF NOT EXISTS search_engine"
}

# The corpus and its batch scripts (rebuilt when missing or stale).
corpus_ready() {
  if [ ! -s "$DATA/debian.ndjson" ] || [ ! -s "$DATA/debian.jsonl" ]; then
    "$BENCH/make_debian_corpus.sh" "$DATA"
  fi
  if [ ! -s "$BATCHES/se.sql" ] || [ "$DATA/debian.ndjson" -nt "$BATCHES/se.sql" ]; then
    python3 "$BENCH/lib/corpus.py" batches "$DATA" "$BATCH_SIZE" >/dev/null
  fi
  CORPUS_DOCS=$(wc -l < "$DATA/debian.jsonl")
  NBATCHES=$(grep -c '^SELECT' "$BATCHES/se.sql")
}

# (Re)create search_engine index $1 with bench/lib/debian_index.json.
se_create_index() {
  sql -c "SELECT search_engine.delete_index('$1') FROM search_engine.indices WHERE index = '$1'" >/dev/null
  sql -v index="$1" -v body="$(cat "$BENCH/lib/debian_index.json")" >/dev/null <<'SQL'
SELECT search_engine.create_index(:'index', :'body');
SQL
}

# Feed every batch to search_engine.bulk into index $1, one psql session,
# one statement (and transaction) per batch; then refresh.  Fails if any
# item failed.  Prints the elapsed seconds, then those of the final refresh.
se_ingest() {
  local t0 t1 t2 out
  t0=$(now)
  out=$(sql -At -v index="$1" -f "$BATCHES/se.sql")
  t1=$(now)
  sql -c "SELECT search_engine.refresh('$1')" >/dev/null
  t2=$(now)
  if [ "$(grep -c '^false$' <<<"$out")" != "$NBATCHES" ]; then
    echo "bulk into $1 reported item errors:" >&2
    grep -v '^false$' <<<"$out" | head -5 >&2
    return 1
  fi
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", c - a, c - b }'
}

se_docs_count() {
  sqlv -c "SELECT \"docs.count\" FROM search_engine.indices WHERE index = '$1'"
}
