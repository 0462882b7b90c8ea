//! The per-thread scan: `/proc/PID/task/TID/{stat,schedstat}` for every thread, diffed
//! against the previous scan. Gives, all *sampled*:
//! - each thread's runtime delta, attributed to the LLC of the CPU it was last seen on
//!   (`processor` field of stat) → per-process runtime per LLC, preferred LLC, hit ratio;
//! - run-queue wait deltas (`schedstat` field 2) → per CPU (by last CPU) and per process;
//! - observed CPU changes between two scans → migrations by distance, an LLC×LLC matrix,
//!   per-CPU in/out (a lower bound: several moves between scans count as at most one);
//! - runnable threads (state `R`) per CPU at the end of the interval.
//!
//! A thread or process that disappears between listing and reading is skipped silently.
//!
//! The stages: [`TaskScanner::scan`] reads every thread (the raw stage, kernel reads
//! only), [`account`] diffs the read against the previous one (pure, unit-tested), and
//! [`rows`] makes the busiest processes' rows with the emulated preferred LLC.

use std::collections::HashMap;

use procfs_core::Uptime;
use procfs_core::process::{Schedstat, Stat};

use crate::kroot::{KernelError, KernelRoot};
use crate::preferred::PreferredLlc;
use crate::snapshot::{
    ByDistance, Migrations, Precision, PreferredKind, ProcessStats, ProcessTable,
};
use crate::topology::Topology;

/// One thread as read.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSample {
    pub runtime_ns: u64,
    pub wait_ns: Option<u64>,
    /// Its switch-ins (`pcount` of its schedstat), with `wait_ns`.
    pub runs: Option<u64>,
    pub cpu: Option<u32>,
    pub state: char,
    pub comm: String,
    /// Start time in clock ticks since boot.
    pub starttime: u64,
}

/// One process as read: its threads by tid.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcSample {
    pub pid: u32,
    pub threads: Vec<(u32, ThreadSample)>,
}

/// Per-CPU results of one scan, indexed by CPU number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTasks {
    pub migrations_in: u64,
    pub migrations_out: u64,
    pub rq_wait_ns: u64,
    pub runnable: u32,
}

/// What one scan found (deltas since the previous scan).
#[derive(Debug, Clone, Default)]
pub struct TaskDelta {
    pub cpus: Vec<CpuTasks>,
    pub migrations: Migrations,
    pub processes: ProcessTable,
    /// Whether run-queue wait could be read (`schedstat` per task needs CONFIG_SCHED_INFO).
    pub has_wait: bool,
    /// Threads that could not be read for a reason other than exiting.
    pub unreadable: u64,
    pub first_error: Option<String>,
}

/// One process's figures of the interval.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcAcc {
    pub comm: String,
    pub threads: u32,
    pub cpu_time_ns: u64,
    pub per_llc: Vec<u64>,
    pub migrations: u64,
    pub by_distance: ByDistance,
    pub wait_ns: u64,
    /// Switch-ins of its threads (None without per-task schedstat).
    pub runs: Option<u64>,
}

pub struct TaskScanner {
    /// The previous scan's threads by tid (`None` before the first scan).
    threads: Option<HashMap<u32, ThreadSample>>,
    preferred: PreferredLlc,
    prev_uptime_s: Option<f64>,
    ns_per_tick: u64,
    ticks_per_s: u64,
    top: usize,
    /// Processes given a row besides the `top` (sorted: `Source::keep_rows`).
    pub keep: Vec<u32>,
    /// Whether per-task schedstat exists (CONFIG_SCHED_INFO); learnt on the first read.
    sched_info: Option<bool>,
}

impl TaskScanner {
    /// `top`: how many process rows to keep per snapshot (the busiest ones).
    pub fn new(top: usize) -> Self {
        // SAFETY: sysconf has no preconditions.
        let tps = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let tps = if tps > 0 { tps as u64 } else { 100 };
        TaskScanner {
            threads: None,
            preferred: PreferredLlc::new(),
            prev_uptime_s: None,
            ns_per_tick: 1_000_000_000 / tps,
            ticks_per_s: tps,
            top,
            keep: Vec::new(),
            sched_info: None,
        }
    }

