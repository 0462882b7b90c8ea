//! The flight recorder (`llctop serve --flight-recorder DIR`): the last `--keep` of
//! snapshots — with their detail events, the knob events and the findings as they fire and
//! clear — kept on disk in compressed, self-contained segments, never more than
//! `--max-size`, oldest dropped first; and a dump of that history — one ordinary recording
//! that `report`, `replay`, `diff` and `export` read — on request (SIGUSR1, `POST
//! /flight-recorder/dump`) and by itself a while after a WARNING or CRITICAL finding fires.
//!
//! A segment ([`segment`]) is two gzip members: the recording's header (the knob values at
//! its start) and its lines. It is written under a hidden name (`.seg-N.part`) and
//! renamed to `seg-N-FIRST-LAST.jsonl.gz` only once finished and synced, so a segment on
//! disk is whole and a SIGKILL or a power cut loses at most the one being written; a start
//! drops a part left behind, and a segment that does not decompress whole, each with a
//! message. A dump is the first segment's header member and every segment's lines member,
//! copied as they are (no recompression): the segments of this boot, in order, with the
//! snapshot numbers going on across restarts of llctop. Dumps go to `DIR/dumps/`, the
//! newest [`KEEP_DUMPS`] kept. Every file is made in llctop's own directory without
//! following a link ([`dir`]).
//!
//! The recorder never stops what it serves: a write that fails ends the segment being
//! written, says why once (its [`State`]) and tries again with the next one; a full disk
//! is its own state.

pub mod dir;
pub mod segment;

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Read as _, Seek as _, Write};
use std::path::PathBuf;
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Deserialize;

use crate::findings::Severity;
use crate::findings::advisor::State as Fired;
use crate::knobs::session::KnobEvent;
use crate::parse::{parse_duration, parse_duration_or_zero, parse_size};
use crate::record::{Header, Line, Marker};
use crate::run::pipeline::Tick;
use crate::snapshot::Snapshot;
use crate::text::Esc;
use dir::Dir;
use segment::Kept;

/// Dumps kept in `DIR/dumps/` (the oldest removed past it).
pub const KEEP_DUMPS: usize = 16;
/// The most a segment's header may be, decompressed.
const MAX_HEADER: u64 = 16 << 20;
/// The most a segment may hold, decompressed (checked when a start reads it).
const MAX_LINES: u64 = 16 << 30;

/// The command line's options (`serve`); each, when not given, from the config file's
/// `[flight_recorder]` table, else its default.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Plan {
    /// Keep the last --keep of snapshots, detail events and findings in DIR (made 0700;
    /// segments, and dumps in DIR/dumps): dumped on SIGUSR1, POST /flight-recorder/dump,
    /// and after a WARNING or CRITICAL finding fires.
    #[arg(long = "flight-recorder", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// How much history to keep [default: 30m].
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub keep: Option<Duration>,
    /// The most the kept history may take on disk [default: 256MiB].
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub max_size: Option<u64>,
    /// How long after a WARNING or CRITICAL finding fires its automatic dump is written
    /// (the history after it too) [default: 30s].
    #[arg(long, value_parser = parse_duration_or_zero, value_name = "DURATION")]
    pub dump_after: Option<Duration>,
    /// Automatic dumps at most this many per hour (0: none) [default: 4].
    #[arg(long, value_name = "N")]
    pub auto_dumps_per_hour: Option<u32>,
}

/// The config file's `[flight_recorder]` table: the same settings as the options.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dump_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_dumps_per_hour: Option<u32>,
}

/// The recorder's settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub dir: PathBuf,
    pub keep: Duration,
    pub max_size: u64,
    pub dump_after: Duration,
    pub auto_per_hour: u32,
}

