//! Fleet data: recordings in the form fleet engines read — Parquet tables with a
//! documented, versioned schema (tables.rs; docs/fleet-data.md), written by
//! `llctop export --parquet` (export.rs) from the columns' definitions (columns.rs); and
//! the canary A/B across hosts, `llctop diff --fleet` (canary.rs), over recordings or
//! the export's `fleet_windows` read back (read.rs) — both cut a run into the same
//! windows (window.rs).

pub mod canary;
pub mod columns;
pub mod export;
pub mod read;
pub mod tables;
pub mod window;