    /// Scan all threads. The first call only records a baseline and returns `None`.
    pub fn scan(
        &mut self,
        root: &KernelRoot,
        topo: &Topology,
    ) -> Result<Option<TaskDelta>, KernelError> {
        let pids = root.numbered_entries("/proc", "")?;
        let uptime_s = root.parse::<Uptime>("/proc/uptime").ok().map(|u| u.uptime);
        let mut errors = ReadErrors::default();
        let procs: Vec<ProcSample> = pids
            .into_iter()
            .filter_map(|pid| self.read_process(root, pid, &mut errors))
            .collect();
        let now: HashMap<u32, ThreadSample> = procs
            .iter()
            .flat_map(|p| p.threads.iter().cloned())
            .collect();
        // Threads not seen in this scan are forgotten.
        let prev = self.threads.replace(now);
        let started_after = std::mem::replace(&mut self.prev_uptime_s, uptime_s);
        let Some(prev) = prev else {
            return Ok(None);
        };
        // A thread not seen before counts from zero only if it started during the
        // interval; otherwise (it was missed) its history is unknown.
        let new_since = started_after.map(|u| (u - 0.01) * self.ticks_per_s as f64);
        let (mut out, accs) = account(&prev, &procs, topo, new_since);
        out.has_wait = self.sched_info != Some(false);
        out.unreadable = errors.unreadable;
        out.first_error = errors.first;
        out.processes = rows(&accs, &mut self.preferred, self.top, &self.keep);
        Ok(Some(out))
    }

    /// Read every thread of `pid` (`None` when the process exited).
    fn read_process(
        &mut self,
        root: &KernelRoot,
        pid: u32,
        errors: &mut ReadErrors,
    ) -> Option<ProcSample> {
        let tids = root
            .numbered_entries(format!("/proc/{pid}/task"), "")
            .ok()?;
        let threads: Vec<(u32, ThreadSample)> = tids
            .into_iter()
            .filter_map(|tid| {
                let base = format!("/proc/{pid}/task/{tid}");
                Some((tid, self.read_thread(root, &base, tid, errors)?))
            })
            .collect();
        (!threads.is_empty()).then_some(ProcSample { pid, threads })
    }

    /// Read one thread. `schedstat` first: a known thread whose runtime and wait did not
    /// change neither ran nor queued, so its CPU, state and name are as last seen and its
    /// `stat` is not read again (halves the reads on machines with many idle threads).
    /// `None` when the thread exited or could not be read.
    fn read_thread(
        &mut self,
        root: &KernelRoot,
        base: &str,
        tid: u32,
        errors: &mut ReadErrors,
    ) -> Option<ThreadSample> {
        let mut sched = None;
        if self.sched_info != Some(false) {
            match root.parse::<Schedstat>(format!("{base}/schedstat")) {
                Ok(s) => {
                    self.sched_info = Some(true);
                    sched = Some(s);
                }
                Err(e) if e.is_not_found() => {
                    if self.sched_info == Some(true) || !root.exists(format!("{base}/stat")) {
                        return None; // the thread exited
                    }
                    self.sched_info = Some(false); // CONFIG_SCHED_INFO off
                }
                Err(e) => {
                    errors.note(e);
                    return None;
                }
            }
        }
        if let (Some(s), Some(p)) = (&sched, self.threads.as_ref().and_then(|t| t.get(&tid)))
            && p.runtime_ns == s.sum_exec_runtime
            && p.wait_ns == Some(s.run_delay)
            && p.runs == Some(s.pcount)
        {
            return Some(p.clone());
        }
        let stat = match root.parse::<Stat>(format!("{base}/stat")) {
            Ok(s) => s,
            Err(e) => {
                errors.note(e);
                return None;
            }
        };
        Some(ThreadSample {
            runtime_ns: match &sched {
                Some(s) => s.sum_exec_runtime,
                None => (stat.utime + stat.stime) * self.ns_per_tick,
            },
            wait_ns: sched.as_ref().map(|s| s.run_delay),
            runs: sched.as_ref().map(|s| s.pcount),
            cpu: stat.processor.and_then(|c| u32::try_from(c).ok()),
            state: stat.state,
            comm: stat.comm,
            starttime: stat.starttime,
        })
    }
}

/// Threads that could not be read for a reason other than exiting.
#[derive(Debug, Default)]
struct ReadErrors {
    unreadable: u64,
    first: Option<String>,
}

impl ReadErrors {
    fn note(&mut self, e: KernelError) {
        if e.is_not_found() || e.errno() == Some(libc::ESRCH) {
            return; // the thread exited between listing and reading
        }
        self.unreadable += 1;
        if self.first.is_none() {
            self.first = Some(e.to_string());
        }
    }
}

