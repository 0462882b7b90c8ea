//! The Knobs view's A/B experiment (`a`): the knob's value now (A) against a value typed
//! in (B), in the default windows of `llctop ab` (6 rounds of 10 s, 2 s warm-up), driven
//! by each live snapshot through experiment::runner. The flips are knob effects like any
//! other (journaled, restored on exit); with a recording running, the experiment, its
//! windows and verdict are recorded too. `a` again stops it and puts A back.

use std::time::Duration;

use super::{App, Effect, Input, InputKind, Level};
use crate::experiment::runner::{Runner, Step};
use crate::experiment::verdict::Verdict;
use crate::experiment::{Arm, Experiment, Window};
use crate::record::Line;

/// The TUI's experiment windows (those of `llctop ab`'s defaults).
pub const WINDOW: Duration = Duration::from_secs(10);
pub const WARMUP: Duration = Duration::from_secs(2);
pub const ROUNDS: u32 = 6;

/// An experiment line for the recording.
#[derive(Debug, Clone, PartialEq)]
pub enum ExperimentLine {
    Experiment(Experiment),
    Window(Window),
    Verdict(Verdict),
}

/// The experiment of the Knobs view: running, or finished with its verdict.
#[derive(Debug, Clone)]
pub struct AbState {
    pub runner: Runner,
    /// The verdict, once finished or stopped.
    pub verdict: Option<Verdict>,
}

impl AbState {
    pub fn running(&self) -> bool {
        self.verdict.is_none()
    }
}

impl App {
    /// `a`: ask for B (or stop the running experiment).
    pub(super) fn knob_ab(&mut self) {
        if self.experiment.as_ref().is_some_and(AbState::running) {
            self.stop_ab("stopped");
            return;
        }
        let Some(k) = self.writable_selected() else {
            return;
        };
        let Some(cur) = k.value.clone() else {
            self.say(Level::Bad, format!("{}: current value unknown", k.id));
            return;
        };
        let text = k.kind.toggled(&cur).unwrap_or_default();
        self.input = Some(Input {
            kind: InputKind::Ab(k.id.clone()),
            text,
        });
    }

    /// Enter on the B prompt: check both values (nothing written yet) and start.
    pub(super) fn start_ab(&mut self, id: &str, b: &str) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let cur = s.registry().get(id).and_then(|k| k.value.clone());
        let checked = cur
            .ok_or_else(|| format!("{id}: current value unknown"))
            .and_then(|a| {
                let (id, a) = s.check(id, &a).map_err(|e| e.to_string())?;
                let (_, b) = s.check(&id, b).map_err(|e| e.to_string())?;
                Ok((id, a, b))
            });
        let (id, a, b) = match checked {
            Ok(v) => v,
            Err(e) => return self.say(Level::Bad, e),
        };
        if a == b {
            return self.say(Level::Warn, format!("{id}: B is its value now ({a})"));
        }
        // Owned for the whole experiment: another llctop is refused meanwhile.
        if let Err(e) = s.hold(&id) {
            return self.say(Level::Bad, e.to_string());
        }
        let exp = Experiment {
            knob: id.clone(),
            a,
            b,
            window_ns: WINDOW.as_nanos() as u64,
            warmup_ns: WARMUP.as_nanos() as u64,
            rounds: ROUNDS,
            command: vec![],
            steady: false,
        };
        // The first window is A's: the value now, so nothing is written until B.
        let runner = Runner::new(exp.clone(), self.interval);
        self.experiment = Some(AbState {
            runner,
            verdict: None,
        });
        if self.recording.is_some() {
            self.effect(Effect::RecordExperiment(ExperimentLine::Experiment(
                exp.clone(),
            )));
        }
        self.say(
            Level::Info,
            format!(
                "A/B {id}: {} vs {}: {} windows of {} s after {} s warm-up",
                exp.a,
                exp.b,
                2 * ROUNDS,
                WINDOW.as_secs(),
                WARMUP.as_secs()
            ),
        );
    }

    /// A live snapshot while an experiment runs: advance it, flip, record.
    pub(super) fn ab_snapshot(&mut self) {
        let Some(st) = self.experiment.as_mut().filter(|s| s.running()) else {
            return;
        };
        let Some(snap) = self.snaps.newest() else {
            return;
        };
        if let Some(s) = self.session.as_ref() {
            let drift = s.drifted(std::slice::from_ref(&st.runner.exp.knob));
            if !drift.is_empty() {
                st.runner.spoil(drift.join("; "));
            }
        }
        let step = st.runner.on_snapshot(snap, None);
        let knob = st.runner.exp.knob.clone();
        let (win, next) = match step {
            Step::Continue | Step::Measure => return,
            Step::Flip(w, next) => (w, Some(st.runner.exp.value(next).to_string())),
            Step::Done(w) => (w, None),
        };
        if self.recording.is_some() {
            self.effect(Effect::RecordExperiment(ExperimentLine::Window(win)));
        }
        match next {
            Some(value) => self.effect(Effect::SetKnob { id: knob, value }),
            None => self.finish_ab(),
        }
    }

    /// The verdict of the windows measured; A back in place when stopped on B.
    fn stop_ab(&mut self, why: &str) {
        let Some(st) = self.experiment.as_ref() else {
            return;
        };
        let p = st.runner.progress();
        if p.arm == Arm::B {
            let (id, a) = (st.runner.exp.knob.clone(), st.runner.exp.a.clone());
            self.effect(Effect::SetKnob { id, value: a });
        }
        self.finish_ab();
        self.say(
            Level::Warn,
            format!("A/B {why} after {} of {} windows", p.window, p.total),
        );
    }

    fn finish_ab(&mut self) {
        let Some(st) = self.experiment.as_mut() else {
            return;
        };
        if let Some(s) = self.session.as_mut() {
            s.unhold(&st.runner.exp.knob);
        }
        let v = st.runner.verdict();
        let moved = v
            .rows
            .iter()
            .filter(|r| !r.verdict.starts_with("no "))
            .count();
        st.verdict = Some(v.clone());
        if self.recording.is_some() {
            self.effect(Effect::RecordExperiment(ExperimentLine::Verdict(v)));
        }
        self.say(Level::Good, format!("A/B done: {moved} metrics differ"));
    }

    /// Write an experiment line to the recording (the effect).
    pub(super) fn write_experiment_line(&mut self, l: ExperimentLine) {
        let Some(r) = self.recording.as_mut() else {
            return;
        };
        let line = match l {
            ExperimentLine::Experiment(e) => Line::Experiment(e),
            ExperimentLine::Window(w) => Line::Window(w),
            ExperimentLine::Verdict(v) => Line::Verdict(v),
        };
        if let Err(e) = r.rec.line(line) {
            self.say(Level::Bad, format!("experiment not recorded: {e}"));
        }
    }
}
