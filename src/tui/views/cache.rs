//! Cache: per-LLC IPC, MPKI, miss ratio and L3 misses/s from the hardware counters, with
//! their history, and the processes with the most misses when per-process attribution
//! is on — or the reason counters are unavailable (no PMU in VMs, permission, …).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{block, or_dash, pct, rate, si, sparkline, waiting};
use crate::tui::app::App;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let t = app.theme();
    if s.llcs.iter().all(|g| g.counters.is_none()) {
        let why = super::source_reason(app, "perf")
            .unwrap_or_else(|| "the perf source is not running".into());
        super::unavailable(f, area, app, "Cache", &format!("hardware counters: {why}"));
        return;
    }
    let [table_area, procs_area] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(9)]).areas(area);
    let secs = s.time.interval_secs();
    let spark_w = (area.width as usize).saturating_sub(80).clamp(8, 60);
    let header = Row::new(
        [
            "LLC",
            "NODE",
            "IPC",
            "IPC history",
            "MPKI",
            "MISS",
            "L3 MISS/s",
            "CYCLES/s",
        ]
        .map(Cell::from),
    )
    .style(t.accent().add_modifier(Modifier::BOLD));
    let hist = app.history(spark_w);
    let rows: Vec<Row> = s
        .llcs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let c = g.counters.as_ref();
            let ipc_hist: Vec<f64> = hist
                .iter()
                .map(|h| {
                    h.llcs
                        .get(i)
                        .and_then(|g| g.counters.as_ref()?.ipc)
                        .unwrap_or(0.0)
                })
                .collect();
            Row::new(vec![
                Cell::from(g.id.to_string()),
                Cell::from(or_dash(app.topo.llcs.get(i).and_then(|l| l.node), |n| {
                    n.to_string()
                })),
                Cell::from(or_dash(c.and_then(|c| c.ipc), |v| format!("{v:.2}"))),
                Cell::from(Span::styled(sparkline(&ipc_hist, spark_w), t.accent())),
                Cell::from(or_dash(c.and_then(|c| c.mpki), |v| format!("{v:.2}"))),
                Cell::from(or_dash(c.and_then(|c| c.miss_ratio), pct)),
                Cell::from(or_dash(c.and_then(|c| c.l3_misses_per_sec), si)),
                Cell::from(or_dash(c.and_then(|c| c.cycles), |v| rate(v, secs))),
            ])
        })
        .collect();
    let note = super::source_reason(app, "perf").unwrap_or_default();
    let title = if note.is_empty() {
        "Hardware counters per LLC".to_string()
    } else {
        format!("Hardware counters per LLC — {note}")
    };
    let widths = [
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(spark_w as u16 + 1),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(10),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(block(app, title)),
        table_area,
    );

    let b = block(app, "Processes by cache misses (per-process attribution)");
    let inner = b.inner(procs_area);
    f.render_widget(b, procs_area);
    let mut procs: Vec<_> = s
        .processes
        .iter()
        .flat_map(|p| p.rows.iter())
        .filter_map(|r| Some((r, r.counters.as_ref()?)))
        .collect();
    if procs.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "not available: per-process counters need the BPF source next to the perf source",
                t.dim(),
            )),
            inner,
        );
        return;
    }
    procs.sort_by_key(|(_, c)| std::cmp::Reverse(c.cache_misses.unwrap_or(0)));
    let lines: Vec<Line> = procs
        .iter()
        .take(inner.height as usize)
        .map(|(r, c)| {
            Line::raw(format!(
                "{:>8} {:<16} misses {:>8}/s  MPKI {:>6}  IPC {:>5}",
                r.pid,
                r.comm,
                or_dash(c.cache_misses, |v| rate(v, secs)),
                or_dash(c.mpki, |v| format!("{v:.1}")),
                or_dash(c.ipc, |v| format!("{v:.2}")),
            ))
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
