//! The 7.2 cache-aware scheduler's own situations (shared/seeds/000, issue "CAS inside"):
//! `llc_balancing/enabled` reading 1 while the kernel keeps the feature off (the file
//! reads back what was asked; the audit of 7.2-rc7 called it a verification trap), and
//! **over-aggregation** — a process the kernel gathered on its preferred LLC while that
//! LLC is saturated, its threads waiting there, with CPUs of the node's other LLCs idle
//! (the misfit and V-Cache cases of the fixes series). The state from the snapshots'
//! `cache_aware`; over-aggregation from the process rows (kernel preference, runtime per
//! LLC, run-queue wait) and the LLCs' busy share, summed over the window, its severity
//! from the wait the idle CPUs could have spared (harm.rs), as a pile-up's is. And what it
//! cannot do: two processes that share memory but run on two LLCs (the `sharing` pairs),
//! which 7.2 never groups — a candidate group, at info.

use super::{Agg, Fact, Finding, Kind, Severity, Suggestion, Unit, Window, harm, past};
use crate::snapshot::{PreferredKind, SatSum, Snapshot};

/// The key of the state finding (one per machine).
pub const STATE_KEY: &str = "state";

/// Share of the process's runtime on its kernel-preferred LLC from which it is gathered
/// there: fire / clear.
pub const GATHERED: f64 = 0.8;
pub const GATHERED_CLEAR: f64 = 0.7;
/// The preferred LLC's mean busy share from which it is saturated: fire / clear.
pub const SATURATED: f64 = 0.9;
pub const SATURATED_CLEAR: f64 = 0.8;
/// The process's run-queue wait as a share of its runnable time (CPU time + wait) from
/// which its threads queue on the LLC rather than run: fire / clear.
pub const WAIT_SHARE: f64 = 0.2;
pub const WAIT_SHARE_CLEAR: f64 = 0.1;
/// Idle CPUs' worth (idle CPU-seconds per second) in the other LLCs of the preferred
/// LLC's node from which there was room elsewhere: fire / clear.
pub const IDLE_CPUS: f64 = 1.0;
pub const IDLE_CPUS_CLEAR: f64 = 0.75;

/// The enabled-but-not-active finding, from the window's newest snapshot: the file says
/// 1 and the kernel's rule (no sched-domain partition spans two LLCs) keeps it off.
fn state(w: &Window) -> Option<Finding> {
    let c = w.snaps.last()?.cache_aware.as_ref()?;
    if !c.enabled || c.active() {
        return None;
    }
    let why = c.why_not()?;
    let summary = format!(
        "llc_balancing/enabled reads 1, but the kernel keeps the feature off: {why}. \
         The file reads back what was asked, not what runs: no process gets a preferred LLC and \
         no llc_balancing knob has an effect (llctop_cache_aware_active 0)"
    );
    let mut f = Finding::new(Kind::CacheAware, STATE_KEY, w, summary);
    f.severity = Severity::Info;
    f.facts
        .push(Fact::derived("llc_balancing/enabled", 1.0, Unit::Count));
    f.facts.push(Fact::derived(
        "active (the kernel's sched_cache_active)",
        0.0,
        Unit::Count,
    ));
    f.facts.push(Fact::derived(
        "sched-domain partitions",
        c.partitions.len() as f64,
        Unit::Count,
    ));
    f.facts
        .push(Fact::derived("LLCs", w.topo.llcs.len() as f64, Unit::Count));
    f.suggestion = Some(Suggestion {
        knob: None,
        value: None,
        profile: None,
        command: "read llctop_cache_aware_active (or the header's cache-aware state), not llc_balancing/enabled, to know whether it runs".into(),
        why: if w.topo.llcs.len() < 2 {
            "one LLC: there is nothing to gather a process onto, so the kernel never turns it on".into()
        } else {
            "a partition of CPUs that spans two LLCs (a cpuset partition root, or the whole machine) is what the kernel needs to turn it on".into()
        },
    });
    Some(f)
}

