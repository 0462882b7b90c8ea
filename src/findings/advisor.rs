//! The advisor: the detectors run over a stream of snapshots, each finding given a life —
//! it fires once (when first detected), updates while it holds, and clears only after
//! [`CLEAR_AFTER`] judgements in a row without it (its detector meanwhile judging it by
//! the lower clear thresholds: hysteresis in value and in time). Live, replay and `llctop
//! report` feed it the same snapshots in the same order, so they find the same episodes.
//! The advisor only suggests: nothing here writes a knob.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Finding, Kind, Severity, Window, detect};
use crate::snapshot::Snapshot;
use crate::topology::Topology;

/// Judgements in a row without a finding before it clears.
pub const CLEAR_AFTER: u32 = 3;
/// Updates kept per episode (the first and the newest), for replay's evidence at a
/// position.
pub const KEPT_UPDATES: usize = 120;

/// Updates a cleared episode keeps (the first, the last, and evenly spaced between): the
/// evidence at any point of it stays near, and a replay with a thousand short episodes
/// holds a few thousand findings rather than tens of thousands.
pub const KEPT_CLEARED_UPDATES: usize = 8;

/// Cleared episodes kept (the oldest are forgotten beyond this, in steps of
/// [`FORGET_STEP`]): a day of pile-ups must not grow the TUI without bound.
pub const KEPT_EPISODES: usize = 1000;
pub const FORGET_STEP: usize = 100;

/// What a change of a finding's life is, as a recording's `finding` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Fired,
    Cleared,
}

/// A `"type":"finding"` line: the finding when it fired, or its last evidence when it
/// cleared, at the snapshot `seq` that was being judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingLine {
    pub state: State,
    pub seq: u64,
    pub finding: Finding,
}

/// One finding's life.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub fired_seq: u64,
    /// The judgement at which it cleared (`None`: still held).
    pub cleared_seq: Option<u64>,
    /// The finding as it fired, then as updated (at most [`KEPT_UPDATES`]).
    pub updates: Vec<Finding>,
    misses: u32,
}

impl Episode {
    pub fn latest(&self) -> &Finding {
        // An episode is made with its first finding and never emptied.
        &self.updates[self.updates.len() - 1]
    }

    pub fn kind(&self) -> Kind {
        self.latest().kind
    }

    /// The worst severity it reached.
    pub fn worst(&self) -> Severity {
        self.updates
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Info)
    }

    /// Held at snapshot `seq`.
    pub fn active_at(&self, seq: u64) -> bool {
        self.fired_seq <= seq && self.cleared_seq.is_none_or(|c| seq < c)
    }

    /// The newest evidence judged at or before `seq`.
    pub fn at(&self, seq: u64) -> &Finding {
        self.updates
            .iter()
            .rev()
            .find(|f| f.last_seq <= seq)
            .unwrap_or(&self.updates[0])
    }
}

/// Keep at most `keep` (≥ 2) of `v`: the first, the last, and evenly spaced between.
pub fn thin<T>(v: &mut Vec<T>, keep: usize) {
    let (n, keep) = (v.len(), keep.max(2));
    if n <= keep {
        return;
    }
    // Index k of the kept ones is round(k * (n - 1) / (keep - 1)): 0 and n - 1 included.
    let mut want = (0..keep)
        .map(|k| (k * (n - 1) + (keep - 1) / 2) / (keep - 1))
        .peekable();
    let mut i = 0;
    v.retain(|_| {
        let kept = want.peek() == Some(&i);
        if kept {
            want.next();
        }
        i += 1;
        kept
    });
    v.shrink_to_fit();
}

#[derive(Debug, Clone, Default)]
pub struct Advisor {
    pub episodes: Vec<Episode>,
    open: BTreeMap<(Kind, String), usize>,
}

impl Advisor {
    pub fn new() -> Advisor {
        Advisor::default()
    }

    /// Every episode of a run's snapshots (oldest first), as live judging found them.
    pub fn over(topo: &Topology, snaps: &[Snapshot]) -> Advisor {
        let mut a = Advisor::new();
        for i in 0..snaps.len() {
            a.observe(topo, &snaps[..=i]);
        }
        a
    }

