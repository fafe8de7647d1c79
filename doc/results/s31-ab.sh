#!/usr/bin/env bash
# (doc/results, thirty-first session: run from the repository root on a device machine, after
# ../shared/gpu/pack and bash .gpu/build OUT ..., with .gpu carried; kept as run.)
# A/B on the GPU after .gpu/build: A = launch caller (the submitting thread
# decides and applies, as auto did before relay), B = launch auto (relays
# large single-launch-thread rounds on CUDA). Then one targets run of B.
out=${1:?}; rounds=${2:-6}
here=$PWD
multiarch=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
src=$(ls -d /tmp/gpu-build/*/ | head -n1)
cd "$src"
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
mkdir -p $out/ab
lscpu | grep -E "Model name|^CPU\(s\)" > $out/ab/cpu.txt
for i in $(seq 1 $rounds); do
  for m in A B; do
    if [ $m = A ]; then export CUASYNC_LAUNCH=caller; else unset CUASYNC_LAUNCH; fi
    f=$out/ab/r$i-$m.csv
    ./tools/cuasync-bench -b cuda -w micro-chain,micro-random ${BENCH_EXTRA:-} \
      -p single-stream -p round-robin -f csv -o $f 2>>$out/ab/err.txt
    awk -F, -v tag="$i $m" '
      !/^#/ && $1=="workload" {for(k=1;k<=NF;k++) c[$k]=k; next}
      !/^#/ {ms[$1"/"$2]=$c["makespan_ns"]}
      END {printf "%s chain-ss %.3f chain-rr %.3f random-rr %.3f random-ss %.3f\n", tag,
        ms["micro-chain/single-stream"]/ms["micro-chain/raw-serial"],
        ms["micro-chain/round-robin"]/ms["micro-chain/raw-serial"],
        ms["micro-random/round-robin"]/ms["micro-random/raw-streams"],
        ms["micro-random/single-stream"]/ms["micro-random/raw-serial"]}' $f | tee -a $out/ab/summary.txt
  done
done
unset CUASYNC_LAUNCH
for i in 1 2 3; do
  ./tools/cuasync-bench -b cuda -w micro-chain,latency,submit,submit-mt,micro-random \
    -p single-stream -p round-robin -p affinity -p least-loaded -f csv -o $out/ab/targets$i.csv 2>>$out/ab/err.txt
  echo "targets run $i"; awk -F, -f tools/bench/targets.awk $out/ab/targets$i.csv | tee -a $out/ab/summary.txt
done
cd $out && tar czf ab.tar.gz ab && rm -rf ab