/// The LLCs beside `llc` in its node (every other LLC where the topology has no node).
fn neighbours(w: &Window, llc: u32) -> Vec<u32> {
    let node = w
        .topo
        .llcs
        .iter()
        .find(|l| l.id == llc)
        .and_then(|l| l.node);
    w.topo
        .llcs
        .iter()
        .filter(|l| l.id != llc && (node.is_none() || l.node == node))
        .map(|l| l.id)
        .collect()
}

/// Idle CPU-seconds of `llcs` in snapshot `s`: each LLC's online CPUs × its idle share ×
/// the interval (an LLC without a busy share adds nothing).
fn idle_secs(s: &Snapshot, llcs: &[u32]) -> f64 {
    s.llcs
        .iter()
        .filter(|g| llcs.contains(&g.id))
        .filter_map(|g| Some(f64::from(g.cpus) * (1.0 - g.busy?.clamp(0.0, 1.0))))
        .sum::<f64>()
        * s.time.interval_secs()
}

/// The LLC's mean busy share over the window (the snapshots that have it).
fn llc_busy(w: &Window, llc: u32) -> Option<f64> {
    let v: Vec<f64> = w
        .snaps
        .iter()
        .filter_map(|s| s.llcs.iter().find(|g| g.id == llc)?.busy)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn over_aggregated(w: &Window) -> Vec<Finding> {
    let secs = w.secs();
    if w.topo.llcs.len() < 2 || secs <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (pid, a) in super::scatter::fold(w).0 {
        // The kernel's preference now, held through most of the window, for a process of
        // threads (a single thread gets none: cas_why).
        let Some(pref) = a.prefs.last().copied().flatten() else {
            continue;
        };
        let held_pref = a.prefs.iter().filter(|p| **p == Some(pref)).count();
        if a.kind != PreferredKind::Kernel || a.threads < 2 || held_pref * 2 < a.prefs.len() {
            continue;
        }
        let key = format!("pid {pid}");
        let held = w.holds(Kind::CacheAware, &key);
        let on_llcs: u64 = a.per_llc.iter().copied().sat_sum();
        let on_pref = a.per_llc.get(pref as usize).copied().unwrap_or(0);
        if on_llcs == 0 {
            continue;
        }
        let share = on_pref as f64 / on_llcs as f64;
        let runnable = a.cpu_ns.saturating_add(a.wait_ns);
        let wait_share = a.wait_ns as f64 / runnable.max(1) as f64;
        let Some(busy) = llc_busy(w, pref) else {
            continue;
        };
        let others = neighbours(w, pref);
        let idle: f64 = w.snaps.iter().map(|s| idle_secs(s, &others)).sum();
        let idle_cpus = idle / secs;
        if !past(held, share, GATHERED, GATHERED_CLEAR, true)
            || !past(held, busy, SATURATED, SATURATED_CLEAR, true)
            || !past(held, wait_share, WAIT_SHARE, WAIT_SHARE_CLEAR, true)
            || !past(held, idle_cpus, IDLE_CPUS, IDLE_CPUS_CLEAR, true)
        {
            continue;
        }
        let pref_cpus = w
            .topo
            .llcs
            .iter()
            .find(|l| l.id == pref)
            .map_or(0, |l| l.cpus.len());
        let (cost, mut severity) = harm::over_aggregation(a.wait_ns, idle, secs);
        let mut summary = format!(
            "{} ({pid}): {} threads gathered on their kernel-preferred llc{pref} ({:.0}% of their runtime there, {pref_cpus} CPUs, {:.0}% busy) waited {:.2} s in {secs:.0} s ({:.0}% of their runnable time) while the node's other LLCs (llc{}) had {idle_cpus:.1} CPUs idle: about {:.2} s of waiting per second they could have run",
            a.comm,
            a.threads,
            share * 100.0,
            busy * 100.0,
            a.wait_ns as f64 / 1e9,
            wait_share * 100.0,
            others
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", llc"),
            cost.value
        );
        super::scatter::young(w, pid, &mut severity, &mut summary);
        summary.push_str(
            " (a process pinned to that LLC by its affinity looks the same; moving it off costs the cache it shares there, which the A/B weighs)",
        );
        let mut f = Finding::new(Kind::CacheAware, key, w, summary);
        f.severity = severity;
        let row = |field: &str| format!("processes/rows/pid={pid}/{field}");
        f.facts.push(Fact::cited(
            "CPU time",
            a.cpu_ns as f64,
            Unit::Ns,
            w,
            row("cpu_time_ns"),
            Agg::Sum,
        ));
        f.facts.push(Fact::cited(
            "run-queue wait",
            a.wait_ns as f64,
            Unit::Ns,
            w,
            row("rq_wait_ns"),
            Agg::Sum,
        ));
        f.facts.push(Fact::cited(
            format!("runtime on llc{pref} (kernel-preferred)"),
            on_pref as f64,
            Unit::Ns,
            w,
            row(&format!("runtime_per_llc_ns/{pref}")),
            Agg::Sum,
        ));
        f.facts.push(Fact::derived(
            "share on the preferred LLC",
            share,
            Unit::Fraction,
        ));
        f.facts.push(Fact::derived(
            "wait share of runnable time",
            wait_share,
            Unit::Fraction,
        ));
        f.facts.push(Fact::cited(
            format!("llc{pref} busy"),
            busy,
            Unit::Fraction,
            w,
            format!("llcs/id={pref}/busy"),
            Agg::Mean,
        ));
        f.facts.push(Fact::derived(
            "idle CPUs in the node's other LLCs",
            idle_cpus,
            Unit::Cpus,
        ));
        f.facts.push(Fact::cited(
            "threads",
            a.threads as f64,
            Unit::Count,
            w,
            row("threads"),
            Agg::Max,
        ));
        f.facts.push(cost.clone());
        f.cost = Some(cost);
        f.llcs = std::iter::once(pref).chain(others).collect();
        f.pids = vec![pid];
        f.suggestion = Some(suggestion(w, a.threads, pref_cpus));
        out.push(f);
    }
    out
}

