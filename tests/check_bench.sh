#!/bin/sh
# tests/check_bench.sh: cuasync-bench's workloads, formats and exit codes,
# on the host backend (no GPU needed).
#
# Run by `make check` from the build directory, with CUASYNC_MODULE_PATH
# pointing at the modules just built (AM_TESTS_ENVIRONMENT). Every check
# names what it expected; the first one that fails ends the test with
# status 1. The whole test takes a few seconds (a few --quick runs).

set -u

TOOL=${CUASYNC_BENCH:-./tools/cuasync-bench}
NAME=cuasync-bench
BENCH=$TOOL
. "$(dirname "$0")/tool-checks.sh"
unset CUASYNC_CONFIG CUASYNC_POLICY GNUPLOT

POLICIES="single-stream round-robin least-loaded affinity"
PATTERNS="trivial chain stencil tree random pipeline multigpu"
MICROS="micro-chain micro-indep micro-random"
SUBMITS="submit submit-mt"

# --help: usage on stdout, exit 0, the options named.
run 0 --help
for opt in --config --policy --backend --workload --tasks --width \
  --duration --blocks --seed --skew --skew-share --hints --devices --trace \
  --repeat --metg \
  --submit --format --output \
  --plot --quick --version; do
  expect "$OUT" "$opt" "--help"
done
pass "--help exits 0 and lists the options"

run 0 --version
expect "$OUT" '^cuasync-bench (cuasync) [0-9][0-9]*\.[0-9]' "--version"
pass "--version prints the version"

# The default run, quick, on the host backend, as CSV: every workload
# under every standard policy, and the threads baseline beside them.
start=$(date +%s)
run 0 --quick --backend host --format csv
end=$(date +%s)
[ -s "$ERR" ] && fail "a run piped to files wrote to stderr (progress?)"
expect "$OUT" '^# cuasync-bench [0-9]' "CSV metadata"
expect "$OUT" '^# cpu: ' "CSV metadata: the machine"
expect "$OUT" '^# parameters: .*submission whole$' "CSV metadata: --submit"
expect "$OUT" '^# environment: ' "CSV metadata: the environment's overrides"
expect "$OUT" '^workload,contender,kind,backend,submit,tasks,' "CSV header"
for w in $PATTERNS $MICROS; do
  expect "$OUT" "^$w,threads,baseline,host,-," "CSV: $w threads baseline"
  for p in $POLICIES; do
    expect "$OUT" "^$w,$p,cuasync,host,whole," "CSV: $w under $p"
  done
done
expect "$OUT" '^latency,threads-task,baseline,host,-,' "CSV: latency baseline"
expect "$OUT" '^submit,threads-post,baseline,host,-,' "CSV: submit baseline"
expect "$OUT" '^submit-mt,threads-post-mt,baseline,host,-,' \
  "CSV: submit-mt baseline"
for p in $POLICIES; do
  for w in latency $SUBMITS; do
    expect "$OUT" "^$w,$p,cuasync,host,task," "CSV: $w under $p"
  done
done
expect "$OUT" '^dispatch,static round-robin.c,baseline,' "CSV: dispatch"
expect "$OUT" '^dispatch,module round-robin.so,cuasync,' "CSV: dispatch"
# best_raw names the baseline as its row does (it said "static").
grep -v '^#' "$OUT" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $1 == "dispatch" { n++; if ($(c["best_raw"]) != "static round-robin.c") bad = 1 }
  END { exit bad || n != 2 }' >"$ERR" ||
  fail "CSV: dispatch's best_raw is not its baseline's name"
pass "--quick --backend host --format csv has every workload x policy and the baselines"

# Every CSV row has the header's number of fields, and no row failed or
# ran faster than its critical path.
grep -v '^#' "$OUT" >"$TMP/rows.csv"
awk -F, 'NR == 1 { n = NF; next }
  NF != n { print "row " NR " has " NF " fields, header " n; bad = 1 }
  $(NF - 1) != 1 { print "row " NR " is not valid: " $0; bad = 1 }
  $NF != "" { print "row " NR " failed: " $0; bad = 1 }
  END { exit bad }' "$TMP/rows.csv" >"$ERR" ||
  fail "CSV rows: wrong field count, invalid or failed rows"
# The makespan column of workload rows holds a positive number.
awk -F, 'NR == 1 && $14 != "makespan_ns" { print "column 14: " $14; bad = 1 }
  NR > 1 && $1 != "latency" && !($14 > 0) { print; bad = 1 }
  END { exit bad }' "$TMP/rows.csv" >"$ERR" ||
  fail "CSV rows: a workload row without a makespan"
# submit-mt rows compare with one thread: a positive thread_scaling.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "thread_scaling") c = i
    if (!c) { print "no thread_scaling column"; bad = 1 } next }
  $1 == "submit-mt" && !($c > 0) { print; bad = 1 }
  $1 != "submit-mt" && $c != "" { print; bad = 1 }
  END { exit bad }' "$TMP/rows.csv" >"$ERR" ||
  fail "CSV rows: submit-mt without thread_scaling, or another row with it"
pass "CSV rows are well formed, valid and complete"

