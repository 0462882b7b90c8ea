//! Where a recording goes: a file, or a FIFO or pipe that a reader drains. Nothing here
//! blocks for good: the file is opened without blocking (a FIFO with no reader is waited
//! for in short steps), and a write that a full pipe refuses waits in short steps too —
//! each step checks the run's stop flag (SIGINT/SIGTERM/…) and its deadline (`--duration`),
//! so a reader that never comes or stops reading cannot hold llctop, its BPF programs and
//! its knob changes past what the operator asked.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// An open recording output.
#[derive(Debug)]
pub struct Output {
    file: File,
    path: PathBuf,
    wait: Wait,
}

impl Output {
    /// Open (create, truncate) `path` for writing without blocking. A FIFO no one reads
    /// yet is waited for (said once on stderr) until a reader opens it, the stop flag is
    /// set or `wait.until` passes.
    pub fn open(path: &Path, wait: Wait) -> io::Result<Output> {
        let mut said = false;
        loop {
            let res = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
                .open(path);
            match res {
                Ok(file) => {
                    return Ok(Output {
                        file,
                        path: path.to_path_buf(),
                        wait,
                    });
                }
                // A FIFO with no reader (open(2): ENXIO with O_NONBLOCK|O_WRONLY).
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
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
                        eprintln!(
                            "llctop: {} is a FIFO no one reads yet: waiting for a reader (Ctrl-C stops)",
                            crate::text::escape(&path.display().to_string())
                        );
                        said = true;
                    }
                    std::thread::sleep(STEP);
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the open file (to cut a regular file back to its last whole
    /// record after a failed write).
    pub fn try_clone_file(&self) -> io::Result<File> {
        self.file.try_clone()
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
            fd: self.file.as_raw_fd(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> PathBuf {
        let p = dir.join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    #[test]
    fn a_fifo_with_no_reader_is_given_up_at_the_deadline_or_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        let t = Instant::now();
        let e = Output::open(
            &p,
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
        let e = Output::open(
            &p,
            Wait {
                stop: Some(stop),
                for_reader: true,
                ..Wait::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("stopped"), "{e}");
        // Not waiting for a reader at all (the TUI): refused at once.
        let e = Output::open(&p, Wait::default()).unwrap_err();
        assert!(e.to_string().contains("no one reads"), "{e}");
    }

    #[test]
    fn a_full_pipe_that_no_one_drains_ends_the_write_after_a_stop() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        // A reader that opens and never reads.
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut out = Output::open(
            &p,
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

    #[test]
    fn a_regular_file_is_written_as_ever() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        std::fs::write(&p, "old contents that are truncated").unwrap();
        let mut out = Output::open(&p, Wait::default()).unwrap();
        out.write_all(b"line\n").unwrap();
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "line\n");
    }
}
