//! Overview / LLC map: every LLC as a block of its CPUs grouped by node, each CPU cell
//! coloured by busy with `*` when its run-queue wait exceeds 10% of the interval — or,
//! toggled with `c`, by its LLC's L3 occupancy (resctrl) against the LLC's share of the
//! L3; per-LLC busy bar (or occupancy bar), run-queue wait percentiles, migration in/out
//! rates and MPKI.
//!
//! Readable from 2 to 512 CPUs: cells shrink (`cpu busy%`, then `busy%`, then colour
//! only) until every LLC fits, and when even colour cells do not fit, each LLC becomes
//! one summary line (in columns on wide terminals). Below the map, when there is room,
//! the locality panel (locality.rs): system line, moves by distance, history graphs,
//! top cross-LLC movers.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{bar, block, locality, ns, or_dash, pct, rate, waiting};
use crate::snapshot::{CpuStats, GroupStats, Snapshot};
use crate::topology::Llc;
use crate::tui::app::App;
use crate::tui::theme::Theme;

/// Cell widths tried, widest first: `cpu busy%`, `busy%`, colour only.
const CELL_WIDTHS: [usize; 3] = [9, 4, 2];

/// The layout chosen for an area: a cell width, or summary lines in `columns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Cells(usize),
    Summary { columns: usize, compact: bool },
}

/// Pick the widest cells with which every node and LLC fits in `width`×`height`.
pub fn mode_for(app: &App, width: usize, height: usize) -> Mode {
    let nodes = app.topo.nodes.len().max(1);
    let llcs = &app.topo.llcs;
    for w in CELL_WIDTHS {
        let per_row = (width / w).max(1);
        let lines: usize = nodes
            + llcs
                .iter()
                .map(|l| 1 + l.cpus.len().div_ceil(per_row))
                .sum::<usize>();
        if lines <= height {
            return Mode::Cells(w);
        }
    }
    // One line per LLC: full lines in as many columns as fit, else compact ones.
    let n = llcs.len();
    let columns = (width / FULL_W).max(1);
    if n.div_ceil(columns) <= height {
        return Mode::Summary {
            columns,
            compact: false,
        };
    }
    Mode::Summary {
        columns: (width / COMPACT_W).max(1),
        compact: true,
    }
}

/// Widths of a summary entry: full (with wait and MPKI) and compact (busy and
/// migrations only).
const FULL_W: usize = 76;
const COMPACT_W: usize = 30;

/// The fraction of its L3 share an LLC holds, when resctrl reads it.
fn occupancy(app: &App, g: Option<&GroupStats>) -> Option<f64> {
    let g = g?;
    let o = g.cache?.occupancy_bytes?;
    let cap = app.topo.llc_capacity_bytes(g.id).filter(|c| *c > 0)?;
    Some((o as f64 / cap as f64).min(1.0))
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let title = if app.map_occupancy {
        "LLC map — L3 occupancy per LLC (resctrl; c: busy) · CPU cells: their LLC's"
    } else {
        "LLC map — busy per CPU (* run-queue wait > 10%; c: L3 occupancy)"
    };
    let Some(s) = app.current() else {
        let outer = block(app, title);
        let inner = outer.inner(area);
        f.render_widget(outer, area);
        waiting(f, inner, app);
        return;
    };
    // The map takes what it needs on the whole area; the locality panel what is left
    // (when at least a few rows are); small machines add one line per CPU under the map
    // when the panel keeps room for its graphs.
    let width = area.width.saturating_sub(2) as usize;
    let full_h = area.height.saturating_sub(2) as usize;
    let n = map_lines(app, s, width, full_h).len() as u16;
    let table = s.cpus.len() as u16 + 2;
    let left = area.height.saturating_sub(n + 2);
    let (map_area, panel_area, with_table) = if left >= locality::MIN_ROWS {
        let with_table = left >= table + locality::MIN_HEIGHT + 4;
        let map_h = n + 2 + if with_table { table } else { 0 };
        let [a, b] = Layout::vertical([Constraint::Length(map_h), Constraint::Min(0)]).areas(area);
        (a, Some(b), with_table)
    } else {
        (area, None, true)
    };
    let outer = block(app, title);
    let inner = outer.inner(map_area);
    f.render_widget(outer, map_area);
    let mut lines = map_lines(app, s, inner.width as usize, inner.height as usize);
    if with_table && inner.height as usize >= lines.len() + table as usize {
        lines.push(Line::raw(""));
        lines.extend(cpu_table(app, s));
    }
    f.render_widget(Paragraph::new(lines), inner);
    if let Some(p) = panel_area {
        locality::draw(f, p, app, s);
    }
}

