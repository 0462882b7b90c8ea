//! The resctrl source: what each L3 holds for whom and the memory traffic behind it,
//! from the kernel's resctrl file system (Intel RDT, AMD PQoS; layout in
//! Documentation/filesystems/resctrl.rst) — per monitoring group and L3 domain, summed
//! by the collector per LLC, node and process.
//!
//! - [`tree`]: the mount, `info/L3_MON`, the domains and their LLCs (the groups are
//!   listed by [`crate::kstate::resctrl`], shared with the knobs session);
//! - [`reader`]: one interval's read of every group, files kept open ([`files`]);
//! - [`parse`] and [`delta`]: the kernel's text and the interval rules (pure);
//! - [`own`]: llctop's own per-process groups (`--cache-top`, `--cache-pid`).
//!
//! Not mounted or not monitoring: the state is `absent` with the reason and the command
//! that mounts it (`--resctrl-mount` mounts it for the run). The mount is looked for
//! again every interval, so mounting it while llctop runs is seen.
//!
//! No maintained crate fits: below's `resctrlfs` (0.9) reads the whole tree per call,
//! fails the read on one bad file, and knows neither `Unassigned`, `Error`, sub-NUMA
//! domains nor the root prefix `--sysroot` needs.

pub mod delta;
pub mod files;
pub mod own;
pub mod parse;
pub mod reader;
pub mod tree;

use std::path::PathBuf;

use super::Source;
use crate::kroot::KernelRoot;
use crate::snapshot::{Snapshot, SourceName, SourceState, SourceStatus};
use crate::topology::Topology;

pub const NAME: SourceName = SourceName::Resctrl;

/// What a run asks of resctrl beyond reading the groups there are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Mount resctrl for the run if it is not mounted (journaled; unmounted at the end).
    pub mount: bool,
    /// llctop's own groups per process.
    pub plan: own::Plan,
}

impl Options {
    /// Whether the run writes to resctrl (and so needs a knob session).
    pub fn writes(&self) -> bool {
        self.mount || !self.plan.is_empty()
    }
}

/// The resctrl part of a run's sources: its options and the session its writes go
/// through (`None`: nothing is written).
#[derive(Default)]
pub struct Setup {
    pub opts: Options,
    pub session: Option<crate::knobs::Session>,
}

enum State {
    /// Not there now: looked for again at every interval (a mount may come).
    Absent(String),
    /// Not there for the whole run: the CPU reports no cache or memory-bandwidth
    /// monitoring (hardware does not gain it; /proc/cpuinfo and the mounts are not read
    /// again every interval — on a big host cpuinfo alone is a costly read).
    Never(String),
    Ready(Box<reader::Reader>),
}

pub struct ResctrlSource {
    root: KernelRoot,
    topo: Topology,
    state: State,
    /// The session for the run's resctrl writes (with `--resctrl-mount`, `--cache-*`).
    session: Option<crate::knobs::Session>,
    plan: own::Plan,
    own: Option<own::Own>,
    /// Why the run's own writes could not start (a failed mount).
    trouble: Option<String>,
}

impl ResctrlSource {
    /// The source on `root`, with the run's resctrl options and the session its writes
    /// go through (none: a read-only run; what it asked to write is said undone).
    pub fn new(root: &KernelRoot, topo: &Topology, setup: Setup) -> ResctrlSource {
        let Setup { opts, session } = setup;
        let trouble = (opts.writes() && session.is_none()).then(|| {
            "--read-only: resctrl is not mounted and no process is monitored in a group of llctop's (--resctrl-mount, --cache-top and --cache-pid write to the kernel)".to_string()
        });
        let mut s = ResctrlSource {
            root: root.clone(),
            topo: topo.clone(),
            state: State::Absent(String::new()),
            session,
            plan: opts.plan.clone(),
            own: None,
            trouble,
        };
        if opts.mount && s.session.is_some() {
            s.mount();
        }
        s.find();
        s
    }

    /// Mount resctrl if it is not mounted.
    fn mount(&mut self) {
        let m = crate::mounts::Mounts::discover(&self.root);
        if m.resctrl.is_some() {
            return;
        }
        let Some(session) = self.session.as_mut() else {
            self.trouble = Some("--resctrl-mount needs a knob session (not --read-only)".into());
            return;
        };
        if let Err(e) = session.resctrl_mount(std::path::Path::new(tree::DEFAULT_MOUNT)) {
            self.trouble = Some(format!("--resctrl-mount: {e}"));
        }
    }

    /// Look for the mount; once found, start reading (and the run's own groups).
    fn find(&mut self) {
        match tree::find(&self.root, &self.topo) {
            Ok(layout) => {
                let mount: PathBuf = layout.mount.clone();
                self.state = State::Ready(Box::new(reader::Reader::new(self.root.clone(), layout)));
                if !self.plan.is_empty()
                    && self.own.is_none()
                    && let Some(session) = self.session.take()
                {
                    self.own = Some(own::Own::new(
                        session,
                        self.root.clone(),
                        mount,
                        self.plan.clone(),
                    ));
                }
            }
            Err(why) if !tree::cpu_monitors(&self.root) => self.state = State::Never(why),
            Err(why) => self.state = State::Absent(why),
        }
    }
}

