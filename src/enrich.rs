//! The enrichment stage of the pipeline: after every source has made the interval's
//! process rows, fill what only `/proc/PID` knows — name, thread count, cgroup — for the
//! shown rows only, and only what is not known already: one `/proc/PID/stat` read per
//! live row (none where the source named it, as the procfs thread scan does, or marked
//! it exited, as the BPF exit hook does), the cgroup remembered by (pid, start time) and
//! re-read every [`CGROUP_REFRESH`] rounds. Then the NUMA-balancing counters of those
//! rows' cgroups (cgroup `memory.stat`, v6.12+), which need the cgroups first. A process
//! that exited keeps the name it had when it was last a row; the table's `total` is the
//! processes alive at the end of the interval (`/proc/PID` directories). While a sched_ext
//! scheduler runs, each shown row's class (`ext.enabled` of `/proc/PID/sched`).

use std::collections::HashMap;
use std::path::PathBuf;

use procfs_core::ProcessCGroups;

use crate::kroot::KernelRoot;
use crate::snapshot::{CgroupNuma, Snapshot, SourceState};
use crate::source::procfs::numa::{CGROUP_KEYS, Counters, diff, parse_kv};

/// Shown for a row whose process exited before its name could be read.
pub const EXITED: &str = "<exited>";

/// Processes remembered (name, start time, cgroup): this many at most (the least
/// recently shown go first).
const KEPT_NAMES: usize = 65_536;

/// Where a process's cgroup lives: the v2 path and, on hybrid v1 systems, the path in the
/// v1 memory hierarchy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CgroupRef {
    pub v2: Option<String>,
    pub v1_memory: Option<String>,
}

/// The cgroups of a process (v2 path, and the v1 memory-controller path on hybrid systems).
pub fn read_cgroup(root: &KernelRoot, pid: u32) -> CgroupRef {
    let Ok(groups) = root.parse::<ProcessCGroups>(format!("/proc/{pid}/cgroup")) else {
        return CgroupRef::default();
    };
    let mut r = CgroupRef::default();
    for g in groups.0 {
        if g.hierarchy == 0 && g.controllers.is_empty() {
            r.v2 = Some(g.pathname.clone());
        } else if g.controllers.iter().any(|c| c == "memory") {
            r.v1_memory = Some(g.pathname.clone());
        }
    }
    r
}

/// Whether the sched_ext scheduler runs process `pid`'s main thread: `ext.enabled` of
/// `/proc/PID/sched` (kernels with sched_ext; the one read per shown row while a BPF
/// scheduler runs).
pub fn sched_class(root: &KernelRoot, pid: u32) -> Option<bool> {
    let text = root.read(format!("/proc/{pid}/sched")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "ext.enabled").then(|| v.trim() == "1")
    })
}

/// What the stage learned of a process it showed, by pid.
#[derive(Debug, Clone)]
struct Known {
    /// Its start time (`/proc/PID/stat` field 22), when read: a pid reused by another
    /// process does not match it.
    start: Option<u64>,
    comm: String,
    cgroup: CgroupRef,
    /// The round its cgroup was read in.
    cgroup_round: u64,
    /// The round it was last a row in.
    seen: u64,
}

/// Rounds a process's cgroup is taken from what the stage knows before it is read again
/// (a process seldom moves between cgroups; one that does shows its new cgroup within
/// this many intervals).
pub const CGROUP_REFRESH: u64 = 30;

/// The stage: the kernel root to read `/proc/PID` from and the per-cgroup NUMA deltas.
pub struct ProcessInfo {
    root: KernelRoot,
    cgroup_numa: CgroupNumaReader,
    known: HashMap<u32, Known>,
    round: u64,
}

impl ProcessInfo {
    pub fn new(root: KernelRoot) -> Self {
        ProcessInfo {
            root,
            cgroup_numa: CgroupNumaReader::default(),
            known: HashMap::new(),
            round: 0,
        }
    }