/// The map's lines for an inner area `width`×`height`.
fn map_lines(app: &App, s: &Snapshot, width: usize, height: usize) -> Vec<Line<'static>> {
    match mode_for(app, width, height) {
        Mode::Cells(w) => cell_lines(app, s, w, width),
        Mode::Summary { columns, compact } => {
            summary_lines(app, s, columns, compact, width, height)
        }
    }
}

fn node_line(app: &App, s: &Snapshot, node: u32, n_cpus: usize) -> Line<'static> {
    let t = app.theme();
    let g = s.nodes.iter().find(|g| g.id == node);
    let mem = s
        .numa
        .as_ref()
        .and_then(|n| n.nodes.iter().find(|x| x.node == node))
        .and_then(|x| Some((x.mem_total_kb?, x.mem_free_kb?)))
        .map(|(tot, free)| {
            format!(
                " · mem {:.1}/{:.1} GiB",
                (tot.saturating_sub(free)) as f64 / 1048576.0,
                tot as f64 / 1048576.0
            )
        })
        .unwrap_or_default();
    Line::from(vec![
        Span::styled(
            format!("node {node}"),
            t.accent().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            " · {n_cpus} CPUs · busy {}{mem}",
            or_dash(g.and_then(|g| g.busy), pct)
        )),
    ])
}

/// The LLC's facts after its name: busy bar (or, toggled, the L3 occupancy bar and
/// bytes), wait, migrations, MPKI.
fn llc_facts(app: &App, s: &Snapshot, g: Option<&GroupStats>, t: &Theme) -> Vec<Span<'static>> {
    let secs = s.time.interval_secs();
    let busy = g.and_then(|g| g.busy);
    let mut v = if app.map_occupancy {
        let occ = occupancy(app, g);
        let text = g.and_then(|g| g.cache).map_or("–".to_string(), |c| {
            super::cache::occupancy_text(&c, g.and_then(|g| app.topo.llc_capacity_bytes(g.id)))
        });
        vec![
            Span::styled(
                bar(occ.unwrap_or(0.0), 8),
                ratatui::style::Style::default().fg(t.heat(occ.unwrap_or(0.0))),
            ),
            Span::raw(format!(" L3 {text} · busy {}", or_dash(busy, pct))),
        ]
    } else {
        vec![
            Span::styled(
                bar(busy.unwrap_or(0.0), 8),
                ratatui::style::Style::default().fg(t.heat(busy.unwrap_or(0.0))),
            ),
            Span::raw(format!(" {:>4}", or_dash(busy, pct))),
        ]
    };
    if let Some(g) = g {
        if let Some(r) = g.runnable {
            v.push(Span::raw(format!(" run {r}")));
        }
        // The kernel's own count (7.2+): of its queued tasks with a preferred LLC, those
        // on it. Nothing while none is queued.
        if let (Some(q), Some(p)) = (g.cas_queued, g.cas_queued_pref)
            && q > 0
        {
            v.push(Span::raw(format!(" pref {p}/{q}")));
        }
        if let (Some(p50), Some(p99)) = (g.rq_wait_p50_ns, g.rq_wait_p99_ns) {
            // Tops of log2 histogram buckets: upper bounds.
            v.push(Span::raw(format!(
                " wait p50 ≤{} p99 ≤{}",
                ns(p50),
                ns(p99)
            )));
        } else if let Some(w) = g.rq_wait_ns {
            v.push(Span::raw(format!(
                " wait {}/s",
                ns((w as f64 / secs) as u64)
            )));
        }
        if let (Some(i), Some(o)) = (g.migrations_in, g.migrations_out) {
            v.push(Span::raw(format!(
                " in {}/s out {}/s",
                rate(i, secs),
                rate(o, secs)
            )));
        }
        if let Some(m) = g.counters.as_ref().and_then(|c| c.mpki) {
            v.push(Span::raw(format!(" MPKI {m:.1}")));
        }
    }
    v
}

