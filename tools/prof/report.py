#!/usr/bin/env python3
"""tools/prof/report.py FILE [TOP] [FILTER]: the profile of sample.c's
samples, per thread.

For each thread: self time by function, inclusive time by function, and
for time spent outside cuasync's code (libc, libcuda, the vDSO), the first
of cuasync's functions on the stack. Functions are named by addr2line
(stripped objects, as libcuda, show as ??). FILTER (part of a function
name) keeps, of the main thread's samples, those whose stack holds it:
bench_cua_ leaves out cuasync-bench's raw baselines, bench_raw_ keeps only
them. TOP: rows per table (default 25)."""
import collections
import signal
import subprocess
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)
path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
filt = sys.argv[3] if len(sys.argv) > 3 else None
rows = []
addrs = collections.defaultdict(set)
with open(path) as f:
    for line in f:
        parts = line.split()
        if not parts:
            continue
        tid = int(parts[0])
        fr = []
        for p in parts[1:]:
            obj, _, vma = p.rpartition("@")
            v = int(vma, 16)
            fr.append((obj, v))
            addrs[obj].add(v)
        rows.append((tid, fr))
names = {}
for obj, vs in addrs.items():
    vl = sorted(vs)
    short = obj.rsplit("/", 1)[-1]
    fns = ["??"] * len(vl)
    if obj not in ("?",) and "vdso" not in obj and "libcuda" not in obj:
        try:
            p = subprocess.run(["addr2line", "-f", "-e", obj] + [hex(v) for v in vl],
                               capture_output=True, text=True, timeout=600)
            out = p.stdout.split("\n")
            for i in range(len(vl)):
                if 2 * i < len(out):
                    fns[i] = out[2 * i]
        except Exception:
            pass
    for v, fn in zip(vl, fns):
        names[(obj, v)] = short + ":" + fn
OURS = ("libcuasync", "cuda.so", "host.so", "cuasync-bench", "bench-ops",
        "round-robin", "single-stream", "least-loaded", "affinity")
def ours(n):
    return n.startswith(OURS)

bytid = collections.defaultdict(list)
for tid, fr in rows:
    st = [names[x] for x in fr]
    if filt and any(x.endswith(':main') for x in st) and not any(filt in s for s in st):
        continue
    bytid[tid].append(st)
total = sum(len(v) for v in bytid.values())
for tid, sts in sorted(bytid.items(), key=lambda kv: -len(kv[1])):
    n = len(sts)
    if n < 5:
        continue
    selfc = collections.Counter(s[0] for s in sts)
    inc = collections.Counter()
    outside = collections.Counter()
    for s in sts:
        for fn in set(s):
            inc[fn] += 1
        if not ours(s[0]):
            first = next((x for x in s if ours(x)), "?")
            outside[s[0].split(":")[0] + " <- " + first] += 1
    print("== tid %d: %d samples (%.1f%% of all)" % (tid, n, 100.0 * n / total))
    print("  self:")
    for k, v in selfc.most_common(top):
        print("   %6.2f%% %s" % (100.0 * v / n, k))
    print("  inclusive:")
    for k, v in inc.most_common(top + 10):
        print("   %6.2f%% %s" % (100.0 * v / n, k))
    print("  outside our code, by our first caller:")
    for k, v in outside.most_common(top):
        print("   %6.2f%% %s" % (100.0 * v / n, k))
