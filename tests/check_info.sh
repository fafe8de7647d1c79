#!/bin/sh
# tests/check_info.sh: cuasync-info's options, outputs and exit codes.
#
# Run by `make check` from the build directory, with CUASYNC_MODULE_PATH
# pointing at the modules just built (AM_TESTS_ENVIRONMENT). Every check
# names what it expected; the first one that fails ends the test with
# status 1.

set -u

TOOL=${CUASYNC_INFO:-./tools/cuasync-info}
NAME=cuasync-info
INFO=$TOOL
. "$(dirname "$0")/tool-checks.sh"
# The checks open a configuration of their own on the host backend, so
# that they behave the same with or without a GPU, and whatever this
# machine has installed as its cuasync.ini.
unset CUASYNC_CONFIG CUASYNC_POLICY CUASYNC_MODELS
HOST_CONFIG=$TMP/host.ini
printf '[runtime]\nbackend = host\n' >"$HOST_CONFIG"

# --help: usage on stdout, exit 0, every option named.
run 0 --help
for opt in --policies --models --format --config --version; do
  expect "$OUT" "$opt" "--help"
done
pass "--help exits 0 and lists the options"

# --version: the library's version.
run 0 --version
expect "$OUT" '^cuasync-info (cuasync) [0-9][0-9]*\.[0-9][0-9]*\.[0-9]' \
  "--version"
pass "--version prints the version"

# The default table: every section, the host backend opening, exit 0.
run 0 --config "$HOST_CONFIG"
expect "$OUT" '^Configuration: ' "table"
expect "$OUT" '^Runtime: backend host' "table"
expect "$OUT" '^Backends:' "table"
expect "$OUT" '^  host .* opens ' "table: the host backend opens"
expect "$OUT" '^  backend = auto tries: .*host (100).*; never: launchgraph (-1), launchtime (-1)' \
  "table: the order of backend = auto, by priority"
expect "$OUT" '^Policies:' "table"
expect "$OUT" '^Observers ' "table"
expect "$OUT" '^  perfetto  *[0-9]' "table: the perfetto observer"
expect "$OUT" 'observer ABI [0-9]' "table: the observer ABI"
pass "the table shows the configuration, runtime, backends, policies and observers"

# --policies: the four standard policies, with their parameters.
run 0 --config "$HOST_CONFIG" --policies
for p in single-stream round-robin least-loaded affinity; do
  expect "$OUT" "^  $p [0-9]" "--policies: policy $p"
done
expect "$OUT" '^    streams  *int  *4  *1\.\.1024' \
  "--policies: round-robin's streams parameter"
expect "$OUT" '^    within ' "--policies: affinity's within parameter"
expect "$OUT" '^    measure  *enum  *time  *ops|time' \
  "--policies: least-loaded's measure parameter"
pass "--policies lists the standard policies and their parameters"

# A value the configuration sets shows beside the default.
printf '[runtime]\nbackend = host\n[policy.round-robin]\nstreams = 7\n' \
  >"$TMP/rr7.ini"
run 0 --config "$TMP/rr7.ini" --policies
expect "$OUT" '^    streams  *int  *4  *1\.\.1024  *7 ' \
  "--policies: the configured value of streams"
pass "--policies shows the values the configuration sets"

# A backend's section too: its configured value in the JSON (it was null).
printf '[runtime]\nbackend = host\n[backend.host]\ndevices = 3\n' \
  >"$TMP/h3.ini"
run 0 --config "$TMP/h3.ini" --format json
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
d = json.load(sys.stdin)
p = [p for b in d["backends"] if b["name"] == "host"
     for p in b["params"] if p["name"] == "devices"]
assert p and p[0]["configured"] == "3", p
' <"$OUT" 2>"$ERR" || fail "--format json: host's devices not configured 3: $(cat "$ERR")"
fi
pass "--format json shows the values a backend section sets"

