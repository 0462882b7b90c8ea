//! `llctop diff A B`: two recordings side by side. Knob values that differ come first
//! (as each recording's header found them, and the changes made while recording); then
//! every figure per interval — the experiment metrics (migrations by distance and cause,
//! run-queue wait, balancing per domain level, NUMA, counters) and busy per LLC and per
//! node — as each recording's mean, the change, and whether it moved beyond the noise:
//! each recording's own interval-to-interval spread (standard error of its mean; moved
//! when the means differ by more than twice the combined standard error).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::text::Esc;

use super::reader::Recording;
use crate::experiment::metrics;
use crate::snapshot::Snapshot;

/// The figures of one interval, by key.
fn interval(s: &Snapshot) -> BTreeMap<String, f64> {
    let mut m = metrics::window(std::slice::from_ref(s));
    for g in &s.llcs {
        if let Some(b) = g.busy {
            m.insert(format!("llc{}.busy", g.id), 100.0 * b);
        }
    }
    for g in &s.nodes {
        if let Some(b) = g.busy {
            m.insert(format!("node{}.busy", g.id), 100.0 * b);
        }
    }
    m
}

/// Mean and standard error of the mean.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, f64::INFINITY);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// One figure compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub key: String,
    pub mean_a: f64,
    pub mean_b: f64,
    pub se_a: f64,
    pub se_b: f64,
    pub moved: bool,
}

/// Every figure both recordings have.
pub fn compare(a: &Recording, b: &Recording) -> Vec<Line> {
    let series = |r: &Recording| {
        let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for s in &r.snapshots {
            for (k, v) in interval(s) {
                m.entry(k).or_default().push(v);
            }
        }
        m
    };
    let (sa, sb) = (series(a), series(b));
    let mut out = Vec::new();
    for (k, va) in &sa {
        let Some(vb) = sb.get(k) else { continue };
        let ((ma, ea), (mb, eb)) = (mean_se(va), mean_se(vb));
        let noise = (ea * ea + eb * eb).sqrt();
        out.push(Line {
            key: k.clone(),
            mean_a: ma,
            mean_b: mb,
            se_a: ea,
            se_b: eb,
            moved: (mb - ma).abs() > 2.0 * noise,
        });
    }
    out
}

/// Knob values at the start of each recording that differ, and the changes made while
/// each was recording: (id, A, B).
pub fn knob_differences(a: &Recording, b: &Recording) -> Vec<(String, String, String)> {
    let ids: BTreeSet<&String> = a.header.knobs.keys().chain(b.header.knobs.keys()).collect();
    let get = |r: &Recording, id: &str| r.header.knobs.get(id).cloned().unwrap_or("-".into());
    ids.into_iter()
        .filter(|id| get(a, id) != get(b, id))
        .map(|id| (id.clone(), get(a, id), get(b, id)))
        .collect()
}

