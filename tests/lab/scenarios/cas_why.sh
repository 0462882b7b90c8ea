# Why a process has no preferred LLC (issue "CAS inside"), 7.2 on the 8-vCPU shape: an
# LLC is one core of two SMT threads, so at llc_balancing/aggr_tolerance 1 (the default) a
# process whose running threads × 2 do not fit 2 CPUs gets none. llctop records with the
# BPF source (its task walk reads each process's cache group). Constructions:
#  1. tolerance 1: `spin` (one thread) and `share 2` (two running threads) side by side;
#  2. NUMA balancing on, then off: `share 2` again (NUMA balancing's hinting faults on
#     its pages are the cache group's footprint; off, its memory is never scanned, so
#     none. A single pinned thread
#     touching 64 MiB got none in 8 s: its faults were not placed into the group);
# and the kernel threads as the guest lists them (children of kthreadd), the one kind of
# task the kernel sets up no cache group for (with init, made by user_mode_thread()).
# Oracles: the constructions, the guest's own /proc (Threads:, PPid:) and /proc/vmstat's
# numa_hint_faults — never llctop's code.
K=/sys/kernel/debug/sched/llc_balancing
lab_block topology llctop topology --json
lab aggr_tolerance "$(cat $K/aggr_tolerance)"
record_start /tmp/why.jsonl --source bpf --interval 1s
record_wait 1

# 1. One thread and two.
llctop-workload spin 0 30 >/tmp/one.out &
one=$!
llctop-workload share 2 30 >/tmp/two.out &
two=$!
lab one_pid "$one"
lab two_pid "$two"
wait_line /tmp/one.out ready "$one"
# From two snapshots on (the kernel's average of running threads settles at its second
# scan), five of them; the threads as the guest counts them, meanwhile.
from=$(($(record_snaps) + 2))
record_wait $((from + 5))
lab threads_snaps "$from $(record_snaps)"
lab one_threads "$(awk '/^Threads:/ {print $2}' /proc/$one/status)"
lab two_threads "$(awk '/^Threads:/ {print $2}' /proc/$two/status)"
kill "$one" "$two" 2>/dev/null || true
wait "$one" "$two" 2>/dev/null || true

# 2. The footprint comes from NUMA balancing's hinting faults.
numa_step() {
  echo "$2" > /proc/sys/kernel/numa_balancing
  f0=$(awk '/^numa_hint_faults / {print $2}' /proc/vmstat)
  llctop-workload share 2 12 >/tmp/numa_$1.out &
  p=$!
  lab "numa_$1_pid" "$p"
  from=$(($(record_snaps) + 1))
  record_wait $((from + 8))
  lab "numa_$1_snaps" "$from $(record_snaps)"
  lab "numa_$1_hint_faults" $(($(awk '/^numa_hint_faults / {print $2}' /proc/vmstat) - f0))
  # Whether NUMA balancing scanned this process's memory at all: its mm's scan passes
  # (/proc/PID/sched, mm->numa_scan_seq). Machine-wide hinting faults are no oracle for
  # that alone: pages other processes had marked before the switch still fault after it.
  lab "numa_$1_scan_seq" "$(awk -F: '/^mm->numa_scan_seq/ {gsub(/ /, "", $2); print $2}' /proc/$p/sched)"
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
numa_step on 1
numa_step off 0
echo 1 > /proc/sys/kernel/numa_balancing

# The kernel threads now (kthreadd, 2, and its children).
lab kthreads "2 $(grep -l '^PPid:[[:space:]]*2$' /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')"
record_stop
lab_file why_recording /tmp/why.jsonl.gz
lab_block report llctop report /tmp/why.jsonl.gz
