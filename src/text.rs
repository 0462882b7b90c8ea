//! Text that reaches a terminal: every string llctop did not write itself (a process's
//! comm, a cgroup path, a knob's value, a label or path from a recording, a file name in
//! an error) passes through [`escape`] before it is printed, so that a process named
//! `"\x1b]2;PWN\x07"` cannot retitle or clear the operator's terminal and an embedded
//! newline cannot print a line of its own. Control characters (C0, DEL, C1) are shown as
//! `\xNN` (`\n`, `\r`, `\t` by name), and the bidirectional overrides that can reorder
//! what a line seems to say as `\u{NNNN}`. [`guard`] is the same for a whole text of
//! llctop's own lines (a report): it keeps their newlines and tabs — the last fence
//! before stdout, behind the per-field escapes.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Whether `c` is shown escaped: C0 controls, DEL, C1 controls, and the Unicode
/// formatting characters that reorder or hide text (bidi embeddings, overrides and
/// isolates; line and paragraph separators).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
}

fn escape_unless(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) && !keep(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` safe to print inside a line: every control or reordering character escaped.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_unless(s, |_| false)
}

/// A whole text of lines safe to print: as [`escape`], but its newlines and tabs stay.
pub fn guard(s: &str) -> Cow<'_, str> {
    escape_unless(s, |c| c == '\n' || c == '\t')
}

/// A table cell: `s` escaped, then cut to `width` columns of the terminal (a wide
/// character counts two) and padded to exactly `width` — measured after escaping, so an
/// escaped name never pushes the next column.
pub fn cell(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar as _;
    let mut out = String::with_capacity(width + 4);
    let mut used = 0;
    for c in escape(s).chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.extend(std::iter::repeat_n(' ', width - used));
    out
}

/// [`escape`] as a `Display` argument: `format!("{}", Esc(&comm))`, with no copy when
/// there is nothing to escape. Width and alignment apply to the escaped text.
#[derive(Clone, Copy)]
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&escape(self.0))
    }
}

impl fmt::Debug for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_measured_after_escaping() {
        use unicode_width::UnicodeWidthStr as _;
        for s in [
            "short",
            "\x1b]2;PWN\x07name",
            "数据库服务器进程名称很长",
            "a\tb\nc",
            "",
        ] {
            let c = cell(s, 16);
            assert_eq!(c.width(), 16, "{s:?} -> {c:?}");
            assert!(!c.chars().any(|ch| ch.is_control()), "{c:?}");
        }
        assert_eq!(cell("abc", 5), "abc  ");
        assert_eq!(cell("abcdefgh", 5), "abcde");
        assert_eq!(cell("\x1babcdefgh", 6), "\\x1bab");
    }

    /// Every character a terminal acts on.
    fn controls() -> impl Iterator<Item = char> {
        (0u32..0x20)
            .chain([0x7f])
            .chain(0x80..0xa0)
            .filter_map(char::from_u32)
    }

    #[test]
    fn every_control_character_is_escaped() {
        for c in controls() {
            let s = format!("a{c}b");
            let e = escape(&s);
            assert!(!e.chars().any(|x| x.is_control()), "{:?} -> {e:?}", c);
            assert!(e.starts_with('a') && e.ends_with('b'), "{e}");
            let g = guard(&s);
            if c == '\n' || c == '\t' {
                assert_eq!(g, s);
            } else {
                assert!(!g.chars().any(|x| x.is_control()), "{:?} -> {g:?}", c);
            }
        }
        assert_eq!(escape("\x1b]2;PWN\x07\x1b[2J"), "\\x1b]2;PWN\\x07\\x1b[2J");
        assert_eq!(escape("a\nb\r\t"), "a\\nb\\r\\t");
        assert_eq!(escape("\u{85}"), "\\x85");
    }

    #[test]
    fn reordering_characters_are_escaped_and_plain_text_is_not_copied() {
        assert_eq!(escape("abc\u{202e}def"), "abc\\u{202e}def");
        assert_eq!(escape("x\u{2066}y"), "x\\u{2066}y");
        assert!(matches!(escape("kworker/0:1 → ü 日本"), Cow::Borrowed(_)));
        assert!(matches!(guard("line\n\tnext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn esc_pads_the_escaped_text() {
        assert_eq!(format!("[{:<6}]", Esc("a\x07")), "[a\\x07 ]");
        assert_eq!(format!("[{:>4}]", Esc("ab")), "[  ab]");
    }
}
