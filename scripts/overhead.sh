#!/usr/bin/env bash
# Overhead of llctop's BPF source (figures for docs/performance.md). Needs root.
#  (a) ns per event of each BPF program of this llctop (only the programs its process
#      holds), from the kernel's BPF statistics, beside empty programs on the same
#      tracepoints loaded in the same window (bpf/floor.bpf.c), with the ratios of issue
#      "Overhead": sched_switch / empty and the whole per-switch cost / empty
#      (kernel.bpf_stats_enabled is switched on for the run and restored on exit);
#      then WINDOWS-1 more windows (a fresh llctop each) and the median of each ratio,
#      since this VM's state moves one window's ratio by ±10%; then, in a window of its
#      own, a copy with per-process counter attribution on (software events standing in
#      for hardware ones: its cost is known before it runs on a PMU);
#  (b) llctop's own CPU time (utime+stime) and peak RSS at a 1 s interval while
#      `perf bench sched messaging` runs;
#  (c) that benchmark's run time with llctop live vs without, alternating (ABAB),
#      as the median of the paired ratios with min/max;
#  (t) llctop trace's hooks against llctop record's: record, trace and trace --no-wakings
#      running in one window beside the empty programs, WINDOWS windows: the capture
#      cost per context switch as a ratio (target <= 2x), the trace's bytes per switch
#      and lost records;
#  (k) the old kernels' paths forced on this kernel (5.10-like, 5.15-like) beside the
#      normal one in one window: each one's switch hook and per-switch cost against the
#      empty program (target for the 5.10 path's switch hook: <= 3x).
# usage: scripts/overhead.sh [PAIRS] [WINDOWS]   (defaults 10 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10}
windows=${2:-3}
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
# A window: llctop recording (pid in $pid) and, 2 s later, the empty programs attached
# for SECS seconds beside it (pid in $fpid), their report in FILE.
window() {
  "$L" record --source bpf -o "$out/rec.jsonl" --interval 1s 2>/dev/null &
  pid=$!
  sleep 2
  "$W" bpf-floor "$1" "$pid" > "$2" 2>&1 &
  fpid=$!
  sleep 1
}
window 22 "$out/floor.txt"
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
# The two ratios of a window's bpf-floor output: "sched_switch: 4.12x ..." and
# "per context switch ...: 262.1 ns, 4.55x ...".
ratios_of() {
  awk '/^sched_switch:/ && !s {s = $2} /^per context switch/ && !p {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+x$/) {p = $i; break}}
       END {gsub("x", "", s); gsub("x", "", p); print s, p}' "$1"
}
ratios_of "$out/floor.txt" > "$out/ratios.txt"
for w in $(seq 2 "$windows"); do
  window 12 "$out/wfloor.txt"
  wend=$(( $(date +%s) + 11 ))
  while [ "$(date +%s)" -lt "$wend" ]; do bench >/dev/null; done
  wait "$fpid" || true
  kill -INT "$pid"; wait "$pid" || true
  ratios_of "$out/wfloor.txt" >> "$out/ratios.txt"
