//! Schedulers in the kernel lab: Debian sid's 7.2 (sched_ext built in) on the 8-vCPU,
//! 4-LLC, 2-node SMT shape, with real sched_ext schedulers — scx_bpfland and scx_lavd
//! 1.1.4 from the Rust package registry (tests/lab/fetch-scx.sh) — and
//! tests/lab/scenarios/sched_ext.sh. Every state is read from the guest's
//! /sys/kernel/sched_ext by the scenario's shell, not by llctop: detection, the knob
//! starting and stopping a scheduler, a SIGKILLed llctop's scheduler gone with it, a
//! scheduler llctop did not start left alone, bad input, and an A/B verdict.

use crate::common;

use common::lab::{LabRun, recording};
use llctop::knobs::session::KnobAction;
use serde_json::Value;

fn lab() -> &'static LabRun {
    static RUN: common::lab::Shared = common::lab::Shared::new();
    common::lab::shared(&RUN, || {
        common::lab::run_scx("7.2", "2s4llc-smt", "sched_ext.sh")
    })
}

#[test]
fn lab_7_2_detects_a_scheduler_started_outside_llctop_and_leaves_it() {
    let r = lab();
    assert_eq!(r.value("state_boot"), "disabled");
    let ops = r.value("theirs_ops");
    println!(
        "scx_bpfland enabled in {} s: ops {ops}",
        r.value("theirs_enable_s")
    );
    assert!(ops.starts_with("bpfland_1.1.4"), "{ops}");
    assert_eq!(r.value("theirs_switch_all"), "1");
    // The kernel's own per-task class, which Processes shows.
    let sched = r.block("proc_sched");
    assert!(
        sched
            .lines()
            .any(|l| l.starts_with("ext.enabled") && l.trim_end().ends_with('1')),
        "{sched}"
    );
    let report = r.block("theirs_report");
    assert!(report.contains("scx bpfland (all tasks)"), "{report}");
    let knobs = r.block("theirs_knobs");
    assert!(
        knobs.contains(
            "! not in effect for the tasks sched_ext schedules (scheduler bpfland, all tasks)"
        ),
        "{knobs}"
    );
    assert!(knobs.contains("scheduler (sched_ext)"), "{knobs}");
    // Never stopped by llctop.
    assert_eq!(r.value("foreign_rc"), "6");
    assert!(
        r.block("foreign_err")
            .contains("scx_bpfland runs and llctop did not start it"),
        "{}",
        r.block("foreign_err")
    );
    assert_eq!(r.value("theirs_alive"), "1");
    assert_eq!(r.value("theirs_state_after"), "enabled");
    assert_eq!(r.value("state_after_theirs"), "disabled");
}

#[test]
fn lab_7_2_the_knob_starts_and_stops_real_schedulers() {
    let r = lab();
    assert_eq!(r.value("knob_rc"), "0", "{}", r.block("knob_err"));
    assert_eq!(
        r.value("state_after_knob"),
        "disabled",
        "stopped at the run's end"
    );
    assert!(r.block("knob_err").contains("restored scheduler"));
    let rec = recording(r, "knob_recording");
    let set = rec
        .knobs
        .iter()
        .find(|k| k.action == KnobAction::Set)
        .expect("the set is recorded");
    assert_eq!(
        (set.old.as_str(), set.new.as_str()),
        ("eevdf", "scx_bpfland")
    );
    assert_eq!(set.read_back, "scx_bpfland");
    assert!(
        set.written.starts_with("start /bin/scx_bpfland"),
        "{}",
        set.written
    );
    let seen: Vec<String> = rec
        .snapshots
        .iter()
        .filter_map(|s| s.sched_ext.as_ref().map(|x| x.describe()))
        .collect();
    println!("snapshots under: {seen:?}");
    assert!(
        !seen.is_empty() && seen.iter().all(|d| d == "scx bpfland (all tasks)"),
        "{seen:?}"
    );
    let classed = rec
        .snapshots
        .iter()
        .flat_map(|s| s.processes.iter().flat_map(|t| &t.rows))
        .filter(|p| p.sched_ext == Some(true))
        .count();
    assert!(classed > 0, "processes the BPF scheduler runs are marked");

    // scx_lavd, kept by `knobs set`, then put back by `knobs restore`.
    assert_eq!(r.value("lavd_set_rc"), "0", "{}", r.block("lavd_out"));
    println!("scx_lavd set in {} s", r.value("lavd_set_s"));
    assert_eq!(r.value("lavd_state"), "enabled");
    assert!(
        r.value("lavd_ops").starts_with("lavd_"),
        "{}",
        r.value("lavd_ops")
    );
    assert_eq!(r.value("lavd_restore_rc"), "0");
    assert_eq!(r.value("state_after_lavd_restore"), "disabled");
}

