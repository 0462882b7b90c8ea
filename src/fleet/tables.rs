//! The Parquet tables of a recording — schema version [`SCHEMA_VERSION`], defined here
//! once: each table's rows (a piece of a snapshot, or a line of the recording) and its
//! columns, with the JSON field each reads and the section of docs/metrics.md that defines
//! it. docs/fleet-data.md is generated from this ([`markdown`]); a test keeps it so.
//!
//! Every row carries the recording's identity (`host`, `boot_id`, `kernel`, `run_id`,
//! `schema_version`) and, for a snapshot's rows, its `seq` and `time`: files of many hosts
//! concatenate into one table without joins on file names.

use super::columns::{Column, Get, col};
use crate::experiment::{Experiment, Window};
use crate::findings::advisor::FindingLine;
use crate::knobs::session::KnobEvent;
use crate::record::Marker;
use crate::snapshot::{
    CacheMon, Counters, CpuStats, DomainBalance, GroupStats, LbStats, ProcessStats, ResctrlGroup,
    Snapshot,
};

/// The version of the tables' schema, in every row and in each file's metadata. A column
/// added is a new version; a reader of version N reads the columns N had.
pub const SCHEMA_VERSION: u32 = 6;

/// What identifies a recording in every row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ctx {
    pub host: Option<String>,
    pub boot_id: Option<String>,
    pub kernel: Option<String>,
    /// `HOST-START`: the host (or `unknown`) and the recording's start, ns since the
    /// Unix epoch.
    pub run_id: String,
    /// The recording's start, ns since the Unix epoch.
    pub start_unix_ns: u64,
}

impl Ctx {
    pub fn of(h: &crate::record::Header) -> Ctx {
        Ctx {
            host: h.host.clone(),
            boot_id: h.boot_id.clone(),
            kernel: h.kernel.clone(),
            run_id: format!(
                "{}-{}",
                h.host.as_deref().unwrap_or("unknown"),
                h.start_unix_ns
            ),
            start_unix_ns: h.start_unix_ns,
        }
    }
}

// Where each figure is defined (docs/metrics.md's sections; docs/recording-format.md for
// the recording's own lines).
const M_TIME: &str = "metrics.md#time";
const M_CPU: &str = "metrics.md#per-cpu-cpus";
const M_GROUP: &str = "metrics.md#per-llc-and-per-node-llcs-nodes";
const M_COUNTERS: &str = "metrics.md#hardware-counters-cpuscounters-llcscounters-nodescounters";
const M_CACHE: &str =
    "metrics.md#l3-occupancy-and-memory-bandwidth-resctrl-llcscache-nodescache-processesrowscache";
const M_SYSTEM: &str = "metrics.md#system-system";
const M_MIG: &str = "metrics.md#migrations-migrations";
const M_PROC: &str = "metrics.md#processes-processes";
const M_BALANCE: &str = "metrics.md#load-balancing-balance--procschedstat";
const M_NUMA: &str = "metrics.md#numa-numa";
const M_SCX: &str = "metrics.md#the-scheduler-in-charge-sched_ext";
const M_CAS: &str = "metrics.md#cache-aware-scheduling-cache_aware";
const M_SHARED: &str = "metrics.md#shared-memory-sharing";
const M_WAKEUPS: &str = "metrics.md#wakeups-between-processes-wakeups";
const M_FINDINGS: &str = "metrics.md#findings";
const M_EXPERIMENTS: &str = "metrics.md#experiments";
const R_FORMAT: &str = "recording-format.md";

/// Every row's identity.
pub trait Row {
    fn ctx(&self) -> &Ctx;
}

/// A row of a snapshot.
pub trait Timed: Row {
    fn snap(&self) -> &Snapshot;
}

/// A row with hardware counters.
pub trait Counted {
    fn counters(&self) -> Option<&Counters>;
}

/// A row with L3 occupancy and memory bandwidth.
pub trait Cached {
    fn cache(&self) -> Option<&CacheMon>;
}

/// A snapshot's row type: its identity (`ctx`) and snapshot (`s`) fields.
macro_rules! timed_rows {
    ($($row:ident),+ $(,)?) => {$(
        impl Row for $row<'_> {
            fn ctx(&self) -> &Ctx {
                self.ctx
            }
        }
        impl Timed for $row<'_> {
            fn snap(&self) -> &Snapshot {
                self.s
            }
        }
    )+};
}

timed_rows!(
    IntervalRow,
    CpuRow,
    GroupRow,
    ProcessRow,
    MoveRow,
    PairRow,
    ThreadPairRow,
    DomainRow,
    ResctrlRow
);

fn doc(path: &str, at: &str) -> String {
    format!("`{path}` ([{}]({at}))", at.split('#').next().unwrap_or(at))
}

/// The identity columns, first in every table.
fn identity<R: Row>() -> Vec<Column<R>> {
    vec![
        col(
            "host",
            true,
            doc("header.host", R_FORMAT),
            Get::Str(|r: &R| r.ctx().host.clone()),
        ),
        col(
            "boot_id",
            true,
            doc("header.boot_id", R_FORMAT),
            Get::Str(|r: &R| r.ctx().boot_id.clone()),
        ),
        col(
            "kernel",
            true,
            doc("header.kernel", R_FORMAT),
            Get::Str(|r: &R| r.ctx().kernel.clone()),
        ),
        col(
            "run_id",
            false,
            "`HOST-START`: `header.host` (`unknown` when absent) and `header.start_unix_ns`"
                .to_string(),
            Get::Str(|r: &R| Some(r.ctx().run_id.clone())),
        ),
        col(
            "schema_version",
            false,
            "this schema's version".to_string(),
            Get::U32(|_: &R| Some(SCHEMA_VERSION)),
        ),
    ]
}

/// The identity and the snapshot's number and time, first in every snapshot table.
fn interval<R: Timed>() -> Vec<Column<R>> {
    let mut c = identity::<R>();
    c.push(col(
        "seq",
        false,
        doc("seq", R_FORMAT),
        Get::U64(|r: &R| Some(r.snap().seq)),
    ));
    c.push(col(
        "time",
        false,
        doc("time.unix_ns", M_TIME) + ": the end of the interval",
        Get::Time(|r: &R| Some(r.snap().time.unix_ns)),
    ));
    c
}

macro_rules! counter_cols {
    ($($name:ident: $get:ident),+ $(,)?) => {
        /// The hardware counters of a row ([`Counters`]), NULL where absent.
        fn counters<R: Counted>(path: &str) -> Vec<Column<R>> {
            vec![$(
                col(
                    stringify!($name),
                    true,
                    doc(&format!("{path}.{}", stringify!($name)), M_COUNTERS),
                    Get::$get(|r: &R| r.counters().and_then(|c| c.$name)),
                )
            ),+]
        }
    };
}

