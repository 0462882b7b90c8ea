#!/usr/bin/env bash
# Set up and run llctop: install what building it needs (a few Debian packages; the test
# toolchain is scripts/test's), check Rust, build in release mode (about 3 minutes on
# 2 cores the first time, seconds after), start it.
# Arguments are passed to llctop, e.g. `./setup.sh topology` or `./setup.sh record -o r.jsonl`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
echo "setup: building llctop (release; about 3 minutes on 2 cores the first time)" >&2
cargo build --release --locked
exec "${CARGO_TARGET_DIR:-target}/release/llctop" "$@"
