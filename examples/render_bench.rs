//! Prints how long the TUI takes to draw one frame of each view, for 2 to 512 CPUs
//! (synthetic topologies, every snapshot field filled), into a 200×60 TestBackend.
//! Run: `cargo run --release --example render_bench` (scripts/render-bench.sh).

use llctop::run::pipeline::Ticker;
use std::time::{Duration, Instant};

use llctop::collect::{aggregate, empty_snapshot};
use llctop::snapshot::{ByDistance, Migrations, Precision, ProcessStats, ProcessTable};
use llctop::topology::{self, Topology};
use llctop::tui::app::{App, Msg, ViewId};
use llctop::tui::theme;

fn snapshot(topo: &Topology, seq: u64) -> llctop::snapshot::Snapshot {
    let mut s = empty_snapshot(topo);
    s.seq = seq;
    s.time.interval_ns = 1_000_000_000;
    s.time.mono_ns = (seq + 1) * 1_000_000_000;
    for c in &mut s.cpus {
        c.busy = Some(((c.cpu as u64 * 13 + seq) % 100) as f64 / 100.0);
        c.rq_wait_ns = Some(c.cpu as u64 * 1000);
        c.migrations_in = Some(3);
        c.migrations_out = Some(3);
        c.rq_wait_hist = Some(vec![1; 16]);
    }
    let n = topo.llcs.len();
    s.migrations = Some(Migrations {
        precision: Precision::Exact,
        by_distance: ByDistance {
            smt: 1,
            llc: 2,
            cross_llc: 3,
            cross_node: 4,
        },
        by_cause: None,
        llc_matrix: vec![vec![5; n]; n],
        unclassified: 0,
        preferred: None,
    });
    s.processes = Some(ProcessTable {
        precision: Precision::Exact,
        total: 64,
        rows: (0..64)
            .map(|i| ProcessStats {
                pid: 1000 + i,
                comm: format!("proc{i}"),
                cpu_time_ns: 1_000_000 * i as u64,
                runtime_per_llc_ns: vec![1000; n],
                ..ProcessStats::default()
            })
            .collect(),
        ..ProcessTable::default()
    });
    aggregate(topo, &mut s);
    s
}

fn main() {
    let themes = theme::load_all(None).0;
    println!(" CPUs   LLCs  ms per frame by view (200×60)");
    for (nodes, llcs, cpus) in [(1, 1, 2), (2, 2, 4), (2, 8, 16), (4, 16, 8)] {
        let topo = topology::synthetic(nodes, llcs, cpus);
        let mut app = App::live(topo.clone(), Duration::from_secs(1), themes.clone());
        let mut ticker = Ticker::new(&topo, &[]);
        for i in 0..120 {
            app.handle(Msg::Tick(Box::new(ticker.tick(snapshot(&topo, i)))));
        }
        let mut cols = Vec::new();
        for v in ViewId::ALL {
            app.view = v;
            let n = 50;
            let t = Instant::now();
            for _ in 0..n {
                std::hint::black_box(llctop::tui::render_to_text(&app, 200, 60));
            }
            let ms = t.elapsed().as_secs_f64() * 1000.0 / n as f64;
            cols.push(format!("{} {ms:.2}", v.title()));
        }
        println!(
            "{:>5} {:>6}  {}",
            topo.cpus.len(),
            topo.llcs.len(),
            cols.join(" · ")
        );
    }
    // The live history's memory: 10 minutes at 100 ms of a 512-CPU machine (6,000
    // snapshots), a frame drawn every 10th, this process's resident memory after.
    let topo = topology::synthetic(4, 16, 8);
    let mut app = App::live(topo.clone(), Duration::from_millis(100), themes);
    let mut ticker = Ticker::new(&topo, &[]);
    for i in 0..6_000 {
        app.handle(Msg::Tick(Box::new(ticker.tick(snapshot(&topo, i)))));
        if i % 10 == 0 {
            std::hint::black_box(llctop::tui::render_to_text(&app, 200, 60));
        }
    }
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
        })
        .unwrap_or_else(|| "?".into());
    println!(
        "history: 6,000 snapshots of {} at 100 ms: {} kept ({:.0} KB each parsed by estimate, \
         {:.1} KB packed), history {:.1} MiB, resident {} KiB",
        topo.summary(),
        app.snaps.len(),
        app.snaps.newest().map_or(0, |s| s.approx_bytes()) as f64 / 1e3,
        app.snaps.metas().last().map_or(0, |p| p.bytes()) as f64 / 1e3,
        app.snaps.bytes() as f64 / (1 << 20) as f64,
        rss
    );
}
