//! The Overview's lower panel, "is the scheduler keeping work cache-local right now?",
//! on any machine: a system line (load, busy, user / sys time, runnable, context switches),
//! migrations per second by distance with the preferred-LLC hit, per-LLC busy and
//! run-queue wait history as braille graphs with one shared scale each and a time axis,
//! and the processes that move across LLCs most. On one LLC it says that no cross-LLC
//! move can happen and ranks processes by migrations instead.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Wrap};

use super::{block, fit, ns, or_dash, pct, rate};
use crate::snapshot::Snapshot;
use crate::topology::Distance;
use crate::tui::app::App;

/// Rows with which the panel shows its graphs: border, two text lines, a graph of four
/// rows with its axis, and two process rows.
pub const MIN_HEIGHT: u16 = 12;

/// The fewest rows the panel is drawn in: its border and the two text lines (then the
/// movers, then the graphs, as rows allow).
pub const MIN_ROWS: u16 = 4;

/// Series drawn per graph; beyond this many LLCs the graphs show nodes.
const MAX_SERIES: usize = 8;

/// Snapshots of history the graphs span at most.
const SPAN: usize = 120;

const PALETTE: [Color; MAX_SERIES] = [
    Color::Cyan,
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::LightRed,
    Color::LightBlue,
    Color::White,
    Color::LightGreen,
];

pub fn draw(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let outer = block(app, "Is work cache-local? — now and the last snapshots");
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    // The two text lines wrap on a narrow terminal.
    let text_lines = [system_line(app, s), moves_line(app, s)];
    let text_h: u16 = text_lines
        .iter()
        .map(|l| (l.width().max(1).div_ceil(inner.width.max(1) as usize)) as u16)
        .sum();
    let rest = inner.height.saturating_sub(text_h);
    // Graphs need 4 rows and the movers 2; without room for both the movers come first.
    let graphs_h = if rest >= 4 + 2 {
        rest - 2 - rest.saturating_sub(6).min(4)
    } else {
        0
    };
    let top_n = rest.saturating_sub(graphs_h + 1).min(5) as usize;
    let [text, graphs, procs] = Layout::vertical([
        Constraint::Length(text_h),
        Constraint::Length(graphs_h),
        Constraint::Min(0),
    ])
    .areas(inner);
    f.render_widget(
        Paragraph::new(text_lines.to_vec()).wrap(Wrap { trim: true }),
        text,
    );
    if graphs_h > 0 {
        let [busy, wait] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .spacing(3)
                .areas(graphs);
        let series = series(app);
        draw_graph(f, busy, app, &series, Metric::Busy);
        draw_graph(f, wait, app, &series, Metric::Wait);
    }
    if top_n == 0 {
        return;
    }
    f.render_widget(Paragraph::new(movers(app, s, top_n, procs.width)), procs);
}

/// `system load 0.52 0.40 0.33 · user 12% · kernel 3% · runnable 3 · cs/s 1.2k`
fn system_line(app: &App, s: &Snapshot) -> Line<'static> {
    let t = app.theme();
    let y = &s.system;
    let secs = s.time.interval_secs();
    let load = y.load.map_or("–".into(), |l| {
        format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
    });
    Line::from(vec![
        Span::styled("system ", t.accent()),
        Span::raw(format!(
            "load {load} · busy {} · user {} · sys {} · runnable {} · cs/s {}",
            or_dash(y.busy, pct),
            or_dash(y.user, pct),
            or_dash(y.system, pct),
            or_dash(y.procs_running, |r| r.to_string()),
            or_dash(y.ctx_switches, |c| rate(c, secs)),
        )),
    ])
}

