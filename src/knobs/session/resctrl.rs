//! The session's resctrl writes: mounting resctrl, and llctop's own monitoring groups
//! (`mon_groups/llctop-PID` under the root group) with the thread ids written into them.
//! Each is a kernel write like a knob's — refused in a read-only session, owned by one
//! llctop, journaled *before* it is made (so that `llctop knobs restore`, or the next
//! run, removes what a killed run left), then checked — and undone when the session
//! ends: groups removed (their tasks fall back to the root group), the mount unmounted
//! if llctop made it and no one else's group is on it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{KnobError, Session};
use crate::knobs::journal::Entry;

/// Journal ids: `resctrl.mount`, `resctrl.group.NAME`.
pub const MOUNT_ID: &str = "resctrl.mount";
const GROUP_ID: &str = "resctrl.group.";
/// The name prefix of llctop's groups.
pub const GROUP_PREFIX: &str = "llctop-";

/// The journal id of llctop's group `name`.
pub fn group_id(name: &str) -> String {
    format!("{GROUP_ID}{name}")
}

/// Whether a journal id is one of these writes (not a registry knob).
pub fn is_resctrl_id(id: &str) -> bool {
    id == MOUNT_ID || id.starts_with(GROUP_ID)
}

/// A name llctop may make and remove: `llctop-` and digits.
fn own_name(name: &str) -> bool {
    name.strip_prefix(GROUP_PREFIX)
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Why a group's `mkdir` failed, in words: [`NO_RMID`] and [`LIMBO`] start the two a
/// caller waits out.
pub fn mkdir_cause(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => format!(
            "{NO_RMID}: no RMID is free (info/L3_MON/num_rmids are all taken by the root, other groups and llctop's)"
        ),
        Some(libc::EBUSY) => format!(
            "{LIMBO}: the free RMIDs are in limbo (the L3 still holds their old lines; the kernel frees them as that drains below max_threshold_occupancy)"
        ),
        Some(libc::EEXIST) => "EEXIST: a group of that name is there already".to_string(),
        _ => e.to_string(),
    }
}

/// The words that start a `mkdir` failure worth waiting out.
pub const NO_RMID: &str = "ENOSPC";
pub const LIMBO: &str = "EBUSY";

/// What the kernel says after a failed command (`info/last_cmd_status`).
fn last_status(root: &crate::kroot::KernelRoot, mount: &Path) -> Option<String> {
    root.read_trimmed(mount.join("info/last_cmd_status"))
        .ok()
        .filter(|s| !s.is_empty() && s != "ok")
}

/// The group directory `mount/mon_groups/NAME` if `path` is one llctop may remove.
fn own_group(path: &Path) -> Option<(&Path, &str)> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent()?;
    (own_name(name) && parent.file_name()? == "mon_groups").then_some((parent.parent()?, name))
}

impl Session {
    fn resctrl_writable(&self, id: &str) -> Result<(), KnobError> {
        if self.opts.read_only {
            return Err(KnobError::ReadOnlySession { id: id.into() });
        }
        Ok(())
    }

    fn resctrl_journal(
        &mut self,
        id: &str,
        path: &Path,
        original: &str,
        undo: &str,
    ) -> Result<(), KnobError> {
        let root_dir = self.registry.root().root().to_path_buf();
        self.owners
            .acquire(&root_dir, id)
            .map_err(KnobError::Busy)?;
        self.journal.record(Entry {
            root: root_dir,
            id: id.into(),
            path: path.to_path_buf(),
            original: original.into(),
            restore_bytes: undo.into(),
            changed_unix_ns: crate::clock::unix_ns(),
            pid: std::process::id(),
            kept: false,
        })?;
        Ok(())
    }

    fn resctrl_forget(&mut self, id: &str) -> Result<(), KnobError> {
        let root_dir = self.registry.root().root().to_path_buf();
        self.journal.remove(&root_dir, id)?;
        self.owners.release(&root_dir, id);
        Ok(())
    }

