#!/bin/sh
# tests/fuzz/run.sh [BUILDDIR [SECONDS]]: runs each libFuzzer target of
# BUILDDIR (default build-fuzz, configured with CC=clang --enable-fuzzing)
# for SECONDS (default $CUASYNC_FUZZ_SECONDS, else 40), starting from the
# seed corpus in tests/fuzz/corpus/TARGET. Fails on any finding (crash,
# sanitizer report, leak, timeout); the input that found it is left in
# BUILDDIR/tests/fuzz/findings/TARGET/. The seed corpus is never written:
# new inputs go to a scratch directory.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
builddir=$(cd "${1:-$src/build-fuzz}" && pwd)
secs=${2:-${CUASYNC_FUZZ_SECONDS:-40}}

CUASYNC_MODULE_PATH="$builddir/policies/.libs:$builddir/plugins/.libs"
export CUASYNC_MODULE_PATH
unset CUASYNC_CONFIG CUASYNC_POLICY
# Performance models in memory: thousands of runtimes must not each merge
# a model file (and a fuzzed [runtime] models must not name a directory).
CUASYNC_MODELS=memory
export CUASYNC_MODELS
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export UBSAN_OPTIONS

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=""
for t in conf params dag; do
  exe="$builddir/tests/fuzz/fuzz_$t"
  if [ ! -x "$exe" ]; then
    echo "fuzz: $exe not built (configure with CC=clang --enable-fuzzing)" >&2
    exit 1
  fi
  case $t in
  conf) maxlen=4096 ;;
  params) maxlen=512 ;;
  *) maxlen=1024 ;;
  esac
  findings="$builddir/tests/fuzz/findings/$t"
  mkdir -p "$scratch/$t" "$findings"
  echo "fuzz: $t for ${secs}s"
  if ! "$exe" -max_total_time="$secs" -timeout=30 -rss_limit_mb=3072 \
    -max_len="$maxlen" -print_final_stats=1 \
    -artifact_prefix="$findings/" \
    "$scratch/$t" "$src/tests/fuzz/corpus/$t" >"$scratch/$t.log" 2>&1; then
    tail -n 60 "$scratch/$t.log" >&2
    echo "fuzz: $t FOUND a failure; input in $findings/" >&2
    failed="$failed $t"
  else
    grep -E '^stat::number_of_executed_units|^Done' "$scratch/$t.log" || true
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: failures in:$failed" >&2
  exit 1
fi
echo "fuzz: no findings"
