//! llctop: scheduler cache and NUMA behaviour, live.
//!
//! The data pipeline, in the order data flows:
//! [`kroot`] (the one kernel root) → [`topology`] (CPUs, LLCs, nodes) → [`source`]
//! (procfs now; BPF, perf and replay later) → [`snapshot`] (the one currency: drawn,
//! recorded, replayed) → [`record`] (JSON Lines recordings and reports).

pub mod cli;
pub mod clock;
pub mod collect;
pub mod config;
pub mod counters;
pub mod cpulist;
pub mod enrich;
pub mod knobs;
pub mod kroot;
pub mod mounts;
pub mod preferred;
pub mod record;
pub mod run;
pub mod snapshot;
pub mod source;
pub mod topology;
pub mod tui;
