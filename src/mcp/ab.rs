//! `llctop mcp`'s `ab` tool: a guarded knob experiment with a verdict. It writes a kernel
//! knob, so it runs only when the server was started with `--allow-writes`; otherwise it
//! is refused with the reason. It runs `llctop ab` itself (this binary, the server's own
//! global options): the same runner, journal, per-knob lock and restore as the command.
//! Each measured window is an MCP progress notification; a client that cancels, or
//! disconnects (the server then ends), stops it with SIGTERM — on which `llctop ab`
//! restores the knob and reads it back — and is waited for.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock as Content, ProgressNotificationParam, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Bounds of an experiment a client may ask for.
pub const MAX_WINDOW_S: u64 = 600;
pub const MAX_ROUNDS: u32 = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbIn {
    /// A knob id (`llctop knobs list`), e.g. "numa_balancing", "relax_domain_level".
    pub knob: String,
    /// Value A (e.g. the value now).
    pub a: String,
    /// Value B.
    pub b: String,
    /// Seconds measured per window (1–600, default 10).
    pub window: Option<u64>,
    /// Windows per value (1–20, default 3).
    pub rounds: Option<u32>,
    /// A command to run in each window (its wall time and exit status become metrics).
    pub command: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AbOut {
    /// The experiment recording (`compare` reads it).
    pub path: String,
    /// What was compared (docs/experiments.md).
    pub experiment: serde_json::Value,
    /// Per metric: medians, intervals and the call (better, worse, no change, noise).
    pub verdict: serde_json::Value,
}

pub fn tool() -> Tool {
    Tool::new(
        "ab",
        "A/B-test a kernel knob: flip it between A and B for ROUNDS windows each (a command per window if given), measure every window, give a verdict per metric; the knob is restored and read back at the end. Writes a kernel knob: only on a server started with --allow-writes.",
        rmcp::handler::server::common::schema_for_type::<AbIn>(),
    )
    .with_raw_output_schema(rmcp::handler::server::common::schema_for_output::<AbOut>())
}

/// The running experiments' process ids: the server's end stops them.
pub type Children = Arc<Mutex<Vec<u32>>>;

pub struct Ab {
    pub allow_writes: bool,
    /// This binary and the global options the server was started with.
    pub exe: PathBuf,
    pub global: Vec<String>,
    pub dir: PathBuf,
    pub children: Children,
}

/// SIGTERM: `llctop ab` restores its knobs and exits.
pub fn stop(pid: u32) {
    if let Ok(p) = i32::try_from(pid) {
        // SAFETY: kill(2) with a pid we spawned and a signal number.
        unsafe {
            libc::kill(p, libc::SIGTERM);
        }
    }
}

fn plain(s: &str, what: &str) -> Result<(), ErrorData> {
    let ok = !s.is_empty()
        && s.len() <= 256
        && s.chars()
            .all(|c| c.is_ascii_graphic() && c != ',' && c != '=');
    if ok {
        Ok(())
    } else {
        Err(ErrorData::invalid_params(
            format!("ab: {what} {s:?}: printable ASCII without ',' or '=', at most 256 characters"),
            None,
        ))
    }
}

impl Ab {
    pub async fn run(
        &self,
        p: AbIn,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if !self.allow_writes {
            return Ok(CallToolResult::error(vec![Content::text(
                "ab writes a kernel knob: this server is read-only (start it with `llctop mcp --allow-writes` to allow guarded experiments; every write is journaled and restored)",
            )]));
        }
        plain(&p.knob, "knob")?;
        plain(&p.a, "value a")?;
        plain(&p.b, "value b")?;
        let window = p.window.unwrap_or(10);
        let rounds = p.rounds.unwrap_or(3);
        if window == 0 || window > MAX_WINDOW_S || rounds == 0 || rounds > MAX_ROUNDS {
            return Err(ErrorData::invalid_params(
                format!(
                    "ab: window 1–{MAX_WINDOW_S} s and rounds 1–{MAX_ROUNDS}, not {window} s and {rounds}"
                ),
                None,
            ));
        }
        let path = super::reply::new_file(&self.dir, "ab", "jsonl.gz")?;
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(&self.global)
            .arg("ab")
            .arg(format!("{}={},{}", p.knob, p.a, p.b))
            .args([
                "--window",
                &format!("{window}s"),
                "--rounds",
                &rounds.to_string(),
                "--json",
                "-o",
            ])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(c) = p.command.as_ref().filter(|c| !c.is_empty()) {
            cmd.arg("--").args(c);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ErrorData::internal_error(format!("{}: {e}", self.exe.display()), None))?;
        let pid = child.id().unwrap_or(0);
        if let Ok(mut c) = self.children.lock() {
            c.push(pid);
        }
        let token = ctx.meta.get_progress_token();
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            stop(pid);
            return Err(ErrorData::internal_error(
                "ab: no pipes to the experiment",
                None,
            ));
        };
        let stdout = tokio::spawn(async move {
            let mut s = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut BufReader::new(out), &mut s).await;
            s
        });
        let mut lines = BufReader::new(err).lines();
        let mut log: Vec<String> = Vec::new();
        let total = f64::from(rounds) * 2.0;
        let mut measured = 0.0;
        let mut cancelled = false;
        loop {
            tokio::select! {
                l = lines.next_line() => match l {
                    Ok(Some(l)) => {
                        if l.contains(" measured: ") {
                            measured += 1.0;
                            if let Some(t) = &token {
                                let _ = ctx.peer.notify_progress(
                                    ProgressNotificationParam::new(t.clone(), measured)
                                        .with_total(total)
                                        .with_message(l.clone()),
                                ).await;
                            }
                        }
                        log.push(l);
                        if log.len() > 200 {
                            log.remove(0);
                        }
                    }
                    _ => break,
                },
                _ = ctx.ct.cancelled(), if !cancelled => {
                    cancelled = true;
                    stop(pid);
                }
            }
        }
        let status = child.wait().await;
        if let Ok(mut c) = self.children.lock() {
            c.retain(|&x| x != pid);
        }
        let out = stdout.await.unwrap_or_default();
        let tail = log
            .iter()
            .rev()
            .take(12)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if cancelled {
            return Ok(CallToolResult::error(vec![Content::text(format!(
                "ab cancelled: the experiment was stopped and its knob restored\n{tail}"
            ))]));
        }
        let code = status.map(|s| s.code()).ok().flatten();
        let parsed: Option<serde_json::Value> = serde_json::from_str(&out).ok();
        let (Some(v), Some(0)) = (parsed, code) else {
            return Ok(CallToolResult::error(vec![Content::text(format!(
                "llctop ab exited {}:\n{tail}",
                code.map_or("on a signal".into(), |c| c.to_string())
            ))]));
        };
        let exp = v.get("experiment").cloned().unwrap_or_default();
        let verdict = v.get("verdict").cloned().unwrap_or_default();
        let text = match (
            serde_json::from_value::<crate::experiment::Experiment>(exp.clone()),
            serde_json::from_value::<crate::experiment::verdict::Verdict>(verdict.clone()),
        ) {
            (Ok(e), Ok(vd)) => crate::experiment::verdict::render(&e, &vd),
            _ => tail,
        };
        let res = AbOut {
            path: path.display().to_string(),
            experiment: exp,
            verdict,
        };
        let value = serde_json::to_value(&res)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(super::reply::result(
            value,
            crate::text::guard(&text).into_owned(),
        ))
    }
}
