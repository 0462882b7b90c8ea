//! Processes: the sortable, filterable table of the busiest processes — CPU, threads,
//! preferred LLC (k = the kernel's, e = emulated), hit %, LLC spread, cross-LLC
//! migrations/s, run-queue wait, IPC/MPKI when counters exist — and the drill-down into
//! one process: runtime and counters per LLC, and where its new threads were placed,
//! highlighting a placement pile-up (threads stacked on one CPU while other allowed CPUs
//! sat idle, ../shared/seeds/001; the detector is findings::pileup).

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{
    bar, block, columns_that_fit, fit, keep_columns, ns, or_dash, pct, rate, selected, waiting,
};
use crate::findings::pileup::{self, PileUp};
use crate::snapshot::{EventKind, Precision, PreferredKind, ProcessStats};
use crate::tui::app::{App, SortKey, ViewId};

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let Some(table) = s.processes.as_ref() else {
        super::unavailable(
            f,
            area,
            app,
            "Processes",
            &super::source_reason(app, crate::snapshot::SourceName::ProcfsTasks)
                .unwrap_or_else(|| "no source provided process rows".into()),
        );
        return;
    };
    if let Some(pid) = app.drill {
        draw_drill(f, area, app, pid);
        return;
    }
    let t = app.theme();
    let secs = s.time.interval_secs();
    let rows = app.process_rows();
    let precision = match table.precision {
        Precision::Exact => "exact",
        Precision::Sampled => "sampled",
    };
    // A search looks at the rows the snapshot kept (the busiest `--top`), said plainly
    // when there are more processes than that.
    let filter = match app.filter_of(ViewId::Processes) {
        "" => String::new(),
        f if table.total as usize > table.rows.len() => format!(
            " · filter \"{f}\" over the {} busiest kept (--top keeps more)",
            table.rows.len()
        ),
        f => format!(" · filter \"{f}\""),
    };
    let lost = if table.dropped > 0 {
        format!(" · ⚠ {} updates lost: process maps full", table.dropped)
    } else {
        String::new()
    };
    let title = format!(
        "Processes — {} shown of {} · {precision}{lost} · sort {}{filter} (s sort, / filter, Enter drill)",
        rows.len(),
        table.total,
        app.sort.label()
    );
    // Columns: header (with its unit), sort key, width, and the order in which they go
    // when the terminal is narrow (0 never goes; higher goes first).
    const COLS: [(&str, Option<SortKey>, u16, u8); 14] = [
        ("PID", Some(SortKey::Pid), 8, 0),
        ("COMM", Some(SortKey::Comm), 16, 0),
        ("THR", Some(SortKey::Threads), 4, 3),
        ("CPU%", Some(SortKey::Cpu), 6, 0),
        ("PREF", None, 5, 4),
        ("HIT%", Some(SortKey::Hit), 5, 2),
        ("SPREAD", None, 6, 5),
        ("xLLC/s", Some(SortKey::CrossLlc), 7, 0),
        ("MIG/s", Some(SortKey::Migrations), 7, 1),
        ("WAIT/s", Some(SortKey::Wait), 8, 0),
        ("IPC", Some(SortKey::Ipc), 5, 6),
        ("MPKI", Some(SortKey::Mpki), 6, 6),
        ("CLS", None, 4, 4),
        ("CGROUP", None, 6, 7),
    ];
    // The scheduling class column only while a sched_ext scheduler runs (rows say).
    let has_cls = rows.iter().any(|r| r.sched_ext.is_some());
    let cols = COLS.map(|c| {
        if c.0 == "CLS" && !has_cls {
            (0, 0)
        } else {
            (c.2, c.3)
        }
    });
    // Inside the border; one space between columns.
    let room = area.width.saturating_sub(2);
    let mut shown = columns_that_fit(&cols, room);
    shown.retain(|&i| has_cls || COLS[i].0 != "CLS");
    // COMM grows into the room left (a kernel thread's name runs to 64), up to its longest.
    let used: u16 = shown.iter().map(|&i| cols[i].0 + 1).sum();
    let longest = rows
        .iter()
        .map(|r| unicode_width::UnicodeWidthStr::width(r.comm.as_str()))
        .max()
        .unwrap_or(0);
    let comm_w = COLS[1].2
        + u16::try_from(longest.saturating_sub(usize::from(COLS[1].2)))
            .unwrap_or(u16::MAX)
            .min(room.saturating_sub(used))
            .min(48);
    let header = Row::new(shown.iter().map(|&i| {
        let (name, key, _, _) = COLS[i];
        // The arrow says the rows' direction: ▲ up (names A→Z, lowest hit first), ▼ down
        // (most CPU first); reversed by the same key.
        let ascending = app.sort.ascending() != app.sort_reverse;
        let mark = match (key == Some(app.sort), ascending) {
            (false, _) => "",
            (true, false) => "▼",
            (true, true) => "▲",
        };
        Cell::from(format!("{name}{mark}"))
    }))
    .style(t.accent().add_modifier(Modifier::BOLD));
    let body_h = area.height.saturating_sub(3) as usize;
    let first = app.proc_sel.saturating_sub(body_h.saturating_sub(1));
    // Rows start under the border and the column header.
    app.hits.list.set(Some((area.y + 2, body_h as u16, first)));
    let trs: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(body_h)
        .map(|(i, r)| {
            let c = r.counters.as_ref();
            // No preference: the first of the kernel's reasons, coded (the drill-down
            // says them all).
            let none = r
                .no_preference
                .first()
                .map_or(String::from("–"), |w| format!("–{}", w.code()));
            let pref = r.preferred_llc.map_or(none, |l| {
                format!(
                    "{l}{}",
                    match r.preferred_kind {
                        PreferredKind::Kernel => "k",
                        PreferredKind::Emulated => "e",
                    }
                )
            });
            let hit_style = match r.preferred_hit {
                Some(h) if h < 0.5 => t.bad(),
                Some(h) if h < 0.8 => t.warn(),
                _ => t.base(),
            };
            let x_style = if r.cross_llc_migrations > 0 {
                t.warn()
            } else {
                t.base()
            };
            let cells = vec![
                Cell::from(r.pid.to_string()),
                Cell::from(fit(&r.comm, comm_w as usize)),
                Cell::from(if r.exited {
                    "exit".to_string()
                } else {
                    r.threads.to_string()
                }),
                Cell::from(pct(r.cpu_time_ns as f64 / 1e9 / secs.max(1e-9))),
                Cell::from(pref),
                Cell::from(or_dash(r.preferred_hit, pct)).style(hit_style),
                Cell::from(r.llc_spread.to_string()),
                Cell::from(rate(r.cross_llc_migrations, secs)).style(x_style),
                Cell::from(rate(r.migrations, secs)),
                Cell::from(wait_rate(r, secs)),
                Cell::from(or_dash(c.and_then(|c| c.ipc), |v| format!("{v:.2}"))),
                Cell::from(or_dash(c.and_then(|c| c.mpki), |v| format!("{v:.1}"))),
                Cell::from(match r.sched_ext {
                    Some(true) => "ext",
                    Some(false) => "fair",
                    None => "–",
                }),
                Cell::from(r.cgroup.clone().unwrap_or_default()),
            ];
            let row = Row::new(keep_columns(cells, &shown));
            if i == app.proc_sel {
                row.style(selected(app))
            } else if r.exited {
                row.style(t.dim())
            } else {
                row
            }
        })
        .collect();
    let widths: Vec<Constraint> = shown
        .iter()
        .map(|&i| {
            if COLS[i].0 == "CGROUP" {
                Constraint::Min(COLS[i].2)
            } else if i == 1 {
                Constraint::Length(comm_w)
            } else {
                Constraint::Length(COLS[i].2)
            }
        })
        .collect();
    let mut tbl = Table::new(trs, widths)
        .header(header)
        .block(block(app, title));
    if rows.is_empty() {
        tbl = tbl.footer(Row::new(vec![Cell::from(
            if app.filter_of(ViewId::Processes).is_empty() {
                "no process ran"
            } else {
                "no process matches the filter"
            },
        )]));
    }
    f.render_widget(tbl, area);
}

