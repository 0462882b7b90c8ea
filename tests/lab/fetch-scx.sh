#!/usr/bin/env bash
# Real sched_ext schedulers for the kernel lab: scx_bpfland and scx_lavd built from the
# Rust package registry into the lab's cache (never the repository), plus the 7.2 kernel's
# config, which libbpf reads in the guest for Kconfig externs. Prints the directory:
#   DIR/bin/scx_bpfland  DIR/bin/scx_lavd  DIR/config-7.2
# The schedulers need clang >= 18 (bookworm's clang-19, installed here when missing).
set -euo pipefail
cache=${LLCTOP_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llctop-lab}
dir="$cache/scx"
mkdir -p "$dir/bin"
log() { echo "fetch-scx: $*" >&2; }
# Versions verified on the lab's 7.2 kernel.
declare -A VERSION=([scx_bpfland]=1.1.4 [scx_lavd]=1.1.4)

need=()
for s in "${!VERSION[@]}"; do [ -x "$dir/bin/$s" ] || need+=("$s"); done
if [ ${#need[@]} -gt 0 ]; then
  missing=()
  for p in clang-19 libclang-19-dev llvm-19 libelf-dev zlib1g-dev pkg-config; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "installing ${missing[*]}"
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
  fi
  for s in "${need[@]}"; do
    log "building $s ${VERSION[$s]} (a few minutes)"
    BPF_CLANG=clang-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib \
      CARGO_TARGET_DIR="$cache/scx-target" \
      cargo install --quiet --locked --root "$dir/build" --version "${VERSION[$s]}" "$s" >&2 \
      || BPF_CLANG=clang-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib \
         CARGO_TARGET_DIR="$cache/scx-target" \
         cargo install --quiet --root "$dir/build" --version "${VERSION[$s]}" "$s" >&2
    cp "$dir/build/bin/$s" "$dir/bin/$s.partial" && mv "$dir/bin/$s.partial" "$dir/bin/$s"
  done
fi

# The 7.2 kernel's config (package linux-config-7.2 from sid), under lab.sh's lock on
# the cache's downloads (boots run side by side; the sid package list is lab.sh's too).
exec 8>"$cache/.fetch.lock"
flock 8
if [ ! -s "$dir/config-7.2" ]; then
  d="$cache/apt-sid"
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb http://deb.debian.org/debian sid main" > "$d/sources.list"
  opts=(-o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache")
  pkg=$(apt-cache "${opts[@]}" search --names-only '^linux-config-7\.2$' 2>/dev/null | awk '{print $1}' | head -n 1)
  if [ -z "$pkg" ]; then
    apt-get "${opts[@]}" update -qq >&2
    pkg=linux-config-7.2
  fi
  tmp=$(mktemp -d "$cache/dl.XXXXXX")
  (cd "$tmp" && apt-get "${opts[@]}" download "$pkg" >&2)
  dpkg -x "$tmp"/*.deb "$tmp/x"
  xz -dc "$(find "$tmp/x" -name 'config.amd64_none_amd64.xz' | head -n 1)" > "$dir/config-7.2.partial"
  mv "$dir/config-7.2.partial" "$dir/config-7.2"
  rm -rf "$tmp"
fi
flock -u 8
echo "$dir"
