//! Cache: what each L3 holds and the memory traffic behind it (resctrl: occupancy
//! against the LLC's share of the L3, local and remote bandwidth, with history), per-LLC
//! IPC, MPKI, miss ratio and L3 misses/s from the hardware counters, and the processes
//! by occupancy (llctop's resctrl groups) or by misses (per-process attribution) — each
//! part replaced by the reason it is unavailable (no RDT in VMs, no PMU, …).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{bar, block, or_dash, pct, rate, si, sparkline, waiting};
use crate::snapshot::{CacheMon, Snapshot};
use crate::tui::app::App;
use crate::units::{bytes, bytes_per_sec};

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let has_l3 = s.llcs.iter().any(|g| g.cache.is_some());
    let has_counters = s.llcs.iter().any(|g| g.counters.is_some());
    if !has_l3 && !has_counters {
        let perf = super::source_reason(app, crate::snapshot::SourceName::Perf)
            .unwrap_or_else(|| "the perf source is not running".into());
        let l3 = super::source_reason(app, crate::snapshot::SourceName::Resctrl)
            .unwrap_or_else(|| "the resctrl source is not running".into());
        super::unavailable(
            f,
            area,
            app,
            "Cache",
            &format!(
                "L3 occupancy and memory bandwidth (resctrl): {l3}\n\nhardware counters: {perf}"
            ),
        );
        return;
    }
    let rows = s.llcs.len() as u16 + 3;
    let (l3_h, ctr_h) = match (has_l3, has_counters) {
        (true, true) => (rows, rows),
        (true, false) => (rows, 3),
        (false, _) => (3, rows),
    };
    let [l3_area, ctr_area, procs_area] = Layout::vertical([
        Constraint::Max(l3_h),
        Constraint::Max(ctr_h),
        Constraint::Min(4),
    ])
    .areas(area);
    if has_l3 {
        draw_l3(f, l3_area, app, s);
    } else {
        reason_block(
            f,
            l3_area,
            app,
            "L3 occupancy and memory bandwidth",
            crate::snapshot::SourceName::Resctrl,
        );
    }
    if has_counters {
        draw_counters(f, ctr_area, app, s);
    } else {
        reason_block(
            f,
            ctr_area,
            app,
            "Hardware counters",
            crate::snapshot::SourceName::Perf,
        );
    }
    if s.resctrl
        .as_ref()
        .is_some_and(|r| r.groups.iter().any(|g| g.pid.is_some()))
    {
        draw_procs_l3(f, procs_area, app, s);
    } else {
        draw_procs_misses(f, procs_area, app, s);
    }
}

/// A one-line box: the part's title and why it is not shown.
fn reason_block(
    f: &mut Frame,
    area: Rect,
    app: &App,
    title: &str,
    source: crate::snapshot::SourceName,
) {
    let why = super::source_reason(app, source)
        .unwrap_or_else(|| format!("the {source} source is not running"));
    let b = block(app, format!("{title} — not available"));
    let inner = b.inner(area);
    f.render_widget(b, area);
    f.render_widget(Paragraph::new(Line::styled(why, app.theme().dim())), inner);
}

/// `12.3/30.0 MiB` with the share of the LLC's capacity, or why not.
pub fn occupancy_text(c: &CacheMon, capacity: Option<u64>) -> String {
    match (c.occupancy_bytes, capacity) {
        (Some(o), Some(cap)) if cap > 0 => {
            format!("{} {}", bytes(o), pct(o as f64 / cap as f64))
        }
        (Some(o), _) => bytes(o),
        (None, _) => why_dash(c.occupancy_why),
    }
}

/// `–` with the reason's name (`– unassigned`).
fn why_dash(w: Option<crate::snapshot::Unread>) -> String {
    w.map_or("–".into(), |w| format!("– {}", w.label()))
}

fn bw(v: Option<u64>, why: Option<crate::snapshot::Unread>, secs: f64) -> String {
    v.map_or_else(|| why_dash(why), |b| bytes_per_sec(b, secs))
}

