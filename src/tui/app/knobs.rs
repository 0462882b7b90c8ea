//! Knob flows of the Knobs view: `x` toggles, Enter edits, `u` undoes, `p` applies a
//! profile — each asks for an effect; the writes go through the session here, the events
//! are logged and recorded, and the status line says what was written and read back. At
//! each interval the values are re-read, so a change made by someone else shows.
//! Starting or stopping a sched_ext scheduler waits for the kernel: [`wait_notice`] says
//! so on the screen before the wait.

use super::{App, Effect, Input, InputKind, Level};
use crate::knobs::profile::Profile;
use crate::knobs::session::scheduler::{attach_limit, is_scheduler_id};
use crate::knobs::session::{KnobError, Step};
use crate::knobs::{Access, Knob};
use crate::snapshot::EEVDF;

/// What the first of `fx` that waits on the kernel will wait for, said on the status line
/// and drawn before it runs (keys wait meanwhile): a sched_ext scheduler started (until
/// the kernel attaches it, at most the attach limit) or stopped (until the kernel lets
/// it go), by a set or by undoing the last of `steps` that did one.
pub fn wait_notice(fx: &[Effect], steps: &[Step]) -> Option<String> {
    let limit = attach_limit().as_secs_f64();
    let switch = |to: &str| {
        if to == EEVDF {
            "stopping the sched_ext scheduler: waiting for the kernel to let it go (keys wait)"
                .to_string()
        } else {
            format!(
                "starting {to}: waiting for the kernel to attach it, at most {limit:.0} s (keys wait)"
            )
        }
    };
    fx.iter().find_map(|e| match e {
        Effect::SetKnob { id, value } if is_scheduler_id(id) => Some(switch(value)),
        Effect::UndoKnob => steps
            .last()?
            .changes
            .iter()
            .find(|c| is_scheduler_id(&c.id))
            .map(|c| format!("undo: {}", switch(&c.old))),
        _ => None,
    })
}

impl App {
    /// The selected knob if this session may change it; otherwise says why and `None`.
    pub(super) fn writable_selected(&mut self) -> Option<Knob> {
        if self.session.is_none() {
            self.say(Level::Warn, "replay: knobs cannot be changed");
            return None;
        }
        let k = self.knob_rows().get(self.knob_sel).copied().cloned()?;
        if let Access::ReadOnly(why) = &k.access {
            self.say(Level::Bad, format!("{}: not writable: {why}", k.id));
            return None;
        }
        Some(k)
    }

    pub(super) fn knob_toggle(&mut self) {
        let Some(k) = self.writable_selected() else {
            return;
        };
        let Some(cur) = k.value.clone() else {
            let why = k.value_reason.clone().unwrap_or_else(|| "unknown".into());
            self.say(
                Level::Bad,
                format!("{}: current value unknown: {why}", k.id),
            );
            return;
        };
        match k.kind.toggled(&cur) {
            Some(value) => self.effect(Effect::SetKnob { id: k.id, value }),
            None => self.say(
                Level::Info,
                format!("{}: {} — Enter edits the value", k.id, k.kind.summary()),
            ),
        }
    }

    pub(super) fn knob_edit(&mut self) {
        let Some(k) = self.writable_selected() else {
            return;
        };
        self.input = Some(Input {
            kind: InputKind::Edit(k.id.clone()),
            text: k.value.unwrap_or_default(),
        });
    }

    pub(super) fn knob_undo(&mut self) {
        if self.session.is_none() {
            self.say(Level::Warn, "replay: knobs cannot be changed");
        } else {
            self.effect(Effect::UndoKnob);
        }
    }

    /// [`wait_notice`] for this session's undo steps.
    pub fn wait_notice(&self, fx: &[Effect]) -> Option<String> {
        wait_notice(fx, self.session.as_ref().map_or(&[][..], |s| s.steps()))
    }

    pub(super) fn set_knob(&mut self, id: &str, value: &str) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let res = s.set(id, value);
        self.after_knob_change(res.map(|c| format!("{}: {} → {}", c.id, c.old, c.new)));
    }

    pub(super) fn undo_knob(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        match s.undo() {
            Ok(None) => self.say(Level::Info, "nothing to undo"),
            res => self.after_knob_change(
                res.map(|step| format!("undid {}", step.map(|s| s.label).unwrap_or_default())),
            ),
        }
    }

    pub(super) fn apply_profile(&mut self, p: &Profile) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let (plan, skipped) = p.plan(s.registry_mut());
        let res = s.apply(&p.name, &plan).map(|changes| {
            let mut t = format!("profile {}: {} changes", p.name, changes.len());
            if !skipped.is_empty() {
                t.push_str(&format!(" (skipped {})", skipped.join("; ")));
            }
            t
        });
        self.after_knob_change(res);
    }

    /// Re-read the knobs' values; a change made outside llctop is said once.
    pub(super) fn refresh_knobs(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let changed = s.registry_mut().refresh_values();
        if !changed.is_empty() {
            self.say(
                Level::Info,
                format!("changed outside llctop: {}", changed.join(", ")),
            );
        }
    }

    /// Record the session's new events (log, recording) and say what was written and
    /// read back, or why it failed.
    fn after_knob_change(&mut self, res: Result<String, KnobError>) {
        let events = self
            .session
            .as_mut()
            .map(|s| s.take_events())
            .unwrap_or_default();
        let failed = self.record_knob_events(&events);
        let detail = events
            .iter()
            .map(|e| format!("wrote {:?}, read back {:?}", e.written, e.read_back))
            .collect::<Vec<_>>()
            .join("; ");
        self.knob_log.extend(events);
        match res {
            Ok(text) if detail.is_empty() => self.say(Level::Good, format!("{text} (no change)")),
            Ok(text) => self.say(Level::Good, format!("{text}: {detail}")),
            Err(e) => self.say(Level::Bad, e.to_string()),
        }
        if let Some(f) = failed {
            self.say(Level::Bad, format!("knob change not recorded: {f}"));
        }
    }
}
