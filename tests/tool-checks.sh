# tests/tool-checks.sh: what the shell tests of the tools share. Sourced by
# tests/check_*.sh after they set TOOL (the program) and NAME (for
# messages and the temporary folder); gives them $OUT and $ERR, and
# fail, pass, run and expect. The first check that fails ends the test
# with status 1, showing what the tool printed.

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_$NAME.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT HUP INT TERM
OUT=$TMP/stdout
ERR=$TMP/stderr
checks=0

fail() {
  echo "FAIL: $*" >&2
  for f in "$OUT" "$ERR"; do
    if [ -s "$f" ]; then
      echo "--- $(basename "$f"):" >&2
      sed 's/^/  /' "$f" | head -n 80 >&2
    fi
  done
  exit 1
}

pass() {
  checks=$((checks + 1))
  echo "ok $checks - $*"
}

# run EXPECTED_STATUS ARGS...: runs the tool, output in $OUT and $ERR.
run() {
  want=$1
  shift
  status=0
  "$TOOL" "$@" >"$OUT" 2>"$ERR" || status=$?
  [ "$status" -eq "$want" ] ||
    fail "$NAME $* exited with $status, expected $want"
}

# expect FILE PATTERN WHAT: FILE must contain the (basic) regex PATTERN.
expect() {
  grep -q -- "$2" "$1" || fail "$3: no '$2' in $(basename "$1")"
}

[ -x "$TOOL" ] || { echo "$TOOL not built" >&2; exit 99; }
