# BPF scenario: llctop's BPF source records while
#  - a process pinned to cpu0 hops 100 times to cpu2 and back (other LLC, other node),
#  - a process pinned to cpu0 hops 100 times to cpu1 and back (same LLC),
#  - a process starts 4 threads allowed only on cpus 0,2 (one CPU per LLC): the stream
#    placement case of shared/seeds/001 in miniature.
# The hoppers pin themselves and wait on a pipe before the recording starts, so their
# only migrations are the counted hops. Every step waits for an event, never for time:
# the work starts once the recording has written its first snapshot (program attached,
# baseline taken) and the recording stops once two more snapshots followed the work.

mkfifo /tmp/go1 /tmp/go2
exec 3<>/tmp/go1 4<>/tmp/go2
llctop-workload hop 0 2 100 <&3 >/tmp/hop1.out &
hop1=$!
llctop-workload hop 0 1 100 <&4 >/tmp/hop2.out &
hop2=$!
for f in /tmp/hop1.out /tmp/hop2.out; do wait_line "$f" ready; done
lab hop_xnode_pid "$hop1"
lab hop_llc_pid "$hop2"

record_start /tmp/bpf.jsonl --source bpf --interval 1s
record_wait 1
echo go >&3
wait "$hop1"
echo go >&4
wait "$hop2"
llctop-workload pinned-threads 0,2 4 0.5 &
threads=$!
lab pinned_threads_pid "$threads"
wait "$threads"
# The snapshot being read now may have started before the work ended; the one after it
# cannot have.
record_wait $(($(record_snaps) + 2))
record_stop
cat /tmp/record.err
lab_file bpf_recording /tmp/bpf.jsonl.gz
