//! The fold behind `llctop report`: a recording's lines taken one at a time into the
//! totals the report prints ([`Summary`], named structs throughout); tables.rs turns its
//! totals into tables that the text (report.rs) and the page (html/report.rs) both draw.

use std::collections::BTreeMap;

use crate::findings::advisor::Trail;
use crate::findings::pileup;
use crate::record::series::Mean;
use crate::snapshot::{ByDistance, EventKind, Precision, Snapshot, SourceState};
use crate::topology::Distance;

/// Knob changes and markers a report lists (and splits at), at most, each.
pub const LISTED: usize = 500;

/// Per-process totals over the recording.
#[derive(Default)]
pub(super) struct ProcTotal {
    pub(super) comm: String,
    pub(super) cpu: u64,
    pub(super) migs: u64,
    pub(super) xllc: u64,
    pub(super) hit_num: f64,
    pub(super) hit_den: f64,
    /// Why the kernel gave it no preferred LLC at its last row that said (7.2+), and its
    /// cache group then.
    pub(super) no_pref: Option<(
        Vec<crate::snapshot::NoPreference>,
        crate::snapshot::CacheGroup,
    )>,
    /// Its moves onto and off its kernel-preferred LLC over the recording (7.2+; None
    /// where no row said).
    pub(super) pref_moves: Option<(u64, u64)>,
    /// CPU time per LLC over the recording (indexed by LLC id).
    pub(super) per_llc: Vec<u64>,
}

impl ProcTotal {
    /// The LLC it ran on most over the recording (None: no runtime per LLC).
    pub(super) fn busiest_llc(&self) -> Option<u32> {
        self.per_llc
            .iter()
            .enumerate()
            .filter(|(_, ns)| **ns > 0)
            .max_by_key(|(i, ns)| (**ns, std::cmp::Reverse(*i)))
            .map(|(i, _)| i as u32)
    }
}

/// Load-balance totals of one kind (busy, idle or newidle) at one domain level.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct LbTotals {
    /// Attempts that were neither balanced nor failed: they moved tasks.
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) gained: u64,
}

impl LbTotals {
    fn add(&mut self, lb: &crate::snapshot::LbStats) {
        let ok = lb
            .count
            .saturating_sub(lb.balanced.saturating_add(lb.failed));
        self.ok = self.ok.saturating_add(ok);
        self.failed = self.failed.saturating_add(lb.failed);
        self.gained = self.gained.saturating_add(lb.gained);
    }
}

/// A domain level's name and load-balance totals per kind.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct LevelTotals {
    pub(super) name: Option<String>,
    pub(super) busy: LbTotals,
    pub(super) idle: LbTotals,
    pub(super) newidle: LbTotals,
}

/// Load balancing over the recording: the schedstat version and each level's totals.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct BalanceTotals {
    pub(super) version: u32,
    pub(super) levels: BTreeMap<u32, LevelTotals>,
}

/// Migrations over the recording.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct MigTotals {
    pub(super) by_distance: ByDistance,
    pub(super) unclassified: u64,
    /// Some snapshot's counts were sampled (a lower bound).
    pub(super) sampled: bool,
}

/// One stretch between markers: length, busy and migrations by distance.
#[derive(Default, Clone)]
pub(super) struct Stretch {
    pub(super) snapshots: usize,
    pub(super) secs: f64,
    pub(super) busy: Mean,
    pub(super) migs: ByDistance,
    /// Every snapshot of the stretch had migration counts.
    pub(super) all_migs: bool,
}

/// A recording's report, built one line at a time: what the report prints, folded as
/// the lines come (`llctop report` reads a recording as a stream, so its memory does not
/// grow with the recording's length), rendered at the end.
pub struct Summary {
    pub(super) header: super::Header,
    /// The first [`LISTED`] knob changes and markers, and how many there were: a
    /// recording of a million markers is reported in the memory and time of its first
    /// ones (the page and the text say how many more there were).
    pub(super) knobs: Vec<crate::knobs::session::KnobEvent>,
    pub(super) knobs_total: usize,
    pub(super) markers: Vec<super::Marker>,
    pub(super) markers_total: usize,
    pub(super) recorded_findings: Vec<crate::findings::advisor::FindingLine>,
    pub(super) truncated: bool,
    pub(super) skipped_lines: u64,
    pub(super) snapshots: usize,
    pub(super) secs: f64,
    /// (seq, end on CLOCK_MONOTONIC) of every snapshot, and the recording's start.
    pub(super) ends: Vec<(u64, u64)>,
    pub(super) t0: Option<u64>,
    /// Source → its last state other than active.
    pub(super) notes: BTreeMap<String, String>,
    pub(super) trail: Trail,
    pub(super) busy_all: Mean,
    pub(super) busy_llc: Vec<Mean>,
    pub(super) migs: Option<MigTotals>,
    pub(super) balance: Option<BalanceTotals>,
    pub(super) stretches: Vec<Stretch>,
    pub(super) piles: pileup::Finder,
    pub(super) placed: usize,
    pub(super) events_dropped: u64,
    pub(super) any_events: bool,
    pub(super) procs: BTreeMap<u32, ProcTotal>,
    pub(super) precision: Option<Precision>,
    /// resctrl's L3 occupancy and memory bandwidth.
    pub(super) l3: super::l3::L3,
    /// Which scheduler was in charge, in stretches.
    pub(super) schedulers: super::sched::Schedulers,
    /// Whether cache-aware scheduling ran, in stretches.
    pub(super) cache_aware: super::sched::Schedulers,
    /// The same snapshots as time series, for charts (`report --html`).
    pub(super) series: super::series::Series,
    /// The newest read of shared memory that found pairs of processes (a later read that
    /// found none — the pair exited, say, as a recording stops — does not hide them), and
    /// the snapshot of the newest read after it that found none.
    pub(super) sharing: Option<crate::snapshot::Sharing>,
    pub(super) sharing_none_at: Option<u64>,
    /// Which process woke which, summed over the snapshots that counted it.
    pub(super) wakeups: WakeTotals,
}