/// The kernel's default `overaggr_pct` (7.2 kernel/sched/fair.c: `llc_overaggr_pct`).
pub const OVERAGGR_DEFAULT: u32 = 50;

/// The experiment, from the knobs the snapshot read: `overaggr_pct` raised above the
/// kernel's default, back to it; else, with the thread limit lifted (`aggr_tolerance`
/// above 1) and more threads than the LLC has CPUs, the limit back; else `overaggr_pct`
/// lowered, so that the kernel stops gathering sooner — each against the scheduler's own
/// placement; `enabled=0,1` is named as the control without cache-aware scheduling.
fn suggestion(w: &Window, threads: u32, llc_cpus: usize) -> Suggestion {
    let c = w.snaps.last().and_then(|s| s.cache_aware.as_ref());
    let tolerance = c.and_then(|c| c.aggr_tolerance);
    let overaggr = c.and_then(|c| c.overaggr_pct);
    // `llctop ab` of one llc_balancing knob from `now` to `to`.
    let ab = |knob: &str, now: String, to: String, why: String| Suggestion {
        knob: Some(format!("llc_balancing.{knob}")),
        command: format!("llctop ab llc_balancing.{knob}={now},{to} -- <workload>"),
        value: Some(to),
        profile: None,
        why: format!("{why} (enabled=0,1 is the control without cache-aware scheduling)"),
    };
    match (overaggr, tolerance) {
        (Some(pct), _) if pct > OVERAGGR_DEFAULT => ab(
            "overaggr_pct",
            pct.to_string(),
            OVERAGGR_DEFAULT.to_string(),
            format!(
                "overaggr_pct {pct} lets the kernel keep gathering onto the preferred LLC and refuse moves off it until its utilisation passes {pct}% of its capacity (kernel/sched/fair.c: fits_llc_capacity); at the default {OVERAGGR_DEFAULT} ordinary balancing spreads a saturated LLC's threads"
            ),
        ),
        (_, Some(t)) if t > 1 && threads as usize > llc_cpus => ab(
            "aggr_tolerance",
            t.to_string(),
            "1".into(),
            format!(
                "aggr_tolerance {t} lifts the limit that keeps a process with more threads than an LLC's CPUs ({threads} against {llc_cpus}) from being gathered; at 1 the kernel leaves it to ordinary balancing"
            ),
        ),
        _ => ab(
            "overaggr_pct",
            "<now>".into(),
            "25".into(),
            "overaggr_pct is the LLC utilisation up to which the kernel keeps gathering onto the preferred LLC and refuses moves off it (kernel/sched/fair.c: fits_llc_capacity); lower, ordinary balancing spreads a saturated LLC's threads sooner".into(),
        ),
    }
}

