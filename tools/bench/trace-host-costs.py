#!/usr/bin/env python3
"""trace-host-costs.py: the host's costs per op, read from cuasync traces,
for the sim backend's modelled host (cuasync-sim(7), CALIBRATION).

Usage: trace-host-costs.py [--all | --sim] TRACE.json[.gz]...

Takes perfetto traces (cuasync-bench --trace DIR, or [observer.perfetto])
of a runtime whose submissions are each one DAG. For each submission it
reads the 'submit' instant and the 'place' instants of its ops:

  prefix   (first place - submit) / ops: the build of every node, and a
           planning policy's plan, before the first decision
           (host_build_ns + host_plan_ns; ops are the placed ones, where
           the sim charges every node, a zip's too: for DAGs of device
           ops only, as cuasync-bench's, the two counts are equal);
  decide   (last place - first place) / (ops - 1): each decision with the
           launches and waits applied between them (host_decide_ns, with
           host_launch_ns and host_event_ns left at 0);
  first op when the first op started on the device, after the submit.

Without --all it prints, per trace, the medians over the submissions but
the first (cuasync-bench's warm-up run), and every submission with --all.
With --sim it prints, from traces of one runtime per policy (the policy is
read from the 'place' instants), the [backend.sim] host keys that give
each policy its measured prefix and decision time: host_build_ns the
smallest prefix, host_plan_ns the rest of each policy's, host_decide_ns
each policy's decision time (their median as the default); a trace with
one submission is used whole. Exit 0, 1 when a trace cannot be used, 2 on
bad usage.
"""
import gzip
import json
import statistics
import sys


def submissions(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    submit, places, first_op, policy = {}, {}, {}, {}
    for e in events:
        name, args = e.get("name"), e.get("args", {})
        if e.get("ph") == "i" and name == "submit":
            submit[args["submission"]] = e["ts"]
        elif e.get("ph") == "i" and name == "place":
            places.setdefault(args["submission"], []).append(e["ts"])
            policy.setdefault(args["submission"], args.get("policy", ""))
        elif e.get("ph") == "X" and e.get("cat") == "op":
            s = args.get("submission")
            first_op[s] = min(first_op.get(s, float("inf")), e["ts"])
    out = []
    for s in sorted(submit):
        p = sorted(places.get(s, []))
        if len(p) < 2:
            continue
        n = len(p)
        out.append({
            "submission": s,
            "ops": n,
            "prefix_ns": (p[0] - submit[s]) * 1e3 / n,
            "decide_ns": (p[-1] - p[0]) * 1e3 / (n - 1),
            "first_op_us": (first_op.get(s, submit[s]) - submit[s]),
            "policy": policy.get(s, ""),
        })
    return out


def sim_keys(paths):
    prefix, decide = {}, {}
    for path in paths:
        subs = submissions(path)
        timed = subs[1:] or subs
        if not timed or not timed[0]["policy"]:
            sys.stderr.write(f"{path}: no timed submission with a policy\n")
            return 1
        pol = timed[0]["policy"]
        if pol in prefix:
            sys.stderr.write(f"{path}: a second trace of policy {pol}\n")
            return 1
        prefix[pol] = statistics.median(r["prefix_ns"] for r in timed)
        decide[pol] = statistics.median(r["decide_ns"] for r in timed)
    build = min(prefix.values())
    pols = sorted(prefix)
    print(f"# from {len(paths)} trace(s): " + ", ".join(
        f"{p} prefix {prefix[p]:.0f} decide {decide[p]:.0f} ns/op"
        for p in pols))
    print(f"host_build_ns = {build:.0f}")
    print("host_plan_ns = 0" + "".join(
        f", {p}={prefix[p] - build:.0f}" for p in pols))
    print(f"host_decide_ns = {statistics.median(decide.values()):.0f}" +
          "".join(f", {p}={decide[p]:.0f}" for p in pols))
    print("host_launch_ns = 0")
    print("host_event_ns = 0")
    return 0


def main(argv):
    show_all = "--all" in argv
    sim = "--sim" in argv
    paths = [a for a in argv if a not in ("--all", "--sim")]
    bad = [a for a in paths if a.startswith("-")]
    if not paths or (show_all and sim) or bad:
        if bad:
            sys.stderr.write(f"trace-host-costs.py: unknown option {bad[0]}\n")
        sys.stderr.write(__doc__)
        return 2
    if sim:
        return sim_keys(paths)
    for path in paths:
        subs = submissions(path)
        if not subs:
            print(f"{path}: no submission with two placed ops")
            continue
        if show_all:
            for r in subs:
                print(f"{path} submission {r['submission']}: {r['ops']} ops, "
                      f"prefix {r['prefix_ns']:.0f} ns/op, decide "
                      f"{r['decide_ns']:.0f} ns/op, first op at "
                      f"{r['first_op_us']:.1f} us")
            continue
        timed = subs[1:] or subs
        med = {k: statistics.median(r[k] for r in timed)
               for k in ("prefix_ns", "decide_ns", "first_op_us")}
        print(f"{path}: {len(timed)} submission(s), {timed[0]['ops']} ops: "
              f"prefix {med['prefix_ns']:.0f} ns/op, decide "
              f"{med['decide_ns']:.0f} ns/op, first op at "
              f"{med['first_op_us']:.1f} us (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
