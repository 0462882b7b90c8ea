//! The TUI's model and its update function: every input (a key, a snapshot from the
//! feed, time passing in replay) is a [`Msg`]; [`App::update`] is the only place state
//! changes, and it does no I/O: what must touch a file or the kernel comes back as an
//! [`Effect`], which [`App::perform`] carries out ([`App::handle`] does both). Views only
//! read an `App`. Live and replay fill the same model: a list of snapshots and the
//! position shown.
//!
//! The flows live beside this file: `keys.rs` (a key → an action, text input, the
//! profile chooser), `playback.rs` (history, pause, seek, replay speed), `history.rs` (the snapshots, packed
//! and parsed where read),
//! `recording.rs` (the `r` recording and markers), `knobs.rs` (toggle, edit, undo,
//! profiles, refresh), `ab.rs` (the A/B experiment), `findings.rs` (the advisor's
//! findings and trying a suggestion), `views.rs` (what the views and the sort columns
//! are called); `tests.rs` drives the update function with messages.

pub mod ab;
mod findings;
pub mod history;
mod keys;
mod knobs;
mod playback;
mod recording;
pub mod trace;
mod views;

use std::path::PathBuf;
use std::time::Duration;

use ratatui::crossterm::event::{KeyEvent, MouseEvent};

use super::keymap::Context;
use super::theme::Theme;
use crate::findings::advisor::{Advisor, Episode};
use crate::knobs::Knob;
use crate::knobs::profile::Profile;
use crate::knobs::session::{KnobEvent, Session};
use crate::record::{Marker, Recording};
use crate::snapshot::{ProcessStats, Snapshot, SourceStatus};
use crate::topology::Topology;
use ab::ExperimentLine;
use history::History;

pub use playback::Replay;
pub use recording::Recorder;
pub use views::{SortKey, ViewId};

/// Whether a `/` search matches: empty, or a case-insensitive substring of any field.
pub fn matches(filter: &str, fields: &[&str]) -> bool {
    if filter.is_empty() {
        return true;
    }
    let f = filter.to_lowercase();
    fields.iter().any(|x| x.to_lowercase().contains(&f))
}

/// The live history's memory bound ([`History::bytes`]: the packed snapshots and the
/// parsed ones): the oldest go first, never below [`HISTORY_MIN`]. A 2-CPU machine's
/// snapshot packs to under a kilobyte, a 256-CPU one's to about 40 KB.
pub const HISTORY_MIB: usize = 32;
/// Snapshots the live history keeps whatever their size (the advisor's window and the
/// graphs' span need them).
pub const HISTORY_MIN: usize = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Good,
    Warn,
    Bad,
}

/// A message in the footer, said on one view: it stays there until the next message,
/// and other views show their key hints instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub level: Level,
    pub view: ViewId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    Filter,
    /// Editing this knob's value.
    Edit(String),
    /// The B value of an A/B experiment on this knob (A: its value now).
    Ab(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub kind: InputKind,
    pub text: String,
}

/// The screen places of the last frame that a click can hit.
#[derive(Debug, Default)]
pub struct Hits {
    /// The row of the view tabs.
    pub tabs_y: std::cell::Cell<u16>,
    /// The list of the view shown: its first row's y, rows drawn, and the index of the
    /// item on its first row.
    pub list: std::cell::Cell<Option<(u16, u16, usize)>>,
}

pub enum Msg {
    Key(KeyEvent),
    /// A mouse event (click a tab, a row; the wheel scrolls).
    Mouse(MouseEvent),
    /// Source states of the baseline read, before the first snapshot.
    Sources(Vec<SourceStatus>),
    /// One interval of the live pipeline (the feed thread's).
    Tick(Box<crate::run::pipeline::Tick>),
    /// The feed could not start or stopped.
    FeedError(String),
    /// The feed thread panicked: the program must end (knobs restored, non-zero exit).
    FeedPanic(String),
    /// Wall time passed (replay playback).
    Elapsed(Duration),
    /// The next line of the recording being replayed (it loads while it plays).
    Replayed(Box<crate::record::Line<Snapshot, KnobEvent, Marker>>),
    /// A replayed snapshot with its packed form (packed on the reading thread).
    ReplayedPacked(Box<(Snapshot, history::Packed)>),
    /// The recording being replayed is loaded; whether it ended in a cut-off line.
    ReplayLoaded {
        truncated: bool,
    },
}

