#!/usr/bin/env bash
# Kernel lab: boot a stock Debian kernel in QEMU (TCG), run a scenario script inside with
# llctop, and print the guest's serial console on stdout. Two machine shapes
# ($LAB_SHAPE):
#   2s2llc      (default) 4 vCPUs: cpus 0-1 package 0, L3 #0, node 0; cpus 2-3 package 1,
#               L3 #1, node 1 — two cores share each LLC (the system's QEMU).
#   2s4llc-smt  8 vCPUs: 2 sockets x 2 cores x 2 threads, one L3 per core (0-1, 2-3, 4-5,
#               6-7), nodes 0 (cpus 0-3) and 1 (4-7): two LLCs per node, SMT inside each.
#               Needs QEMU 10 (smp-cache), taken from bookworm-backports into the cache
#               without installing it; the system's QEMU stays as it is.
#   8s8llc-smt  64 vCPUs: 8 sockets x 4 cores x 2 threads, one L3 per socket (cpus 8s to
#               8s+7), nodes 0 (sockets 0-3, cpus 0-31) and 1 (sockets 4-7, cpus 32-63):
#               four LLCs per node, SMT inside each — an EPYC's 8-core CCXs at the
#               users' scale (QEMU 10 as above; slow: one host thread runs 64 vCPUs).
#   32s32llc-smt  256 vCPUs the same way (32 LLCs, x2APIC, an IOMMU with interrupt
#               remapping): by hand only, docs/lab.md.
#
# usage: tests/lab/lab.sh KERNEL SCENARIO LLCTOP_BIN [EXTRA_BIN...]
#   KERNEL    5.10 | 6.1 | 6.12 | 6.18 | 7.2   (Debian 11 generic 5.10, Debian 12
#                                        generic 6.1, Debian 12 cloud 6.12,
#                                        trixie-backports cloud 6.18, sid 7.2 with
#                                        CONFIG_SCHED_CACHE)
#   SCENARIO  a shell script run by the guest's /init (see scenarios/); its lines
#             `# lab-qemu: OPTIONS` add QEMU options (e.g. NUMA distances)
#   LLCTOP_BIN  the llctop binary to put in the guest (its shared libraries are copied)
#   EXTRA_BIN   more programs for the guest's /bin (e.g. llctop-workload), with their libraries
#   $LAB_FILES  more files: `HOST_PATH=GUEST_PATH ...`
#
# Kernels are downloaded as .deb (no install) and unpacked into the cache
# ($LLCTOP_LAB_CACHE, default ~/.cache/llctop-lab) and reused. Exit status: QEMU's
# (124 when the time limit hit). The guest prints result lines; tests/lab/main.rs checks them.
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

shape=${LAB_SHAPE:-2s2llc}

apt_private() {
  # apt options for a private package list (another suite) without touching /etc/apt.
  local d="$cache/apt-$1"
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb http://deb.debian.org/debian $1 main" > "$d/sources.list"
  echo -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
       -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache"
}

# The suite a kernel comes from when it is not the system's own.
suite() {
  case "$kernel" in
    5.10) echo bullseye ;;
    6.18) echo trixie-backports ;;
    7.2)  echo sid ;;
  esac
}

resolve_package() {
  case "$kernel" in
    # shellcheck disable=SC2046
    5.10) apt-cache $(apt_private bullseye) search --names-only '^linux-image-5\.10\.0-[0-9]+-amd64$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    6.1)  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1/ {print $2; exit}' ;;
    6.12) apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    6.18) # shellcheck disable=SC2046
          apt-cache $(apt_private trixie-backports) search --names-only '^linux-image-6\.18\.[0-9]+\+deb13-cloud-amd64$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    # linux-image-7.2.* is a meta-package; the kernel is the linux-binary package.
    7.2)  # shellcheck disable=SC2046
          apt-cache $(apt_private sid) search --names-only '^linux-binary-7\.2\.[0-9]+\+deb14-amd64$' 2>/dev/null \
            | awk '{print $1}' | sort -V | tail -n 1 ;;
    *) log "unknown kernel $kernel"; exit 2 ;;
  esac
}

refresh_lists() {
  log "refreshing package lists"
  local s; s=$(suite)
  if [ -n "$s" ]; then
    # shellcheck disable=SC2046
    apt-get $(apt_private "$s") update -qq >&2
  else
    apt-get update -qq >&2
  fi
}