elapsed=$((end - start))
[ "$elapsed" -le 45 ] ||
  fail "the quick host run took ${elapsed}s (budget 45s on 2 cores)"
pass "the quick host run took ${elapsed}s"

# The environment's overrides of the configuration are written with the
# results (here the launch threads; the suite's own $CUASYNC_MODELS too).
export CUASYNC_LAUNCH_THREADS=3
run 0 --quick --backend host --workload trivial --repeat 1 --format csv
unset CUASYNC_LAUNCH_THREADS
expect "$OUT" '^# environment: .*CUASYNC_LAUNCH_THREADS=3' \
  "CSV metadata: \$CUASYNC_LAUNCH_THREADS"
pass "the environment's overrides are in the metadata"

# JSON: one document that parses, with the system facts and every policy.
run 0 --quick --backend host --workload trivial,stencil,latency \
  --submit whole,task --format json --output "$TMP/out.json"
[ -s "$OUT" ] && fail "--output: something still went to stdout"
cp "$TMP/out.json" "$OUT"
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
d = json.load(sys.stdin)
for key in ("tool", "version", "system", "parameters", "environment",
            "results"):
    assert key in d, "no " + key
assert d["system"]["cpus"] >= 1
rows = d["results"]
for w in ("trivial", "stencil"):
    who = {r["contender"] for r in rows if r["workload"] == w}
    for p in ("threads", "single-stream", "round-robin", "least-loaded",
              "affinity"):
        assert p in who, "%s: no %s" % (w, p)
    for r in rows:
        if r["workload"] == w:
            assert r["makespan_ns"] > 0 and r["error"] is None, r
            assert r["efficiency"] > 0, r
lat = [r for r in rows if r["workload"] == "latency"]
assert len(lat) == 5 and all(r["lat_p99_ns"] >= r["lat_p50_ns"] > 0
                             for r in lat), lat
assert d["parameters"]["submit"] == "whole,task", d["parameters"]
for r in rows:
    if r["kind"] == "baseline":
        assert r["submit"] is None, r
    elif r["workload"] == "latency":
        assert r["submit"] == "task", r
    else:
        assert r["submit"] in ("whole", "task"), r
for w in ("trivial", "stencil"):
    modes = {(r["contender"], r["submit"]) for r in rows
             if r["workload"] == w and r["kind"] == "cuasync"}
    assert len(modes) == 8, (w, modes)
' <"$OUT" 2>"$ERR" || fail "--format json: the output does not parse or lacks a field"
elif command -v jq >/dev/null 2>&1; then
  jq -e '.results | length > 0' <"$OUT" >/dev/null 2>"$ERR" ||
    fail "--format json: jq cannot parse it"
else
  expect "$OUT" '^{' "--format json"
  expect "$OUT" '"results": \[' "--format json"
  tail -n 1 "$OUT" | grep -q '^}$' || fail "--format json: no closing brace"
fi
pass "--format json --output writes a document that parses"

# The table, and a METG sweep on one small workload.
run 0 --quick --backend host --workload chain --tasks 16 --metg \
  --repeat 1 --policy round-robin
expect "$OUT" '^workload  *contender' "table header"
expect "$OUT" '^chain  *round-robin  *host ' "table: the contender row"
expect "$OUT" '^chain  *threads  *host ' "table: the baseline row"
awk '$1 == "chain" && $(NF - 2) == "-" { bad = 1 } END { exit bad }' "$OUT" ||
  fail "--metg: a row without METG"
pass "the table and --metg"

# One submission per task and per level: on every pattern, every row is
# complete and not faster than its critical path (a dependency that
# crosses submissions was honoured), under every policy.
run 0 --quick --backend host --workload "$(echo $PATTERNS micro-chain micro-random | tr ' ' ,)" \
  --submit task,level --repeat 1 --format csv
grep -v '^#' "$OUT" >"$TMP/rows.csv"
for w in $PATTERNS micro-chain micro-random; do
  for p in $POLICIES; do
    for m in task level; do
      expect "$OUT" "^$w,$p,cuasync,host,$m," "--submit task,level: $w under $p"
    done
  done
done
grep -q ',whole,' "$TMP/rows.csv" && fail "--submit task,level ran whole"
awk -F, 'NR == 1 { n = NF; next }
  NF != n { print "row " NR " has " NF " fields, header " n; bad = 1 }
  $(NF - 1) != 1 { print "row " NR " is not valid: " $0; bad = 1 }
  $NF != "" { print "row " NR " failed: " $0; bad = 1 }
  END { exit bad }' "$TMP/rows.csv" >"$ERR" ||
  fail "--submit task,level: invalid or failed rows"
pass "--submit task,level runs every pattern, dependencies honoured"

# All five submission modes at once: a row per mode, and the parameters
# list them (they overflowed the metadata's buffer: a crash, or garbage).
run 0 --backend host --policy round-robin --workload chain --tasks 16 \
  --repeat 1 --submit whole,task,level,graph,auto --format csv
expect "$OUT" '^# parameters: .*, submission whole,task,level,graph,auto$' \
  "--submit with all five modes: the parameters"
for m in whole task level graph auto; do
  expect "$OUT" "^chain,round-robin,cuasync,host,$m," "--submit: the $m row"
