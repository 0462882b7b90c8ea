//! Reliability II (issue 32): what a hostile or unlucky environment does to llctop.
//! - text output: a recording whose process names, cgroups, knob values, labels, host
//!   and experiment values hold every control character prints none of them raw in
//!   `report`, `report --compare` or `diff`, and no embedded newline starts a line;
//! - no write follows a symlink: a knob write under `--sysroot` that a planted link leads
//!   out of the tree is refused (the journal's temp and lock files: unit tests in
//!   knobs::journal);
//! - config files are bounded (1 MiB, regular files only), a relative or non-directory
//!   `XDG_CONFIG_HOME` is ignored with a warning, an empty `LLCTOP_JOURNAL` is unset.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

/// Every character a terminal acts on, a bidi override, and a newline that would start
/// a line of its own.
fn evil() -> String {
    let mut s: String = (1u32..0x20)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .filter_map(char::from_u32)
        .collect();
    s.push_str("\u{202e}\x1b]2;PWN\x07\x1b[2J\nFAKE LINE");
    s
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recordings")
            .join(name),
    )
    .unwrap()
}

/// Every string under a key that comes from outside llctop (a process, the kernel, an
/// operator) gets `evil` in front; the experiment's values and the windows' stay
/// consistent with each other.
fn poison(v: &mut Value, evil: &str) {
    const KEYS: [&str; 11] = [
        "comm",
        "cgroup",
        "old",
        "new",
        "read_back",
        "label",
        "host",
        "kernel",
        "a",
        "b",
        "value",
    ];
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    Value::String(s) if KEYS.contains(&k.as_str()) => *s = format!("{evil}{s}"),
                    _ => poison(x, evil),
                }
            }
            // Knob values at the start (`knob_values`): every value poisoned.
            if m.get("type").and_then(Value::as_str) == Some("knob_values") {
                for x in m.values_mut() {
                    if let Value::Object(vals) = x {
                        for val in vals.values_mut() {
                            if let Value::String(s) = val {
                                *s = format!("{evil}{s}");
                            }
                        }
                    }
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| poison(x, evil)),
        _ => {}
    }
}

fn poisoned(name: &str, dir: &Path) -> std::path::PathBuf {
    let e = evil();
    let mut out = String::new();
    for line in fixture(name).lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        poison(&mut v, &e);
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    assert!(
        out.contains("\\u001b]2;PWN"),
        "the recording holds the sequences"
    );
    let p = dir.join(name);
    std::fs::write(&p, out).unwrap();
    p
}

/// Nothing a terminal acts on: no control byte but newline, no C1 control, no bidi
/// override, and no line that a name started.
fn assert_printable(what: &str, out: &[u8]) {
    for (i, &b) in out.iter().enumerate() {
        assert!(
            b == b'\n' || (b >= 0x20 && b != 0x7f),
            "{what}: raw byte {b:#04x} at {i}: {:?}",
            String::from_utf8_lossy(&out[i.saturating_sub(40)..(i + 40).min(out.len())])
        );
    }
    let text = String::from_utf8(out.to_vec()).expect("UTF-8");
    for c in text.chars() {
        assert!(
            !c.is_control() || c == '\n',
            "{what}: raw {:?} in the output",
            c
        );
        assert_ne!(c, '\u{202e}', "{what}: raw bidi override");
    }
    for l in text.lines() {
        assert!(
            !l.trim_start().starts_with("FAKE LINE"),
            "{what}: a name started a line: {l:?}"
        );
    }
}

fn run(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_printable("stderr", &out.stderr);
    out.stdout
}

#[test]
fn text_output_of_a_hostile_recording_escapes_every_control_character() {
    let dir = tempfile::tempdir().unwrap();
    let placement = poisoned("placement-7.2-bpf.jsonl", dir.path());
    let numa = poisoned("numa-6.1-procfs.jsonl", dir.path());
    let ab = poisoned("ab-7.2.jsonl", dir.path());
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        (
            "report placement",
            vec!["report".as_ref(), placement.as_os_str()],
        ),
        ("report numa", vec!["report".as_ref(), numa.as_os_str()]),
        ("report ab", vec!["report".as_ref(), ab.as_os_str()]),
        (
            "report --compare",
            vec!["report".as_ref(), "--compare".as_ref(), ab.as_os_str()],
        ),
        (
            "diff",
            vec!["diff".as_ref(), numa.as_os_str(), placement.as_os_str()],
        ),
    ];
    for (what, args) in cases {
        let out = run(&args);
        assert_printable(what, &out);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("\\x1b]2;PWN\\x07"),
            "{what}: the poisoned strings are shown, escaped:\n{text}"
        );
        // The process table's columns are measured after escaping: every row as wide
        // as its header.
        if let Some(i) = text.find("Top processes by CPU time") {
            let rows: Vec<&str> = text[i..]
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .collect();
            let w = |l: &str| l.chars().count();
            assert!(rows.len() > 1, "{what}: the table");
            assert!(
                rows.iter().all(|r| w(r) == w(rows[0])),
                "{what}: columns pushed by an escaped name:\n{}",
                rows.join("\n")
            );
        }
    }
}