    /// Mount resctrl at `mount` (`--resctrl-mount`), unmounted when the session ends.
    pub fn resctrl_mount(&mut self, mount: &Path) -> Result<(), KnobError> {
        self.resctrl_writable(MOUNT_ID)?;
        let root = self.registry.root().clone();
        if !root.is_live() {
            return Err(KnobError::Refused(format!(
                "{MOUNT_ID}: --sysroot is not the live system: nothing is mounted into a fixture tree"
            )));
        }
        self.resctrl_journal(MOUNT_ID, mount, "unmounted", "umount")?;
        let res = sys_mount(mount);
        let mounted = crate::mounts::Mounts::discover(&root).resctrl.as_deref() == Some(mount);
        if let Err(cause) = res {
            if !mounted {
                let _ = self.resctrl_forget(MOUNT_ID);
            }
            return Err(KnobError::Write {
                path: mount.to_path_buf(),
                written: "mount -t resctrl".into(),
                cause,
            });
        }
        if !mounted {
            return Err(KnobError::ReadBack {
                path: mount.to_path_buf(),
                wrote: "mount -t resctrl".into(),
                read: "not in /proc/self/mountinfo".into(),
            });
        }
        self.resctrl_mounted = Some(mount.to_path_buf());
        Ok(())
    }

    /// Make llctop's group `name` (`llctop-PID`) under the root group's `mon_groups` of
    /// the resctrl at `mount`; returns its kernel path. ENOSPC (no RMID left) and EBUSY
    /// (the free ones still in limbo) say so in words.
    pub fn resctrl_make_group(&mut self, mount: &Path, name: &str) -> Result<PathBuf, KnobError> {
        let id = group_id(name);
        self.resctrl_writable(&id)?;
        if !own_name(name) {
            return Err(KnobError::Refused(format!(
                "{name:?}: llctop makes only groups named {GROUP_PREFIX}PID"
            )));
        }
        let root = self.registry.root().clone();
        let path = mount.join("mon_groups").join(name);
        let target = root
            .mkdir_target(&path)
            .map_err(|why| KnobError::Refused(format!("{id}: {why}")))?;
        self.resctrl_journal(&id, &path, "absent", "rmdir")?;
        if let Err(e) = std::fs::create_dir(&target) {
            let cause = mkdir_cause(&e);
            let detail =
                last_status(&root, mount).map_or(String::new(), |s| format!(" — kernel: {s}"));
            if e.raw_os_error() != Some(libc::EEXIST) {
                let _ = self.resctrl_forget(&id);
            }
            return Err(KnobError::Write {
                path,
                written: "mkdir".into(),
                cause: format!("{cause}{detail}"),
            });
        }
        if !root.is_dir(&path) {
            return Err(KnobError::ReadBack {
                path,
                wrote: "mkdir".into(),
                read: "no directory".into(),
            });
        }
        self.resctrl_groups.push(path.clone());
        Ok(path)
    }

