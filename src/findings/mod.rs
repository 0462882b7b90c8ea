//! Findings: the seeds' situations recognised in what llctop recorded. Each detector is a
//! pure function over a window of snapshots, so the TUI, a replay and `llctop report`
//! find the same things in the same data.

pub mod pileup;
