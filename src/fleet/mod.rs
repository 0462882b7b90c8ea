//! Fleet data: recordings in the form fleet engines read — Parquet tables with a
//! documented, versioned schema (tables.rs; docs/fleet-data.md), written by
//! `llctop export --parquet` (export.rs) from the columns' definitions (columns.rs).

pub mod columns;
pub mod export;
pub mod tables;
