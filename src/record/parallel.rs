//! A recording read by several threads: one reads (and gunzips) the lines, others parse
//! them, the caller takes them in file order with the order checks ([`Parallel`]).

use super::reader::{Order, Stream, in_order, parse_line};
use super::{Line, Marker, RecordError};
use crate::knobs::session::KnobEvent;
use crate::snapshot::Snapshot;

impl Stream {
    /// The lines, parsed by `workers` threads while another reads (and gunzips) the file
    /// and the caller's thread takes them in order: for reading a long recording in one
    /// pass on several CPUs. At most a few lines per worker are held at a time. The
    /// stream's `truncated` and `skipped_lines` are in the [`Parallel`] when it ends.
    pub fn parallel(mut self, workers: usize) -> Parallel {
        use std::sync::mpsc::sync_channel;
        let workers = workers.max(1);
        let path = self.path.clone();
        // The order checks go on from the lines already taken.
        let order = self.order;
        let mut to_workers = Vec::new();
        let mut from_workers = Vec::new();
        for _ in 0..workers {
            let (tx, rx) = sync_channel::<(usize, Vec<u8>)>(4);
            let (otx, orx) = sync_channel(4);
            let path = path.clone();
            std::thread::spawn(move || {
                for (n, buf) in rx {
                    if otx.send((n, parse_line(&path, n, &buf))).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(tx);
            from_workers.push(orx);
        }
        let reader = std::thread::spawn(move || {
            let mut i = 0;
            let mut failed = None;
            loop {
                match self.read_line() {
                    Ok(Some(())) => {
                        let buf = std::mem::take(&mut self.buf);
                        if to_workers[i % to_workers.len()]
                            .send((self.line_no, buf))
                            .is_err()
                        {
                            break;
                        }
                        i += 1;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            drop(to_workers);
            (self, failed)
        });
        Parallel {
            path,
            from_workers,
            reader: Some(reader),
            next: 0,
            order,
            truncated: false,
            done: false,
        }
    }
}

/// A [`Stream`] read by several threads ([`Stream::parallel`]): the lines in file order.
pub struct Parallel {
    path: std::path::PathBuf,
    from_workers: Vec<std::sync::mpsc::Receiver<(usize, ParsedLine)>>,
    reader: Option<std::thread::JoinHandle<(Stream, Option<RecordError>)>>,
    /// Index of the next line to take (round robin over the workers).
    next: usize,
    order: Order,
    truncated: bool,
    done: bool,
}

type ParsedLine = Result<Option<Line<Snapshot, KnobEvent, Marker>>, RecordError>;

impl Parallel {
    /// The file ended in the middle of a line or of the gzip stream (known at the end).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Lines of unknown types skipped.
    pub fn skipped_lines(&self) -> u64 {
        self.order.skipped
    }

    fn next_line(&mut self) -> Result<Option<Line<Snapshot, KnobEvent, Marker>>, RecordError> {
        loop {
            let w = self.next % self.from_workers.len();
            let Ok((n, parsed)) = self.from_workers[w].recv() else {
                // The worker ended: the reader has read everything it will.
                let (stream, failed) =
                    self.reader
                        .take()
                        .and_then(|r| r.join().ok())
                        .ok_or_else(|| RecordError::Format {
                            path: self.path.clone(),
                            detail: "the reading thread ended unexpectedly".into(),
                        })?;
                self.truncated = stream.truncated;
                return match failed {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            };
            self.next += 1;
            let Some(line) = parsed? else {
                continue;
            };
            let path = &self.path;
            if let Some(line) =
                in_order(&mut self.order, n, line).map_err(|detail| RecordError::Format {
                    path: path.clone(),
                    detail,
                })?
            {
                return Ok(Some(line));
            }
        }
    }
}

impl Iterator for Parallel {
    type Item = Result<Line<Snapshot, KnobEvent, Marker>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_line() {
            Ok(Some(l)) => Some(Ok(l)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
