//! One interval's read of every monitoring group: the groups listed anew (they come and
//! go), each group's counter files kept open across intervals, each reading turned into
//! the interval's figure ([`super::delta`]), summed per group and for the machine.
//!
//! A group removed and made again under the same name (its directory's inode changes)
//! starts from a new baseline: a reused RMID's old counts are never taken as traffic.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;

use super::delta;
use super::files::{Budget, Counter, MAX_TEXT};
use super::parse::{self, Value};
use super::tree::{self, Layout};
use crate::kroot::KernelRoot;
use crate::kstate::resctrl::{self as groups, GroupDir};
use crate::snapshot::{CacheMon, DomainMon, Resctrl, ResctrlGroup, Unread};

/// One event's file in one leaf, and its last valid reading (cumulative counters).
#[derive(Debug)]
struct Event {
    file: Counter,
    prev: Option<u64>,
}

/// The three events of one leaf (`None`: not monitored by this kernel).
#[derive(Debug)]
struct LeafFiles {
    occupancy: Option<Event>,
    total: Option<Event>,
    local: Option<Event>,
}

#[derive(Debug)]
struct GroupState {
    dir: GroupDir,
    /// The group directory's inode when its files were opened.
    ino: Option<u64>,
    leaves: Vec<LeafFiles>,
}

/// What went wrong in an interval, for the source state.
#[derive(Debug, Default)]
pub struct Trouble {
    /// The first few files that could not be read or did not hold a number, with why.
    pub unreadable: Vec<String>,
    pub unreadable_count: u64,
    pub resets: u64,
}

pub struct Reader {
    root: KernelRoot,
    pub layout: Layout,
    groups: BTreeMap<String, GroupState>,
    pub budget: Budget,
}

/// How many unreadable files a state names.
const NAMED: usize = 3;

impl Reader {
    pub fn new(root: KernelRoot, layout: Layout) -> Reader {
        Reader {
            root,
            layout,
            groups: BTreeMap::new(),
            budget: Budget::new(),
        }
    }

    /// The same with a budget of `n` kept files (tests).
    pub fn with_budget(mut self, n: usize) -> Reader {
        self.budget = Budget::of(n);
        self
    }

    /// Counter files now kept open, and all counter files.
    pub fn files(&self) -> (usize, usize) {
        let mut open = 0;
        let mut all = 0;
        for g in self.groups.values() {
            for l in &g.leaves {
                for e in [&l.occupancy, &l.total, &l.local].into_iter().flatten() {
                    all += 1;
                    open += usize::from(e.file.is_open());
                }
            }
        }
        (open, all)
    }

    fn leaf_files(&self, dir: &GroupDir) -> Vec<LeafFiles> {
        let base = self.layout.mount.join(&dir.path).join("mon_data");
        let ev = |on: bool, leaf: &tree::Leaf, name: &str| {
            on.then(|| Event {
                file: Counter::new(base.join(&leaf.rel).join(name)),
                prev: None,
            })
        };
        let e = self.layout.events;
        self.layout
            .leaves
            .iter()
            .map(|leaf| LeafFiles {
                occupancy: ev(e.occupancy, leaf, tree::OCCUPANCY),
                total: ev(e.total, leaf, tree::TOTAL),
                local: ev(e.local, leaf, tree::LOCAL),
            })
            .collect()
    }

    fn ino(&self, dir: &GroupDir) -> Option<u64> {
        std::fs::metadata(self.root.path(self.layout.mount.join(&dir.path)))
            .ok()
            .map(|m| m.ino())
    }

    /// Bring the group list up to date: new groups get their files, gone ones close
    /// theirs, a group made again starts afresh.
    fn sync(&mut self, dirs: Vec<GroupDir>) {
        let keep: std::collections::BTreeSet<&str> = dirs.iter().map(|d| d.path.as_str()).collect();
        let gone: Vec<String> = self
            .groups
            .keys()
            .filter(|k| !keep.contains(k.as_str()))
            .cloned()
            .collect();
        for k in gone {
            if let Some(mut g) = self.groups.remove(&k) {
                close(&mut g, &self.budget);
            }
        }
        for d in dirs {
            let ino = self.ino(&d);
            let fresh = match self.groups.get(&d.path) {
                Some(g) => g.ino != ino || g.dir.kind != d.kind,
                None => true,
            };
            if fresh {
                if let Some(mut old) = self.groups.remove(&d.path) {
                    close(&mut old, &self.budget);
                }
                let leaves = self.leaf_files(&d);
                self.groups.insert(
                    d.path.clone(),
                    GroupState {
                        dir: d,
                        ino,
                        leaves,
                    },
                );
            }
        }
    }

