#!/usr/bin/env python3
"""tests/trace_check.py TRACE OPS WAITS [TIMING [DEVICES]]: checks a trace of the perfetto
observer (tests/check_observers.c writes it): valid JSON, parsed by Python's
json module; OPS complete slices ("ph": "X"), one per op; no two slices of
one stream (pid, tid) overlapping; every op starting at or after the end of
each op it depends on (its "inputs"); WAITS flows of category "wait", each
from the end of a producer's slice to the start of a consumer's on another
stream; a summary (otherData.summary) that agrees with the slices: OPS
ops, WAITS waits, the makespan of the slices, a critical path no longer
than it, streams adding up to the ops; with TIMING (measured,
end-measured or estimated, or several joined by '|'), every slice's times
from there, the same for all; with DEVICES, slices on that many devices
(processes), each named as a device in the metadata. Exits 0, or 1 saying what is
wrong."""
import json
import sys
from collections import defaultdict


def fail(why):
    print("trace_check: " + why)
    sys.exit(1)


def main():
    path, nops, nwaits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    timing = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    ndev = int(sys.argv[5]) if len(sys.argv) > 5 else None
    # Strict UTF-8, as JSON is (RFC 8259): a byte that is not fails here.
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    if len(slices) != nops:
        fail("%d slices, expected %d" % (len(slices), nops))
    pids = set(e["pid"] for e in slices)
    if ndev is not None:
        if len(pids) != ndev:
            fail("slices on %d device(s), expected %d" % (len(pids), ndev))
        named = set(e["pid"] for e in events
                    if e["ph"] == "M" and e["name"] == "process_name")
        if not pids <= named:
            fail("a device's process has no name")
    by_op = {}
    timings = set(e["args"]["timing"] for e in slices)
    if timing is not None and (len(timings) != 1 or
                               not timings <= set(timing.split("|"))):
        fail("slices timed %s, expected all %s" %
             (", ".join(sorted(timings)), timing))
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
    summary = doc["otherData"]["summary"]
    if summary["ops"] != nops or summary["waits"] != nwaits:
        fail("the summary counts %d ops and %d waits" %
             (summary["ops"], summary["waits"]))
    if sum(st["ops"] for st in summary["streams"]) != nops:
        fail("the summary's streams do not add up to the ops")
    makespan, path = summary["makespan_us"], summary["critical_path_us"]
    first = min(e["ts"] for e in slices)
    last = max(e["ts"] + e["dur"] for e in slices)
    if abs(makespan - (last - first)) > 0.002:
        fail("the summary's makespan %.3f us is not the slices' %.3f us" %
             (makespan, last - first))
    if path > makespan + 0.002 or path <= 0:
        fail("critical path %.3f us against a makespan of %.3f us" %
             (path, makespan))
    for st in summary["streams"]:
        if st["busy_us"] > makespan + 0.002 or st["idle_us"] < 0:
            fail("stream %d/%d: busy %.3f us, idle %.3f us" %
                 (st["device"], st["stream"], st["busy_us"], st["idle_us"]))
    print("trace_check: %d slices on %d streams of %d device(s), "
          "%d dependencies in order, "
          "%d wait flows; makespan %.1f us, critical path %.1f us" %
          (len(slices), len(tracks), len(pids), deps, waits, makespan, path))


main()
