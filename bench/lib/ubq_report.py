#!/usr/bin/env python3
"""bench/out/ubq_raw.tsv (metric, key, run, value) -> the Markdown section of
bench/RESULTS.md for bench/ubq_bench.sh.

  ubq_report.py RAW                 the section on stdout
  ubq_report.py --splice FILE SECT  put SECT into FILE between the markers,
                                    replacing an earlier copy, else append
"""
import statistics
import sys
from collections import defaultdict

BEGIN = "<!-- ubq_bench: begin -->"
END = "<!-- ubq_bench: end -->"

if sys.argv[1] == "--splice":
    path, sect = sys.argv[2], open(sys.argv[3], encoding="utf-8").read().strip("\n")
    try:
        text = open(path, encoding="utf-8").read()
    except FileNotFoundError:
        text = ""
    block = "%s\n%s\n%s\n" % (BEGIN, sect, END)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    open(path, "w", encoding="utf-8").write(text)
    sys.exit(0)

meta = {}
raw = defaultdict(dict)          # (metric, key) -> {run: value}
keys = []
for line in open(sys.argv[1], encoding="utf-8"):
    metric, key, run, value = line.rstrip("\n").split("\t")
    if metric == "meta":
        meta[key] = value
        continue
    try:
        raw[(metric, key)][run] = float(value)
    except ValueError:
        raw[(metric, key)][run] = value
    if metric == "secs" and key not in keys:
        keys.append(key)

se_keys = [k for k in keys if k != "pg"]
first_keys = [k for k in keys if not k.startswith("repeat:")]
repeat_keys = [k for k in keys if k.startswith("repeat:")]


def vals(metric, key):
    return [raw[(metric, key)][r] for r in sorted(raw[(metric, key)])]


def mmm(metric, key, fmt):
    v = sorted(vals(metric, key))
    if not v:
        return "–"
    return " / ".join(fmt % x for x in (v[0], statistics.median(v), v[-1]))


def med(metric, key):
    return statistics.median(vals(metric, key))


def ratios(metric, a, b):
    ra, rb = raw[(metric, a)], raw[(metric, b)]
    return sorted(ra[r] / rb[r] for r in ra if r in rb)


def ratio_text(metric, a, b, fmt="%.2f×"):
    r = ratios(metric, a, b)
    text = fmt % (med(metric, a) / med(metric, b))
    text += " (per round: %s)" % ", ".join(fmt % x for x in r)
    return text


def label(k):
    if k == "pg":
        return "PostgreSQL UPDATE"
    pre = ""
    if k.startswith("repeat:"):
        pre, k = "repeated job: ", k[len("repeat:"):]
    if k == "slices=auto":
        k = "slices=auto (= 2)"
    return pre + "search_engine, " + k


docs = int(meta["docs"])
matches = int(meta["matches"])
share = 100.0 * matches / docs
out = []
w = out.append
w("## Sliced update-by-query (bench/ubq_bench.sh)\n")
w("%s documents in index `ubq` (2 shards) and in table `ubq_pg`: the Debian corpus "
  "(%s documents) %s times with distinct `_id`, identical `_source`. Each run updates "
  "the documents matching `{\"term\": {\"%s\": \"%s\"}}`: **%d documents = %.3f %%** "
  "(%s per copy × %s; average `_source` %s bytes, corpus average %s), with the script "
  "`ctx._source.bench_flag = params.v` (a `v` no earlier run used, so every run rewrites "
  "every matching document). Each cell is **min / median / max** over the rounds.\n"
  % (meta["docs"], meta["corpus_docs"], meta["copies"], meta["field"], meta["value"],
     matches, share, meta["matches_one_copy"], meta["copies"], meta["avg_src_bytes"],
     meta["avg_src_bytes_all"]))
w("- **first touch** (%s rounds): every search_engine run on a freshly loaded index, so the "
  "matching documents lie where the bulk load put them, spread over the segments; the "
  "PostgreSQL UPDATE closes each round (its table is not reloaded, VACUUM ANALYZE between "
  "runs; its first round is on the fresh table)." % meta["runs"])
w("- **repeated job** (%s rounds): each timed run right after an untimed run with the same "
  "`slices`, i.e. it rewrites documents that the same job wrote last time, in the order "
  "that job wrote them.\n" % meta["repeat_runs"])
w("- date: %s; machine: %s CPUs (`nproc`), %s RAM, %s, %s; load average %s at the "
  "start, %s at the end (the 2 CPUs were shared with other sessions)"
  % (meta["date"], meta["nproc"], meta["memory"], meta["cpu"], meta["kernel"],
     meta["loadavg_start"], meta["loadavg_end"]))
