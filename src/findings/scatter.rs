//! Threads scattered over LLCs (shared/seeds/000): a multi-threaded process that would fit
//! in one LLC runs spread over several, with a low preferred-LLC hit ratio (the kernel's
//! own preference on 7.2+, llctop's emulation elsewhere) — its threads keep refetching
//! what they share from another LLC. On 7.2 also a process whose kernel preference keeps
//! changing. From the process table's per-LLC runtime, summed over the window.

use std::collections::BTreeMap;

use super::{Agg, Fact, Finding, Kind, Suggestion, Unit, WINDOW_NS, Window, harm, past};
use crate::cpulist;
use crate::snapshot::SatSum;
use crate::snapshot::{Precision, PreferredKind};

/// CPUs' worth of time a process must use to be judged: fire / clear.
pub const MIN_CPUS: f64 = 1.0;
pub const MIN_CPUS_CLEAR: f64 = 0.8;
/// A process fits one LLC when its CPUs' worth of time is at most the LLC's CPUs times
/// this (accounting at interval edges moves a few percent between intervals): fire /
/// clear.
pub const FITS: f64 = 1.1;
pub const FITS_CLEAR: f64 = 1.25;
/// Share of its runtime on its busiest LLC below which a process is scattered: fire /
/// clear.
pub const TOP_SHARE: f64 = 0.7;
pub const TOP_SHARE_CLEAR: f64 = 0.8;
/// Preferred-LLC hit ratio below which the preference is not being met: fire / clear.
pub const LOW_HIT: f64 = 0.5;
pub const LOW_HIT_CLEAR: f64 = 0.6;
/// Changes of the kernel's preferred LLC within one window that make it flapping.
pub const PREF_CHANGES: usize = 3;

/// One process's rows of the window, folded (shared with cache_aware.rs).
#[derive(Default)]
pub(super) struct Acc {
    pub comm: String,
    pub threads: u32,
    pub cpu_ns: u64,
    pub wait_ns: u64,
    pub per_llc: Vec<u64>,
    hit_num: f64,
    hit_den: f64,
    /// The newest row's kind of preference.
    pub kind: PreferredKind,
    /// Each row's preferred LLC, oldest first.
    pub prefs: Vec<Option<u32>>,
}

/// Where a process llctop monitors in a resctrl group keeps its cache: the share of its
/// L3 bytes on `llc` over the window, and its mean occupancy (None: not monitored, or
/// no occupancy read).
fn l3_share(w: &Window, pid: u32, llc: u32) -> Option<(f64, f64)> {
    let (mut on, mut all, mut sum, mut n) = (0u64, 0u64, 0u64, 0u64);
    for s in w.snaps {
        let Some(g) = s.resctrl.as_ref().and_then(|r| r.of_pid(pid)) else {
            continue;
        };
        if let Some(t) = g.total.occupancy_bytes {
            sum = sum.saturating_add(t);
            n += 1;
        }
        for d in &g.domains {
            if let Some(o) = d.mon.occupancy_bytes {
                all = all.saturating_add(o);
                if d.llc == Some(llc) {
                    on = on.saturating_add(o);
                }
            }
        }
    }
    (all > 0 && n > 0).then(|| (on as f64 / all as f64, sum as f64 / n as f64))
}

