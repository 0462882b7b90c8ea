//! The lab at the users' scale (issue "Big lab"): 64 vCPUs in QEMU 10 (shape
//! `8s8llc-smt`: 8 sockets × 4 cores × 2 threads, an L3 per socket — an EPYC's 8-core CCX
//! each — and two nodes of four LLCs) on Debian's 7.2 kernel. One boot
//! (tests/lab/scenarios/big.sh); each test checks one aspect against an oracle that
//! shares no code with llctop: the guest's sysfs, the hoppers' own migration counts,
//! the replayed views, `serve`'s scrape.

mod common;

use common::lab::{LabRun, hops_of, recording};
use llctop::tui::app::{App, ViewId};
use serde_json::Value;

const SHAPE: &str = "8s8llc-smt";

/// One boot for every test: 64 vCPUs on one host thread are slow (docs/lab.md).
fn run() -> &'static LabRun {
    static RUN: std::sync::OnceLock<&'static LabRun> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        Box::leak(Box::new(common::lab::run_programs(
            "7.2",
            SHAPE,
            "big.sh",
            "",
            &[],
            1800,
        )))
    })
}

/// `0-7` or `0,32` → CPUs.
fn cpus(list: &str) -> Vec<u64> {
    llctop::cpulist::parse(list.trim())
        .unwrap_or_else(|e| panic!("{list}: {e}"))
        .into_iter()
        .map(u64::from)
        .collect()
}

#[test]
fn lab_7_2_big_topology_is_the_guests_sysfs() {
    let run = run();
    let t: Value = serde_json::from_str(run.block("topology")).expect("topology JSON");
    assert!(
        run.block("tree").starts_with("2 nodes · 8 LLCs · 64 CPUs"),
        "{}",
        run.block("tree")
    );
    // The guest's own view, CPU by CPU: its L3's CPUs, its SMT siblings, the L3's size.
    let sysfs = run.block("sysfs");
    let mut checked = 0;
    for l in sysfs.lines().filter(|l| l.starts_with("cpu")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let cpu: u64 = f[0].trim_start_matches("cpu").parse().unwrap();
        let (l3, smt, kb) = (cpus(f[2]), cpus(f[4]), f[6].trim_end_matches('K'));
        let c = &t["cpus"][cpu as usize];
        let llc = c["llc"].as_u64().unwrap() as usize;
        let mine: Vec<u64> = t["llcs"][llc]["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(mine, l3, "cpu{cpu}'s LLC");
        assert_eq!(
            t["llcs"][llc]["size_kb"].as_u64(),
            kb.parse::<u64>().ok(),
            "cpu{cpu}'s L3 size"
        );
        let siblings: Vec<u64> = c["smt_siblings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(siblings, smt, "cpu{cpu}'s SMT siblings");
        checked += 1;
    }
    assert_eq!(checked, 64);
    for l in sysfs.lines().filter(|l| l.starts_with("node")) {
        let (node, list) = l.split_once(' ').unwrap();
        let n: usize = node.trim_start_matches("node").parse().unwrap();
        let mine: Vec<u64> = t["nodes"][n]["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(mine, cpus(list), "node{n}");
    }
    // Four LLCs of eight CPUs per node.
    for (i, l) in t["llcs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(l["cpus"].as_array().unwrap().len(), 8, "llc{i}");
        assert_eq!(l["node"].as_u64(), Some(i as u64 / 4), "llc{i}'s node");
    }
}

#[test]
fn lab_7_2_big_hops_counted_exactly_per_distance_class_on_every_llc() {
    let run = run();
    let rec = recording(run, "big_recording");
    let hoppers: Vec<&str> = run.value("hoppers").split_whitespace().collect();
    assert_eq!(hoppers.len(), 32);
    for k in hoppers {
        let pid: u32 = run.value(&format!("hop_{k}_pid")).parse().unwrap();
        // The hopper's own count: `done N migrations M ...` (N hops, each checked with
        // sched_getcpu; the kernel's se.nr_migrations).
        let done = run.value(&format!("hop_{k}_done"));
        let f: Vec<&str> = done.split_whitespace().collect();
        assert_eq!(f.first(), Some(&"done"), "{k}: {done}");
        let hops: u64 = f[1].parse().unwrap();
        let kernel: u64 = f[3].parse().unwrap();
        assert_eq!(hops, 10, "{k}: {done}");
        // se.nr_migrations counts from its start: the pin before `ready` too.
        assert!(kernel >= hops, "{k}: {done}");
        let by = hops_of(&rec, pid);
        let class = k.trim_end_matches(|c: char| c.is_ascii_digit());
        let got = match class {
            "smt" => by.smt,
            "llc" => by.llc,
            "xllc" => by.cross_llc,
            "xnode" => by.cross_node,
            other => panic!("{other}"),
        };
        println!(
            "lab 7.2/{SHAPE}: {k} ({}): {by:?}",
            run.value(&format!("hop_{k}_cpus"))
        );
        assert_eq!((got, by.total()), (hops, hops), "{k}: {by:?}");
    }
}

#[test]
fn lab_7_2_big_recording_has_every_cpu_and_replays_in_every_view() {
    let run = run();
    let rec = recording(run, "big_recording");
    let (cpu_ms, hwm) = common::lab::record_cost(run);
    println!(
        "lab 7.2/{SHAPE}: llctop record's CPU time {cpu_ms:.1} ms per interval, peak resident {hwm} KiB"
    );
    assert!(
        rec.snapshots.len() >= 30,
        "{} snapshots",
        rec.snapshots.len()
    );
    for s in &rec.snapshots {
        assert_eq!(s.cpus.len(), 64, "#{}", s.seq);
        assert!(s.cpus.iter().all(|c| c.busy.is_some()), "#{}: busy", s.seq);
        assert_eq!(s.llcs.len(), 8);
        assert_eq!(s.nodes.len(), 2);
    }
    let themes = llctop::tui::theme::load_all(None).0;
    let mut app = App::replay(rec, "big.jsonl.gz", themes);
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        for v in ViewId::ALL {
            app.view = v;
            let screen = llctop::tui::render_to_text(&app, w, h);
            assert_eq!(screen.len(), h as usize, "{v:?} at {w}x{h}");
            // The header is whole: it names the machine and the replay.
            assert!(
                screen[0].contains("8 LLCs") || w < 100,
                "{v:?} {w}x{h}: {}",
                screen[0]
            );
            assert!(screen[0].contains("REPLAY"), "{v:?} {w}x{h}: {}", screen[0]);
        }
    }
    app.view = ViewId::Overview;
    let screen = llctop::tui::render_to_text(&app, 200, 60).join("\n");
    for l in 0..8 {
        assert!(screen.contains(&format!("LLC {l} ")), "LLC {l}:\n{screen}");
    }
}

#[test]
fn lab_7_2_big_serve_has_a_series_per_cpu_and_per_llc() {
    let run = run();
    let m = run.block("metrics");
    let count = |name: &str| {
        m.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
            .count()
    };
    // Per CPU: one busy series each; per LLC: busy, wait, CPUs (one series each).
    assert_eq!(count("llctop_cpu_busy_seconds_total"), 64, "{m}");
    for s in [
        "llctop_llc_busy_seconds_total",
        "llctop_llc_run_queue_wait_seconds_total",
        "llctop_llc_cpus",
    ] {
        assert_eq!(count(s), 8, "{s}");
    }
    assert_eq!(
        count("llctop_migrations_total"),
        4,
        "one per distance class"
    );
}
