//! As an unprivileged user llctop falls back to procfs and says why. When the tests run
//! as root, the user is dropped to nobody with setpriv (util-linux); otherwise the test
//! runs as the invoking (unprivileged) user.

use std::process::Command;

/// llctop run as nobody (as root: via setpriv), or as the invoking unprivileged user.
fn unprivileged() -> Command {
    let bin = env!("CARGO_BIN_EXE_llctop");
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            bin,
        ]);
        c
    } else {
        Command::new(bin)
    }
}

#[test]
fn unprivileged_user_falls_back_to_procfs_with_the_reason() {
    let out = unprivileged()
        .args(["live", "--duration", "1s"])
        .output()
        .expect("run llctop (setpriv from util-linux when root)");
    let text = String::from_utf8_lossy(&out.stdout);
    let status = String::from_utf8_lossy(&out.stderr);
    println!("{status}{text}");
    assert!(out.status.success(), "{status}");
    // The reasons on stderr, the lines alone on stdout.
    assert!(
        status.contains("bpf Absent: BPF not permitted: run as root or grant cap_bpf,cap_perfmon; using procfs sampling"),
        "{status}"
    );
    assert!(!text.contains("Absent"), "no status on stdout: {text}");
    assert!(
        text.contains("mig~/s"),
        "sampled migrations are marked: {text}"
    );
}

#[test]
fn source_bpf_refuses_instead_of_falling_back() {
    let out = unprivileged()
        .args(["--source", "bpf", "live", "--duration", "1s"])
        .output()
        .expect("run llctop");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BPF not permitted"), "{err}");
}
