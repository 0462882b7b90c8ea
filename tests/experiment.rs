//! `llctop ab` on this machine (root: it writes a kernel knob), `report --compare` and
//! `diff` on what it recorded.
//! - a read-only knob (lockdown) is refused at once with the reason, nothing written;
//! - `numa_balancing` (writable here) runs to a verdict table and ends as it began;
//!   `report --compare` of the recording gives the live verdict; `diff` of the recording
//!   with itself finds nothing moved;
//! - SIGTERM mid-experiment restores the knob and still writes what was measured.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::require_root;

const NUMA: &str = "/proc/sys/kernel/numa_balancing";

fn llctop(journal: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llctop"));
    c.env("LLCTOP_JOURNAL", journal)
        .args(["--interval", "500ms"]);
    c
}

/// The tests that write numa_balancing take turns.
static NUMA_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn numa() -> String {
    std::fs::read_to_string(NUMA).unwrap().trim().to_string()
}

/// An experiment on numa_balancing: its turn (the tests that write it take turns), a
/// directory, the value before and the spec that flips it to the other.
struct NumaAb {
    _turn: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    before: String,
    spec: String,
}

impl NumaAb {
    fn take() -> NumaAb {
        let _turn = NUMA_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let before = numa();
        let spec = format!("numa_balancing={before},{}", other(&before));
        NumaAb {
            _turn,
            dir: tempfile::tempdir().unwrap(),
            before,
            spec,
        }
    }
}

