//! `llctop mcp`'s tools over files and the reference: `explain` (docs/metrics.md and
//! docs/advisor.md, [`super::docs`]) and `report`, `diff`, `compare` over recordings a
//! client names — opened as files, bounded in size, their text bounded too.

use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::docs::{self, Definition};
use super::reply::{Outcome, value};
use super::store::Store;

/// Text returned by `report`/`diff`/`compare` at most, bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// The largest recording `report`/`diff`/`compare` read, bytes (compressed or not).
pub const MAX_RECORDING: u64 = 512 << 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainIn {
    /// A metric, field, finding kind or threshold (e.g. "preferred-LLC hit", "rq_wait_ns",
    /// "placement pile-up", "CONSERVE_WARNING_SPARED").
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathIn {
    /// A recording of this server's: a name or path that `record` or `ab` returned (or
    /// one in a directory the server's operator listed).
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffIn {
    pub a: String,
    pub b: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ExplainOut {
    pub definitions: Vec<Definition>,
    pub truncated: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TextOut {
    pub text: String,
    pub truncated: Option<String>,
}

pub fn explain(p: ExplainIn) -> Outcome {
    let (definitions, more) = docs::lookup(&p.name);
    if definitions.is_empty() {
        return Err(ErrorData::invalid_params(
            format!(
                "explain: nothing named {:?} in docs/metrics.md or docs/advisor.md",
                p.name
            ),
            None,
        ));
    }
    let text = definitions
        .iter()
        .take(3)
        .map(|d| format!("{} › {}: {}", d.doc, d.section, d.cells.join(" | ")))
        .collect::<Vec<_>>()
        .join("\n");
    let out = ExplainOut {
        definitions,
        truncated: more.then(|| {
            format!(
                "more than {} rows matched; ask for a longer name",
                docs::MAX_ROWS
            )
        }),
    };
    Ok((value(&out)?, text))
}

/// A recording the client named, among the server's (store.rs): a file of at most
/// [`MAX_RECORDING`], read whole. A name the store does not resolve gets one answer,
/// whatever is or is not at that path.
fn open(store: &Store, p: &str) -> Result<crate::record::reader::Recording, ErrorData> {
    let path = store
        .resolve(p)
        .ok_or_else(|| ErrorData::invalid_params(store.not_found(p), None))?;
    let path = path.as_path();
    let meta =
        std::fs::metadata(path).map_err(|_| ErrorData::invalid_params(store.not_found(p), None))?;
    if meta.len() > MAX_RECORDING {
        return Err(ErrorData::invalid_params(
            format!(
                "{p}: {} bytes, more than the {MAX_RECORDING} read here (llctop report reads it as a stream)",
                meta.len()
            ),
            None,
        ));
    }
    crate::record::reader::open(path).map_err(|e| {
        ErrorData::invalid_params(format!("{p}: not a recording llctop can read: {e}"), None)
    })
}

fn text(t: String, what: &str) -> Outcome {
    let mut t = crate::text::guard(&t).into_owned();
    let truncated = (t.len() > MAX_TEXT).then(|| {
        let mut cut = MAX_TEXT;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        let n = t.len();
        t.truncate(cut);
        format!("{what}: {n} bytes, cut to {cut}")
    });
    let head = t.lines().take(3).collect::<Vec<_>>().join("\n");
    Ok((value(&TextOut { text: t, truncated })?, head))
}

pub fn report(store: &Store, p: PathIn) -> Outcome {
    let rec = open(store, &p.path)?;
    text(crate::record::report::render(&rec), "report")
}

pub fn diff(store: &Store, p: DiffIn) -> Outcome {
    let (a, b) = (open(store, &p.a)?, open(store, &p.b)?);
    text(crate::record::diff::render(&a, &b), "diff")
}

pub fn compare(store: &Store, p: PathIn) -> Outcome {
    let rec = open(store, &p.path)?;
    let t = crate::record::report::compare(&rec, false)
        .map_err(|e| ErrorData::invalid_params(format!("{}: {e}", p.path), None))?;
    text(t, "compare")
}
