//! The perf source on this machine. Without a hardware PMU (this VM) it must say so and
//! leave everything else working; with software events standing in for the hardware ones,
//! the same open/read/delta/scale path must count what the kernel counts.

mod common;

use std::time::Duration;

use llctop::collect::Collector;
use llctop::kroot::KernelRoot;
use llctop::snapshot::SourceState;
use llctop::source::Source;
use llctop::source::perf::{PerfSource, Slot, Spec};
use llctop::topology;
use perf_event_open::event::sw::Software;

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn hardware_counters_report_their_state_and_nothing_else_breaks() {
    let root = KernelRoot::default();
    let topo = topology::discover(&root).unwrap();
    let perf = PerfSource::open(&root, &topo);
    let mut c = Collector::new(&root, topo.clone(), vec![Box::new(perf)]);
    c.baseline();
    let mut snaps = Vec::new();
    c.run(
        Duration::from_millis(100),
        || false,
        |s| {
            snaps.push(s);
            snaps.len() < 2
        },
    );
    let s = snaps.last().unwrap();
    let st = s.sources.iter().find(|x| x.name == "perf").unwrap();
    println!("perf: {:?} {:?}", st.state, st.reason);
    let has_pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        || std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists();
    if has_pmu && is_root() {
        assert_ne!(st.state, SourceState::Absent, "{:?}", st.reason);
        assert!(s.cpus.iter().any(|c| c.counters.is_some()));
    } else if has_pmu {
        // CPU-wide counters need CAP_PERFMON (or a low perf_event_paranoid): say why.
        assert!(
            st.state == SourceState::Active || st.reason.is_some(),
            "{st:?}"
        );
    } else {
        assert_eq!(st.state, SourceState::Absent);
        let r = st.reason.as_deref().unwrap();
        // Unprivileged, the kernel refuses for the permission before it looks for the
        // PMU (EACCES under perf_event_paranoid): that is the reason it gives.
        let why = if is_root() {
            "no hardware PMU"
        } else {
            "not permitted"
        };
        assert!(r.contains(why), "{r}");
        assert!(
            s.cpus.iter().all(|c| c.counters.is_none()),
            "no invented values"
        );
        assert!(s.llcs.iter().all(|g| g.counters.is_none()));
    }
}

#[test]
#[ignore = "needs root"]
fn software_stand_ins_count_through_the_same_path() {
    // CPU-wide counters need root or CAP_PERFMON.
    common::require_root();
    let root = KernelRoot::default();
    let topo = topology::discover(&root).unwrap();
    // cpu-clock stands in for cycles (the leader), task-clock for instructions.
    let events = vec![
        (Slot::Cycles, Spec::Software(Software::CpuClock)),
        (Slot::Instructions, Spec::Software(Software::TaskClock)),
        (Slot::CacheMisses, Spec::Software(Software::CtxSwitch)),
    ];
    let mut perf = PerfSource::open_events(&root, &topo, events);
    let mut snap = llctop::collect::empty_snapshot(&topo);
    perf.sample(&topo, &mut snap);
    std::thread::sleep(Duration::from_millis(300));
    let mut snap = llctop::collect::empty_snapshot(&topo);
    snap.time.interval_ns = 300_000_000;
    perf.sample(&topo, &mut snap);
    llctop::collect::aggregate(&topo, &mut snap);
    let st = snap.sources.iter().find(|x| x.name == "perf").unwrap();
    assert_eq!(st.state, SourceState::Active, "{:?}", st.reason);
    for c in snap.cpus.iter().filter(|c| c.online) {
        let raw = c.counters_raw.as_ref().unwrap();
        let k = c.counters.as_ref().unwrap();
        let clock = raw.cycles.unwrap();
        println!(
            "cpu{}: cpu-clock {} ns over enabled {} ns (running {}), ctx {}, task-clock {:?}",
            c.cpu,
            clock,
            raw.time_enabled_ns,
            raw.time_running_ns,
            raw.cache_misses.unwrap_or(0),
            raw.instructions
        );
        // cpu-clock counts the time it was enabled: equal to time_enabled within 1%.
        let en = raw.time_enabled_ns as f64;
        assert!(((clock as f64) - en).abs() < en * 0.01, "{clock} vs {en}");
        assert!(en > 250e6, "enabled for the ~300 ms between reads: {en}");
        assert_eq!(
            k.cycles, raw.cycles,
            "software events are never multiplexed"
        );
        // Group members count too (a sibling created disabled would read 0 forever).
        let task = raw.instructions.unwrap() as f64;
        assert!((task - en).abs() < en * 0.05, "task-clock {task} vs {en}");
        assert!(k.ipc.is_some(), "derived from the stand-ins");
    }
    let ctx: u64 = snap
        .cpus
        .iter()
        .filter_map(|c| c.counters_raw.as_ref()?.cache_misses)
        .sum();
    assert!(ctx > 0, "the sleeping test thread alone switches: {ctx}");
    let llc = snap.llcs[0].counters.as_ref().unwrap();
    let sum: u64 = snap
        .cpus
        .iter()
        .filter_map(|c| c.counters.as_ref()?.cycles)
        .sum();
    assert_eq!(llc.cycles, Some(sum), "the LLC sums its CPUs");
}
