#!/usr/bin/env bash
# Install the Debian packages llctop needs (idempotent: only what is missing).
#   scripts/deps.sh          what building and running llctop needs (./setup.sh)
#   scripts/deps.sh --test   that and the test toolchain (scripts/test, .ci/run)
# Each list lives here once.
set -euo pipefail
test_too=0
[ "${1:-}" = "--test" ] && test_too=1
# Building and running llctop.
PKGS=(
  gcc libc6-dev pkg-config make   # linking, libc bindings, libbpf-sys build
  clang libelf-dev zlib1g-dev     # BPF program (bpf/*.bpf.c) and libbpf
)
# The tests: each tool with the test that needs it.
TEST_PKGS=(
  python3                    # tests/gen_fixtures.py (fixture check in CI)
  qemu-system-x86 busybox-static cpio   # the kernel lab (tests/lab/)
  tmux                       # the TUI in a real terminal (tests/tui_tmux.rs)
  libcap2-bin                # setcap: the non-root install test (tests/unprivileged.rs)
  zsh fish man-db            # completions and man page checked by their own parsers (tests/host/habits.rs)
  prometheus                 # llctop serve scraped by a real Prometheus, linted by promtool (tests/serve.rs)
  linux-perf                 # perf record: the trace's migrations against sched_migrate_task (tests/trace.rs)
  strace                     # bpf() calls counted in the big lab guest (tests/lab/big.rs) and by scripts/scale-bench.sh
  stress-ng                  # ordinary work for the advisor's false-alarm benchmark (tests/lab/advisor.rs, scripts/advisor-bench.sh)
  chromium                   # the HTML pages opened in a real browser, headless (tests/html.rs, scripts/html-bench.sh)
  lintian dpkg-dev systemd   # the Debian package: checked, its Depends (dpkg-shlibdeps), its unit verified (scripts/package --check, tests/setup.rs)
  python3-pip                # pip, for the Python packages below
)
[ "$test_too" -eq 1 ] && PKGS+=("${TEST_PKGS[@]}")
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if [ "$test_too" -eq 1 ]; then
  # The official MCP Python SDK is llctop mcp's client in the tests (tests/mcp_client.py).
  if ! python3 -c 'import mcp.client.stdio' >/dev/null 2>&1; then
    echo "deps: installing the Python package mcp"
    python3 -m pip install --quiet --disable-pip-version-check mcp \
      || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages mcp
  fi
  # Perfetto's own generated classes decode every trace in the tests (tests/perfetto_decode.py).
  if ! python3 -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1; then
    echo "deps: installing the Python packages perfetto and protobuf"
    python3 -m pip install --quiet --disable-pip-version-check perfetto protobuf \
      || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages perfetto protobuf
  fi
  # DuckDB and pyarrow read the Parquet export in the tests (tests/parquet_check.py).
  if ! python3 -c 'import duckdb, pyarrow.parquet' >/dev/null 2>&1; then
    echo "deps: installing the Python packages duckdb and pyarrow"
    python3 -m pip install --quiet --disable-pip-version-check duckdb pyarrow \
      || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages duckdb pyarrow
  fi
fi
# Rust: the version Cargo.toml's rust-version names, or newer.
need=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml")
if ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo not found: install Rust $need or newer (https://rustup.rs: curl --proto '=https' -sSf https://sh.rustup.rs | sh)" >&2
  exit 1
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "deps: Rust $have is older than the $need llctop needs: rustup update stable" >&2
  exit 1
fi
