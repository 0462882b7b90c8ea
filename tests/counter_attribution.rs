//! Per-process hardware-counter attribution on the live kernel: the BPF program reads
//! the perf source's per-CPU counters at every context switch and charges the delta to
//! the process that ran. This VM has no PMU, so software events stand in for the
//! hardware ones (cpu-clock for cycles, page-faults for instructions, context switches
//! for cache misses): the fds, the PERF_EVENT_ARRAY, `bpf_perf_event_read_value`, the
//! in-flight slice and the scaling are the product's code; only the event differs.
//!
//! Checked per interval: the per-process sums (rows + processes outside the top + idle)
//! equal the per-CPU totals within 1%, and this process's cpu-clock equals its runtime.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use llctop::collect::Collector;
use llctop::kroot::KernelRoot;
use llctop::snapshot::{Counters, Snapshot};
use llctop::source::bpf::{BpfSource, Mode};
use llctop::source::perf::{PerfSource, Slot, Spec};
use llctop::topology;
use perf_event_open::event::sw::Software;

/// Map `n` fresh anonymous pages, write each (one page fault apiece) and unmap them.
fn touch_fresh_pages(n: usize) {
    let len = n * 4096;
    // SAFETY: a private anonymous mapping of `len` bytes, written within its bounds and
    // unmapped before returning; nothing else refers to it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        for i in (0..len).step_by(4096) {
            std::ptr::write_volatile(p.cast::<u8>().add(i), 1);
        }
        libc::munmap(p, len);
    }
}

/// Threads that run in short bursts and sleep, touching fresh memory, so that every CPU
/// switches often and page faults happen.
fn workload(stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..4)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    touch_fresh_pages(64);
                    let t = std::time::Instant::now();
                    while t.elapsed() < Duration::from_micros(300) {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            })
        })
        .collect()
}

fn pick(c: &Counters, slot: Slot) -> u64 {
    match slot {
        Slot::Cycles => c.cycles,
        Slot::Instructions => c.instructions,
        Slot::CacheMisses => c.cache_misses,
        _ => None,
    }
    .unwrap_or(0)
}

/// The time the hypervisor stole from all CPUs so far (`steal` of /proc/stat's `cpu`
/// line), ns.
fn stolen_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(8)?.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / hz
}

