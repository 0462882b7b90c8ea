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
pub mod fleet;
pub mod flight;
pub mod knobs;
pub mod kroot;
pub mod kstate;
pub mod markdown;
pub mod mcp;
pub mod mounts;
pub mod output;
pub mod parse;
pub mod preferred;
pub mod procgroup;
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

#[cfg(test)]
mod layout {
    /// docs/architecture.md names every folder of src/ (its table of concerns), and
    /// README's Layout points there.
    #[test]
    fn the_architecture_page_names_every_folder_of_src() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let mut n = 0;
        for e in std::fs::read_dir(root.join("src")).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                let name = format!("`src/{}/`", e.file_name().to_string_lossy());
                assert!(page.contains(&name), "docs/architecture.md lacks {name}");
                n += 1;
            }
        }
        assert!(n >= 14, "{n} folders");
        let layout = readme.split("## Layout").nth(1).unwrap_or_default();
        assert!(layout.contains("docs/architecture.md"), "README's Layout");
    }
}
