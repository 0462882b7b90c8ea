//! The one way llctop creates an output file. Every command that writes a file — `record`,
//! `trace`, `export`, `report`/`diff --html`, `ab -o`, the TUI's recordings and traces, MCP's
//! recordings and traces, the man pages — opens it with [`Output::create`]. llctop runs as
//! root and is often pointed at a directory another user can write (/tmp, a home), so:
//!
//! - **Checked before anything is opened.** The target must be absent, a regular file, a
//!   FIFO or the null device (a run whose output is not wanted). A symbolic link
//!   (`/dev/stdout` is one), a directory, another device or a socket is
//!   refused, and so is a file the command reads (`export -o REC REC`): the error names the
//!   file and what to do instead.
//! - **No link is followed.** The target's directory is opened once (as the operator named
//!   it) and every name after that is taken relative to it: files are created
//!   `O_CREAT|O_EXCL|O_NOFOLLOW`, renamed with `renameat` (which replaces a name, never
//!   follows it), so a link planted at the target's or the temporary file's name is never
//!   written through, and a directory swapped meanwhile changes nothing.
//! - **An existing file is never lost.** The new data goes to a temporary file made the
//!   same way beside it (`.NAME.part-N`); only when the run commits does the old file become
//!   `NAME.old` (as `perf record` keeps `perf.data.old`; generated files — man pages — are
//!   simply replaced) and the new one take its name. A
//!   run that fails before it has data (a bad `--set`, a missing command, no BPF) discards
//!   its file: the old one stays as it was.
//! - **A new file is written under its own name** from the start, so a recording being
//!   written can be read while it grows and one killed with SIGKILL reads back up to its
//!   last whole line (docs/recording-format.md).
//! - **A FIFO is written as it is**, for a reader that drains it, and nothing here blocks
//!   for good: it is opened without blocking (a FIFO with no reader is waited for in short
//!   steps) and a write a full pipe refuses waits in short steps too — each step checks the
//!   run's stop flag (SIGINT/SIGTERM/…) and its deadline (`--duration`), so a reader that
//!   never comes or stops reading cannot hold llctop, its BPF programs and its knob changes
//!   past what the operator asked.
//!
//! Committed files are fsync'd, and so is their directory.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Make directory `d` (0700, with its parents) if it is missing, and check it is this
/// process's own: a directory (not a link) of its user that no one else may write. The
/// directories llctop keeps files in on its own (MCP's, the flight recorder's) are.
pub fn own_dir(d: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    match std::fs::symlink_metadata(d) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Err(e) => return Err(format!("{}: {e}", d.display())),
        Ok(_) => {}
    }
    let m = std::fs::symlink_metadata(d).map_err(|e| format!("{}: {e}", d.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(format!(
            "{}: must be a directory of uid {me}'s that no one else may write (not a link): llctop keeps its files there",
            d.display()
        ));
    }
    Ok(())
}

/// How long each wait sleeps before it looks at the stop flag again.
const STEP: Duration = Duration::from_millis(100);
/// After a stop, how long the last lines may still wait for a slow reader.
const GRACE: Duration = Duration::from_secs(2);

/// What a wait for the output gives up on.
#[derive(Debug, Clone, Default)]
pub struct Wait {
    /// The run's stop flag: once set, waits end (after [`GRACE`] for writes).
    pub stop: Option<Arc<AtomicBool>>,
    /// The run's end (its duration from the start): a reader that has not opened the
    /// FIFO by then is given up, and so is one that takes nothing for [`GRACE`] after it.
    pub until: Option<Instant>,
    /// Give up a write the reader does not take for this long (None: only the stop flag
    /// and `until` end it).
    pub stall: Option<Duration>,
    /// Wait for a reader to open a FIFO (else a FIFO no one reads is refused at once).
    pub for_reader: bool,
}

