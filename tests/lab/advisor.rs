//! The advisor's false-alarm benchmark in the kernel lab (docs/advisor.md, "Ordinary
//! work"): Debian sid's 7.2 on the 8-vCPU, 4-LLC, 2-node SMT shape, with
//! tests/lab/scenarios/advisor_bench.sh recording ordinary work twice each (idle, Go
//! programs starting, stress-ng on every CPU, perf bench sched messaging, a shell loop of
//! short processes) with the BPF source. Each recording is judged twice — by the guest's
//! own `llctop report` and here by the library over the decoded snapshots (every cited
//! number checked against them) — and neither may hold a WARNING or CRITICAL finding,
//! while the Go starts' pile-ups are still seen (as info, with their cost).

use crate::common;

use llctop::findings::{Kind, Severity};

const RUNS: usize = 2;
const WORKLOADS: usize = 5;

#[test]
fn lab_7_2_smt_ordinary_work_raises_no_warning_and_pile_ups_are_info() {
    let run = common::lab::run_programs(
        "7.2",
        "2s4llc-smt",
        "advisor_bench.sh",
        &format!("bench_runs={RUNS}"),
        &["promtool", "stress-ng", "perf"],
        1500,
    );
    assert_eq!(run.value("bench_cpus"), "8");
    assert_eq!(
        run.values_of("bench_skip"),
        Vec::<&str>::new(),
        "every workload ran"
    );
    let results = run.values_of("bench_result");
    assert_eq!(results.len(), RUNS * WORKLOADS, "{results:?}");
    let mut alarms = Vec::new();
    let mut go_pileups = 0;
    let mut unmeasured = Vec::new();
    let mut spared: Vec<f64> = Vec::new();
    for line in &results {
        // w|name|run|exit|info|warning|critical
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 7, "{line}");
        assert_eq!(f[3], "0", "the workload ran: {line}");
        let rec = common::lab::recording(&run, &format!("bench_{}_{}", f[0], f[2]));
        assert!(
            rec.snapshots.len() >= 3,
            "{line}: {} snapshots",
            rec.snapshots.len()
        );
        let adv = common::lab::findings_of(&rec);
        let mut counts = [0usize; 3];
        for e in adv.problems() {
            let i = match e.worst() {
                Severity::Info => 0,
                Severity::Warning => 1,
                Severity::Critical => 2,
            };
            counts[i] += 1;
            if e.worst() > Severity::Info {
                alarms.push(format!(
                    "{} run {}: {} {}",
                    f[1],
                    f[2],
                    e.latest().severity_tag(),
                    e.latest().headline()
                ));
            }
            if f[1].starts_with("go programs") && e.kind() == Kind::PileUp {
                go_pileups += 1;
                match &e.latest().cost {
                    Some(c) => spared.push(c.value),
                    None => {
                        unmeasured.push(format!("{} run {}: {}", f[1], f[2], e.latest().summary))
                    }
                }
            }
        }
        // The guest's report and the library agree on what they found.
        let guest: Vec<usize> = f[4..7].iter().map(|n| n.parse().unwrap()).collect();
        assert_eq!(
            guest, counts,
            "{line}: the guest's report against the library"
        );
        println!(
            "lab 7.2/2s4llc-smt: {} run {}: info {} warning {} critical {}",
            f[1], f[2], counts[0], counts[1], counts[2]
        );
    }
    assert_eq!(
        alarms,
        Vec::<String>::new(),
        "WARNING/CRITICAL on ordinary work"
    );
    spared.sort_by(f64::total_cmp);
    println!(
        "lab 7.2/2s4llc-smt: the Go starts' pile-ups: {} measured, the wait their idle CPU could have spared: median {:.1} ms, most {:.1} ms",
        spared.len(),
        spared.get(spared.len() / 2).copied().unwrap_or(0.0) / 1e6,
        spared.last().copied().unwrap_or(0.0) / 1e6
    );
    assert_eq!(
        unmeasured,
        Vec::<String>::new(),
        "every pile-up's cost measured (the recording runs 3 s past the work)"
    );
    assert!(
        go_pileups >= 1,
        "the Go starts' pile-ups are seen (as info)"
    );
}