done
pass "--submit with all five modes"

# Graph mode: a graph's launches record and wait for no events of the
# runtime, so its rows count those its placement needs, as raw-streams'
# are counted: under round-robin on stencil, the same as the runtime
# counts for the same placement submitted whole.
run 0 --quick --backend host --workload stencil --tasks 64 --repeat 1 \
  --policy round-robin --submit whole,graph --format csv
grep -v '^#' "$OUT" >"$TMP/graph.csv"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $3 == "cuasync" { e[$5] = $c["events_per_kop"]; w[$5] = $c["waits_per_kop"];
    p[$5] = $c["peer_waits_per_kop"] }
  END { if (e["graph"] == "" || e["graph"] + 0 == 0 || e["graph"] != e["whole"] ||
            w["graph"] != w["whole"] || p["graph"] != "0") {
          print "graph " e["graph"] "/" w["graph"] "/" p["graph"] \
            ", whole " e["whole"] "/" w["whole"]; exit 1 } }' \
  "$TMP/graph.csv" >"$ERR" ||
  fail "--submit graph: events and waits of its placement"
pass "--submit graph counts its placement's events and waits"

# METG with one submission per task, over 2 streams, beside the threads
# baseline (issue 9's host target), in the table.
run 0 --quick --backend host --workload stencil --tasks 16 --streams 2 \
  --metg --repeat 1 --policy round-robin --submit task
expect "$OUT" '^workload  *contender  *be  *submit ' "table header: submit"
expect "$OUT" '^stencil  *round-robin  *host  *task ' "table: the task row"
expect "$OUT" '^stencil  *threads  *host  *- ' "table: the baseline row"
awk '$1 == "stencil" && $(NF - 2) == "-" { bad = 1 } END { exit bad }' \
  "$OUT" || fail "--metg --submit task: a row without METG"
pass "--metg with --submit task"

# --skew: the parameters say it; heft, which plans from the cost hints,
# runs the skewed patterns.
run 0 --quick -b host -p heft -w stencil,tree,random -K 4
expect "$OUT" "skew 4" "--skew 4"
for w in stencil tree random; do
  awk -v w="$w" '$1 == w && $2 == "heft" { ok = 1 } END { exit !ok }' \
    "$OUT" || fail "--skew 4: no heft row for $w"
done
pass "--skew with heft"

# The bimodal workload of issue 12: 10% long tasks, no informative hints;
# work-stealing and dmda against the offline LPT schedule (vs_lpt: a number;
# how close is the benchmark's business, and a schedule may beat LPT).
run 0 --quick -b host -p work-stealing -p dmda -w trivial -K 8 \
  --skew-share 10 --hints off --repeat 1 --format csv
expect "$OUT" "skew 8 (10% of spins), hints off" "--skew-share, --hints"
awk -F, '/^workload,/ { for (i = 1; i <= NF; i++) col[$i] = i; next }
  /^#/ { next }
  $1 == "trivial" && $4 == "host" { n++; v = $col["vs_lpt"] + 0
    if (v < 0.5 || v > 1000) bad = 1 }
  END { exit bad || n < 3 }' "$OUT" >"$ERR" ||
  fail "--skew-share: no vs_lpt in the trivial rows"
pass "--skew-share and --hints off: rows against the LPT schedule"

# --devices all, on two host devices: the parameters say so, and every
# pattern's baselines and policy rows run.
printf '[runtime]\npolicy = heft\n[backend.host]\ndevices = 2\n' \
  >"$OUT.ini"
run 0 --quick -b host -c "$OUT.ini" -p round-robin -w stencil,random \
  --devices all --repeat 1 --format csv
expect "$OUT" "patterns on every device" "--devices all"
for w in stencil random; do
  awk -F, -v w="$w" '$1 == w && $2 ~ /heft/ { ok = 1 } END { exit !ok }' \
    "$OUT" || fail "--devices all: no heft row for $w"
done
rm -f "$OUT.ini"
pass "--devices all: the patterns over two devices"

# A contender on a backend module of one's own (here the launchtime test
# backend, tests/modules/launchtime.c) beside one on host: each backend
# gets its rows and its threads baseline (it was dropped without a word).
printf '[runtime]\nbackend = launchtime\npolicy = round-robin\n' >"$OUT.ini"
run 0 --quick -b host -c "$OUT.ini" -p round-robin -w chain,stencil \
  --repeat 1 --format csv
for w in chain stencil; do
  expect "$OUT" "^$w,.*round-robin,cuasync,launchtime,whole," \
    "the launchtime contender's $w row"
  expect "$OUT" "^$w,threads,baseline,launchtime,-," \
    "the launchtime backend's $w baseline"
  expect "$OUT" "^$w,round-robin,cuasync,host,whole," "the host row of $w"
done
expect "$OUT" '^# cuasync-bench .*, backends launchtime,host$' \
  "CSV metadata: both backends"
rm -f "$OUT.ini"
pass "a contender on another backend module gets its rows and baselines"

# --trace DIR: one trace per contender and workload, each valid JSON with a
# slice per task of each run (a warm-up and one timed run).
tdir="$OUT.traces"
rm -rf "$tdir"
mkdir "$tdir"
run 0 --quick -b host -p round-robin -p least-loaded -w random,chain \
  --repeat 1 --trace "$tdir"
