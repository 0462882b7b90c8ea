//! The session's `scheduler` knob: a sched_ext scheduler set by starting its binary as
//! llctop's child and unset by stopping it — a process, not a file, but under the same
//! rules as every knob write. Refused in a read-only session; owned by one llctop; the
//! child's pid and start time journaled as soon as it exists (so `llctop knobs restore`,
//! or the next run, stops what a killed llctop left running — and only that process);
//! checked (the kernel's `state` must say `enabled` and `root/ops` name it, within a
//! time limit, else it is stopped and the error says why, with the tail of its log);
//! restored when the session ends. A scheduler llctop did not start is never stopped.
//!
//! It is a child that cannot outlive llctop (child.rs) — unless kept on purpose
//! (`--keep-changes`, a one-shot `llctop knobs set`): its own process group, which a stop
//! signals whole (a scheduler that forks and lets its first process exit is followed: the
//! knob is its group's, and `knobs restore` stops the group), SIGTERM when llctop dies.
//! Its output goes to a log beside the journal that llctop writes itself, capped and
//! rotated ([`LOG_CAP`], one older part kept), and removed with the scheduler; a kept
//! scheduler writes its log file directly (no llctop is left to read a pipe), and
//! `knobs restore` removes it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Change, KnobAction, KnobError, KnobEvent, Session};
use crate::knobs::Knob;
use crate::knobs::journal::Entry;
use crate::knobs::scheduler::ID;
use crate::kstate::sched_ext;
use crate::snapshot::{EEVDF, ops_matches_binary};

/// How long a scheduler may take to attach (`LLCTOP_SCHEDULER_TIMEOUT`, seconds, changes
/// it): scx_bpfland takes ~1.2 s on an emulated 8-vCPU guest.
const ATTACH: Duration = Duration::from_secs(20);
/// How long each stop signal is given (SIGINT, then SIGTERM; SIGKILL after).
const STOP: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);
/// Bytes of a scheduler's log an error quotes from (its end).
const TAIL: u64 = 4096;
/// A scheduler's log is rotated past this many bytes (the part before kept as `.1`).
pub const LOG_CAP: u64 = 1 << 20;

/// The scheduler this session started.
pub struct Started {
    pub name: String,
    pub path: PathBuf,
    /// Its first process, whose id is its process group's.
    pub pid: u32,
    /// `/proc/PID/stat` starttime (clock ticks since boot): a reused pid is not it.
    pub start_ticks: u64,
    pub log: PathBuf,
    child: Child,
    /// Set when the scheduler is stopped: the log pump writes no more.
    pump_done: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The log pump, which ends at the end of the scheduler's output.
    pump: Option<std::thread::JoinHandle<()>>,
}

/// How long an exited scheduler's last words may take to reach its log (the pump copies
/// them from the pipe on its own thread: on a loaded machine, after the exit is seen).
const DRAIN: Duration = Duration::from_secs(2);

impl Started {
    /// Its log, once the pump has copied what the exited scheduler wrote (at most
    /// [`DRAIN`]), as [`log_tail`] says it.
    fn tail_after_exit(&self) -> String {
        let t0 = Instant::now();
        while self.pump.as_ref().is_some_and(|p| !p.is_finished()) && t0.elapsed() < DRAIN {
            std::thread::sleep(POLL);
        }
        log_tail(&self.log)
    }

    /// Whether anything of the scheduler's process group runs (its first process reaped
    /// first: a zombie still counts as a member).
    fn running(&mut self) -> bool {
        let _ = self.child.try_wait();
        crate::child::group_alive(self.pid)
    }
}

/// The log's older part.
fn log_old(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".1");
    PathBuf::from(p)
}

/// Remove a scheduler's log and its older part.
pub fn remove_log(log: &Path) {
    let _ = std::fs::remove_file(log);
    let _ = std::fs::remove_file(log_old(log));
}

/// A log file made anew, never through a link.
fn create_log(log: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(log)
}

