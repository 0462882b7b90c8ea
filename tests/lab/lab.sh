#!/usr/bin/env bash
# Kernel lab: boot a stock Debian kernel in QEMU (TCG) as a 2-socket / 2-LLC / 2-node
# machine (cpus 0-1: package 0, L3 #0, node 0; cpus 2-3: package 1, L3 #1, node 1), run a
# scenario script inside with llctop, and print the guest's serial console on stdout.
#
# usage: tests/lab/lab.sh KERNEL SCENARIO LLCTOP_BIN [EXTRA_BIN...]
#   KERNEL    6.1 | 6.12 | 6.18   (Debian 12 generic 6.1, Debian 12 cloud 6.12,
#                                  trixie-backports cloud 6.18)
#   SCENARIO  a shell script run by the guest's /init (see scenarios/)
#   LLCTOP_BIN  the llctop binary to put in the guest (its shared libraries are copied)
#   EXTRA_BIN   more programs for the guest's /bin (e.g. llctop-workload), with their libraries
#
# Kernels are downloaded as .deb (no install) and unpacked into the cache
# ($LLCTOP_LAB_CACHE, default ~/.cache/llctop-lab) and reused. Exit status: QEMU's
# (124 when the time limit hit). The guest prints result lines; tests/lab.rs checks them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kernel=${1:?kernel}
scenario=${2:?scenario}
bin=${3:?llctop binary}
shift 3
extra=("$@")
cache=${LLCTOP_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llctop-lab}
mkdir -p "$cache"

log() { echo "lab: $*" >&2; }

apt_private() {
  # apt options for a private package list (trixie-backports) without touching /etc/apt.
  local d="$cache/apt-$1"
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb http://deb.debian.org/debian $1 main" > "$d/sources.list"
  echo -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
       -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache"
}

resolve_package() {
  case "$kernel" in
    6.1)  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1/ {print $2; exit}' ;;
    6.12) apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    6.18) # shellcheck disable=SC2046
          apt-cache $(apt_private trixie-backports) search --names-only '^linux-image-6\.18\.[0-9]+\+deb13-cloud-amd64$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    *) log "unknown kernel $kernel"; exit 2 ;;
  esac
}

refresh_lists() {
  log "refreshing package lists"
  if [ "$kernel" = 6.18 ]; then
    # shellcheck disable=SC2046
    apt-get $(apt_private trixie-backports) update -qq >&2
  else
    apt-get update -qq >&2
  fi
}

download() {
  if [ "$kernel" = 6.18 ]; then
    # shellcheck disable=SC2046
    apt-get $(apt_private trixie-backports) download "$1" >&2
  else
    apt-get download "$1" >&2
  fi
}

fetch_kernel() {
  local pkg dir
  pkg=$(resolve_package || true)
  if [ -z "$pkg" ]; then
    refresh_lists
    pkg=$(resolve_package)
  fi
  [ -n "$pkg" ] || { log "no package found for kernel $kernel"; exit 3; }
  dir="$cache/$pkg"
  if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
    log "downloading $pkg"
    local tmp; tmp=$(mktemp -d "$cache/dl.XXXXXX")
    if ! (cd "$tmp" && download "$pkg"); then
      # Stale lists name a version the mirror no longer has: refresh and resolve again.
      refresh_lists
      pkg=$(resolve_package)
      dir="$cache/$pkg"
      (cd "$tmp" && download "$pkg")
    fi
    rm -rf "$dir.partial"; mkdir -p "$dir.partial"
    dpkg -x "$tmp"/*.deb "$dir.partial"
    rm -rf "$tmp" "$dir"; mv "$dir.partial" "$dir"
  fi
  ls "$dir"/boot/vmlinuz-* | head -n 1
}

vmlinuz=$(fetch_kernel)
log "kernel $kernel: $vmlinuz"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp,lab}
cp /bin/busybox "$root/bin/busybox"
# llctop, the extra programs and the shared libraries they need, at the same paths.
cp "$bin" "$root/bin/llctop"
for b in "${extra[@]}"; do cp "$b" "$root/bin/"; done
for lib in $(ldd "$bin" "${extra[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp "$here/guest-init.sh" "$root/init"
cp "$scenario" "$root/lab/scenario.sh"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

log "booting (TCG, 4 vCPUs: 2 sockets x 2 cores, 2 nodes)"
# Single-threaded TCG: with multi-threaded TCG a vCPU can run a stale translation of a
# jump-label site the guest has just re-patched (static keys flip when schedstats, a sched
# feature or numa_balancing change, or a tracepoint is attached), and the guest oopses
# with "Oops: int3" (seen in ttwu_do_activate on 6.12). One host thread keeps
# cross-modifying code coherent.
set +e
timeout "${LAB_TIMEOUT:-300}" qemu-system-x86_64 -accel tcg,thread=single -m 1024 \
  -smp 4,sockets=2,cores=2,threads=1 \
  -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M \
  -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1 \
  -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 lab.kernel=$kernel" \
  -nographic -no-reboot </dev/null | tr -d '\r'
rc=${PIPESTATUS[0]}
set -e
log "qemu exited with $rc"
exit "$rc"