fn llc_title(l: &Llc) -> String {
    let size = l
        .size_kb
        .map(|k| {
            if k >= 1024 {
                format!(" {}M", k / 1024)
            } else {
                format!(" {k}K")
            }
        })
        .unwrap_or_default();
    format!("LLC {}{size} [{}] ", l.id, crate::cpulist::format(&l.cpus))
}

/// A CPU's cell, coloured by `heat` (its busy, or its LLC's occupancy when the map is
/// toggled; `None`: the value is unknown).
fn cpu_cell(
    c: Option<&CpuStats>,
    cpu: u32,
    width: usize,
    secs: f64,
    t: &Theme,
    heat: Option<Option<f64>>,
) -> Span<'static> {
    let busy = c.and_then(|c| c.busy);
    let shade = heat.unwrap_or(busy);
    let online = c.is_some_and(|c| c.online);
    let waiting = c
        .and_then(|c| c.rq_wait_ns)
        .is_some_and(|w| secs > 0.0 && w as f64 / 1e9 / secs > 0.10);
    let mark = if waiting { '*' } else { ' ' };
    let text = match width {
        9 if !online => format!("{cpu:>3}  off "),
        9 => format!("{cpu:>3} {:>4}{mark}", or_dash(busy, pct)),
        4 if !online => "off ".to_string(),
        4 => format!(
            "{:>3}{mark}",
            or_dash(busy, |b| format!("{:.0}", b * 100.0))
        ),
        _ if t.mono => format!("{}{mark}", Theme::shade(shade.unwrap_or(0.0))),
        _ => format!(" {mark}"),
    };
    let style = if online {
        t.heat_cell(shade.unwrap_or(0.0))
    } else {
        t.dim()
    };
    Span::styled(text, style)
}

fn cell_lines(app: &App, s: &Snapshot, w: usize, width: usize) -> Vec<Line<'static>> {
    let t = app.theme();
    let per_row = (width / w).max(1);
    let secs = s.time.interval_secs();
    let mut lines = Vec::new();
    // One width for every LLC title so that the bars line up.
    let title_w = app
        .topo
        .llcs
        .iter()
        .map(|l| llc_title(l).chars().count())
        .max()
        .unwrap_or(0);
    for node in node_ids(app) {
        let llcs: Vec<&Llc> = app
            .topo
            .llcs
            .iter()
            .filter(|l| l.node.unwrap_or(0) == node)
            .collect();
        let n_cpus: usize = llcs.iter().map(|l| l.cpus.len()).sum();
        lines.push(super::fit_line(node_line(app, s, node, n_cpus), width));
        for l in llcs {
            let g = s.llcs.get(l.id as usize);
            let mut head = vec![Span::styled(
                format!("{:<title_w$}", llc_title(l)),
                t.accent(),
            )];
            head.extend(llc_facts(app, s, g, t));
            lines.push(super::fit_line(Line::from(head), width));
            let heat = app.map_occupancy.then(|| occupancy(app, g));
            for chunk in l.cpus.chunks(per_row) {
                let spans: Vec<Span> = chunk
                    .iter()
                    .map(|&cpu| cpu_cell(s.cpu(cpu), cpu, w, secs, t, heat))
                    .collect();
                lines.push(Line::from(spans));
            }
        }
    }
    lines
}

