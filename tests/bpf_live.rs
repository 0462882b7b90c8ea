//! The BPF source on the live kernel (root: these tests are ignored without it, and fail
//! when the kernel refuses BPF):
//! - over one window, the migrations llctop counts for the test's own processes equal
//!   the kernel's own per-task count (`se.nr_migrations`, read by the workload itself),
//!   and its context-switch total equals the kernel's perf software counter
//!   (context-switches, per CPU, system-wide) within 1%;
//! - a process forced to hop N times between two CPUs is counted exactly N times, in the
//!   distance class the topology gives for those CPUs;
//! - two spinners sharing one CPU: the run-queue wait llctop counts for each equals the
//!   kernel's own `run_delay` of it (/proc/thread-self/schedstat, read by the workload)
//!   within 2%, with the waits taken from the kernel's sched_info and stamped at wakeup;
//! - `llctop record`'s bpf() calls per interval (strace) stay flat while 3,000 short
//!   processes exit (entries freed in batches, never one call per exit);
//! - a load interrupted by a burst of signals (the verifier's EAGAIN) is tried again;
//! - `--wakeups`: a pipe pair's wakeups within the workload's own bounds, or, where the
//!   kernel keeps the preempt count from BPF, the state saying why.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use llctop::collect::{aggregate, empty_snapshot};
use llctop::kroot::KernelRoot;
use llctop::snapshot::Snapshot;
use llctop::source::Source;
use llctop::source::bpf::{BpfSource, Mode, Waits, Walker};
use llctop::topology::{self, Topology};
use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::sw::Software;

fn load() -> (Topology, BpfSource) {
    load_modes(&[Mode::TpBtf, Mode::RawTp])
}

fn load_modes(modes: &[Mode]) -> (Topology, BpfSource) {
    load_with(modes, Waits::of_kernel())
}

fn load_with(modes: &[Mode], waits: Waits) -> (Topology, BpfSource) {
    common::require_root();
    let root = KernelRoot::default();
    let topo = topology::discover(&root).expect("topology");
    match BpfSource::load_with(&topo, 100_000, modes, waits) {
        Ok(b) => (topo, b),
        Err(e) => panic!("BPF failed to load as root: {e}"),
    }
}