counter_cols! {
    cycles: U64,
    instructions: U64,
    cache_references: U64,
    cache_misses: U64,
    llc_read_misses: U64,
    l3_lookups: U64,
    l3_misses: U64,
    ipc: F64,
    miss_ratio: F64,
    mpki: F64,
    l3_misses_per_sec: F64,
}

/// L3 occupancy and memory bandwidth of a row ([`CacheMon`]), NULL where absent.
fn cache<R: Cached>(path: &str) -> Vec<Column<R>> {
    vec![
        col(
            "occupancy_bytes",
            true,
            doc(&format!("{path}.occupancy_bytes"), M_CACHE),
            Get::U64(|r: &R| r.cache().and_then(|c| c.occupancy_bytes)),
        ),
        col(
            "mbm_total_bytes",
            true,
            doc(&format!("{path}.mbm_total_bytes"), M_CACHE),
            Get::U64(|r: &R| r.cache().and_then(|c| c.mbm_total_bytes)),
        ),
        col(
            "mbm_local_bytes",
            true,
            doc(&format!("{path}.mbm_local_bytes"), M_CACHE),
            Get::U64(|r: &R| r.cache().and_then(|c| c.mbm_local_bytes)),
        ),
    ]
}

/// A serde enum's name as the recording spells it.
fn spelled<T: serde::Serialize>(t: &T) -> Option<String> {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

// ---- intervals: one row per snapshot ----

pub struct IntervalRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
}

pub fn intervals<'a>() -> Vec<Column<IntervalRow<'a>>> {
    type R<'a> = IntervalRow<'a>;
    let mut c = interval::<R>();
    let by_distance = |name: &'static str, get: fn(&R) -> Option<u64>| {
        col(
            format!("migrations_{name}"),
            true,
            doc(&format!("migrations.by_distance.{name}"), M_MIG),
            Get::U64(get),
        )
    };
    let by_cause = |name: &'static str, get: fn(&R) -> Option<u64>| {
        col(
            format!("cause_{name}"),
            true,
            doc(&format!("migrations.by_cause.{name}"), M_MIG),
            Get::U64(get),
        )
    };
    c.extend([
        col(
            "interval_ns",
            false,
            doc("time.interval_ns", M_TIME),
            Get::U64(|r: &R| Some(r.s.time.interval_ns)),
        ),
        col(
            "mono_ns",
            false,
            doc("time.mono_ns", M_TIME),
            Get::U64(|r: &R| Some(r.s.time.mono_ns)),
        ),
        col(
            "missed_ticks",
            false,
            doc("time.missed_ticks", M_TIME),
            Get::U32(|r: &R| Some(r.s.time.missed_ticks)),
        ),
        col(
            "busy",
            true,
            doc("system.busy", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.busy),
        ),
        col(
            "user",
            true,
            doc("system.user", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.user),
        ),
        col(
            "system",
            true,
            doc("system.system", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.system),
        ),
        col(
            "ctx_switches",
            true,
            doc("system.ctx_switches", M_SYSTEM),
            Get::U64(|r: &R| r.s.system.ctx_switches),
        ),
        col(
            "forks",
            true,
            doc("system.forks", M_SYSTEM),
            Get::U64(|r: &R| r.s.system.forks),
        ),
        col(
            "procs_running",
            true,
            doc("system.procs_running", M_SYSTEM),
            Get::U32(|r: &R| r.s.system.procs_running),
        ),
        col(
            "procs_blocked",
            true,
            doc("system.procs_blocked", M_SYSTEM),
            Get::U32(|r: &R| r.s.system.procs_blocked),
        ),
        col(
            "load1",
            true,
            doc("system.load[0]", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.load.map(|l| l[0])),
        ),
        col(
            "load5",
            true,
            doc("system.load[1]", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.load.map(|l| l[1])),
        ),
        col(
            "load15",
            true,
            doc("system.load[2]", M_SYSTEM),
            Get::F64(|r: &R| r.s.system.load.map(|l| l[2])),
        ),
        col(
            "migrations_precision",
            true,
            doc("migrations.precision", M_MIG) + ": `exact` or `sampled`",
            Get::Str(|r: &R| r.s.migrations.as_ref().and_then(|m| spelled(&m.precision))),
        ),
        by_distance("smt", |r| {
            r.s.migrations.as_ref().map(|m| m.by_distance.smt)
        }),
        by_distance("llc", |r| {
            r.s.migrations.as_ref().map(|m| m.by_distance.llc)
        }),
        by_distance("cross_llc", |r| {
            r.s.migrations.as_ref().map(|m| m.by_distance.cross_llc)
        }),
        by_distance("cross_node", |r| {
            r.s.migrations.as_ref().map(|m| m.by_distance.cross_node)
        }),
        col(
            "migrations_unclassified",
            true,
            doc("migrations.unclassified", M_MIG),
            Get::U64(|r: &R| r.s.migrations.as_ref().map(|m| m.unclassified)),
        ),
        by_cause("wakeup", |r| {
            r.s.migrations
                .as_ref()
                .and_then(|m| m.by_cause)
                .map(|c| c.wakeup)
        }),
        by_cause("load_balance", |r| {
            r.s.migrations
                .as_ref()
                .and_then(|m| m.by_cause)
                .map(|c| c.load_balance)
        }),
        by_cause("active_balance", |r| {
            r.s.migrations
                .as_ref()
                .and_then(|m| m.by_cause)
                .map(|c| c.active_balance)
        }),
        by_cause("numa", |r| {
            r.s.migrations
                .as_ref()
                .and_then(|m| m.by_cause)
                .map(|c| c.numa)
        }),
        by_cause("other", |r| {
            r.s.migrations
                .as_ref()
                .and_then(|m| m.by_cause)
                .map(|c| c.other)
        }),
        col(
            "preferred_onto",
            true,
            doc("migrations.preferred.onto", M_MIG) + ": summed over the causes",
            Get::U64(|r: &R| {
                r.s.migrations
                    .as_ref()
                    .and_then(|m| m.preferred)
                    .map(|p| p.onto.total())
            }),
        ),
        col(
            "preferred_off",
            true,
            doc("migrations.preferred.off", M_MIG) + ": summed over the causes",
            Get::U64(|r: &R| {
                r.s.migrations
                    .as_ref()
                    .and_then(|m| m.preferred)
                    .map(|p| p.off.total())
            }),
        ),
        col(
            "processes_total",
            true,
            doc("processes.total", M_PROC),
            Get::U32(|r: &R| r.s.processes.as_ref().map(|p| p.total)),
        ),
        col(
            "processes_dropped",
            true,
            doc("processes.dropped", M_PROC),
            Get::U64(|r: &R| r.s.processes.as_ref().map(|p| p.dropped)),
        ),
        col(
            "numa_balancing",
            true,
            doc("numa.balancing_mode", M_NUMA),
            Get::U32(|r: &R| r.s.numa.as_ref().and_then(|n| n.balancing_mode)),
        ),
        col(
            "sched_ext_state",
            true,
            doc("sched_ext.state", M_SCX),
            Get::Str(|r: &R| r.s.sched_ext.as_ref().and_then(|x| spelled(&x.state))),
        ),
        col(
            "sched_ext_ops",
            true,
            doc("sched_ext.ops", M_SCX),
            Get::Str(|r: &R| r.s.sched_ext.as_ref().and_then(|x| x.ops.clone())),
        ),
        col(
            "cache_aware_enabled",
            true,
            doc("cache_aware.enabled", M_CAS),
            Get::Bool(|r: &R| r.s.cache_aware.as_ref().map(|c| c.enabled)),
        ),
        col(
            "cache_aware_active",
            true,
            doc("cache_aware.enabled and cache_aware.multi_llc", M_CAS),
            Get::Bool(|r: &R| r.s.cache_aware.as_ref().map(|c| c.active())),
        ),
    ]);
    c
}

