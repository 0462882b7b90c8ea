# BPF scenario: llctop's BPF source records while
#  - a process pinned to cpu0 hops 100 times to cpu2 and back (other LLC, other node),
#  - a process pinned to cpu0 hops 100 times to cpu1 and back (same LLC),
#  - a process starts 4 threads allowed only on cpus 0,2 (one CPU per LLC): the stream
#    placement case of shared/seeds/001 in miniature.
# The hoppers pin themselves and wait on a pipe before the recording starts, so their
# only migrations are the counted hops.

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

llctop record --source bpf -o /tmp/bpf.jsonl.gz --interval 1s --duration 6s 2>/tmp/record.err &
rec=$!
sleep 2
echo go >&3
wait "$hop1"
echo go >&4
wait "$hop2"
llctop-workload pinned-threads 0,2 4 0.5 &
threads=$!
lab pinned_threads_pid "$threads"
wait "$threads"
wait "$rec" || { cat /tmp/record.err; exit 1; }
cat /tmp/record.err
lab_file bpf_recording /tmp/bpf.jsonl.gz
