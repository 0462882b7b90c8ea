//! NUMA: the balancing mode, per-node busy and memory with numastat rates, the NUMA
//! balancing counters of /proc/vmstat, and per-cgroup NUMA counters (memory.stat).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::{block, columns_that_fit, keep_columns, or_dash, pct, rate, waiting};
use crate::tui::app::App;

fn mode_name(m: u32) -> String {
    let mut parts = Vec::new();
    if m & 1 != 0 {
        parts.push("normal");
    }
    if m & 2 != 0 {
        parts.push("memory tiering");
    }
    if m & 4 != 0 {
        parts.push("bit 4 (per-cgroup)");
    }
    if parts.is_empty() {
        "off".into()
    } else {
        parts.join(" + ")
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(s) = app.current() else {
        waiting(f, area, app);
        return;
    };
    let t = app.theme();
    let Some(n) = s.numa.as_ref() else {
        let why = super::source_reason(app, crate::snapshot::SourceName::ProcfsNuma)
            .unwrap_or_else(|| "NUMA counters were not read".into());
        super::unavailable(f, area, app, "NUMA", &why);
        return;
    };
    let secs = s.time.interval_secs();
    let [nodes_area, vm_area, cg_area] = Layout::vertical([
        Constraint::Length(3 + s.nodes.len().min(16) as u16),
        Constraint::Length(6),
        Constraint::Min(3),
    ])
    .areas(area);
    let keys = [
        "numa_hit",
        "numa_miss",
        "numa_foreign",
        "local_node",
        "other_node",
    ];
    let mut head: Vec<String> = ["NODE", "CPUS", "BUSY", "MEM USED", "MEM TOTAL"]
        .map(String::from)
        .to_vec();
    head.extend(keys.iter().map(|k| format!("{k}/s")));
    // Widths and drop order on a narrow terminal: the node's own figures stay, then
    // numa_hit and numa_miss, the rest go first.
    let cols: [(u16, u8); 10] = [
        (5, 0),
        (5, 1),
        (5, 0),
        (10, 0),
        (10, 0),
        (14, 1),
        (14, 1),
        (14, 2),
        (14, 3),
        (14, 3),
    ];
    let shown = columns_that_fit(&cols, nodes_area.width.saturating_sub(2));
    let keep = |v: Vec<Cell<'static>>| keep_columns(v, &shown);
    let header = Row::new(keep(head.into_iter().map(Cell::from).collect()))
        .style(t.accent().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = s
        .nodes
        .iter()
        .map(|g| {
            let nn = n.nodes.iter().find(|x| x.node == g.id);
            let gib = |kb: u64| format!("{:.1} GiB", kb as f64 / 1048576.0);
            let mut cells = vec![
                Cell::from(g.id.to_string()),
                Cell::from(g.cpus.to_string()),
                Cell::from(or_dash(g.busy, pct)),
                Cell::from(or_dash(
                    nn.and_then(|x| Some(x.mem_total_kb?.saturating_sub(x.mem_free_kb?))),
                    gib,
                )),
                Cell::from(or_dash(nn.and_then(|x| x.mem_total_kb), gib)),
            ];
            for k in keys {
                cells.push(Cell::from(or_dash(
                    nn.and_then(|x| x.counters.get(k).copied()),
                    |v| rate(v, secs),
                )));
            }
            Row::new(keep(cells))
        })
        .collect();
    let widths: Vec<Constraint> = shown
        .iter()
        .map(|&i| Constraint::Length(cols[i].0))
        .collect();
    let title = format!(
        "Nodes — NUMA balancing: {}",
        or_dash(n.balancing_mode, |m| format!("{m} ({})", mode_name(m)))
    );
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(block(app, title)),
        nodes_area,
    );

    let b = block(app, "NUMA balancing counters (/proc/vmstat), per second");
    let inner = b.inner(vm_area);
    f.render_widget(b, vm_area);
    let items: Vec<String> = n
        .vmstat
        .iter()
        .map(|(k, v)| format!("{k} {}", rate(*v, secs)))
        .collect();
    let text = if items.is_empty() {
        vec![Line::styled(
            "no NUMA counters in /proc/vmstat (CONFIG_NUMA_BALANCING off?)",
            t.dim(),
        )]
    } else {
        vec![Line::raw(items.join(" · "))]
    };
    f.render_widget(
        Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
        inner,
    );

    let header = Row::new(
        [
            "CGROUP",
            "pages migrated/s",
            "PTE updates/s",
            "hint faults/s",
        ]
        .map(Cell::from),
    )
    .style(t.accent().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = n
        .cgroups
        .iter()
        .map(|c| {
            Row::new(vec![
                Cell::from(c.path.clone()),
                Cell::from(or_dash(c.numa_pages_migrated, |v| rate(v, secs))),
                Cell::from(or_dash(c.numa_pte_updates, |v| rate(v, secs))),
                Cell::from(or_dash(c.numa_hint_faults, |v| rate(v, secs))),
            ])
        })
        .collect();
    let empty = rows.is_empty();
    let mut tbl = Table::new(
        rows,
        [
            Constraint::Min(20),
            Constraint::Length(17),
            Constraint::Length(15),
            Constraint::Length(15),
        ],
    )
    .header(header)
    .block(block(app, "Per-cgroup NUMA balancing (memory.stat)"));
    if empty {
        tbl = tbl.footer(Row::new(vec![Cell::from(
            "no cgroup with NUMA counters (needs cgroup v2 memory.stat numa_* fields)",
        )]));
    }
    f.render_widget(tbl, cg_area);
}
