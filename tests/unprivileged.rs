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

/// The documented non-root install (README, "Without root"): a copy of llctop with the
/// file capabilities cap_bpf and cap_perfmon, run by nobody, gets the BPF source — every
/// event counted — and nothing else: the knobs stay read-only with the reason.
#[test]
#[ignore = "needs root"]
fn file_capabilities_bpf_and_perfmon_give_the_bpf_source_to_a_user() {
    // SAFETY: no arguments.
    assert_eq!(unsafe { libc::geteuid() }, 0, "needs root: setcap");
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("llctop");
    std::fs::copy(env!("CARGO_BIN_EXE_llctop"), &bin).expect("copy");
    let open = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    open(dir.path());
    open(&bin);
    let st = Command::new("setcap")
        .args(["cap_bpf,cap_perfmon=ep"])
        .arg(&bin)
        .status()
        .expect("setcap (libcap2-bin)");
    assert!(st.success(), "setcap");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).expect("mkdir");
    open(&state);
    let nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(args)
            .env("HOME", dir.path())
            .env("XDG_STATE_HOME", &state)
            .output()
            .expect("setpriv")
    };
    let out = nobody(&["--source", "bpf", "live", "--duration", "1s"]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    // Active, or degraded only because this kernel made some switches without the
    // tracepoint (this VM's vendor kernel does, now and then).
    assert!(
        err.contains("bpf Active: tp_btf")
            || (err.contains("bpf Degraded: tp_btf; ")
                && err.contains("context switches made without the sched_switch tracepoint")),
        "{err}"
    );
    assert!(
        text.contains(" | mig/s smt "),
        "exact migrations, not sampled:\n{text}"
    );
    // Without the capabilities the same user falls back (the test above), and with them
    // it still cannot write a knob.
    let out = nobody(&["knobs", "set", "numa_balancing", "1"]);
    let err =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a user never writes a knob: {err}");
}

/// A `trace` refused for want of BPF, over a file the user had: the file is as it was
/// (nothing truncated, nothing said as if tracing had begun).
#[test]
fn a_trace_refused_for_bpf_leaves_the_users_file() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        // nobody must be able to reach and write the directory.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
    }
    let f = dir.path().join("mine.pftrace");
    std::fs::write(&f, b"the user's old trace").unwrap();
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    }
    let out = unprivileged()
        .args(["trace", "--duration", "1s", "-o"])
        .arg(&f)
        .output()
        .expect("run llctop");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("needs the BPF source"), "{err}");
    assert!(!err.contains("tracing to"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), b"the user's old trace");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing beside it"
    );
}