// ---- cpus: one row per snapshot and CPU ----

pub struct CpuRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub c: &'a CpuStats,
    /// The CPU's LLC and node in the recording's topology.
    pub llc: Option<u32>,
    pub node: Option<u32>,
}

impl Counted for CpuRow<'_> {
    fn counters(&self) -> Option<&Counters> {
        self.c.counters.as_deref()
    }
}

pub fn cpus<'a>() -> Vec<Column<CpuRow<'a>>> {
    type R<'a> = CpuRow<'a>;
    let mut c = interval::<R>();
    c.extend([
        col(
            "cpu",
            false,
            doc("cpus[].cpu", M_CPU),
            Get::U32(|r: &R| Some(r.c.cpu)),
        ),
        col(
            "llc",
            true,
            doc("header.topology.llcs[].cpus", R_FORMAT) + ": the CPU's LLC id",
            Get::U32(|r: &R| r.llc),
        ),
        col(
            "node",
            true,
            doc("header.topology.nodes[].cpus", R_FORMAT) + ": the CPU's node",
            Get::U32(|r: &R| r.node),
        ),
        col(
            "online",
            false,
            doc("cpus[].online", M_CPU),
            Get::Bool(|r: &R| Some(r.c.online)),
        ),
        col(
            "busy",
            true,
            doc("cpus[].busy", M_CPU),
            Get::F64(|r: &R| r.c.busy),
        ),
        col(
            "steal",
            true,
            doc("cpus[].steal", M_CPU),
            Get::F64(|r: &R| r.c.steal),
        ),
        col(
            "ctx_switches",
            true,
            doc("cpus[].ctx_switches", M_CPU),
            Get::U64(|r: &R| r.c.ctx_switches),
        ),
        col(
            "migrations_in",
            true,
            doc("cpus[].migrations_in", M_CPU),
            Get::U64(|r: &R| r.c.migrations_in),
        ),
        col(
            "migrations_out",
            true,
            doc("cpus[].migrations_out", M_CPU),
            Get::U64(|r: &R| r.c.migrations_out),
        ),
        col(
            "rq_wait_ns",
            true,
            doc("cpus[].rq_wait_ns", M_CPU),
            Get::U64(|r: &R| r.c.rq_wait_ns),
        ),
        col(
            "switches_unseen",
            false,
            doc("cpus[].switches_unseen", M_CPU),
            Get::U64(|r: &R| Some(r.c.switches_unseen)),
        ),
        col(
            "runnable",
            true,
            doc("cpus[].runnable", M_CPU),
            Get::U32(|r: &R| r.c.runnable),
        ),
        col(
            "cas_queued",
            true,
            doc("cpus[].cas_queued", M_CPU),
            Get::U32(|r: &R| r.c.cas_queued),
        ),
        col(
            "cas_queued_pref",
            true,
            doc("cpus[].cas_queued_pref", M_CPU),
            Get::U32(|r: &R| r.c.cas_queued_pref),
        ),
        col(
            "rq_wait_hist",
            true,
            doc("cpus[].rq_wait_hist", M_CPU) + ": `[i]` counts waits in [2^i, 2^(i+1)) ns",
            Get::U64List(|r: &R| r.c.rq_wait_hist.clone()),
        ),
    ]);
    c.extend(counters::<R>("cpus[].counters"));
    c
}

// ---- llcs and nodes: one row per snapshot and group ----

pub struct GroupRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub g: &'a GroupStats,
    /// An LLC's node in the recording's topology (`None` for a node's row).
    pub node: Option<u32>,
}

impl Counted for GroupRow<'_> {
    fn counters(&self) -> Option<&Counters> {
        self.g.counters.as_ref()
    }
}
impl Cached for GroupRow<'_> {
    fn cache(&self) -> Option<&CacheMon> {
        self.g.cache.as_ref()
    }
}

/// The columns of `llcs` (`of` = "llcs") or `nodes` (`of` = "nodes").
fn groups<'a>(of: &str) -> Vec<Column<GroupRow<'a>>> {
    type R<'a> = GroupRow<'a>;
    let mut c = interval::<R>();
    if of == "llcs" {
        c.push(col(
            "llc",
            false,
            doc("llcs[].id", M_GROUP),
            Get::U32(|r: &R| Some(r.g.id)),
        ));
        c.push(col(
            "node",
            true,
            doc("header.topology.llcs[].node", R_FORMAT) + ": the LLC's node",
            Get::U32(|r: &R| r.node),
        ));
    } else {
        c.push(col(
            "node",
            false,
            doc("nodes[].id", M_GROUP),
            Get::U32(|r: &R| Some(r.g.id)),
        ));
    }
    let p = |f: &str| doc(&format!("{of}[].{f}"), M_GROUP);
    c.extend([
        col("cpus", false, p("cpus"), Get::U32(|r: &R| Some(r.g.cpus))),
        col("busy", true, p("busy"), Get::F64(|r: &R| r.g.busy)),
        col(
            "ctx_switches",
            true,
            p("ctx_switches"),
            Get::U64(|r: &R| r.g.ctx_switches),
        ),
        col(
            "migrations_in",
            true,
            p("migrations_in"),
            Get::U64(|r: &R| r.g.migrations_in),
        ),
        col(
            "migrations_out",
            true,
            p("migrations_out"),
            Get::U64(|r: &R| r.g.migrations_out),
        ),
        col(
            "migrations_within",
            true,
            p("migrations_within"),
            Get::U64(|r: &R| r.g.migrations_within),
        ),
        col(
            "rq_wait_ns",
            true,
            p("rq_wait_ns"),
            Get::U64(|r: &R| r.g.rq_wait_ns),
        ),
        col(
            "runnable",
            true,
            p("runnable"),
            Get::U32(|r: &R| r.g.runnable),
        ),
        col(
            "cas_queued",
            true,
            p("cas_queued"),
            Get::U32(|r: &R| r.g.cas_queued),
        ),
        col(
            "cas_queued_pref",
            true,
            p("cas_queued_pref"),
            Get::U32(|r: &R| r.g.cas_queued_pref),
        ),
        col(
            "rq_wait_p50_ns",
            true,
            p("rq_wait_p50_ns"),
            Get::U64(|r: &R| r.g.rq_wait_p50_ns),
        ),
        col(
            "rq_wait_p99_ns",
            true,
            p("rq_wait_p99_ns"),
            Get::U64(|r: &R| r.g.rq_wait_p99_ns),
        ),
    ]);
    c.extend(counters::<R>(&format!("{of}[].counters")));
    c.extend(cache::<R>(&format!("{of}[].cache")));
    c
}

