//! Reading recordings: the header, then every snapshot line. Plain or gzip (by the magic
//! bytes, not the name). A truncated last line or gzip stream — a recording killed while
//! writing — ends the recording where the last complete line ends, with `truncated` set.
//! [`open`] keeps the whole recording; a [`Stream`] gives one line at a time (memory
//! bounded by the longest line), and `Stream::parallel` (parallel.rs) parses on several
//! threads while one reads — `llctop report` reads that way. Snapshot lines are parsed straight into
//! [`Snapshot`] (no intermediate JSON value).
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

/// Read a whole recording (at most [`MAX_TOTAL`] bytes decompressed: it is all kept).
pub fn open(path: &Path) -> Result<Recording, RecordError> {
    collect(Stream::open(path, MAX_TOTAL)?)
}

/// The reader of a file, gunzipping it when it starts with gzip's magic bytes.
fn file_reader(path: &Path) -> Result<Box<dyn BufRead + Send>, RecordError> {
    let io_err = |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io_err)?;
    let file = File::open(path).map_err(io_err)?;
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::new(MultiGzDecoder::new(BufReader::new(file))))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// The longest line read: a snapshot of a 16384-CPU machine with its process table is a
/// few MiB; a longer line is not a recording's.
pub const MAX_LINE: u64 = 64 << 20;
/// The most decompressed bytes [`open`] reads (it keeps every snapshot in memory); a
/// [`Stream`] read line by line may be given no bound.
pub const MAX_TOTAL: u64 = 4 << 30;

/// How every snapshot line starts as llctop writes it (serde writes the tag first):
/// such a line is parsed straight into a [`Snapshot`] (the `type` field ignored), not
/// through serde's buffering of internally tagged enums.
const SNAPSHOT_PREFIX: &[u8] = br#"{"type":"snapshot","#;

/// A recording read line by line: the header at once, then each line after it as it is
/// read, checked as [`open`] checks it — memory bounded by the longest line, not by the
/// length of the recording.
pub struct Stream {
    pub(super) path: std::path::PathBuf,
    reader: std::io::Take<Box<dyn BufRead + Send>>,
    pub header: Header,
    /// Lines read so far (the header is line 1).
    pub(super) line_no: usize,
    pub(super) buf: Vec<u8>,
    pub(super) order: Order,
    /// The file ended in the middle of a line or of the gzip stream.
    pub truncated: bool,
    done: bool,
}

/// What the checks that need the lines before keep.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Order {
    pub(super) last_seq: Option<u64>,
    /// Lines of types this reader does not know, skipped.
    pub(super) skipped: u64,
    /// Lines of a type this reader knows.
    pub(super) known: u64,
    /// Blank lines (llctop writes none).
    pub(super) blank: u64,
}

/// Blank lines a recording may hold (llctop writes none; a hand edit may leave a few).
pub const MAX_BLANK: u64 = 1000;
/// Lines of unknown types a recording may hold beyond this many per known line (a newer
/// llctop's additions come a few per snapshot).
pub const UNKNOWN_PER_KNOWN: u64 = 16;
const MAX_UNKNOWN_FREE: u64 = 1000;

impl Order {
    /// A blank line: refused past [`MAX_BLANK`] (a file of newlines is no recording, and is
    /// told so in the time its first thousand lines take).
    pub(super) fn blank_line(&mut self, n: usize) -> Result<(), String> {
        self.blank += 1;
        if self.blank > MAX_BLANK {
            return Err(format!(
                "line {n}: more than {MAX_BLANK} blank lines: not an llctop recording"
            ));
        }
        Ok(())
    }
}

/// The checks that need the lines before: snapshot numbers increase; lines of unknown
/// types are counted and dropped (`None`). An error is the detail of a format error.
pub(super) fn in_order(
    o: &mut Order,
    n: usize,
    line: Line<Snapshot, KnobEvent, Marker>,
) -> Result<Option<Line<Snapshot, KnobEvent, Marker>>, String> {
    match &line {
        Line::Snapshot(s) => {
            if let Some(prev) = o.last_seq
                && s.seq <= prev
            {
                return Err(format!(
                    "line {n}: snapshot #{} after #{prev}: lines repeated or out of order",
                    s.seq
                ));
            }
            o.last_seq = Some(s.seq);
        }
        Line::Unknown => {
            o.skipped += 1;
            if o.skipped > MAX_UNKNOWN_FREE + o.known * UNKNOWN_PER_KNOWN {
                return Err(format!(
                    "line {n}: {} lines of types this llctop does not know and {} it knows: not an llctop recording (or one from a much newer llctop)",
                    o.skipped, o.known
                ));
            }
            return Ok(None);
        }
        _ => {}
    }
    o.known += 1;
    Ok(Some(line))
}

