//! The TUI's model and its update function: every input (a key, a snapshot from the
//! feed, time passing in replay) is a [`Msg`]; [`App::update`] is the only place state
//! changes. Views only read an `App`. Live and replay fill the same model: a list of
//! snapshots and the position shown.

use std::path::PathBuf;
use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keymap::{self, Action, Context};
use super::theme::Theme;
use crate::knobs::profile::Profile;
use crate::knobs::session::{KnobEvent, Session};
use crate::knobs::{Access, Knob};
use crate::record::{self, Header, Marker, Recording};
use crate::snapshot::{ProcessStats, Snapshot, SourceStatus};
use crate::topology::Topology;

/// Snapshots kept in live mode for history and sparklines (10 minutes at 1 s).
pub const HISTORY: usize = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewId {
    Overview,
    Migrations,
    Processes,
    Cache,
    Balance,
    Numa,
    Knobs,
    Help,
}

impl ViewId {
    pub const ALL: [ViewId; 8] = [
        ViewId::Overview,
        ViewId::Migrations,
        ViewId::Processes,
        ViewId::Cache,
        ViewId::Balance,
        ViewId::Numa,
        ViewId::Knobs,
        ViewId::Help,
    ];

    pub fn title(self) -> &'static str {
        match self {
            ViewId::Overview => "Overview",
            ViewId::Migrations => "Migrations",
            ViewId::Processes => "Processes",
            ViewId::Cache => "Cache",
            ViewId::Balance => "Balance",
            ViewId::Numa => "NUMA",
            ViewId::Knobs => "Knobs",
            ViewId::Help => "Help",
        }
    }

    fn index(self) -> usize {
        ViewId::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }

    fn context(self) -> Context {
        match self {
            ViewId::Processes => Context::Processes,
            ViewId::Knobs => Context::Knobs,
            _ => Context::Global,
        }
    }
}

/// Process table sort columns, in `s` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Cpu,
    CrossLlc,
    Migrations,
    Wait,
    Hit,
    Mpki,
    Ipc,
    Pid,
}

impl SortKey {
    const ALL: [SortKey; 8] = [
        SortKey::Cpu,
        SortKey::CrossLlc,
        SortKey::Migrations,
        SortKey::Wait,
        SortKey::Hit,
        SortKey::Mpki,
        SortKey::Ipc,
        SortKey::Pid,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SortKey::Cpu => "CPU",
            SortKey::CrossLlc => "xLLC/s",
            SortKey::Migrations => "MIG/s",
            SortKey::Wait => "WAIT",
            SortKey::Hit => "HIT",
            SortKey::Mpki => "MPKI",
            SortKey::Ipc => "IPC",
            SortKey::Pid => "PID",
        }
    }

    fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Good,
    Warn,
    Bad,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub level: Level,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    Filter,
    /// Editing this knob's value.
    Edit(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub kind: InputKind,
    pub text: String,
}

pub struct Replay {
    pub file: String,
    pub speed: f64,
    pub playing: bool,
    /// Replay time accumulated towards the next snapshot.
    carry: Duration,
    pub truncated: bool,
}

pub struct Recorder {
    pub path: PathBuf,
    writer: record::Writer,
    pub snapshots: u64,
    pub markers: u32,
}

impl Recorder {
    /// Finish the file (gzip trailer).
    pub fn finish(self) -> Result<(), record::RecordError> {
        self.writer.finish()
    }
}

pub enum Msg {
    Key(KeyEvent),
    /// Source states of the baseline read, before the first snapshot.
    Sources(Vec<SourceStatus>),
    Snapshot(Box<Snapshot>),
    /// The feed could not start or stopped.
    FeedError(String),
    /// Wall time passed (replay playback).
    Elapsed(Duration),
}