/// `stolen`: time the hypervisor stole from the CPUs while the snapshots were taken (ns).
fn check(s: &Snapshot, mode: Mode, stolen: u64) {
    let procs = s.processes.as_ref().expect("process table");
    for slot in [Slot::Cycles, Slot::Instructions, Slot::CacheMisses] {
        let per_cpu: u64 = s
            .cpus
            .iter()
            .filter_map(|c| c.counters.as_ref())
            .map(|c| pick(c, slot))
            .sum();
        let rows: u64 = procs
            .rows
            .iter()
            .filter_map(|r| r.counters.as_ref())
            .map(|c| pick(c, slot))
            .sum();
        let other = procs.other_counters.as_ref().map_or(0, |c| pick(c, slot));
        let idle = procs.idle_counters.as_ref().map_or(0, |c| pick(c, slot));
        let attributed = rows + other + idle;
        let err = (attributed as f64 - per_cpu as f64).abs() / per_cpu.max(1) as f64;
        println!(
            "{}: {:<13} per-CPU {per_cpu:>12}  processes {rows:>12} + rest {other:>9} + idle {idle:>12} = {attributed:>12}  error {:.3}%",
            mode.label(),
            slot.label(),
            err * 100.0
        );
        assert!(per_cpu > 0, "{} counted nothing", slot.label());
        assert!(err <= 0.01, "{}: off by {:.2}%", slot.label(), err * 100.0);
    }
    // cpu-clock counts nanoseconds: this process's attributed cpu-clock is its runtime.
    let me = std::process::id();
    let row = procs
        .rows
        .iter()
        .find(|r| r.pid == me)
        .expect("the test process is in the top rows");
    let clock = row.counters.as_ref().map_or(0, |c| pick(c, Slot::Cycles));
    let err = (clock as f64 - row.cpu_time_ns as f64).abs() / row.cpu_time_ns.max(1) as f64;
    println!(
        "{}: this process: cpu-clock {clock} ns, runtime {} ns, error {:.3}%, switch-ins unseen {}; per LLC {:?}",
        mode.label(),
        row.cpu_time_ns,
        err * 100.0,
        row.switches_unseen,
        row.counters_per_llc
            .iter()
            .map(|c| c.as_ref().map(|c| pick(c, Slot::Cycles)))
            .collect::<Vec<_>>()
    );
    assert!(row.cpu_time_ns > 100_000_000, "the workload ran");
    // 0.06-0.08% on a quiet machine; 0.7-1.2% (runtime above cpu-clock, both modes) seen
    // with the other core compiling, in CI. Not explained yet (a per-switch skew between
    // the runtime and the counter read would grow with the switches load brings): 2%.
    // Beyond that, cpu-clock exceeds the runtime by what the hypervisor stole while the
    // process ran: with CONFIG_PARAVIRT_TIME_ACCOUNTING (this VM's kernel) the runtime
    // (rq_clock_task) leaves steal out, cpu-clock counts it. On 2026-11-28 evening this
    // VM's host stole ~11-18% of two busy vCPUs: cpu-clock 2-30% above the runtime in
    // tp_btf mode (e.g. 121 ms above with 740 ms stolen from the CPUs meanwhile). The
    // bound is all the CPUs' steal over the run (an upper bound of the process's).
    let (c, rt) = (clock as f64, row.cpu_time_ns as f64);
    assert!(
        c >= rt * 0.98 && c <= rt * 1.02 + stolen as f64,
        "cpu-clock vs runtime off by {:.2}% ({:.1} ms stolen from the CPUs meanwhile)",
        err * 100.0,
        stolen as f64 / 1e6
    );
    assert_eq!(row.counters_per_llc.len(), s.llcs.len());
}

#[test]
#[ignore = "needs root"]
fn per_process_counters_add_up_to_the_per_cpu_totals() {
    // BPF and CPU-wide counters.
    common::require_root();
    let root = KernelRoot::default();
    let topo = topology::discover(&root).expect("topology");
    for mode in [Mode::TpBtf, Mode::RawTp] {
        let mut bpf = match BpfSource::load_modes(&topo, 50, &[mode]) {
            Ok(b) => b,
            Err(e) => panic!("BPF failed to load as root: {e}"),
        };
        let events = vec![
            (Slot::Cycles, Spec::Software(Software::CpuClock)),
            (Slot::Instructions, Spec::Software(Software::PageFault)),
            (Slot::CacheMisses, Spec::Software(Software::CtxSwitch)),
        ];
        let perf = PerfSource::open_events(&root, &topo, events);
        let cpus = bpf.attach_counters(&perf);
        assert_eq!(
            cpus,
            topo.online_cpus().count(),
            "every online CPU attributed"
        );
        let stop = Arc::new(AtomicBool::new(false));
        let threads = workload(Arc::clone(&stop));
        let mut c = Collector::new(&root, topo.clone(), vec![Box::new(bpf), Box::new(perf)]);
        let stolen0 = stolen_ns();
        c.baseline();
        let mut snaps = Vec::new();
        c.run(
            Duration::from_millis(1000),
            || false,
            |s| {
                snaps.push(s);
                snaps.len() < 2
            },
        );
        let stolen = stolen_ns().saturating_sub(stolen0);
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        for s in &snaps {
            let st = s
                .sources
                .iter()
                .find(|x| x.name == "bpf")
                .expect("bpf state");
            let reason = st.reason.as_deref().unwrap_or("");
            assert!(reason.contains("per-process counters on"), "{reason}");
            check(s, mode, stolen);
        }
    }
}