    /// Write thread ids into one of this session's groups, one id per write as the
    /// kernel takes them; a thread that exited meanwhile (ESRCH) is skipped. Returns the
    /// ids now in the group (read back from its `tasks`).
    pub fn resctrl_add_tasks(&mut self, group: &Path, tids: &[u32]) -> Result<Vec<u32>, KnobError> {
        if !self.resctrl_groups.iter().any(|g| g == group) {
            return Err(KnobError::Refused(format!(
                "{}: not a group this llctop made",
                group.display()
            )));
        }
        let root = self.registry.root().clone();
        let tasks = group.join("tasks");
        let target = root
            .mkdir_target(&tasks)
            .map_err(|why| KnobError::Refused(format!("{}: {why}", tasks.display())))?;
        // O_APPEND|O_CREAT: the kernel's file ignores both; a fixture tree's file then
        // lists the ids as the kernel's would.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&target)
            .map_err(|e| KnobError::Write {
                path: tasks.clone(),
                written: String::new(),
                cause: e.to_string(),
            })?;
        let mut wrote = Vec::new();
        for &tid in tids {
            match f.write(format!("{tid}\n").as_bytes()) {
                Ok(_) => wrote.push(tid),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    let mount = own_group(group).map(|(m, _)| m.to_path_buf());
                    let detail = mount
                        .and_then(|m| last_status(&root, &m))
                        .map_or(String::new(), |s| format!(" — kernel: {s}"));
                    return Err(KnobError::Write {
                        path: tasks,
                        written: tid.to_string(),
                        cause: format!("{e}{detail}"),
                    });
                }
            }
        }
        let listed: Vec<u32> = root
            .read(&tasks)
            .map_err(|e| KnobError::Read {
                id: tasks.display().to_string(),
                reason: e.to_string(),
            })?
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        // A written id missing from the list is a thread that ended since; one that is
        // still alive and missing was refused.
        if let Some(t) = wrote
            .iter()
            .find(|t| !listed.contains(t) && root.exists(format!("/proc/{t}")))
        {
            return Err(KnobError::ReadBack {
                path: tasks,
                wrote: t.to_string(),
                read: "not in the group's tasks".into(),
            });
        }
        Ok(listed)
    }

    /// Remove one of this session's groups (its tasks go back to the root group).
    pub fn resctrl_remove_group(&mut self, group: &Path) -> Result<(), KnobError> {
        let Some(i) = self.resctrl_groups.iter().position(|g| g == group) else {
            return Err(KnobError::Refused(format!(
                "{}: not a group this llctop made",
                group.display()
            )));
        };
        self.resctrl_groups.remove(i);
        self.resctrl_undo_group(group)
    }

    fn resctrl_undo_group(&mut self, group: &Path) -> Result<(), KnobError> {
        let Some((_, name)) = own_group(group) else {
            return Err(KnobError::Refused(format!(
                "{}: not an llctop group (mon_groups/{GROUP_PREFIX}PID)",
                group.display()
            )));
        };
        let id = group_id(name);
        let root = self.registry.root().clone();
        if root.is_dir(group) {
            root.remove_kernel_dir(group)
                .map_err(|cause| KnobError::Write {
                    path: group.to_path_buf(),
                    written: "rmdir".into(),
                    cause,
                })?;
        }
        self.resctrl_forget(&id)
    }

    /// Unmount resctrl at `mount` if only llctop's groups are on it (they are removed
    /// first); another's group keeps it mounted, with a note.
    fn resctrl_undo_mount(&mut self, mount: &Path) -> Result<(), KnobError> {
        let root = self.registry.root().clone();
        if crate::mounts::Mounts::discover(&root).resctrl.as_deref() != Some(mount) {
            return self.resctrl_forget(MOUNT_ID);
        }
        let groups = crate::kstate::resctrl::groups(&root, mount).map_err(|e| KnobError::Read {
            id: MOUNT_ID.into(),
            reason: e.to_string(),
        })?;
        let others: Vec<String> = groups
            .iter()
            .filter(|g| g.kind != crate::snapshot::GroupKind::Root)
            .filter(|g| !g.path.strip_prefix("mon_groups/").is_some_and(own_name))
            .map(|g| g.path.clone())
            .collect();
        if !others.is_empty() {
            self.notes.push(format!(
                "resctrl stays mounted at {}: groups made since by someone else are on it ({})",
                mount.display(),
                others.join(", ")
            ));
            return self.resctrl_forget(MOUNT_ID);
        }
        for g in groups
            .iter()
            .filter(|g| g.kind != crate::snapshot::GroupKind::Root)
        {
            self.resctrl_undo_group(&mount.join(&g.path))?;
        }
        sys_umount(mount).map_err(|cause| KnobError::Write {
            path: mount.to_path_buf(),
            written: "umount".into(),
            cause,
        })?;
        self.resctrl_forget(MOUNT_ID)
    }

    /// Undo what a journal entry of these writes says was made (`knobs restore`, a
    /// killed run's orphans). The entry is only a hint: only a `mon_groups/llctop-PID`
    /// directory is removed, only a resctrl mount unmounted.
    pub(super) fn resctrl_restore(&mut self, entry: &Entry) -> Result<(), KnobError> {
        if entry.id == MOUNT_ID {
            return self.resctrl_undo_mount(&entry.path);
        }
        match own_group(&entry.path) {
            Some((_, name)) if group_id(name) == entry.id => self.resctrl_undo_group(&entry.path),
            _ => Err(KnobError::Refused(format!(
                "{}: journal path {} is not an llctop group",
                entry.id,
                entry.path.display()
            ))),
        }
    }

    /// At the session's end: remove this session's groups, then unmount what it
    /// mounted.
    pub(super) fn resctrl_finish(&mut self) -> (Vec<String>, Vec<KnobError>) {
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        let groups = std::mem::take(&mut self.resctrl_groups);
        let n = groups.len();
        for g in groups.iter().rev() {
            if let Err(e) = self.resctrl_undo_group(g) {
                failed.push(e);
            }
        }
        if n > 0 && failed.is_empty() {
            ok.push(format!(
                "{n} resctrl monitoring group{}",
                if n == 1 { "" } else { "s" }
            ));
        }
        if let Some(m) = self.resctrl_mounted.take() {
            match self.resctrl_undo_mount(&m) {
                Ok(()) => ok.push(format!("resctrl unmounted from {}", m.display())),
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    }
}

fn cstr(p: &Path) -> Result<std::ffi::CString, String> {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: a NUL in the path", p.display()))
}

fn sys_mount(mount: &Path) -> Result<(), String> {
    let target = cstr(mount)?;
    let fs = c"resctrl";
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe {
        libc::mount(
            fs.as_ptr(),
            target.as_ptr(),
            fs.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENODEV) => "ENODEV: this machine has no RDT/PQoS to mount (the kernel's resctrl found no monitoring or allocation hardware)".into(),
        Some(libc::EBUSY) => "EBUSY: resctrl is mounted elsewhere already (it mounts once)".into(),
        Some(libc::ENOENT) => format!(
            "ENOENT: {} does not exist (the kernel makes it only where the CPU has RDT or PQoS)",
            mount.display()
        ),
        Some(libc::EPERM) => "EPERM: mounting needs CAP_SYS_ADMIN".into(),
        _ => e.to_string(),
    })
}