pub fn llcs<'a>() -> Vec<Column<GroupRow<'a>>> {
    groups("llcs")
}

pub fn nodes<'a>() -> Vec<Column<GroupRow<'a>>> {
    groups("nodes")
}

// ---- processes: one row per snapshot and process row ----

pub struct ProcessRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub p: &'a ProcessStats,
}

impl Counted for ProcessRow<'_> {
    fn counters(&self) -> Option<&Counters> {
        self.p.counters.as_ref()
    }
}
impl Cached for ProcessRow<'_> {
    fn cache(&self) -> Option<&CacheMon> {
        self.p.cache.as_ref()
    }
}

pub fn processes<'a>() -> Vec<Column<ProcessRow<'a>>> {
    type R<'a> = ProcessRow<'a>;
    let mut c = interval::<R>();
    let p = |f: &str| doc(&format!("processes.rows[].{f}"), M_PROC);
    let by = |name: &'static str, get: fn(&R) -> Option<u64>| {
        col(
            format!("migrations_{name}"),
            true,
            p(&format!("migrations_by_distance.{name}")),
            Get::U64(get),
        )
    };
    c.extend([
        col(
            "precision",
            false,
            doc("processes.precision", M_PROC),
            Get::Str(|r: &R| r.s.processes.as_ref().and_then(|t| spelled(&t.precision))),
        ),
        col("pid", false, p("pid"), Get::U32(|r: &R| Some(r.p.pid))),
        col(
            "comm",
            false,
            p("comm"),
            Get::Str(|r: &R| Some(r.p.comm.clone())),
        ),
        col(
            "threads",
            false,
            p("threads"),
            Get::U32(|r: &R| Some(r.p.threads)),
        ),
        col(
            "exited",
            false,
            p("exited"),
            Get::Bool(|r: &R| Some(r.p.exited)),
        ),
        col(
            "cpu_time_ns",
            false,
            p("cpu_time_ns"),
            Get::U64(|r: &R| Some(r.p.cpu_time_ns)),
        ),
        col(
            "runtime_per_llc_ns",
            false,
            p("runtime_per_llc_ns") + ": `[i]` is LLC i",
            Get::U64List(|r: &R| Some(r.p.runtime_per_llc_ns.clone())),
        ),
        col(
            "preferred_llc",
            true,
            p("preferred_llc"),
            Get::U32(|r: &R| r.p.preferred_llc),
        ),
        col(
            "preferred_kind",
            false,
            p("preferred_kind") + ": `kernel` or `emulated`",
            Get::Str(|r: &R| spelled(&r.p.preferred_kind)),
        ),
        col(
            "preferred_hit",
            true,
            p("preferred_hit"),
            Get::F64(|r: &R| r.p.preferred_hit),
        ),
        col(
            "llc_spread",
            false,
            p("llc_spread"),
            Get::U32(|r: &R| Some(r.p.llc_spread)),
        ),
        col(
            "migrations",
            false,
            p("migrations"),
            Get::U64(|r: &R| Some(r.p.migrations)),
        ),
        col(
            "cross_llc_migrations",
            false,
            p("cross_llc_migrations"),
            Get::U64(|r: &R| Some(r.p.cross_llc_migrations)),
        ),
        by("smt", |r| r.p.migrations_by_distance.map(|m| m.smt)),
        by("llc", |r| r.p.migrations_by_distance.map(|m| m.llc)),
        by("cross_llc", |r| {
            r.p.migrations_by_distance.map(|m| m.cross_llc)
        }),
        by("cross_node", |r| {
            r.p.migrations_by_distance.map(|m| m.cross_node)
        }),
        col(
            "rq_wait_ns",
            false,
            p("rq_wait_ns"),
            Get::U64(|r: &R| Some(r.p.rq_wait_ns)),
        ),
        col(
            "switches_unseen",
            false,
            p("switches_unseen"),
            Get::U64(|r: &R| Some(r.p.switches_unseen)),
        ),
        col("runs", true, p("runs"), Get::U64(|r: &R| r.p.runs)),
        col(
            "moves_onto_preferred",
            true,
            p("moves_onto_preferred"),
            Get::U64(|r: &R| r.p.moves_onto_preferred),
        ),
        col(
            "moves_off_preferred",
            true,
            p("moves_off_preferred"),
            Get::U64(|r: &R| r.p.moves_off_preferred),
        ),
        col(
            "cgroup",
            true,
            p("cgroup"),
            Get::Str(|r: &R| r.p.cgroup.clone()),
        ),
        col(
            "sched_ext",
            true,
            p("sched_ext"),
            Get::Bool(|r: &R| r.p.sched_ext),
        ),
    ]);
    c.extend(counters::<R>("processes.rows[].counters"));
    c.extend(cache::<R>("processes.rows[].cache"));
    c
}

// ---- llc_migrations: the LLC x LLC matrix, long form ----

pub struct MoveRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub from: u32,
    pub to: u32,
    pub n: u64,
}

pub fn llc_migrations<'a>() -> Vec<Column<MoveRow<'a>>> {
    type R<'a> = MoveRow<'a>;
    let mut c = interval::<R>();
    c.extend([
        col(
            "from_llc",
            false,
            doc("migrations.llc_matrix[from]", M_MIG),
            Get::U32(|r: &R| Some(r.from)),
        ),
        col(
            "to_llc",
            false,
            doc("migrations.llc_matrix[from][to]", M_MIG),
            Get::U32(|r: &R| Some(r.to)),
        ),
        col(
            "migrations",
            false,
            doc("migrations.llc_matrix[from][to]", M_MIG)
                + ": every pair, zeros too (from = to: within the LLC)",
            Get::U64(|r: &R| Some(r.n)),
        ),
    ]);
    c
}

// ---- process_pairs: one row per snapshot and pair of processes tied ----

/// Two processes (the lower pid first) tied by shared memory (the snapshot's `sharing`
/// read) or by wakeups in the interval (`wakeups`).
pub struct PairRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub a: u32,
    pub b: u32,
    /// The pair's shared memory, if the newest read has it.
    pub shared: Option<&'a crate::snapshot::SharedPair>,
    /// Wakeups a made of b and b of a in the interval; `None` when not counted.
    pub wakeups: Option<(u64, u64)>,
}

