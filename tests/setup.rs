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
