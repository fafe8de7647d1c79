#!/usr/bin/env bash
# doc/results/s32-phases/ab.sh OUT [ROUNDS] (thirty-second session): from the
# repository root on a device machine, after bash .gpu/build OUT ...: builds
# .gpu/old's tarball (the session's starting tree) beside it and runs
# latency, micro-chain and micro-random interleaved, O = old, N = new,
# under single-stream and round-robin, then prints each round's ratios.
out=${1:?}; rounds=${2:-5}
here=$PWD
multiarch=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
for pc in "$multiarch"/pkgconfig/*.pc; do sed -i "s|^prefix=.*|prefix=$here/.gpu/deps/usr|" "$pc"; done
export PKG_CONFIG_PATH=$multiarch/pkgconfig LD_LIBRARY_PATH=$multiarch PATH=/usr/local/cuda/bin:$PATH
if [ ! -x /tmp/old-build/done ]; then
  rm -rf /tmp/old-build && mkdir -p /tmp/old-build && tar xzf .gpu/old/*.tar.gz -C /tmp/old-build
  old=$(ls -d /tmp/old-build/*/ | head -n1)
  (cd $old && ./configure >/tmp/old-conf.log 2>&1 && make -j$(nproc) >/tmp/old-make.log 2>&1) || { echo old build failed; exit 1; }
fi
old=$(ls -d /tmp/old-build/*/ | head -n1); new=$(ls -d /tmp/gpu-build/*/ | head -n1)
mkdir -p $out/ab
for i in $(seq 1 $rounds); do
  for m in O N; do
    d=$new; [ $m = O ] && d=$old
    ( cd $d && CUASYNC_MODULE_PATH="$d/policies/.libs:$d/plugins/.libs" CUASYNC_MODELS=memory \
      ./tools/cuasync-bench -b cuda -w latency,micro-chain,micro-random -p single-stream -p round-robin -f csv -o $out/ab/r$i-$m.csv 2>>$out/ab/err.txt )
    awk -F, -v tag="$i $m" '!/^#/ && $1=="workload"{for(k=1;k<=NF;k++)c[$k]=k;next}
      !/^#/{ms[$1"/"$2]=$c["makespan_ns"];p[$1"/"$2]=$c["lat_p50_ns"]}
      END{printf "%s latency-ss %.3f chain-ss %.3f chain-rr %.3f random-rr %.3f random-ss %.3f\n",tag,
        p["latency/single-stream"]/p["latency/raw-sync"],
        ms["micro-chain/single-stream"]/ms["micro-chain/raw-serial"],ms["micro-chain/round-robin"]/ms["micro-chain/raw-serial"],
        ms["micro-random/round-robin"]/ms["micro-random/raw-streams"],ms["micro-random/single-stream"]/ms["micro-random/raw-serial"]}' $out/ab/r$i-$m.csv | tee -a $out/ab/summary.txt
  done
done