impl Plan {
    /// The settings: the command line's, else the file's (`[flight_recorder]`), else the
    /// defaults; `None` when neither names a directory.
    pub fn resolve(&self, file: &Section) -> Result<Option<Settings>, String> {
        let Some(dir) = self.dir.clone().or_else(|| file.dir.clone()) else {
            let given = self.keep.is_some()
                || self.max_size.is_some()
                || self.dump_after.is_some()
                || self.auto_dumps_per_hour.is_some();
            return if given {
                Err("--keep, --max-size, --dump-after and --auto-dumps-per-hour are the flight recorder's: they need --flight-recorder DIR (or [flight_recorder] dir)".into())
            } else {
                Ok(None)
            };
        };
        let key = |k: &str, e: String| format!("[flight_recorder] {k}: {e}");
        let keep = match (self.keep, &file.keep) {
            (Some(k), _) => k,
            (None, Some(s)) => parse_duration(s).map_err(|e| key("keep", e))?,
            (None, None) => Duration::from_secs(1800),
        };
        let max_size = match (self.max_size, &file.max_size) {
            (Some(m), _) => m,
            (None, Some(s)) => parse_size(s).map_err(|e| key("max_size", e))?,
            (None, None) => 256 << 20,
        };
        if max_size < 256 << 10 {
            return Err(format!(
                "--max-size {max_size}: at least 256KiB (a segment may take 64 KiB)"
            ));
        }
        let dump_after = match (self.dump_after, &file.dump_after) {
            (Some(d), _) => d,
            (None, Some(s)) => parse_duration_or_zero(s).map_err(|e| key("dump_after", e))?,
            (None, None) => Duration::from_secs(30),
        };
        Ok(Some(Settings {
            dir,
            keep,
            max_size,
            dump_after,
            auto_per_hour: self
                .auto_dumps_per_hour
                .or(file.auto_dumps_per_hour)
                .unwrap_or(4),
        }))
    }
}

/// How the recorder is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Recording,
    /// The disk (or the file system's quota) is full: nothing is kept until it has room.
    DiskFull(String),
    /// Another write error; the next segment tries again.
    WriteError(String),
}

impl State {
    /// The `state` label.
    pub fn label(&self) -> &'static str {
        match self {
            State::Recording => "recording",
            State::DiskFull(_) => "disk_full",
            State::WriteError(_) => "write_error",
        }
    }

    pub const LABELS: [&'static str; 3] = ["recording", "disk_full", "write_error"];

    fn of(e: &io::Error, what: &str) -> State {
        let text = format!("{what}: {e}");
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => State::DiskFull(text),
            _ => State::WriteError(text),
        }
    }
}

/// What the recorder reports on itself (the exporter's series, `/healthz`).
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Bytes on disk: the kept segments and the one being written.
    pub bytes: u64,
    pub segments: usize,
    /// Seconds from the first kept snapshot's end to now (0: none kept).
    pub oldest_seconds: f64,
    pub dumps: BTreeMap<String, u64>,
    pub state: State,
}

/// A file's bytes counted as they are written.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The segment being written.
struct Current {
    n: u64,
    out: GzEncoder<Counting<BufWriter<File>>>,
    first_s: u64,
    last_s: u64,
    /// CLOCK_MONOTONIC at the start of its first interval.
    first_mono: u64,
}

impl Current {
    fn bytes(&self) -> u64 {
        self.out.get_ref().bytes
    }
}

/// The flight recorder of one `serve` run.
pub struct Recorder {
    dir: Dir,
    s: Settings,
    /// The run's header; each segment's carries the knob values at its start.
    header: Header,
    kept: Vec<Kept>,
    next_n: u64,
    cur: Option<Current>,
    state: State,
    dumps: BTreeMap<String, u64>,
    /// CLOCK_MONOTONIC of the automatic dumps of the last hour.
    auto: VecDeque<u64>,
    /// An automatic dump due at (CLOCK_MONOTONIC ns), and why.
    pending: Option<(u64, String)>,
    interval_ns: u64,
    /// CLOCK_MONOTONIC and wall clock (ns) of the last snapshot written.
    last: Option<(u64, u64)>,
    /// The most bytes one tick has added on disk.
    burst: u64,
    /// A line being written (kept: its capacity is reused).
    line: Vec<u8>,
}

