//! The host's integration tests that read fixtures and files only — no live kernel
//! state, no knob written, no BPF — in one test binary (one link instead of one per
//! file): each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;
mod fleet;
mod habits;
mod mutation;
mod procfs_source;
mod properties;
mod screenshots;
mod topology;
mod tui_views;