/// A fixture root with one writable knob (sched.migration_cost_ns = 500000).
fn knob_fixture() -> (tempfile::TempDir, llctop::kroot::KernelRoot) {
    let (dir, root, _) = common::writable_root("qemu-lab-2s2llc");
    let d = dir.path();
    common::put(
        d,
        "proc/self/mountinfo",
        "32 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n",
    );
    common::put(d, "sys/kernel/debug/sched/migration_cost_ns", "500000\n");
    (dir, root)
}

#[test]
fn a_knob_write_under_sysroot_never_follows_a_symlink_out_of_the_tree() {
    let (dir, root) = knob_fixture();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "500000\n").unwrap();
    let knob = dir.path().join("sys/kernel/debug/sched/migration_cost_ns");
    std::fs::remove_file(&knob).unwrap();
    std::os::unix::fs::symlink(&victim, &knob).unwrap();
    let j = dir.path().join("journal.json");
    let out = common::llctop(&root, &j, &["knobs", "set", "sched.migration_cost_ns", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {err}");
    assert!(err.contains("outside --sysroot"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "500000\n");
    // Nothing journaled for a write that never happened.
    let journal = std::fs::read_to_string(&j).unwrap_or_default();
    assert!(!journal.contains("migration_cost_ns"), "{journal}");
    // A symlink that stays inside the tree is written through.
    let inside = dir.path().join("sys/kernel/debug/sched/real_cost");
    std::fs::write(&inside, "500000\n").unwrap();
    std::fs::remove_file(&knob).unwrap();
    std::os::unix::fs::symlink(&inside, &knob).unwrap();
    let out = common::llctop(&root, &j, &["knobs", "set", "sched.migration_cost_ns", "0"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&inside).unwrap().trim(), "0");
}

#[test]
fn config_and_environment_that_make_no_sense_are_refused_or_ignored_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/epyc-7702p");
    let base = || {
        let mut c = Command::new(BIN);
        c.arg("--sysroot").arg(&topo).env_remove("LLCTOP_JOURNAL");
        c
    };
    // --config on a symlink to /dev/zero: refused at once, not read without end.
    let zero = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let t = std::time::Instant::now();
    let out = base()
        .arg("--config")
        .arg(&zero)
        .arg("topology")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    // A config larger than 1 MiB: refused with the reason.
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "#".repeat(2 << 20)).unwrap();
    let out = base()
        .arg("--config")
        .arg(&big)
        .arg("topology")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("larger than"), "{err}");
    // XDG_CONFIG_HOME naming a file, or relative: ignored with a warning, the command runs.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    for (value, why) in [
        (file.as_os_str(), "is not a directory"),
        ("relative/dir".as_ref(), "is relative"),
    ] {
        let out = base()
            .env("XDG_CONFIG_HOME", value)
            .arg("topology")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{value:?}: {err}");
        assert!(
            err.contains(why) && err.contains("XDG_CONFIG_HOME"),
            "{err}"
        );
    }
    // An empty LLCTOP_JOURNAL is unset.
    let out = base()
        .env("LLCTOP_JOURNAL", "")
        .arg("topology")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const COST: &str = "sys/kernel/debug/sched/migration_cost_ns";

/// `llctop ab sched.migration_cost_ns=500000,0` on the fixture, recorded to `out`.
fn ab_on_fixture(
    root: &llctop::kroot::KernelRoot,
    journal: &Path,
    out: &Path,
    interval: &str,
    window: &str,
) -> std::process::Child {
    common::llctop(
        root,
        journal,
        &[
            "--interval",
            interval,
            "--source",
            "procfs",
            "ab",
            "sched.migration_cost_ns=500000,0",
            "--window",
            window,
            "--warmup",
            "0s",
            "--rounds",
            "2",
            "-o",
        ],
    )
    .arg(out)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap()
}

