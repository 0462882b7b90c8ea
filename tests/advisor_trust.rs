//! The advisor does not cry wolf on ordinary work (issue "Advisor you can trust"): on this
//! machine, a Go program starting a few times (promtool, its runtime's threads placed
//! while the other CPU may idle) under a BPF recording, ten times; `llctop report` must
//! hold no WARNING or CRITICAL finding in any (about promtool or the machine: one naming
//! another process is other work on a busy machine, printed). Root: the pile-up detector
//! needs the BPF source's placement events.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn go_programs_starting_raise_no_warning_in_ten_recordings() {
    common::require_root();
    let promtool = which("promtool").expect("promtool (scripts/deps.sh installs prometheus)");
    let dir = tempfile::tempdir().unwrap();
    let mut alarms = Vec::new();
    let mut pileups = 0;
    let (mut measured, mut unmeasured) = (0, 0);
    let mut others = Vec::new();
    for run in 0..10 {
        let rec = dir.path().join(format!("go{run}.jsonl"));
        let llctop = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .args(["--source", "bpf", "record", "--duration", "7s", "-o"])
            .arg(&rec)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(800));
        for _ in 0..6 {
            let st = Command::new(&promtool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(st.success());
            std::thread::sleep(Duration::from_millis(300));
        }
        let out = llctop.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .arg("report")
            .arg(&rec)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&report.stdout).to_string();
        assert!(report.status.success(), "{text}");
        assert!(
            text.contains("Placements:"),
            "BPF placement events recorded: {text}"
        );
        pileups += text.matches("placement pile-up").count();
        // Each start's cost measured (the recording runs 2 s past the last start).
        measured += text.matches("while that CPU (").count();
        unmeasured += text.matches("not measured").count();
        // An alarm with its summary and cost (the two lines after its heading). The
        // machine may be busy with other work: an alarm about another process (its
        // summary names one that is not promtool) is printed, not counted — this test
        // starts promtool, not them.
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.contains(" WARNING ") || l.contains(" CRITICAL ") {
                let more = lines[i + 1..].iter().take(2).copied().collect::<Vec<_>>();
                let alarm = format!("run {run}: {l}\n{}", more.join("\n"));
                match other_process(more.first().copied().unwrap_or("")) {
                    Some(_) => others.push(alarm),
                    None => alarms.push(alarm),
                }
            }
        }
    }
    println!(
        "pile-ups seen (at most info): {pileups}; their cost measured by the BPF program: {measured}, not measured: {unmeasured}"
    );
    assert_eq!(unmeasured, 0, "every pile-up's cost measured");
    if !others.is_empty() {
        println!(
            "alarms about other processes on this machine (not counted):\n{}",
            others.join("\n")
        );
    }
    assert!(
        alarms.is_empty(),
        "alarms on ordinary work:\n{}",
        alarms.join("\n")
    );
}

/// The process a finding's summary names (`of PID (COMM)`) when it is not promtool.
fn other_process(summary: &str) -> Option<String> {
    let (_, rest) = summary.split_once(" of ")?;
    let (pid, rest) = rest.split_once(" (")?;
    pid.parse::<u32>().ok()?;
    let comm = rest.split_once(')')?.0;
    (comm != "promtool").then(|| comm.to_string())
}

#[test]
fn an_alarm_about_another_process_is_told_apart() {
    let other = "      pile-up: 11 threads of 24709 (coordinator) placed on CPU 0 while 1 allowed CPU sat idle";
    assert_eq!(other_process(other).as_deref(), Some("coordinator"));
    let ours =
        "      pile-up: 3 threads of 21983 (promtool) placed on CPU 1 while 1 allowed CPU sat idle";
    assert_eq!(other_process(ours), None);
    assert_eq!(
        other_process("      newidle balancing pulls tasks across LLCs"),
        None
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Every finding sentence the advisor writes over the seed-lab recordings, read as text:
/// its summary never repeats its kind (the headline says it: "placement pile-up: …"), no
/// finding measured at a cost of nothing is one, and a suggestion reads as one sentence —
/// "try: llctop ab …" for a command, "what to do: …" for advice — never "try: no knob …".
#[test]
fn every_finding_reads_once_and_plainly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut seen = 0;
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        let rec = llctop::record::reader::open(&f.path()).unwrap();
        let adv = llctop::findings::advisor::Advisor::over(&rec.header.topology, &rec.snapshots);
        for e in &adv.episodes {
            for fnd in &e.updates {
                seen += 1;
                let title = fnd.kind.title();
                let head = fnd.headline();
                // The kind said once: not again as the summary's own label ("pile-up:").
                assert_eq!(
                    head.matches(title).count(),
                    1,
                    "{:?}: {head}",
                    f.file_name()
                );
                let label = fnd
                    .summary
                    .split_once(':')
                    .map(|(l, _)| l.trim().to_lowercase());
                assert!(
                    !label.is_some_and(|l| title.split(' ').any(|w| w == l)),
                    "{head}"
                );
                if let Some(c) = &fnd.cost {
                    assert!(c.value > 0.0, "a finding at no cost: {head}");
                }
                if let Some(s) = &fnd.suggestion {
                    let line = format!("{}: {}", s.lead(), s.command);
                    assert!(!line.starts_with("try: no "), "{line}");
                    assert_eq!(s.is_command(), line.starts_with("try: llctop "), "{line}");
                }
            }
        }
    }
    assert!(seen > 0, "findings to read");
    println!("{seen} finding updates read");
}