for f in random-round-robin random-least-loaded chain-round-robin \
  chain-least-loaded; do
  [ -s "$tdir/$f.json" ] || fail "--trace: no $f.json"
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
n = sum(1 for e in d["traceEvents"] if e["ph"] == "X")
sys.exit(0 if n == 128 else "%d slices, expected 128" % n)' "$tdir/$f.json" \
    >"$ERR" 2>&1 || fail "--trace: $f.json: $(cat "$ERR")"
done
# tools/bench/trace-host-costs.py reads the host's costs from them: the
# timed submission of 64 ops, a prefix and a decision time per op.
python3 "${srcdir:-.}/tools/bench/trace-host-costs.py" \
  "$tdir/random-round-robin.json" >"$ERR" 2>&1 ||
  fail "trace-host-costs.py: $(cat "$ERR")"
grep -Eq '^.*random-round-robin.json: 1 submission\(s\), 64 ops: prefix [0-9]+ ns/op, decide [0-9]+ ns/op, first op at [0-9.]+ us \(medians\)$' "$ERR" ||
  fail "trace-host-costs.py: unexpected output: $(cat "$ERR")"
python3 "${srcdir:-.}/tools/bench/trace-host-costs.py" >"$ERR" 2>&1 &&
  fail "trace-host-costs.py without a trace: exit 0"
grep -q '^Usage: trace-host-costs.py' "$ERR" ||
  fail "trace-host-costs.py without a trace: no usage: $(cat "$ERR")"
rm -rf "$tdir"
pass "--trace: a valid trace per contender and workload, and its host costs"

# A submission handed to the launch thread in chunks as it is decided
# (launch = pipeline) places its later ops at later instants: each chunk
# handed over reads the clock again (they all had the first placement's,
# and the trace showed no decision time).
tdir="$OUT.traces"
rm -rf "$tdir"
mkdir "$tdir"
export CUASYNC_LAUNCH=pipeline
run 0 --quick -b host -p single-stream -w micro-chain --repeat 1 \
  --trace "$tdir"
unset CUASYNC_LAUNCH
python3 "${srcdir:-.}/tools/bench/trace-host-costs.py" \
  "$tdir/micro-chain-single-stream.json" >"$ERR" 2>&1 ||
  fail "trace-host-costs.py (pipeline): $(cat "$ERR")"
grep -Eq ': 1 submission\(s\), 1000 ops: .* decide [1-9][0-9]* ns/op' "$ERR" ||
  fail "launch = pipeline: no time between the placements: $(cat "$ERR")"
rm -rf "$tdir"
pass "--trace under launch = pipeline: placements at their own instants"

# tools/bench/targets.awk reads the issue's ratios from a CSV: on the host
# backend, which has no raw CUDA rows, the ratios between two policies.
run 0 --quick -b host -p round-robin -p least-loaded \
  -w micro-chain,micro-random --repeat 1 --format csv
awk -F, -f "${srcdir:-.}/tools/bench/targets.awk" "$OUT" >"$ERR" 2>&1 ||
  fail "targets.awk: $(cat "$ERR")"
for t in "micro-chain ll/rr" "micro-random ll/rr"; do
  grep -Eq "^$t \(<=1\.15\) +[0-9]+\.[0-9]{3}$" "$ERR" ||
    fail "targets.awk: no ratio for $t: $(cat "$ERR")"
done
grep -Eq '^submit raw/rr \(>=0\.9\) +-1\.000$' "$ERR" ||
  fail "targets.awk: a missing row is not -1: $(cat "$ERR")"
pass "tools/bench/targets.awk: the ratios of one run"

# Bad usage: exit 2, with a message.
for args in "--no-such-option" "--format xml" "--tasks 0" "--tasks" \
  "--workload nosuch" "--backend gpu" "--duration 5parsecs" "stray" \
  "--submit each" "--submit task,task" "--submit ," "--submit" \
  "--skew 0" "--skew 1001" "--skew x" "--skew-share 0" "--skew-share 101" \
  "--skew-share 10" "--skew 1 --skew-share 10" "--metg --kernel axpy" \
  "--hints maybe" "--devices two" "--trace /nonexistent/dir" \
  "--timestamps --trace /tmp"; do
  # shellcheck disable=SC2086 # the words are meant to split
  run 2 $args
  [ -s "$ERR" ] || fail "cuasync-bench $args: no message on stderr"
done
pass "bad usage exits 2 with a message"

# Numbers are decimal, with a fraction where a unit follows: a blank, a
# sign, an exponent, hexadecimal and inf are refused (strtod() took them:
# --tasks 0x1p4 ran 16 tasks). --seed is decimal or 0x hexadecimal: 010
# is ten (it was eight, octal), and a blank or a sign is refused.
for v in " 7" "+7" "1e3" "0x10" "0x1p4" "7." ".5" "inf"; do
  run 2 --tasks "$v"
  expect "$ERR" "^cuasync-bench: --tasks wants 1\.\.10000000, not '$v'$" \
    "--tasks '$v'"
  run 2 --duration "${v}us"
