//! Data sources. Each fills the parts of a [`Snapshot`] it can provide and reports its
//! state (active / degraded / absent, with the reason) in `Snapshot::sources`.
//!
//! - [`bpf`]: exact counts from scheduler tracepoints, aggregated in the kernel.
//! - [`procfs`]: /proc and /sys sampling; needs no privileges; its migration counts are
//!   sampled. Busy time, schedstat and NUMA always come from here; with BPF active its
//!   thread scan is off. It is the whole story when BPF cannot load.
//!
//! - [`perf`]: hardware counters per CPU (and, through BPF, per process).
//! - [`resctrl`]: L3 occupancy and memory bandwidth per group, LLC, node and process
//!   (Intel RDT, AMD PQoS).
//!
//! [`select`] builds the set for a run from `--source`.

pub mod bpf;
pub mod perf;
pub mod procfs;
pub mod resctrl;

use crate::kroot::KernelRoot;
use crate::snapshot::{Snapshot, SourceStatus};
use crate::topology::Topology;

/// Which sources a run uses (`--source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// BPF when it loads, else procfs (the reason is shown).
    Auto,
    /// BPF or fail.
    Bpf,
    /// procfs sampling only.
    Procfs,
}

/// The sources for `kind` on `root`, keeping `top` process rows, in the order they are
/// read: BPF (exact events, and per-process counters read at every switch), then perf
/// (the per-CPU counters, read right after BPF so that the processes' shares and the
/// per-CPU totals are taken at nearly one moment), then procfs (busy, schedstat, NUMA,
/// and the thread scan when BPF is not there), then resctrl. With `wakeups`, the BPF source
/// counts which process wakes which (`--wakeups`). Fails only when `kind` is `Bpf` and BPF
/// does not load.
/// Why `--sysroot` runs have no BPF source.
pub const NOT_LIVE_BPF: &str = "--sysroot is not the live system: the BPF programs would count this kernel's events on that tree's topology";

pub fn select(
    kind: Kind,
    top: usize,
    root: &KernelRoot,
    topo: &Topology,
    resctrl: resctrl::Setup,
    wakeups: bool,
) -> Result<Vec<Box<dyn Source>>, bpf::LoadError> {
    // The BPF programs count the running kernel's events: against a fixture tree's
    // topology they would be another machine's numbers labelled exact.
    let bpf = match kind {
        Kind::Procfs => None,
        Kind::Bpf if !root.is_live() => return Err(bpf::LoadError(NOT_LIVE_BPF.into())),
        Kind::Bpf => Some(Ok(bpf::BpfSource::load(topo, top)?)),
        Kind::Auto if !root.is_live() => Some(Err(bpf::LoadError(NOT_LIVE_BPF.into()))),
        Kind::Auto => Some(bpf::BpfSource::load(topo, top)),
    };
    Ok(assemble(bpf, top, root, topo, resctrl, wakeups))
}

/// The sources of `llctop trace`: the BPF source in trace mode (required: a trace is its
/// records) taking the trace `cfg` says, and its tap, beside the others.
pub fn select_traced(
    top: usize,
    root: &KernelRoot,
    topo: &Topology,
    cfg: bpf::tracing::TraceConfig,
    resctrl: resctrl::Setup,
    wakeups: bool,
) -> Result<(Vec<Box<dyn Source>>, bpf::tracing::TraceTap), bpf::LoadError> {
    if !root.is_live() {
        return Err(bpf::LoadError(NOT_LIVE_BPF.into()));
    }
    let b = bpf::BpfSource::load_traced(topo, top, cfg)?;
    let tap = b.trace_tap()?;
    Ok((
        assemble(Some(Ok(b)), top, root, topo, resctrl, wakeups),
        tap,
    ))
}

/// The list of sources around the BPF one (or why there is none).
fn assemble(
    bpf: Option<Result<bpf::BpfSource, bpf::LoadError>>,
    top: usize,
    root: &KernelRoot,
    topo: &Topology,
    resctrl: resctrl::Setup,
    wakeups: bool,
) -> Vec<Box<dyn Source>> {
    // Hardware counters wherever they can be opened (a fixture root has no PMU of its own).
    let perf = root.is_live().then(|| perf::PerfSource::open(root, topo));
    let exact = matches!(bpf, Some(Ok(_)));
    let mut list: Vec<Box<dyn Source>> = Vec::new();
    match bpf {
        Some(Ok(mut b)) => {
            // Per-process counters: the BPF program reads perf's counters at switches.
            if let Some(p) = perf.as_ref() {
                b.attach_counters(p);
            }
            if wakeups {
                b.count_wakeups();
            }
            list.push(Box::new(b));
        }
        Some(Err(e)) => list.push(Box::new(FixedStatus(SourceStatus::absent(
            crate::snapshot::SourceName::Bpf,
            format!("{e}; using procfs sampling"),
        )))),
        None => {}
    }
    list.push(match perf {
        Some(p) => Box::new(p),
        None => Box::new(FixedStatus(SourceStatus::absent(
            crate::snapshot::SourceName::Perf,
            "--sysroot is not the live system: its hardware counters cannot be opened",
        ))),
    });
    let procfs = procfs::ProcfsSource::new(root.clone(), top);
    list.push(Box::new(if exact {
        procfs.without_task_scan()
    } else {
        procfs
    }));
    // Last: it monitors the busiest processes of the table the others filled.
    list.push(Box::new(resctrl::ResctrlSource::new(root, topo, resctrl)));
    list
}

pub trait Source {
    /// Short name used in source states, e.g. `procfs`.
    fn name(&self) -> &'static str;

    /// Read the kernel. The first call records a baseline; every later call fills `snap`
    /// with what happened since the previous call. A source never fails the snapshot:
    /// what it cannot read it leaves `None` and explains in `snap.sources`.
    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot);

    /// At the read about to be made (and the next ones, until told otherwise), give
    /// these processes (`tgids`, sorted) a row whenever they ran or moved, besides the
    /// busiest `--top` ([`crate::procgroup::KeptRows`]). Sources without process rows
    /// ignore it.
    fn keep_rows(&mut self, _tgids: &[u32]) {}
}

/// A source that only reports a fixed state every interval, e.g. "bpf absent: not
/// permitted" when llctop fell back to procfs.
pub struct FixedStatus(pub SourceStatus);

impl Source for FixedStatus {
    fn name(&self) -> &'static str {
        "status"
    }

    fn sample(&mut self, _topo: &Topology, snap: &mut Snapshot) {
        snap.sources.push(self.0.clone());
    }
}
