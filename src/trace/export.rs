//! `llctop export --perfetto REC -o FILE.pftrace`: any recording as a Perfetto trace —
//! the counters of every snapshot on the node → LLC → CPU tracks, its detail events
//! (cross-LLC and cross-node migrations with their flow arrows, placements), and the knob
//! changes, markers, findings and A/B windows on the `llctop` track. A recording has no
//! context switches (they are counted, not logged): the trace has no sched events. Read
//! as a stream: memory does not grow with the recording's length but for one pair of
//! times per snapshot (to place windows and findings).

use std::path::Path;

use super::perfetto::Arg;
use super::timeline::Timeline;
use crate::output::Output;
use crate::record::Line;
use crate::record::reader::Stream;
use crate::snapshot::{EventKind, SourceStatus};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub snapshots: u64,
    pub bytes: u64,
    pub counts: super::timeline::Counts,
}

/// Export `rec` to `out` (any writer): the work of `llctop export`.
pub fn export<W: std::io::Write>(
    stream: Stream,
    out: W,
    cpu_counters: bool,
) -> Result<(Exported, W), crate::run::Error> {
    let header = stream.header.clone();
    let mut tl = Timeline::new(out, &header.topology, 0, cpu_counters);
    tl.start(header.kernel.as_deref().unwrap_or(""), "", None)?;
    // seq → (start, end) of each snapshot's interval, CLOCK_MONOTONIC.
    let mut times: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    let mut sources: Vec<SourceStatus> = Vec::new();
    let mut snapshots = 0u64;
    let mut last_mono = 0u64;
    let mut dropped = 0u64;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    for line in stream.parallel(workers) {
        match line? {
            Line::Snapshot(s) => {
                snapshots += 1;
                let end = s.time.mono_ns;
                times.insert(s.seq, (end.saturating_sub(s.time.interval_ns), end));
                last_mono = last_mono.max(end);
                for st in &s.sources {
                    let before = sources.iter().find(|p| p.name == st.name).map(|p| p.state);
                    if before != Some(st.state) {
                        tl.source_state(end, st)?;
                    }
                }
                sources.clone_from(&s.sources);
                tl.snapshot(&s)?;
                if let Some(log) = &s.events {
                    dropped += log.dropped;
                    for e in &log.events {
                        match e.kind {
                            EventKind::Migration => tl.migration(e)?,
                            EventKind::Placement => tl.placement(e)?,
                            _ => {}
                        }
                    }
                }
            }
            Line::Knob(ev) => tl.knob(&ev)?,
            Line::Marker(m) => tl.marker(m.mono_ns, &m.label)?,
            Line::Finding(l) => {
                let at = times.get(&l.seq).map_or(last_mono, |t| t.1);
                tl.finding(at, &l)?;
            }
            Line::Window(w) => {
                let (Some(a), Some(b)) = (times.get(&w.first_seq), times.get(&w.last_seq)) else {
                    continue;
                };
                let mut args = vec![
                    ("window".to_string(), Arg::Uint(u64::from(w.index) + 1)),
                    ("arm".to_string(), Arg::Str(format!("{:?}", w.arm))),
                    ("value".to_string(), Arg::Str(w.value.clone())),
                ];
                if let Some(why) = &w.not_counted {
                    args.push(("not_counted".to_string(), Arg::Str(why.clone())));
                }
                tl.window(
                    a.0,
                    b.1,
                    &format!("window {} {:?} = {}", w.index + 1, w.arm, w.value),
                    args,
                )?;
            }
            Line::Experiment(_) | Line::Verdict(_) | Line::KnobValues(_) | Line::Unknown => {}
        }
    }
    if dropped > 0 {
        tl.marker(
            last_mono,
            &format!(
                "{dropped} detail events were dropped while recording (rate limit or full buffer)"
            ),
        )?;
    }
    let counts = tl.counts.clone();
    let bytes = tl.bytes();
    let out = tl.finish(last_mono, &[])?;
    Ok((
        Exported {
            snapshots,
            bytes,
            counts,
        },
        out,
    ))
}

/// `llctop export --perfetto REC -o OUT`.
pub fn run(rec: &Path, output: &Path, cpu_counters: bool) -> Result<(), crate::run::Error> {
    crate::output::check(output, &[rec])?;
    let stream = Stream::open(rec, u64::MAX)?;
    let stop = crate::run::stop_flag()?;
    let out =
        Output::create(output, &[rec], crate::run::output_wait(&stop, None)).map_err(|e| {
            format!(
                "{}: {e}",
                crate::text::escape(&output.display().to_string())
            )
        })?;
    let (e, out) = export(stream, out, cpu_counters)?;
    let committed = out.commit().map_err(|e| {
        format!(
            "{}: {e}",
            crate::text::escape(&output.display().to_string())
        )
    })?;
    crate::say!(
        "llctop: exported {} snapshots, {} migrations (the cross-LLC and cross-node ones a recording keeps as events; every migration is in the counter tracks), {} placements, {} knob changes, {} findings to {} ({} bytes)",
        e.snapshots,
        e.counts.migrations,
        e.counts.placements,
        e.counts.knob_changes,
        e.counts.findings,
        crate::text::escape(&output.display().to_string()),
        e.bytes
    );
    if committed.old.is_some() {
        crate::say!(
            "llctop: {}{committed}",
            crate::text::escape(&output.display().to_string())
        );
    }
    Ok(())
}