done
for v in " 7" "+7" "0x" "0xg" "1e3" "-1"; do
  run 2 --seed "$v"
  expect "$ERR" "^cuasync-bench: --seed wants an unsigned number" "--seed '$v'"
done
run 0 --backend host --policy round-robin --workload trivial --tasks 8 \
  --repeat 1 --duration 1.5us --bytes 2.5K --seed 010 --format csv
expect "$OUT" '^# parameters: tasks 8, width 8, spin 1\.5us .* seed 10,' \
  "--seed 010 --duration 1.5us: the parameters"
run 0 --backend host --policy round-robin --workload trivial --tasks 8 \
  --repeat 1 --duration 1us --seed 0x10 --format csv
expect "$OUT" '^# parameters: .* seed 16,' "--seed 0x10: the parameters"
pass "numbers are decimal; --seed decimal or 0x hexadecimal"

# An empty entry in a list is refused (--workload '' ran every workload),
# and an argument to an option that takes none is named as given (it read
# "unknown option '-h'").
for list in "" "trivial," ",trivial" "trivial,,chain"; do
  run 2 --workload "$list"
  expect "$ERR" "^cuasync-bench: --workload '$list': an empty name in the list$" \
    "--workload '$list'"
done
for list in "" "whole,,task" "whole,"; do
  run 2 --workload trivial --submit "$list"
  expect "$ERR" "^cuasync-bench: --submit '$list': an empty mode in the list$" \
    "--submit '$list'"
done
run 2 --help=x
expect "$ERR" "^cuasync-bench: option '--help' takes no argument$" "--help=x"
run 2 --timestamps=1
expect "$ERR" "^cuasync-bench: option '--timestamps' takes no argument$" \
  "--timestamps=1"
pass "empty list entries and arguments to options that take none: exit 2"

# Output that cannot be written (a full disk) exits 1 with the reason,
# --help and --version too (they exited 0).
if [ -w /dev/full ]; then
  for args in "--help" "--version" \
    "--quick --backend host --workload trivial --repeat 1 --policy round-robin"; do
    status=0
    # shellcheck disable=SC2086 # the words are meant to split
    "$TOOL" $args >/dev/full 2>"$ERR" || status=$?
    [ "$status" -eq 1 ] ||
      fail "cuasync-bench $args >/dev/full exited with $status, expected 1"
    expect "$ERR" '^cuasync-bench: cannot write the output: No space left on device$' \
      "cuasync-bench $args >/dev/full"
  done
  pass "output that cannot be written exits 1 with the reason"
fi

# --timestamps without a contender on CUDA: a note that it adds nothing
# (the rows were left out without a word).
run 0 --backend host --policy round-robin --workload trivial --tasks 8 \
  --repeat 1 --timestamps
expect "$ERR" '^cuasync-bench: note: --timestamps adds CUDA baselines, and no contender runs on CUDA: no raw-ts rows$' \
  "--timestamps on the host backend: stderr"
grep -q 'raw-ts' "$OUT" && fail "--timestamps on the host backend: raw-ts rows"
pass "--timestamps without CUDA says it adds nothing"

# A width above the tasks is lowered to them (cuasync-bench(1)): -n 2
# -W 1000 runs two chains of one task.
run 0 --backend host --workload chain --tasks 2 --width 1000 --repeat 1 \
  --policy round-robin --format csv
expect "$OUT" '^chain,round-robin,cuasync,host,whole,2,2,' \
  "-n 2 -W 1000: the chain row's tasks and width"
pass "a width above the tasks is lowered to them"

# bench-ops, what tools/bench/callgrind-per-op.sh runs under valgrind: one
# run of one DAG in each submission mode, three runs of one on one runtime
# (the script's warm column); bad usage exits 2.
OPS=${CUASYNC_BENCH_OPS:-$(dirname "$TOOL")/bench-ops}
if [ -x "$OPS" ]; then
  for m in whole task level; do
    "$OPS" random 200 "$m" >"$OUT" 2>"$ERR" ||
      fail "bench-ops random 200 $m failed"
    expect "$OUT" "^random 200 tasks, submit $m, policy round-robin: " \
      "bench-ops random 200 $m"
  done
  "$OPS" random 200 whole round-robin 8 3 >"$OUT" 2>"$ERR" ||
    fail "bench-ops random 200 whole round-robin 8 3 failed"
  expect "$OUT" "^random 200 tasks, submit whole, policy round-robin: " \
    "bench-ops random 200 whole round-robin 8 3"
  for args in "" "chain 0 task" "chain 10 each" "nosuch 10 task" \
    "chain 10 task round-robin 1 0" "chain 10 task round-robin 1 101"; do
    status=0
    # shellcheck disable=SC2086 # the words are meant to split
    "$OPS" $args >"$OUT" 2>"$ERR" || status=$?
    [ "$status" -eq 2 ] || fail "bench-ops $args exited $status, not 2"
  done
  pass "bench-ops runs each submission mode and several runs, refuses bad usage"
fi

# A policy that does not exist: exit 1, named on stderr.
run 1 --quick --backend host --policy no-such-policy
expect "$ERR" "no-such-policy" "an unknown policy: stderr"
pass "an unknown policy exits 1 with a message"

