//! Process groups as the kernel tells them: which group a process is in
//! (`/proc/PID/stat`), the live members of a group found down its leader's tree
//! (`/proc/PID/task/TID/children`), and [`KeptRows`] — the processes an experiment asks
//! the sources to give rows whatever their rank, its commands' groups resolved at each
//! read.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use crate::kroot::KernelRoot;

/// The most processes [`members`] finds (and visits) in one walk.
pub const MAX_MEMBERS: usize = 256;

/// The most threads of one process whose children [`members`] reads.
const MAX_THREADS_WALKED: usize = 64;

/// The process group of `pid` (`None`: gone, or unreadable).
pub fn pgrp_of(root: &KernelRoot, pid: u32) -> Option<u32> {
    root.parse::<procfs_core::process::Stat>(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| u32::try_from(st.pgrp).ok())
}

/// The live processes of the process groups `pgids`, found by walking down from their
/// leaders (a group's leader has the group's id as its pid) through each thread's
/// children: those in one of the groups, the leaders too, in the order found. Bounded:
/// [`MAX_MEMBERS`] processes visited, the children of [`MAX_THREADS_WALKED`] threads of
/// each. A member that left the leader's tree (reparented when its parent exited) is not
/// found.
pub fn members(root: &KernelRoot, pgids: &[u32]) -> Vec<u32> {
    let mut found = Vec::new();
    let mut seen: HashSet<u32> = HashSet::new();
    let mut todo: VecDeque<u32> = pgids.iter().copied().collect();
    while let Some(pid) = todo.pop_front() {
        if seen.len() >= MAX_MEMBERS || !seen.insert(pid) {
            continue;
        }
        if pgrp_of(root, pid).is_some_and(|g| pgids.contains(&g)) {
            found.push(pid);
        }
        let tids = root
            .numbered_entries(format!("/proc/{pid}/task"), "")
            .unwrap_or_default();
        for tid in tids.into_iter().take(MAX_THREADS_WALKED) {
            let Ok(children) = root.read(format!("/proc/{pid}/task/{tid}/children")) else {
                continue;
            };
            // No more waiting than can still be visited (a forking command's children
            // lists may be long).
            let room = MAX_MEMBERS.saturating_sub(seen.len() + todo.len());
            todo.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                    .take(room),
            );
        }
    }
    found
}

/// Processes given a row in every snapshot whatever their rank among the busiest (`--top`
/// keeps only those), as long as they ran or moved: an experiment's own command and the
/// processes it names, whose figures are its metrics. A handle the run's sinks set and
/// the collector resolves just before each read — a group's members as found then, so a
/// process the command forked during the interval has its row for all of it — with the
/// members of the read before (one that exited since has its last interval's row).
#[derive(Clone, Debug, Default)]
pub struct KeptRows(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    groups: Vec<u32>,
    pids: Vec<u32>,
    /// The members the last resolve found.
    last: Vec<u32>,
}