/// Placements of `pid`'s new threads in the last `window` snapshots, per target CPU, and
/// the pile-ups among them (the same detector as `llctop report`).
pub fn placements(app: &App, pid: u32, window: usize) -> (BTreeMap<i32, usize>, Vec<PileUp>) {
    let hist = app.history(window);
    let mut per_cpu: BTreeMap<i32, usize> = BTreeMap::new();
    for e in hist
        .iter()
        .flat_map(|s| s.events.iter().flat_map(|l| &l.events))
    {
        if e.kind == EventKind::Placement && e.tgid == pid {
            *per_cpu.entry(e.to_cpu).or_default() += 1;
        }
    }
    let piles = pileup::find(hist)
        .into_iter()
        .filter(|p| p.tgid == pid)
        .collect();
    (per_cpu, piles)
}

fn draw_drill(f: &mut Frame, area: Rect, app: &App, pid: u32) {
    let t = app.theme();
    let Some(s) = app.current() else {
        return;
    };
    let row: Option<&ProcessStats> = s
        .processes
        .as_ref()
        .and_then(|p| p.rows.iter().find(|r| r.pid == pid));
    let b = block(app, format!("Process {pid} (Esc back)"));
    let inner = b.inner(area);
    f.render_widget(b, area);
    let [top, llcs, places] = Layout::vertical([
        Constraint::Length(5),
        Constraint::Min(3),
        Constraint::Length(8),
    ])
    .areas(inner);
    let secs = s.time.interval_secs();
    let Some(r) = row else {
        f.render_widget(
            Paragraph::new(Line::styled(
                format!("process {pid} did not run in this interval (or is not in the top rows)"),
                t.warn(),
            )),
            top,
        );
        draw_placements(f, places, app, pid);
        return;
    };
    let mut head = vec![
        Line::from(vec![
            Span::styled(
                format!("{} ", r.comm),
                t.accent().add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "pid {} · {} threads · CPU {} · cgroup {}",
                r.pid,
                r.threads,
                pct(r.cpu_time_ns as f64 / 1e9 / secs.max(1e-9)),
                r.cgroup.as_deref().unwrap_or("–")
            )),
        ]),
        Line::raw(format!(
            "preferred LLC {} ({}) · hit {} · spread {} LLCs · migrations {}/s ({} cross-LLC/s) · wait {}/s{}{}",
            or_dash(r.preferred_llc, |l| l.to_string()),
            match r.preferred_kind {
                PreferredKind::Kernel => "the kernel's p->preferred_llc",
                PreferredKind::Emulated => "emulated from runtime",
            },
            or_dash(r.preferred_hit, pct),
            r.llc_spread,
            rate(r.migrations, secs),
            rate(r.cross_llc_migrations, secs),
            wait_rate(r, secs),
            wait_per_run(r, secs)
                .map(|w| format!(" ({w})"))
                .unwrap_or_default(),
            if r.switches_unseen > 0 {
                format!(" ({} switch-ins unseen: waits missing)", r.switches_unseen)
            } else {
                String::new()
            },
        )),
    ];
    if let Some(line) = preferred_moves_line(r, secs) {
        head.push(Line::raw(line));
    }
    if let Some(line) = no_preference_line(r, s) {
        head.push(Line::styled(line, t.warn()));
    }
    if let Some(line) = sharing_line(pid, s) {
        head.push(Line::raw(line));
    }
    if let Some(line) = wakeups_line(pid, s, secs) {
        head.push(Line::raw(line));
    }
    if let Some(line) = thread_wakeups_line(pid, s, secs) {
        head.push(Line::raw(line));
    }
    let group = s.resctrl.as_ref().and_then(|x| x.of_pid(pid));
    match group {
        Some(g) => {
            let c = g.total;
            let why = |w: Option<crate::snapshot::Unread>| {
                w.map_or("–".to_string(), |w| format!("– {}", w.label()))
            };
            head.push(Line::raw(format!(
                "L3 occupancy {} · memory bandwidth local {} remote {} (resctrl group {})",
                c.occupancy_bytes
                    .map_or_else(|| why(c.occupancy_why), crate::units::bytes),
                c.mbm_local_bytes.map_or_else(
                    || why(c.local_why),
                    |b| crate::units::bytes_per_sec(b, secs)
                ),
                c.mbm_remote_bytes().map_or_else(
                    || why(c.remote_why()),
                    |b| crate::units::bytes_per_sec(b, secs)
                ),
                crate::text::Esc(&g.path),
            )));
        }
        None => head.push(Line::styled(
            "L3 occupancy: not monitored (resctrl with --cache-top N or --cache-pid PID)",
            t.dim(),
        )),
    }
    if let Some(c) = &r.counters {
        head.push(Line::raw(format!(
            "IPC {} · MPKI {} · cache misses {}/s",
            or_dash(c.ipc, |v| format!("{v:.2}")),
            or_dash(c.mpki, |v| format!("{v:.1}")),
            or_dash(c.cache_misses, |v| rate(v, secs)),
        )));
    } else {
        head.push(Line::styled(
            "hardware counters per process: not available (needs a PMU and the BPF source)",
            t.dim(),
        ));
    }
    f.render_widget(Paragraph::new(head), top);

    let total = r.cpu_time_ns.max(1) as f64;
    let mut lines = vec![Line::styled(
        if group.is_some() {
            "runtime and L3 occupancy per LLC"
        } else {
            "runtime per LLC"
        },
        t.dim(),
    )];
    // Its L3 bytes on each LLC (the parts of one LLC summed).
    let occ_on = |l: usize| -> Option<u64> {
        let parts: Vec<u64> = group?
            .domains
            .iter()
            .filter(|d| d.llc == Some(l as u32))
            .map(|d| d.mon.occupancy_bytes)
            .collect::<Option<Vec<u64>>>()?;
        (!parts.is_empty()).then(|| parts.iter().sum())
    };
    for (l, &ns_on) in r.runtime_per_llc_ns.iter().enumerate() {
        let occ = occ_on(l);
        if ns_on == 0 && r.preferred_llc != Some(l as u32) && occ.unwrap_or(0) == 0 {
            continue;
        }
        let share = ns_on as f64 / total;
        let mut spans = vec![
            Span::raw(format!("LLC {l:<3}")),
            Span::styled(
                bar(share, 24),
                ratatui::style::Style::default().fg(t.heat(share)),
            ),
            Span::raw(format!(" {:>4}", pct(share))),
        ];
        if let Some(o) = occ {
            spans.push(Span::raw(format!("  L3 {:>9}", crate::units::bytes(o))));
        }
        if let Some(Some(c)) = r.counters_per_llc.get(l) {
            spans.push(Span::raw(format!(
                "  IPC {} MPKI {}",
                or_dash(c.ipc, |v| format!("{v:.2}")),
                or_dash(c.mpki, |v| format!("{v:.1}"))
            )));
        }
        if r.preferred_llc == Some(l as u32) {
            spans.push(Span::styled("  ← preferred", t.good()));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), llcs);
    draw_placements(f, places, app, pid);
}

