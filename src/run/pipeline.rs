//! The one per-interval loop every live command runs on: the collector of the run's
//! sources takes a snapshot each interval; [`Ticker`] turns it into a [`Tick`] — the
//! advisor's judgement (what was found, what fired or cleared, what is held), the
//! sources whose state changed — and the pipeline adds the knob events of the run's own
//! session and, every [`KNOB_PERIOD`], the knob values re-read (with the changes someone
//! else made). Commands are [`Sink`]s of ticks: the recording (record, `ab -o`, the TUI's
//! `r`, MCP's `record`), the Perfetto trace, the Prometheus exporter, MCP's live state,
//! `live`'s lines, the TUI's channel. The run ends at its duration, on a stop signal or
//! when a sink says so; then, in this order, the sinks are told it is stopping (their
//! commands asked to end), the knob session restores, the sources are released (BPF
//! detached) and the sinks finish with the session's last events — so nothing a sink
//! waits for holds a knob changed or a program attached.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::{Changes, Error, Options};
use crate::collect::Collector;
use crate::findings::Finding;
use crate::findings::advisor::{Advisor, FindingLine, Trail};
use crate::knobs::session::KnobEvent;
use crate::knobs::{Registry, Session};
use crate::kroot::KernelRoot;
use crate::snapshot::{Snapshot, SourceState, SourceStatus};
use crate::source;
use crate::topology::Topology;

/// How often knob values are re-read: at the first snapshot ending at least this long
/// after the last read (every snapshot at intervals of a second or more). The one
/// cadence of every run — the TUI's session re-reads its own at it too.
pub const KNOB_PERIOD: Duration = Duration::from_secs(1);

/// Whether the knob values are due at a snapshot ending at `now_ns` (of `interval_ns`),
/// the last read at `last_ns` (`None`: never read — due).
pub fn knobs_due(last_ns: Option<u64>, now_ns: u64, interval_ns: u64) -> bool {
    let period = KNOB_PERIOD.as_nanos() as u64;
    last_ns.is_none_or(|l| now_ns.saturating_sub(l).saturating_add(interval_ns / 2) >= period)
}

/// A source whose state changed at a tick (or, at the first, since the baseline).
#[derive(Debug, Clone, PartialEq)]
pub struct SourceChange {
    /// Its state before (`None`: it was not there).
    pub before: Option<SourceState>,
    pub now: SourceStatus,
}

/// A knob value that changed between two reads without this run changing it (another
/// llctop, a sysctl, an operator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenChange {
    pub id: String,
    pub old: String,
    pub new: String,
}

/// The knobs at a tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnobTick {
    /// The run's own changes since the last tick (its session's events), oldest first.
    pub events: Vec<KnobEvent>,
    /// Every readable knob's value, when re-read at this tick (the first tick of a run
    /// that watches knobs always).
    pub values: Option<BTreeMap<String, String>>,
    /// Changes found by re-reading that this run did not make.
    pub seen: Vec<SeenChange>,
}

/// One interval of a run, as every sink gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub snap: Snapshot,
    /// What the advisor's detectors found in the window ending here ([`Advisor::apply`]
    /// takes it: an advisor fed these holds the same episodes).
    pub found: Vec<Finding>,
    /// The findings that fired or cleared here.
    pub lines: Vec<FindingLine>,
    /// The findings held now (blind spots left out), worst first.
    pub held: Vec<Finding>,
    pub sources: Vec<SourceChange>,
    pub knobs: KnobTick,
}

impl Tick {
    /// A tick of `snap` alone: no judgement, no change (a recording written from kept
    /// snapshots, tests).
    pub fn of(snap: Snapshot) -> Tick {
        Tick {
            snap,
            found: Vec::new(),
            lines: Vec::new(),
            held: Vec::new(),
            sources: Vec::new(),
            knobs: KnobTick::default(),
        }
    }
}

/// The pure step of the loop: a snapshot in, its tick out (the advisor's judgement and
/// the source-state changes; the knobs are the pipeline's). The only place snapshots are
/// judged as they come.
#[derive(Debug, Clone)]
pub struct Ticker {
    topo: Topology,
    trail: Trail,
    prev: Vec<SourceStatus>,
}

impl Ticker {
    /// A ticker for a run whose baseline found `sources`.
    pub fn new(topo: &Topology, sources: &[SourceStatus]) -> Ticker {
        Ticker {
            topo: topo.clone(),
            trail: Trail::new(),
            prev: sources.to_vec(),
        }
    }

