# Which processes share data (issue "CAS inside", item 5), 7.2 on the 8-vCPU shape (LLC i
# is CPUs 2i and 2i+1). The construction: `shm-pair 16` — a memfd of 16 MiB mapped shared
# and written by a process and its forked child — with the parent on LLC 0 and the child
# moved to LLC 2 by affinity; beside it an unrelated busy pair, two spinners on LLCs 1 and
# 3 that share nothing. llctop records with the BPF source. The oracle: the workload's own
# pids and size, the guest's /proc/PID/maps of the pair (the memfd in both), and the
# affinity each was given — never llctop's code.
lab_block topology llctop topology --json
record_start /tmp/sh.jsonl --source bpf --interval 1s
record_wait 1
taskset -c 0,1 llctop-workload shm-pair 16 40 >/tmp/pair.out &
pair=$!
until [ -s /tmp/pair.out ]; do usleep 50000; done
lab pair "$(head -1 /tmp/pair.out)"
child=$(head -1 /tmp/pair.out | cut -d' ' -f3)
taskset -a -p -c 4,5 "$child" >/dev/null
lab_block maps_parent grep memfd "/proc/$(head -1 /tmp/pair.out | cut -d' ' -f2)/maps"
lab_block maps_child grep memfd "/proc/$child/maps"
llctop-workload spin 2 40 >/dev/null &
s1=$!
llctop-workload spin 6 40 >/dev/null &
s2=$!
lab spinners "$s1 $s2"
# Twelve snapshots after the child moved (the sharing pairs are read every fifth).
record_wait $(($(record_snaps) + 12))
kill "$pair" "$child" "$s1" "$s2" 2>/dev/null || true
wait "$pair" "$s1" "$s2" 2>/dev/null || true
record_stop
lab_file share_recording /tmp/sh.jsonl.gz
lab_block report llctop report /tmp/sh.jsonl.gz
