//! The snapshot model: one [`Snapshot`] per interval is the single currency of llctop —
//! what the TUI draws, what a recording stores, what replay reads back.
//!
//! Conventions (every field is defined in docs/metrics.md):
//! - counters are deltas over the interval (`time.interval_ns`), not totals since boot;
//! - fractions are 0.0–1.0; times are nanoseconds;
//! - a value a source cannot provide is `None` (JSON `null`), never 0;
//! - sampled values say so ([`Precision`]); exact counts come only from sources that see
//!   every event.
//!
//! New fields are added with `#[serde(default)]` so older recordings keep loading.

mod cache;
mod cache_aware;
mod events;
mod process;
mod sched_ext;
mod sharing;
mod size;

pub use cache::{
    CacheMon, DomainCounters, DomainMon, GroupKind, MAX_BYTES_PER_SEC, Resctrl, ResctrlGroup,
    ResctrlInfo, Unread,
};
pub use cache_aware::CacheAware;
pub use events::{Cause, DetailEvent, EventKind, EventLog, IDLE_WATCH_NS, IdleWait};
#[cfg(test)]
pub(crate) use process::with_rows;
pub use process::{CacheGroup, NoPreference, PreferredKind, ProcessStats, ProcessTable};
pub use sched_ext::{EEVDF, SchedExt, ScxState, ops_matches_binary, ops_short_name};
pub use sharing::{SharedPair, Sharing, ThreadWake, WakePair, Wakeups};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::topology::Distance;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// 0 for the first snapshot of a run, then +1 per interval.
    pub seq: u64,
    pub time: SnapshotTime,
    #[serde(default)]
    pub system: SystemStats,
    /// One entry per CPU in topology order (offline CPUs included, with `online: false`).
    pub cpus: Vec<CpuStats>,
    /// One entry per LLC, indexed by LLC id.
    pub llcs: Vec<GroupStats>,
    /// One entry per NUMA node, in topology order.
    pub nodes: Vec<GroupStats>,
    #[serde(default)]
    pub migrations: Option<Migrations>,
    #[serde(default)]
    pub processes: Option<ProcessTable>,
    #[serde(default)]
    pub balance: Option<Balance>,
    #[serde(default)]
    pub numa: Option<NumaStats>,
    /// Detail events of the interval (rate-limited sample) and how many were dropped.
    #[serde(default)]
    pub events: Option<EventLog>,
    /// The state of every source and sub-source that contributed (or failed to).
    #[serde(default)]
    pub sources: Vec<SourceStatus>,
    /// L3 uncore readings (perf source, AMD amd_l3), one per LLC that has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncore_l3: Vec<UncoreL3>,
    /// L3 occupancy and memory bandwidth per monitoring group and L3 domain (resctrl
    /// source); `aggregate` sums them into `llcs`, `nodes` and the process rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resctrl: Option<Resctrl>,
    /// Which scheduler is in charge (procfs source, `/sys/kernel/sched_ext`); `None` on
    /// kernels without sched_ext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext: Option<SchedExt>,
    /// Whether the 7.2 cache-aware scheduler runs, beside what `llc_balancing/enabled`
    /// asks for (procfs source); `None` on kernels without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_aware: Option<CacheAware>,
    /// Pairs of processes that map the same shared memory (`/proc/PID/maps` of the busiest
    /// rows, read every few snapshots); `None` without process rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Which process woke which in the interval (BPF source, `--wakeups`); `None` when
    /// not asked for or not available (the BPF source's state says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<Wakeups>,
}
impl Snapshot {
    /// Runtime-weighted preferred-LLC hit over the process rows, and whether any row's
    /// preference is the kernel's own (`p->preferred_llc`) rather than emulated.
    pub fn preferred_hit(&self) -> (Option<f64>, bool) {
        let Some(t) = &self.processes else {
            return (None, false);
        };
        let (mut num, mut den, mut kernel) = (0.0, 0.0, false);
        for r in &t.rows {
            if let Some(h) = r.preferred_hit {
                num += h * r.cpu_time_ns as f64;
                den += r.cpu_time_ns as f64;
                kernel |= r.preferred_kind == PreferredKind::Kernel;
            }
        }
        ((den > 0.0).then(|| num / den), kernel)
    }

