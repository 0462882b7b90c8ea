#!/usr/bin/env bash
# The size and losses of a trace of a busy machine (figures for docs/performance.md (j)).
# Needs root. `llctop trace` for 10 s while `perf bench sched messaging` runs in a loop:
# switches, wakings, bytes per switch, records lost, llctop's peak RSS — with the default
# trace buffer, then with smaller ones, to show where losses begin.
# usage: scripts/trace-bench.sh [SECS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release --locked -q --bins
L=target/release/llctop
command -v perf >/dev/null || { echo "needs perf (Debian: linux-perf)"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "kernel $(uname -r), $(nproc) CPUs; load: perf bench sched messaging -g 4 -l 1500 in a loop"
run() {
  local buffer=$1 opt=()
  [ "$buffer" = default ] || opt=(--buffer "$buffer")
  ( end=$(( $(date +%s) + secs + 2 )); while [ "$(date +%s)" -lt "$end" ]; do perf bench sched messaging -g 4 -l 1500 >/dev/null 2>&1; done ) &
  local load=$!
  sleep 1
  "$L" trace "${opt[@]}" --duration "${secs}s" -o "$out/t.pftrace" 2>"$out/t.err" &
  local tp=$!
  local hwm=0
  while kill -0 "$tp" 2>/dev/null; do
    h=$(awk '/VmHWM/ {print $2}' "/proc/$tp/status" 2>/dev/null || echo 0)
    [ "${h:-0}" -gt "$hwm" ] && hwm=$h
    sleep 0.5
  done
  wait "$tp" || true
  wait "$load" || true
  echo "  --buffer $buffer: $(tail -1 "$out/t.err" | sed 's/^llctop: //')"
  echo "    peak RSS $((hwm / 1024)) MB (target <= 64 MB)"
}
run default
run 256KiB
run 64KiB
