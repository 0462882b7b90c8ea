//! Every Prometheus series `serve` shows, declared once ([`S`] and its [`Def`]): name,
//! help, type, unit, labels, how many of it every host shows, and what feeds it — a
//! snapshot field ([`Feed::Snapshot`]), the topology ([`Feed::Topology`]) or code of its
//! own that keeps state ([`Feed::Own`]: knobs, the busiest processes, findings, resctrl,
//! sched_ext). Registration, the update of the snapshot-fed series, the count of fixed
//! series ([`fixed_series`]) and the check of docs/metrics.md's list all read it.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::findings::Kind;
use crate::snapshot::{Cause, Precision, Snapshot, SourceState};
use crate::topology::{Distance, Topology};

pub type Labels = Vec<(String, String)>;

/// How a series' value behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Only grows (Prometheus takes its rate): each feed adds to it.
    Counter,
    /// A level: each feed sets it.
    Gauge,
}

/// A series' base unit (the name's suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseUnit {
    None,
    Seconds,
    Bytes,
}

/// Where a series' values come from.
#[derive(Clone, Copy)]
pub enum Feed {
    /// Each snapshot: the values `put` (added to a counter, set on a gauge).
    Snapshot(fn(&Snapshot, &Topology, &mut Out)),
    /// The topology, once at the start.
    Topology(fn(&Topology, &mut Out)),
    /// Code of its own, which keeps state (series come and go).
    Own,
}

/// When a series is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// From the start.
    Always,
    /// At the first snapshot that has sched_ext (a kernel without it shows none).
    SchedExt,
    /// At the first snapshot that has cache-aware scheduling (7.2+; others show none).
    CacheAware,
    /// With the flight recorder on (`--flight-recorder`).
    FlightRecorder,
    /// At the first snapshot that counts wakeups between processes (`--wakeups`).
    Wakeups,
}

/// One series.
#[derive(Clone, Copy)]
pub struct Def {
    /// Without the `llctop_` prefix, the unit and `_total`.
    pub name: &'static str,
    pub help: &'static str,
    pub ty: Type,
    pub unit: BaseUnit,
    pub labels: &'static [&'static str],
    /// How many samples of it every host shows, whatever its size (0: it depends on
    /// the machine, the knobs, the processes…).
    pub fixed: usize,
    pub feed: Feed,
    pub group: Group,
}

impl Def {
    /// The name a scrape shows (OpenMetrics: a counter's samples end in `_total`).
    pub fn full_name(&self) -> String {
        let unit = match self.unit {
            BaseUnit::None => "",
            BaseUnit::Seconds => "_seconds",
            BaseUnit::Bytes => "_bytes",
        };
        let total = if self.ty == Type::Counter {
            "_total"
        } else {
            ""
        };
        format!("llctop_{}{unit}{total}", self.name)
    }