/// The wakeups of a recording's snapshots (`--wakeups`), summed.
#[derive(Debug, Default)]
pub(super) struct WakeTotals {
    /// Seconds of the snapshots that counted wakeups.
    pub secs: f64,
    /// Wakeups per (waker, wakee), at most [`WakeTotals::MAX_PAIRS`] pairs.
    pub pairs: BTreeMap<(u32, u32), u64>,
    /// Wakeups of pairs beyond the cap (not in `pairs`).
    pub beyond: u64,
    /// The snapshots' own totals: paired, in interrupt context, other, lost.
    pub paired: u64,
    pub interrupt: u64,
    pub lost: u64,
    /// Wakeups between threads of one process, and per (process, waker thread, wakee
    /// thread), at most [`WakeTotals::MAX_PAIRS`] (beyond: `threads_beyond`).
    pub within: u64,
    pub threads: BTreeMap<(u32, u32, u32), u64>,
    pub threads_beyond: u64,
}

impl WakeTotals {
    /// The pairs a summary keeps (a recording's snapshots keep 64 each).
    pub const MAX_PAIRS: usize = 4096;

    fn add(&mut self, w: &crate::snapshot::Wakeups, secs: f64) {
        self.secs += secs;
        self.paired = self.paired.saturating_add(w.paired);
        self.interrupt = self.interrupt.saturating_add(w.interrupt);
        self.lost = self.lost.saturating_add(w.lost);
        self.within = self.within.saturating_add(w.within);
        for t in &w.threads {
            let full = self.threads.len() >= Self::MAX_PAIRS;
            match self.threads.get_mut(&(t.pid, t.waker, t.wakee)) {
                Some(n) => *n = n.saturating_add(t.count),
                None if full => self.threads_beyond = self.threads_beyond.saturating_add(t.count),
                None => {
                    self.threads.insert((t.pid, t.waker, t.wakee), t.count);
                }
            }
        }
        for p in &w.pairs {
            let full = self.pairs.len() >= Self::MAX_PAIRS;
            match self.pairs.get_mut(&(p.waker, p.wakee)) {
                Some(n) => *n = n.saturating_add(p.count),
                None if full => self.beyond = self.beyond.saturating_add(p.count),
                None => {
                    self.pairs.insert((p.waker, p.wakee), p.count);
                }
            }
        }
    }
}

impl Summary {
    pub fn new(header: super::Header) -> Summary {
        Summary {
            series: super::series::Series::new(header.topology.llcs.len()),
            busy_llc: vec![Mean::default(); header.topology.llcs.len()],
            header,
            knobs: Vec::new(),
            knobs_total: 0,
            markers: Vec::new(),
            markers_total: 0,
            recorded_findings: Vec::new(),
            truncated: false,
            skipped_lines: 0,
            snapshots: 0,
            secs: 0.0,
            ends: Vec::new(),
            t0: None,
            notes: BTreeMap::new(),
            trail: Trail::new(),
            busy_all: Mean::default(),
            migs: None,
            balance: None,
            stretches: Vec::new(),
            piles: pileup::Finder::default(),
            placed: 0,
            events_dropped: 0,
            any_events: false,
            procs: BTreeMap::new(),
            precision: None,
            l3: super::l3::L3::default(),
            schedulers: super::sched::Schedulers::default(),
            cache_aware: super::sched::Schedulers::following(super::sched::Follows::CacheAware),
            sharing: None,
            sharing_none_at: None,
            wakeups: WakeTotals::default(),
        }
    }

    /// Fold one line of the recording in.
    pub fn add(
        &mut self,
        line: super::Line<Snapshot, crate::knobs::session::KnobEvent, super::Marker>,
    ) {
        use super::Line;
        match line {
            Line::Snapshot(s) => {
                self.snapshot(&s);
                self.trail.push_owned(&self.header.topology, s);
            }
            Line::Knob(k) => {
                self.knobs_total += 1;
                if self.knobs.len() < LISTED {
                    self.knobs.push(k);
                }
            }
            Line::Marker(m) => {
                self.markers_total += 1;
                if self.markers.len() < LISTED {
                    self.markers.push(m);
                }
            }
            Line::KnobValues(k) => {
                if self.header.knobs.is_empty() {
                    self.header.knobs = k;
                }
            }
            Line::Finding(f) => self.recorded_findings.push(*f),
            Line::Experiment(_) | Line::Window(_) | Line::Verdict(_) | Line::Unknown => {}
        }
    }

