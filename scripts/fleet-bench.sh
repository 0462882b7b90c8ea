#!/usr/bin/env bash
# `llctop diff --fleet` at fleet scale (issue "Fleet data"; a benchmark, not a timed test):
# HOSTS (default 1000) hosts' recordings generated from the 6.1 procfs fixture's header
# and first snapshot — SNAPSHOTS (default 15) each, half the hosts in A, half in B, B's
# cross-LLC migrations 10 % higher, ±20 % host-to-host and ±10 % snapshot noise — then the
# verdict's wall time and peak resident memory (GNU time) and the line it gives that
# metric; then the same hosts exported (`export --parquet`, each arm into one directory)
# and the verdict again from the exports' fleet_windows. Targets: ≤ 5 s and ≤ 200 MB for
# 1,000 hosts. Figures: docs/performance.md (u).
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-1000}
SNAPSHOTS=${SNAPSHOTS:-15}
[ -x /usr/bin/time ] || { echo "fleet-bench: needs GNU time (apt-get install time)"; exit 1; }
cargo build --quiet --release --bin llctop
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 - "$out" "$HOSTS" "$SNAPSHOTS" <<'PY'
import json, random, sys
out, hosts, snaps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = open('tests/fixtures/recordings/newidle-6.1-procfs.jsonl').read().splitlines()
head = json.loads(lines[0])
snap = next(json.loads(l) for l in lines[1:] if json.loads(l).get('type') == 'snapshot')
random.seed(1)
for arm, shift in (('a', 1.0), ('b', 1.1)):
    import os
    os.makedirs(f'{out}/{arm}', exist_ok=True)
    for i in range(hosts // 2):
        h = dict(head, host=f'{arm}{i}')
        rows = [json.dumps(h)]
        hf = random.uniform(0.8, 1.2)
        for seq in range(snaps):
            s = json.loads(json.dumps(snap))
            s['seq'] = seq
            s['time'] = {'unix_ns': 1795460000000000000 + seq * 10**9,
                         'mono_ns': 10**10 + seq * 10**9, 'interval_ns': 10**9}
            s['migrations']['by_distance']['cross_llc'] = round(1000 * hf * shift * random.uniform(0.9, 1.1))
            rows.append(json.dumps(s))
        open(f'{out}/{arm}/{arm}{i}.jsonl', 'w').write('\n'.join(rows) + '\n')
PY
echo "hosts: $HOSTS ($((HOSTS / 2)) per arm), $SNAPSHOTS snapshots each, $(du -sm "$out" | cut -f1) MiB of JSON"
/usr/bin/time -f '%e %M' -o "$out/time" target/release/llctop diff --fleet "$out/a" "$out/b" >"$out/verdict"
read -r wall rss <"$out/time"
echo "diff --fleet: ${wall} s wall, $((rss / 1024)) MiB peak resident"
grep '^migrations.xllc' "$out/verdict"
for arm in a b; do
  for f in "$out/$arm"/*.jsonl; do
    target/release/llctop export --parquet "$f" -o "$out/pq-$arm" >/dev/null 2>&1
  done
done
echo "exported: $(du -sm "$out/pq-a/fleet_windows" "$out/pq-b/fleet_windows" | awk '{s += $1} END {print s}') MiB of fleet_windows ($(ls "$out/pq-a/fleet_windows" "$out/pq-b/fleet_windows" | grep -c parquet) files)"
/usr/bin/time -f '%e %M' -o "$out/time" target/release/llctop diff --fleet "$out/pq-a" "$out/pq-b" >"$out/verdict-pq"
read -r wall rss <"$out/time"
echo "diff --fleet over the exports: ${wall} s wall, $((rss / 1024)) MiB peak resident"
grep '^migrations.xllc' "$out/verdict-pq"
if diff <(grep -v '^fleet A/B' "$out/verdict") <(grep -v '^fleet A/B' "$out/verdict-pq") >/dev/null; then
  echo "the same verdict from the recordings and from the exports"
else
  echo "the verdicts differ:"; diff <(grep -v '^fleet A/B' "$out/verdict") <(grep -v '^fleet A/B' "$out/verdict-pq") | head
fi
