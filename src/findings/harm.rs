//! What a finding cost, measured, and the severity that cost earns (issue "Advisor you can
//! trust"): a pattern seen is not an alarm until it has cost something an operator would
//! act on. The placement pile-up's cost is the wait its process accumulated beside an
//! allowed CPU that stayed idle; thresholds and their reasons are in docs/advisor.md.

use super::Severity;
use super::pileup::PileUp;
use crate::snapshot::Snapshot;

/// How long after a start's last placement its cost is measured: the piled threads'
/// first second, when a pile-up that lasts (seed 001's stream threads, stacked for the
/// benchmark's life) has cost a share of their runtime and one the balancer or the
/// threads' exit ended (a runtime starting helper threads) has cost next to nothing.
pub const HARM_SPAN_NS: u64 = 1_000_000_000;

/// The severity a pile-up's measured cost earns: the process's run-queue wait over the
/// start and [`HARM_SPAN_NS`] after it, as a share of its runnable time (CPU time + wait)
/// and in absolute terms. Critical: a quarter of its runnable time queued, at least
/// 250 ms of it (piled threads that stay stacked wait about half the time: seed 001);
/// warning: a tenth and 50 ms; below either, or unmeasured, info — a start the balancer
/// resolved within milliseconds costs nothing an operator should act on.
pub const CRITICAL_WAIT_SHARE: f64 = 0.25;
pub const CRITICAL_WAIT_NS: u64 = 250_000_000;
pub const WARNING_WAIT_SHARE: f64 = 0.10;
pub const WARNING_WAIT_NS: u64 = 50_000_000;

/// What a pile-up cost: the process's run-queue wait and CPU time over the start and
/// [`HARM_SPAN_NS`] after (process rows of the BPF source), and how idle the allowed CPU
/// that sat idle at the placement stayed meanwhile. Only the wait while that CPU idled is
/// the pile-up's: on a machine busy everywhere the process would have queued anyway.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Harm {
    pub wait_ns: u64,
    pub cpu_ns: u64,
    /// The idle allowed CPU's mean idle share over the same snapshots (0–1).
    pub idle_share: f64,
    pub snapshots: usize,
}

impl Harm {
    /// The wait the idle CPU could have spared: `wait_ns × idle_share` (an estimate: the
    /// interval's figures do not say which moments overlapped).
    pub fn idle_wait_ns(&self) -> u64 {
        (self.wait_ns as f64 * self.idle_share.clamp(0.0, 1.0)) as u64
    }

    /// That wait as a share of the process's runnable time (CPU time + wait).
    pub fn wait_share(&self) -> f64 {
        let all = self.wait_ns.saturating_add(self.cpu_ns);
        if all == 0 {
            0.0
        } else {
            self.idle_wait_ns() as f64 / all as f64
        }
    }

    /// The severity this cost earns (module constants).
    pub fn severity(harm: Option<Harm>) -> Severity {
        match harm {
            Some(h)
                if h.idle_wait_ns() >= CRITICAL_WAIT_NS
                    && h.wait_share() >= CRITICAL_WAIT_SHARE =>
            {
                Severity::Critical
            }
            Some(h)
                if h.idle_wait_ns() >= WARNING_WAIT_NS && h.wait_share() >= WARNING_WAIT_SHARE =>
            {
                Severity::Warning
            }
            _ => Severity::Info,
        }
    }
}

/// The cost of pile-up `p` from `snaps`: the snapshots whose interval overlaps the start
/// and [`HARM_SPAN_NS`] after it; `None` when the process is in none of their rows (not
/// among the top processes, or a source without per-process waits) or the idle CPU's
/// busy share is unknown.
pub fn harm(p: &PileUp, snaps: &[Snapshot]) -> Option<Harm> {
    let (from, to) = (p.first_ns, p.last_ns.saturating_add(HARM_SPAN_NS));
    let idle_cpu = p.idle_cpu.and_then(|c| u32::try_from(c).ok())?;
    let (mut wait, mut cpu, mut n) = (0u64, 0u64, 0usize);
    let (mut idle_sum, mut idle_n) = (0.0, 0usize);
    for s in snaps {
        let end = s.time.mono_ns;
        let begin = end.saturating_sub(s.time.interval_ns);
        if end < from || begin > to {
            continue;
        }
        if let Some(b) = s.cpu(idle_cpu).and_then(|c| c.busy) {
            idle_sum += 1.0 - b.clamp(0.0, 1.0);
            idle_n += 1;
        }
        if let Some(r) = s
            .processes
            .iter()
            .flat_map(|t| &t.rows)
            .find(|r| r.pid == p.tgid)
        {
            wait = wait.saturating_add(r.rq_wait_ns);
            cpu = cpu.saturating_add(r.cpu_time_ns);
            n += 1;
        }
    }
    (n > 0 && idle_n > 0).then(|| Harm {
        wait_ns: wait,
        cpu_ns: cpu,
        idle_share: idle_sum / idle_n as f64,
        snapshots: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(wait_ms: u64, cpu_ms: u64) -> Option<Harm> {
        Some(Harm {
            wait_ns: wait_ms * 1_000_000,
            cpu_ns: cpu_ms * 1_000_000,
            idle_share: 1.0,
            snapshots: 1,
        })
    }

    #[test]
    fn severity_follows_the_measured_wait_at_each_boundary() {
        // Unmeasured, or nothing waited: info.
        assert_eq!(Harm::severity(None), Severity::Info);
        assert_eq!(Harm::severity(cost(0, 0)), Severity::Info);
        // A runtime's helper threads: a few ms queued of a busy second.
        assert_eq!(Harm::severity(cost(3, 400)), Severity::Info);
        // Warning: 50 ms and 10% — each alone is not enough.
        assert_eq!(Harm::severity(cost(50, 450)), Severity::Warning);
        assert_eq!(Harm::severity(cost(49, 100)), Severity::Info);
        assert_eq!(Harm::severity(cost(60, 600)), Severity::Info);
        // Critical: 250 ms and 25%; seed 001's stacked threads wait about half the time.
        assert_eq!(Harm::severity(cost(250, 750)), Severity::Critical);
        assert_eq!(Harm::severity(cost(249, 10)), Severity::Warning);
        assert_eq!(Harm::severity(cost(300, 1000)), Severity::Warning);
        assert_eq!(Harm::severity(cost(1000, 1000)), Severity::Critical);
        // The same wait while the "idle" CPU was busy all along: the machine was full,
        // the process would have queued anyway.
        let mut busy = cost(1000, 1000);
        if let Some(h) = busy.as_mut() {
            h.idle_share = 0.02;
        }
        assert_eq!(Harm::severity(busy), Severity::Info);
    }
}
