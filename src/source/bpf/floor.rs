//! The floor of BPF cost: bpf/floor.bpf.c's empty programs on the tracepoints llctop
//! hooks per context switch (sched_switch, sched_wakeup, sched_migrate_task), loaded by
//! scripts/overhead.sh (through `llctop-workload bpf-floor`) next to llctop's programs in
//! the same window, so llctop's ns per event is read as a ratio to what any program on
//! that event costs on this machine. Not used by llctop itself.

mod skel {
    #![allow(
        clippy::all,
        clippy::pedantic,
        non_camel_case_types,
        dead_code,
        unused_imports
    )]
    include!(concat!(env!("OUT_DIR"), "/floor.skel.rs"));
}

use std::mem::MaybeUninit;

use libbpf_rs::OpenObject;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};

/// The empty programs' names (the kernel's `prog_name`), by the llctop program they are
/// the floor of: `(floor, llctop names)`.
pub const PAIRS: [(&str, &[&str]); 3] = [
    (
        "floor_switch",
        &["btf_switch", "raw_switch", "btf_switch_old"],
    ),
    (
        "floor_wakeup",
        &[
            "btf_wakeup",
            "raw_wakeup",
            "btf_wakeup_new",
            "raw_wakeup_new",
            "btf_wakeup_new_bounded",
            "raw_wakeup_new_bounded",
            // Trace mode's sched_waking: the same kind of event, one per wakeup.
            "btf_waking",
            "raw_waking",
            // `--wakeups`' sched_waking (bpf/wakers.bpf.c).
            super::wakers::PROGRAM,
        ],
    ),
    (
        "floor_migrate",
        &["btf_migrate", "raw_migrate", "btf_migrate_old"],
    ),
];

/// The loaded and attached empty programs (detached when dropped).
pub struct Floor {
    _skel: skel::FloorSkel<'static>,
}

/// Load and attach the empty programs.
pub fn load() -> Result<Floor, libbpf_rs::Error> {
    let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
    let open = skel::FloorSkelBuilder::default().open(storage)?;
    let mut skel = open.load()?;
    skel.attach()?;
    Ok(Floor { _skel: skel })
}

/// One program's kernel statistics (`kernel.bpf_stats_enabled`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgStats {
    pub name: String,
    pub run_cnt: u64,
    pub run_time_ns: u64,
}

impl ProgStats {
    pub fn ns_per_event(&self) -> Option<f64> {
        (self.run_cnt > 0).then(|| self.run_time_ns as f64 / self.run_cnt as f64)
    }
}

/// Trace mode's other hooks (a fork, an exec, a rename): rare next to the switches, with no empty
/// program of their own, but part of what a trace costs per switch.
pub const TRACE_ONLY: [&str; 6] = [
    "btf_fork",
    "raw_fork",
    "btf_exec",
    "raw_exec",
    "btf_rename",
    "raw_rename",
];

/// The task walks of bpf/llctop.bpf.c (run by llctop's reads, not by an event): the
/// iter/task program, run once per task, and the open-coded walk, run once per read
/// (src/source/bpf/settle.rs says which is loaded).
pub const ITERATOR: &str = "settle_tasks";
pub const WALK: &str = "settle_walk";

/// The targets of issue "Always on" (before it, "Overhead": 2.5× and 3.5×): sched_switch
/// and the whole per-switch cost, as multiples of the empty sched_switch program.
pub const SWITCH_TARGET: f64 = 1.5;
pub const PER_SWITCH_TARGET: f64 = 2.0;

