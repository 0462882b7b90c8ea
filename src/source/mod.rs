//! Data sources. Each fills the parts of a [`Snapshot`] it can provide and reports its
//! state (active / degraded / absent, with the reason) in `Snapshot::sources`.
//!
//! - [`bpf`]: exact counts from scheduler tracepoints, aggregated in the kernel.
//! - [`procfs`]: /proc and /sys sampling; needs no privileges; its migration counts are
//!   sampled. Busy time, schedstat and NUMA always come from here; with BPF active its
//!   thread scan is off. It is the whole story when BPF cannot load.
//!
//! perf (hardware counters) and replay come next and implement the same [`Source`].

pub mod bpf;
pub mod perf;
pub mod procfs;

use crate::snapshot::{Snapshot, SourceStatus};
use crate::topology::Topology;

pub trait Source {
    /// Short name used in source states, e.g. `procfs`.
    fn name(&self) -> &'static str;

    /// Read the kernel. The first call records a baseline; every later call fills `snap`
    /// with what happened since the previous call. A source never fails the snapshot:
    /// what it cannot read it leaves `None` and explains in `snap.sources`.
    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot);
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
