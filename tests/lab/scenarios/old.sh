# Old-kernel scenario (Debian 11's 5.10: no task-local storage, no atomics that fetch, no
# bpf_loop): llctop's BPF source records while
#  - a process pinned to cpu0 hops 100 times to cpu2 and back (other LLC, other node),
#  - a process pinned to cpu0 hops 100 times to cpu1 and back (same LLC),
#  - two spinners pinned to cpu1 wait for each other for 2 s (each prints its own
#    run_delay: the kernel's count of its waits, read by itself),
#  - a process starts 4 threads allowed on cpus 0,2 (placements with their idle CPUs).
# The hoppers pin themselves and wait on a pipe before the recording starts. Every step
# waits for an event, never for time.

mkfifo /tmp/go1 /tmp/go2
exec 3<>/tmp/go1 4<>/tmp/go2
llctop-workload hop 0 2 100 <&3 >/tmp/hop1.out &
hop1=$!
llctop-workload hop 0 1 100 <&4 >/tmp/hop2.out &
hop2=$!
for f in /tmp/hop1.out /tmp/hop2.out; do wait_line "$f" ready; done
lab hop_xnode_pid "$hop1"
lab hop_llc_pid "$hop2"

record_start /tmp/old.jsonl --source bpf --interval 1s
record_wait 1
echo go >&3
wait "$hop1"
echo go >&4
wait "$hop2"
# Each sleeps 500 ms after its spin before it reads its own schedstat: the other has
# stopped too, so no wait follows the read (the full lab once saw spin1 wait 22.6 ms
# behind spin2 after its read: 2.26% more in the recording than the kernel said).
llctop-workload spin 1 2 500 >/tmp/spin1.out &
spin1=$!
llctop-workload spin 1 2 500 >/tmp/spin2.out &
spin2=$!
lab spin1_pid "$spin1"
lab spin2_pid "$spin2"
wait "$spin1" "$spin2"
lab_block spin1_out cat /tmp/spin1.out
lab_block spin2_out cat /tmp/spin2.out
llctop-workload pinned-threads 0,2 4 0.5 &
threads=$!
lab pinned_threads_pid "$threads"
wait "$threads"
record_wait $(($(record_snaps) + 2))
record_stop
cat /tmp/record.err
lab_file old_recording /tmp/old.jsonl.gz
