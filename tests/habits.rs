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
        for sub in ["record", "replay", "knobs", "report", "ab", "completions"] {
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
    ] {
        assert!(dir.path().join(page).is_file(), "{page} written");
    }
}