/// The BPF source's state line in `s` (empty without one).
fn bpf_reason(s: &Snapshot) -> String {
    s.sources
        .iter()
        .find(|x| x.name == "bpf")
        .and_then(|x| x.reason.clone())
        .unwrap_or_default()
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
#[ignore = "needs root"]
fn forced_hops_are_counted_exactly_with_their_distance() {
    let (topo, bpf) = load();
    assert_eq!(bpf.mode(), Mode::TpBtf, "tp_btf loads on this kernel");
    forced_hops(topo, bpf);
}

#[test]
#[ignore = "needs root"]
fn raw_tp_fallback_counts_the_same() {
    let (topo, bpf) = load_modes(&[Mode::RawTp]);
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
#[ignore = "needs root"]
fn run_queue_wait_is_the_kernels_run_delay() {
    let (topo, bpf) = load();
    assert_eq!(
        bpf.waits(),
        Waits::SchedInfo,
        "this kernel has /proc/PID/schedstat"
    );
    assert!(
        bpf.settles_tasks(),
        "tp_btf with sched_info settles each task's own counters"
    );
    waits_match_run_delay(topo, bpf);
}

#[test]
#[ignore = "needs root"]
fn stamped_waits_are_the_kernels_run_delay_too() {
    let (topo, bpf) = load_with(&[Mode::TpBtf], Waits::Stamped);
    waits_match_run_delay(topo, bpf);
    let (topo, bpf) = load_with(&[Mode::RawTp], Waits::Stamped);
    waits_match_run_delay(topo, bpf);
}

/// The kernel's final `run_delay`, runtime and switch-ins (`pcount`) of child `c` once it
/// has exited: read from /proc/PID/schedstat while it is a zombie (waitid WNOWAIT: not yet
/// reaped), so the waits after its last own read — its print and exit — are in it too.
/// Then reaped.
fn final_schedstat(c: &mut Child) -> (u64, u64, u64) {
    let pid = c.id();
    // SAFETY: siginfo_t is plain data waitid fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with a valid siginfo_t.
    let rc = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
    assert_eq!(rc, 0, "waitid");
    let s =
        std::fs::read_to_string(format!("/proc/{pid}/schedstat")).expect("a zombie's schedstat");
    let f: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    c.wait().expect("reap");
    (f[1], f[0], f[2])
}

/// Two spinners pinned to one CPU, started and ended inside one window: each one's wait
/// as llctop counts it against the kernel's run_delay at its exit (read from the zombie:
/// the run_delay the spinner read itself before printing misses the waits after it — on a
/// loaded machine up to 12.6 ms of 525 ms were seen, 2.4%, past the 2% band).
/// Some kernels (this VM's vendor 6.18) switch to a task now and then without the
/// sched_switch tracepoint; where waits are summed at switch-in the wait that switch-in
/// ended is then missing, and llctop says so in the row (`switches_unseen`). A spinner
/// without one must match; one with one may only be short. A round where every spinner
/// had one proves nothing about the others: up to 4 rounds are run until one has a
/// spinner that had none. Where each task's own counters are settled
/// ([`BpfSource::settles_tasks`]) no wait is missing, and the spinner's CPU time must
/// match the kernel's too, and its switch-ins the kernel's `pcount` (a switch-in after
/// its exit hook — preempted on the way out — is not its, hence a band of 2).
fn waits_match_run_delay(topo: Topology, mut bpf: BpfSource) {
    let (a, _) = two_cpus(&topo);
    let mut matched = 0;
    for round in 1..=4 {
        sample(&topo, &mut bpf);
        let spinners: Vec<Child> = (0..2)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
                    .args(["spin", &a.to_string(), "1"])
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("spin")
            })
            .collect();
        let delays: Vec<(u32, u64, u64, u64)> = spinners
            .into_iter()
            .map(|mut c| {
                let pid = c.id();
                let mut said = String::new();
                std::io::Read::read_to_string(&mut c.stdout.take().expect("stdout"), &mut said)
                    .expect("spin output");
                assert!(said.contains("run_delay_ns "), "spin: {said}");
                let (run_delay, runtime, runs) = final_schedstat(&mut c);
                (pid, run_delay, runtime, runs)
            })
            .collect();
        let s = sample(&topo, &mut bpf);
        for (pid, kernel, kernel_ran, kernel_runs) in delays {
            let r = row(&s, pid);
            let (ours, unseen) = (r.rq_wait_ns, r.switches_unseen);
            println!(
                "{}{} round {round}: spinner {pid} on cpu{a}: kernel run_delay {kernel} ns, llctop {ours} ns, switch-ins unseen {unseen}; runtime kernel {kernel_ran} ns, llctop {} ns; runs kernel {kernel_runs}, llctop {:?}",
                bpf.mode().label(),
                if bpf.settles_tasks() { " settled" } else { "" },
                r.cpu_time_ns,
                r.runs
            );
            if bpf.settles_tasks() {
                assert!(
                    r.cpu_time_ns.abs_diff(kernel_ran) <= kernel_ran / 50,
                    "spinner {pid}: llctop runtime {} ns vs the kernel's {kernel_ran} ns",
                    r.cpu_time_ns
                );
                assert_eq!(unseen, 0, "settled waits miss nothing");
                let runs = r.runs.expect("runs counted where tasks are settled");
                assert!(
                    runs <= kernel_runs && runs + 2 >= kernel_runs,
                    "spinner {pid}: llctop {runs} runs vs the kernel's pcount {kernel_runs}"
                );
            } else {
                assert_eq!(r.runs, None, "runs only where tasks are settled");
            }
            assert!(
                kernel > 100_000_000,
                "the spinners must wait for each other"
            );
            // Both are the spinner's whole life: the same sum, to the band.
            let close = (ours as f64 - kernel as f64).abs() <= 0.02 * kernel as f64;
            if unseen == 0 {
                assert!(
                    close,
                    "spinner {pid}: llctop wait {ours} ns vs the kernel's run_delay {kernel} ns"
                );
                matched += 1;
            } else {
                assert!(
                    close || ours < kernel,
                    "spinner {pid}: {unseen} switch-ins unseen, yet llctop wait {ours} ns > the kernel's {kernel} ns"
                );
            }
        }
        if matched > 0 {
            return;
        }
    }
    panic!("in 4 rounds every spinner had a switch-in the kernel made without the tracepoint");
}

