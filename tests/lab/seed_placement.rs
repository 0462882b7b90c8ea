//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.
//! One module per scenario (tests/lab/seed_*.rs); this one: placement.sh — seeds/001 (pile-up, against the kernel's own sched tracepoints) and seeds/002 (waiting beside an idle sibling).

use crate::common;

use common::kernel_trace::{Brackets, Started, Trace, trace_around};
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
    // The same events stamped again after llctop's programs ran (placement.sh).
    let mut after = String::new();
    flate2::read::GzDecoder::new(run.file("placement_trace_after"))
        .read_to_string(&mut after)
        .expect("the second trace");
    let brackets = Brackets::parse(&after);
    let piles = llctop::findings::pileup::find(&rec.snapshots);
    let report = run.block("report");
    let events = || {
        rec.snapshots
            .iter()
            .filter_map(|s| s.events.as_ref())
            .flat_map(|l| &l.events)
    };
    let (mut piled, mut stacked_only) = (0, 0);
    // Placements whose idle count llctop read apart from the trace's. CI 2026-11-28, 7.2
    // hogged7: llctop counted cpu2 busy at a placement while the trace had it idle 1.5 ms
    // before and after, no wakeup, arrival or switch on it — one in some 400 placements
    // over the runs on record, unexplained (the same build reads cpu2 idle elsewhere:
    // tests/fixtures/recordings/placement-7.2-bpf.jsonl). At most one per run is let
    // pass, and shown. (Since 2026-11-29 a CPU that changed before llctop's program had
    // surely run — the second trace's stamp of the placement — counts as unsure: a vCPU
    // stalled inside the placement's probes may be why; 0 of 96 apart in four boots.)
    let (mut placements, mut misread, mut misread_cases) = (0usize, Vec::new(), Vec::new());
    for case in run.value("starts").split_whitespace() {
        let pid: u32 = run.value(&format!("{case}_pid")).parse().unwrap();
        let started = Started::parse(run.block(&format!("{case}_out")));
        let tids: Vec<u32> = started.threads.iter().map(|t| t.0).collect();
        let trace = Trace::parse(&text, &tids, &allowed, &brackets);
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
            placements += 1;
            if !(sure..=most).contains(&idle) {
                misread.push(format!(
                    "{case}: {tid}: llctop saw {idle} idle allowed CPUs (lowest {:?}), the trace {:?} \
                     (unsure {:?}; llctop's program ran by {:.6}; {}); the trace from 1 ms before the placement to 5 ms after:\n{}",
                    events()
                        .find(|e| e.kind == llctop::snapshot::EventKind::Placement && e.pid == tid)
                        .and_then(|e| e.idle_cpu),
                    p.idle,
                    p.unsure,
                    p.seen_by,
                    p.state,
                    trace_around(&text, p.ts - 1e-3, p.ts + 5e-3)
                ));
                misread_cases.push(case);
            }
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
        if misread_cases.contains(&case) {
            // Its pile-ups follow from the counts: compared only where they agreed.
            println!(
                "lab {kernel}/{SHAPE} {case}: a placement's idle count apart from the trace's (below): its pile-ups not compared"
            );
        } else {
            assert!(
                sure.iter().all(|p| mine.contains(p)) && mine.iter().all(|p| maybe.contains(p)),
                "{case}: llctop's pile-ups are the trace's: {mine:?}, not between {sure:?} and {maybe:?}"
            );
        }
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
    println!(
        "lab {kernel}/{SHAPE}: {} of {placements} placements' idle counts apart from the trace's{}",
        misread.len(),
        misread
            .iter()
            .map(|m| format!("\n  {m}"))
            .collect::<String>()
    );
    assert!(
        misread.len() <= 1,
        "{} of {placements} placements' idle counts apart from the trace's:\n{}",
        misread.len(),
        misread.join("\n")
    );
    // The advisor: one finding per pile-up, naming the process and the CPU, in `llctop
    // report` of the recording; the same recording without the piled threads' events has
    // none.
    let adv = common::lab::findings_of(&rec);
    let found: Vec<String> = adv
        .problems()
        .filter(|e| e.kind() == Kind::PileUp)
        .map(|e| e.latest().summary.clone())
        .collect();
    let want: Vec<String> = piles.iter().map(|p| p.facts()).collect();
    // Each finding's severity is the one its cost earns, the cost as the kernel counts
    // it: each piled thread's wait in the second after its placement, and the part of it
    // while the CPU idle at its placement ran its idle task, from the kernel's own trace
    // (its mono clock) — against llctop's measured figures, thread by thread; the process's
    // wait against its threads' run_delay and runtime (/proc/thread-self/schedstat,
    // printed by the workload).
    let (mut threads, mut agree, mut apart, mut over) = (0usize, 0usize, Vec::new(), Vec::new());
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
        let pile = piles
            .iter()
            .find(|p| f.summary.starts_with(&p.facts()))
            .expect("the finding's pile-up");
        let waits = llctop::findings::harm::idle_waits(pile.tgid, &pile.tids, &rec.snapshots);
        let handed: Vec<String> = rec
            .snapshots
            .iter()
            .flat_map(|s| {
                s.events
                    .iter()
                    .flat_map(|e| e.idle_waits.iter().flatten())
                    .filter(|w| w.tgid == pile.tgid)
                    .map(move |w| format!("#{} at {} ms: {w:?}", s.seq, s.time.mono_ns / 1_000_000))
            })
            .collect();
        let updates: Vec<String> = e
            .updates
            .iter()
            .map(|u| format!("#{}..#{}: {}", u.first_seq, u.last_seq, u.summary))
            .collect();
        assert!(
            !waits.is_empty() && !f.summary.contains("not measured"),
            "{case}: the piled threads' waits measured: {}\npiled {:?}, placed {}..{} ms; handed over: {handed:#?}\nthe finding's updates: {updates:#?}",
            f.summary,
            pile.tids,
            pile.first_ns / 1_000_000,
            pile.last_ns / 1_000_000
        );
        let watched: Vec<(u32, i32)> = waits.iter().map(|w| (w.pid, w.cpu as i32)).collect();
        let span = llctop::snapshot::IDLE_WATCH_NS as f64 / 1e9;
        let exact = common::kernel_trace::idle_while_each_waited(&text, &watched, span, &brackets);
        let mut spared = 0.0;
        for w in &waits {
            let (tw, ti) = (exact[&w.pid].wait, exact[&w.pid].idle);
            let (sw, si) = (exact[&w.pid].slack, exact[&w.pid].idle_slack);
            let waits: Vec<String> = exact[&w.pid]
                .waits
                .iter()
                .map(|(a, b, i)| format!("{:.2}..{:.2} ms ({:.2} idle)", a * 1e3, b * 1e3, i * 1e3))
                .collect();
            let (mw, mi) = (w.wait_ns as f64 / 1e9, w.idle_ns as f64 / 1e9);
            println!(
                "lab {kernel}/{SHAPE}: {case}: thread {} beside idle cpu{}: waited {mw:.4} s (the trace {tw:.4} s ±{sw:.4}), cpu{} idle meanwhile {mi:.4} s (the trace {ti:.4} s ±{si:.4}), {} waits, {} partial",
                w.pid, w.cpu, w.cpu, w.waits, w.partial
            );
            assert_eq!(w.partial, 0, "{case}: every wait's idle part counted");
            // The wait, and its part beside the idle CPU, as the trace has them (see the
            // note before WAIT_TOLERANCE_S).
            threads += 1;
            let wait_ok = (mw - tw).abs() <= WAIT_TOLERANCE_S + 0.1 * tw + sw;
            let idle_ok = (mi - ti).abs() <= WAIT_TOLERANCE_S + 0.1 * ti + si;
            if wait_ok && idle_ok {
                agree += 1;
            } else {
                apart.push(format!(
                    "{case}: thread {} waited {mw:.4} s (the trace {tw:.4} s ±{sw:.4}), {mi:.4} s of it beside idle cpu{} (the trace {ti:.4} s ±{si:.4}); the trace's waits after its creation: {}",
                    w.pid,
                    w.cpu,
                    waits.join(", ")
                ));
            }
            // Far above the trace's part beside the idle CPU would be an alarm the
            // kernel's figures do not earn: bounded (the severity band below checks
            // the finding itself).
            if mi > ti + si + 0.025 {
                over.push(format!(
                    "{case}: thread {} {mi:.4} s beside idle cpu{}, the trace {ti:.4} s",
                    w.pid, w.cpu
                ));
            }
            spared += ti;
        }
        let mine = f
            .facts
            .iter()
            .find(|x| x.label.starts_with("the process's run-queue wait"))
            .map(|x| x.value)
            .expect("the wait measured");
        let oracle = |scale: f64, spared_by: f64| {
            let mut h =
                llctop::findings::harm::Harm::of((delay as f64 * scale) as u64, runtime, 0.0);
            h.spared_ns = (spared * spared_by * 1e9) as u64;
            llctop::findings::harm::Harm::severity(Some(h))
        };
        // The process's wait is summed over the snapshots from the one holding its first
        // placement to the one holding HARM_SPAN_NS after its last ("the start's first
        // second"): the kernel's trace counts the wait of the process (its parent and
        // threads) over exactly those snapshots' time. Against the threads' whole
        // run_delay it is short whenever they outlive that second (CI, 2026-11-28:
        // quiet7's 1.60 s of their 2.07 s, the last second left out by where the
        // snapshots fell).
        let (from, to) = (
            pile.first_ns,
            pile.last_ns + llctop::findings::harm::HARM_SPAN_NS,
        );
        let spanned: Vec<(u64, u64)> = rec
            .snapshots
            .iter()
            .map(|s| (s.time.mono_ns - s.time.interval_ns, s.time.mono_ns))
            .filter(|&(begin, end)| end >= from && begin <= to)
            .collect();
        let (lo, hi) = (
            spanned
                .iter()
                .map(|s| s.0)
                .min()
                .expect("snapshots over the start") as f64
                / 1e9,
            spanned
                .iter()
                .map(|s| s.1)
                .max()
                .expect("snapshots over the start") as f64
                / 1e9,
        );
        let process: Vec<u32> = Started::parse(out)
            .threads
            .iter()
            .map(|t| t.0)
            .chain([f.pids[0]])
            .collect();
        let traced = common::kernel_trace::waited_between(&text, &process, lo, hi);
        println!(
            "lab {kernel}/{SHAPE}: {case}: pile-up {} — the process's wait over {lo:.3}..{hi:.3} s {:.3} s (the trace {traced:.3} s); the threads' whole run_delay {:.3} s, runtime {:.3} s; their idle CPUs idle while they waited {spared:.4} s (the trace): earns {:?}",
            f.severity_tag(),
            mine / 1e9,
            delay as f64 / 1e9,
            runtime as f64 / 1e9,
            oracle(1.0, 1.0)
        );
        assert!(
            (mine / 1e9 - traced).abs() <= 0.1 * traced + 0.05,
            "{case}: llctop's wait {:.4} s over {lo:.3}..{hi:.3} s against the kernel trace's {traced:.4} s there",
            mine / 1e9
        );
        // Near a threshold the two measures may fall on either side of it: the severity is
        // one the kernel's figures earn somewhere in the process wait's ±25% (llctop's
        // spans whole snapshots) and the spared wait's ±25% (its undercount, above).
        let band: Vec<_> = [0.75, 1.0, 1.25]
            .iter()
            .flat_map(|&w| [0.75, 1.0, 1.25].map(|i| oracle(w, i)))
            .collect();
        assert!(
            band.contains(&f.severity),
            "{case}: {} but the kernel's figures earn {:?} (within the band: {band:?})",
            f.severity_tag(),
            oracle(1.0, 1.0)
        );
    }
    println!(
        "lab {kernel}/{SHAPE}: piled threads whose wait beside their idle CPU agrees with the kernel's trace: {agree} of {threads}{}",
        apart
            .iter()
            .map(|a| format!("\n  apart: {a}"))
            .collect::<String>()
    );
    assert!(threads > 0, "piled threads measured");
    assert_eq!(
        over,
        Vec::<String>::new(),
        "llctop's wait beside the idle CPU never 25 ms above the kernel trace's"
    );
    // Every thread agrees once the trace's own uncertainty about when llctop saw each
    // event is allowed (the brackets). Without them, 5 of 68 threads in six boots of 7.2
    // (2026-11-27) and 4 of ~19 in CI (2026-11-29) were 3.4-16.7 ms apart, often one
    // sibling up and one down: a vCPU stalled between the trace's probe and llctop's at
    // one switch moves that time from the outgoing thread's wait to the incoming one's
    // (docs/advisor.md).
    assert_eq!(
        apart,
        Vec::<String>::new(),
        "piled threads' waits (and their part beside the idle CPU) as the kernel's trace has them"
    );
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
        "lab {kernel}/{SHAPE}: starts with a pile-up {piled}, stacked without one {stacked_only} ({} rounds)",
        run.value("rounds")
    );
    assert!(piled >= 1 && stacked_only >= 1, "both cases happened");
}

