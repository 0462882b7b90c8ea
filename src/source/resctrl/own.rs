//! llctop's own monitoring groups: one `mon_groups/llctop-PID` per process it watches —
//! the `--cache-pid` processes and the `--cache-top N` busiest — each holding all the
//! process's threads (new threads are added every interval; a thread's children are
//! born in its group). Made, filled and removed through the knob session's resctrl
//! writes (journaled, so a killed run's groups are removed by the next run or `llctop
//! knobs restore`).
//!
//! Rules: a thread already in a group someone else made is never moved (said once per
//! process); a process whose threads are all someone else's gets no group. Groups are
//! not churned: one leaves the top N only after [`HOLD`] intervals out of it, since a
//! removed group's RMID waits in limbo before it can serve again. When the kernel has no
//! RMID free (ENOSPC) or none out of limbo (EBUSY), llctop says so, keeps monitoring the
//! groups it has, and tries again [`RETRY`] intervals later.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::knobs::Session;
use crate::knobs::session::resctrl::{GROUP_PREFIX, LIMBO, NO_RMID};
use crate::kroot::KernelRoot;
use crate::snapshot::{GroupKind, ProcessTable};

/// Intervals a top-N process stays monitored after leaving the top N.
pub const HOLD: u64 = 10;
/// Intervals before another group is tried after ENOSPC / EBUSY.
pub const RETRY: u64 = 10;

/// What to monitor per process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The N busiest processes of each interval.
    pub top: usize,
    /// These processes, while they live.
    pub pids: Vec<u32>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.top == 0 && self.pids.is_empty()
    }
}

#[derive(Debug)]
struct Group {
    path: PathBuf,
    tids: BTreeSet<u32>,
    /// The last interval the process was wanted (explicit, or in the top N).
    wanted_at: u64,
}

pub struct Own {
    session: Session,
    root: KernelRoot,
    mount: PathBuf,
    plan: Plan,
    groups: BTreeMap<u32, Group>,
    /// Processes left alone, with why (said once).
    refused: BTreeMap<u32, String>,
    /// Processes some of whose threads are someone else's (said once).
    partial: BTreeSet<u32>,
    tick: u64,
    /// No new group before this interval (after ENOSPC / EBUSY).
    quiet_until: u64,
    /// What to tell the operator (the source state carries the latest).
    pub notes: Vec<String>,
    me: u32,
}

impl Own {
    pub fn new(session: Session, root: KernelRoot, mount: PathBuf, plan: Plan) -> Own {
        Own {
            session,
            root,
            mount,
            plan,
            groups: BTreeMap::new(),
            refused: BTreeMap::new(),
            partial: BTreeSet::new(),
            tick: 0,
            quiet_until: 0,
            notes: Vec::new(),
            me: std::process::id(),
        }
    }

    /// The process monitored in the group at `path` (under the mount).
    pub fn pid_of(&self, path: &str) -> Option<u32> {
        let name = path.strip_prefix("mon_groups/")?;
        let pid: u32 = name.strip_prefix(GROUP_PREFIX)?.parse().ok()?;
        self.groups.contains_key(&pid).then_some(pid)
    }

