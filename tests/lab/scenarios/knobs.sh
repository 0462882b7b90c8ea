# Knobs scenario: llctop changes kernel knobs for the length of a run and puts them back.
#  - a sched feature flip takes effect while `llctop live --set` runs and is restored on
#    normal exit and on SIGTERM;
#  - relax_domain_level through the cgroup v1 cpuset (where the kernel still has it):
#    the domains' SD_BALANCE_NEWIDLE flags change while set and come back afterwards; where
#    cpuset v1 cannot be mounted llctop says why;
#  - numa_balancing toggles and restores;
#  - sched/verbose is turned on only while llctop reads the domains.

SCHED=/sys/kernel/debug/sched
feature() { tr ' ' '\n' < $SCHED/features | grep -x -e "$1" -e "NO_$1"; }
flags() { cat $SCHED/domains/cpu0/domain$1/flags 2>/dev/null | tr -s ' \n' ' '; }
wait_for() { # wait_for CMD EXPECTED: poll until CMD prints EXPECTED (60 s at most)
  n=0
  until [ "$($1)" = "$2" ]; do usleep 50000; n=$((n + 1)); [ $n -lt 1200 ] || return 1; done
}

# cgroup v1 cpuset: 6.1 has it; 6.12's Debian cloud kernel was built without CPUSETS_V1.
mount -t tmpfs cgroup /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/cpuset
if mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset 2>/tmp/mount.err; then
  lab cpuset_v1 yes
else
  lab cpuset_v1 "no: $(cat /tmp/mount.err)"
fi

lab verbose_before "$(cat $SCHED/verbose)"
lab_block describe_relax llctop knobs describe relax_domain_level
lab verbose_after_describe "$(cat $SCHED/verbose)"
lab_block list llctop knobs list
llctop knobs list --json > /tmp/knobs.json
lab_file knobs_json /tmp/knobs.json
# The same with --read-only: domains estimated from topology (verbose may not be touched).
llctop --read-only knobs list --json > /tmp/knobs-ro.json
lab_file knobs_ro_json /tmp/knobs-ro.json

# 1. Feature flip, normal exit.
lab feature_before "$(feature TTWU_QUEUE)"
llctop live --source procfs --interval 500ms --duration 4s --set feature.TTWU_QUEUE=off \
  >/tmp/live1.out 2>&1 &
pid=$!
wait_for "feature TTWU_QUEUE" NO_TTWU_QUEUE
lab feature_during "$(feature TTWU_QUEUE)"
wait $pid
lab feature_after_exit "$(feature TTWU_QUEUE)"
lab_block live1 cat /tmp/live1.out

# 2. Feature flip, SIGTERM.
llctop live --source procfs --interval 500ms --set feature.TTWU_QUEUE=off >/tmp/live2.out 2>&1 &
pid=$!
wait_for "feature TTWU_QUEUE" NO_TTWU_QUEUE
lab feature_during_term "$(feature TTWU_QUEUE)"
kill -TERM $pid
wait $pid && lab term_rc 0 || lab term_rc $?
lab feature_after_term "$(feature TTWU_QUEUE)"
lab_block live2 cat /tmp/live2.out

# 3. relax_domain_level: watch the domains' flags (verbose on for the observer).
echo Y > $SCHED/verbose
lab domain0_name "$(cat $SCHED/domains/cpu0/domain0/name)"
lab domain1_name "$(cat $SCHED/domains/cpu0/domain1/name)"
lab domain0_flags_before "$(flags 0)"
lab domain1_flags_before "$(flags 1)"
for value in 0 llc; do
  # A file of its own: the shell truncates a reused one only once the job has started.
  out=/tmp/relax_${value}.out
  llctop live --source procfs --interval 500ms --set relax_domain_level=$value >$out 2>&1 &
  pid=$!
  # The change is made (or refused) before the first line of numbers.
  wait_line $out ' #0 ' $pid
  lab relax_${value}_value "$(cat /sys/fs/cgroup/cpuset/cpuset.sched_relax_domain_level 2>/dev/null)"
  lab domain0_flags_${value} "$(flags 0)"
  lab domain1_flags_${value} "$(flags 1)"
  kill -TERM $pid 2>/dev/null || true
  wait $pid && lab relax_${value}_rc 0 || lab relax_${value}_rc $?
  lab_block relax_${value}_out cat $out
  lab domain0_flags_after_${value} "$(flags 0)"
  lab domain1_flags_after_${value} "$(flags 1)"
done
lab relax_after "$(cat /sys/fs/cgroup/cpuset/cpuset.sched_relax_domain_level 2>/dev/null)"
echo N > $SCHED/verbose

# 4. numa_balancing.
lab numa_before "$(cat /proc/sys/kernel/numa_balancing)"
llctop live --source procfs --interval 500ms --set numa_balancing=0 >/tmp/numa.out 2>&1 &
pid=$!
wait_line /tmp/numa.out '^llctop: numa_balancing: ' $pid
lab numa_during "$(cat /proc/sys/kernel/numa_balancing)"
kill -TERM $pid
wait $pid || true  # 143: stopped by SIGTERM
lab numa_after "$(cat /proc/sys/kernel/numa_balancing)"
lab_block numa_out cat /tmp/numa.out
lab journal "$(cat /run/llctop/journal.json 2>/dev/null | tr -d ' \n')"
