//! The procfs source: sampling /proc and /sys through the kernel root.
//!
//! Sub-sources, each reported separately in `Snapshot::sources`:
//! - `procfs.stat` ([`stat`]): per-CPU busy, system context switches;
//! - `procfs.tasks` ([`tasks`]): per-thread scan → sampled migrations, runtime per LLC,
//!   run-queue wait, runnable tasks, processes with emulated preferred LLC;
//! - `procfs.schedstat` ([`schedstat`]): load-balance counters per domain level;
//! - `procfs.numa` ([`numa`]): vmstat/numastat/cgroup NUMA counters;
//! - `procfs.sched_ext` ([`crate::kstate::sched_ext`], shared with the knobs): which BPF
//!   scheduler runs, if any;
//! - `procfs.cache_aware` ([`crate::kstate::cache_aware`], shared with the knobs): whether
//!   the 7.2 cache-aware scheduler runs, beside what `llc_balancing/enabled` asks for.

pub mod numa;
pub mod schedstat;
pub mod stat;
pub mod tasks;

use super::Source;
use crate::kroot::KernelRoot;
use crate::kstate::{cache_aware, sched_ext};
use crate::snapshot::{Snapshot, SourceName, SourceStatus, SystemStats};
use crate::topology::Topology;

pub const SCHEDSTAT_PATH: &str = "/proc/schedstat";
const SAMPLED_NOTE: &str = "sampled: migrations are CPU changes seen between scans (a lower bound)";

pub struct ProcfsSource {
    root: KernelRoot,
    /// Scan every thread (sampled migrations, processes). Off when an exact source (BPF)
    /// provides those.
    scan_tasks: bool,
    prev_stat: Option<stat::StatSample>,
    tasks: tasks::TaskScanner,
    prev_schedstat: Option<schedstat::SchedstatFile>,
    /// This kernel's name of the package domain, for schedstat versions without names.
    pkg_domain: &'static str,
    numa: numa::NumaReader,
    scx_since: sched_ext::Since,
    /// The kernel's lack of sched_ext has been said (once: nothing else changes there).
    scx_absent_said: bool,
    /// Where cgroup v2 is mounted (cpuset partitions), read once.
    cgroup2: Option<std::path::PathBuf>,
    /// cgroup v1's cpuset is mounted: its partitions are not read.
    cpuset_v1: bool,
    /// The kernel's lack of cache-aware scheduling has been said (once).
    cas_absent_said: bool,
}

impl ProcfsSource {
    /// `top`: number of process rows kept per snapshot.
    pub fn new(root: KernelRoot, top: usize) -> Self {
        let pkg_domain = schedstat::package_domain_name(crate::kroot::kernel_version(&root));
        let mounts = crate::mounts::Mounts::discover(&root);
        ProcfsSource {
            root,
            pkg_domain,
            scan_tasks: true,
            prev_stat: None,
            tasks: tasks::TaskScanner::new(top),
            prev_schedstat: None,
            numa: numa::NumaReader::new(),
            scx_since: sched_ext::Since::default(),
            scx_absent_said: false,
            cgroup2: mounts.cgroup2,
            cpuset_v1: mounts.cpuset_v1.is_some(),
            cas_absent_said: false,
        }
    }

    /// Leave processes and migrations to another source (see `scan_tasks`).
    pub fn without_task_scan(mut self) -> Self {
        self.scan_tasks = false;
        self
    }

