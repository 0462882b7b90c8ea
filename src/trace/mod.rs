//! Perfetto traces: `llctop trace` (a live capture of every context switch, waking,
//! migration and placement, with llctop's counters and events — [`live`]) and `llctop
//! export --perfetto` (any recording — [`export`]). [`timeline`] decides what goes in a
//! trace and on which track, the same for both; [`sched`] gathers the switches and
//! wakings per CPU into Perfetto's compact encoding; [`perfetto`] writes the packets with
//! Perfetto's own protos; [`procs`] lists the processes alive at the start.
//! docs/timeline.md says how to open a trace and what every track means.

pub mod export;
pub mod live;
pub mod perfetto;
pub mod procs;
pub mod sched;
pub mod timeline;