    /// Read every group. `interval_ns`: the interval's length (0 for the baseline).
    /// `pid_of`: the process llctop monitors in a group path, if any.
    pub fn read(
        &mut self,
        interval_ns: u64,
        pid_of: &dyn Fn(&str) -> Option<u32>,
    ) -> Result<(Resctrl, Trouble), String> {
        // Unmounted since (the mount point is a bare directory again): looked for anew.
        if !self.root.is_dir(self.layout.mount.join("info/L3_MON")) {
            return Err(format!(
                "{} has no info/L3_MON any more: unmounted?",
                self.layout.mount.display()
            ));
        }
        let dirs = groups::groups(&self.root, &self.layout.mount).map_err(|e| e.to_string())?;
        self.sync(dirs);
        let files = self.files().1;
        let workers = if files >= PARALLEL_FROM {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_WORKERS)
        } else {
            1
        };
        let (root, budget, leaves) = (&self.root, &self.budget, &self.layout.leaves);
        let mut states: Vec<&mut GroupState> = self.groups.values_mut().collect();
        let per = states.len().div_ceil(workers.max(1)).max(1);
        let parts: Vec<(Vec<Vec<DomainMon>>, Trouble)> = if workers <= 1 {
            vec![read_groups(&mut states, leaves, root, budget, interval_ns)]
        } else {
            std::thread::scope(|sc| {
                let handles: Vec<_> = states
                    .chunks_mut(per)
                    .map(|chunk| {
                        sc.spawn(move || read_groups(chunk, leaves, root, budget, interval_ns))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        };
        let mut trouble = Trouble::default();
        let mut all_domains = Vec::with_capacity(states.len());
        for (d, t) in parts {
            all_domains.extend(d);
            trouble.resets += t.resets;
            trouble.unreadable_count += t.unreadable_count;
            for u in t.unreadable {
                if trouble.unreadable.len() < NAMED {
                    trouble.unreadable.push(u);
                }
            }
        }
        let groups: Vec<ResctrlGroup> = states
            .iter()
            .zip(all_domains)
            .map(|(g, domains)| ResctrlGroup {
                pid: pid_of(&g.dir.path),
                path: g.dir.path.clone(),
                kind: g.dir.kind,
                total: CacheMon::sum(domains.iter().map(|d| &d.mon)).unwrap_or_default(),
                domains,
            })
            .collect();
        // By path (the map's order): the root ("") first.
        let mut info = self.layout.info.clone();
        if let Some(avail) = tree::available_counters(&self.root, &self.layout.mount) {
            for (l3, n) in avail {
                match info.counters.iter_mut().find(|c| c.l3 == l3) {
                    Some(c) => c.available = Some(n),
                    None => info.counters.push(crate::snapshot::DomainCounters {
                        l3,
                        total: None,
                        available: Some(n),
                    }),
                }
            }
        }
        let mut r = Resctrl {
            info,
            total: CacheMon::default(),
            groups,
            resets: trouble.resets,
            unreadable: trouble.unreadable_count,
        };
        r.total = CacheMon::sum(r.top_level().map(|g| &g.total)).unwrap_or_default();
        Ok((r, trouble))
    }
}

/// Counter files from which one interval's read is split between threads (each read of
/// a real resctrl file interrupts a CPU of its domain: reads of different groups run
/// side by side), and the most threads.
const PARALLEL_FROM: usize = 1024;
const MAX_WORKERS: usize = 4;

/// Read `groups` (a share of the interval's), their domains in order.
fn read_groups(
    groups: &mut [&mut GroupState],
    leaves: &[tree::Leaf],
    root: &KernelRoot,
    budget: &Budget,
    interval_ns: u64,
) -> (Vec<Vec<DomainMon>>, Trouble) {
    let mut trouble = Trouble::default();
    let mut buf = [0u8; MAX_TEXT];
    let out = groups
        .iter_mut()
        .map(|g| {
            leaves
                .iter()
                .zip(g.leaves.iter_mut())
                .map(|(leaf, files)| {
                    let mut read = |ev: &mut Option<Event>, cumulative: bool| {
                        read_event(
                            ev,
                            cumulative,
                            root,
                            budget,
                            &mut buf,
                            interval_ns,
                            &mut trouble,
                        )
                    };
                    let (occupancy_bytes, occupancy_why) = read(&mut files.occupancy, false);
                    let (mbm_total_bytes, total_why) = read(&mut files.total, true);
                    let (mbm_local_bytes, local_why) = read(&mut files.local, true);
                    DomainMon {
                        l3: leaf.l3,
                        node: leaf.node,
                        llc: leaf.llc,
                        mon: CacheMon {
                            occupancy_bytes,
                            mbm_total_bytes,
                            mbm_local_bytes,
                            occupancy_why,
                            total_why,
                            local_why,
                        },
                    }
                })
                .collect()
        })
        .collect();
    (out, trouble)
}

/// One event's figure: its file read, parsed, and (for a byte counter) differenced.
fn read_event(
    ev: &mut Option<Event>,
    cumulative: bool,
    root: &KernelRoot,
    budget: &Budget,
    buf: &mut [u8; MAX_TEXT],
    interval_ns: u64,
    trouble: &mut Trouble,
) -> delta::Figure {
    let Some(ev) = ev.as_mut() else {
        return (None, Some(Unread::NoEvent));
    };
    let v = match ev.file.read(root, budget, buf) {
        Ok((n, again)) => {
            if again {
                // Not the counter read before: a new baseline.
                ev.prev = None;
            }
            let v = if n < MAX_TEXT {
                parse::value(&buf[..n])
            } else {
                Value::Not(Unread::Unreadable)
            };
            if v == Value::Not(Unread::Unreadable) {
                // Its content is never quoted: a tree handed to llctop could make it any
                // file's (kroot.rs refuses links out of the tree; this is the second line).
                note(
                    trouble,
                    format!(
                        "{}: not a count ({} bytes that are neither a number nor one of the kernel's words)",
                        root.path(ev.file.path()).display(),
                        n
                    ),
                );
            }
            v
        }
        Err(e) => {
            note(trouble, e.to_string());
            ev.prev = None;
            return (None, Some(Unread::Unreadable));
        }
    };
    if !cumulative {
        return delta::level(v);
    }
    let f = delta::step(&mut ev.prev, v, interval_ns);
    if f.1 == Some(Unread::Reset) {
        trouble.resets += 1;
    }
    f
}

fn note(t: &mut Trouble, what: String) {
    t.unreadable_count += 1;
    if t.unreadable.len() < NAMED {
        t.unreadable.push(what);
    }
}

fn close(g: &mut GroupState, budget: &Budget) {
    for l in &mut g.leaves {
        for e in [&mut l.occupancy, &mut l.total, &mut l.local]
            .into_iter()
            .flatten()
        {
            e.file.close(budget);
        }
    }
}
