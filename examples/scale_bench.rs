//! How the BPF source's userspace side scales with the number of processes: the real
//! program is loaded for a 256-CPU / 64-LLC topology, its per-process maps are filled as
//! a machine running 1,000 to 10,000 processes would fill them (each on 4 LLCs), and one
//! interval's read + snapshot (`Source::sample`: map reads, deltas, process rows) is
//! timed (the median of 7). Not a timed test: figures for docs/performance.md (issue
//! "Scale"). Needs root (BPF). The per-CPU maps have this machine's possible CPUs, not
//! 256: the per-process maps, the LLC matrix and the per-CPU tables are the scaled part.
//! Where the source settles each task's own counters (a walk over every task before each
//! read, docs/metrics.md "Processes"), as many real threads as processes are alive too,
//! each woken before every timed interval so that every one has something to settle: the
//! walk's worst case (`SCALE_IDLE_THREADS=1`: left idle). The walk's own time is printed
//! beside the interval's.
//!
//! Run: `scripts/scale-bench.sh` (also counts the `bpf()` calls per interval with
//! strace), or `cargo run --release --example scale_bench`.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use llctop::collect::empty_snapshot;
use llctop::source::Source;
use llctop::source::bpf::BpfSource;
use llctop::topology;

/// Where the benchmark's processes start (far above real pids).
const FIRST: u32 = 3_000_000;
const LLCS_EACH: u32 = 4;

/// Real threads for the task iterator to walk, each running briefly whenever woken.
struct Crowd {
    /// The generation the threads wait for (u64::MAX: exit), and its condition.
    round: Arc<(Mutex<u64>, Condvar)>,
    /// Threads that have run in the current generation.
    ran: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Crowd {
    fn new() -> Self {
        Crowd {
            round: Arc::new((Mutex::new(0), Condvar::new())),
            ran: Arc::new(AtomicUsize::new(0)),
            threads: Vec::new(),
        }
    }

    /// Grow to `n` threads.
    fn grow(&mut self, n: usize) -> Result<(), String> {
        while self.threads.len() < n {
            let (round, ran) = (Arc::clone(&self.round), Arc::clone(&self.ran));
            let t = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let (lock, cv) = &*round;
                    let mut seen = 0u64;
                    loop {
                        let Ok(mut g) = lock.lock() else { return };
                        while *g == seen {
                            g = match cv.wait(g) {
                                Ok(g) => g,
                                Err(_) => return,
                            };
                        }
                        seen = *g;
                        drop(g);
                        if seen == u64::MAX {
                            return;
                        }
                        ran.fetch_add(1, Ordering::AcqRel);
                    }
                })
                .map_err(|e| format!("thread {}: {e}", self.threads.len()))?;
            self.threads.push(t);
        }
        Ok(())
    }

    /// Wake every thread once and wait until each has run.
    fn wake_all(&self) {
        self.ran.store(0, Ordering::Release);
        let (lock, cv) = &*self.round;
        if let Ok(mut g) = lock.lock() {
            *g += 1;
        }
        cv.notify_all();
        while self.ran.load(Ordering::Acquire) < self.threads.len() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn stop(self) {
        let (lock, cv) = &*self.round;
        if let Ok(mut g) = lock.lock() {
            *g = u64::MAX;
        }
        cv.notify_all();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// One interval: the source's read and snapshot, timed; and the process rows it made.
fn sample(src: &mut BpfSource, topo: &topology::Topology) -> (Duration, Duration, usize) {
    let mut snap = empty_snapshot(topo);
    let t = Instant::now();
    src.sample(topo, &mut snap);
    (
        t.elapsed(),
        src.settle_time(),
        snap.processes.map_or(0, |p| p.rows.len()),
    )
}

fn main() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("scale_bench loads BPF programs: run it as root".into());
    }
    let topo = topology::synthetic(2, 32, 4); // 256 CPUs, 64 LLCs
    let mut src = BpfSource::load(&topo, 64).map_err(|e| e.to_string())?;
    sample(&mut src, &topo);
    let settles = src.settles_tasks();
    let idle = std::env::var_os("SCALE_IDLE_THREADS").is_some();
    println!(
        "{}; each process on {LLCS_EACH} LLCs; --top 64{}",
        topo.summary(),
        match src.walker() {
            Some(w) => format!(
                "; {}: as many real threads as processes, {}",
                w.label(),
                if idle {
                    "idle"
                } else {
                    "each woken before every interval"
                }
            ),
            None => String::new(),
        }
    );
    println!("processes  read + snapshot per interval (median of 7)  of which the task walk  rows");
    let mut runtime = 1_000_000u64;
    let mut crowd = Crowd::new();
    for n in [1_000u32, 2_000, 5_000, 10_000] {
        if settles {
            crowd.grow(n as usize)?;
        }
        // The new processes, then a read that takes them in.
        src.fill_processes(FIRST, n, LLCS_EACH, runtime)
            .map_err(|e| e.to_string())?;
        sample(&mut src, &topo);
        let mut times = Vec::new();
        let mut iters = Vec::new();
        let mut rows = 0;
        for _ in 0..7 {
            // Every process ran 1 ms more on each of its LLCs.
            runtime += 1_000_000;
            src.fill_processes(FIRST, n, LLCS_EACH, runtime)
                .map_err(|e| e.to_string())?;
            if !idle {
                crowd.wake_all();
            }
            // One write each (scripts/scale-bench.sh finds them in strace's output).
            let _ = std::io::stderr().write_all(format!("BEGIN {n}\n").as_bytes());
            let (t, it, r) = sample(&mut src, &topo);
            let _ = std::io::stderr().write_all(format!("END {n}\n").as_bytes());
            times.push(t);
            iters.push(it);
            rows = r;
        }
        times.sort();
        iters.sort();
        let ms = |d: &[Duration]| d[d.len() / 2].as_secs_f64() * 1e3;
        println!(
            "{n:>9}  {:>10.2} ms {:>35.2} ms {rows:>6}",
            ms(&times),
            ms(&iters)
        );
    }
    crowd.stop();
    Ok(())
}
