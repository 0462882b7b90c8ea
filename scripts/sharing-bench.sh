#!/usr/bin/env bash
# Print what the shared-memory stage costs at its limits (64 processes' /proc/PID/maps,
# each with 200 shared memfd mappings, read every 5th snapshot) beside the floor of
# reading the same files, measured in the same run (examples/sharing_bench.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --example sharing_bench
