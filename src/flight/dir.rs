//! The flight recorder's directory: llctop's own (made 0700 when missing; refused when it
//! is a link, not a directory, another user's, or writable by anyone else — as MCP's
//! directory is), opened once, and every file in it named relative to that descriptor:
//! created `O_CREAT|O_EXCL|O_NOFOLLOW` (mode 0600), renamed with `renameat` (a name is
//! replaced, never followed), removed with `unlinkat`. A link planted at a name is never
//! written through.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

/// An open directory of llctop's own.
pub struct Dir {
    fd: OwnedFd,
    pub path: PathBuf,
}

impl Dir {
    /// `path`, made (0700, with its parents) if missing and checked to be llctop's own.
    pub fn own(path: &Path) -> Result<Dir, String> {
        crate::output::own_dir(path)?;
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// A subdirectory of its own (made 0700 if missing).
    pub fn sub(&self, name: &str) -> Result<Dir, String> {
        Dir::own(&self.path.join(name))
    }

    /// A new file `name` (never an existing one, never through a link).
    pub fn create(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(File::from(fd))
    }

    /// `name` for reading, if it is a regular file (a link is refused).
    pub fn open(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let f = File::from(fd);
        if !f.metadata()?.file_type().is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        Ok(f)
    }

    /// `from` renamed `to` (whatever is at `to` replaced, not followed), the directory
    /// synced.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to)?;
        let _ = rustix::fs::fsync(&self.fd);
        Ok(())
    }

    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?;
        Ok(())
    }

    /// The names in it with their sizes (regular files only; links and the rest left
    /// out).
    pub fn list(&self) -> io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.path)? {
            let e = e?;
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let Ok(st) = rustix::fs::statat(&self.fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
            {
                out.push((name, st.st_size as u64));
            }
        }
        out.sort();
        Ok(out)
    }
}