    /// Fill the rows of `snap.processes`, then `snap.numa.cgroups` (when the NUMA
    /// counters are there); reasons for missing cgroup counters join the
    /// `procfs.numa` source state. A row of a live process costs one read of
    /// `/proc/PID/stat` (name, threads and start time) unless its source named it, and
    /// one of `/proc/PID/cgroup` every [`CGROUP_REFRESH`] rounds; a row the source marked
    /// exited costs nothing.
    pub fn enrich(&mut self, snap: &mut Snapshot) {
        self.round += 1;
        let alive = self
            .root
            .list_dir("/proc")
            .ok()
            .map(|names| names.iter().filter(|n| n.parse::<u32>().is_ok()).count());
        if let (Some(t), Some(n)) = (snap.processes.as_mut(), alive) {
            t.total = u32::try_from(n).unwrap_or(u32::MAX);
        }
        let mut refs = Vec::new();
        let scx = snap.sched_ext.as_ref().is_some_and(|s| s.enabled());
        for r in snap.processes.iter_mut().flat_map(|t| t.rows.iter_mut()) {
            refs.push(self.fill(r));
            if scx && !r.exited {
                r.sched_ext = sched_class(&self.root, r.pid);
            }
        }
        if self.known.len() > KEPT_NAMES {
            let mut rounds: Vec<u64> = self.known.values().map(|k| k.seen).collect();
            let cut = *rounds.select_nth_unstable(self.known.len() - KEPT_NAMES).1;
            self.known.retain(|_, k| k.seen > cut);
        }
        let Some(numa) = snap.numa.as_mut() else {
            // No NUMA counters this interval (or the baseline): keep the cgroups' baseline.
            let mut ignored = Vec::new();
            self.cgroup_numa.read(&self.root, &refs, &mut ignored);
            return;
        };
        let mut missing = Vec::new();
        numa.cgroups = self.cgroup_numa.read(&self.root, &refs, &mut missing);
        if missing.is_empty() {
            return;
        }
        if let Some(st) = snap
            .sources
            .iter_mut()
            .find(|s| s.is(crate::snapshot::SourceName::ProcfsNuma))
        {
            let mut notes: Vec<String> = st.reason.take().into_iter().collect();
            notes.extend(missing);
            st.reason = Some(notes.join("; "));
            if st.state == SourceState::Active {
                st.state = SourceState::Degraded;
            }
        }
    }

    /// Name one row and find its cgroup, reading `/proc/PID` only for what is not
    /// known; returns the cgroup.
    fn fill(&mut self, r: &mut crate::snapshot::ProcessStats) -> CgroupRef {
        let mut start = None;
        if !r.exited && (r.comm.is_empty() || r.threads == 0) {
            let base = format!("/proc/{}", r.pid);
            match self
                .root
                .parse::<procfs_core::process::Stat>(format!("{base}/stat"))
            {
                Ok(st) => {
                    if r.comm.is_empty() {
                        r.comm = st.comm;
                    }
                    if r.threads == 0 {
                        r.threads = u32::try_from(st.num_threads).unwrap_or(0);
                    }
                    start = Some(st.starttime);
                }
                Err(_) => r.exited = true,
            }
        }
        // What is known of this pid, unless the pid now belongs to another process.
        let same = self
            .known
            .get(&r.pid)
            .is_some_and(|k| match (start, k.start) {
                (Some(a), Some(b)) => a == b,
                _ => r.comm.is_empty() || r.comm == k.comm,
            });
        if !same {
            self.known.remove(&r.pid);
        }
        let known = self.known.get(&r.pid);
        if r.comm.is_empty() {
            r.comm = known.map_or_else(|| EXITED.to_string(), |k| k.comm.clone());
        }
        let fresh = known.is_some_and(|k| self.round - k.cgroup_round < CGROUP_REFRESH);
        let (cgroup, cgroup_round) = match known {
            Some(k) if fresh || r.exited => (k.cgroup.clone(), k.cgroup_round),
            _ if r.exited => (CgroupRef::default(), self.round),
            _ => (read_cgroup(&self.root, r.pid), self.round),
        };
        r.cgroup = cgroup.v2.clone().or_else(|| cgroup.v1_memory.clone());
        if r.comm != EXITED {
            let start = start.or_else(|| known.and_then(|k| k.start));
            self.known.insert(
                r.pid,
                Known {
                    start,
                    comm: r.comm.clone(),
                    cgroup: cgroup.clone(),
                    cgroup_round,
                    seen: self.round,
                },
            );
        }
        cgroup
    }
}

