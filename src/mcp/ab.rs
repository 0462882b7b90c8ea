//! `llctop mcp`'s `ab` tool: a guarded knob experiment with a verdict. It writes a kernel
//! knob, so it runs only when the server was started with `--allow-writes`; otherwise it
//! is refused with the reason. It runs `llctop ab` itself (helper.rs: this binary, the
//! server's global options, one helper at a time): the same runner, journal, per-knob
//! lock and restore as the command. A client never names a program: `command` is the name
//! of an entry of the config's `[mcp.commands]` (mcp/config.rs), run as the configured
//! user (never root) and stopped past the configured timeout. Each measured window is an
//! MCP progress notification; a client that cancels, or disconnects (the server then
//! ends), stops it with SIGTERM — on which `llctop ab` restores the knob and reads it back
//! — and is waited for.

use std::collections::VecDeque;
use std::ffi::OsString;

use rmcp::model::{CallToolResult, ContentBlock as Content, ProgressNotificationParam, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::helper::{self, Helpers};

/// Bounds of an experiment a client may ask for.
pub const MAX_WINDOW_S: u64 = 600;
pub const MAX_ROUNDS: u32 = 20;
/// The verdict JSON `llctop ab` prints, at most.
const MAX_JSON: usize = 4 << 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbIn {
    /// A knob id (`llctop knobs list`), e.g. "numa_balancing", "relax_domain_level"; or
    /// "colocate" with a command: a and b "off" (where the scheduler puts it) or "llcN"
    /// (the command on that LLC's CPUs) — the test of a candidate group.
    pub knob: String,
    /// Value A (e.g. the value now).
    pub a: String,
    /// Value B.
    pub b: String,
    /// Seconds measured per window (1–600, default 10).
    pub window: Option<u64>,
    /// Windows per value (1–20, default 3).
    pub rounds: Option<u32>,
    /// A command to run in each window, by the name the server's operator gave it
    /// (config.toml's [mcp.commands]; the error lists them): its wall time and exit
    /// status become metrics.
    pub command: Option<String>,
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
        "A/B-test a kernel knob: flip it between A and B for ROUNDS windows each (with, by name, one of the commands the server's operator allowed per window), measure every window, give a verdict per metric; the knob is restored and read back at the end. Writes a kernel knob: only on a server started with --allow-writes.",
        rmcp::handler::server::common::schema_for_type::<AbIn>(),
    )
    .with_raw_output_schema(rmcp::handler::server::common::schema_for_output::<AbOut>())
}

fn refused(text: String) -> CallToolResult {
    CallToolResult::error(vec![Content::text(crate::text::guard(&text).into_owned())])
}

fn plain(s: &str, what: &str) -> Result<(), CallToolResult> {
    let ok = !s.is_empty()
        && s.len() <= 256
        && s.chars()
            .all(|c| c.is_ascii_graphic() && c != ',' && c != '=');
    if ok {
        Ok(())
    } else {
        Err(refused(format!(
            "ab: {what} {s:?}: printable ASCII without ',' or '=', at most 256 characters"
        )))
    }
}