# A run that gives up before its results (a contender that does not open)
# leaves an earlier --output or --plot file as it was, and creates none
# (it emptied them); a run that writes replaces a longer file whole.
echo "earlier results" >"$TMP/keep.csv"
echo "earlier plot" >"$TMP/keep.svg"
GNUPLOT=$(command -v true)
export GNUPLOT
run 1 --quick --backend host --policy no-such-policy \
  --output "$TMP/keep.csv" --plot "$TMP/keep.svg"
unset GNUPLOT
[ "$(cat "$TMP/keep.csv")" = "earlier results" ] ||
  fail "a run that gave up emptied the earlier --output file"
[ "$(cat "$TMP/keep.svg")" = "earlier plot" ] ||
  fail "a run that gave up emptied the earlier --plot file"
run 1 --quick --backend host --policy no-such-policy --output "$TMP/new.csv"
[ -e "$TMP/new.csv" ] && fail "a run that gave up left an empty --output file"
awk 'BEGIN { for (i = 0; i < 2000; i++) print "earlier,longer,results" }' \
  >"$TMP/keep.csv"
run 0 --quick --backend host --workload trivial --repeat 1 \
  --policy round-robin --format csv --output "$TMP/keep.csv"
grep -q 'earlier' "$TMP/keep.csv" &&
  fail "--output: the earlier file's tail is still there"
expect "$TMP/keep.csv" '^trivial,round-robin,cuasync,' "--output: the results"
rm -f "$TMP/keep.csv" "$TMP/keep.svg"
pass "a run that gives up leaves --output and --plot files as they were"

# A run interrupted (SIGTERM, SIGHUP) removes the --output file it
# created, as one that gives up does; an earlier file stays as it was.
for sig in TERM HUP; do
  rm -f "$TMP/cut.csv"
  "$TOOL" --backend host --workload chain --tasks 100000 --duration 1ms \
    --policy round-robin --output "$TMP/cut.csv" >"$OUT" 2>"$ERR" &
  pid=$!
  i=0
  while [ ! -e "$TMP/cut.csv" ] && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  [ -e "$TMP/cut.csv" ] || fail "SIG$sig: the run made no --output file"
  kill -"$sig" "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" -gt 128 ] || fail "SIG$sig: the run exited $status, not killed"
  [ -e "$TMP/cut.csv" ] && fail "SIG$sig: the run left its --output file"
done
echo "earlier results" >"$TMP/keep.csv"
"$TOOL" --backend host --workload chain --tasks 100000 --duration 1ms \
  --policy round-robin --output "$TMP/keep.csv" >"$OUT" 2>"$ERR" &
pid=$!
sleep 1
kill -TERM "$pid"
wait "$pid" || true
[ "$(cat "$TMP/keep.csv")" = "earlier results" ] ||
  fail "an interrupted run changed the earlier --output file"
rm -f "$TMP/keep.csv"
pass "an interrupted run removes the --output file it created"

# A policy is a line of the configuration: a line break in it is bad usage.
run 2 --quick --backend host --policy "round-robin
single-stream"
expect "$ERR" "a policy name or file has no control character" \
  "--policy with a line break"
pass "--policy with a control character is bad usage"

# A contender whose runs fail (tests/modules/broken-placement.c places on
# a device that does not exist): exit 1; its rows say valid 0 (JSON false)
# and keep the run's parameters (they were 0), as its baseline's rows have.
run 1 --quick --backend host --workload trivial,latency,submit --repeat 1 \
  --policy broken-placement --format csv
expect "$ERR" "trivial / broken-placement: run failed: " \
  "a failing contender: stderr"
for row in 'trivial,broken-placement,cuasync,host,whole,64,64,4,1,1,50000,1,' \
  'latency,broken-placement,cuasync,host,task,100,0,1,1,1,0,0,' \
  'submit,broken-placement,cuasync,host,task,1000,1,4,1,1,0,1,'; do
  expect "$OUT" "^$row.*,0,\".*CUA_ERR_BAD_PLACEMENT" \
    "a failed row: its parameters, valid 0"
done
pass "a failed row keeps its parameters and says valid 0"
run 1 --quick --backend host --workload trivial --repeat 1 \
  --policy broken-placement --format json
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["results"]
     if r["contender"] == "broken-placement"][0]
assert r["valid"] is False and r["error"].startswith("run failed: "), r
assert (r["tasks"], r["width"], r["streams"], r["repeat"], r["duration_ns"]) \
    == (64, 64, 4, 1, 50000), r
assert r["makespan_ns"] is None, r
' <"$OUT" 2>"$ERR" || fail "a failed row in JSON: $(cat "$ERR")"
fi
pass "a failed row in JSON: valid false, its parameters kept"

# JSON is UTF-8 whatever the bytes of what it quotes (here the
# environment's $CUASYNC_MODELS): an ill-formed sequence becomes U+FFFD.
mdir=$(printf '%s/m\377\303\251' "$TMP")
models=${CUASYNC_MODELS-}
CUASYNC_MODELS=$mdir run 0 --quick --backend host --workload trivial \
  --repeat 1 --policy round-robin --format json
