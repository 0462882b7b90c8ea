//! The reference docs' Markdown tables, read one way (the TUI's help view and `llctop
//! mcp`'s `explain` compile docs/metrics.md in): a row's cells, split at each `|` that is
//! not escaped as `\|`, trimmed, backticks removed.

/// The cells of table row `line` (`| a | b \| c |` → `["a", "b | c"]`).
pub fn cells(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev = ' ';
    for c in line.trim().trim_matches('|').chars() {
        if c == '|' && prev != '\\' {
            out.push(std::mem::take(&mut cur));
        } else if c != '\\' {
            cur.push(c);
        }
        prev = c;
    }
    out.push(cur);
    out.iter().map(|c| c.trim().replace('`', "")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaped_bars_stay_in_their_cell() {
        assert_eq!(super::cells("| `a` | b \\| c |  d  |"), ["a", "b | c", "d"]);
    }
}
