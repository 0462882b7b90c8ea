# The users' scale (shape 8s8llc-smt: 64 vCPUs, 8 LLCs of 4 cores x 2 threads, two
# nodes of four LLCs; by hand 32s32llc-smt: 256 vCPUs). The guest's own sysfs for every CPU (the topology's oracle); then
# 32 hoppers, one per LLC and distance class — SMT sibling (8L <-> 8L+1), same LLC
# (8L <-> 8L+2), another LLC of the node (8L <-> the next LLC's first CPU), the other
# node (8L <-> 8L+32 mod 64) — pinned and waiting on a fifo before the recording starts,
# so their only migrations are their hops; a recording of at least 30 intervals with
# every CPU; `llctop serve` scraped once. Every step waits for an event, never for time.

lab_block topology llctop topology --json
lab_block tree llctop topology
lab_block sysfs sh -c 'for d in /sys/devices/system/cpu/cpu[0-9]*; do
  c=${d##*cpu}
  echo "cpu$c l3 $(cat $d/cache/index3/shared_cpu_list) smt $(cat $d/topology/thread_siblings_list) l3kb $(cat $d/cache/index3/size)"
done; for n in /sys/devices/system/node/node[0-9]*; do echo "${n##*/} $(cat $n/cpulist)"; done'

# Sized from the guest (LLCs of 8 CPUs, two nodes): 64 vCPUs in CI, more by hand.
ncpu=$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)
nllc=$((ncpu / 8))
per_node=$((nllc / 2))
hoppers=""
for L in $(seq 0 $((nllc - 1))); do
  a=$((8 * L))
  next=$(((L + 1) % per_node + per_node * (L / per_node)))
  for pair in "smt $((a + 1))" "llc $((a + 2))" "xllc $((8 * next))" "xnode $(((a + ncpu / 2) % ncpu))"; do
    set -- $pair
    k="$1$L"
    mkfifo /tmp/go$k
    exec 3<>/tmp/go$k
    llctop-workload hop $a $2 10 <&3 >/tmp/hop$k.out &
    lab "hop_${k}_pid" $!
    lab "hop_${k}_cpus" "$a $2"
    hoppers="$hoppers $k"
    exec 3<&-
  done
done
lab hoppers "$hoppers"
for k in $hoppers; do wait_line /tmp/hop$k.out ready; done

# --top 512: every process a row (the default 64 busiest leave hoppers out of the
# intervals where the 64 migration/N stoppers and the rest ran more than they did: a
# hopper's count then read 5 or 7 of its 10 hops — counted, but in no row).
record_start /tmp/big.jsonl --source bpf --interval 1s --top 512
record_wait 1
lab record_cost0 "$(record_cost)"
for k in $hoppers; do echo go > /tmp/go$k; done
for k in $hoppers; do wait_line /tmp/hop$k.out done; done
for k in $hoppers; do lab "hop_${k}_done" "$(tail -n 1 /tmp/hop$k.out)"; done
record_wait 31
lab record_cost1 "$(record_cost)"
# The bpf() calls the recorder makes per interval at this size, counted by strace
# attached to all its threads for at least 10 intervals (after record_cost1: strace's
# stops are not the recorder's cost).
strace -f -c -e trace=bpf -o /tmp/strace.out -p "$rec_pid" 2>/tmp/strace.err &
st=$!
wait_line /tmp/strace.err attached "$st"
s0=$(record_snaps)
record_wait $((s0 + 10))
s1=$(record_snaps)
kill -INT "$st"
wait "$st" || true
lab strace_snaps "$s0 $s1 $(record_snaps)"
lab_block strace cat /tmp/strace.out /tmp/strace.err
record_stop
lab_file big_recording /tmp/big.jsonl.gz

# The kernel's preferred LLC with 8 LLCs (7.2): two threads sharing a working set start
# on LLC 5 alone (CPUs 40-47: its first CPU is not its id), with aggregation unlimited
# for the recording (llc_balancing.aggr_tolerance=100, as in cache_aware.sh). Once llctop
# shows the kernel's preference for them with the threads running there for three
# snapshots, they may run anywhere; the workload prints where its threads ran (the
# oracle) when it ends. The same recording counts which process wakes which
# (`--wakeups`, at 64 vCPUs): a pipe pair across the nodes, the parent on CPU 8 (LLC 1),
# the child moved to CPU 48 (LLC 6), prints its round trips and each side's sleeps.
K=/sys/kernel/debug/sched/llc_balancing
record_start /tmp/pref.jsonl --source bpf --interval 1s --set llc_balancing.aggr_tolerance=100 --wakeups
record_wait 1
taskset -c 8 llctop-workload pipe-pair 10 >/tmp/bigpp.out &
pp=$!
until [ -s /tmp/bigpp.out ]; do usleep 50000; done
lab pipe_pair "$(head -1 /tmp/bigpp.out)"
taskset -p -c 48 "$(head -1 /tmp/bigpp.out | cut -d' ' -f3)" >/dev/null
taskset -c 40-47 llctop-workload share 2 40 >/tmp/share.out &
share=$!
lab share_pid "$share"
lab gathered_pinned "$(wait_gathered "$share" 3)"
lab widened_after_snapshots "$(record_snaps)"
taskset -a -p -c 0-$((ncpu - 1)) "$share" >/dev/null || true
wait "$share"
wait_line /tmp/bigpp.out rounds "$pp"
lab pipe_rounds "$(grep rounds /tmp/bigpp.out)"
record_wait $(($(record_snaps) + 2))
record_stop
lab aggr_after "$(cat $K/aggr_tolerance)"
lab_block share_out cat /tmp/share.out
lab_file pref_recording /tmp/pref.jsonl.gz

