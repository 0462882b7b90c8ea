//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.
//! One file per scenario (tests/lab_seed_*.rs); this one: placement.sh — seeds/001 (pile-up, against the kernel's own sched tracepoints) and seeds/002 (waiting beside an idle sibling).

mod common;

use common::kernel_trace::{Started, Trace, trace_around};
use common::lab::{LabRun, cpus_of, recording};
use std::io::Read;

use llctop::findings::Kind;
use serde_json::Value;

const SHAPE: &str = "2s4llc-smt";

fn run(kernel: &str, scenario: &str) -> &'static LabRun {
    common::lab::run(kernel, SHAPE, scenario)
}

fn check_placement(kernel: &str) {
    let run = run(kernel, "placement.sh");
    let rec = recording(run, "placement_recording");
    let allowed = [0, 2, 4, 6];
    assert_eq!(
        run.value("trace_overrun"),
        "0",
        "the kernel's trace is whole"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(run.file("placement_trace"))
        .read_to_string(&mut text)
        .expect("the trace");
    let piles = llctop::findings::pileup::find(&rec.snapshots);
    let report = run.block("report");
    let events = || {
        rec.snapshots
            .iter()
            .filter_map(|s| s.events.as_ref())
            .flat_map(|l| &l.events)
    };
    let (mut piled, mut stacked_only) = (0, 0);
    for case in run.value("starts").split_whitespace() {
        let pid: u32 = run.value(&format!("{case}_pid")).parse().unwrap();
        let started = Started::parse(run.block(&format!("{case}_out")));
        let tids: Vec<u32> = started.threads.iter().map(|t| t.0).collect();
        let trace = Trace::parse(&text, &tids, &allowed);
        // Every thread's placement and first CPU as llctop recorded them are the
        // kernel's; a thread that had not moved when it asked saw that CPU itself.
        for &(tid, cpu, moved) in &started.threads {
            let placed = &trace.placed.get(&tid).expect("placement in the trace").cpu;
            let first = trace.first_run[&tid];
            let mine = |kind| -> Vec<i32> {
                events()
                    .filter(|e| e.kind == kind && e.pid == tid)
                    .map(|e| e.to_cpu)
                    .collect()
            };
            assert_eq!(
                mine(llctop::snapshot::EventKind::Placement),
                [*placed],
                "{case}: {tid} placed"
            );
            assert_eq!(
                mine(llctop::snapshot::EventKind::FirstRun),
                [first],
                "{case}: {tid} first ran"
            );
            if !moved {
                assert_eq!(first, cpu, "{case}: thread {tid} saw its first CPU");
            }
            // How many allowed CPUs were idle: the trace's count, or between its fewest
            // and most where a CPU changed within UNSURE_S.
            let p = &trace.placed[&tid];
            let sure = p.idle.iter().filter(|c| !p.unsure.contains(c)).count();
            let most = sure + p.unsure.len();
            let idle = events()
                .find(|e| e.kind == llctop::snapshot::EventKind::Placement && e.pid == tid)
                .and_then(|e| e.idle_allowed)
                .expect("the placement's idle count") as usize;
            assert!(
                (sure..=most).contains(&idle),
                "{case}: {tid}: llctop saw {idle} idle allowed CPUs (lowest {:?}), the trace {:?} \
                 (unsure {:?}; {}); the trace from 1 ms before the placement to 5 ms after:\n{}",
                events()
                    .find(|e| e.kind == llctop::snapshot::EventKind::Placement && e.pid == tid)
                    .and_then(|e| e.idle_cpu),
                p.idle,
                p.unsure,
                p.state,
                trace_around(&text, p.ts - 1e-3, p.ts + 5e-3)
            );
        }
        let (sure, maybe) = (trace.piled(false), trace.piled(true));
        let mine: Vec<(i32, usize)> = piles
            .iter()
            .filter(|p| p.tgid == pid)
            .map(|p| (p.cpu, p.threads))
            .collect();
        // Per thread: placed on, first ran on, idle allowed CPUs by the trace (those
        // marked ? changed within UNSURE_S), and llctop's idle count and lowest idle CPU.
        let threads: Vec<String> = tids
            .iter()
            .map(|t| {
                let p = &trace.placed[t];
                let mut idle: Vec<String> = p
                    .idle
                    .iter()
                    .map(|c| {
                        let q = if p.unsure.contains(c) { "?" } else { "" };
                        format!("{c}{q}")
                    })
                    .collect();
                idle.extend(
                    p.unsure
                        .iter()
                        .filter(|c| !p.idle.contains(c))
                        .map(|c| format!("busy{c}?")),
                );
                let llctop = events()
                    .find(|e| e.kind == llctop::snapshot::EventKind::Placement && e.pid == *t)
                    .map(|e| format!("{:?}/{:?}", e.idle_allowed, e.idle_cpu));
                format!(
                    "({}, {}, [{}], llctop {})",
                    p.cpu,
                    trace.first_run[t],
                    idle.join(" "),
                    llctop.unwrap_or_default()
                )
            })
            .collect();
        println!(
            "lab {kernel}/{SHAPE} {case}: threads (placed, first ran, idle allowed, llctop's idle count/CPU) {}; the kernel's trace: piled {sure:?} (at most {maybe:?}); llctop: {mine:?}",
            threads.join(" ")
        );
        // llctop read each CPU's run queue at one moment; where a CPU changed within
        // UNSURE_S of a placement the trace cannot say which side of the change that
        // moment fell, so llctop's pile-ups lie between the fewest and the most.
        assert!(
            sure.iter().all(|p| mine.contains(p)) && mine.iter().all(|p| maybe.contains(p)),
            "{case}: llctop's pile-ups are the trace's: {mine:?}, not between {sure:?} and {maybe:?}"
        );
        for p in piles.iter().filter(|p| p.tgid == pid) {
            let idle = p.idle_cpu.expect("an idle CPU named");
            assert!(
                allowed.contains(&idle) && idle != p.cpu,
                "{case}: CPU {idle}"
            );
            assert!(
                report.contains(&p.describe()),
                "{case}: the report says it\n{report}"
            );
        }
        if !sure.is_empty() {
            piled += 1;
        } else if maybe.is_empty() && !trace.stacked(false).is_empty() {
            stacked_only += 1;
        }
    }
    // The advisor: one finding per pile-up, naming the process and the CPU, in `llctop
    // report` of the recording; the same recording without the piled threads' events has
    // none.
    let adv = common::lab::findings_of(&rec);
    let found: Vec<String> = adv
        .problems()
        .filter(|e| e.kind() == Kind::PileUp)
        .map(|e| e.latest().summary.clone())
        .collect();
    let want: Vec<String> = piles.iter().map(|p| p.describe()).collect();
    // Each finding's severity is the one its cost earns, the cost as the kernel counts
    // it: the threads' own run_delay and runtime (/proc/thread-self/schedstat, printed
    // by the workload) and the idle CPU's idle share over the threads' life (/proc/stat,
    // read by the workload before its threads start and after they end).
    for e in adv.problems().filter(|e| e.kind() == Kind::PileUp) {
        let f = e.latest();
        let case = run
            .value("starts")
            .split_whitespace()
            .find(|c| run.value(&format!("{c}_pid")) == f.pids[0].to_string())
            .expect("the finding's start");
        let out = run.block(&format!("{case}_out"));
        let num = |k: &str| -> u64 {
            out.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{k} in {out}"))
        };
        let (delay, runtime) = (num("threads_run_delay_ns"), num("threads_runtime_ns"));
        let idle_cpu = f.cpus[1];
        // The kernel's own account (its trace, global clock): the time the idle CPU ran
        // its idle task while a thread of the start was runnable and not running — the
        // wait it could have spared, exactly — as a share of the threads' run_delay, the
        // figure llctop's idle share is. (/proc/stat, read by the workload around its
        // threads' life, is no oracle here: under TCG its ticks undercount a CPU's time —
        // 0.3-0.5 s for a life of over 1 s, 2026-11-26 — so its idle share is off.)
        let (spared, life_s) = common::kernel_trace::idle_while_waiting(
            &text,
            idle_cpu as i32,
            &started_tids(run, case),
        );
        let idle = if delay > 0 {
            (spared * 1e9 / delay as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let oracle = |scale: f64, idle_by: f64| {
            llctop::findings::harm::Harm::severity(Some(llctop::findings::harm::Harm::of(
                (delay as f64 * scale) as u64,
                runtime,
                (idle + idle_by).clamp(0.0, 1.0),
            )))
        };
        let mine = f
            .facts
            .iter()
            .find(|x| x.label.starts_with("the process's run-queue wait"))
            .map(|x| x.value)
            .expect("the wait measured");
        let my_idle = f
            .facts
            .iter()
            .find(|x| x.label.starts_with("idle share of the idle allowed CPU"))
            .map(|x| x.value)
            .expect("the idle share measured");
        println!(
            "lab {kernel}/{SHAPE}: {case}: pile-up {} — the threads' run_delay {:.3} s (llctop {:.3} s), runtime {:.3} s over {life_s:.2} s; cpu{idle_cpu} idle while they waited {spared:.3} s (the trace): {:.0}% of the wait could be spared (llctop {:.0}%): earns {:?}",
            f.severity_tag(),
            delay as f64 / 1e9,
            mine / 1e9,
            runtime as f64 / 1e9,
            idle * 100.0,
            my_idle * 100.0,
            oracle(1.0, 0.0)
        );
        assert!(
            (mine - delay as f64).abs() <= 0.15 * delay as f64 + 100e6,
            "{case}: llctop's wait {mine} against the threads' run_delay {delay}"
        );
        // The share of the wait the idle CPU could have spared: llctop's from whole 1 s
        // snapshots (each snapshot's idle share × the wait in it, at most that CPU's idle
        // time there and the time after the start), the kernel's trace's exact; they agree
        // to within a band, not exactly. The band is IDLE_BAND.
        assert!(
            (my_idle - idle).abs() <= IDLE_BAND,
            "{case}: llctop's share of the wait its idle CPU could spare {my_idle:.2} against the trace's exact {idle:.2}"
        );
        // Near a threshold the two measures may fall on either side of it: the severity is
        // one the kernel's figures earn somewhere in the wait's ±25% and the idle share's
        // band.
        let band: Vec<_> = [0.75, 1.0, 1.25]
            .iter()
            .flat_map(|&w| [-IDLE_BAND, 0.0, IDLE_BAND].map(|i| oracle(w, i)))
            .collect();
        assert!(
            band.contains(&f.severity),
            "{case}: {} but the kernel's figures earn {:?} (within the band: {band:?})",
            f.severity_tag(),
            oracle(1.0, 0.0)
        );
    }
    // Each finding is its pile-up, followed by what it cost (its severity's measure).
    assert_eq!(found.len(), want.len(), "a finding per pile-up: {found:?}");
    for (f, w) in found.iter().zip(&want) {
        assert!(
            f.starts_with(w.as_str()),
            "{f}\n  is not the finding of {w}"
        );
    }
    let host_report = common::lab::report_of(run, "placement_recording");
    for p in &piles {
        let line = format!(
            "pile-up: {} threads of {} ({}) placed on CPU {}",
            p.threads, p.tgid, p.comm, p.cpu
        );
        assert!(host_report.contains(&line), "{line}\n{host_report}");
    }
    let piled_pids: std::collections::BTreeSet<u32> = piles.iter().map(|p| p.tgid).collect();
    let mut without = rec.clone();
    for s in &mut without.snapshots {
        if let Some(l) = s.events.as_mut() {
            l.events.retain(|e| !piled_pids.contains(&e.tgid));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("without.jsonl");
    let mut w = llctop::record::Writer::create(&path, &without.header).unwrap();
    for s in &without.snapshots {
        w.write_snapshot(s).unwrap();
    }
    w.finish().unwrap();
    let r = common::lab::report_of_file(&path);
    assert!(!r.contains("placement pile-up"), "{r}");
    println!(
        "lab {kernel}/{SHAPE}: advisor pile-up findings {}",
        found.len()
    );
    // Both cases happened: threads stacked while an allowed CPU idled, and threads
    // stacked while none did (no pile-up).
    println!(
        "lab {kernel}/{SHAPE}: starts with a pile-up {piled}, stacked without one {stacked_only}"
    );
    assert!(piled >= 1 && stacked_only >= 1, "both cases happened");
}

/// How far llctop's share of a pile-up's wait its idle CPU could have spared (estimated
/// from whole 1 s snapshots) may lie from the exact one (the kernel's trace): llctop's is
/// an overestimate at that granularity — above the exact share by 0.02–0.36 in the 12
/// starts measured on 2026-11-26 (docs/advisor.md). The band states that error; it is
/// not a claim of precision.
const IDLE_BAND: f64 = 0.4;

/// The threads a start created (its own output).
fn started_tids(run: &LabRun, case: &str) -> Vec<u32> {
    Started::parse(run.block(&format!("{case}_out")))
        .threads
        .iter()
        .map(|t| t.0)
        .collect()
}

/// The idle share (idle + iowait of all its time) of `cpu` between the two /proc/stat
/// listings of `block` (before, `--`, after).
fn proc_stat_idle_share(block: &str, cpu: u32) -> f64 {
    proc_stat_idle(block, cpu).0
}

/// `cpu`'s idle share (idle + iowait) between the two /proc/stat listings of `block`,
/// and the seconds between them (its elapsed ticks at USER_HZ 100).
fn proc_stat_idle(block: &str, cpu: u32) -> (f64, f64) {
    let (before, after) = block.split_once("--").expect("two listings");
    let times = |text: &str| -> Vec<u64> {
        let tag = format!("cpu{cpu} ");
        let l = text
            .lines()
            .find(|l| l.starts_with(&tag))
            .unwrap_or_else(|| panic!("{tag} in {text}"));
        l.split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (a, b) = (times(before), times(after));
    let d: Vec<u64> = b.iter().zip(&a).map(|(x, y)| x - y).collect();
    let total: u64 = d.iter().sum();
    (
        (d[3] + d[4]) as f64 / total.max(1) as f64,
        total as f64 / 100.0,
    )
}

/// seeds/002's symptom on `kernel`: two tasks share cpu2 while cpu3, the other CPU of
/// its LLC, idles. llctop's per-CPU run-queue wait against the kernel's own run_delay of
/// the two (their /proc/thread-self/schedstat), and the sibling's busy time.
fn check_wait_beside_idle_sibling(kernel: &str) {
    let run = run(kernel, "placement.sh");
    let rec = recording(run, "wait_recording");
    let delay: u64 = ["waiter1", "waiter2"]
        .iter()
        .map(|b| {
            run.block(b)
                .lines()
                .find_map(|l| l.strip_prefix("run_delay_ns "))
                .expect("run_delay_ns")
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    let cpu = |s: &llctop::snapshot::Snapshot, c: usize| s.cpus[c].clone();
    let wait2: u64 = rec
        .snapshots
        .iter()
        .filter_map(|s| cpu(s, 2).rq_wait_ns)
        .sum();
    let wait3: u64 = rec
        .snapshots
        .iter()
        .filter_map(|s| cpu(s, 3).rq_wait_ns)
        .sum();
    // Snapshots in which cpu2 was busy the whole interval: the two ran.
    let shared: Vec<_> = rec
        .snapshots
        .iter()
        .filter(|s| cpu(s, 2).busy.is_some_and(|b| b > 0.95))
        .collect();
    let sibling: Vec<f64> = shared.iter().filter_map(|s| cpu(s, 3).busy).collect();
    println!(
        "lab {kernel}/{SHAPE}: cpu2 wait {:.3} s (the waiters' run_delay {:.3} s), cpu3 wait {:.3} s; cpu3 busy while cpu2 was shared {sibling:.2?}",
        wait2 as f64 / 1e9,
        delay as f64 / 1e9,
        wait3 as f64 / 1e9
    );
    assert!(shared.len() >= 2, "cpu2 was shared for whole intervals");
    assert!(
        wait2.abs_diff(delay) as f64 <= 0.05 * delay as f64 + 50e6,
        "cpu2's run-queue wait is the waiters' run_delay"
    );
    assert!(wait3 < delay / 20, "nothing waits on cpu3");
    assert!(
        sibling.iter().all(|&b| b < 0.2),
        "cpu3, in cpu2's LLC, idles meanwhile"
    );
    let t: Value = serde_json::from_str(run.block("topology")).expect("topology JSON");
    assert_eq!(cpus_of(&t["llcs"])[1], [2, 3], "cpu2 and cpu3 share an LLC");
    // The advisor: work not conserved in llc1, at the severity its cost earns as the
    // kernel counts it — the waiters' run_delay × cpu3's idle share (/proc/stat) per
    // second the waiters ran (cpu3's own elapsed jiffies).
    let stat = run.block("wait_stat");
    let idle3 = proc_stat_idle_share(stat, 3);
    let (before, after) = stat.split_once("--").unwrap();
    let jiffies = |text: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with("cpu3 "))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse::<u64>().unwrap())
            .sum()
    };
    // USER_HZ is 100 on Linux.
    let secs = (jiffies(after) - jiffies(before)) as f64 / 100.0;
    let oracle = |scale: f64| {
        llctop::findings::harm::conserve((delay as f64 * scale) as u64, 1.0 - idle3, secs).1
    };
    let adv = common::lab::findings_of(&rec);
    let eps: Vec<_> = adv
        .problems()
        .filter(|e| e.kind() == Kind::NotConserved && e.latest().key == "llc1")
        .collect();
    assert!(!eps.is_empty(), "{:?}", common::lab::problem_kinds(&adv));
    let worst = eps.iter().map(|e| e.worst()).max().unwrap();
    println!(
        "lab {kernel}/{SHAPE}: work not conserved in llc1 {worst:?} ({}); the kernel's figures: run_delay {:.2} s over {secs:.2} s, cpu3 {:.0}% idle: earns {:?}",
        eps[0].latest().severity_tag(),
        delay as f64 / 1e9,
        idle3 * 100.0,
        oracle(1.0)
    );
    assert!(
        [oracle(0.75), oracle(1.0), oracle(1.25)].contains(&worst),
        "{worst:?}, but the kernel's figures earn {:?}",
        oracle(1.0)
    );
}

#[test]
fn lab_7_2_placement_pile_up_flagged_exactly_when_an_allowed_cpu_sat_idle() {
    check_placement("7.2");
}

#[test]
fn lab_6_1_smt_placement_pile_up_flagged_exactly_when_an_allowed_cpu_sat_idle() {
    check_placement("6.1");
}

#[test]
fn lab_7_2_tasks_wait_on_one_cpu_while_its_llc_sibling_idles() {
    check_wait_beside_idle_sibling("7.2");
}

#[test]
fn lab_6_1_smt_tasks_wait_on_one_cpu_while_its_llc_sibling_idles() {
    check_wait_beside_idle_sibling("6.1");
}
