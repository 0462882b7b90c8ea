//! A/B experiments on a knob: the plan (values, ABBA-ordered windows, warm-up), the
//! metrics of a window (pure functions over its snapshots), the statistics and the
//! verdict table, and the run that flips the knob and records everything (`llctop ab`).

pub mod stats;
