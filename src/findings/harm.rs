//! What a finding cost, measured, and the severity that cost earns (issue "Advisor you can
//! trust"): a pattern seen is not an alarm until it has cost something an operator would
//! act on. Each detector's cost, its thresholds and their reasons (docs/advisor.md):
//! a pile-up's is the wait its process accumulated beside an allowed CPU that stayed idle;
//! newidle churn's the share of task runs that began away from their LLC; scattered
//! threads' the CPU time the process ran off its busiest LLC; unconserved work's the wait
//! an idle sibling could have spared; NUMA balancing's the kernel time its migrations and
//! hinting faults take (estimated from their counts), or with it off the memory allocated
//! on the other node. The cost is the finding's `cost` fact, said next to its severity.

use super::{Fact, Severity, Unit};
use crate::snapshot::{IdleWait, Snapshot};

/// How long after a start's last placement its cost is measured (the BPF program
/// watches each new thread's waits as long after its placement): the piled threads'
/// first second, when a pile-up that lasts (seed 001's stream threads, stacked for the
/// benchmark's life) has cost a share of their runtime and one the balancer or the
/// threads' exit ended (a runtime starting helper threads) has cost next to nothing.
pub const HARM_SPAN_NS: u64 = crate::snapshot::IDLE_WATCH_NS;
/// When a placed thread's measured waits come at the latest: the BPF program hands them
/// over at its first read after their span ended plus one more span (src/source/bpf/watch.rs).
pub const HANDOVER_NS: u64 = 2 * HARM_SPAN_NS;

/// Whether these snapshots' source measures new threads' waits ([`IdleWait`]s).
pub fn measures_waits(snaps: &[Snapshot]) -> bool {
    snaps
        .iter()
        .any(|s| s.events.as_ref().is_some_and(|e| e.idle_waits.is_some()))
}

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
    /// The idle allowed CPU's idle share while the process waited (0–1): idle is neither
    /// busy nor stolen by the hypervisor; the share is [`Harm::spared_ns`] over the wait
    /// (each snapshot's idle share weighted by the process's wait in it, within the
    /// bounds said there), the plain mean when it waited in none.
    pub idle_share: f64,
    pub snapshots: usize,
    /// The wait the idle CPU could have spared, summed over the snapshots: in each, the
    /// process's wait × that CPU's idle share (an estimate: an interval's figures do not
    /// say which moments overlapped), never more than the CPU's idle time in the snapshot
    /// nor than the snapshot's time after the start's first placement — a CPU can spare
    /// at most the time it idled while the threads existed (CI, 2026-11-26: a start late
    /// in a mostly idle second was credited 1.7 s of sparing by a CPU that was idle 0.3 s
    /// of the threads' life). Measured, not estimated, when [`Harm::measured`] is set.
    pub spared_ns: u64,
    /// The spared wait as the BPF program measured it: each piled thread's waits in the
    /// second after its placement while the CPU idle at its placement ran its idle task.
    pub measured: Option<Measured>,
}

/// A pile-up's spared wait measured per thread (the snapshots' [`IdleWait`]s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// The piled threads' run-queue wait in the second after their placements.
    pub piled_wait_ns: u64,
    /// Piled threads measured (placed while an allowed CPU sat idle).
    pub threads: u32,
    /// Waits whose idle part could not be counted (spared is then at least the truth).
    pub partial: u32,
}

impl Harm {
    /// A cost from its wait, CPU time and idle share, spared in one stretch as long as
    /// the wait (a figure measured some other way: tests, oracles).
    pub fn of(wait_ns: u64, cpu_ns: u64, idle_share: f64) -> Harm {
        Harm {
            wait_ns,
            cpu_ns,
            idle_share,
            snapshots: 1,
            spared_ns: (wait_ns as f64 * idle_share.clamp(0.0, 1.0)) as u64,
            measured: None,
        }
    }