/// The pairs of one snapshot, each once: every `sharing` pair and every pair of
/// `wakeups` (both directions folded into one row).
pub fn pairs_of<'a>(ctx: &'a Ctx, s: &'a Snapshot) -> Vec<PairRow<'a>> {
    let mut by: std::collections::BTreeMap<(u32, u32), PairRow<'a>> = Default::default();
    let counted = s.wakeups.is_some();
    let new = |k: (u32, u32)| PairRow {
        ctx,
        s,
        a: k.0,
        b: k.1,
        shared: None,
        wakeups: counted.then_some((0, 0)),
    };
    for p in s.sharing.iter().flat_map(|x| &x.pairs) {
        let k = (p.a.min(p.b), p.a.max(p.b));
        by.entry(k).or_insert_with(|| new(k)).shared = Some(p);
    }
    for p in s.wakeups.iter().flat_map(|x| &x.pairs) {
        let k = (p.waker.min(p.wakee), p.waker.max(p.wakee));
        if let Some(w) = by.entry(k).or_insert_with(|| new(k)).wakeups.as_mut() {
            if p.waker < p.wakee {
                w.0 = w.0.saturating_add(p.count);
            } else {
                w.1 = w.1.saturating_add(p.count);
            }
        }
    }
    by.into_values().collect()
}

pub fn process_pairs<'a>() -> Vec<Column<PairRow<'a>>> {
    type R<'a> = PairRow<'a>;
    let mut c = interval::<R>();
    c.extend([
        col(
            "pid_a",
            false,
            "the lower pid of the two".to_string(),
            Get::U32(|r: &R| Some(r.a)),
        ),
        col(
            "pid_b",
            false,
            "the higher pid".to_string(),
            Get::U32(|r: &R| Some(r.b)),
        ),
        col(
            "wakeups_a_to_b",
            true,
            doc("wakeups.pairs[].count", M_WAKEUPS)
                + ": wakeups of b by a in the interval (NULL: not counted, no `--wakeups`)",
            Get::U64(|r: &R| r.wakeups.map(|w| w.0)),
        ),
        col(
            "wakeups_b_to_a",
            true,
            doc("wakeups.pairs[].count", M_WAKEUPS) + ": wakeups of a by b",
            Get::U64(|r: &R| r.wakeups.map(|w| w.1)),
        ),
        col(
            "shared_bytes",
            true,
            doc("sharing.pairs[].bytes", M_SHARED)
                + " of the newest read (NULL: the pair shares no memory in it)",
            Get::U64(|r: &R| r.shared.map(|p| p.bytes)),
        ),
        col(
            "shared_objects",
            true,
            doc("sharing.pairs[].objects", M_SHARED),
            Get::U32(|r: &R| r.shared.map(|p| p.objects)),
        ),
        col(
            "shared_object",
            true,
            doc("sharing.pairs[].object", M_SHARED),
            Get::Str(|r: &R| r.shared.map(|p| p.object.clone())),
        ),
        col(
            "sharing_seq",
            true,
            doc("sharing.seq", M_SHARED) + ": the snapshot the maps were read for",
            Get::U64(|r: &R| r.s.sharing.as_ref().map(|x| x.seq)),
        ),
    ]);
    c
}

// ---- thread_pairs: one row per snapshot and pair of threads of one process ----

/// Two threads of one process (the lower thread id first) that woke each other in the
/// interval (`wakeups.threads`).
pub struct ThreadPairRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub pid: u32,
    pub a: u32,
    pub b: u32,
    /// Wakeups a made of b, and b of a.
    pub ab: u64,
    pub ba: u64,
}

/// The thread pairs of one snapshot, each once (both directions folded into one row).
pub fn thread_pairs_of<'a>(ctx: &'a Ctx, s: &'a Snapshot) -> Vec<ThreadPairRow<'a>> {
    let mut by: std::collections::BTreeMap<(u32, u32, u32), ThreadPairRow<'a>> = Default::default();
    for t in s.wakeups.iter().flat_map(|x| &x.threads) {
        let k = (t.pid, t.waker.min(t.wakee), t.waker.max(t.wakee));
        let r = by.entry(k).or_insert_with(|| ThreadPairRow {
            ctx,
            s,
            pid: k.0,
            a: k.1,
            b: k.2,
            ab: 0,
            ba: 0,
        });
        if t.waker <= t.wakee {
            r.ab = r.ab.saturating_add(t.count);
        } else {
            r.ba = r.ba.saturating_add(t.count);
        }
    }
    by.into_values().collect()
}

pub fn thread_pairs<'a>() -> Vec<Column<ThreadPairRow<'a>>> {
    type R<'a> = ThreadPairRow<'a>;
    let mut c = interval::<R>();
    c.extend([
        col(
            "pid",
            false,
            doc("wakeups.threads[].pid", M_WAKEUPS) + ": the process of both threads",
            Get::U32(|r: &R| Some(r.pid)),
        ),
        col(
            "tid_a",
            false,
            "the lower thread id of the two".to_string(),
            Get::U32(|r: &R| Some(r.a)),
        ),
        col(
            "tid_b",
            false,
            "the higher thread id".to_string(),
            Get::U32(|r: &R| Some(r.b)),
        ),
        col(
            "wakeups_a_to_b",
            false,
            doc("wakeups.threads[].count", M_WAKEUPS) + ": wakeups of b by a in the interval",
            Get::U64(|r: &R| Some(r.ab)),
        ),
        col(
            "wakeups_b_to_a",
            false,
            doc("wakeups.threads[].count", M_WAKEUPS) + ": wakeups of a by b",
            Get::U64(|r: &R| Some(r.ba)),
        ),
    ]);
    c
}

// ---- balance: one row per snapshot and domain level ----

pub struct DomainRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub version: u32,
    pub d: &'a DomainBalance,
}

macro_rules! lb_cols {
    ($c:ident, $($idle:ident),+) => {
        $(
            lb_cols!(@one $c, $idle, count: U64);
            lb_cols!(@one $c, $idle, balanced: U64);
            lb_cols!(@one $c, $idle, failed: U64);
            lb_cols!(@one $c, $idle, imbalance: U64);
            lb_cols!(@opt $c, $idle, imbalance_load);
            lb_cols!(@opt $c, $idle, imbalance_util);
            lb_cols!(@opt $c, $idle, imbalance_task);
            lb_cols!(@opt $c, $idle, imbalance_misfit);
            lb_cols!(@one $c, $idle, gained: U64);
            lb_cols!(@one $c, $idle, hot_gained: U64);
            lb_cols!(@one $c, $idle, nobusyq: U64);
            lb_cols!(@one $c, $idle, nobusyg: U64);
        )+
    };
    (@one $c:ident, $idle:ident, $f:ident: U64) => {
        $c.push(col(
            format!("{}_{}", stringify!($idle), stringify!($f)),
            false,
            doc(&format!("balance.domains[].{}.{}", stringify!($idle), stringify!($f)), M_BALANCE),
            Get::U64(|r: &DomainRow| Some(lb(r, stringify!($idle)).$f)),
        ));
    };
    (@opt $c:ident, $idle:ident, $f:ident) => {
        $c.push(col(
            format!("{}_{}", stringify!($idle), stringify!($f)),
            true,
            doc(&format!("balance.domains[].{}.{}", stringify!($idle), stringify!($f)), M_BALANCE) + " (schedstat v17)",
            Get::U64(|r: &DomainRow| lb(r, stringify!($idle)).$f),
        ));
    };
}

