//! Reliability (issue "Reliability"): every way a run ends restores the knobs it changed
//! and says in its exit status how it ended; input that enters through the command line is
//! bounded with a one-line error. Runs on fixture kernel roots (no root needed): the knob
//! is a fixture file, the journal a temp file.

mod common;

use common::llctop;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::{put, writable_root};
use llctop::kroot::KernelRoot;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");
const KNOB: &str = "/sys/kernel/debug/sched/migration_cost_ns";

/// A fixture root with one writable knob (sched.migration_cost_ns = 500000).
fn fixture() -> (tempfile::TempDir, KernelRoot) {
    let (dir, root, _) = writable_root("qemu-lab-2s2llc");
    let d = dir.path();
    put(
        d,
        "proc/self/mountinfo",
        "32 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n",
    );
    put(d, "sys/kernel/debug/sched/migration_cost_ns", "500000\n");
    (dir, root)
}

fn read(root: &KernelRoot, p: &str) -> String {
    std::fs::read_to_string(root.path(p))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `live --source procfs --interval 200ms --set sched.migration_cost_ns=VALUE`, then
/// `more` arguments.
fn live_setting(value: &str, more: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["live", "--source", "procfs", "--interval", "200ms", "--set"]
        .map(String::from)
        .to_vec();
    a.push(format!("sched.migration_cost_ns={value}"));
    a.extend(more.iter().map(|s| s.to_string()));
    a
}

/// A run that changed the knob and was SIGKILLed: the knob stays changed (0).
fn killed_with_change(root: &KernelRoot, journal: &Path) {
    let mut child = live_with_change(root, journal);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert_eq!(read(root, KNOB), "0", "nothing ran after SIGKILL");
}

/// `llctop live --set sched.migration_cost_ns=0` on the fixture, once the change is made.
fn live_with_change(root: &KernelRoot, journal: &Path) -> Child {
    let mut child = llctop(root, journal, &live_setting("0", &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("llctop runs");
    // The first summary line comes after the change.
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let t = Instant::now();
    while !line.contains(" busy ") {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("read") > 0,
            "llctop ended early"
        );
        assert!(t.elapsed() < Duration::from_secs(60), "no summary line");
    }
    assert_eq!(read(root, KNOB), "0", "the change is in place");
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    child
}

#[test]
fn every_stop_signal_restores_the_knob_and_the_status_says_which() {
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
    ] {
        let (dir, root) = fixture();
        let j = dir.path().join("journal.json");
        let child = live_with_change(&root, &j);
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + sig), "{name}: {err}");
        assert!(
            err.contains("restored sched.migration_cost_ns"),
            "{name}: {err}"
        );
        assert!(
            err.contains(&format!("stopped by signal {sig}")),
            "{name}: {err}"
        );
        assert_eq!(read(&root, KNOB), "500000", "{name}: restored");
    }
}

#[test]
fn sigkill_leaves_the_journal_and_knobs_restore_puts_it_back() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    killed_with_change(&root, &j);
    knobs_restore(&root, &j);
}

/// `llctop knobs restore` puts the knob's original back.
fn knobs_restore(root: &KernelRoot, journal: &Path) {
    let out = llctop(root, journal, &["knobs", "restore"])
        .output()
        .expect("restore");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(read(root, KNOB), "500000");
}