/// Read `child`'s stderr until a line containing `what` (returned with the lines before);
/// the rest is drained by a thread and returned when it ends.
fn stderr_until(
    child: &mut std::process::Child,
    what: &str,
) -> (String, std::thread::JoinHandle<String>) {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        seen.push_str(&line);
        if line.contains(what) {
            break;
        }
    }
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut r, &mut s);
        s
    });
    (seen, rest)
}

fn windows_of(rec: &Path) -> Vec<Value> {
    std::fs::read_to_string(rec)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "window")
        .collect()
}

#[test]
fn an_experiment_owns_its_knob_a_second_is_refused_and_a_change_behind_its_back_is_not_counted() {
    let (dir, root) = knob_fixture();
    let j = dir.path().join("journal.json");
    let rec = dir.path().join("ab.jsonl");
    let mut first = ab_on_fixture(&root, &j, &rec, "200ms", "2s");
    // The knob is held before the first window: its first value is in place.
    let (seen, rest) = stderr_until(&mut first, "already 500000");
    // A second experiment on the same knob, while the knob is at its original value.
    let out = common::llctop(
        &root,
        &j,
        &[
            "--interval",
            "200ms",
            "--source",
            "procfs",
            "ab",
            "sched.migration_cost_ns=500000,1000",
            "--window",
            "1s",
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {err}");
    assert!(
        err.contains(&format!("another llctop (pid {})", first.id())),
        "names the first's pid: {err}"
    );
    assert!(!err.contains("window 1/"), "no window ran: {err}");
    // Changed behind the first's back during its first window.
    std::fs::write(dir.path().join(COST), "123\n").unwrap();
    let status = first.wait().unwrap();
    let err = format!("{seen}{}", rest.join().unwrap());
    assert!(status.success(), "{err}");
    assert!(
        err.contains("not counted: sched.migration_cost_ns: now 123"),
        "said: {err}"
    );
    let ws = windows_of(&rec);
    assert_eq!(ws.len(), 4, "{ws:?}");
    let spoilt: Vec<&Value> = ws.iter().filter(|w| w["not_counted"].is_string()).collect();
    assert_eq!(spoilt.len(), 1, "{ws:?}");
    assert!(
        spoilt[0]["not_counted"]
            .as_str()
            .unwrap()
            .contains("now 123")
    );
    // The verdict says how many counted; the knob ends at its original value.
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut first.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(stdout.contains("3 of 4 windows"), "{stdout}");
    assert!(stdout.contains("not counted: window"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(COST))
            .unwrap()
            .trim(),
        "500000"
    );
    let out = Command::new(BIN)
        .args(["report", "--compare"])
        .arg(&rec)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("3 of 4 windows"),
        "the recording agrees: {text}"
    );
}

#[test]
fn a_stall_during_an_experiment_is_one_long_snapshot_never_a_burst_of_short_windows() {
    let (dir, root) = knob_fixture();
    let j = dir.path().join("journal.json");
    let rec = dir.path().join("ab.jsonl");
    let interval_ns = 100_000_000u64;
    let mut child = ab_on_fixture(&root, &j, &rec, "100ms", "1s");
    let (_, rest) = stderr_until(&mut child, "window 1/4");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    let status = child.wait().unwrap();
    let err = rest.join().unwrap();
    assert!(status.success(), "{err}");
    let snaps: Vec<Value> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "snapshot")
        .collect();
    let interval = |s: &Value| s["time"]["interval_ns"].as_u64().unwrap();
    let missed: Vec<u64> = snaps
        .iter()
        .filter_map(|s| s["time"]["missed_ticks"].as_u64())
        .collect();
    assert!(
        missed.iter().any(|&m| m >= 20),
        "the 3 s stop is one snapshot that says so: {missed:?}"
    );
    for s in &snaps {
        assert!(
            interval(s) >= interval_ns / 2,
            "no catch-up sliver: {}",
            s["time"]
        );
    }
    // Every counted window measured at least 90% of its second.
    for w in windows_of(&rec) {
        let (a, b) = (
            w["first_seq"].as_u64().unwrap(),
            w["last_seq"].as_u64().unwrap(),
        );
        let ns: u64 = snaps
            .iter()
            .filter(|s| (a..=b).contains(&s["seq"].as_u64().unwrap()))
            .map(interval)
            .sum();
        if w["not_counted"].is_null() {
            assert!(ns >= 900_000_000, "window {w}: {ns} ns");
        }
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Wait for `child` at most `limit`; kill it (and fail) if it is still running.
fn wait_at_most(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::ExitStatus {
    let t = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn recording_to_a_fifo_never_outlives_its_duration_or_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let record = |extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["--interval", "200ms", "record", "-o"])
            .arg(&fifo)
            .args(extra)
            .env("LLCTOP_JOURNAL", dir.path().join("j.json"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    // No reader at all: given up at the duration.
    let mut c = record(&["--duration", "2s"]);
    let st = wait_at_most(&mut c, std::time::Duration::from_secs(5), "no reader");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!st.success(), "{err}");
    assert!(
        err.contains("waiting for a reader") && err.contains("in time"),
        "{err}"
    );
    // No reader, no duration: SIGTERM ends the wait.
    let mut c = record(&[]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let st = wait_at_most(&mut c, std::time::Duration::from_secs(5), "SIGTERM");
    assert_eq!(st.code(), Some(128 + libc::SIGTERM));
    // A reader that opens the FIFO and never reads: the run still ends at its duration
    // (and a grace of 2 s for the last lines).
    let mut c = record(&["--duration", "2s"]);
    let reader = std::fs::File::open(&fifo).unwrap();
    // The smallest pipe (a page): the recording fills it in its first lines.
    // SAFETY: fcntl(2) on a descriptor we own.
    let size = unsafe {
        libc::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&reader),
            libc::F_SETPIPE_SZ,
            4096,
        )
    };
    assert!(size >= 4096, "F_SETPIPE_SZ");
    let st = wait_at_most(&mut c, std::time::Duration::from_secs(15), "stuck reader");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
    drop(reader);
    assert!(!st.success(), "{err}");
    assert!(err.contains("takes nothing more"), "{err}");
}

// ---- Reliability III (issue 47): outputs, bombs, signals, stubborn children ----

/// What a command run with `args` said and how it ended.
fn attempt(args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Every command that writes a file: a link planted at its output (or at the names an
/// older llctop used for its temporary file) is never written through, `/dev/stdout`
/// and the command's own input are refused, and a run that fails (a bad `--set`) over an
/// existing file leaves it byte for byte — while a run that succeeds keeps it as `.old`.
#[test]
fn no_output_follows_a_link_replaces_an_input_or_loses_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let topo =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/qemu-lab-2s2llc");
    let rec = d.join("rec.jsonl");
    std::fs::write(&rec, fixture("numa-6.1-procfs.jsonl")).unwrap();
    let other = d.join("other.jsonl");
    std::fs::write(&other, fixture("newidle-6.1-procfs.jsonl")).unwrap();
    let victim = d.join("victim");
    std::fs::write(&victim, "root's own\n").unwrap();
    let o = |s: &str| d.join(s);
    let os = |p: &Path| p.as_os_str().to_owned();
    let record = |out: &Path, extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = vec![
            "--sysroot".into(),
            topo.clone().into(),
            "--source".into(),
            "procfs".into(),
            "--interval".into(),
            "200ms".into(),
            "record".into(),
            "-o".into(),
            out.into(),
            "--duration".into(),
            "1s".into(),
        ];
        a.extend(extra.iter().map(Into::into));
        a
    };
    let call = |a: Vec<std::ffi::OsString>| {
        let refs: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        attempt(&refs)
    };
    // Links at the output's name, for every command.
    std::os::unix::fs::symlink(&victim, o("link")).unwrap();
    let cases: Vec<(&str, Vec<std::ffi::OsString>)> = vec![
        ("record", record(&o("link"), &[])),
        (
            "export",
            vec![
                "export".into(),
                "--perfetto".into(),
                os(&rec),
                "-o".into(),
                os(&o("link")),
            ],
        ),
        (
            "report --html",
            vec!["report".into(), "--html".into(), os(&o("link")), os(&rec)],
        ),
        (
            "diff --html",
            vec![
                "diff".into(),
                "--html".into(),
                os(&o("link")),
                os(&rec),
                os(&other),
            ],
        ),
    ];
    for (what, a) in cases {
        let (ok, said) = call(a);
        assert!(!ok && said.contains("symbolic link"), "{what}: {said}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "root's own\n",
            "{what}"
        );
    }
    // /dev/stdout (a link too), and the command's own input.
    let (ok, said) = call(record(Path::new("/dev/stdout"), &[]));
    assert!(!ok && said.contains("symbolic link"), "record: {said}");
    let before = std::fs::read(&rec).unwrap();
    for (what, a) in [
        (
            "export",
            vec![
                "export".into(),
                "--perfetto".into(),
                os(&rec),
                "-o".into(),
                os(&rec),
            ],
        ),
        (
            "report --html",
            vec!["report".into(), "--html".into(), os(&rec), os(&rec)],
        ),
        (
            "diff --html",
            vec![
                "diff".into(),
                "--html".into(),
                os(&rec),
                os(&rec),
                os(&other),
            ],
        ),
    ] {
        let (ok, said) = call(a);
        assert!(
            !ok && said.contains("which this command reads"),
            "{what}: {said}"
        );
        assert_eq!(
            std::fs::read(&rec).unwrap(),
            before,
            "{what}: the input is whole"
        );
    }
    // A link planted at the name an older llctop used for the page's temporary file.
    let page = o("report.html");
    std::os::unix::fs::symlink(&victim, o(".report.html.tmp")).unwrap();
    let (ok, said) = call(vec!["report".into(), "--html".into(), os(&page), os(&rec)]);
    assert!(ok, "{said}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's own\n");
    // A run that fails over an existing recording leaves it as it was, nothing beside it.
    let kept = o("kept.jsonl.gz");
    let (ok, said) = call(record(&kept, &[]));
    assert!(ok, "{said}");
    let first = std::fs::read(&kept).unwrap();
    let listing = names(d);
    let (ok, said) = call(record(&kept, &["--set", "nosuchknob=1"]));
    assert!(!ok && said.contains("nosuchknob"), "{said}");
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        first,
        "the recording is whole"
    );
    assert_eq!(names(d), listing, "nothing left beside it");
    // One that succeeds replaces it and keeps the old one as .old.
    let (ok, said) = call(record(&kept, &[]));
    assert!(ok && said.contains("kept as"), "{said}");
    assert_eq!(std::fs::read(o("kept.jsonl.gz.old")).unwrap(), first);
    let again = llctop::record::reader::open(&kept).unwrap();
    assert!(!again.snapshots.is_empty());
}

/// A gzip of `n` bytes of `line` repeated (compressed as it is made: a few MB at most).
fn gz_of(path: &Path, head: &str, line: &[u8], n: usize) {
    use std::io::Write as _;
    let f = std::fs::File::create(path).unwrap();
    let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    z.write_all(head.as_bytes()).unwrap();
    let chunk: Vec<u8> = line.iter().copied().cycle().take(1 << 20).collect();
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len());
        z.write_all(&chunk[..k]).unwrap();
        left -= k;
    }
    z.finish().unwrap();
}

