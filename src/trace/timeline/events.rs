//! The `llctop` track of a timeline: llctop's own events — knob changes (its own and ones
//! made outside it), markers, notes, source states, findings as slices while held, and A/B
//! windows.

use std::io::{self, Write};

use super::{T_FINDINGS, T_KNOBS, T_LLCTOP, T_MARKERS, T_SOURCES, T_WINDOWS, Timeline};
use crate::findings::advisor::{FindingLine, State};
use crate::knobs::session::KnobEvent;
use crate::snapshot::SourceStatus;
use crate::trace::perfetto::{Arg, Event, TrackKind};

impl<W: Write> Timeline<W> {
    /// A knob's change (llctop's own, with what it wrote and read back).
    pub fn knob(&mut self, ev: &KnobEvent) -> io::Result<()> {
        self.knob_changed(
            ev.mono_ns,
            &ev.id,
            &ev.old,
            &ev.new,
            Some(&format!("{:?}", ev.action).to_lowercase()),
        )
    }

    /// A knob's value changed from `old` to `new` (`how`: llctop's action, or None when
    /// seen by re-reading the value).
    pub fn knob_changed(
        &mut self,
        mono: u64,
        id: &str,
        old: &str,
        new: &str,
        how: Option<&str>,
    ) -> io::Result<()> {
        self.counts.knob_changes += 1;
        let ts = self.ts(mono);
        let mut args = vec![
            ("knob".to_string(), Arg::Str(id.to_string())),
            ("old".to_string(), Arg::Str(old.to_string())),
            ("new".to_string(), Arg::Str(new.to_string())),
        ];
        args.push((
            "by".to_string(),
            Arg::Str(how.map_or("seen changed (not by this llctop)".into(), |h| {
                format!("llctop ({h})")
            })),
        ));
        self.w.instant(Event {
            ts,
            track: T_KNOBS,
            name: format!("{id}: {old} → {new}"),
            categories: vec!["knob".into()],
            args,
            ..Event::default()
        })
    }

    /// An operator's marker.
    pub fn marker(&mut self, mono: u64, label: &str) -> io::Result<()> {
        let ts = self.ts(mono);
        self.w.instant(Event {
            ts,
            track: T_MARKERS,
            name: label.to_string(),
            categories: vec!["marker".into()],
            ..Event::default()
        })
    }

    /// The lifetime of the command a trace ran (`llctop trace -- CMD`), on llctop's track.
    pub fn command(&mut self, start_mono: u64, end_mono: u64, argv: &[String]) -> io::Result<()> {
        let (a, b) = (self.ts(start_mono), self.ts(end_mono.max(start_mono)));
        self.w.slice_begin(Event {
            ts: a,
            track: T_LLCTOP,
            name: format!("command: {}", argv.join(" ")),
            categories: vec!["command".into()],
            ..Event::default()
        })?;
        self.w.slice_end(b, T_LLCTOP)
    }

    /// A note from llctop itself on its own track (e.g. records lost).
    pub fn note(&mut self, mono: u64, text: &str) -> io::Result<()> {
        let ts = self.ts(mono);
        self.w.instant(Event {
            ts,
            track: T_LLCTOP,
            name: text.to_string(),
            categories: vec!["llctop".into()],
            ..Event::default()
        })
    }

    /// A source's state changed.
    pub fn source_state(&mut self, mono: u64, s: &SourceStatus) -> io::Result<()> {
        let ts = self.ts(mono);
        let state = format!("{:?}", s.state).to_lowercase();
        self.w.instant(Event {
            ts,
            track: T_SOURCES,
            name: format!("{}: {state}", s.name),
            categories: vec!["source".into()],
            args: s
                .reason
                .iter()
                .map(|r| ("reason".to_string(), Arg::Str(r.clone())))
                .collect(),
            ..Event::default()
        })
    }

    /// A finding fired (a slice opens on its kind's track and on the processes it names)
    /// or cleared (they close).
    pub fn finding(&mut self, mono: u64, l: &FindingLine) -> io::Result<()> {
        let ts = self.ts(mono);
        let f = &l.finding;
        let key = (f.kind.label().to_string(), f.key.clone());
        match l.state {
            State::Fired => {
                if self.open.contains_key(&key) {
                    return Ok(());
                }
                self.counts.findings += 1;
                let kind_track = T_FINDINGS
                    + crate::findings::Kind::ALL
                        .iter()
                        .position(|k| *k == f.kind)
                        .unwrap_or(0) as u64;
                if self.tracks.insert(kind_track) {
                    self.w.track(
                        kind_track,
                        Some(T_LLCTOP),
                        &format!("finding: {}", f.kind.title()),
                        &TrackKind::Plain,
                        None,
                    )?;
                }
                let mut tracks = vec![kind_track];
                for &pid in &f.pids {
                    let name = self.name_of(pid).as_string();
                    let name = if name.is_empty() {
                        format!("pid {pid}")
                    } else {
                        name
                    };
                    tracks.push(self.process_track(pid, &name)?);
                }
                let name = format!("{} {}", f.severity.label().to_uppercase(), f.kind.title());
                let mut args = vec![
                    ("summary".to_string(), Arg::Str(f.summary.clone())),
                    ("key".to_string(), Arg::Str(f.key.clone())),
                ];
                for x in &f.facts {
                    args.push((x.label.clone(), Arg::Str(x.shown())));
                }
                if let Some(s) = &f.suggestion {
                    args.push(("try".to_string(), Arg::Str(s.command.clone())));
                }
                for &t in &tracks {
                    self.w.slice_begin(Event {
                        ts,
                        track: t,
                        name: name.clone(),
                        categories: vec!["finding".into(), f.kind.label().into()],
                        args: args.clone(),
                        ..Event::default()
                    })?;
                }
                self.open.insert(key, tracks);
            }
            State::Cleared => {
                if let Some(tracks) = self.open.remove(&key) {
                    for t in tracks {
                        self.w.slice_end(ts, t)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// An A/B window of an experiment, as a slice.
    pub fn window(
        &mut self,
        start_mono: u64,
        end_mono: u64,
        name: &str,
        args: Vec<(String, Arg)>,
    ) -> io::Result<()> {
        let (a, b) = (self.ts(start_mono), self.ts(end_mono));
        self.w.slice_begin(Event {
            ts: a,
            track: T_WINDOWS,
            name: name.to_string(),
            categories: vec!["experiment".into()],
            args,
            ..Event::default()
        })?;
        self.w.slice_end(b, T_WINDOWS)
    }
}
