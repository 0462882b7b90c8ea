//! Drawing: the frame layout (header, view tabs, the view, status line) and helpers
//! shared by the views. One view per file; each draws from an [`App`] only.

pub mod balance;
pub mod cache;
pub mod findings;
pub mod header;
pub mod help;
pub mod knobs;
pub mod locality;
pub mod migrations;
pub mod numa;
pub mod overview;
pub mod processes;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::app::{App, InputKind, Level, ViewId};

/// Smallest terminal the views are laid out for.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    let t = app.theme();
    f.render_widget(Block::default().style(t.base()), area);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = vec![
            Line::styled("terminal too small", t.bad()),
            Line::raw(format!("{}×{}", area.width, area.height)),
            Line::raw(format!("need {MIN_WIDTH}×{MIN_HEIGHT}")),
            Line::styled("q quits", t.dim()),
        ];
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    }
    let head = header::height(app, area.width, area.height);
    let [h, tabs, body, foot] = Layout::vertical([
        Constraint::Length(head),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    header::draw(f, h, app, area.height);
    draw_tabs(f, tabs, app);
    app.hits.tabs_y.set(tabs.y);
    app.hits.list.set(None);
    match app.view {
        ViewId::Overview => overview::draw(f, body, app),
        ViewId::Migrations => migrations::draw(f, body, app),
        ViewId::Processes => processes::draw(f, body, app),
        ViewId::Cache => cache::draw(f, body, app),
        ViewId::Balance => balance::draw(f, body, app),
        ViewId::Numa => numa::draw(f, body, app),
        ViewId::Knobs => knobs::draw(f, body, app),
        ViewId::Findings => findings::draw(f, body, app),
        ViewId::Help => help::draw(f, body, app),
    }
    draw_footer(f, foot, app);
}

/// The tab of view `v`, the `i`th: ` 1 Overview `.
pub fn tab_label(i: usize, v: ViewId) -> String {
    format!(" {} {} ", i + 1, v.title())
}

fn draw_tabs(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let mut spans = Vec::new();
    for (i, v) in ViewId::ALL.iter().enumerate() {
        let label = tab_label(i, *v);
        if *v == app.view {
            spans.push(Span::styled(
                label,
                t.accent().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ));
        } else {
            spans.push(Span::styled(label, t.dim()));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let line = if let Some(input) = &app.input {
        let prompt = match &input.kind {
            InputKind::Filter => "filter: ".to_string(),
            InputKind::Edit(id) => format!("set {id} = "),
            InputKind::Ab(id) => format!("A/B {id}: now vs "),
        };
        Line::from(vec![
            Span::styled(prompt, t.accent()),
            Span::raw(input.text.clone()),
            Span::styled("▏", t.accent()),
            Span::styled("  Enter accepts · Esc cancels", t.dim()),
        ])
    } else if let Some(s) = app.status_here() {
        let style = match s.level {
            Level::Info => t.base(),
            Level::Good => t.good(),
            Level::Warn => t.warn(),
            Level::Bad => t.bad(),
        };
        Line::styled(s.text.clone(), style)
    } else {
        Line::styled(
            "q quit · ? help · 1-9/Tab views · Space pause · ←/→ history · r record · t theme",
            t.dim(),
        )
    };
    f.render_widget(Paragraph::new(line), area);
}

/// "not available: why" in the view's area.
pub fn unavailable(f: &mut Frame, area: Rect, app: &App, title: &str, why: &str) {
    let t = app.theme();
    // A reason of several paragraphs keeps its line breaks (a Line drops them).
    let mut lines = vec![
        Line::styled(format!("{title}: not available"), t.warn()),
        Line::raw(""),
    ];
    lines.extend(why.split('\n').map(|l| Line::raw(l.to_string())));
    let p = Paragraph::new(lines).wrap(Wrap { trim: true }).block(
        Block::bordered()
            .title(title.to_string())
            .border_style(t.dim()),
    );
    f.render_widget(p, area);
}

/// The reason a source gave, by name (exact, else prefix).
pub fn source_reason(app: &App, name: crate::snapshot::SourceName) -> Option<String> {
    let srcs = app.sources();
    srcs.iter()
        .find(|s| s.is(name))
        .and_then(|s| s.reason.clone())
}

// Counts and rates as people read them: below the TUI, in units (run/live prints them too).
pub use crate::units::{rate, si};

/// Nanoseconds as `850ns`, `12µs`, `1.2ms`, `3.4s`.
pub fn ns(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.1}s", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.1}ms", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.0}µs", f / 1e3)
    } else {
        format!("{v}ns")
    }
}

pub fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

/// `–` for a value a source could not give.
pub fn or_dash<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

