//! `llctop record`: snapshots, knob changes and the header to a recording file, until the
//! duration is reached or a signal stops it; the knob session ends (restores) before the
//! file is finished, so the restores are recorded too.

use std::path::Path;
use std::time::Duration;

use super::{Changes, Error, Options, Run};
use crate::knobs::Session;
use crate::kroot::KernelRoot;
use crate::record::{self, Header, RecordError, Writer};
use crate::topology::Topology;

/// Write the session's new knob events to the recording.
fn write_knob_events(k: Option<&mut Session>, w: &mut Writer) -> Result<(), RecordError> {
    for ev in k.map(|s| s.take_events()).unwrap_or_default() {
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
    let mut run = Run::start(opts, root, topo, duration)?;
    // The knob values at the start, for `llctop diff` (read without touching anything).
    let header = Header::new(
        record::host_and_kernel(root),
        opts.interval,
        topo.clone(),
        run.sources.clone(),
    )
    .with_knobs(&crate::knobs::Registry::discover(root, Some(topo)));
    let mut writer = Writer::create(output, &header)?;
    // After the header: the knob lines come after the start they are measured from.
    run.change_knobs(opts, root, topo, changes)?;
    let mut error: Option<RecordError> = None;
    write_knob_events(run.knobs.as_mut(), &mut writer)?;
    let mut n = 0;
    run.each(|snap, knobs| {
        let res = writer
            .write_snapshot(snap)
            .and_then(|()| write_knob_events(knobs.as_mut(), &mut writer));
        match res {
            Ok(()) => {
                n += 1;
                true
            }
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    write_knob_events(run.finish(), &mut writer)?;
    writer.finish()?;
    if let Some(e) = error {
        return Err(e.into());
    }
    eprintln!("llctop: wrote {n} snapshots to {}", output.display());
    Ok(())
}