/// Diff one scan against the previous one: per-CPU migrations in/out, run-queue wait and
/// runnable threads, sampled migrations by distance with the LLC matrix, and each
/// process's figures. A thread absent from `prev` counts from zero if it started
/// (`starttime`, in ticks) at or after `new_since`, and not at all otherwise.
pub fn account(
    prev: &HashMap<u32, ThreadSample>,
    procs: &[ProcSample],
    topo: &Topology,
    new_since: Option<f64>,
) -> (TaskDelta, Vec<(u32, ProcAcc)>) {
    let nr_llc = topo.llcs.len();
    let mut out = TaskDelta {
        cpus: vec![CpuTasks::default(); topo.nr_cpu_ids()],
        migrations: Migrations {
            precision: Precision::Sampled,
            llc_matrix: vec![vec![0; nr_llc]; nr_llc],
            ..Migrations::default()
        },
        ..TaskDelta::default()
    };
    let mut accs = Vec::with_capacity(procs.len());
    for p in procs {
        let mut acc = ProcAcc {
            per_llc: vec![0; nr_llc],
            ..ProcAcc::default()
        };
        for (tid, t) in &p.threads {
            if *tid == p.pid || acc.comm.is_empty() {
                acc.comm.clone_from(&t.comm);
            }
            acc.threads += 1;
            if t.state == 'R'
                && let Some(c) = t.cpu.and_then(|c| out.cpus.get_mut(c as usize))
            {
                c.runnable += 1;
            }
            let (d_run, d_wait, d_runs, prev_cpu) = match prev.get(tid) {
                Some(q) => (
                    t.runtime_ns.saturating_sub(q.runtime_ns),
                    match (t.wait_ns, q.wait_ns) {
                        (Some(a), Some(b)) => a.saturating_sub(b),
                        _ => 0,
                    },
                    t.runs.zip(q.runs).map(|(a, b)| a.saturating_sub(b)),
                    q.cpu,
                ),
                None if new_since.is_some_and(|s| t.starttime as f64 >= s) => {
                    (t.runtime_ns, t.wait_ns.unwrap_or(0), t.runs, None)
                }
                None => (0, 0, t.runs.map(|_| 0), None),
            };
            acc.cpu_time_ns += d_run;
            acc.wait_ns += d_wait;
            if let Some(n) = d_runs {
                *acc.runs.get_or_insert(0) += n;
            }
            if let Some(c) = t.cpu {
                if let Some(l) = topo.llc_of(c) {
                    acc.per_llc[l as usize] += d_run;
                }
                if let Some(slot) = out.cpus.get_mut(c as usize) {
                    slot.rq_wait_ns += d_wait;
                }
            }
            let (Some(from), Some(to)) = (prev_cpu, t.cpu) else {
                continue;
            };
            if from == to {
                continue;
            }
            acc.migrations += 1;
            if let Some(s) = out.cpus.get_mut(from as usize) {
                s.migrations_out += 1;
            }
            if let Some(s) = out.cpus.get_mut(to as usize) {
                s.migrations_in += 1;
            }
            match topo.distance(from, to) {
                Some(d) => {
                    out.migrations.by_distance.add(d, 1);
                    acc.by_distance.add(d, 1);
                }
                None => out.migrations.unclassified += 1,
            }
            if let (Some(a), Some(b)) = (topo.llc_of(from), topo.llc_of(to)) {
                out.migrations.llc_matrix[a as usize][b as usize] += 1;
            }
        }
        accs.push((p.pid, acc));
    }
    (out, accs)
}