# Why no preference at 64 vCPUs (7.2; LLCs of 4 cores x 2 threads; aggr_tolerance as the
# kernel has it, 1): `share 6` — six running threads x 2 SMT siblings do not fit an LLC's
# 8 CPUs (the kernel's rule also keeps a 25% margin) — and `spin` (one thread). Oracles: the guest's own /proc/PID/status Threads:,
# and its sysfs (above: each L3 and its SMT siblings).
lab why_tolerance "$(cat $K/aggr_tolerance)"
record_start /tmp/why.jsonl --source bpf --interval 1s
record_wait 1
llctop-workload spin 3 60 >/tmp/why1.out &
one=$!
llctop-workload share 6 60 >/tmp/why6.out &
six=$!
lab why_one_pid "$one"
lab why_six_pid "$six"
wait_line /tmp/why1.out ready "$one"
# From two snapshots on (the kernel's average of running threads settles at its second
# scan), five of them.
from=$(($(record_snaps) + 2))
record_wait $((from + 5))
lab why_snaps "$from $(record_snaps)"
lab why_one_threads "$(awk '/^Threads:/ {print $2}' /proc/$one/status)"
lab why_six_threads "$(awk '/^Threads:/ {print $2}' /proc/$six/status)"
kill "$one" "$six" 2>/dev/null || true
wait "$one" "$six" 2>/dev/null || true
record_stop
lab_file why_recording /tmp/why.jsonl.gz

# Over-aggregation at 64 vCPUs (cas_overaggr.sh's construction at this size; the keys
# `oa_*`, checked by common::lab::check_over_aggregation): llctop records with
# aggr_tolerance 100 and overaggr_pct 1000 (the kernel deems no LLC too busy to gather
# onto and refuses moves off a preferred LLC until balancing has failed cache_nice_tries
# + 1 times). `share 2` starts on LLC 5 alone (CPUs 40-47) until llctop shows the
# kernel's preference there for 3 snapshots, then may run anywhere; eight spinners pinned
# to LLC 5's eight CPUs saturate it while the other 56 CPUs idle. The oracle is the
# guest's own view: where the workers ran (/proc/PID/task/TID/stat field 39) after each
# of ten snapshots.
record_start /tmp/oa.jsonl --source bpf --interval 1s \
  --set llc_balancing.aggr_tolerance=100 --set llc_balancing.overaggr_pct=1000
record_wait 1
taskset -c 40-47 llctop-workload share 2 300 >/dev/null &
share=$!
lab oa_share_pid "$share"
lab oa_gathered "$(wait_gathered "$share" 3)"
taskset -a -p -c 0-$((ncpu - 1)) "$share" >/dev/null || true
before=$(task_cpus "$share")
lab oa_workers_before "$before"
lab oa_pref_llc 5
spinners=""
for c in 40 41 42 43 44 45 46 47; do
  llctop-workload spin "$c" 600 >/dev/null &
  spinners="$spinners $!"
done
cpus_after_snapshots "$share" 10 oa_workers
# shellcheck disable=SC2086
kill $spinners "$share" 2>/dev/null || true
# shellcheck disable=SC2086
wait $spinners "$share" 2>/dev/null || true
record_wait $(($(record_snaps) + 1))
record_stop
lab_file oa_recording /tmp/oa.jsonl.gz

# `llctop trace` at this size: its track tree, and one hopper across the nodes (LLC 1 to
# LLC 5) in it, counted by the hopper itself.
mkfifo /tmp/gotrace
exec 3<>/tmp/gotrace
llctop-workload hop 8 40 10 <&3 >/tmp/hoptrace.out &
hop=$!
exec 3<&-
wait_line /tmp/hoptrace.out ready
lab trace_hop_pid "$hop"
llctop trace -o /tmp/big.pftrace --interval 1s >/tmp/trace.out 2>/tmp/trace.err &
tp=$!
wait_line /tmp/trace.err "tracing to" "$tp"
echo go > /tmp/gotrace
wait "$hop"
lab_block trace_hop_out cat /tmp/hoptrace.out
kill -INT "$tp"
wait "$tp" || true
lab_block trace_err cat /tmp/trace.err
lab_file trace /tmp/big.pftrace

# One scrape of `llctop serve` at this size, once it has judged 3 snapshots (the
# balancing and NUMA deltas need two): its series, counted on the host against README's
# formula, whose terms come from the guest's own files (sysfs above, schedstat's domain
# levels, /proc/vmstat's NUMA counters) and llctop's knob list.
lab_block schedstat_levels awk '/^cpu/ {n++} n == 1 && /^domain/ {d++} END {print d}' /proc/schedstat
lab_block vmstat_numa grep -cE '^(numa_|pgmigrate_|pgpromote_|pgdemote_)' /proc/vmstat
lab_block knobs llctop knobs list --json
ip link set lo up
llctop serve --listen 127.0.0.1:9464 --interval 1s >/tmp/serve.log 2>&1 &
serve=$!
n=0
until wget -q -O /tmp/metrics http://127.0.0.1:9464/metrics 2>/dev/null && grep -qE '^llctop_snapshots_total [3-9]' /tmp/metrics; do
  n=$((n + 1))
  [ $n -lt 600 ] || break
  usleep 200000
done
kill $serve
lab_block metrics cat /tmp/metrics