    pub fn tick(&mut self, snap: Snapshot) -> Tick {
        let sources = source_changes(&self.prev, &snap.sources);
        self.prev.clone_from(&snap.sources);
        let (found, lines) = self.trail.step(&self.topo, snap.clone());
        Tick {
            snap,
            found,
            lines,
            held: self.trail.advisor.held(),
            sources,
            knobs: KnobTick::default(),
        }
    }

    pub fn advisor(&self) -> &Advisor {
        &self.trail.advisor
    }
}

/// The sources of `now` whose state differs from `prev`'s (or that `prev` lacks).
pub fn source_changes(prev: &[SourceStatus], now: &[SourceStatus]) -> Vec<SourceChange> {
    now.iter()
        .filter_map(|s| {
            let before = prev.iter().find(|p| p.name == s.name).map(|p| p.state);
            (before != Some(s.state)).then(|| SourceChange {
                before,
                now: s.clone(),
            })
        })
        .collect()
}

/// Knob values re-read every [`KNOB_PERIOD`]: the registry is discovered once, on a
/// thread of its own started as the run is built (discovery reads the kernel's symbols
/// and BTF: a tenth of a second or more, which no sink, no experiment's command and no
/// interval waits for, and whose CPU time falls inside the first interval, as the
/// recording's figures say), only the values afterwards.
pub struct KnobWatch {
    registry: Option<Registry>,
    discovering: Option<std::thread::JoinHandle<Registry>>,
    root: KernelRoot,
    topo: Topology,
    values: BTreeMap<String, String>,
    last_ns: Option<u64>,
}

impl KnobWatch {
    /// A watch whose registry is being discovered meanwhile.
    pub fn start(root: &KernelRoot, topo: &Topology) -> KnobWatch {
        let (r, t) = (root.clone(), topo.clone());
        let discovering = std::thread::Builder::new()
            .name("llctop-knobs".into())
            .spawn(move || Registry::discover(&r, Some(&t)))
            .ok();
        KnobWatch {
            registry: None,
            discovering,
            root: root.clone(),
            topo: topo.clone(),
            values: BTreeMap::new(),
            last_ns: None,
        }
    }

    /// The registry, waiting for its discovery the first time (done here when the
    /// thread could not start or failed).
    fn discover(&mut self) -> &mut Registry {
        let pending = self.discovering.take().and_then(|h| h.join().ok());
        let (root, topo) = (&self.root, &self.topo);
        self.registry
            .get_or_insert_with(|| pending.unwrap_or_else(|| Registry::discover(root, Some(topo))))
    }

    /// At a snapshot ending at `now_ns`: when due, the values re-read and the changes
    /// `own` (the run's own events since the last read) do not explain.
    fn at(
        &mut self,
        now_ns: u64,
        interval_ns: u64,
        own: &[KnobEvent],
    ) -> Option<(BTreeMap<String, String>, Vec<SeenChange>)> {
        for ev in own {
            self.values.insert(ev.id.clone(), ev.new.clone());
        }
        if !knobs_due(self.last_ns, now_ns, interval_ns) {
            return None;
        }
        let first = self.last_ns.replace(now_ns).is_none();
        let reg = self.discover();
        reg.refresh_values();
        let values = crate::record::Header::knob_values(reg);
        let seen = if first {
            Vec::new()
        } else {
            seen_changes(&self.values, &values)
        };
        self.values.clone_from(&values);
        Some((values, seen))
    }
}

/// The values of `now` that differ from `before`'s (a knob that appeared or went away
/// is no change of value).
pub fn seen_changes(
    before: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Vec<SeenChange> {
    now.iter()
        .filter_map(|(id, new)| {
            let old = before.get(id)?;
            (old != new).then(|| SeenChange {
                id: id.clone(),
                old: old.clone(),
                new: new.clone(),
            })
        })
        .collect()
}

/// What a sink may reach at a tick besides the tick: the run's knob session (an
/// experiment flips it) and the registry when the values were re-read.
pub struct Ctl<'a> {
    pub session: &'a mut Option<Session>,
    pub registry: Option<&'a Registry>,
}

/// A command's part of the run.
pub trait Sink {
    /// One interval; `Ok(false)` ends the run, an error ends it and is the run's.
    fn tick(&mut self, t: &Tick, ctl: &mut Ctl) -> Result<bool, Error>;

    /// The run is ending: before the knobs are restored and the sources released (ask
    /// commands to stop here; wait for them in [`finish`](Self::finish)).
    fn stopping(&mut self) {}

    /// The run has ended: the knobs restored (`last`: the session's events since the
    /// last tick, the restores among them), the sources released.
    fn finish(&mut self, _last: &[KnobEvent]) -> Result<(), Error> {
        Ok(())
    }
}

