#!/usr/bin/env bash
# s35: launch_threads 1,2,4 on submit, submit-mt, micro-chain, micro-random (rr, ss), two interleaved rounds
out=${1:?}
here=$PWD
bash .gpu/build "$out" all > $out/build-tail.txt 2>&1; echo "build rc=$?"
export LD_LIBRARY_PATH=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
src=$(ls -d /tmp/gpu-build/*/ | head -n1); cd "$src"
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
for i in 1 2; do for lt in 1 2 4; do
  CUASYNC_LAUNCH_THREADS=$lt ./tools/cuasync-bench -b cuda -w submit,submit-mt,micro-chain,micro-random -p single-stream -p round-robin -f csv -o $out/lt$lt-$i.csv 2>>$out/err.txt
  echo "launch_threads=$lt run $i"; awk -F, -f tools/bench/targets.awk $out/lt$lt-$i.csv | grep -v -- '-1.000'
  awk -F, '$1 ~ /submit/ {print $1, $2, $15}' $out/lt$lt-$i.csv
done; done
cd $out && tar czf csv.tgz *.csv && rm -f *.csv