fn draw_placements(f: &mut Frame, area: Rect, app: &App, pid: u32) {
    let t = app.theme();
    let (per_cpu, piles) = placements(app, pid, 60);
    let mut lines = vec![Line::styled(
        "placements of new threads (last 60 snapshots)",
        t.dim(),
    )];
    if !app.history(60).iter().any(|s| s.events.is_some()) {
        lines.push(Line::styled(
            "not available: placement events come from the BPF source",
            t.dim(),
        ));
    } else if per_cpu.is_empty() {
        lines.push(Line::raw("no new threads placed"));
    } else {
        for p in &piles {
            lines.push(Line::styled(
                format!("⚠ {}", p.describe()),
                t.bad().add_modifier(Modifier::BOLD),
            ));
        }
        let mut spans = Vec::new();
        for (cpu, n) in &per_cpu {
            let style = if piles.iter().any(|p| p.cpu == *cpu) {
                t.bad()
            } else {
                t.base()
            };
            spans.push(Span::styled(format!("cpu{cpu}×{n}  "), style));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
        area,
    );
}

/// A row's run-queue wait per second; `≥` before it when some of its switch-ins were made
/// without the tracepoint (their waits are missing: a lower bound).
fn wait_rate(r: &ProcessStats, secs: f64) -> String {
    let w = ns((r.rq_wait_ns as f64 / secs.max(1e-9)) as u64);
    if r.switches_unseen > 0 {
        format!("≥{w}")
    } else {
        w
    }
}

/// Its mean run-queue wait per run and its runs per second (`rq_wait_ns / runs`, the
/// kernel's own schedstat ratio), where runs were counted and there were some.
pub fn wait_per_run(r: &ProcessStats, secs: f64) -> Option<String> {
    let runs = r.runs.filter(|&n| n > 0)?;
    Some(format!(
        "{} per run, {} runs/s",
        ns(r.rq_wait_ns / runs),
        rate(runs, secs)
    ))
}

/// The process's moves onto and off its kernel-preferred LLC (7.2+), when there were any.
pub fn preferred_moves_line(r: &crate::snapshot::ProcessStats, secs: f64) -> Option<String> {
    let (onto, off) = (r.moves_onto_preferred?, r.moves_off_preferred?);
    (onto + off > 0).then(|| {
        format!(
            "moves onto its preferred LLC {}/s · off it {}/s ({onto} and {off} this interval)",
            rate(onto, secs),
            rate(off, secs)
        )
    })
}

/// The processes it maps shared memory with (the three it shares most with), named from
/// the snapshot's rows: `None` where it shares none or the maps were not read.
pub fn sharing_line(pid: u32, s: &crate::snapshot::Snapshot) -> Option<String> {
    let pairs: Vec<_> = s
        .sharing
        .as_ref()?
        .pairs
        .iter()
        .filter(|p| p.a == pid || p.b == pid)
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let name = |other: u32| row_name(s, other);
    let shown: Vec<String> = pairs
        .iter()
        .take(3)
        .map(|p| {
            let other = if p.a == pid { p.b } else { p.a };
            format!(
                "{other}{} {} in {} object{} ({})",
                name(other),
                crate::units::bytes(p.bytes),
                p.objects,
                if p.objects == 1 { "" } else { "s" },
                crate::text::escape(&p.object)
            )
        })
        .collect();
    Some(format!(
        "shares memory with {}{}",
        shown.join(" · "),
        match pairs.len() {
            n if n > 3 => format!(" · {} more", n - 3),
            _ => String::new(),
        }
    ))
}

/// ` NAME` of process `pid` from the snapshot's rows, escaped (empty when it has no row).
fn row_name(s: &crate::snapshot::Snapshot, pid: u32) -> String {
    s.processes
        .as_ref()
        .and_then(|t| t.rows.iter().find(|r| r.pid == pid))
        .map_or(String::new(), |r| {
            format!(" {}", crate::text::escape(&r.comm))
        })
}

/// The processes it woke and that woke it in the interval (`--wakeups`), three of each,
/// the most first: `None` where it woke and was woken by none or nothing was counted.
pub fn wakeups_line(pid: u32, s: &crate::snapshot::Snapshot, secs: f64) -> Option<String> {
    let w = s.wakeups.as_ref()?;
    let side = |word: &str, of: &dyn Fn(&crate::snapshot::WakePair) -> Option<u32>| {
        let mut all: Vec<(u32, u64)> = w
            .pairs
            .iter()
            .filter_map(|p| Some((of(p)?, p.count)))
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        (!all.is_empty()).then(|| {
            let shown: Vec<String> = all
                .iter()
                .take(3)
                .map(|(other, n)| format!("{other}{} {}/s", row_name(s, *other), rate(*n, secs)))
                .collect();
            format!(
                "{word} {}{}",
                shown.join(" · "),
                match all.len() {
                    n if n > 3 => format!(" · {} more", n - 3),
                    _ => String::new(),
                }
            )
        })
    };
    let wakes = side("wakes", &|p| (p.waker == pid).then_some(p.wakee));
    let woken = side("woken by", &|p| (p.wakee == pid).then_some(p.waker));
    let parts: Vec<String> = [wakes, woken].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join(" — "))
}

