//! `watch`'s answer, a pure fold over snapshots and the advisor's lines: per-LLC busy and
//! run-queue wait, migrations by distance and cause (sums and per second), and the
//! findings that fired and cleared in the window. The same snapshot fields `report`
//! reads (docs/metrics.md), so a recording of the same seconds gives the same figures.

use schemars::JsonSchema;
use serde::Serialize;

use crate::findings::advisor::{FindingLine, State};
use crate::snapshot::{ByCause, ByDistance, Cause, Precision, SatSum, Snapshot};
use crate::topology::Distance;

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LlcWindow {
    pub llc: u32,
    /// Mean busy share of its online CPUs over the window (0–1); null: not measured.
    pub busy: Option<f64>,
    /// Run-queue wait of its CPUs, seconds per second; null: not measured.
    pub rq_wait: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FindingBrief {
    /// `fired` or `cleared`.
    pub state: String,
    pub seq: u64,
    pub kind: String,
    pub key: String,
    pub severity: String,
    /// The measured cost its severity comes from, as shown (`0.27 CPUs`).
    pub cost: Option<String>,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Watch {
    pub first_seq: u64,
    pub last_seq: u64,
    pub snapshots: usize,
    /// Seconds the snapshots' intervals cover.
    pub seconds: f64,
    pub llcs: Vec<LlcWindow>,
    /// `exact` (BPF: every migration), `sampled`, or `none` (no migration source).
    pub migrations_precision: String,
    pub migrations: ByDistance,
    /// Migrations per second by distance.
    pub migrations_per_sec: ByDistance,
    /// By cause, where the source tells causes apart (BPF); null otherwise.
    pub causes: Option<ByCause>,
    pub findings: Vec<FindingBrief>,
}

pub fn brief(l: &FindingLine) -> FindingBrief {
    let f = &l.finding;
    FindingBrief {
        state: match l.state {
            State::Fired => "fired".into(),
            State::Cleared => "cleared".into(),
        },
        seq: l.seq,
        kind: f.kind.label().into(),
        key: f.key.clone(),
        severity: f.severity.label().into(),
        cost: f.cost.as_ref().map(|c| c.shown()),
        summary: f.summary.clone(),
    }
}

/// The window `snaps` (oldest first) with the finding lines among `lines` that belong to
/// it. `None` for no snapshots.
pub fn watch(snaps: &[&Snapshot], lines: &[&FindingLine]) -> Option<Watch> {
    let (first, last) = (snaps.first()?, snaps.last()?);
    let seconds: f64 = snaps.iter().map(|s| s.time.interval_secs()).sum();
    let mut ids: Vec<u32> = snaps
        .iter()
        .flat_map(|s| s.llcs.iter().map(|l| l.id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let llcs = ids
        .into_iter()
        .map(|id| {
            let of = |s: &&Snapshot| s.llcs.iter().find(|l| l.id == id).cloned();
            let busy: Vec<f64> = snaps.iter().filter_map(of).filter_map(|l| l.busy).collect();
            let waits: Vec<u64> = snaps
                .iter()
                .filter_map(of)
                .filter_map(|l| l.rq_wait_ns)
                .collect();
            LlcWindow {
                llc: id,
                busy: (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64),
                rq_wait: (!waits.is_empty() && seconds > 0.0)
                    .then(|| waits.iter().copied().sat_sum() as f64 / 1e9 / seconds),
            }
        })
        .collect();
    let migs: Vec<_> = snaps.iter().filter_map(|s| s.migrations.as_ref()).collect();
    let mut d = ByDistance::default();
    let mut causes: Option<ByCause> = None;
    for m in &migs {
        for x in Distance::ALL {
            d.add(x, m.by_distance.get(x));
        }
        if let Some(c) = &m.by_cause {
            let t = causes.get_or_insert_with(ByCause::default);
            for x in Cause::ALL {
                t.add(x, c.get(x));
            }
        }
    }
    let rate = |n: u64| {
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    };
    let mut per = ByDistance::default();
    for x in Distance::ALL {
        per.add(x, rate(d.get(x)).round() as u64);
    }
    let precision = if migs.is_empty() {
        "none"
    } else if migs.iter().all(|m| m.precision == Precision::Exact) {
        "exact"
    } else {
        "sampled"
    };
    let seqs = first.seq..=last.seq;
    Some(Watch {
        first_seq: first.seq,
        last_seq: last.seq,
        snapshots: snaps.len(),
        seconds,
        llcs,
        migrations_precision: precision.into(),
        migrations: d,
        migrations_per_sec: per,
        causes,
        findings: lines
            .iter()
            .filter(|l| seqs.contains(&l.seq))
            .map(|l| brief(l))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::testing::snap;
    use crate::snapshot::Migrations;
    use crate::topology::synthetic;

    #[test]
    fn sums_and_rates_over_the_window() {
        let topo = synthetic(2, 1, 2);
        let snaps: Vec<Snapshot> = (0..4)
            .map(|seq| {
                let mut s = snap(&topo, seq, 0.5);
                let mut m = Migrations {
                    precision: Precision::Exact,
                    ..Default::default()
                };
                m.by_distance.cross_llc = 3;
                m.by_distance.smt = 1;
                s.migrations = Some(m);
                s
            })
            .collect();
        let refs: Vec<&Snapshot> = snaps.iter().collect();
        let w = watch(&refs, &[]).unwrap();
        assert_eq!((w.first_seq, w.last_seq, w.snapshots), (0, 3, 4));
        assert_eq!(w.migrations.cross_llc, 12);
        assert_eq!(w.migrations_per_sec.cross_llc, 3);
        assert_eq!(w.migrations_precision, "exact");
        assert_eq!(w.causes, None, "no source said why");
        assert_eq!(w.llcs.len(), 2);
        assert!(
            w.llcs
                .iter()
                .all(|l| l.busy.is_some_and(|b| (b - 0.5).abs() < 1e-9))
        );
        assert!(watch(&[], &[]).is_none());
    }
}
