#!/usr/bin/env bash
# (doc/results, thirty-first session: run from the repository root on a device machine, after
# ../shared/gpu/pack and bash .gpu/build OUT ..., with .gpu carried; kept as run.)
# After .gpu/build: three runs of the targets (launch = auto).
out=${1:?}
here=$PWD
export LD_LIBRARY_PATH=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
src=$(ls -d /tmp/gpu-build/*/ | head -n1); cd "$src"
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
for i in 1 2 3; do
  ./tools/cuasync-bench -b cuda -w micro-chain,latency,submit,submit-mt,micro-random \
    -p single-stream -p round-robin -p affinity -p least-loaded -f csv -o $out/targets$i.csv 2>>$out/tg-err.txt
  echo "targets run $i"; awk -F, -f tools/bench/targets.awk $out/targets$i.csv
done
