//! The advisor in the TUI: live, the pipeline's judgement of each tick taken in (its
//! advisor mirrored: the same episodes; what fired or cleared said, and recorded when a
//! recording runs), and trying a finding's suggestion —
//! which only opens the Knobs view's A/B prompt for the knob with B filled in: nothing is
//! written until the operator accepts it there (and then through the knob session).

use super::{App, Input, InputKind, Level, ViewId};
use crate::findings::advisor::FindingLine;

/// Snapshot time between two status lines about findings.
pub const FINDING_SAID_NS: u64 = 30_000_000_000;

impl App {
    /// Take in the pipeline's judgement of the newest live snapshot (`found` at `seq`):
    /// the same episodes as the pipeline's advisor; returns what fired or cleared.
    pub(super) fn judge(
        &mut self,
        found: Vec<crate::findings::Finding>,
        seq: u64,
    ) -> Vec<FindingLine> {
        let lines = self.advisor.apply(found, seq);
        // The status line speaks of findings that cost (WARNING and up), at most once per
        // [`FINDING_SAID_NS`] of snapshot time — a finding that fires and clears every few
        // seconds is the Findings view's to show, not the status line's to flip.
        let now = self.snaps.tail().last().map_or(0, |s| s.time.mono_ns);
        let quiet = self
            .finding_said
            .is_some_and(|t| now.saturating_sub(t) < FINDING_SAID_NS);
        if let Some(l) = lines.iter().find(|l| {
            l.finding.kind != crate::findings::Kind::BlindSpots
                && l.finding.severity >= crate::findings::Severity::Warning
        }) && !quiet
        {
            let verb = match l.state {
                crate::findings::advisor::State::Fired => "finding",
                crate::findings::advisor::State::Cleared => "cleared",
            };
            let level = match l.state {
                crate::findings::advisor::State::Fired => Level::Warn,
                crate::findings::advisor::State::Cleared => Level::Info,
            };
            self.say(
                level,
                format!("{verb}: {} (8 Findings)", l.finding.headline()),
            );
            self.finding_said = Some(now);
        }
        lines
    }

    /// Enter/`a` on the Findings view: the selected finding's suggested experiment.
    pub(super) fn try_finding(&mut self) {
        let Some(f) = self
            .finding_rows()
            .get(self.finding_sel)
            .map(|e| e.latest().clone())
        else {
            return;
        };
        let Some(s) = f.suggestion else {
            return self.say(
                Level::Info,
                if f.kind == crate::findings::Kind::BlindSpots {
                    "a note on what this machine cannot show: no experiment applies (its text says what would)".to_string()
                } else {
                    format!("{}: no experiment suggested (docs/advisor.md says why)", f.kind.title())
                },
            );
        };
        let (Some(knob), Some(value)) = (s.knob.clone(), s.value.clone()) else {
            return self.say(Level::Info, format!("{}: {}", s.lead(), s.command));
        };
        if self.experiment.as_ref().is_some_and(|e| e.running()) {
            return self.say(
                Level::Warn,
                "an A/B experiment is running (a on Knobs stops it)",
            );
        }
        if self.session.is_none() {
            return self.say(
                Level::Warn,
                format!("replay: knobs cannot be changed; try: {}", s.command),
            );
        }
        // The Knobs view's search must not hide the knob the suggestion is about.
        self.filters[ViewId::Knobs.index()].clear();
        let Some(i) = self.knobs().iter().position(|k| k.id == knob) else {
            return self.say(
                Level::Bad,
                format!(
                    "{knob}: not on this kernel (8 Findings says what to try instead: {})",
                    s.command
                ),
            );
        };
        self.view = ViewId::Knobs;
        self.knob_sel = i;
        let Some(k) = self.writable_selected() else {
            return;
        };
        self.input = Some(Input {
            kind: InputKind::Ab(k.id),
            text: value,
        });
    }
}