#[test]
fn lab_7_2_a_killed_llctops_scheduler_goes_with_it_and_knobs_restore_clears_the_journal() {
    let r = lab();
    assert_eq!(
        r.value("state_after_kill"),
        "disabled",
        "stopped by its parent-death signal"
    );
    assert_eq!(r.value("scx_alive_after_kill"), "none");
    assert_eq!(r.value("restore_rc"), "0");
    let out = r.block("restore_out");
    assert!(out.contains("is gone; nothing stopped"), "{out}");
    assert_eq!(r.value("state_after_restore"), "disabled");
    assert_eq!(r.value("scx_alive_after_restore"), "none");
}

#[test]
fn lab_7_2_bad_scheduler_input_is_refused_with_nothing_left_running() {
    let r = lab();
    assert_eq!(r.value("typo_rc"), "4");
    assert!(
        r.block("typo_out").contains("did you mean scx_bpfland?"),
        "{}",
        r.block("typo_out")
    );
    assert_eq!(r.value("false_rc"), "6");
    assert!(
        r.block("false_out").contains("it exited (exit status: 2)"),
        "{}",
        r.block("false_out")
    );
    assert_eq!(r.value("sleep_rc"), "6");
    assert!(
        r.block("sleep_out").contains("not attached within 3.0 s"),
        "{}",
        r.block("sleep_out")
    );
    assert_eq!(r.value("sleep_left"), "none");
    assert_eq!(r.value("state_after_bad"), "disabled");
}

#[test]
fn lab_7_2_ab_eevdf_against_scx_bpfland_gives_a_verdict_and_ends_on_eevdf() {
    let r = lab();
    assert_eq!(r.value("ab_rc"), "0", "{}", r.block("ab_err"));
    assert_eq!(r.value("state_after_ab"), "disabled");
    println!("{}", r.block("ab_compare"));
    let v: Value = serde_json::from_str(r.block("ab_json")).expect("the verdict as JSON");
    let verdict = &v["verdict"];
    assert_eq!(
        (verdict["windows"].as_u64(), verdict["planned"].as_u64()),
        (Some(8), Some(8)),
        "every window counted"
    );
    let rows = verdict["rows"].as_array().unwrap();
    for m in ["migrations.xllc", "rq_wait.p99", "busy", "command.wall"] {
        let row = rows.iter().find(|x| x["metric"] == m);
        assert!(row.is_some(), "{m} compared");
    }
    // Each B window ran under scx_bpfland, each A window under EEVDF (the recording's
    // own snapshots say so).
    let rec = recording(r, "ab_recording");
    assert_eq!(rec.windows.len(), 8);
    for w in &rec.windows {
        let under: Vec<String> = rec
            .snapshots
            .iter()
            .filter(|s| (w.first_seq..=w.last_seq).contains(&s.seq))
            .filter_map(|s| s.sched_ext.as_ref().map(|x| x.short_name().to_string()))
            .collect();
        let want = if w.value == "eevdf" {
            "eevdf"
        } else {
            "bpfland"
        };
        assert!(
            !under.is_empty() && under.iter().all(|u| u == want),
            "window {:?}: {under:?}",
            w.value
        );
    }
}