/// A recording of nothing but newlines (32 MiB of them in a few dozen KB of gzip), or
/// of a header and a flood of lines of unknown types, is refused in about the time its
/// first thousand lines take — by report, report --html, diff and export.
#[test]
fn a_flood_of_blank_or_unknown_lines_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let header = fixture("numa-6.1-procfs.jsonl")
        .lines()
        .next()
        .unwrap()
        .to_string()
        + "\n";
    let blank = dir.path().join("blank.jsonl.gz");
    gz_of(&blank, &header, b"\n", 32 << 20);
    let unknown = dir.path().join("unknown.jsonl.gz");
    gz_of(
        &unknown,
        &header,
        b"{\"type\":\"from-the-future\"}\n",
        16 << 20,
    );
    let bare = dir.path().join("bare.jsonl.gz");
    gz_of(&bare, "", b"\n", 32 << 20);
    let out = dir.path().join("out");
    for (f, why) in [
        (&blank, "blank lines"),
        (&unknown, "does not know"),
        (&bare, "blank lines"),
    ] {
        for args in [
            vec!["report".as_ref(), f.as_os_str()],
            vec![
                "report".as_ref(),
                "--html".as_ref(),
                out.as_os_str(),
                f.as_os_str(),
            ],
            vec![
                "export".as_ref(),
                "--perfetto".as_ref(),
                f.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
            vec!["diff".as_ref(), f.as_os_str(), f.as_os_str()],
        ] {
            let t0 = std::time::Instant::now();
            let (ok, said) = attempt(&args);
            let took = t0.elapsed();
            assert!(!ok && said.contains(why), "{args:?}: {said}");
            assert!(
                took < std::time::Duration::from_secs(10),
                "{args:?} took {took:?}"
            );
            println!(
                "{:?} {}: refused in {took:?}",
                f.file_name().unwrap(),
                args[0].to_string_lossy()
            );
        }
        assert!(!out.exists(), "no output left by a refused read");
    }
}