impl KeptRows {
    /// From the next read on: the members of the process groups `groups` and the
    /// processes `pids`.
    pub fn set(&self, groups: Vec<u32>, pids: Vec<u32>) {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner());
        k.groups = groups;
        k.pids = pids;
    }

    /// The processes to give rows at the read about to be made, sorted (at most
    /// [`MAX_MEMBERS`] of the groups' now and before, and the pids named).
    pub fn resolve(&self, root: &KernelRoot) -> Vec<u32> {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if k.groups.is_empty() && k.pids.is_empty() && k.last.is_empty() {
            return Vec::new();
        }
        let now = members(root, &k.groups);
        let mut out: Vec<u32> = now.iter().chain(&k.last).chain(&k.pids).copied().collect();
        k.last = now;
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Test support: a `/proc/PID` under `dir` whose stat puts it in group `pgrp`, with the
/// children of its thread `thread.0` (`thread.1`, as the kernel lists them) if given.
#[cfg(test)]
pub(crate) fn fake_process(
    dir: &std::path::Path,
    pid: u32,
    pgrp: u32,
    thread: Option<(u32, &str)>,
) -> std::io::Result<()> {
    let d = dir.join(format!("proc/{pid}"));
    std::fs::create_dir_all(&d)?;
    // /proc/PID/stat: pid (comm) state ppid pgrp session …
    let rest = "0 ".repeat(47);
    std::fs::write(
        d.join("stat"),
        format!("{pid} (w) S 1 {pgrp} {pgrp} {rest}\n"),
    )?;
    if let Some((tid, children)) = thread {
        let t = d.join(format!("task/{tid}"));
        std::fs::create_dir_all(&t)?;
        std::fs::write(t.join("children"), children)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_members_are_found_down_the_leaders_tree_whatever_their_rank() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // PID in group PGRP, its thread TID's children.
        let proc = |pid: u32, pgrp: u32, tid: u32, children: &str| {
            fake_process(dir.path(), pid, pgrp, Some((tid, children)))
                .unwrap_or_else(|e| panic!("{e}"));
        };
        // The leader's main thread started 101, another of its threads 102; 102 made a
        // group of its own (setsid) and 104 is in it; 103 is 101's, in the group; 105 is
        // gone (no /proc), 106 runs elsewhere.
        proc(100, 100, 100, "101 ");
        proc(100, 100, 107, "102 105 ");
        proc(101, 100, 101, "103 ");
        proc(102, 102, 102, "104 ");
        proc(103, 100, 103, "");
        proc(104, 102, 104, "");
        proc(106, 100, 106, "");
        let root = KernelRoot::new(dir.path());
        let mut found = members(&root, &[100]);
        found.sort_unstable();
        assert_eq!(found, [100, 101, 103]);
        assert!(members(&root, &[]).is_empty());
        assert!(members(&root, &[999]).is_empty(), "no leader, no members");
    }

    #[test]
    fn a_group_larger_than_the_bound_is_walked_to_the_bound() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let children: Vec<String> = (1..=300).map(|c| (1000 + c).to_string()).collect();
        fake_process(dir.path(), 1000, 1000, Some((1000, &children.join(" "))))
            .unwrap_or_else(|e| panic!("{e}"));
        for c in 1..=300 {
            fake_process(dir.path(), 1000 + c, 1000, None).unwrap_or_else(|e| panic!("{e}"));
        }
        let found = members(&KernelRoot::new(dir.path()), &[1000]);
        assert_eq!(found.len(), MAX_MEMBERS);
        assert_eq!(found[0], 1000, "the leader first");
    }

    #[test]
    fn kept_rows_resolve_the_groups_at_each_read_and_keep_the_last_ones_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let proc = |pid: u32, children: &str| {
            fake_process(dir.path(), pid, 100, Some((pid, children)))
                .unwrap_or_else(|e| panic!("{e}"));
        };
        let root = KernelRoot::new(dir.path());
        let kept = KeptRows::default();
        assert!(kept.resolve(&root).is_empty(), "nothing asked");
        proc(100, "");
        kept.set(vec![100], vec![7]);
        assert_eq!(kept.resolve(&root), [7, 100]);
        // A child forked since: found at the next read.
        proc(100, "101");
        proc(101, "");
        assert_eq!(kept.resolve(&root), [7, 100, 101]);
        // It exited: its last interval still has a row, once.
        std::fs::remove_dir_all(dir.path().join("proc/101")).unwrap_or_else(|e| panic!("{e}"));
        proc(100, "");
        assert_eq!(kept.resolve(&root), [7, 100, 101]);
        assert_eq!(kept.resolve(&root), [7, 100]);
        // The command ended: its members' last rows, then nothing.
        kept.set(Vec::new(), Vec::new());
        assert_eq!(kept.resolve(&root), [100]);
        assert!(kept.resolve(&root).is_empty());
    }
}
