#!/usr/bin/env bash
# Build the Debian packages corpus (~64k documents) that any Debian machine
# can build from its own apt indices: `apt-cache dumpavail` joined on
# Description-md5 with the English long descriptions (Translation-en).
#   bench/make_debian_corpus.sh [OUTDIR]     (default bench/data; run as root
#                                             if python3 or the indices are missing)
# Writes OUTDIR/debian.ndjson (ES bulk: action line + document line) and
# OUTDIR/debian.jsonl (one document per line), sorted by package name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/data}

export DEBIAN_FRONTEND=noninteractive
if ! command -v python3 >/dev/null 2>&1; then
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends python3 >/dev/null
fi
# Docker images set Acquire::Languages "none", and any later plain
# `apt-get update` deletes the Translation files again: fetch them when absent.
if ! compgen -G '/var/lib/apt/lists/*_i18n_Translation-en*' >/dev/null; then
  # an unreachable third-party source fails the update but not our files
  apt-get update -q -o Acquire::Languages=en >/dev/null || true
fi
python3 "$here/lib/corpus.py" build "$out"
