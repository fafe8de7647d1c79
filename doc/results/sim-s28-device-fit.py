#!/usr/bin/env python3
"""sim-s28-device-fit.py REPLAYS PLANS_DIR [REPLAYS...]: the sim's device
keys for waits across GPUs, from device-only replays of the placements.

The runs come from a build of s28-gated-replay.patch (beside this script):
with BENCH_REPLAY=1 and BENCH_DUMP_PLAN=PLANS_DIR, `cuasync-bench -b cuda
--submit graph` writes each policy's placement (PLANS_DIR/PATTERN-POLICY.plan:
per task its stream, spin and the tasks it waits for) and prints, per
pattern and policy, "REPLAY PATTERN POLICY graph G same_graph S streams R
gated D overflow O" on stderr, where D is the median time of that
placement's raw-streams replay with every stream held behind a gate
kernel until all of it was queued: the device alone. REPLAYS are files
holding those lines (several runs are averaged).

The model: an op starts when its stream's previous op and every producer
it waits for have ended (a producer on another GPU peer_wait_ns later),
plus launch_ns, plus peer_wait_busy_ns for each of its waits across GPUs;
it runs its spin plus the measured 176 ns over it. The three keys are
found by coordinate descent on the squared relative error over every
pattern and policy; prints them, and each cell's model against the runs.
"""
import sys


def load(fn):
    lines = open(fn).read().split('\n')
    head = lines[0].split()
    per = int(head[2])
    tasks = []
    for line in lines[1:]:
        if line.strip():
            f = list(map(int, line.split()))
            tasks.append((f[1], f[2], f[4:]))
    return per, tasks


def makespan(plan, launch, busy, peer, over=176):
    per, tasks = plan
    end = [0] * len(tasks)
    last = {}
    for k, (s, ns, waits) in enumerate(tasks):
        t = end[last[s]] if s in last else 0
        add = 0
        for p in waits:
            across = tasks[p][0] // per != s // per
            t = max(t, end[p] + (peer if across else 0))
            add += busy if across else 0
        end[k] = t + launch + add + ns + over
        last[s] = k
    return max(end)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    plans_dir = argv[2]
    runs = {}
    for fn in [argv[1]] + argv[3:]:
        for line in open(fn):
            f = line.split()
            if f and f[0] == 'REPLAY' and len(f) >= 11:
                runs.setdefault((f[1], f[2]), []).append(float(f[10]))
    real = {k: sum(v) / len(v) for k, v in runs.items()}
    plans = {k: load('%s/%s-%s.plan' % (plans_dir, k[0], k[1])) for k in real}

    def cost(p):
        return sum(((makespan(plans[k], *p) - real[k]) / real[k])**2
                   for k in real)

    p = [2000, 2000, 2000]
    c = cost(p)
    for _ in range(10):
        for i in range(3):
            for step in (800, 400, 200, 100):
                for sign in (1, -1):
                    q = list(p)
                    q[i] = max(0, q[i] + sign * step)
                    cq = cost(q)
                    if cq < c:
                        p, c = q, cq
    print('launch_ns = %d' % p[0])
    print('peer_wait_busy_ns = %d' % p[1])
    print('peer_wait_ns = %d' % p[2])
    print('# pattern policy runs real_ms model_ms model/real')
    for k in sorted(real):
        m = makespan(plans[k], *p)
        print('# %-9s %-13s %d %.3f %.3f %.3f' %
              (k[0], k[1], len(runs[k]), real[k] / 1e6, m / 1e6, m / real[k]))


if __name__ == '__main__':
    main(sys.argv)
