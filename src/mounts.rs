//! Where the kernel's pseudo file systems are mounted, from `/proc/self/mountinfo`
//! (parsed with procfs-core's `MountInfos` through the kernel root). Used by the NUMA
//! source (cgroup `memory.stat`), the knob registry (cpuset v1, cgroup2 `cpu.*`,
//! debugfs) and the resctrl source.

use std::path::PathBuf;

use procfs_core::process::MountInfos;

use crate::kroot::KernelRoot;

/// Kernel paths (not root-prefixed) of the mounts llctop cares about. `None` when the file
/// system is not mounted (or mountinfo could not be read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mounts {
    pub cgroup2: Option<PathBuf>,
    pub cpuset_v1: Option<PathBuf>,
    pub memory_v1: Option<PathBuf>,
    pub debugfs: Option<PathBuf>,
    pub resctrl: Option<PathBuf>,
    /// mountinfo could not be read; every field above is `None` for that reason.
    pub unreadable: Option<String>,
}

impl Mounts {
    pub fn discover(root: &KernelRoot) -> Mounts {
        let mut m = Mounts::default();
        let infos = match root.parse::<MountInfos>("/proc/self/mountinfo") {
            Ok(i) => i,
            Err(e) => {
                m.unreadable = Some(e.to_string());
                return m;
            }
        };
        for mi in infos.0 {
            let place = mi.mount_point.clone();
            match mi.fs_type.as_str() {
                "cgroup2" if m.cgroup2.is_none() => m.cgroup2 = Some(place),
                "cgroup" => {
                    if mi.super_options.contains_key("cpuset") && m.cpuset_v1.is_none() {
                        m.cpuset_v1 = Some(place.clone());
                    }
                    if mi.super_options.contains_key("memory") && m.memory_v1.is_none() {
                        m.memory_v1 = Some(place);
                    }
                }
                "debugfs" if m.debugfs.is_none() => m.debugfs = Some(place),
                "resctrl" if m.resctrl.is_none() => m.resctrl = Some(place),
                _ => {}
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hybrid_mounts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join("proc/self/mountinfo"),
            "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
             35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
             41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
             50 22 0:7 / /sys/kernel/debug rw,relatime - debugfs none rw\n\
             61 22 0:40 / /sys/fs/resctrl rw,relatime - resctrl resctrl rw\n",
        )
        .unwrap();
        let m = Mounts::discover(&KernelRoot::new(dir.path()));
        assert_eq!(m.cgroup2, Some("/sys/fs/cgroup/unified".into()));
        assert_eq!(m.cpuset_v1, Some("/sys/fs/cgroup/cpuset".into()));
        assert_eq!(m.memory_v1, Some("/sys/fs/cgroup/memory".into()));
        assert_eq!(m.debugfs, Some("/sys/kernel/debug".into()));
        assert_eq!(m.resctrl, Some("/sys/fs/resctrl".into()));
        let none = Mounts::discover(&KernelRoot::new(dir.path().join("nothing")));
        assert!(none.unreadable.is_some() && none.cgroup2.is_none());
    }
}
