#!/usr/bin/env bash
# Regenerate tests/fixtures/recordings/: real recordings from the seed lab (8 vCPUs, four
# LLCs, two nodes, SMT), read by tests/host/mutation.rs (mutated 10,000 times) and
# tests/reliability.rs. Each is one scenario's recording, taken from the guest's console
# and stored uncompressed so a diff shows what changed:
#   newidle-6.1-procfs.jsonl   newidle.sh on 6.1, the wake-heavy load as the kernel is
#   placement-7.2-bpf.jsonl    placement.sh on 7.2 (BPF source, preferred LLC, pile-up)
#   numa-6.1-procfs.jsonl      numa.sh on 6.1 (NUMA balancing, cgroup memory.stat)
#   ab-7.2.jsonl               ab.sh on 7.2 (an A/B experiment's phases)
#   share-7.2-bpf.jsonl        cas_share.sh on 7.2 (processes sharing memory and waking
#                              each other: sharing, wakeups, candidate groups)
# Takes ~12 minutes (QEMU TCG); needs scripts/deps.sh. Run after a recording format change.
# With names (e.g. `scripts/lab-fixtures.sh share-7.2-bpf.jsonl`), only those.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/fixtures/recordings
mkdir -p "$out"
cargo build --release --locked --bins
bin=${CARGO_TARGET_DIR:-target}/release

# boot KERNEL SCENARIO FILE NAME: boot the lab and write the guest's file FILE as NAME
# (unless names were given and NAME is not one of them).
wanted=" $* "
boot() {
  if [ "$wanted" != "  " ] && [[ "$wanted" != *" $4 "* ]]; then
    return
  fi
  local console
  console=$(mktemp)
  LAB_SHAPE=2s4llc-smt tests/lab/lab.sh "$1" "tests/lab/scenarios/$2" \
    "$bin/llctop" "$bin/llctop-workload" > "$console"
  # The serial console may put terminal escapes before a marker; cut up to "@@".
  sed 's/^[^@]*@@/@@/' "$console" \
    | awk -v f="$3" '$0 == "@@END " f {on=0} on {print} $0 == "@@FILE " f {on=1}' \
    | base64 -d | gunzip > "$out/$4"
  rm -f "$console"
  if ! grep -q '"type":"snapshot"' "$out/$4"; then
    echo "lab-fixtures: $1 $2: no snapshots in $3" >&2
    exit 1
  fi
  echo "lab-fixtures: $out/$4 ($(wc -l < "$out/$4") lines)"
}

boot 6.1 newidle.sh newidle_default newidle-6.1-procfs.jsonl
boot 7.2 placement.sh placement_recording placement-7.2-bpf.jsonl
boot 6.1 numa.sh numa_recording numa-6.1-procfs.jsonl
boot 7.2 ab.sh ab_recording ab-7.2.jsonl
boot 7.2 cas_share.sh share_recording share-7.2-bpf.jsonl
