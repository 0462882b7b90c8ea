# By hand: what `--wakeups`' sched_waking program costs beside an empty program on the
# same kind of event (kernel BPF statistics), in the 7.2 guest — under TCG, so only the
# ratio means anything. Two windows: wakeups between processes (two pipe pairs, each a
# process and its child, split across LLCs: the `wake_pairs` path), then between two
# threads of one process (two thread pairs: the `thread_pairs` path).
sysctl -w kernel.bpf_stats_enabled=1 >/dev/null
record_start /tmp/wc.jsonl --source bpf --interval 1s --wakeups
record_wait 2
# pairs NAME WORKLOAD FIELD: two 30 s WORKLOADs started on CPUs 2 and 4, each one's partner
# (field FIELD of its first line: the child, or the other thread) moved to CPUs 6 and 0 —
# another LLC; the empty programs beside llctop's for 20 s (block floor_NAME); the
# workloads' own ends (block NAME).
pairs() {
  taskset -c 2 llctop-workload "$2" 30 >"/tmp/$1-1.out" &
  taskset -c 4 llctop-workload "$2" 30 >"/tmp/$1-2.out" &
  until [ -s "/tmp/$1-1.out" ] && [ -s "/tmp/$1-2.out" ]; do usleep 50000; done
  taskset -p -c 6 "$(head -1 "/tmp/$1-1.out" | cut -d' ' -f"$3")" >/dev/null
  taskset -p -c 0 "$(head -1 "/tmp/$1-2.out" | cut -d' ' -f"$3")" >/dev/null
  lab_block "floor_$1" llctop-workload bpf-floor 20 "$rec_pid"
  wait_line "/tmp/$1-1.out" rounds
  wait_line "/tmp/$1-2.out" rounds
  lab_block "$1" cat "/tmp/$1-1.out" "/tmp/$1-2.out"
}
# `pair PARENT CHILD` / `threads PID MAIN OTHER`.
pairs pp pipe-pair 3
pairs tp thread-pair 4
record_stop