# --format json: one document that parses, with the sections expected.
run 0 --config "$HOST_CONFIG" --format json
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
d = json.load(sys.stdin)
for key in ("version", "config", "runtime", "backends", "policies",
            "observers", "failed"):
    assert key in d, "no " + key
assert "perfetto" in {o["name"] for o in d["observers"]}, d["observers"]
assert "observer_abi" in d["version"], d["version"]
assert d["runtime"]["opened"] is True, "runtime not opened"
assert d["runtime"]["backend"] == "host", d["runtime"]["backend"]
names = {p["name"] for p in d["policies"]}
for p in ("single-stream", "round-robin", "least-loaded", "affinity"):
    assert p in names, "no policy " + p
rr = [p for p in d["policies"] if p["name"] == "round-robin"][0]
streams = [q for q in rr["params"] if q["name"] == "streams"][0]
assert streams["default"] == "4" and streams["max"] == 1024, streams
prio = {b["name"]: b["priority"] for b in d["backends"]}
assert prio["host"] == 100 and prio["launchtime"] == -1 and prio["launchgraph"] == -1, prio
' <"$OUT" 2>"$ERR" || fail "--format json: the output does not parse or lacks a field"
else
  expect "$OUT" '^{' "--format json"
  expect "$OUT" '"policies": \[' "--format json"
  expect "$OUT" '"name": "round-robin"' "--format json"
  tail -n 1 "$OUT" | grep -q '^}$' || fail "--format json: no closing brace"
fi
pass "--format json parses"

# JSON also when the runtime does not open, and then exit 1.
run 1 --config "$TMP/missing.ini" --format json
expect "$OUT" '"opened": false' "--format json with a missing file"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json, sys; json.load(sys.stdin)' <"$OUT" ||
    fail "--format json with a missing file: the output does not parse"
fi
pass "--format json still prints a document when the runtime fails"

# --models: the runtime's performance models, from a file written here.
mkdir -p "$TMP/models"
printf '[runtime]\nbackend = host\nmodels = %s\n' "$TMP/models" >"$TMP/m.ini"
run 0 --config "$TMP/m.ini"
expect "$OUT" "^Performance models: $TMP/models/models-.*\\.txt, 0 entries" \
  "table: the performance models' file"
host=$(ls "$TMP/models" 2>/dev/null)
[ -z "$host" ] || fail "--models: a run that measured nothing wrote $host"
hn=$(uname -n)
printf 'cuasync-models 2 %s\nop host 0:host%%20device%%200 spin gemm - 20 0 3 0 0 3000000 3000000000000 0\n' \
  "$hn" >"$TMP/models/models-$hn.txt"
run 0 --config "$TMP/m.ini" --models
expect "$OUT" '^Performance models: .*, 1 entry' "--models: the summary"
expect "$OUT" '^  0  *spin  *gemm  *-  *20  *-  *3  *1000\.0 us  *0 ns' \
  "--models: the entry"
run 0 --config "$TMP/m.ini" --models --format json
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
m = json.load(sys.stdin)["runtime"]["models"]
assert m["state"] == "file" and m["entries"] == 1, m
e = m["list"][0]
assert e["kind"] == "spin" and e["name"] == "gemm" and e["mean_ns"] == 1000000, e
' <"$OUT" 2>"$ERR" || fail "--models --format json: $(cat "$ERR")"
fi
printf '[runtime]\nbackend = host\nmodels = off\n' >"$TMP/off.ini"
run 0 --config "$TMP/off.ini"
expect "$OUT" '^Performance models: off' "table: models off"
pass "--models lists the performance models; the table says where they are"

# JSON is UTF-8 whatever the bytes of a model's name or a configured value:
# ill-formed sequences become U+FFFD, valid ones stay whole.
utf8_json() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read())' \
      <"$OUT" 2>"$ERR" || fail "$1: not UTF-8 JSON: $(cat "$ERR")"
  fi
}
printf 'cuasync-models 2 %s\nop host 0:host%%20device%%200 spin g%%FF%%C3%%A9m - 20 0 3 0 0 3000000 3000000000000 0\n' \
  "$hn" >"$TMP/models/models-$hn.txt"
