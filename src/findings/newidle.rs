//! Aggressive newidle balancing and cross-LLC churn on small LLCs (shared/seeds/004): CPUs
//! that go idle often (short slices) pull tasks from other LLCs, so tasks lose their cache.
//! Seen in /proc/schedstat as tasks pulled by newidle balancing at the domain levels above
//! the LLC, per busy CPU-second (newidle balancing runs exactly when a CPU goes idle, so
//! its rate already is the "short slices" part). Without schedstat, cross-LLC migrations
//! per busy CPU-second with a short mean slice fire it instead.

use super::{Agg, Fact, Finding, Kind, Suggestion, Unit, Window, busy_cpu_secs, harm, past};
use crate::snapshot::SatSum;
use crate::topology::Distance;

/// Domain names that lie inside an LLC on x86 (MC spans `cpu_coregroup_mask`, the LLC);
/// every other level reaches other LLCs.
pub const WITHIN_LLC: [&str; 3] = ["SMT", "CLS", "MC"];
/// Tasks pulled by newidle balancing above the LLC per busy CPU-second: fire / clear.
pub const NEWIDLE_PULL_RATE: f64 = 0.5;
pub const NEWIDLE_PULL_CLEAR: f64 = 0.25;
/// Without schedstat: cross-LLC (and cross-node) migrations per busy CPU-second: fire /
/// clear.
pub const XLLC_RATE: f64 = 5.0;
pub const XLLC_CLEAR: f64 = 2.5;
/// Without schedstat: mean slice (busy time per context switch) at or below which CPUs go
/// idle often enough for newidle balancing to be behind the migrations: fire / clear.
pub const SHORT_SLICE_NS: f64 = 5_000_000.0;
pub const SHORT_SLICE_CLEAR_NS: f64 = 10_000_000.0;
/// Busy CPUs (CPU-seconds per second) below which nothing is judged.
pub const MIN_BUSY_CPUS: f64 = 0.5;

const KEY: &str = "system";

