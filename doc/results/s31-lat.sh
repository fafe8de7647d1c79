#!/usr/bin/env bash
# (doc/results, thirty-first session: run from the repository root on a device machine, after
# ../shared/gpu/pack and bash .gpu/build OUT ..., with .gpu carried; kept as run.)
# After .gpu/build: builds .gpu/old's tarball (the older tree;
# session's final tree) beside it and runs latency and micro-chain
# interleaved: O = old, N = new (this tree), both launch = auto.
out=${1:?}; rounds=${2:-4}
here=$PWD
multiarch=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
for pc in "$multiarch"/pkgconfig/*.pc; do sed -i "s|^prefix=.*|prefix=$here/.gpu/deps/usr|" "$pc"; done
export PKG_CONFIG_PATH=$multiarch/pkgconfig LD_LIBRARY_PATH=$multiarch PATH=/usr/local/cuda/bin:$PATH
rm -rf /tmp/old-build && mkdir -p /tmp/old-build && tar xzf .gpu/old/*.tar.gz -C /tmp/old-build
old=$(ls -d /tmp/old-build/*/ | head -n1); new=$(ls -d /tmp/gpu-build/*/ | head -n1)
(cd $old && ./configure >/tmp/old-conf.log 2>&1 && make -j$(nproc) >/tmp/old-make.log 2>&1) || { echo old build failed; tail -20 /tmp/old-conf.log /tmp/old-make.log; exit 1; }
mkdir -p $out/lat
for i in $(seq 1 $rounds); do
  for m in O N; do
    d=$new; [ $m = O ] && d=$old
    ( cd $d && CUASYNC_MODULE_PATH="$d/policies/.libs:$d/plugins/.libs" CUASYNC_MODELS=memory \
      ./tools/cuasync-bench -b cuda -w latency,micro-chain -p single-stream -p round-robin -f csv -o $out/lat/r$i-$m.csv 2>>$out/lat/err.txt )
    awk -F, -v tag="$i $m" '!/^#/ && $1=="workload"{for(k=1;k<=NF;k++)c[$k]=k;next}
      !/^#/{ms[$1"/"$2]=$c["makespan_ns"];p[$1"/"$2]=$c["lat_p50_ns"]}
      END{printf "%s latency-ss %.3f latency-rr %.3f chain-ss %.3f chain-rr %.3f\n",tag,
        p["latency/single-stream"]/p["latency/raw-sync"],p["latency/round-robin"]/p["latency/raw-sync"],
        ms["micro-chain/single-stream"]/ms["micro-chain/raw-serial"],ms["micro-chain/round-robin"]/ms["micro-chain/raw-serial"]}' $out/lat/r$i-$m.csv | tee -a $out/lat/summary.txt
  done
done
cd $out && tar czf lat.tar.gz lat && rm -rf lat
