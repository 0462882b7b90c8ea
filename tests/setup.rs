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