    fn sample_stat(&mut self, snap: &mut Snapshot) {
        let cur = match stat::read(&self.root) {
            Ok(s) => s,
            Err(e) => {
                snap.sources.push(SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsStat,
                    e.to_string(),
                ));
                return;
            }
        };
        if let Some(prev) = &self.prev_stat {
            for c in snap.cpus.iter_mut().filter(|c| c.online) {
                if let (Some(p), Some(n)) = (prev.cpus.get(&c.cpu), cur.cpus.get(&c.cpu))
                    && let Some((busy, steal)) = stat::fractions(p, n)
                {
                    c.busy = Some(busy);
                    c.steal = Some(steal);
                }
            }
            let shares = stat::user_kernel(prev, &cur);
            snap.system = SystemStats {
                busy: None, // filled by the collector from the CPUs
                ctx_switches: cur.ctxt.checked_sub(prev.ctxt),
                forks: cur.processes.checked_sub(prev.processes),
                procs_running: cur.procs_running,
                procs_blocked: cur.procs_blocked,
                user: shares.map(|s| s.0),
                system: shares.map(|s| s.1),
                load: self
                    .root
                    .read(stat::LOADAVG)
                    .ok()
                    .and_then(|t| stat::parse_loadavg(&t)),
            };
        }
        snap.sources.push(SourceStatus::active(
            crate::snapshot::SourceName::ProcfsStat,
        ));
        self.prev_stat = Some(cur);
    }

    fn sample_tasks(&mut self, topo: &Topology, snap: &mut Snapshot) {
        let delta = match self.tasks.scan(&self.root, topo) {
            Ok(Some(d)) => d,
            Ok(None) => {
                snap.sources.push(SourceStatus::degraded(
                    crate::snapshot::SourceName::ProcfsTasks,
                    SAMPLED_NOTE,
                ));
                return;
            }
            Err(e) => {
                snap.sources.push(SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsTasks,
                    e.to_string(),
                ));
                return;
            }
        };
        for c in snap.cpus.iter_mut().filter(|c| c.online) {
            if let Some(t) = delta.cpus.get(c.cpu as usize) {
                c.migrations_in = Some(t.migrations_in);
                c.migrations_out = Some(t.migrations_out);
                c.rq_wait_ns = delta.has_wait.then_some(t.rq_wait_ns);
                c.runnable = Some(t.runnable);
            }
        }
        snap.migrations = Some(delta.migrations);
        snap.processes = Some(delta.processes);
        let mut notes = vec![SAMPLED_NOTE.to_string()];
        if !delta.has_wait {
            notes.push(
                "no /proc/PID/task/TID/schedstat (CONFIG_SCHED_INFO off): no run-queue wait".into(),
            );
        }
        if let Some(e) = &delta.first_error {
            notes.push(format!("{} threads unreadable, e.g. {e}", delta.unreadable));
        }
        snap.sources.push(SourceStatus::degraded(
            crate::snapshot::SourceName::ProcfsTasks,
            notes.join("; "),
        ));
    }

    fn sample_schedstat(&mut self, topo: &Topology, snap: &mut Snapshot) {
        let text = match self.root.read(SCHEDSTAT_PATH) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                snap.sources.push(SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsSchedstat,
                    "schedstat unavailable (CONFIG_SCHEDSTATS off: /proc/schedstat does not exist)",
                ));
                return;
            }
            Err(e) => {
                snap.sources.push(SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsSchedstat,
                    e.to_string(),
                ));
                return;
            }
        };
        let cur = match schedstat::parse(&text) {
            Ok(f) => f,
            Err(e) => {
                let p = self.root.path(SCHEDSTAT_PATH);
                snap.sources.push(SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsSchedstat,
                    format!("{}: {e}", p.display()),
                ));
                return;
            }
        };
        if let Some(prev) = &self.prev_schedstat
            && prev.version == cur.version
        {
            snap.balance = Some(schedstat::delta(prev, &cur, topo, self.pkg_domain));
        }
        let enabled = self
            .root
            .read_value_opt::<u32>("/proc/sys/kernel/sched_schedstats")
            .ok()
            .flatten();
        let status = if enabled == Some(0) {
            SourceStatus::degraded(
                crate::snapshot::SourceName::ProcfsSchedstat,
                format!(
                    "version {}; kernel.sched_schedstats=0: load-balance counters do not advance",
                    cur.version
                ),
            )
        } else {
            SourceStatus::active(crate::snapshot::SourceName::ProcfsSchedstat)
        };
        snap.sources.push(status);
        self.prev_schedstat = Some(cur);
    }

    fn sample_sched_ext(&mut self, snap: &mut Snapshot) {
        const NAME: SourceName = SourceName::ProcfsSchedExt;
        match sched_ext::read(&self.root) {
            Ok(Some(mut s)) => {
                self.scx_since.stamp(&mut s, snap.time.unix_ns);
                snap.sched_ext = Some(s);
                snap.sources.push(SourceStatus::active(NAME));
            }
            // Said once, in the first snapshot (the run's start-up source states and a
            // recording's header carry it); later snapshots leave it out.
            Ok(None) if !self.scx_absent_said => {
                self.scx_absent_said = true;
                snap.sources
                    .push(SourceStatus::absent(NAME, sched_ext::ABSENT));
            }
            Ok(None) => {}
            Err(e) => snap.sources.push(SourceStatus::absent(NAME, e.to_string())),
        }
    }
}

impl ProcfsSource {
    fn sample_cache_aware(&mut self, topo: &Topology, snap: &mut Snapshot) {
        const NAME: SourceName = SourceName::ProcfsCacheAware;
        match cache_aware::read(&self.root, topo, self.cgroup2.as_deref()) {
            Ok(Some(c)) => {
                snap.cache_aware = Some(c);
                snap.sources.push(if self.cpuset_v1 {
                    SourceStatus::degraded(
                        NAME,
                        "cgroup v1 cpuset is mounted: its partitions (sched_load_balance 0) are not read",
                    )
                } else {
                    SourceStatus::active(NAME)
                });
            }
            // Said once, as sched_ext's absence is.
            Ok(None) if !self.cas_absent_said => {
                self.cas_absent_said = true;
                snap.sources
                    .push(SourceStatus::absent(NAME, cache_aware::absence(&self.root)));
            }
            Ok(None) => {}
            Err(e) => snap.sources.push(SourceStatus::absent(NAME, e)),
        }
    }
}

impl Source for ProcfsSource {
    fn name(&self) -> &'static str {
        "procfs"
    }

    fn keep_rows(&mut self, tgids: &[u32]) {
        if self.tasks.keep != tgids {
            self.tasks.keep = tgids.to_vec();
        }
    }

    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot) {
        self.sample_stat(snap);
        if self.scan_tasks {
            self.sample_tasks(topo, snap);
        }
        self.sample_schedstat(topo, snap);
        self.sample_sched_ext(snap);
        self.sample_cache_aware(topo, snap);
        let numa = self.numa.read(&self.root, topo);
        snap.numa = numa.stats;
        snap.sources.push(if numa.missing.is_empty() {
            SourceStatus::active(crate::snapshot::SourceName::ProcfsNuma)
        } else {
            SourceStatus::degraded(
                crate::snapshot::SourceName::ProcfsNuma,
                numa.missing.join("; "),
            )
        });
    }
}
