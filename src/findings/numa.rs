//! NUMA balancing and remote memory (shared/seeds/003): automatic NUMA balancing moving
//! pages (a cost paid by every task of the machine, and by containers that gain nothing
//! from it), hinting faults that keep landing on the other node, or — with balancing off
//! — memory allocated on the other node. From /proc/vmstat, the nodes' numastat and the
//! cgroups' memory.stat, summed over the window; the cgroups moving most are named.

use super::{Agg, Fact, Finding, Kind, Suggestion, Unit, Window, busy_cpu_secs, cite, harm, past};
use crate::snapshot::SatSum;

/// Pages migrated by NUMA balancing per second (256 pages = 1 MiB at 4 KiB): fire / clear.
pub const MIGRATED_RATE: f64 = 256.0;
pub const MIGRATED_CLEAR: f64 = 64.0;
/// Share of NUMA hinting faults on a remote node: fire / clear; judged from this many
/// faults per second.
pub const REMOTE_FAULT_SHARE: f64 = 0.5;
pub const REMOTE_FAULT_CLEAR: f64 = 0.35;
pub const MIN_FAULT_RATE: f64 = 100.0;
/// With balancing off: share of pages allocated on another node than the task's
/// (`other_node`): fire / clear; judged from this many allocations per second.
pub const REMOTE_ALLOC_SHARE: f64 = 0.3;
pub const REMOTE_ALLOC_CLEAR: f64 = 0.2;
pub const MIN_ALLOC_RATE: f64 = 1000.0;
/// Cgroups named in the evidence.
pub const TOP_CGROUPS: usize = 3;
/// A page of the nodes' allocation counters (numastat counts pages of 4 KiB).
const PAGE_BYTES: f64 = 4096.0;

const KEY: &str = "system";

/// The machine's memory traffic over the window from resctrl (bytes/s all, local) and
/// the remote share, when every snapshot of it has both counts.
fn remote_bandwidth(w: &Window) -> Option<(f64, f64, f64)> {
    let secs = w.secs();
    let totals: Option<Vec<_>> = w
        .snaps
        .iter()
        .map(|s| s.resctrl.as_ref().map(|r| r.total))
        .collect();
    let t = totals?;
    let all: u64 = t.iter().map(|c| c.mbm_total_bytes).sum::<Option<u64>>()?;
    let local: u64 = t.iter().map(|c| c.mbm_local_bytes).sum::<Option<u64>>()?;
    (all > 0 && secs > 0.0).then(|| {
        (
            all as f64 / secs,
            local as f64 / secs,
            all.saturating_sub(local) as f64 / all as f64,
        )
    })
}