/// `moves/s smt 0 · llc 12 · xLLC 0 · xnode 0 · preferred-LLC hit 98% (emulated)`
fn moves_line(app: &App, s: &Snapshot) -> Line<'static> {
    let t = app.theme();
    let secs = s.time.interval_secs();
    let one_llc = app.topo.llcs.len() <= 1;
    let one_node = app.topo.nodes.len() <= 1;
    let mut spans = vec![Span::styled("moves/s ", t.accent())];
    match &s.migrations {
        None => spans.push(Span::styled("– (no source counted migrations)", t.dim())),
        Some(m) => {
            let sampled = m.precision == crate::snapshot::Precision::Sampled;
            for d in Distance::ALL {
                let impossible = match d {
                    Distance::CrossLlc => one_llc,
                    Distance::CrossNode => one_node,
                    _ => false,
                };
                let v = if impossible {
                    "n/a".to_string()
                } else {
                    rate(m.by_distance.get(d), secs)
                };
                let style = if d == Distance::CrossLlc && !impossible && m.by_distance.get(d) > 0 {
                    t.warn()
                } else {
                    t.base()
                };
                spans.push(Span::styled(format!("{} {v} · ", d.label()), style));
            }
            if sampled {
                spans.push(Span::styled("sampled, a lower bound · ", t.dim()));
            }
        }
    }
    let (hit, kernel) = s.preferred_hit();
    spans.push(Span::raw(format!(
        "preferred-LLC hit {}{}",
        or_dash(hit, pct),
        match (hit, kernel) {
            (None, _) => "",
            (Some(_), true) => " (kernel's)",
            (Some(_), false) => " (emulated)",
        }
    )));
    if one_llc {
        spans.push(Span::styled(
            " · one LLC: no cross-LLC move possible",
            t.dim(),
        ));
    }
    Line::from(spans)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Metric {
    Busy,
    Wait,
}

/// What the graphs draw one line each for: LLCs (ids), or nodes when there are more
/// LLCs than series.
struct Series {
    by_node: bool,
    ids: Vec<u32>,
}

fn series(app: &App) -> Series {
    if app.topo.llcs.len() <= MAX_SERIES {
        Series {
            by_node: false,
            ids: app.topo.llcs.iter().map(|l| l.id).collect(),
        }
    } else {
        let mut ids: Vec<u32> = app.topo.nodes.iter().map(|n| n.id).collect();
        if ids.is_empty() {
            ids.push(0);
        }
        ids.truncate(MAX_SERIES);
        Series { by_node: true, ids }
    }
}

/// The value of one series in one snapshot: busy in %, or run-queue wait in ms per s.
fn value(s: &Snapshot, by_node: bool, id: u32, m: Metric) -> Option<f64> {
    let g = if by_node {
        s.nodes.iter().find(|g| g.id == id)
    } else {
        s.llcs.get(id as usize)
    }?;
    match m {
        Metric::Busy => g.busy.map(|b| b * 100.0),
        Metric::Wait => {
            let secs = s.time.interval_secs();
            (secs > 0.0).then_some(())?;
            g.rq_wait_ns.map(|w| w as f64 / 1e6 / secs)
        }
    }
}

fn draw_graph(f: &mut Frame, area: Rect, app: &App, series: &Series, m: Metric) {
    let t = app.theme();
    let hist = app.history(SPAN);
    let Some(now) = hist.last() else {
        return;
    };
    let now_ns = now.time.mono_ns;
    let age = |s: &Snapshot| -(now_ns.saturating_sub(s.time.mono_ns) as f64 / 1e9);
    // The axis covers the history the graph can hold (SPAN snapshots at the interval),
    // never just the samples there are: two samples are a short stroke at its right end,
    // not a ramp across the whole chart.
    let full = SPAN as f64 * app.interval.as_secs_f64();
    let span = hist.first().map_or(1.0, |s| -age(s)).max(full).max(1.0);
    let points: Vec<Vec<(f64, f64)>> = series
        .ids
        .iter()
        .map(|&id| {
            hist.iter()
                .filter_map(|s| Some((age(s), value(s, series.by_node, id, m)?)))
                .collect()
        })
        .collect();
    // One scale for every series: busy 0–100 %, wait 0 to the largest seen (rounded up).
    let top = match m {
        Metric::Busy => 100.0,
        Metric::Wait => nice_max(points.iter().flatten().map(|p| p.1).fold(0.0f64, f64::max)),
    };
    let what = if series.by_node { "node" } else { "LLC" };
    let title = match m {
        Metric::Busy => format!("busy % per {what}"),
        Metric::Wait => format!("run-queue wait per {what}, ms/s"),
    };
    let names: Vec<String> = series
        .ids
        .iter()
        .map(|id| format!("{}{id}", if series.by_node { "n" } else { "L" }))
        .collect();
    let datasets: Vec<Dataset> = points
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, (p, name))| {
            let style = if t.mono {
                Style::default()
            } else {
                Style::default().fg(PALETTE[i % PALETTE.len()])
            };
            Dataset::default()
                .name(name.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(style)
                .data(p)
        })
        .collect();
    let y_labels = match m {
        Metric::Busy => vec!["0".to_string(), "50".into(), "100".into()],
        Metric::Wait => vec!["0".to_string(), fmt_ms(top / 2.0), fmt_ms(top)],
    };
    let chart = Chart::new(datasets)
        .block(
            Block::default()
                .title(Span::styled(title, t.dim()))
                .style(t.base()),
        )
        .x_axis(
            Axis::default()
                .bounds([-span, 0.0])
                .labels(vec![
                    Span::styled(format!("-{}", secs_label(span)), t.dim()),
                    Span::styled("now", t.dim()),
                ])
                .style(t.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(y_labels.into_iter().map(|l| Span::styled(l, t.dim())))
                .style(t.dim()),
        )
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)));
    f.render_widget(chart, area);
}