fn lb<'a>(r: &'a DomainRow, idle: &str) -> &'a LbStats {
    match idle {
        "busy" => &r.d.busy,
        "idle" => &r.d.idle,
        _ => &r.d.newidle,
    }
}

pub fn balance<'a>() -> Vec<Column<DomainRow<'a>>> {
    type R<'a> = DomainRow<'a>;
    let mut c = interval::<R>();
    let p = |f: &str| doc(&format!("balance.domains[].{f}"), M_BALANCE);
    c.extend([
        col(
            "schedstat_version",
            false,
            doc("balance.version", M_BALANCE),
            Get::U32(|r: &R| Some(r.version)),
        ),
        col(
            "level",
            false,
            p("level"),
            Get::U32(|r: &R| Some(r.d.level)),
        ),
        col("name", true, p("name"), Get::Str(|r: &R| r.d.name.clone())),
        col(
            "derived_name",
            false,
            p("derived_name"),
            Get::Bool(|r: &R| Some(r.d.derived_name)),
        ),
        col("cpus", false, p("cpus"), Get::U32(|r: &R| Some(r.d.cpus))),
    ]);
    lb_cols!(c, busy, idle, newidle);
    c.extend([
        col(
            "alb_count",
            false,
            p("alb_count"),
            Get::U64(|r: &R| Some(r.d.alb_count)),
        ),
        col(
            "alb_failed",
            false,
            p("alb_failed"),
            Get::U64(|r: &R| Some(r.d.alb_failed)),
        ),
        col(
            "alb_pushed",
            false,
            p("alb_pushed"),
            Get::U64(|r: &R| Some(r.d.alb_pushed)),
        ),
        col(
            "ttwu_wake_remote",
            false,
            p("ttwu_wake_remote"),
            Get::U64(|r: &R| Some(r.d.ttwu_wake_remote)),
        ),
        col(
            "ttwu_move_affine",
            false,
            p("ttwu_move_affine"),
            Get::U64(|r: &R| Some(r.d.ttwu_move_affine)),
        ),
        col(
            "ttwu_move_balance",
            false,
            p("ttwu_move_balance"),
            Get::U64(|r: &R| Some(r.d.ttwu_move_balance)),
        ),
    ]);
    c
}

// ---- resctrl: one row per snapshot, monitoring group and L3 domain ----

pub struct ResctrlRow<'a> {
    pub ctx: &'a Ctx,
    pub s: &'a Snapshot,
    pub g: &'a ResctrlGroup,
    pub d: &'a crate::snapshot::DomainMon,
}

impl Cached for ResctrlRow<'_> {
    fn cache(&self) -> Option<&CacheMon> {
        Some(&self.d.mon)
    }
}

pub fn resctrl<'a>() -> Vec<Column<ResctrlRow<'a>>> {
    type R<'a> = ResctrlRow<'a>;
    let mut c = interval::<R>();
    let p = |f: &str| doc(&format!("resctrl.groups[].{f}"), M_CACHE);
    c.extend([
        col(
            "group",
            false,
            p("path"),
            Get::Str(|r: &R| Some(r.g.path.clone())),
        ),
        col(
            "kind",
            false,
            p("kind") + ": `root`, `ctrl_mon` or `mon`",
            Get::Str(|r: &R| spelled(&r.g.kind)),
        ),
        col("pid", true, p("pid"), Get::U32(|r: &R| r.g.pid)),
        col(
            "l3",
            false,
            p("domains[].l3"),
            Get::U32(|r: &R| Some(r.d.l3)),
        ),
        col("llc", true, p("domains[].llc"), Get::U32(|r: &R| r.d.llc)),
        col(
            "node",
            true,
            p("domains[].node"),
            Get::U32(|r: &R| r.d.node),
        ),
    ]);
    c.extend(cache::<R>("resctrl.groups[].domains[]"));
    c
}

// ---- the recording's other lines ----

/// A row of a line that is not a snapshot.
pub struct LineRow<'a, T> {
    pub ctx: &'a Ctx,
    pub x: &'a T,
}

impl<T> Row for LineRow<'_, T> {
    fn ctx(&self) -> &Ctx {
        self.ctx
    }
}

/// A knob's value at the start (`header.knobs`): one row per knob.
pub type KnobValue = (String, String);

pub fn knob_values<'a>() -> Vec<Column<LineRow<'a, KnobValue>>> {
    type R<'a> = LineRow<'a, KnobValue>;
    let mut c = identity::<R>();
    c.extend([
        col(
            "time",
            false,
            doc("header.start_unix_ns", R_FORMAT) + ": when the recording started",
            Get::Time(|r: &R| Some(r.ctx.start_unix_ns)),
        ),
        col(
            "knob",
            false,
            doc("header.knobs", R_FORMAT) + ": the knob's id (docs/knobs.md)",
            Get::Str(|r: &R| Some(r.x.0.clone())),
        ),
        col(
            "value",
            false,
            doc("header.knobs", R_FORMAT) + ": its value as read",
            Get::Str(|r: &R| Some(r.x.1.clone())),
        ),
    ]);
    c
}

pub fn knob_changes<'a>() -> Vec<Column<LineRow<'a, KnobEvent>>> {
    type R<'a> = LineRow<'a, KnobEvent>;
    let mut c = identity::<R>();
    let p = |f: &str| doc(&format!("knob.{f}"), R_FORMAT);
    c.extend([
        col(
            "time",
            false,
            p("unix_ns"),
            Get::Time(|r: &R| Some(r.x.unix_ns)),
        ),
        col(
            "mono_ns",
            false,
            p("mono_ns"),
            Get::U64(|r: &R| Some(r.x.mono_ns)),
        ),
        col(
            "knob",
            false,
            p("id"),
            Get::Str(|r: &R| Some(r.x.id.clone())),
        ),
        col(
            "path",
            false,
            p("path"),
            Get::Str(|r: &R| Some(r.x.path.display().to_string())),
        ),
        col(
            "action",
            false,
            p("action") + ": `set`, `undo`, `restore` or `internal`",
            Get::Str(|r: &R| spelled(&r.x.action)),
        ),
        col(
            "old",
            false,
            p("old"),
            Get::Str(|r: &R| Some(r.x.old.clone())),
        ),
        col(
            "new",
            false,
            p("new"),
            Get::Str(|r: &R| Some(r.x.new.clone())),
        ),
        col(
            "written",
            false,
            p("written"),
            Get::Str(|r: &R| Some(r.x.written.clone())),
        ),
        col(
            "read_back",
            false,
            p("read_back"),
            Get::Str(|r: &R| Some(r.x.read_back.clone())),
        ),
        col(
            "label",
            true,
            p("label"),
            Get::Str(|r: &R| r.x.label.clone()),
        ),
    ]);
    c
}