pub fn detect(w: &Window) -> Vec<Finding> {
    let secs = w.secs();
    if w.topo.nodes.len() < 2 || secs <= 0.0 {
        return Vec::new();
    }
    let stats: Vec<_> = w.snaps.iter().filter_map(|s| s.numa.as_ref()).collect();
    if stats.is_empty() {
        return Vec::new();
    }
    let held = w.holds(Kind::Numa, KEY);
    let vm = |k: &str| -> u64 {
        stats
            .iter()
            .filter_map(|n| n.vmstat.get(k))
            .copied()
            .sat_sum()
    };
    let node = |k: &str| -> u64 {
        stats
            .iter()
            .flat_map(|n| &n.nodes)
            .filter_map(|n| n.counters.get(k).copied())
            .sat_sum()
    };
    let mode = stats.last().and_then(|n| n.balancing_mode);
    let migrated = vm("numa_pages_migrated");
    let faults = vm("numa_hint_faults");
    let local = vm("numa_hint_faults_local");
    let (local_node, other_node) = (node("local_node"), node("other_node"));
    let mig_rate = migrated as f64 / secs;
    let remote_faults = faults.saturating_sub(local);
    let fault_share = remote_faults as f64 / faults.max(1) as f64;
    let allocs = local_node.saturating_add(other_node);
    let alloc_share = other_node as f64 / allocs.max(1) as f64;
    let moving = past(held, mig_rate, MIGRATED_RATE, MIGRATED_CLEAR, true);
    let remote_faulting = faults as f64 / secs >= MIN_FAULT_RATE
        && past(
            held,
            fault_share,
            REMOTE_FAULT_SHARE,
            REMOTE_FAULT_CLEAR,
            true,
        );
    let remote_alloc = mode == Some(0)
        && allocs as f64 / secs >= MIN_ALLOC_RATE
        && past(
            held,
            alloc_share,
            REMOTE_ALLOC_SHARE,
            REMOTE_ALLOC_CLEAR,
            true,
        );
    if !moving && !remote_faulting && !remote_alloc {
        return Vec::new();
    }
    let cgs = top_cgroups(&stats);
    let mut parts = Vec::new();
    if moving || remote_faulting {
        parts.push(format!(
            "NUMA balancing moved {mig_rate:.0} pages/s; {:.0}% of its {:.0} hinting faults/s were on a remote node",
            fault_share * 100.0,
            faults as f64 / secs
        ));
    }
    if remote_alloc {
        parts.push(format!(
            "with NUMA balancing off, {:.0}% of page allocations landed on another node than the task's",
            alloc_share * 100.0
        ));
    }
    // What it cost: balancing's kernel time (estimated from its counts) over the busy CPU
    // time; with balancing off, the memory allocated on the other node. The higher.
    let busy: f64 = w.snaps.iter().map(busy_cpu_secs).sum();
    let mut costs = Vec::new();
    if moving || remote_faulting {
        costs.push(harm::numa_balancing(migrated, faults, busy));
    }
    if remote_alloc {
        costs.push(harm::numa_remote_alloc(
            other_node as f64 * PAGE_BYTES / secs,
        ));
    }
    let (cost, severity) = costs
        .into_iter()
        .max_by_key(|c| c.1)
        .unwrap_or_else(|| harm::numa_balancing(0, 0, busy));
    parts.push(match cost.unit {
        Unit::Fraction => format!(
            "its kernel time, estimated from the pages and faults, about {:.2}% of the busy CPU time",
            cost.value * 100.0
        ),
        _ => format!("{} allocated remotely", cost.shown()),
    });
    if !cgs.is_empty() {
        let named: Vec<String> = cgs.iter().map(|(p, n)| format!("{p} {n} pages")).collect();
        parts.push(format!("most moved for {}", named.join(", ")));
    }
    // resctrl's memory traffic: how much of it crossed to the other node.
    let bw = remote_bandwidth(w);
    if let Some((_, _, share)) = bw {
        parts.push(format!(
            "{:.0}% of the L3s' memory traffic went to a remote node (resctrl)",
            share * 100.0
        ));
    }
    let mut f = Finding::new(Kind::Numa, KEY, w, parts.join("; "));
    f.severity = severity;
    f.facts
        .push(Fact::derived("busy CPU-seconds", busy, Unit::Count));
    f.facts.push(cost.clone());
    f.cost = Some(cost);
    let vm_fact = |label: &str, k: &str, v: u64| {
        Fact::cited(
            label,
            v as f64,
            Unit::Count,
            w,
            format!("numa/vmstat/{k}"),
            Agg::Sum,
        )
    };
    f.facts
        .push(vm_fact("pages migrated", "numa_pages_migrated", migrated));
    f.facts
        .push(vm_fact("hinting faults", "numa_hint_faults", faults));
    f.facts.push(vm_fact(
        "hinting faults on the local node",
        "numa_hint_faults_local",
        local,
    ));
    f.facts.push(Fact::derived(
        "pages migrated per second",
        mig_rate,
        Unit::PerSec,
    ));
    f.facts.push(Fact::derived(
        "remote hinting-fault share",
        fault_share,
        Unit::Fraction,
    ));
    if allocs > 0 {
        f.facts.push(Fact::derived(
            "remote allocation share",
            alloc_share,
            Unit::Fraction,
        ));
    }
    if let Some((total, local, share)) = bw {
        f.facts.push(Fact::cited(
            "memory traffic (resctrl)",
            total,
            Unit::BytesPerSec,
            w,
            "resctrl/total/mbm_total_bytes".into(),
            Agg::Rate,
        ));
        f.facts.push(Fact::cited(
            "of it to the local node",
            local,
            Unit::BytesPerSec,
            w,
            "resctrl/total/mbm_local_bytes".into(),
            Agg::Rate,
        ));
        f.facts.push(Fact::derived(
            "remote memory-traffic share",
            share,
            Unit::Fraction,
        ));
    }
    for (path, n) in &cgs {
        f.facts.push(Fact::cited(
            format!("pages migrated for {path}"),
            *n as f64,
            Unit::Count,
            w,
            format!(
                "numa/cgroups/path={}/numa_pages_migrated",
                cite::escape(path)
            ),
            Agg::Sum,
        ));
    }
    f.suggestion = Some(suggestion(mode, &cgs));
    vec![f]
}