/// Its threads that wake each other in the interval (`--wakeups`), waker → wakee, three
/// pairs, the most first: `None` where none did or nothing was counted.
pub fn thread_wakeups_line(pid: u32, s: &crate::snapshot::Snapshot, secs: f64) -> Option<String> {
    let w = s.wakeups.as_ref()?;
    // `threads` is kept the most first.
    let all: Vec<&crate::snapshot::ThreadWake> =
        w.threads.iter().filter(|t| t.pid == pid).collect();
    let shown: Vec<String> = all
        .iter()
        .take(3)
        .map(|t| format!("{}→{} {}/s", t.waker, t.wakee, rate(t.count, secs)))
        .collect();
    (!shown.is_empty()).then(|| {
        format!(
            "threads wake each other: {}{}",
            shown.join(" · "),
            match all.len() {
                n if n > 3 => format!(" · {} more", n - 3),
                _ => String::new(),
            }
        )
    })
}

/// Why the kernel gives the process no preferred LLC (7.2+), with its cache group's
/// figures: `None` where it has one or the group was not read.
pub fn no_preference_line(
    r: &crate::snapshot::ProcessStats,
    s: &crate::snapshot::Snapshot,
) -> Option<String> {
    let g = r.cache_group.as_ref()?;
    if r.no_preference.is_empty() {
        return None;
    }
    let why: Vec<&str> = r.no_preference.iter().map(|w| w.text()).collect();
    let numa_off = s
        .numa
        .as_ref()
        .and_then(|n| n.balancing_mode)
        .is_some_and(|m| m & 1 == 0);
    Some(format!(
        "no preferred LLC: {} · cache group: {} running threads (avg), footprint {}{}, scanned {} epochs ago, NUMA node {}",
        why.join("; "),
        g.nr_running_avg,
        crate::units::bytes(g.footprint_bytes),
        if numa_off {
            " (NUMA balancing off: not counted, the size check does nothing)"
        } else {
            ""
        },
        g.epochs_since_scan,
        g.numa_node.map_or("–".to_string(), |n| n.to_string()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferred_moves_show_only_where_the_kernel_has_a_preference_and_some_moved() {
        let mut r = ProcessStats::default();
        assert_eq!(
            preferred_moves_line(&r, 1.0),
            None,
            "another kernel: nothing"
        );
        r.moves_onto_preferred = Some(0);
        r.moves_off_preferred = Some(0);
        assert_eq!(preferred_moves_line(&r, 1.0), None, "none moved: nothing");
        assert_eq!(wait_per_run(&r, 1.0), None, "no runs counted: nothing");
        let counted = ProcessStats {
            rq_wait_ns: 3_000_000,
            runs: Some(1_500),
            ..r.clone()
        };
        assert_eq!(
            wait_per_run(&counted, 2.0).as_deref(),
            Some("2µs per run, 750 runs/s")
        );
        r.moves_off_preferred = Some(4);
        let line = preferred_moves_line(&r, 2.0).unwrap_or_default();
        assert!(
            line.contains("off it 2/s") && line.contains("0 and 4"),
            "{line}"
        );
    }

    #[test]
    fn the_wakeups_line_says_both_directions_per_second_named_escaped() {
        use crate::snapshot::{ProcessTable, Snapshot, WakePair, Wakeups};
        let mut s = Snapshot::default();
        assert_eq!(wakeups_line(1, &s, 1.0), None, "not counted: nothing");
        let pair = |waker, wakee, count| WakePair {
            waker,
            wakee,
            count,
        };
        s.wakeups = Some(Wakeups {
            pairs: vec![
                pair(1, 2, 400),
                pair(2, 1, 390),
                pair(1, 3, 20),
                pair(4, 5, 9),
            ],
            ..Default::default()
        });
        s.processes = Some(ProcessTable {
            rows: vec![ProcessStats {
                pid: 2,
                comm: "peer\x1b".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let line = wakeups_line(1, &s, 2.0).unwrap_or_default();
        assert_eq!(
            line,
            "wakes 2 peer\\x1b 200/s · 3 10/s — woken by 2 peer\\x1b 195/s"
        );
        assert_eq!(wakeups_line(5, &s, 1.0).as_deref(), Some("woken by 4 9/s"));
        assert_eq!(wakeups_line(9, &s, 1.0), None, "in no pair");
    }

    #[test]
    fn the_thread_wakeups_line_names_the_process_own_threads_the_most_first() {
        use crate::snapshot::{Snapshot, ThreadWake, Wakeups};
        let mut s = Snapshot::default();
        assert_eq!(
            thread_wakeups_line(7, &s, 1.0),
            None,
            "not counted: nothing"
        );
        let t = |pid, waker, wakee, count| ThreadWake {
            pid,
            waker,
            wakee,
            count,
        };
        s.wakeups = Some(Wakeups {
            threads: vec![
                t(7, 70, 71, 800),
                t(7, 71, 70, 780),
                t(9, 90, 91, 500),
                t(7, 72, 70, 40),
                t(7, 73, 70, 2),
            ],
            ..Default::default()
        });
        assert_eq!(
            thread_wakeups_line(7, &s, 2.0).as_deref(),
            Some("threads wake each other: 70→71 400/s · 71→70 390/s · 72→70 20/s · 1 more")
        );
        assert_eq!(thread_wakeups_line(8, &s, 1.0), None, "none of its threads");
    }

    #[test]
    fn the_sharing_line_names_the_partners_escaped_the_most_first() {
        use crate::snapshot::{ProcessTable, SharedPair, Sharing, Snapshot};
        let mut s = Snapshot::default();
        assert_eq!(sharing_line(1, &s), None, "not read: nothing");
        let pair = |a, b, mib: u64, object: &str| SharedPair {
            a,
            b,
            bytes: mib << 20,
            objects: 1,
            object: object.into(),
        };
        s.sharing = Some(Sharing {
            seq: 0,
            processes: 5,
            pairs: vec![
                pair(1, 2, 64, "/memfd:ring\x1b (deleted)"),
                pair(1, 3, 8, "/dev/shm/x"),
                pair(2, 3, 4, "/dev/shm/x"),
                pair(1, 4, 2, "/dev/shm/x"),
                pair(1, 5, 1, "/dev/shm/x"),
            ],
        });
        s.processes = Some(ProcessTable {
            rows: vec![ProcessStats {
                pid: 2,
                comm: "peer\x07".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let line = sharing_line(1, &s).unwrap_or_default();
        assert!(
            line.starts_with("shares memory with 2 peer\\x07 64.0 MiB in 1 object (/memfd:ring\\x1b (deleted)) · 3 8.0 MiB")
                && line.ends_with(" · 1 more"),
            "{line}"
        );
        assert_eq!(sharing_line(9, &s), None, "shares nothing");
    }
}
