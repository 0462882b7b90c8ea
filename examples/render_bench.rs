//! Prints how long the TUI takes to draw one frame of each view, for 2 to 512 CPUs
//! (synthetic topologies, every snapshot field filled), into a 200×60 TestBackend.
//! Run: `cargo run --release --example render_bench` (scripts/render-bench.sh).

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
        for i in 0..120 {
            app.handle(Msg::Snapshot(Box::new(snapshot(&topo, i))));
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
}
