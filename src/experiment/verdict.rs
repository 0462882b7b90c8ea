//! The verdict of an experiment: per metric, the windows' values compared (B vs A), and
//! the table printed by `llctop ab` and `llctop report --compare` (or its JSON). Computed
//! from the windows and the snapshots only, so the live run and a recording agree.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::metrics::{self, Better};
use super::stats;
use super::{Arm, Experiment, Window};
use crate::snapshot::Snapshot;
use crate::text::Esc;

/// One metric's comparison (its statistics flattened next to the name in JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub unit: String,
    #[serde(flatten)]
    pub stats: stats::Comparison,
    /// `better`, `worse`, `higher`, `lower`, `no detectable difference`, `no difference`.
    pub verdict: String,
}

/// The verdict (`"type":"verdict"` at the end of a recording).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Windows counted (measured, and not left out).
    pub windows: usize,
    pub planned: usize,
    pub rows: Vec<Row>,
    /// The windows measured but left out, and why (`window N: reason`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_counted: Vec<String>,
}

impl Verdict {
    /// Windows measured, counted or not.
    pub fn measured(&self) -> usize {
        self.windows + self.not_counted.len()
    }
}

/// The snapshots `first..=last` of `snaps` (in seq order): found by binary search, so a
/// verdict over many windows stays linear in the recording.
fn seq_range(snaps: &[Snapshot], first: u64, last: u64) -> &[Snapshot] {
    let lo = snaps.partition_point(|s| s.seq < first);
    let hi = snaps.partition_point(|s| s.seq <= last);
    snaps.get(lo..hi.max(lo)).unwrap_or_default()
}

/// Every metric of every window, by arm: key → (A's values, B's values).
pub fn by_arm(windows: &[&Window], snaps: &[Snapshot]) -> BTreeMap<String, (Vec<f64>, Vec<f64>)> {
    let mut out: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for w in windows {
        let range = seq_range(snaps, w.first_seq, w.last_seq);
        let mut m = metrics::window(range);
        m.extend(metrics::command(range, &w.command_pids));
        if let Some(t) = w.command_secs {
            m.insert("command.wall".into(), t);
        }
        if w.command_secs.is_some() || w.exit_code.is_some() {
            let failed = w.exit_code != Some(0);
            m.insert("command.failed".into(), if failed { 100.0 } else { 0.0 });
        }
        for (k, v) in m {
            let e = out.entry(k).or_default();
            match w.arm {
                Arm::A => e.0.push(v),
                Arm::B => e.1.push(v),
            }
        }
    }
    out
}

fn word(c: &stats::Comparison, better: Better, a: &[f64], b: &[f64]) -> &'static str {
    judged(c.significant(), c, better, a, b)
}

/// The verdict word of a comparison judged `significant` (by its own p, or by one
/// adjusted for many metrics: the fleet's): `no difference` when every value is the same,
/// `no detectable difference` when not significant, else `better`/`worse` or, for a metric
/// with no better direction, `higher`/`lower`.
pub fn judged(
    significant: bool,
    c: &stats::Comparison,
    better: Better,
    a: &[f64],
    b: &[f64],
) -> &'static str {
    if !significant {
        let first = a.first().or(b.first());
        let constant = a.iter().chain(b).all(|v| Some(v) == first);
        return if constant {
            "no difference"
        } else {
            "no detectable difference"
        };
    }
    let up = c.median_b > c.median_a;
    match (better, up) {
        (Better::Lower, false) | (Better::Higher, true) => "better",
        (Better::Lower, true) | (Better::Higher, false) => "worse",
        (Better::Neither, true) => "higher",
        (Better::Neither, false) => "lower",
    }
}

