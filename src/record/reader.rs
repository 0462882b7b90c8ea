//! Reading recordings: the header, then every snapshot line. Plain or gzip (by the magic
//! bytes, not the name). A truncated last line or gzip stream — a recording killed while
//! writing — ends the recording where the last complete line ends, with `truncated` set.
//!
//! Bounded and checked: a line longer than [`MAX_LINE`] or a file larger than
//! [`MAX_TOTAL`] decompressed is refused (a stream of zeros is not a recording); snapshot
//! numbers must increase (repeated or shuffled lines are refused, not counted twice);
//! fractions (busy, steal, preferred-LLC hit) must lie in 0–1 ([`validate`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::{FORMAT, Header, Line, Marker, RecordError, VERSION};
use crate::experiment::verdict::Verdict;
use crate::experiment::{Experiment, Window};
use crate::findings::advisor::FindingLine;
use crate::knobs::session::KnobEvent;
use crate::snapshot::Snapshot;

#[derive(Debug, Clone)]
pub struct Recording {
    pub header: Header,
    pub snapshots: Vec<Snapshot>,
    /// Knob changes made while recording, in file order.
    pub knobs: Vec<KnobEvent>,
    /// Markers the operator dropped (`m` in the TUI), in file order.
    pub markers: Vec<Marker>,
    /// The `llctop ab` run this recording holds, its measured windows and verdict.
    pub experiment: Option<Experiment>,
    pub windows: Vec<Window>,
    pub verdict: Option<Verdict>,
    /// The findings fired and cleared while recording (`llctop report` recomputes them).
    pub findings: Vec<FindingLine>,
    /// Lines of types this reader does not know (from a newer minor addition), skipped.
    pub skipped_lines: u64,
    /// The file ended in the middle of a line or of the gzip stream.
    pub truncated: bool,
}

impl Recording {
    /// A recording of just these snapshots (no knob, marker, experiment or finding lines).
    pub fn of(header: Header, snapshots: Vec<Snapshot>) -> Recording {
        Recording {
            header,
            snapshots,
            knobs: Vec::new(),
            markers: Vec::new(),
            experiment: None,
            windows: Vec::new(),
            verdict: None,
            findings: Vec::new(),
            skipped_lines: 0,
            truncated: false,
        }
    }
}

pub fn open(path: &Path) -> Result<Recording, RecordError> {
    let io_err = |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io_err)?;
    let file = File::open(path).map_err(io_err)?;
    let reader: Box<dyn BufRead> = if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::new(MultiGzDecoder::new(BufReader::new(file))))
    } else {
        Box::new(BufReader::new(file))
    };
    parse(path, reader)
}

/// The longest line read: a snapshot of a 16384-CPU machine with its process table is a
/// few MiB; a longer line is not a recording's.
pub const MAX_LINE: u64 = 64 << 20;
/// The most decompressed bytes read (the reader keeps the lines in memory).
pub const MAX_TOTAL: u64 = 4 << 30;

/// A snapshot's values that can only be fractions are fractions.
pub fn validate(s: &Snapshot) -> Result<(), String> {
    let frac = |what: &str, v: Option<f64>| match v {
        Some(x) if !(0.0..=1.0 + 1e-9).contains(&x) => {
            Err(format!("snapshot #{}: {what} {x} is not in 0–1", s.seq))
        }
        _ => Ok(()),
    };
    frac("system busy", s.system.busy)?;
    frac("system user", s.system.user)?;
    frac("system kernel", s.system.system)?;
    if let Some(l) = s.system.load
        && l.iter().any(|x| !x.is_finite() || *x < 0.0)
    {
        return Err(format!(
            "snapshot #{}: load {l:?} is not a load average",
            s.seq
        ));
    }
    for c in &s.cpus {
        frac(&format!("cpu{} busy", c.cpu), c.busy)?;
        frac(&format!("cpu{} steal", c.cpu), c.steal)?;
    }
    for g in s.llcs.iter().chain(&s.nodes) {
        frac("group busy", g.busy)?;
    }
    for r in s.processes.iter().flat_map(|t| &t.rows) {
        frac(&format!("pid {} preferred_hit", r.pid), r.preferred_hit)?;
    }
    Ok(())
}

