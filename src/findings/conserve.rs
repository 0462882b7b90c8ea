//! Work not conserved inside an LLC (shared/seeds/002): a CPU of an LLC sits idle while
//! runnable tasks wait on another CPU of the same LLC — the situation the shared runqueue
//! was written for. From per-CPU run-queue wait and busy, per snapshot; it fires when it
//! holds for a share of the window's time. Tasks pinned to the waiting CPU look the same
//! (llctop does not see their affinity here), which the finding says.

use super::{Agg, Fact, Finding, Kind, Suggestion, Unit, Window, harm, past};
use crate::snapshot::SatSum;
use crate::snapshot::{CpuStats, Snapshot};

/// Run-queue wait of a CPU, as a share of the interval, that counts as tasks waiting.
pub const WAIT_SHARE: f64 = 0.25;
/// Busy share at or below which a CPU of the same LLC counts as idle.
pub const IDLE_BUSY: f64 = 0.3;
/// Share of the window's time in which some CPU of the LLC waited while another idled:
/// fire / clear.
pub const HOLD_SHARE: f64 = 0.6;
pub const HOLD_SHARE_CLEAR: f64 = 0.3;

fn cpu(s: &Snapshot, id: u32) -> Option<&CpuStats> {
    s.cpu(id).filter(|c| c.online)
}