pub fn render(a: &Recording, b: &Recording) -> String {
    let mut out = String::new();
    for (name, r) in [("A", a), ("B", b)] {
        let _ = writeln!(
            out,
            "{name}: host {} · kernel {} · {} · {} snapshots",
            Esc(r.header.host.as_deref().unwrap_or("?")),
            Esc(r.header.kernel.as_deref().unwrap_or("?")),
            r.header.topology.summary(),
            r.snapshots.len()
        );
    }
    let (sa, sb) = (
        super::sched::main_of(&a.snapshots),
        super::sched::main_of(&b.snapshots),
    );
    if sa.is_some() || sb.is_some() {
        let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "not recorded".into());
        let _ = writeln!(
            out,
            "\nScheduler{}: A {} · B {}",
            if sa == sb { " (the same)" } else { " DIFFERS" },
            Esc(&name(&sa)),
            Esc(&name(&sb))
        );
    }
    let knobs = knob_differences(a, b);
    if a.header.knobs.is_empty() || b.header.knobs.is_empty() {
        let _ = writeln!(
            out,
            "\nKnobs: not compared (a recording without knob values: made before llctop recorded them)"
        );
    } else if knobs.is_empty() {
        let _ = writeln!(out, "\nKnobs: the same at the start of both");
    } else {
        let _ = writeln!(out, "\nKnobs that differ at the start");
        for (id, va, vb) in &knobs {
            let _ = writeln!(out, "  {:<40} A {:<12} B {}", Esc(id), Esc(va), Esc(vb));
        }
    }
    for (name, r) in [("A", a), ("B", b)] {
        for k in &r.knobs {
            let _ = writeln!(
                out,
                "  changed while recording {name}: {} {} -> {}",
                Esc(&k.id),
                Esc(&k.old),
                Esc(&k.new)
            );
        }
    }
    let lines = compare(a, b);
    let moved = lines.iter().filter(|l| l.moved).count();
    let _ = writeln!(
        out,
        "\n{} figures, {} moved beyond the noise (2 × the combined standard error of the interval means)",
        lines.len(),
        moved
    );
    let _ = writeln!(
        out,
        "{:<30} {:>12} {:>12} {:>9} {:>10} {:>10}",
        "figure (per interval mean)", "A", "B", "change", "±A", "±B"
    );
    let bounds = lines.iter().any(|l| metrics::is_bound(&l.key));
    let mut sorted: Vec<&Line> = lines.iter().collect();
    sorted.sort_by_key(|l| !l.moved);
    for l in sorted {
        let change = if l.mean_a != 0.0 {
            format!("{:+.1}%", 100.0 * (l.mean_b / l.mean_a - 1.0))
        } else if l.mean_b == 0.0 {
            "0".into()
        } else {
            "new".into()
        };
        let unit = metrics::describe(&l.key).0;
        let _ = writeln!(
            out,
            "{:<30} {:>12} {:>12} {:>9} {:>10} {:>10}{}",
            Esc(&l.key),
            metrics::shown(&l.key, l.mean_a),
            metrics::shown(&l.key, l.mean_b),
            change,
            crate::units::figure(l.se_a, unit, false),
            crate::units::figure(l.se_b, unit, false),
            if l.moved { "  moved" } else { "" }
        );
    }
    if bounds {
        let _ = writeln!(
            out,
            "rq_wait.p50/p99: the top of the log2 histogram's bucket that holds the percentile (≤): a mean of bounds, not a measured wait"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{ByDistance, Migrations, SnapshotTime};

    fn rec(xllc: &[u64], knob: &str) -> Recording {
        let snapshots = xllc
            .iter()
            .enumerate()
            .map(|(i, &x)| Snapshot {
                seq: i as u64,
                time: SnapshotTime {
                    unix_ns: 0,
                    mono_ns: 0,
                    interval_ns: 1_000_000_000,
                    missed_ticks: 0,
                },
                migrations: Some(Migrations {
                    by_distance: ByDistance {
                        cross_llc: x,
                        ..Default::default()
                    },
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        let mut header = crate::record::tests_header();
        header
            .knobs
            .insert("relax_domain_level".into(), knob.into());
        Recording::of(header, snapshots)
    }

    #[test]
    fn a_recording_against_itself_has_no_change() {
        let a = rec(&[10, 12, 11, 9, 10], "-1");
        assert!(compare(&a, &a).iter().all(|l| !l.moved));
        assert!(knob_differences(&a, &a).is_empty());
        assert!(render(&a, &a).contains("0 moved beyond the noise"));
    }

    #[test]
    fn the_knob_change_and_the_figure_that_moved_are_listed() {
        let a = rec(&[40, 42, 41, 39, 40], "-1");
        let b = rec(&[20, 21, 19, 22, 20], "1");
        let l = compare(&a, &b);
        let x = l.iter().find(|l| l.key == "migrations.xllc").unwrap();
        assert!(x.moved && x.mean_b < x.mean_a);
        assert!(!l.iter().find(|l| l.key == "migrations.smt").unwrap().moved);
        assert_eq!(
            knob_differences(&a, &b),
            [("relax_domain_level".into(), "-1".into(), "1".into())]
        );
        let t = render(&a, &b);
        assert!(t.contains("relax_domain_level"), "{t}");
        assert!(t.contains("migrations.xllc") && t.contains("moved"), "{t}");
    }
}
