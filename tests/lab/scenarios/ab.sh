# A/B experiments in the guest (issue "Experiments"), 8-vCPU shape.
#  - 6.1: `llctop ab relax_domain_level=-1,1` under spinners and short sleepers (the
#    wake-heavy load of newidle.sh): newidle balancing above the LLC should fall with 1;
#    then the same experiment stopped by SIGTERM after its first flip.
#  - 7.2: `llctop ab llc_balancing.enabled=1,0` while two threads share a working set
#    (aggr_tolerance raised by the lab so the kernel gathers them at all, put back after).
# The knob's value is read before, during (SIGTERM case) and after.

SCHED=/sys/kernel/debug/sched
echo 1 > /proc/sys/kernel/sched_schedstats
mount -t tmpfs cgroup /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/cpuset
mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset 2>/dev/null || true
RELAX=/sys/fs/cgroup/cpuset/cpuset.sched_relax_domain_level
LLC=$SCHED/llc_balancing

pids=""
if [ -e $RELAX ]; then
  for i in 1 2 3 4; do (while :; do :; done) & pids="$pids $!"; done
  for i in 1 2 3 4 5 6; do (while :; do usleep 2000; done) & pids="$pids $!"; done
  lab knob_before "$(cat $RELAX)"
  # 8 rounds: a 2 s TCG window of A can hold no newidle balancing above the LLC at all;
  # with 4 rounds one such window kept the rank test above p = 0.05 (p = 0.14 with A
  # 8.2/s against B 0), with 6 two did at the DIE level (p = 0.061).
  llctop --interval 500ms --source procfs ab relax_domain_level=-1,1 --window 2s \
    --warmup 500ms --rounds 8 --json -o /tmp/ab.jsonl.gz >/tmp/ab.json 2>/tmp/ab.err
  lab ab_rc $?
  lab knob_after "$(cat $RELAX)"
  # Stopped after the first flip (window 2 runs with 1).
  llctop --interval 500ms --source procfs ab relax_domain_level=-1,1 --window 2s \
    --warmup 500ms --rounds 4 -o /tmp/term.jsonl >/tmp/term.out 2>/tmp/term.err &
  t=$!
  wait_line /tmp/term.err 'relax_domain_level: -1 -> 1' "$t"
  lab knob_during_term "$(cat $RELAX)"
  kill -TERM "$t"
  wait "$t" && lab term_rc 0 || lab term_rc $?
  lab knob_after_term "$(cat $RELAX)"
  gzip /tmp/term.jsonl
  lab_file term_recording /tmp/term.jsonl.gz
elif [ -d $LLC ]; then
  lab aggr_before "$(cat $LLC/aggr_tolerance)"
  echo 100 > $LLC/aggr_tolerance
  lab knob_before "$(cat $LLC/enabled)"
  llctop-workload share 2 600 >/dev/null &
  pids="$pids $!"
  llctop --interval 500ms --source bpf ab llc_balancing.enabled=1,0 --window 3s \
    --warmup 1s --rounds 4 --json -o /tmp/ab.jsonl.gz >/tmp/ab.json 2>/tmp/ab.err
  lab ab_rc $?
  lab knob_after "$(cat $LLC/enabled)"
  echo 1 > $LLC/aggr_tolerance
fi
kill $pids 2>/dev/null || true
lab_block ab_json cat /tmp/ab.json
lab_block ab_err cat /tmp/ab.err
lab_file ab_recording /tmp/ab.jsonl.gz
lab_block compare llctop report --compare /tmp/ab.jsonl.gz
