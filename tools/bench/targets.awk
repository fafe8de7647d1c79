# tools/bench/targets.awk: the ratios of the "decide under the lock" issue's
# targets, from one cuasync-bench CSV of
#
#   cuasync-bench -b cuda -w micro-chain,latency,submit,submit-mt,micro-random \
#     -p single-stream -p round-robin -p affinity -p least-loaded -f csv -o F
#
#   awk -F, -f tools/bench/targets.awk F
#
# Every ratio is within that one run (makespans, or p50 latencies, of two
# rows); submit-mt's is the bench's thread_scaling (four threads' aggregate
# rate over one thread's). Columns are found by their names in the header
# row. A missing row prints -1.
!/^#/ && $1 == "workload" { for (i = 1; i <= NF; i++) col[$i] = i; next }
!/^#/ {
  k = $1 "/" $2
  ms[k] = $col["makespan_ns"]
  p50[k] = $col["lat_p50_ns"]
  ts[k] = $col["thread_scaling"]
}
function r(a, b) { return (b > 0) ? a / b : -1 }
function line(what, v) { printf "%-42s %.3f\n", what, v }
END {
  line("micro-chain ss/raw-serial (<=1.10)", r(ms["micro-chain/single-stream"], ms["micro-chain/raw-serial"]))
  line("micro-chain ll/rr (<=1.15)", r(ms["micro-chain/least-loaded"], ms["micro-chain/round-robin"]))
  line("latency p50 ss/raw-sync (<=1.2)", r(p50["latency/single-stream"], p50["latency/raw-sync"]))
  line("latency p50 rr/raw-sync", r(p50["latency/round-robin"], p50["latency/raw-sync"]))
  line("submit raw/rr (>=0.9)", r(ms["submit/raw-launch"], ms["submit/round-robin"]))
  line("submit raw/ss", r(ms["submit/raw-launch"], ms["submit/single-stream"]))
  line("submit-mt 4t/1t rr (>=2)", ("submit-mt/round-robin" in ts) ? ts["submit-mt/round-robin"] : -1)
  line("submit-mt 4t/1t raw", ("submit-mt/raw-launch-mt" in ts) ? ts["submit-mt/raw-launch-mt"] : -1)
  line("micro-random rr/raw-streams (<=1.2)", r(ms["micro-random/round-robin"], ms["micro-random/raw-streams"]))
  line("micro-random aff/raw-streams (<=1.2)", r(ms["micro-random/affinity"], ms["micro-random/raw-streams"]))
  line("micro-random ll/rr (<=1.15)", r(ms["micro-random/least-loaded"], ms["micro-random/round-robin"]))
}
