//! Help: the key table, generated from the keymap (the same table as the README's),
//! and the themes.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::widgets::{Cell, Row, Table};

use super::block;
use crate::tui::app::App;
use crate::tui::keymap::{KEYMAP, keys_label};

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = app.theme();
    let header = Row::new(["KEY", "WHERE", "ACTION"].map(Cell::from))
        .style(t.accent().add_modifier(Modifier::BOLD));
    let mut rows: Vec<Row> = KEYMAP
        .iter()
        .map(|b| {
            Row::new(vec![
                Cell::from(keys_label(b)),
                Cell::from(b.context.label()),
                Cell::from(b.help),
            ])
        })
        .collect();
    rows.push(Row::new(vec![
        Cell::from("Ctrl-C"),
        Cell::from("everywhere"),
        Cell::from("quit, like q"),
    ]));
    let themes: Vec<&str> = app.themes.iter().map(|t| t.name.as_str()).collect();
    let title = format!(
        "Help — keys (README table is generated from the same keymap) · themes: {} (t cycles, --theme NAME, NO_COLOR honoured) · docs/metrics.md defines every number",
        themes.join(", ")
    );
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(18),
                Constraint::Length(17),
                Constraint::Min(20),
            ],
        )
        .header(header)
        .block(block(app, title)),
        area,
    );
}