pub fn parse(path: &Path, reader: impl BufRead) -> Result<Recording, RecordError> {
    let fmt = |detail: String| RecordError::Format {
        path: path.to_path_buf(),
        detail,
    };
    let gz_hint = if path.extension().is_some_and(|e| e == "gz") {
        " (if this gzip file was damaged, its data may be corrupt)"
    } else {
        ""
    };
    let mut reader = reader.take(MAX_TOTAL);
    let mut truncated = false;
    let mut lines: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader).take(MAX_LINE + 1).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {
                if buf.len() as u64 > MAX_LINE {
                    return Err(fmt(format!(
                        "line {} is longer than {} MiB: not an llctop recording",
                        lines.len() + 1,
                        MAX_LINE >> 20
                    )));
                }
                if buf.last() != Some(&b'\n') {
                    if reader.limit() == 0 {
                        return Err(fmt(format!(
                            "larger than {} GiB decompressed: not read",
                            MAX_TOTAL >> 30
                        )));
                    }
                    // The last line without its newline: whole if it parses.
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
                        lines.push(text);
                    } else {
                        truncated = true; // last line cut off
                    }
                    break;
                }
                lines.push(String::from_utf8_lossy(&buf).into_owned());
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::UnexpectedEof
                    || e.kind() == std::io::ErrorKind::InvalidInput =>
            {
                truncated = true; // gzip stream cut off
                break;
            }
            Err(e) => {
                return Err(RecordError::Io {
                    path: path.to_path_buf(),
                    source: e,
                });
            }
        }
    }
    let mut it = lines.iter().enumerate();
    let (_, first) = it
        .next()
        .ok_or_else(|| fmt("empty file: no header line".into()))?;
    let value: serde_json::Value =
        serde_json::from_str(first).map_err(|e| fmt(format!("line 1: {e}")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(fmt(format!("line 1 is not an {FORMAT} header")));
    }
    let version = match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v >= 1 => v,
        _ => {
            return Err(fmt(format!(
                "line 1: \"version\" must be a whole number from 1, found {}",
                value
                    .get("version")
                    .map_or("none".into(), |v| v.to_string())
            )));
        }
    };
    if version > VERSION as u64 {
        return Err(fmt(format!(
            "recording format version {version}; this llctop reads versions 1 to {VERSION}: upgrade llctop"
        )));
    }
    let header: Header = serde_json::from_value(value).map_err(|e| fmt(format!("line 1: {e}")))?;
    let mut snapshots = Vec::new();
    let mut knobs = Vec::new();
    let mut markers = Vec::new();
    let mut skipped_lines = 0;
    let (mut experiment, mut windows, mut verdict) = (None, Vec::new(), None);
    let mut knob_values = None;
    let mut findings = Vec::new();
    for (i, line) in it {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line<Snapshot, KnobEvent, Marker> = serde_json::from_str(line)
            .map_err(|e| fmt(format!("line {}: {e}{}", i + 1, gz_hint)))?;
        match parsed {
            Line::Snapshot(s) => {
                if let Some(prev) = snapshots.last().map(|p: &Snapshot| p.seq)
                    && s.seq <= prev
                {
                    return Err(fmt(format!(
                        "line {}: snapshot #{} after #{prev}: lines repeated or out of order",
                        i + 1,
                        s.seq
                    )));
                }
                validate(&s).map_err(|e| fmt(format!("line {}: {e}", i + 1)))?;
                snapshots.push(s)
            }
            Line::Knob(k) => knobs.push(k),
            Line::Marker(m) => markers.push(m),
            Line::Experiment(e) => experiment = Some(e),
            Line::Window(w) => windows.push(w),
            Line::Verdict(v) => verdict = Some(v),
            Line::KnobValues(k) => knob_values = Some(k),
            Line::Finding(f) => findings.push(f),
            Line::Unknown => skipped_lines += 1,
        }
    }
    let mut header = header;
    if let Some(k) = knob_values.filter(|_| header.knobs.is_empty()) {
        header.knobs = k;
    }
    Ok(Recording {
        header,
        snapshots,
        knobs,
        markers,
        experiment,
        windows,
        verdict,
        findings,
        skipped_lines,
        truncated,
    })
}