/// Per-cgroup NUMA balancing counters, diffed against the previous read of each cgroup.
/// A cgroup is read every interval from the first time one of its processes is a shown
/// row until it has not been one for [`KEEP_READS`] reads (or is gone), so each delta
/// covers exactly one interval even while its processes sleep.
#[derive(Debug, Default)]
pub struct CgroupNumaReader {
    tracked: HashMap<String, Tracked>,
    mounts: Option<CgroupMounts>,
    /// `memory.stat` files found absent (`false`) or without NUMA counters (`true`),
    /// not probed again until the list is cleared every [`KEEP_READS`] reads.
    probed: HashMap<PathBuf, bool>,
    reads: u32,
}

/// Reads a cgroup stays tracked after its processes left the shown rows.
pub const KEEP_READS: u32 = 60;

#[derive(Debug)]
struct Tracked {
    /// Its `memory.stat`, root-prefixed.
    file: PathBuf,
    /// The counters at the previous read (empty before the first).
    prev: Counters,
    /// Reads since one of its processes was a shown row.
    away: u32,
}

#[derive(Debug, Default, Clone)]
struct CgroupMounts {
    v2: Option<PathBuf>,
    v1_memory: Option<PathBuf>,
}

impl CgroupNumaReader {
    /// The counters of each tracked cgroup since the previous read, by path; the rows'
    /// cgroups (`refs`) join the tracked ones (a cgroup read for the first time gives its
    /// baseline only). Why none could be read goes to `missing`.
    pub fn read(
        &mut self,
        root: &KernelRoot,
        refs: &[CgroupRef],
        missing: &mut Vec<String>,
    ) -> Vec<CgroupNuma> {
        let mounts = self.mounts.get_or_insert_with(|| find_mounts(root)).clone();
        let mut without_counters = 0;
        for t in self.tracked.values_mut() {
            t.away += 1;
        }
        self.reads += 1;
        if self.reads.is_multiple_of(KEEP_READS) {
            self.probed.clear();
        }
        let mut distinct = std::collections::HashSet::new();
        for r in refs.iter().filter(|r| distinct.insert(*r)) {
            // Prefer the v2 hierarchy; fall back to the v1 memory controller.
            let candidates = [
                (mounts.v2.as_ref(), r.v2.as_ref()),
                (mounts.v1_memory.as_ref(), r.v1_memory.as_ref()),
            ];
            for (mount, path) in candidates {
                let (Some(mount), Some(path)) = (mount, path) else {
                    continue;
                };
                if let Some(t) = self.tracked.get_mut(path) {
                    t.away = 0;
                    break;
                }
                let file = mount.join(path.trim_start_matches('/')).join("memory.stat");
                match self.probed.get(&file) {
                    Some(true) => {
                        without_counters += 1;
                        break;
                    }
                    Some(false) => continue,
                    None if !file.exists() => {
                        self.probed.insert(file, false);
                        continue;
                    }
                    None => {}
                }
                let t = self.tracked.entry(path.clone()).or_insert(Tracked {
                    file,
                    prev: Counters::new(),
                    away: 0,
                });
                t.away = 0;
                break;
            }
        }
        let mut out = Vec::new();
        let probed = &mut self.probed;
        self.tracked.retain(|path, t| {
            if t.away > KEEP_READS {
                return false;
            }
            let Ok(text) = crate::kroot::read_regular(&t.file) else {
                return false; // the cgroup is gone
            };
            let cur: Counters = parse_kv(&text)
                .into_iter()
                .filter(|(k, _)| CGROUP_KEYS.contains(&k.as_str()))
                .collect();
            if cur.is_empty() {
                without_counters += 1;
                probed.insert(t.file.clone(), true);
                return false;
            }
            if !t.prev.is_empty() {
                let d = diff(&t.prev, &cur);
                out.push(CgroupNuma {
                    path: path.clone(),
                    numa_pages_migrated: d.get("numa_pages_migrated").copied(),
                    numa_pte_updates: d.get("numa_pte_updates").copied(),
                    numa_hint_faults: d.get("numa_hint_faults").copied(),
                });
            }
            t.prev = cur;
            true
        });
        out.sort_by(|a, b| a.path.cmp(&b.path));
        if mounts.v2.is_none() && mounts.v1_memory.is_none() {
            missing.push("no cgroup2 or v1 memory mount in /proc/self/mountinfo".into());
        } else if without_counters > 0 && out.is_empty() {
            missing.push(
                "cgroup memory.stat has no NUMA balancing counters (kernel < 6.12, cgroup v1, or CONFIG_NUMA_BALANCING off)"
                    .into(),
            );
        }
        out
    }
}

