//! The one kernel root: every path llctop reads under `/sys` and `/proc` goes through
//! [`KernelRoot`], so that a test can point the whole program at a fixture tree with
//! `--sysroot DIR`. Nothing else in the crate opens a kernel path directly.
//!
//! Errors carry the full path and the cause ([`KernelError`]), so a missing or malformed
//! file is reported as e.g. `/sys/devices/system/cpu/online: No such file or directory`.
//!
//! Every file is opened the one way ([`KernelRoot::open`]): without blocking, and read only
//! if it is a regular file (a FIFO, a device or a directory planted in a `--sysroot` tree —
//! or a `/dev/zero` link — is refused, never waited on or read without end), at most
//! [`MAX_FILE`] bytes of it; under `--sysroot`, a path whose links lead out of the tree is
//! refused too (a tree the operator was handed cannot make root read /etc/shadow).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A read of a kernel file that failed, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: malformed content: {detail}", path.display())]
    Parse { path: PathBuf, detail: String },
}

impl KernelError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            KernelError::Io { path, .. } | KernelError::Parse { path, .. } => path,
        }
    }

    /// True when the file (or a directory on its path) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, KernelError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The OS error number, when the kernel refused the operation.
    pub fn errno(&self) -> Option<i32> {
        match self {
            KernelError::Io { source, .. } => source.raw_os_error(),
            KernelError::Parse { .. } => None,
        }
    }

    pub fn parse(path: impl Into<PathBuf>, detail: impl fmt::Display) -> Self {
        KernelError::Parse {
            path: path.into(),
            detail: detail.to_string(),
        }
    }
}

pub type KResult<T> = Result<T, KernelError>;

/// The most of a kernel file llctop reads: /proc/schedstat of a 16384-CPU machine is a
/// few MiB.
pub const MAX_FILE: u64 = 16 << 20;

/// Open `path` (already under the root) as [`KernelRoot::open`] does, without the tree
/// check, and read it whole: for a file found by walking a mount (a cgroup's memory.stat).
pub fn read_regular(path: &Path) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file (a FIFO, a device or a directory): not read",
        ));
    }
    read_capped(f)
}

/// At most [`MAX_FILE`] bytes of `f` as text; more is an error.
fn read_capped(f: std::fs::File) -> io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    f.take(MAX_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE {
        return Err(io::Error::other(format!(
            "larger than {} MiB: not a kernel file llctop reads",
            MAX_FILE >> 20
        )));
    }
    Ok(text)
}

/// The root under which `/sys` and `/proc` are found (`/` on a live system).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRoot {
    root: PathBuf,
}

impl Default for KernelRoot {
    fn default() -> Self {
        KernelRoot::new("/")
    }
}

