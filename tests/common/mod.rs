//! Helpers shared by the integration tests: writable kernel roots built from fixtures.
#![allow(dead_code)]

pub mod kernel_trace;
pub mod lab;
pub mod passes;
pub mod resctrl;
pub mod serve;
pub mod tmux;

use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use llctop::kroot::KernelRoot;
use llctop::topology::{self, Topology};

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// A temporary kernel root with a copy of a topology fixture's /sys, its topology, and
/// room for a hand-made /proc.
pub fn writable_root(fixture: &str) -> (tempfile::TempDir, KernelRoot, Topology) {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(fixture)
        .join("sys");
    copy_dir(&src, &dir.path().join("sys"));
    let kroot = KernelRoot::new(dir.path());
    let topo = topology::discover(&kroot).unwrap();
    (dir, kroot, topo)
}

/// Write `text` to `rel` under `root`, creating directories.
pub fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// The reason given by every test that needs root: such tests are
/// `#[ignore = "needs root …"]`, so an unprivileged `cargo test` lists them as ignored (by
/// name, counted in the summary); scripts/test runs them when it runs as root.
pub const NEEDS_ROOT: &str =
    "needs root: run scripts/test as root (or cargo test -- --include-ignored)";

/// Fail at once when a root test was asked for without root: a root test never passes
/// by doing nothing.
pub fn require_root() {
    // SAFETY: no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "{NEEDS_ROOT}");
}

/// `llctop --sysroot ROOT --journal JOURNAL ARGS` (the binary under test).
pub fn llctop(root: &KernelRoot, journal: &Path, args: &[impl AsRef<OsStr>]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llctop"));
    c.arg("--sysroot")
        .arg(root.root())
        .arg("--journal")
        .arg(journal)
        .args(args);
    c
}
