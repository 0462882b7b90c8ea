//! `llctop record` on the live machine (no privileges needed).
//! - a 5 s recording under load agrees with /proc/stat read around it (per CPU, ≤ 2 points);
//! - its sampled migrations say they are sampled;
//! - SIGKILL leaves a file that reads back up to its last complete line (plain and .gz).

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use llctop::kroot::KernelRoot;
use llctop::record::reader;
use llctop::snapshot::Precision;
use llctop::source::procfs::stat;

fn llctop(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llctop"));
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Spin on one thread until the flag drops, so the machine is not idle.
fn spinner(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n = n.wrapping_add(1);
            std::hint::black_box(n);
        }
        n
    })
}

#[test]
fn five_second_recording_matches_proc_stat() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.jsonl");
    let stop = Arc::new(AtomicBool::new(false));
    let spin = spinner(stop.clone());
    std::thread::sleep(Duration::from_millis(200));

    let root = KernelRoot::default();
    let before = stat::read(&root).unwrap();
    let t0 = Instant::now();
    let res = llctop(&[
        "record",
        "-o",
        out.to_str().unwrap(),
        "--duration",
        "5s",
        "--interval",
        "1s",
        // the procfs path, whose migrations are sampled (as root, auto would pick BPF)
        "--source",
        "procfs",
    ])
    .output()
    .unwrap();
    let after = stat::read(&root).unwrap();
    let wall = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );

    let rec = reader::open(&out).unwrap();
    assert_eq!(rec.header.format, "llctop-recording");
    assert_eq!(rec.header.version, 1);
    assert!(!rec.truncated);
    assert_eq!(rec.snapshots.len(), 5, "5 s at 1 s");
    let seqs: Vec<u64> = rec.snapshots.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    let recorded_s: f64 = rec.snapshots.iter().map(|s| s.time.interval_secs()).sum();
    assert!((recorded_s - 5.0).abs() < 0.3, "recorded {recorded_s} s");
    println!(
        "window: llctop recorded {recorded_s:.3} s inside {:.3} s of /proc/stat window",
        wall.as_secs_f64()
    );

    for (cpu, b) in &before.cpus {
        let a = after.cpus[cpu];
        let (truth, _) = stat::fractions(b, &a).expect("time passed");
        let mut num = 0.0;
        let mut den = 0.0;
        for s in &rec.snapshots {
            let c = s.cpus.iter().find(|c| c.cpu == *cpu).unwrap();
            let busy = c.busy.expect("online CPU has a busy value");
            num += busy * s.time.interval_secs();
            den += s.time.interval_secs();
        }
        let ours = num / den;
        println!(
            "cpu{cpu}: /proc/stat {:.1}%  llctop {:.1}%",
            truth * 100.0,
            ours * 100.0
        );
        assert!(
            (truth - ours).abs() <= 0.02,
            "cpu{cpu}: /proc/stat {truth:.3} vs llctop {ours:.3}"
        );
    }
    let total_busy: f64 = rec
        .snapshots
        .iter()
        .filter_map(|s| s.system.busy)
        .sum::<f64>()
        / 5.0;
    assert!(
        total_busy > 0.3,
        "the spinner should keep at least ~1 of 2 CPUs busy: {total_busy}"
    );

    for s in &rec.snapshots {
        let m = s
            .migrations
            .as_ref()
            .expect("procfs gives sampled migrations");
        assert_eq!(m.precision, Precision::Sampled);
        assert_eq!(s.processes.as_ref().unwrap().precision, Precision::Sampled);
    }
    let json = std::fs::read_to_string(&out).unwrap();
    assert!(
        json.lines()
            .nth(1)
            .unwrap()
            .contains(r#""precision":"sampled""#)
    );

    // the report reads it
    let rep = llctop(&["report", out.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success());
    assert!(
        text.contains("5 snapshots") && text.contains("SAMPLED"),
        "{text}"
    );
}

fn wait_for_lines(path: &std::path::Path, lines: usize, child: &mut Child) {
    let t0 = Instant::now();
    loop {
        if let Ok(r) = reader::open(path)
            && r.snapshots.len() + 1 >= lines
        {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "recorder exited early");
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no snapshots written"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn killed_recording_is_valid(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    let mut child = llctop(&["record", "-o", out.to_str().unwrap(), "--interval", "300ms"])
        .spawn()
        .unwrap();
    wait_for_lines(&out, 3, &mut child);
    std::thread::sleep(Duration::from_millis(150)); // kill at an arbitrary point
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let rec = reader::open(&out).unwrap();
    assert!(
        rec.snapshots.len() >= 2,
        "{name}: {} snapshots",
        rec.snapshots.len()
    );
    for (i, s) in rec.snapshots.iter().enumerate() {
        assert_eq!(s.seq, i as u64);
    }
    println!(
        "{name}: {} snapshots survived SIGKILL (truncated tail: {})",
        rec.snapshots.len(),
        rec.truncated
    );
}

#[test]
fn sigkill_leaves_a_valid_plain_file() {
    killed_recording_is_valid("killed.jsonl");
}

#[test]
fn sigkill_leaves_a_valid_gzip_file() {
    killed_recording_is_valid("killed.jsonl.gz");
}

#[test]
fn sigterm_finishes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("term.jsonl.gz");
    let mut child = llctop(&["record", "-o", out.to_str().unwrap(), "--interval", "300ms"])
        .spawn()
        .unwrap();
    wait_for_lines(&out, 2, &mut child);
    // SAFETY: plain kill(2) on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(143),
        "SIGTERM is a clean stop that says so: {status}"
    );
    let rec = reader::open(&out).unwrap();
    assert!(!rec.truncated, "gzip trailer written");
    assert!(!rec.snapshots.is_empty());
}

