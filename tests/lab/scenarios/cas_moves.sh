# Moves off the kernel-preferred LLC (issue "CAS inside", item 3), 7.2 on the 8-vCPU shape
# (an L3 per SMT pair: LLC i is CPUs 2i and 2i+1). llctop records with the BPF source and
# raises llc_balancing.aggr_tolerance to 100 for its run (as cache_aware.sh), so that
# `share 2` (two spinning threads) gets a preferred LLC and is gathered there. Then the
# construction: its CPU affinity is set, behind the scheduler's back, to the CPUs of
# another LLC — each of its two running threads is moved off the LLC it was gathered on
# exactly once, by the stopper (the kernel's migration/N thread). Before that, its affinity
# is set to the CPUs of the LLC it was gathered on, and a snapshot passes: the kernel's
# own balancing cannot then move a worker off and back in the measured span (the CI's lab
# once counted 3 moves off, none onto: a natural move off, and a way back the kernel made
# while the task's preference was briefly unset). The oracle: the guest's
# own view of where each worker thread ran (/proc/PID/task/TID/stat field 39), before
# and after, never llctop's code.
lab_block topology llctop topology --json
record_start /tmp/mv.jsonl --source bpf --interval 1s \
  --set llc_balancing.aggr_tolerance=100
record_wait 1
llctop-workload share 2 40 >/tmp/share.out &
share=$!
lab share_pid "$share"
lab gathered "$(wait_gathered "$share" 3)"
# The worker threads (not the main one, which sleeps until they end) and their CPUs.
workers() { task_cpus "$share"; }
# Where both last ran on one LLC: a busy guest moves a spinner away for a moment now and
# then (seen once: CPUs 2 and 1 right after three gathered snapshots; on a slow host of
# 2026-11-29 still CPUs 2 and 4 after 4 s), so look again, up to 150 times, 0.1 s apart.
one_llc() { echo "$1" | tr ' ' '\n' | awk -F: 'NF == 2 {print int($2 / 2)}' | sort -u | wc -l; }
n=0
before=$(workers)
until [ "$(one_llc "$before")" -eq 1 ] || [ $n -ge 150 ]; do
  usleep 100000; n=$((n + 1)); before=$(workers)
done
lab workers_looks "$n"
lab workers_before "$before"
llc=$(($(echo "$before" | cut -d' ' -f1 | cut -d: -f2) / 2))
target=$(((llc + 1) % 4))
lab target_llc "$target"
# Held on the LLC it was gathered on (where both run: nothing moves), a whole snapshot
# after that before the measured span.
taskset -a -p -c "$((llc * 2)),$((llc * 2 + 1))" "$share" >/dev/null
record_wait $(($(record_snaps) + 2))
lab workers_pinned "$(workers)"
lab moved_after_snapshots "$(record_snaps)"
taskset -a -p -c "$((target * 2)),$((target * 2 + 1))" "$share" >/dev/null
from=$(($(record_snaps) + 1))
record_wait $((from + 3))
lab workers_after "$(workers)"
lab moved_snaps "$from $(record_snaps)"
kill "$share" 2>/dev/null || true
wait "$share" 2>/dev/null || true
record_wait $(($(record_snaps) + 1))
record_stop
lab_file moves_recording /tmp/mv.jsonl.gz
lab_block report llctop report /tmp/mv.jsonl.gz
