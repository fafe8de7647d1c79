#!/usr/bin/env python3
"""sim-s26-calibrate.py CAL.csv... -- the sim's host costs from cuasync-bench's
submit_ns_per_op (the host time in cua_submit() per task, untraced) on the
calibration workloads of width 64 (trivial, random and stencil under
round-robin, least-loaded, heft and dmda), the median over the files of each
(pattern, policy):

  host_build_ns            trivial under round-robin (no edges, a decision
                           that costs next to nothing: the build)
  host_decide_ns POLICY    mean over random and stencil of POLICY's, less
                           the build (heft: round-robin's, its lookups cost
                           what round-robin's choices do)
  host_plan_ns heft        mean over random and stencil of heft's, less
                           round-robin's (the plan, made before the first
                           decision)

Prints the machine-file lines (twenty-sixth session)."""
import csv
import statistics
import sys


def main():
    vals = {}
    for path in sys.argv[1:]:
        rows = [r for r in csv.reader(l for l in open(path)
                                      if not l.startswith('#'))]
        head = rows[0]
        sub = head.index('submit_ns_per_op')
        for r in rows[1:]:
            if r[2] == 'cuasync' and r[sub]:
                vals.setdefault((r[0], r[1]), []).append(float(r[sub]))
    med = {k: statistics.median(v) for k, v in vals.items()}
    for k in sorted(med):
        print('# %-8s %-13s submit %6.0f ns/op (runs: %s)' %
              (k[0], k[1], med[k], ' '.join('%.0f' % x for x in vals[k])))

    def two(p):
        return (med[('random', p)] + med[('stencil', p)]) / 2

    build = med[('trivial', 'round-robin')]
    rr = two('round-robin') - build
    decide = {p: two(p) - build for p in ['least-loaded', 'dmda']}
    plan = two('heft') - two('round-robin')
    print('host_build_ns = %.0f' % build)
    print('host_plan_ns = 0, heft=%.0f' % max(plan, 0))
    print('host_decide_ns = %.0f, least-loaded=%.0f, heft=%.0f, dmda=%.0f' %
          (max(rr, 0), max(decide['least-loaded'], 0), max(rr, 0),
           max(decide['dmda'], 0)))


main()