/// What [`App::update`] asks the runtime to do: every file and kernel write of the TUI.
/// [`App::perform`] does it (recording files in `recording.rs`, knob writes and reads in
/// `knobs.rs`) and reports the outcome in the status line.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write a tick to the recording: its snapshot, the findings that fired or cleared.
    RecordTick(Box<crate::run::pipeline::Tick>),
    /// Create a recording in `record_dir` / finish the current one.
    StartRecording,
    StopRecording,
    /// Drop a marker into the recording.
    Marker,
    SetKnob {
        id: String,
        value: String,
    },
    /// Undo the last change (a profile is one step).
    UndoKnob,
    ApplyProfile(Profile),
    /// Write an experiment line (experiment, window, verdict) to the recording.
    RecordExperiment(ExperimentLine),
    /// Re-read the knobs' values (every `run::pipeline::KNOB_PERIOD`: something else may
    /// change them).
    RefreshKnobs,
    /// Start `llctop trace` beside the TUI / stop it.
    StartTrace,
    StopTrace,
}

pub struct App {
    pub topo: Topology,
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub interval: Duration,
    /// Live: the newest snapshots, within [`HISTORY_MIB`]; replay: the whole recording.
    /// Packed, parsed around the one shown and at the newest.
    pub snaps: History,
    /// Index of the snapshot shown (`None` before the first one).
    pub pos: Option<usize>,
    /// Live display frozen (history browsing) / replay stopped.
    pub paused: bool,
    pub view: ViewId,
    /// The view Help was opened from (`?` again or Esc goes back to it).
    pub prev_view: ViewId,
    /// The first Help row shown.
    pub help_scroll: usize,
    /// The last first-row that still fills Help's page in the last frame (set by the
    /// Help view, which alone knows the terminal's size): scrolling stops there.
    pub help_last_start: std::cell::Cell<usize>,
    /// The header's problem lines are shown in full (`i`), not as one summary line.
    pub header_expanded: bool,
    /// The LLC map is coloured by L3 occupancy (resctrl), not busy (`c`).
    pub map_occupancy: bool,
    /// The key bindings: the built-in map with the config file's `[keys]` applied.
    pub keymap: Vec<super::keymap::Binding>,
    /// Where the last frame drew what a mouse click can hit (set by the views, which
    /// alone know the terminal's size).
    pub hits: Hits,
    pub themes: Vec<Theme>,
    pub theme: usize,
    pub input: Option<Input>,
    /// The `/` search of each view's list (by [`ViewId::ALL`] position).
    pub filters: [String; ViewId::ALL.len()],
    pub sort: SortKey,
    /// The process table sorted the other way (`S`).
    pub sort_reverse: bool,
    pub proc_sel: usize,
    /// The process drilled into (Processes view).
    pub drill: Option<u32>,
    pub knob_sel: usize,
    pub profiles: Vec<Profile>,
    /// The profile chooser is open at this row.
    pub profile_pick: Option<usize>,
    /// The A/B experiment running (`a` on the Knobs view), or the last one with its verdict.
    pub experiment: Option<ab::AbState>,
    /// The advisor's findings over the snapshots (live: judged at each one; replay: over
    /// the whole recording at load).
    pub advisor: Advisor,
    /// The row selected in the Findings view.
    pub finding_sel: usize,
    pub status: Option<Status>,
    /// Knob changes: this session's (live) or the recording's (replay).
    pub knob_log: Vec<KnobEvent>,
    /// Replay: the knob values the recording began with (its header, or its knob-values
    /// line), by id.
    pub start_knobs: std::collections::BTreeMap<String, String>,
    /// When (snapshot time) the status line last spoke of a finding.
    pub finding_said: Option<u64>,
    /// When the session's knob values were last re-read (the snapshot's end, monotonic).
    pub knobs_read_ns: Option<u64>,
    pub markers: Vec<Marker>,
    pub recording: Option<Recorder>,
    /// A trace running beside the TUI (`T`).
    pub tracing: Option<trace::Tracer>,
    pub session: Option<Session>,
    pub replay: Option<Replay>,
    /// Source states before the first snapshot arrives.
    pub early_sources: Vec<SourceStatus>,
    pub feed_error: Option<String>,
    /// Where `r` writes recordings.
    pub record_dir: PathBuf,
    /// Notes about knobs found at startup (e.g. why sched domains could not be read).
    pub knob_notes: Vec<String>,
    pub quit: bool,
    /// Why the program must end with an error (the data thread panicked).
    pub fatal: Option<String>,
    /// Effects asked for by the message being handled.
    effects: Vec<Effect>,
}

