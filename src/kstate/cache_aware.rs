//! `procfs.cache_aware`: whether the 7.2 cache-aware scheduler runs — `llc_balancing/enabled`
//! (the user's request) and the kernel's own condition for acting on it, read every
//! interval and by the knobs (a knob of `llc_balancing/` that steers nothing says so).
//!
//! The kernel keeps no readable flag for it (`sched_cache_active` is a static key, not in
//! BTF, no file): llctop applies the kernel's rule to what it builds sched domains from.
//! `sched_cache_present` is set when some CPU's topmost LLC domain spans two or more CPUs
//! and has a parent spanning more (kernel/sched/topology.c of 7.2: `sd_in_multi_llcs`,
//! over every domain partition in `partition_sched_domains_locked`). A partition's
//! domains span its CPUs, its LLC domain that LLC's CPUs within it; so the rule is: some
//! partition holds two or more CPUs of one LLC and CPUs outside that LLC. The partitions:
//! each cgroup-v2 cpuset partition root (`cpuset.cpus.partition` = `root`), and the
//! top-level one — the online CPUs outside `isolcpus` (`/sys/devices/system/cpu/isolated`),
//! outside isolated partitions (the root's `cpuset.cpus.isolated`) and outside the
//! partition roots. CPUs in an isolated partition get no domains.
//!
//! And why a process has no preferred LLC ([`why_none`], [`explain`]): the kernel's own
//! rules (kernel/sched/fair.c of 7.2) over its cache group as the BPF task walk read it
//! (`cache_group`), with the knobs read here.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cpulist;
use crate::kroot::KernelRoot;
use crate::snapshot::{CacheAware, NoPreference};
use crate::topology::Topology;

pub const DIR: &str = "/sys/kernel/debug/sched/llc_balancing";
pub const ENABLED: &str = "/sys/kernel/debug/sched/llc_balancing/enabled";
const SCHED_DEBUG: &str = "/sys/kernel/debug/sched";
const ISOLATED: &str = "/sys/devices/system/cpu/isolated";
/// Why there is no state on a kernel without the directory.
pub const ABSENT: &str = "this kernel has no cache-aware scheduling (v7.2+ with \
                          CONFIG_SCHED_CACHE): no /sys/kernel/debug/sched/llc_balancing";
/// Cgroup directories visited for partition roots, at most (a bound on a node with
/// thousands of cgroups; past it the walk stops and says so).
pub const MAX_CGROUPS: usize = 4096;

/// Why [`read`] found no `llc_balancing/`: the kernel has none, or debugfs is not there
/// to say.
pub fn absence(root: &KernelRoot) -> String {
    match root.list_dir(SCHED_DEBUG) {
        Ok(_) => ABSENT.into(),
        Err(e) if e.errno() == Some(libc::EACCES) => "/sys/kernel/debug is readable by root \
             only: whether cache-aware scheduling (7.2+) runs is not known"
            .into(),
        Err(_) => format!(
            "no {SCHED_DEBUG}: debugfs is not mounted (or the kernel has none), so whether \
             cache-aware scheduling (7.2+) runs is not known"
        ),
    }
}

/// The state now; `Ok(None)` when there is no `llc_balancing/` ([`absence`] says why);
/// `Err`: why it cannot be read (a partition walk cut short, an unexpected value).
pub fn read(
    root: &KernelRoot,
    topo: &Topology,
    cgroup2: Option<&Path>,
) -> Result<Option<CacheAware>, String> {
    let enabled = match root.read_trimmed(ENABLED) {
        Ok(v) => match v.as_str() {
            "1" | "Y" | "y" => true,
            "0" | "N" | "n" => false,
            x => return Err(format!("{ENABLED}: unexpected {x:?}")),
        },
        // Not there, or debugfs not readable (not root): `absence` says which.
        Err(e) if e.is_not_found() || e.errno() == Some(libc::EACCES) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let online: BTreeSet<u32> = topo
        .cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| c.cpu)
        .collect();
    let isolcpus = read_list(root, ISOLATED)?;
    let (roots, isolated) = match cgroup2 {
        Some(m) => partition_roots(root, m)?,
        None => (Vec::new(), BTreeSet::new()),
    };
    let parts = partitions(&online, &isolcpus, &isolated, &roots);
    let llcs: Vec<BTreeSet<u32>> = topo
        .llcs
        .iter()
        .map(|l| l.cpus.iter().copied().collect())
        .collect();
    let knob = |f: &str| {
        root.read_value_opt::<u32>(format!("{DIR}/{f}"))
            .ok()
            .flatten()
    };
    Ok(Some(CacheAware {
        enabled,
        multi_llc: parts.iter().any(|p| spans_two_llcs(p, &llcs)),
        partitions: parts
            .iter()
            .map(|p| cpulist::format(&p.iter().copied().collect::<Vec<_>>()))
            .collect(),
        aggr_tolerance: knob("aggr_tolerance"),
        epoch_affinity_timeout: knob("epoch_affinity_timeout"),
        overaggr_pct: knob("overaggr_pct"),
    }))
}

