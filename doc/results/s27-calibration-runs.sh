#!/bin/bash
# s27-calibration-runs.sh TARBALL OUTDIR: the twenty-seventh session's
# calibration and validation runs of the sim's host on a CUDA machine (as
# sessions I, J and K ran them).
#
# From TARBALL (a release tarball, `make dist`) it builds three trees in
# /tmp/s27cal: the release build, and the builds of s27-prof-build.patch
# (every backend call on the launch threads timed) and
# s27-lean-build.patch (only the launch threads' application of command
# lists timed), both beside this script. Then, on all the machine's GPUs:
#
#   OUTDIR/cal-{prof,lean}-{stencil,random}-POLICY-{1,2}.{csv,err}
#       the calibration: stencil and random of width 16 (CAL_WIDTH, if
#       set: the twenty-ninth session's runs used 8, with CAL_SEED 2
#       for the random pattern's seed), 1024 tasks of
#       50 us, under round-robin, least-loaded, heft and dmda, twice;
#   OUTDIR/val-run{1,2,3}.csv
#       the validation: the bench's stencil, random, tree (and, with two
#       GPUs or more, multigpu) patterns of width 8, release build.
#
# The instrumented builds count the calls of every submission of a
# process, the bench's warm-up run included, as every machine file of the
# twenty-seventh to twenty-ninth sessions was calibrated; with
# CUA_SP_TIMED=1 in the environment, only those of the timed runs (the
# twenty-ninth session: the launch threads' slowdown while a submission
# is decided is then about 0.06, not 0.5: it was the warm-up run's).
#
# Then: sim-s27-calibrate.py OUTDIR [BASE.machine] > my.machine, and
# cuasync-bench -b sim --machine my.machine --devices all -w ... -n 1024
# -d 50us -r 1 -f csv -o sim.csv; sim-s25-compare.py sim.csv
# OUTDIR/val-run*.csv. Check, Subunit and inih must be found by
# configure (PKG_CONFIG_PATH). Exit 0, or 1 when a build failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tarball=${1:?usage: s27-calibration-runs.sh TARBALL OUTDIR}
out=${2:?usage: s27-calibration-runs.sh TARBALL OUTDIR}
mkdir -p "$out"
work=/tmp/s27cal
rm -rf "$work"
for v in main prof lean; do
  mkdir -p "$work/$v" && tar -xzf "$tarball" -C "$work/$v" || exit 1
  src=$(ls -d "$work/$v"/*/ | head -n1)
  ln -s "$src" "$work/$v/tree"
  if [ "$v" != main ]; then
    (cd "$src" && patch -p1 -s <"$here/s27-$v-build.patch") || exit 1
  fi
  (cd "$src" && ./configure >/dev/null 2>&1 && make -j"$(nproc)" >/dev/null 2>&1) || {
    echo "s27-calibration-runs.sh: the $v build failed in $src" >&2
    exit 1
  }
done
ngpus=$(nvidia-smi -L 2>/dev/null | tee "$out/gpus.txt" | wc -l)
export CUASYNC_MODELS=memory
policies="round-robin least-loaded heft dmda"
for r in 1 2; do
  for w in stencil random; do
    for p in $policies; do
      for v in prof lean; do
        B=$work/$v/tree
        CUA_SP=1 CUASYNC_MODULE_PATH=$B/policies/.libs:$B/plugins/.libs \
          "$B/tools/cuasync-bench" -b cuda --devices all -w "$w" -W "${CAL_WIDTH:-16}" -s "${CAL_SEED:-1}" \
          -p "$p" -n 1024 -d 50us -r 5 -f csv \
          -o "$out/cal-$v-$w-$p-$r.csv" >/dev/null \
          2>"$out/cal-$v-$w-$p-$r.err" ||
          echo "s27-calibration-runs.sh: $v $w $p run $r failed" >&2
      done
    done
  done
done
M=$work/main/tree
patterns=stencil,random,tree
[ "$ngpus" -ge 2 ] && patterns=$patterns,multigpu
pargs=()
for p in $policies; do pargs+=(-p "$p"); done
for r in 1 2 3; do
  CUASYNC_MODULE_PATH=$M/policies/.libs:$M/plugins/.libs \
    "$M/tools/cuasync-bench" -b cuda --devices all -w "$patterns" \
    "${pargs[@]}" -n 1024 -d 50us -r 5 -f csv \
    -o "$out/val-run$r.csv" >/dev/null 2>&1 ||
    echo "s27-calibration-runs.sh: validation run $r failed" >&2
done
exit 0
