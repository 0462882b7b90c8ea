//! The exporter's metrics: every snapshot folded into Prometheus series with
//! prometheus-client (OpenMetrics text), after node_exporter's conventions — the
//! `llctop_` prefix, base units (seconds), cumulative `_total` counters that Prometheus
//! turns into rates (never per-second gauges), labels `cpu`, `llc`, `node`, `distance`,
//! `cause`, `level`, `domain`, `type`, `cgroup`, `source`, `knob`, `locality`, `reason`. Pure over snapshots:
//! unit-tested without a kernel; `serve` owns the HTTP side. The metric names and their
//! meaning are listed in docs/metrics.md ("Prometheus").

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

mod cache;
mod findings;
mod sched;

use crate::snapshot::{Cause, Precision, Snapshot, SourceState};
use crate::topology::{Distance, Topology};

type Labels = Vec<(String, String)>;
type Seconds = Family<Labels, Counter<f64, AtomicU64>>;
type Count = Family<Labels, Counter>;
type Level = Family<Labels, Gauge<f64, AtomicU64>>;

fn l(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// The series `serve` shows whatever the machine's size, with the BPF source and no
/// `--process-series` (README, "Fleet-wide", has the whole count): one per distance
/// class and per migration cause, whether migrations are exact, context switches and
/// those unseen, forks, process updates dropped, the process series' limit and how many
/// were dropped, snapshots taken, the last one's time, the interval, the preferred-LLC
/// runtime (hit, miss), and the advisor's findings (active and fired per kind and
/// severity), and the build (llctop's version, the kernel release). sched_ext's three are
/// apart: only kernels that have it show them.
pub fn fixed_series() -> usize {
    Distance::ALL.len() + Cause::ALL.len() + 1 + 2 + 1 + 1 + 2 + 3 + 2 + findings::series() + 1
}

/// The series, registered once; [`Exporter::update`] adds each snapshot's counts.
pub struct Exporter {
    registry: Registry,
    topo: Topology,
    cpu_busy: Seconds,
    llc_busy: Seconds,
    llc_wait: Seconds,
    llc_in: Count,
    llc_out: Count,
    llc_cpus: Level,
    llc_runnable: Level,
    migrations: Count,
    migrations_exact: Gauge<f64, AtomicU64>,
    causes: Count,
    ctx: Counter,
    ctx_unseen: Counter,
    forks: Counter,
    proc_lost: Counter,
    lb_attempts: Count,
    lb_failed: Count,
    lb_gained: Count,
    numa_events: Count,
    cgroup_numa: Count,
    preferred: Seconds,
    source_up: Level,
    source_degraded: Level,
    knob_value: Level,
    knob_info: Level,
    snapshots: Counter,
    last: Gauge<f64, AtomicU64>,
    interval: Gauge<f64, AtomicU64>,
    /// `llctop_build_info{version,kernel}` 1; the labels of the one shown.
    build: Level,
    build_shown: Labels,
    /// The knob info series shown now, to drop when a value changes.
    knob_shown: BTreeMap<String, Labels>,
    /// Per-process series for at most this many processes (the busiest of each
    /// snapshot); 0: none. Opt-in: a process's pid is a label, so series come and go.
    process_limit: usize,
    proc_cpu: Seconds,
    proc_xllc: Count,
    proc_limit: Gauge,
    proc_dropped: Gauge,
    /// pid → the labels of its series shown now (dropped when it leaves the top or exits:
    /// nothing is kept for a process that is gone).
    proc_shown: BTreeMap<u32, Labels>,
    /// resctrl's L3 occupancy and memory bandwidth.
    cache: cache::CacheSeries,
    /// The advisor's findings.
    findings: findings::FindingSeries,
    /// Which scheduler is in charge (sched_ext).
    sched: sched::SchedSeries,
}

impl Exporter {
    pub fn new(topo: &Topology) -> Exporter {
        let mut r = Registry::with_prefix("llctop");
        let mut e = Exporter {
            registry: Registry::default(),
            topo: topo.clone(),
            cpu_busy: Seconds::default(),
            llc_busy: Seconds::default(),
            llc_wait: Seconds::default(),
            llc_in: Count::default(),
            llc_out: Count::default(),
            llc_cpus: Level::default(),
            llc_runnable: Level::default(),
            migrations: Count::default(),
            migrations_exact: Gauge::default(),
            causes: Count::default(),
            ctx: Counter::default(),
            ctx_unseen: Counter::default(),
            forks: Counter::default(),
            proc_lost: Counter::default(),
            lb_attempts: Count::default(),
            lb_failed: Count::default(),
            lb_gained: Count::default(),
            numa_events: Count::default(),
            cgroup_numa: Count::default(),
            preferred: Seconds::default(),
            source_up: Level::default(),
            source_degraded: Level::default(),
            knob_value: Level::default(),
            knob_info: Level::default(),
            snapshots: Counter::default(),
            last: Gauge::default(),
            interval: Gauge::default(),
            build: Level::default(),
            build_shown: Labels::new(),
            knob_shown: BTreeMap::new(),
            process_limit: 0,
            proc_cpu: Seconds::default(),
            proc_xllc: Count::default(),
            proc_limit: Gauge::default(),
            proc_dropped: Gauge::default(),
            proc_shown: BTreeMap::new(),
            cache: cache::CacheSeries::register(&mut r),
            findings: findings::FindingSeries::register(&mut r),
            sched: sched::SchedSeries::default(),
        };
        r.register_with_unit(
            "cpu_busy",
            "Time a CPU was not idle (user, nice, system, irq, softirq, steal)",
            Unit::Seconds,
            e.cpu_busy.clone(),
        );
        r.register_with_unit(
            "llc_busy",
            "CPU time the LLC's CPUs were not idle (rate / llctop_llc_cpus = busy fraction)",
            Unit::Seconds,
            e.llc_busy.clone(),
        );
        r.register_with_unit(
            "llc_run_queue_wait",
            "Time tasks spent runnable but waiting on the LLC's CPUs",
            Unit::Seconds,
            e.llc_wait.clone(),
        );
        r.register(
            "llc_migrations_in",
            "Task migrations onto the LLC's CPUs from other LLCs",
            e.llc_in.clone(),
        );
        r.register(
            "llc_migrations_out",
            "Task migrations from the LLC's CPUs to other LLCs",
            e.llc_out.clone(),
        );
        r.register("llc_cpus", "Online CPUs of the LLC", e.llc_cpus.clone());
        r.register(
            "llc_runnable",
            "Runnable tasks on the LLC's CPUs at the last snapshot",
            e.llc_runnable.clone(),
        );
        r.register(
            "migrations",
            "Task migrations by distance (smt, llc, xllc, xnode)",
            e.migrations.clone(),
        );
        r.register(
            "migrations_exact",
            "1 when migrations are counted in the kernel (BPF), 0 when sampled from /proc (a lower bound)",
            e.migrations_exact.clone(),
        );
        r.register(
            "migrations_by_cause",
            "Task migrations by why the task moved",
            e.causes.clone(),
        );
        r.register(
            "context_switches",
            "Context switches, all CPUs",
            e.ctx.clone(),
        );
        r.register(
            "context_switches_unseen",
            "Context switches the kernel made without its sched_switch tracepoint (found by the BPF source): the run-queue waits they ended are missing",
            e.ctx_unseen.clone(),
        );
        r.register("forks", "Tasks created", e.forks.clone());
        r.register(
            "process_updates_dropped",
            "Per-process updates the BPF program could not store (a per-process map full): counts missing from the process figures",
            e.proc_lost.clone(),
        );
        r.register(
            "load_balance_attempts",
            "Load-balance attempts per domain level and type (busy, idle, newidle), /proc/schedstat",
            e.lb_attempts.clone(),
        );
        r.register(
            "load_balance_failed",
            "Load-balance attempts that found an imbalance but moved nothing",
            e.lb_failed.clone(),
        );
        r.register(
            "load_balance_tasks_gained",
            "Tasks pulled by load balancing",
            e.lb_gained.clone(),
        );
        r.register(
            "numa_events",
            "NUMA balancing events of /proc/vmstat (numa_hint_faults, numa_pages_migrated, ...)",
            e.numa_events.clone(),
        );
        r.register(
            "cgroup_numa_events",
            "NUMA balancing events per cgroup (memory.stat)",
            e.cgroup_numa.clone(),
        );
        r.register_with_unit(
            "preferred_llc_runtime",
            "Runtime of the top processes on their preferred LLC (result=hit) or elsewhere (miss)",
            Unit::Seconds,
            e.preferred.clone(),
        );
        r.register(
            "source_up",
            "1 when the source gives data (active or degraded), 0 when absent",
            e.source_up.clone(),
        );
        r.register(
            "source_degraded",
            "1 when the source gives only part of its data; the reason is a label",
            e.source_degraded.clone(),
        );
        r.register(
            "knob_value",
            "A scheduler knob's value where it is a number (features: 1 on, 0 off)",
            e.knob_value.clone(),
        );
        r.register(
            "knob",
            "A scheduler knob's value as text (always 1)",
            e.knob_info.clone(),
        );
        r.register("snapshots", "Snapshots taken", e.snapshots.clone());
        r.register_with_unit(
            "last_snapshot_timestamp",
            "Wall clock at the end of the last snapshot",
            Unit::Seconds,
            e.last.clone(),
        );
        r.register_with_unit(
            "interval",
            "Length of the last snapshot's interval",
            Unit::Seconds,
            e.interval.clone(),
        );
        r.register_with_unit(
            "process_cpu",
            "CPU time of the busiest processes (--process-series), while they stay among them",
            Unit::Seconds,
            e.proc_cpu.clone(),
        );
        r.register(
            "process_cross_llc_migrations",
            "Cross-LLC migrations of the busiest processes (--process-series)",
            e.proc_xllc.clone(),
        );
        r.register(
            "process_series_limit",
            "How many processes get series (--process-series; 0: none)",
            e.proc_limit.clone(),
        );
        r.register(
            "process_series_dropped",
            "Processes of the last snapshot left without series by the limit",
            e.proc_dropped.clone(),
        );
        r.register(
            "build_info",
            "llctop's version and the kernel release it runs on (always 1)",
            e.build.clone(),
        );
        e.set_kernel(None);
        for llc in &topo.llcs {
            let node = llc.node.map_or("-".into(), |n| n.to_string());
            e.llc_cpus
                .get_or_create(&l(&[("llc", llc.id.to_string()), ("node", node)]))
                .set(llc.cpus.len() as f64);
        }
        e.registry = r;
        e
    }

    /// Give per-process series to at most `n` processes (the busiest of each snapshot).
    /// The kernel release `llctop_build_info` names (`unknown` until said).
    pub fn with_kernel(mut self, kernel: Option<&str>) -> Exporter {
        self.set_kernel(kernel);
        self
    }

    fn set_kernel(&mut self, kernel: Option<&str>) {
        self.build.remove(&self.build_shown);
        self.build_shown = l(&[
            ("version", env!("CARGO_PKG_VERSION").to_string()),
            ("kernel", kernel.unwrap_or("unknown").to_string()),
        ]);
        self.build.get_or_create(&self.build_shown).set(1.0);
    }

    pub fn with_process_series(mut self, n: usize) -> Exporter {
        self.process_limit = n;
        self.proc_limit.set(i64::try_from(n).unwrap_or(i64::MAX));
        self
    }

    /// The busiest processes' series; those that left the top or exited are removed.
    fn processes(&mut self, s: &Snapshot) {
        let Some(t) = &s.processes else {
            return;
        };
        let mut rows: Vec<_> = t.rows.iter().collect();
        rows.sort_by(|a, b| b.cpu_time_ns.cmp(&a.cpu_time_ns).then(a.pid.cmp(&b.pid)));
        let dropped = rows.len().saturating_sub(self.process_limit);
        self.proc_dropped
            .set(i64::try_from(dropped).unwrap_or(i64::MAX));
        let mut shown = BTreeMap::new();
        for r in rows.into_iter().take(self.process_limit) {
            let labels = l(&[("pid", r.pid.to_string()), ("comm", r.comm.clone())]);
            self.proc_cpu
                .get_or_create(&labels)
                .inc_by(r.cpu_time_ns as f64 / 1e9);
            self.proc_xllc
                .get_or_create(&labels)
                .inc_by(r.cross_llc_migrations);
            shown.insert(r.pid, labels);
        }
        for (pid, old) in std::mem::replace(&mut self.proc_shown, shown) {
            if self.proc_shown.get(&pid) != Some(&old) {
                self.proc_cpu.remove(&old);
                self.proc_xllc.remove(&old);
            }
        }
    }

    fn llc_labels(&self, id: u32) -> Labels {
        let node = self
            .topo
            .llcs
            .get(id as usize)
            .and_then(|l| l.node)
            .map_or("-".into(), |n| n.to_string());
        l(&[("llc", id.to_string()), ("node", node)])
    }

    /// Fold one snapshot in.
    pub fn update(&mut self, s: &Snapshot) {
        let secs = s.time.interval_secs();
        self.snapshots.inc();
        self.last.set(s.time.unix_ns as f64 / 1e9);
        self.interval.set(secs);
        for c in &s.cpus {
            if let Some(b) = c.busy {
                let llc = self
                    .topo
                    .llc_of(c.cpu)
                    .map_or("-".into(), |x| x.to_string());
                self.cpu_busy
                    .get_or_create(&l(&[("cpu", c.cpu.to_string()), ("llc", llc)]))
                    .inc_by(b * secs);
            }
        }
        for g in &s.llcs {
            let labels = self.llc_labels(g.id);
            if let Some(b) = g.busy {
                self.llc_busy
                    .get_or_create(&labels)
                    .inc_by(b * f64::from(g.cpus) * secs);
            }
            if let Some(w) = g.rq_wait_ns {
                self.llc_wait.get_or_create(&labels).inc_by(w as f64 / 1e9);
            }
            if let Some(i) = g.migrations_in {
                self.llc_in.get_or_create(&labels).inc_by(i);
            }
            if let Some(o) = g.migrations_out {
                self.llc_out.get_or_create(&labels).inc_by(o);
            }
            if let Some(r) = g.runnable {
                self.llc_runnable.get_or_create(&labels).set(f64::from(r));
            }
        }
        if let Some(m) = &s.migrations {
            for d in Distance::ALL {
                self.migrations
                    .get_or_create(&l(&[("distance", d.label().to_string())]))
                    .inc_by(m.by_distance.get(d));
            }
            self.migrations_exact
                .set(if m.precision == Precision::Exact {
                    1.0
                } else {
                    0.0
                });
            if let Some(c) = &m.by_cause {
                for cause in Cause::ALL {
                    self.causes
                        .get_or_create(&l(&[("cause", cause.label().to_string())]))
                        .inc_by(c.get(cause));
                }
            }
        }
        if let Some(c) = s.system.ctx_switches {
            self.ctx.inc_by(c);
        }
        self.ctx_unseen
            .inc_by(s.cpus.iter().map(|c| c.switches_unseen).sum::<u64>());
        if let Some(f) = s.system.forks {
            self.forks.inc_by(f);
        }
        if let Some(t) = &s.processes {
            self.proc_lost.inc_by(t.dropped);
        }
        if let Some(b) = &s.balance {
            for d in &b.domains {
                for (kind, st) in [
                    ("busy", &d.busy),
                    ("idle", &d.idle),
                    ("newidle", &d.newidle),
                ] {
                    let labels = l(&[
                        ("level", d.level.to_string()),
                        ("domain", d.name.clone().unwrap_or_else(|| "?".into())),
                        ("type", kind.to_string()),
                    ]);
                    self.lb_attempts.get_or_create(&labels).inc_by(st.count);
                    self.lb_failed.get_or_create(&labels).inc_by(st.failed);
                    self.lb_gained.get_or_create(&labels).inc_by(st.gained);
                }
            }
        }
        if let Some(n) = &s.numa {
            for (k, v) in &n.vmstat {
                self.numa_events
                    .get_or_create(&l(&[("event", k.clone())]))
                    .inc_by(*v);
            }
            for c in &n.cgroups {
                for (k, v) in [
                    ("numa_pages_migrated", c.numa_pages_migrated),
                    ("numa_pte_updates", c.numa_pte_updates),
                    ("numa_hint_faults", c.numa_hint_faults),
                ] {
                    if let Some(v) = v {
                        self.cgroup_numa
                            .get_or_create(&l(&[("cgroup", c.path.clone()), ("event", k.into())]))
                            .inc_by(v);
                    }
                }
            }
        }
        if self.process_limit > 0 {
            self.processes(s);
        }
        self.cache.update(s, &self.topo, self.process_limit);
        self.sched.update(&mut self.registry, s);
        if let Some(t) = &s.processes {
            let (mut hit, mut miss) = (0.0, 0.0);
            for r in &t.rows {
                if let Some(h) = r.preferred_hit {
                    let run = r.cpu_time_ns as f64 / 1e9;
                    hit += h * run;
                    miss += (1.0 - h) * run;
                }
            }
            self.preferred
                .get_or_create(&l(&[("result", "hit".into())]))
                .inc_by(hit);
            self.preferred
                .get_or_create(&l(&[("result", "miss".into())]))
                .inc_by(miss);
        }
        for src in &s.sources {
            let labels = l(&[("source", src.name.clone())]);
            self.source_up
                .get_or_create(&labels)
                .set(if src.state == SourceState::Absent {
                    0.0
                } else {
                    1.0
                });
            self.source_degraded.get_or_create(&labels).set(
                if src.state == SourceState::Degraded {
                    1.0
                } else {
                    0.0
                },
            );
        }
    }

    /// The knobs' current values: a number where the value is one (features 1/0), and
    /// the text as a label (the old label set dropped when the value changes).
    pub fn knobs(&mut self, values: &BTreeMap<String, String>) {
        for (id, v) in values {
            let num = match v.as_str() {
                "on" => Some(1.0),
                "off" => Some(0.0),
                x => x.parse::<f64>().ok(),
            };
            let k = l(&[("knob", id.clone())]);
            match num {
                Some(n) => {
                    self.knob_value.get_or_create(&k).set(n);
                }
                None => {
                    self.knob_value.remove(&k);
                }
            }
            let info = l(&[("knob", id.clone()), ("value", v.clone())]);
            if let Some(old) = self.knob_shown.insert(id.clone(), info.clone())
                && old != info
            {
                self.knob_info.remove(&old);
            }
            self.knob_info.get_or_create(&info).set(1.0);
        }
    }

    /// One tick of the pipeline: the snapshot's counts, the advisor's judgement (the
    /// lines it gave and what it holds) and, when re-read, the knob values.
    pub fn tick(&mut self, t: &crate::run::pipeline::Tick) {
        self.update(&t.snap);
        self.findings.update(&t.lines, &t.held);
        if let Some(v) = &t.knobs.values {
            self.knobs(v);
        }
    }

    /// The OpenMetrics text of every series.
    pub fn openmetrics(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut s, &self.registry);
        s
    }
}

/// The classic Prometheus text format (0.0.4) of an OpenMetrics text: the `# EOF` and
/// `# UNIT` lines go, a counter's HELP and TYPE name its `_total` samples.
pub fn classic(om: &str) -> String {
    let counters: Vec<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