CUASYNC_MODELS=$models # a function's prefix assignment may stay in sh
expect "$OUT" '"CUASYNC_MODELS": ".*/m\\ufffdé"' "--format json: a value not UTF-8"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read())' \
    <"$OUT" 2>"$ERR" || fail "--format json: not UTF-8 JSON: $(cat "$ERR")"
fi
pass "--format json is valid UTF-8 whatever the environment holds"

# CSV writes numbers as the JSON does: whole nanoseconds exactly (it wrote
# 4.63933e+06), the rest with 9 significant digits. Tasks of 2 ms make the
# makespan 2 ms at least whatever the machine (its critical path), so that
# it has the 7 digits the old format wrote with an exponent (64 tasks of
# 50 us ran in 0.98 ms on a machine of 32 cores).
run 0 --quick --backend host --workload trivial,submit --repeat 1 \
  --duration 2ms --policy round-robin --format csv
grep -v '^#' "$OUT" | grep -q '[0-9]e[-+]' && fail "CSV: a number with an exponent"
awk -F, '!/^#/ && $1 == "trivial" && $2 == "round-robin" {
  if ($14 !~ /^[1-9][0-9]*(\.[0-9]+)?$/ || $14 < 1000000) bad = 1; n++ }
  END { exit bad || n != 1 }' "$OUT" ||
  fail "CSV: the makespan is not written in full nanoseconds"
pass "CSV numbers: whole nanoseconds, no exponent"

# A configuration that does not exist: exit 1, the file named.
run 1 --quick --config "$TMP/missing.ini"
expect "$ERR" "$TMP/missing.ini" "a missing configuration: stderr"
pass "a missing configuration exits 1 with a message"

# --plot without gnuplot: exit 3, before running anything.
GNUPLOT=$TMP/no-gnuplot
export GNUPLOT
run 3 --quick --backend host --plot "$TMP/p.svg"
unset GNUPLOT
expect "$ERR" "gnuplot" "--plot without gnuplot: stderr"
[ -s "$OUT" ] && fail "--plot without gnuplot still ran the benchmark"
pass "--plot without gnuplot exits 3"

# --plot to a file that cannot be written: exit 1, said before anything
# runs (gnuplot wrote its SVG on standard output after the table).
GNUPLOT=$(command -v true)
export GNUPLOT
run 1 --quick --backend host --workload trivial --repeat 1 \
  --plot "$TMP/no-such-dir/p.svg"
unset GNUPLOT
expect "$ERR" "^cuasync-bench: cannot write $TMP/no-such-dir/p.svg: No such file or directory$" \
  "--plot to a missing folder: stderr"
[ -s "$OUT" ] && fail "--plot to a missing folder still ran the benchmark"
pass "--plot to a missing folder exits 1 before running, saying why"

# --output and --plot naming one file (here through a link): bad usage,
# before anything runs (the SVG was written over the results, exit 0).
GNUPLOT=$(command -v true)
export GNUPLOT
echo "earlier results" >"$TMP/same.svg"
ln -s same.svg "$TMP/link.svg"
run 2 --quick --backend host --workload trivial --repeat 1 \
  --output "$TMP/same.svg" --plot "$TMP/link.svg"
expect "$ERR" "^cuasync-bench: --output $TMP/same.svg and --plot $TMP/link.svg are the same file$" \
  "--output and --plot the same file: stderr"
[ "$(cat "$TMP/same.svg")" = "earlier results" ] ||
  fail "--output and --plot the same file: the file was changed"
run 2 --quick --backend host --workload trivial --repeat 1 \
  --output "$TMP/new.svg" --plot "$TMP/new.svg"
[ -e "$TMP/new.svg" ] && fail "--output and --plot the same file: created it"
unset GNUPLOT
rm -f "$TMP/same.svg" "$TMP/link.svg"
pass "--output and --plot naming the same file is bad usage"

# Whether the sim backend was built (SimGrid found).
sim=
for d in $(echo "${CUASYNC_MODULE_PATH:-}" | tr : ' '); do
  [ -e "$d/sim.so" ] && sim=1
done