fn sys_umount(mount: &Path) -> Result<(), String> {
    let target = cstr(mount)?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkdir_failures_are_said_in_words() {
        let e = |n| mkdir_cause(&std::io::Error::from_raw_os_error(n));
        assert!(e(libc::ENOSPC).starts_with("ENOSPC: no RMID is free"));
        assert!(e(libc::EBUSY).starts_with("EBUSY: the free RMIDs are in limbo"));
        assert!(e(libc::EEXIST).starts_with("EEXIST"));
        assert!(e(libc::EACCES).contains("denied"));
    }

    #[test]
    fn only_llctop_groups_are_its_to_remove() {
        assert!(own_name("llctop-123"));
        for bad in ["llctop-", "llctop-12a", "p1", "llctop-../x", "LLCTOP-1"] {
            assert!(!own_name(bad), "{bad}");
        }
        let p = Path::new("/sys/fs/resctrl/mon_groups/llctop-9");
        assert_eq!(
            own_group(p),
            Some((Path::new("/sys/fs/resctrl"), "llctop-9"))
        );
        assert_eq!(own_group(Path::new("/sys/fs/resctrl/p1/llctop-9")), None);
        assert_eq!(own_group(Path::new("/sys/fs/resctrl/mon_groups/m1")), None);
        assert!(is_resctrl_id("resctrl.group.llctop-1"));
        assert!(is_resctrl_id(MOUNT_ID));
        assert!(!is_resctrl_id("sched.TTWU_QUEUE"));
    }
}
