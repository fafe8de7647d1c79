#!/usr/bin/env python3
"""tests/trace_check.py TRACE OPS WAITS: checks a trace of the perfetto
observer (tests/check_observers.c writes it): valid JSON, parsed by Python's
json module; OPS complete slices ("ph": "X"), one per op; no two slices of
one stream (pid, tid) overlapping; every op starting at or after the end of
each op it depends on (its "inputs"); WAITS flows of category "wait", each
from the end of a producer's slice to the start of a consumer's on another
stream. Exits 0, or 1 saying what is wrong."""
import json
import sys
from collections import defaultdict


def fail(why):
    print("trace_check: " + why)
    sys.exit(1)


def main():
    path, nops, nwaits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    if len(slices) != nops:
        fail("%d slices, expected %d" % (len(slices), nops))
    by_op = {}
    for e in slices:
        op = e["args"]["op"]
        if op in by_op:
            fail("op %d has two slices" % op)
        by_op[op] = e
    tracks = defaultdict(list)
    for e in slices:
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e))
    for key, v in tracks.items():
        v.sort(key=lambda t: t[0])
        for a, b in zip(v, v[1:]):
            if b[0] < a[1] - 0.0005:
                fail("slices of ops %d and %d overlap on stream %s" %
                     (a[2]["args"]["op"], b[2]["args"]["op"], key))
    deps = 0
    for e in slices:
        for p in e["args"].get("inputs", []):
            if p not in by_op:
                continue
            producer = by_op[p]
            deps += 1
            if e["ts"] < producer["ts"] + producer["dur"] - 0.0005:
                fail("op %d starts at %.3f us, before op %d, which it "
                     "depends on, ends at %.3f us" %
                     (e["args"]["op"], e["ts"], p,
                      producer["ts"] + producer["dur"]))
    flows = defaultdict(dict)
    for e in events:
        if e["ph"] in ("s", "f"):
            flows[(e["cat"], e["id"])][e["ph"]] = e
    waits = 0
    for (cat, fid), pair in flows.items():
        if "s" not in pair or "f" not in pair:
            fail("flow %s %d has no %s" % (cat, fid,
                                           "end" if "s" in pair else "start"))
        if pair["f"]["ts"] < pair["s"]["ts"]:
            fail("flow %s %d goes back in time" % (cat, fid))
        if (pair["s"]["pid"], pair["s"]["tid"]) == (pair["f"]["pid"],
                                                    pair["f"]["tid"]):
            fail("flow %s %d stays on one stream" % (cat, fid))
        waits += cat == "wait"
    if waits != nwaits:
        fail("%d wait flows, expected %d (the waits the core inserted)" %
             (waits, nwaits))
    print("trace_check: %d slices on %d streams, %d dependencies in order, "
          "%d wait flows" % (len(slices), len(tracks), deps, waits))


main()