download() {
  local s; s=$(suite)
  if [ -n "$s" ]; then
    # shellcheck disable=SC2046
    apt-get $(apt_private "$s") download "$1" >&2
  else
    apt-get download "$1" >&2
  fi
}

# The kernel image inside an unpacked package (boot/ in linux-image, usr/lib/modules/ in
# linux-binary).
vmlinuz_in() {
  local f
  for f in "$1"/boot/vmlinuz-* "$1"/usr/lib/modules/*/vmlinuz; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 0
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
  if [ -z "$(vmlinuz_in "$dir")" ]; then
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
  vmlinuz_in "$dir"
}

# QEMU 10 from bookworm-backports, unpacked into the cache (not installed): bookworm's
# QEMU 7.2 has no smp-cache. Its libraries are bookworm's (the system QEMU's). Every
# package with QEMU modules comes along: QEMU also looks in the system's module directory,
# and a 7.2 module found there aborts it.
fetch_qemu10() {
  local dir="$cache/qemu-10" pkgs=(qemu-system-x86 qemu-system-common qemu-system-data qemu-system-gui qemu-block-extra seabios)
  if [ ! -x "$dir/usr/bin/qemu-system-x86_64" ]; then
    log "downloading QEMU 10 from bookworm-backports"
    local tmp; tmp=$(mktemp -d "$cache/dl.XXXXXX")
    # shellcheck disable=SC2046
    apt-get $(apt_private bookworm-backports) update -qq >&2
    # shellcheck disable=SC2046
    (cd "$tmp" && apt-get $(apt_private bookworm-backports) download "${pkgs[@]}" >&2)
    rm -rf "$dir.partial"; mkdir -p "$dir.partial"
    for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$dir.partial"; done
    rm -rf "$tmp" "$dir"; mv "$dir.partial" "$dir"
  fi
  echo "$dir"
}

# Boots run side by side (tests/common/lab.rs: one per host core): the downloads into the
# shared cache, one at a time (two boots of one kernel on a fresh cache would run apt on
# one package list and unpack into one directory together).
fetch_locked() { ( exec 8>"$cache/.fetch.lock"; flock 8; "$@" ); }
vmlinuz=$(fetch_locked fetch_kernel)
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
# $LAB_FILES: more files for the guest, `HOST_PATH=GUEST_PATH` separated by spaces (e.g.
# a kernel config for a sched_ext scheduler's libbpf).
for pair in ${LAB_FILES:-}; do
  mkdir -p "$root$(dirname "${pair#*=}")"
  cp -L "${pair%%=*}" "$root${pair#*=}"
done
cp "$here/guest-init.sh" "$root/init"
cp "$scenario" "$root/lab/scenario.sh"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

# QEMU 10 from the cache, with its own modules and firmware, never the system QEMU's.
use_qemu10() {
  local q
  q=$(fetch_locked fetch_qemu10)
  export QEMU_MODULE_DIR="$q/usr/lib/x86_64-linux-gnu/qemu"
  qemu=("$q/usr/bin/qemu-system-x86_64" -L "$q/usr/share/qemu" -L "$q/usr/share/seabios")
}

case "$shape" in
  2s2llc)
    qemu=(qemu-system-x86_64)
    machine=(-smp 4,sockets=2,cores=2,threads=1
      -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1)
    what="4 vCPUs: 2 sockets x 2 cores, 2 nodes" ;;
  2s4llc-smt)
    use_qemu10
    # An Intel vendor: with AMD's, TCG has no topoext and L3 stays per socket; no dies=
    # or modules= (QEMU 10.0.2 aborts in encode_topo_cpuid1f with them).
    machine=(-cpu qemu64,vendor=GenuineIntel
      -machine q35,smp-cache.0.cache=l3,smp-cache.0.topology=core
      -smp 8,sockets=2,cores=2,threads=2 -nic none -vga none
      -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1)
    what="8 vCPUs: 2 sockets x 2 cores x 2 threads, an L3 per core, 2 nodes" ;;
  8s8llc-smt)
    use_qemu10
    machine=(-cpu qemu64,vendor=GenuineIntel
      -machine q35,smp-cache.0.cache=l3,smp-cache.0.topology=socket
      -smp 64,sockets=8,cores=4,threads=2 -nic none -vga none
      -numa node,nodeid=0,cpus=0-31,memdev=m0 -numa node,nodeid=1,cpus=32-63,memdev=m1)
    what="64 vCPUs: 8 sockets x 4 cores x 2 threads, an L3 per socket, 2 nodes" ;;
  32s32llc-smt)
    # By hand (docs/lab.md): the largest shape tried here, 256 vCPUs.
    use_qemu10
    machine=(-cpu qemu64,vendor=GenuineIntel,+x2apic
      -machine q35,kernel-irqchip=split,smp-cache.0.cache=l3,smp-cache.0.topology=socket
      -device intel-iommu,intremap=on,eim=on
      -smp 256,sockets=32,cores=4,threads=2 -nic none -vga none
      -numa node,nodeid=0,cpus=0-127,memdev=m0 -numa node,nodeid=1,cpus=128-255,memdev=m1)
    what="256 vCPUs: 32 sockets x 4 cores x 2 threads, an L3 per socket, 2 nodes" ;;
  *) log "unknown shape $shape"; exit 2 ;;
esac

# A scenario may ask for more QEMU options in lines `# lab-qemu: OPTIONS`.
mapfile -t scenario_qemu < <(sed -n 's/^# lab-qemu: //p' "$scenario" | tr ' ' '\n' | sed '/^$/d')
machine+=("${scenario_qemu[@]}")
[ ${#scenario_qemu[@]} -eq 0 ] || what="$what, ${scenario_qemu[*]}"

log "booting (TCG, $what)"
# Single-threaded TCG: with multi-threaded TCG a vCPU can run a stale translation of a
# jump-label site the guest has just re-patched (static keys flip when schedstats, a sched
# feature or numa_balancing change, or a tracepoint is attached), and the guest oopses
# with "Oops: int3" (seen in ttwu_do_activate on 6.12). One host thread keeps
# cross-modifying code coherent.
#
# A boot that never reaches the guest's /init (its first line, `@@LAB kernel`) within
# $LAB_BOOT_LIMIT seconds (default 120, or 5 s per vCPU when more) is the emulator's or
# the kernel's early boot stuck, before llctop exists in the guest: seen once in CI on
# the 64-vCPU shape (nothing on the console after the firmware for 30 minutes), never in
# 14 boots here, idle or loaded. Such a boot is stopped and booted once more, said on
# stderr with its console's tail; a second one is a failure. Anything after /init started
# (the scenario, llctop) has only $LAB_TIMEOUT (default 600 s: a guard against a hang, not a
# time limit — 6.1's ab.sh takes 298–303 s on a loaded runner) and is never retried.
vcpus=$(printf '%s\n' "${machine[@]}" | sed -n 's/^\([0-9][0-9]*\),sockets=.*/\1/p' | head -1)
vcpus=${vcpus:-4}
boot_limit=${LAB_BOOT_LIMIT:-$(( vcpus * 5 > 120 ? vcpus * 5 : 120 ))}
console="$work/console"
boot_once() {
  : > "$console"
  timeout "${LAB_TIMEOUT:-600}" "${qemu[@]}" -accel tcg,thread=single -m 1024 \
    -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M \
    "${machine[@]}" \
    -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 lab.kernel=$kernel lab.shape=$shape ${LAB_APPEND:-}" \
    -nographic -no-reboot </dev/null > "$console" &
  local qpid=$! waited=0
  rm -f "$work/stuck"
  (
    until grep -q '@@LAB kernel ' "$console" 2>/dev/null; do
      kill -0 "$qpid" 2>/dev/null || exit 0
      if [ "$waited" -ge "$boot_limit" ]; then
        : > "$work/stuck"
        kill -TERM "$qpid" 2>/dev/null
        exit 0
      fi
      sleep 1; waited=$((waited + 1))
    done
  ) &
  local wpid=$!
  set +e
  tail -n +1 --pid="$qpid" -f "$console" | tr -d '\r'
  wait "$qpid"
  rc=$?
  wait "$wpid"
  set -e
}
boot_once
if [ -e "$work/stuck" ]; then
  log "the guest did not reach /init in ${boot_limit} s (its console's last lines below); booting once more"
  tail -n 5 "$console" | tr -d '\r' | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/^/lab:   | /' >&2
  boot_once
  if [ -e "$work/stuck" ]; then
    log "the guest did not reach /init in ${boot_limit} s twice"
    rc=124
  fi
fi
log "qemu exited with $rc"
exit "$rc"