    /// Label pairs from values in the order of [`Def::labels`].
    pub fn labels(&self, values: &[&str]) -> Labels {
        self.labels
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

/// The values a feed gives: label values (in the order of the def's labels) and a value.
#[derive(Default)]
pub struct Out(pub Vec<(Vec<String>, f64)>);

impl Out {
    pub fn put(&mut self, values: &[&str], v: f64) {
        self.0
            .push((values.iter().map(|s| s.to_string()).collect(), v));
    }
}

/// A registered series: integer counts, seconds (or any fraction), levels; with labels
/// or without.
#[derive(Clone)]
pub enum Metric {
    Count(Family<Labels, Counter>),
    Fraction(Family<Labels, Counter<f64, AtomicU64>>),
    Level(Family<Labels, Gauge<f64, AtomicU64>>),
    Count1(Counter),
    Level1(Gauge<f64, AtomicU64>),
}

impl Metric {
    fn of(d: &Def) -> Metric {
        match (d.ty, d.labels.is_empty(), d.unit) {
            (Type::Counter, true, _) => Metric::Count1(Counter::default()),
            (Type::Counter, false, BaseUnit::Seconds) => Metric::Fraction(Family::default()),
            (Type::Counter, false, _) => Metric::Count(Family::default()),
            (Type::Gauge, true, _) => Metric::Level1(Gauge::default()),
            (Type::Gauge, false, _) => Metric::Level(Family::default()),
        }
    }

    fn register(&self, r: &mut Registry, d: &Def) {
        let unit = match d.unit {
            BaseUnit::None => None,
            BaseUnit::Seconds => Some(Unit::Seconds),
            BaseUnit::Bytes => Some(Unit::Bytes),
        };
        macro_rules! reg {
            ($m:expr) => {
                match unit {
                    Some(u) => r.register_with_unit(d.name, d.help, u, $m.clone()),
                    None => r.register(d.name, d.help, $m.clone()),
                }
            };
        }
        match self {
            Metric::Count(m) => reg!(m),
            Metric::Fraction(m) => reg!(m),
            Metric::Level(m) => reg!(m),
            Metric::Count1(m) => reg!(m),
            Metric::Level1(m) => reg!(m),
        }
    }

    /// A counter grows by `v` (whole counts: rounded), a gauge is set to it.
    pub fn put(&self, labels: &Labels, v: f64) {
        let whole = if v.is_finite() && v > 0.0 {
            v.round() as u64
        } else {
            0
        };
        match self {
            Metric::Count(m) => {
                m.get_or_create(labels).inc_by(whole);
            }
            Metric::Fraction(m) => {
                if v.is_finite() && v > 0.0 {
                    m.get_or_create(labels).inc_by(v);
                } else {
                    let _ = m.get_or_create(labels);
                }
            }
            Metric::Level(m) => {
                m.get_or_create(labels).set(v);
            }
            Metric::Count1(m) => {
                m.inc_by(whole);
            }
            Metric::Level1(m) => {
                m.set(v);
            }
        }
    }

    /// The series of these labels goes from the scrape.
    pub fn remove(&self, labels: &Labels) {
        match self {
            Metric::Count(m) => {
                m.remove(labels);
            }
            Metric::Fraction(m) => {
                m.remove(labels);
            }
            Metric::Level(m) => {
                m.remove(labels);
            }
            Metric::Count1(_) | Metric::Level1(_) => {}
        }
    }
}

/// Every series, by name in the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum S {
    CpuBusy,
    LlcBusy,
    LlcWait,
    LlcIn,
    LlcOut,
    LlcCpus,
    LlcRunnable,
    LlcCasQueued,
    LlcCasQueuedPref,
    Migrations,
    MigrationsExact,
    Causes,
    Ctx,
    CtxUnseen,
    Forks,
    ProcLost,
    LbAttempts,
    LbFailed,
    LbGained,
    NumaEvents,
    CgroupNuma,
    Preferred,
    SourceUp,
    SourceDegraded,
    KnobValue,
    Knob,
    Snapshots,
    Last,
    Interval,
    ProcCpu,
    ProcXllc,
    ProcLimit,
    ProcDropped,
    Build,
    FindingActive,
    FindingsFired,
    LlcOccupancy,
    LlcCapacity,
    MemoryBandwidth,
    ResctrlUnread,
    ProcOccupancy,
    ProcBandwidth,
    SchedExtEnabled,
    SchedExt,
    SchedExtRejected,
    CacheAwareEnabled,
    CacheAwareActive,
    Wakeups,
    FlightBytes,
    FlightSegments,
    FlightOldest,
    FlightDumps,
    FlightState,
}

/// The severities findings are exported at.
pub const SEVERITIES: [crate::findings::Severity; 3] = [
    crate::findings::Severity::Info,
    crate::findings::Severity::Warning,
    crate::findings::Severity::Critical,
];

/// The kinds findings are exported for (blind spots are the source series' business).
pub fn finding_kinds() -> impl Iterator<Item = Kind> {
    Kind::ALL.into_iter().filter(|k| *k != Kind::BlindSpots)
}

/// The LLC's labels (`llc`, `node`; `-` without a node).
pub fn llc_values(topo: &Topology, id: u32) -> [String; 2] {
    let node = topo
        .llcs
        .iter()
        .find(|x| x.id == id)
        .and_then(|x| x.node)
        .map_or("-".into(), |n| n.to_string());
    [id.to_string(), node]
}

fn llc_put(o: &mut Out, topo: &Topology, id: u32, v: Option<f64>) {
    if let Some(v) = v {
        let [a, b] = llc_values(topo, id);
        o.put(&[&a, &b], v);
    }
}

const LLC: &[&str] = &["llc", "node"];
const PID: &[&str] = &["pid", "comm"];
const LB: &[&str] = &["level", "domain", "type"];

/// The three balance types of a domain, by label.
fn balance(s: &Snapshot, o: &mut Out, field: fn(&crate::snapshot::LbStats) -> u64) {
    for d in s.balance.iter().flat_map(|b| &b.domains) {
        let level = d.level.to_string();
        let name = d.name.clone().unwrap_or_else(|| "?".into());
        for (kind, st) in [
            ("busy", &d.busy),
            ("idle", &d.idle),
            ("newidle", &d.newidle),
        ] {
            o.put(&[&level, &name, kind], field(st) as f64);
        }
    }
}

fn source_state(s: &Snapshot, o: &mut Out, on: fn(SourceState) -> bool) {
    for src in &s.sources {
        o.put(&[&src.name], if on(src.state) { 1.0 } else { 0.0 });
    }
}

impl S {
    pub const ALL: [S; 53] = [
        S::CpuBusy,
        S::LlcBusy,
        S::LlcWait,
        S::LlcIn,
        S::LlcOut,
        S::LlcCpus,
        S::LlcRunnable,
        S::LlcCasQueued,
        S::LlcCasQueuedPref,
        S::Migrations,
        S::MigrationsExact,
        S::Causes,
        S::Ctx,
        S::CtxUnseen,
        S::Forks,
        S::ProcLost,
        S::LbAttempts,
        S::LbFailed,
        S::LbGained,
        S::NumaEvents,
        S::CgroupNuma,
        S::Preferred,
        S::SourceUp,
        S::SourceDegraded,
        S::KnobValue,
        S::Knob,
        S::Snapshots,
        S::Last,
        S::Interval,
        S::ProcCpu,
        S::ProcXllc,
        S::ProcLimit,
        S::ProcDropped,
        S::Build,
        S::FindingActive,
        S::FindingsFired,
        S::LlcOccupancy,
        S::LlcCapacity,
        S::MemoryBandwidth,
        S::ResctrlUnread,
        S::ProcOccupancy,
        S::ProcBandwidth,
        S::SchedExtEnabled,
        S::SchedExt,
        S::SchedExtRejected,
        S::CacheAwareEnabled,
        S::CacheAwareActive,
        S::Wakeups,
        S::FlightBytes,
        S::FlightSegments,
        S::FlightOldest,
        S::FlightDumps,
        S::FlightState,
    ];

