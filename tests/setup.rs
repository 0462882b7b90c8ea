//! The README's first command, `./setup.sh`, as root on a machine without sudo: it
//! installs what is missing (scripts/deps.sh), builds, and runs llctop with the arguments
//! given — here `--version`. A `sudo` that fails loudly is put first on the PATH, so a
//! call to it anywhere in the setup fails the test.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
#[ignore = "needs root"]
fn setup_runs_llctop_as_root_without_sudo() {
    common::require_root();
    let dir = tempfile::tempdir().expect("tempdir");
    let sudo = dir.path().join("sudo");
    std::fs::write(&sudo, "#!/bin/sh\necho \"sudo called: $*\" >&2\nexit 99\n").expect("write");
    std::fs::set_permissions(&sudo, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/setup.sh"))
        .arg("--version")
        .env("PATH", path)
        .output()
        .expect("run ./setup.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("sudo called"), "{stderr}");
    assert_eq!(
        stdout.trim(),
        format!("llctop {}", env!("CARGO_PKG_VERSION")),
        "{stderr}"
    );
}

/// `./setup.sh` installs what building and running llctop needs, nothing of the test
/// toolchain: scripts/deps.sh's two lists, read.
#[test]
fn setup_installs_only_what_llctop_needs() {
    let deps =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/deps.sh")).unwrap();
    let list = |name: &str| -> Vec<String> {
        let start = deps.find(&format!("{name}=(")).expect(name);
        let body = &deps[start..];
        let body = &body[..body.find("\n)").unwrap()];
        body.lines()
            .skip(1)
            .flat_map(|l| l.split('#').next().unwrap().split_whitespace())
            .map(str::to_string)
            .collect()
    };
    let (build, test) = (list("PKGS"), list("TEST_PKGS"));
    assert_eq!(
        build,
        [
            "gcc",
            "libc6-dev",
            "pkg-config",
            "make",
            "clang",
            "libelf-dev",
            "zlib1g-dev"
        ]
    );
    for t in [
        "qemu-system-x86",
        "chromium",
        "prometheus",
        "linux-perf",
        "stress-ng",
    ] {
        assert!(
            test.contains(&t.to_string()) && !build.contains(&t.to_string()),
            "{t}"
        );
    }
    let setup = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/setup.sh")).unwrap();
    assert!(
        setup.contains("scripts/deps.sh\n"),
        "setup installs the build list only"
    );
    assert!(!setup.contains("--test"));
    assert!(!setup.contains("pip install"));
}

/// The Debian package a fleet installs (scripts/package --check: lintian and
/// systemd-analyze verify clean): it holds what the README promises, installs with dpkg,
/// its unit verifies where it is installed, and the unit's own ExecStart, run as an
/// unprivileged user with only the unit's capabilities (what systemd's DynamicUser= and
/// AmbientCapabilities= give it), answers /metrics with the BPF source up and the flight
/// recorder on. The package is removed again at the end (unless it was installed before).
#[test]
#[ignore = "needs root"]
fn the_debian_package_installs_and_its_unit_serves_as_an_unprivileged_user() {
    common::require_root();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(format!("{root}/scripts/package"))
        .arg("--check")
        .output()
        .expect("scripts/package (dpkg-deb, lintian: scripts/deps.sh --test)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/package --check:\n{stderr}");
    assert!(
        stderr.contains("lintian and systemd-analyze verify clean"),
        "{stderr}"
    );
    let deb = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_string)
        .expect("the .deb's path");
    let list = Command::new("dpkg-deb")
        .args(["--contents", &deb])
        .output()
        .expect("dpkg-deb");
    let list = String::from_utf8_lossy(&list.stdout);
    for f in [
        "./usr/bin/llctop",
        "./usr/share/man/man1/llctop.1.gz",
        "./usr/share/man/man1/llctop-serve.1.gz",
        "./usr/share/bash-completion/completions/llctop",
        "./usr/share/zsh/vendor-completions/_llctop",
        "./usr/share/fish/vendor_completions.d/llctop.fish",
        "./usr/lib/systemd/system/llctop.service",
        "./usr/share/llctop/prometheus/llctop-rules.yml",
        "./usr/share/llctop/grafana/llctop.json",
        "./usr/share/doc/llctop/copyright",
        "./usr/share/doc/llctop/changelog.gz",
    ] {
        assert!(
            list.lines().any(|l| l.ends_with(f)),
            "{f} is not in the package:\n{list}"
        );
    }
    let installed_before = Command::new("dpkg")
        .args(["-s", "llctop"])
        .output()
        .is_ok_and(|o| o.status.success());
    struct Remove(bool);
    impl Drop for Remove {
        fn drop(&mut self) {
            if !self.0 {
                let _ = Command::new("dpkg").args(["-r", "llctop"]).output();
            }
        }
    }
    let _remove = Remove(installed_before);
    let st = Command::new("dpkg")
        .args(["-i", &deb])
        .output()
        .expect("dpkg -i");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let unit_path = "/usr/lib/systemd/system/llctop.service";
    let v = Command::new("systemd-analyze")
        .args(["verify", "--man=no", unit_path])
        .output()
        .expect("systemd-analyze");
    assert!(
        v.status.success() && v.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&v.stderr)
    );
    // The unit's ExecStart, its listener on a free port and its state directory
    // (StateDirectory=llctop: /var/lib/llctop, the dynamic user's) a temporary one of
    // the user's own.
    let unit = std::fs::read_to_string(unit_path).expect("the unit");
    let line = |key: &str| -> String {
        unit.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in the unit"))
            .to_string()
    };
    let exec = line("ExecStart=");
    let caps = line("AmbientCapabilities=");
    assert_eq!(caps, "CAP_BPF CAP_PERFMON");
    assert!(exec.starts_with("/usr/bin/llctop "), "{exec}");
    assert!(
        exec.contains("--flight-recorder /var/lib/llctop/"),
        "{exec}"
    );
    let state = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::chown(state.path(), Some(65534), Some(65534)).expect("chown");
    let port = common::serve::free_port();
    let exec = exec
        .replace("127.0.0.1:9464", &format!("127.0.0.1:{port}"))
        .replace("/var/lib/llctop", &state.path().display().to_string())
        .replace("--interval 10s", "--interval 1s");
    let mut args = exec.split_whitespace();
    let program = args.next().expect("a program");
    let mut child = common::serve::Kill(
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=+bpf,+perfmon",
                "--ambient-caps=+bpf,+perfmon",
            ])
            .arg(program)
            .args(args)
            .env("HOME", state.path())
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("setpriv (util-linux)"),
    );
    let t = std::time::Instant::now();
    let body = loop {
        let got = ureq::get(&format!("http://127.0.0.1:{port}/metrics"))
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .filter(|b| b.contains("llctop_flight_recorder_segments"));
        if let Some(b) = got {
            break b;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "no /metrics from the unit's ExecStart in 60 s"
        );
        assert!(
            child.0.try_wait().ok().flatten().is_none(),
            "the unit's ExecStart ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(
        body.contains("llctop_source_up{source=\"bpf\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("llctop_flight_recorder_state{state=\"recording\"} 1"),
        "{body}"
    );
}