/// What a start found in the directory.
#[derive(Debug, Default)]
pub struct Found {
    /// The segments kept.
    pub segments: usize,
    /// What was dropped, and why (one message each).
    pub dropped: Vec<String>,
    /// The last snapshot number of this boot's newest segment: this run's go on after it.
    pub last_seq: Option<u64>,
}

/// `"type":"snapshot"`'s number, and the boot a header names.
#[derive(Deserialize)]
struct SeqOnly {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    seq: Option<u64>,
}

impl Recorder {
    /// The recorder over `s.dir` for a run whose header is `header` (its `boot_id`
    /// compared with the segments'): what the directory holds is read — a part left by a
    /// run that was killed and a segment that is not whole are dropped, each said in
    /// [`Found::dropped`].
    pub fn open(
        s: Settings,
        header: Header,
        interval: Duration,
    ) -> Result<(Recorder, Found), String> {
        let dir = Dir::own(&s.dir)?;
        dir.sub("dumps")?;
        let mut found = Found::default();
        let mut kept = Vec::new();
        let names = dir
            .list()
            .map_err(|e| format!("{}: {e}", s.dir.display()))?;
        let mut next_n = 0;
        for (name, bytes) in &names {
            let shown = s.dir.join(name).display().to_string();
            if let Some(n) = segment::parse_part(name) {
                next_n = next_n.max(n + 1);
                let _ = dir.remove(name);
                found.dropped.push(format!(
                    "{}: a segment being written when llctop stopped ({bytes} bytes): dropped",
                    Esc(&shown)
                ));
                continue;
            }
            let Some((n, first_s, last_s)) = segment::parse(name) else {
                continue;
            };
            next_n = next_n.max(n + 1);
            match dir
                .open(name)
                .and_then(|f| segment::check(f, MAX_LINES, |_| ()))
            {
                Ok(_) => kept.push(Kept {
                    n,
                    first_s,
                    last_s,
                    bytes: *bytes,
                }),
                Err(e) => {
                    let _ = dir.remove(name);
                    found
                        .dropped
                        .push(format!("{}: not whole ({e}): dropped", Esc(&shown)));
                }
            }
        }
        kept.sort();
        // The snapshot numbers go on from this boot's newest segment.
        if let Some(k) = kept.last()
            && let Ok(f) = dir.open(&segment::name(k.n, k.first_s, k.last_s))
        {
            let (mut same_boot, mut first, mut last) = (false, true, None);
            let read = segment::check(f, MAX_LINES, |l| {
                if std::mem::take(&mut first) {
                    same_boot = serde_json::from_str::<Header>(l)
                        .is_ok_and(|h| h.boot_id == header.boot_id);
                } else if same_boot
                    && let Ok(s) = serde_json::from_str::<SeqOnly>(l)
                    && s.ty == "snapshot"
                {
                    last = s.seq.or(last);
                }
            });
            if read.is_ok() && same_boot {
                found.last_seq = last;
            }
        }
        found.segments = kept.len();
        Ok((
            Recorder {
                dir,
                s,
                header,
                kept,
                next_n,
                cur: None,
                state: State::Recording,
                dumps: BTreeMap::new(),
                auto: VecDeque::new(),
                pending: None,
                interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
                last: None,
                burst: 0,
                line: Vec::new(),
            },
            found,
        ))
    }

    /// The source states the run's baseline found (each segment's header keeps them).
    pub fn set_sources(&mut self, sources: &[crate::snapshot::SourceStatus]) {
        self.header.sources = sources.to_vec();
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir.path
    }

    pub fn settings(&self) -> &Settings {
        &self.s
    }

    pub fn status(&self) -> Status {
        let now_s = self.last.map_or(0, |l| l.1 / 1_000_000_000);
        let oldest = self
            .kept
            .first()
            .map(|k| k.first_s)
            .or(self.cur.as_ref().map(|c| c.first_s));
        Status {
            bytes: self.kept.iter().map(|k| k.bytes).sum::<u64>()
                + self.cur.as_ref().map_or(0, Current::bytes),
            segments: self.kept.len() + usize::from(self.cur.is_some()),
            oldest_seconds: oldest.map_or(0.0, |o| now_s.saturating_sub(o) as f64),
            dumps: self.dumps.clone(),
            state: self.state.clone(),
        }
    }