pub struct App {
    pub topo: Topology,
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub interval: Duration,
    /// Live: the last [`HISTORY`] snapshots; replay: the whole recording.
    pub snaps: Vec<Snapshot>,
    /// Index of the snapshot shown (`None` before the first one).
    pub pos: Option<usize>,
    /// Live display frozen (history browsing) / replay stopped.
    pub paused: bool,
    pub view: ViewId,
    pub themes: Vec<Theme>,
    pub theme: usize,
    pub input: Option<Input>,
    pub filter: String,
    pub sort: SortKey,
    pub proc_sel: usize,
    /// The process drilled into (Processes view).
    pub drill: Option<u32>,
    pub knob_sel: usize,
    pub profiles: Vec<Profile>,
    /// The profile chooser is open at this row.
    pub profile_pick: Option<usize>,
    pub status: Option<Status>,
    /// Knob changes: this session's (live) or the recording's (replay).
    pub knob_log: Vec<KnobEvent>,
    pub markers: Vec<Marker>,
    pub recording: Option<Recorder>,
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
}

impl App {
    /// A live model: snapshots arrive through [`Msg::Snapshot`].
    pub fn live(topo: Topology, interval: Duration, themes: Vec<Theme>) -> App {
        App {
            topo,
            host: None,
            kernel: None,
            interval,
            snaps: Vec::new(),
            pos: None,
            paused: false,
            view: ViewId::Overview,
            themes: if themes.is_empty() {
                vec![Theme::mono()]
            } else {
                themes
            },
            theme: 0,
            input: None,
            filter: String::new(),
            sort: SortKey::Cpu,
            proc_sel: 0,
            drill: None,
            knob_sel: 0,
            profiles: Vec::new(),
            profile_pick: None,
            status: None,
            knob_log: Vec::new(),
            markers: Vec::new(),
            recording: None,
            session: None,
            replay: None,
            early_sources: Vec::new(),
            feed_error: None,
            record_dir: PathBuf::from("."),
            knob_notes: Vec::new(),
            quit: false,
        }
    }

