#!/usr/bin/env bash
# bench/contents_corpus.sh: the Debian Contents corpus for the load generator.
#
#   bench/contents_corpus.sh [OUTFILE]      (as root; default bench/data/contents.ndjson)
#
# apt-file downloads the archive's Contents indices (one line per file shipped
# in a package: "path<spaces>section/package[,section/package...]"); every
# line of every *_Contents-* index under /var/lib/apt/lists becomes one
# document {"path": ..., "section": ..., "package": ...} in Elasticsearch bulk
# format (action line with a sequential _id, then the source line).  About
# 7.3 million documents (bookworm main, amd64 + all, plus bookworm-updates),
# ~1 GB.  A path shipped by several packages (a few thousand lines) gets
# "section" and "package" as arrays, as Elasticsearch keyword fields allow.
# Paths that are not valid UTF-8 have the bad bytes replaced by U+FFFD.
# Streamed end to end (apt-helper cat-file | python), written to a temporary
# file and renamed, so a partial run never leaves a truncated corpus.
# The index body to use with it is bench/contents_corpus.json.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:-$BENCH/data/contents.ndjson}
LISTS=/var/lib/apt/lists

if [ "$(id -u)" != 0 ]; then
  echo "$0: run as root (it installs apt-file and updates its indices)" >&2
  exit 1
fi
if ! command -v apt-file >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q apt-file >/dev/null
fi
apt-file update >/dev/null

shopt -s nullglob
indices=()
for f in "$LISTS"/*_Contents-*; do
  case "$f" in *.diff_Index|*/partial/*) continue ;; esac
  indices+=("$f")
done
if [ ${#indices[@]} = 0 ]; then
  echo "$0: no *_Contents-* index under $LISTS after apt-file update" >&2
  exit 1
fi

mkdir -p "$(dirname "$OUT")"
tmp=$OUT.tmp.$$
trap 'rm -f "$tmp"' EXIT
for f in "${indices[@]}"; do
  echo "$(basename "$f")" >&2
  /usr/lib/apt/apt-helper cat-file "$f"
done | python3 -c '
import json, sys

dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
out = sys.stdout
n = 0
for raw in sys.stdin.buffer:
    line = raw.rstrip(b"\n").decode("utf-8", "replace")
    # the location list is the last whitespace-separated field; paths may hold spaces
    cut = max(line.rfind(" "), line.rfind("\t"))
    if cut <= 0:
        continue
    path = line[:cut].rstrip()
    if not path:
        continue
    sections, packages = [], []
    for loc in line[cut + 1:].split(","):
        section, _, package = loc.rpartition("/")
        sections.append(section)
        packages.append(package)
    doc = {"path": path,
           "section": sections[0] if len(sections) == 1 else sections,
           "package": packages[0] if len(packages) == 1 else packages}
    n += 1
    out.write("{\"index\":{\"_id\":\"%d\"}}\n" % n)
    out.write(dumps(doc))
    out.write("\n")
print("%d documents" % n, file=sys.stderr)
' >"$tmp"
mv "$tmp" "$OUT"
trap - EXIT
ls -l "$OUT" >&2