    /// The state now and, when it changed, the line to say.
    fn set_state(&mut self, s: State) -> Option<String> {
        if s == self.state {
            return None;
        }
        let line = match &s {
            State::Recording => "flight recorder: recording again".to_string(),
            State::DiskFull(e) => format!(
                "flight recorder: disk full, nothing kept until there is room ({})",
                Esc(e)
            ),
            State::WriteError(e) => {
                format!("flight recorder: {}: the next segment tries again", Esc(e))
            }
        };
        self.state = s;
        Some(line)
    }

    /// A new segment: its part file and the header member.
    fn begin(&mut self, t: &Tick) -> io::Result<Current> {
        let n = self.next_n;
        self.next_n += 1;
        let f = self.dir.create(&segment::part_name(n))?;
        self.begin_in(t, n, f).inspect_err(|_| {
            let _ = self.dir.remove(&segment::part_name(n));
        })
    }

    fn begin_in(&self, t: &Tick, n: u64, f: File) -> io::Result<Current> {
        let mut counting = Counting {
            inner: BufWriter::new(f),
            bytes: 0,
        };
        let mut h = self.header.clone();
        h.start_unix_ns = t.snap.time.unix_ns.saturating_sub(t.snap.time.interval_ns);
        let mut text = serde_json::to_vec(&h).map_err(io::Error::other)?;
        text.push(b'\n');
        let mut e = GzEncoder::new(&mut counting, Compression::default());
        e.write_all(&text)?;
        e.finish()?;
        let s = t.snap.time.unix_ns / 1_000_000_000;
        Ok(Current {
            n,
            out: GzEncoder::new(counting, Compression::default()),
            first_s: s,
            last_s: s,
            first_mono: t.snap.time.mono_ns.saturating_sub(t.snap.time.interval_ns),
        })
    }

    /// The segment being written finished, synced and given its name.
    fn seal(&mut self) -> io::Result<()> {
        let Some(c) = self.cur.take() else {
            return Ok(());
        };
        let part = segment::part_name(c.n);
        let res = (|| {
            let counting = c.out.finish()?;
            let bytes = counting.bytes;
            let f = counting.inner.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            let name = segment::name(c.n, c.first_s, c.last_s);
            self.dir.rename(&part, &name)?;
            self.kept.push(Kept {
                n: c.n,
                first_s: c.first_s,
                last_s: c.last_s,
                bytes,
            });
            Ok(())
        })();
        if res.is_err() {
            let _ = self.dir.remove(&part);
        }
        res
    }

    /// The oldest segments removed past `--keep` and past `--max-size` less `room`.
    fn prune(&mut self, now_s: u64, room: u64) {
        let extra = self.cur.as_ref().map_or(0, Current::bytes) + room;
        let drop = segment::to_drop(
            &self.kept,
            now_s,
            self.s.keep.as_secs(),
            self.s.max_size,
            extra,
        );
        for n in drop {
            if let Some(i) = self.kept.iter().position(|k| k.n == n) {
                let k = self.kept.remove(i);
                let _ = self.dir.remove(&segment::name(k.n, k.first_s, k.last_s));
            }
        }
    }