w("- PostgreSQL %s; search_engine at commit %s (`git archive` built into a private "
  "copy of the PostgreSQL installation); `search_engine.task_threads` = %s, "
  "`write_threads` = %s, `merge_threads` = %s; index: `translog.durability` request, "
  "default `refresh_interval` (1s); `shared_buffers` = %s, `max_wal_size` = %s"
  % (meta["postgres"], meta["commit"], meta["search_engine.task_threads"],
     meta["search_engine.write_threads"], meta["search_engine.merge_threads"],
     meta["shared_buffers"], meta["max_wal_size"]))
w("- whole run: %s s (load: search_engine %.0f s, PostgreSQL %.0f s)\n"
  % (meta["elapsed"], raw[("load_s", "se")]["0"], raw[("load_s", "pg")]["0"]))

w("| run | updated docs/s | wall s | server CPU s | docs per server CPU-s | server cores busy | others' load, cores |")
w("|---|---:|---:|---:|---:|---:|---:|")


def trio(xs, fmt):
    xs = sorted(xs)
    return " / ".join(fmt % x for x in (xs[0], statistics.median(xs), xs[-1]))


for k in keys:
    cores = [c / s for c, s in zip(vals("server_cpu_s", k), vals("secs", k))]
    other = [max(0.0, (m - c) / s) for m, c, s in
             zip(vals("machine_cpu_s", k), vals("server_cpu_s", k), vals("secs", k))]
    eff = [matches / c for c in vals("server_cpu_s", k)]
    w("| %s | %s | %s | %s | %s | %s | %s |"
      % (label(k), mmm("docs_per_s", k, "%.0f"), mmm("secs", k, "%.2f"),
         mmm("server_cpu_s", k, "%.2f"), trio(eff, "%.0f"), trio(cores, "%.2f"), trio(other, "%.2f")))
w("")
w("Server CPU by process, seconds, median over the rounds (task workers run the "
  "slices: scan, `_source`, script; write workers index and write the translog; "
  "merge worker; the calling backend; other PostgreSQL processes):\n")
w("| run | task workers | write workers | merge worker | backend | other |")
w("|---|---:|---:|---:|---:|---:|")
for k in keys:
    w("| %s | %s |" % (label(k), " | ".join("%.2f" % med("cpu_" + p, k)
                                            for p in ("task", "write", "merge", "backend", "other"))))
w("")

w("Targets (ratios of the medians; per round in parentheses):\n")


def targets(pre, title):
    k1, ka, k5 = pre + "slices=1", pre + "slices=auto", pre + "slices=500"
    if ka in keys and k1 in keys:
        r = med("docs_per_s", ka) / med("docs_per_s", k1)
        w("- %s: slices=auto vs slices=1: **%s** the docs/s — target ≥ 1.6×: %s"
          % (title, ratio_text("docs_per_s", ka, k1), "met" if r >= 1.6 else "**not met**"))
    if k5 in keys and ka in keys:
        r = med("docs_per_s", k5) / med("docs_per_s", ka)
        w("- %s: slices=500 vs slices=auto: **%s** the docs/s — target within 10 %%: %s"
          % (title, ratio_text("docs_per_s", k5, ka), "met" if r >= 0.9 else "**not met**"))
    if "pg" in keys:
        for k in (k1, ka, k5):
            if k not in keys:
                continue
            r = med("docs_per_s", k) / med("docs_per_s", "pg")
            w("- %s: %s vs PostgreSQL UPDATE: **%s** the docs/s%s"
              % (title, k[len(pre):], ratio_text("docs_per_s", k, "pg"),
                 (" — target ≥ 3×: %s" % ("met" if r >= 3 else "**not met**")) if k == ka else ""))


targets("", "first touch")
if repeat_keys:
    targets("repeat:", "repeated job")
w("")

# Background merges land in some runs and not others (the merge worker
# starts when a shard passes 10 segments): the same figures without them.
nomerge = {}
for k in se_keys:
    runs = [r for r, c in raw[("cpu_merge", k)].items() if c == 0]
    if runs:
        nomerge[k] = (statistics.median(raw[("docs_per_s", k)][r] for r in runs), len(runs))
if nomerge:
    w("Without the runs during which the background merge worker ran (median docs/s, "
      "number of such runs): %s."
      % "; ".join("%s %.0f (%d of %d)" % (label(k), v, n, len(raw[("secs", k)]))
                  for k, (v, n) in nomerge.items()))
    parts = []
    for pre, title in (("", "first touch"), ("repeat:", "repeated job")):
        k1, ka, k5 = pre + "slices=1", pre + "slices=auto", pre + "slices=500"
        if k1 in nomerge and ka in nomerge:
            parts.append("%s auto/1 %.2f×" % (title, nomerge[ka][0] / nomerge[k1][0]))
        if k1 in nomerge and k5 in nomerge:
            parts.append("%s 500/1 %.2f×" % (title, nomerge[k5][0] / nomerge[k1][0]))
        if ka in nomerge and k5 in nomerge:
            parts.append("%s 500/auto %.2f×" % (title, nomerge[k5][0] / nomerge[ka][0]))
    if parts:
        w("Ratios of those: %s.\n" % "; ".join(parts))
