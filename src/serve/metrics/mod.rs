//! The exporter's metrics: every snapshot folded into Prometheus series with
//! prometheus-client (OpenMetrics text), after node_exporter's conventions — the
//! `llctop_` prefix, base units (seconds), cumulative `_total` counters that Prometheus
//! turns into rates (never per-second gauges), labels `cpu`, `llc`, `node`, `distance`,
//! `cause`, `level`, `domain`, `type`, `cgroup`, `source`, `knob`, `locality`, `reason`.
//! Pure over snapshots: unit-tested without a kernel; `serve` owns the HTTP side. Each
//! series is declared once in [`series`]; docs/metrics.md ("Prometheus") lists them (a
//! test checks it names each with its labels).

use std::collections::BTreeMap;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

mod cache;
mod findings;
mod flight;
mod sched;
pub mod series;

pub use series::fixed_series;
use series::{Labels, Metrics, S};

use crate::snapshot::Snapshot;
use crate::topology::Topology;

/// The series, registered once from the table ([`series::S`]); [`Exporter::update`] adds
/// each snapshot's counts, the rest is fed by the code that keeps their state here.
pub struct Exporter {
    registry: Registry,
    topo: Topology,
    m: Metrics,
    /// The labels of the `llctop_build_info` shown.
    build_shown: Labels,
    /// The knob info series shown now, to drop when a value changes.
    knob_shown: BTreeMap<String, Labels>,
    /// Per-process series for at most this many processes (the busiest of each
    /// snapshot); 0: none. Opt-in: a process's pid is a label, so series come and go.
    process_limit: usize,
    /// pid → the labels of its series shown now (dropped when it leaves the top or exits:
    /// nothing is kept for a process that is gone).
    proc_shown: BTreeMap<u32, Labels>,
    /// resctrl's L3 occupancy and memory bandwidth.
    cache: cache::CacheSeries,
    /// Which scheduler is in charge (sched_ext).
    sched: sched::SchedSeries,
    /// The flight recorder's (when it is on).
    flight: flight::FlightSeries,
    /// The wakeup series are shown (from the first snapshot that counts them).
    wakeups_registered: bool,
}

impl Exporter {
    pub fn new(topo: &Topology) -> Exporter {
        let mut registry = Registry::with_prefix("llctop");
        let m = Metrics::register(&mut registry);
        m.topology(topo);
        findings::start(&m);
        let mut e = Exporter {
            registry,
            topo: topo.clone(),
            m,
            build_shown: Labels::new(),
            knob_shown: BTreeMap::new(),
            process_limit: 0,
            proc_shown: BTreeMap::new(),
            cache: cache::CacheSeries::default(),
            sched: sched::SchedSeries::default(),
            flight: flight::FlightSeries::default(),
            wakeups_registered: false,
        };
        e.set_kernel(None);
        e
    }

    /// The kernel release `llctop_build_info` names (`unknown` until said).
    pub fn with_kernel(mut self, kernel: Option<&str>) -> Exporter {
        self.set_kernel(kernel);
        self
    }

    fn set_kernel(&mut self, kernel: Option<&str>) {
        let build = self.m.get(S::Build);
        build.remove(&self.build_shown);
        self.build_shown = S::Build
            .def()
            .labels(&[env!("CARGO_PKG_VERSION"), kernel.unwrap_or("unknown")]);
        build.put(&self.build_shown, 1.0);
    }

    /// Give per-process series to at most `n` processes (the busiest of each snapshot).
    pub fn with_process_series(mut self, n: usize) -> Exporter {
        self.process_limit = n;
        self.m.put(S::ProcLimit, &[], n as f64);
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
        self.m.put(S::ProcDropped, &[], dropped as f64);
        let (cpu, xllc) = (self.m.get(S::ProcCpu), self.m.get(S::ProcXllc));
        let mut shown = BTreeMap::new();
        for r in rows.into_iter().take(self.process_limit) {
            let labels = S::ProcCpu.def().labels(&[&r.pid.to_string(), &r.comm]);
            cpu.put(&labels, r.cpu_time_ns as f64 / 1e9);
            xllc.put(&labels, r.cross_llc_migrations as f64);
            shown.insert(r.pid, labels);
        }
        for (pid, old) in std::mem::replace(&mut self.proc_shown, shown) {
            if self.proc_shown.get(&pid) != Some(&old) {
                cpu.remove(&old);
                xllc.remove(&old);
            }
        }
    }

    /// Fold one snapshot in.
    pub fn update(&mut self, s: &Snapshot) {
        self.m.snapshot(s, &self.topo);
        if self.process_limit > 0 {
            self.processes(s);
        }
        self.cache
            .update(&self.m, s, &self.topo, self.process_limit);
        self.sched.update(&self.m, &mut self.registry, s);
        if s.wakeups.is_some() && !self.wakeups_registered {
            self.wakeups_registered = true;
            self.m
                .register_group(&mut self.registry, series::Group::Wakeups);
        }
    }

    /// The knobs' current values: a number where the value is one (features 1/0), and
    /// the text as a label (the old label set dropped when the value changes).
    pub fn knobs(&mut self, values: &BTreeMap<String, String>) {
        let (value, info) = (self.m.get(S::KnobValue), self.m.get(S::Knob));
        for (id, v) in values {
            let num = match v.as_str() {
                "on" => Some(1.0),
                "off" => Some(0.0),
                x => x.parse::<f64>().ok(),
            };
            let k = S::KnobValue.def().labels(&[id]);
            match num {
                Some(n) => value.put(&k, n),
                None => value.remove(&k),
            }
            let labels = S::Knob.def().labels(&[id, v]);
            if let Some(old) = self.knob_shown.insert(id.clone(), labels.clone())
                && old != labels
            {
                info.remove(&old);
            }
            info.put(&labels, 1.0);
        }
    }

    /// One tick of the pipeline: the snapshot's counts, the advisor's judgement (the
    /// lines it gave and what it holds) and, when re-read, the knob values.
    pub fn tick(&mut self, t: &crate::run::pipeline::Tick) {
        self.update(&t.snap);
        findings::update(&self.m, &t.lines, &t.held);
        if let Some(v) = &t.knobs.values {
            self.knobs(v);
        }
    }

    /// The flight recorder's own figures (registered with the first).
    pub fn flight(&mut self, st: &crate::flight::Status) {
        self.flight.update(&self.m, &mut self.registry, st);
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
