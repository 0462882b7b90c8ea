#!/usr/bin/env bash
# Print what one interval's resctrl read costs for 16 L3 domains and 64 groups, beside
# the floor of one pread per counter file measured in the same run
# (examples/resctrl_bench.rs; target: at most 2 ms per interval).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --example resctrl_bench