/// How far a thread's measured wait (and its part beside the idle CPU) may lie from the
/// kernel's trace, besides 10%: the program's wait runs from the kernel's enqueue
/// (`sched_info.last_queued`) to the switch-in, the trace's from the wakeup tracepoint,
/// and the program puts the run queue's clock on CLOCK_MONOTONIC with a calibration
/// taken within 50 ms — microseconds each, a few of them per wait.
const WAIT_TOLERANCE_S: f64 = 0.002;

// The part of a piled thread's wait beside its idle CPU: llctop's agrees with the kernel
// trace's (its mono clock, as llctop's) for every thread, within WAIT_TOLERANCE_S + 10%
// (24 of 24 threads on 6.1 and 7.2 in one run, 2026-11-26: within 0.8 ms, most 0.0).
// Until then the program measured each wait back from the switch-in on the run queue's
// clock (sched_info.last_queued) and some threads lacked the idle part of one early
// wait (2-9 ms; CI: 2 of 4 threads on 7.2, 2 of 12 on 6.1). One cause was found: a
// switch-in with no wait on its new queue (the balancer moved the thread and ran it at
// once) went unseen, and the part cut off on the old queue counted just before the next
// wait instead; mending it left about a tick missing in 1 of 17 threads, not pinned down
// (a run queue's clock is not CLOCK_MONOTONIC read at the switch). Now each watched
// wait is stamped where it begins (bpf/idle.bpf.h), as the trace does: 41 of 41 threads
// agreed in two boots of each kernel. In a boot without the wakeup stamps (whose first
// waits are stamped the same way), one thread's whole first wait (9 ms) went uncounted —
// not explained. In six boots of 7.2 (2026-11-27) 5 of 68 threads, in three boots, were
// 3.4-16 ms apart, often one sibling up and another down. Explained 2026-11-29 with a
// second trace instance stamping each event after llctop's programs (Brackets) and
// llctop's own stamps printed into the trace: every stamp lay inside its event's
// bracket, and 1% of the brackets were 4-20 ms wide — the vCPU stalled between the two
// probes of one event, so llctop saw that switch later than the trace did, moving the
// stall from the outgoing thread's wait to the incoming one's. A thread's tolerance now
// adds those stalls (Waited::slack); every thread agrees, none may be apart, and none
// more than 25 ms above the trace beside the idle CPU beyond its stalls. With the trace's
// global clock (each CPU's sched_clock) threads parted by about a tick: it was not an
// oracle here.

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
    // cpu3's waits are its few tasks' wakeup latency on an idle vCPU, which TCG on a
    // loaded host stretches: 51-144 ms in three boots (2026-11-28), against cpu2's 4 s.
    assert!(wait3 < delay / 10, "nothing waits on cpu3");
    // cpu3 idles meanwhile, as the kernel counts it (/proc/stat over the waiters' run),
    // and llctop reads cpu3 as the kernel does. Not "every interval under 20%": in a CI
    // run on a loaded host (stop 56) cpu3 read [0.48, 0.17, 0.21] busy while cpu2 was
    // shared — kernel work under TCG lands on the idle sibling; the symptom (a task
    // waits beside a CPU mostly idle) held. The kernel's figure decides it; llctop's
    // mean over the shared intervals is held to it.
    let stat = run.block("wait_stat");
    let idle3 = proc_stat_idle_share(stat, 3);
    let mean3 = sibling.iter().sum::<f64>() / sibling.len().max(1) as f64;
    println!(
        "lab {kernel}/{SHAPE}: cpu3 {:.0}% idle over the waiters (/proc/stat); llctop's mean busy while cpu2 was shared {:.0}%",
        idle3 * 100.0,
        mean3 * 100.0
    );
    assert!(idle3 >= 0.6, "cpu3, in cpu2's LLC, idles meanwhile");
    assert!(
        (mean3 - (1.0 - idle3)).abs() <= 0.2,
        "llctop's cpu3 busy {mean3:.2} is the kernel's {:.2}",
        1.0 - idle3
    );
    let t: Value = serde_json::from_str(run.block("topology")).expect("topology JSON");
    assert_eq!(cpus_of(&t["llcs"])[1], [2, 3], "cpu2 and cpu3 share an LLC");
    // The advisor: work not conserved in llc1, at the severity its cost earns as the
    // kernel counts it — the waiters' run_delay × cpu3's idle share (/proc/stat) per
    // second the waiters ran (cpu3's own elapsed jiffies).
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