    /// The entry of CPU `cpu`. `cpus` is in CPU order and usually dense, so the direct
    /// index is tried first (the advisor looks CPUs up per snapshot per LLC).
    pub fn cpu(&self, cpu: u32) -> Option<&CpuStats> {
        match self.cpus.get(cpu as usize) {
            Some(c) if c.cpu == cpu => Some(c),
            _ => self.cpus.iter().find(|c| c.cpu == cpu),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotTime {
    /// Wall clock at the end of the interval, ns since the Unix epoch.
    pub unix_ns: u64,
    /// CLOCK_MONOTONIC at the end of the interval, ns.
    pub mono_ns: u64,
    /// Measured length of the interval, ns.
    pub interval_ns: u64,
    /// Ticks the collector skipped before this snapshot because it did not run (a
    /// stopped process, a stalled machine): the interval is that much longer, one
    /// snapshot instead of a burst of slivers.
    #[serde(default, skip_serializing_if = "no_ticks")]
    pub missed_ticks: u32,
}

fn no_ticks(n: &u32) -> bool {
    *n == 0
}

impl SnapshotTime {
    pub fn interval_secs(&self) -> f64 {
        self.interval_ns as f64 / 1e9
    }
}

/// Exact: every event was counted. Sampled: derived from periodic reads (a lower bound
/// for event counts; an attribution by last-seen CPU for per-CPU/per-LLC times).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Exact,
    #[default]
    Sampled,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemStats {
    /// Mean busy fraction over online CPUs.
    pub busy: Option<f64>,
    /// Context switches, all CPUs (`ctxt` of /proc/stat).
    pub ctx_switches: Option<u64>,
    /// Tasks created (`processes` of /proc/stat).
    pub forks: Option<u64>,
    /// Runnable tasks at the end of the interval (`procs_running`).
    pub procs_running: Option<u32>,
    /// Tasks blocked on I/O at the end of the interval (`procs_blocked`).
    pub procs_blocked: Option<u32>,
    /// Fraction of all CPUs' time in user mode (user + nice of /proc/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<f64>,
    /// Fraction of all CPUs' time in the kernel (system + irq + softirq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<f64>,
    /// Load averages over 1, 5 and 15 minutes (/proc/loadavg).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<[f64; 3]>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuStats {
    pub cpu: u32,
    pub online: bool,
    /// Fraction of the interval not idle (user+nice+system+irq+softirq+steal).
    pub busy: Option<f64>,
    /// Fraction spent in steal (hypervisor ran something else), part of `busy`.
    #[serde(default)]
    pub steal: Option<f64>,
    pub ctx_switches: Option<u64>,
    /// Migrations onto this CPU (precision: `Snapshot::migrations.precision`).
    pub migrations_in: Option<u64>,
    /// Migrations away from this CPU.
    pub migrations_out: Option<u64>,
    /// Run-queue wait accrued by tasks on this CPU, ns.
    pub rq_wait_ns: Option<u64>,
    /// Context switches here the kernel made without its `sched_switch` tracepoint, as
    /// the BPF source found them (the outgoing task was not the one the last switch it
    /// saw brought in): the waits they ended are missing from `rq_wait_ns`. 0 when none,
    /// or without the BPF source.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switches_unseen: u64,
    /// Runnable tasks (running or queued) seen on this CPU at the end of the interval.
    pub runnable: Option<u32>,
    /// Tasks queued on this CPU that have a kernel-preferred LLC, and those of them on
    /// it: the run queue's `nr_llc_running` / `nr_pref_llc_running` (v7.2+ cache-aware
    /// scheduling), sampled at the end of the interval (BPF source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cas_queued: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cas_queued_pref: Option<u32>,
    /// Run-queue waits ending on this CPU by log2 bucket: `[i]` counts waits in
    /// [2^i, 2^(i+1)) ns; trailing empty buckets are omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rq_wait_hist: Option<Vec<u64>>,
    /// Hardware counters of the interval (perf source), scaled for multiplexing. Boxed:
    /// absent without a PMU, they then cost 8 bytes per CPU per snapshot held, not 176.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Box<Counters>>,
    /// The same counters as read, before scaling, with the enabled/running times (boxed
    /// likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_raw: Option<Box<RawCounters>>,
}

/// Hardware counter deltas over the interval, scaled by time_enabled / time_running
/// when the PMU was multiplexed, and the metrics derived from them (docs/metrics.md).
/// A counter the PMU does not have is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    /// Generic `cache-references`: LLC references on Intel, **L2** requests on AMD Zen.
    pub cache_references: Option<u64>,
    /// Generic `cache-misses`: LLC misses on Intel, **L2** misses on AMD Zen.
    pub cache_misses: Option<u64>,
    /// `PERF_TYPE_HW_CACHE` LL/read/miss (unsupported on AMD Zen).
    pub llc_read_misses: Option<u64>,
    /// True L3 lookups and misses from the L3 uncore PMU (amd_l3), per LLC only.
    #[serde(default)]
    pub l3_lookups: Option<u64>,
    #[serde(default)]
    pub l3_misses: Option<u64>,
    /// instructions / cycles.
    pub ipc: Option<f64>,
    /// cache_misses / cache_references.
    pub miss_ratio: Option<f64>,
    /// cache_misses per 1000 instructions.
    pub mpki: Option<f64>,
    /// L3 misses per second: l3_misses (uncore) where present, else llc_read_misses.
    pub l3_misses_per_sec: Option<f64>,
}

/// Counter deltas as read (unscaled) and the group's enabled / running time deltas; the
/// scaling factor is `time_enabled_ns / time_running_ns`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawCounters {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub cache_references: Option<u64>,
    pub cache_misses: Option<u64>,
    pub llc_read_misses: Option<u64>,
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
}

/// One L3 uncore reading (amd_l3, one per CCX), attached to its LLC by `aggregate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UncoreL3 {
    pub llc: u32,
    pub lookups: Option<u64>,
    pub misses: Option<u64>,
    /// time_enabled / time_running of the interval.
    pub scale: Option<f64>,
}

