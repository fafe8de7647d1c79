#!/bin/sh
# The sim backend's calibration path (cuasync-sim(7), CALIBRATION):
# traces of micro-random on the host backend under two policies, read by
# tools/bench/trace-host-costs.py --sim into [backend.sim] host keys, which
# the sim accepts in a machine file and which delay the simulated makespan
# (the build and the decisions take virtual time) against the same machine
# without them. Deterministic: virtual time only.
set -u
command -v python3 >/dev/null 2>&1 || {
  echo "SKIP: no python3"
  exit 77
}
top=${srcdir:-.}
dir=sim-calibrate.$$
trap 'rm -rf "$dir"' EXIT
mkdir "$dir" "$dir/traces" || exit 1
fail() {
  echo "FAIL: $*"
  exit 1
}
./tools/cuasync-bench --quick -b host -w micro-random -p round-robin \
  -p least-loaded --repeat 2 --trace "$dir/traces" -f csv -o /dev/null \
  >"$dir/out" 2>&1 || fail "bench --trace: $(cat "$dir/out")"
python3 "$top/tools/bench/trace-host-costs.py" --sim "$dir"/traces/*.json \
  >"$dir/keys" 2>&1 || fail "trace-host-costs.py --sim: $(cat "$dir/keys")"
for key in host_build_ns host_plan_ns host_decide_ns; do
  grep -Eq "^$key = [0-9]+" "$dir/keys" || fail "no $key in: $(cat "$dir/keys")"
done
grep -Eq '^host_decide_ns = [0-9]+, least-loaded=[0-9]+, round-robin=[0-9]+$' \
  "$dir/keys" || fail "host_decide_ns per policy: $(cat "$dir/keys")"
printf 'gpus = 1\nlaunch_ns = 1000\n' >"$dir/device.machine"
cat "$dir/device.machine" "$dir/keys" >"$dir/host.machine"
for m in device host; do
  ./tools/cuasync-bench -b sim --machine "$dir/$m.machine" -w stencil \
    -n 256 -d 50us -p round-robin --repeat 1 -f csv -o "$dir/$m.csv" \
    >"$dir/out" 2>&1 || fail "bench -b sim with $m.machine: $(cat "$dir/out")"
done
span() {
  awk -F, '!/^#/ && $2 == "round-robin" { print $14 }' "$1"
}
d=$(span "$dir/device.csv")
h=$(span "$dir/host.csv")
[ -n "$d" ] && [ -n "$h" ] || fail "no round-robin makespan: '$d' '$h'"
awk -v d="$d" -v h="$h" 'BEGIN { exit !(h > d) }' ||
  fail "the host keys did not delay the makespan: $h ns against $d ns"
python3 "$top/tools/bench/trace-host-costs.py" --sim \
  "$dir/traces/micro-random-round-robin.json" \
  "$dir/traces/micro-random-round-robin.json" >"$dir/out" 2>&1 &&
  fail "two traces of one policy: exit 0"
grep -q "a second trace of policy round-robin" "$dir/out" ||
  fail "two traces of one policy: $(cat "$dir/out")"
python3 "$top/tools/bench/trace-host-costs.py" --help >"$dir/out" 2>&1
[ $? -eq 2 ] || fail "--help: not exit 2: $(cat "$dir/out")"
grep -q "unknown option --help" "$dir/out" ||
  fail "--help: $(cat "$dir/out")"
echo "PASS: calibrated host keys, makespan $h ns against $d ns"
