#!/usr/bin/env bash
# doc/results/s32-phases/ctx-test.sh OUT (thirty-second session): from the
# repository root on a device machine, after bash .gpu/build OUT all: runs
# check_cuda's "ops" case (test_a_programs_own_context_stays_current among
# it), then again with ctx-switch.patch (the first version of the context
# check, which switched a program's own context to the primary one), which
# that test must fail.
out=${1:?}
here=$PWD
b=$(ls -d /tmp/gpu-build/*/ | head -n1)
export LD_LIBRARY_PATH=$here/.gpu/deps/usr/lib/x86_64-linux-gnu
cd $b && make -j$(nproc) tests/check_cuda >/dev/null 2>&1 || exit 1
CK_RUN_CASE=ops ./tests/check_cuda 2>&1 | grep -v "backend log" | tail -3 | tee $out/ctx-test.txt
patch -p1 < $here/doc/results/s32-phases/ctx-switch.patch >/dev/null && make -j$(nproc) >/dev/null 2>&1 || exit 1
echo "== with ctx-switch.patch" | tee -a $out/ctx-test.txt
CK_RUN_CASE=ops ./tests/check_cuda 2>&1 | grep -v "backend log" | tail -3 | tee -a $out/ctx-test.txt