/// Aggregate over the CPUs of an LLC or a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    /// LLC id or node id.
    pub id: u32,
    /// Online CPUs in the group.
    pub cpus: u32,
    /// Mean busy fraction of its online CPUs.
    pub busy: Option<f64>,
    pub ctx_switches: Option<u64>,
    /// Migrations into the group from outside it.
    pub migrations_in: Option<u64>,
    /// Migrations from the group to outside it.
    pub migrations_out: Option<u64>,
    /// Migrations between two CPUs of the group.
    #[serde(default)]
    pub migrations_within: Option<u64>,
    pub rq_wait_ns: Option<u64>,
    pub runnable: Option<u32>,
    /// Sums of the CPUs' `cas_queued` / `cas_queued_pref` (v7.2+): the kernel's own
    /// count of tasks with a preferred LLC queued in the group, and of those on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cas_queued: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cas_queued_pref: Option<u32>,
    /// Median / 99th percentile run-queue wait of the group's CPUs, from the summed
    /// log2 histograms (upper bound of the bucket), ns.
    #[serde(default)]
    pub rq_wait_p50_ns: Option<u64>,
    #[serde(default)]
    pub rq_wait_p99_ns: Option<u64>,
    /// Sums of the CPUs' counters (plus the LLC's uncore L3), with derived metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// What the group's L3 holds and the memory traffic behind it, all resctrl groups
    /// together (resctrl source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheMon>,
}

/// Sums of counts read from a kernel or a file saturate: a corrupt or hostile count must
/// never wrap (or panic in a debug build).
pub trait SatSum {
    fn sat_sum(self) -> u64;
}

impl<I: Iterator<Item = u64>> SatSum for I {
    fn sat_sum(self) -> u64 {
        self.fold(0, u64::saturating_add)
    }
}