impl Wait {
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

/// Where the bytes go.
#[derive(Debug)]
enum Place {
    /// A FIFO, written as it is.
    Fifo,
    /// A file that did not exist, created under its own name.
    New { dir: OwnedFd, name: OsString },
    /// Beside an existing file, which it replaces on commit (the old one kept as `.old`).
    Beside {
        dir: OwnedFd,
        name: OsString,
        tmp: OsString,
    },
    /// Committed or discarded.
    Done,
}

/// An output file being written (see the module doc). Dropped without [`Output::commit`]
/// it is discarded — unless [`Output::keep`] said its data is worth keeping, then it is
/// committed.
#[derive(Debug)]
pub struct Output {
    file: File,
    path: PathBuf,
    place: Place,
    wait: Wait,
    keep: bool,
    /// Keep a replaced file as `NAME.old` (all but generated files: man pages).
    keep_old: bool,
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Committed {
    /// Where the file that was there before went.
    pub old: Option<PathBuf>,
}

impl std::fmt::Display for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.old {
            Some(p) => write!(
                f,
                " (the file that was there is kept as {})",
                crate::text::escape(&p.display().to_string())
            ),
            None => Ok(()),
        }
    }
}

/// What the target is now.
enum Found {
    Absent,
    Regular(rustix::fs::Stat),
    Fifo,
    Null,
}

fn refused(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The name `path` ends in and its directory (`.` for a bare name).
fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path
        .file_name()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| refused("not a file name: give a file's path".into()))?;
    // `x/.` and `x/..` have no file name of their own: refused above. A trailing slash
    // means a directory.
    if path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(refused("ends in '/': give a file's path".into()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_os_string()))
}

/// The target's directory, opened (links on the way followed: the operator named it).
fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(dir, flags | OFlags::RDONLY, Mode::empty())
        .or_else(|e| {
            // A directory one may write but not list: still usable, without its fsync.
            if e == rustix::io::Errno::ACCESS {
                rustix::fs::open(dir, flags | OFlags::PATH, Mode::empty())
            } else {
                Err(e)
            }
        })
        .map_err(|e| {
            let e = io::Error::from(e);
            let hint = match e.kind() {
                io::ErrorKind::NotFound => ": no such directory (make it first)",
                io::ErrorKind::PermissionDenied => ": not allowed to write there",
                _ => "",
            };
            io::Error::new(
                e.kind(),
                format!(
                    "directory {}: {e}{hint}",
                    crate::text::escape(&dir.display().to_string())
                ),
            )
        })
}

fn classify(dir: &OwnedFd, name: &OsStr) -> io::Result<Found> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => Ok(Found::Absent),
        Err(e) => Err(e.into()),
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(Found::Regular(st)),
            FileType::Fifo => Ok(Found::Fifo),
            FileType::Symlink => Err(refused(
                "is a symbolic link: llctop writes no file through a link (give the file itself, or a new name)".into(),
            )),
            FileType::Directory => Err(refused(
                "is a directory: give a file's path (e.g. DIR/run.jsonl.gz)".into(),
            )),
            // The null device takes anything and keeps nothing: a run whose output is
            // not wanted (`-o /dev/null`).
            FileType::CharacterDevice if st.st_rdev == rustix::fs::makedev(1, 3) => {
                Ok(Found::Null)
            }
            FileType::CharacterDevice | FileType::BlockDevice => Err(refused(
                "is a device: llctop writes regular files, FIFOs and /dev/null only".into(),
            )),
            _ => Err(refused(
                "is a socket or another special file: llctop writes regular files and FIFOs only"
                    .into(),
            )),
        },
    }
}

/// Refuse a target that is one of the command's inputs.
fn not_an_input(st: &rustix::fs::Stat, inputs: &[&Path]) -> io::Result<()> {
    for input in inputs {
        if let Ok(m) = std::fs::metadata(input) {
            use std::os::unix::fs::MetadataExt as _;
            if m.dev() == st.st_dev && m.ino() == st.st_ino {
                return Err(refused(format!(
                    "is {}, which this command reads: write to another file",
                    crate::text::escape(&input.display().to_string())
                )));
            }
        }
    }
    Ok(())
}

/// A temporary name beside `name`, new at each call.
fn tmp_name(name: &OsStr) -> OsString {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let mut t = OsString::from(".");
    t.push(name);
    t.push(format!(
        ".part-{}-{}",
        std::process::id(),
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ crate::clock::mono_ns()
    ));
    t
}

