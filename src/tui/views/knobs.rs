//! Knobs: the registry with current values, defaults and writability (with the
//! kernel's reason when read-only); `x` toggles, Enter edits, `u` undoes, `p` applies a
//! profile. Below: the selected knob's description and what its values mean here, and
//! the log of changes with what was written and read back; while an A/B experiment runs
//! (`a`), its windows and then its verdict take the description's place. In replay: every
//! knob's value when the recording began and at the position shown, and (on a tall
//! terminal) the changes up to there.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Clear, Paragraph, Row, Table, Wrap};

use super::{block, fit, selected};
use crate::knobs::Access;
use crate::knobs::session::KnobAction;
use crate::tui::app::{App, ViewId};

/// The view's height from which the change log shows under the list.
const LOG_FROM: u16 = 30;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    // The list first: the change log only on a terminal tall enough for both.
    let log_h = if area.height >= LOG_FROM { 7 } else { 0 };
    let [list_area, detail_area, log_area] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(if app.experiment.is_some() { 10 } else { 6 }),
        Constraint::Length(log_h),
    ])
    .areas(area);
    match &app.session {
        None => draw_replayed(f, list_area, app),
        Some(s) => draw_list(f, list_area, app, s, log_h > 0),
    }
    match &app.experiment {
        Some(st) => draw_ab(f, detail_area, app, st),
        None => draw_detail(f, detail_area, app),
    }
    if log_h > 0 {
        draw_log(f, log_area, app);
    }
    if let Some(i) = app.profile_pick {
        draw_picker(f, area, app, i);
    }
}

/// Replay: every knob the recording knows — its value when the recording began and at the
/// position shown (the changes up to there applied), the changed ones first and marked.
fn draw_replayed(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let events = app.knob_events_so_far();
    let mut now = app.start_knobs.clone();
    for e in &events {
        now.insert(e.id.clone(), e.read_back.clone());
    }
    let mut ids: Vec<&String> = now.keys().collect();
    ids.sort_by_key(|id| (app.start_knobs.get(*id) == now.get(*id), *id));
    let changed = ids
        .iter()
        .filter(|id| app.start_knobs.get(**id) != now.get(**id))
        .count();
    let title = format!(
        "Knobs of the recording — {} at its start, {changed} changed by this point, {} changes in all (knobs are changed only in a live session)",
        app.start_knobs.len(),
        app.knob_log.len()
    );
    if ids.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "this recording holds no knob values (made before llctop recorded them, or by a command that does not)",
                t.dim(),
            ))
            .wrap(Wrap { trim: true })
            .block(block(app, title)),
            area,
        );
        return;
    }
    let id_w = widths(area.width)[0];
    let value_w = (area.width.saturating_sub(id_w + 6) / 2).clamp(8, 40);
    let header = Row::new(["KNOB", "AT START", "HERE"].map(Cell::from))
        .style(t.accent().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = ids
        .iter()
        .take(area.height.saturating_sub(3) as usize)
        .map(|id| {
            let start = app.start_knobs.get(*id).map_or("–", String::as_str);
            let here = now.get(*id).map_or("–", String::as_str);
            let moved = app.start_knobs.get(*id) != now.get(*id);
            Row::new(vec![
                Cell::from(fit(id, id_w as usize)),
                Cell::from(fit(start, value_w as usize)),
                Cell::from(fit(
                    &format!("{here}{}", if moved { " *" } else { "" }),
                    value_w as usize,
                ))
                .style(if moved { t.warn() } else { t.base() }),
            ])
        })
        .collect();
    let tbl = Table::new(
        rows,
        [
            Constraint::Length(id_w),
            Constraint::Length(value_w),
            Constraint::Length(value_w),
        ],
    )
    .header(header)
    .block(block(app, title));
    f.render_widget(tbl, area);
}

/// Column widths (KNOB, VALUE, DEFAULT, TYPE) on a terminal `width` wide; ACCESS takes
/// the rest.
fn widths(width: u16) -> [u16; 4] {
    if width >= 100 {
        [34, 14, 9, 16]
    } else {
        [30, 11, 8, 12]
    }
}