fn draw_l3(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let t = app.theme();
    let secs = s.time.interval_secs();
    let spark_w = (area.width as usize).saturating_sub(96).clamp(8, 40);
    let hist = app.history(spark_w);
    let header = Row::new(
        [
            "LLC",
            "NODE",
            "L3 OCCUPANCY",
            "",
            "LOCAL",
            "REMOTE",
            "REMOTE%",
            "OCCUPANCY history",
        ]
        .map(Cell::from),
    )
    .style(t.accent().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = s
        .llcs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let cap = app.topo.llc_capacity_bytes(g.id);
            let c = g.cache.unwrap_or_default();
            let frac = match (c.occupancy_bytes, cap) {
                (Some(o), Some(cap)) if cap > 0 => (o as f64 / cap as f64).min(1.0),
                _ => 0.0,
            };
            let occ_hist: Vec<f64> = hist
                .iter()
                .map(|h| {
                    h.llcs
                        .get(i)
                        .and_then(|g| g.cache?.occupancy_bytes)
                        .unwrap_or(0) as f64
                })
                .collect();
            let remote_share = match (c.mbm_remote_bytes(), c.mbm_total_bytes) {
                (Some(r), Some(tot)) if tot > 0 => pct(r as f64 / tot as f64),
                _ => "–".into(),
            };
            Row::new(vec![
                Cell::from(g.id.to_string()),
                Cell::from(or_dash(app.topo.llcs.get(i).and_then(|l| l.node), |n| {
                    n.to_string()
                })),
                Cell::from(Span::styled(
                    bar(frac, 10),
                    Style::default().fg(t.heat(frac)),
                )),
                Cell::from(if g.cache.is_some() {
                    occupancy_text(&c, cap)
                } else {
                    "–".into()
                }),
                Cell::from(bw(c.mbm_local_bytes, c.local_why, secs)),
                Cell::from(bw(c.mbm_remote_bytes(), c.remote_why(), secs)),
                Cell::from(remote_share),
                Cell::from(Span::styled(sparkline(&occ_hist, spark_w), t.accent())),
            ])
        })
        .collect();
    let total = s.resctrl.as_ref().map(|r| r.total).unwrap_or_default();
    let title = format!(
        "L3 occupancy and memory bandwidth per LLC (resctrl) — all {} · local {} · remote {}",
        total.occupancy_bytes.map_or("–".into(), bytes),
        bw(total.mbm_local_bytes, total.local_why, secs),
        bw(total.mbm_remote_bytes(), total.remote_why(), secs),
    );
    let widths = [
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(11),
        Constraint::Length(17),
        Constraint::Length(11),
        Constraint::Length(11),
        Constraint::Length(8),
        Constraint::Length(spark_w as u16 + 1),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(block(app, title)),
        area,
    );
}

fn draw_counters(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let t = app.theme();
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
    let note = super::source_reason(app, crate::snapshot::SourceName::Perf).unwrap_or_default();
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
        area,
    );
}

/// llctop's monitored processes by L3 occupancy, with their bandwidth.
fn draw_procs_l3(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let b = block(
        app,
        "Processes by L3 occupancy (resctrl groups of llctop's)",
    );
    let inner = b.inner(area);
    f.render_widget(b, area);
    let secs = s.time.interval_secs();
    let Some(r) = &s.resctrl else {
        return;
    };
    let comm = |pid: u32| {
        s.processes
            .iter()
            .flat_map(|t| t.rows.iter())
            .find(|p| p.pid == pid)
            .map_or(String::new(), |p| p.comm.clone())
    };
    let mut groups: Vec<_> = r.groups.iter().filter(|g| g.pid.is_some()).collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.total.occupancy_bytes.unwrap_or(0)));
    let lines: Vec<Line> = groups
        .iter()
        .take(inner.height as usize)
        .map(|g| {
            let pid = g.pid.unwrap_or(0);
            let c = g.total;
            // Where its cache is: the LLC holding most of it.
            let top = g
                .domains
                .iter()
                .filter_map(|d| Some((d.llc?, d.mon.occupancy_bytes?)))
                .max_by_key(|(_, o)| *o);
            Line::raw(format!(
                "{pid:>8} {:<16} L3 {:>10}{}  local {:>10}  remote {:>10}",
                crate::text::Esc(&comm(pid)).to_string(),
                c.occupancy_bytes
                    .map_or_else(|| why_dash(c.occupancy_why), bytes),
                top.map_or(String::new(), |(l, o)| format!(
                    " (LLC {l}: {})",
                    c.occupancy_bytes
                        .filter(|t| *t > 0)
                        .map_or("–".into(), |t| pct(o as f64 / t as f64))
                )),
                bw(c.mbm_local_bytes, c.local_why, secs),
                bw(c.mbm_remote_bytes(), c.remote_why(), secs),
            ))
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_procs_misses(f: &mut Frame, area: Rect, app: &App, s: &Snapshot) {
    let t = app.theme();
    let secs = s.time.interval_secs();
    let b = block(app, "Processes by cache misses (per-process attribution)");
    let inner = b.inner(area);
    f.render_widget(b, area);
    let mut procs: Vec<_> = s
        .processes
        .iter()
        .flat_map(|p| p.rows.iter())
        .filter_map(|r| Some((r, r.counters.as_ref()?)))
        .collect();
    if procs.is_empty() {
        f.render_widget(
            Paragraph::new(vec![
                Line::styled(
                    "not available: per-process counters need the BPF source next to the perf source;",
                    t.dim(),
                ),
                Line::styled(
                    "per-process L3 occupancy needs resctrl and --cache-top N or --cache-pid PID",
                    t.dim(),
                ),
            ]),
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