/// Copy the scheduler's output from `r` to `log`, rotating past [`LOG_CAP`] (the part
/// before goes to `.1`); ends at the end of the output or when `done` is set.
fn pump_log(
    mut r: impl std::io::Read,
    log: PathBuf,
    mut f: File,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::io::Write as _;
    use std::sync::atomic::Ordering;
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if done.load(Ordering::Relaxed) {
            return;
        }
        if size + n as u64 > LOG_CAP {
            if std::fs::rename(&log, log_old(&log)).is_err() {
                return;
            }
            match create_log(&log) {
                Ok(g) => f = g,
                Err(_) => return,
            }
            size = 0;
        }
        if f.write_all(&buf[..n]).is_err() {
            return;
        }
        size += n as u64;
    }
}

pub fn attach_limit() -> Duration {
    std::env::var("LLCTOP_SCHEDULER_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(ATTACH, Duration::from_secs_f64)
}

/// A live process's start time, `None` when it is gone (or a zombie).
fn start_ticks(pid: u32) -> Option<u64> {
    use procfs_core::FromRead as _;
    let st = procfs_core::process::Stat::from_file(format!("/proc/{pid}/stat")).ok()?;
    (st.state != 'Z' && st.state != 'X').then_some(st.starttime)
}

/// The journal's restore bytes for a started scheduler, and back.
fn stop_bytes(pid: u32, ticks: u64) -> String {
    format!("stop pid={pid} start={ticks}")
}

fn parse_stop(s: &str) -> Option<(u32, u64)> {
    let mut it = s.strip_prefix("stop ")?.split(' ');
    let pid = it.next()?.strip_prefix("pid=")?.parse().ok()?;
    let ticks = it.next()?.strip_prefix("start=")?.parse().ok()?;
    Some((pid, ticks))
}

/// Whether the scheduler's process group still runs: its first process (`pgid`, started
/// at `ticks`) or, once that one has exited, a process of its group started no earlier.
/// The kernel gives no new process an id that a live group still uses, so a live process
/// `pgid` started at another time means the group is gone and the id was reused.
fn group_started_since(pgid: u32, ticks: u64) -> bool {
    if let Some(t) = start_ticks(pgid) {
        return t == ticks;
    }
    crate::child::group_members(pgid)
        .iter()
        .any(|&(_, start)| start >= ticks)
}

/// The last few lines of a scheduler's log, one line (why it failed, in its own words:
/// scx schedulers print the kernel's exit reason as `EXIT: …`).
pub fn log_tail(log: &Path) -> String {
    // Only the last 4 KiB are read (from the older part too, just after a rotation): a
    // scheduler that ran for hours logs a lot.
    let end = |p: &Path, want: u64| {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut buf = Vec::new();
        if let Ok(mut f) = File::open(p) {
            let len = f.metadata().map_or(0, |m| m.len());
            let _ = f.seek(SeekFrom::Start(len.saturating_sub(want)));
            let _ = f.take(want).read_to_end(&mut buf);
        }
        buf
    };
    let text = {
        let mut buf = end(log, TAIL);
        if (buf.len() as u64) < TAIL {
            let mut older = end(&log_old(log), TAIL - buf.len() as u64);
            older.extend_from_slice(&buf);
            buf = older;
        }
        String::from_utf8_lossy(&buf).to_string()
    };
    let text = strip_ansi(&text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        format!("{} is empty", log.display())
    } else {
        format!("its log ({}) ends: {tail}", log.display())
    }
}

/// `text` without terminal escape sequences (CSI: ESC [ … final byte; scx schedulers colour
/// their log lines).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

impl Session {
    /// The same, giving a scheduler `limit` to attach (tests; `LLCTOP_SCHEDULER_TIMEOUT`
    /// otherwise).
    pub fn with_scheduler_timeout(mut self, limit: Duration) -> Session {
        self.sched_limit = limit;
        self
    }

    /// The kernel's sched_ext state, for messages.
    fn sched_state(&self) -> String {
        match sched_ext::read(self.registry.root()) {
            Ok(Some(s)) => format!(
                "state {}{}",
                s.state,
                s.ops.map(|o| format!(", ops {o}")).unwrap_or_default()
            ),
            Ok(None) => "no sched_ext".into(),
            Err(e) => e.to_string(),
        }
    }

    /// Whether the kernel runs `path`'s scheduler now.
    fn sched_attached(&self, path: &Path) -> bool {
        matches!(sched_ext::read(self.registry.root()),
            Ok(Some(s)) if s.enabled() && s.ops.as_deref().is_some_and(|o| ops_matches_binary(o, &path.to_string_lossy())))
    }

    /// Why the scheduler this session started is no longer in charge, if it is not.
    pub fn scheduler_gone(&self) -> Option<String> {
        let c = self.sched_child.as_ref()?;
        let alive = crate::child::group_alive(c.pid);
        if alive && self.sched_attached(&c.path) {
            return None;
        }
        Some(format!(
            "{} ({}) {}; the kernel says {}; {}",
            c.name,
            c.pid,
            if alive {
                "runs but is no longer attached (ejected by the kernel: watchdog or error exit)"
            } else {
                "exited"
            },
            self.sched_state(),
            if alive {
                log_tail(&c.log)
            } else {
                c.tail_after_exit()
            }
        ))
    }

    /// Set the `scheduler` knob (called by the one write path after its checks).
    pub(super) fn write_scheduler(
        &mut self,
        knob: &Knob,
        value: &str,
        action: KnobAction,
        label: Option<&str>,
    ) -> Result<Change, KnobError> {
        let old = self.read_current(knob)?;
        let change = Change {
            id: knob.id.clone(),
            old: old.clone(),
            new: value.to_string(),
        };
        let root_dir = self.registry.root().root().to_path_buf();
        self.sched_reap();
        if old == value {
            if action == KnobAction::Restore {
                self.journal.remove(&root_dir, ID)?;
            }
            if action != KnobAction::Restore {
                self.written.insert(knob.id.clone(), old);
            }
            return Ok(change);
        }
        let ours = self
            .sched_child
            .as_mut()
            .is_some_and(|c| c.name == old && c.running());
        if old != EEVDF && !ours {
            return Err(KnobError::Refused(format!(
                "{ID}: {old} runs and llctop did not start it: llctop never stops a scheduler it did not start (stop it where it was started, then set {ID} again)"
            )));
        }
        self.owners
            .acquire(&root_dir, ID)
            .map_err(KnobError::Busy)?;
        self.originals
            .entry(ID.to_string())
            .or_insert_with(|| old.clone());
        if !self.touched.iter().any(|t| t == ID) {
            self.touched.push(ID.to_string());
        }
        let mut written = Vec::new();
        if ours {
            self.sched_stop()?;
            written.push(format!("stop {old}"));
        }
        if value != EEVDF {
            written.push(self.sched_start(value)?);
        }
        let read = self.read_current(knob)?;
        self.events.push(KnobEvent {
            id: knob.id.clone(),
            path: knob.path.clone(),
            action,
            old,
            new: value.to_string(),
            written: written.join("; "),
            read_back: read.clone(),
            unix_ns: crate::clock::unix_ns(),
            mono_ns: crate::clock::mono_ns(),
            label: label.map(str::to_string),
        });
        if let Some(k) = self.registry.knobs.iter_mut().find(|k| k.id == ID) {
            k.value = Some(read.clone());
        }
        if read != value {
            return Err(KnobError::ReadBack {
                path: knob.path.clone(),
                wrote: written.join("; "),
                read,
            });
        }
        self.written.insert(ID.to_string(), read.clone());
        self.release_if_home(ID, &read);
        Ok(change)
    }

    /// Start the scheduler `name`; `Ok` once the kernel runs it, with what was run.
    fn sched_start(&mut self, name: &str) -> Result<String, KnobError> {
        let bin = self
            .registry
            .schedulers
            .iter()
            .find(|b| b.name == name)
            .cloned()
            .ok_or_else(|| KnobError::NotFound(format!("{ID}: no scheduler {name} here")))?;
        let cmdline = std::iter::once(bin.path.display().to_string())
            .chain(bin.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let log = self
            .journal
            .path()
            .with_file_name(format!("scheduler-{}.log", std::process::id()));
        let write_err = |cause: String| KnobError::Write {
            path: bin.path.clone(),
            written: format!("start {cmdline}"),
            cause,
        };
        let file = create_log(&log).map_err(|e| write_err(format!("{}: {e}", log.display())))?;
        let kept = self.opts.keep_changes;
        // Its output: through a pipe llctop copies to the log, capped and rotated — or,
        // kept past llctop's end, straight to the file (no llctop will read a pipe).
        let (out, err, pump) = if kept {
            let err = file.try_clone().map_err(|e| write_err(e.to_string()))?;
            (Stdio::from(file), Stdio::from(err), None)
        } else {
            let (r, w) = std::io::pipe().map_err(|e| write_err(e.to_string()))?;
            let w2 = w.try_clone().map_err(|e| write_err(e.to_string()))?;
            (Stdio::from(w), Stdio::from(w2), Some((r, file)))
        };
        // Its own process group (the terminal's ^C reaches llctop, which stops it in
        // order), the stop signals at their defaults, and — unless kept — stopped when
        // llctop dies (child.rs).
        let child = {
            let mut cmd = Command::new(&bin.path);
            cmd.args(&bin.args)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            let on_death = if kept {
                crate::child::OnParentDeath::Keep
            } else {
                crate::child::OnParentDeath::Term
            };
            crate::child::prepare(&mut cmd, on_death, None);
            cmd.spawn()
                .map_err(|e| write_err(format!("cannot run it: {e}")))?
        };
        // The pipe's writing ends went with `cmd`: the pump sees its end when the
        // scheduler's group has closed them all.
        let (pump_done, pump) = match pump {
            Some((r, file)) => {
                let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (d, l) = (std::sync::Arc::clone(&done), log.clone());
                let thread = std::thread::Builder::new()
                    .name("llctop-sched-log".into())
                    .spawn(move || pump_log(r, l, file, d))
                    .ok();
                (Some(done), thread)
            }
            None => (None, None),
        };
        let pid = child.id();
        let ticks = start_ticks(pid).unwrap_or(0);
        let root = self.registry.root().root().to_path_buf();
        let journaled = self.journal.record(Entry {
            root,
            id: ID.into(),
            path: bin.path.clone(),
            original: EEVDF.into(),
            restore_bytes: stop_bytes(pid, ticks),
            changed_unix_ns: crate::clock::unix_ns(),
            pid: std::process::id(),
            kept: self.opts.keep_changes,
        });
        self.sched_child = Some(Started {
            name: bin.name.clone(),
            path: bin.path.clone(),
            pid,
            start_ticks: ticks,
            log: log.clone(),
            child,
            pump_done,
            pump,
        });
        self.registry.sched_started = Some(bin.name.clone());
        if let Err(e) = journaled {
            let _ = self.sched_stop();
            return Err(e.into());
        }
        let limit = self.sched_limit;
        let t0 = Instant::now();
        loop {
            if self.sched_attached(&bin.path) {
                return Ok(format!("start {cmdline} (pid {pid})"));
            }
            let exited = self
                .sched_child
                .as_mut()
                .and_then(|c| c.child.try_wait().ok().flatten());
            // A first process that exited is not the end while its group lives (it
            // forked: the scheduler may still attach).
            let exited = exited.filter(|_| !crate::child::group_alive(pid));
            if let Some(status) = exited {
                let tail = self
                    .sched_child
                    .as_ref()
                    .map_or_else(|| log_tail(&log), Started::tail_after_exit);
                let state = self.sched_state();
                let _ = self.sched_stop();
                return Err(write_err(format!(
                    "it exited ({status}) before the kernel ran it ({state}): not a sched_ext scheduler, or the kernel refused it; {tail}"
                )));
            }
            if t0.elapsed() >= limit {
                let (state, tail) = (self.sched_state(), log_tail(&log));
                let _ = self.sched_stop();
                return Err(write_err(format!(
                    "not attached within {:.1} s ({state}): not a sched_ext scheduler, or stuck loading; stopped; {tail}",
                    limit.as_secs_f64()
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Forget a started scheduler that has exited (ejected, crashed): its journal entry
    /// goes, the knob reads what the kernel says. One whose first process exited while
    /// its group still runs the kernel's scheduler (it forked) is still in charge.
    pub(super) fn sched_reap(&mut self) {
        let gone = self.sched_child.as_mut().is_some_and(|c| !c.running());
        if gone {
            let _ = self.sched_stop();
        }
    }

    /// Stop the scheduler this session started: its whole process group, SIGINT, then
    /// SIGTERM, then SIGKILL, each given [`STOP`]; then wait for the kernel to let it go.
    /// The journal entry and the log go.
    pub(super) fn sched_stop(&mut self) -> Result<(), KnobError> {
        let Some(mut c) = self.sched_child.take() else {
            return Ok(());
        };
        self.registry.sched_started = None;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
            if !c.running() {
                break;
            }
            crate::child::signal_group(c.pid, sig);
            let t0 = Instant::now();
            while t0.elapsed() < STOP && c.running() {
                std::thread::sleep(POLL);
            }
        }
        let _ = c.child.wait();
        if let Some(d) = &c.pump_done {
            d.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let res = self.sched_forget(&c.path);
        if res.is_ok() {
            remove_log(&c.log);
        }
        res
    }

    /// After the process ended: wait for the kernel to drop its scheduler, then drop the
    /// journal entry and the ownership.
    fn sched_forget(&mut self, path: &Path) -> Result<(), KnobError> {
        let t0 = Instant::now();
        while self.sched_attached(path) && t0.elapsed() < STOP {
            std::thread::sleep(POLL);
        }
        if self.sched_attached(path) {
            return Err(KnobError::Refused(format!(
                "{ID}: {} ended but the kernel still runs its scheduler ({})",
                path.display(),
                self.sched_state()
            )));
        }
        let root = self.registry.root().root().to_path_buf();
        self.journal.remove(&root, ID)?;
        Ok(())
    }

    /// `llctop knobs restore` (or the next run) for a scheduler a killed llctop started:
    /// the journaled process is stopped if it is still that process (same start time);
    /// a pid reused by another program, or a scheduler someone else started, is left.
    pub(super) fn scheduler_restore(&mut self, entry: &Entry) -> Result<(), KnobError> {
        let Some((pid, ticks)) = parse_stop(&entry.restore_bytes) else {
            return Err(KnobError::Refused(format!(
                "{ID}: journal entry {:?} is not a scheduler llctop started",
                entry.restore_bytes
            )));
        };
        let knob = self.registry.get(ID).cloned();
        let before = knob.as_ref().and_then(|k| self.registry.read_value(k).ok());
        // Its group: the first process, or what it forked (same group, started no earlier).
        let ours = group_started_since(pid, ticks);
        if ours {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
                crate::child::signal_group(pid, sig);
                let t0 = Instant::now();
                while t0.elapsed() < STOP && group_started_since(pid, ticks) {
                    std::thread::sleep(POLL);
                }
                if !group_started_since(pid, ticks) {
                    break;
                }
            }
        }
        self.sched_forget(&entry.path)?;
        remove_log(
            &self
                .journal
                .path()
                .with_file_name(format!("scheduler-{}.log", entry.pid)),
        );
        let root = self.registry.root().root().to_path_buf();
        self.owners.release(&root, ID);
        let after = knob.as_ref().and_then(|k| self.registry.read_value(k).ok());
        if let (Some(k), Some(old), Some(new)) = (knob, before, after)
            && old != new
        {
            self.events.push(KnobEvent {
                id: ID.into(),
                path: k.path,
                action: KnobAction::Restore,
                old,
                new: new.clone(),
                written: format!("stop pid {pid} ({})", entry.path.display()),
                read_back: new,
                unix_ns: crate::clock::unix_ns(),
                mono_ns: crate::clock::mono_ns(),
                label: None,
            });
        } else if !ours {
            self.notes.push(format!(
                "{ID}: the scheduler a killed llctop started (pid {pid}) is gone; nothing stopped"
            ));
        }
        Ok(())
    }
}

/// Whether a journal id is the scheduler's (a process to stop, not a file to write).
pub fn is_scheduler_id(id: &str) -> bool {
    id == ID
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_tail_has_no_terminal_escapes() {
        assert_eq!(
            strip_ansi("\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m libbpf: x"),
            "2026  INFO libbpf: x"
        );
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("l");
        std::fs::write(&log, "a\n\n\u{1b}[31mEXIT: stall\u{1b}[0m\nb\nc\n").unwrap();
        assert!(
            log_tail(&log).ends_with("ends: EXIT: stall | b | c"),
            "{}",
            log_tail(&log)
        );
    }

    #[test]
    fn the_journal_names_the_process_exactly() {
        assert_eq!(parse_stop(&stop_bytes(42, 7)), Some((42, 7)));
        assert_eq!(parse_stop("umount"), None);
        assert_eq!(parse_stop("stop pid=x start=1"), None);
        // This process is alive with its own start time; a made-up one is not it.
        let me = std::process::id();
        let t = start_ticks(me).unwrap();
        assert!(start_ticks(me) == Some(t) && start_ticks(u32::MAX / 2).is_none());
    }
}
