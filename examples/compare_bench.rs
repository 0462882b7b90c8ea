//! Prints the time `llctop report --compare` spends on the verdict, per window, for
//! experiments of 12 to 100,000 windows (below 30 windows per value the statistics
//! resample a fixed number of times: a fixed cost per metric, not per window) (synthetic snapshots on a 2-node, 4-LLC topology
//! with every figure the experiment metrics read): the verdict must stay linear in the
//! windows (issue "Reliability II": at most 10 µs per window), whatever their number.
//! Run: `cargo run --release --example compare_bench` (scripts/compare-bench.sh).

use std::time::Instant;

use llctop::collect::{aggregate, empty_snapshot};
use llctop::experiment::{Arm, Experiment, Window, verdict};
use llctop::snapshot::{ByCause, ByDistance, Migrations, Precision, Snapshot};
use llctop::topology::{self, Topology};

fn snapshot(topo: &Topology, seq: u64, arm: Arm) -> Snapshot {
    let mut s = empty_snapshot(topo);
    s.seq = seq;
    s.time.interval_ns = 1_000_000_000;
    s.time.mono_ns = (seq + 1) * 1_000_000_000;
    let wobble = seq * 7919 % 13;
    for c in &mut s.cpus {
        c.busy = Some(((c.cpu as u64 * 13 + seq) % 100) as f64 / 100.0);
        c.rq_wait_ns = Some(c.cpu as u64 * 1000 + wobble);
        c.ctx_switches = Some(100 + wobble);
        c.rq_wait_hist = Some(vec![1 + wobble; 16]);
    }
    let x = if arm == Arm::A { 40 } else { 30 };
    s.migrations = Some(Migrations {
        precision: Precision::Exact,
        by_distance: ByDistance {
            smt: 5 + wobble,
            llc: 7,
            cross_llc: x + wobble,
            cross_node: 2,
        },
        by_cause: Some(ByCause {
            wakeup: 20 + wobble,
            load_balance: x,
            active_balance: 1,
            numa: wobble,
            other: 3,
        }),
        llc_matrix: vec![vec![1; topo.llcs.len()]; topo.llcs.len()],
        unclassified: 0,
        preferred: None,
    });
    aggregate(topo, &mut s);
    s
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology/qemu-lab-2s2llc");
    let topo = topology::discover(&llctop::kroot::KernelRoot::new(root)).expect("fixture");
    println!("{:>8} {:>10} {:>12}", "windows", "verdict", "per window");
    for n in [12u32, 24, 58, 60, 1_000, 10_000, 100_000] {
        let exp = Experiment {
            knob: "k".into(),
            a: "0".into(),
            b: "1".into(),
            window_ns: 2_000_000_000,
            warmup_ns: 0,
            rounds: n / 2,
            command: vec![],
            steady: false,
        };
        let (mut snaps, mut windows) = (Vec::new(), Vec::new());
        for (i, arm) in exp.order().into_iter().enumerate() {
            let seq = 2 * i as u64;
            snaps.push(snapshot(&topo, seq, arm));
            snaps.push(snapshot(&topo, seq + 1, arm));
            windows.push(Window {
                index: i as u32,
                arm,
                value: exp.value(arm).into(),
                first_seq: seq,
                last_seq: seq + 1,
                command_secs: None,
                exit_code: None,
                command_pids: Vec::new(),
                not_counted: None,
            });
        }
        let t = Instant::now();
        exp.check_windows(&windows).expect("a valid plan");
        let v = verdict::compute(&exp, &windows, &snaps);
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(v.windows, n as usize);
        println!(
            "{n:>8} {:>8.1}ms {:>10.2}µs   ({} metrics)",
            secs * 1e3,
            secs * 1e6 / f64::from(n),
            v.rows.len()
        );
    }
}
