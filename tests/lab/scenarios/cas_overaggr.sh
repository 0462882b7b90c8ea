# Over-aggregation (issue "CAS inside", item 4), 7.2 on the 8-vCPU shape (an L3 per SMT
# pair: LLC i is CPUs 2i and 2i+1; LLCs 0-1 on node 0, 2-3 on node 1). llctop records
# with the BPF source, llc_balancing.aggr_tolerance 100 (so that `share 2` gets a
# preferred LLC, as in cache_aware.sh) and overaggr_pct 1000: the kernel then deems no
# LLC too busy to gather onto and refuses moves off a preferred LLC
# (kernel/sched/fair.c: fits_llc_capacity, can_migrate_llc) — until balancing has failed
# cache_nice_tries + 1 times (migrate_degrades_llc). The construction: once the kernel
# has gathered the two worker threads, two spinners pinned to that LLC's two CPUs
# saturate it — four runnable threads on two CPUs while the node's other LLC idles.
# What 7.2 does then is the near miss the advisor must not alarm on: its balance-failure
# escape moves the workers off (2026-11-28: within the first snapshot, to the node's
# other LLC). (`share 4`, four threads to gather onto two CPUs, was not gathered in
# 600 s under TCG.) The oracle is the guest's own view: where the workers ran
# (/proc/PID/task/TID/stat field 39) at every snapshot of the stretch.
lab_block topology llctop topology --json
record_start /tmp/oa.jsonl --source bpf --interval 1s \
  --set llc_balancing.aggr_tolerance=100 --set llc_balancing.overaggr_pct=1000
record_wait 1
llctop-workload share 2 150 >/tmp/share.out &
share=$!
lab oa_share_pid "$share"
lab oa_gathered "$(wait_gathered "$share" 3)"
before=$(task_cpus "$share")
lab oa_workers_before "$before"
llc=$(($(echo "$before" | cut -d' ' -f1 | cut -d: -f2) / 2))
lab oa_pref_llc "$llc"
llctop-workload spin $((llc * 2)) 600 >/dev/null &
h1=$!
llctop-workload spin $((llc * 2 + 1)) 600 >/dev/null &
h2=$!
# From the snapshot the spinners started in, ten snapshots; the workers' CPUs after each.
cpus_after_snapshots "$share" 10 oa_workers
kill "$h1" "$h2" "$share" 2>/dev/null || true
wait "$h1" "$h2" "$share" 2>/dev/null || true
record_wait $(($(record_snaps) + 1))
record_stop
lab_file oa_recording /tmp/oa.jsonl.gz
lab_block report llctop report /tmp/oa.jsonl.gz
