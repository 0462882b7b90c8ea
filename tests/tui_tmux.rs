//! The TUI in a real terminal: llctop runs live on this machine inside tmux (a private
//! server), keys switch to every view, a knob toggle is tried (refused cleanly under
//! kernel lockdown, else applied and restored on exit), `q` quits, and the terminal is
//! checked to be sane afterwards (alternate screen left, cursor shown, canonical mode
//! and echo back). Then a recording made by `llctop record` is replayed the same way.
//! Needs tmux (scripts/deps.sh installs it) and root for the BPF source.

mod common;

use common::tmux::Tmux;

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

/// What the shell prints after llctop exits: its status and the terminal modes.
const AFTER: &str = r#"echo "EXIT=$?"; stty -a | tr ' ;' '\n\n' | grep -E '^-?(icanon|echo)$' | tr '\n' ' '; echo STTY; exec sleep 120"#;

fn check_sane(t: &Tmux) -> String {
    let s = t.wait_for(&["STTY"], "llctop exited");
    assert!(s.contains("EXIT=0"), "exit status:\n{s}");
    assert!(
        s.contains("icanon echo") && !s.contains("-icanon") && !s.contains("-echo "),
        "terminal left in raw mode:\n{s}"
    );
    assert!(
        !s.contains("1 Overview"),
        "the TUI is still on screen:\n{s}"
    );
    let flags = t.cmd(&[
        "display-message",
        "-p",
        "-t",
        "t",
        "#{alternate_on} #{cursor_flag}",
    ]);
    assert_eq!(flags.trim(), "0 1", "alternate screen off, cursor visible");
    s
}

/// Kernel lockdown: from securityfs when mounted, else by opening the sched features
/// file for writing (which changes nothing) and getting EPERM.
fn lockdown() -> bool {
    if let Ok(s) = std::fs::read_to_string("/sys/kernel/security/lockdown") {
        return s.contains("[integrity]") || s.contains("[confidentiality]");
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open("/sys/kernel/debug/sched/features")
        .is_err_and(|e| e.raw_os_error() == Some(libc::EPERM))
}

#[test]
#[ignore = "needs root"]
fn live_tui_in_a_real_terminal() {
    // The BPF source and the knobs need root; the feature knobs, debugfs.
    common::require_root();
    common::sched_debugfs();
    let t = Tmux::new("live");
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.json");
    t.start(&format!(
        "cd {}; LLCTOP_JOURNAL={} {BIN} tui --interval 500ms; {AFTER}",
        dir.path().display(),
        journal.display()
    ));
    let s = t.wait_for(&["#1 "], "first snapshot");
    assert!(s.contains("llctop "), "{s}");
    // Up: active, or degraded where the kernel makes some switches without the
    // tracepoint (this VM's vendor kernel; the reason says so, tests/unprivileged.rs).
    assert!(
        s.contains("sources bpf ✓") || s.contains("sources bpf ◐"),
        "BPF as root:\n{s}"
    );
    for (key, want) in [
        ("2", &["Migrations/s by distance"][..]),
        ("3", &["Processes —"]),
        ("4", &["Hardware counters per LLC", "Cache: not available"]),
        (
            "5",
            &["Load balancing per domain", "Balance: not available"],
        ),
        ("6", &["Nodes — NUMA balancing", "NUMA: not available"]),
        ("7", &["Knobs —"]),
        ("8", &["Findings — "]),
        ("9", &["Help — keys"]),
        ("Tab", &["LLC map"]),
        ("F1", &["Help — keys"]),
        ("1", &["LLC map"]),
    ] {
        t.keys(&[key]);
        t.wait_for(want, &format!("view after {key}"));
    }
    // The header is one summary line; `i` expands every degraded or absent source (and
    // knob limit) to a line with its reason, and folds it again.
    let s = t.wait_for(&["LLC map"], "overview");
    if s.contains("i: why (") {
        t.keys(&["i"]);
        let open = t.wait_for(&["i: fold"], "header expanded");
        assert!(
            open.lines()
                .any(|l| (l.starts_with("✗ ") || l.starts_with("◐ ")) && l.contains(": ")),
            "a reason line:\n{open}"
        );
        t.keys(&["i"]);
        // Folded: the header says so and no reason line is left (waited for, not
        // captured once: on a busy machine the pane may be caught mid-redraw).
        t.wait_until(
            |s| s.contains("i: why (") && !s.lines().any(|l| l.starts_with("✗ ")),
            "header folded, no reason line left",
        );
    } else {
        assert!(!s.contains(" ✗"), "a source absent without `i: why`:\n{s}");
    }
    // Record a few snapshots with a marker while we are here.
    t.keys(&["r"]);
    t.wait_for(&["● REC"], "recording");
    t.keys(&["m"]);
    t.wait_for(&["marker 1 recorded"], "marker");
    t.keys(&["r"]);
    t.wait_for(&["recording stopped"], "recording stopped");
    // A trace beside the TUI: T starts it (the header says so), T stops it and its
    // summary is said; the file is a trace Perfetto's classes read.
    t.keys(&["T"]);
    t.wait_for(&["◆ TRACE"], "trace running");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    t.keys(&["T"]);
    let s = t.wait_for(
        &["switches,", "cannot start", "trace needs"],
        "trace stopped",
    );
    assert!(
        s.contains("switches,"),
        "the trace's summary:
{s}"
    );
    let trace = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "pftrace"))
        .expect("a .pftrace beside the recording");
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_decode.py"))
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"ftrace_events\""));

    t.keys(&["7"]);
    let s = t.wait_for(&["Knobs —"], "knobs");
    // The first table row (the selected one), a feature knob where features exist.
    let first_feature = s.lines().find_map(|l| {
        l.strip_prefix('│')?
            .split_whitespace()
            .next()
            .filter(|w| w.starts_with("feature."))
            .map(str::to_string)
    });
    t.keys(&["x"]);
    let id = first_feature
        .clone()
        .expect("a feature knob is listed first");
    let s = t.wait_for(
        &[
            &format!("{id}: not writable"),
            &format!("{id}: on → off"),
            &format!("{id}: off → on"),
        ],
        "toggle",
    );
    let status = s
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string();
    let restored_msg = if status.contains("not writable") {
        if lockdown() {
            assert!(status.contains("EPERM: kernel lockdown"), "{status}");
        }
        None
    } else {
        assert!(
            status.contains(" → ") && status.contains("read back"),
            "{status}"
        );
        Some(id)
    };
    t.keys(&["q"]);
    let s = check_sane(&t);
    if let Some(id) = restored_msg {
        assert!(s.contains(&format!("restored {id}")), "{s}");
    }
    let j = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(!j.contains("feature."), "journal left entries: {j}");
    // The recording made with `r` replays.
    let rec = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".json.gz"))
        .expect("recording written by r");
    let r = llctop::record::reader::open(&rec).expect("readable");
    assert_eq!(r.markers.len(), 1);
}

