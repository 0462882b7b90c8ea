//! The knob journal: the original value of every knob llctop changed and has not yet put
//! back, kept on disk so that a crash or SIGKILL cannot leave a knob changed without a
//! record (`llctop knobs restore` replays it).
//!
//! The file (`/run/llctop/journal.json` for root, else
//! `$XDG_STATE_HOME/llctop/journal.json`, or `--journal`) is rewritten atomically (temp
//! file, fsync, rename) under an exclusive `flock` on a sibling lock file, so concurrent
//! llctop processes never lose each other's entries. An entry is written *before* the
//! first change of a knob and removed once the knob is back at its original value.
//! Entries are keyed by sysroot and knob id: a fixture tree's journal never restores into
//! the live kernel.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config;

pub const FORMAT: &str = "llctop-knob-journal";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The sysroot the knob lives under (`/` on a live system).
    pub root: PathBuf,
    pub id: String,
    /// Kernel path (without the sysroot).
    pub path: PathBuf,
    /// Canonical value before llctop's first change.
    pub original: String,
    /// The bytes that restore it (e.g. `NO_TTWU_QUEUE`).
    pub restore_bytes: String,
    pub changed_unix_ns: u64,
    /// The llctop process that made the first change.
    pub pid: u32,
    /// Left changed on purpose (`llctop knobs set`, `--keep-changes`): not an orphan for
    /// the next run to restore.
    #[serde(default)]
    pub kept: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct File_ {
    format: String,
    version: u32,
    entries: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
#[error("knob journal {}: {detail}", path.display())]
pub struct JournalError {
    pub path: PathBuf,
    pub detail: String,
}

#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
}

/// Where the journal lives by default: /run/llctop as root, else the XDG state dir.
pub fn default_path() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/run/llctop/journal.json");
    }
    crate::config::state_dir()
        .unwrap_or_else(|| PathBuf::from("llctop"))
        .join("journal.json")
}

/// The most a journal file may hold (a few hundred bytes per changed knob).
const MAX_JOURNAL: u64 = 16 << 20;

/// A new temporary file beside `path` (`<name>.tmp.<pid>.<n>`), created exclusively
/// (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600): whatever is planted at a name — a file, a
/// symlink — is never opened, the next name is tried.
fn create_temp(path: &Path) -> std::io::Result<(File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut last = None;
    for n in 0..64u32 {
        let mut tmp = path.as_os_str().to_os_string();
        tmp.push(format!(".tmp.{}.{n}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(config::NO_FOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name free")))
}

