//! A Perfetto trace beside the TUI: `T` starts `llctop trace` (this same llctop, at the
//! TUI's interval, for at most [`MAX`]) to `llctop-<UTC time>.pftrace` in `record_dir`,
//! `T` again stops it (SIGINT: the file is finished whole). The header shows it running;
//! its last line (the summary, or why it failed) is said when it ends. It is its own
//! process with its own BPF programs: the TUI's collector is not touched.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{App, Effect, Level};

/// The longest trace `T` starts (a trace grows by megabytes a second on a busy machine).
pub const MAX: Duration = Duration::from_secs(60);

/// A running trace.
pub struct Tracer {
    pub path: PathBuf,
    pub started: Instant,
    child: Child,
    /// Its stderr (the TUI owns the terminal).
    log: PathBuf,
}

impl Tracer {
    /// The last line it wrote (its summary, or its error), but for the note that a signal
    /// stopped it (the `T` that stopped it).
    fn last_line(&self) -> String {
        std::fs::File::open(&self.log)
            .map(|f| {
                BufReader::new(f)
                    .lines()
                    .map_while(Result::ok)
                    .filter(|l| !l.trim().is_empty() && !l.contains("stopped by signal"))
                    .last()
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    }

    /// Stop it (SIGINT, then SIGKILL after 5 s) and wait for it.
    fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill(2) of our own child.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
            let t = Instant::now();
            while matches!(self.child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl App {
    pub(super) fn toggle_trace(&mut self) {
        if self.replay.is_some() {
            self.say(Level::Warn, "replay: nothing live to trace (llctop export --perfetto turns a recording into a trace)");
        } else if self.tracing.is_some() {
            self.effect(Effect::StopTrace);
        } else {
            self.effect(Effect::StartTrace);
        }
    }

    pub(super) fn start_trace(&mut self) {
        let path = self.record_dir.join(format!(
            "llctop-{}.pftrace",
            crate::clock::utc_stamp(crate::clock::unix_ns() / 1_000_000_000)
        ));
        let mut log = path.clone().into_os_string();
        log.push(".log");
        let log = PathBuf::from(log);
        let spawned = std::env::current_exe().and_then(|exe| {
            let err = crate::output::Output::create(&log, &[], crate::output::Wait::default())
                .and_then(crate::output::Output::into_file)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", log.display())))?;
            let mut cmd = Command::new(exe);
            // Stopped with the TUI whatever ends it (SIGTERM: it finishes its file).
            crate::child::prepare(&mut cmd, crate::child::OnParentDeath::Term, None);
            cmd.arg("--interval")
                .arg(humantime::format_duration(self.interval).to_string())
                .args(["trace", "--duration"])
                .arg(humantime::format_duration(MAX).to_string())
                .arg("-o")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
        });
        match spawned {
            Ok(child) => {
                self.say(
                    Level::Good,
                    format!(
                        "tracing to {} ({} s at most; T stops)",
                        path.display(),
                        MAX.as_secs()
                    ),
                );
                self.tracing = Some(Tracer {
                    path,
                    started: Instant::now(),
                    child,
                    log,
                });
            }
            Err(e) => self.say(Level::Bad, format!("cannot start llctop trace: {e}")),
        }
    }

    pub(super) fn stop_trace(&mut self) {
        if let Some(mut t) = self.tracing.take() {
            t.stop();
            self.trace_ended(&t);
        }
    }

    /// At each live snapshot: a trace that ended by itself (its duration, an error) is said.
    pub(super) fn poll_trace(&mut self) {
        let ended = self
            .tracing
            .as_mut()
            .is_some_and(|t| !matches!(t.child.try_wait(), Ok(None)));
        if ended && let Some(t) = self.tracing.take() {
            self.trace_ended(&t);
        }
    }

    fn trace_ended(&mut self, t: &Tracer) {
        let line = t.last_line();
        let line = line.strip_prefix("llctop: ").unwrap_or(&line).to_string();
        let bad = !line.starts_with("trace ");
        self.say(
            if bad { Level::Bad } else { Level::Good },
            if line.is_empty() {
                format!("trace {} ended", t.path.display())
            } else {
                line
            },
        );
    }
}