/// The process row of `pid` in `s`.
fn row(s: &Snapshot, pid: u32) -> &llctop::snapshot::ProcessStats {
    s.processes
        .as_ref()
        .expect("processes")
        .rows
        .iter()
        .find(|r| r.pid == pid)
        .unwrap_or_else(|| panic!("process {pid} has a row"))
}

#[test]
#[ignore = "needs root"]
fn own_processes_match_the_kernel_and_switches_match_perf() {
    let (topo, mut bpf) = load();
    let cpus: Vec<u32> = topo.online_cpus().map(|c| c.cpu).collect();
    let switches: Vec<Counter> = cpus
        .iter()
        .map(|&c| {
            Counter::new(Software::CtxSwitch, (Proc::ALL, Cpu(c)), Opts::default())
                .expect("perf_event_open as root")
        })
        .collect();
    let (a, b) = two_cpus(&topo);
    const HOPS: u32 = 2000;
    let hopper = Hopper::start(a, b, HOPS);

    sample(&topo, &mut bpf);
    for c in &switches {
        c.enable().expect("enable");
    }
    // Started inside the window, so every migration of its threads is in it.
    let churn = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
        .args(["churn", "1.5"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("churn");
    let churn_pid = churn.id();
    let hopper_pid = hopper.go_and_wait();
    let out = churn.wait_with_output().expect("churn");
    assert!(out.status.success());
    for c in &switches {
        c.disable().expect("disable");
    }
    let s = sample(&topo, &mut bpf);

    // The churn's threads counted their own migrations (the kernel's se.nr_migrations).
    let said = String::from_utf8_lossy(&out.stdout);
    let kernel: u64 = said
        .split_whitespace()
        .skip_while(|w| *w != "migrations")
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("churn did not report its migrations: {said:?}"));
    let ours = row(&s, churn_pid).migrations;
    println!("churn {churn_pid}: kernel se.nr_migrations {kernel}, llctop {ours}");
    // A thread may still move between reading its count and exiting: llctop, whose
    // window holds the whole process, may see a few more, never fewer.
    assert!(
        ours >= kernel && ours - kernel <= 2 + kernel / 100,
        "churn migrations: kernel {kernel} vs llctop {ours}"
    );
    assert_eq!(
        row(&s, hopper_pid).migrations,
        u64::from(HOPS),
        "the pinned hopper moves only when it hops"
    );
    let total = s.migrations.as_ref().unwrap().total();
    assert!(total >= u64::from(HOPS) + kernel, "total {total}");

    let perf_cs: u64 = switches.iter().map(|c| c.stat().expect("read").count).sum();
    let ours_cs: u64 = s.cpus.iter().filter_map(|c| c.ctx_switches).sum();
    println!("context switches: perf {perf_cs}  llctop {ours_cs}");
    assert!(perf_cs > 2000, "the load must produce events");
    let close = |a: u64, b: u64| (a as f64 - b as f64).abs() <= 0.01 * a.max(b) as f64;
    assert!(
        close(perf_cs, ours_cs),
        "context switches: perf {perf_cs} vs llctop {ours_cs}"
    );
    // Per CPU in/out add up to the total.
    let ins: u64 = s.cpus.iter().filter_map(|c| c.migrations_in).sum();
    let outs: u64 = s.cpus.iter().filter_map(|c| c.migrations_out).sum();
    assert_eq!(ins, outs);
    assert!(close(ins, total), "in/out {ins} vs total {total}");
}

/// Per-process state is bounded by the processes alive and what the CPUs still hold
/// (issue "Scale"): of 300 short-lived processes, each with a row in the snapshot of the
/// interval it ran in, none keeps a map entry two reads after a CPU last held it (in an
/// accumulator slot: it goes once the slot is taken over).
#[test]
#[ignore = "needs root"]
fn exited_processes_are_counted_then_forgotten() {
    let (topo, mut src) = load();
    let _ = sample(&topo, &mut src);
    let mut pids = std::collections::BTreeSet::new();
    for _ in 0..300 {
        let mut c = Command::new("/bin/true").spawn().expect("/bin/true");
        pids.insert(c.id());
        let _ = c.wait();
    }
    let mut seen = std::collections::BTreeSet::new();
    // Rows of these processes that were not marked exited with the name the exit hook
    // saw (each had exited before the first read below), and updates lost.
    let (mut unmarked, mut dropped) = (Vec::new(), 0);
    // A process goes at the second of two reads that find it unchanged and not held,
    // so one that a CPU held at any of the last three reads may still be there.
    let mut held = std::collections::VecDeque::new();
    for _ in 0..6 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let s = sample(&topo, &mut src);
        if let Some(t) = &s.processes {
            seen.extend(t.rows.iter().map(|r| r.pid).filter(|p| pids.contains(p)));
            unmarked.extend(
                t.rows
                    .iter()
                    .filter(|r| pids.contains(&r.pid) && !(r.exited && r.comm == "true"))
                    .map(|r| (r.pid, r.exited, r.comm.clone())),
            );
            dropped += t.dropped;
        }
        held.push_back(src.held());
        if held.len() > 3 {
            held.pop_front();
        }
    }
    let held: std::collections::HashSet<u32> = held.into_iter().flatten().collect();
    let left: Vec<u32> = src
        .processes_in_maps()
        .into_iter()
        .filter(|p| pids.contains(p))
        .collect();
    let stray: Vec<u32> = left.iter().copied().filter(|p| !held.contains(p)).collect();
    println!(
        "300 short-lived processes: {} had a row; forgotten {}; {} still in the map, all held by a CPU slot: {}",
        seen.len(),
        src.forgotten(),
        left.len(),
        stray.is_empty()
    );
    assert!(seen.len() >= 290, "{} of 300 counted", seen.len());
    assert!(
        unmarked.is_empty(),
        "rows not marked exited by the exit hook with their name: {unmarked:?}"
    );
    assert_eq!(dropped, 0, "no per-process update lost");
    assert!(src.forgotten() > 0);
    assert!(
        stray.is_empty(),
        "exited, not held, still in the map: {stray:?}"
    );
    // The forgotten processes' entries were given back: every entry marked in use has
    // a key (but for one the program may be setting up right now).
    let (keys, marked) = src.entries_in_use();
    println!("proc_idx keys {keys}, proc_vals entries marked in use {marked}");
    assert!(
        keys <= marked && marked <= keys + 4,
        "{marked} entries marked in use for {keys} keys: entries leaked"
    );
}

