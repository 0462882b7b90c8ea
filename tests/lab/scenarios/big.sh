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

record_start /tmp/big.jsonl --source bpf --interval 1s
record_wait 1
lab record_cost0 "$(record_cost)"
for k in $hoppers; do echo go > /tmp/go$k; done
for k in $hoppers; do wait_line /tmp/hop$k.out done; done
for k in $hoppers; do lab "hop_${k}_done" "$(tail -n 1 /tmp/hop$k.out)"; done
record_wait 31
lab record_cost1 "$(record_cost)"
record_stop
lab_file big_recording /tmp/big.jsonl.gz

# One scrape of `llctop serve` at this size: its series, counted on the host.
ip link set lo up
llctop serve --listen 127.0.0.1:9464 --interval 1s >/tmp/serve.log 2>&1 &
serve=$!
n=0
until wget -q -O /tmp/metrics http://127.0.0.1:9464/metrics 2>/dev/null && grep -q '^llctop_cpu_busy_seconds_total' /tmp/metrics; do
  n=$((n + 1))
  [ $n -lt 600 ] || break
  usleep 200000
done
kill $serve
lab_block metrics cat /tmp/metrics