impl App {
    /// A live model: ticks arrive through [`Msg::Tick`].
    pub fn live(topo: Topology, interval: Duration, themes: Vec<Theme>) -> App {
        App {
            topo,
            host: None,
            kernel: None,
            interval,
            snaps: History::default(),
            pos: None,
            paused: false,
            view: ViewId::Overview,
            prev_view: ViewId::Overview,
            help_scroll: 0,
            help_last_start: std::cell::Cell::new(usize::MAX),
            header_expanded: false,
            map_occupancy: false,
            hits: Hits::default(),
            keymap: super::keymap::KEYMAP.to_vec(),
            themes: if themes.is_empty() {
                vec![Theme::mono()]
            } else {
                themes
            },
            theme: 0,
            input: None,
            filters: Default::default(),
            sort: SortKey::Cpu,
            sort_reverse: false,
            proc_sel: 0,
            drill: None,
            knob_sel: 0,
            profiles: Vec::new(),
            profile_pick: None,
            experiment: None,
            advisor: Advisor::new(),
            finding_sel: 0,
            status: None,
            knob_log: Vec::new(),
            start_knobs: Default::default(),
            finding_said: None,
            knobs_read_ns: None,
            markers: Vec::new(),
            recording: None,
            tracing: None,
            session: None,
            replay: None,
            early_sources: Vec::new(),
            feed_error: None,
            record_dir: PathBuf::from("."),
            knob_notes: Vec::new(),
            quit: false,
            fatal: None,
            effects: Vec::new(),
        }
    }

    /// A replay model over a recording, starting at its first snapshot, playing.
    pub fn replay(rec: Recording, file: &str, themes: Vec<Theme>) -> App {
        use crate::record::Line;
        let mut app = App::replay_loading(&rec.header, file, themes);
        for m in rec.markers {
            app.handle(Msg::Replayed(Box::new(Line::Marker(m))));
        }
        for k in rec.knobs {
            app.handle(Msg::Replayed(Box::new(Line::Knob(k))));
        }
        for s in rec.snapshots {
            app.handle(Msg::Replayed(Box::new(Line::Snapshot(s))));
        }
        app.handle(Msg::ReplayLoaded {
            truncated: rec.truncated,
        });
        app
    }