/// Writable shared memory from which two processes count as sharing data.
pub const SHARED_BYTES: u64 = 1 << 20;
/// Wakeups per second between two processes (both ways, `--wakeups`) from which they
/// count as talking: fire / clear.
pub const WAKES_PER_S: f64 = 500.0;
pub const WAKES_PER_S_CLEAR: f64 = 250.0;
/// CPUs' worth each of the two must use over the window: fire / clear.
pub const APART_CPUS: f64 = 0.1;
pub const APART_CPUS_CLEAR: f64 = 0.05;
/// Share of each one's runtime on its own busiest LLC from which it runs there: fire /
/// clear.
pub const APART_SHARE: f64 = 0.6;
pub const APART_SHARE_CLEAR: f64 = 0.5;

/// What ties two processes (the lower pid first): the shared writable memory both map
/// (the newest `sharing` read) and their wakeups of each other over the window.
#[derive(Debug, Default)]
struct Ties {
    bytes: u64,
    object: String,
    /// Wakeups the lower pid made of the higher, and back.
    wakes: (u64, u64),
}

fn ties(w: &Window) -> std::collections::BTreeMap<(u32, u32), Ties> {
    let mut out: std::collections::BTreeMap<(u32, u32), Ties> = Default::default();
    if let Some(sh) = w.snaps.last().and_then(|s| s.sharing.as_ref()) {
        for p in &sh.pairs {
            let t = out.entry((p.a.min(p.b), p.a.max(p.b))).or_default();
            t.bytes = p.bytes;
            t.object.clone_from(&p.object);
        }
    }
    for p in w
        .snaps
        .iter()
        .filter_map(|s| s.wakeups.as_ref())
        .flat_map(|x| &x.pairs)
    {
        let t = out
            .entry((p.waker.min(p.wakee), p.waker.max(p.wakee)))
            .or_default();
        if p.waker < p.wakee {
            t.wakes.0 = t.wakes.0.saturating_add(p.count);
        } else {
            t.wakes.1 = t.wakes.1.saturating_add(p.count);
        }
    }
    out
}