/// The scattered processes of the window: step 1 folds each process's figures, step 2
/// (here) judges and describes each, with its cost ([`lived`]: a start-up is at most
/// info) and what to try ([`suggestion`]).
pub fn detect(w: &Window) -> Vec<Finding> {
    let n_llc = w.topo.llcs.len();
    let secs = w.secs();
    if n_llc < 2 || secs <= 0.0 {
        return Vec::new();
    }
    let llc_cpus = w.topo.llcs.iter().map(|l| l.cpus.len()).max().unwrap_or(0) as f64;
    let (procs, sampled) = fold(w);
    let mut out = Vec::new();
    for (pid, a) in procs {
        let key = format!("pid {pid}");
        let held = w.holds(Kind::Scattered, &key);
        let cpus = a.cpu_ns as f64 / 1e9 / secs;
        let on_llcs: u64 = a.per_llc.iter().copied().sat_sum();
        if a.threads < 2
            || on_llcs == 0
            || !past(held, cpus, llc_cpus * FITS, llc_cpus * FITS_CLEAR, false)
        {
            continue;
        }
        if !past(held, cpus, MIN_CPUS, MIN_CPUS_CLEAR, true) {
            continue;
        }
        let (top, top_ns) = a
            .per_llc
            .iter()
            .enumerate()
            .max_by_key(|(i, ns)| (**ns, std::cmp::Reverse(*i)))
            .map_or((0, 0), |(i, ns)| (i, *ns));
        let top_share = top_ns as f64 / on_llcs as f64;
        let hit = (a.hit_den > 0.0).then(|| a.hit_num / a.hit_den);
        let scattered = past(held, top_share, TOP_SHARE, TOP_SHARE_CLEAR, false)
            && hit.is_none_or(|h| past(held, h, LOW_HIT, LOW_HIT_CLEAR, false));
        let kernel = a.kind == PreferredKind::Kernel;
        let changes = a
            .prefs
            .windows(2)
            .filter(|p| p[0].is_some() && p[1].is_some() && p[0] != p[1])
            .count();
        let flapping = kernel && changes >= PREF_CHANGES;
        if !scattered && !flapping {
            continue;
        }
        let spread = a.per_llc.iter().filter(|&&ns| ns > 0).count();
        let hit_text = match hit {
            Some(h) => format!("preferred-LLC hit {:.0}%", h * 100.0),
            None if kernel => "the kernel holds no LLC preference for it".into(),
            None => "no preferred LLC".into(),
        };
        let mut summary = format!(
            "{} ({pid}): {} threads using {cpus:.1} CPUs (fits one {llc_cpus:.0}-CPU LLC) ran on {spread} LLCs, {:.0}% on its busiest (llc{top}); {hit_text}{}",
            a.comm,
            a.threads,
            top_share * 100.0,
            if kernel {
                " (the kernel's own preference)"
            } else {
                " (emulated preference)"
            }
        );
        if flapping {
            summary.push_str(&format!(
                "; the kernel changed its preferred LLC {changes} times in {secs:.0} s"
            ));
        }
        let l3 = l3_share(w, pid, top as u32);
        if let Some((share, _)) = l3 {
            summary.push_str(&format!(
                "; {:.0}% of its L3 bytes are on llc{top} (resctrl)",
                share * 100.0
            ));
        }
        // What it cost: the CPU time it ran away from the LLC holding most of its work,
        // over a whole window even when the run is younger (a program's start-up burst,
        // a Go runtime's threads for a second, is what it is, not a rate).
        let whole = secs.max(WINDOW_NS as f64 / 1e9);
        let (cost, mut severity) = harm::scatter(a.cpu_ns as f64 / 1e9 * (1.0 - top_share) / whole);
        summary.push_str(&format!(
            "; {:.2} CPUs of its work ran off llc{top}",
            cost.value
        ));
        // A process not seen through this window and the one before is a start-up (a
        // Go runtime's threads spreading for the seconds a start takes under emulation:
        // CI 2026-11-26, a promtool start 5 s long under TCG) or an end: its cost is a
        // burst, judged as a rate only over two windows it ran through.
        young(w, pid, &mut severity, &mut summary);
        if sampled {
            summary.push_str(" [runtime per LLC sampled]");
        }
        summary.push_str(
            " (a process spread on purpose, one thread per LLC for bandwidth, looks the same)",
        );
        let mut f = Finding::new(Kind::Scattered, key, w, summary);
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
        f.facts.push(Fact::derived("CPUs used", cpus, Unit::Cpus));
        f.facts.push(Fact::cited(
            format!("runtime on llc{top}"),
            top_ns as f64,
            Unit::Ns,
            w,
            row(&format!("runtime_per_llc_ns/{top}")),
            Agg::Sum,
        ));
        f.facts.push(Fact::derived(
            "share on the busiest LLC",
            top_share,
            Unit::Fraction,
        ));
        if let Some(h) = hit {
            f.facts.push(Fact::derived(
                "preferred-LLC hit (runtime-weighted)",
                h,
                Unit::Fraction,
            ));
        }
        f.facts.push(Fact::cited(
            "threads",
            a.threads as f64,
            Unit::Count,
            w,
            row("threads"),
            Agg::Max,
        ));
        if let Some((share, mean)) = l3 {
            f.facts.push(Fact::cited(
                "L3 occupancy (resctrl, mean)",
                mean,
                Unit::Bytes,
                w,
                format!("resctrl/groups/pid={pid}/total/occupancy_bytes"),
                Agg::Mean,
            ));
            f.facts.push(Fact::derived(
                format!("share of its L3 bytes on llc{top}"),
                share,
                Unit::Fraction,
            ));
        }
        if kernel {
            f.facts.push(Fact::derived(
                "preferred-LLC changes",
                changes as f64,
                Unit::Count,
            ));
        }
        f.facts.push(cost.clone());
        f.cost = Some(cost);
        f.llcs = a
            .per_llc
            .iter()
            .enumerate()
            .filter(|(_, ns)| **ns > 0)
            .map(|(i, _)| i as u32)
            .collect();
        f.pids = vec![pid];
        f.suggestion = Some(suggestion(
            w,
            pid,
            top,
            kernel && flapping && !scattered,
            kernel,
        ));
        out.push(f);
    }
    out
}