/// The walk that settles every task before a read, with each walker this kernel has:
/// a spinner that keeps running (never migrating, never exiting in the window) is
/// counted only by the walks, and after each read llctop's total for it is its own
/// `se.sum_exec_runtime` at the walk — at least what /proc/PID/schedstat said just before
/// the read and at most what it says just after (the same field: no tolerance).
#[test]
#[ignore = "needs root"]
fn a_running_task_is_settled_by_each_walk() {
    common::require_root();
    let root = KernelRoot::default();
    let topo = topology::discover(&root).expect("topology");
    let (a, _) = two_cpus(&topo);
    let walkers = Walker::of_kernel();
    println!("walkers on this kernel: {walkers:?}");
    assert!(
        walkers.contains(&Walker::OpenCoded),
        "this kernel (6.18) has the open-coded task iterator"
    );
    let mut settled = 0;
    for w in walkers {
        let mut bpf =
            BpfSource::load_walkers(&topo, 100_000, &[Mode::TpBtf], Waits::of_kernel(), &[w])
                .unwrap_or_else(|e| panic!("{w:?}: BPF failed to load as root: {e}"));
        let first = sample(&topo, &mut bpf);
        if bpf.walker() != Some(w) {
            // Some 6.18 builds refuse one walker's program (EPERM before the verifier
            // runs): the source must then load without it and say so.
            let reason = first
                .sources
                .iter()
                .find(|x| x.name == "bpf")
                .and_then(|x| x.reason.clone())
                .unwrap_or_default();
            assert_eq!(bpf.walker(), None, "{w:?}");
            assert!(
                reason.contains("the kernel refused the task walker"),
                "{w:?} refused, and said: {reason}"
            );
            println!("{w:?}: refused by this kernel, loaded without it: {reason}");
            continue;
        }
        settled += 1;
        let mut child = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
            .args(["spin", &a.to_string(), "4"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spin");
        let pid = child.id();
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("spin ready");
        assert_eq!(line.trim(), "ready");
        let runtime = || -> u64 {
            std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .expect("schedstat of the spinner")
        };
        let mut ours = 0u64;
        for read in 1..=5 {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let before = runtime();
            let s = sample(&topo, &mut bpf);
            let after = runtime();
            ours += s
                .processes
                .as_ref()
                .and_then(|p| p.rows.iter().find(|r| r.pid == pid))
                .map_or(0, |r| r.cpu_time_ns);
            println!(
                "{w:?} read {read}: spinner {pid}: kernel {before}..{after} ns, llctop {ours} ns ({:?})",
                bpf.settle_time()
            );
            assert!(
                before <= ours && ours <= after,
                "{w:?} read {read}: llctop {ours} ns outside the kernel's {before}..{after} ns"
            );
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(settled > 0, "at least one walker settles on this kernel");
}

/// The kernel features an old kernel lacks, taken as missing on this one (the test-only
/// switch of src/source/bpf/features.rs): Debian 11's 5.10 lacks all three; Ubuntu
/// 22.04's 5.15 lacks bpf_loop.
const OLD_KERNELS: [(&str, &str); 3] = [
    ("5.10-like", "task_storage,bpf_loop,fetch_atomics"),
    ("5.15-like", "bpf_loop"),
    ("5.11-like", "fetch_atomics,bpf_loop"),
];

fn load_without(modes: &[Mode], waits: Waits, without: &str) -> (Topology, BpfSource) {
    common::require_root();
    let topo = topology::discover(&KernelRoot::default()).expect("topology");
    match BpfSource::load_without(&topo, 100_000, modes, waits, without) {
        Ok(b) => (topo, b),
        Err(e) => panic!("BPF without {without} did not load: {e}"),
    }
}

#[test]
#[ignore = "needs root"]
fn old_kernels_paths_count_hops_and_waits_exactly_and_say_what_they_lack() {
    for (name, without) in OLD_KERNELS {
        println!("== {name}: without {without}");
        let (topo, mut bpf) =
            load_without(&[Mode::TpBtf, Mode::RawTp], Waits::of_kernel(), without);
        assert_eq!(bpf.mode(), Mode::TpBtf, "{name}: tp_btf loads without them");
        assert!(
            !bpf.settles_tasks() || !without.contains("fetch_atomics"),
            "{name}"
        );
        // The source state names each degradation with the kernel that lifts it.
        sample(&topo, &mut bpf);
        let s = sample(&topo, &mut bpf);
        let reason = bpf_reason(&s);
        println!("{name}: {reason}");
        if without.contains("bpf_loop") {
            assert!(
                reason.contains("bpf_loop (5.17)") || reason.contains("no bpf_loop: 5.17"),
                "{reason}"
            );
        }
        if without.contains("fetch_atomics") || without.contains("task_storage") {
            assert!(
                reason.contains("not settled from each task's own counters"),
                "{reason}"
            );
        }
        forced_hops(topo.clone(), bpf);
        // Waits: stamped at wakeup (a hash where task storage is missing), and from the
        // kernel's sched_info.
        let (topo, bpf) = load_without(&[Mode::TpBtf], Waits::Stamped, without);
        waits_match_run_delay(topo, bpf);
        let (topo, bpf) = load_without(&[Mode::TpBtf], Waits::of_kernel(), without);
        waits_match_run_delay(topo, bpf);
        // Placements: the bounded scan still counts the idle allowed CPUs (2 CPUs here).
        let (topo, mut bpf) = load_without(&[Mode::TpBtf], Waits::of_kernel(), without);
        sample(&topo, &mut bpf);
        let child = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
            .args(["pinned-threads", "0,1", "2", "0.1"])
            .stdout(Stdio::null())
            .status()
            .expect("pinned-threads");
        assert!(child.success());
        let s = sample(&topo, &mut bpf);
        let placements: Vec<_> = s
            .events
            .iter()
            .flat_map(|l| &l.events)
            .filter(|e| e.kind == llctop::snapshot::EventKind::Placement)
            .collect();
        assert!(!placements.is_empty(), "{name}: placements recorded");
        assert!(
            placements.iter().all(|e| e.idle_allowed.is_some()),
            "{name}: idle allowed CPUs counted by the bounded scan"
        );
    }
}

/// The verifier stops with EAGAIN when a signal is pending for the loading thread;
/// libbpf's five quick retries can all fall inside a burst of signals (seen once in CI,
/// the old-kernel test's fourth load; what sent them is not known). Here a burst of SIGUSR2 (a
/// handler installed: a signal with none would be dropped) aimed at this thread alone for
/// one second while the largest program (no bpf_loop: its scan unrolled) loads (without
/// the retries it fails with the CI's EAGAIN; the retries pause 1.5 s in all): llctop waits
/// the burst out and loads.
#[test]
#[ignore = "needs root"]
fn a_load_interrupted_by_a_burst_of_signals_waits_it_out() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    common::require_root();
    let caught = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(libc::SIGUSR2, Arc::clone(&caught)).expect("SIGUSR2 handler");
    // SAFETY: getpid/gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    let t0 = std::time::Instant::now();
    let burst = std::thread::spawn(move || {
        let mut sent = 0u32;
        while t0.elapsed() < std::time::Duration::from_millis(1000) {
            // SAFETY: tgkill(2) of a thread of this process with a handled signal.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR2) };
            sent += 1;
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        sent
    });
    let (_topo, bpf) = load_without(&[Mode::TpBtf], Waits::of_kernel(), "bpf_loop");
    let sent = burst.join().expect("burst thread");
    println!(
        "loaded in {:?} after a 1 s burst of {sent} signals ({})",
        t0.elapsed(),
        bpf.mode().label()
    );
    assert!(
        caught.load(Ordering::Relaxed),
        "the burst reached this thread"
    );
}

#[test]
#[ignore = "needs root"]
fn a_kernel_without_btf_is_named_not_a_bare_einval_and_procfs_takes_over() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let llctop = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_llctop"))
            .args(args)
            .env("LLCTOP_BPF_WITHOUT", "btf")
            .env("LLCTOP_JOURNAL", dir.path().join("j.json"))
            .output()
            .unwrap()
    };
    let out = llctop(&[
        "--source",
        "bpf",
        "record",
        "-o",
        "/dev/null",
        "--duration",
        "1s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no BTF") && err.contains("CONFIG_DEBUG_INFO_BTF"),
        "{err}"
    );
    assert!(!err.contains("EINVAL"), "{err}");
    let out = llctop(&["--interval", "300ms", "live", "--duration", "1s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("bpf Absent: this kernel has no BTF"), "{err}");
    assert!(err.contains("using procfs sampling"), "{err}");
}

/// Snapshot lines written to the recording at `path` so far.
fn snapshots_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"type\":\"snapshot\""))
        .count()
}

/// strace (-f, bpf() only) attached to `pid` while `during` runs, then `settle` more:
/// the bpf() commands it saw, and the recording's intervals that passed meanwhile.
fn bpf_calls_while(
    pid: u32,
    rec: &std::path::Path,
    dir: &std::path::Path,
    during: impl FnOnce(),
    settle: std::time::Duration,
) -> (Vec<String>, usize) {
    let log = dir.join(format!("strace-{}", snapshots_in(rec)));
    let mut st = Command::new("strace")
        .args(["-f", "-e", "trace=bpf", "-o"])
        .arg(&log)
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("strace (scripts/deps.sh installs it)");
    // Attached once it has written its first line or a moment passed.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let first = snapshots_in(rec);
    during();
    std::thread::sleep(settle);
    let last = snapshots_in(rec);
    // SAFETY: kill(2) of our own child; SIGINT detaches strace cleanly.
    unsafe { libc::kill(st.id() as i32, libc::SIGINT) };
    let _ = st.wait();
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let i = l.find("bpf(BPF_")?;
            Some(l[i + 4..].split(',').next()?.to_string())
        })
        .collect();
    (calls, last.saturating_sub(first).max(1))
}