/// Processes that share data but run apart: two busy processes that map the same shared
/// writable memory or wake each other often, each running mostly on an LLC of its own.
/// 7.2 gathers the threads of one process (one mm), never two processes — the grouping
/// interfaces proposed for it (`PR_SCHED_CACHE_SHARE_FROM`) are not in 7.2 — so the pair is
/// a candidate group to run on one LLC. Info: what they lose (cache lines crossing LLCs,
/// wakeups across them) is not measured here.
fn apart(w: &Window) -> Vec<Finding> {
    let secs = w.secs();
    if w.topo.llcs.len() < 2 || secs <= 0.0 {
        return Vec::new();
    }
    let procs = super::scatter::fold(w).0;
    let busiest = |a: &super::scatter::Acc| -> Option<(u32, f64)> {
        let all: u64 = a.per_llc.iter().copied().sat_sum();
        let (i, ns) = a
            .per_llc
            .iter()
            .enumerate()
            .max_by_key(|(i, ns)| (**ns, std::cmp::Reverse(*i)))?;
        (all > 0).then(|| (i as u32, *ns as f64 / all as f64))
    };
    let mut out = Vec::new();
    for ((pa, pb), t) in ties(w) {
        let key = format!("pids {pa} {pb}");
        let held = w.holds(Kind::CacheAware, &key);
        let wakes_per_s = t.wakes.0.saturating_add(t.wakes.1) as f64 / secs;
        let shares = t.bytes >= SHARED_BYTES;
        let talks = past(held, wakes_per_s, WAKES_PER_S, WAKES_PER_S_CLEAR, true);
        if !shares && !talks {
            continue;
        }
        let (Some(a), Some(b)) = (procs.get(&pa), procs.get(&pb)) else {
            continue;
        };
        let (Some((la, sa)), Some((lb, sb))) = (busiest(a), busiest(b)) else {
            continue;
        };
        let (ca, cb) = (a.cpu_ns as f64 / 1e9 / secs, b.cpu_ns as f64 / 1e9 / secs);
        if la == lb
            || !past(held, ca.min(cb), APART_CPUS, APART_CPUS_CLEAR, true)
            || !past(held, sa.min(sb), APART_SHARE, APART_SHARE_CLEAR, true)
        {
            continue;
        }
        let cpus_of = |l: u32| {
            w.topo
                .llcs
                .iter()
                .find(|x| x.id == l)
                .map_or(String::new(), |x| crate::cpulist::format(&x.cpus))
        };
        let mut what = Vec::new();
        if shares {
            what.push(format!(
                "map {} of the same shared memory writable ({})",
                crate::units::bytes(t.bytes),
                t.object
            ));
        }
        if talks {
            what.push(format!(
                "wake each other {wakes_per_s:.0} times a second ({:.0}/s and {:.0}/s back)",
                t.wakes.0 as f64 / secs,
                t.wakes.1 as f64 / secs
            ));
        }
        let summary = format!(
            "{} ({pa}) and {} ({pb}) {} but run apart: {:.0}% of the first's time on llc{la}, {:.0}% of the second's on llc{lb} ({ca:.2} and {cb:.2} CPUs). 7.2 gathers the threads of one process on an LLC, never two processes: a candidate group to run on one LLC",
            a.comm,
            b.comm,
            what.join(" and "),
            sa * 100.0,
            sb * 100.0
        );
        let mut f = Finding::new(Kind::CacheAware, key, w, summary);
        f.severity = Severity::Info;
        if shares {
            f.facts.push(Fact::derived(
                "shared writable memory both map",
                t.bytes as f64,
                Unit::Bytes,
            ));
        }
        if talks {
            f.facts.push(Fact::derived(
                "wakeups between them",
                wakes_per_s,
                Unit::PerSec,
            ));
        }
        for (pid, acc, llc, share) in [(pa, a, la, sa), (pb, b, lb, sb)] {
            f.facts.push(Fact::cited(
                format!("{pid} CPU time"),
                acc.cpu_ns as f64,
                Unit::Ns,
                w,
                format!("processes/rows/pid={pid}/cpu_time_ns"),
                Agg::Sum,
            ));
            f.facts.push(Fact::derived(
                format!("{pid}'s share on llc{llc}"),
                share,
                Unit::Fraction,
            ));
        }
        f.llcs = vec![la, lb];
        f.pids = vec![pa, pb];
        f.suggestion = Some(Suggestion {
            knob: None,
            value: None,
            profile: None,
            command: format!(
                "llctop ab colocate=off,llc{la} --pid {pa},{pb}  (both running on llc{la}, CPUs {}, against their own placement; or -- CMD, CMD what starts them)",
                cpus_of(la),
            ),
            why: format!(
                "running {pb} on llc{la} beside {pa} keeps the data they share in one L3{}; no kernel knob groups two processes in 7.2",
                if talks {
                    " and their wakeups within it"
                } else {
                    ""
                }
            ),
        });
        out.push(f);
    }
    out
}

