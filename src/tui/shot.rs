//! Screenshots of the TUI as SVG, from its own draw: the views drawn into ratatui's
//! TestBackend, each cell's symbol, colours and bold/italic/underline written as SVG text
//! on a dark terminal background (runs of one style merged, each run stretched to its
//! cells so columns line up whatever the viewer's monospace font). What the README's
//! pictures are (scripts/screenshots.sh; tests/host/screenshots.rs checks they are current).

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use super::app::{App, Msg, ViewId};
use super::views;

/// The recording the README's pictures replay (from the repository's root), and the
/// file name their header shows.
pub const RECORDING: &str = "tests/fixtures/recordings/placement-7.2-bpf.jsonl";
pub const FILE_LABEL: &str = "placement-7.2-bpf.jsonl";

/// A cell's size in the picture (px) and the font size.
const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FONT: f64 = 14.0;
/// The terminal's default colours (a dark theme).
const FG: &str = "#d4d4d4";
const BG: &str = "#1e1e1e";

/// xterm's 16 colours, then its 6×6×6 cube and grey ramp for `Indexed`.
fn hex(c: Color, default: &str) -> String {
    let named = |i: u8| -> &'static str {
        [
            "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
            "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
        ][usize::from(i & 15)]
    };
    match c {
        Color::Reset => default.to_string(),
        Color::Black => named(0).into(),
        Color::Red => named(1).into(),
        Color::Green => named(2).into(),
        Color::Yellow => named(3).into(),
        Color::Blue => named(4).into(),
        Color::Magenta => named(5).into(),
        Color::Cyan => named(6).into(),
        Color::Gray => named(7).into(),
        Color::DarkGray => named(8).into(),
        Color::LightRed => named(9).into(),
        Color::LightGreen => named(10).into(),
        Color::LightYellow => named(11).into(),
        Color::LightBlue => named(12).into(),
        Color::LightMagenta => named(13).into(),
        Color::LightCyan => named(14).into(),
        Color::White => named(15).into(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) if i < 16 => named(i).into(),
        Color::Indexed(i) if i < 232 => {
            let i = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            format!(
                "#{:02x}{:02x}{:02x}",
                level(i / 36),
                level((i / 6) % 6),
                level(i % 6)
            )
        }
        Color::Indexed(i) => {
            let v = 8 + 10 * (i - 232);
            format!("#{v:02x}{v:02x}{v:02x}")
        }
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The buffer as an SVG picture titled `title`.
pub fn buffer_to_svg(buf: &Buffer, title: &str) -> String {
    let (w, h) = (buf.area.width, buf.area.height);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" viewBox=\"0 0 {:.0} {:.0}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"{FONT}\">\n<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"{BG}\"/>\n",
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H,
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H,
        esc(title)
    );
    for y in 0..h {
        let top = f64::from(y) * CELL_H;
        // Backgrounds: runs of one colour other than the default.
        let mut x = 0;
        while x < w {
            let bg = hex(buf[(x, y)].bg, BG);
            let start = x;
            while x < w && hex(buf[(x, y)].bg, BG) == bg {
                x += 1;
            }
            if bg != BG {
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{CELL_H}\" fill=\"{bg}\"/>",
                    f64::from(start) * CELL_W,
                    f64::from(x - start) * CELL_W
                );
            }
        }
        // Text: runs of one foreground and modifier; blanks end a run.
        let mut x = 0;
        while x < w {
            let c = &buf[(x, y)];
            if c.symbol().trim().is_empty() {
                x += 1;
                continue;
            }
            let style = (hex(c.fg, FG), c.modifier);
            let start = x;
            let mut text = String::new();
            while x < w {
                let c = &buf[(x, y)];
                if (hex(c.fg, FG), c.modifier) != style || c.symbol().trim().is_empty() {
                    break;
                }
                text.push_str(c.symbol());
                x += 1;
            }
            let m = style.1;
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\" textLength=\"{:.1}\" lengthAdjust=\"spacingAndGlyphs\"{}{}{}>{}</text>",
                f64::from(start) * CELL_W,
                top + CELL_H - 4.0,
                style.0,
                f64::from(x - start) * CELL_W,
                if m.contains(Modifier::BOLD) {
                    " font-weight=\"bold\""
                } else {
                    ""
                },
                if m.contains(Modifier::ITALIC) {
                    " font-style=\"italic\""
                } else {
                    ""
                },
                if m.contains(Modifier::UNDERLINED) {
                    " text-decoration=\"underline\""
                } else {
                    ""
                },
                esc(&text)
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// `app` drawn at `width`×`height` as SVG.
pub fn render_to_svg(app: &App, width: u16, height: u16, title: &str) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let Ok(mut term) = ratatui::Terminal::new(backend);
    if term.draw(|f| views::draw(f, app)).is_err() {
        return String::new();
    }
    buffer_to_svg(term.backend().buffer(), title)
}

/// The README's pictures: `rec` replayed (as `llctop replay FILE` shows it, `file` the
/// name in its header), paused at two thirds of its length, every view at 120×40, named
/// by the view (`overview.svg`, …).
pub fn every_view(rec: crate::record::Recording, file: &str) -> Vec<(String, String)> {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let n = rec.snapshots.len();
    let mut app = App::replay(rec, file, super::theme::load_all(None).0);
    let key = |app: &mut App, k: KeyCode| {
        app.handle(Msg::Key(KeyEvent::new(k, KeyModifiers::NONE)));
    };
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Home);
    for _ in 0..(n * 2 / 3) {
        key(&mut app, KeyCode::Right);
    }
    ViewId::ALL
        .iter()
        .map(|v| {
            app.view = *v;
            let svg = render_to_svg(&app, 120, 40, &format!("llctop — {}", v.title()));
            (format!("{}.svg", v.title().to_lowercase()), svg)
        })
        .collect()
}
