//! Help: the key table, generated from the keymap (the same table as the README's),
//! and the themes. Long actions wrap; the table scrolls (↑/↓, PgUp/PgDn) so its last
//! row is reachable on any terminal the views are laid out for.

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

/// Rows of the key table: the keymap and Ctrl-C.
pub fn rows() -> usize {
    KEYMAP.len() + 1
}

fn table() -> Vec<[String; 3]> {
    let mut all: Vec<[String; 3]> = KEYMAP
        .iter()
        .map(|b| {
            [
                keys_label(b),
                b.context.label().to_string(),
                b.help.to_string(),
            ]
        })
        .collect();
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
    let all: Vec<(Vec<String>, [String; 2])> = table()
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