/// A long export (Perfetto, Parquet) is stopped by SIGINT within a second or so, and leaves
/// no file.
#[test]
fn export_stops_on_a_signal_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A long recording: the fixture's snapshots again and again, numbered on.
    let text = fixture("numa-6.1-procfs.jsonl");
    let mut lines = text.lines();
    let mut out = lines.next().unwrap().to_string() + "\n";
    let snaps: Vec<Value> = lines
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "snapshot")
        .collect();
    let mut seq = 0u64;
    let mut mono = 1_000_000_000u64;
    while out.len() < 60 << 20 {
        for s in &snaps {
            let mut s = s.clone();
            s["seq"] = seq.into();
            mono += 1_000_000_000;
            s["time"]["mono_ns"] = mono.into();
            out.push_str(&serde_json::to_string(&s).unwrap());
            out.push('\n');
            seq += 1;
        }
    }
    let rec = dir.path().join("long.jsonl");
    std::fs::write(&rec, out).unwrap();
    for (format, out) in [("--perfetto", "long.pftrace"), ("--parquet", "parquet")] {
        let out = dir.path().join(out);
        let mut child = Command::new(BIN)
            .args(["export", format])
            .arg(&rec)
            .arg("-o")
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(800));
        assert!(
            child.try_wait().unwrap().is_none(),
            "{format}: still exporting ({seq} snapshots)"
        );
        // SAFETY: kill(2) of our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let t0 = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "{format}: SIGINT ignored"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        println!(
            "export {format} of {seq} snapshots stopped {:?} after SIGINT",
            t0.elapsed()
        );
        assert_eq!(status.code(), Some(130), "{format}");
        // No file: not the trace, and not one table's file (each is discarded).
        let mut left = Vec::new();
        let mut todo = vec![out.clone()];
        while let Some(p) = todo.pop() {
            match std::fs::read_dir(&p) {
                Ok(d) => todo.extend(d.flatten().map(|e| e.path())),
                Err(_) if p.exists() => left.push(p),
                Err(_) => {}
            }
        }
        assert!(left.is_empty(), "{format}: a stopped export left {left:?}");
    }
}

