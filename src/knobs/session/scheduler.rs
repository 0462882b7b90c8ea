//! The session's `scheduler` knob: a sched_ext scheduler set by starting its binary as
//! llctop's child and unset by stopping it — a process, not a file, but under the same
//! rules as every knob write. Refused in a read-only session; owned by one llctop; the
//! child's pid and start time journaled as soon as it exists (so `llctop knobs restore`,
//! or the next run, stops what a killed llctop left running — and only that process);
//! checked (the kernel's `state` must say `enabled` and `root/ops` name it, within a
//! time limit, else it is stopped and the error says why, with the tail of its log);
//! restored when the session ends. A scheduler llctop did not start is never stopped.

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

/// The scheduler this session started.
pub struct Started {
    pub name: String,
    pub path: PathBuf,
    pub pid: u32,
    /// `/proc/PID/stat` starttime (clock ticks since boot): a reused pid is not it.
    pub start_ticks: u64,
    pub log: PathBuf,
    child: Child,
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

fn signal(pid: u32, sig: i32) {
    if let Ok(p) = i32::try_from(pid)
        && p > 0
    {
        // SAFETY: kill(2) of one process id (never 0 or negative: no group).
        unsafe { libc::kill(p, sig) };
    }
}

/// The last few lines of a scheduler's log, one line (why it failed, in its own words:
/// scx schedulers print the kernel's exit reason as `EXIT: …`).
pub fn log_tail(log: &Path) -> String {
    // Only the file's last 4 KiB are read: a scheduler that ran for hours logs a lot.
    let text = {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut buf = Vec::new();
        if let Ok(mut f) = File::open(log) {
            let len = f.metadata().map_or(0, |m| m.len());
            let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
            let _ = f.take(TAIL).read_to_end(&mut buf);
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
        if start_ticks(c.pid) == Some(c.start_ticks) && self.sched_attached(&c.path) {
            return None;
        }
        let alive = start_ticks(c.pid) == Some(c.start_ticks);
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
            log_tail(&c.log)
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
            .as_ref()
            .is_some_and(|c| c.name == old && start_ticks(c.pid) == Some(c.start_ticks));
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
        let out = File::create(&log).map_err(|e| write_err(format!("{}: {e}", log.display())))?;
        let err = out.try_clone().map_err(|e| write_err(e.to_string()))?;
        // Its own process group: the terminal's ^C reaches llctop, which stops it in order.
        // The stop signals at their defaults whatever llctop inherited: a shell starting
        // llctop in the background (`&`) ignores SIGINT for it, and an ignored signal stays
        // ignored across exec (a scheduler that is a script could not trap it).
        let child = {
            use std::os::unix::process::CommandExt as _;
            let mut cmd = Command::new(&bin.path);
            cmd.args(&bin.args)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .process_group(0);
            // SAFETY: between fork and exec only signal(2) runs, which is
            // async-signal-safe, on the child's own dispositions.
            unsafe {
                cmd.pre_exec(|| {
                    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
                        libc::signal(sig, libc::SIG_DFL);
                    }
                    Ok(())
                });
            }
            cmd.spawn()
                .map_err(|e| write_err(format!("cannot run it: {e}")))?
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
            if let Some(status) = exited {
                let state = self.sched_state();
                let _ = self.sched_stop();
                return Err(write_err(format!(
                    "it exited ({status}) before the kernel ran it ({state}): not a sched_ext scheduler, or the kernel refused it; {}",
                    log_tail(&log)
                )));
            }
            if t0.elapsed() >= limit {
                let state = self.sched_state();
                let _ = self.sched_stop();
                return Err(write_err(format!(
                    "not attached within {:.1} s ({state}): not a sched_ext scheduler, or stuck loading; stopped; {}",
                    limit.as_secs_f64(),
                    log_tail(&log)
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Forget a started scheduler that has exited (ejected, crashed): its journal entry
    /// goes, the knob reads what the kernel says.
    pub(super) fn sched_reap(&mut self) {
        let gone = self
            .sched_child
            .as_mut()
            .is_some_and(|c| matches!(c.child.try_wait(), Ok(Some(_))));
        if gone {
            let _ = self.sched_stop();
        }
    }

    /// Stop the scheduler this session started: SIGINT, then SIGTERM, then SIGKILL, each
    /// given [`STOP`]; then wait for the kernel to let it go. The journal entry goes.
    pub(super) fn sched_stop(&mut self) -> Result<(), KnobError> {
        let Some(mut c) = self.sched_child.take() else {
            return Ok(());
        };
        self.registry.sched_started = None;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
            if matches!(c.child.try_wait(), Ok(Some(_))) {
                break;
            }
            signal(c.pid, sig);
            let t0 = Instant::now();
            while t0.elapsed() < STOP && matches!(c.child.try_wait(), Ok(None)) {
                std::thread::sleep(POLL);
            }
        }
        let _ = c.child.wait();
        self.sched_forget(&c.path)
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
        let ours = start_ticks(pid) == Some(ticks);
        if ours {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
                signal(pid, sig);
                let t0 = Instant::now();
                while t0.elapsed() < STOP && start_ticks(pid) == Some(ticks) {
                    std::thread::sleep(POLL);
                }
                if start_ticks(pid) != Some(ticks) {
                    break;
                }
            }
        }
        self.sched_forget(&entry.path)?;
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
