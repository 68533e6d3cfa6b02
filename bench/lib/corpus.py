#!/usr/bin/env python3
"""Debian packages corpus for the search_engine benchmarks.

  corpus.py build OUTDIR       apt-cache dumpavail joined with the English long
                               descriptions -> OUTDIR/debian.ndjson (ES bulk) and
                               OUTDIR/debian.jsonl (one document per line)
  corpus.py batches OUTDIR N   split OUTDIR/debian.ndjson into psql scripts of N
                               documents per statement: OUTDIR/batches_N/se.sql
                               (one search_engine.bulk call per batch) and
                               OUTDIR/batches_N/pg.sql (one INSERT per batch)

Only records that carry a Description-md5 are kept: those come from the
archive's Packages indices, so the corpus does not depend on what happens to
be installed locally (dpkg's status file has no Description-md5).
"""
import glob
import json
import os
import re
import subprocess
import sys

LISTS = "/var/lib/apt/lists"
APT_HELPER = "/usr/lib/apt/apt-helper"


def paragraphs(text):
    """Yield deb822 paragraphs as (dict of field -> raw value) in file order."""
    fields, name = {}, None
    for line in text.split("\n"):
        if not line.strip():
            if fields:
                yield fields
            fields, name = {}, None
        elif line[0] in " \t":
            if name is not None:
                fields[name] += "\n" + line
        else:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    if fields:
        yield fields


def long_description(raw):
    """Continuation lines without their leading space; ' .' is an empty line."""
    out = []
    for line in raw.split("\n"):
        line = line[1:] if line[:1] in (" ", "\t") else line
        out.append("" if line.strip() == "." else line.rstrip())
    return "\n".join(out).strip("\n")


def translations():
    """Description-md5 -> (summary, long description) from Translation-en."""
    found = {}
    files = sorted(glob.glob(os.path.join(LISTS, "*_i18n_Translation-en*")))
    if not files:
        sys.exit("no Translation-en index under %s (run apt-get update "
                 "-o Acquire::Languages=en)" % LISTS)
    for f in files:
        text = subprocess.run([APT_HELPER, "cat-file", f], check=True,
                              stdout=subprocess.PIPE).stdout.decode("utf-8", "replace")
        for p in paragraphs(text):
            md5, desc = p.get("Description-md5"), p.get("Description-en")
            if md5 and desc is not None:
                first, _, rest = desc.partition("\n")
                found[md5] = (first.strip(), long_description(rest))
    return found


DEP_NAME = re.compile(r"^\s*([^\s(\[<:]+)")


def depends(raw):
    """Package names of a Depends field: alternatives flattened, version
    constraints and :arch qualifiers stripped, first occurrence order."""
    names = []
    for group in raw.replace("\n", " ").split(","):
        for alt in group.split("|"):
            m = DEP_NAME.match(alt)
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return names


def to_long(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def build(outdir):
    tr = translations()
    dump = subprocess.run(["apt-cache", "dumpavail"], check=True,
                          stdout=subprocess.PIPE).stdout.decode("utf-8", "replace")
    docs, untranslated = {}, 0
    for p in paragraphs(dump):
        md5 = p.get("Description-md5")
        if not md5 or "Package" not in p:
            continue
        summary, description = tr.get(md5, (None, None))
        if summary is None:
            untranslated += 1
            first, _, rest = p.get("Description", "").partition("\n")
            summary, description = first.strip(), long_description(rest)
        doc = {"package": p["Package"], "version": p.get("Version"),
               "section": p.get("Section"), "priority": p.get("Priority"),
               "architecture": p.get("Architecture"),
               "maintainer": p.get("Maintainer"),
               "installed_size": to_long(p.get("Installed-Size")),
               "size": to_long(p.get("Size")),
               "depends": depends(p.get("Depends", "")),
               "homepage": p.get("Homepage"),
               "summary": summary, "description": description}
        doc = {k: v for k, v in doc.items() if v is not None}
        _id = "%s_%s_%s" % (doc["package"], doc.get("version", ""),
                            doc.get("architecture", ""))
        docs[(doc["package"], doc.get("architecture", ""), _id)] = (_id, doc)
    os.makedirs(outdir, exist_ok=True)
    ndjson = os.path.join(outdir, "debian.ndjson")
    jsonl = os.path.join(outdir, "debian.jsonl")
    with open(ndjson + ".tmp", "w", encoding="utf-8") as nd, \
         open(jsonl + ".tmp", "w", encoding="utf-8") as jl:
        for key in sorted(docs):
            _id, doc = docs[key]
            line = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            nd.write(json.dumps({"index": {"_id": _id}}, ensure_ascii=False,
                                separators=(",", ":")) + "\n" + line + "\n")
            jl.write(line + "\n")
    os.replace(ndjson + ".tmp", ndjson)
    os.replace(jsonl + ".tmp", jsonl)
    print("%d documents (%d without an English long description), "
          "%s: %.1f MB, %s: %.1f MB"
          % (len(docs), untranslated, ndjson, os.path.getsize(ndjson) / 1e6,
             jsonl, os.path.getsize(jsonl) / 1e6))


def sql_literal(s):
    # standard_conforming_strings is on: only quotes need doubling
    return "'" + s.replace("'", "''") + "'"


def batches(outdir, n):
    """One psql script per system, the same N documents per statement."""
    with open(os.path.join(outdir, "debian.ndjson"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    pairs = [(lines[i], lines[i + 1]) for i in range(0, len(lines), 2)]
    bdir = os.path.join(outdir, "batches_%d" % n)
    os.makedirs(bdir, exist_ok=True)
    se_path, pg_path = os.path.join(bdir, "se.sql"), os.path.join(bdir, "pg.sql")
    with open(se_path + ".tmp", "w", encoding="utf-8") as se, \
         open(pg_path + ".tmp", "w", encoding="utf-8") as pg:
        for s in (se, pg):
            s.write("\\set ON_ERROR_STOP on\n")
        for i in range(0, len(pairs), n):
            chunk = pairs[i:i + n]
            body = "".join(a + "\n" + d + "\n" for a, d in chunk)
            # the per-item errors flag is checked by the caller from the output
            se.write("SELECT (search_engine.bulk(%s, :'index', max_retries => 8))->>'errors';\n"
                     % sql_literal(body))
            arr = "[" + ",\n".join(d for _, d in chunk) + "]"
            pg.write("INSERT INTO :\"table\" (doc) SELECT d FROM "
                     "jsonb_array_elements(%s::jsonb) AS d;\n" % sql_literal(arr))
    os.replace(pg_path + ".tmp", pg_path)
    os.replace(se_path + ".tmp", se_path)
    print("%d batches of up to %d documents in %s" % ((len(pairs) + n - 1) // n, n, bdir))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "build":
        build(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "batches":
        batches(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
