//! Running llctop: what a run is made of — the sources for `--source`, the collector, the
//! knob session of `--set`/`--profile` (restored when the run ends), the stop flag of
//! SIGINT/SIGTERM — and the headless runs over them: [`record`] (a recording file) and
//! [`live`] (one summary line per interval). The TUI (tui::launch) and later
//! subcommands build on the same pieces.

pub mod ab;
pub mod live;
pub mod record;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::collect::Collector;
use crate::knobs::{self, Session, cli::print_change, journal, journal::Journal, profile, session};
use crate::kroot::KernelRoot;
use crate::source;
use crate::topology::Topology;

pub type Error = Box<dyn std::error::Error>;

/// The options every run shares (the global command-line options).
#[derive(Debug, Clone)]
pub struct Options {
    pub interval: Duration,
    pub source: source::Kind,
    /// Process rows kept per snapshot.
    pub top: usize,
    /// Never write to the kernel.
    pub read_only: bool,
    /// Leave knob changes in place on exit (journaled).
    pub keep_changes: bool,
    /// The knob journal (`None`: [`journal::default_path`]).
    pub journal: Option<PathBuf>,
}

/// Knob changes for the duration of a run; restored when it ends (unless
/// --keep-changes) and recorded as knob events.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct Changes {
    /// Set a knob for this run: ID=VALUE (repeatable).
    #[arg(long = "set", value_name = "ID=VALUE")]
    pub set: Vec<String>,
    /// Apply a profile for this run (llctop knobs profiles).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.profile.is_none() && self.set.is_empty()
    }
}

/// A knob session on `root` with the journal and the --read-only / --keep-changes
/// options (`keep` forces keeping, as one-shot `llctop knobs` commands do).
pub fn knob_session(
    opts: &Options,
    root: &KernelRoot,
    topo: Option<&Topology>,
    keep: bool,
) -> Session {
    let registry = knobs::Registry::discover(root, topo);
    let journal = Journal::new(opts.journal.clone().unwrap_or_else(journal::default_path));
    Session::new(
        registry,
        journal,
        session::Options {
            read_only: opts.read_only,
            keep_changes: keep || opts.keep_changes,
        },
    )
}

/// Apply `--profile` and `--set` (after `read_domains`, so named values such as
/// `relax_domain_level=llc` resolve on this machine), saying what changed.
pub fn apply_changes(s: &mut Session, changes: &Changes) -> Result<(), Error> {
    if changes.is_empty() {
        return Ok(());
    }
    s.read_domains();
    if let Some(name) = &changes.profile {
        let p = profile::find(name, profile::user_dir().as_deref())?;
        knobs::cli::apply_profile(s, &p)?;
    }
    for kv in &changes.set {
        let Some((id, value)) = kv.split_once('=') else {
            return Err(format!("--set {kv:?}: expected ID=VALUE").into());
        };
        let c = s.set(id.trim(), value.trim())?;
        print_change(s, &c);
    }
    Ok(())
}

/// The knob session of a headless run with its changes applied; `None` when the run
/// changes nothing. A failed change ends the run (what was applied is restored when the
/// session drops).
pub fn run_session(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    changes: &Changes,
) -> Result<Option<Session>, Error> {
    if changes.is_empty() {
        return Ok(None);
    }
    let mut s = knob_session(opts, root, Some(topo), false);
    apply_changes(&mut s, changes)?;
    Ok(Some(s))
}

/// End a run's knob session: restore (unless kept) and say what happened.
pub fn finish_session(s: &mut Session) {
    let (restored, failed) = s.finish();
    if !restored.is_empty() {
        eprintln!("llctop: restored {}", restored.join(", "));
    }
    for e in &failed {
        eprintln!("llctop: could not restore: {e} (`llctop knobs restore` retries)");
    }
    let kept = s.pending();
    if s.options().keep_changes && !kept.is_empty() {
        eprintln!(
            "llctop: kept {} (--keep-changes); `llctop knobs restore` puts the originals back",
            kept.join(", ")
        );
    }
}

/// A headless run: the collector of `opts.source`'s sources with its baseline taken, the
/// knob session of the run's changes ([`Run::change_knobs`], after the baseline), and
/// when to stop (the duration, SIGINT, SIGTERM).
pub struct Run {
    collector: Collector,
    /// The source states the baseline found (a recording's header keeps them).
    pub sources: Vec<crate::snapshot::SourceStatus>,
    pub knobs: Option<Session>,
    stop: Arc<AtomicBool>,
    interval: Duration,
    limit: Option<u64>,
}

impl Run {
    pub fn start(
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        duration: Option<Duration>,
    ) -> Result<Run, Error> {
        let stop = stop_flag()?;
        let sources = source::select(opts.source, opts.top, root, topo)?;
        let mut collector = Collector::new(root, topo.clone(), sources);
        let sources = collector.baseline();
        Ok(Run {
            collector,
            sources,
            knobs: None,
            stop,
            interval: opts.interval,
            limit: snapshot_count(duration, opts.interval),
        })
    }

    /// Make the run's knob changes (a failed change ends the run; what was applied is
    /// restored when the session drops).
    pub fn change_knobs(
        &mut self,
        opts: &Options,
        root: &KernelRoot,
        topo: &Topology,
        changes: &Changes,
    ) -> Result<(), Error> {
        self.knobs = run_session(opts, root, topo, changes)?;
        Ok(())
    }

    /// Call `f` with every snapshot (and the knob session, whose new events it may
    /// take) until the duration is covered, a signal arrives or `f` returns false.
    pub fn each(
        &mut self,
        mut f: impl FnMut(&crate::snapshot::Snapshot, &mut Option<Session>) -> bool,
    ) {
        let (limit, knobs) = (self.limit, &mut self.knobs);
        self.collector
            .run(self.interval, signalled(Arc::clone(&self.stop)), |snap| {
                f(&snap, knobs) && limit.is_none_or(|l| snap.seq + 1 < l)
            });
    }

    /// End the run's knob session (restore unless kept, say what happened); the
    /// session is returned for its last events.
    pub fn finish(&mut self) -> Option<&mut Session> {
        let s = self.knobs.as_mut()?;
        finish_session(s);
        Some(s)
    }
}

/// A flag set by SIGINT/SIGTERM so that loops end cleanly (files finished, knobs restored).
pub fn stop_flag() -> Result<Arc<AtomicBool>, Error> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

/// `flag` as the `stop` test of [`Collector::run`].
pub fn signalled(flag: Arc<AtomicBool>) -> impl Fn() -> bool {
    move || flag.load(Ordering::Relaxed)
}

/// How many snapshots cover `duration` (at least one); `None`: until stopped.
pub fn snapshot_count(duration: Option<Duration>, interval: Duration) -> Option<u64> {
    duration.map(|d| ((d.as_secs_f64() / interval.as_secs_f64()).round() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_counts_cover_the_duration() {
        let s = Duration::from_secs;
        assert_eq!(snapshot_count(Some(s(5)), s(1)), Some(5));
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(2500)), s(1)),
            Some(3)
        );
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(100)), s(1)),
            Some(1)
        );
        assert_eq!(snapshot_count(None, s(1)), None);
    }
}
