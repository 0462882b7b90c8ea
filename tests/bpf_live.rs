//! The BPF source on the live kernel (needs root or CAP_BPF+CAP_PERFMON; skips with the
//! reason only when the kernel refuses BPF with EPERM):
//! - over one window, llctop's migration and context-switch totals equal the kernel's own
//!   perf software counters (cpu-migrations, context-switches, per CPU, system-wide)
//!   within 1%;
//! - a process forced to hop N times between two CPUs is counted exactly N times, in the
//!   distance class the topology gives for those CPUs.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use llctop::collect::{aggregate, empty_snapshot};
use llctop::kroot::KernelRoot;
use llctop::snapshot::Snapshot;
use llctop::source::Source;
use llctop::source::bpf::{BpfSource, LoadError, Mode};
use llctop::topology::{self, Topology};
use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::sw::Software;

fn load() -> Option<(Topology, BpfSource)> {
    load_modes(&[Mode::TpBtf, Mode::RawTp])
}

fn load_modes(modes: &[Mode]) -> Option<(Topology, BpfSource)> {
    let root = KernelRoot::default();
    let topo = topology::discover(&root).expect("topology");
    match BpfSource::load_modes(&topo, 100_000, modes) {
        Ok(b) => Some((topo, b)),
        Err(e) if e.0 == LoadError::permission().0 => {
            println!("SKIP: the kernel refused BPF (EPERM): {e}");
            None
        }
        Err(e) => panic!("BPF failed to load for a reason other than permission: {e}"),
    }
}

fn sample(topo: &Topology, src: &mut BpfSource) -> Snapshot {
    let mut s = empty_snapshot(topo);
    src.sample(topo, &mut s);
    aggregate(topo, &mut s);
    s
}

struct Hopper {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Hopper {
    fn start(a: u32, b: u32, n: u32) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
            .args(["hop", &a.to_string(), &b.to_string(), &n.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start llctop-workload");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("ready line");
        assert_eq!(line.trim(), "ready");
        Hopper { child, out }
    }

    fn go_and_wait(mut self) -> u32 {
        let pid = self.child.id();
        self.child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"go\n")
            .expect("go");
        let mut line = String::new();
        self.out.read_line(&mut line).expect("done line");
        assert!(line.starts_with("done"), "workload said {line:?}");
        assert!(self.child.wait().expect("wait").success());
        pid
    }
}

fn two_cpus(topo: &Topology) -> (u32, u32) {
    let online: Vec<u32> = topo.online_cpus().map(|c| c.cpu).collect();
    assert!(online.len() >= 2, "needs two online CPUs");
    (online[0], online[1])
}

#[test]
fn forced_hops_are_counted_exactly_with_their_distance() {
    let Some((topo, bpf)) = load() else { return };
    assert_eq!(bpf.mode(), Mode::TpBtf, "tp_btf loads on this kernel");
    forced_hops(topo, bpf);
}

#[test]
fn raw_tp_fallback_counts_the_same() {
    let Some((topo, bpf)) = load_modes(&[Mode::RawTp]) else {
        return;
    };
    assert_eq!(bpf.mode(), Mode::RawTp);
    forced_hops(topo, bpf);
}

fn forced_hops(topo: Topology, mut bpf: BpfSource) {
    let (a, b) = two_cpus(&topo);
    let want = topo.distance(a, b).expect("classified");
    const N: u32 = 300;
    let hopper = Hopper::start(a, b, N);
    sample(&topo, &mut bpf); // baseline after the initial pin
    let pid = hopper.go_and_wait();
    let s = sample(&topo, &mut bpf);
    let rows = &s.processes.as_ref().expect("processes").rows;
    let row = rows
        .iter()
        .find(|r| r.pid == pid)
        .expect("the hopper has a row");
    let by = row
        .migrations_by_distance
        .expect("exact per-process distances");
    println!(
        "hopper {pid}: {} migrations, {by:?} (expected {N} x {want:?})",
        row.migrations
    );
    assert_eq!(row.migrations, u64::from(N));
    assert_eq!(by.get(want), u64::from(N));
    assert_eq!(by.total(), u64::from(N));
    let m = s.migrations.as_ref().unwrap();
    assert_eq!(m.precision, llctop::snapshot::Precision::Exact);
    assert!(m.by_distance.get(want) >= u64::from(N));
    let c = m.by_cause.expect("causes");
    println!("causes in the window: {c:?}");
    // Every migration has exactly one cause. (A task that changes its own affinity sleeps
    // while the stopper runs and is placed on its new CPU when it wakes: `wakeup`.)
    assert_eq!(
        c.wakeup + c.load_balance + c.active_balance + c.numa + c.other,
        m.total()
    );
}

#[test]
fn totals_match_perf_software_counters_within_one_percent() {
    let Some((topo, mut bpf)) = load() else {
        return;
    };
    let cpus: Vec<u32> = topo.online_cpus().map(|c| c.cpu).collect();
    let open = |ev: Software| -> Vec<Counter> {
        cpus.iter()
            .map(|&c| {
                Counter::new(ev, (Proc::ALL, Cpu(c)), Opts::default())
                    .expect("perf_event_open as root")
            })
            .collect()
    };
    let migs = open(Software::CpuMigration);
    let switches = open(Software::CtxSwitch);
    let (a, b) = two_cpus(&topo);
    let hopper = Hopper::start(a, b, 2000);
    let churn = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
        .args(["churn", "1.5"])
        .stdout(Stdio::null())
        .spawn()
        .expect("churn");

    sample(&topo, &mut bpf);
    for c in migs.iter().chain(&switches) {
        c.enable().expect("enable");
    }
    hopper.go_and_wait();
    let mut churn = churn;
    assert!(churn.wait().expect("churn").success());
    for c in migs.iter().chain(&switches) {
        c.disable().expect("disable");
    }
    let s = sample(&topo, &mut bpf);

    let sum = |v: &[Counter]| -> u64 { v.iter().map(|c| c.stat().expect("read").count).sum() };
    let perf_migs = sum(&migs);
    let perf_cs = sum(&switches);
    let ours_migs = s.migrations.as_ref().unwrap().total();
    let ours_cs: u64 = s.cpus.iter().filter_map(|c| c.ctx_switches).sum();
    println!("migrations: perf {perf_migs}  llctop {ours_migs}");
    println!("context switches: perf {perf_cs}  llctop {ours_cs}");
    assert!(
        perf_migs >= 2000 && perf_cs > 2000,
        "the load must produce events"
    );
    let close = |a: u64, b: u64| (a as f64 - b as f64).abs() <= 0.01 * a.max(b) as f64;
    assert!(
        close(perf_migs, ours_migs),
        "migrations: perf {perf_migs} vs llctop {ours_migs}"
    );
    assert!(
        close(perf_cs, ours_cs),
        "context switches: perf {perf_cs} vs llctop {ours_cs}"
    );
    // Per CPU in/out add up to the total.
    let ins: u64 = s.cpus.iter().filter_map(|c| c.migrations_in).sum();
    let outs: u64 = s.cpus.iter().filter_map(|c| c.migrations_out).sum();
    assert_eq!(ins, outs);
    assert!(close(ins, ours_migs), "in/out {ins} vs total {ours_migs}");
}
