//! Migrations: rates by distance class and by cause over time (sparklines), the LLC×LLC
//! matrix of the interval as a heatmap, and the most recent cross-LLC / cross-node
//! migrations from the detail events.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{block, rate, si, sparkline, waiting};
use crate::snapshot::{Cause, EventKind, Precision, Snapshot};
use crate::topology::Distance;
use crate::tui::app::App;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let Some(m) = s.migrations.as_ref() else {
        super::unavailable(
            f,
            area,
            app,
            "Migrations",
            "no source counted migrations in this interval",
        );
        return;
    };
    // The rates first, whole; then the matrix; the recent moves where there is room.
    let causes = if m.by_cause.is_some() {
        Cause::ALL.len()
    } else {
        1
    };
    let rates_h = ((Distance::ALL.len() + causes) as u16 + 3).min(area.height);
    let rest = area.height - rates_h;
    let recent_h = if rest >= 4 + 8 { 8 } else { 0 };
    let [rates, matrix, recent] = Layout::vertical([
        Constraint::Length(rates_h),
        Constraint::Length(rest - recent_h),
        Constraint::Length(recent_h),
    ])
    .areas(area);
    let precision = match m.precision {
        Precision::Exact => "exact",
        Precision::Sampled => "sampled (lower bound)",
    };
    draw_rates(f, rates, app, precision);
    if matrix.height >= 3 {
        draw_matrix(f, matrix, app, s);
    }
    if recent.height > 0 {
        draw_recent(f, recent, app);
    }
}

fn per_sec(s: &Snapshot, v: u64) -> f64 {
    let secs = s.time.interval_secs();
    if secs > 0.0 { v as f64 / secs } else { 0.0 }
}

fn draw_rates(f: &mut Frame, area: Rect, app: &App, precision: &str) {
    let t = app.theme();
    let b = block(
        app,
        format!(
            "Migrations/s by distance and cause — {precision} · each line scaled to its own max"
        ),
    );
    let inner = b.inner(area);
    f.render_widget(b, area);
    let w = (inner.width as usize).saturating_sub(40).max(8);
    let hist = app.history(w);
    let span = match (hist.first(), hist.last()) {
        (Some(a), Some(b)) => {
            (b.time.mono_ns.saturating_sub(a.time.mono_ns) + a.time.interval_ns) as f64 / 1e9
        }
        _ => 0.0,
    };
    let mut lines = Vec::new();
    for (i, d) in Distance::ALL.iter().enumerate() {
        let vals: Vec<f64> = hist
            .iter()
            .map(|s| {
                s.migrations
                    .as_ref()
                    .map_or(0.0, |m| per_sec(s, m.by_distance.get(*d)))
            })
            .collect();
        let style = if i >= 2 { t.warn() } else { t.base() };
        let mut l = vec![Span::styled(format!("{:<15}", d.label()), style)];
        l.extend(spark_row(&vals, w, t));
        lines.push(Line::from(l));
    }
    let has_cause = app
        .current()
        .and_then(|s| s.migrations.as_ref())
        .is_some_and(|m| m.by_cause.is_some());
    if has_cause {
        for cause in Cause::ALL {
            let vals: Vec<f64> = hist
                .iter()
                .map(|s| {
                    s.migrations
                        .as_ref()
                        .and_then(|m| m.by_cause.as_ref())
                        .map_or(0.0, |c| per_sec(s, c.get(cause)))
                })
                .collect();
            let mut l = vec![Span::raw(format!("{:<15}", cause.label()))];
            l.extend(spark_row(&vals, w, t));
            lines.push(Line::from(l));
        }
    } else {
        lines.push(Line::styled(
            "causes: not available — the procfs source cannot tell why a task moved (BPF can)",
            t.dim(),
        ));
    }
    lines.insert(
        0,
        Line::styled(
            format!(
                "{:<15}{:<w$} {:>10} {:>9}",
                "",
                format!("← {span:.0} s · now →"),
                "now",
                "max"
            ),
            t.dim(),
        ),
    );
    f.render_widget(Paragraph::new(lines), inner);
}

/// A sparkline of `vals` in `w` cells, then the latest value and the largest (its scale).
fn spark_row(vals: &[f64], w: usize, t: &crate::tui::theme::Theme) -> Vec<Span<'static>> {
    let now = vals.last().copied().unwrap_or(0.0);
    let max = vals.iter().copied().fold(0.0f64, f64::max);
    vec![
        Span::styled(sparkline(vals, w), t.accent()),
        Span::raw(format!(" {:>8}/s {:>7}/s", si(now), si(max))),
    ]
}

