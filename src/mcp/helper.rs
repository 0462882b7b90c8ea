//! The `llctop` children `llctop mcp` starts for its `trace` and `ab` tools (this binary,
//! the server's global options): one at a time per server (a second call is refused with
//! who holds it and since when), started as children that cannot outlive the server
//! (child.rs: their own process group, SIGTERM when the server dies — on which `llctop ab`
//! restores its knob), their output read in bounded lines, and stopped with the server.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt as _};

use super::config::Config;
use super::store::Store;

/// Lines of a child's output kept (the newest), and the longest line kept.
pub const TAIL_LINES: usize = 200;
pub const MAX_LINE: usize = 4096;

/// The running helpers' process ids (the server's end stops them).
pub type Children = Arc<Mutex<Vec<u32>>>;

pub struct Helpers {
    pub allow_writes: bool,
    /// This binary and the global options the server was started with.
    pub exe: PathBuf,
    pub global: Vec<String>,
    pub store: Store,
    pub config: Arc<Config>,
    pub children: Children,
    /// One helper at a time: what runs, and since when.
    busy: tokio::sync::Mutex<()>,
    what: Mutex<Option<(String, Instant)>>,
}

/// The right to run a helper, held while it runs.
pub struct Slot<'a> {
    _g: tokio::sync::MutexGuard<'a, ()>,
    what: &'a Mutex<Option<(String, Instant)>>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut w) = self.what.lock() {
            *w = None;
        }
    }
}

impl Helpers {
    pub fn new(
        allow_writes: bool,
        exe: PathBuf,
        global: Vec<String>,
        store: Store,
        config: Arc<Config>,
    ) -> Helpers {
        Helpers {
            allow_writes,
            exe,
            global,
            store,
            config,
            children: Arc::new(Mutex::new(Vec::new())),
            busy: tokio::sync::Mutex::new(()),
            what: Mutex::new(None),
        }
    }

    /// Take the one slot for `what`, or say what holds it.
    pub fn slot(&self, what: &str) -> Result<Slot<'_>, String> {
        match self.busy.try_lock() {
            Ok(g) => {
                if let Ok(mut w) = self.what.lock() {
                    *w = Some((what.to_string(), Instant::now()));
                }
                Ok(Slot {
                    _g: g,
                    what: &self.what,
                })
            }
            Err(_) => {
                let held = self.what.lock().ok().and_then(|w| w.clone());
                Err(match held {
                    Some((w, t)) => format!(
                        "busy: a {w} started {:.0} s ago runs on this server (one trace or ab at a time); call again when it ends",
                        t.elapsed().as_secs_f64()
                    ),
                    None => "busy: a trace or ab runs on this server (one at a time); call again when it ends".into(),
                })
            }
        }
    }

    /// `llctop GLOBAL… args…` as a child of the server (child.rs), stdin closed, stdout
    /// and stderr piped; registered so that the server's end stops it.
    pub fn spawn(&self, args: &[std::ffi::OsString]) -> Result<tokio::process::Child, String> {
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.args(&self.global)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::child::prepare(&mut cmd, crate::child::OnParentDeath::Term, None);
        let child = tokio::process::Command::from(cmd)
            .spawn()
            .map_err(|e| format!("{}: {e}", self.exe.display()))?;
        if let (Some(pid), Ok(mut c)) = (child.id(), self.children.lock()) {
            c.push(pid);
        }
        Ok(child)
    }

    /// The child `pid` ended: no longer the server's to stop.
    pub fn forget(&self, pid: u32) {
        if let Ok(mut c) = self.children.lock() {
            c.retain(|&x| x != pid);
        }
    }
}

/// SIGTERM to a helper's group: `llctop ab` restores its knobs, `llctop trace` finishes its
/// file.
pub fn stop(pid: u32) {
    crate::child::signal_group(pid, libc::SIGTERM);
}

/// Read `r` to its end in lines of at most [`MAX_LINE`] bytes (a longer one is cut,
/// said with `…`), calling `line` for each; memory stays bounded however much comes.
pub async fn lines<R: AsyncRead + Unpin>(mut r: R, mut line: impl FnMut(String)) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut cur: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                let mut s = String::from_utf8_lossy(&cur).into_owned();
                if cut {
                    s.push('…');
                }
                line(s);
                cur.clear();
                cut = false;
            } else if cur.len() < MAX_LINE {
                cur.push(b);
            } else {
                cut = true;
            }
        }
    }
    if !cur.is_empty() {
        line(String::from_utf8_lossy(&cur).into_owned());
    }
}

/// Read `r` to its end, keeping at most `max` bytes (the rest is read and dropped).
pub async fn bounded<R: AsyncRead + Unpin>(mut r: R, max: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut over = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = max.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
                over |= n > room;
            }
        }
    }
    (out, over)
}

/// The newest `n` lines of `log`, one string.
pub fn tail(log: &std::collections::VecDeque<String>, n: usize) -> String {
    let skip = log.len().saturating_sub(n);
    log.iter()
        .skip(skip)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_however_long() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut text = vec![b'a'; MAX_LINE * 10];
        text.extend_from_slice(b"\nshort\nlast");
        let mut got = Vec::new();
        rt.block_on(lines(&text[..], |l| got.push(l)));
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), MAX_LINE + '…'.len_utf8());
        assert_eq!(got[1], "short");
        assert_eq!(got[2], "last");
        let (b, over) = rt.block_on(bounded(&text[..], 100));
        assert_eq!(b.len(), 100);
        assert!(over);
    }

    #[test]
    fn one_helper_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let h = Helpers::new(
            false,
            PathBuf::from("llctop"),
            Vec::new(),
            Store::new(d.path().to_path_buf(), Vec::new(), 1),
            Arc::new(Config::default()),
        );
        let s = h.slot("trace").unwrap();
        let e = h.slot("ab").err().unwrap();
        assert!(e.contains("busy: a trace started"), "{e}");
        drop(s);
        assert!(h.slot("ab").is_ok());
    }
}
