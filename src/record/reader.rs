//! Reading recordings: the header, then every snapshot line. Plain or gzip (by the magic
//! bytes, not the name). A truncated last line or gzip stream — a recording killed while
//! writing — ends the recording where the last complete line ends, with `truncated` set.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::{FORMAT, Header, Line, Marker, RecordError, VERSION};
use crate::experiment::verdict::Verdict;
use crate::experiment::{Experiment, Window};
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
    /// Lines of types this reader does not know (from a newer minor addition), skipped.
    pub skipped_lines: u64,
    /// The file ended in the middle of a line or of the gzip stream.
    pub truncated: bool,
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

pub fn parse(path: &Path, mut reader: impl BufRead) -> Result<Recording, RecordError> {
    let fmt = |detail: String| RecordError::Format {
        path: path.to_path_buf(),
        detail,
    };
    let mut truncated = false;
    let mut lines: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {
                if buf.last() != Some(&b'\n') {
                    truncated = true; // last line cut off
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
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version == 0 || version > VERSION as u64 {
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
    for (i, line) in it {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line<Snapshot, KnobEvent, Marker> =
            serde_json::from_str(line).map_err(|e| fmt(format!("line {}: {e}", i + 1)))?;
        match parsed {
            Line::Snapshot(s) => snapshots.push(s),
            Line::Knob(k) => knobs.push(k),
            Line::Marker(m) => markers.push(m),
            Line::Experiment(e) => experiment = Some(e),
            Line::Window(w) => windows.push(w),
            Line::Verdict(v) => verdict = Some(v),
            Line::KnobValues(k) => knob_values = Some(k),
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
        skipped_lines,
        truncated,
    })
}
