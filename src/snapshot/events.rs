//! The snapshot's detail events: placements, migrations and first runs as the BPF
//! source saw them, why a task moved, and new threads' waits beside an idle CPU.

use serde::{Deserialize, Serialize};

use crate::topology::Distance;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventLog {
    /// Events not delivered (rate limit or full ring buffer) in the interval.
    pub dropped: u64,
    pub events: Vec<DetailEvent>,
    /// New threads placed while an allowed CPU sat idle whose [`IDLE_WATCH_NS`] after
    /// placement ended since the last snapshot: what they waited then, and how much of
    /// it that CPU sat idle (BPF). `None`: not measured (older recordings, or a source
    /// without it) — a pile-up's cost is then estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_waits: Option<Vec<IdleWait>>,
}

/// How long after its placement a new thread's waits are watched (the BPF program's
/// `watch_ns`): a pile-up's cost span — seed 001's stream threads, stacked for the
/// benchmark's life, have cost a share of their runtime by then; threads the balancer
/// or their exit split within milliseconds next to nothing.
pub const IDLE_WATCH_NS: u64 = 1_000_000_000;

/// One new thread's waits in the [`IDLE_WATCH_NS`] after its placement, which an
/// allowed CPU (`cpu`, the lowest idle one) sat idle at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleWait {
    pub pid: u32,
    pub tgid: u32,
    /// The allowed CPU idle at the placement.
    pub cpu: u32,
    /// The placement (CLOCK_MONOTONIC, ns).
    pub placed_ns: u64,
    /// Run-queue wait in the span, ns, and the waits it was made of.
    pub wait_ns: u64,
    pub waits: u32,
    /// The part of that wait while `cpu` ran its idle task, ns: what it could have spared.
    pub idle_ns: u64,
    /// Waits whose idle part is not counted: they began before the oldest switch into or
    /// out of idle the program kept for `cpu` (`idle_ns` is then at least the truth).
    pub partial: u32,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A new task's first CPU (`sched_wakeup_new`); `from_cpu` is the parent's CPU.
    Placement,
    /// A cross-LLC or cross-node migration.
    Migration,
    /// A new task ran for the first time; `to_cpu` is where (`from_cpu` -1).
    FirstRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Wakeup,
    LoadBalance,
    ActiveBalance,
    Numa,
    Other,
}

impl Cause {
    pub const ALL: [Cause; 5] = [
        Cause::Wakeup,
        Cause::LoadBalance,
        Cause::ActiveBalance,
        Cause::Numa,
        Cause::Other,
    ];

    /// The one label of a cause, on screen and in reports: its JSON name.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Wakeup => "wakeup",
            Cause::LoadBalance => "load_balance",
            Cause::ActiveBalance => "active_balance",
            Cause::Numa => "numa",
            Cause::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetailEvent {
    pub kind: EventKind,
    /// CLOCK_MONOTONIC, ns.
    pub mono_ns: u64,
    pub pid: u32,
    pub tgid: u32,
    pub comm: String,
    pub from_cpu: i32,
    pub to_cpu: i32,
    pub distance: Option<Distance>,
    pub cause: Option<Cause>,
    /// How many CPUs the task may run on.
    pub nr_cpus_allowed: u32,
    /// Placements: how many CPUs the task may use, other than `to_cpu`, were running
    /// their idle task at that moment (BPF; absent in older recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_allowed: Option<u32>,
    /// Placements: the lowest of those idle allowed CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_cpu: Option<i32>,
}