pub fn markers<'a>() -> Vec<Column<LineRow<'a, Marker>>> {
    type R<'a> = LineRow<'a, Marker>;
    let mut c = identity::<R>();
    let p = |f: &str| doc(&format!("marker.{f}"), R_FORMAT);
    c.extend([
        col(
            "time",
            false,
            p("unix_ns"),
            Get::Time(|r: &R| Some(r.x.unix_ns)),
        ),
        col(
            "mono_ns",
            false,
            p("mono_ns"),
            Get::U64(|r: &R| Some(r.x.mono_ns)),
        ),
        col(
            "after_seq",
            true,
            p("after_seq"),
            Get::U64(|r: &R| r.x.after_seq),
        ),
        col(
            "label",
            false,
            p("label"),
            Get::Str(|r: &R| Some(r.x.label.clone())),
        ),
    ]);
    c
}

pub fn findings<'a>() -> Vec<Column<LineRow<'a, FindingLine>>> {
    type R<'a> = LineRow<'a, FindingLine>;
    let mut c = identity::<R>();
    let p = |f: &str| doc(&format!("finding.{f}"), M_FINDINGS);
    c.extend([
        col(
            "state",
            false,
            doc("finding.state", M_FINDINGS) + ": `fired`, or `cleared` (its last evidence)",
            Get::Str(|r: &R| spelled(&r.x.state)),
        ),
        col(
            "seq",
            false,
            doc("finding.seq", M_FINDINGS) + ": the snapshot being judged",
            Get::U64(|r: &R| Some(r.x.seq)),
        ),
        col(
            "kind",
            false,
            p("kind"),
            Get::Str(|r: &R| spelled(&r.x.finding.kind)),
        ),
        col(
            "key",
            false,
            p("key"),
            Get::Str(|r: &R| Some(r.x.finding.key.clone())),
        ),
        col(
            "severity",
            false,
            p("severity") + ": `info`, `warning` or `critical`",
            Get::Str(|r: &R| spelled(&r.x.finding.severity)),
        ),
        col(
            "summary",
            false,
            p("summary"),
            Get::Str(|r: &R| Some(r.x.finding.summary.clone())),
        ),
        col(
            "first_seq",
            false,
            p("first_seq"),
            Get::U64(|r: &R| Some(r.x.finding.first_seq)),
        ),
        col(
            "last_seq",
            false,
            p("last_seq"),
            Get::U64(|r: &R| Some(r.x.finding.last_seq)),
        ),
        col(
            "cpus",
            false,
            p("cpus"),
            Get::U32List(|r: &R| Some(r.x.finding.cpus.clone())),
        ),
        col(
            "llcs",
            false,
            p("llcs"),
            Get::U32List(|r: &R| Some(r.x.finding.llcs.clone())),
        ),
        col(
            "pids",
            false,
            p("pids"),
            Get::U32List(|r: &R| Some(r.x.finding.pids.clone())),
        ),
        col(
            "facts",
            false,
            p("facts") + ": `label = value unit` per fact, `; ` between",
            Get::Str(|r: &R| {
                Some(
                    r.x.finding
                        .facts
                        .iter()
                        .map(|f| {
                            format!(
                                "{} = {} {}",
                                f.label,
                                f.value,
                                spelled(&f.unit).unwrap_or_default()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            }),
        ),
    ]);
    c
}

/// An experiment's window with the experiment it belongs to.
pub type WindowOf = (Window, Option<Experiment>);

pub fn windows<'a>() -> Vec<Column<LineRow<'a, WindowOf>>> {
    type R<'a> = LineRow<'a, WindowOf>;
    let mut c = identity::<R>();
    let p = |f: &str| doc(&format!("window.{f}"), M_EXPERIMENTS);
    let e = |f: &str| doc(&format!("experiment.{f}"), M_EXPERIMENTS);
    c.extend([
        col(
            "knob",
            true,
            e("knob"),
            Get::Str(|r: &R| r.x.1.as_ref().map(|x| x.knob.clone())),
        ),
        col(
            "index",
            false,
            p("index"),
            Get::U32(|r: &R| Some(r.x.0.index)),
        ),
        col(
            "arm",
            false,
            p("arm") + ": `a` or `b`",
            Get::Str(|r: &R| spelled(&r.x.0.arm)),
        ),
        col(
            "value",
            false,
            p("value"),
            Get::Str(|r: &R| Some(r.x.0.value.clone())),
        ),
        col(
            "first_seq",
            false,
            p("first_seq"),
            Get::U64(|r: &R| Some(r.x.0.first_seq)),
        ),
        col(
            "last_seq",
            false,
            p("last_seq"),
            Get::U64(|r: &R| Some(r.x.0.last_seq)),
        ),
        col(
            "command_secs",
            true,
            p("command_secs"),
            Get::F64(|r: &R| r.x.0.command_secs),
        ),
        col(
            "exit_code",
            true,
            p("exit_code"),
            Get::U32(|r: &R| r.x.0.exit_code.and_then(|c| u32::try_from(c).ok())),
        ),
        col(
            "command_pids",
            false,
            p("command_pids") + ": the command's processes seen in the window",
            Get::U32List(|r: &R| Some(r.x.0.command_pids.clone())),
        ),
        col(
            "not_counted",
            true,
            p("not_counted"),
            Get::Str(|r: &R| r.x.0.not_counted.clone()),
        ),
    ]);
    c
}

/// One metric of one window of [`crate::fleet::window::WINDOW_SNAPSHOTS`] snapshots: a
/// row of `fleet_windows`.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowMetric {
    pub index: u32,
    pub first_seq: u64,
    pub last_seq: u64,
    pub unix_ns: u64,
    pub secs: f64,
    pub metric: String,
    pub value: f64,
}

impl WindowMetric {
    /// A window's rows, one per metric it has (in the metrics' key order).
    pub fn of(w: &crate::fleet::window::HostWindow) -> impl Iterator<Item = WindowMetric> + '_ {
        w.metrics.iter().map(|(k, v)| WindowMetric {
            index: w.index,
            first_seq: w.first_seq,
            last_seq: w.last_seq,
            unix_ns: w.unix_ns,
            secs: w.secs,
            metric: k.clone(),
            value: *v,
        })
    }
}

pub fn fleet_windows<'a>() -> Vec<Column<LineRow<'a, WindowMetric>>> {
    type R<'a> = LineRow<'a, WindowMetric>;
    let mut c = identity::<R>();
    let m = |what: &str| format!("{what} ([metrics.md]({M_EXPERIMENTS}))");
    c.extend([
        col(
            // Not `window`: a keyword in SQL.
            "window_index",
            false,
            "the window's place in the recording: 0 for its first 5 snapshots".to_string(),
            Get::U32(|r: &R| Some(r.x.index)),
        ),
        col(
            "first_seq",
            false,
            doc("seq", R_FORMAT) + " of the window's first snapshot",
            Get::U64(|r: &R| Some(r.x.first_seq)),
        ),
        col(
            "last_seq",
            false,
            doc("seq", R_FORMAT) + " of its last",
            Get::U64(|r: &R| Some(r.x.last_seq)),
        ),
        col(
            "time",
            false,
            doc("time.unix_ns", M_TIME) + " of its last snapshot: the window's end",
            Get::Time(|r: &R| Some(r.x.unix_ns)),
        ),
        col(
            "seconds",
            false,
            doc("time.interval_ns", M_TIME) + " summed over its snapshots, in seconds",
            Get::F64(|r: &R| Some(r.x.secs)),
        ),
        col(
            "metric",
            false,
            m("the metric's key, as `llctop ab` and `diff --fleet` name it"),
            Get::Str(|r: &R| Some(r.x.metric.clone())),
        ),
        col(
            "unit",
            false,
            m("its unit (empty for a ratio)"),
            Get::Str(|r: &R| {
                Some(
                    crate::experiment::metrics::describe(&r.x.metric)
                        .0
                        .to_string(),
                )
            }),
        ),
        col(
            "value",
            false,
            m("its value over the window"),
            Get::F64(|r: &R| Some(r.x.value)),
        ),
    ]);
    c
}

// ---- the tables, each named and described once ----

/// A table: its directory name and what one row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    pub name: &'static str,
    pub row: &'static str,
}

pub const INTERVALS: Table = Table {
    name: "intervals",
    row: "one per snapshot: the system, migrations by distance and cause, the process table's size, NUMA balancing and the scheduler in charge",
};
pub const CPUS: Table = Table {
    name: "cpus",
    row: "one per snapshot and CPU (offline CPUs too)",
};
pub const LLCS: Table = Table {
    name: "llcs",
    row: "one per snapshot and LLC",
};
pub const NODES: Table = Table {
    name: "nodes",
    row: "one per snapshot and NUMA node",
};
pub const PROCESSES: Table = Table {
    name: "processes",
    row: "one per snapshot and process row (the recording's `--top` busiest)",
};
pub const LLC_MIGRATIONS: Table = Table {
    name: "llc_migrations",
    row: "one per snapshot and pair of LLCs (the migration matrix in long form)",
};
pub const PROCESS_PAIRS: Table = Table {
    name: "process_pairs",
    row: "one per snapshot and pair of processes that map the same shared memory (the newest read) or woke each other in the interval (`--wakeups`)",
};
pub const THREAD_PAIRS: Table = Table {
    name: "thread_pairs",
    row: "one per snapshot and pair of threads of one process that woke each other in the interval (`--wakeups`; the 64 pairs with the most wakeups each snapshot keeps)",
};
pub const BALANCE: Table = Table {
    name: "balance",
    row: "one per snapshot and scheduling-domain level (/proc/schedstat)",
};
pub const RESCTRL: Table = Table {
    name: "resctrl",
    row: "one per snapshot, resctrl monitoring group and L3 domain",
};
pub const KNOB_VALUES: Table = Table {
    name: "knob_values",
    row: "one per knob: its value when the recording started",
};
pub const KNOB_CHANGES: Table = Table {
    name: "knob_changes",
    row: "one per knob change the recording journaled",
};
pub const MARKERS: Table = Table {
    name: "markers",
    row: "one per marker",
};
pub const FINDINGS: Table = Table {
    name: "findings",
    row: "one per finding the advisor wrote",
};
pub const WINDOWS: Table = Table {
    name: "windows",
    row: "one per A/B experiment window (`llctop ab`)",
};
pub const FLEET_WINDOWS: Table = Table {
    name: "fleet_windows",
    row: "one per window of 5 consecutive snapshots (the last, shorter one left out) and metric it has: the experiment's metrics as `llctop diff --fleet` summarizes a host, which reads these files",
};

/// A column as docs/fleet-data.md lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDoc {
    pub name: String,
    pub sql_type: &'static str,
    pub nullable: bool,
    pub doc: String,
}

