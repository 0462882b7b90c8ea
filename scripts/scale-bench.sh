#!/usr/bin/env bash
# Scale benchmark of the BPF source's userspace side (issue "Scale"; not a timed test):
# examples/scale_bench.rs loads the real BPF program for a 256-CPU / 64-LLC topology,
# fills its per-process maps with 1,000 to 10,000 processes (each on 4 LLCs) and times
# one interval's read + snapshot; then the same run under strace counts the bpf() calls
# each of those intervals made. Run as root. Figures go to docs/performance.md (h).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "scale-bench: needs strace (apt-get install strace)"; exit 1; }
cargo build --quiet --release --example scale_bench
target/release/examples/scale_bench 2>/dev/null
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
# The main thread makes every read (no -f: the benchmark's thousands of idle threads
# would make strace crawl).
strace -e trace=bpf,write -o "$trace" target/release/examples/scale_bench >/dev/null 2>&1
echo "bpf() calls in each of the 7 timed intervals:"
awk '/write\(2, "BEGIN/ {n = $0; sub(/.*BEGIN /, "", n); sub(/[^0-9].*/, "", n); on = 1; c = 0; next}
     /write\(2, "END/ {on = 0; calls[n] = calls[n] " " c; next}
     on && /bpf\(/ {c++}
     END {for (n in calls) printf "  %6d processes:%s\n", n, calls[n]}' "$trace" | sort -n -k1
