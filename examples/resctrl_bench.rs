//! Prints what one interval's read of resctrl costs for 16 L3 domains and 64 monitoring
//! groups (the root and 63 MON groups: 3072 counter files), on a tree laid out like the
//! kernel's (Documentation/filesystems/resctrl.rst) in a temporary directory, beside the
//! floor measured in the same run: one `pread` of each of the same files, already open,
//! in a bare loop on one thread (what one thread cannot do below; llctop splits a read
//! this large between up to 4 threads, so its wall time can be lower — its CPU time is
//! printed too). Issue "Cache": at most 2 ms per interval, and no file opened more than
//! once in one (after the first interval none is: every counter file stays open and is
//! read again at offset 0).
//! Run: `cargo run --release --example resctrl_bench` (scripts/resctrl-bench.sh).

use std::fs;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::time::Instant;

use llctop::kroot::KernelRoot;
use llctop::source::resctrl::{reader::Reader, tree};
use llctop::topology::{Llc, LlcBasis, Node, Topology};

const DOMAINS: u32 = 16;
const GROUPS: usize = 64;
const EVENTS: [&str; 3] = ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"];
const ROUNDS: usize = 200;

fn put(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).expect("mkdir");
    }
    fs::write(p, text).expect("write");
}

/// 16 LLCs of 8 CPUs on one node, cache ids 0, 8 … 120 (not positions).
fn topology() -> Topology {
    Topology {
        cpus: Vec::new(),
        llcs: (0..DOMAINS)
            .map(|i| Llc {
                id: i,
                cpus: (i * 8..i * 8 + 8).collect(),
                node: Some(0),
                level: Some(3),
                size_kb: Some(32768),
                basis: LlcBasis::Cache,
                cache_cpus: None,
                cache_id: Some(i * 8),
            })
            .collect(),
        nodes: vec![Node {
            id: 0,
            cpus: (0..DOMAINS * 8).collect(),
            distances: vec![10],
        }],
    }
}

/// This process's CPU time so far (user + system), ms.
fn cpu_ms() -> f64 {
    // SAFETY: an all-zero rusage is valid, and getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid rusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    // In memory, as resctrl is (a tmpfs when the machine has one at /dev/shm).
    let dir = tempfile::Builder::new()
        .tempdir_in(if Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .or_else(|_| tempfile::tempdir())
        .expect("tempdir");
    let mount = dir.path().join("sys/fs/resctrl");
    put(
        &mount.join("info/L3_MON/mon_features"),
        &(EVENTS.join("\n") + "\n"),
    );
    put(&mount.join("info/L3_MON/num_rmids"), "256\n");
    let mut paths = Vec::new();
    for g in 0..GROUPS {
        let group = if g == 0 {
            mount.clone()
        } else {
            mount.join(format!("mon_groups/g{g}"))
        };
        put(&group.join("tasks"), "");
        for d in 0..DOMAINS {
            for e in EVENTS {
                let p = group.join(format!("mon_data/mon_L3_{:02}/{e}", d * 8));
                put(
                    &p,
                    &format!("{}\n", 1_000_000 + g as u64 * 17 + u64::from(d)),
                );
                paths.push(p);
            }
        }
    }
    let root = KernelRoot::new(dir.path());
    let topo = topology();
    let layout = tree::layout(&root, &topo, Path::new(tree::DEFAULT_MOUNT)).expect("layout");
    let mut reader = Reader::new(root, layout);
    let none = |_: &str| None;
    reader.read(0, &none).expect("baseline");
    let (open, all) = reader.files();
    let mut ours = Vec::with_capacity(ROUNDS);
    let cpu0 = cpu_ms();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let (r, _) = reader.read(1_000_000_000, &none).expect("read");
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.groups.len(), GROUPS);
    }
    let ours_cpu = (cpu_ms() - cpu0) / ROUNDS as f64;
    let (open_after, _) = reader.files();
    // The floor: the same files, open, one pread each.
    let files: Vec<fs::File> = paths
        .iter()
        .map(|p| fs::File::open(p).expect("open"))
        .collect();
    let mut buf = [0u8; 64];
    let mut floor = Vec::with_capacity(ROUNDS);
    let cpu0 = cpu_ms();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for f in &files {
            let _ = f.read_at(&mut buf, 0);
        }
        floor.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let floor_cpu = (cpu_ms() - cpu0) / ROUNDS as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let p99 = |v: &Vec<f64>| v[v.len() * 99 / 100];
    let (m_ours, m_floor) = (median(&mut ours), median(&mut floor));
    println!(
        "resctrl read, {DOMAINS} L3 domains x {GROUPS} groups ({all} counter files, {open} kept open after the first interval, {open_after} after {ROUNDS}):"
    );
    println!(
        "  llctop's read   median {m_ours:.3} ms  p99 {:.3} ms per interval (CPU time {ours_cpu:.3} ms)",
        p99(&ours)
    );
    println!(
        "  floor (1 pread per file, one thread)  median {m_floor:.3} ms  p99 {:.3} ms (CPU time {floor_cpu:.3} ms)",
        p99(&floor)
    );
    println!(
        "  ratio {:.2}x the floor; target <= 2 ms per interval: {}",
        m_ours / m_floor,
        if m_ours <= 2.0 { "met" } else { "missed" }
    );
}