/// A run: the collector of the run's sources with its baseline taken, the knob session
/// of its changes (made after the baseline), the advisor, the knob watch, and when to
/// stop (the duration in wall time, or one of [`crate::signals::STOP_SIGNALS`]).
pub struct Pipeline {
    collector: Collector,
    /// The source states the baseline found (a recording's header keeps them).
    pub sources: Vec<SourceStatus>,
    pub knobs: Option<Session>,
    ticker: Ticker,
    watch: Option<KnobWatch>,
    stop: Arc<AtomicBool>,
    interval: Duration,
    duration: Option<Duration>,
}

impl Pipeline {
    /// A run over `opts.source`'s sources.
    pub fn start(
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        duration: Option<Duration>,
        stop: Arc<AtomicBool>,
    ) -> Result<Pipeline, Error> {
        let sources = source::select(
            opts.source,
            opts.top,
            root,
            topo,
            opts.resctrl_setup(root, topo),
            opts.wakeups,
        )?;
        Ok(Pipeline::with_sources(
            opts, root, topo, duration, stop, sources,
        ))
    }

    /// A run over `sources` chosen by the caller (`llctop trace`: the BPF source in
    /// trace mode). It watches the knobs ([`KnobWatch`]).
    pub fn with_sources(
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        duration: Option<Duration>,
        stop: Arc<AtomicBool>,
        sources: Vec<Box<dyn source::Source>>,
    ) -> Pipeline {
        let watch = KnobWatch::start(root, topo);
        Pipeline::build(opts, root, topo, duration, stop, sources, Some(watch))
    }

    /// A run whose ticks bring no knob values: the TUI's feed (its session, on the UI
    /// thread, re-reads its own at [`KNOB_PERIOD`]).
    pub fn unwatched(
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        stop: Arc<AtomicBool>,
        sources: Vec<Box<dyn source::Source>>,
    ) -> Pipeline {
        Pipeline::build(opts, root, topo, None, stop, sources, None)
    }

    fn build(
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        duration: Option<Duration>,
        stop: Arc<AtomicBool>,
        sources: Vec<Box<dyn source::Source>>,
        watch: Option<KnobWatch>,
    ) -> Pipeline {
        let mut collector = Collector::new(root, topo.clone(), sources);
        let sources = collector.baseline();
        Pipeline {
            collector,
            ticker: Ticker::new(topo, &sources),
            sources,
            knobs: None,
            watch,
            stop,
            interval: opts.interval,
            duration,
        }
    }

    /// The handle that gives processes rows whatever their rank (an experiment's own).
    pub fn kept_rows(&self) -> crate::procgroup::KeptRows {
        self.collector.kept_rows()
    }

    /// Make the run's knob changes (a failed change ends the run; what was applied is
    /// restored when the session drops). Their events come with the first tick.
    pub fn change_knobs(
        &mut self,
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        changes: &Changes,
    ) -> Result<(), Error> {
        self.knobs = super::run_session(opts, root, topo, changes)?;
        Ok(())
    }