/// What the kernel's rules for a process's preferred LLC compare its cache group with:
/// the LLC it runs in (CPUs, bytes), SMT siblings per core, and the knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// `sd_llc_size`: CPUs of the LLC.
    pub llc_cpus: u64,
    /// `sd->llc_bytes`: the LLC's size.
    pub llc_bytes: Option<u64>,
    /// `cpu_smt_num_threads`: hardware threads per core.
    pub smt: u64,
    pub aggr_tolerance: Option<u32>,
    pub epoch_affinity_timeout: Option<u32>,
    /// NUMA balancing's task placement is on (`sched_numa_balancing`: numa_balancing's
    /// NORMAL bit); only then is the footprint compared, and the preferred node.
    pub numa_balancing: bool,
}

/// `get_sched_cache_scale(mul)` of 7.2: 0 at tolerance 0, `None` (no limit) from 100.
fn scale(tol: u32, mul: u64) -> Option<u64> {
    match tol {
        0 => Some(0),
        t if t >= 100 => None,
        t => Some(1 + (u64::from(t) - 1) * mul),
    }
}

/// Why the kernel gives a process of `threads` threads with cache group `g` no
/// preferred LLC: every one of its rules that holds (7.2's `account_mm_sched`: a stale
/// scan, `invalid_llc_nr`, `exceed_llc_capacity`; `get_pref_llc`: a NUMA conflict), or
/// that its scan chose none; `node_of` gives a CPU's node. Empty where a figure a rule
/// needs is missing (never a guess).
pub fn why_none(
    g: &crate::snapshot::CacheGroup,
    threads: u32,
    lim: &Limits,
    node_of: impl Fn(u32) -> Option<u32>,
) -> Vec<NoPreference> {
    if !g.present {
        return vec![NoPreference::NoGroup];
    }
    let (Some(tol), Some(timeout)) = (lim.aggr_tolerance, lim.epoch_affinity_timeout) else {
        return Vec::new();
    };
    let mut why = Vec::new();
    if g.epochs_since_scan > i64::from(timeout) {
        why.push(NoPreference::Stale);
    }
    if threads <= 1 {
        why.push(NoPreference::SingleThread);
    }
    if tol == 0 {
        why.push(NoPreference::AggregationOff);
    } else if let Some(s) = scale(tol, 1) {
        // fits_capacity(cap, max): cap * 1280 < max * 1024.
        let cap = u128::from(g.nr_running_avg) * u128::from(lim.smt);
        let max = u128::from(s) * u128::from(lim.llc_cpus);
        if threads > 1 && cap * 1280 >= max * 1024 {
            why.push(NoPreference::TooManyThreads);
        }
    }
    if lim.numa_balancing
        && tol != 0
        && let (Some(s), Some(llc)) = (scale(tol, 256), lim.llc_bytes)
        && u128::from(llc) * u128::from(s) < u128::from(g.footprint_bytes)
    {
        why.push(NoPreference::Footprint);
    }
    if let (true, Some(cpu), Some(nid)) = (lim.numa_balancing, g.cpu, g.numa_node)
        && node_of(cpu).is_some_and(|n| n != nid)
    {
        why.push(NoPreference::NumaConflict);
    }
    if why.is_empty() && g.cpu.is_none() {
        why.push(NoPreference::NotChosen);
    }
    why
}

