//! Balance: /proc/schedstat load-balance activity per sched-domain level as rates —
//! attempts, balanced, failed and tasks gained for busy, idle and newidle balancing,
//! active balancing and wakeup placement — with the newidle trend, the view the
//! newidle-migration thread (../shared/seeds/004) needed.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table};

use super::{block, rate, sparkline, waiting};
use crate::snapshot::LbStats;
use crate::tui::app::App;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let t = app.theme();
    let Some(b) = s.balance.as_ref() else {
        let why = super::source_reason(app, "procfs.schedstat")
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
    let header = Row::new(
        [
            "LEVEL",
            "DOMAIN",
            "CPUS",
            "busy lb",
            "bal",
            "fail",
            "gain",
            "idle lb",
            "bal",
            "fail",
            "gain",
            "newidle lb",
            "bal",
            "fail",
            "gain",
            "newidle trend",
            "alb",
            "wake remote",
            "affine",
        ]
        .map(Cell::from),
    )
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
            Row::new(cells)
        })
        .collect();
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(4),
    ];
    for _ in 0..3 {
        widths.extend([
            Constraint::Length(10),
            Constraint::Length(6),
            Constraint::Length(6),
            Constraint::Length(6),
        ]);
    }
    widths.extend([
        Constraint::Length(spark_w as u16),
        Constraint::Length(6),
        Constraint::Length(11),
        Constraint::Length(7),
    ]);
    let title = format!(
        "Load balancing per domain, per second — /proc/schedstat v{} (* name derived from the span)",
        b.version
    );
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(block(app, title)),
        area,
    );
}