/// A count per class: one `u64` field per class (the JSON shape), read and written
/// through the class enum, so every class is listed once, here.
macro_rules! by_class {
    ($(#[$doc:meta])* $name:ident by $class:ident { $($field:ident: $variant:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
        pub struct $name {
            $(pub $field: u64),+
        }

        impl $name {
            /// Adds, saturating (a corrupt count never wraps).
            pub fn add(&mut self, c: $class, n: u64) {
                match c {
                    $($class::$variant => self.$field = self.$field.saturating_add(n)),+
                }
            }

            pub fn get(&self, c: $class) -> u64 {
                match c {
                    $($class::$variant => self.$field),+
                }
            }

            pub fn total(&self) -> u64 {
                0u64 $(.saturating_add(self.$field))+
            }
        }
    };
}

by_class! {
    /// Migrations by how far the task moved ([`Distance`]).
    ByDistance by Distance {
        smt: Smt,
        llc: Llc,
        cross_llc: CrossLlc,
        cross_node: CrossNode,
    }
}

by_class! {
    /// Why a task moved (filled by sources that can tell; see docs/metrics.md).
    ByCause by Cause {
        wakeup: Wakeup,
        load_balance: LoadBalance,
        active_balance: ActiveBalance,
        numa: Numa,
        other: Other,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Migrations {
    pub precision: Precision,
    pub by_distance: ByDistance,
    /// `None` when the source cannot tell causes apart (procfs).
    pub by_cause: Option<ByCause>,
    /// `matrix[from_llc][to_llc]`, migrations between CPUs (diagonal: within an LLC).
    pub llc_matrix: Vec<Vec<u64>>,
    /// Moves whose CPUs have no topology (offline or unknown CPU).
    #[serde(default)]
    pub unclassified: u64,
    /// Moves of tasks with a kernel-preferred LLC onto it and off it, by cause (BPF
    /// source, 7.2+ cache-aware scheduling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<PreferredMoves>,
}

/// Migrations of tasks that have a kernel-preferred LLC, across its boundary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreferredMoves {
    /// From a CPU outside the task's preferred LLC to one in it.
    pub onto: ByCause,
    /// From a CPU in it to one outside.
    pub off: ByCause,
}

impl Migrations {
    pub fn total(&self) -> u64 {
        self.by_distance.total() + self.unclassified
    }
}

/// Load-balance activity from /proc/schedstat, aggregated over CPUs by domain level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Balance {
    /// /proc/schedstat format version (15, 16, 17).
    pub version: u32,
    pub domains: Vec<DomainBalance>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DomainBalance {
    /// `domainN` index (0 = lowest level).
    pub level: u32,
    /// Domain name: from the file (v17) or derived from its span (`derived_name`).
    pub name: Option<String>,
    #[serde(default)]
    pub derived_name: bool,
    /// CPUs contributing to this level.
    pub cpus: u32,
    pub busy: LbStats,
    pub idle: LbStats,
    pub newidle: LbStats,
    pub alb_count: u64,
    pub alb_failed: u64,
    pub alb_pushed: u64,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub ttwu_move_balance: u64,
}

/// Per idle type `load_balance()` counters (deltas).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LbStats {
    pub count: u64,
    pub balanced: u64,
    pub failed: u64,
    /// v15/v16 `lb_imbalance`; on v17 the sum of the four imbalance kinds.
    pub imbalance: u64,
    /// v17 only.
    pub imbalance_load: Option<u64>,
    pub imbalance_util: Option<u64>,
    pub imbalance_task: Option<u64>,
    pub imbalance_misfit: Option<u64>,
    pub gained: u64,
    pub hot_gained: u64,
    pub nobusyq: u64,
    pub nobusyg: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumaStats {
    /// `/proc/sys/kernel/numa_balancing` at the end of the interval.
    pub balancing_mode: Option<u32>,
    /// Deltas of the NUMA-related /proc/vmstat counters present on this kernel.
    pub vmstat: BTreeMap<String, u64>,
    pub nodes: Vec<NodeNuma>,
    pub cgroups: Vec<CgroupNuma>,
}

/// Deltas of `/sys/devices/system/node/nodeN/numastat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeNuma {
    pub node: u32,
    pub counters: BTreeMap<String, u64>,
    /// `MemTotal`/`MemFree` of the node, KiB (levels, not deltas).
    #[serde(default)]
    pub mem_total_kb: Option<u64>,
    #[serde(default)]
    pub mem_free_kb: Option<u64>,
}

/// Deltas of the NUMA balancing counters of a cgroup's `memory.stat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupNuma {
    pub path: String,
    pub numa_pages_migrated: Option<u64>,
    pub numa_pte_updates: Option<u64>,
    pub numa_hint_faults: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    Active,
    /// Working, with something missing (the reason says what).
    Degraded,
    /// Not providing data (the reason says why).
    Absent,
}

/// Every source's name as snapshots and recordings spell it ([`SourceStatus::name`]),
/// defined once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceName {
    /// The BPF program: exact migrations, waits, placements.
    Bpf,
    /// Hardware counters (perf_event_open).
    Perf,
    /// L3 occupancy and memory bandwidth (resctrl).
    Resctrl,
    /// /proc/stat: busy, context switches, forks.
    ProcfsStat,
    /// /proc/PID/task: processes, sampled migrations.
    ProcfsTasks,
    /// /proc/schedstat: load balancing, run-queue waits.
    ProcfsSchedstat,
    /// /proc/vmstat, numastat, memory.stat: NUMA balancing.
    ProcfsNuma,
    /// /sys/kernel/sched_ext: which scheduler is in charge.
    ProcfsSchedExt,
    /// llc_balancing/ and the domain partitions: whether cache-aware scheduling runs.
    ProcfsCacheAware,
}