/// The cgroups whose memory NUMA balancing moved most (at most [`TOP_CGROUPS`]): the
/// root's memory.stat sums every cgroup's, so it is named only when alone; on a tie the
/// deeper cgroup (the one the pages belong to) comes first.
fn top_cgroups(stats: &[&crate::snapshot::NumaStats]) -> Vec<(String, u64)> {
    let mut cgs: Vec<(String, u64)> = Vec::new();
    for c in stats.iter().flat_map(|n| &n.cgroups) {
        let n = c.numa_pages_migrated.unwrap_or(0);
        match cgs.iter_mut().find(|(p, _)| *p == c.path) {
            Some(e) => e.1 = e.1.saturating_add(n),
            None => cgs.push((c.path.clone(), n)),
        }
    }
    cgs.retain(|(_, n)| *n > 0);
    // The root cgroup's memory.stat sums every cgroup's: name it only when alone. On a
    // tie the deeper cgroup (the one the pages belong to) comes first.
    if cgs.iter().any(|(p, _)| p != "/") {
        cgs.retain(|(p, _)| p != "/");
    }
    let depth = |p: &str| p.matches('/').count();
    cgs.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| depth(&b.0).cmp(&depth(&a.0)))
            .then_with(|| a.0.cmp(&b.0))
    });
    cgs.truncate(TOP_CGROUPS);
    cgs
}

