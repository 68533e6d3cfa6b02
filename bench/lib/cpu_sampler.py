#!/usr/bin/env python3
"""Sample the on-CPU time of some processes (/proc/PID/schedstat, ns) every
INTERVAL ms until STOPFILE exists; then print, per process, its CPU seconds
and, for the named groups, how the wall time splits by the number of the
group's processes that were running (>= 50 % of an interval) at once.

  cpu_sampler.py STOPFILE INTERVAL_MS name=pid[,pid...] ...
"""
import os
import sys
import time

stop, interval = sys.argv[1], int(sys.argv[2]) / 1000.0
groups = {}
for arg in sys.argv[3:]:
    name, pids = arg.split("=")
    groups[name] = [int(p) for p in pids.split(",") if p]
pids = sorted({p for ps in groups.values() for p in ps})


def read():
    out = {}
    for p in pids:
        try:
            with open("/proc/%d/schedstat" % p) as f:
                out[p] = int(f.read().split()[0])
        except OSError:
            out[p] = None
    return out


samples = [(time.monotonic(), read())]
while not os.path.exists(stop):
    time.sleep(interval)
    samples.append((time.monotonic(), read()))
samples.append((time.monotonic(), read()))

wall = samples[-1][0] - samples[0][0]
print("wall %.3f s, %d samples" % (wall, len(samples)))
for name, ps in groups.items():
    busy = [0.0] * (len(ps) + 1)
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        dt = t1 - t0
        n = 0
        for p in ps:
            if a.get(p) is not None and b.get(p) is not None and (b[p] - a[p]) / 1e9 >= 0.5 * dt:
                n += 1
        busy[n] += dt
    cpu = []
    for p in ps:
        a, b = samples[0][1].get(p), samples[-1][1].get(p)
        cpu.append("%d: %.2f s" % (p, (b - a) / 1e9 if a is not None and b is not None else float("nan")))
    print("%s: cpu %s; wall with 0..%d running: %s" % (
        name, ", ".join(cpu), len(ps), ", ".join("%d: %.2f s" % (i, x) for i, x in enumerate(busy))))
