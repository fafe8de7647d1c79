#!/usr/bin/env python3
"""sim-s28-stamps.py STAMPS[.gz] PLANS_DIR: what held each op back in the
device-only replays of s28-gated-replay.patch (BENCH_STAMP=STAMPS: one
gated run per pattern and policy with every spin stamped by the GPU's
clock, each GPU's clock counted from the gate's opening).

For each run, per op: which constraint ended last (its stream's previous
op, a producer on another stream of its GPU, or one on the other GPU) and
how long after that the op started; then the same along the critical
path, walked back from the op that ended last.
"""
import gzip
import statistics as st
import sys


def plan(fn):
    lines = open(fn).read().split('\n')
    per = int(lines[0].split()[2])
    return per, [list(map(int, l.split()))[4:] for l in lines[1:] if l.strip()]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    op = gzip.open if argv[1].endswith('.gz') else open
    runs, cur = {}, None
    for line in op(argv[1], 'rt'):
        f = line.split()
        if line.startswith('#'):
            cur = (f[1], f[2])
            runs[cur] = []
        else:
            runs[cur].append(tuple(map(int, f[1:4])))
    for key, ops in runs.items():
        per, waits = plan('%s/%s-%s.plan' % (argv[2], key[0], key[1]))
        last, bound = {}, {}
        gaps = {'stream': [], 'local': [], 'peer': []}
        for k, (s, a, b) in enumerate(ops):
            c = [(ops[last[s]][2], 'stream', last[s])] if s in last else []
            for p in waits[k]:
                kind = 'peer' if ops[p][0] // per != s // per else 'local'
                c.append((ops[p][2], kind, p))
            bound[k] = max(c) if c else None
            if c:
                gaps[bound[k][1]].append(a - bound[k][0])
            last[s] = k
        k = max(range(len(ops)), key=lambda i: ops[i][2])
        path = {}
        while bound[k] is not None:
            e, kind, p = bound[k]
            path.setdefault(kind, []).append(ops[k][1] - e)
            k = p
        out = ['%s %s: makespan %.3f ms' %
               (key[0], key[1], (max(o[2] for o in ops) - min(o[1] for o in ops)) / 1e6)]
        for kind, v in gaps.items():
            if v:
                out.append('%s last %d times, median %.1f us' % (kind, len(v), st.median(v) / 1e3))
        out.append('critical path: ' + ', '.join(
            '%s %d steps, mean %.1f us' % (kind, len(v), st.mean(v) / 1e3) for kind, v in sorted(path.items())))
        print('; '.join(out))


if __name__ == '__main__':
    main(sys.argv)