/// Step 1: each process's figures over the window (and whether any were sampled).
pub(super) fn fold(w: &Window) -> (BTreeMap<u32, Acc>, bool) {
    let mut procs: BTreeMap<u32, Acc> = BTreeMap::new();
    let mut sampled = false;
    for s in w.snaps {
        let Some(t) = &s.processes else { continue };
        sampled |= t.precision == Precision::Sampled;
        for r in &t.rows {
            let a = procs.entry(r.pid).or_default();
            // The name it had while alive (an exited process's last rows have none).
            if r.comm != crate::enrich::EXITED || a.comm.is_empty() {
                a.comm.clone_from(&r.comm);
            }
            a.threads = a.threads.max(r.threads);
            a.cpu_ns = a.cpu_ns.saturating_add(r.cpu_time_ns);
            a.wait_ns = a.wait_ns.saturating_add(r.rq_wait_ns);
            if a.per_llc.len() < r.runtime_per_llc_ns.len() {
                a.per_llc.resize(r.runtime_per_llc_ns.len(), 0);
            }
            for (i, ns) in r.runtime_per_llc_ns.iter().enumerate() {
                a.per_llc[i] = a.per_llc[i].saturating_add(*ns);
            }
            if let Some(h) = r.preferred_hit {
                a.hit_num += h * r.cpu_time_ns as f64;
                a.hit_den += r.cpu_time_ns as f64;
            }
            a.kind = r.preferred_kind;
            a.prefs.push(r.preferred_llc);
        }
    }
    (procs, sampled)
}

/// Step 3: in how many snapshots of the window and the one before the process was seen,
/// and how long they span — a start-up is at most info.
fn lived(w: &Window, pid: u32) -> (usize, f64) {
    let seen = w
        .context
        .iter()
        .filter(|s| {
            s.processes
                .as_ref()
                .is_some_and(|t| t.rows.iter().any(|r| r.pid == pid))
        })
        .count();
    let ran: f64 = w.context.iter().map(|s| s.time.interval_secs()).sum();
    (seen, ran)
}

/// A process not seen through this window and the one before is a start-up or an end:
/// its severity at most info, and its summary says so (shared with cache_aware.rs). "The
/// one before" is the look-behind, whole when its snapshots span [`LOOK_BEHIND_NS`] (the
/// window's builder takes them until they do) and shorter only where the run — or the
/// history kept — begins inside it. Not a time over both: the window stops short of
/// [`WINDOW_NS`] by up to an interval, so with intervals stretched past 1 s (a loaded
/// machine) two whole windows spanned less than 9 s and every process read as young.
pub(super) fn young(w: &Window, pid: u32, severity: &mut super::Severity, summary: &mut String) {
    let (seen, ran) = lived(w, pid);
    let behind = w.context.len().saturating_sub(w.snaps.len());
    let behind_ns: u64 = w.context[..behind]
        .iter()
        .map(|s| s.time.interval_ns)
        .fold(0, u64::saturating_add);
    if seen < w.context.len() || behind_ns < super::LOOK_BEHIND_NS {
        *severity = (*severity).min(super::Severity::Info);
        summary.push_str(&format!(
            "; seen in {seen} of the last {} snapshots ({ran:.0} s): a start-up or an end, at most info until it has run through two windows",
            w.context.len()
        ));
    }
}

