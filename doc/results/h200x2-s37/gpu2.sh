#!/usr/bin/env bash
# s37: the whole suite on two H200s, then (time allowing) the targets once
out=${1:?}
here=$PWD
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpus.csv
bash .gpu/build "$out" check > $out/build-tail.txt 2>&1; echo "build rc=$?"
echo "suite took $(( $(date +%s) - start )) s"
export LD_LIBRARY_PATH=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
src=$(ls -d /tmp/gpu-build/*/ | head -n1); cd "$src"
grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR)" test-suite.log 2>/dev/null | head
grep -E "^(FAIL|ERROR|SKIP):" test-suite.log | head
cat $out/gpus.csv
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
if [ $(( $(date +%s) - start )) -lt 420 ]; then
  timeout 150 ./tools/cuasync-bench -b cuda -w micro-chain,latency,submit,submit-mt,micro-random \
    -p single-stream -p round-robin -p affinity -p least-loaded -f csv -o $out/targets1.csv 2>>$out/tg-err.txt
  echo "targets run 1 (GPU 0 of 2)"; awk -F, -f tools/bench/targets.awk $out/targets1.csv
fi