impl SourceName {
    pub const ALL: [SourceName; 9] = [
        SourceName::Bpf,
        SourceName::Perf,
        SourceName::Resctrl,
        SourceName::ProcfsStat,
        SourceName::ProcfsTasks,
        SourceName::ProcfsSchedstat,
        SourceName::ProcfsNuma,
        SourceName::ProcfsSchedExt,
        SourceName::ProcfsCacheAware,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            SourceName::Bpf => "bpf",
            SourceName::Perf => "perf",
            SourceName::Resctrl => "resctrl",
            SourceName::ProcfsStat => "procfs.stat",
            SourceName::ProcfsTasks => "procfs.tasks",
            SourceName::ProcfsSchedstat => "procfs.schedstat",
            SourceName::ProcfsNuma => "procfs.numa",
            SourceName::ProcfsSchedExt => "procfs.sched_ext",
            SourceName::ProcfsCacheAware => "procfs.cache_aware",
        }
    }

    /// The name a recording gives, when it is one of ours.
    pub fn parse(s: &str) -> Option<SourceName> {
        SourceName::ALL.into_iter().find(|n| n.as_str() == s)
    }
}

impl std::fmt::Display for SourceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStatus {
    /// A [`SourceName`]'s text (a string: a recording from another version may name a
    /// source this one does not know).
    pub name: String,
    pub state: SourceState,
    pub reason: Option<String>,
    /// What an active source lost that changes no shown figure by more than 1% (so it is
    /// not degraded): said under the TUI's `i` and kept in recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SourceStatus {
    /// Whether this is the named source's state.
    pub fn is(&self, name: SourceName) -> bool {
        self.name == name.as_str()
    }

    pub fn active(name: SourceName) -> Self {
        SourceStatus {
            name: name.as_str().into(),
            state: SourceState::Active,
            reason: None,
            note: None,
        }
    }

    pub fn degraded(name: SourceName, reason: impl Into<String>) -> Self {
        SourceStatus {
            name: name.as_str().into(),
            state: SourceState::Degraded,
            reason: Some(one_line(reason.into())),
            note: None,
        }
    }

    pub fn absent(name: SourceName, reason: impl Into<String>) -> Self {
        SourceStatus {
            name: name.as_str().into(),
            state: SourceState::Absent,
            reason: Some(one_line(reason.into())),
            note: None,
        }
    }
}

/// A reason is one line (a library's multi-line error — procfs's "Internal error … please
/// report" — keeps its first line).
fn one_line(s: String) -> String {
    match s.lines().find(|l| !l.trim().is_empty()) {
        Some(first) if first.len() < s.trim_end().len() => first.trim_end().to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_distance_and_by_cause_read_what_they_add() {
        let mut d = ByDistance::default();
        for (i, &x) in Distance::ALL.iter().enumerate() {
            d.add(x, i as u64 + 1);
        }
        assert_eq!((d.smt, d.llc, d.cross_llc, d.cross_node), (1, 2, 3, 4));
        assert_eq!(d.total(), 10);
        let mut c = ByCause::default();
        for (i, &x) in Cause::ALL.iter().enumerate() {
            c.add(x, 10 * (i as u64 + 1));
            assert_eq!(c.get(x), 10 * (i as u64 + 1));
        }
        assert_eq!(c.total(), 150);
        assert_eq!((c.load_balance, c.other), (20, 50));
    }

    #[test]
    fn a_source_reason_is_one_line() {
        let s = SourceStatus::absent(
            crate::snapshot::SourceName::ProcfsStat,
            "Internal error: bad line\nplease report this procfs bug\n  at ...",
        );
        assert_eq!(s.reason.as_deref(), Some("Internal error: bad line"));
        let s = SourceStatus::degraded(crate::snapshot::SourceName::Perf, "one line\n");
        assert_eq!(s.reason.as_deref(), Some("one line\n"));
    }

    #[test]
    fn cause_labels_are_the_json_names() {
        for c in Cause::ALL {
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.label())
            );
        }
    }
}
