# Distances scenario, for the 8-vCPU shape (2s4llc-smt: an LLC per core, SMT siblings
# inside, two LLCs per node). Three processes pinned to cpu0 hop 100 times to another CPU
# and back — cpu1 (its SMT sibling), cpu2 (another LLC, same node), cpu4 (another node) —
# while llctop's BPF source records. The hoppers pin themselves and wait on a pipe before
# the recording starts, so their only migrations are the counted hops. Every step waits
# for an event, never for time. Also lists the knobs (llc_balancing on 7.2) and has one
# out-of-range llc_balancing value refused.

lab_block knobs_json llctop knobs list --json
# Validated before anything is written: a tolerance beyond what the kernel distinguishes.
K=/sys/kernel/debug/sched/llc_balancing
if [ -d $K ]; then
  llctop knobs set llc_balancing.aggr_tolerance 500 >/tmp/refused.out 2>&1 && lab refused_rc 0 || lab refused_rc $?
  lab aggr_after_refusal "$(cat $K/aggr_tolerance)"
  lab_block refused cat /tmp/refused.out
fi
lab_block topology llctop topology --json

i=3
for to in 1 2 4; do
  mkfifo /tmp/go$to
  eval "exec $i<>/tmp/go$to"
  llctop-workload hop 0 $to 100 <&$i >/tmp/hop$to.out &
  eval "hop$to=$!"
  i=$((i + 1))
done
for f in /tmp/hop1.out /tmp/hop2.out /tmp/hop4.out; do wait_line "$f" ready; done
lab hop_smt_pid "$hop1"
lab hop_llc_pid "$hop2"
lab hop_node_pid "$hop4"

record_start /tmp/dist.jsonl --source bpf --interval 1s
record_wait 1
lab record_cost0 "$(record_cost)"
echo go >&3
wait "$hop1"
echo go >&4
wait "$hop2"
echo go >&5
wait "$hop4"
record_wait $(($(record_snaps) + 2))
lab record_cost1 "$(record_cost)"
record_stop
lab_file distances_recording /tmp/dist.jsonl.gz
