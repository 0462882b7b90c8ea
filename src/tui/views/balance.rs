//! Balance: /proc/schedstat load-balance activity per sched-domain level as rates —
//! attempts, balanced, failed and tasks gained for busy, idle and newidle balancing,
//! active balancing and wakeup placement — with the newidle trend, the view the
//! newidle-migration thread (../shared/seeds/004) needed.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use super::{block, columns_that_fit, fit, keep_columns, rate, sparkline, waiting};
use crate::snapshot::LbStats;
use crate::tui::app::App;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let t = app.theme();
    let Some(b) = s.balance.as_ref() else {
        let why = super::source_reason(app, crate::snapshot::SourceName::ProcfsSchedstat)
            .unwrap_or_else(|| "/proc/schedstat was not read".into());
        super::unavailable(f, area, app, "Balance", &why);
        return;
    };
    let secs = s.time.interval_secs();
    let spark_w = 16usize;
    let hist = app.history(spark_w);
    let lb = |x: &LbStats| -> [String; 4] {
        [
            rate(x.count, secs),
            rate(x.balanced, secs),
            rate(x.failed, secs),
            rate(x.gained, secs),
        ]
    };
    // Columns: header, width, drop order on a narrow terminal (0 stays; the highest
    // goes first): the attempts of each kind stay, then newidle's gain and the CPUs.
    const COLS: [(&str, u16, u8); 19] = [
        ("LEVEL", 5, 0),
        ("DOMAIN", 8, 0),
        ("CPUS", 4, 1),
        ("busy lb", 8, 0),
        ("bal", 6, 5),
        ("fail", 6, 4),
        ("gain", 6, 3),
        ("idle lb", 8, 0),
        ("bal", 6, 5),
        ("fail", 6, 4),
        ("gain", 6, 3),
        ("newidle lb", 10, 0),
        ("bal", 6, 5),
        ("fail", 6, 4),
        ("gain", 6, 1),
        ("newidle trend", 16, 2),
        ("alb", 6, 3),
        ("wake remote", 11, 6),
        ("affine", 7, 6),
    ];
    let shown = columns_that_fit(&COLS.map(|c| (c.1, c.2)), area.width.saturating_sub(2));
    let keep = |v: Vec<Cell<'static>>| keep_columns(v, &shown);
    let header = Row::new(keep(COLS.iter().map(|c| Cell::from(c.0)).collect()))
        .style(t.accent().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = b
        .domains
        .iter()
        .map(|d| {
            let trend: Vec<f64> = hist
                .iter()
                .map(|h| {
                    h.balance
                        .as_ref()
                        .and_then(|b| b.domains.iter().find(|x| x.level == d.level))
                        .map_or(0.0, |x| x.newidle.count as f64)
                })
                .collect();
            let name = d.name.clone().unwrap_or_else(|| "?".into());
            let mut cells = vec![
                Cell::from(d.level.to_string()),
                Cell::from(if d.derived_name {
                    format!("{name}*")
                } else {
                    name
                }),
                Cell::from(d.cpus.to_string()),
            ];
            for st in [&d.busy, &d.idle, &d.newidle] {
                let [c, bal, fail, gain] = lb(st);
                cells.push(Cell::from(c));
                cells.push(Cell::from(bal));
                cells.push(Cell::from(fail));
                cells.push(Cell::from(gain));
            }
            cells.push(Cell::from(Span::styled(
                sparkline(&trend, spark_w),
                t.accent(),
            )));
            cells.push(Cell::from(rate(d.alb_count, secs)));
            cells.push(Cell::from(rate(d.ttwu_wake_remote, secs)));
            cells.push(Cell::from(rate(d.ttwu_move_affine, secs)));
            Row::new(keep(cells))
        })
        .collect();
    let widths: Vec<Constraint> = shown
        .iter()
        .map(|&i| Constraint::Length(COLS[i].1))
        .collect();
    let title = format!(
        "Load balancing per domain, per second — /proc/schedstat v{} (* name derived from the span)",
        b.version
    );
    f.render_widget(
        Table::new(rows, widths).header(header).block(block(
            app,
            fit(&title, area.width.saturating_sub(2) as usize),
        )),
        area,
    );
}
