# Which processes share data (issue "CAS inside", item 5), 7.2 on the 8-vCPU shape (LLC i
# is CPUs 2i and 2i+1). llctop records with the BPF source and `--wakeups`. The
# constructions:
#  - `shm-pair 16` — a memfd of 16 MiB mapped shared and written by a process and its
#    forked child — with the parent on LLC 0 and the child moved to LLC 2 by affinity;
#  - `pipe-pair 15` — a process and its child passing a byte back and forth through two
#    pipes — the parent on CPU 3 (LLC 1), the child moved to CPU 7 (LLC 3);
#  - `thread-pair 15` — the same ping-pong between two threads of one process, on CPUs 0–1;
#  - beside them an unrelated busy pair, two spinners on CPUs 2 and 6 that share nothing,
#    and `tick 5` on CPU 2 with the first spinner: a sleeper woken only by a timer
#    interrupt, which lands while the spinner runs — no process wakes it.
# The oracle: the workloads' own pids, size, round trips and voluntary switches
# (getrusage), the guest's /proc/PID/maps of the memfd pair, and the affinity each was
# given — never llctop's code.
lab_block topology llctop topology --json
record_start /tmp/sh.jsonl --source bpf --interval 1s --wakeups
record_wait 1
taskset -c 0,1 llctop-workload shm-pair 16 90 >/tmp/pair.out &
pair=$!
until [ -s /tmp/pair.out ]; do usleep 50000; done
lab pair "$(head -1 /tmp/pair.out)"
child=$(head -1 /tmp/pair.out | cut -d' ' -f3)
taskset -a -p -c 4,5 "$child" >/dev/null
lab_block maps_parent grep memfd "/proc/$(head -1 /tmp/pair.out | cut -d' ' -f2)/maps"
lab_block maps_child grep memfd "/proc/$child/maps"
llctop-workload spin 2 90 >/tmp/s1.out &
s1=$!
llctop-workload spin 6 90 >/tmp/s2.out &
s2=$!
lab spinners "$s1 $s2"
# The ticker starts once both spinners are pinned and only spin (no system call until
# their end): a run of 2026-11-29 counted one wakeup of the ticker by the spinner on its
# CPU in task context. Spinning, the spinner enters the kernel only by interrupts; the
# two were started together, each exec'ing the same binary and setting its affinity,
# where one can wake the other (a lock one holds while the other waits on it).
wait_line /tmp/s1.out ready "$s1"
wait_line /tmp/s2.out ready "$s2"
taskset -c 2 llctop-workload tick 5 20 >/tmp/tick.out &
ticker=$!
lab ticker "$ticker"
taskset -c 3 llctop-workload pipe-pair 15 >/tmp/pp.out &
pp=$!
until [ -s /tmp/pp.out ]; do usleep 50000; done
lab pipe_pair "$(head -1 /tmp/pp.out)"
taskset -p -c 7 "$(head -1 /tmp/pp.out | cut -d' ' -f3)" >/dev/null
taskset -c 0,1 llctop-workload thread-pair 15 >/tmp/tp.out &
tp=$!
until [ -s /tmp/tp.out ]; do usleep 50000; done
lab thread_pair "$(head -1 /tmp/tp.out)"
# Twelve snapshots after the children moved (the sharing pairs are read every fifth),
# and the pipe pair's end with two snapshots after it (its last wakeups read). The memfd
# pair and the spinners outlast all that (90 s; killed here): a loaded guest stretched it
# past their 40 s once, and the last read of the maps had no pair left.
record_wait $(($(record_snaps) + 12))
wait_line /tmp/pp.out rounds "$pp"
lab pipe_rounds "$(grep rounds /tmp/pp.out)"
wait_line /tmp/tp.out rounds "$tp"
lab thread_rounds "$(grep rounds /tmp/tp.out)"
wait_line /tmp/tick.out ticks "$ticker"
lab ticks "$(grep ticks /tmp/tick.out)"
record_wait $(($(record_snaps) + 2))
kill "$pair" "$child" "$s1" "$s2" 2>/dev/null || true
wait "$pair" "$s1" "$s2" "$pp" "$tp" "$ticker" 2>/dev/null || true
record_stop
lab_file share_recording /tmp/sh.jsonl.gz
lab_block report llctop report /tmp/sh.jsonl.gz
# The experiment a candidate group suggests (`ab colocate`): each window's command prints
# where the kernel lets it run, then makes a short pipe pair (parent and child inherit the
# set). The oracle: the guest's own sysfs — the L3 those CPUs share, and what is online.
# Recorded: each window's command processes and their waits per run (the pair's own
# schedstat, printed at its end, is that metric's oracle). `--top 1`: the experiment's own
# processes have rows whatever their rank (src/procgroup.rs), the one busiest beside them
# (before that, a command's process outside a snapshot's busiest rows was missing from its
# figures: seen once, the first window's slow pair behind the guest's kernel threads as
# llctop started); and a pair of 3 s after a warm-up snapshot, seen alive in several
# snapshots (with no warm-up the first window's first snapshot is the one that stretches
# as llctop starts: once it held all of a slow pair's 3 s, its child born and gone within
# it).
llctop --interval 500ms --top 1 ab colocate=off,llc1 --window 1s --warmup 500ms --rounds 2 --json \
    -o /tmp/coloc.jsonl -- \
    sh -c 'grep Cpus_allowed_list /proc/self/status >&2; llctop-workload pipe-pair 3 >&2' \
    >/tmp/coloc.json 2>/tmp/coloc.err || true
lab_block colocate_err cat /tmp/coloc.err
lab_block colocate_verdict cat /tmp/coloc.json
gzip /tmp/coloc.jsonl
lab_file colocate_recording /tmp/coloc.jsonl.gz
# The same for two processes already running, named (`--pid`): a pipe pair started on its
# own; each window's figures are theirs, and each thread ends on the CPUs it had. It runs
# until killed after the experiment (600 s at most): a loaded host once stretched the
# experiment's start — its BPF load under TCG — past a 30 s pair, which was gone by the
# last window (CI-like full lab, 2026-11-29).
llctop-workload pipe-pair 600 >/tmp/named.out 2>&1 &
named=$!
until [ -s /tmp/named.out ]; do usleep 50000; done
lab named_pair "$(head -1 /tmp/named.out)"
set -- $(head -1 /tmp/named.out)
lab named_before "$(grep Cpus_allowed_list /proc/$2/status /proc/$3/status | tr '\n' ' ')"
llctop --interval 500ms --top 1 ab colocate=off,llc1 --pid "$2,$3" --window 1s --warmup 0s --rounds 2 \
    --json -o /tmp/named.jsonl >/tmp/named.json 2>/tmp/named.err || true
lab named_after "$(grep Cpus_allowed_list /proc/$2/status /proc/$3/status | tr '\n' ' ')"
kill "$named" 2>/dev/null || true
wait "$named" 2>/dev/null || true
lab_block named_err cat /tmp/named.err
gzip /tmp/named.jsonl
lab_file named_recording /tmp/named.jsonl.gz
lab_block online cat /sys/devices/system/cpu/online
for c in 0 1 2 3 4 5 6 7; do
    lab "l3_of_$c" "$(cat /sys/devices/system/cpu/cpu$c/cache/index3/shared_cpu_list)"
done
