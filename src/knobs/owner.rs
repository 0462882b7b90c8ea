//! Knob ownership across llctop processes: a run that changes a knob holds an exclusive
//! `flock` on that knob's owner file for as long as the change is its own, so a second
//! llctop is refused (told which pid holds it) instead of stacking a change whose restore
//! order would be wrong. The kernel drops the lock when the holder ends, however it ends
//! (SIGKILL included): a free lock with a journal entry left behind is an orphan the next
//! run restores.
//!
//! The owner files live in one directory per machine whatever `--journal` says:
//! `/run/llctop/owners` as root, else `$XDG_STATE_HOME/llctop/owners`. A file is named by
//! a hash of the sysroot and the knob id, so fixture trees never collide with the live
//! system; it holds the owner's pid, for the message.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The owner directory of this machine and user.
pub fn default_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/run/llctop/owners");
    }
    crate::config::state_dir()
        .unwrap_or_else(|| PathBuf::from("llctop"))
        .join("owners")
}

/// FNV-1a, 64 bits: a stable name for a (sysroot, knob) pair across llctop builds.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The knobs this process owns, by owner file (each open, holding its lock).
#[derive(Debug)]
pub struct Owners {
    dir: PathBuf,
    held: BTreeMap<PathBuf, File>,
}

impl Owners {
    pub fn new(dir: impl Into<PathBuf>) -> Owners {
        Owners {
            dir: dir.into(),
            held: BTreeMap::new(),
        }
    }

    fn file_for(&self, root: &Path, id: &str) -> PathBuf {
        let mut key = root.as_os_str().as_encoded_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(id.as_bytes());
        let readable: String = id
            .chars()
            .take(64)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("{:016x}-{readable}", fnv1a(&key)))
    }

    fn open(&self, root: &Path, id: &str) -> Result<File, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("knob owners {}: {e}", self.dir.display()))?;
        let p = self.file_for(root, id);
        crate::config::open_lock_file(&p)
            .map_err(|e| format!("knob owner file {}: {e}", p.display()))
    }

    /// Take `id` for this process, or say which llctop holds it.
    pub fn acquire(&mut self, root: &Path, id: &str) -> Result<(), String> {
        if self.holds(root, id) {
            return Ok(());
        }
        let mut f = self.open(root, id)?;
        // SAFETY: a valid open fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut pid = String::new();
            let _ = f.read_to_string(&mut pid);
            return Err(format!(
                "{id} is being changed by another llctop (pid {}), which puts it back when it ends: change it after that run has ended",
                pid.trim()
            ));
        }
        let _ = f.set_len(0);
        let _ = f.rewind();
        let _ = write!(f, "{}", std::process::id());
        self.held.insert(self.file_for(root, id), f);
        Ok(())
    }

    pub fn holds(&self, root: &Path, id: &str) -> bool {
        self.held.contains_key(&self.file_for(root, id))
    }

    /// Let go of `id` (the lock is dropped with the file).
    pub fn release(&mut self, root: &Path, id: &str) {
        let f = self.file_for(root, id);
        self.held.remove(&f);
    }

    /// No llctop owns `id` now (this process included).
    pub fn is_free(&self, root: &Path, id: &str) -> bool {
        if self.holds(root, id) {
            return false;
        }
        let Ok(f) = self.open(root, id) else {
            return false;
        };
        // SAFETY: a valid open fd; the lock goes with the file at the end of scope.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_owner_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let (mut a, mut b) = (Owners::new(dir.path()), Owners::new(dir.path()));
        let root = Path::new("/fixture");
        a.acquire(root, "numa_balancing").unwrap();
        a.acquire(root, "numa_balancing").unwrap();
        let e = b.acquire(root, "numa_balancing").unwrap_err();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        assert!(!b.is_free(root, "numa_balancing"));
        // Another root, another knob: free.
        b.acquire(Path::new("/other"), "numa_balancing").unwrap();
        b.acquire(root, "feature.TTWU_QUEUE").unwrap();
        a.release(root, "numa_balancing");
        assert!(b.is_free(root, "numa_balancing"));
        b.acquire(root, "numa_balancing").unwrap();
    }
}