/// The verdict over the measured windows that count (`snaps` in any order; sorted by
/// seq here when they are not).
pub fn compute(exp: &Experiment, windows: &[Window], snaps: &[Snapshot]) -> Verdict {
    let sorted;
    let snaps = if snaps.is_sorted_by_key(|s| s.seq) {
        snaps
    } else {
        let mut v = snaps.to_vec();
        v.sort_by_key(|s| s.seq);
        sorted = v;
        &sorted
    };
    let counted: Vec<&Window> = windows.iter().filter(|w| w.not_counted.is_none()).collect();
    let not_counted = windows
        .iter()
        .filter_map(|w| {
            w.not_counted
                .as_ref()
                .map(|why| format!("window {}: {why}", w.index + 1))
        })
        .collect();
    let mut rows = Vec::new();
    for (metric, (a, b)) in by_arm(&counted, snaps) {
        let Some(c) = stats::compare(&a, &b) else {
            continue;
        };
        let (unit, better) = metrics::describe(&metric);
        rows.push(Row {
            verdict: word(&c, better, &a, &b).into(),
            metric,
            unit: unit.into(),
            stats: c,
        });
    }
    Verdict {
        windows: counted.len(),
        planned: exp.order().len(),
        rows,
        not_counted,
    }
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

/// A comparison's first columns as the tables print them, padded: the metric, A's and
/// B's medians with their unit, B vs A and its interval (`ab`'s and the fleet's tables).
pub fn cells(metric: &str, c: &stats::Comparison) -> String {
    format!(
        "{:<28} {:>11} {:>11} {:>8} {:>18}",
        Esc(metric),
        super::metrics::shown(metric, c.median_a),
        super::metrics::shown(metric, c.median_b),
        c.change.map(pct).unwrap_or_else(|| "-".into()),
        c.ci.map(|(lo, hi)| format!("[{}, {}]", pct(lo), pct(hi)))
            .unwrap_or_else(|| "-".into()),
    )
}

/// The table: one line per metric, the ones that moved first.
pub fn render(exp: &Experiment, v: &Verdict) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: A = {}, B = {}; {} of {} windows of {:.1} s counted (after {:.1} s warm-up each), ABBA order",
        Esc(&exp.knob),
        Esc(&exp.a),
        Esc(&exp.b),
        v.windows,
        v.planned,
        exp.window_ns as f64 / 1e9,
        exp.warmup_ns as f64 / 1e9
    );
    let _ = writeln!(
        out,
        "{:<28} {:>11} {:>11} {:>8} {:>18} {:>6}  verdict",
        "metric (median)", "A", "B", "B vs A", "95% CI", "p"
    );
    let mut rows: Vec<&Row> = v.rows.iter().collect();
    let moved = |r: &Row| !r.verdict.starts_with("no ");
    rows.sort_by_key(|r| !moved(r));
    for r in rows {
        let c = &r.stats;
        let _ = writeln!(out, "{} {:>6.3}  {}", cells(&r.metric, c), c.p, r.verdict);
    }
    for c in caveats(exp, v) {
        let _ = writeln!(out, "{}", Esc(&c));
    }
    out
}

/// What a reader of the verdict must keep in mind, one line each: bucketed metrics, the
/// smallest p the rounds allow, the windows not counted, an early stop. The text and the
/// page both say them all.
pub fn caveats(exp: &Experiment, v: &Verdict) -> Vec<String> {
    let mut out = Vec::new();
    if v.rows.iter().any(|r| super::metrics::is_bound(&r.metric)) {
        out.push("rq_wait.p50/p99: tops of log2 histogram buckets (≤): they move in whole doublings, so their changes and intervals are coarse".to_string());
    }
    let per_arm = exp.rounds as u64;
    let min_p = 2.0 / stats::choose(2 * per_arm, per_arm).max(1) as f64;
    if min_p >= stats::ALPHA {
        out.push(format!(
            "note: with {per_arm} windows per value the smallest possible p is {min_p:.2}: no difference can be shown; use --rounds 4 or more"
        ));
    }
    for why in &v.not_counted {
        out.push(format!("not counted: {why}"));
    }
    if v.measured() < v.planned {
        out.push(format!(
            "stopped early: {} of {} windows measured",
            v.measured(),
            v.planned
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{ByDistance, Migrations, SnapshotTime};

    fn snap(seq: u64, xllc: u64, smt: u64) -> Snapshot {
        Snapshot {
            seq,
            time: SnapshotTime {
                unix_ns: 0,
                mono_ns: 0,
                interval_ns: 1_000_000_000,
                missed_ticks: 0,
            },
            migrations: Some(Migrations {
                by_distance: ByDistance {
                    cross_llc: xllc,
                    smt,
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_metric_that_moves_is_judged_and_one_that_cannot_is_not() {
        let exp = Experiment {
            knob: "relax_domain_level".into(),
            a: "-1".into(),
            b: "1".into(),
            window_ns: 2_000_000_000,
            warmup_ns: 0,
            rounds: 4,
            command: vec![],
            steady: false,
        };
        let (mut snaps, mut windows) = (Vec::new(), Vec::new());
        for (i, arm) in exp.order().into_iter().enumerate() {
            let seq = 2 * i as u64;
            // B halves the cross-LLC moves; SMT moves stay at 5/s.
            let x = if arm == Arm::A {
                40 + i as u64
            } else {
                20 + i as u64
            };
            snaps.push(snap(seq, x, 5));
            snaps.push(snap(seq + 1, x, 5));
            windows.push(Window {
                index: i as u32,
                arm,
                value: exp.value(arm).into(),
                first_seq: seq,
                last_seq: seq + 1,
                command_secs: Some(2.0),
                exit_code: Some(0),
                command_pids: Vec::new(),
                not_counted: None,
            });
        }
        let v = compute(&exp, &windows, &snaps);
        let row = |m: &str| v.rows.iter().find(|r| r.metric == m).unwrap();
        assert_eq!(row("migrations.xllc").verdict, "better");
        assert!(row("migrations.xllc").stats.change.unwrap() < -0.4);
        assert_eq!(row("migrations.smt").verdict, "no difference");
        assert_eq!(row("command.wall").verdict, "no difference");
        assert_eq!((v.windows, v.planned), (8, 8));
        let t = render(&exp, &v);
        assert!(
            t.lines().nth(2).unwrap().starts_with("migrations.xllc"),
            "{t}"
        );
        assert_eq!(compute(&exp, &windows, &snaps), v, "deterministic");
    }
}