/// In snapshot `s`, among `cpus`: the CPU whose tasks waited most (if past
/// [`WAIT_SHARE`]) and another that was idle (busy ≤ [`IDLE_BUSY`]), the idlest.
fn pair(s: &Snapshot, cpus: &[u32]) -> Option<(u32, u32)> {
    let iv = s.time.interval_ns as f64;
    if iv <= 0.0 {
        return None;
    }
    let (w, wait) = cpus
        .iter()
        .filter_map(|&c| Some((c, cpu(s, c)?.rq_wait_ns? as f64 / iv)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if wait < WAIT_SHARE {
        return None;
    }
    let (i, busy) = cpus
        .iter()
        .filter(|&&c| c != w)
        .filter_map(|&c| Some((c, cpu(s, c)?.busy?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    (busy <= IDLE_BUSY).then_some((w, i))
}

pub fn detect(w: &Window) -> Vec<Finding> {
    let secs = w.secs();
    if secs <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for llc in w.topo.llcs.iter().filter(|l| l.cpus.len() >= 2) {
        let key = format!("llc{}", llc.id);
        let held = w.holds(Kind::NotConserved, &key);
        let mut held_secs = 0.0;
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for s in w.snaps {
            if let Some(p) = pair(s, &llc.cpus) {
                held_secs += s.time.interval_secs();
                pairs.push(p);
            }
        }
        let share = held_secs / secs;
        if pairs.is_empty() || !past(held, share, HOLD_SHARE, HOLD_SHARE_CLEAR, true) {
            continue;
        }
        // The pair seen most often.
        let mut best = pairs[0];
        let mut best_n = 0;
        for p in &pairs {
            let n = pairs.iter().filter(|q| *q == p).count();
            if n > best_n {
                (best, best_n) = (*p, n);
            }
        }
        let (wc, ic) = best;
        let wait_ns: u64 = w
            .snaps
            .iter()
            .filter_map(|s| cpu(s, wc)?.rq_wait_ns)
            .sat_sum();
        let busy: Vec<f64> = w.snaps.iter().filter_map(|s| cpu(s, ic)?.busy).collect();
        let idle_busy = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
        let (cost, severity) = harm::conserve(wait_ns, idle_busy, secs);
        let summary = format!(
            "llc{}: tasks waited {:.2} s on CPU {wc} while CPU {ic} of the same LLC was {:.0}% busy, in {:.0}% of the last {secs:.0} s: about {:.2} s of waiting per second that CPU {ic} could have run (tasks pinned to CPU {wc} look the same)",
            llc.id,
            wait_ns as f64 / 1e9,
            idle_busy * 100.0,
            share * 100.0,
            cost.value
        );
        let mut f = Finding::new(Kind::NotConserved, key, w, summary);
        f.severity = severity;
        f.facts.push(Fact::cited(
            format!("run-queue wait on CPU {wc}"),
            wait_ns as f64,
            Unit::Ns,
            w,
            format!("cpus/cpu={wc}/rq_wait_ns"),
            Agg::Sum,
        ));
        f.facts.push(Fact::cited(
            format!("CPU {ic} busy"),
            idle_busy,
            Unit::Fraction,
            w,
            format!("cpus/cpu={ic}/busy"),
            Agg::Mean,
        ));
        f.facts.push(Fact::derived(
            "share of the window waiting beside an idle CPU",
            share,
            Unit::Fraction,
        ));
        f.facts.push(cost.clone());
        f.cost = Some(cost);
        f.cpus = vec![wc, ic];
        f.llcs = vec![llc.id];
        f.suggestion = Some(Suggestion {
            knob: Some("sched.migration_cost_ns".into()),
            value: Some("0".into()),
            profile: Some("work-conserving".into()),
            command: "llctop ab --profile work-conserving -- <workload>".into(),
            why: "the work-conserving end (migration_cost_ns 0, every domain newidle-balancing, as Meta set for HHVM before writing the shared runqueue) lets idle CPUs pull waiting tasks at once".into(),
        });
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;
    use crate::findings::testing::{assert_cites, judge, snap};
    use crate::topology::synthetic;

    /// 2 LLCs of 2 CPUs, all 90% busy; CPU 2 waits `wait` of each second while CPU 3 is
    /// `sibling` busy.
    fn series(wait: f64, sibling: f64) -> Vec<Snapshot> {
        let topo = synthetic(1, 2, 2);
        (0..5)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.9);
                s.cpus[2].rq_wait_ns = Some((wait * 1e9) as u64);
                s.cpus[3].busy = Some(sibling);
                s
            })
            .collect()
    }

    fn run(snaps: &[Snapshot]) -> Vec<Finding> {
        judge(detect, &synthetic(1, 2, 2), snaps)
    }

    #[test]
    fn waiting_beside_an_idle_sibling_fires_with_the_cpus() {
        let snaps = series(1.0, 0.02);
        let f = run(&snaps);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].key.as_str(), f[0].cpus.as_slice()),
            ("llc1", &[2, 3][..])
        );
        assert_eq!(f[0].severity, Severity::Critical);
        assert_eq!(f[0].facts[0].value, 5e9);
        assert!(
            f[0].summary.contains("waited 5.00 s on CPU 2 while CPU 3"),
            "{}",
            f[0].summary
        );
        assert_cites(&f[0], &snaps);
    }

    #[test]
    fn severity_is_the_wait_the_sibling_could_have_spared() {
        // Each: the waiting CPU's wait per second, the sibling's busy share, the severity.
        for (wait, sibling, want) in [
            (1.0, 0.02, Severity::Critical), // 0.98 s/s spared
            (0.8, 0.0, Severity::Critical),  // 0.80
            (0.8, 0.1, Severity::Warning),   // 0.72
            (0.3, 0.1, Severity::Warning),   // 0.27
            (0.3, 0.2, Severity::Info),      // 0.24: fires, costs little
        ] {
            let f = run(&series(wait, sibling));
            assert_eq!(f.len(), 1, "{wait} {sibling}");
            assert_eq!(f[0].severity, want, "{}", f[0].summary);
            let cost = f[0].cost.as_ref().expect("a cost");
            assert!((cost.value - wait * (1.0 - sibling)).abs() < 1e-6);
        }
    }

    #[test]
    fn near_misses_do_not_fire() {
        // The sibling is busy: nothing to conserve.
        assert!(run(&series(1.0, 0.9)).is_empty());
        // Short waits (a wakeup's latency), beside an idle sibling.
        assert!(run(&series(0.1, 0.0)).is_empty());
        // For a minority of the window.
        let mut snaps = series(1.0, 0.0);
        for s in &mut snaps[..3] {
            s.cpus[2].rq_wait_ns = Some(0);
        }
        assert!(run(&snaps).is_empty());
    }
}