/// The cgroup mounts, as root-prefixed paths.
fn find_mounts(root: &KernelRoot) -> CgroupMounts {
    let m = crate::mounts::Mounts::discover(root);
    CgroupMounts {
        v2: m.cgroup2.map(|p| root.path(p)),
        v1_memory: m.memory_v1.map(|p| root.path(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn stat(migrated: u64) -> String {
        format!(
            "anon 4096\nnuma_pages_migrated {migrated}\nnuma_pte_updates 10\nnuma_hint_faults 3\n"
        )
    }

    /// `/proc/PID/stat` of a process named `comm` with `threads` threads, started at
    /// `start` ticks after boot (every field of a v6 kernel's line).
    fn pid_stat(pid: u32, comm: &str, threads: u32, start: u64) -> String {
        let mut f: Vec<String> = vec![pid.to_string(), format!("({comm})"), "S".into()];
        f.extend((4..=52).map(|i| match i {
            20 => threads.to_string(),
            22 => start.to_string(),
            _ => "0".into(),
        }));
        f.join(" ") + "\n"
    }

    fn snap_of(rows: &[(u32, bool)]) -> Snapshot {
        let mut s = crate::snapshot::with_rows(rows);
        if let Some(t) = s.processes.as_mut() {
            t.total = 999;
        }
        s
    }

    fn rows(s: &Snapshot) -> Vec<(String, u32, bool, Option<String>)> {
        s.processes
            .as_ref()
            .unwrap()
            .rows
            .iter()
            .map(|r| (r.comm.clone(), r.threads, r.exited, r.cgroup.clone()))
            .collect()
    }

    #[test]
    fn the_class_is_read_only_while_a_sched_ext_scheduler_runs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        put(d, "proc/7/stat", &pid_stat(7, "worker", 1, 100));
        put(d, "proc/8/stat", &pid_stat(8, "rt", 1, 100));
        put(
            d,
            "proc/7/sched",
            "worker (7, #threads: 1)\n---\nse.exec_start : 1.0\next.enabled : 1\n",
        );
        put(d, "proc/8/sched", "rt (8, #threads: 1)\next.enabled : 0\n");
        put(d, "proc/self/mountinfo", "");
        let mut info = ProcessInfo::new(KernelRoot::new(d));
        let class = |s: &Snapshot| -> Vec<Option<bool>> {
            s.processes
                .as_ref()
                .unwrap()
                .rows
                .iter()
                .map(|r| r.sched_ext)
                .collect()
        };
        let mut s = snap_of(&[(7, false), (8, false)]);
        info.enrich(&mut s);
        assert_eq!(class(&s), [None, None], "not read while none runs");
        let mut s = snap_of(&[(7, false), (8, false)]);
        s.sched_ext = Some(crate::snapshot::SchedExt {
            state: "enabled".into(),
            ..Default::default()
        });
        info.enrich(&mut s);
        assert_eq!(class(&s), [Some(true), Some(false)]);
    }

    #[test]
    fn an_exited_process_keeps_its_name_and_the_total_is_the_processes_alive() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        put(d, "proc/7/stat", &pid_stat(7, "worker", 3, 100));
        put(d, "proc/8/stat", &pid_stat(8, "other", 1, 200));
        put(d, "proc/self/mountinfo", "");
        let mut info = ProcessInfo::new(KernelRoot::new(d));
        let mut s = snap_of(&[(7, false)]);
        info.enrich(&mut s);
        assert_eq!(rows(&s)[0], ("worker".into(), 3, false, None));
        assert_eq!(s.processes.as_ref().unwrap().total, 2);
        // 7 exits: its row keeps the name and is marked exited; a process never seen is
        // <exited>.
        std::fs::remove_dir_all(d.join("proc/7")).unwrap();
        let mut s = snap_of(&[(7, false), (9, false)]);
        info.enrich(&mut s);
        let r = rows(&s);
        assert_eq!((r[0].0.as_str(), r[0].2), ("worker", true));
        assert_eq!((r[1].0.as_str(), r[1].2), (EXITED, true));
        assert_eq!(s.processes.as_ref().unwrap().total, 1, "only 8 is alive");
    }

    #[test]
    fn proc_is_read_only_for_what_is_not_known() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        put(d, "proc/self/mountinfo", "");
        put(d, "proc/7/stat", &pid_stat(7, "worker", 3, 100));
        put(d, "proc/7/cgroup", "0::/jobs/a\n");
        let mut info = ProcessInfo::new(KernelRoot::new(d));
        let mut s = snap_of(&[(7, false)]);
        info.enrich(&mut s);
        assert_eq!(
            rows(&s)[0],
            ("worker".into(), 3, false, Some("/jobs/a".into()))
        );
        // The cgroup is remembered for the same process (pid and start time): the file
        // moving is seen only at the refresh.
        put(d, "proc/7/cgroup", "0::/jobs/b\n");
        put(d, "proc/7/stat", &pid_stat(7, "worker", 4, 100));
        for _ in 1..CGROUP_REFRESH {
            let mut s = snap_of(&[(7, false)]);
            info.enrich(&mut s);
            assert_eq!(
                rows(&s)[0],
                ("worker".into(), 4, false, Some("/jobs/a".into()))
            );
        }
        let mut s = snap_of(&[(7, false)]);
        info.enrich(&mut s);
        assert_eq!(rows(&s)[0].3.as_deref(), Some("/jobs/b"), "refreshed");
        // Another process with the same pid (another start time) is read afresh.
        put(d, "proc/7/stat", &pid_stat(7, "next", 1, 500));
        put(d, "proc/7/cgroup", "0::/jobs/c\n");
        let mut s = snap_of(&[(7, false)]);
        info.enrich(&mut s);
        assert_eq!(
            rows(&s)[0],
            ("next".into(), 1, false, Some("/jobs/c".into()))
        );
        // A row its source marked exited (and named) reads nothing: not even a stat
        // file that would say otherwise.
        let mut s = snap_of(&[(7, true)]);
        s.processes.as_mut().unwrap().rows[0].comm = "next".into();
        info.enrich(&mut s);
        assert_eq!(
            rows(&s)[0],
            ("next".into(), 0, true, Some("/jobs/c".into()))
        );
    }

    #[test]
    fn a_cgroup_is_read_every_interval_while_its_processes_sleep_then_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        put(
            d,
            "proc/self/mountinfo",
            "30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n",
        );
        put(d, "sys/fs/cgroup/work/memory.stat", &stat(100));
        let root = KernelRoot::new(d);
        let mut r = CgroupNumaReader::default();
        let work = CgroupRef {
            v2: Some("/work".into()),
            v1_memory: None,
        };
        let mut missing = Vec::new();
        assert!(
            r.read(&root, std::slice::from_ref(&work), &mut missing)
                .is_empty(),
            "baseline"
        );
        // Its processes left the rows (asleep); the counters moved: still this interval's.
        put(d, "sys/fs/cgroup/work/memory.stat", &stat(130));
        let out = r.read(&root, &[], &mut missing);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (
                out[0].path.as_str(),
                out[0].numa_pages_migrated,
                out[0].numa_hint_faults
            ),
            ("/work", Some(30), Some(0))
        );
        for _ in 1..KEEP_READS {
            assert_eq!(r.read(&root, &[], &mut missing).len(), 1);
        }
        assert!(
            r.read(&root, &[], &mut missing).is_empty(),
            "dropped after KEEP_READS"
        );
        // A removed cgroup is dropped at once.
        assert!(
            r.read(&root, std::slice::from_ref(&work), &mut missing)
                .is_empty()
        );
        std::fs::remove_dir_all(d.join("sys/fs/cgroup/work")).unwrap();
        assert!(r.read(&root, &[], &mut missing).is_empty());
        assert!(r.tracked.is_empty());
        assert!(missing.is_empty(), "{missing:?}");
    }
}