/// The rows of the `top` busiest processes (that ran or moved) and of those in `keep`
/// (sorted) that did, busiest first, with the emulated preferred LLC (`preferred`
/// follows every process and forgets the gone ones).
pub fn rows(
    accs: &[(u32, ProcAcc)],
    preferred: &mut PreferredLlc,
    top: usize,
    keep: &[u32],
) -> ProcessTable {
    let mut rows: Vec<ProcessStats> = Vec::with_capacity(accs.len());
    for (pid, acc) in accs {
        let pref = preferred.update(*pid, &acc.per_llc);
        if acc.cpu_time_ns == 0 && acc.migrations == 0 {
            continue;
        }
        rows.push(ProcessStats {
            pid: *pid,
            comm: acc.comm.clone(),
            threads: acc.threads,
            cpu_time_ns: acc.cpu_time_ns,
            llc_spread: acc.per_llc.iter().filter(|&&r| r > 0).count() as u32,
            runtime_per_llc_ns: acc.per_llc.clone(),
            preferred_llc: pref.preferred_llc,
            preferred_kind: PreferredKind::Emulated,
            preferred_hit: pref.hit,
            migrations: acc.migrations,
            cross_llc_migrations: acc.by_distance.cross_llc + acc.by_distance.cross_node,
            migrations_by_distance: Some(acc.by_distance),
            rq_wait_ns: acc.wait_ns,
            runs: acc.runs,
            ..ProcessStats::default()
        });
    }
    let alive: std::collections::HashSet<u32> = accs.iter().map(|(p, _)| *p).collect();
    preferred.retain(|p| alive.contains(&p));
    rows.sort_by(|a, b| b.cpu_time_ns.cmp(&a.cpu_time_ns).then(a.pid.cmp(&b.pid)));
    let mut ranked = 0;
    rows.retain(|r| {
        keep.binary_search(&r.pid).is_ok() || {
            ranked += 1;
            ranked <= top
        }
    });
    ProcessTable {
        precision: Precision::Sampled,
        total: accs.len() as u32,
        rows,
        ..ProcessTable::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Distance;

    fn t(runtime_ns: u64, cpu: u32, state: char, starttime: u64) -> ThreadSample {
        ThreadSample {
            runtime_ns,
            wait_ns: Some(runtime_ns / 10),
            runs: Some(runtime_ns / 100),
            cpu: Some(cpu),
            state,
            comm: "w".into(),
            starttime,
        }
    }

    #[test]
    fn moves_runtime_wait_and_new_threads_from_two_scans() {
        // Sample topology: cpu0/1 llc0 (node 0), cpu2 llc1 (node 0), cpu4 llc2 (node 1).
        let topo = crate::topology::tests::sample();
        let prev: HashMap<u32, ThreadSample> = [
            (10, t(1000, 0, 'S', 0)),
            (11, t(1000, 0, 'S', 0)),
            (12, t(1000, 0, 'S', 0)),
            (20, t(5000, 2, 'S', 0)),
        ]
        .into();
        let procs = vec![
            ProcSample {
                pid: 10,
                threads: vec![
                    (10, t(3000, 1, 'R', 0)),  // same LLC
                    (11, t(1500, 2, 'S', 0)),  // cross-LLC, same node
                    (12, t(1000, 4, 'S', 0)),  // cross-node, did not run
                    (13, t(700, 4, 'R', 500)), // new, started in the interval
                    (14, t(900, 4, 'S', 100)), // new to us, but older: unknown history
                ],
            },
            ProcSample {
                pid: 20,
                threads: vec![(20, t(5000, 2, 'S', 0))], // idle: no row
            },
        ];
        let (out, accs) = account(&prev, &procs, &topo, Some(400.0));
        let m = &out.migrations;
        assert_eq!(m.precision, Precision::Sampled);
        assert_eq!(
            (
                m.by_distance.get(Distance::Llc),
                m.by_distance.get(Distance::CrossLlc),
                m.by_distance.get(Distance::CrossNode)
            ),
            (1, 1, 1)
        );
        assert_eq!(m.llc_matrix[0][1], 1);
        assert_eq!(m.llc_matrix[0][2], 1);
        assert_eq!(
            (out.cpus[0].migrations_out, out.cpus[4].migrations_in),
            (3, 1)
        );
        assert_eq!((out.cpus[1].runnable, out.cpus[4].runnable), (1, 1));
        let (_, a) = &accs[0];
        assert_eq!(a.threads, 5);
        assert_eq!(
            a.cpu_time_ns,
            2000 + 500 + 700,
            "the old unknown thread adds nothing"
        );
        assert_eq!(a.per_llc, vec![2000, 500, 700, 0]);
        assert_eq!(a.wait_ns, 200 + 50 + 70);
        assert_eq!(
            a.runs,
            Some(20 + 5 + 7),
            "runs as the waits: the old unknown thread none"
        );
        assert_eq!(out.cpus[1].rq_wait_ns, 200);

        let mut pref = PreferredLlc::new();
        let table = rows(&accs, &mut pref, 10, &[]);
        assert_eq!(table.total, 2);
        assert_eq!(table.rows.len(), 1, "the idle process has no row");
        let r = &table.rows[0];
        assert_eq!(
            (r.pid, r.migrations, r.cross_llc_migrations, r.llc_spread),
            (10, 3, 2, 3)
        );
        assert_eq!(r.preferred_llc, Some(0));
        assert!(r.cgroup.is_none(), "cgroups are the enrichment stage's");
        assert_eq!(
            rows(&accs, &mut pref, 0, &[]).rows.len(),
            0,
            "top 0 keeps none"
        );
        let kept = rows(&accs, &mut pref, 0, &[10, 11]);
        let pids: Vec<u32> = kept.rows.iter().map(|r| r.pid).collect();
        assert_eq!(pids, [10], "one asked for has a row if it ran or moved");
    }
}