pub fn detect(w: &Window) -> Vec<Finding> {
    if w.topo.llcs.len() < 2 || w.snaps.is_empty() {
        return Vec::new();
    }
    let held = w.holds(Kind::NewidleChurn, KEY);
    let secs = w.secs();
    let busy: f64 = w.snaps.iter().map(busy_cpu_secs).sum();
    if secs <= 0.0 || busy / secs < MIN_BUSY_CPUS {
        return Vec::new();
    }
    let ctx: u64 = w
        .snaps
        .iter()
        .filter_map(|s| s.system.ctx_switches)
        .sat_sum();
    if ctx == 0 {
        return Vec::new();
    }
    let slice_ns = busy * 1e9 / ctx as f64;
    let short = past(held, slice_ns, SHORT_SLICE_NS, SHORT_SLICE_CLEAR_NS, false);
    // Newidle above the LLC, per level (from the snapshots that have schedstat).
    let mut levels: Vec<(u32, String, u64, u64)> = Vec::new();
    for s in w.snaps {
        for d in s.balance.iter().flat_map(|b| &b.domains) {
            let Some(name) = d.name.as_deref() else {
                continue;
            };
            if WITHIN_LLC.contains(&name) {
                continue;
            }
            match levels.iter_mut().find(|l| l.0 == d.level) {
                Some(l) => {
                    l.2 = l.2.saturating_add(d.newidle.count);
                    l.3 = l.3.saturating_add(d.newidle.gained);
                }
                None => levels.push((d.level, name.into(), d.newidle.count, d.newidle.gained)),
            }
        }
    }
    levels.sort();
    let have_schedstat = w.snaps.iter().any(|s| s.balance.is_some());
    let pulled: u64 = levels.iter().map(|l| l.3).sat_sum();
    let pull_rate = pulled as f64 / busy;
    let migs: Vec<_> = w
        .snaps
        .iter()
        .filter_map(|s| s.migrations.as_ref())
        .collect();
    let xllc: u64 = migs
        .iter()
        .map(|m| {
            m.by_distance
                .cross_llc
                .saturating_add(m.by_distance.cross_node)
        })
        .sat_sum();
    let xllc_rate = xllc as f64 / busy;
    let by_newidle =
        have_schedstat && past(held, pull_rate, NEWIDLE_PULL_RATE, NEWIDLE_PULL_CLEAR, true);
    let by_moves = !have_schedstat
        && short
        && !migs.is_empty()
        && past(held, xllc_rate, XLLC_RATE, XLLC_CLEAR, true);
    if !by_newidle && !by_moves {
        return Vec::new();
    }
    let mut parts = Vec::new();
    if have_schedstat {
        let names: Vec<&str> = levels.iter().map(|l| l.1.as_str()).collect();
        parts.push(format!(
            "newidle balancing pulled {pull_rate:.1} tasks per busy CPU-second across LLCs ({})",
            names.join("/")
        ));
    }
    if !migs.is_empty() {
        parts.push(format!(
            "{xllc_rate:.1} cross-LLC migrations per busy CPU-second"
        ));
    }
    // What it cost: the runs that began away from the task's LLC — newidle's own pulls
    // where schedstat counts them, else every cross-LLC move.
    let (cost, severity) = harm::newidle(if by_newidle { pulled } else { xllc }, ctx);
    let summary = format!(
        "{} ({:.1} ms mean slice): CPUs going idle pull tasks away from their LLC's cache; {:.1}% of task runs began on another LLC",
        parts.join(" and "),
        slice_ns / 1e6,
        cost.value * 100.0
    );
    let mut f = Finding::new(Kind::NewidleChurn, KEY, w, summary);
    f.severity = severity;
    f.facts
        .push(Fact::derived("busy CPU-seconds", busy, Unit::Count));
    f.facts.push(Fact::cited(
        "context switches",
        ctx as f64,
        Unit::Count,
        w,
        "system/ctx_switches".into(),
        Agg::Sum,
    ));
    f.facts
        .push(Fact::derived("mean slice", slice_ns, Unit::Ns));
    for (level, name, count, gained) in &levels {
        f.facts.push(Fact::cited(
            format!("newidle balance attempts at {name}"),
            *count as f64,
            Unit::Count,
            w,
            format!("balance/domains/level={level}/newidle/count"),
            Agg::Sum,
        ));
        f.facts.push(Fact::cited(
            format!("tasks pulled by newidle at {name}"),
            *gained as f64,
            Unit::Count,
            w,
            format!("balance/domains/level={level}/newidle/gained"),
            Agg::Sum,
        ));
    }
    if have_schedstat {
        f.facts.push(Fact::derived(
            "newidle pulls above the LLC per busy CPU-second",
            pull_rate,
            Unit::PerSec,
        ));
    }
    if !migs.is_empty() {
        for (label, d, field) in [
            ("cross-LLC migrations", Distance::CrossLlc, "cross_llc"),
            ("cross-node migrations", Distance::CrossNode, "cross_node"),
        ] {
            let n: u64 = migs.iter().map(|m| m.by_distance.get(d)).sat_sum();
            f.facts.push(Fact::cited(
                label,
                n as f64,
                Unit::Count,
                w,
                format!("migrations/by_distance/{field}"),
                Agg::Sum,
            ));
        }
        f.facts.push(Fact::derived(
            "cross-LLC migrations per busy CPU-second",
            xllc_rate,
            Unit::PerSec,
        ));
    }
    f.facts.push(cost.clone());
    f.cost = Some(cost);
    f.suggestion = Some(Suggestion {
        knob: Some("relax_domain_level".into()),
        value: Some("llc".into()),
        profile: Some("newidle-in-llc".into()),
        command: "llctop ab --profile newidle-in-llc -- <workload>".into(),
        why: "keeps newidle balancing inside each LLC (relax_domain_level at the LLC's level); longer imbalances are still fixed by periodic balancing".into(),
    });
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::testing::{assert_cites, judge, snap};
    use crate::snapshot::{Balance, DomainBalance, LbStats, Migrations, Snapshot};
    use crate::topology::synthetic;

    /// 8 CPUs 80% busy, 1000 switches/s; newidle pulls per level (MC inside the LLC, PKG
    /// and NUMA above it).
    fn series(pulls: [u64; 3], xllc: u64, schedstat: bool) -> Vec<Snapshot> {
        let topo = synthetic(2, 2, 2);
        (0..5)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.8);
                if schedstat {
                    let names = ["MC", "PKG", "NUMA"];
                    s.balance = Some(Balance {
                        version: 17,
                        domains: (0..3)
                            .map(|l| DomainBalance {
                                level: l as u32,
                                name: Some(names[l].into()),
                                newidle: LbStats {
                                    count: 10 * pulls[l],
                                    gained: pulls[l],
                                    ..Default::default()
                                },
                                ..Default::default()
                            })
                            .collect(),
                    });
                }
                let mut m = Migrations::default();
                m.by_distance.cross_llc = xllc;
                s.migrations = Some(m);
                s
            })
            .collect()
    }

    fn run(snaps: &[Snapshot]) -> Vec<Finding> {
        judge(detect, &synthetic(2, 2, 2), snaps)
    }

    #[test]
    fn newidle_pulls_above_the_llc_fire_with_cited_evidence() {
        // 10 pulls/s at PKG over 6.4 busy CPU-seconds/s: 1.56 per busy CPU-second.
        let snaps = series([100, 10, 0], 0, true);
        let f = run(&snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, Kind::NewidleChurn);
        assert_eq!(
            f[0].suggestion.as_ref().and_then(|s| s.profile.as_deref()),
            Some("newidle-in-llc")
        );
        let rate = f[0]
            .facts
            .iter()
            .find(|x| x.label.starts_with("newidle pulls"))
            .unwrap();
        assert!((rate.value - 50.0 / 32.0).abs() < 1e-9, "{rate:?}");
        let pkg = f[0]
            .facts
            .iter()
            .find(|x| x.label == "tasks pulled by newidle at PKG")
            .unwrap();
        assert_eq!(pkg.value, 50.0);
        assert_cites(&f[0], &snaps);
        assert!(f[0].summary.contains("PKG/NUMA"), "{}", f[0].summary);
    }

    #[test]
    fn severity_is_the_share_of_runs_begun_on_another_llc() {
        use crate::findings::Severity;
        // 1000 switches/s; pulls above the LLC per second, the severity they earn.
        for (pkg, want) in [
            (10, Severity::Info),      // 1% of runs
            (20, Severity::Warning),   // 2%
            (99, Severity::Warning),   // 9.9%
            (100, Severity::Critical), // 10%
        ] {
            let f = run(&series([0, pkg, 0], 0, true));
            assert_eq!(f.len(), 1, "{pkg}");
            assert_eq!(f[0].severity, want, "{}", f[0].summary);
            let cost = f[0].cost.as_ref().expect("a cost");
            assert!((cost.value - pkg as f64 / 1000.0).abs() < 1e-9, "{cost:?}");
        }
        // Without schedstat the cross-LLC moves are the cold runs: 50 of 10,000 switches.
        let mut snaps = series([0; 3], 50, false);
        for s in &mut snaps {
            s.system.ctx_switches = Some(10_000);
        }
        assert_eq!(run(&snaps)[0].severity, Severity::Info);
    }

    #[test]
    fn near_misses_do_not_fire() {
        // Pulls inside the LLC only, however many.
        assert!(run(&series([1000, 0, 0], 0, true)).is_empty());
        // Above the LLC, under the threshold (0.31 per busy CPU-second).
        assert!(run(&series([0, 2, 0], 0, true)).is_empty());
        // With schedstat, migrations alone do not fire it (newidle says why they happen).
        assert!(run(&series([0, 0, 0], 500, true)).is_empty());
    }

    #[test]
    fn without_schedstat_cross_llc_moves_with_short_slices_fire() {
        let mut snaps = series([0; 3], 50, false);
        // 6.4 busy CPU-seconds / 1000 switches: 6.4 ms slices — too long.
        assert!(run(&snaps).is_empty());
        for s in &mut snaps {
            s.system.ctx_switches = Some(10_000);
        }
        let f = run(&snaps);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].summary.contains("cross-LLC migrations"),
            "{}",
            f[0].summary
        );
        assert_cites(&f[0], &snaps);
    }
}