done
echo
echo "(a) over $windows windows (a fresh llctop each), llctop's programs / the empty ones:"
median() { sort -n | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m}'; }
sw=$(awk '{printf "%s ", $1}' "$out/ratios.txt")
ps=$(awk '{printf "%s ", $2}' "$out/ratios.txt")
echo "  sched_switch: ${sw}-> median $(awk '{print $1}' "$out/ratios.txt" | median)x (target <= 2.5x)"
echo "  per context switch, every hook: ${ps}-> median $(awk '{print $2}' "$out/ratios.txt" | median)x (target <= 3.5x)"
echo
echo "(a) with per-process counter attribution on: a copy of llctop's programs beside the empty ones, in a window of its own"
"$W" bpf-floor-counters 12 > "$out/cfloor.txt" 2>&1 &
cf=$!
sleep 2
cend=$(( $(date +%s) + 11 ))
while [ "$(date +%s)" -lt "$cend" ]; do bench >/dev/null; done
wait "$cf" || true
grep -v '^floor attached' "$out/cfloor.txt"
echo
echo "(t) llctop trace's hooks against llctop record's: record, trace and trace --no-wakings running in one"
echo "    window, each beside the empty programs; $windows windows, the median of each ratio"
per_switch_ns() { awk '/^per context switch/ {for (i = 1; i <= NF; i++) if ($i == "ns,") {print $(i - 1); exit}}' "$1"; }
: > "$out/tr.txt"
for w in $(seq "$windows"); do
  "$L" record --source bpf -o "$out/r2.jsonl" --interval 1s 2>/dev/null &
  rp=$!
  "$L" trace -o "$out/t.pftrace" --interval 1s 2>"$out/t.err" &
  tp=$!
  "$L" trace --no-wakings -o "$out/tn.pftrace" --interval 1s 2>"$out/tn.err" &
  np=$!
  sleep 2
  "$W" bpf-floor 12 "$rp" > "$out/fr.txt" 2>&1 &
  f1=$!
  "$W" bpf-floor 12 "$tp" > "$out/ft.txt" 2>&1 &
  f2=$!
  "$W" bpf-floor 12 "$np" > "$out/fn.txt" 2>&1 &
  f3=$!
  sleep 1
  tend=$(( $(date +%s) + 11 ))
  while [ "$(date +%s)" -lt "$tend" ]; do bench >/dev/null; done
  wait "$f1" "$f2" "$f3" || true
  kill -INT "$rp" "$tp" "$np"; wait "$rp" "$tp" "$np" || true
  r=$(per_switch_ns "$out/fr.txt"); t=$(per_switch_ns "$out/ft.txt"); n=$(per_switch_ns "$out/fn.txt")
  echo "$r $t $n" >> "$out/tr.txt"
  echo "  window $w: per context switch: record $r ns, trace $t ns, trace --no-wakings $n ns"
  if [ "$w" -eq 1 ]; then
    sed -n '/^program/,/^sched_switch/p' "$out/ft.txt" | sed 's/^/    trace: /'
    echo "    $(tail -1 "$out/t.err")"
  fi
done
echo "  trace / record: $(awk '{printf "%.2f ", $2 / $1}' "$out/tr.txt")-> median $(awk '{print $2 / $1}' "$out/tr.txt" | median)x (target <= 2x)"
echo "  trace --no-wakings / record: $(awk '{printf "%.2f ", $3 / $1}' "$out/tr.txt")-> median $(awk '{print $3 / $1}' "$out/tr.txt" | median)x"
echo
echo "(k) the old kernels' paths, forced on this one (LLCTOP_BPF_WITHOUT), beside the normal path in one window"
"$L" record --source bpf -o "$out/k0.jsonl" --interval 1s 2>/dev/null &
k0=$!
LLCTOP_BPF_WITHOUT=task_storage,bpf_loop,fetch_atomics "$L" record --source bpf -o "$out/k1.jsonl" --interval 1s 2>/dev/null &
k1=$!
LLCTOP_BPF_WITHOUT=bpf_loop "$L" record --source bpf -o "$out/k2.jsonl" --interval 1s 2>/dev/null &
k2=$!
sleep 2
"$W" bpf-floor 12 "$k0" > "$out/fk0.txt" 2>&1 &
g0=$!
"$W" bpf-floor 12 "$k1" > "$out/fk1.txt" 2>&1 &
g1=$!
"$W" bpf-floor 12 "$k2" > "$out/fk2.txt" 2>&1 &
g2=$!
sleep 1
kend=$(( $(date +%s) + 11 ))
while [ "$(date +%s)" -lt "$kend" ]; do bench >/dev/null; done
wait "$g0" "$g1" "$g2" || true
kill -INT "$k0" "$k1" "$k2"; wait "$k0" "$k1" "$k2" || true
for f in "normal (this kernel):fk0" "5.10-like (no task storage, atomic exchange, bpf_loop):fk1" "5.15-like (no bpf_loop):fk2"; do
  echo "  ${f%%:*}"
  grep -E '^sched_switch|^per context switch' "$out/${f##*:}.txt" | sed 's/^/    /'
done
echo "  (target: the 5.10 path's switch hook <= 3x the empty program)"
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
