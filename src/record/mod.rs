//! Recordings: JSON Lines files of snapshots (docs/recording-format.md).
//!
//! Line 1 is a [`Header`] (`"format":"llctop-recording"`); every later line is an object
//! with a `"type"`: `"snapshot"` (a [`Snapshot`], exactly the drawn one), and later
//! `"knob"` and `"marker"`. Each line is flushed as it is written, so a killed recording is
//! valid up to its last complete line. Names ending in `.gz` are gzip-compressed (each
//! line is a sync-flushed deflate block, readable up to the point of a kill).

pub mod diff;
pub mod html;
mod l3;

pub mod parallel;
pub mod reader;
pub mod report;
mod sched;
pub mod series;
pub mod summary;
pub mod tables;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

use crate::experiment::verdict::Verdict;
use crate::experiment::{Experiment, Window};
use crate::findings::advisor::FindingLine;
use crate::knobs::session::KnobEvent;
use crate::snapshot::{Snapshot, SourceStatus};
use crate::topology::Topology;

use crate::output::{self, Committed, Output};
pub use reader::Recording;

pub const FORMAT: &str = "llctop-recording";
/// Current format version. Readers accept this and every older version.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub llctop_version: String,
    pub host: Option<String>,
    pub kernel: Option<String>,
    /// Wall clock when recording started, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Requested interval between snapshots, ns.
    pub interval_ns: u64,
    pub topology: Topology,
    /// Source states at the start (each snapshot carries its own too).
    pub sources: Vec<SourceStatus>,
    /// The command line that made the recording.
    #[serde(default)]
    pub command: Vec<String>,
    /// Every knob's value when recording started (`llctop diff` compares them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, String>,
    /// The kernel's boot id (/proc/sys/kernel/random/boot_id): recordings of one boot
    /// share it (their CLOCK_MONOTONIC times go on from each other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

impl Header {
    /// The header of a recording starting now: this llctop, `host` and `kernel` (see
    /// [`host_and_kernel`]), the requested interval, the topology, the source states so
    /// far, and this process's command line.
    pub fn new(
        (host, kernel): (Option<String>, Option<String>),
        interval: std::time::Duration,
        topology: Topology,
        sources: Vec<SourceStatus>,
    ) -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            llctop_version: env!("CARGO_PKG_VERSION").into(),
            host,
            kernel,
            start_unix_ns: crate::clock::unix_ns(),
            interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            topology,
            sources,
            command: std::env::args().collect(),
            knobs: BTreeMap::new(),
            boot_id: None,
        }
    }

    /// With this boot's id, read under `root`.
    pub fn with_boot_id(mut self, root: &crate::kroot::KernelRoot) -> Header {
        self.boot_id = root
            .read_trimmed("/proc/sys/kernel/random/boot_id")
            .ok()
            .filter(|b| b.len() <= 64);
        self
    }

    /// With the knob values of `registry` (those it could read).
    pub fn with_knobs(mut self, registry: &crate::knobs::Registry) -> Header {
        self.knobs = Self::knob_values(registry);
        self
    }

    /// Every knob's value `registry` could read, by id.
    pub fn knob_values(registry: &crate::knobs::Registry) -> BTreeMap<String, String> {
        registry
            .knobs
            .iter()
            .filter_map(|k| Some((k.id.clone(), k.value.clone()?)))
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: {detail}", path.display())]
    Format { path: PathBuf, detail: String },
}

enum Sink {
    Plain(BufWriter<Output>),
    /// Boxed: the zlib-rs encoder's state is large.
    Gz(Box<GzEncoder<BufWriter<Output>>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gz(w) => w,
        }
    }

    fn output(&mut self) -> &mut Output {
        match self {
            Sink::Plain(w) => w.get_mut(),
            Sink::Gz(w) => w.get_mut().get_mut(),
        }
    }
}

/// Every line after the header: its `"type"` names the variant, the rest are the
/// variant's fields. Written borrowed (`Line<&Snapshot, …>`), read owned; a type this
/// llctop does not know (a newer minor addition) reads as `Unknown`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line<S, K, M> {
    Snapshot(S),
    Knob(K),
    Marker(M),
    /// An `llctop ab` run: what it compares (after the header).
    Experiment(Experiment),
    /// One measured window of it.
    Window(Window),
    /// Its verdict (at the end).
    Verdict(Verdict),
    /// The knob values when recording started, where the header could not hold them
    /// (`llctop record` reads them during its first interval).
    KnobValues(BTreeMap<String, String>),
    /// A finding fired or cleared (findings::advisor), after the snapshot judged.
    Finding(Box<FindingLine>),
    #[serde(other)]
    Unknown,
}