fn draw_matrix(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let t = app.theme();
    let Some(m) = s.migrations.as_ref() else {
        return;
    };
    let n = m.llc_matrix.len();
    let b = block(app, "LLC × LLC migrations/s (row: from, column: to)");
    let inner = b.inner(area);
    f.render_widget(b, area);
    if n == 0 {
        f.render_widget(
            Paragraph::new(Line::styled("no LLC matrix in this snapshot", t.dim())),
            inner,
        );
        return;
    }
    let label_w = 6usize;
    let avail_w = (inner.width as usize).saturating_sub(label_w);
    let avail_h = (inner.height as usize).saturating_sub(1);
    // Numbers when they fit, else colour cells; rows beyond the height are cut.
    let cell = if avail_w >= n * 6 {
        6
    } else if avail_w >= n * 2 {
        2
    } else {
        1
    };
    if avail_w < n {
        f.render_widget(
            Paragraph::new(Line::styled(
                format!(
                    "{n}×{n} LLCs do not fit in {} columns: widen the terminal",
                    inner.width
                ),
                t.warn(),
            )),
            inner,
        );
        return;
    }
    let max = m
        .llc_matrix
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut lines = Vec::new();
    // Column labels: every column when numbers fit, else every 10th, written across.
    let mut labels = vec![' '; n * cell + 8];
    for j in 0..n {
        let text = if cell >= 6 {
            format!("{:>6}", format!("→{j}"))
        } else if j % 10 == 0 {
            j.to_string()
        } else {
            continue;
        };
        for (k, ch) in text.chars().enumerate() {
            if let Some(slot) = labels.get_mut(j * cell + k) {
                *slot = ch;
            }
        }
    }
    let head = vec![
        Span::styled(format!("{:>w$}", "", w = label_w), t.dim()),
        Span::styled(labels.iter().take(n * cell).collect::<String>(), t.dim()),
    ];
    lines.push(Line::from(head));
    for (i, row) in m.llc_matrix.iter().enumerate().take(avail_h) {
        let mut spans = vec![Span::styled(format!("{:>5} ", i), t.dim())];
        for (j, &v) in row.iter().enumerate() {
            let heat = v as f64 / max;
            let text = if cell >= 6 {
                format!(
                    "{:>6}",
                    if v == 0 {
                        "·".to_string()
                    } else {
                        rate(v, s.time.interval_secs())
                    }
                )
            } else if t.mono {
                super::super::theme::Theme::shade(heat)
                    .to_string()
                    .repeat(cell)
            } else {
                " ".repeat(cell)
            };
            let style = if cell >= 6 {
                if i == j {
                    t.dim()
                } else if v > 0 {
                    ratatui::style::Style::default().fg(t.heat(0.3 + 0.7 * heat))
                } else {
                    t.dim()
                }
            } else {
                t.heat_cell(heat)
            };
            spans.push(Span::styled(text, style));
        }
        lines.push(Line::from(spans));
    }
    if n > avail_h {
        lines.truncate(avail_h);
        lines.push(Line::styled(
            format!("… {} more rows", n - avail_h + 1),
            t.dim(),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_recent(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let b = block(app, "Recent cross-LLC / cross-node migrations");
    let inner = b.inner(area);
    f.render_widget(b, area);
    let Some(cur) = app.current() else {
        return;
    };
    let have_events = app.history(60).iter().any(|s| s.events.is_some());
    if !have_events {
        f.render_widget(
            Paragraph::new(Line::styled(
                "not available: detail events come from the BPF source",
                t.dim(),
            )),
            inner,
        );
        return;
    }
    let mut evs: Vec<_> = app
        .history(60)
        .iter()
        .rev()
        .flat_map(|s| s.events.iter().flat_map(|e| e.events.iter().rev()))
        .filter(|e| e.kind == EventKind::Migration)
        .take(inner.height as usize)
        .collect();
    evs.reverse();
    let dropped: u64 = cur.events.as_ref().map_or(0, |e| e.dropped);
    let mut lines: Vec<Line> = evs
        .iter()
        .map(|e| {
            let ago = cur.time.mono_ns.saturating_sub(e.mono_ns) as f64 / 1e9;
            let d = e.distance.map_or("?", |d| d.label());
            let c = e.cause.map_or("?", |c| c.label());
            Line::from(vec![
                Span::styled(format!("-{ago:>6.2}s "), t.dim()),
                Span::raw(format!(
                    "{:<16} {:>7}  cpu {:>4} → {:<4} ",
                    e.comm, e.tgid, e.from_cpu, e.to_cpu
                )),
                Span::styled(
                    format!("{d:<6}"),
                    if d == "xnode" { t.bad() } else { t.warn() },
                ),
                Span::raw(format!(" {c:<14} allowed {}", e.nr_cpus_allowed)),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("none in the last minute", t.dim()));
    }
    if dropped > 0 && lines.len() < inner.height as usize {
        lines.push(Line::styled(
            format!("({dropped} events over the rate limit this interval; counts stay exact)"),
            t.dim(),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
