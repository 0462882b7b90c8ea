# Newidle balancing on small LLCs (shared/seeds/004), 8-vCPU shape (an LLC per core, so
# the LLC is the SMT domain). First a few seconds of the idle guest. Then, under a wake-heavy load (spinners and short sleepers: CPUs
# go idle hundreds of times a second) llctop records /proc/schedstat's per-level newidle
# balancing, first as the kernel is and then — where cgroup v1's cpuset exists — with
# `--set relax_domain_level=llc`, which should leave newidle balancing to the LLC. The
# domains' flags are read back from debugfs (verbose on) before, during and after. A
# kernel booted with relax_domain_level= (LAB_APPEND) shows it in /proc/cmdline.

SCHED=/sys/kernel/debug/sched
CPUSET=/sys/fs/cgroup/cpuset
echo 1 > /proc/sys/kernel/sched_schedstats
lab schedstat_version "$(sed -n 's/^version //p' /proc/schedstat)"
lab cmdline "$(cat /proc/cmdline)"
mount -t tmpfs cgroup /sys/fs/cgroup
mkdir -p $CPUSET
if mount -t cgroup -o cpuset cpuset $CPUSET 2>/tmp/mount.err; then
  lab cpuset_v1 yes
else
  lab cpuset_v1 "no: $(cat /tmp/mount.err)"
fi
echo Y > $SCHED/verbose
# NAME:1 per domain of cpu0 that does newidle balancing, NAME:0 otherwise.
newidle_domains() {
  for d in $SCHED/domains/cpu0/domain*; do
    if grep -qw SD_BALANCE_NEWIDLE $d/flags; then n=1; else n=0; fi
    printf '%s:%s ' "$(cat $d/name)" $n
  done
}
lab domains_before "$(newidle_domains)"
llctop knobs list --json > /tmp/knobs.json
lab_file knobs_json /tmp/knobs.json
lab_block describe_relax llctop knobs describe relax_domain_level

# An idle machine first (the advisor must find nothing in it).
record_start /tmp/idle.jsonl --source procfs --interval 1s
record_wait 4
record_stop
lab_file newidle_idle /tmp/idle.jsonl.gz

pids=""
for i in 1 2 3 4; do (while :; do :; done) & pids="$pids $!"; done
for i in 1 2 3 4 5 6; do (while :; do usleep 2000; done) & pids="$pids $!"; done

# 10 intervals per recording at least: NUMA-level newidle balancing is rare under TCG (a
# few a second, 0 in some seconds), and with 5 `llctop diff` once found 4.94 +- 2.70 (SE)
# against the relaxed run's 0, just under its 2 x noise rule. The kernel as it is gets 30:
# under TCG its newidle pulls above the LLC hover near the advisor's 0.5 per busy
# CPU-second (0.3-0.6 in a 5 s window, 2026-11-28; each interval takes 2-3 s of the
# guest's clock), and the finding fires on the first window past it — CI's run with 10
# had none; reruns fired at +6, +13 and +16 s.
lab ctxt_default_start "$(awk '/^ctxt/ {print $2}' /proc/stat)"
record_start /tmp/default.jsonl --source procfs --interval 1s
record_wait 30
record_stop
lab ctxt_default_end "$(awk '/^ctxt/ {print $2}' /proc/stat)"
lab_file newidle_default /tmp/default.jsonl.gz

if [ -e $CPUSET/cpuset.sched_relax_domain_level ]; then
  record_start /tmp/relaxed.jsonl --source procfs --interval 1s --set relax_domain_level=llc
  record_wait 1
  lab relax_during "$(cat $CPUSET/cpuset.sched_relax_domain_level)"
  lab domains_relaxed "$(newidle_domains)"
  record_wait 10
  record_stop
  lab relax_after "$(cat $CPUSET/cpuset.sched_relax_domain_level)"
  lab domains_after "$(newidle_domains)"
  lab_file newidle_relaxed /tmp/relaxed.jsonl.gz
fi
kill $pids
echo N > $SCHED/verbose