/// Fill each process row's `no_preference` (rows with a cache group and no preferred
/// LLC) from the snapshot's own figures: its `cache_aware` state and knobs, NUMA
/// balancing's mode, and the topology (the LLC the process ran most in).
pub fn explain(topo: &Topology, snap: &mut crate::snapshot::Snapshot) {
    let Some(ca) = snap.cache_aware.clone() else {
        return;
    };
    let numa = snap
        .numa
        .as_ref()
        .and_then(|n| n.balancing_mode)
        .map(|m| m & 1 == 1);
    let smt = topo
        .cpus
        .iter()
        .map(|c| c.smt_siblings.len().max(1) as u64)
        .max()
        .unwrap_or(1);
    let node_of = |cpu: u32| topo.cpu(cpu).and_then(|c| c.node);
    for r in snap.processes.iter_mut().flat_map(|t| t.rows.iter_mut()) {
        r.no_preference.clear();
        let Some(g) = &r.cache_group else { continue };
        if r.preferred_llc.is_some() || r.exited {
            continue;
        }
        if !ca.active() {
            r.no_preference.push(NoPreference::NotActive);
            continue;
        }
        let Some(numa_balancing) = numa else { continue };
        let busiest = r
            .runtime_per_llc_ns
            .iter()
            .enumerate()
            .max_by_key(|(_, ns)| **ns)
            .map_or(0, |(i, _)| i);
        let Some(llc) = topo.llcs.get(busiest) else {
            continue;
        };
        let lim = Limits {
            llc_cpus: llc.cpus.len() as u64,
            llc_bytes: llc.size_kb.map(|k| k * 1024),
            smt,
            aggr_tolerance: ca.aggr_tolerance,
            epoch_affinity_timeout: ca.epoch_affinity_timeout,
            numa_balancing,
        };
        r.no_preference = why_none(g, r.threads, &lim, node_of);
    }
}

/// The kernel's rule for one partition: two or more of its CPUs share an LLC, and it has
/// CPUs outside that LLC (so that LLC's domain has a parent spanning more).
pub fn spans_two_llcs(part: &BTreeSet<u32>, llcs: &[BTreeSet<u32>]) -> bool {
    llcs.iter()
        .any(|l| l.intersection(part).count() >= 2 && !part.is_subset(l))
}

/// The domain partitions: the top-level one (online, outside isolcpus, isolated
/// partitions and partition roots; left out when empty), then each partition root's CPUs.
pub fn partitions(
    online: &BTreeSet<u32>,
    isolcpus: &BTreeSet<u32>,
    isolated: &BTreeSet<u32>,
    roots: &[BTreeSet<u32>],
) -> Vec<BTreeSet<u32>> {
    let taken: BTreeSet<u32> = roots.iter().flatten().copied().collect();
    let top: BTreeSet<u32> = online
        .iter()
        .copied()
        .filter(|c| !isolcpus.contains(c) && !isolated.contains(c) && !taken.contains(c))
        .collect();
    let mut out = Vec::new();
    if !top.is_empty() {
        out.push(top);
    }
    out.extend(
        roots
            .iter()
            .map(|r| r.intersection(online).copied().collect::<BTreeSet<u32>>())
            .filter(|r| !r.is_empty()),
    );
    out
}

fn read_list(root: &KernelRoot, path: &str) -> Result<BTreeSet<u32>, String> {
    match root.read(path) {
        Ok(t) => cpulist::parse(&t)
            .map(|v| v.into_iter().collect())
            .map_err(|e| format!("{path}: {e}")),
        Err(e) if e.is_not_found() => Ok(BTreeSet::new()),
        Err(e) => Err(e.to_string()),
    }
}

