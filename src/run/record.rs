//! Recordings as a sink of the pipeline — every recording's: `llctop record`, `ab -o`,
//! the TUI's `r` and MCP's `record` write their lines through [`Recording`], so each
//! carries the same kinds: the header, each snapshot, the run's knob events, the
//! advisor's findings as they fire and clear, and the knob values the recording began
//! with (after its first snapshot). And `llctop record` itself: until the duration or a
//! signal; the knob session ends (restores) before the file is finished, so the
//! restores are recorded too.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::pipeline::{Ctl, Pipeline, Sink, Tick};
use super::{Changes, Error, Options};
use crate::knobs::session::KnobEvent;
use crate::kroot::KernelRoot;
use crate::record::{self, Header, Line, Marker, RecordError, Writer};
use crate::text::Esc;
use crate::topology::Topology;

/// A recording being written, line by line.
pub struct Recording {
    writer: Option<Writer>,
    /// The knob values to write after the first snapshot when the ticks bring none
    /// (a recording started mid-run: the TUI's).
    start_values: Option<BTreeMap<String, String>>,
    values_written: bool,
    pub snapshots: u64,
}

impl Recording {
    /// A recording over `writer` (its header written). `start_values`: the knob values
    /// now, when the ticks will not bring them (the TUI re-reads its own).
    pub fn new(writer: Writer, start_values: Option<BTreeMap<String, String>>) -> Recording {
        Recording {
            writer: Some(writer),
            start_values,
            values_written: false,
            snapshots: 0,
        }
    }

    fn w(&mut self) -> Result<&mut Writer, RecordError> {
        self.writer.as_mut().ok_or_else(|| RecordError::Format {
            path: std::path::PathBuf::new(),
            detail: "the recording was finished".into(),
        })
    }

    /// One tick's lines: the snapshot, the run's knob events, the findings that fired
    /// or cleared, and (once) the knob values.
    pub fn write_tick(&mut self, t: &Tick) -> Result<(), RecordError> {
        let w = self.w()?;
        w.write_snapshot(&t.snap)?;
        for ev in &t.knobs.events {
            w.write_knob(ev)?;
        }
        for l in &t.lines {
            w.write_finding(l)?;
        }
        self.snapshots += 1;
        if !self.values_written
            && let Some(v) = self.start_values.take().or_else(|| t.knobs.values.clone())
        {
            self.values_written = true;
            self.w()?.write_experiment_line(Line::KnobValues(v))?;
        }
        Ok(())
    }

    /// A knob event made between ticks (the TUI's, as the operator makes it).
    pub fn knob(&mut self, ev: &KnobEvent) -> Result<(), RecordError> {
        self.w()?.write_knob(ev)
    }

    pub fn marker(&mut self, m: &Marker) -> Result<(), RecordError> {
        self.w()?.write_marker(m)
    }

    /// A line of the command's own (an experiment's).
    pub fn line(
        &mut self,
        l: Line<&crate::snapshot::Snapshot, &KnobEvent, &Marker>,
    ) -> Result<(), RecordError> {
        self.w()?.write_experiment_line(l)
    }

    /// The session's last events, then the file finished (committed): what it says of
    /// a replaced file (`FILE.old`), empty otherwise.
    pub fn close(&mut self, last: &[KnobEvent]) -> Result<String, RecordError> {
        for ev in last {
            self.knob(ev)?;
        }
        match self.writer.take() {
            Some(w) => w.finish().map(|c| c.to_string()),
            None => Ok(String::new()),
        }
    }
}

impl Sink for Recording {
    fn tick(&mut self, t: &Tick, _: &mut Ctl) -> Result<bool, Error> {
        self.write_tick(t)?;
        Ok(true)
    }

    fn finish(&mut self, last: &[KnobEvent]) -> Result<(), Error> {
        self.close(last)?;
        Ok(())
    }
}

/// `llctop record`'s sink: the recording, and what it says at the end.
struct Record<'a> {
    rec: Recording,
    output: &'a Path,
}

impl Sink for Record<'_> {
    fn tick(&mut self, t: &Tick, ctl: &mut Ctl) -> Result<bool, Error> {
        self.rec.tick(t, ctl)
    }

    fn finish(&mut self, last: &[KnobEvent]) -> Result<(), Error> {
        let n = self.rec.snapshots;
        let committed = self.rec.close(last)?;
        crate::say!(
            "llctop: wrote {n} snapshots to {}{committed}",
            Esc(&self.output.display().to_string())
        );
        Ok(())
    }
}

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    output: &Path,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    // The changes checked before anything is opened; then the output: a FIFO's reader is
    // waited for (until a signal or the duration) before the sources load.
    super::check_changes(opts, root, topo, changes)?;
    let stop = super::stop_flag()?;
    let out = crate::output::Output::create(output, &[], super::output_wait(&stop, duration))
        .map_err(|e| format!("{}: {e}", Esc(&output.display().to_string())))?;
    let mut p = Pipeline::start(opts, root, topo, duration, stop)?;
    let header = Header::new(
        record::host_and_kernel(root),
        opts.interval,
        topo.clone(),
        p.sources.clone(),
    )
    .with_boot_id(root);
    let writer = Writer::over(out, &header)?;
    // After the header: the knob lines come after the start they are measured from.
    p.change_knobs(opts, root, topo, changes)?;
    let mut sink = Record {
        rec: Recording::new(writer, None),
        output,
    };
    p.drive(&mut [&mut sink])
}
