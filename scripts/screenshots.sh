#!/usr/bin/env bash
# Redraw the README's pictures (docs/screenshots/*.svg) from the TUI's own draw of the
# lab's recording; rerun when a view changes (tests/host/screenshots.rs says when).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --example screenshots
