//! llctop: scheduler cache and NUMA behaviour, live.
//!
//! The data pipeline, in the order data flows:
//! [`kroot`] (the one kernel root) → [`topology`] (CPUs, LLCs, nodes) → [`source`] (BPF,
//! perf, procfs, resctrl: each reads raw counters, then a pure delta step) → [`enrich`] (names,
//! threads and cgroups of the shown processes) → [`collect`] (aggregation per LLC, node,
//! system) → [`snapshot`] (the one currency: drawn, recorded, replayed) → [`tui`],
//! [`record`] (JSON Lines recordings and reports), [`run`] (headless runs).
//! [`findings`] recognises the seeds' situations in a window of snapshots.
//! [`knobs`] is the one writer to the kernel. [`cli`] is the command line; main.rs only
//! dispatches. [`units`] formats bytes and bandwidth one way everywhere. [`mcp`] serves
//! agents over the Model Context Protocol.

pub mod child;
pub mod cli;
pub mod clock;
pub mod collect;
pub mod config;
pub mod counters;
pub mod cpulist;
pub mod enrich;
pub mod experiment;
pub mod findings;
pub mod knobs;
pub mod kroot;
pub mod kstate;
pub mod markdown;
pub mod mcp;
pub mod mounts;
pub mod output;
pub mod preferred;
pub mod record;
pub mod run;
pub mod serve;
pub mod settings;
pub mod signals;
pub mod snapshot;
pub mod source;
pub mod stdout;
pub mod suggest;
pub mod text;
pub mod topology;
pub mod trace;
pub mod tui;
pub mod units;
