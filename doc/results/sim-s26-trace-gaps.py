#!/usr/bin/env python3
"""Where a traced run's device time goes, by what each op waited for.

  trace-gaps.py TRACE.json...

For the last submission of each trace (cuasync-bench --trace): the first
op's start after the submission, the makespan, the dependencies by kind
(same stream, another stream of the GPU, another GPU), and for every op
its gap: start - max(end of its stream's previous op, ends of its inputs),
summed by what bound it (the latest of those), with the count of ops each
bound. Times in microseconds."""
import json
import sys


def main():
    for path in sys.argv[1:]:
        d = json.load(open(path))
        ev = d["traceEvents"]
        subs = [e["args"]["submission"] for e in ev
                if e.get("ph") == "i" and e.get("name") == "submit"]
        last = max(subs)
        t_sub = min(e["ts"] for e in ev if e.get("ph") == "i" and
                    e.get("name") == "submit" and
                    e["args"]["submission"] == last)
        ops = {e["args"]["op"]: e for e in ev
               if e.get("ph") == "X" and e.get("cat") == "op" and
               e["args"]["submission"] == last}
        where = {k: (o["args"]["device"], o["args"]["stream"])
                 for k, o in ops.items()}
        end = {k: o["ts"] + o["dur"] for k, o in ops.items()}
        bystream = {}
        for k, o in sorted(ops.items(), key=lambda kv: kv[1]["ts"]):
            bystream.setdefault(where[k], []).append(k)
        prev = {}
        for lst in bystream.values():
            for a, b in zip(lst, lst[1:]):
                prev[b] = a
        deps = {"stream": 0, "gpu": 0, "peer": 0}
        gap = {"stream": [0.0, 0], "gpu": [0.0, 0], "peer": [0.0, 0],
               "none": [0.0, 0]}
        for k, o in ops.items():
            bound, t = "none", t_sub
            cands = []
            if k in prev:
                cands.append(("stream", end[prev[k]]))
            for i in o["args"]["inputs"]:
                if i not in ops:
                    continue
                kind = ("stream" if where[i] == where[k] else
                        "gpu" if where[i][0] == where[k][0] else "peer")
                deps[kind] += 1
                cands.append((kind, end[i]))
            for kind, t1 in cands:
                if t1 >= t:
                    bound, t = kind, t1
            g = o["ts"] - t
            gap[bound][0] += g
            gap[bound][1] += 1
        first = min(o["ts"] for o in ops.values()) - t_sub
        span = max(end.values()) - t_sub
        name = path.rsplit("/", 1)[-1][:-5]
        print("%-26s ops %4d first op %7.1f makespan %8.1f  deps "
              "stream/gpu/peer %4d %4d %4d" %
              (name, len(ops), first, span, deps["stream"], deps["gpu"],
               deps["peer"]))
        print("%26s gaps (sum us / ops bound): " % "" + "  ".join(
            "%s %.1f/%d (%.2f)" % (k, v[0], v[1], v[0] / v[1] if v[1] else 0)
            for k, v in gap.items()))


main()
