//! Recording from the TUI: `r` starts a recording of what is drawn (to
//! `llctop-<UTC time>.json.gz` in `record_dir`) and stops it, `m` drops a marker. The
//! keys ask for effects; the file writes are done here, in [`App::perform`]'s name,
//! through the pipeline's recording sink (the same lines as `llctop record` writes).

use std::path::PathBuf;

use super::{App, Effect, Level};
use crate::record::{self, Header, Marker};
use crate::run::pipeline::Tick;
use crate::run::record::Recording;

/// The recording in progress.
pub struct Recorder {
    pub path: PathBuf,
    pub(super) rec: Recording,
    pub markers: u32,
}

impl Recorder {
    /// Snapshots written so far.
    pub fn snapshots(&self) -> u64 {
        self.rec.snapshots
    }

    /// Finish the file (gzip trailer).
    pub fn finish(mut self) -> Result<(), record::RecordError> {
        self.rec.close(&[]).map(|_| ())
    }
}

impl App {
    pub(super) fn toggle_recording(&mut self) {
        if self.replay.is_some() {
            self.say(Level::Warn, "replay: nothing new to record");
        } else if self.recording.is_some() {
            self.effect(Effect::StopRecording);
        } else {
            self.effect(Effect::StartRecording);
        }
    }

    pub(super) fn marker(&mut self) {
        if self.recording.is_none() {
            self.say(Level::Warn, "not recording: r starts a recording");
        } else {
            self.effect(Effect::Marker);
        }
    }

    pub(super) fn start_recording(&mut self) {
        let header = Header::new(
            (self.host.clone(), self.kernel.clone()),
            self.interval,
            self.topo.clone(),
            self.sources().to_vec(),
        );
        // The knob values now, written after the first snapshot as every recording's.
        let values = self
            .session
            .as_ref()
            .map(|s| Header::knob_values(s.registry()));
        let path = self.record_dir.join(format!(
            "llctop-{}.json.gz",
            crate::clock::utc_stamp(header.start_unix_ns / 1_000_000_000)
        ));
        match record::Writer::create(&path, &header) {
            Ok(writer) => {
                self.say(Level::Good, format!("recording to {}", path.display()));
                self.recording = Some(Recorder {
                    path,
                    rec: Recording::new(writer, values),
                    markers: 0,
                });
            }
            Err(e) => self.say(Level::Bad, format!("cannot record: {e}")),
        }
    }

    pub(super) fn stop_recording(&mut self) {
        let Some(r) = self.recording.take() else {
            return;
        };
        let (path, n) = (r.path.clone(), r.snapshots());
        match r.finish() {
            Ok(()) => self.say(
                Level::Good,
                format!("recording stopped: {n} snapshots in {}", path.display()),
            ),
            Err(e) => self.say(Level::Bad, format!("recording: {e}")),
        }
    }

    /// One tick into the recording: its snapshot, the findings that fired or cleared.
    pub(super) fn write_tick(&mut self, t: &Tick) {
        let Some(r) = self.recording.as_mut() else {
            return;
        };
        if let Err(e) = r.rec.write_tick(t) {
            self.recording = None;
            self.say(Level::Bad, format!("recording stopped: {e}"));
        }
    }

    pub(super) fn write_marker(&mut self) {
        let after_seq = self.snaps.metas().last().map(|s| s.seq);
        let Some(r) = self.recording.as_mut() else {
            return;
        };
        r.markers += 1;
        let m = Marker {
            after_seq,
            unix_ns: crate::clock::unix_ns(),
            mono_ns: crate::clock::mono_ns(),
            label: format!("marker {}", r.markers),
        };
        match r.rec.marker(&m) {
            Ok(()) => {
                self.say(Level::Good, format!("{} recorded", m.label));
                self.markers.push(m);
            }
            Err(e) => self.say(Level::Bad, format!("marker: {e}")),
        }
    }

    /// Write knob events to the recording, if any; the error of the last failure.
    pub(super) fn record_knob_events(
        &mut self,
        events: &[crate::knobs::session::KnobEvent],
    ) -> Option<String> {
        let r = self.recording.as_mut()?;
        let mut failed = None;
        for e in events {
            if let Err(err) = r.rec.knob(e) {
                failed = Some(err.to_string());
            }
        }
        failed
    }
}
