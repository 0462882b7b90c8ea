//! How long `llctop mcp` takes to answer `snapshot` and `findings` — the tool's work and
//! the JSON the SDK writes of its result — on 2 and 256 CPUs (synthetic topologies, every
//! snapshot field the collector fills), p50 and p99 over 1000 calls each, with the
//! advisor fed ten snapshots first. The stdio hop itself is measured by
//! scripts/mcp-bench.sh. Run: `cargo run --release --example mcp_bench`.

use std::sync::Arc;
use std::time::Instant;

use llctop::collect::{aggregate, empty_snapshot};
use llctop::mcp::live::Live;
use llctop::mcp::reply::result;
use llctop::mcp::tools::Tools;
use llctop::snapshot::{ByDistance, Migrations, Precision, ProcessStats, ProcessTable};
use llctop::topology::{self, Topology};

fn snapshot(topo: &Topology, seq: u64) -> llctop::snapshot::Snapshot {
    let mut s = empty_snapshot(topo);
    s.seq = seq;
    s.time.interval_ns = 1_000_000_000;
    s.time.mono_ns = llctop::clock::mono_ns();
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
                threads: 4,
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

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

fn main() {
    println!(" CPUs  LLCs  tool       p50 ms  p99 ms  answer bytes");
    for (nodes, llcs, cpus) in [(1, 1, 2), (2, 16, 8)] {
        let topo = topology::synthetic(nodes, llcs, cpus);
        let live = Arc::new(Live::new(topo.clone()));
        for seq in 0..10 {
            live.push(&llctop::run::pipeline::Tick::of(snapshot(&topo, seq)), None);
        }
        let tools = Tools {
            live,
            store: llctop::mcp::store::Store::new(std::env::temp_dir(), Vec::new(), 1 << 30),
        };
        for name in ["snapshot", "findings"] {
            let mut ms = Vec::new();
            let mut bytes = 0;
            for _ in 0..1000 {
                let t = Instant::now();
                let Ok((v, summary)) = tools.call(name, None) else {
                    eprintln!("{name} failed");
                    return;
                };
                let json = serde_json::to_string(&result(v, summary)).unwrap_or_default();
                ms.push(t.elapsed().as_secs_f64() * 1e3);
                bytes = json.len();
            }
            let (p50, p99) = percentiles(ms);
            println!(
                "{:>5} {:>5}  {name:<9} {p50:>7.2} {p99:>7.2}  {bytes:>12}",
                topo.cpus.len(),
                topo.llcs.len()
            );
        }
    }
}