/// llctop's programs against the floor: a table (program, events, ns/event, the empty
/// program's ns/event on the same tracepoint, ratio), then the two ratios of the targets.
/// Returns the text and (switch ratio, per-switch ratio).
pub fn compare(llctop: &[ProgStats], floor: &[ProgStats]) -> (String, Option<f64>, Option<f64>) {
    use std::fmt::Write as _;
    let floor_of = |name: &str| -> Option<&ProgStats> {
        let (f, _) = PAIRS.iter().find(|(_, l)| l.contains(&name))?;
        floor.iter().find(|p| p.name == *f)
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:>12} {:>10} {:>14} {:>10} {:>7}",
        "program", "events", "ns/event", "empty program", "ns/event", "ratio"
    );
    for p in llctop.iter().filter(|p| p.run_cnt > 0) {
        let f = floor_of(&p.name);
        let ratio = match (p.ns_per_event(), f.and_then(ProgStats::ns_per_event)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<16} {:>12} {:>10.1} {:>14} {:>10} {:>7}",
            p.name,
            p.run_cnt,
            p.ns_per_event().unwrap_or(0.0),
            f.map_or("-", |f| f.name.as_str()),
            f.and_then(ProgStats::ns_per_event)
                .map_or("-".into(), |x| format!("{x:.1}")),
            ratio
        );
    }
    let empty = floor
        .iter()
        .find(|p| p.name == PAIRS[0].0)
        .and_then(ProgStats::ns_per_event);
    let switch = llctop
        .iter()
        .filter(|p| PAIRS[0].1.contains(&p.name.as_str()))
        .max_by_key(|p| p.run_cnt);
    let switch_ratio = match (switch.and_then(ProgStats::ns_per_event), empty) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    // Every per-switch hook's time, over the switches: what one context switch costs.
    let hooks: u64 = llctop
        .iter()
        .filter(|p| {
            PAIRS.iter().any(|(_, l)| l.contains(&p.name.as_str()))
                || TRACE_ONLY.contains(&p.name.as_str())
        })
        .map(|p| p.run_time_ns)
        .fold(0, u64::saturating_add);
    let per_switch = switch
        .filter(|s| s.run_cnt > 0)
        .map(|s| hooks as f64 / s.run_cnt as f64);
    let per_switch_ratio = match (per_switch, empty) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let show = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}x"));
    let _ = writeln!(
        out,
        "sched_switch: {} the empty program (target <= {SWITCH_TARGET}x)",
        show(switch_ratio)
    );
    let _ = writeln!(
        out,
        "per context switch, every hook (switch + wakeup(s) + wakeup_new + migrate [+ trace mode's fork, exec] time / switches): {} ns, {} the empty switch program (target <= {PER_SWITCH_TARGET}x)",
        per_switch.map_or("-".into(), |x| format!("{x:.1}")),
        show(per_switch_ratio)
    );
    // Not a per-switch hook: llctop runs it itself, in its reads (its CPU time).
    let per_switch_note = |ns: u64| {
        switch.filter(|s| s.run_cnt > 0).map_or(String::new(), |s| {
            format!(
                " ({:.1} ns per context switch if counted with the hooks)",
                ns as f64 / s.run_cnt as f64
            )
        })
    };
    if let Some(it) = llctop.iter().find(|p| p.name == ITERATOR && p.run_cnt > 0) {
        let _ = writeln!(
            out,
            "{ITERATOR}, the task iterator llctop runs before each read (in its own CPU time, not a hook): {} tasks visited, {:.1} ns each, {:.2} ms in all{}",
            it.run_cnt,
            it.ns_per_event().unwrap_or(0.0),
            it.run_time_ns as f64 / 1e6,
            per_switch_note(it.run_time_ns)
        );
    }
    if let Some(w) = llctop.iter().find(|p| p.name == WALK && p.run_cnt > 0) {
        let _ = writeln!(
            out,
            "{WALK}, the open-coded task walk llctop runs before each read (in its own CPU time, not a hook): {} walks, {:.1} us each, {:.2} ms in all{}",
            w.run_cnt,
            w.ns_per_event().unwrap_or(0.0) / 1e3,
            w.run_time_ns as f64 / 1e6,
            per_switch_note(w.run_time_ns)
        );
    }
    (out, switch_ratio, per_switch_ratio)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, run_cnt: u64, run_time_ns: u64) -> ProgStats {
        ProgStats {
            name: name.into(),
            run_cnt,
            run_time_ns,
        }
    }

    #[test]
    fn ratios_are_to_the_empty_program_of_the_same_event() {
        let llctop = [
            p("btf_switch", 1000, 636_000),
            p("btf_wakeup", 500, 159_000),
            p("btf_migrate", 10, 8_780),
            p("btf_process_exit", 3, 900),
        ];
        let floor = [
            p("floor_switch", 1000, 64_000),
            p("floor_wakeup", 500, 30_000),
            p("floor_migrate", 10, 700),
        ];
        let (text, s, w) = compare(&llctop, &floor);
        assert!((s.unwrap() - 636.0 / 64.0).abs() < 1e-9);
        // (636000 + 159000 + 8780) / 1000 switches / 64 ns.
        assert!((w.unwrap() - 803.78 / 64.0).abs() < 1e-9, "{w:?}");
        assert!(text.contains("btf_wakeup"), "{text}");
        assert!(text.contains("5.30x"), "wakeup 318 / 60: {text}");
        assert!(!text.contains(ITERATOR), "{text}");
        let mut with_it = llctop.to_vec();
        with_it.push(p(ITERATOR, 200, 100_000));
        let (text, s2, w2) = compare(&with_it, &floor);
        assert_eq!((s2, w2), (s, w), "the iterator is not a per-switch hook");
        assert!(
            text.contains(
                "200 tasks visited, 500.0 ns each, 0.10 ms in all (100.0 ns per context switch"
            ),
            "{text}"
        );
        let mut with_walk = llctop.to_vec();
        with_walk.push(p(WALK, 20, 1_000_000));
        let (text, s3, w3) = compare(&with_walk, &floor);
        assert_eq!((s3, w3), (s, w), "the walk is not a per-switch hook");
        assert!(
            text.contains("20 walks, 50.0 us each, 1.00 ms in all (1000.0 ns per context switch"),
            "{text}"
        );
        let (_, s, w) = compare(&llctop, &[]);
        assert_eq!((s, w), (None, None), "no floor, no ratio");
    }
}
