#!/usr/bin/env bash
# The advisor's false-alarm benchmark (docs/advisor.md, "Ordinary work"): ordinary
# workloads recorded with the BPF source, RUNS times each, and the findings `llctop
# report` gives them, counted by severity. Target: no WARNING and no CRITICAL on any of
# them (the seed lab's scenarios, which must still fire, are tests/lab/seed_*.rs). Needs
# root (BPF). A workload whose program is missing here is listed as skipped, with why.
# usage: scripts/advisor-bench.sh [RUNS] [SECONDS]   (defaults 5 and 6)
#        scripts/advisor-bench.sh --lab [KERNEL] [RUNS]  (defaults 7.2 and 5): the same
#        in the kernel lab's 8-vCPU guest (4 LLCs, 2 nodes, SMT; tests/lab/scenarios/
#        advisor_bench.sh), each recording judged by the guest's own `llctop report`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q --bins
L=$PWD/target/release/llctop

if [ "${1:-}" = "--lab" ]; then
  kernel=${2:-7.2}
  runs=${3:-5}
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  bins=("$PWD/target/release/llctop" "$PWD/target/release/llctop-workload")
  for p in promtool stress-ng perf; do
    if command -v "$p" >/dev/null; then bins+=("$(command -v "$p")"); fi
  done
  LAB_SHAPE=2s4llc-smt LAB_APPEND="bench_runs=$runs" LAB_TIMEOUT=$((600 + runs * 400)) \
    tests/lab/lab.sh "$kernel" tests/lab/scenarios/advisor_bench.sh "${bins[@]}" > "$out"
  rc=0
  tr -d '\r' < "$out" | awk -F'|' -v kernel="$kernel" '
    /^@@LAB bench_cpus / { cpus = $0; sub(/.* /, "", cpus) }
    /^@@LAB bench_skip / { sub(/^@@LAB bench_skip /, ""); skip[$2] = $3; order[++n] = $2 }
    /^@@LAB bench_result / {
      sub(/^@@LAB bench_result /, "")
      if (!($2 in runs)) order[++n] = $2
      runs[$2]++; info[$2] += $5; warn[$2] += $6; crit[$2] += $7
    }
    END {
      printf "kernel lab: %s, 8-vCPU guest (%s CPUs: 2 nodes, 4 LLCs, SMT)\n\n", kernel, cpus
      print "| workload | runs | info | warning | critical |"
      print "|---|---|---|---|---|"
      for (i = 1; i <= n; i++) {
        w = order[i]
        if (w in skip) printf "| %s | skipped: %s | | | |\n", w, skip[w]
        else { printf "| %s | %d | %d | %d | %d |\n", w, runs[w], info[w], warn[w], crit[w]; alarms += warn[w] + crit[w] }
      }
      print ""
      if (alarms) { print "target missed: " alarms " WARNING/CRITICAL findings on ordinary work"; exit 1 }
      print "target met: no WARNING or CRITICAL on ordinary work"
    }' || rc=$?
  # The findings behind any alarm, as the guest reported them.
  tr -d '\r' < "$out" | awk '/^@@BEGIN bench_findings/ {p = 1; print; next} /^@@END/ {p = 0} p' \
    | grep -B1 -A3 -e ' WARNING ' -e ' CRITICAL ' >&2 || true
  exit $rc
fi

runs=${1:-5}
secs=${2:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A small crate to build (no dependencies: no network), and a small Python test suite.
mkdir -p "$work/crate/src" "$work/py"
printf '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n' > "$work/crate/Cargo.toml"
for i in $(seq 1 20); do
  printf 'pub fn f%s(x: u64) -> u64 { (0..x).map(|i| i * %s).sum() }\n' "$i" "$i"
done > "$work/crate/src/lib.rs"
for i in $(seq 1 8); do
  printf 'import unittest\nclass T%s(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(sum(range(200000)), 19999900000)\n' "$i" > "$work/py/test_$i.py"
done

# name|command (run while llctop records; each within the recording)
workloads=(
  "idle|sleep $((secs - 2))"
  "go programs starting (promtool --version x6)|for i in 1 2 3 4 5 6; do promtool --version >/dev/null 2>&1; sleep 0.3; done"
  "cargo build of a small crate|cd $work/crate && rm -rf target && CARGO_TARGET_DIR=$work/crate/target cargo build -q --offline"
  "stress-ng --cpu $(nproc)|stress-ng --cpu $(nproc) --timeout $((secs - 2))s --quiet"
  "perf bench sched messaging|perf bench sched messaging -l 200 >/dev/null 2>&1"
  "shell loop of short processes (300)|for i in \$(seq 300); do /bin/true; done"
  "python unittest run|cd $work/py && python3 -m unittest -q 2>/dev/null"
)

need() {
  case "$1" in
    go*) command -v promtool >/dev/null || echo "promtool not installed (apt install prometheus)" ;;
    stress*) command -v stress-ng >/dev/null || echo "stress-ng not installed (apt install stress-ng)" ;;
    perf*) perf bench sched messaging -l 1 >/dev/null 2>&1 || echo "perf bench not available (apt install linux-perf)" ;;
    cargo*) command -v cargo >/dev/null || echo "cargo not installed" ;;
  esac
}

printf '%s runs of %s s each on %s (%s CPUs), kernel %s\n\n' "$runs" "$secs" "$(hostname)" "$(nproc)" "$(uname -r)"
printf '| workload | runs | info | warning | critical | pile-ups seen |\n|---|---|---|---|---|---|\n'
alarms=0
for w in "${workloads[@]}"; do
  name=${w%%|*}; cmd=${w#*|}
  why=$(need "$name")
  if [ -n "$why" ]; then
    printf '| %s | skipped: %s | | | | |\n' "$name" "$why"
    continue
  fi
  info=0 warn=0 crit=0 piles=0
  for r in $(seq 1 "$runs"); do
    rec="$work/r.jsonl"
    "$L" --source bpf record --duration "${secs}s" -o "$rec" >/dev/null 2>"$work/err" &
    lp=$!
    sleep 1
    bash -c "$cmd" >/dev/null 2>&1 || true
    wait "$lp" || { cat "$work/err" >&2; exit 1; }
    rep=$("$L" report "$rec")
    findings=$(printf '%s\n' "$rep" | sed -n '/^Findings/,/^$/p')
    info=$((info + $(printf '%s\n' "$findings" | grep -c ' INFO ' || true)))
    warn=$((warn + $(printf '%s\n' "$findings" | grep -c ' WARNING ' || true)))
    crit=$((crit + $(printf '%s\n' "$findings" | grep -c ' CRITICAL ' || true)))
    piles=$((piles + $(printf '%s\n' "$findings" | grep -c 'placement pile-up' || true)))
    if printf '%s\n' "$findings" | grep -q -e ' WARNING ' -e ' CRITICAL '; then
      printf '%s\n' "$findings" | grep -A1 -e ' WARNING ' -e ' CRITICAL ' | sed "s/^/  [$name, run $r] /" >&2
    fi
  done
  alarms=$((alarms + warn + crit))
  printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$runs" "$info" "$warn" "$crit" "$piles"
done
echo
if [ "$alarms" -eq 0 ]; then
  echo "target met: no WARNING or CRITICAL on ordinary work"
else
  echo "target missed: $alarms WARNING/CRITICAL findings on ordinary work (listed on stderr)"
  exit 1
fi
