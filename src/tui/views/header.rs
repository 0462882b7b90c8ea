//! The header: host, kernel and topology summary; live / paused / replay position and
//! the recording indicator; one line with every source's state (each degraded or absent
//! one with the head of its reason) and how many knobs are writable; the advisor's
//! findings (how many, the worst). `i` expands it: one line per degraded or absent
//! source and knob limitation with its whole reason — so a new user sees within one
//! screen what is missing on this machine, and the view keeps its rows. In replay, a
//! timeline with knob changes and markers. On kernels with sched_ext the first line names
//! the scheduler in charge (`sched eevdf`, `sched scx bpfland (all tasks)`); on kernels
//! with cache-aware scheduling (7.2+), whether it runs (`cache-aware on`, `off`, `enabled,
//! not active`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::findings::{Kind, Severity};
use crate::snapshot::SourceState;
use crate::tui::app::App;

/// Rows the expanded reasons may take on a terminal `height` rows high (what does not fit
/// is counted on one more row).
fn max_rows(height: u16) -> usize {
    (height as usize / 3).clamp(2, 24)
}

/// `text` broken at spaces into lines of at most `width` columns (a word longer than a
/// line is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let (cw, ww) = (cur.chars().count(), word.chars().count());
        if cw > 0 && cw + 1 + ww > width {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while cur.chars().count() > width {
            let head: String = cur.chars().take(width).collect();
            let rest: String = cur.chars().skip(width).collect();
            out.push(head);
            cur = rest;
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// The expanded header's reasons, each whole — wrapped over as many rows as it needs — as
/// many as fit [`max_rows`], then one row saying how many more.
fn problem_lines(app: &App, width: u16, screen_height: u16) -> Vec<Line<'static>> {
    if !app.header_expanded {
        return Vec::new();
    }
    let t = app.theme();
    let probs = problems(app);
    let budget = max_rows(screen_height);
    let mut lines = Vec::new();
    for (i, (state, text)) in probs.iter().enumerate() {
        let (mark, style) = match state {
            SourceState::Absent => ("✗ ", t.bad()),
            SourceState::Active => ("✓ ", t.good()),
            SourceState::Degraded => ("◐ ", t.warn()),
        };
        let wrapped = wrap(text, usize::from(width).saturating_sub(2));
        let left = probs.len() - i;
        // Room for this one whole, and for the "more" row if others follow.
        if lines.len() + wrapped.len() + usize::from(left > 1) > budget {
            lines.push(Line::styled(
                format!("… {left} more (see the views; 7 Knobs for knobs)"),
                t.dim(),
            ));
            break;
        }
        for (j, w) in wrapped.into_iter().enumerate() {
            lines.push(Line::from(vec![
                Span::styled(if j == 0 { mark } else { "  " }, style),
                Span::raw(w),
            ]));
        }
    }
    lines
}

fn problems(app: &App) -> Vec<(SourceState, String)> {
    let mut out: Vec<(SourceState, String)> = app
        .sources()
        .iter()
        .filter(|s| s.state != SourceState::Active)
        .map(|s| {
            (
                s.state,
                format!(
                    "{}: {}",
                    s.name,
                    s.reason.as_deref().unwrap_or("no reason given")
                ),
            )
        })
        .collect();
    // What an active source lost below what would move a figure: said, with its ✓.
    out.extend(app.sources().iter().filter_map(|s| {
        let n = s.note.as_ref().filter(|_| s.state == SourceState::Active)?;
        Some((SourceState::Active, format!("{}: {n}", s.name)))
    }));
    for n in &app.knob_notes {
        out.push((SourceState::Degraded, format!("knobs: {n}")));
    }
    out
}

/// The findings line: how many the advisor holds and the worst (blind spots are the
/// source lines' business).
fn findings_line(app: &App) -> Option<Line<'static>> {
    let t = app.theme();
    let seq = app.current()?.seq;
    let held: Vec<_> = app
        .findings()
        .into_iter()
        .filter(|e| e.kind() != Kind::BlindSpots)
        .collect();
    let worst = held.first()?.at(seq);
    let style = match worst.severity {
        Severity::Critical => t.bad().add_modifier(Modifier::BOLD),
        _ => t.warn(),
    };
    // Below WARNING a count is enough: the header alarms only for what costs.
    if worst.severity < Severity::Warning {
        return Some(Line::styled(
            format!(
                "⚑ {} finding{} for information (8 Findings)",
                held.len(),
                if held.len() == 1 { "" } else { "s" }
            ),
            t.dim(),
        ));
    }
    Some(Line::from(vec![
        Span::styled(
            format!(
                "⚑ {} finding{} ",
                held.len(),
                if held.len() == 1 { "" } else { "s" }
            ),
            style,
        ),
        Span::styled(format!("{} ", worst.severity_tag()), style),
        Span::raw(worst.headline()),
        Span::styled("  (8 Findings)", t.dim()),
    ]))
}