/// `llctop serve --flight-recorder` beside the waiters: the work not conserved fires as a
/// WARNING or worse and the recorder dumps the history by itself 2 s later — one ordinary
/// recording whose snapshots run without a gap from before the waiters started to past
/// the finding, with the finding's line in it.
fn check_flight_dump(kernel: &str) {
    use llctop::findings::Severity;
    use llctop::findings::advisor::State;
    let run = run(kernel, "placement.sh");
    let said = run.block("serve_err");
    println!("lab {kernel}/{SHAPE}: serve said:\n{said}");
    let line = said
        .lines()
        .find(|l| l.contains("dumped the history"))
        .unwrap_or_else(|| panic!("no automatic dump:\n{said}"));
    assert!(
        line.contains("warning-not_conserved") || line.contains("critical-not_conserved"),
        "{line}"
    );
    let dump = recording(run, "flight_dump");
    let seqs: Vec<u64> = dump.snapshots.iter().map(|s| s.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let fired = dump
        .findings
        .iter()
        .find(|l| {
            l.state == State::Fired
                && l.finding.kind == Kind::NotConserved
                && l.finding.severity >= Severity::Warning
        })
        .unwrap_or_else(|| panic!("no WARNING in the dump: {:?}", dump.findings));
    let first = *seqs.first().unwrap();
    let last = *seqs.last().unwrap();
    println!(
        "lab {kernel}/{SHAPE}: dump of snapshots {first}..={last}; the finding fired at {} (evidence from {})",
        fired.seq, fired.finding.first_seq
    );
    // The history before: from before the waiters queued on cpu2 (they start once the
    // recorder has written its first snapshot), and the 2 s after the finding. Where they
    // began is read from the dump's own cpu2 waits, not from the finding's evidence: that
    // is the advisor's whole window, which begins at the run's first snapshot when the
    // finding fires within 5 s (fired at #2, evidence from #0, 2026-11-28: the check
    // `first < evidence` failed though the dump held the quiet snapshot before the waits).
    let queued = dump
        .snapshots
        .iter()
        .find(|s| {
            s.cpus
                .iter()
                .any(|c| c.cpu == 2 && c.rq_wait_ns.is_some_and(|w| w > 100_000_000))
        })
        .map(|s| s.seq)
        .expect("the waiters' queueing on cpu2 in the dump");
    println!("lab {kernel}/{SHAPE}: cpu2's waits began in #{queued}");
    assert!(first < queued, "{first} vs {queued}");
    assert!(queued <= fired.seq, "{queued} vs {}", fired.seq);
    assert!(last > fired.seq, "{last} vs {}", fired.seq);
}

#[test]
fn lab_7_2_a_warning_dumps_the_flight_recorders_history_by_itself() {
    check_flight_dump("7.2");
}
