//! `llctop report --html`, `report --compare --html`, `diff --html`: one self-contained
//! page per recording (inline SVG and CSS; no script, font or image fetched from anywhere,
//! so it opens from a mail attachment), drawn from the same fold as the text report
//! ([`super::summary::Summary`], one pass). The page embeds the figures it drew as JSON
//! (`<script type="application/json" id="llctop-data">`, never executed) so a test can
//! hold them against the text report. This file: the page's frame and the pieces every
//! page shares (escaping, sections, annotations, the busy heatmap); report.rs the page of
//! a recording, pages.rs those of an experiment and a diff; charts: [`charts`]; what each
//! draws: docs/metrics.md, "Charts".

pub mod charts;
mod pages;
mod report;

pub use pages::{compare, diff};
pub use report::report;

use std::fmt::Write as _;

use self::charts::{Annotation, Heat};
use super::summary::Summary;
use crate::topology::Topology;

/// HTML text: `&`, `<`, `>`, quotes escaped (attribute-safe).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1000px;color:#222}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:.9em}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee}td.num,th.num{text-align:right}h3{font-size:1em}\
.missing{color:#a60}.note{color:#555;font-size:.9em}svg{display:block;max-width:100%;height:auto}\
.sev-critical{color:#b00;font-weight:bold}.sev-warning{color:#b60;font-weight:bold}\
.ab{display:inline-block;vertical-align:top;margin:2px}";

/// A page: title, body sections, and the figures drawn (JSON).
pub fn page(title: &str, body: &str, data: &serde_json::Value) -> String {
    // `</` cannot end the JSON block early: every `<` in it is escaped by serde's string
    // rules only inside strings, so escape it everywhere.
    let data = data.to_string().replace('<', "\\u003c");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
<title>{}</title><style>{CSS}</style></head><body>\n<h1>{}</h1>\n{body}\n\
<script type=\"application/json\" id=\"llctop-data\">{data}</script>\n</body></html>\n",
        esc(title),
        esc(title)
    )
}

/// A section of a page, with its heading.
pub fn section(out: &mut String, id: &str, title: &str, inner: &str) {
    let _ = write!(
        out,
        "<section id=\"{id}\"><h2>{}</h2>\n{inner}\n</section>\n",
        esc(title)
    );
}

/// A totals table (record/tables.rs: the text report draws the same one).
fn table(t: &crate::record::tables::Table) -> String {
    let mut out = format!("<h3 id=\"{}\">{}</h3>\n", t.id, esc(&t.title));
    if !t.rows.is_empty() {
        out.push_str("<table><thead><tr>");
        for c in &t.cols {
            let align = if c.right { " class=\"num\"" } else { "" };
            let _ = write!(out, "<th{align}>{}</th>", esc(c.name));
        }
        out.push_str("</tr></thead><tbody>\n");
        for r in &t.rows {
            out.push_str("<tr>");
            for (v, c) in r.iter().zip(&t.cols) {
                let align = if c.right { " class=\"num\"" } else { "" };
                let _ = write!(out, "<td{align}>{}</td>", esc(v));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
    }
    for n in &t.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    out
}

fn missing(why: &str) -> String {
    format!("<p class=\"missing\">{}</p>", esc(why))
}

/// A chart, or what went wrong drawing it.
pub fn chart(r: Result<String, String>) -> String {
    r.unwrap_or_else(|e| missing(&format!("this chart could not be drawn: {e}")))
}

/// The knob changes, markers and findings of a recording as annotations (seconds from
/// its start).
fn annotations(sum: &Summary) -> Vec<Annotation> {
    let t0 = sum.series.t0().unwrap_or(0);
    let secs = |mono: u64| mono.saturating_sub(t0) as f64 / 1e9;
    let mut out = Vec::new();
    for k in &sum.knobs {
        out.push(Annotation {
            at: secs(k.mono_ns),
            kind: "knob",
            text: format!(
                "{}: {} → {} (read back {})",
                k.id, k.old, k.new, k.read_back
            ),
        });
    }
    for m in &sum.markers {
        out.push(Annotation {
            at: secs(m.mono_ns),
            kind: "marker",
            text: format!("marker: {}", m.label),
        });
    }
    for e in sum.problems() {
        let f = e.latest();
        out.push(Annotation {
            at: sum.at(e.fired_seq),
            kind: "finding",
            text: format!(
                "{} {}: {}",
                e.worst().label().to_uppercase(),
                f.kind.title(),
                f.summary
            ),
        });
    }
    out
}

fn llc_rows(
    topo: &Topology,
    mean: impl Fn(usize) -> Option<f64>,
) -> Vec<(String, Option<u32>, Option<f64>)> {
    topo.llcs
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                format!(
                    "llc{} node {}",
                    l.id,
                    l.node.map_or("-".into(), |n| n.to_string())
                ),
                l.node,
                mean(i),
            )
        })
        .collect()
}

/// The busy heatmap of a fold (also the diff page's).
fn busy_heatmap(sum: &Summary, anns: &[Annotation]) -> String {
    let topo = &sum.header.topology;
    if topo.llcs.is_empty() {
        return missing("the recording's topology has no LLCs: no heatmap to draw");
    }
    let mean = |i: usize| sum.busy_llc.get(i).and_then(|m| m.get().map(|b| 100.0 * b));
    if (0..topo.llcs.len()).all(|i| mean(i).is_none()) {
        return missing("busy was not recorded (no procfs source)");
    }
    chart(charts::heatmap(
        &Heat {
            title: "Busy per LLC (share of its CPUs' time)",
            unit: "%",
            scale: 1.0,
            full: "100%",
            cells: sum
                .series
                .columns
                .iter()
                .map(|c| (c.from, c.to, c.busy.iter().map(|m| m.get()).collect()))
                .collect(),
            rows: llc_rows(topo, mean),
            span: sum.series.span(),
        },
        anns,
    ))
}

/// Write `page` to `path` through the one output path (crate::output: no link followed,
/// an existing page kept as `.old`, never one of `inputs`) and say where and how big on
/// stdout.
pub fn write(
    path: &std::path::Path,
    inputs: &[&std::path::Path],
    page: &str,
) -> std::io::Result<()> {
    let committed = crate::output::write_whole(path, inputs, page.as_bytes())?;
    crate::outln!(
        "wrote {} ({} KiB){committed}",
        crate::text::escape(&path.display().to_string()),
        page.len().div_ceil(1024)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(esc("a\u{1b}[31m"), "a\u{fffd}[31m");
    }
}
