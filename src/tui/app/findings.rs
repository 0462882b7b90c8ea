//! The advisor in the TUI: each live snapshot judged as it arrives (the lines that fired
//! or cleared go to the recording when one runs), and trying a finding's suggestion —
//! which only opens the Knobs view's A/B prompt for the knob with B filled in: nothing is
//! written until the operator accepts it there (and then through the knob session).

use super::{App, Effect, Input, InputKind, Level, ViewId};
use crate::findings::advisor::FindingLine;

impl App {
    /// Judge the newest live snapshot (replay was judged whole at load).
    pub(super) fn judge(&mut self) {
        if self.replay.is_some() {
            return;
        }
        let lines = self.advisor.observe(&self.topo, self.snaps.tail());
        for l in lines
            .iter()
            .filter(|l| l.finding.kind != crate::findings::Kind::BlindSpots)
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
        }
        if self.recording.is_some() && !lines.is_empty() {
            self.effect(Effect::RecordFindings(lines));
        }
    }

    /// Write finding lines to the recording (the effect).
    pub(super) fn write_findings(&mut self, lines: &[FindingLine]) {
        let Some(r) = self.recording.as_mut() else {
            return;
        };
        if let Err(e) = lines.iter().try_for_each(|l| r.writer.write_finding(l)) {
            self.say(Level::Bad, format!("finding not recorded: {e}"));
        }
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
            return self.say(Level::Info, format!("{}: nothing to try", f.kind.title()));
        };
        let (Some(knob), Some(value)) = (s.knob.clone(), s.value.clone()) else {
            return self.say(Level::Info, format!("try: {}", s.command));
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
