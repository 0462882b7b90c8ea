//! The pages of an experiment (`llctop report --compare --html`: each window's value,
//! the medians, the verdict) and of two recordings (`llctop diff --html`).

use std::fmt::Write as _;

use serde_json::json;

use super::report::data;
use super::{annotations, busy_heatmap, chart, charts, esc, missing, page, section};
use crate::record::Recording;

/// `llctop report --compare --html`: an experiment's windows, per metric: each window's
/// value (A and B), the medians, the bootstrap interval, the verdict.
pub fn compare(rec: &Recording) -> Result<String, String> {
    let (exp, v) = crate::record::report::verdict_of(rec)?;
    let counted: Vec<_> = rec
        .windows
        .iter()
        .filter(|w| w.not_counted.is_none())
        .collect();
    let mut snaps = rec.snapshots.clone();
    snaps.sort_by_key(|s| s.seq);
    let values = crate::experiment::verdict::by_arm(&counted, &snaps);
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>knob {}: A = {}, B = {} · {} of {} windows counted{}</p>",
        esc(&exp.knob),
        esc(&exp.a),
        esc(&exp.b),
        v.windows,
        v.planned,
        if v.not_counted.is_empty() {
            String::new()
        } else {
            format!(" (not counted: {})", esc(&v.not_counted.join("; ")))
        }
    );
    let mut table = String::from(
        "<table><tr><th>metric</th><th>A median</th><th>B median</th><th>change</th><th>95% interval</th><th>p</th><th>verdict</th></tr>",
    );
    let mut dots = String::new();
    let mut rows = Vec::new();
    for r in &v.rows {
        let c = &r.stats;
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let _ = write!(
            table,
            "<tr data-metric=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(&r.metric),
            esc(&r.metric),
            esc(&crate::experiment::metrics::shown(&r.metric, c.median_a)),
            esc(&crate::experiment::metrics::shown(&r.metric, c.median_b)),
            c.change.map_or("-".into(), pct),
            c.ci.map_or("-".into(), |(lo, hi)| format!("{} .. {}", pct(lo), pct(hi))),
            c.p,
            esc(&r.verdict)
        );
        let (a, b) = values.get(&r.metric).cloned().unwrap_or_default();
        let _ = write!(
            dots,
            "<div class=\"ab\" data-metric=\"{}\" data-a=\"{}\" data-b=\"{}\">{}</div>",
            esc(&r.metric),
            a.len(),
            b.len(),
            chart(charts::ab_dots(&r.metric, &a, &b))
                + &format!("<p class=\"note\">{}</p>", esc(&r.verdict))
        );
        rows.push(
            json!({"metric": r.metric, "a": a, "b": b, "verdict": r.verdict,
            "median_a": c.median_a, "median_b": c.median_b}),
        );
    }
    table.push_str("</table>");
    // Every caveat the text verdict has (verdict::caveats: one list for both).
    for c in crate::experiment::verdict::caveats(exp, &v) {
        let _ = write!(table, "<p class=\"note\">{}</p>", esc(&c));
    }
    section(&mut body, "verdict", "Verdict", &table);
    section(
        &mut body,
        "windows",
        "Each window's value (dots), each arm's median (bar)",
        &dots,
    );
    Ok(page(
        &format!("llctop ab · {} = {} vs {}", exp.knob, exp.a, exp.b),
        &body,
        &json!({"windows": v.windows, "rows": rows}),
    ))
}

/// `llctop diff --html A B`: which files A and B are, knob differences, the figures side
/// by side (with their units, to three significant digits), each recording's busy heatmap.
pub fn diff(a: &Recording, b: &Recording, names: (&str, &str)) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>A: <code>{}</code> — {} · kernel {} · {} snapshots<br>B: <code>{}</code> — {} · kernel {} · {} snapshots</p>",
        esc(names.0),
        esc(&a.header.topology.summary()),
        esc(a.header.kernel.as_deref().unwrap_or("?")),
        a.snapshots.len(),
        esc(names.1),
        esc(&b.header.topology.summary()),
        esc(b.header.kernel.as_deref().unwrap_or("?")),
        b.snapshots.len()
    );
    let knobs = crate::record::diff::knob_differences(a, b);
    let mut t = String::from("<table><tr><th>knob</th><th>A</th><th>B</th></tr>");
    for (k, x, y) in &knobs {
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            esc(x),
            esc(y)
        );
    }
    t.push_str("</table>");
    section(
        &mut body,
        "knobs",
        "Knobs that differ",
        &if knobs.is_empty() {
            "<p>none</p>".into()
        } else {
            t
        },
    );
    let lines = crate::record::diff::compare(a, b);
    let mut t = String::from(
        "<table><tr><th>figure</th><th>A (± s.e.)</th><th>B (± s.e.)</th><th>change</th><th>beyond the noise</th></tr>",
    );
    use crate::experiment::metrics;
    for l in &lines {
        let change = (l.mean_a != 0.0).then(|| l.mean_b / l.mean_a - 1.0);
        let unit = metrics::describe(&l.key).0;
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{} ± {}</td><td>{} ± {}</td><td>{}</td><td>{}</td></tr>",
            esc(&l.key),
            esc(&metrics::shown(&l.key, l.mean_a)),
            esc(&crate::units::figure(l.se_a, unit, false)),
            esc(&metrics::shown(&l.key, l.mean_b)),
            esc(&crate::units::figure(l.se_b, unit, false)),
            change.map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
            if l.moved { "yes" } else { "" }
        );
    }
    t.push_str("</table>");
    if lines.iter().any(|l| metrics::is_bound(&l.key)) {
        t.push_str("<p class=\"note\">rq_wait.p50/p99: the top of the log2 histogram's bucket that holds the percentile (≤): a mean of bounds, not a measured wait.</p>");
    }
    section(&mut body, "figures", "Figures (mean per interval)", &t);
    let (fa, fb) = (
        crate::record::report::fold(a),
        crate::record::report::fold(b),
    );
    for (id, name, f) in [("busy-a", "A", &fa), ("busy-b", "B", &fb)] {
        let anns = annotations(f);
        let inner = if f.snapshots == 0 {
            missing("the recording holds no snapshot")
        } else {
            busy_heatmap(f, &anns)
        };
        section(
            &mut body,
            id,
            &format!("Busy per LLC, {name}: {}", f.header.topology.summary()),
            &inner,
        );
    }
    page(
        "llctop diff",
        &body,
        &json!({"a": data(&fa, &annotations(&fa)), "b": data(&fb, &annotations(&fb)), "figures": lines.len()}),
    )
}
