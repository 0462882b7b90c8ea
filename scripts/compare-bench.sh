#!/usr/bin/env bash
# Print the time the verdict of `llctop report --compare` takes per window, for 100 to
# 100,000 windows (examples/compare_bench.rs): it must stay linear (≤ 10 µs per window).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --example compare_bench
