# Cache-aware scheduling's real state (issue "CAS inside"), 7.2 on the 8-vCPU shape (an
# L3 per SMT pair: four LLCs of two CPUs). `llc_balancing/enabled` reads back what was
# asked; the kernel acts on it only while a sched-domain partition spans two LLCs with two
# CPUs in one. Five steps, each a change and then three snapshots wholly after it:
#  whole    enabled 1, every CPU in one partition        -> the kernel enables it
#  off      enabled 0                                    -> the kernel disables it
#  isolated enabled 1, cpus 2-7 an isolated cpuset partition: the rest, 0-1, is one LLC
#                                                        -> "not supported on this platform"
#  rootpart that partition made a root partition (2-7: three LLCs) -> enabled again
#  back     the partition dissolved (member)             -> enabled
# The oracle: the kernel's own word on each change — with sched/verbose on,
# _sched_cache_active_set() prints which way it set the static key (kernel/sched/
# topology.c of 7.2) — and the partitions as the cpuset files say. llctop records with
# the procfs source; `knobs list` is taken in the isolated step.
K=/sys/kernel/debug/sched
echo Y > $K/verbose
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
lab_block topology llctop topology --json

record_start /tmp/cas.jsonl --source procfs --interval 1s
record_wait 1

said() { dmesg | grep -c '_sched_cache_active_set:' || true; }
# step NAME: the kernel's newest word (after a change that made it speak: at least one
# new line since $before) and the snapshots after the change: from the one after the
# next on (the next may straddle it), three of them.
step() {
  lab "$1_kernel" "$(dmesg | grep '_sched_cache_active_set:' | tail -1 | sed 's/.*_sched_cache_active_set: //')"
  lab "$1_new_lines" $(($(said) - before))
  from=$(($(record_snaps) + 1))
  record_wait $((from + 3))
  lab "$1_snaps" "$from $(record_snaps)"
}

before=$(said)
echo 1 > $K/llc_balancing/enabled
step whole

before=$(said)
echo 0 > $K/llc_balancing/enabled
step off

before=$(said)
echo 1 > $K/llc_balancing/enabled
P=/sys/fs/cgroup/part
mkdir $P
echo 2-7 > $P/cpuset.cpus
echo isolated > $P/cpuset.cpus.partition
lab isolated_partition "$(cat $P/cpuset.cpus.partition)"
lab isolated_cpus "$(cat /sys/fs/cgroup/cpuset.cpus.isolated)"
step isolated
lab_block knobs_isolated llctop knobs list

before=$(said)
echo root > $P/cpuset.cpus.partition
lab rootpart_partition "$(cat $P/cpuset.cpus.partition)"
lab rootpart_cpus "$(cat $P/cpuset.cpus.effective)"
step rootpart

before=$(said)
echo member > $P/cpuset.cpus.partition
step back

record_stop
lab_file cas_recording /tmp/cas.jsonl.gz
lab_block report llctop report /tmp/cas.jsonl.gz
