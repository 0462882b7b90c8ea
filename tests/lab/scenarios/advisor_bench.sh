# The advisor's false-alarm benchmark in a guest (docs/advisor.md, "Ordinary work"; the
# host's version is scripts/advisor-bench.sh): ordinary workloads recorded with the BPF
# source, `bench_runs=N` times each (kernel command line; default 1), each recording
# handed to the host as a file and summarised by the guest's own `llctop report`. A
# workload whose program is not in the guest's /bin is listed as skipped with why.
# Recordings run from their first snapshot until the work ended and two snapshots more
# followed it (events, not time).

runs=$(sed -n 's/.*bench_runs=\([0-9]*\).*/\1/p' /proc/cmdline)
runs=${runs:-1}
lab bench_runs "$runs"
lab bench_cpus "$(grep -c ^processor /proc/cpuinfo)"
n=$(grep -c ^processor /proc/cpuinfo)
# As on a kernel engineer's machine: /proc/schedstat's balancing counters on (the newidle
# detector's own evidence).
echo 1 > /proc/sys/kernel/sched_schedstats

# name|program needed|command
set -- \
  "idle||sleep 4" \
  "go programs starting (promtool --version x6)|promtool|for i in 1 2 3 4 5 6; do promtool --version >/dev/null 2>&1; usleep 300000; done" \
  "stress-ng --cpu $n|stress-ng|stress-ng --cpu $n --timeout 4s --quiet" \
  "perf bench sched messaging|perf|perf bench sched messaging -g 4 -l 50" \
  "shell loop of short processes (300)||i=0; while [ \$i -lt 300 ]; do /bin/true; i=\$((i + 1)); done"

w=0
for spec in "$@"; do
  w=$((w + 1))
  # (the helpers set name and rc: these are b_*)
  b_name=${spec%%|*}; rest=${spec#*|}; prog=${rest%%|*}; cmd=${rest#*|}
  if [ -n "$prog" ] && ! command -v "$prog" >/dev/null; then
    lab bench_skip "$w|$b_name|$prog is not in the guest"
    continue
  fi
  r=0
  while [ $r -lt "$runs" ]; do
    r=$((r + 1))
    record_start /tmp/b.jsonl --source bpf --interval 1s
    record_wait 1
    b_rc=0; sh -c "$cmd" >/dev/null 2>&1 || b_rc=$?
    record_wait $(($(record_snaps) + 3))
    record_stop
    llctop report /tmp/b.jsonl.gz > /tmp/b.report 2>&1
    f=$(sed -n '/^Findings/,/^$/p' /tmp/b.report)
    c() { printf '%s\n' "$f" | grep -c -e "$1" || true; }
    lab bench_result "$w|$b_name|$r|$b_rc|$(c ' INFO ')|$(c ' WARNING ')|$(c ' CRITICAL ')"
    lab_block "bench_findings_${w}_$r" printf '%s\n' "$f"
    lab_file "bench_${w}_$r" /tmp/b.jsonl.gz
    rm -f /tmp/b.jsonl.gz /tmp/b.report
  done
done
