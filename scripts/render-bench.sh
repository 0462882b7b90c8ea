#!/usr/bin/env bash
# Print the TUI's draw time per frame for each view on 2, 16, 256 and 512 CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --example render_bench