    /// A replay model over a recording, starting at its first snapshot, playing.
    pub fn replay(rec: Recording, file: &str, themes: Vec<Theme>) -> App {
        let interval = Duration::from_nanos(rec.header.interval_ns.max(1));
        let mut app = App::live(rec.header.topology.clone(), interval, themes);
        app.host = rec.header.host.clone();
        app.kernel = rec.header.kernel.clone();
        app.pos = (!rec.snapshots.is_empty()).then_some(0);
        app.snaps = rec.snapshots;
        app.knob_log = rec.knobs;
        app.markers = rec.markers;
        app.early_sources = rec.header.sources;
        app.replay = Some(Replay {
            file: file.to_string(),
            speed: 1.0,
            playing: true,
            carry: Duration::ZERO,
            truncated: rec.truncated,
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
    pub fn history(&self, n: usize) -> &[Snapshot] {
        match self.pos {
            Some(p) if p < self.snaps.len() => &self.snaps[(p + 1).saturating_sub(n)..=p],
            _ => &[],
        }
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

    /// The process rows of the shown snapshot, filtered and sorted as the table shows
    /// them.
    pub fn process_rows(&self) -> Vec<&ProcessStats> {
        let Some(t) = self.current().and_then(|s| s.processes.as_ref()) else {
            return Vec::new();
        };
        let f = self.filter.to_lowercase();
        let mut rows: Vec<&ProcessStats> = t
            .rows
            .iter()
            .filter(|r| {
                f.is_empty()
                    || r.comm.to_lowercase().contains(&f)
                    || r.pid.to_string().contains(&f)
                    || r.cgroup
                        .as_deref()
                        .is_some_and(|c| c.to_lowercase().contains(&f))
            })
            .collect();
        let key = |r: &ProcessStats| -> f64 {
            let c = r.counters.as_ref();
            match self.sort {
                SortKey::Cpu => r.cpu_time_ns as f64,
                SortKey::CrossLlc => r.cross_llc_migrations as f64,
                SortKey::Migrations => r.migrations as f64,
                SortKey::Wait => r.rq_wait_ns as f64,
                // Lowest hit first: the processes away from their LLC.
                SortKey::Hit => -r.preferred_hit.unwrap_or(2.0),
                SortKey::Mpki => c.and_then(|c| c.mpki).unwrap_or(-1.0),
                // Lowest IPC first among those that have one.
                SortKey::Ipc => c.and_then(|c| c.ipc).map_or(f64::MIN, |v| -v),
                SortKey::Pid => -(r.pid as f64),
            }
        };
        rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.pid.cmp(&b.pid)));
        rows
    }

    /// The knobs listed in the Knobs view (live session only).
    pub fn knobs(&self) -> &[Knob] {
        self.session
            .as_ref()
            .map_or(&[][..], |s| s.registry().knobs.as_slice())
    }

    fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level,
        });
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Key(k) => self.key(k),
            Msg::Sources(s) => self.early_sources = s,
            Msg::Snapshot(s) => self.snapshot(*s),
            Msg::FeedError(e) => {
                self.say(Level::Bad, e.clone());
                self.feed_error = Some(e);
            }
            Msg::Elapsed(d) => self.elapsed(d),
        }
    }

    fn snapshot(&mut self, s: Snapshot) {
        if let Some(r) = self.recording.as_mut() {
            match r.writer.write_snapshot(&s) {
                Ok(()) => r.snapshots += 1,
                Err(e) => {
                    let msg = format!("recording stopped: {e}");
                    self.recording = None;
                    self.say(Level::Bad, msg);
                }
            }
        }
        self.snaps.push(s);
        if self.snaps.len() > HISTORY {
            let n = self.snaps.len() - HISTORY;
            self.snaps.drain(..n);
            self.pos = self.pos.map(|p| p.saturating_sub(n));
        }
        if !self.paused || self.pos.is_none() {
            self.pos = Some(self.snaps.len() - 1);
        }
    }

    fn elapsed(&mut self, d: Duration) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        if !r.playing {
            return;
        }
        let Some(p) = self.pos else {
            return;
        };
        r.carry += d.mul_f64(r.speed);
        let mut p = p;
        while let Some(next) = self.snaps.get(p + 1) {
            let step = Duration::from_nanos(next.time.interval_ns.max(1));
            if r.carry < step {
                break;
            }
            r.carry -= step;
            p += 1;
        }
        if p + 1 >= self.snaps.len() {
            r.playing = false;
            r.carry = Duration::ZERO;
            self.paused = true;
        }
        self.pos = Some(p);
    }

    fn context(&self) -> Context {
        self.view.context()
    }

    fn key(&mut self, k: KeyEvent) {
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.input.is_some() {
            self.input_key(k);
            return;
        }
        if self.profile_pick.is_some() {
            self.pick_key(k);
            return;
        }
        let Some(action) = keymap::lookup(&k, self.context()) else {
            return;
        };
        self.act(action);
    }

    fn input_key(&mut self, k: KeyEvent) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => {
                if input.kind == InputKind::Filter {
                    self.filter.clear();
                }
                self.input = None;
            }
            KeyCode::Enter => {
                let done = self.input.take();
                if let Some(Input {
                    kind: InputKind::Edit(id),
                    text,
                }) = done
                {
                    self.knob_set(&id, &text);
                }
            }
            KeyCode::Backspace => {
                input.text.pop();
                if input.kind == InputKind::Filter {
                    self.filter = input.text.clone();
                    self.proc_sel = 0;
                }
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                input.text.push(c);
                if input.kind == InputKind::Filter {
                    self.filter = input.text.clone();
                    self.proc_sel = 0;
                }
            }
            _ => {}
        }
    }

    fn pick_key(&mut self, k: KeyEvent) {
        let n = self.profiles.len();
        let Some(i) = self.profile_pick else {
            return;
        };
        match k.code {
            KeyCode::Esc => self.profile_pick = None,
            KeyCode::Up | KeyCode::Char('k') => self.profile_pick = Some(i.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => {
                self.profile_pick = Some((i + 1).min(n.saturating_sub(1)))
            }
            KeyCode::Enter => {
                self.profile_pick = None;
                if let Some(p) = self.profiles.get(i).cloned() {
                    self.apply_profile(&p);
                }
            }
            _ => {}
        }
    }

    fn act(&mut self, a: Action) {
        match a {
            Action::Quit => self.quit = true,
            Action::Help => self.view = ViewId::Help,
            Action::View(n) => {
                if let Some(v) = ViewId::ALL.get(n as usize) {
                    self.view = *v;
                }
            }
            Action::NextView => self.view = ViewId::ALL[(self.view.index() + 1) % 8],
            Action::PrevView => self.view = ViewId::ALL[(self.view.index() + 7) % 8],
            Action::Pause => self.toggle_pause(),
            Action::Filter => {
                self.input = Some(Input {
                    kind: InputKind::Filter,
                    text: self.filter.clone(),
                })
            }
            Action::Sort => {
                self.sort = self.sort.next();
                self.proc_sel = 0;
                self.say(Level::Info, format!("sorted by {}", self.sort.label()));
            }
            Action::Drill => {
                let pid = self.process_rows().get(self.proc_sel).map(|r| r.pid);
                self.drill = pid;
            }
            Action::Back => {
                if self.drill.is_some() {
                    self.drill = None;
                } else if !self.filter.is_empty() {
                    self.filter.clear();
                } else if self.view == ViewId::Help {
                    self.view = ViewId::Overview;
                }
            }
            Action::Up => self.move_sel(-1),
            Action::Down => self.move_sel(1),
            Action::PageUp => self.move_sel(-20),
            Action::PageDown => self.move_sel(20),
            Action::Record => self.toggle_recording(),
            Action::Marker => self.marker(),
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len().max(1);
                let name = self.theme().name.clone();
                self.say(Level::Info, format!("theme {name}"));
            }
            Action::SeekBack => self.seek(-1),
            Action::SeekForward => self.seek(1),
            Action::SeekStart => self.seek(i64::MIN / 2),
            Action::SeekEnd => {
                self.seek(i64::MAX / 2);
                if self.replay.is_none() {
                    self.paused = false;
                }
            }
            Action::Slower | Action::Faster => self.speed(a == Action::Faster),
            Action::KnobToggle => self.knob_toggle(),
            Action::KnobEdit => self.knob_edit(),
            Action::KnobUndo => self.knob_undo(),
            Action::KnobProfile => {
                if self.session.is_none() {
                    self.say(Level::Warn, "replay: knobs cannot be changed");
                } else if self.profiles.is_empty() {
                    self.say(Level::Warn, "no profiles found");
                } else {
                    self.profile_pick = Some(0);
                }
            }
        }
    }

    fn toggle_pause(&mut self) {
        if let Some(r) = self.replay.as_mut() {
            if !r.playing && self.pos.is_some_and(|p| p + 1 >= self.snaps.len()) {
                // At the end: play again from the start.
                self.pos = (!self.snaps.is_empty()).then_some(0);
            }
            r.playing = !r.playing;
            self.paused = !r.playing;
        } else {
            self.paused = !self.paused;
            if !self.paused && !self.snaps.is_empty() {
                self.pos = Some(self.snaps.len() - 1);
            }
        }
    }

    fn seek(&mut self, by: i64) {
        let Some(p) = self.pos else {
            return;
        };
        let last = self.snaps.len().saturating_sub(1) as i64;
        let to = (p as i64 + by).clamp(0, last) as usize;
        self.pos = Some(to);
        match self.replay.as_mut() {
            Some(r) => r.carry = Duration::ZERO,
            None => self.paused = to as i64 != last || self.paused,
        }
    }

    fn speed(&mut self, faster: bool) {
        let Some(r) = self.replay.as_mut() else {
            self.say(Level::Info, "speed applies to replay");
            return;
        };
        r.speed = if faster {
            (r.speed * 2.0).min(64.0)
        } else {
            (r.speed / 2.0).max(1.0 / 16.0)
        };
        let s = r.speed;
        self.say(Level::Info, format!("replay speed ×{s}"));
    }

    fn move_sel(&mut self, by: i64) {
        let (sel, n) = match self.view {
            ViewId::Knobs => {
                let n = self.knobs().len();
                (&mut self.knob_sel, n)
            }
            _ => {
                let n = self.process_rows().len();
                (&mut self.proc_sel, n)
            }
        };
        let v = (*sel as i64 + by).clamp(0, n.saturating_sub(1) as i64);
        *sel = v as usize;
    }

    fn toggle_recording(&mut self) {
        if self.replay.is_some() {
            self.say(Level::Warn, "replay: nothing new to record");
            return;
        }
        if let Some(r) = self.recording.take() {
            let (path, n) = (r.path.clone(), r.snapshots);
            match r.writer.finish() {
                Ok(()) => self.say(
                    Level::Good,
                    format!("recording stopped: {n} snapshots in {}", path.display()),
                ),
                Err(e) => self.say(Level::Bad, format!("recording: {e}")),
            }
            return;
        }
        let header = Header::new(
            (self.host.clone(), self.kernel.clone()),
            self.interval,
            self.topo.clone(),
            self.sources().to_vec(),
        );
        let path = self.record_dir.join(format!(
            "llctop-{}.json.gz",
            utc_stamp(header.start_unix_ns / 1_000_000_000)
        ));
        match record::Writer::create(&path, &header) {
            Ok(writer) => {
                self.say(Level::Good, format!("recording to {}", path.display()));
                self.recording = Some(Recorder {
                    path,
                    writer,
                    snapshots: 0,
                    markers: 0,
                });
            }
            Err(e) => self.say(Level::Bad, format!("cannot record: {e}")),
        }
    }

    fn marker(&mut self) {
        let after_seq = self.snaps.last().map(|s| s.seq);
        let Some(r) = self.recording.as_mut() else {
            self.say(Level::Warn, "not recording: r starts a recording");
            return;
        };
        r.markers += 1;
        let m = Marker {
            after_seq,
            unix_ns: crate::clock::unix_ns(),
            mono_ns: crate::clock::mono_ns(),
            label: format!("marker {}", r.markers),
        };
        match r.writer.write_marker(&m) {
            Ok(()) => {
                self.say(Level::Good, format!("{} recorded", m.label));
                self.markers.push(m);
            }
            Err(e) => self.say(Level::Bad, format!("marker: {e}")),
        }
    }

    /// The selected knob if this session may change it; otherwise says why and `None`.
    fn writable_selected(&mut self) -> Option<Knob> {
        if self.session.is_none() {
            self.say(Level::Warn, "replay: knobs cannot be changed");
            return None;
        }
        let k = self.knobs().get(self.knob_sel).cloned()?;
        if let Access::ReadOnly(why) = &k.access {
            self.say(Level::Bad, format!("{}: not writable: {why}", k.id));
            return None;
        }
        Some(k)
    }

    fn knob_toggle(&mut self) {
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
            Some(next) => self.knob_set(&k.id, &next),
            None => self.say(
                Level::Info,
                format!("{}: {} — Enter edits the value", k.id, k.kind.summary()),
            ),
        }
    }

    fn knob_edit(&mut self) {
        let Some(k) = self.writable_selected() else {
            return;
        };
        self.input = Some(Input {
            kind: InputKind::Edit(k.id.clone()),
            text: k.value.unwrap_or_default(),
        });
    }

    fn knob_set(&mut self, id: &str, value: &str) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let res = s.set(id, value);
        self.after_knob_change(res.map(|c| format!("{}: {} → {}", c.id, c.old, c.new)));
    }

    fn knob_undo(&mut self) {
        let Some(s) = self.session.as_mut() else {
            self.say(Level::Warn, "replay: knobs cannot be changed");
            return;
        };
        match s.undo() {
            Ok(None) => self.say(Level::Info, "nothing to undo"),
            res => self.after_knob_change(
                res.map(|step| format!("undid {}", step.map(|s| s.label).unwrap_or_default())),
            ),
        }
    }

    fn apply_profile(&mut self, p: &Profile) {
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

    /// Record the session's new events (log, recording) and say what was written and
    /// read back, or why it failed.
    fn after_knob_change(&mut self, res: Result<String, crate::knobs::session::KnobError>) {
        let events = self
            .session
            .as_mut()
            .map(|s| s.take_events())
            .unwrap_or_default();
        let mut failed = None;
        if let Some(r) = self.recording.as_mut() {
            for e in &events {
                if let Err(err) = r.writer.write_knob(e) {
                    failed = Some(err.to_string());
                }
            }
        }
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

/// `YYYYMMDD-HHMMSSZ` of a Unix time (UTC; no time-zone database needed).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(seq: u64) -> Snapshot {
        let mut s = Snapshot {
            seq,
            ..Snapshot::default()
        };
        s.time.interval_ns = 1_000_000_000;
        s.time.mono_ns = (seq + 1) * 1_000_000_000;
        s
    }

    fn key(c: KeyCode) -> Msg {
        Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000Z");
        assert_eq!(utc_stamp(1_795_244_016), "20261121-065336Z");
    }

    #[test]
    fn live_follows_pause_freezes_history_is_bounded() {
        let mut a = App::live(Topology::default(), Duration::from_secs(1), vec![]);
        a.update(Msg::Snapshot(Box::new(snap(0))));
        assert_eq!(a.pos, Some(0));
        a.update(key(KeyCode::Char(' ')));
        a.update(Msg::Snapshot(Box::new(snap(1))));
        assert_eq!(a.current().map(|s| s.seq), Some(0), "paused");
        a.update(key(KeyCode::Right));
        assert_eq!(a.current().map(|s| s.seq), Some(1));
        a.update(key(KeyCode::Left));
        a.update(key(KeyCode::End));
        assert!(!a.paused, "End follows again");
        for i in 2..(HISTORY as u64 + 10) {
            a.update(Msg::Snapshot(Box::new(snap(i))));
        }
        assert_eq!(a.snaps.len(), HISTORY);
        assert_eq!(a.current().map(|s| s.seq), Some(HISTORY as u64 + 9));
        assert_eq!(a.history(5).len(), 5);
    }

    #[test]
    fn replay_plays_at_speed_and_stops_at_the_end() {
        let rec = Recording {
            header: Header {
                format: record::FORMAT.into(),
                version: 1,
                llctop_version: "t".into(),
                host: None,
                kernel: None,
                start_unix_ns: 0,
                interval_ns: 1_000_000_000,
                topology: Topology::default(),
                sources: vec![],
                command: vec![],
            },
            snapshots: (0..10).map(snap).collect(),
            knobs: vec![],
            markers: vec![],
            skipped_lines: 0,
            truncated: false,
        };
        let mut a = App::replay(rec, "x", vec![]);
        a.update(Msg::Elapsed(Duration::from_millis(2500)));
        assert_eq!(a.pos, Some(2));
        a.update(key(KeyCode::Char(']')));
        a.update(Msg::Elapsed(Duration::from_millis(1000)));
        assert_eq!(a.pos, Some(4), "×2");
        a.update(key(KeyCode::Char(' ')));
        a.update(Msg::Elapsed(Duration::from_secs(5)));
        assert_eq!(a.pos, Some(4), "paused");
        a.update(key(KeyCode::Right));
        assert_eq!(a.pos, Some(5));
        a.update(key(KeyCode::Char(' ')));
        a.update(Msg::Elapsed(Duration::from_secs(60)));
        assert_eq!(a.pos, Some(9));
        assert!(
            a.replay.as_ref().is_some_and(|r| !r.playing),
            "stopped at the end"
        );
        a.update(key(KeyCode::Char('r')));
        assert!(a.recording.is_none());
    }

    #[test]
    fn keys_switch_views_and_quit() {
        let mut a = App::live(Topology::default(), Duration::from_secs(1), vec![]);
        a.update(key(KeyCode::Char('3')));
        assert_eq!(a.view, ViewId::Processes);
        a.update(key(KeyCode::Tab));
        assert_eq!(a.view, ViewId::Cache);
        a.update(key(KeyCode::F(1)));
        assert_eq!(a.view, ViewId::Help);
        a.update(key(KeyCode::Char('3')));
        a.update(key(KeyCode::Char('/')));
        a.update(key(KeyCode::Char('q')));
        assert!(!a.quit, "q is text while filtering");
        assert_eq!(a.filter, "q");
        a.update(key(KeyCode::Esc));
        assert!(a.filter.is_empty());
        a.update(key(KeyCode::Char('q')));
        assert!(a.quit);
    }
}