/// `90s`, `2m`, `1h`.
fn secs_label(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.0}h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.0}m", s / 60.0)
    } else {
        format!("{s:.0}s")
    }
}

fn fmt_ms(v: f64) -> String {
    if v >= 10.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The smallest of 1, 2, 5 × 10^k at or above `v` (1 when there is nothing).
pub fn nice_max(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&x| x >= v)
        .unwrap_or(10.0 * p)
}

/// The processes moving across LLCs most (on one LLC: migrating most), `n` of them.
fn movers(app: &App, s: &Snapshot, n: usize, width: u16) -> Vec<Line<'static>> {
    let t = app.theme();
    let secs = s.time.interval_secs();
    let one_llc = app.topo.llcs.len() <= 1;
    let Some(table) = &s.processes else {
        return vec![Line::styled("processes: no source gave them", t.dim())];
    };
    let mut rows: Vec<_> = table.rows.iter().collect();
    if one_llc {
        rows.retain(|r| r.migrations > 0);
        rows.sort_by(|a, b| b.migrations.cmp(&a.migrations).then(a.pid.cmp(&b.pid)));
    } else {
        rows.retain(|r| r.cross_llc_migrations > 0);
        rows.sort_by(|a, b| {
            b.cross_llc_migrations
                .cmp(&a.cross_llc_migrations)
                .then(a.pid.cmp(&b.pid))
        });
    }
    let head = if one_llc {
        "top movers (one LLC: by migrations)"
    } else {
        "top cross-LLC movers"
    };
    let mut out = vec![Line::styled(
        format!(
            "{head:<38} {:>7} {:>7} {:>7} {:>5} {:>5} {:>9}",
            "PID", "xLLC/s", "MIG/s", "HIT%", "CPU%", "WAIT/s"
        ),
        t.accent(),
    )];
    if rows.is_empty() {
        out.push(Line::styled(
            if one_llc {
                "  no process migrated in this interval"
            } else {
                "  no process crossed an LLC in this interval"
            },
            t.dim(),
        ));
    }
    for r in rows.into_iter().take(n) {
        let line = format!(
            "  {:<36} {:>7} {:>7} {:>7} {:>5} {:>5} {:>9}",
            fit(&r.comm, 36),
            r.pid,
            if one_llc {
                "n/a".to_string()
            } else {
                rate(r.cross_llc_migrations, secs)
            },
            rate(r.migrations, secs),
            or_dash(r.preferred_hit, pct),
            pct(r.cpu_time_ns as f64 / 1e9 / secs.max(1e-9)),
            ns((r.rq_wait_ns as f64 / secs.max(1e-9)) as u64),
        );
        out.push(Line::raw(fit(&line, width as usize)));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn scales_round_up_to_one_two_five() {
        assert_eq!(super::nice_max(0.0), 1.0);
        assert_eq!(super::nice_max(3.2), 5.0);
        assert_eq!(super::nice_max(12.0), 20.0);
        assert_eq!(super::nice_max(50.0), 50.0);
        assert_eq!(super::nice_max(0.07), 0.1);
    }
}
