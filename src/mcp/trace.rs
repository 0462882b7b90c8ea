//! `llctop mcp`'s `trace` tool: a Perfetto trace of the next seconds (every switch,
//! waking, migration with its distance and cause, placement; docs/timeline.md), written
//! by `llctop trace` itself (helper.rs: this binary, the server's global options, one
//! helper at a time) into the server's directory, whose oldest files go past its size cap
//! (store.rs). It writes no knob, so it needs no `--allow-writes`; a client that cancels
//! stops it (SIGTERM: the trace is finished with what it has).

use std::collections::VecDeque;
use std::ffi::OsString;

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock as Content, Tool};
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::helper::{self, Helpers};

/// The longest trace a client may ask for, seconds (a busy machine writes tens of MB/s).
pub const MAX_SECONDS: u64 = 60;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceIn {
    /// Seconds to trace (1–60).
    pub seconds: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceOut {
    /// The Perfetto trace (open it in ui.perfetto.dev or trace_processor).
    pub path: String,
    pub bytes: u64,
}

pub fn tool() -> Tool {
    Tool::new(
        "trace",
        "Trace the next N seconds (1–60) to a Perfetto file: every context switch, waking, migration (distance, cause) and placement, with llctop's counters, knobs and findings as tracks; returns its path.",
        rmcp::handler::server::common::schema_for_type::<TraceIn>(),
    )
    .with_raw_output_schema(rmcp::handler::server::common::schema_for_output::<TraceOut>())
}

pub async fn run(
    h: &Helpers,
    p: TraceIn,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let refused = |t: String| {
        Ok(CallToolResult::error(vec![Content::text(
            crate::text::guard(&t).into_owned(),
        )]))
    };
    if p.seconds == 0 || p.seconds > MAX_SECONDS {
        return refused(format!(
            "trace: seconds must be 1–{MAX_SECONDS}, not {}",
            p.seconds
        ));
    }
    let _slot = match h.slot("trace") {
        Ok(s) => s,
        Err(e) => return refused(format!("trace: {e}")),
    };
    let path = match h.store.new_file("trace", "pftrace") {
        Ok(p) => p,
        Err(e) => return refused(format!("trace: {e}")),
    };
    let args: Vec<OsString> = vec![
        "trace".into(),
        "--duration".into(),
        format!("{}s", p.seconds).into(),
        "-o".into(),
        path.as_os_str().to_owned(),
    ];
    let mut child = h
        .spawn(&args)
        .map_err(|e| ErrorData::internal_error(e, None))?;
    let pid = child.id().unwrap_or(0);
    let mut log: VecDeque<String> = VecDeque::new();
    if let Some(o) = child.stdout.take() {
        tokio::spawn(helper::bounded(o, 0));
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    if let Some(e) = child.stderr.take() {
        tokio::spawn(helper::lines(e, move |l| {
            let _ = tx.send(l);
        }));
    }
    let mut cancelled = false;
    loop {
        tokio::select! {
            l = rx.recv() => match l {
                Some(l) => {
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
    let status = child.wait().await;
    h.forget(pid);
    h.store.prune();
    let tail = helper::tail(&log, 8);
    match status.map(|s| s.code()) {
        Ok(Some(0)) => {
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let res = TraceOut {
                path: path.display().to_string(),
                bytes,
            };
            let v = serde_json::to_value(&res)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            Ok(super::reply::result(
                v,
                format!(
                    "{} s traced to {} ({bytes} bytes)",
                    p.seconds,
                    path.display()
                ),
            ))
        }
        _ => refused(format!("llctop trace failed:\n{tail}")),
    }
}