/// A marker the operator dropped into a recording (`"type":"marker"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// `seq` of the last snapshot written before the marker.
    pub after_seq: Option<u64>,
    pub unix_ns: u64,
    pub mono_ns: u64,
    pub label: String,
}

/// Writes a recording line by line, flushing each line.
pub struct Writer {
    path: PathBuf,
    sink: Option<Sink>,
}

impl Writer {
    /// A recording at `path` that no reader can hold up for more than 10 s (the TUI's):
    /// a FIFO with no reader is refused at once.
    pub fn create(path: &Path, header: &Header) -> Result<Self, RecordError> {
        let wait = output::Wait {
            stall: Some(std::time::Duration::from_secs(10)),
            ..output::Wait::default()
        };
        let file = Output::create(path, &[], wait).map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::over(file, header)
    }

    /// A recording written to `out`, opened already.
    pub fn over(out: Output, header: &Header) -> Result<Self, RecordError> {
        let path = out.path().to_path_buf();
        let path = path.as_path();
        let buf = BufWriter::new(out);
        let gz = path.extension().is_some_and(|e| e == "gz");
        let sink = if gz {
            Sink::Gz(Box::new(GzEncoder::new(buf, Compression::default())))
        } else {
            Sink::Plain(buf)
        };
        let mut w = Writer {
            path: path.to_path_buf(),
            sink: Some(sink),
        };
        w.write_json(header)?;
        Ok(w)
    }

    /// A snapshot line. From the first, the recording is worth keeping: however the run
    /// ends, the file is committed (output.rs), not discarded.
    pub fn write_snapshot(&mut self, snap: &Snapshot) -> Result<(), RecordError> {
        self.write_json(&Line::<_, &KnobEvent, &Marker>::Snapshot(snap))?;
        if let Some(s) = self.sink.as_mut() {
            s.output().keep();
        }
        Ok(())
    }

    /// A knob change (`"type":"knob"`), written when it happens.
    pub fn write_knob(&mut self, ev: &KnobEvent) -> Result<(), RecordError> {
        self.write_json(&Line::<&Snapshot, _, &Marker>::Knob(ev))
    }

    /// One of an experiment's lines (`experiment`, `window`, `verdict`).
    pub fn write_experiment_line(
        &mut self,
        line: Line<&Snapshot, &KnobEvent, &Marker>,
    ) -> Result<(), RecordError> {
        self.write_json(&line)
    }

    /// A finding's line (`"type":"finding"`): fired or cleared.
    pub fn write_finding(&mut self, l: &FindingLine) -> Result<(), RecordError> {
        self.write_json(&Line::<&Snapshot, &KnobEvent, &Marker>::Finding(Box::new(
            l.clone(),
        )))
    }

    /// A marker (`"type":"marker"`), written when the operator drops it.
    pub fn write_marker(&mut self, m: &Marker) -> Result<(), RecordError> {
        self.write_json(&Line::<&Snapshot, &KnobEvent, _>::Marker(m))
    }

