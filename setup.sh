#!/usr/bin/env bash
# Set up and run llctop: install build packages, build in release mode, start it.
# Arguments are passed to llctop, e.g. `./setup.sh topology` or `./setup.sh record -o r.jsonl`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
cargo build --release --locked
exec ./target/release/llctop "$@"
