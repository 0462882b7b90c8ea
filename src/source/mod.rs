//! Data sources. Each fills the parts of a [`Snapshot`] it can provide and reports its
//! state (active / degraded / absent, with the reason) in `Snapshot::sources`.
//!
//! - [`procfs`]: /proc and /sys sampling; needs no privileges; everything it counts is
//!   sampled. Also the fallback when BPF cannot load.
//!
//! BPF (exact counts), perf (hardware counters) and replay come next and implement the
//! same [`Source`] trait.

pub mod procfs;

use crate::snapshot::Snapshot;
use crate::topology::Topology;

pub trait Source {
    /// Short name used in source states, e.g. `procfs`.
    fn name(&self) -> &'static str;

    /// Read the kernel. The first call records a baseline; every later call fills `snap`
    /// with what happened since the previous call. A source never fails the snapshot:
    /// what it cannot read it leaves `None` and explains in `snap.sources`.
    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot);
}