/// A text sparkline of `values` (the last `width` of them), scaled to their maximum.
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let v = &values[values.len().saturating_sub(width)..];
    let max = v.iter().copied().fold(0.0f64, f64::max);
    let mut s: String = v
        .iter()
        .map(|&x| {
            if max <= 0.0 {
                ' '
            } else {
                BARS[((x / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            }
        })
        .collect();
    while s.chars().count() < width {
        s.insert(0, ' ');
    }
    s
}

/// Which columns of a table fit `room` cells (one space between columns): each column is
/// (width, drop order), 0 never dropped, the highest dropped first. Indices kept, in order.
pub fn columns_that_fit(cols: &[(u16, u8)], room: u16) -> Vec<usize> {
    let width_of = |drop: u8| -> u16 { cols.iter().filter(|c| c.1 < drop).map(|c| c.0 + 1).sum() };
    let max = cols.iter().map(|c| c.1).max().unwrap_or(0) + 1;
    let drop = (1..=max).rev().find(|&d| width_of(d) <= room).unwrap_or(1);
    (0..cols.len()).filter(|&i| cols[i].1 < drop).collect()
}

/// The items of a row at the indices `shown` (from [`columns_that_fit`]), in order.
pub fn keep_columns<T>(row: Vec<T>, shown: &[usize]) -> Vec<T> {
    row.into_iter()
        .enumerate()
        .filter(|(i, _)| shown.contains(i))
        .map(|(_, c)| c)
        .collect()
}

/// `text` in at most `width` characters: cut with `…` when longer.
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// `line` in at most `width` cells: spans past the end dropped, the last one cut with `…`.
pub fn fit_line(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let style = line.style;
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for sp in line.spans {
        let n = sp.content.chars().count();
        if used + n < width {
            used += n;
            out.push(sp);
            continue;
        }
        let room = width.saturating_sub(used);
        out.push(Span::styled(fit(&sp.content, room), sp.style));
        break;
    }
    Line::from(out).style(style)
}

/// `text` broken at spaces into lines of at most `width` characters (a word longer than
/// that is cut into pieces).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..width).collect());
        }
        let n = line.chars().count();
        if n > 0 && n + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A horizontal bar of `f` (0..=1) in `width` cells.
pub fn bar(f: f64, width: usize) -> String {
    let cells = f.clamp(0.0, 1.0) * width as f64;
    let full = cells.floor() as usize;
    let part = ((cells - full as f64) * 8.0).round() as usize;
    const P: [char; 9] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    let mut s = "█".repeat(full.min(width));
    if full < width {
        s.push(P[part.min(8)]);
        s.push_str(&" ".repeat(width - full - 1));
    }
    s
}

/// Style of a selected table row.
pub fn selected(app: &App) -> Style {
    app.theme().accent().add_modifier(Modifier::REVERSED)
}

/// A titled block in the theme's dim border.
pub fn block(app: &App, title: impl Into<String>) -> Block<'static> {
    Block::bordered()
        .title(Span::styled(title.into(), app.theme().accent()))
        .border_style(app.theme().dim())
}

/// The waiting message before the first snapshot.
pub fn waiting(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let text = match &app.feed_error {
        Some(e) => vec![Line::styled(format!("no data: {e}"), t.bad())],
        None => vec![Line::styled(
            format!(
                "waiting for the first snapshot (interval {})…",
                humantime::format_duration(app.interval)
            ),
            t.dim(),
        )],
    };
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(1234.0), "1.2k");
        assert_eq!(si(56_000.0), "56k");
        assert_eq!(si(5_600_000.0), "5.6M");
        assert_eq!(si(3.0), "3");
        assert_eq!(si(2.5), "2.5");
        assert_eq!(rate(30, 2.0), "15");
        assert_eq!(ns(1_200_000), "1.2ms");
        assert_eq!(ns(12_000), "12µs");
        assert_eq!(bar(0.5, 4).chars().count(), 4);
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(sparkline(&[0.0, 1.0], 4), "  ▁█");
        assert_eq!(wrap("ab cd ef", 5), ["ab cd", "ef"]);
        assert_eq!(wrap("abcdefg h", 3), ["abc", "def", "g h"]);
        assert_eq!(wrap("", 3), [""]);
        assert_eq!(fit("kworker/u8:2-events", 8), "kworker…");
        assert_eq!(fit("bash", 8), "bash");
        let l = fit_line(Line::from(vec![Span::raw("abc "), Span::raw("defgh")]), 6);
        assert_eq!(l.to_string(), "abc d…");
        assert_eq!(fit_line(Line::raw("ab"), 6).to_string(), "ab");
        let cols = [(5, 0), (10, 2), (10, 1), (20, 3)];
        assert_eq!(columns_that_fit(&cols, 100), [0, 1, 2, 3]);
        assert_eq!(columns_that_fit(&cols, 30), [0, 1, 2]);
        assert_eq!(columns_that_fit(&cols, 20), [0, 2]);
        assert_eq!(
            columns_that_fit(&cols, 3),
            [0],
            "never below the columns that stay"
        );
    }
}
