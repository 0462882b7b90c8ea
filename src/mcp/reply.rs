//! What every tool answers with and reads: its arguments decoded (an error names the
//! field), its value and one-line summary as a call's result, and the files the server
//! writes (named by it). Below the tools (tools.rs, ab.rs, files.rs, trace.rs), which use
//! it; it uses none of them.

use std::path::PathBuf;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock as Content, JsonObject};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a tool computes: its structured value and a one-line summary.
pub type Outcome = Result<(serde_json::Value, String), ErrorData>;

/// A tool's arguments as its input type; an error names the field (`n: invalid type…`).
pub fn args<T: DeserializeOwned>(name: &str, a: Option<JsonObject>) -> Result<T, ErrorData> {
    let v = serde_json::Value::Object(a.unwrap_or_default());
    serde_path_to_error::deserialize(v).map_err(|e| {
        let at = e.path().to_string();
        let why = e.into_inner();
        let msg = if at == "." {
            format!("{name}: {why}")
        } else {
            format!("{name}: {at}: {why}")
        };
        ErrorData::invalid_params(msg, None)
    })
}

pub fn value<T: Serialize>(t: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(t).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A new file's path in the server's directory (created if need be), named by the server:
/// `mcp-KIND-MS-PID-N.EXT` — N counts this process's files, so two calls in the same
/// millisecond never share one.
pub fn new_file(dir: &std::path::Path, kind: &str, ext: &str) -> Result<PathBuf, ErrorData> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| ErrorData::internal_error(format!("{}: {e}", dir.display()), None))?;
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(dir.join(format!(
        "mcp-{kind}-{}-{}-{n}.{ext}",
        crate::clock::unix_ns() / 1_000_000,
        std::process::id()
    )))
}

pub fn result(v: serde_json::Value, summary: String) -> CallToolResult {
    let mut r = CallToolResult::structured(v);
    r.content.insert(0, Content::text(summary));
    r
}
