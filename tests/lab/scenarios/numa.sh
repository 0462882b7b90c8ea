# NUMA balancing (shared/seeds/003), either shape: a process in its own cgroup
# first-touches 64 MiB on node 1, then writes it page by page from cpu0 (node 0) for
# 8 s; NUMA balancing scans it, takes hinting faults and migrates the pages towards
# node 0. llctop records (procfs source) and shows the cgroup's memory.stat NUMA
# counters; the oracle is the same file read by this script before and after, and the
# workload's own move_pages(2) view of where its pages are. Then numa_balancing is
# turned off for one llctop run and restored. The scan delay and period are shortened
# (the lab's setting, not llctop's) so emulated seconds suffice.

CG=/sys/fs/cgroup
D=/sys/kernel/debug/sched/numa_balancing
mount -t cgroup2 none $CG
echo +memory > $CG/cgroup.subtree_control
mkdir $CG/numa-work
lab numa_balancing_before "$(cat /proc/sys/kernel/numa_balancing)"
echo 0 > $D/scan_delay_ms
echo 100 > $D/scan_period_min_ms
far=$(sed 's/[-,].*//' /sys/devices/system/node/node1/cpulist)
lab far_cpu "$far"
llctop knobs list --json > /tmp/knobs.json
lab_file knobs_json /tmp/knobs.json
numa_stat() { grep '^numa_' $CG/numa-work/memory.stat | tr '\n' ' '; }

record_start /tmp/numa.jsonl --source procfs --interval 1s
record_wait 1
mkfifo /tmp/go
exec 3<>/tmp/go
(echo 0 > $CG/numa-work/cgroup.procs; exec llctop-workload numa "$far" 0 64 8) <&3 >/tmp/numa.out &
w=$!
lab numa_pid "$w"
wait_line /tmp/numa.out ready "$w"
# Two snapshots later llctop has seen the process (it ran, touching its memory) and read
# the cgroup while the process waits: nothing changes until it is told to go.
record_wait $(($(record_snaps) + 2))
lab cut_after_snapshots "$(record_snaps)"
lab stat_start "$(numa_stat)"
# The kernel's own counts of what balancing did and of the CPU time meanwhile (the
# finding's cost: its kernel time against the busy CPU time).
kernel_counts() { grep -E '^numa_(pages_migrated|hint_faults) ' /proc/vmstat; grep '^cpu ' /proc/stat; }
kernel_counts > /tmp/k0
echo go >&3
wait "$w"
lab_block numa_kernel sh -c 'cat /tmp/k0; echo --; grep -E "^numa_(pages_migrated|hint_faults) " /proc/vmstat; grep "^cpu " /proc/stat'
record_wait $(($(record_snaps) + 2))
lab stat_end "$(numa_stat)"
record_stop
lab_block numa_out cat /tmp/numa.out
lab_file numa_recording /tmp/numa.jsonl.gz

llctop live --source procfs --interval 500ms --set numa_balancing=0 >/tmp/nb.out 2>&1 &
pid=$!
wait_line /tmp/nb.out '^llctop: numa_balancing: ' $pid
lab numa_balancing_during "$(cat /proc/sys/kernel/numa_balancing)"
kill -TERM $pid
wait $pid || true  # 143: stopped by SIGTERM
lab numa_balancing_after "$(cat /proc/sys/kernel/numa_balancing)"
