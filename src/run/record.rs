//! `llctop record`: snapshots, knob changes and the header to a recording file, until the
//! duration is reached or a signal stops it; the knob session ends (restores) before the
//! file is finished, so the restores are recorded too.

use std::path::Path;
use std::time::Duration;

use super::{Changes, Error, Options};
use crate::knobs::Session;
use crate::kroot::KernelRoot;
use crate::record::{self, Header, RecordError, Writer};
use crate::topology::Topology;

/// Write the session's new knob events to the recording.
fn write_knob_events(k: &mut Option<Session>, w: &mut Writer) -> Result<(), RecordError> {
    for ev in k.as_mut().map(|s| s.take_events()).unwrap_or_default() {
        w.write_knob(&ev)?;
    }
    Ok(())
}

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    output: &Path,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    let flag = super::stop_flag()?;
    let mut collector = super::collector(opts, root, topo)?;
    // The baseline tick's source states go into the header.
    let sources = collector.baseline();
    let header = Header::new(
        record::host_and_kernel(root),
        opts.interval,
        topo.clone(),
        sources,
    );
    let mut writer = Writer::create(output, &header)?;
    let mut knobs = super::run_session(opts, root, topo, changes)?;
    let mut error: Option<RecordError> = None;
    write_knob_events(&mut knobs, &mut writer)?;
    let limit = super::snapshot_count(duration, opts.interval);
    let mut n = 0;
    collector.run(opts.interval, super::signalled(flag), |snap| {
        let res = writer
            .write_snapshot(&snap)
            .and_then(|()| write_knob_events(&mut knobs, &mut writer));
        match res {
            Ok(()) => {
                n += 1;
                limit.is_none_or(|l| snap.seq + 1 < l)
            }
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    if let Some(k) = knobs.as_mut() {
        super::finish_session(k);
    }
    write_knob_events(&mut knobs, &mut writer)?;
    writer.finish()?;
    if let Some(e) = error {
        return Err(e.into());
    }
    eprintln!("llctop: wrote {n} snapshots to {}", output.display());
    Ok(())
}
