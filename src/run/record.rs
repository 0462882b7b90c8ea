//! `llctop record`: snapshots, knob changes, the advisor's findings as they fire and clear
//! and the header to a recording file, until the
//! duration is reached or a signal stops it; the knob session ends (restores) before the
//! file is finished, so the restores are recorded too.

use std::path::Path;
use std::time::Duration;

use super::{Changes, Error, Options, Run};
use crate::findings::advisor::Trail;
use crate::knobs::Session;
use crate::kroot::KernelRoot;
use crate::record::{self, Header, Line, RecordError, Writer};
use crate::text::Esc;
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
    // The changes checked before anything is opened; then the output: a FIFO's reader is
    // waited for (until a signal or the duration) before the sources load.
    super::check_changes(opts, root, topo, changes)?;
    let stop = super::stop_flag()?;
    let out = crate::output::Output::create(output, &[], super::output_wait(&stop, duration))
        .map_err(|e| format!("{}: {e}", Esc(&output.display().to_string())))?;
    let mut run = Run::start_with(opts, root, topo, duration, stop)?;
    let header = Header::new(
        record::host_and_kernel(root),
        opts.interval,
        topo.clone(),
        run.sources.clone(),
    );
    let mut writer = Writer::over(out, &header)?;
    // After the header: the knob lines come after the start they are measured from.
    run.change_knobs(opts, root, topo, changes)?;
    let mut error: Option<RecordError> = None;
    write_knob_events(run.knobs.as_mut(), &mut writer)?;
    let mut n = 0;
    let mut advisor = Trail::new();
    run.each(|snap, knobs| {
        let res = writer
            .write_snapshot(snap)
            .and_then(|()| write_knob_events(knobs.as_mut(), &mut writer))
            .and_then(|()| {
                advisor
                    .push(topo, snap)
                    .iter()
                    .try_for_each(|l| writer.write_finding(l))
            })
            .and_then(|()| {
                // The knob values (for `llctop diff`) once the first interval is in:
                // reading them takes a moment, spent inside the recorded window, not
                // before its baseline. They are the values of that first interval.
                if n == 0 {
                    let reg = crate::knobs::Registry::discover(root, Some(topo));
                    let values = Header::knob_values(&reg);
                    writer.write_experiment_line(Line::KnobValues(values))?;
                }
                Ok(())
            });
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
    let committed = writer.finish()?;
    if let Some(e) = error {
        return Err(e.into());
    }
    crate::say!(
        "llctop: wrote {n} snapshots to {}{committed}",
        Esc(&output.display().to_string())
    );
    Ok(())
}