if raw[("reload_s", "slices=1")] or raw[("reload_s", "slices=auto")]:
    rl = [x for k in first_keys for x in raw[("reload_s", k)].values()]
    w("Reloads before the first-touch runs (delete, create, bulk load, refresh; untimed): "
      "%s s.\n" % trio(rl, "%.1f"))

w("Every run, in execution order (the order of the slices settings rotates from round to round; "
  "\"waited\" = seconds spent before the run waiting for the other processes of the machine to "
  "use < 0.3 cores (at most 60 s); the repeated-job runs' untimed predecessors are not listed; "
  "\"settle\" = refresh + flush + VACUUM ANALYZE + CHECKPOINT + wait until the server is idle, "
  "after the run):\n")
w("| # | round | run | wall s | docs/s | server CPU s (task/write/merge/backend/other) | machine CPU s | "
  "waited s | load avg | segments before | deleted docs before | batches | docs per slice min–max (empty) | settle s |")
w("|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|")
rows = []
for k in keys:
    for r, o in raw[("order", k)].items():
        rows.append((o, r, k))
for o, r, k in sorted(rows):
    g = lambda m, fmt="%s": (fmt % raw[(m, k)][r]) if r in raw[(m, k)] else "–"
    sl = "–"
    if r in raw[("slice_updated_min", k)]:
        sl = "%d–%d (%d)" % (raw[("slice_updated_min", k)][r], raw[("slice_updated_max", k)][r],
                             raw[("slices_empty", k)][r])
    cpu = "%s (%s)" % (g("server_cpu_s", "%.2f"), "/".join(g("cpu_" + p, "%.2f") for p in
                                                          ("task", "write", "merge", "backend", "other")))
    w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
      % (o, r, label(k), g("secs", "%.3f"), g("docs_per_s", "%.0f"), cpu,
         g("machine_cpu_s", "%.2f"), g("gate_wait_s", "%.0f"), g("loadavg1", "%.2f"), g("segments_before", "%d"),
         g("deleted_before", "%d"), g("batches", "%d"), sl, g("settle_s", "%.1f")))
w("")
w("Sizes: index `store.size` %.0f MB after the load, %.0f MB at the end; table "
  "(heap, TOAST, primary key, GIN, btree) %.0f MB after the load, %.0f MB at the end."
  % (raw[("size", "se")]["loaded"] / 1e6, raw[("size", "se")]["end"] / 1e6,
     raw[("size", "pg")]["loaded"] / 1e6, raw[("size", "pg")]["end"] / 1e6))
w("PostgreSQL's plan: `%s`.\n" % meta["plan"])
w("Commands (as root):\n")
w("```sh")
w("bench/ubq_bench.sh    # COPIES=%s RUNS=%s REPEAT_RUNS=%s FIELD=%s VALUE=%s SLICES=\"%s\"; ~%d min"
  % (meta["copies"], meta["runs"], meta["repeat_runs"], meta["field"], meta["value"], meta["slices"],
     round(int(meta["elapsed"]) / 60)))
w("# which runs: bench/lib/private_install.sh (git archive HEAD -> make, installed into a copy of")
w("#   /usr/lib/postgresql/15 + /usr/share/postgresql/15 under /var/tmp/search_engine_ubq_install);")
w("#   test/pg_instance.sh start /var/tmp/search_engine_ubq 5481 \"shared_buffers = '2GB'\" \"maintenance_work_mem = '1GB'\"")
w("#     \"max_wal_size = '16GB'\" \"checkpoint_timeout = '30min'\" \"search_engine.write_threads = 2\" \"search_engine.task_threads = 2\";")
w("#   \\copy bench/data/debian.jsonl into bench.corpus; search_engine.bulk() of 1000 documents at a time x %s copies;" % meta["copies"])
w("#   INSERT INTO ubq_pg ... ; CREATE INDEX ... USING gin (tsv); CREATE INDEX ... ((doc->>'%s')); VACUUM ANALYZE;" % meta["field"])
w("#   per run: SELECT search_engine.update_by_query('ubq', '{\"query\": {\"term\": {\"%s\": \"%s\"}},"
  % (meta["field"], meta["value"]))
w("#              \"script\": {\"source\": \"ctx._source.bench_flag = params.v\", \"params\": {\"v\": N}}}', slices => S)")
w("#            UPDATE ubq_pg SET doc = jsonb_set(doc, '{bench_flag}', to_jsonb(N)) WHERE doc->>'%s' = '%s'; COMMIT"
  % (meta["field"], meta["value"]))
w("bench/lib/ubq_probe.sh   # SEQ=\"500 auto 1 500\": per-run CPU of the task/write workers (index only)")
w("```\n")
w("Raw figures: `bench/out/ubq_raw.tsv`; the section is regenerated by "
  "`python3 bench/lib/ubq_report.py bench/out/ubq_raw.tsv`.\n")
print("\n".join(out))
