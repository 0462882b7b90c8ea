//! The advisor's findings as fleet series: `llctop_finding_active{kind,severity}` (1 while
//! a finding of that kind is held at that severity, else 0) and
//! `llctop_findings_fired_total{kind,severity}` (each time one fired). Every kind × severity
//! is there from the start (0), so an alert on `increase()` or `== 1` needs no absent()
//! guard; blind spots are the source series' business, not findings.

use super::series::{Metrics, S, SEVERITIES, finding_kinds};
use crate::findings::advisor::{FindingLine, State};
use crate::findings::{Finding, Kind};

/// The `kind` label: the JSON name (`pile_up`, `newidle_churn`, …).
fn kind_label(k: Kind) -> String {
    k.label().to_string()
}

/// Every kind × severity at 0.
pub fn start(m: &Metrics) {
    for k in finding_kinds() {
        for sev in SEVERITIES {
            m.put(S::FindingActive, &[&kind_label(k), sev.label()], 0.0);
            m.put(S::FindingsFired, &[&kind_label(k), sev.label()], 0.0);
        }
    }
}

/// The advisor's judgement of one snapshot: the lines it gave, and what it holds now.
pub fn update(m: &Metrics, lines: &[FindingLine], held: &[Finding]) {
    for line in lines.iter().filter(|x| x.state == State::Fired) {
        let k = line.finding.kind;
        if k != Kind::BlindSpots {
            m.put(
                S::FindingsFired,
                &[&kind_label(k), line.finding.severity.label()],
                1.0,
            );
        }
    }
    for k in finding_kinds() {
        for sev in SEVERITIES {
            let on = held.iter().any(|f| f.kind == k && f.severity == sev);
            m.put(
                S::FindingActive,
                &[&kind_label(k), sev.label()],
                if on { 1.0 } else { 0.0 },
            );
        }
    }
}
