#!/bin/sh
# tools/bench/callgrind-per-op.sh: instructions per op of cuasync on the
# host backend, counted by valgrind --tool=callgrind.
#
#   tools/bench/callgrind-per-op.sh [-p POLICY] [-n SMALL,BIG] [-b BUILD]
#                                   [-k RUNS]
#
# For each case below, runs bench-ops (tools/bench/ops.c: one run of one
# workload DAG, spins of 0 ns, nothing else) under callgrind twice, with
# SMALL and BIG tasks (default 1000,5000), and prints
#
#   (instructions(BIG) - instructions(SMALL)) / (tasks(BIG) - tasks(SMALL))
#
# the instructions of the whole process, every thread included: start-up,
# runtime creation and teardown are the same for both sizes and cancel out,
# so what is left is what one more op costs: building it, submitting it,
# placing and running it, completing it, on a runtime that runs it first
# (its pools empty, its events not yet made). The column "warm" is what a
# run of the BIG DAG costs per op once the runtime is warm, the ops are
# built and the DAG was submitted before (a program that submits the same
# work again and again; from its second build on, a DAG is built from its
# plan: core/plan.c): BIG run 5 times on one runtime, less BIG run 3
# times, halved. (Until the thirty-first session: 3 less 1, which was the
# same before plans.) The cases:
#
#   chain/whole   a chain of N ops, one submission
#   chain/task    a chain of N ops, one submission per op
#   random/task   Task Bench's random pattern (width 8), one submission
#                 per task (as StarPU and OpenMP insert tasks)
#
# The runtime's threads watch for work a few microseconds before they
# sleep, and callgrind counts those instructions too, so a case with many
# submissions (one per task) moves by up to 10% from run to run; -k RUNS
# (default 1) runs each size RUNS times and keeps the fewest instructions.
#
# Issue 9's targets: chain <= 1,000 instructions per op, random-DAG task
# <= 2,000. Run it from the build directory (BUILD, default .), after
# `make`. Exit 0, 1 when a run failed, 2 on bad usage, 77 without valgrind.
set -eu

policy=round-robin
sizes=1000,5000
build=.
runs=1
while getopts p:n:b:k:h opt; do
  case $opt in
  p) policy=$OPTARG ;;
  n) sizes=$OPTARG ;;
  b) build=$OPTARG ;;
  k) runs=$OPTARG ;;
  h)
    sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
    exit 0
    ;;
  *) exit 2 ;;
  esac
done
small=${sizes%,*}
big=${sizes#*,}
case "$small$big" in
*[!0-9]* | "")
  echo "callgrind-per-op.sh: -n wants SMALL,BIG task counts" >&2
  exit 2
  ;;
esac
case "$runs" in
*[!0-9]* | "" | 0)
  echo "callgrind-per-op.sh: -k wants a number of runs, 1 or more" >&2
  exit 2
  ;;
esac
[ "$big" -gt "$small" ] || {
  echo "callgrind-per-op.sh: BIG must be above SMALL" >&2
  exit 2
}
command -v valgrind >/dev/null 2>&1 || {
  echo "callgrind-per-op.sh: valgrind is not installed" >&2
  exit 77
}
ops=$build/tools/bench-ops
[ -x "$ops" ] || {
  echo "callgrind-per-op.sh: $ops not built (run make in $build)" >&2
  exit 2
}
# The program is a libtool wrapper script in the build tree: libtool runs
# valgrind on the real binary, with the freshly built library.
lt=
[ -x "$build/libtool" ] && lt="$build/libtool --mode=execute"
CUASYNC_MODULE_PATH=${CUASYNC_MODULE_PATH:-$build/policies/.libs:$build/plugins/.libs}
export CUASYNC_MODULE_PATH
# (and no graph mode or launch mode of the environment: the warm column
# runs one DAG again, which CUASYNC_GRAPHS=auto would replay as a graph)
unset CUASYNC_CONFIG CUASYNC_POLICY CUASYNC_GRAPHS CUASYNC_LAUNCH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/callgrind-per-op.XXXXXX")
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# instructions PATTERN TASKS SUBMIT [DAGRUNS]: the process's total Ir, the
# fewest of $runs processes, each running the DAG DAGRUNS times (default
# 1), and the task count the pattern made (it may round), as "IR TASKS".
instructions() {
  out=$tmp/cg.$1.$2.$3
  width=8
  [ "$1" = chain ] && width=1
  best=
  r=0
  while [ "$r" -lt "$runs" ]; do
    r=$((r + 1))
    # shellcheck disable=SC2086 # $lt is a command and its arguments
    if ! $lt valgrind --tool=callgrind --callgrind-out-file="$out" \
      "$ops" "$1" "$2" "$3" "$policy" "$width" "${4:-1}" >"$tmp/stdout" \
      2>"$tmp/stderr"; then
      echo "callgrind-per-op.sh: bench-ops $1 $2 $3 $policy failed:" >&2
      sed 's/^/  /' "$tmp/stderr" >&2
      exit 1
    fi
    ir=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$out")
    [ -n "$ir" ] || ir=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$out")
    if [ -z "$best" ] || [ "$ir" -lt "$best" ]; then
      best=$ir
    fi
  done
  n=$(sed -n 's/^[a-z]* \([0-9]*\) tasks.*/\1/p' "$tmp/stdout")
  echo "$best $n"
}

printf '%-12s %12s %12s %9s %9s  (policy %s, host backend)\n' case \
  "Ir(N=$small)" "Ir(N=$big)" "Ir/op" "warm" "$policy"
for c in chain/whole chain/task random/task; do
  pattern=${c%/*}
  submit=${c#*/}
  # shellcheck disable=SC2046 # "IR TASKS" is meant to split
  set -- $(instructions "$pattern" "$small" "$submit")
  ir0=$1 n0=$2
  # shellcheck disable=SC2046 # "IR TASKS" is meant to split
  set -- $(instructions "$pattern" "$big" "$submit")
  ir1=$1 n1=$2
  # shellcheck disable=SC2046 # "IR TASKS" is meant to split
  set -- $(instructions "$pattern" "$big" "$submit" 3)
  ir3=$1
  # shellcheck disable=SC2046 # "IR TASKS" is meant to split
  set -- $(instructions "$pattern" "$big" "$submit" 5)
  ir5=$1
  awk -v c="$c" -v a="$ir0" -v b="$ir1" -v n0="$n0" -v n1="$n1" \
    -v w="$ir3" -v w5="$ir5" 'BEGIN {
    printf "%-12s %12.0f %12.0f %9.0f %9.0f\n", c, a, b, (b - a) / (n1 - n0),
      (w5 - w) / 2 / n1 }'
done