    /// One tick's lines into the segment being written (a new one started when none is),
    /// the segment sealed when it spans its share of `--keep` or of `--max-size`, the
    /// oldest dropped; an automatic dump noted or, when due, written. What it has to say
    /// (a state changed, a dump written) comes back as lines for the log.
    pub fn tick(&mut self, t: &Tick) -> Vec<String> {
        let mut say = Vec::new();
        if let Some(v) = &t.knobs.values {
            self.header.knobs.clone_from(v);
        }
        self.last = Some((t.snap.time.mono_ns, t.snap.time.unix_ns));
        // Room first for what this tick may add (the most a tick has added so far: the
        // compressor's output comes in bursts), so the directory never passes the cap.
        let now_s = t.snap.time.unix_ns / 1_000_000_000;
        self.prune(now_s, self.burst);
        let before = self.status().bytes;
        let res = self.write(t);
        self.burst = self.burst.max(self.status().bytes.saturating_sub(before));
        let state = match res {
            Ok(()) => State::Recording,
            Err(e) => {
                if let Some(c) = self.cur.take() {
                    let n = c.n;
                    drop(c);
                    let _ = self.dir.remove(&segment::part_name(n));
                }
                let s = State::of(&e, "writing a segment");
                // A ring: with the disk full, the oldest history makes room for the newest.
                if matches!(s, State::DiskFull(_)) && !self.kept.is_empty() {
                    let k = self.kept.remove(0);
                    let _ = self.dir.remove(&segment::name(k.n, k.first_s, k.last_s));
                }
                s
            }
        };
        say.extend(self.set_state(state));
        self.prune(now_s, 0);
        say.extend(self.auto_dump(t));
        say
    }

    fn write(&mut self, t: &Tick) -> io::Result<()> {
        if self.cur.is_none() {
            self.cur = Some(self.begin(t)?);
        }
        let Some(c) = self.cur.as_mut() else {
            return Ok(());
        };
        // Each line serialized whole, then compressed in one call: serde's many small
        // writes straight into the encoder cost a pass over its 32 KiB output buffer
        // each (a third of serve's CPU at 1 s intervals, in memset).
        let buf = &mut self.line;
        let mut line = |v: &Line<&Snapshot, &KnobEvent, &Marker>| -> io::Result<()> {
            buf.clear();
            serde_json::to_writer(&mut *buf, v).map_err(io::Error::other)?;
            buf.push(b'\n');
            c.out.write_all(buf)
        };
        line(&Line::Snapshot(&t.snap))?;
        for ev in &t.knobs.events {
            line(&Line::Knob(ev))?;
        }
        for l in &t.lines {
            line(&Line::Finding(Box::new(l.clone())))?;
        }
        c.last_s = t.snap.time.unix_ns / 1_000_000_000;
        let span = segment::span_ns(
            u64::try_from(self.s.keep.as_nanos()).unwrap_or(u64::MAX),
            self.interval_ns,
        );
        // Sealed once it spans its share (the next tick would pass it) or its size.
        let full = t.snap.time.mono_ns.saturating_sub(c.first_mono) + self.interval_ns > span
            || c.bytes() >= segment::max_segment_bytes(self.s.max_size);
        if full {
            self.seal()?;
        }
        Ok(())
    }

    /// An automatic dump: noted when a WARNING or CRITICAL finding fires (at most
    /// `auto_per_hour` an hour; one pending at a time), written once `--dump-after` has
    /// passed.
    fn auto_dump(&mut self, t: &Tick) -> Vec<String> {
        let now = t.snap.time.mono_ns;
        while self
            .auto
            .front()
            .is_some_and(|&a| now.saturating_sub(a) > 3_600_000_000_000)
        {
            self.auto.pop_front();
        }
        if self.pending.is_none()
            && (self.auto.len() as u32) < self.s.auto_per_hour
            && let Some(l) = t
                .lines
                .iter()
                .filter(|l| l.state == Fired::Fired && l.finding.severity >= Severity::Warning)
                .max_by_key(|l| l.finding.severity)
        {
            let why = format!(
                "{}-{}",
                l.finding.severity.label().to_ascii_lowercase(),
                l.finding.kind.label()
            );
            let after = u64::try_from(self.s.dump_after.as_nanos()).unwrap_or(u64::MAX);
            self.auto.push_back(now);
            self.pending = Some((now.saturating_add(after), why));
        }
        match &self.pending {
            Some((due, _)) if now >= *due => {}
            _ => return Vec::new(),
        }
        let Some((_, why)) = self.pending.take() else {
            return Vec::new();
        };
        match self.dump(&why) {
            Ok(p) => vec![format!(
                "flight recorder: {why}: dumped the history to {}",
                Esc(&p.display().to_string())
            )],
            Err(e) => vec![format!("flight recorder: {why}: no dump: {}", Esc(&e))],
        }
    }

