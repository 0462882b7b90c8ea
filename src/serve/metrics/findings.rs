//! The advisor's findings as fleet series: `llctop_finding_active{kind,severity}` (1 while
//! a finding of that kind is held at that severity, else 0) and
//! `llctop_findings_fired_total{kind,severity}` (each time one fired). Every kind × severity
//! is there from the start (0), so an alert on `increase()` or `== 1` needs no absent()
//! guard; blind spots are the source series' business, not findings.

use prometheus_client::registry::Registry;

use super::{Count, Labels, Level, l};
use crate::findings::advisor::{FindingLine, State};
use crate::findings::{Finding, Kind, Severity};

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

fn kinds() -> impl Iterator<Item = Kind> {
    Kind::ALL.into_iter().filter(|k| *k != Kind::BlindSpots)
}

/// The `kind` label: the JSON name (`pile_up`, `newidle_churn`, …).
fn kind_label(k: Kind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn labels(k: Kind, s: Severity) -> Labels {
    l(&[("kind", kind_label(k)), ("severity", s.label().to_string())])
}

/// The series shown: active and fired for each kind and severity.
pub fn series() -> usize {
    2 * kinds().count() * SEVERITIES.len()
}

pub struct FindingSeries {
    active: Level,
    fired: Count,
}

impl FindingSeries {
    pub fn register(r: &mut Registry) -> FindingSeries {
        let s = FindingSeries {
            active: Level::default(),
            fired: Count::default(),
        };
        r.register(
            "finding_active",
            "1 while the advisor holds a finding of this kind at this severity (docs/advisor.md), else 0",
            s.active.clone(),
        );
        r.register(
            "findings_fired",
            "Findings of this kind that fired at this severity",
            s.fired.clone(),
        );
        for k in kinds() {
            for sev in SEVERITIES {
                s.active.get_or_create(&labels(k, sev)).set(0.0);
                let _ = s.fired.get_or_create(&labels(k, sev));
            }
        }
        s
    }

    /// The advisor's judgement of one snapshot: the lines it gave, and what it holds now.
    pub fn update(&mut self, lines: &[FindingLine], held: &[Finding]) {
        for line in lines.iter().filter(|x| x.state == State::Fired) {
            let k = line.finding.kind;
            if k != Kind::BlindSpots {
                self.fired
                    .get_or_create(&labels(k, line.finding.severity))
                    .inc();
            }
        }
        for k in kinds() {
            for sev in SEVERITIES {
                let on = held.iter().any(|f| f.kind == k && f.severity == sev);
                self.active
                    .get_or_create(&labels(k, sev))
                    .set(if on { 1.0 } else { 0.0 });
            }
        }
    }
}