/// Why a file whose first line is not JSON is not a recording, in one line: what it seems
/// to be, and what reads it.
fn not_a_recording(first: &[u8], err: &str) -> String {
    let binary = first.contains(&0) || std::str::from_utf8(first).is_err();
    // A Perfetto trace is a stream of TracePacket messages: field 1, length-delimited.
    if first.first() == Some(&0x0a) && binary {
        return "not an llctop recording: a Perfetto trace (llctop trace, export --perfetto) — open it in ui.perfetto.dev or trace_processor".into();
    }
    if binary {
        return "not an llctop recording: binary data, not JSON Lines".into();
    }
    format!("not an llctop recording: its first line is not JSON ({err})")
}

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

/// Read a whole recording from `reader` (`path` names it in errors).
pub fn parse(path: &Path, reader: impl BufRead + Send + 'static) -> Result<Recording, RecordError> {
    collect(Stream::new(path, Box::new(reader), MAX_TOTAL)?)
}

/// Every line of `stream`, kept.
fn collect(mut stream: Stream) -> Result<Recording, RecordError> {
    let mut rec = Recording::of(stream.header.clone(), Vec::new());
    let mut knob_values = None;
    for line in &mut stream {
        match line? {
            Line::Snapshot(s) => rec.snapshots.push(s),
            Line::Knob(k) => rec.knobs.push(k),
            Line::Marker(m) => rec.markers.push(m),
            Line::Experiment(e) => rec.experiment = Some(e),
            Line::Window(w) => rec.windows.push(w),
            Line::Verdict(v) => rec.verdict = Some(v),
            Line::KnobValues(k) => knob_values = Some(k),
            Line::Finding(f) => rec.findings.push(*f),
            Line::Unknown => {}
        }
    }
    if let Some(k) = knob_values.filter(|_| rec.header.knobs.is_empty()) {
        rec.header.knobs = k;
    }
    rec.skipped_lines = stream.skipped_lines();
    rec.truncated = stream.truncated;
    Ok(rec)
}

impl Stream {
    /// Open `path` and read its header; at most `max_total` bytes are read decompressed.
    pub fn open(path: &Path, max_total: u64) -> Result<Stream, RecordError> {
        Stream::new(path, file_reader(path)?, max_total)
    }