    /// Run until the duration has passed (wall time: the last snapshot is the one
    /// ending nearest it), a stop signal arrives or a sink ends it; then end as the
    /// module says. The first sink error, if any, is the result.
    pub fn drive(&mut self, sinks: &mut [&mut dyn Sink]) -> Result<(), Error> {
        let mut error: Option<Error> = None;
        let interval = self.interval;
        // Wall time covered by the snapshots (CLOCK_MONOTONIC from the start of the first
        // interval to the end of the last): the baseline before the first interval and
        // the time spent on a snapshot are not cut from it.
        let want = self
            .duration
            .map(|d| u64::try_from(d.saturating_sub(interval / 2).as_nanos()).unwrap_or(u64::MAX));
        let mut first: Option<u64> = None;
        let (ticker, watch, session) = (&mut self.ticker, &mut self.watch, &mut self.knobs);
        self.collector
            .run(interval, super::signalled(Arc::clone(&self.stop)), |snap| {
                let start =
                    *first.get_or_insert(snap.time.mono_ns.saturating_sub(snap.time.interval_ns));
                let covered = snap.time.mono_ns.saturating_sub(start);
                let mut t = ticker.tick(snap);
                t.knobs.events = session
                    .as_mut()
                    .map(|s| s.take_events())
                    .unwrap_or_default();
                if let Some((values, seen)) = watch.as_mut().and_then(|w| {
                    w.at(
                        t.snap.time.mono_ns,
                        t.snap.time.interval_ns,
                        &t.knobs.events,
                    )
                }) {
                    t.knobs.values = Some(values);
                    t.knobs.seen = seen;
                }
                let registry = watch
                    .as_ref()
                    .filter(|_| t.knobs.values.is_some())
                    .and_then(|w| w.registry.as_ref());
                let mut ctl = Ctl { session, registry };
                for s in sinks.iter_mut() {
                    match s.tick(&t, &mut ctl) {
                        Ok(true) => {}
                        Ok(false) => return false,
                        Err(e) => {
                            error = Some(e);
                            return false;
                        }
                    }
                }
                want.is_none_or(|w| covered < w)
            });
        for s in sinks.iter_mut() {
            s.stopping();
        }
        let last = match self.knobs.as_mut() {
            Some(s) => {
                super::finish_session(s);
                s.take_events()
            }
            None => Vec::new(),
        };
        self.release_sources();
        for s in sinks.iter_mut() {
            if let Err(e) = s.finish(&last) {
                error.get_or_insert(e);
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The snapshots numbered on from `seq`: see [`Collector::continue_after`].
    pub fn continue_after(&mut self, seq: u64) {
        self.collector.continue_after(seq);
    }

    /// The sources released (BPF detached …): see [`Collector::release_sources`].
    pub fn release_sources(&mut self) {
        self.collector.release_sources();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Kind;

    #[test]
    fn knobs_are_due_once_a_period_whatever_the_interval() {
        let s = 1_000_000_000;
        assert!(knobs_due(None, 5, s), "the first read is due");
        // At 1 s intervals: every snapshot (a late tick included).
        assert!(knobs_due(Some(10 * s), 11 * s, s));
        assert!(knobs_due(Some(10 * s), 11 * s - 1_000_000, s));
        // At 100 ms: every tenth.
        let ms = 1_000_000;
        let due: Vec<u64> = (1..=30)
            .scan(Some(0u64), |last, i| {
                let now = i * 100 * ms;
                let d = knobs_due(*last, now, 100 * ms);
                if d {
                    *last = Some(now);
                }
                Some(d.then_some(i))
            })
            .flatten()
            .collect();
        assert_eq!(due, vec![10, 20, 30]);
        // At 10 s: every snapshot.
        assert!(knobs_due(Some(10 * s), 20 * s, 10 * s));
    }

    #[test]
    fn a_change_seen_is_one_this_run_did_not_make() {
        let m = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let before = m(&[("a", "1"), ("b", "2"), ("gone", "x")]);
        let now = m(&[("a", "1"), ("b", "3"), ("new", "y")]);
        assert_eq!(
            seen_changes(&before, &now),
            vec![SeenChange {
                id: "b".into(),
                old: "2".into(),
                new: "3".into()
            }]
        );
    }

    #[test]
    fn sources_changed_are_said_once_each() {
        let topo = crate::topology::synthetic(1, 1, 2);
        let base = vec![
            SourceStatus::active(crate::snapshot::SourceName::ProcfsStat),
            SourceStatus::active(crate::snapshot::SourceName::Bpf),
        ];
        let mut t = Ticker::new(&topo, &base);
        let mut s = crate::findings::testing::snap(&topo, 0, 0.5);
        s.sources = base.clone();
        assert!(t.tick(s.clone()).sources.is_empty(), "nothing changed");
        let mut degraded = base.clone();
        degraded[1].state = SourceState::Degraded;
        degraded[1].reason = Some("lost".into());
        s.seq = 1;
        s.sources = degraded.clone();
        let c = t.tick(s.clone()).sources;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].before, Some(SourceState::Active));
        assert_eq!(c[0].now.state, SourceState::Degraded);
        s.seq = 2;
        assert!(t.tick(s).sources.is_empty(), "said once");
    }

    #[test]
    fn an_advisor_fed_the_ticks_holds_the_tickers_episodes() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut t = Ticker::new(&topo, &[]);
        let mut mirror = Advisor::new();
        let mut fired = 0;
        for seq in 0..20 {
            let mut s = crate::findings::testing::snap(&topo, seq, 0.9);
            if seq < 10 {
                s.cpus[0].rq_wait_ns = Some(900_000_000);
                s.cpus[1].busy = Some(0.0);
            }
            let tick = t.tick(s);
            let lines = mirror.apply(tick.found.clone(), tick.snap.seq);
            assert_eq!(lines, tick.lines, "the mirror's lines at #{seq}");
            fired += tick
                .lines
                .iter()
                .filter(|l| l.finding.kind == Kind::NotConserved)
                .count();
            assert_eq!(
                tick.held.iter().map(|f| f.id()).collect::<Vec<_>>(),
                mirror.held().iter().map(|f| f.id()).collect::<Vec<_>>()
            );
        }
        assert_eq!(fired, 2, "fired and cleared");
        assert_eq!(mirror.episodes, t.advisor().episodes);
    }
}