/// What to try: with balancing off, measure turning it on; with it on, measure turning
/// it off (naming the per-cgroup switch where the kernel has one, for the top cgroup).
fn suggestion(mode: Option<u32>, cgs: &[(String, u64)]) -> Suggestion {
    if mode == Some(0) {
        Suggestion {
        knob: Some("numa_balancing".into()),
        value: Some("1".into()),
        profile: None,
        command: "llctop ab numa_balancing=0,1 -- <workload>".into(),
        why: "NUMA balancing moves tasks and pages towards each other; measure whether it brings this memory home".into(),
    }
    } else {
        let per_cgroup = cgs
        .first()
        .map(|(p, _)| format!(" (or, where the kernel has cpu.numa_load_balance, cgroup.numa_load_balance@{p} alone — the per-cgroup switch of Chen Yu's RFC, sched/numa: Introduce per cgroup numa balance control)"))
        .unwrap_or_default();
        Suggestion {
        knob: Some("numa_balancing".into()),
        value: Some("0".into()),
        profile: Some("numa-balancing-off".into()),
        command: format!("llctop ab --profile numa-balancing-off -- <workload>{per_cgroup}"),
        why: "measures what the scanning, hinting faults and migrations cost or gain this workload".into(),
    }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::findings::testing::{assert_cites, judge, snap};
    use crate::snapshot::{CgroupNuma, NodeNuma, NumaStats, Snapshot};
    use crate::topology::synthetic;

    fn series(mode: u32, migrated: u64, faults: u64, local: u64, other_node: u64) -> Vec<Snapshot> {
        let topo = synthetic(2, 1, 2);
        (0..5)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.5);
                let vmstat: BTreeMap<String, u64> = [
                    ("numa_pages_migrated", migrated),
                    ("numa_hint_faults", faults),
                    ("numa_hint_faults_local", local),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                s.numa = Some(NumaStats {
                    balancing_mode: Some(mode),
                    vmstat,
                    nodes: (0..2)
                        .map(|n| NodeNuma {
                            node: n,
                            counters: [
                                ("local_node".to_string(), 5000),
                                ("other_node".to_string(), other_node),
                            ]
                            .into_iter()
                            .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    cgroups: vec![
                        CgroupNuma {
                            path: "/system.slice/db.service".into(),
                            numa_pages_migrated: Some(migrated * 3 / 4),
                            ..Default::default()
                        },
                        // The root's memory.stat sums every cgroup's: a tie, not named.
                        CgroupNuma {
                            path: "/".into(),
                            numa_pages_migrated: Some(migrated * 3 / 4),
                            ..Default::default()
                        },
                        CgroupNuma {
                            path: "/idle".into(),
                            numa_pages_migrated: Some(0),
                            ..Default::default()
                        },
                    ],
                });
                s
            })
            .collect()
    }

    fn run(snaps: &[Snapshot]) -> Vec<Finding> {
        judge(detect, &synthetic(2, 1, 2), snaps)
    }

    #[test]
    fn balancing_moving_memory_fires_naming_the_cgroup() {
        let snaps = series(1, 2000, 500, 100, 0);
        let f = run(&snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].summary
                .contains("moved 2000 pages/s; 80% of its 500 hinting faults/s"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].summary.contains("/system.slice/db.service 7500 pages"),
            "{}",
            f[0].summary
        );
        assert!(!f[0].summary.contains("/idle"));
        assert!(
            f[0].summary
                .ends_with("most moved for /system.slice/db.service 7500 pages"),
            "{}",
            f[0].summary
        );
        assert_eq!(
            f[0].suggestion.as_ref().and_then(|s| s.profile.as_deref()),
            Some("numa-balancing-off")
        );
        assert_cites(&f[0], &snaps);
    }

    #[test]
    fn resctrl_adds_the_remote_share_of_the_memory_traffic() {
        let mut snaps = series(1, 2000, 500, 100, 0);
        for s in &mut snaps {
            s.resctrl = Some(crate::snapshot::Resctrl {
                total: crate::snapshot::CacheMon {
                    occupancy_bytes: Some(1),
                    mbm_total_bytes: Some(1_000_000_000),
                    mbm_local_bytes: Some(400_000_000),
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let f = run(&snaps);
        assert!(
            f[0].summary
                .contains("60% of the L3s' memory traffic went to a remote node (resctrl)"),
            "{}",
            f[0].summary
        );
        let t = f[0]
            .facts
            .iter()
            .find(|x| x.label == "memory traffic (resctrl)")
            .unwrap();
        assert_eq!(t.shown(), "1.0 GB/s", "1 GB per 1 s snapshot");
        assert_cites(&f[0], &snaps);
        // Without it (or with a snapshot missing it): no such evidence.
        snaps[2].resctrl = None;
        assert!(!run(&snaps)[0].summary.contains("resctrl"));
    }

    #[test]
    fn severity_is_balancings_estimated_kernel_time() {
        use crate::findings::Severity;
        // 4 CPUs half busy: 2 busy CPU-seconds per second; 10 µs a page, 1 µs a fault.
        for (pages, want) in [
            (2000, Severity::Info),       // 1.0%
            (10_000, Severity::Warning),  // 5.0%
            (40_000, Severity::Critical), // 20%
        ] {
            let f = run(&series(1, pages, 500, 100, 0));
            assert_eq!(f[0].severity, want, "{}", f[0].summary);
            let cost = f[0].cost.as_ref().expect("a cost");
            let want_share = (pages as f64 * 10e3 + 500.0 * 1e3) / 1e9 / 2.0;
            assert!((cost.value - want_share).abs() < 1e-9, "{cost:?}");
        }
        // Balancing off: 5000 remote pages/s per node (39 MiB/s): info; 10x: warning.
        assert_eq!(run(&series(0, 0, 0, 0, 5000))[0].severity, Severity::Info);
        assert_eq!(
            run(&series(0, 0, 0, 0, 50_000))[0].severity,
            Severity::Warning
        );
    }

    #[test]
    fn remote_allocations_with_balancing_off_suggest_turning_it_on() {
        let f = run(&series(0, 0, 0, 0, 5000));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].suggestion.as_ref().and_then(|s| s.value.as_deref()),
            Some("1")
        );
    }

    #[test]
    fn near_misses_do_not_fire() {
        // A trickle of migrations, mostly local faults, local allocations.
        assert!(run(&series(1, 100, 500, 400, 100)).is_empty());
        // Remote faults, but too few to judge.
        assert!(run(&series(1, 0, 50, 0, 0)).is_empty());
        // Remote allocations with balancing on are its business (the faults say how it does).
        assert!(run(&series(1, 0, 0, 0, 5000)).is_empty());
    }
}
