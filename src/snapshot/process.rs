//! The snapshot's process table: the top processes of the interval and what each did
//! per LLC, with where its preferred LLC comes from.

use serde::{Deserialize, Serialize};

use super::{ByDistance, CacheMon, Counters, Precision};

/// Where a preferred LLC comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreferredKind {
    /// The kernel's own `p->preferred_llc` (cache-aware scheduling, v7.2+).
    Kernel,
    /// llctop's emulation from decayed per-LLC runtime.
    #[default]
    Emulated,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessTable {
    /// Precision of runtime-per-LLC, migrations and wait in the rows.
    pub precision: Precision,
    /// Processes alive at the end of the interval (the rows are the top ones by CPU
    /// time); the enrichment stage counts them.
    pub total: u32,
    pub rows: Vec<ProcessStats>,
    /// Per-process updates the BPF program could not store in the interval because a
    /// per-process map was full: counts missing from the rows (the per-CPU figures still
    /// have them). 0 from sources without such maps.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
    /// Hardware counters while CPUs ran their idle task (BPF attribution only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_counters: Option<Counters>,
    /// Hardware counters of the processes not in `rows` (BPF attribution only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_counters: Option<Counters>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessStats {
    pub pid: u32,
    pub comm: String,
    pub threads: u32,
    /// Its last thread exited by the end of the interval (the BPF exit hook, or its
    /// `/proc/PID` gone): `comm` is the name it had, `threads` 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exited: bool,
    /// CPU time of all threads in the interval, ns.
    pub cpu_time_ns: u64,
    /// `cpu_time_ns` split by the LLC it ran on, indexed by LLC id.
    pub runtime_per_llc_ns: Vec<u64>,
    pub preferred_llc: Option<u32>,
    pub preferred_kind: PreferredKind,
    /// Fraction of the interval's runtime spent on the preferred LLC.
    pub preferred_hit: Option<f64>,
    /// Number of LLCs the process ran on in the interval.
    pub llc_spread: u32,
    pub migrations: u64,
    pub cross_llc_migrations: u64,
    /// Migrations of its threads by distance (exact sources only).
    #[serde(default)]
    pub migrations_by_distance: Option<ByDistance>,
    pub rq_wait_ns: u64,
    /// Its threads' switch-ins in the interval as the kernel counts them
    /// (`sched_info.pcount`, the runs `rq_wait_ns` ended): `rq_wait_ns / runs` is its mean
    /// wait per run, the kernel's own /proc/PID/schedstat ratio. `None` where the source
    /// does not count them (BPF without the task walk, procfs without sched_info).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u64>,
    /// Switch-ins of its threads the kernel made without its `sched_switch` tracepoint
    /// (BPF source): the waits they ended are missing from `rq_wait_ns`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switches_unseen: u64,
    /// Its migrations onto and off its kernel-preferred LLC (the preference at the move:
    /// BPF source, 7.2+ cache-aware scheduling; absent elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves_onto_preferred: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves_off_preferred: Option<u64>,
    /// cgroup v2 path (or the v1 memory-controller path), when known.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// While a sched_ext scheduler runs: whether it schedules this process's main thread
    /// (`ext.enabled` of /proc/PID/sched) — true: the BPF scheduler, false: the fair
    /// class (or another). `None` while none runs, or when the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext: Option<bool>,
    /// Hardware counters of its threads' slices in the interval (BPF attribution of the
    /// per-CPU counters at every context switch), scaled and derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The same split by the LLC the slices ran on, indexed by LLC id (empty without
    /// attribution).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters_per_llc: Vec<Option<Counters>>,
    /// Its L3 occupancy and memory bandwidth, all L3s together, when llctop monitors it
    /// in a resctrl group of its own (`--cache-top`, `--cache-pid`; per L3 in
    /// `Snapshot::resctrl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheMon>,
    /// Its cache group as the kernel keeps it (7.2+ cache-aware scheduling, BPF source
    /// with the task walk): the figures the kernel's rules for a preferred LLC read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_group: Option<CacheGroup>,
    /// Why the kernel gives it no preferred LLC, each rule that holds, by the kernel's own
    /// rules over `cache_group` (src/kstate/cache_aware.rs); empty while it has one, or
    /// where the group was not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_preference: Vec<NoPreference>,
}