fn draw_list(f: &mut Frame, area: Rect, app: &App, s: &crate::knobs::Session, log_shown: bool) {
    let t = app.theme();
    let knobs = app.knob_rows();
    let touched = s.pending();
    let header = Row::new(["KNOB", "VALUE", "DEFAULT", "TYPE", "ACCESS"].map(Cell::from))
        .style(t.accent().add_modifier(Modifier::BOLD));
    let body_h = area.height.saturating_sub(3) as usize;
    // ACCESS takes the rest of the row inside the border and the column gaps.
    let [id_w, value_w, default_w, type_w] = widths(area.width);
    let access_w = (area.width as usize)
        .saturating_sub(2 + (id_w + value_w + default_w + type_w) as usize + 4)
        .max(8);
    let first = app.knob_sel.saturating_sub(body_h.saturating_sub(1));
    // Rows start under the border and the column header.
    app.hits.list.set(Some((area.y + 2, body_h as u16, first)));
    let rows: Vec<Row> = knobs
        .iter()
        .enumerate()
        .skip(first)
        .take(body_h)
        .map(|(i, k)| {
            let (access, astyle) = match (&k.access, &k.not_in_effect) {
                // A fair-class knob while a sched_ext scheduler runs every task.
                (Access::Writable, Some(why)) => (format!("writable; {why}"), t.warn()),
                (Access::Writable, None) => ("writable".to_string(), t.good()),
                (Access::ReadOnly(why), _) => (format!("read-only: {why}"), t.dim()),
            };
            let changed = touched.contains(&k.id);
            let value = match (&k.value, &k.value_reason) {
                (Some(v), _) => format!("{v}{}", if changed { " *" } else { "" }),
                (None, Some(r)) => format!("? ({r})"),
                (None, None) => "?".into(),
            };
            let vstyle = if changed { t.warn() } else { t.base() };
            let row = Row::new(vec![
                Cell::from(fit(&k.id, id_w as usize)),
                Cell::from(fit(&value, value_w as usize)).style(vstyle),
                Cell::from(fit(
                    &k.default.clone().unwrap_or_else(|| "–".into()),
                    default_w as usize,
                )),
                Cell::from(fit(&k.kind.summary(), type_w as usize)),
                Cell::from(fit(&access, access_w)).style(astyle),
            ]);
            if i == app.knob_sel {
                row.style(selected(app))
            } else {
                row
            }
        })
        .collect();
    let steps = s.steps().len();
    let exit = if s.options().keep_changes {
        "kept on exit (--keep-changes)"
    } else {
        "restored on exit"
    };
    let ro = if s.options().read_only {
        " · --read-only"
    } else {
        ""
    };
    let log = if !log_shown {
        " · log: taller terminal"
    } else {
        ""
    };
    let search = match app.filter_of(ViewId::Knobs) {
        "" => String::new(),
        f => format!(" of {} matching \"{f}\"", app.knobs().len()),
    };
    let title = format!(
        "Knobs — {}{search} · {} changed ({exit}){log} · {steps} undo steps{ro} · x toggle · Enter edit · u undo · p profile · / search",
        knobs.len(),
        touched.len()
    );
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(id_w),
                Constraint::Length(value_w),
                Constraint::Length(default_w),
                Constraint::Length(type_w),
                Constraint::Min(10),
            ],
        )
        .header(header)
        .block(block(
            app,
            fit(&title, area.width.saturating_sub(2) as usize),
        )),
        area,
    );
}

fn draw_detail(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let b = block(app, "About");
    let inner = b.inner(area);
    f.render_widget(b, area);
    let Some(k) = app.knob_rows().get(app.knob_sel).copied() else {
        let notes: Vec<Line> = app
            .knob_notes
            .iter()
            .map(|n| Line::styled(n.clone(), t.dim()))
            .collect();
        f.render_widget(Paragraph::new(notes).wrap(Wrap { trim: true }), inner);
        return;
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", k.id), t.accent()),
        Span::styled(k.path.display().to_string(), t.dim()),
    ])];
    lines.push(Line::raw(k.description.clone()));
    let mut meaning: Vec<String> = k
        .notes
        .iter()
        .map(|n| format!("{} = {}", n.value, n.meaning))
        .collect();
    meaning.extend(
        k.aliases
            .iter()
            .map(|a| format!("{} → {}", a.meaning, a.value)),
    );
    if !meaning.is_empty() {
        lines.push(Line::styled(meaning.join(" · "), t.dim()));
    }
    if let Some(r) = &k.reference {
        lines.push(Line::styled(format!("ref: {r}"), t.dim()));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
}