    fn write_json<T: Serialize>(&mut self, v: &T) -> Result<(), RecordError> {
        let io_err = |path: &Path, source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = serde_json::to_vec(v).map_err(|e| RecordError::Format {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        text.push(b'\n');
        let Some(sink) = self.sink.as_mut() else {
            return Err(io_err(
                &self.path,
                io::Error::other("recording already finished"),
            ));
        };
        let w = sink.writer();
        w.write_all(&text).map_err(|e| io_err(&self.path, e))?;
        w.flush().map_err(|e| io_err(&self.path, e))?;
        Ok(())
    }

    /// Finish the file (writes the gzip trailer) and commit it: it takes its name (an
    /// existing file there is kept as `.old`, said in what is returned).
    pub fn finish(mut self) -> Result<Committed, RecordError> {
        let path = self.path.clone();
        let out = self.close()?;
        match out {
            Some(o) => o
                .commit()
                .map_err(|source| RecordError::Io { path, source }),
            None => Ok(Committed::default()),
        }
    }

    /// The stream ended (gzip trailer written, buffers flushed): the output, not yet
    /// committed.
    fn close(&mut self) -> Result<Option<Output>, RecordError> {
        let path = self.path.clone();
        let res = match self.sink.take() {
            Some(Sink::Plain(w)) => w.into_inner().map_err(|e| e.into_error()),
            Some(Sink::Gz(w)) => w
                .finish()
                .and_then(|b| b.into_inner().map_err(|e| e.into_error())),
            None => return Ok(None),
        };
        res.map(Some)
            .map_err(|source| RecordError::Io { path, source })
    }
}

impl Drop for Writer {
    /// Ended without [`Writer::finish`] (an error, a panic): the stream is closed whole; the
    /// file is committed if it holds a snapshot, else discarded (output.rs).
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Host name and kernel release through the kernel root (None in a fixture without them).
pub fn host_and_kernel(root: &crate::kroot::KernelRoot) -> (Option<String>, Option<String>) {
    let host = root.read_trimmed("/proc/sys/kernel/hostname").ok();
    let kernel = root.read_trimmed("/proc/sys/kernel/osrelease").ok();
    (host, kernel)
}

/// A header for other modules' tests.
#[cfg(test)]
pub(crate) fn tests_header() -> Header {
    tests::header()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Migrations, Precision, SourceStatus};

    pub fn header() -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            llctop_version: "test".into(),
            host: Some("h".into()),
            kernel: Some("6.18".into()),
            start_unix_ns: 1,
            interval_ns: 1_000_000_000,
            topology: crate::topology::tests::sample(),
            sources: vec![SourceStatus::active(
                crate::snapshot::SourceName::ProcfsStat,
            )],
            command: vec![],
            knobs: BTreeMap::new(),
            boot_id: None,
        }
    }

    fn snap(seq: u64) -> Snapshot {
        let mut s = crate::collect::empty_snapshot(&crate::topology::tests::sample());
        s.seq = seq;
        s.cpus[1].busy = Some(0.25);
        s.migrations = Some(Migrations {
            precision: Precision::Sampled,
            llc_matrix: vec![vec![1, 2], vec![3, 4]],
            ..Migrations::default()
        });
        crate::collect::aggregate(&crate::topology::tests::sample(), &mut s);
        s
    }

    #[test]
    fn round_trips_plain_and_gzip() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.jsonl", "a.jsonl.gz"] {
            let p = dir.path().join(name);
            let mut w = Writer::create(&p, &header()).unwrap();
            w.write_snapshot(&snap(0)).unwrap();
            w.write_snapshot(&snap(1)).unwrap();
            w.finish().unwrap();
            let r = reader::open(&p).unwrap();
            assert_eq!(r.header, header());
            assert_eq!(
                r.snapshots,
                vec![snap(0), snap(1)],
                "{name}: what is read is what was drawn"
            );
            assert!(!r.truncated);
        }
    }

    #[test]
    fn tolerates_a_cut_line_and_unknown_types_refuses_newer_versions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cut.jsonl");
        let mut w = Writer::create(&p, &header()).unwrap();
        w.write_snapshot(&snap(0)).unwrap();
        let marker = Marker {
            after_seq: Some(0),
            unix_ns: 5,
            mono_ns: 6,
            label: "before the change".into(),
        };
        w.write_marker(&marker).unwrap();
        w.finish().unwrap();
        assert_eq!(reader::open(&p).unwrap().markers, vec![marker]);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str(
            "{\"type\":\"from_the_future\",\"label\":\"x\"}\n{\"type\":\"snapshot\",\"seq\":1,\"ti",
        );
        std::fs::write(&p, &text).unwrap();
        let r = reader::open(&p).unwrap();
        assert_eq!(
            (r.snapshots.len(), r.skipped_lines, r.truncated),
            (1, 1, true)
        );

        let newer = text.replacen("\"version\":1", "\"version\":99", 1);
        std::fs::write(&p, newer).unwrap();
        let e = reader::open(&p).unwrap_err().to_string();
        assert!(e.contains("version 99") && e.contains("cut.jsonl"), "{e}");

        std::fs::write(&p, "{\"hello\":1}\n").unwrap();
        assert!(
            reader::open(&p)
                .unwrap_err()
                .to_string()
                .contains("not an llctop-recording header")
        );
        std::fs::write(&p, "").unwrap();
        assert!(
            reader::open(&p)
                .unwrap_err()
                .to_string()
                .contains("empty file")
        );
    }
}