impl KernelRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        KernelRoot { root: root.into() }
    }

    /// True when this is the live system (`/`), not a fixture tree.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a write to `kernel_path` goes. On the live system, the path itself; under a
    /// fixture root (`--sysroot`), the path with every symlink resolved, refused when
    /// that leads out of the tree — a planted link cannot turn a knob write into a write
    /// anywhere else.
    pub fn write_target(&self, kernel_path: impl AsRef<Path>) -> Result<PathBuf, String> {
        let p = self.path(&kernel_path);
        if self.is_live() {
            return Ok(p);
        }
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| format!("--sysroot {}: {e}", self.root.display()))?;
        let real = std::fs::canonicalize(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        if real.starts_with(&root) {
            Ok(real)
        } else {
            Err(format!(
                "{} leads to {}, outside --sysroot {}: not written",
                kernel_path.as_ref().display(),
                real.display(),
                root.display()
            ))
        }
    }

    /// Where a directory made at `kernel_path` goes: as [`KernelRoot::write_target`],
    /// judged by its parent (the directory does not exist yet).
    pub fn mkdir_target(&self, kernel_path: impl AsRef<Path>) -> Result<PathBuf, String> {
        let p = kernel_path.as_ref();
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            return Err(format!("{}: not a directory to make", p.display()));
        };
        Ok(self.write_target(parent)?.join(name))
    }

    /// Remove a directory the kernel made for a `mkdir` (a resctrl group): on the live
    /// system `rmdir`, which takes the kernel's files with it; in a fixture tree, whose
    /// plain directories stand for the pseudo file system's, the directory and its files.
    pub fn remove_kernel_dir(&self, kernel_path: impl AsRef<Path>) -> Result<(), String> {
        let target = self.write_target(&kernel_path)?;
        let res = if self.is_live() {
            std::fs::remove_dir(&target)
        } else {
            std::fs::remove_dir_all(&target)
        };
        res.map_err(|e| format!("{}: {e}", kernel_path.as_ref().display()))
    }

    /// Map an absolute kernel path such as `/proc/stat` to its place under the root.
    pub fn path(&self, kernel_path: impl AsRef<Path>) -> PathBuf {
        let p = kernel_path.as_ref();
        let rel = p.strip_prefix("/").unwrap_or(p);
        self.root.join(rel)
    }

    pub fn exists(&self, kernel_path: impl AsRef<Path>) -> bool {
        self.path(kernel_path).exists()
    }

    /// Read a whole file as text (at most [`MAX_FILE`] bytes: more is an error).
    pub fn read(&self, kernel_path: impl AsRef<Path>) -> KResult<String> {
        let f = self.open(&kernel_path)?;
        read_capped(f).map_err(|source| KernelError::Io {
            path: self.path(&kernel_path),
            source,
        })
    }

    /// Open a file for reading — a regular file, opened without blocking; under a
    /// `--sysroot`, one inside the tree — for a caller that reads it once or keeps it and
    /// reads it again from offset 0 (`pread`): a kernel file makes its text anew at every
    /// such read.
    pub fn open(&self, kernel_path: impl AsRef<Path>) -> KResult<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = self.path(&kernel_path);
        let err = |source| KernelError::Io {
            path: path.clone(),
            source,
        };
        let target = if self.is_live() {
            path.clone()
        } else {
            self.inside(&path).map_err(err)?
        };
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(&target)
            .map_err(err)?;
        if !f.metadata().map_err(err)?.is_file() {
            return Err(err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file (a FIFO, a device or a directory): not read",
            )));
        }
        Ok(f)
    }

    /// `path` (under this fixture root) with its links resolved, refused when they lead
    /// out of the tree.
    fn inside(&self, path: &Path) -> io::Result<PathBuf> {
        let root = std::fs::canonicalize(&self.root)?;
        let real = std::fs::canonicalize(path)?;
        if real.starts_with(&root) {
            Ok(real)
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "a link that leads outside --sysroot: not read",
            ))
        }
    }

    /// Whether the path is a directory (symlinks followed, as the kernel's are not).
    pub fn is_dir(&self, kernel_path: impl AsRef<Path>) -> bool {
        self.path(kernel_path).is_dir()
    }

    /// Read a file and strip surrounding white space (sysfs values end in `\n`).
    pub fn read_trimmed(&self, kernel_path: impl AsRef<Path>) -> KResult<String> {
        self.read(kernel_path).map(|s| s.trim().to_string())
    }

    /// Read a one-value file and parse it.
    pub fn read_value<T>(&self, kernel_path: impl AsRef<Path>) -> KResult<T>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        let kernel_path = kernel_path.as_ref();
        let text = self.read_trimmed(kernel_path)?;
        text.parse::<T>()
            .map_err(|e| KernelError::parse(self.path(kernel_path), format!("{text:?}: {e}")))
    }

    /// Like [`read_value`](Self::read_value) but a missing file is `Ok(None)`.
    pub fn read_value_opt<T>(&self, kernel_path: impl AsRef<Path>) -> KResult<Option<T>>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        match self.read_value(kernel_path) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Parse a file with one of procfs-core's `FromRead` parsers (at most [`MAX_FILE`]
    /// bytes of it).
    pub fn parse<T: procfs_core::FromRead>(&self, kernel_path: impl AsRef<Path>) -> KResult<T> {
        use std::io::Read as _;
        let file = self.open(&kernel_path)?;
        let path = self.path(kernel_path);
        T::from_read(file.take(MAX_FILE)).map_err(|e| proc_error(path, e))
    }

    /// Names of the entries of a directory, sorted.
    pub fn list_dir(&self, kernel_path: impl AsRef<Path>) -> KResult<Vec<String>> {
        let path = self.path(kernel_path);
        let rd = std::fs::read_dir(&path).map_err(|source| KernelError::Io {
            path: path.clone(),
            source,
        })?;
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|source| KernelError::Io {
                path: path.clone(),
                source,
            })?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Names of the subdirectories of a directory, sorted (from the directory's own
    /// entry types: no file is looked at).
    pub fn list_subdirs(&self, kernel_path: impl AsRef<Path>) -> KResult<Vec<String>> {
        let path = self.path(kernel_path);
        let err = |source| KernelError::Io {
            path: path.clone(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&path).map_err(err)? {
            let entry = entry.map_err(err)?;
            if entry.file_type().map_err(err)?.is_dir()
                && let Some(name) = entry.file_name().to_str()
            {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Entries of a directory named `<prefix><number>`, as sorted numbers
    /// (e.g. `cpu0`, `cpu1` … under `/sys/devices/system/cpu`).
    pub fn numbered_entries(
        &self,
        kernel_path: impl AsRef<Path>,
        prefix: &str,
    ) -> KResult<Vec<u32>> {
        let mut ids: Vec<u32> = self
            .list_dir(kernel_path)?
            .iter()
            .filter_map(|n| n.strip_prefix(prefix)?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }
}

/// Turn a procfs-core error into one that names the file.
pub fn proc_error(path: PathBuf, e: procfs_core::ProcError) -> KernelError {
    match e {
        procfs_core::ProcError::Io(source, _) => KernelError::Io { path, source },
        procfs_core::ProcError::NotFound(_) => KernelError::Io {
            path,
            source: io::Error::from(io::ErrorKind::NotFound),
        },
        procfs_core::ProcError::PermissionDenied(_) => KernelError::Io {
            path,
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        },
        other => KernelError::parse(path, other),
    }
}

/// `(major, minor, sublevel)` of the running kernel: `/proc/sys/kernel/osrelease`, with
/// the sublevel taken from the build string in `/proc/version` when the release hides it
/// (Debian's `6.1.0-56-amd64` is `Debian 6.1.158-1` there).
pub fn kernel_version(root: &KernelRoot) -> Option<(u32, u32, u32)> {
    let r = root.read_trimmed("/proc/sys/kernel/osrelease").ok()?;
    let (maj, min, mut sub) = parse_version(&r)?;
    if let Ok(v) = root.read("/proc/version")
        && let Some((_, build)) = v.split_once('#')
    {
        for tok in build.split_whitespace() {
            if let Some((a, b, c)) = parse_version(tok)
                && (a, b) == (maj, min)
                && tok.matches('.').count() >= 2
            {
                sub = sub.max(c);
            }
        }
    }
    Some((maj, min, sub))
}

fn parse_version(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.split(|c: char| !c.is_ascii_digit());
    let maj = it.next()?.parse().ok()?;
    let min = it.next()?.parse().ok()?;
    let sub = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    Some((maj, min, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_paths_under_root() {
        let r = KernelRoot::new("/tmp/fx");
        assert_eq!(r.path("/proc/stat"), PathBuf::from("/tmp/fx/proc/stat"));
        assert_eq!(
            KernelRoot::default().path("/proc/stat"),
            PathBuf::from("/proc/stat")
        );
        assert!(KernelRoot::default().is_live());
    }

    #[test]
    fn errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let r = KernelRoot::new(dir.path());
        let e = r.read_value::<u32>("/sys/nothing").unwrap_err();
        assert!(e.is_not_found());
        assert!(e.to_string().contains("/sys/nothing"), "{e}");
        std::fs::create_dir_all(dir.path().join("sys")).unwrap();
        std::fs::write(dir.path().join("sys/bad"), "x1\n").unwrap();
        let e = r.read_value::<u32>("/sys/bad").unwrap_err();
        assert!(!e.is_not_found());
        assert!(e.to_string().contains("sys/bad: malformed content"), "{e}");
        assert_eq!(r.read_value_opt::<u32>("/sys/nothing").unwrap(), None);
    }
}