pub fn detect(w: &Window) -> Vec<Finding> {
    let mut out: Vec<Finding> = state(w).into_iter().collect();
    out.extend(over_aggregated(w));
    out.extend(apart(w));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::testing::{assert_cites, judge, snap};
    use crate::snapshot::{CacheAware, ProcessStats, ProcessTable};
    use crate::topology::{Topology, synthetic};

    fn active() -> CacheAware {
        CacheAware {
            enabled: true,
            multi_llc: true,
            partitions: vec!["0-7".into()],
            aggr_tolerance: Some(1),
            ..Default::default()
        }
    }

    /// 1 node of 4 LLCs of 2 CPUs; `threads` threads of pid 100 prefer llc1 and run there
    /// `share` of their time, llc1 `busy`, the other LLCs `others` busy, the process waiting
    /// `wait` s per second; `n` snapshots of 1 s.
    fn series(
        threads: u32,
        share: f64,
        busy: f64,
        others: f64,
        wait: f64,
        n: u64,
    ) -> (Topology, Vec<Snapshot>) {
        let topo = synthetic(1, 4, 2);
        let snaps = (0..n)
            .map(|seq| {
                let mut s = snap(&topo, seq, others);
                s.llcs[1].busy = Some(busy);
                s.cache_aware = Some(active());
                let cpu = 2e9;
                let mut per_llc = vec![0u64; 4];
                per_llc[1] = (cpu * share) as u64;
                per_llc[2] = (cpu * (1.0 - share)) as u64;
                s.processes = Some(ProcessTable {
                    rows: vec![ProcessStats {
                        pid: 100,
                        comm: "gathered".into(),
                        threads,
                        cpu_time_ns: per_llc.iter().sum(),
                        runtime_per_llc_ns: per_llc,
                        preferred_llc: Some(1),
                        preferred_kind: PreferredKind::Kernel,
                        rq_wait_ns: (wait * 1e9) as u64,
                        ..Default::default()
                    }],
                    ..Default::default()
                });
                s
            })
            .collect();
        (topo, snaps)
    }

    fn run(topo: &Topology, snaps: &[Snapshot]) -> Vec<Finding> {
        judge(detect, topo, snaps)
    }

    #[test]
    fn gathered_on_a_saturated_llc_beside_idle_ones_fires_with_the_spared_wait() {
        // 4 threads on 2 CPUs: each waits about half the time (2 s per s), 6 CPUs idle.
        let (topo, snaps) = series(4, 1.0, 1.0, 0.0, 2.0, 10);
        let f = run(&topo, &snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        let f = &f[0];
        assert_eq!((f.kind, f.key.as_str()), (Kind::CacheAware, "pid 100"));
        assert_eq!(f.severity, Severity::Critical, "{}", f.summary);
        // Spared: the wait (2 s per s), at most the idle CPUs (6): 2 CPUs.
        let cost = f.cost.as_ref().expect("a cost");
        assert!((cost.value - 2.0).abs() < 1e-9, "{cost:?}");
        assert_eq!(f.llcs, [1, 0, 2, 3]);
        assert!(
            f.summary
                .contains("4 threads gathered on their kernel-preferred llc1")
                && f.summary.contains("6.0 CPUs idle"),
            "{}",
            f.summary
        );
        assert_cites(f, &snaps);
        let s = f.suggestion.as_ref().expect("an experiment");
        assert_eq!(s.knob.as_deref(), Some("llc_balancing.overaggr_pct"));
    }

    #[test]
    fn the_cost_is_at_most_the_idle_time_elsewhere() {
        // The others are 80% busy: 1.2 CPUs idle of 6; the process waits 2 s per s.
        let (topo, snaps) = series(4, 1.0, 1.0, 0.8, 2.0, 10);
        let f = run(&topo, &snaps);
        let cost = f[0].cost.as_ref().expect("a cost");
        assert!((cost.value - 1.2).abs() < 1e-6, "{cost:?}");
        assert_eq!(f[0].severity, Severity::Critical);
        // Less waiting: 0.6 s per s beside 2 s of CPU (23% of the runnable time), all of
        // it spared: a warning.
        let (topo, snaps) = series(2, 1.0, 0.95, 0.0, 0.6, 10);
        let f = run(&topo, &snaps);
        assert_eq!(f[0].severity, Severity::Warning, "{}", f[0].summary);
    }

    #[test]
    fn near_misses_do_not_fire() {
        for (what, (threads, share, busy, others, wait)) in [
            ("not gathered", (4, 0.6, 1.0, 0.0, 2.0)),
            ("not saturated", (4, 1.0, 0.7, 0.0, 2.0)),
            ("no waiting", (4, 1.0, 1.0, 0.0, 0.1)),
            ("no room elsewhere", (4, 1.0, 1.0, 0.9, 2.0)),
            ("one thread", (1, 1.0, 1.0, 0.0, 2.0)),
        ] {
            let (topo, snaps) = series(threads, share, busy, others, wait, 10);
            let f = run(&topo, &snaps);
            assert!(
                f.iter().all(|f| f.key != "pid 100"),
                "{what}: {:?}",
                f.iter().map(|f| &f.summary).collect::<Vec<_>>()
            );
        }
        // No kernel preference (an emulated one is llctop's, not the kernel's gathering).
        let (topo, mut snaps) = series(4, 1.0, 1.0, 0.0, 2.0, 10);
        for s in &mut snaps {
            if let Some(t) = &mut s.processes {
                t.rows[0].preferred_kind = PreferredKind::Emulated;
            }
        }
        assert!(run(&topo, &snaps).is_empty());
    }

    #[test]
    fn a_young_process_is_at_most_info() {
        let (topo, snaps) = series(4, 1.0, 1.0, 0.0, 2.0, 4);
        let f = run(&topo, &snaps);
        assert_eq!(f[0].severity, Severity::Info, "{}", f[0].summary);
        assert!(f[0].summary.contains("a start-up or an end"));
    }

    #[test]
    fn a_lifted_thread_limit_is_the_experiment_when_threads_outnumber_the_llc() {
        let (topo, mut snaps) = series(4, 1.0, 1.0, 0.0, 2.0, 10);
        for s in &mut snaps {
            s.cache_aware = Some(CacheAware {
                aggr_tolerance: Some(100),
                ..active()
            });
        }
        let f = run(&topo, &snaps);
        let s = f[0].suggestion.as_ref().expect("an experiment");
        assert_eq!(
            (s.knob.as_deref(), s.value.as_deref(), s.command.as_str()),
            (
                Some("llc_balancing.aggr_tolerance"),
                Some("1"),
                "llctop ab llc_balancing.aggr_tolerance=100,1 -- <workload>"
            )
        );
    }

    #[test]
    fn a_raised_overaggr_pct_is_the_experiment_first() {
        let (topo, mut snaps) = series(4, 1.0, 1.0, 0.0, 2.0, 10);
        for s in &mut snaps {
            s.cache_aware = Some(CacheAware {
                aggr_tolerance: Some(100),
                overaggr_pct: Some(1000),
                ..active()
            });
        }
        let f = run(&topo, &snaps);
        let s = f[0].suggestion.as_ref().expect("an experiment");
        assert_eq!(
            s.command,
            "llctop ab llc_balancing.overaggr_pct=1000,50 -- <workload>"
        );
        assert_eq!(s.value.as_deref(), Some("50"));
    }

    /// pid 10 on llc0 and pid 20 on llc2 (`cpu` CPUs each, all their time there), mapping
    /// `mib` MiB of the same memfd.
    fn pair_apart(mib: u64, cpu: f64, same_llc: bool) -> (Topology, Vec<Snapshot>) {
        pair_talking(mib, 0, cpu, same_llc)
    }

    /// [`pair_apart`] with 10 waking 20 `wakes` times a second (and 20 waking 10 as often).
    fn pair_talking(mib: u64, wakes: u64, cpu: f64, same_llc: bool) -> (Topology, Vec<Snapshot>) {
        use crate::snapshot::{SharedPair, Sharing, WakePair, Wakeups};
        let topo = synthetic(1, 4, 2);
        let snaps = (0..5)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.2);
                let row = |pid: u32, llc: usize| {
                    let mut per_llc = vec![0u64; 4];
                    per_llc[llc] = (cpu * 1e9) as u64;
                    ProcessStats {
                        pid,
                        comm: format!("p{pid}"),
                        threads: 1,
                        cpu_time_ns: per_llc[llc],
                        runtime_per_llc_ns: per_llc,
                        ..Default::default()
                    }
                };
                s.processes = Some(ProcessTable {
                    rows: vec![row(10, 0), row(20, if same_llc { 0 } else { 2 })],
                    ..Default::default()
                });
                s.sharing = Some(Sharing {
                    seq: 0,
                    processes: 2,
                    pairs: vec![SharedPair {
                        a: 10,
                        b: 20,
                        bytes: mib << 20,
                        objects: 1,
                        object: "/memfd:ring (deleted)".into(),
                    }],
                });
                let pair = |waker, wakee| WakePair {
                    waker,
                    wakee,
                    count: wakes,
                };
                s.wakeups = Some(Wakeups {
                    pairs: vec![pair(10, 20), pair(20, 10)],
                    paired: 2 * wakes,
                    ..Default::default()
                });
                s
            })
            .collect();
        (topo, snaps)
    }

    #[test]
    fn processes_waking_each_other_on_two_llcs_are_a_candidate_group() {
        let (topo, snaps) = pair_talking(0, 400, 0.5, false);
        let f = run(&topo, &snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].key, "pids 10 20");
        assert!(
            f[0].summary.contains(
                "p10 (10) and p20 (20) wake each other 800 times a second (400/s and 400/s back) but run apart"
            ),
            "{}",
            f[0].summary
        );
        assert!(!f[0].summary.contains("shared memory"), "{}", f[0].summary);
        assert_cites(&f[0], &snaps);
        // Both ties named when both hold.
        let (topo, snaps) = pair_talking(16, 400, 0.5, false);
        let f = run(&topo, &snaps);
        assert!(
            f[0].summary
                .contains("writable (/memfd:ring (deleted)) and wake each other"),
            "{}",
            f[0].summary
        );
        // Too few wakeups, or on one LLC: nothing.
        for (wakes, same) in [(200, false), (400, true)] {
            let (topo, snaps) = pair_talking(0, wakes, 0.5, same);
            assert!(run(&topo, &snaps).is_empty(), "{wakes} {same}");
        }
    }

    #[test]
    fn processes_sharing_memory_on_two_llcs_are_a_candidate_group() {
        let (topo, snaps) = pair_apart(16, 0.5, false);
        let f = run(&topo, &snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].key.as_str(), f[0].severity, f[0].llcs.as_slice()),
            ("pids 10 20", Severity::Info, &[0, 2][..])
        );
        assert!(
            f[0].summary
                .contains("p10 (10) and p20 (20) map 16.0 MiB of the same shared memory writable"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].severity_tag(), "INFO (cost not measured)");
        let s = f[0].suggestion.as_ref().expect("an experiment");
        assert!(
            s.command
                .starts_with("llctop ab colocate=off,llc0 --pid 10,20")
                && s.command.contains("CPUs 0-1"),
            "{}",
            s.command
        );
        assert_cites(&f[0], &snaps);
        // On one LLC already, sharing little, or idle: nothing.
        for (mib, cpu, same) in [(16, 0.5, true), (0, 0.5, false), (16, 0.01, false)] {
            let (topo, snaps) = pair_apart(mib, cpu, same);
            assert!(run(&topo, &snaps).is_empty(), "{mib} {cpu} {same}");
        }
    }

    #[test]
    fn enabled_but_not_active_is_an_info_finding_of_the_machine() {
        let topo = synthetic(1, 1, 2);
        let mut s = snap(&topo, 0, 0.1);
        s.cache_aware = Some(CacheAware {
            enabled: true,
            multi_llc: false,
            partitions: vec!["0-1".into()],
            ..Default::default()
        });
        let f = run(&topo, std::slice::from_ref(&s));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].key.as_str(), f[0].severity),
            (STATE_KEY, Severity::Info)
        );
        assert!(
            f[0].summary.starts_with(
                "llc_balancing/enabled reads 1, but the kernel keeps the feature off: no sched-domain partition spans two LLCs"
            ),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].severity_tag(), "INFO");
        assert!(f[0].suggestion.as_ref().is_some_and(|s| !s.is_command()));
        // Active, or asked off: they agree, nothing to say.
        for c in [
            active(),
            CacheAware {
                enabled: false,
                ..Default::default()
            },
        ] {
            s.cache_aware = Some(c);
            assert!(run(&topo, std::slice::from_ref(&s)).is_empty());
        }
        s.cache_aware = None;
        assert!(run(&topo, std::slice::from_ref(&s)).is_empty());
    }
}
