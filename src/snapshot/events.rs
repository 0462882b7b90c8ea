//! The snapshot's detail events: placements, migrations and first runs as the BPF
//! source saw them, and why a task moved.

use serde::{Deserialize, Serialize};

use crate::topology::Distance;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventLog {
    /// Events not delivered (rate limit or full ring buffer) in the interval.
    pub dropped: u64,
    pub events: Vec<DetailEvent>,
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