/// Rows the header takes on a terminal `width`×`screen_height`.
pub fn height(app: &App, width: u16, screen_height: u16) -> u16 {
    let p = problem_lines(app, width, screen_height).len();
    2 + p as u16 + u16::from(app.replay.is_some()) + u16::from(findings_line(app).is_some())
}

/// Characters of a reason the folded header shows.
const SHORT: usize = 32;

/// The head of a source's reason: up to its first `;` or `(`, at most [`SHORT`]
/// characters, cut at a word with an ellipsis.
fn short_reason(reason: &str) -> String {
    let end = reason.find([';', '(']).unwrap_or(reason.len());
    let head = reason[..end].trim().trim_end_matches([':', ',']);
    if head.chars().count() <= SHORT {
        return head.to_string();
    }
    let cut: String = head.chars().take(SHORT - 1).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{}…", cut.trim_end_matches([':', ',']))
}

/// The sources line: each source's mark, a degraded or absent one's short reason when
/// `with_reasons`, the knobs writable, and the key that expands the details.
fn sources_line(app: &App, with_reasons: bool) -> Vec<Span<'static>> {
    let t = app.theme();
    let mut src = vec![Span::styled("sources ", t.dim())];
    for s in app.sources() {
        let (mark, style) = match s.state {
            SourceState::Active => ("✓", t.good()),
            SourceState::Degraded => ("◐", t.warn()),
            SourceState::Absent => ("✗", t.bad()),
        };
        src.push(Span::styled(format!("{} {mark}", s.name), style));
        if with_reasons
            && s.state != SourceState::Active
            && let Some(r) = s.reason.as_deref().map(short_reason)
        {
            src.push(Span::styled(format!(" {r}"), t.dim()));
        }
        src.push(Span::raw("  "));
    }
    if app.sources().is_empty() {
        src.push(Span::styled("starting…  ", t.dim()));
    }
    let knobs = app.knobs();
    if !knobs.is_empty() {
        let w = knobs.iter().filter(|k| k.access.is_writable()).count();
        let style = if w == knobs.len() { t.good() } else { t.warn() };
        src.push(Span::styled(
            format!("knobs {w}/{} writable  ", knobs.len()),
            style,
        ));
    }
    let n = problems(app).len();
    if n > 0 {
        src.push(Span::styled(
            if app.header_expanded {
                "i: fold".to_string()
            } else {
                format!("i: why ({n})")
            },
            t.accent(),
        ));
    }
    src
}

