//! What knobs mean: the descriptions, defaults and references llctop shows next to each
//! knob. This is documentation, not discovery — which knobs exist is always read from the
//! running kernel ([`super::registry`]); a name the kernel lists that is not here is still
//! shown, with a pointer to the kernel source instead of a description.

/// Description, reference and default of a knob (`None` entries are unknown).
pub struct Entry {
    pub description: &'static str,
    pub reference: Option<&'static str>,
    pub default: Option<&'static str>,
}

/// Sched features the seeds argued for that mainline never took: when this kernel does
/// not list one, the registry says so (with why), rather than leaving the operator to look.
pub const SEED_FEATURES: &[(&str, &str)] = &[(
    "SHARED_RUNQ",
    "not in this kernel's sched features: the per-LLC shared runqueue (David Vernet, [PATCH v3 6/7] sched: Implement shared runqueue in CFS, LKML 2023-08) was never merged",
)];

const fn e(
    description: &'static str,
    reference: Option<&'static str>,
    default: Option<&'static str>,
) -> Entry {
    Entry {
        description,
        reference,
        default,
    }
}

/// A sched feature (`kernel/sched/features.h`). Defaults are mainline 6.12–6.18 values.
pub fn feature(name: &str) -> Entry {
    match name {
        "PLACE_LAG" => e(
            "EEVDF: a task keeps its lag (how far behind or ahead of its fair share it was) across sleep, so sleeping cannot be used to gain service.",
            Some("sched/fair: Add lag based placement (EEVDF series), v6.6"),
            Some("on"),
        ),
        "PLACE_DEADLINE_INITIAL" => e(
            "EEVDF: a new task starts with half a slice of deadline, so a fork bomb cannot starve running tasks.",
            Some("EEVDF series, v6.6"),
            Some("on"),
        ),
        "PLACE_REL_DEADLINE" => e(
            "EEVDF: a migrating task keeps its relative deadline instead of being placed as a fresh wakeup.",
            Some("v6.12 (sched/eevdf: Delayed dequeue series)"),
            Some("on"),
        ),
        "RUN_TO_PARITY" => e(
            "EEVDF: a running task is not preempted by a wakeup before it reaches 0-lag or the end of its protected slice; fewer preemptions, more latency for the wakee.",
            Some("sched/eevdf: Curb wakeup-preemption, v6.6"),
            Some("on"),
        ),
        "PREEMPT_SHORT" => e(
            "EEVDF: a waking task with a shorter slice may preempt the current one (latency-sensitive tasks with sched_attr.sched_runtime).",
            Some("v6.12"),
            Some("on"),
        ),
        "NEXT_BUDDY" => e(
            "Prefer the task that was just woken as the next pick (cache-hot wakee); off by default because it hurts fairness.",
            None,
            Some("off"),
        ),
        "PICK_BUDDY" => e(
            "Honour the next-buddy hint (cfs_rq->next) when picking, if the buddy is eligible.",
            Some("v6.14 (backported to 6.12.y)"),
            Some("on"),
        ),
        "CACHE_HOT_BUDDY" => e(
            "Load balancing treats a buddy task as cache-hot (task_hot()), so it is less likely to be migrated off the LLC it warmed.",
            None,
            Some("on"),
        ),
        "DELAY_DEQUEUE" => e(
            "EEVDF: a task that sleeps while not eligible stays queued until it is, so it cannot shed negative lag by sleeping.",
            Some("sched/fair: Implement delayed dequeue, v6.12"),
            Some("on"),
        ),
        "DELAY_ZERO" => e(
            "With DELAY_DEQUEUE: clip a delayed task's lag to 0 when it is finally dequeued.",
            Some("v6.12"),
            Some("on"),
        ),
        "WAKEUP_PREEMPTION" => e(
            "Allow a waking task to preempt the running one at all.",
            None,
            Some("on"),
        ),
        "HRTICK" | "HRTICK_DL" => e(
            "Use a high-resolution timer to end a slice exactly (fair / deadline class) instead of at the next tick; costs timer interrupts.",
            None,
            Some("off"),
        ),
        "DOUBLE_TICK" => e("Dead code: removed in v6.13.", None, Some("off")),
        "NONTASK_CAPACITY" => e(
            "Subtract IRQ and steal time from a CPU's capacity, so load balancing sees how much is really left for tasks.",
            None,
            Some("on"),
        ),
        "TTWU_QUEUE" => e(
            "Remote wakeups are queued to the target CPU's wake list and completed there by IPI, instead of taking the remote runqueue lock; helps across LLCs.",
            Some("sched: Move the second half of ttwu() to the remote cpu (v3.0)"),
            Some("on"),
        ),
        "SIS_UTIL" => e(
            "Bound the wakeup idle-CPU scan in the LLC (select_idle_cpu) by the LLC's utilisation: a busy LLC is scanned less.",
            Some(
                "sched/fair: Introduce SIS_UTIL to search idle CPU based on sum of util_avg, v6.0",
            ),
            Some("on"),
        ),
        "SIS_PROP" => e(
            "Older bound of the wakeup idle-CPU scan by average idle time; replaced by SIS_UTIL.",
            None,
            Some("off"),
        ),
        "WARN_DOUBLE_CLOCK" => e(
            "Debug: warn when the rq clock is updated twice.",
            None,
            Some("off"),
        ),
        "RT_PUSH_IPI" => e(
            "RT: push overloaded RT tasks by IPI to the CPU that has them, avoiding rq-lock contention. The default differs by kernel (off on non-RT kernels in the 7.x era).",
            None,
            None,
        ),
        "RT_RUNTIME_SHARE" => e(
            "RT: let RT runqueues borrow runtime from each other.",
            None,
            Some("off"),
        ),
        "LB_MIN" => e(
            "Load balancing skips tasks with tiny load.",
            None,
            Some("off"),
        ),
        "ATTACH_AGE_LOAD" => e(
            "Age a task's PELT load when it is attached to a new cfs_rq.",
            None,
            Some("on"),
        ),
        "WA_IDLE" | "WA_WEIGHT" | "WA_BIAS" => e(
            "wake_affine: whether a wakeup may pull the wakee to the waker's CPU/LLC (WA_IDLE: if the waker's CPU is idle; WA_WEIGHT: by load; WA_BIAS: bias towards the previous CPU). Off keeps wakees where they were.",
            None,
            Some("on"),
        ),
        "UTIL_EST" => e(
            "Utilisation estimation: remember a task's utilisation across sleeps for placement and frequency.",
            None,
            Some("on"),
        ),
        "LATENCY_WARN" => e(
            "Warn when a reschedule stays pending longer than latency_warn_ms.",
            None,
            Some("off"),
        ),
        "NI_RANDOM" => e(
            "Newidle balancing is throttled by its own success rate: a CPU whose newidle pulls rarely succeed tries less often — the newidle migrations on small-CCX EPYC reported in K Prateek Nayak, [RFC PATCH] sched/debug: Allow overriding relax_domain_level at runtime, LKML 2025-04-30.",
            Some("sched/fair newidle rate limiting, Nov 2025 (v6.19 cycle; 6.18.5+)"),
            Some("on"),
        ),
        "SHARED_RUNQ" => e(
            "Per-LLC shared runqueue drained in newidle (David Vernet, [PATCH v3 6/7] sched: Implement shared runqueue in CFS, LKML 2023-08). Not in mainline; shown only because this kernel lists it.",
            Some("[PATCH v3 6/7] sched: Implement shared runqueue in CFS, LKML 2023-08-09"),
            Some("off"),
        ),
        "SCHED_CACHE" | "SCHED_CACHE_LB" | "SCHED_CACHE_WAKE" => e(
            "Cache-aware scheduling switch of the RFC series (Tim Chen, [RFC patch v3 00/20] Cache aware scheduling, LKML 2025-06-18); dropped before the v7.2 merge, which uses llc_balancing/ instead. Shown only because this kernel lists it.",
            Some("[RFC patch v3 00/20] Cache aware scheduling, LKML 2025-06-18"),
            None,
        ),
        _ => e(
            "No description in this llctop; see kernel/sched/features.h of this kernel.",
            None,
            None,
        ),
    }
}

