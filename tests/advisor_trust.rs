//! The advisor does not cry wolf on ordinary work (issue "Advisor you can trust"): on this
//! machine, a Go program starting a few times (promtool, its runtime's threads placed
//! while the other CPU may idle) under a BPF recording, ten times; `llctop report` must
//! hold no WARNING or CRITICAL finding in any. Root: the pile-up detector needs the BPF
//! source's placement events.

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
    for run in 0..10 {
        let rec = dir.path().join(format!("go{run}.jsonl"));
        let llctop = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .args(["--source", "bpf", "record", "--duration", "5s", "-o"])
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
        // An alarm with its summary and cost (the two lines after its heading).
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.contains(" WARNING ") || l.contains(" CRITICAL ") {
                let more = lines[i + 1..].iter().take(2).copied().collect::<Vec<_>>();
                alarms.push(format!("run {run}: {l}\n{}", more.join("\n")));
            }
        }
    }
    println!("pile-ups seen (at most info): {pileups}");
    assert!(
        alarms.is_empty(),
        "alarms on ordinary work:\n{}",
        alarms.join("\n")
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}
