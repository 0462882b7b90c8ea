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

use std::collections::BTreeSet;
use std::path::Path;

use crate::cpulist;
use crate::kroot::KernelRoot;
use crate::snapshot::CacheAware;
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
    Ok(Some(CacheAware {
        enabled,
        multi_llc: parts.iter().any(|p| spans_two_llcs(p, &llcs)),
        partitions: parts
            .iter()
            .map(|p| cpulist::format(&p.iter().copied().collect::<Vec<_>>()))
            .collect(),
    }))
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
