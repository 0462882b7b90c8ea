//! resctrl's counter files, kept open and read again with `pread` at offset 0 (the
//! kernel makes a counter file's text anew at each such read): one system call per
//! counter per interval instead of open + read + close, and no file opened more than once
//! in an interval. Open files come out of a budget under RLIMIT_NOFILE; past it a file
//! is opened for its read and closed again (slower, still correct), and the source
//! state says how many are kept.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::kroot::{KernelError, KernelRoot};

/// How many counter files may stay open (shared by the threads of one read).
#[derive(Debug)]
pub struct Budget {
    left: AtomicUsize,
    /// Files that could not be kept (read by open + read + close).
    overflow: AtomicUsize,
    /// Whether the soft limit was raised already (held while raising).
    raised: Mutex<bool>,
}

/// Of RLIMIT_NOFILE's soft limit, the part counter files may keep: the rest is for
/// everything else (perf's per-CPU counters, BPF maps, a recording, sockets).
const SHARE: usize = 2;

fn nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return (1024, 1024);
    }
    (r.rlim_cur, r.rlim_max)
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new()
    }
}

impl Budget {
    pub fn new() -> Budget {
        let (soft, _) = nofile();
        Budget {
            left: AtomicUsize::new(usize::try_from(soft).unwrap_or(usize::MAX) / SHARE),
            overflow: AtomicUsize::new(0),
            raised: Mutex::new(false),
        }
    }

    /// A budget of exactly `n` files (tests).
    pub fn of(n: usize) -> Budget {
        Budget {
            left: AtomicUsize::new(n),
            overflow: AtomicUsize::new(0),
            raised: Mutex::new(true),
        }
    }

    /// Files read without being kept so far.
    pub fn overflow(&self) -> usize {
        self.overflow.load(Ordering::Relaxed)
    }

    fn take_one(&self) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Take one file from the budget; when it runs out, the soft limit is raised to the
    /// hard one once (as most servers allow), and its share added.
    fn take(&self) -> bool {
        if self.take_one() {
            return true;
        }
        if let Ok(mut raised) = self.raised.lock()
            && !*raised
        {
            *raised = true;
            let (soft, hard) = nofile();
            if hard > soft {
                let r = libc::rlimit {
                    rlim_cur: hard,
                    rlim_max: hard,
                };
                // SAFETY: r is a valid rlimit; raising the soft limit up to the hard one
                // needs no privilege.
                if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
                    let more = (hard - soft) / SHARE as u64;
                    self.left.fetch_add(
                        usize::try_from(more).unwrap_or(usize::MAX / 2),
                        Ordering::AcqRel,
                    );
                }
            }
        }
        self.take_one()
    }

    fn give_back(&self) {
        self.left.fetch_add(1, Ordering::AcqRel);
    }
}

/// One counter file.
#[derive(Debug)]
pub struct Counter {
    /// Kernel path (under the root).
    path: PathBuf,
    file: Option<File>,
}

/// A counter's text is a number or a word: anything longer is not a counter.
pub const MAX_TEXT: usize = 64;

impl Counter {
    pub fn new(path: PathBuf) -> Counter {
        Counter { path, file: None }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Whether its file is kept open.
    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Read the file's text into `buf`: its length, and whether a kept file failed and
    /// the path was opened again (its group was removed and made again, or its domain
    /// went offline and came back: a counter that is not the one read before). Never
    /// more than one open per call.
    pub fn read(
        &mut self,
        root: &KernelRoot,
        budget: &Budget,
        buf: &mut [u8; MAX_TEXT],
    ) -> Result<(usize, bool), KernelError> {
        let mut again = false;
        if let Some(f) = &self.file {
            match f.read_at(buf, 0) {
                Ok(n) => return Ok((n, false)),
                Err(_) => {
                    self.file = None;
                    budget.give_back();
                    again = true;
                }
            }
        }
        let f = root.open(&self.path)?;
        let n = f.read_at(buf, 0).map_err(|source| KernelError::Io {
            path: root.path(&self.path),
            source,
        })?;
        if budget.take() {
            self.file = Some(f);
        } else {
            budget.overflow.fetch_add(1, Ordering::Relaxed);
        }
        Ok((n, again))
    }

    /// Close the file (its group is gone), returning it to the budget.
    pub fn close(&mut self, budget: &Budget) {
        if self.file.take().is_some() {
            budget.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_file_is_read_again_and_a_replaced_one_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let root = KernelRoot::new(dir.path());
        std::fs::write(dir.path().join("c"), "100\n").unwrap();
        let b = Budget::of(1);
        let mut buf = [0u8; MAX_TEXT];
        let mut c = Counter::new("/c".into());
        let (n, again) = c.read(&root, &b, &mut buf).unwrap();
        assert_eq!((&buf[..n], again), (&b"100\n"[..], false));
        assert!(c.is_open());
        // Rewritten in place (as a test kernel does): the kept file sees the new text.
        std::fs::write(dir.path().join("c"), "250\n").unwrap();
        let (n, _) = c.read(&root, &b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"250\n");
        // A second counter finds the budget spent: read all the same, not kept.
        std::fs::write(dir.path().join("d"), "7").unwrap();
        let mut d = Counter::new("/d".into());
        let (n, _) = d.read(&root, &b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"7");
        assert!(!d.is_open());
        assert_eq!(b.overflow(), 1);
        c.close(&b);
        assert!(!c.is_open());
        let (n, _) = d.read(&root, &b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"7");
        assert!(d.is_open(), "the closed file's place went to it");
        // Gone: an error naming the path.
        std::fs::remove_file(dir.path().join("c")).unwrap();
        let e = c.read(&root, &b, &mut buf).unwrap_err().to_string();
        assert!(e.contains("/c"), "{e}");
    }
}
