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

use std::collections::HashMap;

use procfs_core::Uptime;
use procfs_core::process::{Schedstat, Stat};

use crate::kroot::{KernelError, KernelRoot};
use crate::preferred::PreferredLlc;
use crate::snapshot::{
    ByDistance, Migrations, Precision, PreferredKind, ProcessStats, ProcessTable,
};
use crate::topology::Topology;

#[derive(Debug, Clone)]
struct ThreadPrev {
    runtime_ns: u64,
    wait_ns: Option<u64>,
    cpu: Option<u32>,
    state: char,
    comm: String,
    starttime: u64,
    generation: u64,
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

#[derive(Debug, Default)]
struct ProcAcc {
    comm: String,
    threads: u32,
    cpu_time_ns: u64,
    per_llc: Vec<u64>,
    migrations: u64,
    by_distance: ByDistance,
    wait_ns: u64,
}

pub struct TaskScanner {
    threads: HashMap<u32, ThreadPrev>,
    preferred: PreferredLlc,
    generation: u64,
    prev_uptime_s: Option<f64>,
    ns_per_tick: u64,
    ticks_per_s: u64,
    top: usize,
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
            threads: HashMap::new(),
            preferred: PreferredLlc::new(),
            generation: 0,
            prev_uptime_s: None,
            ns_per_tick: 1_000_000_000 / tps,
            ticks_per_s: tps,
            top,
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
        let primed = self.generation > 0;
        self.generation += 1;
        let generation = self.generation;
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
        let mut procs: Vec<(u32, ProcAcc)> = Vec::new();

        for pid in pids {
            let tids = match root.numbered_entries(format!("/proc/{pid}/task"), "") {
                Ok(t) => t,
                Err(_) => continue, // exited
            };
            let mut acc = ProcAcc {
                per_llc: vec![0; nr_llc],
                ..ProcAcc::default()
            };
            for tid in tids {
                let base = format!("/proc/{pid}/task/{tid}");
                let Some(t) = self.read_thread(root, &base, tid, &mut out) else {
                    continue;
                };
                let (runtime_ns, wait_ns, cpu) = (t.runtime_ns, t.wait_ns, t.cpu);
                if tid == pid || acc.comm.is_empty() {
                    acc.comm.clone_from(&t.comm);
                }
                acc.threads += 1;
                if t.state == 'R'
                    && let Some(c) = cpu.and_then(|c| out.cpus.get_mut(c as usize))
                {
                    c.runnable += 1;
                }
                let starttime = t.starttime;
                let prev = self.threads.insert(tid, ThreadPrev { generation, ..t });
                if !primed {
                    continue;
                }
                // A thread not seen before counts from zero only if it started during the
                // interval; otherwise (it was missed) its history is unknown.
                let (d_run, d_wait, prev_cpu) = match prev {
                    Some(p) => (
                        runtime_ns.saturating_sub(p.runtime_ns),
                        match (wait_ns, p.wait_ns) {
                            (Some(a), Some(b)) => a.saturating_sub(b),
                            _ => 0,
                        },
                        p.cpu,
                    ),
                    None => {
                        let started_s = starttime as f64 / self.ticks_per_s as f64;
                        if self.prev_uptime_s.is_some_and(|u| started_s + 0.01 >= u) {
                            (runtime_ns, wait_ns.unwrap_or(0), None)
                        } else {
                            (0, 0, None)
                        }
                    }
                };
                acc.cpu_time_ns += d_run;
                acc.wait_ns += d_wait;
                if let Some(c) = cpu {
                    if let Some(l) = topo.llc_of(c) {
                        acc.per_llc[l as usize] += d_run;
                    }
                    if let Some(slot) = out.cpus.get_mut(c as usize) {
                        slot.rq_wait_ns += d_wait;
                    }
                }
                if let (Some(from), Some(to)) = (prev_cpu, cpu)
                    && from != to
                {
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
            }
            if acc.threads > 0 {
                procs.push((pid, acc));
            }
        }

        out.has_wait = self.sched_info != Some(false);
        // Forget threads not seen in this scan.
        self.threads.retain(|_, t| t.generation == generation);
        self.prev_uptime_s = uptime_s;
        if !primed {
            return Ok(None);
        }

        let mut rows: Vec<ProcessStats> = Vec::with_capacity(procs.len());
        for (pid, acc) in &procs {
            let pref = self.preferred.update(*pid, &acc.per_llc);
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
                cgroup: None,
                ..ProcessStats::default()
            });
        }
        let alive: std::collections::HashSet<u32> = procs.iter().map(|(p, _)| *p).collect();
        self.preferred.retain(|p| alive.contains(&p));
        rows.sort_by(|a, b| b.cpu_time_ns.cmp(&a.cpu_time_ns).then(a.pid.cmp(&b.pid)));
        rows.truncate(self.top);
        out.processes = ProcessTable {
            precision: Precision::Sampled,
            total: procs.len() as u32,
            rows,
            ..ProcessTable::default()
        };
        Ok(Some(out))
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
        out: &mut TaskDelta,
    ) -> Option<ThreadPrev> {
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
                    self.note_error(out, e);
                    return None;
                }
            }
        }
        if let (Some(s), Some(p)) = (&sched, self.threads.get(&tid))
            && p.runtime_ns == s.sum_exec_runtime
            && p.wait_ns == Some(s.run_delay)
        {
            return Some(p.clone());
        }
        let stat = match root.parse::<Stat>(format!("{base}/stat")) {
            Ok(s) => s,
            Err(e) => {
                self.note_error(out, e);
                return None;
            }
        };
        Some(ThreadPrev {
            runtime_ns: match &sched {
                Some(s) => s.sum_exec_runtime,
                None => (stat.utime + stat.stime) * self.ns_per_tick,
            },
            wait_ns: sched.map(|s| s.run_delay),
            cpu: stat.processor.and_then(|c| u32::try_from(c).ok()),
            state: stat.state,
            comm: stat.comm,
            starttime: stat.starttime,
            generation: 0,
        })
    }

    fn note_error(&self, out: &mut TaskDelta, e: KernelError) {
        if e.is_not_found() || e.errno() == Some(libc::ESRCH) {
            return; // the thread exited between listing and reading
        }
        out.unreadable += 1;
        if out.first_error.is_none() {
            out.first_error = Some(e.to_string());
        }
    }
}
