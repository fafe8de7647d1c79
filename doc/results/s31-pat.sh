#!/usr/bin/env bash
# (doc/results, thirty-first session: run from the repository root on a device machine, after
# ../shared/gpu/pack and bash .gpu/build OUT ..., with .gpu carried; kept as run.)
# After .gpu/build: the 50 us patterns under every multi-stream policy, twice.
out=${1:?}
here=$PWD
multiarch=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$multiarch
src=$(ls -d /tmp/gpu-build/*/ | head -n1); cd "$src"
export CUASYNC_MODULE_PATH="$PWD/policies/.libs:$PWD/plugins/.libs" CUASYNC_MODELS=memory
for i in 1 2; do
./tools/cuasync-bench -b cuda -w trivial,chain,stencil,tree,random -p round-robin -p least-loaded -p dmda -p heft -f csv -o $out/patterns$i.csv 2>>$out/pat-err.txt
awk -F, '!/^#/ && $1=="workload"{for(k=1;k<=NF;k++)c[$k]=k;next} !/^#/{ms[$1"/"$2]=$c["makespan_ns"]; w[$1]=1; if($3=="cuasync") p[$2]=1}
 END{for (x in w){ line=x; for (q in p) if ((x"/"q) in ms) line=line sprintf(" %s %.3f", q, ms[x"/"q]/ms[x"/raw-streams"]); print line}}' $out/patterns$i.csv | sort
done
