//! What the app names: its views (with their titles, order and key context) and the
//! process table's sort columns.

use super::Context;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ViewId {
    Overview,
    Migrations,
    Processes,
    Cache,
    Balance,
    Numa,
    Knobs,
    Findings,
    Help,
}

impl ViewId {
    pub const ALL: [ViewId; 9] = [
        ViewId::Overview,
        ViewId::Migrations,
        ViewId::Processes,
        ViewId::Cache,
        ViewId::Balance,
        ViewId::Numa,
        ViewId::Knobs,
        ViewId::Findings,
        ViewId::Help,
    ];

    pub fn title(self) -> &'static str {
        match self {
            ViewId::Overview => "Overview",
            ViewId::Migrations => "Migrations",
            ViewId::Processes => "Processes",
            ViewId::Cache => "Cache",
            ViewId::Balance => "Balance",
            ViewId::Numa => "NUMA",
            ViewId::Knobs => "Knobs",
            ViewId::Findings => "Findings",
            ViewId::Help => "Help",
        }
    }

    pub fn index(self) -> usize {
        ViewId::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }

    /// Whether the view is a list that `/` searches.
    pub fn searchable(self) -> bool {
        matches!(
            self,
            ViewId::Processes | ViewId::Knobs | ViewId::Findings | ViewId::Help
        )
    }

    pub(super) fn context(self) -> Context {
        match self {
            ViewId::Overview => Context::Overview,
            ViewId::Processes => Context::Processes,
            ViewId::Knobs => Context::Knobs,
            ViewId::Findings => Context::Findings,
            _ => Context::Global,
        }
    }
}

/// Process table sort columns, in `s` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Cpu,
    Comm,
    Threads,
    CrossLlc,
    Migrations,
    Wait,
    Hit,
    Mpki,
    Ipc,
    Pid,
}

impl SortKey {
    const ALL: [SortKey; 10] = [
        SortKey::Cpu,
        SortKey::Comm,
        SortKey::Threads,
        SortKey::CrossLlc,
        SortKey::Migrations,
        SortKey::Wait,
        SortKey::Hit,
        SortKey::Mpki,
        SortKey::Ipc,
        SortKey::Pid,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SortKey::Cpu => "CPU",
            SortKey::Comm => "COMM",
            SortKey::Threads => "THR",
            SortKey::CrossLlc => "xLLC/s",
            SortKey::Migrations => "MIG/s",
            SortKey::Wait => "WAIT",
            SortKey::Hit => "HIT",
            SortKey::Mpki => "MPKI",
            SortKey::Ipc => "IPC",
            SortKey::Pid => "PID",
        }
    }

    /// Whether its rows go up unreversed: names A→Z, the lowest hit and IPC first (the
    /// processes in trouble), pids in order; every other figure goes high → low.
    pub fn ascending(self) -> bool {
        matches!(
            self,
            SortKey::Comm | SortKey::Hit | SortKey::Ipc | SortKey::Pid
        )
    }

    pub(super) fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}