/// The other value of numa_balancing (0 <-> 1), so the experiment changes something.
fn other(v: &str) -> &'static str {
    if v == "0" { "1" } else { "0" }
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_read_only_knob_is_refused_before_anything_is_written() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    // Under lockdown the sched features are read-only; elsewhere --read-only makes the
    // session refuse every write, with its own reason.
    // Without debugfs mounted there are no feature knobs: numa_balancing with
    // --read-only then.
    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown")
        .is_ok_and(|l| !l.contains("[none]"));
    let features = llctop(&dir.path().join("j.json"))
        .args(["knobs", "get", "feature.TTWU_QUEUE"])
        .output()
        .unwrap()
        .status
        .success();
    let mut c = llctop(&dir.path().join("j.json"));
    let spec = if lockdown && features {
        "feature.TTWU_QUEUE=on,off"
    } else {
        c.arg("--read-only");
        "numa_balancing=0,1"
    };
    let t0 = Instant::now();
    let out = c.args(["ab", spec, "--window", "1s"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("lockdown {lockdown}: {err}");
    assert!(!out.status.success());
    assert!(t0.elapsed() < Duration::from_secs(10), "refused at once");
    assert!(
        err.contains("not writable") || err.contains("read-only"),
        "{err}"
    );
    assert!(!err.contains("window 1/"), "no window ran");
    assert!(
        !dir.path().join("j.json").exists() || {
            let j = std::fs::read_to_string(dir.path().join("j.json")).unwrap();
            j.contains("\"entries\":[]")
        }
    );
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn numa_balancing_ab_runs_to_a_verdict_and_the_recording_gives_the_same() {
    require_root();
    let NumaAb {
        _turn,
        dir,
        before,
        spec,
    } = NumaAb::take();
    let rec = dir.path().join("ab.jsonl.gz");
    let out = llctop(&dir.path().join("j.json"))
        .args([
            "ab", &spec, "--window", "1s", "--warmup", "500ms", "--rounds", "2",
        ])
        .args(["--json", "-o"])
        .arg(&rec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(out.status.success(), "{err}");
    assert_eq!(numa(), before, "numa_balancing ends as it began");
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON verdict");
    let v = &live["verdict"];
    assert_eq!(
        (v["windows"].as_u64(), v["planned"].as_u64()),
        (Some(4), Some(4))
    );
    let rows = v["rows"].as_array().unwrap();
    for m in ["busy", "migrations.xllc", "rq_wait.p99"] {
        assert!(rows.iter().any(|r| r["metric"] == m), "{m} compared");
    }
    // Two windows per value cannot show a difference: every verdict says none.
    assert!(
        rows.iter()
            .all(|r| r["verdict"].as_str().is_some_and(|s| s.starts_with("no "))),
        "{v}"
    );
    for (i, w) in err.lines().filter(|l| l.contains("measured")).enumerate() {
        let want = if matches!(i, 0 | 3) {
            &before
        } else {
            other(&before)
        };
        assert!(
            w.contains(&format!("numa_balancing = {want})")),
            "ABBA: {w}"
        );
    }
    // The same verdict from the file.
    let replay = llctop(&dir.path().join("j.json"))
        .args(["report", "--compare", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(replay.status.success());
    let again: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(again, live, "report --compare gives the live verdict");
    let table = llctop(&dir.path().join("j.json"))
        .args(["report", "--compare"])
        .arg(&rec)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("ABBA order") && table.contains("verdict"),
        "{table}"
    );
    assert!(!table.contains("differs"), "{table}");
    // diff of the recording with itself: no change, the knob the same.
    let d = llctop(&dir.path().join("j.json"))
        .arg("diff")
        .arg(&rec)
        .arg(&rec)
        .output()
        .unwrap();
    let d = String::from_utf8_lossy(&d.stdout);
    println!("{d}");
    assert!(d.contains(" 0 moved beyond the noise"), "{d}");
    assert!(d.contains("Knobs: the same at the start of both"), "{d}");
    // One pipeline: the experiment's recording carries every kind of line `record`
    // writes on this machine (findings, the knob values at the start), and its own.
    let plain = dir.path().join("plain.jsonl");
    let out = llctop(&dir.path().join("j.json"))
        .args(["record", "--duration", "2s", "-o"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds = |p: &std::path::Path| -> std::collections::BTreeSet<String> {
        let bytes = std::fs::read(p).unwrap();
        let mut text = String::new();
        if p.extension().is_some_and(|e| e == "gz") {
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
                .unwrap();
        } else {
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| v["type"].as_str().unwrap_or("header").to_string())
            .collect()
    };
    let (ab, record) = (kinds(&rec), kinds(&plain));
    assert!(
        record.contains("knob_values") && record.contains("snapshot"),
        "{record:?}"
    );
    assert!(record.is_subset(&ab), "record {record:?}, ab -o {ab:?}");
    for own in ["experiment", "window", "verdict", "knob"] {
        assert!(ab.contains(own), "{own} in {ab:?}");
    }
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn sigterm_mid_experiment_restores_the_knob_and_keeps_what_was_measured() {
    require_root();
    let NumaAb {
        _turn,
        dir,
        before,
        spec,
    } = NumaAb::take();
    let rec = dir.path().join("ab.jsonl");
    let mut child = llctop(&dir.path().join("j.json"))
        .args([
            "ab", &spec, "--window", "1s", "--warmup", "0s", "--rounds", "6", "-o",
        ])
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first window is measured and the knob flipped to B, stop there.
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let mut first_done = false;
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push(l.clone());
        first_done |= l.contains("window 1/12");
        if first_done && l.contains("numa_balancing:") && l.contains("->") {
            break;
        }
    }
    let during = numa();
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    println!("{seen:?} {rest:?}");
    assert_eq!(during, other(&before), "window 2 ran with B");
    assert_eq!(
        status.code(),
        Some(143),
        "SIGTERM ends the experiment cleanly, its status saying it was stopped: {status}"
    );
    assert_eq!(numa(), before, "restored after SIGTERM");
    let r = llctop::record::reader::open(&rec).unwrap();
    assert!(!r.windows.is_empty() && r.windows.len() < 12);
    let v = r.verdict.expect("the verdict of what was measured");
    assert_eq!((v.windows, v.planned), (r.windows.len(), 12));
    assert!(
        r.knobs.last().is_some_and(|k| k.new == before),
        "the restore is recorded"
    );
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_command_per_window_gives_its_wall_time_and_exit_status() {
    require_root();
    let NumaAb {
        _turn,
        dir,
        before,
        spec,
    } = NumaAb::take();
    let rec = dir.path().join("cmd.jsonl");
    let out = llctop(&dir.path().join("j.json"))
        .args([
            "ab", &spec, "--window", "500ms", "--warmup", "0s", "--rounds", "2", "-o",
        ])
        .arg(&rec)
        // 1.6 s: three 500 ms snapshots at least, two even when a loaded machine makes a
        // tick late (a late tick starts a new grid rather than a sliver: with 0.6 s, one
        // window once held a single snapshot).
        .args(["--", "sh", "-c", "sleep 1.6; exit 3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(numa(), before);
    let r = llctop::record::reader::open(&rec).unwrap();
    assert_eq!(r.windows.len(), 4);
    for w in &r.windows {
        // The window lasts until the command ends: at least its 1.6 s.
        assert_eq!(w.exit_code, Some(3), "{w:?}");
        assert!(
            w.command_secs.is_some_and(|t| (1.6..6.0).contains(&t)),
            "{w:?}"
        );
        assert!(
            w.last_seq > w.first_seq,
            "{w:?}: more than one 500 ms snapshot"
        );
    }
    let v = r.verdict.unwrap();
    let failed = v
        .rows
        .iter()
        .find(|r| r.metric == "command.failed")
        .unwrap();
    assert_eq!(
        (failed.stats.median_a, failed.stats.median_b),
        (100.0, 100.0)
    );
    assert!(v.rows.iter().any(|r| r.metric == "command.wall"));
}

/// A fixture whose LLCs are single CPUs (an Arm part with no L3: each core's L2), so
/// that this 2-CPU machine has two LLCs to place a command on: llc0 = CPU 0, llc1 = CPU 1.
const ONE_CPU_LLCS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/topology/arm-no-l3"
);

/// The CPUs the kernel allows this process (`Cpus_allowed_list`), as llctop's own list.
fn own_cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// (the arm's value, the `Cpus_allowed_list` lines the command printed before that
/// window's "measured" line) per window, from stderr (the command writes there too).
fn windows_and_cpus(err: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for l in err.lines() {
        if let Some(c) = l.strip_prefix("Cpus_allowed_list:") {
            seen.push(c.trim().to_string());
        } else if l.contains(") measured") {
            let value = l
                .split("(colocate = ")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .unwrap_or("")
                .to_string();
            out.push((value, std::mem::take(&mut seen)));
        }
    }
    out
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn colocate_places_the_command_on_each_arms_llc_as_the_kernel_reports_it() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let own = own_cpus();
    // Each window's command: the kernel's own word on where it may run.
    let out = llctop(&dir.path().join("j.json"))
        .args(["ab", "--sysroot", ONE_CPU_LLCS, "colocate=off,llc1"])
        .args([
            "--window", "300ms", "--warmup", "0s", "--rounds", "2", "--json",
        ])
        .args([
            "--",
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status >&2",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON verdict");
    assert_eq!(v["experiment"]["knob"], "colocate");
    assert_eq!(
        (&v["experiment"]["a"], &v["experiment"]["b"]),
        (&"off".into(), &"llc1".into())
    );
    assert_eq!(v["verdict"]["windows"], 4, "{v}");
    let w = windows_and_cpus(&err);
    let want: Vec<(String, Vec<String>)> = ["off", "llc1", "llc1", "off"]
        .iter()
        .map(|a| {
            (
                a.to_string(),
                vec![if *a == "off" { own.clone() } else { "1".into() }],
            )
        })
        .collect();
    assert_eq!(w, want, "each window's command ran where its arm says");
    assert_eq!(own_cpus(), own, "llctop's own CPUs untouched");

    // --steady: the one command's threads are moved at each flip (the loop's shell and
    // every grep it forks after).
    let out = llctop(&dir.path().join("j.json"))
        .args([
            "ab",
            "--sysroot",
            ONE_CPU_LLCS,
            "colocate=llc0,llc1",
            "--steady",
        ])
        .args(["--window", "500ms", "--warmup", "300ms", "--rounds", "2"])
        .args([
            "--",
            "sh",
            "-c",
            "while :; do grep Cpus_allowed_list /proc/self/status >&2; sleep 0.05; done",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let w = windows_and_cpus(&err);
    assert_eq!(w.len(), 4, "{err}");
    for (arm, cpus) in &w {
        // What the command saw in the measured part (the lines just before the window
        // ended: a grep that read its status as the flip moved it may print the old set
        // first).
        let want = if arm == "llc0" { "0" } else { "1" };
        let tail = &cpus[cpus.len().saturating_sub(4)..];
        assert!(
            tail.len() == 4 && tail.iter().all(|c| c == want),
            "{arm}: {cpus:?}\n{err}"
        );
    }
    assert!(err.contains("the command's"), "{err}");

    // Refused before anything runs: no command (llctop never moves what it did not
    // start), an LLC that is not there, and two arms on the same CPUs.
    for (args, why) in [
        (vec!["colocate=off,llc1"], "moves no other process"),
        (vec!["colocate=off,llc1", "--pid", "2"], "kernel thread"),
        (
            vec!["colocate=off,llc1", "--pid", "4294967295"],
            "no such process",
        ),
        (
            vec!["numa_balancing=0,1", "--pid", "1"],
            "no other experiment moves a process",
        ),
        (vec!["colocate=off,llc99", "--", "true"], "no such LLC"),
        (vec!["colocate=off,llc9", "--", "true"], "none of its CPUs"),
        (vec!["colocate=llc1,1", "--", "true"], "nothing to compare"),
    ] {
        let out = llctop(&dir.path().join("j.json"))
            .args(["ab", "--sysroot", ONE_CPU_LLCS])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
        assert!(!err.contains("window 1/"), "{args:?}: no window ran: {err}");
    }
}

/// A window's command is a pipe pair (a parent and the child it forks, passing a byte
/// back and forth): each window names both as the command's processes, and their
/// run-queue waits and runs in the window's rows are what each side's kernel schedstat
/// says (read by each side itself, just before its last writes and its exit: the
/// recording may hold a few runs more, never fewer) — so `command.wait_per_run`, the
/// pair's wakeup latency, is theirs; the verdict compares it.
#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_commands_processes_and_their_wait_per_run_are_the_kernels() {
    require_root();
    let NumaAb {
        _turn,
        dir,
        before,
        spec,
    } = NumaAb::take();
    let rec = dir.path().join("ab.jsonl");
    let out = llctop(&dir.path().join("j.json"))
        .args([
            "--top", "1", "ab", &spec, "--window", "1s", "--warmup", "300ms", "--rounds", "1",
            "--json", "-o",
        ])
        .arg(&rec)
        .args([
            "--",
            env!("CARGO_BIN_EXE_llctop-workload"),
            "pipe-pair",
            "1.5",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(out.status.success(), "{err}");
    assert_eq!(numa(), before, "numa_balancing ends as it began");
    // The workload's own lines (its stdout goes to stderr with --json), window by window.
    // (Each window's pair starts after a warm-up snapshot and runs three intervals: a
    // process born and gone between two snapshots is not seen as the command's — the
    // suite once ran a 0.7 s pair in a first window of one long snapshot, its child
    // already gone.)
    let r = llctop::record::reader::open(&rec).unwrap();
    assert_eq!(r.windows.len(), 2);
    // `--top 1`: the snapshots' one ranked row, and the pair's two processes besides it,
    // whatever their rank (the experiment's own are always given rows).
    for w in &r.windows {
        assert_eq!(w.command_pids.len(), 2, "the pair, nothing else: {w:?}");
    }
    common::check_command_windows(&r, &err, "host");
}

/// The threads of process `pid` and the CPUs each may run on (`Cpus_allowed_list`).
fn thread_cpus(pid: u32) -> std::collections::BTreeMap<u32, String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let tid: u32 = e.file_name().to_str()?.parse().ok()?;
                    let st = std::fs::read_to_string(e.path().join("status")).ok()?;
                    let cpus = st
                        .lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                        .trim()
                        .to_string();
                    Some((tid, cpus))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `colocate` of a running process llctop did not start, asked for with `--pid`: each
/// `llc0` window has every thread of it on CPU 0 as the kernel reports them, each `off`
/// window has each thread back on the CPUs it had — one thread was pinned to CPU 1 by
/// hand beforehand and stays so — and so does the end; after a SIGKILL mid-experiment,
/// the journal's entry puts them back (`llctop knobs restore`), never onto a process
/// that is not the one placed.
#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn colocate_of_a_running_process_is_journaled_and_put_back_thread_by_thread() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.json");
    let mut target = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
        .args(["share", "2", "60"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while thread_cpus(pid).len() < 3 {
        assert!(Instant::now() < deadline, "share 2 started its threads");
        std::thread::sleep(Duration::from_millis(20));
    }
    let own = own_cpus();
    // One worker pinned by hand: its own set is not the process's.
    let pinned = *thread_cpus(pid).keys().max().unwrap();
    llctop::cpulist::CpuMask::of(&[1])
        .unwrap()
        .apply(pinned as i32)
        .unwrap();
    let before = thread_cpus(pid);
    assert_eq!(before[&pinned], "1");
    assert!(
        before.values().filter(|c| **c == own).count() >= 2,
        "{before:?}"
    );

    let mut ab = llctop(&journal)
        .args(["ab", "--sysroot", ONE_CPU_LLCS, "colocate=off,llc0"])
        .args(["--pid", &pid.to_string()])
        .args([
            "--window", "600ms", "--warmup", "0s", "--rounds", "2", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Watch the threads while it runs: all on CPU 0 at some point, and never on a set
    // that is neither their own nor llc0's.
    let mut all_on_0 = false;
    while ab.try_wait().unwrap().is_none() {
        let now = thread_cpus(pid);
        if !now.is_empty() && now.values().all(|c| c == "0") {
            all_on_0 = true;
        }
        for (tid, c) in &now {
            assert!(
                c == "0" || before.get(tid) == Some(c),
                "thread {tid} on {c}: neither llc0 nor its own {:?}",
                before.get(tid)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = ab.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(out.status.success(), "{err}");
    assert!(all_on_0, "every thread seen on llc0's CPU 0 in a window");
    // (The snapshots under a fixture --sysroot are the fixture's: the named process's
    // own figures are checked in the lab's 7.2 guest, tests/lab/cas_inside.rs.)
    assert!(
        err.contains(&format!("process {pid} on llc0 (CPUs 0): 3 threads")),
        "{err}"
    );
    assert!(
        err.contains(&format!("process {pid} back on its own CPUs (3 threads)")),
        "{err}"
    );
    assert_eq!(thread_cpus(pid), before, "each thread back on its own set");
    let j = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(!j.contains("affinity."), "the journal forgot it: {j}");

    // Killed mid-experiment: the placement stays (nothing ran to undo it) and is in the
    // journal; `knobs restore` puts each thread back.
    let mut ab = llctop(&journal)
        .args(["ab", "--sysroot", ONE_CPU_LLCS, "colocate=llc0,llc1"])
        .args(["--pid", &pid.to_string()])
        .args(["--window", "5s", "--warmup", "0s", "--rounds", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(ab.stderr.take().unwrap()).lines();
    for l in lines.by_ref() {
        if l.unwrap().contains("on llc0 (CPUs 0)") {
            break;
        }
    }
    ab.kill().unwrap();
    ab.wait().unwrap();
    let placed = thread_cpus(pid);
    assert!(placed.values().all(|c| c == "0"), "left placed: {placed:?}");
    let j = std::fs::read_to_string(&journal).unwrap();
    assert!(j.contains(&format!("affinity.{pid}")), "journaled: {j}");
    let out = llctop(&journal)
        .args(["knobs", "restore"])
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    println!("{said}");
    assert!(out.status.success(), "{said}");
    assert_eq!(thread_cpus(pid), before, "put back from the journal");
    let j = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(!j.contains("affinity."), "{j}");
    let _ = target.kill();
    let _ = target.wait();
}