    /// The wait the idle CPU could have spared ([`Harm::spared_ns`]).
    pub fn idle_wait_ns(&self) -> u64 {
        self.spared_ns
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

    /// The cost in words, after a pile-up's description; `idle_cpus` names the idle
    /// CPU(s) it was measured against.
    pub fn said(&self, idle_cpus: &str) -> String {
        let ns = |v: u64| Fact::derived("", v as f64, Unit::Ns).shown();
        let share = 100.0 * self.wait_share();
        match self.measured {
            Some(m) => format!(
                "in the second after their placement the {} piled thread{} placed beside an idle CPU waited {} queued, {} of it while that CPU ({idle_cpus}) sat idle{}: {share:.1}% of the process's runnable time (it waited {} in all)",
                m.threads,
                if m.threads == 1 { "" } else { "s" },
                ns(m.piled_wait_ns),
                ns(self.spared_ns),
                if m.partial > 0 {
                    format!(
                        " (at least: {} waits began before the CPU's idle history kept)",
                        m.partial
                    )
                } else {
                    String::new()
                },
                ns(self.wait_ns),
            ),
            None => format!(
                "in the start's first second the process waited {} queued while CPU {idle_cpus} was {:.0}% idle: about {} ({share:.0}% of its runnable time) that CPU could have spared (estimated from whole snapshots)",
                ns(self.wait_ns),
                100.0 * self.idle_share,
                ns(self.spared_ns),
            ),
        }
    }

    /// The cost's facts, the spared wait (the finding's cost) first.
    pub fn facts(&self) -> Vec<Fact> {
        let spared = match self.measured {
            Some(_) => {
                "wait the idle CPU could have spared (the piled threads queued while it ran its idle task, measured)"
            }
            None => {
                "wait the idle CPU could have spared (wait × idle share, at most its idle time after the start: an estimate)"
            }
        };
        let mut out = vec![
            Fact::derived(spared, self.spared_ns as f64, Unit::Ns),
            Fact::derived(
                "the process's run-queue wait in the start's first second",
                self.wait_ns as f64,
                Unit::Ns,
            ),
        ];
        if let Some(m) = self.measured {
            out.push(Fact::derived(
                "the piled threads' run-queue wait in the second after their placement",
                m.piled_wait_ns as f64,
                Unit::Ns,
            ));
            out.push(Fact::derived(
                "share of that wait the idle CPU sat idle",
                self.idle_share,
                Unit::Fraction,
            ));
        } else {
            out.push(Fact::derived(
                "idle share of the idle allowed CPU then",
                self.idle_share,
                Unit::Fraction,
            ));
        }
        out.push(Fact::derived(
            "that wait as a share of its runnable time",
            self.wait_share(),
            Unit::Fraction,
        ));
        out
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

/// `value` against a warning and a critical threshold (at or above each).
fn graded(value: f64, warning: f64, critical: f64) -> Severity {
    if value >= critical {
        Severity::Critical
    } else if value >= warning {
        Severity::Warning
    } else {
        Severity::Info
    }
}

/// Newidle churn: task runs that began on another LLC than the task's last (tasks pulled
/// by newidle balancing above the LLC where /proc/schedstat says so, else cross-LLC and
/// cross-node migrations), per context switch. Each such run refills its working set from
/// another LLC or memory; seeds/004's workload lost 20% IPC to it. Warning from 1 run in
/// 50, critical from 1 in 10; the scheduler's ordinary wakeup spreading on an idle-heavy
/// machine stays well below (docs/advisor.md, "Ordinary work").
pub const NEWIDLE_WARNING_COLD_SHARE: f64 = 0.02;
pub const NEWIDLE_CRITICAL_COLD_SHARE: f64 = 0.10;

pub fn newidle(cold_runs: u64, ctx_switches: u64) -> (Fact, Severity) {
    let share = cold_runs as f64 / ctx_switches.max(1) as f64;
    (
        Fact::derived(
            "task runs begun on another LLC, per context switch",
            share,
            Unit::Fraction,
        ),
        graded(
            share,
            NEWIDLE_WARNING_COLD_SHARE,
            NEWIDLE_CRITICAL_COLD_SHARE,
        ),
    )
}

/// Scattered threads: the process's CPU time off its busiest LLC, in CPUs over the whole
/// window (5 s, also while the run is younger: a program's start-up burst is not a rate) —
/// the work that refetches the data its threads share from another LLC (a cost only if
/// they share it; the A/B decides). Warning from half a CPU of it, critical from two.
pub const SCATTER_WARNING_OFF_CPUS: f64 = 0.5;
pub const SCATTER_CRITICAL_OFF_CPUS: f64 = 2.0;

pub fn scatter(off_llc_cpus: f64) -> (Fact, Severity) {
    (
        Fact::derived("CPU time off its busiest LLC", off_llc_cpus, Unit::Cpus),
        graded(
            off_llc_cpus,
            SCATTER_WARNING_OFF_CPUS,
            SCATTER_CRITICAL_OFF_CPUS,
        ),
    )
}

/// Work not conserved: the run-queue wait of the waiting CPU times the idle share of its
/// idle sibling, per second of the window — tasks' time the sibling could have run, at
/// no cache cost. Warning from a quarter of a task waiting (0.25 s per s), critical from
/// three quarters (a whole task queued nearly all the time beside an idle CPU).
pub const CONSERVE_WARNING_SPARED: f64 = 0.25;
pub const CONSERVE_CRITICAL_SPARED: f64 = 0.75;

pub fn conserve(wait_ns: u64, sibling_busy: f64, secs: f64) -> (Fact, Severity) {
    let spared = wait_ns as f64 / 1e9 * (1.0 - sibling_busy.clamp(0.0, 1.0)) / secs.max(1e-9);
    (
        Fact::derived(
            "wait the idle sibling could have spared, per second",
            spared,
            Unit::Cpus,
        ),
        graded(spared, CONSERVE_WARNING_SPARED, CONSERVE_CRITICAL_SPARED),
    )
}

/// Over-aggregation (cache_aware.rs): the run-queue wait of a process gathered on its
/// saturated preferred LLC, at most the idle CPU time of the node's other LLCs, per second
/// of the window — time its threads could have run elsewhere. The same scale as work not
/// conserved (a quarter of a thread queued: warning; three quarters: critical), but the
/// move it asks for crosses an LLC and costs the cache the threads share there, which
/// the A/B weighs.
pub const AGGR_WARNING_SPARED: f64 = 0.25;
pub const AGGR_CRITICAL_SPARED: f64 = 0.75;

pub fn over_aggregation(wait_ns: u64, idle_elsewhere_secs: f64, secs: f64) -> (Fact, Severity) {
    let spared = (wait_ns as f64 / 1e9).min(idle_elsewhere_secs.max(0.0)) / secs.max(1e-9);
    (
        Fact::derived(
            "wait the node's idle CPUs could have spared, per second",
            spared,
            Unit::Cpus,
        ),
        graded(spared, AGGR_WARNING_SPARED, AGGR_CRITICAL_SPARED),
    )
}

/// NUMA balancing's kernel time, estimated from its counts (the kernel counts the events,
/// not their time): a 4 KiB page migration unmaps the page, shoots down the TLBs of every
/// CPU running the process, copies and remaps it — about 10 µs; a hinting fault is a
/// minor fault's trap and bookkeeping — about 1 µs. As a share of the busy CPU time:
/// warning from 2 %, critical from 10 % (seeds/003's benchmark paid 53 % more system time
/// for a 45 % faster run: the cost is real, and the A/B weighs it against the gain).
pub const NUMA_MIGRATION_NS: f64 = 10_000.0;
pub const NUMA_HINT_FAULT_NS: f64 = 1_000.0;
pub const NUMA_WARNING_SHARE: f64 = 0.02;
pub const NUMA_CRITICAL_SHARE: f64 = 0.10;
/// With balancing off: memory allocated on another node than the task's, per second —
/// memory its tasks will keep reaching over the interconnect. Warning from 64 MiB/s,
/// critical from 512 MiB/s.
pub const NUMA_WARNING_REMOTE_ALLOC: f64 = 64.0 * 1024.0 * 1024.0;
pub const NUMA_CRITICAL_REMOTE_ALLOC: f64 = 512.0 * 1024.0 * 1024.0;

pub fn numa_balancing(migrated: u64, faults: u64, busy_cpu_secs: f64) -> (Fact, Severity) {
    let ns = migrated as f64 * NUMA_MIGRATION_NS + faults as f64 * NUMA_HINT_FAULT_NS;
    let share = if busy_cpu_secs > 0.0 {
        ns / 1e9 / busy_cpu_secs
    } else {
        0.0
    };
    (
        Fact::derived(
            "kernel time of NUMA balancing (estimated), share of busy CPU time",
            share,
            Unit::Fraction,
        ),
        graded(share, NUMA_WARNING_SHARE, NUMA_CRITICAL_SHARE),
    )
}

pub fn numa_remote_alloc(remote_bytes_per_sec: f64) -> (Fact, Severity) {
    (
        Fact::derived(
            "memory allocated on another node",
            remote_bytes_per_sec,
            Unit::BytesPerSec,
        ),
        graded(
            remote_bytes_per_sec,
            NUMA_WARNING_REMOTE_ALLOC,
            NUMA_CRITICAL_REMOTE_ALLOC,
        ),
    )
}

/// Why a pile-up's cost is not known (said in its finding).
pub const UNMEASURED: &str = "its cost is not measured (the process is not among the process rows, or the idle CPU's busy share is unknown)";
pub const PENDING: &str = "its cost is not measured yet (the BPF program hands over each thread's waits two seconds after its placement; a recording that ends sooner has none)";

/// The cost of a pile-up of process `tgid` whose start placed threads from `first_ns` to
/// `last_ns` while `idle_cpu` (allowed) sat idle, `piled` its threads stacked on one CPU,
/// from `snaps`: the process's wait and CPU time in the snapshots whose interval overlaps
/// the start and [`HARM_SPAN_NS`] after it, and the wait the idle CPU could have spared —
/// measured per thread where the source measures it ([`IdleWait`]), else estimated from
/// that CPU's idle share. Not known ([`UNMEASURED`], [`PENDING`]) when the process is in
/// none of the rows (not among the top processes, or a source without per-process
/// waits), the idle CPU's busy share is unknown, or the threads' figures are yet to come.
pub fn pile_up(
    tgid: u32,
    idle_cpu: Option<i32>,
    (first_ns, last_ns): (u64, u64),
    piled: &[u32],
    snaps: &[Snapshot],
) -> Result<Harm, &'static str> {
    let mut h = estimate(tgid, idle_cpu, (first_ns, last_ns), snaps).ok_or(UNMEASURED)?;
    if !measures_waits(snaps) {
        return Ok(h);
    }
    let waits = idle_waits(tgid, piled, snaps);
    let newest = snaps.iter().map(|s| s.time.mono_ns).max().unwrap_or(0);
    if waits.len() < piled.len() && newest < last_ns.saturating_add(HANDOVER_NS) {
        return Err(PENDING);
    }
    let m = Measured {
        piled_wait_ns: waits.iter().map(|w| w.wait_ns).sum(),
        threads: waits.len() as u32,
        partial: waits.iter().map(|w| w.partial).sum(),
    };
    h.spared_ns = waits.iter().map(|w| w.idle_ns).sum();
    h.idle_share = if m.piled_wait_ns > 0 {
        h.spared_ns as f64 / m.piled_wait_ns as f64
    } else {
        0.0
    };
    h.measured = Some(m);
    Ok(h)
}

/// The measured waits of `piled` threads of `tgid` in `snaps` (each handed over once).
pub fn idle_waits<'a>(tgid: u32, piled: &[u32], snaps: &'a [Snapshot]) -> Vec<&'a IdleWait> {
    snaps
        .iter()
        .filter_map(|s| s.events.as_ref()?.idle_waits.as_ref())
        .flatten()
        .filter(|w| w.tgid == tgid && piled.contains(&w.pid))
        .collect()
}

