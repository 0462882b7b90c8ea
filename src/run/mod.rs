//! Running llctop: what a run is made of — the options, the knob session of
//! `--set`/`--profile` (restored when the run ends), the stop flag of
//! SIGINT/SIGTERM/SIGHUP/SIGQUIT (and which of them came, for the exit status), the exit
//! codes — and [`pipeline`], the one per-interval loop every live command is a sink of;
//! the headless commands over it: [`record`] (a recording file; its sink is every
//! recording's), [`live`] (one summary line per interval) and [`ab`] (an experiment).

pub mod ab;
pub mod live;
pub mod pipeline;
pub mod record;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::knobs::{self, Session, journal, journal::Journal, profile, session};
use crate::kroot::KernelRoot;
use crate::source;
use crate::text::Esc;
use crate::topology::Topology;

pub type Error = Box<dyn std::error::Error>;

/// The options every run shares (the global command-line options).
#[derive(Debug, Clone)]
pub struct Options {
    pub interval: Duration,
    pub source: source::Kind,
    /// Process rows kept per snapshot.
    pub top: usize,
    /// Count which process wakes which (`--wakeups`: the BPF source's wakeup pairs).
    pub wakeups: bool,
    /// Never write to the kernel.
    pub read_only: bool,
    /// Leave knob changes in place on exit (journaled).
    pub keep_changes: bool,
    /// The knob journal (`None`: [`journal::default_path`]).
    pub journal: Option<PathBuf>,
    /// resctrl: mount it, monitor processes in llctop's own groups.
    pub resctrl: source::resctrl::Options,
    /// The `scheduler` knob's choices from config.toml's `[schedulers]`.
    pub schedulers: Vec<knobs::scheduler::Binary>,
}

impl Options {
    /// What the resctrl source needs: the run's resctrl options and, when they ask for
    /// writes (and the run may write), a knob session of their own (a killed run's
    /// leftovers are removed as it opens).
    pub fn resctrl_setup(&self, root: &KernelRoot, topo: &Topology) -> source::resctrl::Setup {
        let session = (self.resctrl.writes() && !self.read_only)
            .then(|| knob_session(self, root, Some(topo), false));
        source::resctrl::Setup {
            opts: self.resctrl.clone(),
            session,
        }
    }
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
    let mut registry = knobs::Registry::discover(root, topo);
    registry.add_schedulers(opts.schedulers.clone());
    let journal = Journal::new(opts.journal.clone().unwrap_or_else(journal::default_path));
    let mut s = Session::new(
        registry,
        journal,
        session::Options {
            read_only: opts.read_only,
            keep_changes: keep || opts.keep_changes,
        },
    );
    // A run (not a one-shot `llctop knobs` command) first puts back what a killed run
    // left changed.
    if !keep && !opts.read_only {
        restore_orphans(&mut s);
    }
    s
}

fn restore_orphans(s: &mut Session) {
    let (restored, failed) = s.restore_orphans();
    if !restored.is_empty() {
        crate::say!(
            "llctop: restored {} (left changed by an llctop run that ended without restoring)",
            Esc(&restored.join(", "))
        );
    }
    for e in failed {
        crate::say!(
            "llctop: could not restore a knob a killed run left changed: {}",
            Esc(&e.to_string())
        );
    }
}

/// For a run that opens no knob session: if the journal holds entries of this sysroot
/// that were not kept on purpose, open one just to restore the orphans among them (the
/// knobs are only discovered when there is something to look at).
fn restore_orphans_if_any(opts: &Options, root: &KernelRoot, topo: &Topology) {
    if opts.read_only {
        return;
    }
    let journal = Journal::new(opts.journal.clone().unwrap_or_else(journal::default_path));
    let any = journal
        .entries_for(root.root())
        .is_ok_and(|es| es.iter().any(|e| !e.kept));
    if any {
        let mut s = knob_session(opts, root, Some(topo), true);
        restore_orphans(&mut s);
    }
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
        knobs::cli::apply_profile(s, &p, &|l| crate::say!("llctop: {l}"))?;
    }
    for kv in &changes.set {
        let Some((id, value)) = kv.split_once('=') else {
            return Err(format!("--set {kv:?}: expected ID=VALUE").into());
        };
        let c = s.set(id.trim(), value.trim())?;
        // A run's status, on stderr: stdout is the run's output (`live`'s lines).
        crate::say!("llctop: {}", knobs::cli::describe_change(s, &c));
    }
    Ok(())
}