fn node_ids(app: &App) -> Vec<u32> {
    let mut ids: Vec<u32> = app.topo.nodes.iter().map(|n| n.id).collect();
    if ids.is_empty() || app.topo.llcs.iter().any(|l| l.node.is_none()) {
        ids.push(0);
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn summary_lines(
    app: &App,
    s: &Snapshot,
    columns: usize,
    compact: bool,
    width: usize,
    height: usize,
) -> Vec<Line<'static>> {
    let t = app.theme();
    let col_w = width / columns.max(1);
    let secs = s.time.interval_secs();
    let mut entries: Vec<Vec<Span<'static>>> = Vec::new();
    for node in node_ids(app) {
        for l in app.topo.llcs.iter().filter(|l| l.node.unwrap_or(0) == node) {
            let g = s.llcs.get(l.id as usize);
            if compact {
                let busy = if app.map_occupancy {
                    occupancy(app, g)
                } else {
                    g.and_then(|g| g.busy)
                };
                let mut e = vec![
                    Span::styled(format!("n{node} L{:<3} ", l.id), t.accent()),
                    Span::styled(
                        bar(busy.unwrap_or(0.0), 5),
                        ratatui::style::Style::default().fg(t.heat(busy.unwrap_or(0.0))),
                    ),
                    Span::raw(format!(" {:>4}", or_dash(busy, pct))),
                ];
                if let Some((i, o)) = g.and_then(|g| Some((g.migrations_in?, g.migrations_out?))) {
                    e.push(Span::raw(format!(" ↓{} ↑{}", rate(i, secs), rate(o, secs))));
                }
                entries.push(e);
            } else {
                let mut e = vec![Span::styled(
                    format!("n{node} LLC {:<3} {:>3}c ", l.id, l.cpus.len()),
                    t.accent(),
                )];
                e.extend(llc_facts(app, s, g, t));
                entries.push(e);
            }
        }
    }
    let mut rows = entries.len().div_ceil(columns.max(1));
    let mut more = 0;
    if rows > height {
        // Still too many: show what fits and say how many are left out.
        rows = height.saturating_sub(1).max(1);
        more = entries.len().saturating_sub(rows * columns.max(1));
    }
    let mut lines = Vec::new();
    for r in 0..rows {
        let mut spans = Vec::new();
        for c in 0..columns {
            let Some(e) = entries.get(c * rows + r) else {
                continue;
            };
            let mut used = 0;
            for sp in e {
                let n = sp.content.chars().count();
                if used + n > col_w.saturating_sub(1) {
                    break;
                }
                used += n;
                spans.push(sp.clone());
            }
            if c + 1 < columns {
                spans.push(Span::raw(" ".repeat(col_w.saturating_sub(used))));
            }
        }
        lines.push(Line::from(spans));
    }
    if more > 0 {
        lines.push(Line::styled(
            format!("… {more} more LLCs: enlarge the terminal"),
            t.dim(),
        ));
    }
    lines
}

/// One line per CPU: busy, steal, runnable, run-queue wait, context switches,
/// migrations in/out and counters (when there is room for every CPU).
fn cpu_table(app: &App, s: &Snapshot) -> Vec<Line<'static>> {
    let t = app.theme();
    let secs = s.time.interval_secs();
    let mut out = vec![Line::styled(
        format!(
            "{:>4} {:>4} {:>5} {:>5} {:>4} {:>9} {:>8} {:>7} {:>7} {:>5} {:>6}",
            "CPU", "LLC", "BUSY", "STEAL", "RUN", "WAIT/s", "CTX/s", "IN/s", "OUT/s", "IPC", "MPKI"
        ),
        t.accent().add_modifier(Modifier::BOLD),
    )];
    for c in &s.cpus {
        let llc = app
            .topo
            .llc_of(c.cpu)
            .map_or("–".to_string(), |l| l.to_string());
        if !c.online {
            out.push(Line::styled(
                format!("{:>4} {llc:>4} offline", c.cpu),
                t.dim(),
            ));
            continue;
        }
        let k = c.counters.as_ref();
        out.push(Line::from(vec![
            Span::raw(format!("{:>4} {llc:>4} ", c.cpu)),
            Span::styled(
                format!("{:>5}", or_dash(c.busy, pct)),
                ratatui::style::Style::default().fg(t.heat(c.busy.unwrap_or(0.0))),
            ),
            Span::raw(format!(
                " {:>5} {:>4} {:>9} {:>8} {:>7} {:>7} {:>5} {:>6}",
                or_dash(c.steal, pct),
                or_dash(c.runnable, |r| r.to_string()),
                or_dash(c.rq_wait_ns, |w| ns((w as f64 / secs.max(1e-9)) as u64)),
                or_dash(c.ctx_switches, |v| rate(v, secs)),
                or_dash(c.migrations_in, |v| rate(v, secs)),
                or_dash(c.migrations_out, |v| rate(v, secs)),
                or_dash(k.and_then(|k| k.ipc), |v| format!("{v:.2}")),
                or_dash(k.and_then(|k| k.mpki), |v| format!("{v:.1}")),
            )),
        ]));
    }
    out
}