    /// A replay model for a recording whose lines arrive as [`Msg::Replayed`] while it
    /// plays (`llctop replay` shows the first snapshot before the file is read), until
    /// [`Msg::ReplayLoaded`].
    pub fn replay_loading(header: &crate::record::Header, file: &str, themes: Vec<Theme>) -> App {
        let interval = Duration::from_nanos(header.interval_ns.max(1));
        let mut app = App::live(header.topology.clone(), interval, themes);
        app.host = header.host.clone();
        app.kernel = header.kernel.clone();
        app.early_sources = header.sources.clone();
        app.start_knobs = header.knobs.clone();
        app.replay = Some(Replay {
            file: file.to_string(),
            speed: 1.0,
            playing: true,
            carry: Duration::ZERO,
            truncated: false,
            loading: true,
        });
        app
    }

    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len() - 1)]
    }

    /// The snapshot shown.
    pub fn current(&self) -> Option<&Snapshot> {
        self.pos.and_then(|i| self.snaps.get(i))
    }

    /// The shown snapshot and up to `n - 1` before it, oldest first.
    /// (At most the span [`History::focus`] keeps parsed, [`history::MIN_SPAN`] or more.)
    pub fn history(&self, n: usize) -> &[Snapshot] {
        self.pos.map_or(&[], |p| self.snaps.window(p, n))
    }

    /// The findings held at the shown snapshot, worst first.
    pub fn findings(&self) -> Vec<&Episode> {
        self.current()
            .map(|s| self.advisor.active_at(s.seq))
            .unwrap_or_default()
    }

    /// Source states to show: the current snapshot's, else the early ones.
    pub fn sources(&self) -> &[SourceStatus] {
        match self.current() {
            Some(s) if !s.sources.is_empty() => &s.sources,
            _ => &self.early_sources,
        }
    }

    /// Knob events up to the shown snapshot (replay), or all of them (live).
    pub fn knob_events_so_far(&self) -> Vec<&KnobEvent> {
        let until = match (&self.replay, self.current()) {
            (Some(_), Some(s)) => s.time.mono_ns,
            _ => u64::MAX,
        };
        self.knob_log
            .iter()
            .filter(|e| e.mono_ns <= until)
            .collect()
    }

    /// The `/` search of the view shown.
    pub fn filter(&self) -> &str {
        self.filter_of(self.view)
    }

    /// The `/` search of view `v`.
    pub fn filter_of(&self, v: ViewId) -> &str {
        &self.filters[v.index()]
    }

    pub(crate) fn filter_mut(&mut self) -> &mut String {
        &mut self.filters[self.view.index()]
    }

    /// The process rows of the shown snapshot, filtered and sorted as the table shows
    /// them.
    pub fn process_rows(&self) -> Vec<&ProcessStats> {
        let Some(t) = self.current().and_then(|s| s.processes.as_ref()) else {
            return Vec::new();
        };
        let f = self.filter_of(ViewId::Processes);
        let mut rows: Vec<&ProcessStats> = t
            .rows
            .iter()
            .filter(|r| {
                let pid = r.pid.to_string();
                matches(f, &[&r.comm, &pid, r.cgroup.as_deref().unwrap_or_default()])
            })
            .collect();
        let key = |r: &ProcessStats| -> f64 {
            let c = r.counters.as_ref();
            match self.sort {
                SortKey::Cpu => r.cpu_time_ns as f64,
                SortKey::Threads => f64::from(r.threads),
                SortKey::CrossLlc => r.cross_llc_migrations as f64,
                SortKey::Migrations => r.migrations as f64,
                SortKey::Wait => r.rq_wait_ns as f64,
                // Lowest hit first: the processes away from their LLC.
                SortKey::Hit => -r.preferred_hit.unwrap_or(2.0),
                SortKey::Mpki => c.and_then(|c| c.mpki).unwrap_or(-1.0),
                // Lowest IPC first among those that have one.
                SortKey::Ipc => c.and_then(|c| c.ipc).map_or(f64::MIN, |v| -v),
                SortKey::Pid => -(r.pid as f64),
                SortKey::Comm => 0.0,
            }
        };
        rows.sort_by(|a, b| {
            let o = if self.sort == SortKey::Comm {
                a.comm.to_lowercase().cmp(&b.comm.to_lowercase())
            } else {
                key(b).total_cmp(&key(a))
            };
            o.then(a.pid.cmp(&b.pid))
        });
        if self.sort_reverse {
            rows.reverse();
        }
        rows
    }

    /// The knobs the Knobs view lists: all of them, or those its search matches (id,
    /// family, description, value).
    pub fn knob_rows(&self) -> Vec<&Knob> {
        let f = self.filter_of(ViewId::Knobs);
        self.knobs()
            .iter()
            .filter(|k| {
                matches(
                    f,
                    &[
                        &k.id,
                        &k.description,
                        k.value.as_deref().unwrap_or_default(),
                    ],
                )
            })
            .collect()
    }

    /// The findings the Findings view lists: those held at the shown snapshot that its
    /// search matches (kind, summary, seed), worst first.
    pub fn finding_rows(&self) -> Vec<&Episode> {
        let f = self.filter_of(ViewId::Findings);
        self.findings()
            .into_iter()
            .filter(|e| {
                let l = e.latest();
                matches(
                    f,
                    &[
                        &l.summary,
                        &l.key,
                        e.kind().label(),
                        e.kind().seed().unwrap_or_default(),
                    ],
                )
            })
            .collect()
    }

    /// The status message for the view shown: one said there, or an error said anywhere.
    pub fn status_here(&self) -> Option<&Status> {
        self.status
            .as_ref()
            .filter(|s| s.view == self.view || s.level == Level::Bad)
    }

    /// The knobs listed in the Knobs view (live session only).
    pub fn knobs(&self) -> &[Knob] {
        self.session
            .as_ref()
            .map_or(&[][..], |s| s.registry().knobs.as_slice())
    }

    pub(crate) fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level,
            view: self.view,
        });
    }

    /// Apply `msg` to the model; returns what must be done outside it.
    #[must_use = "effects are what the message asked the runtime to do"]
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(k) => self.key(k),
            Msg::Mouse(m) => self.mouse(m),
            Msg::Sources(s) => self.early_sources = s,
            Msg::Tick(t) => self.tick(*t),
            Msg::FeedError(e) => {
                self.say(Level::Bad, e.clone());
                self.feed_error = Some(e);
            }
            Msg::FeedPanic(e) => {
                self.fatal = Some(format!("the data thread panicked: {e}"));
                self.quit = true;
            }
            Msg::Elapsed(d) => self.elapsed(d),
            Msg::Replayed(line) => self.replayed(*line, None),
            Msg::ReplayedPacked(sp) => {
                let (s, p) = *sp;
                self.replayed(crate::record::Line::Snapshot(s), Some(p));
            }
            Msg::ReplayLoaded { truncated } => {
                if let Some(r) = self.replay.as_mut() {
                    r.loading = false;
                    r.truncated = truncated;
                }
            }
        }
        self.snaps.focus(self.pos);
        if let Some(e) = self.snaps.error.take() {
            self.say(Level::Bad, e);
        }
        std::mem::take(&mut self.effects)
    }

    /// Update with `msg` and perform the effects: what the event loop does.
    pub fn handle(&mut self, msg: Msg) {
        for e in self.update(msg) {
            self.perform(e);
        }
    }

    /// Carry out one effect (file and kernel I/O) and say how it went.
    pub fn perform(&mut self, e: Effect) {
        match e {
            Effect::RecordTick(t) => self.write_tick(&t),
            Effect::StartRecording => self.start_recording(),
            Effect::StopRecording => self.stop_recording(),
            Effect::Marker => self.write_marker(),
            Effect::SetKnob { id, value } => self.set_knob(&id, &value),
            Effect::UndoKnob => self.undo_knob(),
            Effect::ApplyProfile(p) => self.apply_profile(&p),
            Effect::RefreshKnobs => self.refresh_knobs(),
            Effect::RecordExperiment(l) => self.write_experiment_line(l),
            Effect::StartTrace => self.start_trace(),
            Effect::StopTrace => self.stop_trace(),
        }
    }

    fn effect(&mut self, e: Effect) {
        self.effects.push(e);
    }
}

#[cfg(test)]
mod tests;
