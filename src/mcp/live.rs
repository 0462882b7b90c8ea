//! What `llctop mcp`'s collector shares with the protocol side: the newest snapshots (a
//! bounded history for `watch`, `record` and `process`), the advisor's findings with the
//! lines it wrote as they fired and cleared, and the knobs' values. The collector pushes
//! one snapshot per interval; a tool that needs the future waits for it here.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::findings::Finding;
use crate::findings::advisor::FindingLine;
use crate::run::pipeline::Tick;
use crate::snapshot::Snapshot;
use crate::topology::Topology;

/// Snapshots kept: ten minutes at the default 1 s interval (`process` looks back at most
/// this far; `watch` and `record` take what comes after their call)...
pub const HISTORY: usize = 600;
/// ...and at most this many bytes of them ([`Snapshot::approx_bytes`]): a 256-CPU machine's
/// snapshots are a hundred times a laptop's.
pub const HISTORY_BYTES: usize = 16 << 20;
/// Finding lines kept (fired/cleared), the newest.
pub const LINES: usize = 1000;
/// The longest `watch`/`record` window a client may ask for, seconds.
pub const MAX_SECONDS: u64 = 600;

#[derive(Default)]
pub struct State {
    pub history: VecDeque<Snapshot>,
    /// [`Snapshot::approx_bytes`] of `history`.
    pub history_bytes: usize,
    pub lines: VecDeque<FindingLine>,
    /// The findings the advisor holds at the newest snapshot, worst first.
    pub held: Vec<Finding>,
    pub knobs: BTreeMap<String, String>,
    /// The knob registry as `llctop knobs list --json` gives it (value, writable or why
    /// not, in effect or not), refreshed with the values.
    pub registry: serde_json::Value,
    /// The collector ended (a signal, a failed source): nothing more will come.
    pub ended: bool,
}

impl State {
    pub fn latest(&self) -> Option<&Snapshot> {
        self.history.back()
    }
}

pub struct Live {
    state: Mutex<State>,
    fresh: Condvar,
    pub topo: Topology,
}

impl Live {
    pub fn new(topo: Topology) -> Live {
        Live {
            state: Mutex::new(State::default()),
            fresh: Condvar::new(),
            topo,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pipeline's tick: the snapshot kept, the advisor's lines and held findings,
    /// the knob values (and `registry`, as `knobs list --json` gives it) when re-read;
    /// the waiters woken.
    pub fn push(&self, t: &Tick, registry: Option<serde_json::Value>) {
        let snap = &t.snap;
        let mut s = self.lock();
        s.history_bytes += snap.approx_bytes();
        s.history.push_back(snap.clone());
        while s.history.len() > HISTORY || (s.history_bytes > HISTORY_BYTES && s.history.len() > 1)
        {
            if let Some(old) = s.history.pop_front() {
                s.history_bytes = s.history_bytes.saturating_sub(old.approx_bytes());
            }
        }
        s.lines.extend(t.lines.iter().cloned());
        while s.lines.len() > LINES {
            s.lines.pop_front();
        }
        s.held.clone_from(&t.held);
        if let Some(k) = &t.knobs.values {
            s.knobs.clone_from(k);
        }
        if let Some(r) = registry {
            s.registry = r;
        }
        drop(s);
        self.fresh.notify_all();
    }

    pub fn end(&self) {
        self.lock().ended = true;
        self.fresh.notify_all();
    }

    /// Wait until a snapshot with `seq` > `after` exists (or `timeout` passed, or the
    /// collector ended); the state then.
    pub fn wait_past(&self, after: Option<u64>, timeout: Duration) -> MutexGuard<'_, State> {
        let past =
            |s: &State| s.ended || s.latest().is_some_and(|l| after.is_none_or(|a| l.seq > a));
        let g = self.lock();
        match self.fresh.wait_timeout_while(g, timeout, |s| !past(s)) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_by_count_and_bytes() {
        let small = crate::topology::synthetic(1, 1, 2);
        let live = Live::new(small.clone());
        for seq in 0..(HISTORY as u64 + 50) {
            let mut s = crate::collect::empty_snapshot(&small);
            s.seq = seq;
            live.push(&Tick::of(s), None);
        }
        assert_eq!(live.lock().history.len(), HISTORY);
        let big = crate::topology::synthetic(4, 16, 8);
        let one = crate::collect::empty_snapshot(&big).approx_bytes();
        let live = Live::new(big.clone());
        let n = HISTORY_BYTES / one + 20;
        for seq in 0..n as u64 {
            let mut s = crate::collect::empty_snapshot(&big);
            s.seq = seq;
            live.push(&Tick::of(s), None);
        }
        let st = live.lock();
        assert!(
            st.history_bytes <= HISTORY_BYTES,
            "{} bytes",
            st.history_bytes
        );
        assert!(st.history.len() < n, "{} of {n} kept", st.history.len());
        assert_eq!(
            st.latest().map(|s| s.seq),
            Some(n as u64 - 1),
            "the newest kept"
        );
    }
}