/// The cpuset partition roots under the cgroup-v2 mount (each one's effective CPUs) and the
/// CPUs of isolated partitions (the root's `cpuset.cpus.isolated`, v6.7+). Only where the
/// root delegates the cpuset controller are children walked, breadth-first, at most
/// [`MAX_CGROUPS`] directories.
fn partition_roots(
    root: &KernelRoot,
    mount: &Path,
) -> Result<(Vec<BTreeSet<u32>>, BTreeSet<u32>), String> {
    let at = |p: &Path, f: &str| p.join(f).to_string_lossy().into_owned();
    let isolated = read_list(root, &at(mount, "cpuset.cpus.isolated"))?;
    let delegated = root
        .read(at(mount, "cgroup.subtree_control"))
        .is_ok_and(|t| t.split_whitespace().any(|c| c == "cpuset"));
    let mut roots = Vec::new();
    if !delegated {
        return Ok((roots, isolated));
    }
    let mut queue = std::collections::VecDeque::from([mount.to_path_buf()]);
    let mut seen = 0usize;
    while let Some(dir) = queue.pop_front() {
        seen += 1;
        if seen > MAX_CGROUPS {
            return Err(format!(
                "more than {MAX_CGROUPS} cgroups under {}: cpuset partitions not all read",
                mount.display()
            ));
        }
        if dir != mount
            && root
                .read_trimmed(at(&dir, "cpuset.cpus.partition"))
                .is_ok_and(|p| p == "root")
        {
            roots.push(read_list(root, &at(&dir, "cpuset.cpus.effective"))?);
        }
        // A cgroup that does not hand cpuset down has no partition below it.
        let hands_down = dir == mount
            || root
                .read(at(&dir, "cgroup.subtree_control"))
                .is_ok_and(|t| t.split_whitespace().any(|c| c == "cpuset"));
        if hands_down && let Ok(subs) = root.list_subdirs(dir.to_string_lossy().as_ref()) {
            queue.extend(subs.into_iter().map(|s| dir.join(s)));
        }
    }
    Ok((roots, isolated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn set(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    /// 8 CPUs, an LLC per SMT pair (the lab's 2s4llc-smt shape).
    fn llcs() -> Vec<BTreeSet<u32>> {
        vec![set(&[0, 1]), set(&[2, 3]), set(&[4, 5]), set(&[6, 7])]
    }

    #[test]
    fn the_kernels_rule_over_partitions() {
        // The whole machine: two CPUs of an LLC and more outside it.
        assert!(spans_two_llcs(&set(&[0, 1, 2, 3, 4, 5, 6, 7]), &llcs()));
        // One LLC: its domain has no parent.
        assert!(!spans_two_llcs(&set(&[0, 1]), &llcs()));
        // One CPU of each LLC: no LLC domain at all (a one-CPU domain is degenerate).
        assert!(!spans_two_llcs(&set(&[0, 2, 4, 6]), &llcs()));
        // Two CPUs of one LLC and one of another: yes.
        assert!(spans_two_llcs(&set(&[0, 1, 2]), &llcs()));
        // A machine of one LLC.
        assert!(!spans_two_llcs(&set(&[0, 1, 2, 3]), &[set(&[0, 1, 2, 3])]));
    }

    #[test]
    fn partitions_split_the_online_cpus() {
        let online = set(&[0, 1, 2, 3, 4, 5, 6, 7]);
        // isolcpus=2-7: the rest is one LLC.
        let p = partitions(&online, &set(&[2, 3, 4, 5, 6, 7]), &set(&[]), &[]);
        assert_eq!(p, vec![set(&[0, 1])]);
        // An isolated partition 2-7 and a root partition 4-7.
        let p = partitions(&online, &set(&[]), &set(&[2, 3]), &[set(&[4, 5, 6, 7])]);
        assert_eq!(p, vec![set(&[0, 1]), set(&[4, 5, 6, 7])]);
        assert!(p.iter().any(|x| spans_two_llcs(x, &llcs())));
        // Everything in a partition root: the top level is empty and left out.
        let p = partitions(&online, &set(&[]), &set(&[]), std::slice::from_ref(&online));
        assert_eq!(p, vec![online]);
    }

    /// The lab's LLC: 2 CPUs (one core, 2 SMT threads), 32 MiB; tolerance 1, timeout 5.
    fn lim() -> Limits {
        Limits {
            llc_cpus: 2,
            llc_bytes: Some(32 << 20),
            smt: 2,
            aggr_tolerance: Some(1),
            epoch_affinity_timeout: Some(5),
            numa_balancing: true,
        }
    }

    fn grp(avg: u64, fp: u64) -> crate::snapshot::CacheGroup {
        crate::snapshot::CacheGroup {
            present: true,
            nr_running_avg: avg,
            footprint_bytes: fp,
            epochs_since_scan: 1,
            cpu: None,
            numa_node: None,
        }
    }

    #[test]
    fn the_kernels_rules_for_no_preference() {
        use NoPreference::*;
        let node = |c: u32| Some(c / 4);
        // 1 running thread × 2 SMT = 2 against 2 CPUs: 2 * 1280 >= 2 * 1024, too many
        // (the seed's two busy threads in a 2-CPU LLC at tolerance 1).
        assert_eq!(why_none(&grp(1, 0), 2, &lim(), node), [TooManyThreads]);
        // Tolerance 2 doubles the CPUs: fits, so the scan has just not chosen.
        let l2 = Limits {
            aggr_tolerance: Some(2),
            ..lim()
        };
        assert_eq!(why_none(&grp(1, 0), 2, &l2, node), [NotChosen]);
        // 100 lifts every limit; 0 never aggregates.
        let l100 = Limits {
            aggr_tolerance: Some(100),
            ..lim()
        };
        assert_eq!(why_none(&grp(64, u64::MAX), 2, &l100, node), [NotChosen]);
        let l0 = Limits {
            aggr_tolerance: Some(0),
            ..lim()
        };
        assert_eq!(why_none(&grp(0, 0), 2, &l0, node), [AggregationOff]);
        // Footprint: over 32 MiB at tolerance 1 (no thread running at its scans) — only
        // with NUMA balancing on; at 2 the limit is 257 × 32 MiB.
        assert_eq!(why_none(&grp(0, 33 << 20), 2, &lim(), node), [Footprint]);
        assert_eq!(why_none(&grp(0, 33 << 20), 2, &l2, node), [NotChosen]);
        let off = Limits {
            numa_balancing: false,
            ..lim()
        };
        assert_eq!(why_none(&grp(0, 33 << 20), 2, &off, node), [NotChosen]);
        // One thread; a stale scan; no group at all.
        assert_eq!(why_none(&grp(0, 0), 1, &l2, node), [SingleThread]);
        let mut stale = grp(0, 0);
        stale.epochs_since_scan = 6;
        assert_eq!(why_none(&stale, 2, &l2, node), [Stale]);
        let none = crate::snapshot::CacheGroup::default();
        assert_eq!(why_none(&none, 2, &l2, node), [NoGroup]);
        // A chosen CPU on node 1 while NUMA balancing prefers node 0.
        let mut g = grp(0, 0);
        g.cpu = Some(5);
        g.numa_node = Some(0);
        assert_eq!(why_none(&g, 2, &l2, node), [NumaConflict]);
        g.numa_node = Some(1);
        assert_eq!(why_none(&g, 2, &l2, node), Vec::<NoPreference>::new());
        // A knob not read: nothing said.
        let unknown = Limits {
            epoch_affinity_timeout: None,
            ..l2
        };
        assert!(why_none(&grp(9, 0), 2, &unknown, node).is_empty());
    }

    #[test]
    fn explain_fills_the_rows_without_a_preference() {
        use crate::snapshot::{NumaStats, ProcessStats, ProcessTable, Snapshot};
        let topo = topo8();
        let mut s = Snapshot::default();
        let row = |pid, pref: Option<u32>| ProcessStats {
            pid,
            threads: 2,
            preferred_llc: pref,
            runtime_per_llc_ns: vec![0, 5, 0, 0],
            cache_group: Some(grp(1, 0)),
            ..Default::default()
        };
        s.processes = Some(ProcessTable {
            rows: vec![row(1, None), row(2, Some(1))],
            ..Default::default()
        });
        s.numa = Some(NumaStats {
            balancing_mode: Some(1),
            ..Default::default()
        });
        s.cache_aware = Some(CacheAware {
            enabled: true,
            multi_llc: true,
            partitions: vec!["0-7".into()],
            aggr_tolerance: Some(1),
            epoch_affinity_timeout: Some(5),
            overaggr_pct: Some(50),
        });
        explain(&topo, &mut s);
        let rows = &s.processes.as_ref().unwrap().rows;
        // synthetic(2, 2, 2): 2-CPU LLCs, one thread per core: 1 × 1 against 2 fits.
        assert_eq!(rows[0].no_preference, [NoPreference::NotChosen]);
        assert!(rows[1].no_preference.is_empty(), "it has one");
        // Not running: said as such.
        s.cache_aware.as_mut().unwrap().enabled = false;
        explain(&topo, &mut s);
        let rows = &s.processes.as_ref().unwrap().rows;
        assert_eq!(rows[0].no_preference, [NoPreference::NotActive]);
    }

    fn topo8() -> Topology {
        crate::topology::synthetic(2, 2, 2)
    }

    #[test]
    fn read_from_a_fake_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = KernelRoot::new(dir.path());
        let topo = topo8();
        // No debugfs: not known.
        assert_eq!(read(&root, &topo, None), Ok(None));
        assert!(absence(&root).contains("debugfs is not mounted"));
        // No llc_balancing/ but a sched/ directory: a kernel without the feature.
        fs::create_dir_all(dir.path().join("sys/kernel/debug/sched")).unwrap();
        assert_eq!(read(&root, &topo, None), Ok(None));
        assert_eq!(absence(&root), ABSENT);
        fs::create_dir_all(dir.path().join("sys/kernel/debug/sched/llc_balancing")).unwrap();
        fs::write(dir.path().join(&ENABLED[1..]), "1\n").unwrap();
        let c = read(&root, &topo, None).unwrap().unwrap();
        assert!(c.active(), "{c:?}");
        assert_eq!(c.partitions, vec!["0-7".to_string()]);
        // isolcpus leaves one LLC: enabled, not active.
        fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
        fs::write(dir.path().join(&ISOLATED[1..]), "2-7\n").unwrap();
        let c = read(&root, &topo, None).unwrap().unwrap();
        assert!(c.enabled && !c.active(), "{c:?}");
        assert_eq!(c.partitions, vec!["0-1".to_string()]);
        fs::write(dir.path().join(&ISOLATED[1..]), "\n").unwrap();
        // A cpuset partition root on 2-3 and an isolated partition 4-7 leave 0-1 and
        // 2-3: one LLC each.
        let cg = dir.path().join("sys/fs/cgroup");
        fs::create_dir_all(cg.join("a/b")).unwrap();
        fs::write(cg.join("cgroup.subtree_control"), "cpu cpuset memory\n").unwrap();
        fs::write(cg.join("cpuset.cpus.isolated"), "4-7\n").unwrap();
        fs::write(cg.join("a/cgroup.subtree_control"), "cpuset\n").unwrap();
        fs::write(cg.join("a/cpuset.cpus.partition"), "member\n").unwrap();
        fs::write(cg.join("a/b/cpuset.cpus.partition"), "root\n").unwrap();
        fs::write(cg.join("a/b/cpuset.cpus.effective"), "2-3\n").unwrap();
        let mount = Path::new("/sys/fs/cgroup");
        let c = read(&root, &topo, Some(mount)).unwrap().unwrap();
        assert_eq!(c.partitions, vec!["0-1".to_string(), "2-3".to_string()]);
        assert!(!c.active(), "{c:?}");
        // The root partition widened to 2-5 spans two LLCs: active again.
        fs::write(cg.join("cpuset.cpus.isolated"), "6-7\n").unwrap();
        fs::write(cg.join("a/b/cpuset.cpus.effective"), "2-5\n").unwrap();
        let c = read(&root, &topo, Some(mount)).unwrap().unwrap();
        assert!(c.active(), "{c:?}");
        // A word the file never holds is an error, not a guess.
        fs::write(dir.path().join(&ENABLED[1..]), "maybe\n").unwrap();
        assert!(read(&root, &topo, Some(mount)).is_err());
    }
}
