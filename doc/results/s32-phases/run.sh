#!/usr/bin/env bash
# doc/results/s32-phases/run.sh OUT: after bash .gpu/build OUT, from the
# repository root on a device machine: builds the experiment against the
# built tree and runs it (thirty-second session).
out=${1:?}
here=$PWD
b=$(ls -d /tmp/gpu-build/*/ | head -n1)
d=$here/doc/results/s32-phases
export LD_LIBRARY_PATH=$b/.libs:$here/.gpu/deps/usr/lib/x86_64-linux-gnu
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/ph
gcc -O2 -shared -fPIC -I$b/include -I$here/include $d/phases-obs.c -o /tmp/ph/phases.so || exit 1
nvcc -O2 -I$b/include -I$here/include $d/phases.cu -o /tmp/ph/phases -L$b/.libs -lcuasync -lcuda || exit 1
export CUASYNC_MODULE_PATH=$b/policies/.libs:$b/plugins/.libs:/tmp/ph CUASYNC_MODELS=memory
for pol in single-stream; do
  printf '[runtime]\nbackend = cuda\npolicy = %s\nobservers = phases\n' $pol > /tmp/ph/$pol.ini
  printf '[runtime]\nbackend = cuda\npolicy = %s\n' $pol > /tmp/ph/$pol-noobs.ini
done
# (S32_ONLY set: only the parts asked for below)
for i in $([ -n "${S32_ONLY:-}" ] || echo 1 2 3); do
  PHASES_OUT=/tmp/ph/ev.txt /tmp/ph/phases 10000 8 /tmp/ph/single-stream.ini | tee -a $out/phases.txt
  PHASES_OUT=/tmp/ph/ev2.txt /tmp/ph/phases 10000 8 /tmp/ph/single-stream-noobs.ini 2>&1 | cut -d' ' -f1-5 | tee -a $out/phases-noobs.txt
done
# With doc/results/s32-phases/times.patch applied to the built tree (the
# stages before a large submission's first launch, timed): S32_T=1.
if [ -n "${S32_TIMES:-}" ]; then
  (cd $b && patch -p1 < $d/times.patch >/dev/null && make -j$(nproc) >/dev/null 2>&1) || exit 1
  for i in 1 2; do
    S32_T=1 PHASES_OUT=/tmp/ph/ev.txt /tmp/ph/phases 10000 8 /tmp/ph/single-stream.ini 2>&1 | tee -a $out/phases-times.txt
  done
fi
# With pool-ab.patch too: the node pool's prefetch none (0), one block
# ahead (1), two (2), in interleaved processes.
if [ -n "${S32_POOLAB:-}" ]; then
  (cd $b && patch -p1 < $d/pool-ab.patch >/dev/null && make -j$(nproc) >/dev/null 2>&1) || exit 1
  for i in 1 2 3 4; do
    for v in 0 1 2; do
      S32_POOL=$v S32_T=1 PHASES_OUT=/tmp/ph/ev.txt /tmp/ph/phases 10000 8 /tmp/ph/single-stream-noobs.ini 2>&1 | grep "^s32" | tail -6 | awk -v v=$v '{printf "pool%s build %s wire %s\n", v, $5, $11}' | tee -a $out/pool-ab.txt
    done
  done
fi
# S32_BE=1: be-launch.cu, the CUDA backend's launch() against cudaLaunchKernel(), no core.
if [ -n "${S32_BE:-}" ]; then
  nvcc -O2 -I$b/include -I$here/include $d/be-launch.cu -o /tmp/ph/be-launch -ldl $b/kernels/.libs/libcuasync-kernels.a || exit 1
  for i in 1 2 3; do
    /tmp/ph/be-launch $b/plugins/.libs/cuda.so 10000 6 2>&1 | tee -a $out/be-launch.txt; S32_TOUCH=64 /tmp/ph/be-launch $b/plugins/.libs/cuda.so 10000 4 2>&1 | tee -a $out/be-launch64.txt
  done
fi
# S32_WIN=1: the launches of the last round by tenths (call and gap), under
# launch = auto (relayed) and launch = caller (no launch thread deciding
# beside the launches), two processes each, interleaved.
if [ -n "${S32_WIN:-}" ]; then
  printf '[runtime]\nbackend = cuda\npolicy = single-stream\nobservers = phases\nlaunch = caller\n' > /tmp/ph/caller.ini
  for i in 1 2; do
    for m in single-stream caller; do
      echo "== $m" | tee -a $out/phases-win.txt
      PHASES_OUT=/tmp/ph/ev.txt /tmp/ph/phases 10000 8 /tmp/ph/$m.ini 2>&1 | tail -4 | tee -a $out/phases-win.txt
    done
  done
fi
# S32_KSPIN_RUN=1: be-launch with the raw side through cua__kernel_spin(), three processes.
if [ -n "${S32_KSPIN_RUN:-}" ]; then
  nvcc -O2 -I$b/include -I$here/include $d/be-launch.cu -o /tmp/ph/be-launch -ldl $b/kernels/.libs/libcuasync-kernels.a || exit 1
  for i in 1 2 3; do
    S32_TOUCH=0 /tmp/ph/be-launch $b/plugins/.libs/cuda.so 10000 6 2>&1 | tee -a $out/be-launch-own.txt
    S32_KSPIN=1 S32_TOUCH=0 /tmp/ph/be-launch $b/plugins/.libs/cuda.so 10000 6 2>&1 | tee -a $out/be-launch-kspin.txt
  done
fi
# S32_SHARED=1: the same with the program linked to the shared libcudart, as the
# backend module and cuasync-bench are (nvcc links the static one by default).
if [ -n "${S32_SHARED:-}" ]; then
  nvcc -O2 --cudart=shared -I$b/include -I$here/include $d/be-launch.cu -o /tmp/ph/be-launch-sh -ldl $b/kernels/.libs/libcuasync-kernels.a || exit 1
  for i in 1 2 3; do
    S32_KSPIN=1 S32_TOUCH=0 /tmp/ph/be-launch-sh $b/plugins/.libs/cuda.so 10000 6 2>&1 | tee -a $out/be-launch-kspin-shared.txt
  done
fi