/// Create `name` in `dir`, never following a link and never opening what exists.
fn create_excl(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
}

/// Whether `name` in `dir` is still the file `file` has open.
fn same_file(dir: &OwnedFd, name: &OsStr, file: &File) -> bool {
    let (Ok(a), Ok(b)) = (
        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW),
        rustix::fs::fstat(file),
    ) else {
        return false;
    };
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// Check that `path` can be written as an output of a command reading `inputs`, without
/// creating anything: for a command to refuse a bad `-o` before it reads or loads
/// anything. The error names the path.
pub fn check(path: &Path, inputs: &[&Path]) -> io::Result<()> {
    let named = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("{}: {e}", crate::text::escape(&path.display().to_string())),
        )
    };
    let (dir_path, name) = split(path).map_err(named)?;
    let dir = open_dir(&dir_path).map_err(named)?;
    match classify(&dir, &name).map_err(named)? {
        Found::Regular(st) => not_an_input(&st, inputs).map_err(named),
        Found::Absent | Found::Fifo | Found::Null => Ok(()),
    }
}

impl Output {
    /// Check `path` and open it for writing (see the module doc); `inputs` are the files
    /// the command reads, which it may not write over. A FIFO no one reads yet is waited
    /// for (said once on stderr) until a reader opens it, the stop flag is set or
    /// `wait.until` passes. Errors say what is wrong and what to do, without the path
    /// (the caller names it).
    pub fn create(path: &Path, inputs: &[&Path], wait: Wait) -> io::Result<Output> {
        let (dir_path, name) = split(path)?;
        let dir = open_dir(&dir_path)?;
        // A name made or removed between the look and the open is looked at again.
        for _ in 0..8 {
            let place = match classify(&dir, &name)? {
                Found::Fifo => return Output::open_fifo(path, &dir, &name, wait),
                Found::Null => {
                    let fd = rustix::fs::openat(
                        &dir,
                        &name,
                        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
                        Mode::empty(),
                    )?;
                    let file = File::from(fd);
                    let st = rustix::fs::fstat(&file)?;
                    if st.st_rdev != rustix::fs::makedev(1, 3) {
                        return Err(refused(
                            "was replaced while being opened: not written".into(),
                        ));
                    }
                    return Ok(Output {
                        file,
                        path: path.to_path_buf(),
                        place: Place::Fifo,
                        wait,
                        keep: true,
                        keep_old: true,
                    });
                }
                Found::Absent => match create_excl(&dir, &name) {
                    Ok(fd) => (fd, Place::New { dir, name }),
                    Err(rustix::io::Errno::EXIST) => continue,
                    Err(e) => return Err(e.into()),
                },
                Found::Regular(st) => {
                    not_an_input(&st, inputs)?;
                    let (fd, tmp) = loop {
                        let tmp = tmp_name(&name);
                        match create_excl(&dir, &tmp) {
                            Ok(fd) => break (fd, tmp),
                            Err(rustix::io::Errno::EXIST) => {}
                            Err(e) => return Err(e.into()),
                        }
                    };
                    (fd, Place::Beside { dir, name, tmp })
                }
            };
            let (fd, place) = place;
            return Ok(Output {
                file: File::from(fd),
                path: path.to_path_buf(),
                place,
                wait,
                keep: false,
                keep_old: true,
            });
        }
        Err(io::Error::other(
            "its name keeps being made and removed by someone else: not written",
        ))
    }

