//! How the BPF source's userspace side scales with the number of processes: the real
//! program is loaded for a 256-CPU / 64-LLC topology, its per-process maps are filled as
//! a machine running 1,000 to 10,000 processes would fill them (each on 4 LLCs), and one
//! interval's read + snapshot (`Source::sample`: map reads, deltas, process rows) is
//! timed (the median of 7). Not a timed test: figures for docs/performance.md (issue
//! "Scale"). Needs root (BPF). The per-CPU maps have this machine's possible CPUs, not
//! 256: the per-process maps, the LLC matrix and the per-CPU tables are the scaled part.
//!
//! Run: `scripts/scale-bench.sh` (also counts the `bpf()` calls per interval with
//! strace), or `cargo run --release --example scale_bench`.

use std::io::Write as _;
use std::time::Instant;

use llctop::collect::empty_snapshot;
use llctop::source::Source;
use llctop::source::bpf::BpfSource;
use llctop::topology;

/// Where the benchmark's processes start (far above real pids).
const FIRST: u32 = 3_000_000;
const LLCS_EACH: u32 = 4;

/// One interval: the source's read and snapshot, timed; and the process rows it made.
fn sample(src: &mut BpfSource, topo: &topology::Topology) -> (std::time::Duration, usize) {
    let mut snap = empty_snapshot(topo);
    let t = Instant::now();
    src.sample(topo, &mut snap);
    (t.elapsed(), snap.processes.map_or(0, |p| p.rows.len()))
}

fn main() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("scale_bench loads BPF programs: run it as root".into());
    }
    let topo = topology::synthetic(2, 32, 4); // 256 CPUs, 64 LLCs
    let mut src = BpfSource::load(&topo, 64).map_err(|e| e.to_string())?;
    sample(&mut src, &topo);
    println!(
        "{}; each process on {LLCS_EACH} LLCs; --top 64",
        topo.summary()
    );
    println!("processes  read + snapshot per interval (median of 7)  rows");
    let mut runtime = 1_000_000u64;
    for n in [1_000u32, 2_000, 5_000, 10_000] {
        // The new processes, then a read that takes them in.
        src.fill_processes(FIRST, n, LLCS_EACH, runtime)
            .map_err(|e| e.to_string())?;
        sample(&mut src, &topo);
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..7 {
            // Every process ran 1 ms more on each of its LLCs.
            runtime += 1_000_000;
            src.fill_processes(FIRST, n, LLCS_EACH, runtime)
                .map_err(|e| e.to_string())?;
            // One write each (scripts/scale-bench.sh finds them in strace's output).
            let _ = std::io::stderr().write_all(format!("BEGIN {n}\n").as_bytes());
            let (t, r) = sample(&mut src, &topo);
            let _ = std::io::stderr().write_all(format!("END {n}\n").as_bytes());
            times.push(t);
            rows = r;
        }
        times.sort();
        println!(
            "{n:>9}  {:>10.2} ms {rows:>35}",
            times[times.len() / 2].as_secs_f64() * 1e3
        );
    }
    Ok(())
}