/// An exit storm costs no bpf() calls (issue "Always on"): `llctop record` with the BPF
/// source, its bpf() calls per interval under strace while nothing in particular exits
/// and while 3,000 short processes run and exit — each exited process's entries are
/// freed in batches, never one call per exit.
#[test]
#[ignore = "needs root"]
fn bpf_calls_per_interval_stay_flat_while_thousands_of_processes_exit() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args([
            "--interval",
            "1s",
            "record",
            "--source",
            "bpf",
            "--duration",
            "120s",
            "-o",
        ])
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while snapshots_in(&rec) < 2 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "no snapshots from record"
        );
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            panic!("record ended ({st}): {err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let quiet = bpf_calls_while(
        child.id(),
        &rec,
        dir.path(),
        || {},
        std::time::Duration::from_secs(6),
    );
    let churn = bpf_calls_while(
        child.id(),
        &rec,
        dir.path(),
        || {
            for _ in 0..3000 {
                let _ = Command::new("/bin/true").status();
            }
        },
        std::time::Duration::from_secs(3),
    );
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let per = |(calls, n): &(Vec<String>, usize)| calls.len() as f64 / *n as f64;
    let deletes = churn
        .0
        .iter()
        .filter(|c| *c == "BPF_MAP_DELETE_ELEM")
        .count();
    println!(
        "bpf() per interval: quiet {:.1} ({} intervals), 3,000 exits {:.1} ({} intervals, {deletes} single deletes)",
        per(&quiet),
        quiet.1,
        per(&churn),
        churn.1
    );
    assert!(!quiet.0.is_empty(), "strace saw the recorder's bpf() calls");
    assert!(
        per(&churn) <= per(&quiet) + 10.0,
        "calls grew with exits: {:?}",
        churn.0
    );
    assert!(deletes < 100, "{deletes} single deletes for 3,000 exits");
}