#[test]
fn replay_of_a_recording_in_a_real_terminal() {
    let t = Tmux::new("replay");
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("r.jsonl.gz");
    let ok = Command::new(BIN)
        .args([
            "--source",
            "procfs",
            "--interval",
            "200ms",
            "record",
            "--duration",
            "2s",
            "-o",
        ])
        .arg(&rec)
        .status()
        .expect("llctop record runs");
    assert!(ok.success());
    assert!(Path::new(&rec).exists());
    // On a busy machine the recorder may skip ticks (one longer snapshot instead of a
    // burst): seek as far as the recording goes, at most two steps.
    let n = llctop::record::reader::open(&rec)
        .expect("readable")
        .snapshots
        .len();
    assert!(n >= 2, "{n} snapshots");
    let steps = (n - 1).min(2);
    t.start(&format!("{BIN} replay {}; {AFTER}", rec.display()));
    t.wait_for(&["REPLAY"], "replay header");
    t.keys(&["Space"]);
    t.keys(&["Home"]);
    let s = t.wait_for(&["REPLAY 1/"], "seek to start");
    assert!(s.contains("timeline ["), "{s}");
    for _ in 0..steps {
        t.keys(&["Right"]);
    }
    t.wait_for(&[&format!("REPLAY {}/{n}", 1 + steps)], "seek forward");
    t.keys(&["]"]);
    t.wait_for(&["×2"], "speed");
    for k in ["2", "3", "7"] {
        t.keys(&[k]);
    }
    t.wait_for(&["Knobs of the recording"], "knobs in replay");
    t.keys(&["q"]);
    check_sane(&t);
}

/// The Overview's CPU cell at 100% busy: `  0 100%`, the CPU number and its busy apart
/// (it read `0100%` when the figure took the cell's last column). A spinner pinned to
/// CPU 0 makes it busy; procfs is enough (no root).
#[test]
fn a_cpu_at_full_busy_reads_apart_from_its_number() {
    let t = Tmux::new("full");
    let mut spin = Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
        .args(["spin", "0", "30"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    t.start(&format!(
        "{BIN} --source procfs tui --interval 500ms; {AFTER}"
    ));
    let s = t.wait_until(|s| s.contains("  0 100%"), "CPU 0 at 100%");
    assert!(
        !s.contains("0100%"),
        "the figure runs into the CPU number:\n{s}"
    );
    t.keys(&["q"]);
    check_sane(&t);
    spin.kill().unwrap();
    spin.wait().unwrap();
}