pub fn draw(f: &mut Frame, area: Rect, app: &App, screen_height: u16) {
    let t = app.theme();
    let mut lines = Vec::new();

    // The machine: host · kernel · shape, the shape alone kept when the line is too
    // narrow for the rest (what is shown — live, paused, a replay — matters more).
    let machine = |level: u8| {
        let (host, kernel) = (
            app.host.as_deref().unwrap_or("?"),
            app.kernel.as_deref().unwrap_or("?"),
        );
        match level {
            0 => format!("{host} · {kernel} · {}", app.topo.summary()),
            1 => format!("{host} · {}", app.topo.summary()),
            _ => app.topo.summary(),
        }
    };
    let mut first = vec![
        Span::styled("llctop ", t.accent().add_modifier(Modifier::BOLD)),
        Span::raw(machine(0)),
        Span::raw("  "),
    ];
    // Which scheduler is in charge, when the kernel has sched_ext.
    if let Some(x) = app.current().and_then(|s| s.sched_ext.as_ref()) {
        let style = if x.enabled() { t.warn() } else { t.dim() };
        first.push(Span::styled(format!("sched {}  ", x.describe()), style));
    }
    // Whether the 7.2 cache-aware scheduler runs (the why: Knobs view, `report`).
    if let Some(c) = app.current().and_then(|s| s.cache_aware.as_ref()) {
        let (text, style) = match (c.active(), c.enabled) {
            (true, _) => ("cache-aware on", t.dim()),
            (false, false) => ("cache-aware off", t.dim()),
            (false, true) => ("cache-aware enabled, not active", t.warn()),
        };
        first.push(Span::styled(format!("{text}  "), style));
    }
    if let Some(r) = &app.replay {
        let n = app.snaps.len();
        let pos = app.pos.map_or(0, |p| p + 1);
        first.push(Span::styled(
            format!(
                "REPLAY {pos}/{n} ×{} {} {}",
                r.speed,
                if r.playing { "▶" } else { "⏸" },
                r.file
            ),
            t.accent(),
        ));
        if r.loading {
            first.push(Span::styled(" (loading…)", t.dim()));
        }
        if r.truncated {
            first.push(Span::styled(" (truncated file)", t.warn()));
        }
    } else if app.paused {
        let back = app.pos.map_or(0, |p| app.snaps.len().saturating_sub(p + 1));
        first.push(Span::styled(
            format!("PAUSED ({back} behind live; End follows)"),
            t.warn(),
        ));
    } else {
        first.push(Span::styled(
            format!("live every {}", humantime::format_duration(app.interval)),
            t.good(),
        ));
    }
    if let Some(r) = &app.recording {
        first.push(Span::styled(
            format!("  ● REC {} ({})", r.path.display(), r.snapshots()),
            t.bad().add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(tr) = &app.tracing {
        first.push(Span::styled(
            format!(
                "  ◆ TRACE {} ({} s)",
                tr.path.display(),
                tr.started.elapsed().as_secs()
            ),
            t.bad().add_modifier(Modifier::BOLD),
        ));
    }
    // Everything so far must fit; the snapshot's number and time may be cut.
    for level in 1..=2 {
        if Line::from(first.clone()).width() <= area.width as usize {
            break;
        }
        first[1] = Span::raw(machine(level));
    }
    if let Some(s) = app.current() {
        first.push(Span::styled(
            format!(
                "  #{} {} {:.2}s",
                s.seq,
                crate::clock::local_hms(s.time.unix_ns),
                s.time.interval_secs()
            ),
            t.dim(),
        ));
    }
    lines.push(Line::from(first));

    let full = sources_line(app, true);
    let width: usize = full.iter().map(|s| s.content.chars().count()).sum();
    lines.push(Line::from(if width <= area.width as usize {
        full
    } else {
        sources_line(app, false)
    }));

    if let Some(l) = findings_line(app) {
        lines.push(l);
    }
    lines.extend(problem_lines(app, area.width, screen_height));
    if app.replay.is_some() {
        lines.push(timeline(app, area.width as usize));
    }
    let w = area.width as usize;
    let lines: Vec<Line> = lines.into_iter().map(|l| super::fit_line(l, w)).collect();
    f.render_widget(Paragraph::new(lines), area);
}

/// `[───K────M──▲────]`: the recording's span, knob changes (K), markers (M) and the
/// position shown (▲).
fn timeline(app: &App, width: usize) -> Line<'static> {
    let t = app.theme();
    let w = width.saturating_sub(12).max(10);
    let (Some(first), Some(last)) = (app.snaps.metas().first(), app.snaps.metas().last()) else {
        return Line::raw("");
    };
    let (a, b) = (
        first.mono_ns.saturating_sub(first.interval_ns),
        last.mono_ns.max(first.mono_ns + 1),
    );
    let col = |ns: u64| -> Option<usize> {
        (ns >= a && ns <= b).then(|| ((ns - a) as f64 / (b - a) as f64 * (w - 1) as f64) as usize)
    };
    let mut cells = vec!['─'; w];
    for e in &app.knob_log {
        if let Some(c) = col(e.mono_ns) {
            cells[c] = 'K';
        }
    }
    for m in &app.markers {
        if let Some(c) = col(m.mono_ns) {
            cells[c] = 'M';
        }
    }
    if let Some(c) = app.current().and_then(|s| col(s.time.mono_ns)) {
        cells[c] = '▲';
    }
    let mut spans = vec![Span::styled("timeline [", t.dim())];
    for c in cells {
        let style = match c {
            'K' => t.warn(),
            'M' => t.accent(),
            '▲' => t.good(),
            _ => t.dim(),
        };
        spans.push(Span::styled(c.to_string(), style));
    }
    spans.push(Span::styled("]", t.dim()));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reasons_keep_the_head_and_say_when_cut() {
        assert_eq!(
            short_reason("schedstat unavailable (CONFIG_SCHEDSTATS off)"),
            "schedstat unavailable"
        );
        assert_eq!(
            short_reason("hardware counters unsupported: no hardware PMU for this event"),
            "hardware counters unsupported…"
        );
        assert_eq!(short_reason("no PMU"), "no PMU");
        assert!(short_reason(&"x ".repeat(40)).chars().count() <= SHORT);
    }
}