/// Cache-aware scheduling not running at the window's end: `Some(None)` asked off,
/// `Some(Some(why))` enabled but kept off by the kernel's rule; `None`: it runs, or the
/// kernel has none.
fn not_running(w: &Window) -> Option<Option<String>> {
    let c = w.snaps.last()?.cache_aware.as_ref()?;
    match (c.enabled, c.active()) {
        (_, true) => None,
        (false, _) => Some(None),
        (true, false) => Some(c.why_not()),
    }
}

fn llc_cpus(w: &Window, top: usize) -> String {
    w.topo
        .llcs
        .get(top)
        .map(|l| cpulist::format(&l.cpus))
        .unwrap_or_default()
}

/// Step 4: what to try — a longer epoch for a kernel preference that flaps, the size
/// tolerance for one the kernel would not take, else pinning to measure the gain.
fn suggestion(w: &Window, pid: u32, top: usize, flapping_only: bool, kernel: bool) -> Suggestion {
    if flapping_only {
        Suggestion {
            knob: Some("llc_balancing.epoch_period".into()),
            value: Some("40".into()),
            profile: None,
            command: "llctop ab llc_balancing.epoch_period=<now>,40 -- <workload>".into(),
            why: "a longer accounting epoch averages the process's runtime over more time, so its preferred LLC follows less noise".into(),
        }
    } else if let Some(why) = not_running(w).filter(|_| kernel) {
        // The kernel's rule keeps it off: no llc_balancing knob gathers anything then.
        match why {
            None => Suggestion {
                knob: Some("llc_balancing.enabled".into()),
                value: Some("1".into()),
                profile: None,
                command: "llctop ab llc_balancing.enabled=0,1 -- <workload>".into(),
                why: "cache-aware scheduling is off here (llc_balancing/enabled 0); on, the kernel gathers a process's threads in the LLC it runs most in".into(),
            },
            Some(why) => Suggestion {
                knob: None,
                value: None,
                profile: None,
                command: format!(
                    "taskset -a -p -c {} {pid}  (measure what one LLC gains)",
                    llc_cpus(w, top)
                ),
                why: format!(
                    "cache-aware scheduling is enabled but not active here ({why}), so no llc_balancing knob gathers it; pinning to one LLC shows what it would gain"
                ),
            },
        }
    } else if kernel {
        Suggestion {
            knob: Some("llc_balancing.aggr_tolerance".into()),
            value: Some("100".into()),
            profile: None,
            command: "llctop ab llc_balancing.aggr_tolerance=<now>,100 -- <workload>".into(),
            why: "lifts the size limits under which cache-aware scheduling gathers a process in one LLC (at 1, a process whose threads fill the LLC is not gathered)".into(),
        }
    } else {
        let cpus = llc_cpus(w, top);
        Suggestion {
            knob: None,
            value: None,
            profile: None,
            command: format!("taskset -a -p -c {cpus} {pid}  (measure what one LLC gains)"),
            why: "no knob on this kernel gathers a process's threads: cache-aware scheduling (7.2+, CONFIG_SCHED_CACHE=y, llc_balancing/) does; pinning to one LLC shows what it would gain".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;
    use crate::findings::testing::{assert_cites, judge, snap};
    use crate::snapshot::{ProcessStats, ProcessTable, Snapshot};
    use crate::topology::synthetic;

    /// 4 LLCs of 2 CPUs; process 42 with `threads`, its runtime per LLC (ms per 1 s
    /// snapshot) and hit ratio.
    fn series(
        threads: u32,
        per_llc_ms: [u64; 4],
        hit: Option<f64>,
        kind: PreferredKind,
    ) -> Vec<Snapshot> {
        let topo = synthetic(2, 2, 2);
        (0..10)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.5);
                let per: Vec<u64> = per_llc_ms.iter().map(|ms| ms * 1_000_000).collect();
                s.processes = Some(ProcessTable {
                    precision: Precision::Exact,
                    total: 1,
                    rows: vec![ProcessStats {
                        pid: 42,
                        comm: if seq == 9 {
                            crate::enrich::EXITED.into()
                        } else {
                            "db".into()
                        },
                        threads,
                        cpu_time_ns: per.iter().sum(),
                        runtime_per_llc_ns: per,
                        preferred_llc: hit.map(|_| 0),
                        preferred_kind: kind,
                        preferred_hit: hit,
                        ..Default::default()
                    }],
                    ..Default::default()
                });
                s
            })
            .collect()
    }

    fn run(snaps: &[Snapshot]) -> Vec<Finding> {
        judge(detect, &synthetic(2, 2, 2), snaps)
    }

    #[test]
    fn a_process_that_fits_one_llc_spread_over_two_with_a_low_hit_fires() {
        let snaps = series(4, [750, 750, 0, 0], Some(0.3), PreferredKind::Emulated);
        let f = run(&snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].key.as_str(), f[0].pids.as_slice()),
            ("pid 42", &[42][..])
        );
        assert!(
            f[0].summary
                .starts_with("db (42): 4 threads using 1.5 CPUs"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].llcs, [0, 1]);
        // 1.5 CPUs, half of it off llc0: 0.75 CPUs of its work away from the rest.
        assert_eq!(f[0].severity, Severity::Warning, "{}", f[0].summary);
        assert!(f[0].summary.contains("0.75 CPUs of its work ran off llc0"));
        // 1 CPU, 45% of it off: seen, but under half a CPU.
        let small = run(&series(
            4,
            [550, 450, 0, 0],
            Some(0.3),
            PreferredKind::Emulated,
        ));
        assert_eq!(small[0].severity, Severity::Info, "{}", small[0].summary);
        // The same spread over the run's first 3 s only: its cost over a whole window.
        let young = run(&snaps[..3]);
        assert_eq!(young[0].severity, Severity::Info, "{}", young[0].summary);
        let cost = young[0].cost.as_ref().map(|c| c.value);
        assert!(cost.is_some_and(|c| (c - 0.45).abs() < 1e-9), "{cost:?}");
        // A process that began in the window's third snapshot: 0.6 CPUs off its busiest
        // LLC over the window, but a start-up until it has run two windows.
        let mut late = series(4, [1000, 1000, 0, 0], Some(0.3), PreferredKind::Emulated);
        for s in &mut late[..7] {
            s.processes = None;
        }
        let l = run(&late);
        assert_eq!(l[0].severity, Severity::Info, "{}", l[0].summary);
        assert!(
            l[0].summary.contains("0.60 CPUs of its work ran off")
                && l[0].summary.contains("seen in 3 of the last 10 snapshots"),
            "{}",
            l[0].summary
        );
        let whole = run(&series(
            4,
            [1000, 1000, 0, 0],
            Some(0.3),
            PreferredKind::Emulated,
        ));
        assert_eq!(whole[0].severity, Severity::Warning, "{}", whole[0].summary);
        // The same with a loaded machine's intervals, 1.25 s each: the window is 3 of them
        // (3.75 s) and the look-behind 4 (5 s), 8.75 s in all — the process in every one
        // of them has run through both windows, not a start-up.
        let mut slow = series(4, [1000, 1000, 0, 0], Some(0.3), PreferredKind::Emulated);
        for (i, s) in slow.iter_mut().enumerate() {
            s.time.interval_ns = 1_250_000_000;
            s.time.mono_ns = (i as u64 + 1) * 1_250_000_000;
        }
        let slow = run(&slow);
        assert_eq!(slow[0].severity, Severity::Warning, "{}", slow[0].summary);
        assert!(!slow[0].summary.contains("seen in"), "{}", slow[0].summary);
        // Emulated preference: no knob gathers it here.
        assert!(
            f[0].suggestion
                .as_ref()
                .is_some_and(|s| s.knob.is_none() && s.command.contains("taskset"))
        );
        let top = f[0]
            .facts
            .iter()
            .find(|x| x.label == "runtime on llc0")
            .unwrap();
        assert_eq!(top.value, 5.0 * 750e6);
        assert_cites(&f[0], &snaps);
        // The kernel's own preference: the llc_balancing knob.
        let k = run(&series(4, [750, 750, 0, 0], None, PreferredKind::Kernel));
        assert_eq!(
            k[0].suggestion.as_ref().and_then(|s| s.knob.as_deref()),
            Some("llc_balancing.aggr_tolerance")
        );
        // Cache-aware scheduling kept off by the kernel's rule, or asked off: no tuning
        // of it is suggested, but what would answer.
        for (enabled, knob, says) in [
            (
                true,
                None,
                "enabled but not active here (no sched-domain partition",
            ),
            (false, Some("llc_balancing.enabled"), "off here"),
        ] {
            let mut snaps = series(4, [750, 750, 0, 0], None, PreferredKind::Kernel);
            for s in &mut snaps {
                s.cache_aware = Some(crate::snapshot::CacheAware {
                    enabled,
                    multi_llc: false,
                    partitions: vec!["0-1".into()],
                    ..Default::default()
                });
            }
            let f = run(&snaps);
            let sug = f[0].suggestion.clone().unwrap();
            assert_eq!(sug.knob.as_deref(), knob, "{sug:?}");
            assert!(sug.why.contains(says), "{sug:?}");
        }
    }

    #[test]
    fn a_monitored_process_shows_where_its_l3_bytes_are() {
        use crate::snapshot::{CacheMon, DomainMon, GroupKind, Resctrl, ResctrlGroup};
        let mut snaps = series(4, [750, 750, 0, 0], Some(0.3), PreferredKind::Emulated);
        let mon = |o: u64| CacheMon {
            occupancy_bytes: Some(o),
            ..CacheMon::default()
        };
        for s in &mut snaps {
            let domains: Vec<DomainMon> = [3u64 << 20, 1 << 20, 0, 0]
                .iter()
                .enumerate()
                .map(|(i, &o)| DomainMon {
                    l3: i as u32 * 8,
                    node: None,
                    llc: Some(i as u32),
                    mon: mon(o),
                })
                .collect();
            s.resctrl = Some(Resctrl {
                groups: vec![ResctrlGroup {
                    path: "mon_groups/llctop-42".into(),
                    kind: GroupKind::Mon,
                    pid: Some(42),
                    total: mon(4 << 20),
                    domains,
                }],
                ..Resctrl::default()
            });
        }
        let f = run(&snaps);
        assert!(
            f[0].summary
                .contains("75% of its L3 bytes are on llc0 (resctrl)"),
            "{}",
            f[0].summary
        );
        let occ = f[0]
            .facts
            .iter()
            .find(|x| x.label == "L3 occupancy (resctrl, mean)")
            .unwrap();
        assert_eq!(occ.shown(), "4.0 MiB");
        assert_cites(&f[0], &snaps);
    }

    #[test]
    fn near_misses_do_not_fire() {
        let e = PreferredKind::Emulated;
        // Mostly on one LLC.
        assert!(run(&series(4, [1300, 200, 0, 0], Some(0.3), e)).is_empty());
        // Spread but the preference is met (a hit above 0.5 means it is mostly home).
        assert!(run(&series(4, [750, 750, 0, 0], Some(0.55), e)).is_empty());
        // One thread.
        assert!(run(&series(1, [750, 750, 0, 0], Some(0.3), e)).is_empty());
        // Too big for one LLC (4 CPUs' worth on 2-CPU LLCs): spreading is right.
        assert!(run(&series(8, [1000, 1000, 1000, 1000], Some(0.25), e)).is_empty());
        // Too little CPU to matter.
        assert!(run(&series(4, [300, 300, 0, 0], Some(0.3), e)).is_empty());
    }

    #[test]
    fn a_kernel_preference_that_keeps_changing_fires_on_7_2() {
        let mut snaps = series(2, [1400, 100, 0, 0], Some(0.9), PreferredKind::Kernel);
        for (i, s) in snaps.iter_mut().enumerate() {
            if let Some(t) = s.processes.as_mut() {
                t.rows[0].preferred_llc = Some((i % 2) as u32);
            }
        }
        let f = run(&snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].summary.contains("changed its preferred LLC 4 times"),
            "{}",
            f[0].summary
        );
        assert_eq!(
            f[0].suggestion.as_ref().and_then(|s| s.knob.as_deref()),
            Some("llc_balancing.epoch_period")
        );
    }
}
