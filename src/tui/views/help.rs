//! Help: what each number of the view it was opened from means — the rows of
//! docs/metrics.md's screen table for that view, read from the document itself at build
//! time so they are written once — then the key table, generated from the keymap (the
//! same table as the README's), and the themes. Long text wraps; the table scrolls (↑/↓,
//! PgUp/PgDn) so its last row is reachable on any terminal the views are laid out for.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::text::Text;
use ratatui::widgets::{Cell, Row, Table};

use super::{block, wrap};
use crate::tui::app::{App, ViewId, matches};
use crate::tui::keymap::{KEYMAP, keys_label};

const KEY_W: u16 = 18;
const WHERE_W: u16 = 17;

/// docs/metrics.md, whose screen table defines every number on screen.
const METRICS: &str = include_str!("../../../docs/metrics.md");

/// The screen table's rows for `view` (its title, or the title and a qualifier such as
/// `Overview panel`): (where, shown, fields), Markdown backticks removed.
pub fn definitions(view: &str) -> Vec<[String; 3]> {
    screen_table()
        .iter()
        .filter(|r| r[0] == view || r[0].strip_prefix(view).is_some_and(|x| x.starts_with(' ')))
        .cloned()
        .collect()
}

/// Every row of docs/metrics.md's screen table, parsed once.
fn screen_table() -> &'static [[String; 3]] {
    static ROWS: std::sync::OnceLock<Vec<[String; 3]>> = std::sync::OnceLock::new();
    ROWS.get_or_init(|| {
        let mut rows = Vec::new();
        let mut inside = false;
        for line in METRICS.lines() {
            if line.starts_with("| view | shown | field(s) |") {
                inside = true;
                continue;
            }
            if !inside {
                continue;
            }
            if !line.starts_with('|') {
                break;
            }
            let cells = crate::markdown::cells(line);
            if let [v, shown, fields] = &cells[..] {
                rows.push([v.clone(), shown.clone(), fields.clone()]);
            }
        }
        rows
    })
}

/// The name docs/metrics.md's screen table gives `v`.
fn doc_name(v: ViewId) -> &'static str {
    v.title()
}

/// Rows of the key table: the keymap and Ctrl-C (the definitions come on top).
pub fn rows() -> usize {
    KEYMAP.len()
        + 1
        + ViewId::ALL
            .iter()
            .map(|v| definitions(doc_name(*v)).len() + 1)
            .max()
            .unwrap_or(0)
}

fn table(from: ViewId, keymap: &[crate::tui::keymap::Binding]) -> Vec<[String; 3]> {
    let mut all: Vec<[String; 3]> = Vec::new();
    let defs = definitions(doc_name(from));
    if !defs.is_empty() {
        all.push([
            format!("{}:", from.title()),
            "what it shows".into(),
            "from (docs/metrics.md)".into(),
        ]);
        all.extend(defs.into_iter().map(|[_, shown, fields]| {
            [String::new(), String::new(), format!("{shown} — {fields}")]
        }));
        all.push(["KEY".into(), "WHERE".into(), "ACTION".into()]);
    }
    all.extend(keymap.iter().map(|b| {
        [
            keys_label(b),
            b.context.label().to_string(),
            b.help.to_string(),
        ]
    }));
    all.push(["Ctrl-C".into(), "everywhere".into(), "quit, like q".into()]);
    all
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let header = Row::new(["KEY", "WHERE", "ACTION"].map(Cell::from))
        .style(t.accent().add_modifier(Modifier::BOLD));
    // Inside the border, beside the first two columns and their spacing.
    let action_w = area.width.saturating_sub(2 + KEY_W + WHERE_W + 2).max(10) as usize;
    let search = app.filter_of(ViewId::Help);
    let all: Vec<(Vec<String>, [String; 2])> = table(app.prev_view, &app.keymap)
        .into_iter()
        .filter(|[k, w, a]| matches(search, &[k, w, a]))
        .map(|[k, w, a]| (wrap(&a, action_w), [k, w]))
        .collect();
    // Inside the border, below the column header.
    let page = (area.height as usize).saturating_sub(3).max(1);
    // The last first row from which the rest still fills the page.
    let mut last_start = all.len();
    let mut used = 0;
    while last_start > 0 && used + all[last_start - 1].0.len() <= page {
        used += all[last_start - 1].0.len();
        last_start -= 1;
    }
    app.help_last_start.set(last_start);
    let first = app.help_scroll.min(last_start);
    let mut shown = 0;
    let mut used = 0;
    let rows: Vec<Row> = all[first..]
        .iter()
        .take_while(|(lines, _)| {
            used += lines.len();
            let fits = used <= page || shown == 0;
            shown += usize::from(fits);
            fits
        })
        .map(|(lines, [k, w])| {
            Row::new(vec![
                Cell::from(k.clone()),
                Cell::from(w.clone()),
                Cell::from(Text::from(lines.join("\n"))),
            ])
            .height(lines.len() as u16)
        })
        .collect();
    let themes: Vec<&str> = app.themes.iter().map(|t| t.name.as_str()).collect();
    let search = match search {
        "" => String::new(),
        f => format!(" matching \"{f}\""),
    };
    let title = format!(
        "Help — keys {}–{} of {}{search} (↑/↓ PgUp/PgDn scroll · / search · ? or Esc back) · themes: {} (t cycles, --theme NAME, NO_COLOR honoured) · docs/metrics.md defines every number",
        (first + 1).min(all.len()),
        first + shown,
        all.len(),
        themes.join(", ")
    );
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(KEY_W),
                Constraint::Length(WHERE_W),
                Constraint::Min(10),
            ],
        )
        .header(header)
        .block(block(app, title)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_view_has_its_definitions_from_metrics_md() {
        for v in ViewId::ALL {
            if v == ViewId::Help {
                continue;
            }
            assert!(!definitions(doc_name(v)).is_empty(), "{v:?}");
        }
        let p = definitions("Processes");
        assert!(
            p.iter()
                .any(|r| r[1] == "CPU%" && r[2].contains("cpu_time_ns / interval")),
            "{p:?}"
        );
        assert!(
            definitions("Overview")
                .iter()
                .any(|r| r[0] == "Overview panel"),
            "qualified rows belong to the view"
        );
    }
}