/// The estimate from whole snapshots (recordings and sources without measured waits).
fn estimate(
    tgid: u32,
    idle_cpu: Option<i32>,
    (first_ns, last_ns): (u64, u64),
    snaps: &[Snapshot],
) -> Option<Harm> {
    let (from, to) = (first_ns, last_ns.saturating_add(HARM_SPAN_NS));
    let idle_cpu = idle_cpu.and_then(|c| u32::try_from(c).ok())?;
    let (mut wait, mut cpu, mut n) = (0u64, 0u64, 0usize);
    // Idle shares: plain (sum, count) and weighted by the process's wait in the snapshot
    // (sum, weight). The weighted one is the estimate: a snapshot after the threads ended,
    // when something else took the CPU, spared nothing and costs nothing.
    let (mut idle_sum, mut idle_n) = (0.0, 0usize);
    let mut weight = 0.0;
    let mut spared_ns = 0.0;
    for s in snaps {
        let end = s.time.mono_ns;
        let begin = end.saturating_sub(s.time.interval_ns);
        if end < from || begin > to {
            continue;
        }
        // Idle for the process only when neither a task nor the hypervisor had it: a
        // vCPU the host took away (steal) runs its idle task in the guest's eyes but can
        // run nothing.
        let idle = s.cpu(idle_cpu).and_then(|c| {
            let steal = c.steal.unwrap_or(0.0).clamp(0.0, 1.0);
            c.busy.map(|b| (1.0 - b.clamp(0.0, 1.0) - steal).max(0.0))
        });
        if let Some(i) = idle {
            idle_sum += i;
            idle_n += 1;
        }
        if let Some(r) = s
            .processes
            .iter()
            .flat_map(|t| &t.rows)
            .find(|r| r.pid == tgid)
        {
            wait = wait.saturating_add(r.rq_wait_ns);
            cpu = cpu.saturating_add(r.cpu_time_ns);
            n += 1;
            if let Some(i) = idle {
                let w = r.rq_wait_ns as f64;
                weight += w;
                // At most the CPU's idle time here, and the time here after the start.
                let after_start = end.saturating_sub(begin.max(from)) as f64;
                spared_ns += (i * w).min(i * s.time.interval_ns as f64).min(after_start);
            }
        }
    }
    (n > 0 && idle_n > 0).then(|| Harm {
        wait_ns: wait,
        cpu_ns: cpu,
        idle_share: if weight > 0.0 {
            spared_ns / weight
        } else {
            idle_sum / idle_n as f64
        },
        snapshots: n,
        spared_ns: spared_ns as u64,
        measured: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(wait_ms: u64, cpu_ms: u64) -> Option<Harm> {
        Some(Harm::of(wait_ms * 1_000_000, cpu_ms * 1_000_000, 1.0))
    }

    #[test]
    fn other_detectors_grade_their_cost_at_each_boundary() {
        // Newidle: 1 run in 50 begun on another LLC, 1 in 10.
        assert_eq!(newidle(19, 1000).1, Severity::Info);
        assert_eq!(newidle(20, 1000).1, Severity::Warning);
        assert_eq!(newidle(99, 1000).1, Severity::Warning);
        assert_eq!(newidle(100, 1000).1, Severity::Critical);
        assert_eq!(
            newidle(5, 0).1,
            Severity::Critical,
            "no switches: every run"
        );
        // Scatter: half a CPU, two CPUs off the busiest LLC.
        assert_eq!(scatter(0.49).1, Severity::Info);
        assert_eq!(scatter(0.5).1, Severity::Warning);
        assert_eq!(scatter(2.0).1, Severity::Critical);
        // Conservation: 1 s of wait over 2 s beside a sibling 50% busy spares 0.25 s/s.
        assert_eq!(conserve(1_000_000_000, 0.5, 2.0).1, Severity::Warning);
        assert_eq!(conserve(999_000_000, 0.5, 2.0).1, Severity::Info);
        assert_eq!(conserve(5_000_000_000, 0.7, 2.0).1, Severity::Critical);
        assert_eq!(conserve(5_000_000_000, 0.71, 2.0).1, Severity::Warning);
        assert!((conserve(2_000_000_000, 0.0, 2.0).0.value - 1.0).abs() < 1e-9);
        // NUMA: 2000 pages (20 ms) over 1 busy CPU-second is 2%.
        assert_eq!(numa_balancing(2000, 0, 1.0).1, Severity::Warning);
        assert_eq!(numa_balancing(1999, 0, 1.0).1, Severity::Info);
        assert_eq!(numa_balancing(0, 20_000, 1.0).1, Severity::Warning);
        assert_eq!(numa_balancing(10_000, 0, 1.0).1, Severity::Critical);
        assert_eq!(numa_balancing(10_000, 0, 0.0).1, Severity::Info);
        // The stress-ng case in the lab: 570 pages/s, 209 faults/s, 8 busy CPUs.
        assert_eq!(numa_balancing(570, 209, 8.0).1, Severity::Info);
        let mib = 1024.0 * 1024.0;
        assert_eq!(numa_remote_alloc(63.0 * mib).1, Severity::Info);
        assert_eq!(numa_remote_alloc(64.0 * mib).1, Severity::Warning);
        assert_eq!(numa_remote_alloc(512.0 * mib).1, Severity::Critical);
    }

    #[test]
    fn a_pile_ups_spared_wait_is_the_measured_one_where_the_source_measures_it() {
        use crate::snapshot::{EventLog, ProcessStats, ProcessTable};
        let topo = crate::topology::synthetic(1, 2, 2);
        // 1 s snapshots; the start at 2.5 s; the process waited 400 ms and ran 600 ms
        // in each of the two snapshots after it, beside CPU 3 idle all along: the
        // estimate credits CPU 3 with 800 ms of sparing.
        let mut snaps: Vec<Snapshot> = (0..4)
            .map(|seq| crate::findings::testing::snap(&topo, seq, 0.0))
            .collect();
        for s in &mut snaps[2..4] {
            s.processes = Some(ProcessTable {
                rows: vec![ProcessStats {
                    pid: 10,
                    cpu_time_ns: 600_000_000,
                    rq_wait_ns: 400_000_000,
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        let start = (2_500_000_000, 2_500_000_000);
        let cost = |snaps: &[Snapshot]| pile_up(10, Some(3), start, &[11, 12], snaps);
        let est = cost(&snaps).unwrap();
        assert_eq!((est.spared_ns, est.measured), (800_000_000, None));
        assert_eq!(Harm::severity(Some(est)), Severity::Critical);
        // A source that measures: until both threads' figures came (2 s after the
        // start), not known; then the measured sum, whatever the estimate says.
        for s in &mut snaps {
            s.events = Some(EventLog {
                idle_waits: Some(vec![]),
                ..Default::default()
            });
        }
        assert_eq!(cost(&snaps), Err(PENDING));
        let waited = |pid, wait_ms: u64, idle_ms: u64, partial| IdleWait {
            pid,
            tgid: 10,
            cpu: 3,
            placed_ns: 2_500_000_000,
            wait_ns: wait_ms * 1_000_000,
            waits: 4,
            idle_ns: idle_ms * 1_000_000,
            partial,
        };
        if let Some(e) = snaps[3].events.as_mut() {
            e.idle_waits = Some(vec![waited(11, 300, 20, 0), waited(99, 900, 900, 0)]);
        }
        assert_eq!(cost(&snaps), Err(PENDING), "thread 12 still to come");
        if let Some(e) = snaps[2].events.as_mut() {
            e.idle_waits = Some(vec![waited(12, 100, 5, 1)]);
        }
        let h = cost(&snaps).unwrap();
        assert_eq!(h.spared_ns, 25_000_000, "thread 99 is not piled");
        assert_eq!(
            h.measured,
            Some(Measured {
                piled_wait_ns: 400_000_000,
                threads: 2,
                partial: 1
            })
        );
        assert!((h.idle_share - 0.0625).abs() < 1e-9);
        assert!((h.wait_share() - 0.0125).abs() < 1e-9);
        assert_eq!(Harm::severity(Some(h)), Severity::Info);
        assert!(
            h.said("3")
                .contains("25.0 ms of it while that CPU (3) sat idle (at least")
        );
        // A thread placed when no CPU was idle has no figures: once its span is over the
        // others' are the cost.
        if let Some(e) = snaps[2].events.as_mut() {
            e.idle_waits = Some(vec![]);
        }
        let mut later = crate::findings::testing::snap(&topo, 4, 0.0);
        later.events = Some(EventLog {
            idle_waits: Some(vec![]),
            ..Default::default()
        });
        snaps.push(later);
        let h = cost(&snaps).unwrap();
        assert_eq!(
            (h.spared_ns, h.measured.map(|m| m.threads)),
            (20_000_000, Some(1))
        );
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
        let busy = Harm::of(1_000_000_000, 1_000_000_000, 0.02);
        assert_eq!(Harm::severity(Some(busy)), Severity::Info);
    }
}