    /// The series' definition.
    pub fn def(self) -> Def {
        use BaseUnit::{Bytes, Seconds};
        use Type::{Counter as C, Gauge as G};
        fn d(
            name: &'static str,
            help: &'static str,
            ty: Type,
            labels: &'static [&'static str],
            feed: Feed,
        ) -> Def {
            Def {
                name,
                help,
                ty,
                unit: BaseUnit::None,
                labels,
                fixed: 0,
                feed,
                group: Group::Always,
            }
        }
        fn snap(f: fn(&Snapshot, &Topology, &mut Out)) -> Feed {
            Feed::Snapshot(f)
        }
        match self {
            S::CpuBusy => Def {
                unit: Seconds,
                ..d(
                    "cpu_busy",
                    "Time a CPU was not idle (user, nice, system, irq, softirq, steal)",
                    C,
                    &["cpu", "llc"],
                    snap(|s, t, o| {
                        let secs = s.time.interval_secs();
                        for c in &s.cpus {
                            if let Some(b) = c.busy {
                                let llc = t.llc_of(c.cpu).map_or("-".into(), |x| x.to_string());
                                o.put(&[&c.cpu.to_string(), &llc], b * secs);
                            }
                        }
                    }),
                )
            },
            S::LlcBusy => Def {
                unit: Seconds,
                ..d(
                    "llc_busy",
                    "CPU time the LLC's CPUs were not idle (rate / llctop_llc_cpus = busy fraction)",
                    C,
                    LLC,
                    snap(|s, t, o| {
                        let secs = s.time.interval_secs();
                        for g in &s.llcs {
                            llc_put(o, t, g.id, g.busy.map(|b| b * f64::from(g.cpus) * secs));
                        }
                    }),
                )
            },
            S::LlcWait => Def {
                unit: Seconds,
                ..d(
                    "llc_run_queue_wait",
                    "Time tasks spent runnable but waiting on the LLC's CPUs",
                    C,
                    LLC,
                    snap(|s, t, o| {
                        for g in &s.llcs {
                            llc_put(o, t, g.id, g.rq_wait_ns.map(|w| w as f64 / 1e9));
                        }
                    }),
                )
            },
            S::LlcIn => d(
                "llc_migrations_in",
                "Task migrations onto the LLC's CPUs from other LLCs",
                C,
                LLC,
                snap(|s, t, o| {
                    for g in &s.llcs {
                        llc_put(o, t, g.id, g.migrations_in.map(|x| x as f64));
                    }
                }),
            ),
            S::LlcOut => d(
                "llc_migrations_out",
                "Task migrations from the LLC's CPUs to other LLCs",
                C,
                LLC,
                snap(|s, t, o| {
                    for g in &s.llcs {
                        llc_put(o, t, g.id, g.migrations_out.map(|x| x as f64));
                    }
                }),
            ),
            S::LlcCpus => d(
                "llc_cpus",
                "Online CPUs of the LLC",
                G,
                LLC,
                Feed::Topology(|t, o| {
                    for llc in &t.llcs {
                        llc_put(o, t, llc.id, Some(llc.cpus.len() as f64));
                    }
                }),
            ),
            S::LlcRunnable => d(
                "llc_runnable",
                "Runnable tasks on the LLC's CPUs at the last snapshot",
                G,
                LLC,
                snap(|s, t, o| {
                    for g in &s.llcs {
                        llc_put(o, t, g.id, g.runnable.map(f64::from));
                    }
                }),
            ),
            S::LlcCasQueued => d(
                "llc_cache_aware_queued",
                "Tasks with a kernel-preferred LLC queued on the LLC's CPUs at the last snapshot (the run queues' nr_llc_running; 7.2+ cache-aware scheduling, BPF source)",
                G,
                LLC,
                snap(|s, t, o| {
                    for g in &s.llcs {
                        llc_put(o, t, g.id, g.cas_queued.map(f64::from));
                    }
                }),
            ),
            S::LlcCasQueuedPref => d(
                "llc_cache_aware_queued_preferred",
                "Of those, the tasks queued on their preferred LLC (the run queues' nr_pref_llc_running)",
                G,
                LLC,
                snap(|s, t, o| {
                    for g in &s.llcs {
                        llc_put(o, t, g.id, g.cas_queued_pref.map(f64::from));
                    }
                }),
            ),
            S::Migrations => Def {
                fixed: Distance::ALL.len(),
                ..d(
                    "migrations",
                    "Task migrations by distance (smt, llc, xllc, xnode)",
                    C,
                    &["distance"],
                    snap(|s, _, o| {
                        if let Some(m) = &s.migrations {
                            for x in Distance::ALL {
                                o.put(&[x.label()], m.by_distance.get(x) as f64);
                            }
                        }
                    }),
                )
            },
            S::MigrationsExact => Def {
                fixed: 1,
                ..d(
                    "migrations_exact",
                    "1 when migrations are counted in the kernel (BPF), 0 when sampled from /proc (a lower bound)",
                    G,
                    &[],
                    snap(|s, _, o| {
                        if let Some(m) = &s.migrations {
                            o.put(
                                &[],
                                if m.precision == Precision::Exact {
                                    1.0
                                } else {
                                    0.0
                                },
                            );
                        }
                    }),
                )
            },
            S::Causes => Def {
                fixed: Cause::ALL.len(),
                ..d(
                    "migrations_by_cause",
                    "Task migrations by why the task moved",
                    C,
                    &["cause"],
                    snap(|s, _, o| {
                        if let Some(c) = s.migrations.as_ref().and_then(|m| m.by_cause.as_ref()) {
                            for x in Cause::ALL {
                                o.put(&[x.label()], c.get(x) as f64);
                            }
                        }
                    }),
                )
            },
            S::Ctx => Def {
                fixed: 1,
                ..d(
                    "context_switches",
                    "Context switches, all CPUs",
                    C,
                    &[],
                    snap(|s, _, o| {
                        if let Some(c) = s.system.ctx_switches {
                            o.put(&[], c as f64);
                        }
                    }),
                )
            },
            S::CtxUnseen => Def {
                fixed: 1,
                ..d(
                    "context_switches_unseen",
                    "Context switches the kernel made without its sched_switch tracepoint (found by the BPF source): the run-queue waits they ended are missing",
                    C,
                    &[],
                    snap(|s, _, o| {
                        o.put(
                            &[],
                            s.cpus.iter().map(|c| c.switches_unseen).sum::<u64>() as f64,
                        );
                    }),
                )
            },
            S::Forks => Def {
                fixed: 1,
                ..d(
                    "forks",
                    "Tasks created",
                    C,
                    &[],
                    snap(|s, _, o| {
                        if let Some(f) = s.system.forks {
                            o.put(&[], f as f64);
                        }
                    }),
                )
            },
            S::ProcLost => Def {
                fixed: 1,
                ..d(
                    "process_updates_dropped",
                    "Per-process updates the BPF program could not store (a per-process map full): counts missing from the process figures",
                    C,
                    &[],
                    snap(|s, _, o| {
                        if let Some(t) = &s.processes {
                            o.put(&[], t.dropped as f64);
                        }
                    }),
                )
            },
            S::LbAttempts => d(
                "load_balance_attempts",
                "Load-balance attempts per domain level and type (busy, idle, newidle), /proc/schedstat",
                C,
                LB,
                snap(|s, _, o| balance(s, o, |x| x.count)),
            ),
            S::LbFailed => d(
                "load_balance_failed",
                "Load-balance attempts that found an imbalance but moved nothing",
                C,
                LB,
                snap(|s, _, o| balance(s, o, |x| x.failed)),
            ),
            S::LbGained => d(
                "load_balance_tasks_gained",
                "Tasks pulled by load balancing",
                C,
                LB,
                snap(|s, _, o| balance(s, o, |x| x.gained)),
            ),
            S::NumaEvents => d(
                "numa_events",
                "NUMA balancing events of /proc/vmstat (numa_hint_faults, numa_pages_migrated, ...)",
                C,
                &["event"],
                snap(|s, _, o| {
                    for (k, v) in s.numa.iter().flat_map(|n| &n.vmstat) {
                        o.put(&[k], *v as f64);
                    }
                }),
            ),
            S::CgroupNuma => d(
                "cgroup_numa_events",
                "NUMA balancing events per cgroup (memory.stat)",
                C,
                &["cgroup", "event"],
                snap(|s, _, o| {
                    for c in s.numa.iter().flat_map(|n| &n.cgroups) {
                        for (k, v) in [
                            ("numa_pages_migrated", c.numa_pages_migrated),
                            ("numa_pte_updates", c.numa_pte_updates),
                            ("numa_hint_faults", c.numa_hint_faults),
                        ] {
                            if let Some(v) = v {
                                o.put(&[&c.path, k], v as f64);
                            }
                        }
                    }
                }),
            ),
            S::Preferred => Def {
                unit: Seconds,
                fixed: 2,
                ..d(
                    "preferred_llc_runtime",
                    "Runtime of the top processes on their preferred LLC (result=hit) or elsewhere (miss)",
                    C,
                    &["result"],
                    snap(|s, _, o| {
                        let Some(t) = &s.processes else {
                            return;
                        };
                        let (mut hit, mut miss) = (0.0, 0.0);
                        for r in &t.rows {
                            if let Some(h) = r.preferred_hit {
                                let run = r.cpu_time_ns as f64 / 1e9;
                                hit += h * run;
                                miss += (1.0 - h) * run;
                            }
                        }
                        o.put(&["hit"], hit);
                        o.put(&["miss"], miss);
                    }),
                )
            },
            S::SourceUp => d(
                "source_up",
                "1 when the source gives data (active or degraded), 0 when absent",
                G,
                &["source"],
                snap(|s, _, o| source_state(s, o, |x| x != SourceState::Absent)),
            ),
            S::SourceDegraded => d(
                "source_degraded",
                "1 when the source gives only part of its data; the reason is a label",
                G,
                &["source"],
                snap(|s, _, o| source_state(s, o, |x| x == SourceState::Degraded)),
            ),
            S::KnobValue => d(
                "knob_value",
                "A scheduler knob's value where it is a number (features: 1 on, 0 off)",
                G,
                &["knob"],
                Feed::Own,
            ),
            S::Knob => d(
                "knob",
                "A scheduler knob's value as text (always 1)",
                G,
                &["knob", "value"],
                Feed::Own,
            ),
            S::Snapshots => Def {
                fixed: 1,
                ..d(
                    "snapshots",
                    "Snapshots taken",
                    C,
                    &[],
                    snap(|_, _, o| o.put(&[], 1.0)),
                )
            },
            S::Last => Def {
                unit: Seconds,
                fixed: 1,
                ..d(
                    "last_snapshot_timestamp",
                    "Wall clock at the end of the last snapshot",
                    G,
                    &[],
                    snap(|s, _, o| o.put(&[], s.time.unix_ns as f64 / 1e9)),
                )
            },
            S::Interval => Def {
                unit: Seconds,
                fixed: 1,
                ..d(
                    "interval",
                    "Length of the last snapshot's interval",
                    G,
                    &[],
                    snap(|s, _, o| o.put(&[], s.time.interval_secs())),
                )
            },
            S::ProcCpu => Def {
                unit: Seconds,
                ..d(
                    "process_cpu",
                    "CPU time of the busiest processes (--process-series), while they stay among them",
                    C,
                    PID,
                    Feed::Own,
                )
            },
            S::ProcXllc => d(
                "process_cross_llc_migrations",
                "Cross-LLC migrations of the busiest processes (--process-series)",
                C,
                PID,
                Feed::Own,
            ),
            S::ProcLimit => Def {
                fixed: 1,
                ..d(
                    "process_series_limit",
                    "How many processes get series (--process-series; 0: none)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::ProcDropped => Def {
                fixed: 1,
                ..d(
                    "process_series_dropped",
                    "Processes of the last snapshot left without series by the limit",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::Build => Def {
                fixed: 1,
                ..d(
                    "build_info",
                    "llctop's version and the kernel release it runs on (always 1)",
                    G,
                    &["version", "kernel"],
                    Feed::Own,
                )
            },
            S::FindingActive => Def {
                fixed: finding_kinds().count() * SEVERITIES.len(),
                ..d(
                    "finding_active",
                    "1 while the advisor holds a finding of this kind at this severity (docs/advisor.md), else 0",
                    G,
                    &["kind", "severity"],
                    Feed::Own,
                )
            },
            S::FindingsFired => Def {
                fixed: finding_kinds().count() * SEVERITIES.len(),
                ..d(
                    "findings_fired",
                    "Findings of this kind that fired at this severity",
                    C,
                    &["kind", "severity"],
                    Feed::Own,
                )
            },
            S::LlcOccupancy => Def {
                unit: Bytes,
                ..d(
                    "llc_occupancy",
                    "L3 bytes held for all resctrl groups in the LLC's L3 (its node's part with sub-NUMA clustering), resctrl llc_occupancy",
                    G,
                    LLC,
                    Feed::Own,
                )
            },
            S::LlcCapacity => Def {
                unit: Bytes,
                ..d(
                    "llc_capacity",
                    "The LLC's share of its L3 (the cache size, divided among the nodes sharing it)",
                    G,
                    LLC,
                    Feed::Own,
                )
            },
            S::MemoryBandwidth => Def {
                unit: Bytes,
                ..d(
                    "memory_bandwidth",
                    "Bytes between the LLC's L3 and memory, by locality (local: its node's memory; remote: the rest; unknown: a kernel without mbm_local_bytes), resctrl mbm_*_bytes",
                    C,
                    &["llc", "node", "locality"],
                    Feed::Own,
                )
            },
            S::ResctrlUnread => d(
                "resctrl_readings_unread",
                "resctrl readings that gave no figure, by reason (unavailable, unassigned, error, reset, baseline, unreadable, implausible)",
                C,
                &["reason"],
                Feed::Own,
            ),
            S::ProcOccupancy => Def {
                unit: Bytes,
                ..d(
                    "process_l3_occupancy",
                    "L3 bytes held for a process llctop monitors in a resctrl group of its own (--cache-top, --cache-pid; with --process-series)",
                    G,
                    PID,
                    Feed::Own,
                )
            },
            S::ProcBandwidth => Def {
                unit: Bytes,
                ..d(
                    "process_memory_bandwidth",
                    "Bytes between the L3s and memory for a process llctop monitors, by locality (with --process-series)",
                    C,
                    &["pid", "comm", "locality"],
                    Feed::Own,
                )
            },
            S::SchedExtEnabled => Def {
                group: Group::SchedExt,
                ..d(
                    "sched_ext_enabled",
                    "1 while a sched_ext BPF scheduler is enabled (/sys/kernel/sched_ext/state), 0 while the fair scheduler (EEVDF) runs everything",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::SchedExt => Def {
                group: Group::SchedExt,
                ..d(
                    "sched_ext",
                    "The scheduler in charge as labels (scheduler: eevdf or the BPF scheduler's short name; ops: root/ops; scope: all or ext_only), always 1",
                    G,
                    &["scheduler", "ops", "scope"],
                    Feed::Own,
                )
            },
            S::SchedExtRejected => Def {
                group: Group::SchedExt,
                ..d(
                    "sched_ext_rejected_tasks",
                    "Tasks the running BPF scheduler refused since it was enabled (/sys/kernel/sched_ext/nr_rejected; 0 while none runs)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::CacheAwareEnabled => Def {
                group: Group::CacheAware,
                ..d(
                    "cache_aware_enabled",
                    "1 while /sys/kernel/debug/sched/llc_balancing/enabled asks for cache-aware scheduling (the user's request; it reads 1 where the kernel cannot act on it)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::CacheAwareActive => Def {
                group: Group::CacheAware,
                ..d(
                    "cache_aware_active",
                    "1 while cache-aware scheduling runs: enabled, and some sched-domain partition holds two or more CPUs of one LLC and CPUs outside it (the kernel's sched_cache_present rule)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::Wakeups => Def {
                group: Group::Wakeups,
                ..d(
                    "wakeups",
                    "Wakeups user processes made of other processes, counted to a pair (paired); between threads of one process (within); made in interrupt context (interrupt: no process is the waker); with a kernel thread on either side (other); lost to a full pair map (lost) — --wakeups, BPF source",
                    C,
                    &["kind"],
                    snap(|s, _, o| {
                        if let Some(w) = &s.wakeups {
                            for (kind, n) in [
                                ("paired", w.paired),
                                ("within", w.within),
                                ("interrupt", w.interrupt),
                                ("other", w.other),
                                ("lost", w.lost),
                            ] {
                                o.put(&[kind], n as f64);
                            }
                        }
                    }),
                )
            },
            S::FlightBytes => Def {
                group: Group::FlightRecorder,
                unit: Bytes,
                ..d(
                    "flight_recorder",
                    "Bytes the flight recorder's kept history takes on disk (its segments and the one being written; at most --max-size)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::FlightSegments => Def {
                group: Group::FlightRecorder,
                ..d(
                    "flight_recorder_segments",
                    "Segments the flight recorder keeps (the one being written included)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::FlightOldest => Def {
                group: Group::FlightRecorder,
                unit: Seconds,
                ..d(
                    "flight_recorder_oldest",
                    "Age of the oldest snapshot the flight recorder keeps (what a dump now would reach back to)",
                    G,
                    &[],
                    Feed::Own,
                )
            },
            S::FlightDumps => Def {
                group: Group::FlightRecorder,
                ..d(
                    "flight_recorder_dumps",
                    "Dumps of the flight recorder written, by reason (signal: SIGUSR1, http: POST /flight-recorder/dump, warning or critical: a finding that fired)",
                    C,
                    &["reason"],
                    Feed::Own,
                )
            },
            S::FlightState => Def {
                group: Group::FlightRecorder,
                ..d(
                    "flight_recorder_state",
                    "1 for the flight recorder's state (recording, disk_full: nothing kept until there is room, write_error: the next segment tries again), 0 for the others",
                    G,
                    &["state"],
                    Feed::Own,
                )
            },
        }
    }
}

/// The series `serve` shows whatever the machine's size, with the BPF source and no
/// `--process-series` (README, "Fleet-wide", has the whole count): the sum of the
/// table's [`Def::fixed`]. sched_ext's are apart: only kernels that have it show them.
pub fn fixed_series() -> usize {
    S::ALL.iter().map(|s| s.def().fixed).sum()
}

/// Every series' metric, registered (those of [`Group::Always`]) in one registry.
pub struct Metrics {
    m: Vec<(S, Metric)>,
}

impl Metrics {
    pub fn register(r: &mut Registry) -> Metrics {
        let m = S::ALL
            .iter()
            .map(|&s| {
                let d = s.def();
                let m = Metric::of(&d);
                if d.group == Group::Always {
                    m.register(r, &d);
                }
                (s, m)
            })
            .collect();
        Metrics { m }
    }

    /// Register the series of a group that comes later.
    pub fn register_group(&self, r: &mut Registry, g: Group) {
        for (s, m) in &self.m {
            let d = s.def();
            if d.group == g {
                m.register(r, &d);
            }
        }
    }

    pub fn get(&self, s: S) -> &Metric {
        // S::ALL is in declaration order, so the index is the discriminant.
        &self.m[s as usize].1
    }

    /// Put values on a series by label values.
    pub fn put(&self, s: S, values: &[&str], v: f64) {
        self.get(s).put(&s.def().labels(values), v);
    }

    /// Every series fed from a snapshot, fed.
    pub fn snapshot(&self, snap: &Snapshot, topo: &Topology) {
        for (s, m) in &self.m {
            let d = s.def();
            if let Feed::Snapshot(f) = d.feed {
                let mut o = Out::default();
                f(snap, topo, &mut o);
                for (values, v) in o.0 {
                    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                    m.put(&d.labels(&refs), v);
                }
            }
        }
    }

    /// Every series fed from the topology, set.
    pub fn topology(&self, topo: &Topology) {
        for (s, m) in &self.m {
            let d = s.def();
            if let Feed::Topology(f) = d.feed {
                let mut o = Out::default();
                f(topo, &mut o);
                for (values, v) in o.0 {
                    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                    m.put(&d.labels(&refs), v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_declaration_order_and_names_are_unique() {
        for (i, s) in S::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i, "{s:?}");
        }
        let mut names: Vec<String> = S::ALL.iter().map(|s| s.def().full_name()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn feeds_give_as_many_values_as_labels() {
        let topo = crate::topology::synthetic(2, 2, 2);
        let mut snap = crate::findings::testing::snap(&topo, 1, 0.5);
        snap.migrations = Some(crate::snapshot::Migrations {
            by_cause: Some(Default::default()),
            ..Default::default()
        });
        for s in S::ALL {
            let d = s.def();
            let mut o = Out::default();
            match d.feed {
                Feed::Snapshot(f) => f(&snap, &topo, &mut o),
                Feed::Topology(f) => f(&topo, &mut o),
                Feed::Own => continue,
            }
            for (values, _) in &o.0 {
                assert_eq!(values.len(), d.labels.len(), "{}", d.name);
            }
        }
    }

    /// docs/metrics.md lists every series by its full name, with its labels in the
    /// same row.
    #[test]
    fn docs_list_every_series_with_its_labels() {
        let doc = include_str!("../../../docs/metrics.md");
        let section = doc
            .split("## Prometheus")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .unwrap_or_default();
        for s in S::ALL {
            let d = s.def();
            let name = format!("`{}`", d.full_name());
            let row = section
                .lines()
                .find(|l| l.starts_with('|') && l.contains(&name))
                .unwrap_or_else(|| panic!("docs/metrics.md has no row for {name}"));
            let labels = row.split('|').nth(2).unwrap_or_default();
            for l in d.labels {
                assert!(
                    labels.contains(&format!("`{l}`")),
                    "{name}: label {l} not in its row: {row}"
                );
            }
            if d.labels.is_empty() {
                assert_eq!(labels.trim(), "–", "{name} has no labels: {row}");
            }
        }
    }
}
