//! Helpers shared by the integration tests: writable kernel roots built from fixtures.
#![allow(dead_code)]

pub mod kernel_trace;
pub mod lab;
pub mod passes;
pub mod resctrl;
pub mod serve;
pub mod tmux;

use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use llctop::kroot::KernelRoot;
use llctop::topology::{self, Topology};

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// A temporary kernel root with a copy of a topology fixture's /sys, its topology, and
/// room for a hand-made /proc.
pub fn writable_root(fixture: &str) -> (tempfile::TempDir, KernelRoot, Topology) {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(fixture)
        .join("sys");
    copy_dir(&src, &dir.path().join("sys"));
    let kroot = KernelRoot::new(dir.path());
    let topo = topology::discover(&kroot).unwrap();
    (dir, kroot, topo)
}

/// Write `text` to `rel` under `root`, creating directories.
pub fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// The reason given by every test that needs root: such tests are
/// `#[ignore = "needs root …"]`, so an unprivileged `cargo test` lists them as ignored (by
/// name, counted in the summary); scripts/test runs them when it runs as root.
pub const NEEDS_ROOT: &str =
    "needs root: run scripts/test as root (or cargo test -- --include-ignored)";

/// Fail at once when a root test was asked for without root: a root test never passes
/// by doing nothing.
pub fn require_root() {
    // SAFETY: no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "{NEEDS_ROOT}");
}

/// `llctop --sysroot ROOT --journal JOURNAL ARGS` (the binary under test).
pub fn llctop(root: &KernelRoot, journal: &Path, args: &[impl AsRef<OsStr>]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llctop"));
    c.arg("--sysroot")
        .arg(root.root())
        .arg("--journal")
        .arg(journal)
        .args(args);
    c
}

/// The Perfetto trace at `path` as Perfetto's own generated Python classes read it
/// (tests/perfetto_decode.py: PyPI `perfetto` and `protobuf`, no llctop code).
pub fn perfetto_decode(path: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_decode.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("python3 runs (scripts/deps.sh installs perfetto and protobuf)");
    assert!(
        out.status.success(),
        "decoder: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the decoder's JSON")
}

/// A decoded trace's track tree: its root tracks named `node …`, and for each `CPU c`
/// track, c with its parent's name (the LLC) and grandparent's (the node).
pub fn cpu_tracks(d: &serde_json::Value) -> (Vec<String>, Vec<(u32, String, String)>) {
    let tracks = d["tracks"].as_object().expect("tracks");
    let name = |uuid: &serde_json::Value| {
        tracks
            .get(&uuid.to_string())
            .and_then(|t| t["name"].as_str())
            .unwrap_or("")
            .to_string()
    };
    let nodes = tracks
        .values()
        .filter(|t| t["parent"].is_null())
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("node "))
        .map(str::to_string)
        .collect();
    let mut cpus: Vec<(u32, String, String)> = tracks
        .values()
        .filter_map(|t| {
            let c = t["name"].as_str()?.strip_prefix("CPU ")?.parse().ok()?;
            let llc = name(&t["parent"]);
            let node = tracks
                .get(&t["parent"].to_string())
                .map(|l| name(&l["parent"]))
                .unwrap_or_default();
            Some((c, llc, node))
        })
        .collect();
    cpus.sort();
    (nodes, cpus)
}

/// A host's recording for the canary A/B: the 6.1 procfs fixture's header (host named)
/// and its first snapshot `n` times, one a second, with the cross-LLC migrations scaled
/// by `xllc` and a noise of ±10 % per snapshot (deterministic: from the host and seq).
pub fn fleet_host(dir: &Path, host: &str, n: u64, xllc: f64) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recordings/newidle-6.1-procfs.jsonl"),
    )
    .unwrap();
    let mut lines = text.lines();
    let mut head: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    head["host"] = host.into();
    let snap: serde_json::Value = lines
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "snapshot")
        .unwrap();
    let mut out = vec![head.to_string()];
    let seed = host
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    for seq in 0..n {
        let mut s = snap.clone();
        s["seq"] = seq.into();
        s["time"]["interval_ns"] = 1_000_000_000u64.into();
        s["time"]["mono_ns"] = (10_000_000_000u64 + seq * 1_000_000_000).into();
        s["time"]["unix_ns"] = (1_795_460_000_000_000_000u64 + seq * 1_000_000_000).into();
        let r = (seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(seq.wrapping_mul(1442695040888963407))
            >> 33) as f64
            / (1u64 << 31) as f64;
        s["migrations"]["by_distance"]["cross_llc"] =
            ((1000.0 * xllc * (0.9 + 0.2 * r)).round() as u64).into();
        out.push(s.to_string());
    }
    std::fs::write(dir.join(format!("{host}.jsonl")), out.join("\n") + "\n").unwrap();
}