    /// Dump the kept history now as one recording in `DIR/dumps/` (the segment being
    /// written finished first): its path. `reason` names it (`signal`, `http`,
    /// `warning-pile_up`, …).
    pub fn dump(&mut self, reason: &str) -> Result<PathBuf, String> {
        self.seal().map_err(|e| {
            let s = State::of(&e, "finishing a segment");
            let text = match &s {
                State::DiskFull(t) | State::WriteError(t) => t.clone(),
                State::Recording => String::new(),
            };
            self.state = s;
            text
        })?;
        let dumps = self.dir.sub("dumps")?;
        // This boot's segments, newest back to the first of another boot.
        let mut parts: Vec<(File, u64)> = Vec::new();
        let mut first_header: Option<Vec<u8>> = None;
        for k in self.kept.iter().rev() {
            let name = segment::name(k.n, k.first_s, k.last_s);
            let Ok(mut f) = self.dir.open(&name) else {
                continue;
            };
            let Ok((h, at)) = segment::header_member(io::BufReader::new(&f), MAX_HEADER) else {
                continue;
            };
            let Ok(header) = serde_json::from_str::<Header>(&h) else {
                continue;
            };
            if header.boot_id != self.header.boot_id || header.topology != self.header.topology {
                break;
            }
            let mut raw = vec![0u8; usize::try_from(at).unwrap_or(0)];
            if f.rewind().and_then(|()| f.read_exact(&mut raw)).is_err() {
                continue;
            }
            first_header = Some(raw);
            parts.push((f, at));
        }
        let Some(head) = first_header else {
            return Err("nothing kept yet".into());
        };
        parts.reverse();
        // Named by the end of the history it holds (its last snapshot).
        let stamp = crate::clock::utc_stamp(
            self.last.map_or_else(crate::clock::unix_ns, |l| l.1) / 1_000_000_000,
        );
        let safe: String = reason
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        let (tmp, name) = (
            format!(".dump-{stamp}-{safe}.part"),
            format!("dump-{stamp}-{safe}"),
        );
        let mut write = || -> io::Result<String> {
            let f = dumps.create(&tmp)?;
            let mut w = BufWriter::new(f);
            w.write_all(&head)?;
            for (f, at) in &mut parts {
                f.seek(io::SeekFrom::Start(*at))?;
                io::copy(f, &mut w)?;
            }
            let f = w.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            // A second dump in the same second gets its own name.
            let existing: Vec<String> = dumps.list()?.into_iter().map(|(n, _)| n).collect();
            let mut fin = format!("{name}.jsonl.gz");
            let mut i = 1;
            while existing.contains(&fin) {
                fin = format!("{name}-{i}.jsonl.gz");
                i += 1;
            }
            dumps.rename(&tmp, &fin)?;
            Ok(fin)
        };
        let fin = match write() {
            Ok(f) => f,
            Err(e) => {
                let _ = dumps.remove(&tmp);
                let s = State::of(&e, "writing a dump");
                if let State::DiskFull(_) = s {
                    self.state = s;
                }
                return Err(format!("{}: {e}", dumps.path.display()));
            }
        };
        *self
            .dumps
            .entry(reason.split('-').next().unwrap_or(reason).to_string())
            .or_default() += 1;
        // The newest KEEP_DUMPS kept.
        if let Ok(all) = dumps.list() {
            let mut ds: Vec<String> = all
                .into_iter()
                .map(|(n, _)| n)
                .filter(|n| n.starts_with("dump-"))
                .collect();
            ds.sort();
            let over = ds.len().saturating_sub(KEEP_DUMPS);
            for n in ds.into_iter().take(over) {
                let _ = dumps.remove(&n);
            }
        }
        Ok(dumps.path.join(fin))
    }

    /// At the end of the run: the segment being written finished (it is whole on disk).
    pub fn close(&mut self) -> Option<String> {
        self.seal()
            .err()
            .map(|e| format!("flight recorder: the last segment was not kept: {e}"))
    }
}

#[cfg(test)]
mod tests;
