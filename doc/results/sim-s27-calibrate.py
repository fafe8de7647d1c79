# sim-s27-calibrate.py DIR [BASE.machine]: the sim's host costs of a
# machine (two H200s, one H200), computed (no fit to makespans) from the
# twenty-seventh session's calibration runs in DIR: cal-prof-W-P-R.err (an instrumented build that
# times every backend call on the launch threads, the calls made while
# the submitting thread builds and decides apart, the first launch on an
# idle stream apart, and the core's stages per submission) and
# cal-lean-W-P-R.err (a build that times only the launch threads' whole
# application of each command list, and counts its commands), both with
# their .csv, for the width-16 stencil and random patterns under four
# policies. Prints a machine file: BASE's device lines (default
# sim-s25-h200x2.machine) and the host lines computed here.
#
#   launch, record, wait, peer wait: the calls' mean host times on the
#     launch threads while the submitting thread does not decide (records
#     and waits: their mean divided by 1 + f * contention, f the share
#     made while it decides), plus the launch threads' own work per
#     command (lean build's time applying lists, less the calls' time and
#     the turn waits, per command; a record is part of its launch's
#     command), marks spread over the launches;
#   cold launch: the first launch on a stream with nothing in flight
#     (made while the submitting thread decides: divided by 1 +
#     contention, as the sim stretches it again), plus what a launch
#     gets of the executor and the marks;
#   contention: calls made while the submitting thread decides, over the
#     same calls made while it does not, less 1 (launches without the
#     cold ones, and waits): each policy's from its own runs (the
#     host_contention line, round-robin's first), and all runs' together
#     for the corrections above;
#   build, plan, decide: the core's stages per submission (medians),
#     per task: build + cycle check + wiring, heft's plan (made where
#     the others record hazards), and the round (the decisions).
import csv, glob, os, re, statistics, sys

d = sys.argv[1]
base = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "sim-s25-h200x2.machine")


def tasks(csvpath):
    col = None
    with open(csvpath) as f:
        for r in csv.reader(l for l in f if not l.startswith("#")):
            if r[0] == "workload":
                col = {k: i for i, k in enumerate(r)}
            elif col is not None and r[col["kind"]] == "cuasync":
                return int(r[col["tasks"]])
    raise SystemExit("no cuasync row in " + csvpath)


def parse(path):
    with open(path) as f:
        t = f.read()
    pc = {m[0]: (int(m[1]), float(m[2]) * 1e6) for m in re.findall(r"PC (\S+)\s+n=(\d+) total_ms=([\d.]+)", t)}
    spb = {m[0]: (int(m[1]), float(m[2]), float(m[3]) * 1e6)
           for m in re.findall(r"SPB (\S*)\s+n=(\d+) mean=(\d+) total_ms=([\d.]+)", t)}
    # The lean build's unnamed bucket: its total is the commands / 1e6.
    cmds = re.findall(r"SPB\s+n=\d+ mean=\d+ total_ms=([\d.]+)", t)
    spb["cmds"] = (0, 0.0, float(cmds[0]) * 1e6 if cmds else 0.0)
    sp = {m[0]: float(m[1]) for m in re.findall(r"SP (\S+)\s+n=\d+ p50=(\d+)", t)}
    return pc, spb, sp


runs = []
for p in sorted(glob.glob(os.path.join(d, "cal-prof-*.err"))):
    key = os.path.basename(p)[len("cal-prof-"):-len(".err")]
    w, rest = key.split("-", 1)
    pol, r = rest.rsplit("-", 1)
    lean = os.path.join(d, "cal-lean-%s.err" % key)
    runs.append(dict(w=w, pol=pol, r=r, prof=parse(p), lean=parse(lean),
                     tasks=tasks(p[:-4] + ".csv")))
if not runs:
    raise SystemExit("no cal-prof-*.err in " + d)

# Contention: calls made while the submitting thread decides, over the
# others, less 1. Launches: without the cold ones (all made while it
# decides: a run starts with its streams idle).
def ratios(x):
    """The run's launch and wait ratios (None where it has no calls)."""
    spb = x["prof"][1]
    n0, m0, _ = spb["depth0"]
    nd, md, _ = spb["launch-dec"]
    ni, mi, _ = spb["launch-idle"]
    lr = ((nd * md - n0 * m0) / (nd - n0)) / mi - 1 if nd > n0 and mi > 0 else None
    wr = spb["wait-dec"][1] / spb["wait-idle"][1] - 1 if spb["wait-idle"][1] > 0 else None
    return lr, wr


c_l = [r for r in (ratios(x)[0] for x in runs) if r is not None]
c_w = [r for r in (ratios(x)[1] for x in runs) if r is not None]
contention = statistics.median(c_l + c_w)
# The same per policy, from its own runs (from the twenty-ninth session
# on, the sim takes a list): round-robin 0.61-0.82 against dmda
# 0.36-0.51 over eleven calibrations of two H200s, every submission of
# a run counted. With CUA_SP_TIMED=1 in the calibration runs (the timed
# runs alone) it is about 0.06: the slowdown was the warm-up run's
# (doc/results, twenty-ninth session). The cold launch below is still
# undone with the pooled value.
c_pol = {}
for x in runs:
    c_pol.setdefault(x["pol"], []).extend(r for r in ratios(x) if r is not None)

