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
for f in /tmp/hop1.out /tmp/hop2.out; do
  n=0
  until grep -q ready "$f"; do usleep 20000; n=$((n + 1)); [ $n -lt 500 ] || exit 1; done
done
lab hop_xnode_pid "$hop1"
lab hop_llc_pid "$hop2"

llctop record --source bpf -o /tmp/bpf.jsonl --interval 1s 2>/tmp/record.err &
rec=$!
snaps() { grep -c '"type":"snapshot"' /tmp/bpf.jsonl 2>/dev/null || true; }
wait_snaps() { # wait_snaps N: until the recording holds N snapshots (120 s at most)
  n=0
  until [ "$(snaps)" -ge "$1" ]; do
    kill -0 "$rec" 2>/dev/null || { cat /tmp/record.err; exit 1; }
    usleep 50000; n=$((n + 1)); [ $n -lt 2400 ] || exit 1
  done
}
wait_snaps 1
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
wait_snaps $(($(snaps) + 2))
kill -TERM "$rec"
wait "$rec" || { cat /tmp/record.err; exit 1; }
cat /tmp/record.err
gzip /tmp/bpf.jsonl
lab_file bpf_recording /tmp/bpf.jsonl.gz