    pub fn new(
        path: &Path,
        reader: Box<dyn BufRead + Send>,
        max_total: u64,
    ) -> Result<Stream, RecordError> {
        let mut s = Stream {
            path: path.to_path_buf(),
            reader: reader.take(max_total),
            header: Header::default(),
            line_no: 0,
            buf: Vec::new(),
            order: Order::default(),
            truncated: false,
            done: false,
        };
        // Binary data is told at once, by its first bytes (a Perfetto trace begins with a
        // newline byte: its first field's tag).
        let head = s
            .reader
            .fill_buf()
            .map(|b| b[..b.len().min(256)].to_vec())
            .unwrap_or_default();
        if head.contains(&0) || std::str::from_utf8(&head).is_err_and(|e| e.error_len().is_some()) {
            return Err(s.fmt(not_a_recording(&head, "")));
        }
        let first = match s.read_line()? {
            Some(()) => std::mem::take(&mut s.buf),
            None => return Err(s.fmt("empty file: no header line".into())),
        };
        let value: serde_json::Value = serde_json::from_slice(&first)
            .map_err(|e| s.fmt(not_a_recording(&first, &e.to_string())))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(s.fmt(format!(
                "not an llctop recording: its first line is JSON but not an {FORMAT} header (llctop record, ab -o and the TUI's r write recordings)"
            )));
        }
        let version = match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v >= 1 => v,
            _ => {
                return Err(s.fmt(format!(
                    "line 1: \"version\" must be a whole number from 1, found {}",
                    value
                        .get("version")
                        .map_or("none".into(), |v| v.to_string())
                )));
            }
        };
        if version > VERSION as u64 {
            return Err(s.fmt(format!(
                "recording format version {version}; this llctop reads versions 1 to {VERSION}: upgrade llctop"
            )));
        }
        s.header = serde_json::from_value(value).map_err(|e| s.fmt(format!("line 1: {e}")))?;
        Ok(s)
    }

    /// Lines of unknown types skipped so far.
    pub fn skipped_lines(&self) -> u64 {
        self.order.skipped
    }

    fn fmt(&self, detail: String) -> RecordError {
        RecordError::Format {
            path: self.path.clone(),
            detail,
        }
    }

    /// The next complete line that is not blank into `buf` (without its newline); `None`
    /// at the end (a last line cut off sets `truncated`). Blank lines count against
    /// [`MAX_BLANK`].
    pub(super) fn read_line(&mut self) -> Result<Option<()>, RecordError> {
        loop {
            let got = self.read_any_line()?;
            if got.is_none() || !self.buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(got);
            }
            let n = self.line_no;
            self.order.blank_line(n).map_err(|d| {
                self.done = true;
                self.fmt(d)
            })?;
        }
    }

    fn read_any_line(&mut self) -> Result<Option<()>, RecordError> {
        if self.done {
            return Ok(None);
        }
        // A stop signal (or an MCP client gone) ends a long read within a line.
        if crate::signals::requested() {
            self.done = true;
            return Err(self.fmt("stopped by a signal while reading".into()));
        }
        self.buf.clear();
        let reader = &mut self.reader;
        match reader.take(MAX_LINE + 1).read_until(b'\n', &mut self.buf) {
            Ok(0) => {
                self.done = true;
                Ok(None)
            }
            Ok(_) => {
                self.line_no += 1;
                if self.buf.len() as u64 > MAX_LINE {
                    return Err(self.fmt(format!(
                        "line {} is longer than {} MiB: not an llctop recording",
                        self.line_no,
                        MAX_LINE >> 20
                    )));
                }
                if self.buf.last() == Some(&b'\n') {
                    self.buf.pop();
                    return Ok(Some(()));
                }
                self.done = true;
                if self.reader.limit() == 0 {
                    return Err(self.fmt(format!(
                        "larger than {} GiB decompressed: not read",
                        self.reader.limit().max(MAX_TOTAL) >> 30
                    )));
                }
                // The last line without its newline: whole if it parses.
                if serde_json::from_slice::<serde::de::IgnoredAny>(&self.buf).is_ok() {
                    Ok(Some(()))
                } else {
                    self.truncated = true;
                    Ok(None)
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::UnexpectedEof
                    || e.kind() == std::io::ErrorKind::InvalidInput =>
            {
                self.truncated = true; // gzip stream cut off
                self.done = true;
                Ok(None)
            }
            Err(e) => Err(RecordError::Io {
                path: self.path.clone(),
                source: e,
            }),
        }
    }

    /// The next line after the header, parsed and checked; `None` at the end. Blank lines
    /// and lines of unknown types are skipped (the latter counted).
    fn next_line(&mut self) -> Result<Option<Line<Snapshot, KnobEvent, Marker>>, RecordError> {
        loop {
            if self.read_line()?.is_none() {
                return Ok(None);
            }
            let Some(line) = parse_line(&self.path, self.line_no, &self.buf)? else {
                continue;
            };
            if let Some(line) =
                in_order(&mut self.order, self.line_no, line).map_err(|d| self.fmt(d))?
            {
                return Ok(Some(line));
            }
        }
    }
}

/// Parse one line of a recording (line `n` of `path`, for errors): `None` for a blank
/// line. Snapshot lines go straight into a [`Snapshot`] and are validated.
pub(super) fn parse_line(
    path: &Path,
    n: usize,
    buf: &[u8],
) -> Result<Option<Line<Snapshot, KnobEvent, Marker>>, RecordError> {
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let fmt = |detail: String| RecordError::Format {
        path: path.to_path_buf(),
        detail,
    };
    let gz_hint = if path.extension().is_some_and(|e| e == "gz") {
        " (if this gzip file was damaged, its data may be corrupt)"
    } else {
        ""
    };
    let parsed = if buf.starts_with(SNAPSHOT_PREFIX) {
        serde_json::from_slice::<Snapshot>(buf).map(Line::Snapshot)
    } else {
        serde_json::from_slice::<Line<Snapshot, KnobEvent, Marker>>(buf)
    };
    let line = parsed.map_err(|e| fmt(format!("line {n}: {e}{gz_hint}")))?;
    if let Line::Snapshot(s) = &line {
        validate(s).map_err(|e| fmt(format!("line {n}: {e}")))?;
    }
    Ok(Some(line))
}

impl Iterator for Stream {
    type Item = Result<Line<Snapshot, KnobEvent, Marker>, RecordError>;

    /// The next line; after an error, none.
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_line() {
            Ok(l) => l.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording's text: header, `n` snapshots (a marker after the second, a line of
    /// an unknown type after the third, a blank line), then `tail` as the last line.
    fn text(n: u64, tail: &str) -> Vec<u8> {
        let topo = crate::topology::synthetic(1, 2, 2);
        let header = Header::new(
            (None, None),
            std::time::Duration::from_secs(1),
            topo.clone(),
            Vec::new(),
        );
        let mut out = serde_json::to_string(&header).unwrap() + "\n";
        for seq in 0..n {
            let mut s = crate::collect::empty_snapshot(&topo);
            s.seq = seq;
            s.time.interval_ns = 1_000_000_000;
            s.time.mono_ns = (seq + 1) * 1_000_000_000;
            out += &serde_json::to_string(&Line::<_, &KnobEvent, &Marker>::Snapshot(&s)).unwrap();
            out += "\n";
            if seq == 1 {
                out += r#"{"type":"marker","after_seq":1,"unix_ns":5,"mono_ns":2500000000,"label":"here"}"#;
                out += "\n";
            }
            if seq == 2 {
                out += "{\"type\":\"from_the_future\",\"x\":1}\n\n";
            }
        }
        out += tail;
        out.into_bytes()
    }

    fn stream(bytes: Vec<u8>) -> Stream {
        Stream::new(
            Path::new("t.jsonl"),
            Box::new(std::io::Cursor::new(bytes)),
            MAX_TOTAL,
        )
        .unwrap()
    }

    /// (snapshot seqs and marker labels in order, truncated, skipped) or the error.
    fn summary(
        lines: impl Iterator<Item = Result<Line<Snapshot, KnobEvent, Marker>, RecordError>>,
    ) -> Result<Vec<String>, String> {
        lines
            .map(|l| match l.map_err(|e| e.to_string())? {
                Line::Snapshot(s) => Ok(format!("#{}", s.seq)),
                Line::Marker(m) => Ok(m.label),
                _ => Ok("other".into()),
            })
            .collect()
    }

    #[test]
    fn the_parallel_reader_gives_the_lines_and_verdicts_of_the_plain_one() {
        let cut = r#"{"type":"snapshot","seq":99,"#; // a last line cut off
        for (bytes, workers) in [
            (text(40, ""), 1),
            (text(40, ""), 3),
            (text(40, cut), 2),
            (text(5, ""), 4),
        ] {
            let mut plain = stream(bytes.clone());
            let a = summary(&mut plain);
            let mut par = stream(bytes).parallel(workers);
            let b = summary(&mut par);
            assert_eq!(a, b);
            assert_eq!(
                (plain.truncated, plain.skipped_lines()),
                (par.truncated(), par.skipped_lines())
            );
            let a = a.unwrap();
            assert_eq!(a[..4], ["#0", "#1", "here", "#2"]);
            assert_eq!(plain.skipped_lines(), 1);
        }
        assert!(stream(text(40, cut)).parallel(2).by_ref().count() > 0);
        let mut p = stream(text(40, cut)).parallel(2);
        for _ in &mut p {}
        assert!(p.truncated(), "the cut line is noticed");
    }

    #[test]
    fn the_parallel_reader_stops_at_the_first_bad_line_as_the_plain_one_does() {
        let repeated = r#"{"type":"snapshot","seq":3,"#.to_string();
        let mut bytes = text(10, "");
        // Snapshot #3 again (out of order), then a line that is not JSON.
        let third = String::from_utf8(bytes.clone()).unwrap();
        let line3 = third
            .lines()
            .find(|l| l.starts_with(&repeated))
            .unwrap()
            .to_string();
        bytes.extend(format!("{line3}\nnot json\n").into_bytes());
        let a = summary(stream(bytes.clone()));
        let b = summary(stream(bytes).parallel(3));
        assert_eq!(a, b);
        assert!(a.unwrap_err().contains("snapshot #3 after #9"));
        let mut bad = text(10, "");
        bad.extend(b"not json\n");
        let a = summary(stream(bad.clone()));
        let b = summary(stream(bad).parallel(2));
        assert_eq!(a, b);
        assert!(
            a.unwrap_err().contains("line 15"),
            "after the header, 10 snapshots, a marker, an unknown line and a blank one"
        );
    }
}