# The same, launches and waits compared at the same queue depth of their
# stream (the prof build's L* and W* buckets, from the twenty-ninth
# session on): a check that the calls made while the submitting thread
# decides are not slower only because they come first, into shorter
# queues. Printed as a comment; the lines use the contention above.
def matched(x, pre):
    spb = x["prof"][1]
    num = den = 0.0
    for b in ("1-2", "3-8", "9-32", "33+") + (("0",) if pre == "W" else ()):
        i, d = spb.get("%s%s-idle" % (pre, b)), spb.get("%s%s-dec" % (pre, b))
        if i and d and i[0] >= 20 and d[0] >= 20 and i[1] > 0:
            num += d[0] * (d[1] / i[1] - 1)
            den += d[0]
    return num / den if den else None


c_m = [c for x in runs for c in (matched(x, "L"), matched(x, "W")) if c is not None]


def pooled(kind):
    n = sum(x["prof"][0][kind][0] for x in runs)
    t = sum(x["prof"][0][kind][1] for x in runs)
    return n, t / n if n else 0.0


# Share of the waits made while the submitting thread decides.
wd = sum(x["prof"][1]["wait-dec"][0] for x in runs)
wi = sum(x["prof"][1]["wait-idle"][0] for x in runs)
f_dec = wd / (wd + wi)
idle = 1.0 / (1.0 + f_dec * contention)
launch_idle = (sum(x["prof"][1]["launch-idle"][2] for x in runs) /
               sum(x["prof"][1]["launch-idle"][0] for x in runs))
cold = statistics.mean(x["prof"][1]["depth0"][1] for x in runs)
nl, _ = pooled("launch")
nm, mark = pooled("mark")
_, record = pooled("record")
_, wait = pooled("wait")
_, peer = pooled("peerwait")

# The launch threads' own work per command: the lean build's time
# applying lists, less the calls (prof, same workload and policy) and
# the turn waits, per command of the lean build.
over_t = over_c = 0.0
for x in runs:
    calls = sum(x["prof"][0][k][1] for k in ("launch", "record", "wait", "peerwait", "mark"))
    tw = x["prof"][1]["turnwait"][2]
    over_t += x["lean"][1]["exec"][2] - calls - tw
    over_c += x["lean"][1]["cmds"][2]
overhead = max(0.0, over_t / over_c)

launch = launch_idle + mark * nm / nl + overhead
cold_launch = cold / (1.0 + contention) + mark * nm / nl + overhead
pols = sorted(set(x["pol"] for x in runs))
for need in ("round-robin", "heft"):
    if need not in pols:
        raise SystemExit("no %s runs in %s" % (need, d))
build, plan, decide = [], {}, {}
for pol in pols:
    xs = [x for x in runs if x["pol"] == pol]
    build += [(x["prof"][2]["build"] + x["prof"][2]["check"] + x["prof"][2]["wire"]) / x["tasks"] for x in xs]
    plan[pol] = statistics.mean(x["prof"][2]["hazards"] / x["tasks"] for x in xs)
    decide[pol] = statistics.mean(x["prof"][2]["round"] / x["tasks"] for x in xs)

host = {
    "host_launch_threads": "2",
    "host_launch_ns": "%d" % round(launch, -1),
    "host_launch_cold_ns": "%d" % round(cold_launch, -1),
    "host_record_ns": "%d" % round(record * idle, -1),
    "host_event_ns": "%d" % round(wait * idle + overhead, -1),
    # round-robin's first (the pooled value if it has none), then the
    # others that have ratios of their own.
    "host_contention": ", ".join(
        ["%.2f" % (statistics.median(c_pol["round-robin"]) if c_pol.get("round-robin") else contention)] +
        ["%s=%.2f" % (p, statistics.median(c_pol[p])) for p in pols if p != "round-robin" and c_pol.get(p)]),
    "host_build_ns": "%d" % round(statistics.mean(build), -1),
    # Only heft plans (the others' hazard step is about 10 ns per task).
    "host_plan_ns": "0, heft=%d" % round(plan["heft"], -1),
    "host_decide_ns": "%d, " % round(decide["round-robin"], -1) +
                      ", ".join("%s=%d" % (p, round(decide[p], -1)) for p in pols if p != "round-robin"),
}
print("# computed by sim-s27-calibrate.py from %d calibration runs in %s, device lines from %s" %
      (len(runs), os.path.basename(os.path.normpath(d)), os.path.basename(base)))
print("# (contention %.2f from %d launch and %d wait ratios, all policies; %.0f ns of the launch"
      " threads' own work per command; %.1f%% of waits while deciding)" %
      (contention, len(c_l), len(c_w), overhead, 100 * f_dec))
if c_m:
    print("# (contention at matched queue depth: %.2f from %d ratios)" % (statistics.median(c_m), len(c_m)))
with open(base) as f:
    for line in f:
        k = line.split("=")[0].strip()
        if line.startswith("#") or k.startswith("host_"):
            continue
        print(line.rstrip())
npeer, _ = pooled("peerwait")
if npeer > 0:  # (none on one GPU)
    host["host_peer_wait_ns"] = "%d" % round(peer * idle + overhead, -1)
for k, v in host.items():
    print("%s = %s" % (k, v))
