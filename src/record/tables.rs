//! The report's totals as tables — one model that both renderers draw: the text report
//! ([`Table::text`]) and the page (html/report.rs). Busy by LLC, migrations by distance,
//! load balancing by domain level, the split at markers, placements and their pile-ups,
//! the top processes: each a small function of the fold ([`Summary`]), so a figure added
//! to a table shows in both outputs.

use super::summary::{LevelTotals, Summary};
use crate::cpulist;
use crate::snapshot::Precision;
use crate::topology::Distance;

/// A column: its heading, how its cells align, and (in text) at most how wide it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Col {
    pub name: &'static str,
    pub right: bool,
    pub max: Option<usize>,
}

const fn left(name: &'static str) -> Col {
    Col {
        name,
        right: false,
        max: None,
    }
}

const fn right(name: &'static str) -> Col {
    Col {
        name,
        right: true,
        max: None,
    }
}

/// A titled table: rows of cells (raw text: each renderer escapes), and lines below it
/// (what is missing and why, what was left out).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The page's anchor.
    pub id: &'static str,
    pub title: String,
    pub cols: Vec<Col>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

impl Table {
    fn new(id: &'static str, title: impl Into<String>, cols: Vec<Col>) -> Table {
        Table {
            id,
            title: title.into(),
            cols,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The table as text: the title after a blank line, the columns aligned two spaces
    /// apart (numbers to the right), indented by two; control characters escaped.
    pub fn text(&self) -> String {
        let esc = |s: &str, c: &Col| {
            let e = crate::text::Esc(s).to_string();
            match c.max {
                Some(m) => crate::text::cell(&e, m).trim_end().to_string(),
                None => e,
            }
        };
        let mut out = format!("\n{}\n", crate::text::Esc(&self.title));
        if !self.rows.is_empty() {
            let cells: Vec<Vec<String>> = std::iter::once(
                self.cols
                    .iter()
                    .map(|c| c.name.to_string())
                    .collect::<Vec<_>>(),
            )
            .chain(self.rows.iter().map(|r| {
                r.iter()
                    .zip(&self.cols)
                    .map(|(v, c)| esc(v, c))
                    .collect::<Vec<_>>()
            }))
            .collect();
            let width: Vec<usize> = (0..self.cols.len())
                .map(|i| {
                    cells
                        .iter()
                        .filter_map(|r| r.get(i))
                        .map(|v| v.chars().count())
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            for r in &cells {
                let mut line = String::from(" ");
                for ((v, c), w) in r.iter().zip(&self.cols).zip(&width) {
                    line.push(' ');
                    let pad = w.saturating_sub(v.chars().count());
                    if c.right {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(v);
                    } else {
                        line.push_str(v);
                        line.push_str(&" ".repeat(pad));
                    }
                    line.push(' ');
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        for n in &self.notes {
            out.push_str("  ");
            out.push_str(&crate::text::Esc(n).to_string());
            out.push('\n');
        }
        out
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn rate(n: u64, secs: f64) -> String {
    format!("{:.1}/s", n as f64 / secs.max(1e-9))
}

impl Summary {
    /// Every totals table of the report, in its order (none before the first snapshot).
    pub fn tables(&self) -> Vec<Table> {
        if self.snapshots == 0 {
            return Vec::new();
        }
        let mut t = vec![self.busy_table()];
        t.extend(self.migrations_table());
        t.push(self.balance_table());
        t.extend(self.split_table());
        t.extend(self.placements_table());
        t.extend(self.processes_table());
        t
    }

    /// Busy by LLC, the mean over the recording.
    fn busy_table(&self) -> Table {
        let mut t = Table::new(
            "busy-by-llc",
            "Busy by LLC (mean over the recording)",
            vec![left("llc"), right("busy"), left("node"), left("cpus")],
        );
        if let Some(b) = self.busy_all.get() {
            t.rows
                .push(vec!["all".into(), pct(b), String::new(), String::new()]);
        }
        for llc in &self.header.topology.llcs {
            let b = self.busy_llc.get(llc.id as usize).and_then(|m| m.get());
            t.rows.push(vec![
                format!("llc{}", llc.id),
                b.map_or("-".into(), pct),
                llc.node.map_or("-".into(), |n| n.to_string()),
                cpulist::format(&llc.cpus),
            ]);
        }
        t
    }

    /// Migrations by distance, with their precision; none when no source counted them.
    fn migrations_table(&self) -> Option<Table> {
        let m = self.migs.as_ref()?;
        let mut t = Table::new(
            "migrations",
            format!(
                "Migrations by distance ({})",
                if m.sampled {
                    "SAMPLED: CPU changes seen between scans, a lower bound"
                } else {
                    "exact"
                }
            ),
            vec![left("distance"), right("count"), right("rate")],
        );
        for d in Distance::ALL {
            let n = m.by_distance.get(d);
            t.rows
                .push(vec![d.label().into(), n.to_string(), rate(n, self.secs)]);
        }
        if m.unclassified > 0 {
            t.notes.push(format!("unclassified {}", m.unclassified));
        }
        Some(t)
    }

    /// Load balancing by domain level, or why it was not recorded.
    fn balance_table(&self) -> Table {
        let Some(b) = &self.balance else {
            let why = self
                .notes
                .iter()
                .find(|(n, _)| n.as_str() == crate::snapshot::SourceName::ProcfsSchedstat.as_str())
                .map_or("no source recorded it", |(_, r)| r.as_str());
            return Table::new(
                "balance",
                format!("Load balancing: not recorded ({why})"),
                Vec::new(),
            );
        };
        let mut t = Table::new(
            "balance",
            format!("Load balancing (/proc/schedstat v{}), totals", b.version),
            vec![
                right("level"),
                left("name"),
                right("busy ok/fail"),
                right("idle ok/fail"),
                right("newidle ok/fail"),
                right("gained b/i/n"),
            ],
        );
        let of = |x: &super::summary::LbTotals| format!("{}/{}", x.ok, x.failed);
        for (lvl, l) in &b.levels {
            let LevelTotals {
                name,
                busy,
                idle,
                newidle,
            } = l;
            t.rows.push(vec![
                lvl.to_string(),
                name.clone().unwrap_or_else(|| "?".into()),
                of(busy),
                of(idle),
                of(newidle),
                format!("{}/{}/{}", busy.gained, idle.gained, newidle.gained),
            ]);
        }
        t
    }

    /// The recording split at its markers: per stretch, its length, mean busy and
    /// migrations by distance per second — what changed at each marker. None without
    /// markers.
    fn split_table(&self) -> Option<Table> {
        if self.markers.is_empty() {
            return None;
        }
        let mut sorted: Vec<&super::Marker> = self.markers.iter().collect();
        sorted.sort_by_key(|m| m.mono_ns);
        let mut cols = vec![left("stretch"), right("secs"), right("busy")];
        cols.extend(Distance::ALL.iter().map(|d| right(d.label())));
        let mut t = Table::new(
            "split",
            "Split at the markers (migrations per second; busy is the mean)",
            cols,
        );
        let mut from = "start".to_string();
        for i in 0..=sorted.len() {
            let to = sorted.get(i).map_or("end".to_string(), |m| m.label.clone());
            let name = format!("{from} → {to}");
            from = to;
            let Some(part) = self.stretches.get(i).filter(|p| p.snapshots > 0) else {
                t.notes.push(format!("{name}: no snapshots"));
                continue;
            };
            let mut row = vec![
                name,
                format!("{:.1}", part.secs),
                part.busy
                    .get()
                    .map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            ];
            row.extend(Distance::ALL.iter().map(|&d| {
                if part.all_migs {
                    format!("{:.1}", part.migs.get(d) as f64 / part.secs.max(1e-9))
                } else {
                    "-".into()
                }
            }));
            t.rows.push(row);
        }
        Some(t)
    }

    /// New tasks placed and the pile-ups among them; none when no source saw placements.
    fn placements_table(&self) -> Option<Table> {
        // The finder keeps only the starts not judged yet: a clone is small.
        let piles = self.piles.clone().finish();
        if !self.any_events && piles.is_empty() && self.events_dropped == 0 {
            return None;
        }
        let title = if piles.is_empty() {
            format!("Placements: {} new tasks, no pile-up", self.placed)
        } else {
            format!("Placements: {} new tasks", self.placed)
        };
        let mut t = Table::new("placements", title, vec![right("at"), left("what")]);
        let t0 = self.t0.unwrap_or(0);
        for p in &piles {
            let at = p.first_ns.saturating_sub(t0) as f64 / 1e9;
            // The pile-up's own sentence, whole ("pile-up: …"), as the findings and the
            // lab's checks quote it.
            t.rows.push(vec![format!("{at:+.1}s"), p.describe()]);
        }
        if self.events_dropped > 0 {
            t.notes.push(format!(
                "{} detail events dropped (rate limit or full buffer): a thread without its placement and first run is not judged",
                self.events_dropped
            ));
        }
        Some(t)
    }

    /// The ten processes with the most CPU time over the recording.
    fn processes_table(&self) -> Option<Table> {
        if self.procs.is_empty() {
            return None;
        }
        let mut v: Vec<_> = self.procs.iter().collect();
        v.sort_by(|a, b| b.1.cpu.cmp(&a.1.cpu).then(a.0.cmp(b.0)));
        let mut t = Table::new(
            "processes",
            format!(
                "Top processes by CPU time{}",
                if self.precision == Some(Precision::Sampled) {
                    " (migrations sampled)"
                } else {
                    ""
                }
            ),
            vec![
                right("pid"),
                Col {
                    max: Some(16),
                    ..left("comm")
                },
                right("cpu s"),
                right("pref%"),
                right("migs"),
                right("xllc"),
            ],
        );
        for (pid, p) in v.into_iter().take(10) {
            t.rows.push(vec![
                pid.to_string(),
                p.comm.clone(),
                format!("{:.2}", p.cpu as f64 / 1e9),
                if p.hit_den > 0.0 {
                    pct(p.hit_num / p.hit_den)
                } else {
                    "-".into()
                },
                p.migs.to_string(),
                p.xllc.to_string(),
            ]);
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_aligns_numbers_right_and_escapes() {
        let mut t = Table::new("x", "Title", vec![left("name"), right("n")]);
        t.rows.push(vec!["a\u{1b}[2J".into(), "5".into()]);
        t.rows.push(vec!["bb".into(), "100".into()]);
        t.notes.push("note".into());
        let s = t.text();
        assert!(!s.contains('\u{1b}'), "{s:?}");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], "Title");
        assert!(lines[2].starts_with("  name"), "{s}");
        assert!(lines[3].ends_with("    5"), "{s}");
        assert!(lines[4].ends_with("  100"), "{s}");
        assert_eq!(lines[5], "  note");
    }

    #[test]
    fn a_table_without_rows_is_its_title_and_notes() {
        let t = Table::new("x", "Load balancing: not recorded (why)", Vec::new());
        assert_eq!(t.text(), "\nLoad balancing: not recorded (why)\n");
    }
}
