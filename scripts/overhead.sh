#!/usr/bin/env bash
# Overhead of llctop's BPF source (figures for docs/performance.md). Needs root.
#  (a) ns per event of each BPF program of this llctop (only the programs its process
#      holds), from the kernel's BPF statistics, beside empty programs on the same
#      tracepoints loaded in the same window (bpf/floor.bpf.c), with the ratios of issue
#      "Overhead": sched_switch / empty and the whole per-switch cost / empty
#      (kernel.bpf_stats_enabled is switched on for the run and restored on exit);
#  (b) llctop's own CPU time (utime+stime) and peak RSS at a 1 s interval while
#      `perf bench sched messaging` runs;
#  (c) that benchmark's run time with llctop live vs without, alternating (ABAB),
#      as the median of the paired ratios with min/max.
# usage: scripts/overhead.sh [PAIRS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10}
cargo build --release --locked -q --bins
L=target/release/llctop
W=target/release/llctop-workload
command -v perf >/dev/null || { echo "needs perf (Debian: linux-perf)"; exit 1; }
bench() { perf bench sched messaging -g 4 -l 1500 2>/dev/null | awk '/Total time/ {print $3}'; }
tck=$(getconf CLK_TCK)
out=$(mktemp -d)
old=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() { echo "$old" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$out"; }
trap cleanup EXIT

echo "kernel $(uname -r), $(nproc) CPUs; benchmark: perf bench sched messaging -g 4 -l 1500"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
"$L" record --source bpf -o "$out/rec.jsonl" --interval 1s 2>/dev/null &
pid=$!
sleep 2
"$W" bpf-floor 22 "$pid" > "$out/floor.txt" 2>&1 &
fpid=$!
sleep 1
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
t0=$(date +%s.%N)
end=$(( $(date +%s) + 20 ))
runs=0
while [ "$(date +%s)" -lt "$end" ]; do bench >/dev/null; runs=$((runs + 1)); done
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
t1=$(date +%s.%N)
wait "$fpid" || true
echo
echo "(a) BPF run time per event, llctop (pid $pid) beside empty programs, one window ($runs benchmark runs)"
sed 1d "$out/floor.txt"
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
kill -INT "$pid"; wait "$pid" || true
echo 0 > /proc/sys/kernel/bpf_stats_enabled
echo
awk -v c0="$cpu0" -v c1="$cpu1" -v t0="$t0" -v t1="$t1" -v tck="$tck" -v hwm="$hwm" 'BEGIN {
  cpu = (c1 - c0) / tck; wall = t1 - t0;
  printf "(b) llctop userspace: %.2f s CPU over %.1f s = %.2f%% of one CPU; peak RSS %.1f MB\n", cpu, wall, 100 * cpu / wall, hwm / 1024 }'

echo
echo "(c) benchmark time, without (A) and with (B) llctop live, $pairs pairs"
ratios=()
for i in $(seq "$pairs"); do
  a=$(bench)
  "$L" record --source bpf -o "$out/b.jsonl" --interval 1s 2>/dev/null &
  lp=$!
  sleep 1.5
  b=$(bench)
  kill -INT "$lp"; wait "$lp" || true
  r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", b / a}')
  ratios+=("$r")
  echo "  pair $i: A ${a}s  B ${b}s  B/A $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR] = $1} END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
  printf "  median B/A %.3f (min %.3f, max %.3f; >1 means slower with llctop)\n", m, v[1], v[NR] }'
