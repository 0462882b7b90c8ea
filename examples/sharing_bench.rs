//! Prints what the shared-memory stage costs (src/kstate/sharing.rs: which processes map
//! the same shared memory, issue "CAS inside") at its limits — the maps of 64 processes
//! read every 5th snapshot — beside the floor measured in the same run: reading the same
//! 64 `/proc/PID/maps` files into memory and nothing else (the kernel's part: walking
//! each process's mappings under its lock and formatting them). The 64 processes are
//! real: children of this program, each holding `MAPPINGS` shared writable memfd
//! mappings it inherited (so every pair of them shares every object: the pairing's worst
//! case) besides its own libraries. The stage's share is its time per read ÷ 5 intervals.
//! Run: `cargo run --release --example sharing_bench` (scripts/sharing-bench.sh).

use std::time::Instant;

use llctop::kroot::KernelRoot;
use llctop::kstate::sharing::{MAX_PROCS, REFRESH, SharedMemory};
use llctop::snapshot::{ProcessStats, ProcessTable, Snapshot};

const MAPPINGS: usize = 200;
const ROUNDS: usize = 40;

/// `n` children that sleep until killed, after `MAPPINGS` memfds of 64 KiB were mapped
/// shared and writable here (each child inherits them all).
fn children(n: usize) -> Vec<i32> {
    for i in 0..MAPPINGS {
        let name = std::ffi::CString::new(format!("llctop-bench-{i}")).unwrap_or_default();
        // SAFETY: a NUL-terminated name; the fd is ours.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
        assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
        // SAFETY: our own fd; ftruncate sizes it, mmap maps it shared (kept mapped: the
        // children inherit it).
        unsafe {
            assert_eq!(libc::ftruncate(fd, 65536), 0);
            let p = libc::mmap(
                std::ptr::null_mut(),
                65536,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            libc::close(fd);
        }
    }
    (0..n)
        .map(|_| {
            // SAFETY: the child only pauses until it is killed.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork");
            if pid == 0 {
                loop {
                    // SAFETY: waits for a signal.
                    unsafe { libc::pause() };
                }
            }
            pid
        })
        .collect()
}

fn main() {
    let pids = children(MAX_PROCS);
    let snap = Snapshot {
        processes: Some(ProcessTable {
            rows: pids
                .iter()
                .enumerate()
                .map(|(i, &p)| ProcessStats {
                    pid: p as u32,
                    comm: "bench".into(),
                    threads: 1,
                    cpu_time_ns: 1_000_000 + i as u64,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let root = KernelRoot::new("/");
    let (mut stage_ns, mut floor_ns) = (0u128, 0u128);
    let mut bytes = 0usize;
    let mut pairs = 0usize;
    for _ in 0..ROUNDS {
        // The floor: the same files read, nothing done with them.
        let t = Instant::now();
        for &p in &pids {
            bytes += std::fs::read(format!("/proc/{p}/maps")).map_or(0, |b| b.len());
        }
        floor_ns += t.elapsed().as_nanos();
        // The stage, in a round that reads (a new stage reads at its first).
        let mut s = snap.clone();
        let t = Instant::now();
        SharedMemory::new(root.clone()).read(&mut s);
        stage_ns += t.elapsed().as_nanos();
        pairs = s.sharing.map_or(0, |x| x.pairs.len());
    }
    for p in &pids {
        // SAFETY: our own children.
        unsafe {
            libc::kill(*p, libc::SIGKILL);
            libc::waitpid(*p, std::ptr::null_mut(), 0);
        }
    }
    let per = |ns: u128| ns as f64 / ROUNDS as f64 / 1e6;
    let (stage, floor) = (per(stage_ns), per(floor_ns));
    println!(
        "{} processes, {MAPPINGS} shared memfd mappings each ({} bytes of maps a read), {pairs} pairs kept",
        pids.len(),
        bytes / ROUNDS
    );
    println!("floor (the maps files read): {floor:.2} ms a read");
    println!(
        "stage (read, parse, pair): {stage:.2} ms a read = {:.2}x the floor",
        stage / floor
    );
    println!(
        "per interval (a read every {REFRESH}): {:.2} ms = {:.3}% of a CPU at 1 s",
        stage / REFRESH as f64,
        stage / REFRESH as f64 / 10.0
    );
}
