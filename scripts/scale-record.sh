#!/usr/bin/env bash
# Scale benchmark for `llctop record` (issue "Scale"; not a timed test): record at a 1 s
# interval under `perf bench sched messaging` and measure, in one run,
#   1. before any churn: CPU (utime+stime over the wall time, /proc/PID/stat) and RSS over
#      WINDOW seconds, then syscalls per interval (strace -c over STRACE seconds);
#   2. CHURN short-lived /bin/true processes (default 10,000);
#   3. the same figures again.
# The two strace windows are separate from the CPU windows: strace slows what it traces.
# Run as root for the BPF source. Figures go to docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
WINDOW=${WINDOW:-30}
STRACE=${STRACE:-10}
CHURN=${CHURN:-10000}
command -v strace >/dev/null || { echo "scale-record: needs strace (apt-get install strace)"; exit 1; }
command -v perf >/dev/null || { echo "scale-record: needs perf bench (apt-get install linux-perf)"; exit 1; }
cargo build --quiet --release --bin llctop
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
load() {
  while :; do perf bench sched messaging -g 4 -l 2000 >/dev/null 2>&1 || sleep 1; done
}
load &
target/release/llctop --interval 1s record --output "$out/r.jsonl.gz" 2>"$out/err" &
rec=$!
# Past the start: loading the BPF program (the verifier) takes 0.3-0.4 s of CPU here,
# and seconds of wall time under the load; the windows measure the steady state.
sleep 15
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tick" '{sub(/.*\) /, ""); print ($12 + $13) / t}' "/proc/$rec/stat"; }
rss_mib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$rec/status"; }
measure() {
  local label=$1 c0 c1
  c0=$(cpu_s)
  sleep "$WINDOW"
  c1=$(cpu_s)
  local cpu rss
  cpu=$(awk -v a="$c0" -v b="$c1" -v w="$WINDOW" 'BEGIN {printf "%.2f", 100 * (b - a) / w}')
  rss=$(rss_mib)
  timeout -s INT "$STRACE" strace -c -f -p "$rec" -o "$out/strace" >/dev/null 2>&1 || true
  per() { awk -v s="$1" -v w="$STRACE" '$NF == s {printf "%.0f", $4 / w; f = 1} END {if (!f) printf "0"}' "$out/strace"; }
  echo "$label: CPU $cpu% of one CPU, RSS $rss MiB; per interval: bpf() $(per bpf), openat $(per openat), read $(per read), kill $(per kill)"
}
measure "before churn"
echo "spawning $CHURN short-lived processes…"
for _ in $(seq "$CHURN"); do /bin/true; done
sleep 3
measure "after $CHURN processes"
kill "$rec"
wait "$rec" 2>/dev/null || true