/// Holds the journal's lock until dropped.
struct Lock(File);

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by self.0 and open.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl Journal {
    pub fn new(path: impl Into<PathBuf>) -> Journal {
        Journal { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, detail: impl std::fmt::Display) -> JournalError {
        JournalError {
            path: self.path.clone(),
            detail: detail.to_string(),
        }
    }

    fn lock(&self) -> Result<Lock, JournalError> {
        // It is replaced by rename: anything but a regular file (a device, a directory, a
        // fifo) must not be, and would not hold a journal.
        if let Ok(m) = fs::symlink_metadata(&self.path)
            && !m.file_type().is_file()
        {
            return Err(self.err("not a regular file"));
        }
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)
                .map_err(|e| self.err(format!("create {}: {e}", dir.display())))?;
        }
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let f = config::open_lock_file(Path::new(&lock_path))
            .map_err(|e| self.err(format!("lock file: {e}")))?;
        // SAFETY: valid open fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(self.err(format!("flock: {}", std::io::Error::last_os_error())));
        }
        Ok(Lock(f))
    }

    fn load(&self) -> Result<File_, JournalError> {
        match config::read_own(&self.path, MAX_JOURNAL) {
            Ok(text) if text.trim().is_empty() => Ok(File_::default()),
            Ok(text) => {
                let f: File_ = serde_json::from_str(&text).map_err(|e| self.err(e))?;
                if f.format != FORMAT {
                    return Err(self.err(format!("not an {FORMAT} file")));
                }
                if f.version != VERSION {
                    return Err(self.err(format!(
                        "version {}: this llctop reads version {VERSION} (a newer llctop wrote it: use that one)",
                        f.version
                    )));
                }
                Ok(f)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File_::default()),
            Err(e) => Err(self.err(e)),
        }
    }

    fn store(&self, f: &File_) -> Result<(), JournalError> {
        let out = File_ {
            format: FORMAT.into(),
            version: VERSION,
            entries: f.entries.clone(),
        };
        let text = serde_json::to_vec_pretty(&out).map_err(|e| self.err(e))?;
        let (mut file, tmp) = create_temp(&self.path).map_err(|e| self.err(e))?;
        let mut write = || -> std::io::Result<()> {
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            self.err(e)
        })
    }

    /// All entries (every sysroot).
    pub fn entries(&self) -> Result<Vec<Entry>, JournalError> {
        let _l = self.lock()?;
        Ok(self.load()?.entries)
    }

    /// Entries of one sysroot.
    pub fn entries_for(&self, root: &Path) -> Result<Vec<Entry>, JournalError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter(|e| e.root == root)
            .collect())
    }

    /// Record `entry` unless the knob already has one (the earliest original wins).
    /// Returns whether an entry was added.
    pub fn record(&self, entry: Entry) -> Result<bool, JournalError> {
        let _l = self.lock()?;
        let mut f = self.load()?;
        if f.entries
            .iter()
            .any(|e| e.root == entry.root && e.id == entry.id)
        {
            return Ok(false);
        }
        f.entries.push(entry);
        self.store(&f)?;
        Ok(true)
    }

    /// The entry of a knob, if any.
    pub fn get(&self, root: &Path, id: &str) -> Result<Option<Entry>, JournalError> {
        Ok(self
            .entries()?
            .into_iter()
            .find(|e| e.root == root && e.id == id))
    }

    /// Forget a knob (it is back at its original value).
    pub fn remove(&self, root: &Path, id: &str) -> Result<(), JournalError> {
        let _l = self.lock()?;
        let mut f = self.load()?;
        let before = f.entries.len();
        f.entries.retain(|e| !(e.root == root && e.id == id));
        if f.entries.len() != before {
            self.store(&f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, original: &str) -> Entry {
        Entry {
            root: "/fx".into(),
            id: id.into(),
            path: "/proc/sys/kernel/x".into(),
            original: original.into(),
            restore_bytes: original.into(),
            changed_unix_ns: 1,
            pid: 7,
            kept: false,
        }
    }

    #[test]
    fn earliest_original_wins_and_entries_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("state/llctop/journal.json"));
        assert!(j.record(entry("a", "0")).unwrap());
        assert!(!j.record(entry("a", "1")).unwrap(), "first original kept");
        assert!(j.record(entry("b", "5")).unwrap());
        let again = Journal::new(j.path());
        let es = again.entries_for(Path::new("/fx")).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].original, "0");
        assert!(again.entries_for(Path::new("/")).unwrap().is_empty());
        again.remove(Path::new("/fx"), "a").unwrap();
        assert_eq!(again.entries().unwrap().len(), 1);
        assert!(again.get(Path::new("/fx"), "b").unwrap().is_some());
        // No temp files left behind.
        let names: Vec<_> = fs::read_dir(dir.path().join("state/llctop"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp.")), "{names:?}");
    }

    #[test]
    fn refuses_a_foreign_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.json");
        fs::write(&p, "{\"hello\":1}").unwrap();
        assert!(Journal::new(&p).entries().is_err());
    }

    #[test]
    fn refuses_a_newer_version_and_what_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.json");
        fs::write(
            &p,
            r#"{"format":"llctop-knob-journal","version":99,"entries":[]}"#,
        )
        .unwrap();
        let j = Journal::new(&p);
        let e = j.record(entry("a", "0")).unwrap_err().to_string();
        assert!(e.contains("version 99"), "{e}");
        assert!(
            fs::read_to_string(&p).unwrap().contains("99"),
            "not rewritten as 1"
        );
        for odd in ["/dev/full", "/dev/null"] {
            let e = Journal::new(odd).entries().unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{odd}: {e}");
        }
        let e = Journal::new(dir.path()).entries().unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn planted_symlinks_at_the_temp_names_and_the_lock_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.json");
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        // A symlink at every temporary name this process could use first.
        for n in 0..4 {
            std::os::unix::fs::symlink(
                &victim,
                dir.path()
                    .join(format!("journal.json.tmp.{}.{n}", std::process::id())),
            )
            .unwrap();
        }
        let j = Journal::new(&p);
        assert!(j.record(entry("a", "0")).unwrap());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        let m = fs::symlink_metadata(&p).unwrap();
        assert!(m.file_type().is_file(), "the journal is a regular file");
        assert_eq!(j.entries().unwrap().len(), 1);
        // A lock file planted as a symlink: refused, its target neither created nor
        // touched.
        let q = dir.path().join("other.json");
        let target = dir.path().join("created-by-root");
        std::os::unix::fs::symlink(&target, dir.path().join("other.json.lock")).unwrap();
        let e = Journal::new(&q).entries().unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!target.exists());
        // A journal planted as a symlink: refused, not read through.
        let r = dir.path().join("linked.json");
        std::os::unix::fs::symlink(&p, &r).unwrap();
        assert!(Journal::new(&r).entries().is_err());
    }
}