/// Check a run's `--profile`/`--set` without writing anything: the syntax, that each knob
/// exists here, is writable and takes the value. Done before a run opens its output or
/// loads its sources, so a typo costs nothing (and no file).
pub fn check_changes(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    changes: &Changes,
) -> Result<(), Error> {
    if changes.is_empty() {
        return Ok(());
    }
    // A one-shot session (nothing restored, nothing written).
    let mut s = knob_session(opts, root, Some(topo), true);
    s.read_domains();
    if let Some(name) = &changes.profile {
        let p = profile::find(name, profile::user_dir().as_deref())?;
        let (steps, _) = p.plan(s.registry_mut());
        for (id, value) in &steps {
            s.check(id, value)?;
        }
    }
    for kv in &changes.set {
        let Some((id, value)) = kv.split_once('=') else {
            return Err(format!("--set {kv:?}: expected ID=VALUE").into());
        };
        s.check(id.trim(), value.trim())?;
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
        restore_orphans_if_any(opts, root, topo);
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
        crate::say!("llctop: restored {}", Esc(&restored.join(", ")));
    }
    for e in &failed {
        crate::say!(
            "llctop: could not restore: {} (`llctop knobs restore` retries)",
            Esc(&e.to_string())
        );
    }
    if !failed.is_empty() {
        RESTORE_FAILED.store(true, Ordering::Relaxed);
    }
    for n in s.take_notes() {
        crate::say!("llctop: {}", Esc(&n));
    }
    let kept = s.pending();
    if s.options().keep_changes && !kept.is_empty() {
        crate::say!(
            "llctop: kept {} (--keep-changes); `llctop knobs restore` puts the originals back",
            Esc(&kept.join(", "))
        );
    }
}

pub use crate::signals::STOP_SIGNALS;

/// The process's stop flag ([`crate::signals`]), the signals registered: set by any of
/// [`STOP_SIGNALS`] so that loops end cleanly; which signal came is kept for
/// [`ended_by_signal`].
pub fn stop_flag() -> Result<Arc<AtomicBool>, Error> {
    Ok(crate::signals::install()?)
}

/// The exit status a run asks for when it ends without an error (`llctop trace -- CMD`:
/// the command's); 0 when none set it.
static EXIT_STATUS: AtomicUsize = AtomicUsize::new(0);

/// A knob the run changed could not be restored at its end.
static RESTORE_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The exit status of a command that ended with `res` (no signal): a refused knob
/// change exits with its code (README "Exit codes", the same as `llctop knobs`'), a
/// knob left unrestored 6, another error 1; else what the run asked for (`trace -- CMD`:
/// the command's status).
pub fn exit_code(res: &Result<(), Error>) -> u8 {
    match res {
        Err(e) => e
            .downcast_ref::<knobs::session::KnobError>()
            .map_or(1, knobs::session::KnobError::exit_code),
        Ok(()) if RESTORE_FAILED.load(Ordering::Relaxed) => 6,
        Ok(()) => exit_status(),
    }
}

pub fn set_exit_status(code: u8) {
    EXIT_STATUS.store(usize::from(code), Ordering::Relaxed);
}

pub fn exit_status() -> u8 {
    u8::try_from(EXIT_STATUS.load(Ordering::Relaxed)).unwrap_or(1)
}

/// The signal that stopped the run, if one did: the exit status is then 128 + it, as a
/// shell reports a process killed by it, so that a script sees the run did not end
/// normally (the knobs were restored all the same).
pub fn ended_by_signal() -> Option<i32> {
    crate::signals::last()
}

/// How a headless run's output waits for its reader: until a stop signal, or the run's
/// duration from now.
pub fn output_wait(stop: &Arc<AtomicBool>, duration: Option<Duration>) -> crate::output::Wait {
    crate::output::Wait {
        stop: Some(Arc::clone(stop)),
        until: duration.and_then(|d| std::time::Instant::now().checked_add(d)),
        stall: None,
        for_reader: true,
    }
}

/// `flag` as the `stop` test of [`Collector::run`].
pub fn signalled(flag: Arc<AtomicBool>) -> impl Fn() -> bool {
    move || flag.load(Ordering::Relaxed)
}
