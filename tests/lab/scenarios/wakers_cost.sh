# By hand: what `--wakeups`' sched_waking program costs beside an empty program on the
# same kind of event (kernel BPF statistics), in the 7.2 guest — under TCG, so only the
# ratio means anything. Two windows: wakeups between processes (two pipe pairs, each a
# process and its child, split across LLCs: the `wake_pairs` path), then between two
# threads of one process (two thread pairs: the `thread_pairs` path).
sysctl -w kernel.bpf_stats_enabled=1 >/dev/null
record_start /tmp/wc.jsonl --source bpf --interval 1s --wakeups
record_wait 2
taskset -c 2 llctop-workload pipe-pair 30 >/tmp/pp1.out &
taskset -c 4 llctop-workload pipe-pair 30 >/tmp/pp2.out &
until [ -s /tmp/pp1.out ] && [ -s /tmp/pp2.out ]; do usleep 50000; done
taskset -p -c 6 "$(head -1 /tmp/pp1.out | cut -d' ' -f3)" >/dev/null
taskset -p -c 0 "$(head -1 /tmp/pp2.out | cut -d' ' -f3)" >/dev/null
lab_block floor llctop-workload bpf-floor 20 "$rec_pid"
wait_line /tmp/pp1.out rounds
wait_line /tmp/pp2.out rounds
lab_block pp cat /tmp/pp1.out /tmp/pp2.out
# Each thread pair's threads on two LLCs (the workload prints `threads PID MAIN OTHER`).
taskset -c 2 llctop-workload thread-pair 30 >/tmp/tp1.out &
taskset -c 4 llctop-workload thread-pair 30 >/tmp/tp2.out &
until [ -s /tmp/tp1.out ] && [ -s /tmp/tp2.out ]; do usleep 50000; done
taskset -p -c 6 "$(head -1 /tmp/tp1.out | cut -d' ' -f4)" >/dev/null
taskset -p -c 0 "$(head -1 /tmp/tp2.out | cut -d' ' -f4)" >/dev/null
lab_block floor_threads llctop-workload bpf-floor 20 "$rec_pid"
wait_line /tmp/tp1.out rounds
wait_line /tmp/tp2.out rounds
lab_block tp cat /tmp/tp1.out /tmp/tp2.out
record_stop
