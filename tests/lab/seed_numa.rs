//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.
//! One module per scenario (tests/lab/seed_*.rs); this one: numa.sh — seeds/003: per-cgroup NUMA balancing counters.

use crate::common;

use common::lab::{LabRun, recording};

use llctop::findings::Kind;

const SHAPE: &str = "2s4llc-smt";

fn run(kernel: &str, scenario: &str) -> &'static LabRun {
    common::lab::run(kernel, SHAPE, scenario)
}

#[test]
fn lab_7_2_smt_cgroup_numa_balancing_counters_match_memory_stat() {
    let run = run("7.2", "numa.sh");
    common::lab::check_cgroup_numa(run, "7.2/2s4llc-smt");
    // The advisor: NUMA balancing moving memory, the workload's cgroup named first.
    let rec = recording(run, "numa_recording");
    let adv = common::lab::findings_of(&rec);
    let numa: Vec<_> = adv.problems().filter(|e| e.kind() == Kind::Numa).collect();
    assert!(!numa.is_empty(), "{:?}", common::lab::problem_kinds(&adv));
    // At the severity its cost earns as the kernel counts it: pages migrated and hinting
    // faults (/proc/vmstat) against the busy CPU time (/proc/stat) while the work ran. The
    // finding judges 5 s windows, the oracle the whole run: a factor of 2 either way.
    let (before, after) = run.block("numa_kernel").split_once("--").unwrap();
    let count = |text: &str, k: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{k} in {text}"))
    };
    let busy_jiffies = |text: &str| -> u64 {
        let v: Vec<u64> = text
            .lines()
            .find(|l| l.starts_with("cpu "))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse().unwrap())
            .collect();
        v.iter().sum::<u64>() - v[3] - v[4]
    };
    let d = |k: &str| count(after, k) - count(before, k);
    let (migrated, faults) = (d("numa_pages_migrated "), d("numa_hint_faults "));
    let busy = (busy_jiffies(after) - busy_jiffies(before)) as f64 / 100.0;
    let oracle =
        |scale: f64| llctop::findings::harm::numa_balancing(migrated, faults, busy / scale).1;
    let worst = numa.iter().map(|e| e.worst()).max().unwrap();
    println!(
        "lab 7.2/{SHAPE}: NUMA finding {worst:?} ({}); the kernel: {migrated} pages migrated, {faults} hinting faults, {busy:.2} busy CPU-s: earns {:?}",
        numa[0].latest().severity_tag(),
        oracle(1.0)
    );
    assert!(
        [oracle(0.5), oracle(1.0), oracle(2.0)].contains(&worst),
        "{worst:?}, but the kernel's counts earn {:?}",
        oracle(1.0)
    );
    let summary = &numa[0].latest().summary;
    println!("lab 7.2/{SHAPE}: {summary}");
    assert!(summary.contains("most moved for /numa-work"), "{summary}");
}

#[test]
fn lab_6_1_smt_cgroup_numa_counters_absent_with_the_reason() {
    // memory.stat has NUMA balancing counters since 6.12: on 6.1 llctop says so.
    let run = run("6.1", "numa.sh");
    let rec = recording(run, "numa_recording");
    let numa = rec
        .snapshots
        .iter()
        .flat_map(|s| &s.sources)
        .find(|s| {
            s.name == "procfs.numa"
                && s.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("memory.stat"))
        })
        .expect("the procfs.numa state says why there are no cgroup counters");
    println!("lab 6.1/{SHAPE}: {numa:?}");
    assert_eq!(numa.state, llctop::snapshot::SourceState::Degraded);
    assert!(
        numa.reason
            .as_deref()
            .unwrap_or("")
            .contains("kernel < 6.12")
    );
    assert!(
        rec.snapshots
            .iter()
            .all(|s| s.numa.as_ref().is_none_or(|n| n.cgroups.is_empty()))
    );
    // The kernel still balanced the pages (its own move_pages view).
    println!("{}", run.block("numa_out"));
}