    /// Fold a snapshot in (all but the advisor, which the caller feeds).
    pub(super) fn snapshot(&mut self, s: &Snapshot) {
        self.snapshots += 1;
        self.secs += s.time.interval_secs();
        self.t0
            .get_or_insert(s.time.mono_ns.saturating_sub(s.time.interval_ns));
        self.ends.push((s.seq, s.time.mono_ns));
        for st in &s.sources {
            if st.state != SourceState::Active {
                let state = format!("{:?}", st.state).to_lowercase();
                self.notes.insert(
                    st.name.clone(),
                    format!("{state}: {}", st.reason.as_deref().unwrap_or("")),
                );
            }
        }
        self.l3.add(s);
        self.schedulers.add(s);
        self.cache_aware.add(s);
        self.series.add(s);
        self.busy_all.add(s.system.busy);
        for (i, m) in self.busy_llc.iter_mut().enumerate() {
            m.add(s.llcs.get(i).and_then(|g| g.busy));
        }
        if let Some(m) = &s.migrations {
            let t = self.migs.get_or_insert_with(MigTotals::default);
            for d in Distance::ALL {
                t.by_distance.add(d, m.by_distance.get(d));
            }
            t.unclassified = t.unclassified.saturating_add(m.unclassified);
            t.sampled |= m.precision == Precision::Sampled;
        }
        if let Some(b) = &s.balance {
            let t = self.balance.get_or_insert_with(|| BalanceTotals {
                version: b.version,
                levels: BTreeMap::new(),
            });
            for d in &b.domains {
                let e = t.levels.entry(d.level).or_insert_with(|| LevelTotals {
                    name: d.name.clone(),
                    ..LevelTotals::default()
                });
                e.busy.add(&d.busy);
                e.idle.add(&d.idle);
                e.newidle.add(&d.newidle);
            }
        }
        // Stretch i holds the snapshots after marker i-1 and up to marker i.
        let i = self
            .markers
            .iter()
            .filter(|m| m.mono_ns < s.time.mono_ns)
            .count();
        if self.stretches.len() <= i {
            self.stretches.resize(
                i + 1,
                Stretch {
                    all_migs: true,
                    ..Stretch::default()
                },
            );
        }
        let st = &mut self.stretches[i];
        st.snapshots += 1;
        st.secs += s.time.interval_secs();
        st.busy.add(s.system.busy);
        match &s.migrations {
            Some(m) => {
                for d in Distance::ALL {
                    st.migs.add(d, m.by_distance.get(d));
                }
            }
            None => st.all_migs = false,
        }
        self.piles.push(s);
        if let Some(l) = &s.events {
            self.any_events = true;
            self.placed += l
                .events
                .iter()
                .filter(|e| e.kind == EventKind::Placement)
                .count();
            self.events_dropped = self.events_dropped.saturating_add(l.dropped);
        }
        if let Some(sh) = &s.sharing {
            if sh.pairs.is_empty() {
                self.sharing_none_at = Some(sh.seq);
            } else {
                self.sharing = Some(sh.clone());
                self.sharing_none_at = None;
            }
        }
        if let Some(w) = &s.wakeups {
            self.wakeups.add(w, s.time.interval_secs());
        }
        if let Some(t) = &s.processes {
            self.precision = Some(t.precision);
            for r in &t.rows {
                let p = self.procs.entry(r.pid).or_default();
                p.comm.clone_from(&r.comm);
                p.cpu = p.cpu.saturating_add(r.cpu_time_ns);
                p.migs = p.migs.saturating_add(r.migrations);
                p.xllc = p.xllc.saturating_add(r.cross_llc_migrations);
                if let Some(h) = r.preferred_hit {
                    p.hit_num += h * r.cpu_time_ns as f64;
                    p.hit_den += r.cpu_time_ns as f64;
                }
                if p.per_llc.len() < r.runtime_per_llc_ns.len() {
                    p.per_llc.resize(r.runtime_per_llc_ns.len(), 0);
                }
                for (i, ns) in r.runtime_per_llc_ns.iter().enumerate() {
                    p.per_llc[i] = p.per_llc[i].saturating_add(*ns);
                }
                if let (Some(onto), Some(off)) = (r.moves_onto_preferred, r.moves_off_preferred) {
                    let m = p.pref_moves.get_or_insert((0, 0));
                    *m = (m.0.saturating_add(onto), m.1.saturating_add(off));
                }
                if let Some(g) = &r.cache_group {
                    p.no_pref =
                        (!r.no_preference.is_empty()).then(|| (r.no_preference.clone(), g.clone()));
                }
            }
        }
    }
}
