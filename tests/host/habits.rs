//! The habits a Unix user brings: shell completions for bash, zsh and fish, and a man page
//! that `man -l` renders — all generated from the command line's own definitions, so a
//! new option or subcommand reaches them without being written twice. The shells and man
//! are checked with their own parsers (scripts/deps.sh installs zsh, fish and man-db).

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

fn llctop(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("llctop runs");
    assert!(
        out.status.success(),
        "llctop {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `program args…` reading `input` on stdin must succeed (its own syntax check).
fn accepts(program: &str, args: &[&str], input: &str) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/deps.sh installs it)"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{program} {args:?} refused it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completions_for_three_shells_parse_and_know_the_subcommands() {
    for (shell, check) in [
        ("bash", ("bash", &["-n"][..])),
        ("zsh", ("zsh", &["-n"][..])),
        ("fish", ("fish", &["--no-execute"][..])),
    ] {
        let text = llctop(&["completions", shell]);
        accepts(check.0, check.1, &text);
        for sub in [
            "record",
            "replay",
            "knobs",
            "report",
            "ab",
            "trace",
            "export",
            "completions",
        ] {
            assert!(text.contains(sub), "{shell}: {sub} not completed");
        }
        assert!(text.contains("interval"), "{shell}: options completed");
    }
    // bash: the function really completes a subcommand after `llctop re`.
    let script = format!(
        "{}\nCOMP_WORDS=(llctop re); COMP_CWORD=1; COMP_LINE='llctop re'; COMP_POINT=9\n_llctop llctop re llctop\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        llctop(&["completions", "bash"])
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .output()
        .expect("bash");
    let got = String::from_utf8_lossy(&out.stdout);
    for w in ["record", "replay", "report"] {
        assert!(got.lines().any(|l| l == w), "bash completes {w}: {got}");
    }
}

#[test]
fn the_man_page_renders_with_every_subcommand() {
    let roff = llctop(&["man"]);
    let mut man = Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("man (scripts/deps.sh installs man-db)");
    man.stdin
        .take()
        .expect("stdin")
        .write_all(roff.as_bytes())
        .expect("write");
    let out = man.wait_with_output().expect("man");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "NAME",
        "SYNOPSIS",
        "OPTIONS",
        "--interval",
        "record",
        "knobs",
        "trace",
        "export",
    ] {
        assert!(text.contains(want), "{want} in the page:\n{text}");
    }
    // --out-dir: a page per subcommand too.
    let dir = tempfile::tempdir().expect("tempdir");
    llctop(&["man", "--out-dir", &dir.path().display().to_string()]);
    for page in [
        "llctop.1",
        "llctop-record.1",
        "llctop-knobs.1",
        "llctop-replay.1",
        "llctop-trace.1",
        "llctop-export.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page} written");
    }
}

/// The config file under $XDG_CONFIG_HOME: its values reach the run, the command line
/// wins over them, `config --print` says where each came from, a bad value is a one-line
/// error naming the file and key.
#[test]
fn the_config_file_sets_defaults_the_command_line_overrides() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("llctop");
    std::fs::create_dir_all(&cfg).expect("mkdir");
    let file = cfg.join("config.toml");
    std::fs::write(
        &file,
        "interval = \"250ms\"\nview = \"processes\"\ntop = 5\n",
    )
    .expect("write");
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("XDG_CONFIG_HOME", dir.path())
            .output()
            .expect("llctop")
    };
    let out = run(&["config", "--print", "--top", "9"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let at = file.display().to_string();
    assert!(
        text.contains(&format!("interval = \"250ms\"  # {at}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("view = \"processes\"  # {at}")),
        "{text}"
    );
    assert!(text.contains("top = 9  # command line"), "{text}");
    assert!(text.contains("theme = \"dark\"  # default"), "{text}");
    // The interval reaches a run: `live` on a fixture prints a line per 250 ms.
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/topology/devvm-2cpu"
    );
    let out = run(&[
        "--sysroot",
        root,
        "--source",
        "procfs",
        "live",
        "--duration",
        "1s",
    ]);
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!((3..=5).contains(&lines), "{lines} lines in 1 s at 250 ms");
    std::fs::write(&file, "interval = \"1ns\"\n").expect("write");
    let out = run(&["config", "--print"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("config interval:"), "{err}");
    std::fs::write(&file, "[keys]\nmarker = [\"M\"]\nquit = [\"Q\", \"q\"]\n").expect("write");
    let out = run(&["config", "--print"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("marker = [\"M\"]"), "{text}");
    std::fs::write(&file, "[keys]\nmarker = [\"q\"]\n").expect("write");
    let out = run(&["config", "--print"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("q is bound to both"), "{err}");
    std::fs::write(&file, "tehme = \"light\"\n").expect("write");
    let err = String::from_utf8_lossy(&run(&["config", "--print"]).stderr).to_string();
    assert!(err.contains(&at) && err.contains("tehme"), "{err}");
}

/// A reader that goes away — `llctop … | head -c 1` — never makes llctop panic: every
/// subcommand that prints ends quietly with status 0 (as `ripgrep | head` does), with
/// stdout and with stderr closed under it; a run's knobs are still restored (a live run
/// whose line cannot be written ends as on `q`).
#[test]
fn every_subcommand_piped_into_head_ends_quietly() {
    let rec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/numa-6.1-procfs.jsonl"
    );
    let ab = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/ab-7.2.jsonl"
    );
    let cases: Vec<String> = vec![
        "--source procfs --interval 200ms live --duration 3s".into(),
        "--source procfs --interval 200ms".into(),
        "topology".into(),
        "topology --json".into(),
        format!("report {rec}"),
        format!("report --compare {ab}"),
        format!("report --compare --json {ab}"),
        format!("diff {rec} {rec}"),
        "knobs list".into(),
        "knobs list --json".into(),
        "knobs describe numa_balancing".into(),
        "knobs profiles".into(),
        "keys".into(),
        "config --print".into(),
        "config".into(),
        "completions bash".into(),
        "completions zsh".into(),
        "completions fish".into(),
        "man".into(),
        "--help".into(),
        "--version".into(),
    ];
    for args in &cases {
        // Stdout into the pipe (stderr kept to look for a panic), then stderr into it (the
        // run without a subcommand and a duration would print to /dev/null for ever).
        let endless = !args.contains("--duration") && args.contains("--interval");
        for what in ["stdout", "stderr"] {
            if what == "stderr" && endless {
                continue;
            }
            let shell = if what == "stdout" {
                format!("set -o pipefail; {BIN} {args} | head -c 1 >/dev/null")
            } else {
                format!("set -o pipefail; {BIN} {args} 2>&1 >/dev/null | head -c 1 >/dev/null")
            };
            let out = Command::new("bash")
                .args(["-c", &shell])
                .env("XDG_CONFIG_HOME", "/nonexistent")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !err.contains("panicked"),
                "llctop {args} ({what} closed): {err}"
            );
            assert!(
                !err.contains("Broken pipe"),
                "llctop {args} ({what} closed): {err}"
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "llctop {args} ({what} closed): {err}"
            );
        }
    }
}

/// The exit codes are in the man page (and `--help`), once, from the command line's own
/// definitions.
#[test]
fn the_man_page_says_the_exit_codes() {
    let man = llctop(&["man"]);
    for code in ["3 unknown knob", "9 another llctop", "128 + N"] {
        assert!(man.contains(code), "{code}");
    }
    assert!(llctop(&["--help"]).contains("Exit codes"));
}
