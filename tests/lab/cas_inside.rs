//! The lab of the cache-aware scheduler seen from the inside (7.2, the 8-vCPU shape
//! `2s4llc-smt`: an L3 per SMT pair, four LLCs of two CPUs, two nodes). One module per
//! scenario (tests/lab/*.rs); this one: cas_state.sh — whether cache-aware scheduling
//! runs, beside what `llc_balancing/enabled` says, against the kernel's own word.

use crate::common;

use common::lab::{LabRun, recording};

const SHAPE: &str = "2s4llc-smt";

fn run() -> &'static LabRun {
    common::lab::run("7.2", SHAPE, "cas_state.sh")
}

/// Each step: what was written (enabled), the partitions the cpuset files make, and the
/// kernel's word on it (`_sched_cache_active_set`).
const STEPS: [(&str, bool, &[&str], &str); 5] = [
    ("whole", true, &["0-7"], "enabling cache aware scheduling"),
    ("off", false, &["0-7"], "disabling cache aware scheduling"),
    (
        "isolated",
        true,
        &["0-1"],
        "cache aware scheduling not supported on this platform",
    ),
    (
        "rootpart",
        true,
        &["0-1", "2-7"],
        "enabling cache aware scheduling",
    ),
    ("back", true, &["0-7"], "enabling cache aware scheduling"),
];

/// In every step, the snapshots after the change say what the kernel said: active where
/// it enabled the static key; enabled but not active where it found no partition to act
/// in; off where it was asked off — with the partitions the cpuset files made.
#[test]
fn lab_7_2_cache_aware_active_is_what_the_kernel_says_not_what_enabled_reads() {
    let run = run();
    assert_eq!(run.value("isolated_partition"), "isolated");
    assert_eq!(run.value("isolated_cpus"), "2-7");
    assert_eq!(run.value("rootpart_partition"), "root");
    assert_eq!(run.value("rootpart_cpus"), "2-7");
    let rec = recording(run, "cas_recording");
    for (step, enabled, parts, kernel) in STEPS {
        let said = run.value(&format!("{step}_kernel"));
        let new: u32 = run.value(&format!("{step}_new_lines")).parse().unwrap();
        assert!(
            new >= 1,
            "{step}: the kernel said nothing new (its last word: {said})"
        );
        assert_eq!(said, kernel, "{step}: the construction's expected word");
        let span: Vec<usize> = run
            .value(&format!("{step}_snaps"))
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let snaps = &rec.snapshots[span[0]..span[1].min(rec.snapshots.len())];
        assert!(snaps.len() >= 3, "{step}: {span:?}");
        let active = said.starts_with("enabling");
        for s in snaps {
            let c = s
                .cache_aware
                .as_ref()
                .unwrap_or_else(|| panic!("{step}: #{} has no cache_aware", s.seq));
            println!(
                "lab 7.2/{SHAPE} {step} #{}: llctop {} (partitions {:?}); the kernel: {said}",
                s.seq,
                c.describe(),
                c.partitions
            );
            assert_eq!(c.enabled, enabled, "{step}: #{}", s.seq);
            assert_eq!(c.partitions, parts, "{step}: #{}", s.seq);
            assert_eq!(c.active(), active, "{step}: #{} {}", s.seq, c.describe());
            // Not supported: enabled, and no partition to act in.
            if said.contains("not supported") {
                assert!(c.enabled && !c.multi_llc, "{step}: {}", c.describe());
            }
        }
    }
}

/// Where the kernel keeps it off with `enabled` at 1, the knobs say so, and `report`
/// lists the recording's stretches with the reason.
#[test]
fn lab_7_2_cache_aware_knobs_and_report_say_enabled_but_not_active() {
    let run = run();
    let knobs = run.block("knobs_isolated");
    assert!(
        knobs.contains("enabled but not active: no sched-domain partition spans two LLCs")
            && knobs.contains("(partitions 0-1)"),
        "{knobs}"
    );
    let report = run.block("report");
    let section = report
        .split("Cache-aware scheduling (llc_balancing/enabled")
        .nth(1)
        .unwrap_or_else(|| panic!("no cache-aware section:\n{report}"));
    for said in [
        "active",
        "off (llc_balancing/enabled 0)",
        "enabled, not active: no sched-domain partition spans two LLCs",
    ] {
        assert!(section.contains(said), "{said}:\n{section}");
    }
    println!(
        "lab 7.2/{SHAPE} report:{}",
        section.lines().take(8).collect::<Vec<_>>().join("\n")
    );
}
