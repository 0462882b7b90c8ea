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
    /// Switch-ins of its threads the kernel made without its `sched_switch` tracepoint
    /// (BPF source): the waits they ended are missing from `rq_wait_ns`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switches_unseen: u64,
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
}