fn draw_log(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let b = block(app, "Changes (written → read back)");
    let inner = b.inner(area);
    f.render_widget(b, area);
    let events = app.knob_events_so_far();
    if events.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled("no knob changes yet", t.dim())),
            inner,
        );
        return;
    }
    let lines: Vec<Line> = events
        .iter()
        .rev()
        .take(inner.height as usize)
        .rev()
        .map(|e| {
            let action = match e.action {
                KnobAction::Set => "set",
                KnobAction::Undo => "undo",
                KnobAction::Restore => "restore",
                KnobAction::Internal => "internal",
            };
            let ok = e.read_back == e.new;
            Line::from(vec![
                Span::styled(format!("{action:<8} "), t.dim()),
                Span::raw(format!("{}: {} → {} ", e.id, e.old, e.new)),
                Span::styled(
                    format!("wrote {:?} read back {:?}", e.written, e.read_back),
                    if ok { t.good() } else { t.bad() },
                ),
                Span::styled(
                    e.label
                        .as_ref()
                        .map(|l| format!(" [{l}]"))
                        .unwrap_or_default(),
                    t.dim(),
                ),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_picker(f: &mut Frame, area: Rect, app: &App, sel: usize) {
    let t = app.theme();
    let h = (app.profiles.len() as u16 + 4).min(area.height);
    let w = area.width.min(90);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    let mut lines = Vec::new();
    for (i, p) in app.profiles.iter().enumerate() {
        let text = format!("{:<20} {}", p.name, p.description);
        lines.push(if i == sel {
            Line::styled(text, selected(app))
        } else {
            Line::raw(text)
        });
    }
    lines.push(Line::styled(
        "Enter applies (one undo step) · Esc cancels",
        t.dim(),
    ));
    f.render_widget(
        Paragraph::new(lines)
            .block(block(app, "Apply a profile"))
            .style(t.base()),
        r,
    );
}

/// The A/B panel: where the experiment is, then the verdict (metrics that moved first).
fn draw_ab(f: &mut Frame, area: Rect, app: &App, st: &crate::tui::app::ab::AbState) {
    let t = app.theme();
    let e = &st.runner.exp;
    let mut lines = Vec::new();
    match &st.verdict {
        None => {
            let p = st.runner.progress();
            let secs = app.interval.as_secs_f64();
            lines.push(Line::styled(
                format!(
                    "A/B {}: A = {}, B = {} · window {}/{}: {} = {} · {}{}",
                    e.knob,
                    e.a,
                    e.b,
                    p.window + 1,
                    p.total,
                    if p.arm == crate::experiment::Arm::A {
                        "A"
                    } else {
                        "B"
                    },
                    e.value(p.arm),
                    if p.measuring {
                        "measuring"
                    } else {
                        "warming up"
                    },
                    p.left
                        .map(|l| format!(" · {:.0} s left", l as f64 * secs))
                        .unwrap_or_default()
                ),
                t.accent(),
            ));
            for w in st
                .runner
                .windows()
                .iter()
                .rev()
                .take(area.height.saturating_sub(3) as usize)
            {
                lines.push(Line::raw(format!(
                    "  window {} ({} = {}): snapshots #{}–#{}",
                    w.index + 1,
                    if w.arm == crate::experiment::Arm::A {
                        "A"
                    } else {
                        "B"
                    },
                    w.value,
                    w.first_seq,
                    w.last_seq
                )));
            }
            lines.push(Line::styled(
                "a stops the experiment and puts A back",
                t.dim(),
            ));
        }
        Some(v) => {
            lines.push(Line::styled(
                format!(
                    "A/B {}: A = {}, B = {} · {} of {} windows · B vs A (median, p)",
                    e.knob, e.a, e.b, v.windows, v.planned
                ),
                t.accent(),
            ));
            let mut rows: Vec<&crate::experiment::verdict::Row> = v.rows.iter().collect();
            rows.sort_by_key(|r| r.verdict.starts_with("no "));
            for r in rows
                .into_iter()
                .take(area.height.saturating_sub(3) as usize)
            {
                let style = match r.verdict.as_str() {
                    "better" => t.good(),
                    "worse" => t.bad(),
                    v if v.starts_with("no ") => t.dim(),
                    _ => t.base(),
                };
                lines.push(Line::styled(
                    format!(
                        "  {:<26} {:>10.3} → {:>10.3} {:>2} {:>8} p {:.3}  {}",
                        r.metric,
                        r.stats.median_a,
                        r.stats.median_b,
                        r.unit,
                        r.stats
                            .change
                            .map(|c| format!("{:+.1}%", c * 100.0))
                            .unwrap_or_else(|| "-".into()),
                        r.stats.p,
                        r.verdict
                    ),
                    style,
                ));
            }
        }
    }
    f.render_widget(
        Paragraph::new(lines).block(block(app, "A/B experiment")),
        area,
    );
}
