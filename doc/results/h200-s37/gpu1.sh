#!/usr/bin/env bash
# s37: the suite, the targets three times, latency under launch=caller vs auto
out=${1:?}
here=$PWD
bash .gpu/build "$out" check > $out/build-tail.txt 2>&1; echo "build rc=$?"
tail -5 $out/build-tail.txt
export LD_LIBRARY_PATH=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
src=$(ls -d /tmp/gpu-build/*/ | head -n1); cd "$src"
grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR)" test-suite.log 2>/dev/null | head
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3; do
  ./tools/cuasync-bench -b cuda -w micro-chain,latency,submit,submit-mt,micro-random \
    -p single-stream -p round-robin -p affinity -p least-loaded -f csv -o $out/targets$i.csv 2>>$out/tg-err.txt
  echo "targets run $i"; awk -F, -f tools/bench/targets.awk $out/targets$i.csv
done
for i in 1 2; do for l in caller auto; do
  CUASYNC_LAUNCH=$l ./tools/cuasync-bench -b cuda -w latency,micro-chain -p single-stream -f csv -o $out/lat-$l-$i.csv 2>>$out/tg-err.txt
  echo "launch=$l run $i"; awk -F, -f tools/bench/targets.awk $out/lat-$l-$i.csv
done; done
cd $out && tar czf csv.tgz *.csv && rm -f *.csv