/// A knob in `/sys/kernel/debug/sched/` or `/proc/sys/kernel/` by its id.
pub fn knob(id: &str) -> Entry {
    match id {
        "relax_domain_level" => e(
            "Clears SD_BALANCE_NEWIDLE and SD_BALANCE_WAKE on the sched domains at and above a level, so newidle balancing and wakeup placement stay within the lower domains (e.g. inside the LLC). -1 means no request (boot default). The fix for workloads that lose IPC to aggressive newidle migrations across small CCXs.",
            Some(
                "K Prateek Nayak, [RFC PATCH] sched/debug: Allow overriding relax_domain_level at runtime, LKML 2025-04-30",
            ),
            Some("-1"),
        ),
        "sched.verbose" => e(
            "Creates /sys/kernel/debug/sched/domains/ (per-CPU domain names, levels and flags) while on. llctop turns it on only to read the domains and puts it back.",
            None,
            Some("0"),
        ),
        "numa_balancing" => e(
            "Automatic NUMA balancing: 1 migrates tasks and memory towards each other (NUMA hinting faults), 2 promotes hot pages in tiered memory; 4 (only with per-cgroup support) turns it off by default and lets cgroups opt in through cpu.numa_load_balance.",
            Some(
                "Documentation/admin-guide/sysctl/kernel.rst; per-cgroup: Chen Yu, [RFC PATCH] sched/numa: Introduce per cgroup numa balance control, LKML 2025-02-25",
            ),
            None,
        ),
        "cgroup.numa_load_balance" => e(
            "Per-cgroup NUMA balancing opt-in (1) when numa_balancing has the cgroup bit (4). Proposed, not mainline: exists only on kernels that carry the patch.",
            Some(
                "Chen Yu, sched/numa: Introduce per cgroup numa balance control, LKML 2025-06-25 (v2)",
            ),
            Some("0"),
        ),
        "numa_balancing.scan_delay_ms" => e(
            "Delay before a new task's memory is first scanned for NUMA hinting faults.",
            None,
            Some("1000"),
        ),
        "numa_balancing.scan_period_min_ms" => e(
            "Shortest period between NUMA hinting scans of a task's address space (faster convergence, more overhead).",
            None,
            Some("1000"),
        ),
        "numa_balancing.scan_period_max_ms" => e(
            "Longest period between NUMA hinting scans (reached when placement is stable).",
            None,
            Some("60000"),
        ),
        "numa_balancing.scan_size_mb" => e(
            "How much of the address space one NUMA hinting scan covers.",
            None,
            Some("256"),
        ),
        "numa_balancing.hot_threshold_ms" => e(
            "Memory tiering: a page accessed again within this time counts as hot and is promoted.",
            Some("v6.0"),
            Some("1000"),
        ),
        "llc_balancing.enabled" => e(
            "Cache-aware scheduling (v7.2): load balancing prefers to keep a process's threads on the LLC where their runtime concentrates (p->preferred_llc). Active only where a domain spans more than one LLC.",
            Some("Tim Chen, [RFC patch v3 00/20] Cache aware scheduling; merged v7.2"),
            Some("1"),
        ),
        "llc_balancing.aggr_tolerance" => e(
            "How large a process may be and still be gathered in one LLC: its running threads × SMT width against the LLC's CPUs, and (with NUMA balancing) its memory footprint against the LLC's size, scaled by 1 + (tolerance − 1) × base. 0 never gathers (every preference dropped), 1 strict (the default), 100 lifts both limits. Range 0–100.",
            Some("v7.2 cache-aware scheduling"),
            Some("1"),
        ),
        "llc_balancing.epoch_period" => e(
            "Accounting epoch in jiffies (HZ/100 = 10 ms by default): each CPU's and each process's runtime there halves every epoch, so the preference follows the last few epochs; 0 is taken as 1. Range 1–10000 jiffies.",
            Some("v7.2 cache-aware scheduling"),
            None,
        ),
        "llc_balancing.epoch_affinity_timeout" => e(
            "Epochs without a preference scan of a process after which its LLC preference is dropped (default 5 = 50 ms at the default epoch). Range 0–10000 epochs.",
            Some("v7.2 cache-aware scheduling"),
            Some("5"),
        ),
        "llc_balancing.imb_pct" => e(
            "How much busier (utilisation, %) the preferred LLC may be than the source LLC while load balancing still pulls the process's threads there. Range 0–1000 %.",
            Some("v7.2 cache-aware scheduling"),
            Some("20"),
        ),
        "llc_balancing.overaggr_pct" => e(
            "An LLC whose utilisation is above this % of its capacity counts as too busy to gather more threads into (× 3/2 on machines without SMT). Range 0–1000 %.",
            Some("v7.2 cache-aware scheduling"),
            Some("50"),
        ),
        "sched.migration_cost_ns" => e(
            "A task that ran within this time counts as cache-hot and load balancing avoids moving it; 0 disables the check. Raising it reduces migrations on small-LLC machines (the EPYC newidle-migration report: K Prateek Nayak, [RFC PATCH] sched/debug: Allow overriding relax_domain_level at runtime, LKML 2025-04-30).",
            Some("commit c5b0a7eefc70 (sched/fair: Remove sysctl_sched_migration_cost condition)"),
            Some("500000"),
        ),
        "sched.nr_migrate" => e(
            "Most tasks one load-balance pass may move.",
            None,
            Some("32"),
        ),
        "sched.base_slice_ns" => e(
            "EEVDF base time slice; shorter means lower wakeup latency and more switches.",
            Some("v6.6 (replaced min_granularity_ns)"),
            None,
        ),
        "sched.tunable_scaling" => e(
            "How base_slice_ns scales with the CPU count: 0 none, 1 logarithmic, 2 linear.",
            None,
            Some("1"),
        ),
        "sched.preempt" => e(
            "Preemption model (PREEMPT_DYNAMIC kernels): none, voluntary, full, lazy.",
            None,
            None,
        ),
        "kernel.sched_schedstats" => e(
            "Scheduler statistics collection. On makes /proc/schedstat's load-balance counters advance — the Balance view needs it; small overhead.",
            Some("Documentation/scheduler/sched-stats.rst"),
            Some("0"),
        ),
        _ => e("No description in this llctop.", None, None),
    }
}
