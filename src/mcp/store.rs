//! `llctop mcp`'s directory: the recordings and traces its tools write, and the only
//! recordings its `report`/`diff`/`compare` read (with the directories `[mcp] recordings`
//! names). The server names its files (`mcp-KIND-MS-PID-N.EXT`); the directory is made
//! 0700 and must be the server's own (not a link, no one else may write it); past
//! `[mcp] max_dir_bytes` its oldest `mcp-*` files are removed, so traces cannot fill a
//! disk. A path a client names is resolved inside these directories only, and anything
//! else — missing, elsewhere, a link out, not a regular file — gets one answer that says
//! nothing about what is there.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The server's directory and what it may read.
#[derive(Debug, Clone)]
pub struct Store {
    pub dir: PathBuf,
    /// Further directories of recordings a client may read.
    pub readable: Vec<PathBuf>,
    pub max_bytes: u64,
}

/// The prefix of every file the server writes (only these are ever removed).
const PREFIX: &str = "mcp-";

impl Store {
    pub fn new(dir: PathBuf, readable: Vec<PathBuf>, max_bytes: u64) -> Store {
        Store {
            dir,
            readable,
            max_bytes,
        }
    }

    /// Make the directory (0700) if need be, and check it is the server's own.
    pub fn ensure(&self) -> Result<(), String> {
        crate::output::own_dir(&self.dir)
    }

    /// A new file's path, named by the server: `mcp-KIND-MS-PID-N.EXT` — N counts this
    /// process's files, so two calls in the same millisecond never share one. Room is made
    /// first.
    pub fn new_file(&self, kind: &str, ext: &str) -> Result<PathBuf, String> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        self.ensure()?;
        self.prune();
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.dir.join(format!(
            "{PREFIX}{kind}-{}-{}-{n}.{ext}",
            crate::clock::unix_ns() / 1_000_000,
            std::process::id()
        )))
    }

    /// Remove the oldest of the server's files until they take at most `max_bytes`; the
    /// files removed.
    pub fn prune(&self) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<(i64, u64, PathBuf)> = rd
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
            .filter_map(|e| {
                let m = e.path().symlink_metadata().ok()?;
                m.file_type()
                    .is_file()
                    .then(|| (m.mtime(), m.len(), e.path()))
            })
            .collect();
        files.sort();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        let mut removed = Vec::new();
        for (_, len, p) in files {
            if total <= self.max_bytes {
                break;
            }
            if std::fs::remove_file(&p).is_ok() {
                total = total.saturating_sub(len);
                removed.push(p);
            }
        }
        removed
    }

    /// The recording a client named: a name or path inside the server's directory (or a
    /// readable one), a regular file there once links are resolved. Anything else is
    /// `None`, whatever the reason.
    pub fn resolve(&self, name: &str) -> Option<PathBuf> {
        if name.is_empty() || name.len() > 4096 || name.contains('\0') {
            return None;
        }
        let given = Path::new(name);
        let candidates: Vec<PathBuf> = if given.is_absolute() {
            vec![given.to_path_buf()]
        } else {
            std::iter::once(&self.dir)
                .chain(&self.readable)
                .map(|d| d.join(given))
                .collect()
        };
        let roots: Vec<PathBuf> = std::iter::once(&self.dir)
            .chain(&self.readable)
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .collect();
        candidates.into_iter().find_map(|c| {
            let real = std::fs::canonicalize(&c).ok()?;
            let inside = roots.iter().any(|r| real.starts_with(r) && real != *r);
            let regular = std::fs::metadata(&real).is_ok_and(|m| m.is_file());
            (inside && regular).then_some(real)
        })
    }

    /// What [`Store::resolve`] says when it finds nothing.
    pub fn not_found(&self, name: &str) -> String {
        let mut dirs = vec![self.dir.display().to_string()];
        dirs.extend(self.readable.iter().map(|d| d.display().to_string()));
        format!(
            "{}: no recording of that name in {} (the files record and ab return, or ones the server's config lists)",
            crate::text::escape(name),
            dirs.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_read_only_inside_the_directories() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path().join("mcp"), Vec::new(), 1 << 20);
        store.ensure().unwrap();
        let rec = store.dir.join("mcp-record-1.jsonl");
        std::fs::write(&rec, "x").unwrap();
        assert!(store.resolve("mcp-record-1.jsonl").is_some());
        assert!(store.resolve(&rec.display().to_string()).is_some());
        // Outside, by a path, by `..`, through a link, a directory: all alike.
        let outside = d.path().join("secret");
        std::fs::write(&outside, "x").unwrap();
        std::os::unix::fs::symlink(&outside, store.dir.join("link")).unwrap();
        for name in [
            outside.display().to_string(),
            "../secret".into(),
            "link".into(),
            "/etc/passwd".into(),
            "nonexistent".into(),
            ".".into(),
            String::new(),
        ] {
            assert_eq!(store.resolve(&name), None, "{name}");
        }
        let msg = store.not_found("/etc/shadow");
        assert!(!msg.contains("No such file"), "{msg}");
    }

    #[test]
    fn the_oldest_files_go_past_the_cap_and_only_the_servers() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path().to_path_buf(), Vec::new(), 250);
        store.ensure().unwrap();
        let keep = d.path().join("operator.txt");
        std::fs::write(&keep, vec![0u8; 1000]).unwrap();
        for i in 0..5 {
            let p = d.path().join(format!("mcp-trace-{i}.pftrace"));
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let removed = store.prune();
        assert_eq!(removed.len(), 3);
        assert!(d.path().join("mcp-trace-4.pftrace").exists());
        assert!(d.path().join("mcp-trace-3.pftrace").exists());
        assert!(!d.path().join("mcp-trace-0.pftrace").exists());
        assert!(keep.exists());
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("open");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Store::new(dir, Vec::new(), 1).ensure().unwrap_err();
        assert!(e.contains("no one else may write"), "{e}");
        let made = d.path().join("new/mcp");
        Store::new(made.clone(), Vec::new(), 1).ensure().unwrap();
        let mode = std::fs::metadata(&made).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
