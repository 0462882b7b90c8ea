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
    /// Where to go on: the `next_cursor` of the previous page of this answer.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffIn {
    pub a: String,
    pub b: String,
    /// Where to go on: the `next_cursor` of the previous page of this answer.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ExplainOut {
    pub definitions: Vec<Definition>,
    pub truncated: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TextOut {
    /// One page of the text (at most 64 KiB, whole lines).
    pub text: String,
    /// Its first byte in the whole text, and the whole text's length.
    pub offset: usize,
    pub total: usize,
    /// Call again with `cursor` set to this for the next page; none on the last.
    pub next_cursor: Option<String>,
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

/// The page of `whole` at `cursor`: whole lines, at most [`MAX_TEXT`] bytes (a longer
/// line is cut at a character boundary), and where the next page starts.
fn page(whole: &str, cursor: Option<&str>, what: &str) -> Result<(TextOut, String), ErrorData> {
    let offset: usize = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix("o")
            .and_then(|n| n.parse().ok())
            .filter(|&o: &usize| o <= whole.len() && whole.is_char_boundary(o))
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("{what}: cursor {c:?} is not one this answer gave (its next_cursor)"),
                    None,
                )
            })?,
    };
    let rest = &whole[offset..];
    let mut end = rest.len().min(MAX_TEXT);
    if end < rest.len() {
        // Back to the last whole line; a single line longer than a page is cut.
        end = rest[..end].rfind('\n').map_or_else(
            || {
                let mut e = end;
                while !rest.is_char_boundary(e) {
                    e -= 1;
                }
                e
            },
            |i| i + 1,
        );
    }
    let text = rest[..end].to_string();
    let next = offset + end;
    let head = text.lines().take(3).collect::<Vec<_>>().join("\n");
    let head = if next < whole.len() {
        format!(
            "{head}\n… page {}–{} of {} bytes; next_cursor continues",
            offset,
            next,
            whole.len()
        )
    } else {
        head
    };
    Ok((
        TextOut {
            text,
            offset,
            total: whole.len(),
            next_cursor: (next < whole.len()).then(|| format!("o{next}")),
        },
        head,
    ))
}

fn text(t: String, cursor: Option<&str>, what: &str) -> Outcome {
    let t = crate::text::guard(&t).into_owned();
    let (out, head) = page(&t, cursor, what)?;
    Ok((value(&out)?, head))
}

pub fn report(store: &Store, p: PathIn) -> Outcome {
    let rec = open(store, &p.path)?;
    text(
        crate::record::report::render(&rec),
        p.cursor.as_deref(),
        "report",
    )
}

pub fn diff(store: &Store, p: DiffIn) -> Outcome {
    let (a, b) = (open(store, &p.a)?, open(store, &p.b)?);
    text(
        crate::record::diff::render(&a, &b),
        p.cursor.as_deref(),
        "diff",
    )
}

pub fn compare(store: &Store, p: PathIn) -> Outcome {
    let rec = open(store, &p.path)?;
    let t = crate::record::report::compare(&rec, false)
        .map_err(|e| ErrorData::invalid_params(format!("{}: {e}", p.path), None))?;
    text(t, p.cursor.as_deref(), "compare")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_come_in_pages_of_whole_lines_that_add_up() {
        let whole: String = (0..20_000)
            .map(|i| format!("line {i} of a long report\n"))
            .collect();
        let mut got = String::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let (p, _) = page(&whole, cursor.as_deref(), "report").unwrap();
            assert!(p.text.len() <= MAX_TEXT);
            assert!(p.text.is_empty() || p.text.ends_with('\n'));
            assert_eq!(p.offset, got.len());
            got.push_str(&p.text);
            pages += 1;
            match p.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(got, whole);
        assert!(pages > 5);
        assert!(page(&whole, Some("o99999999999"), "report").is_err());
        assert!(page(&whole, Some("banana"), "report").is_err());
    }
}