/// The source's state for the interval: what it reads, and everything it cannot.
fn status(
    r: &reader::Reader,
    trouble: &reader::Trouble,
    res: &crate::snapshot::Resctrl,
    run_trouble: Option<&str>,
    own: Option<&own::Own>,
) -> SourceStatus {
    {
        let l = &r.layout;
        let mut parts = vec![format!(
            "{} at {}: {} L3 domain{}{}, {} group{}{}",
            NAME,
            l.mount.display(),
            l.leaves
                .iter()
                .map(|x| x.l3)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            if l.leaves.len() == 1 { "" } else { "s" },
            if l.leaves.iter().any(|x| x.node.is_some()) {
                " (per node: sub-NUMA clustering)"
            } else {
                ""
            },
            res.groups.len(),
            if res.groups.len() == 1 { "" } else { "s" },
            l.info
                .num_rmids
                .map_or(String::new(), |n| format!(" of {n} RMIDs")),
        )];
        if let Some(mode) = &l.info.assign_mode {
            let c = res.info.counters.first();
            parts.push(format!(
                "{mode} mode{}",
                c.map_or(String::new(), |c| format!(
                    ": {} counters per domain, {} free in L3 {}",
                    c.total.map_or("?".into(), |n| n.to_string()),
                    c.available.map_or("?".into(), |n| n.to_string()),
                    c.l3
                ))
            ));
        }
        let mut degraded = Vec::new();
        let e = l.events;
        for (on, what) in [
            (e.occupancy, "no llc_occupancy: occupancy unknown"),
            (e.total, "no mbm_total_bytes: bandwidth unknown"),
            (
                e.local,
                "no mbm_local_bytes: local and remote bandwidth unknown",
            ),
        ] {
            if !on {
                degraded.push(what.to_string());
            }
        }
        degraded.extend(l.notes.iter().cloned());
        if trouble.unreadable_count > 0 {
            degraded.push(format!(
                "{} reading{} not a count: {}",
                trouble.unreadable_count,
                if trouble.unreadable_count == 1 {
                    ""
                } else {
                    "s"
                },
                trouble.unreadable.join("; ")
            ));
        }
        if trouble.resets > 0 {
            degraded.push(format!(
                "{} counter{} went backwards (reset or reused RMID): {} dropped",
                trouble.resets,
                if trouble.resets == 1 { "" } else { "s" },
                if trouble.resets == 1 {
                    "its interval"
                } else {
                    "their intervals"
                }
            ));
        }
        let (open, all) = r.files();
        if open < all {
            degraded.push(format!(
                "{open} of {all} counter files kept open (RLIMIT_NOFILE): the rest are opened at every read"
            ));
        }
        if let Some(t) = run_trouble {
            degraded.push(t.to_string());
        }
        if let Some(o) = own {
            parts.push(format!(
                "llctop monitors {} process{}",
                o.len(),
                if o.len() == 1 { "" } else { "es" }
            ));
            if let Some(n) = o.notes.last() {
                degraded.push(n.clone());
            }
        }
        let state = if degraded.is_empty() {
            SourceState::Active
        } else {
            SourceState::Degraded
        };
        parts.extend(degraded);
        SourceStatus {
            name: NAME.as_str().into(),
            state,
            reason: Some(parts.join("; ")),
            note: None,
        }
    }
}

impl Source for ResctrlSource {
    fn name(&self) -> &'static str {
        NAME.as_str()
    }

    fn sample(&mut self, _topo: &Topology, snap: &mut Snapshot) {
        if matches!(self.state, State::Absent(_)) {
            self.find();
        }
        if let Some(o) = self.own.as_mut() {
            o.step(snap.processes.as_ref());
        }
        let State::Ready(r) = &mut self.state else {
            if let State::Absent(why) | State::Never(why) = &self.state {
                let why = match &self.trouble {
                    Some(t) => format!("{why}; {t}"),
                    None => why.clone(),
                };
                snap.sources.push(SourceStatus::absent(NAME, why));
            }
            return;
        };
        let own = self.own.as_ref();
        let pid_of = |path: &str| own.and_then(|o| o.pid_of(path));
        match r.read(snap.time.interval_ns, &pid_of) {
            Ok((res, trouble)) => {
                if let Some(t) = snap.processes.as_mut() {
                    for row in &mut t.rows {
                        row.cache = res.of_pid(row.pid).map(|g| g.total);
                    }
                }
                let status = status(r, &trouble, &res, self.trouble.as_deref(), own);
                snap.sources.push(status);
                snap.resctrl = Some(res);
            }
            Err(why) => {
                // Unmounted under us: looked for again at once (and every interval).
                self.find();
                let why = match &self.state {
                    State::Absent(now) | State::Never(now) => now.clone(),
                    State::Ready(_) => format!("resctrl could not be read: {why}"),
                };
                snap.sources.push(SourceStatus::absent(NAME, why));
            }
        }
    }
}
