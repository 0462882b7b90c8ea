# lab-qemu: -numa dist,src=0,dst=1,val=32
# Trace scenario, 8-vCPU shape (2s4llc-smt): `llctop trace` while
#  1. three processes pinned to cpu0 hop 50 times to another CPU and back — cpu1 (its SMT
#     sibling), cpu2 (another LLC, same node), cpu4 (another node); they pin themselves
#     and wait on a pipe before the trace starts, so their only migrations in it are the
#     counted hops (each prints its own count: the workload's truth);
#  2. the pile-up starts of placement.sh (seeds/001): a process on cpu0 starts 6 threads
#     allowed on 0,2,4,6 (one CPU per LLC) while node 1 sits idle (SLIT 32: no fork
#     balancing across nodes, so they pile up on node 0's two), five times; each start
#     prints where each of its threads ran first.
# The trace comes back as a file; the host decodes it with Perfetto's own classes.

lab_block topology llctop topology --json

i=3
for to in 1 2 4; do
  mkfifo /tmp/go$to
  eval "exec $i<>/tmp/go$to"
  llctop-workload hop 0 $to 50 <&$i >/tmp/hop$to.out &
  eval "hop$to=$!"
  i=$((i + 1))
done
for f in /tmp/hop1.out /tmp/hop2.out /tmp/hop4.out; do wait_line "$f" ready; done
lab hop_smt_pid "$hop1"
lab hop_llc_pid "$hop2"
lab hop_node_pid "$hop4"

llctop trace -o /tmp/t.pftrace --interval 1s >/tmp/trace.out 2>/tmp/trace.err &
tp=$!
wait_line /tmp/trace.err "tracing to" "$tp"
echo go >&3
wait "$hop1"
echo go >&4
wait "$hop2"
echo go >&5
wait "$hop4"
lab_block hop_smt_out cat /tmp/hop1.out
lab_block hop_llc_out cat /tmp/hop2.out
lab_block hop_node_out cat /tmp/hop4.out

starts=""
for round in 1 2 3 4 5; do
  llctop-workload pinned-threads 0,2,4,6 6 1 >/tmp/s$round.out &
  lab "start${round}_pid" $!
  wait $!
  lab_block "start${round}_out" cat /tmp/s$round.out
  starts="$starts start$round"
done
lab starts "$starts"
# The advisor judges a start over the snapshots after it: the trace's collector takes one
# a second and writes none out to wait on, so this waits for four of them.
sleep 4
kill -INT "$tp"
wait "$tp" || true
lab_block trace_err cat /tmp/trace.err
lab_file trace /tmp/t.pftrace