/// `--wakeups` on this kernel. Where BPF can reach the per-CPU preempt count (its
/// kallsyms list `__preempt_count` or `pcpu_hot`), a pipe pair's wakeups of each other lie
/// within the workload's own bounds (at least the woken side's sleeps, at most its
/// partner's writes). Where it cannot (this VM's kernel: no CONFIG_KALLSYMS_ALL), the BPF
/// source's state names why, no snapshot carries wakeups, and everything else is counted
/// as before. The kernel lab's 7.2 runs the counting half (tests/lab/cas_inside.rs).
#[test]
#[ignore = "needs root"]
fn wakeup_pairs_are_counted_within_the_workloads_bounds_or_the_state_says_why() {
    let (topo, mut bpf) = load();
    bpf.count_wakeups();
    let _ = sample(&topo, &mut bpf);
    let mut c = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
        .args(["pipe-pair", "2"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("llctop-workload");
    let out = BufReader::new(c.stdout.take().expect("stdout"));
    let lines: Vec<String> = out.lines().map_while(Result::ok).collect();
    let _ = c.wait();
    let nums = |word: &str| -> Vec<u64> {
        lines
            .iter()
            .find(|l| l.starts_with(word))
            .unwrap_or_else(|| panic!("no {word} line in {lines:?}"))
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    let (pair, own) = (nums("pair"), nums("rounds"));
    let (parent, child) = (pair[0] as u32, pair[1] as u32);
    let (rounds, parent_sleeps, child_sleeps) = (own[0], own[1], own[2]);
    let s = sample(&topo, &mut bpf);
    let reason = bpf_reason(&s);
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let reachable = kallsyms.lines().any(|l| {
        l.split_whitespace()
            .nth(2)
            .is_some_and(|n| n == "__preempt_count" || n == "pcpu_hot")
    });
    assert!(s.migrations.is_some(), "the rest is counted");
    if !reachable {
        println!(
            "this kernel's kallsyms has no per-CPU preempt count: the refusal is checked, the counting runs in the kernel lab"
        );
        assert!(
            reason.contains(
                "no wakeup pairs: this kernel gives BPF no address for its per-CPU preempt count"
            ),
            "{reason}"
        );
        assert_eq!(s.wakeups, None);
        return;
    }
    assert!(
        reason.contains(llctop::source::bpf::WAKEUPS_COUNTED),
        "{reason}"
    );
    let w = s.wakeups.as_ref().expect("wakeups counted");
    let count = |a: u32, b: u32| {
        w.pairs
            .iter()
            .filter(|p| p.waker == a && p.wakee == b)
            .map(|p| p.count)
            .sum::<u64>()
    };
    let (down, up) = (count(parent, child), count(child, parent));
    println!(
        "{rounds} round trips, sleeps {parent_sleeps} and {child_sleeps}: counted {down} down, {up} up"
    );
    assert!((child_sleeps..=rounds + 1).contains(&down), "{down}");
    assert!((parent_sleeps..=rounds + 2).contains(&up), "{up}");
}
