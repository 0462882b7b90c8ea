//! What every tool answers with and reads: its arguments decoded (an error names the
//! field), its value and one-line summary as a call's result. Below the tools (tools.rs, ab.rs, files.rs, trace.rs), which use
//! it; it uses none of them.

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

pub fn result(v: serde_json::Value, summary: String) -> CallToolResult {
    let mut r = CallToolResult::structured(v);
    r.content.insert(0, Content::text(summary));
    r
}