    /// Judge the window ending at the newest of `snaps` (the run so far, oldest first; it
    /// may be cut at the front, but must hold the window); returns what fired or cleared.
    pub fn observe(&mut self, topo: &Topology, snaps: &[Snapshot]) -> Vec<FindingLine> {
        self.judge(topo, snaps)
            .map_or_else(Vec::new, |(found, seq)| self.apply(found, seq))
    }

    /// What the detectors find in the window ending at the newest of `snaps` (held
    /// findings judged with their hysteresis), and that snapshot's `seq`; `None` when
    /// the window is empty.
    pub fn judge(&self, topo: &Topology, snaps: &[Snapshot]) -> Option<(Vec<Finding>, u64)> {
        let held: BTreeSet<(Kind, String)> = self.open.keys().cloned().collect();
        let w = Window::trailing(snaps, topo, &held);
        if w.snaps.is_empty() {
            return None;
        }
        Some((detect(&w), w.last_seq()))
    }

    /// Take what was found at snapshot `seq` (of [`judge`](Self::judge)): episodes open,
    /// update and clear; returns what fired or cleared. An advisor fed the same findings
    /// holds the same episodes — the TUI's mirrors the pipeline's this way.
    pub fn apply(&mut self, found: Vec<Finding>, seq: u64) -> Vec<FindingLine> {
        let mut lines = Vec::new();
        let mut seen = BTreeSet::new();
        for f in found {
            let id = f.id();
            if !seen.insert(id.clone()) {
                continue;
            }
            match self.open.get(&id) {
                Some(&i) => {
                    let ep = &mut self.episodes[i];
                    ep.misses = 0;
                    if ep.updates.len() >= KEPT_UPDATES {
                        ep.updates.remove(1);
                    }
                    ep.updates.push(f);
                }
                None => {
                    lines.push(FindingLine {
                        state: State::Fired,
                        seq,
                        finding: f.clone(),
                    });
                    self.open.insert(id, self.episodes.len());
                    self.episodes.push(Episode {
                        fired_seq: seq,
                        cleared_seq: None,
                        updates: vec![f],
                        misses: 0,
                    });
                }
            }
        }
        let missing: Vec<(Kind, String)> = self
            .open
            .keys()
            .filter(|id| !seen.contains(*id))
            .cloned()
            .collect();
        for id in missing {
            let Some(&i) = self.open.get(&id) else {
                continue;
            };
            let ep = &mut self.episodes[i];
            ep.misses += 1;
            if ep.misses >= CLEAR_AFTER {
                ep.cleared_seq = Some(seq);
                lines.push(FindingLine {
                    state: State::Cleared,
                    seq,
                    finding: ep.latest().clone(),
                });
                thin(&mut ep.updates, KEPT_CLEARED_UPDATES);
                self.open.remove(&id);
            }
        }
        self.forget();
        lines
    }

    /// Past [`KEPT_EPISODES`], forget the oldest cleared ones.
    fn forget(&mut self) {
        if self.episodes.len() < KEPT_EPISODES + FORGET_STEP {
            return;
        }
        let mut dropped = 0;
        self.episodes.retain(|e| {
            let drop = dropped < FORGET_STEP && e.cleared_seq.is_some();
            dropped += usize::from(drop);
            !drop
        });
        self.open = self
            .episodes
            .iter()
            .enumerate()
            .filter(|(_, e)| e.cleared_seq.is_none())
            .map(|(i, e)| ((e.kind(), e.latest().key.clone()), i))
            .collect();
    }

    /// Episodes held at snapshot `seq`, worst first (blind spots last).
    pub fn active_at(&self, seq: u64) -> Vec<&Episode> {
        let mut v: Vec<&Episode> = self.episodes.iter().filter(|e| e.active_at(seq)).collect();
        v.sort_by_key(|e| (std::cmp::Reverse(e.at(seq).severity), e.fired_seq));
        v
    }

    /// The situations held now (blind spots left out), as last found, worst first.
    pub fn held(&self) -> Vec<Finding> {
        let mut held: Vec<Finding> = self
            .problems()
            .filter(|e| e.cleared_seq.is_none())
            .map(|e| e.latest().clone())
            .collect();
        held.sort_by_key(|f| std::cmp::Reverse(f.severity));
        held
    }

