//! `explain`'s source: docs/metrics.md and docs/advisor.md compiled in, as the TUI's help
//! view compiles the former — every figure is defined once, there. A lookup returns the
//! table rows whose first cell names the term (a metric, a field, a finding kind or a
//! threshold constant), each with the section it sits in.

use schemars::JsonSchema;
use serde::Serialize;

const METRICS: &str = include_str!("../../docs/metrics.md");
const ADVISOR: &str = include_str!("../../docs/advisor.md");

/// Rows returned at most.
pub const MAX_ROWS: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Definition {
    /// `docs/metrics.md` or `docs/advisor.md`.
    pub doc: String,
    /// The heading the row is under.
    pub section: String,
    /// The table's column names.
    pub columns: Vec<String>,
    /// The row's cells (Markdown, backticks removed).
    pub cells: Vec<String>,
}

/// Every table row of the two documents, with its section and columns.
fn rows() -> &'static [Definition] {
    static ROWS: std::sync::OnceLock<Vec<Definition>> = std::sync::OnceLock::new();
    ROWS.get_or_init(|| {
        let mut out = Vec::new();
        for (doc, text) in [("docs/metrics.md", METRICS), ("docs/advisor.md", ADVISOR)] {
            let mut section = String::new();
            let mut columns: Option<Vec<String>> = None;
            let mut lines = text.lines().peekable();
            while let Some(l) = lines.next() {
                if let Some(h) = l.strip_prefix('#') {
                    section = h.trim_start_matches('#').trim().to_string();
                    columns = None;
                } else if l.starts_with('|') {
                    if l.starts_with("|---") || l.starts_with("| ---") {
                        continue;
                    }
                    match &columns {
                        None if lines.peek().is_some_and(|n| n.starts_with("|-")) => {
                            columns = Some(crate::markdown::cells(l));
                        }
                        None => {}
                        Some(c) => out.push(Definition {
                            doc: doc.into(),
                            section: section.clone(),
                            columns: c.clone(),
                            cells: crate::markdown::cells(l),
                        }),
                    }
                } else {
                    columns = None;
                }
            }
        }
        out
    })
}

/// The rows whose first cell contains `term` (case-insensitive; `_`, `-` and spaces alike),
/// exact matches first; at most [`MAX_ROWS`], and whether more matched.
pub fn lookup(term: &str) -> (Vec<Definition>, bool) {
    let norm = |s: &str| s.to_lowercase().replace(['_', '-'], " ");
    let t = norm(term.trim());
    if t.is_empty() {
        return (Vec::new(), false);
    }
    let mut hits: Vec<(bool, &Definition)> = rows()
        .iter()
        .filter_map(|d| {
            let first = norm(d.cells.first()?);
            first.contains(&t).then_some((first == t, d))
        })
        .collect();
    hits.sort_by_key(|(exact, _)| !exact);
    let more = hits.len() > MAX_ROWS;
    (
        hits.into_iter()
            .take(MAX_ROWS)
            .map(|(_, d)| d.clone())
            .collect(),
        more,
    )
}

/// Every table row (the `metrics` resource).
pub fn all() -> &'static [Definition] {
    rows()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_and_a_finding_are_found_with_their_sections() {
        let (r, _) = lookup("llctop_finding_active");
        assert!(!r.is_empty());
        assert!(r[0].cells[0].contains("llctop_finding_active"), "{r:?}");
        let (r, _) = lookup("placement pile-up");
        assert!(
            r.iter()
                .any(|d| d.doc == "docs/metrics.md" && d.section == "Findings"),
            "{r:?}"
        );
        let (r, _) = lookup("NEWIDLE_WARNING_COLD_SHARE");
        assert!(r.iter().any(|d| d.doc == "docs/advisor.md"), "{r:?}");
        assert_eq!(lookup("  ").0, vec![]);
        assert_eq!(lookup("no such figure anywhere").0, vec![]);
        assert!(all().len() > 100, "{}", all().len());
    }
}