/// `llctop ab -- CMD` where CMD ignores SIGTERM: the experiment ends, the knob is put back,
/// and the command (and what it started) is killed after the grace — nothing orphaned.
#[test]
fn ab_leaves_no_command_running_that_ignored_sigterm() {
    let (dir, root) = knob_fixture();
    let j = dir.path().join("journal.json");
    let marker = format!("llctop-stubborn-{}", std::process::id());
    let out = common::llctop(
        &root,
        &j,
        &[
            "--interval",
            "200ms",
            "--source",
            "procfs",
            "ab",
            "sched.migration_cost_ns=500000,0",
            "--window",
            "1s",
            "--warmup",
            "0s",
            "--rounds",
            "1",
            "--steady",
            "--",
            "bash",
            "-c",
            &format!("trap '' TERM; exec -a {marker} sleep 600"),
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(COST))
            .unwrap()
            .trim(),
        "500000",
        "the knob as it began"
    );
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&marker));
    assert!(!left, "the command was left running: {err}");
}

/// `llctop live --set … | head -1`: the reader goes away after a line; llctop ends as on
/// `q` — the knob restored, status 0, no panic — and its status lines are on stderr only.
#[test]
fn a_live_run_whose_reader_goes_away_restores_its_knob() {
    let (dir, root) = knob_fixture();
    let j = dir.path().join("journal.json");
    let out = Command::new("bash")
        .args([
            "-c",
            &format!(
                "set -o pipefail; {BIN} --sysroot {} --journal {} --source procfs --interval 200ms live --set sched.migration_cost_ns=0 | head -1",
                root.root().display(),
                j.display()
            ),
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("restored sched.migration_cost_ns"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("read back"),
        "the change is said on stderr: {stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(COST))
            .unwrap()
            .trim(),
        "500000"
    );
}
