#!/usr/bin/env bash
# The Parquet export at users' scale (issue "Fleet data"; a benchmark, not a timed test):
# a generated recording of SNAPSHOTS (default 1000) on 2 nodes × 16 LLCs × 8 CPUs (256),
# then side by side in one run: `llctop report` reading it (the reference) and `llctop
# export --parquet` writing its tables — wall time and peak resident memory (GNU time)
# each, their ratio, and the Parquet files' total size against the gzipped JSON's.
# Figures: docs/performance.md (p).
set -euo pipefail
cd "$(dirname "$0")/.."
SNAPSHOTS=${SNAPSHOTS:-1000}
[ -x /usr/bin/time ] || { echo "parquet-bench: needs GNU time (apt-get install time)"; exit 1; }
cargo build --quiet --release --bin llctop --example gen_recording
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/examples/gen_recording "$out/r.jsonl.gz" "$SNAPSHOTS" 2 16 8 >/dev/null
gz=$(stat -c %s "$out/r.jsonl.gz")
echo "recording: $SNAPSHOTS snapshots × 256 CPUs, $((gz / 1024)) KiB gzipped"
run() {
  /usr/bin/time -f '%e %M' -o "$out/time" "$@" >/dev/null 2>&1
  cat "$out/time"
}
read -r rw rr < <(run target/release/llctop report "$out/r.jsonl.gz")
read -r ew er < <(run target/release/llctop export --parquet "$out/r.jsonl.gz" -o "$out/pq")
pq=$(find "$out/pq" -name '*.parquet' -printf '%s\n' | awk '{s += $1} END {print s}')
echo "report:            ${rw} s wall, $((rr / 1024)) MiB peak resident"
echo "export --parquet:  ${ew} s wall, $((er / 1024)) MiB peak resident ($(echo "$ew / $SNAPSHOTS * 1000" | bc -l | xargs printf '%.2f') s per 1,000 snapshots)"
printf 'export / report:   %.2f× the time\n' "$(echo "$ew / $rw" | bc -l)"
printf 'parquet / gzip:    %.2f× the size (%d KiB in %d files)\n' "$(echo "$pq / $gz" | bc -l)" $((pq / 1024)) \
  "$(find "$out/pq" -name '*.parquet' | wc -l)"