/// `llctop ab`'s arguments for `p` (checked): the knob, the windows, and the allowed
/// command with its user and timeout.
fn args_for(
    h: &Helpers,
    p: &AbIn,
    path: &std::path::Path,
) -> Result<Vec<OsString>, CallToolResult> {
    plain(&p.knob, "knob")?;
    plain(&p.a, "value a")?;
    plain(&p.b, "value b")?;
    let window = p.window.unwrap_or(10);
    let rounds = p.rounds.unwrap_or(3);
    if window == 0 || window > MAX_WINDOW_S || rounds == 0 || rounds > MAX_ROUNDS {
        return Err(refused(format!(
            "ab: window 1–{MAX_WINDOW_S} s and rounds 1–{MAX_ROUNDS}, not {window} s and {rounds}"
        )));
    }
    let mut a: Vec<OsString> = vec![
        "ab".into(),
        format!("{}={},{}", p.knob, p.a, p.b).into(),
        "--window".into(),
        format!("{window}s").into(),
        "--rounds".into(),
        rounds.to_string().into(),
        "--json".into(),
        "-o".into(),
        path.as_os_str().to_owned(),
    ];
    if let Some(name) = &p.command {
        let names: Vec<&str> = h.config.commands.keys().map(String::as_str).collect();
        let Some(c) = h.config.commands.get(name) else {
            return Err(refused(if names.is_empty() {
                format!(
                    "ab: no command {name:?}: this server allows none (its operator lists the commands a client may run in config.toml's [mcp.commands]); call ab without command"
                )
            } else {
                format!(
                    "ab: no command {name:?}; this server allows: {}",
                    names.join(", ")
                )
            }));
        };
        let Some(user) = &h.config.user else {
            return Err(refused(
                "ab: the server has no [mcp] user to run commands as".into(),
            ));
        };
        a.extend([
            "--user".into(),
            user.name.clone().into(),
            "--timeout".into(),
            format!("{}s", h.config.timeout.as_secs().max(1)).into(),
            "--".into(),
            c.program.as_os_str().to_owned(),
        ]);
        a.extend(c.args.iter().map(OsString::from));
    }
    Ok(a)
}

pub async fn run(
    h: &Helpers,
    p: AbIn,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    if !h.allow_writes {
        return Ok(refused(
            "ab writes a kernel knob: this server is read-only (start it with `llctop mcp --allow-writes` to allow guarded experiments; every write is journaled and restored)".into(),
        ));
    }
    let path = match h.store.new_file("ab", "jsonl.gz") {
        Ok(p) => p,
        Err(e) => return Ok(refused(format!("ab: {e}"))),
    };
    let args = match args_for(h, &p, &path) {
        Ok(a) => a,
        Err(r) => return Ok(r),
    };
    let _slot = match h.slot("ab") {
        Ok(s) => s,
        Err(e) => return Ok(refused(format!("ab: {e}"))),
    };
    let mut child = match h.spawn(&args) {
        Ok(c) => c,
        Err(e) => return Err(ErrorData::internal_error(e, None)),
    };
    let pid = child.id().unwrap_or(0);
    let token = ctx.meta.get_progress_token();
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        helper::stop(pid);
        return Err(ErrorData::internal_error(
            "ab: no pipes to the experiment",
            None,
        ));
    };
    let stdout = tokio::spawn(helper::bounded(out, MAX_JSON));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reader = tokio::spawn(helper::lines(err, move |l| {
        let _ = tx.send(l);
    }));
    let mut log: VecDeque<String> = VecDeque::new();
    let total = f64::from(p.rounds.unwrap_or(3)) * 2.0;
    let mut measured = 0.0;
    let mut cancelled = false;
    loop {
        tokio::select! {
            l = rx.recv() => match l {
                Some(l) => {
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
                    log.push_back(l);
                    if log.len() > helper::TAIL_LINES {
                        log.pop_front();
                    }
                }
                None => break,
            },
            _ = ctx.ct.cancelled(), if !cancelled => {
                cancelled = true;
                helper::stop(pid);
            }
        }
    }
    let _ = reader.await;
    let status = child.wait().await;
    h.forget(pid);
    let (out, over) = stdout.await.unwrap_or_default();
    let tail = helper::tail(&log, 12);
    if cancelled {
        return Ok(refused(format!(
            "ab cancelled: the experiment was stopped and its knob restored\n{tail}"
        )));
    }
    let code = status.map(|s| s.code()).ok().flatten();
    let parsed: Option<serde_json::Value> =
        (!over).then(|| serde_json::from_slice(&out).ok()).flatten();
    let (Some(v), Some(0)) = (parsed, code) else {
        return Ok(refused(format!(
            "llctop ab exited {}:\n{tail}",
            code.map_or("on a signal".into(), |c| c.to_string())
        )));
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
    h.store.prune();
    let res = AbOut {
        path: path.display().to_string(),
        experiment: exp,
        verdict,
    };
    let value =
        serde_json::to_value(&res).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(super::reply::result(
        value,
        crate::text::guard(&text).into_owned(),
    ))
}