# --plot with gnuplot, where it is installed.
if command -v gnuplot >/dev/null 2>&1; then
  run 0 --quick --backend host --workload trivial --repeat 1 \
    --plot "$TMP/p.svg"
  expect "$TMP/p.svg" '<svg' "--plot: the SVG"
  grep -q '<svg' "$OUT" && fail "--plot: the SVG is on standard output"
  pass "--plot writes an SVG through gnuplot"
  # A plot that cannot be written (a full disk): exit 1, saying why (it
  # exited 0).
  if [ -w /dev/full ]; then
    run 1 --quick --backend host --workload trivial --repeat 1 \
      --plot /dev/full
    expect "$ERR" '^cuasync-bench: writing /dev/full: No space left on device$' \
      "--plot /dev/full: stderr"
    expect "$OUT" '^trivial ' "--plot /dev/full: the results are still printed"
    pass "--plot to a full disk exits 1, saying why"
  fi
  # With --trace: a Gantt chart per trace (contender and workload).
  tdir="$OUT.gantt"
  rm -rf "$tdir"
  mkdir "$tdir"
  run 0 --quick -b host -p round-robin -p least-loaded -w random,chain \
    --repeat 1 --trace "$tdir" --plot "$tdir/p.svg"
  for f in random-round-robin random-least-loaded chain-round-robin \
    chain-least-loaded; do
    expect "$tdir/p-gantt-$f.svg" '<svg' "--plot --trace: $f's Gantt chart"
    expect "$tdir/p-gantt-$f.svg" 'device 0 stream 0' \
      "--plot --trace: $f's Gantt chart rows"
  done
  rm -rf "$tdir"
  pass "--plot with --trace draws a Gantt chart per trace"
  # On the sim backend, whose rows have no baseline and no vs-raw, the
  # bars are the efficiencies (gnuplot was given no column and failed,
  # exit 1 after the whole run).
  if [ -n "$sim" ]; then
    run 0 -b sim -p round-robin -p least-loaded -w chain,random --tasks 16 \
      --repeat 1 --plot "$TMP/sim.svg"
    expect "$TMP/sim.svg" '<svg' "--plot on the sim backend: the SVG"
    expect "$TMP/sim.svg" 'efficiency (ideal / makespan)' \
      "--plot on the sim backend: efficiency bars"
    expect "$TMP/sim.svg" '<title>least-loaded</title>' \
      "--plot on the sim backend: a bar per contender"
    rm -f "$TMP/sim.svg"
    pass "--plot on the sim backend draws the efficiencies"
  fi
fi

# A run with nothing to draw (latency alone: its ratios are not of
# makespans) says so and leaves no file (gnuplot failed on an empty plot).
GNUPLOT=$(command -v true)
export GNUPLOT
run 1 --quick --backend host --workload latency --repeat 1 \
  --policy round-robin --plot "$TMP/lat.svg"
unset GNUPLOT
expect "$ERR" "^cuasync-bench: nothing to plot in $TMP/lat.svg: no row has a makespan ratio or an efficiency$" \
  "--plot with nothing to draw: stderr"
expect "$OUT" '^latency  *round-robin ' "--plot with nothing to draw: the results"
[ -e "$TMP/lat.svg" ] && fail "--plot with nothing to draw: left a file"
pass "--plot with nothing to draw says so, exit 1"

# The simulated machine is written with the parameters, in every format:
# the results of two machines, compared in separate runs, could not be
# told apart.
if [ -n "$sim" ]; then
  printf 'gpus = 2\nlaunch_ns = 3000\n' >"$TMP/two.machine"
  for f in table csv; do
    run 0 -b sim --machine "$TMP/two.machine" -p round-robin -w trivial \
      --tasks 8 --repeat 1 --format $f
    expect "$OUT" "^# parameters: .*, submission whole, machine $TMP/two.machine$" \
      "--machine in the $f parameters"
  done
  run 0 -b sim --machine "$TMP/two.machine" -p round-robin -w trivial \
    --tasks 8 --repeat 1 --format json
  python3 -c 'import json, sys
p = json.load(sys.stdin)["parameters"]
sys.exit(0 if p["machine"] == sys.argv[1] else "machine: %r" % p.get("machine"))' \
    "$TMP/two.machine" <"$OUT" >"$ERR" 2>&1 ||
    fail "--machine in the JSON parameters: $(cat "$ERR")"
  run 0 -b host -p round-robin -w trivial --tasks 8 --repeat 1 --format json
  python3 -c 'import json, sys
p = json.load(sys.stdin)["parameters"]
sys.exit(0 if "machine" in p and p["machine"] is None else "machine: %r" % p)' \
    <"$OUT" >"$ERR" 2>&1 || fail "no --machine: not null in JSON: $(cat "$ERR")"
  # With --config contenders alone, --machine would be named with the
  # results and unused: bad usage.
  printf '[runtime]\nbackend = sim\npolicy = round-robin\n' >"$TMP/sim.ini"
  run 2 -b sim --machine "$TMP/two.machine" --config "$TMP/sim.ini" \
    -w trivial --tasks 8 --repeat 1
  expect "$ERR" '^cuasync-bench: --machine is the machine of --policy contenders, and there are none' \
    "--machine with --config contenders alone: stderr"
  rm -f "$TMP/two.machine" "$TMP/sim.ini"
  pass "--machine is written with the parameters, and needs a --policy contender"

  # No baseline runs on the sim backend, in any workload: latency and
  # submit ran the host's threads beside it and gave ratios of virtual
  # or simulation times over real ones (200x).
  run 0 --quick -b sim -p round-robin -w trivial,latency,submit,submit-mt \
    --repeat 1 --format csv
  grep -v '^#' "$OUT" >"$TMP/sim.csv"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n[$1]++ }
    $3 != "cuasync" || $(c["ratio_vs_best_raw"]) != "" ||
      $(c["best_raw"]) != "" { print; bad = 1 }
    END { exit bad || n["trivial"] != 1 || n["latency"] != 1 ||
          n["submit"] != 1 || n["submit-mt"] != 1 }' "$TMP/sim.csv" \
    >"$ERR" || fail "sim: a baseline row or a ratio: $(cat "$ERR")"
  pass "no baseline and no vs-raw on the sim backend"
fi

echo "all $checks checks passed"
exit 0