    /// Episodes of situations (not blind spots), in firing order.
    pub fn problems(&self) -> impl Iterator<Item = &Episode> {
        self.episodes
            .iter()
            .filter(|e| e.kind() != Kind::BlindSpots)
    }
}

/// An advisor fed one snapshot at a time, keeping just the snapshots its window needs:
/// for `llctop record`, which does not keep a history.
#[derive(Debug, Clone, Default)]
pub struct Trail {
    pub advisor: Advisor,
    recent: Vec<Snapshot>,
}

impl Trail {
    pub fn new() -> Trail {
        Trail::default()
    }

    /// Judge with `snap` as the newest snapshot.
    pub fn push(&mut self, topo: &Topology, snap: &Snapshot) -> Vec<FindingLine> {
        self.push_owned(topo, snap.clone())
    }

    /// [`push`](Self::push) for a snapshot the caller no longer needs (no copy).
    pub fn push_owned(&mut self, topo: &Topology, snap: Snapshot) -> Vec<FindingLine> {
        self.step(topo, snap).1
    }

    /// [`push_owned`](Self::push_owned), with what was found at `snap` (what
    /// [`Advisor::apply`] takes) beside the lines.
    pub fn step(&mut self, topo: &Topology, snap: Snapshot) -> (Vec<Finding>, Vec<FindingLine>) {
        self.recent.push(snap);
        // Keep the newest snapshots covering the window (and its least count) and the
        // look-behind, plus one.
        let mut ns = 0u64;
        let mut keep = 0;
        for s in self.recent.iter().rev() {
            keep += 1;
            if ns > super::WINDOW_NS + super::LOOK_BEHIND_NS && keep > super::MIN_WINDOW_SNAPSHOTS {
                break;
            }
            ns = ns.saturating_add(s.time.interval_ns);
        }
        let drop = self.recent.len() - keep;
        self.recent.drain(..drop);
        match self.advisor.judge(topo, &self.recent) {
            Some((found, seq)) => {
                let lines = self.advisor.apply(found.clone(), seq);
                (found, lines)
            }
            None => (Vec::new(), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Window;
    use crate::findings::testing::snap;
    use crate::topology::synthetic;

    /// CPU 0 waits all the time while CPU 1 (same LLC) idles, in the snapshots `bad`.
    fn series(n: u64, bad: impl Fn(u64) -> bool) -> Vec<Snapshot> {
        let topo = synthetic(1, 2, 2);
        (0..n)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.9);
                if bad(seq) {
                    s.cpus[0].rq_wait_ns = Some(900_000_000);
                    s.cpus[1].busy = Some(0.05);
                }
                s
            })
            .collect()
    }

    #[test]
    fn a_finding_fires_once_updates_and_clears_after_misses() {
        let topo = synthetic(1, 2, 2);
        let snaps = series(30, |seq| (5..15).contains(&seq));
        let a = Advisor::over(&topo, &snaps);
        let eps: Vec<_> = a
            .episodes
            .iter()
            .filter(|e| e.kind() == Kind::NotConserved)
            .collect();
        assert_eq!(eps.len(), 1, "{eps:?}");
        let e = eps[0];
        // 0.6 of the 5 s window: the third bad snapshot.
        assert_eq!(e.fired_seq, 7);
        assert!(e.updates.len() > 5);
        // Held while the window still shows it past the clear threshold (0.3, i.e. two
        // bad snapshots of five: until seq 17), then three misses.
        assert_eq!(e.cleared_seq, Some(20));
        assert_eq!(e.latest().key, "llc0");
        assert!(e.active_at(10) && !e.active_at(6) && !e.active_at(20));
    }