    fn open_fifo(path: &Path, dir: &OwnedFd, name: &OsStr, wait: Wait) -> io::Result<Output> {
        let mut said = false;
        loop {
            let res = rustix::fs::openat(
                dir,
                name,
                OFlags::WRONLY
                    | OFlags::NONBLOCK
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC
                    | OFlags::NOCTTY,
                Mode::empty(),
            );
            match res {
                Ok(fd) => {
                    let file = File::from(fd);
                    // Still the FIFO looked at (not a file made there meanwhile).
                    let st = rustix::fs::fstat(&file)?;
                    if FileType::from_raw_mode(st.st_mode) != FileType::Fifo {
                        return Err(refused(
                            "was replaced while being opened: not written".into(),
                        ));
                    }
                    return Ok(Output {
                        file,
                        path: path.to_path_buf(),
                        place: Place::Fifo,
                        wait,
                        keep: true,
                        keep_old: true,
                    });
                }
                // A FIFO with no reader (open(2): ENXIO with O_NONBLOCK|O_WRONLY).
                Err(rustix::io::Errno::NXIO) => {
                    if wait.stopped() {
                        return Err(io::Error::other("no reader opened the FIFO: stopped"));
                    }
                    if !wait.for_reader {
                        return Err(io::Error::other("a FIFO no one reads"));
                    }
                    if wait.until.is_some_and(|u| Instant::now() >= u) {
                        return Err(io::Error::other(
                            "no reader opened the FIFO in time (--duration)",
                        ));
                    }
                    if !said {
                        crate::say!(
                            "llctop: {} is a FIFO no one reads yet: waiting for a reader (Ctrl-C stops)",
                            crate::text::escape(&path.display().to_string())
                        );
                        said = true;
                    }
                    std::thread::sleep(STEP);
                }
                Err(rustix::io::Errno::LOOP) => {
                    return Err(refused(
                        "is a symbolic link: llctop writes no file through a link (give the file itself, or a new name)".into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The target, as the operator named it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the bytes are written until the commit: the target, or the temporary file
    /// beside it when the target existed.
    pub fn writing_to(&self) -> PathBuf {
        match &self.place {
            Place::Beside { tmp, .. } => self.path.with_file_name(tmp),
            _ => self.path.clone(),
        }
    }

    /// Whether an existing file is replaced when this one is committed.
    pub fn replaces(&self) -> bool {
        matches!(self.place, Place::Beside { .. })
    }

    /// The data written is worth keeping (a recording's first snapshot): dropped without
    /// a commit, the file is committed, not discarded.
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// A second handle on the open file (to cut a regular file back to its last whole
    /// record after a failed write).
    pub fn try_clone_file(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// Commit the file as it is now and keep writing it through the file returned: a log
    /// another process appends to (a child's stderr).
    pub fn into_file(mut self) -> io::Result<File> {
        self.commit_in_place()?;
        self.file.try_clone()
    }

    /// Finish the file: written to disk and, when it replaces one, renamed over it (the
    /// old one kept as `NAME.old`).
    pub fn commit(mut self) -> io::Result<Committed> {
        self.commit_in_place()
    }

    fn commit_in_place(&mut self) -> io::Result<Committed> {
        let place = std::mem::replace(&mut self.place, Place::Done);
        match place {
            Place::Fifo | Place::Done => Ok(Committed::default()),
            Place::New { dir, .. } => {
                self.file.sync_all()?;
                let _ = rustix::fs::fsync(&dir);
                Ok(Committed::default())
            }
            Place::Beside { dir, name, tmp } => {
                self.file.sync_all()?;
                let mut old_name = name.clone();
                old_name.push(".old");
                let kept = if self.keep_old {
                    rustix::fs::renameat(&dir, &name, &dir, &old_name)
                } else {
                    Err(rustix::io::Errno::NOENT)
                };
                let old = match kept {
                    Ok(()) => Some(self.path.with_file_name(&old_name)),
                    // Removed meanwhile (or not kept): nothing to keep.
                    Err(rustix::io::Errno::NOENT) => None,
                    Err(e) => {
                        let e = io::Error::from(e);
                        return Err(io::Error::new(
                            e.kind(),
                            format!(
                                "could not keep the file that was there as {} ({e}): the new data is in {}",
                                crate::text::escape(
                                    &self.path.with_file_name(&old_name).display().to_string()
                                ),
                                crate::text::escape(
                                    &self.path.with_file_name(&tmp).display().to_string()
                                )
                            ),
                        ));
                    }
                };
                rustix::fs::renameat(&dir, &tmp, &dir, &name).map_err(|e| {
                    let e = io::Error::from(e);
                    io::Error::new(
                        e.kind(),
                        format!(
                            "{e}: the new data is in {}",
                            crate::text::escape(
                                &self.path.with_file_name(&tmp).display().to_string()
                            )
                        ),
                    )
                })?;
                let _ = rustix::fs::fsync(&dir);
                Ok(Committed { old })
            }
        }
    }

    /// Remove what this output made (only if its name is still the file written).
    fn discard(&mut self) {
        let place = std::mem::replace(&mut self.place, Place::Done);
        let (dir, name) = match &place {
            Place::New { dir, name } => (dir, name),
            Place::Beside { dir, tmp, .. } => (dir, tmp),
            Place::Fifo | Place::Done => return,
        };
        if same_file(dir, name, &self.file) {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        }
    }

    /// Wait until the reader makes room, in steps that look at the stop flag.
    fn wait_writable(&self, since: Instant, stopped_at: &mut Option<Instant>) -> io::Result<()> {
        let over = self.wait.until.is_some_and(|u| Instant::now() >= u);
        if self.wait.stopped() || over {
            let at = *stopped_at.get_or_insert_with(Instant::now);
            if at.elapsed() >= GRACE {
                return Err(io::Error::other(if over {
                    "the reader takes nothing more and the run's --duration is over"
                } else {
                    "the reader takes nothing more and llctop was stopped"
                }));
            }
        }
        if self.wait.stall.is_some_and(|s| since.elapsed() >= s) {
            return Err(io::Error::other(
                "the reader has taken nothing for too long",
            ));
        }
        let mut pfd = libc::pollfd {
            fd: self.file.as_fd().as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd for a descriptor this Output owns.
        let n = unsafe { libc::poll(&mut pfd, 1, STEP.as_millis() as libc::c_int) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if matches!(self.place, Place::Done) {
            return;
        }
        if self.keep {
            match self.commit_in_place() {
                Ok(c) if c.old.is_some() => crate::say!(
                    "llctop: {}{c}",
                    crate::text::escape(&self.path.display().to_string())
                ),
                Ok(_) => {}
                Err(e) => crate::say!(
                    "llctop: {}: {}",
                    crate::text::escape(&self.path.display().to_string()),
                    crate::text::escape(&e.to_string())
                ),
            }
        } else {
            self.discard();
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let since = Instant::now();
        let mut stopped_at = None;
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait_writable(since, &mut stopped_at)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Write `bytes` as the whole of `path` (a page) and commit it; `inputs` are the files the
/// command read. The error names the path.
pub fn write_whole(path: &Path, inputs: &[&Path], bytes: &[u8]) -> io::Result<Committed> {
    write_whole_as(path, inputs, bytes, true)
}

/// [`write_whole`] for a generated file that is simply replaced (a man page: installing
/// them again leaves no `.old` beside them).
pub fn write_generated(path: &Path, bytes: &[u8]) -> io::Result<Committed> {
    write_whole_as(path, &[], bytes, false)
}

fn write_whole_as(
    path: &Path,
    inputs: &[&Path],
    bytes: &[u8],
    keep_old: bool,
) -> io::Result<Committed> {
    let named = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("{}: {e}", crate::text::escape(&path.display().to_string())),
        )
    };
    let mut out = Output::create(
        path,
        inputs,
        Wait {
            stall: Some(Duration::from_secs(10)),
            ..Wait::default()
        },
    )
    .map_err(named)?;
    out.keep_old = keep_old;
    out.write_all(bytes).map_err(named)?;
    out.commit().map_err(named)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fifo(dir: &Path) -> PathBuf {
        let p = dir.join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    fn create(p: &Path) -> io::Result<Output> {
        Output::create(p, &[], Wait::default())
    }

    #[test]
    fn a_fifo_with_no_reader_is_given_up_at_the_deadline_or_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        let t = Instant::now();
        let e = Output::create(
            &p,
            &[],
            Wait {
                until: Some(Instant::now() + Duration::from_millis(300)),
                for_reader: true,
                ..Wait::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("in time (--duration)"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let stop = Arc::new(AtomicBool::new(true));
        let e = Output::create(
            &p,
            &[],
            Wait {
                stop: Some(stop),
                for_reader: true,
                ..Wait::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("stopped"), "{e}");
        // Not waiting for a reader at all (the TUI): refused at once.
        let e = create(&p).unwrap_err();
        assert!(e.to_string().contains("no one reads"), "{e}");
    }

    #[test]
    fn a_full_pipe_that_no_one_drains_ends_the_write_after_a_stop() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        // A reader that opens and never reads.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut out = Output::create(
            &p,
            &[],
            Wait {
                stop: Some(Arc::clone(&stop)),
                ..Wait::default()
            },
        )
        .unwrap();
        let s = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            s.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let chunk = vec![b'x'; 1 << 16];
        let e = loop {
            if let Err(e) = out.write_all(&chunk) {
                break e;
            }
        };
        t.join().unwrap();
        assert!(e.to_string().contains("stopped"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
        drop(reader);
    }

    use std::os::unix::fs::OpenOptionsExt as _;

    #[test]
    fn a_new_file_is_written_under_its_name_and_discarded_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        let mut out = create(&p).unwrap();
        out.write_all(b"line\n").unwrap();
        // Readable while it is written.
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "line\n");
        drop(out);
        assert!(
            !p.exists(),
            "a run that failed before it had data leaves nothing"
        );
        let mut out = create(&p).unwrap();
        out.write_all(b"line\n").unwrap();
        out.keep();
        drop(out);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "line\n");
    }

    #[test]
    fn an_existing_file_is_replaced_on_commit_and_kept_as_old() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        std::fs::write(&p, "old recording").unwrap();
        let mut out = create(&p).unwrap();
        assert!(out.replaces());
        out.write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old recording");
        let c = out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(c.old, Some(dir.path().join("r.jsonl.old")));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("r.jsonl.old")).unwrap(),
            "old recording"
        );
        // Nothing else is left beside them.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["r.jsonl", "r.jsonl.old"]);
    }

    #[test]
    fn a_failed_run_over_an_existing_file_leaves_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl.gz");
        std::fs::write(&p, "precious").unwrap();
        let mut out = create(&p).unwrap();
        out.write_all(b"header only").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "precious");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_devices_directories_and_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "root's").unwrap();
        let link = dir.path().join("planted");
        symlink(&victim, &link).unwrap();
        let e = create(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's");
        // A dangling link too (it would create its target).
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(create(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        let e = create(Path::new("/dev/stdout")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = create(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("device"), "{e}");
        // The null device is a sink.
        create(Path::new("/dev/null"))
            .unwrap()
            .write_all(b"gone")
            .unwrap();
        let e = create(dir.path()).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let e = create(&dir.path().join("sub/")).unwrap_err();
        assert!(e.to_string().contains("'/'"), "{e}");
        let e = create(&dir.path().join("no/such/dir/f")).unwrap_err();
        assert!(e.to_string().contains("no such directory"), "{e}");
        // The command's own input, by another name too (a hard link).
        let input = dir.path().join("in.jsonl");
        std::fs::write(&input, "rec").unwrap();
        let e = Output::create(&input, &[&input], Wait::default()).unwrap_err();
        assert!(e.to_string().contains("which this command reads"), "{e}");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&input, &hard).unwrap();
        assert!(Output::create(&hard, &[&input], Wait::default()).is_err());
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "rec");
    }

    #[test]
    fn links_planted_at_the_temporary_and_old_names_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "root's").unwrap();
        let p = dir.path().join("report.html");
        std::fs::write(&p, "old page").unwrap();
        // The names an older llctop used, and the kept-old name.
        symlink(&victim, dir.path().join(".report.html.tmp")).unwrap();
        symlink(&victim, dir.path().join("report.html.old")).unwrap();
        let c = write_whole(&p, &[], b"new page").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new page");
        let old = c.old.unwrap();
        assert!(!old.is_symlink(), "the link was replaced, not followed");
        assert_eq!(std::fs::read_to_string(old).unwrap(), "old page");
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_not_written_through() {
        // The file removed and a link put in its place while the output is open: the
        // commit renames over the link; the link's target is untouched.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "root's").unwrap();
        let p = dir.path().join("out");
        std::fs::write(&p, "old").unwrap();
        let mut out = create(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        symlink(&victim, &p).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }
}