/// Exit status, stderr of `llctop ARGS` on a fixture.
fn fails(args: &[&str]) -> (i32, String) {
    let (dir, root) = fixture();
    let out = llctop(&root, &dir.path().join("j.json"), args)
        .output()
        .expect("llctop runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn intervals_and_durations_out_of_range_are_refused_in_one_line() {
    for args in [
        &["--interval", "18446744073709551615s", "live"][..],
        &["--interval", "1ns", "live"],
        &["--interval", "999999h", "live"],
        &["live", "--duration", "99999d"],
        &[
            "ab",
            "numa_balancing=0,1",
            "--window",
            "18446744073709551615s",
        ],
    ] {
        let (rc, err) = fails(args);
        assert_eq!(rc, 2, "{args:?}: a usage error\n{err}");
        assert!(
            err.contains("interval must be from 10ms to 1h") || err.contains("at most 30days"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn duration_is_wall_time_whatever_the_interval() {
    let (dir, root) = fixture();
    let t = Instant::now();
    let out = llctop(
        &root,
        &dir.path().join("j.json"),
        &[
            "live",
            "--source",
            "procfs",
            "--interval",
            "10ms",
            "--duration",
            "1s",
        ],
    )
    .output()
    .expect("llctop runs");
    let took = t.elapsed();
    assert!(out.status.success(), "{out:?}");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" busy "))
        .count();
    // It ends: about 1 s of snapshots (fewer when the machine is busy), never 4,000 lines
    // and never "until killed"; the bound on time is loose for a loaded machine.
    assert!((1..=101).contains(&lines), "{lines} snapshot lines");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_fixture_root_never_gets_the_live_kernels_bpf_counts() {
    let (dir, root) = fixture();
    let out = llctop(
        &root,
        &dir.path().join("j.json"),
        &["live", "--duration", "1s", "--interval", "500ms"],
    )
    .output()
    .expect("llctop runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let status = String::from_utf8_lossy(&out.stderr);
    assert!(
        status.contains(llctop::source::NOT_LIVE_BPF),
        "bpf absent with the reason:\n{status}"
    );
    assert!(!text.contains("| mig/s "), "no exact migrations: {text}");
    let (rc, err) = fails(&["--source", "bpf", "live", "--duration", "1s"]);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains(llctop::source::NOT_LIVE_BPF), "{err}");
}

fn wait_file(p: &Path, what: &str) -> String {
    let t = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(p)
            && !s.is_empty()
        {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{what}: {} never written",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tui_shell(root: &KernelRoot, journal: &Path, status: &Path, env: &str) -> String {
    format!(
        "{env} {BIN} --sysroot {} --journal {} tui --source procfs --set sched.migration_cost_ns=0 2>{}.err; echo $? > {}; sleep 60",
        root.root().display(),
        journal.display(),
        status.display(),
        status.display()
    )
}

#[test]
fn a_panic_in_the_tuis_data_thread_ends_it_restoring_the_knob() {
    let t = Tmux::new("panic");
    let (dir, root) = fixture();
    let status: PathBuf = dir.path().join("status");
    t.start(&tui_shell(
        &root,
        &dir.path().join("j.json"),
        &status,
        &format!("{}=feed-panic", llctop::tui::FAULT_ENV),
    ));
    let rc = wait_file(&status, "exit status");
    let err = std::fs::read_to_string(format!("{}.err", status.display())).unwrap_or_default();
    assert_eq!(rc.trim(), "1", "a failure, not a clean exit: {err}");
    assert!(err.contains("the data thread panicked"), "{err}");
    assert!(err.contains("restored sched.migration_cost_ns"), "{err}");
    assert_eq!(read(&root, KNOB), "500000");
}

#[test]
fn closing_the_terminal_restores_the_tuis_knob() {
    let t = Tmux::new("hup");
    let (dir, root) = fixture();
    let status: PathBuf = dir.path().join("status");
    let j = dir.path().join("j.json");
    // The TUI alone in the session: killing the session hangs up its terminal.
    t.start(&format!(
        "{BIN} --sysroot {} --journal {} tui --source procfs --set sched.migration_cost_ns=0 2>{}.err; echo $? > {}",
        root.root().display(),
        j.display(),
        status.display(),
        status.display()
    ));
    let t0 = Instant::now();
    while read(&root, KNOB) != "0" {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the change never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.cmd(&["kill-session", "-t", "t"]);
    while read(&root, KNOB) != "500000" {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "not restored after the terminal closed: {}",
            std::fs::read_to_string(format!("{}.err", status.display())).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `live --set sched.migration_cost_ns=VALUE --duration 1s` to its end: exit status and
/// stderr.
fn second_run(root: &KernelRoot, journal: &Path, value: &str) -> (i32, String) {
    let out = llctop(root, journal, &live_setting(value, &["--duration", "1s"]))
        .output()
        .expect("llctop runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn stop(child: Child) -> String {
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_second_run_on_the_same_knob_is_refused_and_the_original_comes_back() {
    for same_journal in [false, true] {
        let (dir, root) = fixture();
        let ja = dir.path().join("a.json");
        let jb = if same_journal {
            ja.clone()
        } else {
            dir.path().join("b.json")
        };
        let a = live_with_change(&root, &ja);
        let (rc, err) = second_run(&root, &jb, "7");
        // 9: another llctop holds the knob (the exit code `llctop knobs` gives it too).
        assert_eq!(rc, 9, "B refused (same journal: {same_journal}): {err}");
        assert!(
            err.contains(&format!(
                "sched.migration_cost_ns is being changed by another llctop (pid {})",
                a.id()
            )),
            "B is told who holds it: {err}"
        );
        assert_eq!(read(&root, KNOB), "0", "A's value stands while A runs");
        let err = stop(a);
        assert!(err.contains("restored sched.migration_cost_ns"), "{err}");
        assert_eq!(read(&root, KNOB), "500000", "the original is back");
        // With A gone, B may.
        let (rc, err) = second_run(&root, &jb, "7");
        assert_eq!(rc, 0, "{err}");
        assert_eq!(read(&root, KNOB), "500000");
    }
}

#[test]
fn a_knob_changed_behind_llctops_back_is_left_and_said() {
    let (dir, root) = fixture();
    let j = dir.path().join("j.json");
    let a = live_with_change(&root, &j);
    std::fs::write(root.path(KNOB), "42\n").expect("someone else writes");
    let err = stop(a);
    assert!(
        err.contains(
            "now 42, not the 0 llctop wrote: changed by someone else since, so left as it is"
        ),
        "{err}"
    );
    assert_eq!(read(&root, KNOB), "42");
}

#[test]
fn the_next_run_restores_what_a_killed_run_left_but_not_what_was_kept() {
    let (dir, root) = fixture();
    let j = dir.path().join("j.json");
    killed_with_change(&root, &j);
    let out = llctop(
        &root,
        &j,
        &[
            "live",
            "--source",
            "procfs",
            "--duration",
            "200ms",
            "--interval",
            "100ms",
        ],
    )
    .output()
    .expect("llctop runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("restored sched.migration_cost_ns (left changed by an llctop run that ended without restoring)"),
        "{err}"
    );
    assert_eq!(read(&root, KNOB), "500000");
    // A change kept on purpose (`llctop knobs set`) is not an orphan; a run that changes it
    // again puts back the kept value, and `knobs restore` the original before it.
    let out = llctop(
        &root,
        &j,
        &["knobs", "set", "sched.migration_cost_ns", "123"],
    )
    .output()
    .expect("knobs set");
    assert!(out.status.success(), "{out:?}");
    let (rc, err) = second_run(&root, &j, "0");
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("left changed by an llctop run"), "{err}");
    assert_eq!(
        read(&root, KNOB),
        "123",
        "the kept value, as this run found it"
    );
    knobs_restore(&root, &j);
}

/// `llctop ARGS` with its status and stderr.
fn cli(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().expect("llctop runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn absurd_cpu_lists_in_a_sysroot_are_one_line_errors() {
    for (file, text, says) in [
        (
            "sys/devices/system/cpu/online",
            "4294967295\n",
            "CPU ids are below 16384",
        ),
        (
            "sys/devices/system/cpu/online",
            "0-4294967295\n",
            "CPU ids are below 16384",
        ),
        (
            "sys/devices/system/cpu/present",
            "0-100000000\n",
            "CPU ids are below 16384",
        ),
        (
            "sys/devices/system/node/node1/cpulist",
            "0-3\n",
            "is in node 0 and node 1",
        ),
    ] {
        let (dir, root) = fixture();
        put(dir.path(), file, text);
        let t = Instant::now();
        for args in [
            &["topology"][..],
            &[
                "live",
                "--source",
                "procfs",
                "--duration",
                "200ms",
                "--interval",
                "100ms",
            ],
        ] {
            let mut a = vec!["--sysroot", root.root().to_str().expect("utf-8")];
            a.extend_from_slice(args);
            let (rc, err) = cli(&a);
            assert_eq!(rc, 1, "{file} = {text:?}, {args:?}: {err}");
            assert!(err.contains(says) && err.contains(file), "{file}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no hang");
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

/// A real recording (from the seed lab) as lines.
fn lab_recording() -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings/newidle-6.1-procfs.jsonl");
    std::fs::read_to_string(p)
        .expect("fixture")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn hostile_recordings_give_one_line_errors_or_correct_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let lines = lab_recording();
    let report = |p: &Path| cli(&["report", p.to_str().expect("utf-8")]);
    // Busy outside 0–1.
    let bad: Vec<String> = lines
        .iter()
        .map(|l| l.replacen("\"busy\":0.", "\"busy\":-3.", 1))
        .collect();
    let (rc, err) = report(&write(d, "busy.jsonl", bad.join("\n").as_bytes()));
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains("busy -3") && err.contains("is not in 0–1"),
        "{err}"
    );
    // A snapshot line repeated is not a second snapshot.
    let mut dup = lines.clone();
    let i = dup
        .iter()
        .position(|l| l.contains("\"type\":\"snapshot\""))
        .expect("a snapshot");
    dup.insert(i, dup[i].clone());
    let (rc, err) = report(&write(d, "dup.jsonl", dup.join("\n").as_bytes()));
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("lines repeated or out of order"), "{err}");
    // Counts at u64::MAX: totals saturate, nothing wraps, no panic (debug build).
    let max: Vec<String> = lines
        .iter()
        .map(|l| {
            l.replace(
                "\"cross_node\":",
                "\"cross_node\":18446744073709551615,\"x\":",
            )
        })
        .collect();
    let out = Command::new(BIN)
        .args([
            "report",
            write(d, "max.jsonl", max.join("\n").as_bytes())
                .to_str()
                .expect("utf-8"),
        ])
        .output()
        .expect("report");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("18446744073709551615"),
        "saturated, not wrapped:\n{text}"
    );
    // Versions that are not whole numbers from 1.
    for v in ["\"1\"", "1.0", "-1", "0"] {
        let mut l = lines.clone();
        l[0] = l[0].replacen("\"version\":1", &format!("\"version\":{v}"), 1);
        let (rc, err) = report(&write(d, "v.jsonl", l.join("\n").as_bytes()));
        assert_eq!(rc, 1, "{v}: {err}");
        assert!(
            err.contains("\"version\" must be a whole number from 1"),
            "{v}: {err}"
        );
        assert!(!err.contains("upgrade"), "{v}: {err}");
    }
    // A header without its final newline is a recording with no snapshots, not "empty".
    let (rc, err) = report(&write(d, "h.jsonl", lines[0].as_bytes()));
    assert_eq!(rc, 0, "{err}");
    // A gzip stream of zeros without a newline, and /dev/zero: refused as binary (at
    // its first bytes) or at the line cap, in one line that names the file.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &vec![0u8; 80 << 20]).expect("gzip");
    let zeros = write(d, "zeros.jsonl.gz", &gz.finish().expect("gzip"));
    for p in [zeros.as_path(), Path::new("/dev/zero")] {
        let (rc, err) = report(p);
        assert_eq!(rc, 1, "{}: {err}", p.display());
        assert!(
            err.contains("not an llctop recording") && err.contains(&*p.to_string_lossy()),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_corrupt_gzip_body_is_said_so_and_a_bogus_theme_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, (lab_recording().join("\n") + "\n").as_bytes())
        .expect("gzip");
    let mut bytes = gz.finish().expect("gzip");
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let p = write(dir.path(), "c.jsonl.gz", &bytes);
    let (rc, err) = cli(&["report", p.to_str().expect("utf-8")]);
    assert!(rc == 0 || err.contains("gzip"), "{rc}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let (rc, err) = cli(&["--theme", "bogus", "live", "--duration", "100ms"]);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("unknown theme \"bogus\""), "{err}");
}
