//! `llctop mcp`'s `trace` tool: a Perfetto trace of the next seconds (every switch,
//! waking, migration with its distance and cause, placement; docs/timeline.md), written
//! by `llctop trace` itself (this binary, the server's global options) into the server's
//! directory. It writes no knob, so it needs no `--allow-writes`; a client that cancels
//! stops it (SIGTERM: the trace is finished with what it has).

use std::process::Stdio;

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock as Content, Tool};
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ab::{Ab, stop};

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
    how: &Ab,
    p: TraceIn,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    if p.seconds == 0 || p.seconds > MAX_SECONDS {
        return Err(ErrorData::invalid_params(
            format!("trace: seconds must be 1–{MAX_SECONDS}, not {}", p.seconds),
            None,
        ));
    }
    let path = super::reply::new_file(&how.dir, "trace", "pftrace")?;
    let mut child = tokio::process::Command::new(&how.exe)
        .args(&how.global)
        .args(["trace", "--duration", &format!("{}s", p.seconds), "-o"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ErrorData::internal_error(format!("{}: {e}", how.exe.display()), None))?;
    let pid = child.id().unwrap_or(0);
    if let Ok(mut c) = how.children.lock() {
        c.push(pid);
    }
    let mut err = child.stderr.take();
    let out = tokio::select! {
        s = child.wait() => s,
        _ = ctx.ct.cancelled() => {
            stop(pid);
            child.wait().await
        }
    };
    if let Ok(mut c) = how.children.lock() {
        c.retain(|&x| x != pid);
    }
    let mut log = String::new();
    if let Some(e) = err.as_mut() {
        let _ = tokio::io::AsyncReadExt::read_to_string(e, &mut log).await;
    }
    let tail: String = log
        .lines()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    match out.map(|s| s.code()) {
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
        _ => Ok(CallToolResult::error(vec![Content::text(format!(
            "llctop trace failed:\n{}",
            crate::text::guard(&tail)
        ))])),
    }
}