/// A process's cache group (`p->sched_cache_grp` of its leader thread, v7.2+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheGroup {
    /// It has one (`false`: a kernel thread, or none set up: no preference ever).
    pub present: bool,
    /// `nr_running_avg`: its threads running at its scans, averaged (EWMA).
    pub nr_running_avg: u64,
    /// `footprint`: its memory footprint from NUMA-balancing faults, bytes (pages ×
    /// 4,096); 0 while NUMA balancing is off.
    pub footprint_bytes: u64,
    /// Epochs since its last scan (the leader's CPU's `cpu_epoch` − the group's `epoch`).
    pub epochs_since_scan: i64,
    /// `cpu`: the CPU of its preferred LLC (`None`: none chosen).
    pub cpu: Option<u32>,
    /// The leader's `numa_preferred_nid` (`None`: no preferred node).
    pub numa_node: Option<u32>,
}

/// One of the kernel's reasons for no preferred LLC (7.2: `account_mm_sched`,
/// `invalid_llc_nr`, `exceed_llc_capacity`, `get_pref_llc` in kernel/sched/fair.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoPreference {
    /// Cache-aware scheduling does not run (`cache_aware`: off, or enabled but not active).
    NotActive,
    /// No cache group: a kernel thread, or a task the kernel set none up for.
    NoGroup,
    /// One thread (`get_nr_threads(p) <= 1`).
    SingleThread,
    /// `llc_balancing/aggr_tolerance` 0: never aggregate.
    AggregationOff,
    /// Its running threads × SMT siblings do not fit the LLC's CPUs × the tolerance.
    TooManyThreads,
    /// Its footprint is larger than the LLC × 256 × (tolerance − 1) + the LLC.
    Footprint,
    /// Not scanned for more than `epoch_affinity_timeout` epochs.
    Stale,
    /// Its preferred LLC is on another node than NUMA balancing's preferred node.
    NumaConflict,
    /// None of the above: the kernel's scan has chosen no LLC (yet: a new LLC needs twice
    /// the current one's occupancy).
    NotChosen,
}

impl NoPreference {
    /// At most three characters for the Processes view's PREF column (`–thr`).
    pub fn code(self) -> &'static str {
        match self {
            NoPreference::NotActive => "off",
            NoPreference::NoGroup => "kt",
            NoPreference::SingleThread => "1t",
            NoPreference::AggregationOff => "ag0",
            NoPreference::TooManyThreads => "thr",
            NoPreference::Footprint => "fp",
            NoPreference::Stale => "old",
            NoPreference::NumaConflict => "nod",
            NoPreference::NotChosen => "?",
        }
    }

    /// A short phrase for a table or a report.
    pub fn text(self) -> &'static str {
        match self {
            NoPreference::NotActive => "cache-aware scheduling does not run",
            NoPreference::NoGroup => "no cache group (kernel thread)",
            NoPreference::SingleThread => "single thread",
            NoPreference::AggregationOff => "aggr_tolerance 0: aggregation off",
            NoPreference::TooManyThreads => "more running threads than the LLC's CPUs",
            NoPreference::Footprint => "footprint larger than the LLC",
            NoPreference::Stale => "not scanned lately (stale epoch)",
            NoPreference::NumaConflict => "NUMA balancing prefers another node",
            NoPreference::NotChosen => "no LLC chosen by the kernel's scan",
        }
    }
}

/// A snapshot whose process table has a row for each `(pid, exited)` and nothing else (for
/// tests of the stages that read rows).
#[cfg(test)]
pub fn with_rows(rows: &[(u32, bool)]) -> super::Snapshot {
    super::Snapshot {
        processes: Some(ProcessTable {
            total: rows.len() as u32,
            rows: rows
                .iter()
                .map(|&(pid, exited)| ProcessStats {
                    pid,
                    exited,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}