/// Every table with its columns.
pub fn all() -> Vec<(Table, Vec<ColumnDoc>)> {
    fn cols<R>(c: Vec<Column<R>>) -> Vec<ColumnDoc> {
        c.into_iter()
            .map(|c| ColumnDoc {
                sql_type: c.sql_type(),
                name: c.name,
                nullable: c.nullable,
                doc: c.doc,
            })
            .collect()
    }
    vec![
        (INTERVALS, cols(intervals())),
        (CPUS, cols(cpus())),
        (LLCS, cols(llcs())),
        (NODES, cols(nodes())),
        (PROCESSES, cols(processes())),
        (LLC_MIGRATIONS, cols(llc_migrations())),
        (PROCESS_PAIRS, cols(process_pairs())),
        (THREAD_PAIRS, cols(thread_pairs())),
        (BALANCE, cols(balance())),
        (RESCTRL, cols(resctrl())),
        (KNOB_VALUES, cols(knob_values())),
        (KNOB_CHANGES, cols(knob_changes())),
        (MARKERS, cols(markers())),
        (FINDINGS, cols(findings())),
        (WINDOWS, cols(windows())),
        (FLEET_WINDOWS, cols(fleet_windows())),
    ]
}

/// docs/fleet-data.md's schema section: every table and column.
pub fn markdown() -> String {
    let mut s = format!("Schema version {SCHEMA_VERSION}.\n");
    for (t, cols) in all() {
        s.push_str(&format!(
            "\n### `{}`\n\n{}.\n\n",
            t.name,
            upper_first(t.row)
        ));
        s.push_str("| column | type | NULL | what it is |\n|---|---|---|---|\n");
        for c in cols {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                c.name,
                c.sql_type,
                if c.nullable { "yes" } else { "no" },
                c.doc
            ));
        }
    }
    s
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_windows_says_the_cut_diff_fleet_makes() {
        let n = crate::fleet::window::WINDOW_SNAPSHOTS;
        assert!(FLEET_WINDOWS.row.contains(&format!(" {n} consecutive")));
        let window = fleet_windows()
            .into_iter()
            .find(|c| c.name == "window_index");
        assert!(window.is_some_and(|c| c.doc.contains(&format!("first {n} snapshots"))));
    }

    #[test]
    fn every_table_names_each_column_once_and_starts_with_the_identity() {
        for (t, cols) in all() {
            let mut names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(
                &names[..5],
                ["host", "boot_id", "kernel", "run_id", "schema_version"],
                "{}",
                t.name
            );
            names.sort_unstable();
            let n = names.len();
            names.dedup();
            assert_eq!(names.len(), n, "{}: a column named twice", t.name);
        }
    }
}
