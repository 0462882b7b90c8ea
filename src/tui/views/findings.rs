//! Findings: the advisor's findings held at the shown snapshot, worst first (blind spots
//! last), and the selected one in full — the seed it comes from, its evidence with the
//! snapshot field each number cites, and the suggested experiment (Enter or `a` opens it
//! on the Knobs view). Below, the findings that cleared before this snapshot.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::block;
use crate::findings::{Kind, Severity};
use crate::tui::app::{App, ViewId};
use crate::tui::theme::Theme;

fn severity_style(t: &Theme, s: Severity) -> Style {
    match s {
        Severity::Info => t.dim(),
        Severity::Warning => t.warn(),
        Severity::Critical => t.bad().add_modifier(Modifier::BOLD),
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let seq = app.current().map(|s| s.seq);
    let held = app.finding_rows();
    let problems = held.iter().filter(|e| e.kind() != Kind::BlindSpots).count();
    let blind = held.len() - problems;
    let search = match app.filter_of(ViewId::Findings) {
        "" => String::new(),
        f => format!(" matching \"{f}\""),
    };
    // The counts are the rows': findings, and the notes on what cannot be judged here.
    let counts = match (problems, blind) {
        (p, 0) => format!("{p} finding{}", if p == 1 { "" } else { "s" }),
        (p, b) => format!(
            "{p} finding{}, {b} note{} on what cannot be judged here",
            if p == 1 { "" } else { "s" },
            if b == 1 { "" } else { "s" }
        ),
    };
    let title = format!(
        "Findings — {counts}{}{search} · Enter/a tries the suggestion (an A/B, nothing written before you accept it) · / search · docs/advisor.md",
        seq.map(|s| format!(" at #{s}")).unwrap_or_default()
    );
    let n_list = (held.len().max(1) as u16 + 2).min(area.height / 2);
    let [list, detail] =
        Layout::vertical([Constraint::Length(n_list), Constraint::Min(3)]).areas(area);
    let sel = app.finding_sel.min(held.len().saturating_sub(1));
    app.hits
        .list
        .set(Some((list.y + 1, list.height.saturating_sub(2), 0)));
    let mut rows = Vec::new();
    if held.is_empty() {
        rows.push(Line::styled(
            if app.current().is_none() {
                "waiting for the first snapshot…"
            } else {
                "none: no seed situation in the last 5 s"
            },
            t.dim(),
        ));
    }
    for (i, e) in held.iter().enumerate() {
        let fnd = e.at(seq.unwrap_or(u64::MAX));
        let mark = if i == sel { "▶ " } else { "  " };
        rows.push(Line::from(vec![
            Span::raw(mark),
            Span::styled(
                format!(
                    "{:<8} ",
                    if fnd.kind == Kind::BlindSpots {
                        "NOTE".to_string()
                    } else {
                        fnd.severity.label().to_uppercase()
                    }
                ),
                severity_style(t, fnd.severity),
            ),
            Span::styled(
                format!(
                    "{:>10} ",
                    fnd.cost.as_ref().map_or("-".into(), |c| c.shown())
                ),
                severity_style(t, fnd.severity),
            ),
            Span::styled(format!("{:<30} ", fnd.kind.title()), t.accent()),
            Span::raw(fnd.summary.clone()),
        ]));
    }
    f.render_widget(Paragraph::new(rows).block(block(app, title)), list);

    let mut lines = Vec::new();
    if let Some(e) = held.get(sel) {
        let fnd = e.at(seq.unwrap_or(u64::MAX));
        lines.push(Line::styled(
            fnd.headline(),
            severity_style(t, fnd.severity),
        ));
        lines.push(Line::styled(
            format!(
                "{} → {} (thresholds: docs/advisor.md)",
                fnd.cost_line(),
                fnd.severity.label().to_uppercase()
            ),
            severity_style(t, fnd.severity),
        ));
        if let Some(s) = fnd.kind.seed() {
            lines.push(Line::styled(
                format!(
                    "seed {s} · held since #{} · evidence from #{}..=#{}",
                    e.fired_seq, fnd.first_seq, fnd.last_seq
                ),
                t.dim(),
            ));
        }
        for x in &fnd.facts {
            let mut spans = vec![
                Span::raw(format!("  {:<44} ", x.label)),
                Span::styled(format!("{:>14}", x.shown()), t.accent()),
            ];
            if let Some(c) = &x.cite {
                spans.push(Span::styled(
                    format!("  {:?} of {}", c.agg, c.field).to_lowercase(),
                    t.dim(),
                ));
            } else {
                spans.push(Span::styled("  derived", t.dim()));
            }
            lines.push(Line::from(spans));
        }
        if let Some(s) = &fnd.suggestion {
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{}: ", s.lead()),
                    t.good().add_modifier(Modifier::BOLD),
                ),
                Span::raw(s.command.clone()),
            ]));
            lines.push(Line::styled(format!("     {}", s.why), t.dim()));
        }
    }
    let cleared: Vec<_> = app
        .advisor
        .problems()
        .filter(|e| e.cleared_seq.is_some_and(|c| seq.is_some_and(|s| c <= s)))
        .collect();
    if !cleared.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("cleared earlier ({})", cleared.len()),
            t.dim(),
        ));
        for e in cleared.iter().rev().take(5) {
            lines.push(Line::styled(
                format!(
                    "  #{}..#{} {}",
                    e.fired_seq,
                    e.cleared_seq.unwrap_or(0),
                    e.latest().headline()
                ),
                t.dim(),
            ));
        }
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block(app, "Evidence".to_string())),
        detail,
    );
}
