//! A recording cut into windows of [`WINDOW_SNAPSHOTS`] consecutive snapshots, each one
//! value per metric (the experiment's: experiment/metrics.rs) — the one unit `llctop diff
//! --fleet` summarizes a host by (canary.rs) and the Parquet export's `fleet_windows`
//! table holds (tables.rs), so both cut alike.

use std::collections::BTreeMap;

use crate::experiment::metrics;
use crate::snapshot::Snapshot;

/// Snapshots per window: a host's run is cut into windows of this many consecutive
/// snapshots (the last, shorter one left out), each window one value per metric.
pub const WINDOW_SNAPSHOTS: usize = 5;
/// One window's value of each metric it has, by key.
pub type Metrics = BTreeMap<String, f64>;

/// One window of a recording: where it is and its metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct HostWindow {
    /// Its place in the recording: 0 for the first [`WINDOW_SNAPSHOTS`] snapshots.
    pub index: u32,
    pub first_seq: u64,
    pub last_seq: u64,
    /// The end of its last snapshot, ns since the Unix epoch.
    pub unix_ns: u64,
    /// Its snapshots' summed interval time.
    pub secs: f64,
    pub metrics: Metrics,
}

/// Cuts a recording's snapshots, in order, into windows of [`WINDOW_SNAPSHOTS`] — the one
/// cut `diff --fleet` summarizes a host by and the Parquet export's `fleet_windows` table
/// holds (a window's snapshots at most in memory).
#[derive(Debug, Default)]
pub struct Windower {
    buf: Vec<Snapshot>,
    next: u32,
}

impl Windower {
    /// The next snapshot; a window when it completes one.
    pub fn push(&mut self, s: Snapshot) -> Option<HostWindow> {
        self.buf.push(s);
        if self.buf.len() < WINDOW_SNAPSHOTS {
            return None;
        }
        let w = HostWindow {
            index: self.next,
            first_seq: self.buf.first().map_or(0, |s| s.seq),
            last_seq: self.buf.last().map_or(0, |s| s.seq),
            unix_ns: self.buf.last().map_or(0, |s| s.time.unix_ns),
            secs: self.buf.iter().map(|s| s.time.interval_secs()).sum(),
            metrics: metrics::window(&self.buf),
        };
        self.buf.clear();
        self.next = self.next.saturating_add(1);
        Some(w)
    }
}
