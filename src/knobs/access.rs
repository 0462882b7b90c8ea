//! Why a knob's kernel file cannot be read or written, in the operator's terms: the errno
//! decoded (lockdown, permissions, absence) and why a debugfs path is missing. Shared by
//! the registry and the feature reader, which both explain refusals.

use crate::kroot::{KernelError, KernelRoot};

pub const SCHED_DIR: &str = "/sys/kernel/debug/sched";

/// The reason a kernel file could not be opened, in the operator's terms.
pub fn refusal(e: &KernelError) -> String {
    let debugfs = e.path().to_string_lossy().contains("/sys/kernel/debug");
    match e.errno() {
        Some(libc::EPERM) if debugfs => {
            "EPERM: kernel lockdown (debugfs files with write permission cannot be opened)".into()
        }
        Some(libc::EPERM) => "EPERM: not permitted (needs root / CAP_SYS_ADMIN)".into(),
        Some(libc::EACCES) => "EACCES: permission denied (run as root)".into(),
        Some(libc::ENOENT) => "ENOENT: not present on this kernel".into(),
        Some(libc::EROFS) => "EROFS: read-only file system".into(),
        _ => e.to_string(),
    }
}

/// Why a debugfs path is absent: debugfs not mounted, no root, or an older kernel.
pub fn debugfs_absence(root: &KernelRoot, path: &str) -> String {
    match root.list_dir("/sys/kernel/debug") {
        Ok(entries) if entries.is_empty() => {
            "debugfs is not mounted (mount -t debugfs none /sys/kernel/debug)".into()
        }
        Err(e) if e.errno() == Some(libc::EACCES) => {
            "/sys/kernel/debug is readable by root only (run as root)".into()
        }
        Err(e) if e.is_not_found() => "no /sys/kernel/debug (kernel without debugfs)".into(),
        _ if !root.exists(SCHED_DIR) => {
            "no /sys/kernel/debug/sched (kernel before 5.13, or without CONFIG_SCHED_DEBUG before 6.15)"
                .into()
        }
        _ => format!("{path}: not present on this kernel"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(path: &str, errno: i32) -> KernelError {
        KernelError::Io {
            path: path.into(),
            source: std::io::Error::from_raw_os_error(errno),
        }
    }

    #[test]
    fn refusals_name_the_cause() {
        let lockdown = refusal(&io("/sys/kernel/debug/sched/features", libc::EPERM));
        assert!(lockdown.contains("kernel lockdown"), "{lockdown}");
        let sysctl = refusal(&io("/proc/sys/kernel/numa_balancing", libc::EPERM));
        assert!(sysctl.contains("CAP_SYS_ADMIN"), "{sysctl}");
        assert!(refusal(&io("/x", libc::EACCES)).contains("run as root"));
        assert!(refusal(&io("/x", libc::ENOENT)).contains("not present"));
    }

    #[test]
    fn debugfs_absence_explains_an_unmounted_debugfs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/kernel/debug")).unwrap();
        let r = KernelRoot::new(dir.path());
        assert!(debugfs_absence(&r, SCHED_DIR).contains("not mounted"));
        std::fs::create_dir_all(dir.path().join("sys/kernel/debug/tracing")).unwrap();
        assert!(debugfs_absence(&r, SCHED_DIR).contains("before 5.13"));
    }
}
