# sim-s25-compare.py SIM.csv REAL.csv...: each cell of the simulated makespans over each real run, and the orders of
# two policies that hold in every real run (twenty-fifth session), and of
# those whose real runs do not overlap at all (twenty-eighth session).
import csv, sys, statistics
def load(p):
    d = {}
    for r in csv.reader(l for l in open(p) if not l.startswith('#')):
        if r[0] == 'workload': continue
        d[(r[0], r[1])] = float(r[13]) if r[13] else float('nan')
    return d
sim = load(sys.argv[1]); reals = [load(p) for p in sys.argv[2:]]
W = [w for w in ['stencil', 'random', 'tree', 'multigpu'] if (w, 'round-robin') in sim]
pols = ['round-robin', 'least-loaded', 'heft', 'dmda']
lo, hi = 9, 0
print("%-9s %-13s %8s %8s %8s %8s  %s" % ("pattern", "policy", "sim ms", "real min", "real max", "spread", "sim/real (each run)"))
for w in W:
    for p in pols:
        rv = [r[(w, p)] for r in reals]
        s = sim[(w, p)]
        rat = [s / x for x in rv]
        lo = min(lo, min(rat)); hi = max(hi, max(rat))
        print("%-9s %-13s %8.3f %8.3f %8.3f %8.3f  %s" % (w, p, s/1e6, min(rv)/1e6, max(rv)/1e6, max(rv)/min(rv), " ".join("%.3f" % x for x in rat)))
print("sim/real range %.3f-%.3f" % (lo, hi))
# ranking: pairs that keep their order in every real run, and of those the
# pairs whose real runs do not overlap at all, every run of one policy
# below every run of the other (twenty-eighth session)
held, apart = [0, 0, []], [0, 0, []]
for w in W:
    for i in range(len(pols)):
        for j in range(i+1, len(pols)):
            a, b = pols[i], pols[j]
            ra = [r[(w, a)] for r in reals]
            rb = [r[(w, b)] for r in reals]
            signs = set(x < y for x, y in zip(ra, rb))
            if len(signs) != 1:
                continue
            order = signs.pop()
            kept = (sim[(w, a)] < sim[(w, b)]) == order
            for c, counts in ((True, held), (max(ra) < min(rb) or max(rb) < min(ra), apart)):
                if c:
                    counts[0] += 1
                    counts[1] += kept
                    if not kept:
                        counts[2].append("%s: %s vs %s" % (w, a, b))
print("orders held in every real run: %d; the sim keeps %d; not: %s" % (held[0], held[1], "; ".join(held[2])))
print("orders whose real runs do not overlap: %d; the sim keeps %d; not: %s" % (apart[0], apart[1], "; ".join(apart[2])))