run 0 --config "$TMP/m.ini" --models --format json
expect "$OUT" '"name": "g\\ufffdém"' "--models --format json: a name not UTF-8"
utf8_json "--models --format json"
printf '[runtime]\nbackend = host\nmodels = off\n[policy.round-robin]\nstreams = \377\376 \342\202\254 \342\202\n' \
  >"$TMP/utf.ini"
run 1 --config "$TMP/utf.ini" --format json
expect "$OUT" '"value": "\\ufffd\\ufffd € \\ufffd"' \
  "--format json: a configured value not UTF-8"
utf8_json "--format json"
pass "--format json is valid UTF-8 whatever the bytes of names and values"

# Graphs: how the backend runs them, and the cache's settings.
printf '[runtime]\nbackend = host\ngraphs = auto\ngraph_cache = 7\nmodels = off\n' >"$TMP/g.ini"
run 0 --config "$TMP/g.ini"
expect "$OUT" '^Graphs: replayed by the core (the backend has no graphs); \[runtime\] graphs = auto, graph_cache = 7$' \
  "table: graphs"
CUASYNC_GRAPHS=always run 0 --config "$TMP/g.ini" --format json
unset CUASYNC_GRAPHS # a function's prefix assignment may stay in sh
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import json, sys
d = json.load(sys.stdin)
g = d["runtime"]["graphs"]
assert g["native"] is False and g["mode"] == "always" and g["cache"] == 7, g
assert d["config"]["graphs"] == "always", d["config"]
' <"$OUT" 2>"$ERR" || fail "graphs --format json: $(cat "$ERR")"
fi
pass "the runtime's graphs: backend graphs or not, mode and cache"

# Bad usage: exit 2, with a message.
for args in "--no-such-option" "--format xml" "--config" "stray"; do
  # shellcheck disable=SC2086 # the words are meant to split
  run 2 $args
  [ -s "$ERR" ] || fail "cuasync-info $args: no message on stderr"
done
pass "bad usage exits 2 with a message"

# An argument to an option that takes none is named as given (it read
# "unknown option '-h'").
run 2 --help=x
expect "$ERR" "^cuasync-info: option '--help' takes no argument$" "--help=x"
run 2 --policies=1
expect "$ERR" "^cuasync-info: option '--policies' takes no argument$" \
  "--policies=1"
run 2 --format=json -xp
expect "$ERR" "^cuasync-info: unknown option '-x'$" "--format=json -xp"
pass "an argument to an option that takes none is named as given"

# Output that cannot be written (a full disk) exits 1 with the reason,
# --help and --version too (they exited 0).
if [ -w /dev/full ]; then
  for args in "--help" "--version" "--config $HOST_CONFIG"; do
    status=0
    # shellcheck disable=SC2086 # the words are meant to split
    "$TOOL" $args >/dev/full 2>"$ERR" || status=$?
    [ "$status" -eq 1 ] ||
      fail "cuasync-info $args >/dev/full exited with $status, expected 1"
    expect "$ERR" '^cuasync-info: cannot write the output: No space left on device$' \
      "cuasync-info $args >/dev/full"
  done
  pass "output that cannot be written exits 1 with the reason"
fi

# A configuration file that does not exist: exit 1, the file named on
# stderr, and the rest of the report still printed.
missing=$TMP/no-such-dir/cuasync.ini
run 1 --config "$missing"
expect "$ERR" "$missing" "--config with a missing file: stderr"
expect "$OUT" '^Backends:' "--config with a missing file: stdout"
pass "a missing configuration file exits 1 and names the file"

# A configuration error: exit 1, file and line on stderr.
printf '[runtime]\nbackend = host\nno_such_key = 1\n' >"$TMP/bad.ini"
run 1 --config "$TMP/bad.ini"
expect "$ERR" "$TMP/bad.ini:3:" "--config with an unknown key: stderr"
pass "a configuration error exits 1 with file and line"

echo "all $checks checks passed"
exit 0