/// Two pairs of processes, each pair sharing a memfd of its own (the workload's
/// construction: a mapping made before a fork, written by both, 16 and 8 MiB): the
/// recording names each pair with exactly the bytes the construction mapped, the memfd by
/// its name — and no pair across the two, which share nothing; `report`
/// lists them.
#[test]
fn processes_that_map_the_same_memfd_are_paired_with_its_size() {
    use std::io::BufRead as _;
    let pair = |mib: &str| -> (Child, [u32; 2], u64) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
            .args(["shm-pair", mib, "8"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("llctop-workload");
        let mut line = String::new();
        std::io::BufReader::new(c.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("the pair line");
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().expect("a number"))
            .collect();
        (c, [v[0] as u32, v[1] as u32], v[2])
    };
    let (mut c1, p1, bytes1) = pair("16");
    let (mut c2, p2, bytes2) = pair("8");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.jsonl");
    let res = llctop(&[
        "record",
        "-o",
        out.to_str().unwrap(),
        "--duration",
        "3s",
        "--interval",
        "500ms",
        "--source",
        "procfs",
    ])
    .output()
    .unwrap();
    for c in [&mut c1, &mut c2] {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let rec = reader::open(&out).unwrap();
    let sh = rec
        .snapshots
        .iter()
        .rev()
        .find_map(|s| s.sharing.as_ref())
        .expect("a snapshot with the sharing pairs");
    println!("{} processes read: {:?}", sh.processes, sh.pairs);
    for (p, bytes) in [(p1, bytes1), (p2, bytes2)] {
        let got = sh
            .pairs
            .iter()
            .find(|x| [x.a, x.b] == p)
            .unwrap_or_else(|| panic!("no pair {p:?} in {:?}", sh.pairs));
        assert_eq!((got.bytes, got.objects), (bytes, 1));
        assert_eq!(got.object, "/memfd:llctop-pair (deleted)");
    }
    let across = sh.pairs.iter().filter(|x| {
        let has = |g: [u32; 2]| g.contains(&x.a) || g.contains(&x.b);
        has(p1) && has(p2)
    });
    assert_eq!(across.count(), 0, "{:?}", sh.pairs);
    let report = llctop(&["report", out.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("Processes that share memory")
            && text.contains(&format!("({}, ", p1[0]))
            && text.contains("16.0 MiB in 1 object (/memfd:llctop-pair (deleted))"),
        "{text}"
    );
}