    /// How many groups llctop holds now.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn alive(&self, pid: u32) -> bool {
        self.root.exists(format!("/proc/{pid}"))
    }

    fn tids(&self, pid: u32) -> Vec<u32> {
        self.root
            .numbered_entries(format!("/proc/{pid}/task"), "")
            .unwrap_or_default()
    }

    /// Thread ids in groups someone else made, with the group: every CTRL_MON group's
    /// and every MON group's `tasks` except llctop's own.
    fn foreign(&self) -> BTreeMap<u32, String> {
        let mut out = BTreeMap::new();
        let Ok(groups) = crate::kstate::resctrl::groups(&self.root, &self.mount) else {
            return out;
        };
        for g in groups {
            if g.kind == GroupKind::Root || self.pid_of(&g.path).is_some() {
                continue;
            }
            if let Ok(t) = self.root.read(self.mount.join(&g.path).join("tasks")) {
                for tid in t.split_whitespace().filter_map(|x| x.parse().ok()) {
                    out.insert(tid, g.path.clone());
                }
            }
        }
        out
    }

    /// The processes wanted this interval: the explicit ones, then the busiest.
    fn wanted(&self, table: Option<&ProcessTable>) -> Vec<u32> {
        let mut w: Vec<u32> = self.plan.pids.clone();
        if let Some(t) = table {
            let mut rows: Vec<_> = t
                .rows
                .iter()
                .filter(|r| !r.exited && r.pid != self.me && r.pid != 0)
                .collect();
            rows.sort_by_key(|r| std::cmp::Reverse(r.cpu_time_ns));
            for r in rows.into_iter().take(self.plan.top) {
                if !w.contains(&r.pid) {
                    w.push(r.pid);
                }
            }
        }
        w
    }

    /// One interval: drop the groups of processes that ended or left the top N long
    /// enough ago, make groups for newly wanted processes, and put every new thread of
    /// each monitored process into its group.
    pub fn step(&mut self, table: Option<&ProcessTable>) {
        self.tick += 1;
        let wanted = self.wanted(table);
        for pid in &wanted {
            if let Some(g) = self.groups.get_mut(pid) {
                g.wanted_at = self.tick;
            }
        }
        let stale: Vec<u32> = self
            .groups
            .iter()
            .filter(|(pid, g)| {
                !self.alive(**pid)
                    || (!self.plan.pids.contains(pid) && self.tick - g.wanted_at > HOLD)
            })
            .map(|(p, _)| *p)
            .collect();
        for pid in stale {
            self.remove(pid);
        }
        // A pid that ended may come back as another process: judged afresh.
        let me = &*self;
        let ended: Vec<u32> = me
            .refused
            .keys()
            .chain(me.partial.iter())
            .copied()
            .filter(|p| !me.alive(*p))
            .collect();
        for p in ended {
            self.refused.remove(&p);
            self.partial.remove(&p);
        }
        let slots = self.plan.top + self.plan.pids.len();
        let mut foreign: Option<BTreeMap<u32, String>> = None;
        for pid in wanted {
            if self.groups.contains_key(&pid) || self.refused.contains_key(&pid) {
                continue;
            }
            if self.groups.len() >= slots || self.tick < self.quiet_until || !self.alive(pid) {
                continue;
            }
            let tids = self.tids(pid);
            let f = foreign.get_or_insert_with(|| self.foreign());
            let theirs: BTreeSet<&String> = tids.iter().filter_map(|t| f.get(t)).collect();
            if !tids.is_empty() && tids.iter().all(|t| f.contains_key(t)) {
                let why = format!(
                    "pid {pid}: its threads are in resctrl group {} made by someone else: left there, not monitored by llctop",
                    names(&theirs)
                );
                self.notes.push(why.clone());
                self.refused.insert(pid, why);
                continue;
            }
            let name = format!("{GROUP_PREFIX}{pid}");
            match self.session.resctrl_make_group(&self.mount, &name) {
                Ok(path) => {
                    self.groups.insert(
                        pid,
                        Group {
                            path,
                            tids: BTreeSet::new(),
                            wanted_at: self.tick,
                        },
                    );
                }
                Err(e) => {
                    let text = e.to_string();
                    let wait = matches!(&e, crate::knobs::session::KnobError::Write { cause, .. }
                        if cause.starts_with(NO_RMID) || cause.starts_with(LIMBO));
                    if wait {
                        self.quiet_until = self.tick + RETRY;
                        self.notes.push(format!(
                            "no group for pid {pid}: {text}; monitoring the {} llctop has, trying again in {RETRY} intervals",
                            self.groups.len()
                        ));
                        break;
                    }
                    let why = format!("no group for pid {pid}: {text}");
                    self.notes.push(why.clone());
                    self.refused.insert(pid, why);
                }
            }
        }
        self.fill(&mut foreign);
    }

    /// Put each monitored process's new threads into its group (never a thread in
    /// someone else's group).
    fn fill(&mut self, foreign: &mut Option<BTreeMap<u32, String>>) {
        let pids: Vec<u32> = self.groups.keys().copied().collect();
        for pid in pids {
            let tids = self.tids(pid);
            let Some(g) = self.groups.get(&pid) else {
                continue;
            };
            let new: Vec<u32> = tids.into_iter().filter(|t| !g.tids.contains(t)).collect();
            if new.is_empty() {
                continue;
            }
            let f = foreign.get_or_insert_with(|| self.foreign());
            let (theirs, ours): (Vec<u32>, Vec<u32>) =
                new.into_iter().partition(|t| f.contains_key(t));
            if !theirs.is_empty() && self.partial.insert(pid) {
                let groups: BTreeSet<&String> = theirs.iter().filter_map(|t| f.get(t)).collect();
                let why = format!(
                    "pid {pid}: {} thread{} in resctrl group {} made by someone else: left there, not counted in llctop's group",
                    theirs.len(),
                    if theirs.len() == 1 { " is" } else { "s are" },
                    names(&groups)
                );
                self.notes.push(why);
            }
            let path = g.path.clone();
            match self.session.resctrl_add_tasks(&path, &ours) {
                Ok(listed) => {
                    if let Some(g) = self.groups.get_mut(&pid) {
                        g.tids.extend(ours.iter().filter(|t| listed.contains(t)));
                        // Someone else's threads are not looked at again.
                        g.tids.extend(theirs);
                    }
                }
                Err(e) => self.notes.push(format!("pid {pid}: {e}")),
            }
        }
    }

    fn remove(&mut self, pid: u32) {
        if let Some(g) = self.groups.remove(&pid)
            && let Err(e) = self.session.resctrl_remove_group(&g.path)
        {
            self.notes
                .push(format!("removing {}: {e}", g.path.display()));
        }
    }

    /// The mount this works on.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// The session (its end removes the groups).
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

fn names(groups: &BTreeSet<&String>) -> String {
    groups
        .iter()
        .map(|g| g.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