/// The sched debugfs directory (/sys/kernel/debug/sched: the sched features and the other
/// debugfs knobs), mounting debugfs where it is not: a test that needs it must not depend
/// on another test binary having mounted it before (a fresh boot has it unmounted).
pub fn sched_debugfs() -> &'static Path {
    let debug = Path::new("/sys/kernel/debug/sched");
    if !debug.exists() {
        let st = Command::new("mount")
            .args(["-t", "debugfs", "none", "/sys/kernel/debug"])
            .status();
        assert!(debug.exists(), "debugfs cannot be mounted here ({st:?})");
    }
    debug
}

/// Each window of an `ab` recording whose command ran `llctop-workload pipe-pair`
/// (`out`: the workload's lines, window by window): the pair's two processes are among
/// the window's command processes, and their runs and run-queue waits in the window's
/// rows are what each side's kernel schedstat said (read by each side itself just before
/// its last writes and its exit: the recording may hold a few runs more, never fewer);
/// the verdict compares `command.wait_per_run`. Returns each window's arm and the pair's
/// wait per run as the kernel counted it (µs).
pub fn check_command_windows(
    rec: &llctop::record::reader::Recording,
    out: &str,
    label: &str,
) -> Vec<(llctop::experiment::Arm, f64)> {
    let num = |l: &str, key: &str| -> u64 {
        let f: Vec<&str> = l.split_whitespace().collect();
        let i = f
            .iter()
            .position(|w| *w == key)
            .unwrap_or_else(|| panic!("{key}: {l}"));
        f[i + 1].parse().unwrap()
    };
    let pairs: Vec<Vec<u32>> = out
        .lines()
        .filter_map(|l| l.strip_prefix("pair "))
        .map(|l| l.split_whitespace().map(|p| p.parse().unwrap()).collect())
        .collect();
    let ends: Vec<&str> = out.lines().filter(|l| l.starts_with("rounds ")).collect();
    assert!(
        rec.windows.len() >= 2 && pairs.len() == rec.windows.len() && ends.len() == pairs.len(),
        "{label}: {} windows, {} pairs, {} ends\n{out}",
        rec.windows.len(),
        pairs.len(),
        ends.len()
    );
    let mut kernel = Vec::new();
    for ((w, pair), end) in rec.windows.iter().zip(&pairs).zip(&ends) {
        for pid in pair {
            assert!(
                w.command_pids.contains(pid),
                "{label} window {}: {pid} of the pair in {:?}",
                w.index,
                w.command_pids
            );
        }
        let (delay, runs) = (
            num(end, "parent_run_delay_ns") + num(end, "child_run_delay_ns"),
            num(end, "parent_runs") + num(end, "child_runs"),
        );
        let (mut ours_delay, mut ours_runs) = (0u64, 0u64);
        for row in rec
            .snapshots
            .iter()
            .filter(|s| (w.first_seq..=w.last_seq).contains(&s.seq))
            .filter_map(|s| s.processes.as_ref())
            .flat_map(|t| &t.rows)
            .filter(|row| pair.contains(&row.pid))
        {
            ours_delay += row.rq_wait_ns;
            ours_runs += row.runs.expect("runs counted (bpf, settled per task)");
        }
        println!(
            "{label} window {} ({:?}): pair {pair:?}, {} round trips; kernel: {runs} runs, {delay} ns waiting; llctop: {ours_runs} runs, {ours_delay} ns",
            w.index,
            w.arm,
            num(end, "rounds")
        );
        assert!(runs > 100, "{label}: the pair ran: {end}");
        assert!(
            ours_runs >= runs && ours_runs <= runs + 16,
            "{label} window {}: llctop {ours_runs} runs vs the kernel's {runs} when the pair read it",
            w.index
        );
        assert!(
            ours_delay >= delay,
            "{label} window {}: waits never fewer",
            w.index
        );
        kernel.push((w.arm, delay as f64 / runs as f64 / 1e3));
    }
    let v = rec.verdict.as_ref().expect("verdict");
    for m in ["command.rq_wait", "command.wait_per_run", "command.wall"] {
        assert!(
            v.rows.iter().any(|row| row.metric == m),
            "{label}: {m} compared"
        );
    }
    kernel
}