    #[test]
    fn old_cleared_episodes_are_forgotten_open_ones_kept() {
        let topo = synthetic(1, 2, 2);
        let mut a = Advisor::new();
        // Episodes made by hand: many cleared, one open.
        let f = |key: String| Finding {
            kind: Kind::PileUp,
            key,
            severity: Severity::Warning,
            summary: String::new(),
            facts: vec![],
            cpus: vec![],
            llcs: vec![],
            pids: vec![],
            first_seq: 0,
            last_seq: 0,
            suggestion: None,
            cost: None,
        };
        for i in 0..(KEPT_EPISODES + FORGET_STEP) {
            a.episodes.push(Episode {
                fired_seq: i as u64,
                cleared_seq: (i != 5).then_some(i as u64 + 1),
                updates: vec![f(format!("k{i}"))],
                misses: 0,
            });
        }
        a.open.insert((Kind::PileUp, "k5".into()), 5);
        a.observe(&topo, &series(1, |_| false));
        assert_eq!(
            a.episodes.len(),
            KEPT_EPISODES + 1,
            "forgot a step (and the blind spot came)"
        );
        let i = a.open[&(Kind::PileUp, "k5".to_string())];
        assert_eq!(
            a.episodes[i].latest().key,
            "k5",
            "the open one kept, its index moved"
        );
        // The oldest cleared went: 0–4 and 6–100; the open one is now first.
        assert_eq!((i, a.episodes[1].fired_seq), (0, 101));
    }

    #[test]
    fn a_flicker_below_the_clear_threshold_does_not_refire() {
        let topo = synthetic(1, 2, 2);
        // Bad 3 of every 5 snapshots: fires, and never falls below 0.3 of the window.
        let snaps = series(40, |seq| seq % 5 < 3);
        let a = Advisor::over(&topo, &snaps);
        let n = a
            .episodes
            .iter()
            .filter(|e| e.kind() == Kind::NotConserved)
            .count();
        assert_eq!(n, 1);
    }

    #[test]
    fn live_lines_are_the_episodes() {
        let topo = synthetic(1, 2, 2);
        let snaps = series(30, |seq| (5..15).contains(&seq));
        let mut a = Advisor::new();
        let mut lines = Vec::new();
        for i in 0..snaps.len() {
            lines.extend(a.observe(&topo, &snaps[..=i]));
        }
        let fired: Vec<_> = lines
            .iter()
            .filter(|l| l.state == State::Fired && l.finding.kind == Kind::NotConserved)
            .collect();
        let cleared: Vec<_> = lines
            .iter()
            .filter(|l| l.state == State::Cleared && l.finding.kind == Kind::NotConserved)
            .collect();
        assert_eq!((fired.len(), cleared.len()), (1, 1));
        assert_eq!((fired[0].seq, cleared[0].seq), (7, 20));
        assert_eq!(a.episodes, Advisor::over(&topo, &snaps).episodes);
        // One at a time, keeping only the window: the same.
        let mut t = Trail::new();
        let trail: Vec<FindingLine> = snaps.iter().flat_map(|s| t.push(&topo, s)).collect();
        assert_eq!(trail, lines);
        // The window (5 s), its look-behind (5 s), and one more.
        assert!(t.recent.len() <= 12, "{}", t.recent.len());
        // Long intervals: the window still holds three snapshots.
        let long: Vec<Snapshot> = series(4, |_| false)
            .into_iter()
            .map(|mut s| {
                s.time.interval_ns = 4_000_000_000;
                s
            })
            .collect();
        let held = BTreeSet::new();
        let w = Window::trailing(&long, &topo, &held);
        assert_eq!((w.first_seq(), w.last_seq()), (1, 3));
    }

    #[test]
    fn thinning_keeps_the_first_the_last_and_spaced_ones() {
        let mut v: Vec<u32> = (0..100).collect();
        thin(&mut v, 8);
        assert_eq!(v.len(), 8);
        assert_eq!((v[0], v[7]), (0, 99));
        assert!(
            v.windows(2).all(|w| w[1] - w[0] >= 13 && w[1] - w[0] <= 15),
            "{v:?}"
        );
        let mut short = vec![1, 2, 3];
        thin(&mut short, 8);
        assert_eq!(short, vec![1, 2, 3]);
        let mut nine: Vec<u32> = (0..9).collect();
        thin(&mut nine, 8);
        assert_eq!(nine.len(), 8);
        assert_eq!((nine[0], nine[7]), (0, 8));
    }
}
