#!/usr/bin/env bash
# doc/results/s32-phases/final.sh OUT (thirty-second session): from the
# repository root on a device machine, with .gpu carried (.gpu/old holding
# the session's starting tarball): the GPU suite, three runs of issue 9's
# targets, five interleaved rounds against the starting tree, and the
# 50 us patterns twice, on the final tree.
set -u
out=${1:?}
bash .gpu/build "$out" check 2>&1 | grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR)|^FAIL:" | head -20
bash doc/results/s31-tg.sh "$out" 2>&1 | grep -E "targets run|micro-chain ss|latency p50 ss|submit raw/rr|submit-mt 4t/1t|micro-random|ll/rr"
bash doc/results/s32-phases/ab.sh "$out" 5 2>&1 | tail -10
bash doc/results/s31-pat.sh "$out" 2>&1 | tail -10
