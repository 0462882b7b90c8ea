# Foundation scenario: topology as llctop sees it, /proc/schedstat under load, and a
# recording that the host replays. Runs inside the lab guest (busybox sh, set -e).

lab_block topology llctop topology --json
lab_block tree llctop topology

# Load-balance counters only advance with schedstats on.
echo 1 > /proc/sys/kernel/sched_schedstats
lab schedstat_version "$(sed -n 's/^version //p' /proc/schedstat)"

# Three spinners on four CPUs plus short sleepers: busy, idle and newidle balancing.
pids=""
for i in 1 2 3; do (while :; do :; done) & pids="$pids $!"; done
for i in 1 2 3 4; do (while :; do usleep 3000; done) & pids="$pids $!"; done

llctop record -o /tmp/rec.jsonl.gz --duration 4s --interval 1s 2>&1
kill $pids
lab_file recording /tmp/rec.jsonl.gz
lab_block report llctop report /tmp/rec.jsonl.gz
