//! The TUI's snapshots: every one kept packed (its JSON, zstd-compressed: about a quarter
//! of its JSON and a sixth of its parsed size), and parsed only where something reads
//! them — the one shown and the views' span before it, and the newest ones the advisor's
//! trailing window reads. An hour of a 256-CPU machine replays with 3,600 packed
//! snapshots and a few dozen parsed.
//!
//! Positions are indices, oldest first, as [`super::App::pos`]; [`History::focus`] moves the
//! parsed span to a position (called after every message), and [`History::window`] reads
//! it without changing anything, so the views draw from `&App`.

use std::collections::BTreeMap;

use crate::snapshot::Snapshot;

/// The zstd level packing uses: level 1 is the smallest of levels 1, 3 and 9 on
/// llctop's JSON (full-precision fractions compress little) and the fastest.
const LEVEL: i32 = 1;

/// Memory for the parsed span behind the shown snapshot (the views' sparklines and
/// tables read up to [`MAX_SPAN`] snapshots back).
pub const PARSED_MIB: usize = 16;
/// The parsed span's length bounds, whatever [`PARSED_MIB`] allows.
pub const MIN_SPAN: usize = 60;
pub const MAX_SPAN: usize = 240;

thread_local! {
    /// Packing's buffers: the JSON, the compressed form.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// One snapshot packed, with what playback reads of every snapshot (without parsing).
pub struct Packed {
    bytes: Box<[u8]>,
    /// The JSON's length (the buffer unpacking needs).
    json_len: usize,
    pub seq: u64,
    pub mono_ns: u64,
    pub interval_ns: u64,
    /// [`Snapshot::approx_bytes`] of the parsed form.
    pub parsed_bytes: usize,
}

impl Packed {
    /// `s` packed: the JSON a recording holds, compressed. The JSON and the compressed
    /// form are made in this thread's scratch buffers and only the result is allocated,
    /// at its size (a buffer shrunk after compressing leaves holes the allocator keeps:
    /// a replay of 3,600 256-CPU snapshots was 40 % larger that way).
    pub fn of(s: &Snapshot) -> Result<Packed, String> {
        SCRATCH.with_borrow_mut(|(json, out)| {
            json.clear();
            serde_json::to_writer(&mut *json, s).map_err(|e| format!("packing snapshot: {e}"))?;
            out.resize(zstd::zstd_safe::compress_bound(json.len()), 0);
            let n = zstd::bulk::compress_to_buffer(json, &mut out[..], LEVEL)
                .map_err(|e| format!("packing snapshot: {e}"))?;
            Ok(Packed {
                bytes: out[..n].into(),
                json_len: json.len(),
                seq: s.seq,
                mono_ns: s.time.mono_ns,
                interval_ns: s.time.interval_ns,
                parsed_bytes: s.approx_bytes(),
            })
        })
    }

    /// The snapshot again.
    pub fn unpack(&self) -> Result<Snapshot, String> {
        let err = |e: &dyn std::fmt::Display| format!("unpacking snapshot {}: {e}", self.seq);
        SCRATCH.with_borrow_mut(|(json, _)| {
            json.resize(self.json_len, 0);
            let n = zstd::bulk::decompress_to_buffer(&self.bytes, &mut json[..])
                .map_err(|e| err(&e))?;
            serde_json::from_slice(&json[..n]).map_err(|e| err(&e))
        })
    }

    /// Bytes held: the compressed form and this record.
    pub fn bytes(&self) -> usize {
        self.bytes.len() + std::mem::size_of::<Packed>()
    }
}

/// Parsed snapshots at positions `start..start + snaps.len()`.
#[derive(Default)]
struct Region {
    start: usize,
    snaps: Vec<Snapshot>,
}

impl Region {
    fn end(&self) -> usize {
        self.start + self.snaps.len()
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end()
    }

    fn get(&self, i: usize) -> Option<&Snapshot> {
        i.checked_sub(self.start).and_then(|k| self.snaps.get(k))
    }

    /// Up to `n` snapshots ending at `pos` (which it holds), oldest first.
    fn ending_at(&self, pos: usize, n: usize) -> Option<&[Snapshot]> {
        let k = pos
            .checked_sub(self.start)
            .filter(|&k| k < self.snaps.len())?;
        Some(&self.snaps[(k + 1).saturating_sub(n)..=k])
    }
}

#[derive(Default)]
pub struct History {
    packed: Vec<Packed>,
    packed_bytes: usize,
    /// The parsed span ending at the shown snapshot (and on to the newest when the
    /// advisor's tail joins it).
    view: Region,
    /// The newest parsed snapshots, when the view's span does not reach them.
    tail: Region,
    /// The last error unpacking a snapshot (a span then stops short of it).
    pub error: Option<String>,
}

impl History {
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// What playback reads of the snapshot at `i` (parsed or not).
    pub fn meta(&self, i: usize) -> Option<&Packed> {
        self.packed.get(i)
    }

    pub fn metas(&self) -> &[Packed] {
        &self.packed
    }

    /// The snapshot at `i` if it is parsed.
    pub fn get(&self, i: usize) -> Option<&Snapshot> {
        self.view.get(i).or_else(|| self.tail.get(i))
    }

    /// The snapshot at `i`, parsed now if it is not.
    pub fn unpack(&self, i: usize) -> Result<Snapshot, String> {
        match self.get(i) {
            Some(s) => Ok(s.clone()),
            None => self
                .packed
                .get(i)
                .ok_or_else(|| format!("no snapshot at {i}"))?
                .unpack(),
        }
    }

    /// The newest snapshot (parsed: the tail always holds it).
    pub fn newest(&self) -> Option<&Snapshot> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The newest parsed snapshots, oldest first: at least the advisor's trailing window
    /// with its look-behind ([`crate::findings::trailing_bounds`]).
    pub fn tail(&self) -> &[Snapshot] {
        let Some(last) = self.len().checked_sub(1) else {
            return &[];
        };
        [&self.view, &self.tail]
            .into_iter()
            .find_map(|r| r.ending_at(last, usize::MAX))
            .unwrap_or(&[])
    }

    /// Up to `n` parsed snapshots ending at `pos`, oldest first (at most the span
    /// [`History::focus`] parsed there).
    pub fn window(&self, pos: usize, n: usize) -> &[Snapshot] {
        [&self.view, &self.tail]
            .into_iter()
            .filter_map(|r| r.ending_at(pos, n))
            .max_by_key(|s| s.len())
            .unwrap_or(&[])
    }

    /// Bytes held: packed snapshots and parsed ones (estimated, [`Snapshot::approx_bytes`]).
    pub fn bytes(&self) -> usize {
        self.packed_bytes + self.parsed_bytes()
    }

    /// Bytes the parsed snapshots hold (estimated).
    pub fn parsed_bytes(&self) -> usize {
        let parsed = |r: &Region| {
            r.range()
                .map(|i| self.packed[i].parsed_bytes)
                .sum::<usize>()
        };
        parsed(&self.view) + parsed(&self.tail)
    }

    /// Add the newest snapshot (`packed`: its packed form when the caller has it, e.g.
    /// made on the replay's reading thread). It stays parsed as part of the tail.
    pub fn push(&mut self, s: Snapshot, packed: Option<Packed>) -> Result<(), String> {
        let p = match packed {
            Some(p) => p,
            None => Packed::of(&s)?,
        };
        let at = self.len();
        self.packed_bytes += p.bytes();
        self.packed.push(p);
        if self.view.end() == at && !self.view.snaps.is_empty() {
            self.view.snaps.push(s);
        } else {
            if self.tail.end() != at || self.tail.snaps.is_empty() {
                self.tail = Region::default();
                self.tail.start = at;
            }
            self.tail.snaps.push(s);
        }
        Ok(())
    }

    /// Forget the `n` oldest snapshots (positions move down by `n`).
    pub fn drop_oldest(&mut self, n: usize) {
        let n = n.min(self.len());
        self.packed_bytes -= self.packed[..n].iter().map(Packed::bytes).sum::<usize>();
        self.packed.drain(..n);
        for r in [&mut self.view, &mut self.tail] {
            let gone = n.saturating_sub(r.start).min(r.snaps.len());
            r.snaps.drain(..gone);
            r.start = r.start.saturating_sub(n);
        }
    }

    /// How many snapshots the span before `pos` parses: [`PARSED_MIB`] of them at `pos`'s
    /// size, within [`MIN_SPAN`]..=[`MAX_SPAN`].
    pub fn span(&self, pos: usize) -> usize {
        let each = self.meta(pos).map_or(1, |m| m.parsed_bytes.max(1));
        ((PARSED_MIB << 20) / each).clamp(MIN_SPAN, MAX_SPAN)
    }

    /// Parse what `pos` (the shown snapshot) and the advisor need, and drop the rest of
    /// the parsed snapshots: the span before `pos`, and the newest ones down to the
    /// advisor's look-behind (one region when they meet).
    pub fn focus(&mut self, pos: Option<usize>) {
        let len = self.len();
        let (_, behind) = crate::findings::trailing_bounds(len, |i| self.packed[i].interval_ns);
        // The newest is always kept parsed (live, it was pushed parsed).
        let tail = behind.min(len.saturating_sub(1))..len;
        let (view, tail) = match pos.filter(|&p| p < len) {
            None => (0..0, tail),
            Some(p) => {
                let from = (p + 1).saturating_sub(self.span(p));
                if p + 1 >= tail.start {
                    (from.min(tail.start)..len, 0..0)
                } else {
                    (from..p + 1, tail)
                }
            }
        };
        if self.view.range() == view && self.tail.range() == tail {
            return;
        }
        let mut pool: BTreeMap<usize, Snapshot> = BTreeMap::new();
        for r in [&mut self.view, &mut self.tail] {
            let start = r.start;
            pool.extend(r.snaps.drain(..).enumerate().map(|(k, s)| (start + k, s)));
        }
        self.view = self.region(view, &mut pool);
        self.tail = self.region(tail, &mut pool);
    }

    /// The parsed region `want`, from `pool` where it has them, unpacked where not; when
    /// one cannot be unpacked the region starts after it.
    fn region(
        &mut self,
        want: std::ops::Range<usize>,
        pool: &mut BTreeMap<usize, Snapshot>,
    ) -> Region {
        let mut snaps = Vec::with_capacity(want.len());
        let mut start = want.start;
        for i in want {
            let s = match pool.remove(&i) {
                Some(s) => s,
                None => match self.packed[i].unpack() {
                    Ok(s) => s,
                    Err(e) => {
                        self.error = Some(e);
                        snaps.clear();
                        start = i + 1;
                        continue;
                    }
                },
            };
            snaps.push(s);
        }
        Region { start, snaps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(seq: u64, interval_ns: u64) -> Snapshot {
        let mut s = Snapshot {
            seq,
            ..Snapshot::default()
        };
        s.time.interval_ns = interval_ns;
        s.time.mono_ns = (seq + 1) * interval_ns;
        s.system.ctx_switches = Some(seq * 7);
        s
    }

    fn seqs(s: &[Snapshot]) -> Vec<u64> {
        s.iter().map(|s| s.seq).collect()
    }

    fn filled(n: u64, interval_ns: u64) -> History {
        let mut h = History::default();
        for i in 0..n {
            h.push(snap(i, interval_ns), None).unwrap();
        }
        h
    }

    #[test]
    fn a_packed_snapshot_unpacks_to_itself() {
        let s = snap(42, 1_000_000_000);
        let p = Packed::of(&s).unwrap();
        assert_eq!(p.unpack().unwrap(), s);
        assert_eq!(
            (p.seq, p.mono_ns, p.interval_ns),
            (42, 43_000_000_000, 1_000_000_000)
        );
    }

    #[test]
    fn the_view_is_the_span_before_the_shown_and_the_tail_the_advisors() {
        let mut h = filled(1000, 1_000_000_000);
        let span = h.span(500);
        assert_eq!(span, MAX_SPAN, "small snapshots: the longest span");
        h.focus(Some(500));
        let w = h.window(500, usize::MAX);
        assert_eq!(seqs(w), (501 - span as u64..=500).collect::<Vec<_>>());
        assert_eq!(seqs(h.window(500, 3)), vec![498, 499, 500]);
        // The advisor: 5 s window plus 5 s look-behind at 1 s intervals.
        let (_, behind) = crate::findings::trailing_bounds(1000, |_| 1_000_000_000);
        assert_eq!(seqs(h.tail()), (behind as u64..1000).collect::<Vec<_>>());
        assert!(h.tail().len() <= 10);
        // Only those are parsed.
        assert!(h.get(100).is_none() && h.get(900).is_none());
        assert_eq!(h.unpack(100).unwrap().seq, 100, "any one can still be read");
    }

    #[test]
    fn following_the_newest_is_one_region() {
        let mut h = filled(300, 100_000_000);
        h.focus(Some(299));
        assert_eq!(h.window(299, usize::MAX).len(), MAX_SPAN);
        assert!(h.tail.snaps.is_empty(), "the view reaches the newest");
        // A new snapshot joins the view and the span moves with it.
        h.push(snap(300, 100_000_000), None).unwrap();
        h.focus(Some(300));
        assert_eq!(
            h.window(300, usize::MAX).first().map(|s| s.seq),
            Some(300 - MAX_SPAN as u64 + 1)
        );
        assert_eq!(h.tail().last().map(|s| s.seq), Some(300));
        // At 100 ms the advisor reads 60 snapshots back.
        assert!(h.tail().len() >= 60);
    }

    #[test]
    fn seeking_back_and_forth_keeps_the_window_right() {
        let mut h = filled(2000, 1_000_000_000);
        for pos in [1999, 0, 1, 5, 1200, 1199, 1998, 700, 1999] {
            h.focus(Some(pos));
            let w = h.window(pos, 100);
            let want: Vec<u64> = ((pos + 1).saturating_sub(100) as u64..=pos as u64).collect();
            assert_eq!(seqs(w), want, "at {pos}");
            assert_eq!(h.tail().last().map(|s| s.seq), Some(1999));
            let parsed = h.view.snaps.len() + h.tail.snaps.len();
            assert!(parsed <= MAX_SPAN + 10, "{parsed} parsed at {pos}");
        }
    }

    #[test]
    fn pushes_while_the_view_is_elsewhere_go_to_the_tail() {
        let mut h = filled(50, 1_000_000_000);
        h.focus(Some(0));
        for i in 50..80 {
            h.push(snap(i, 1_000_000_000), None).unwrap();
            h.focus(Some(0));
            assert_eq!(h.tail().last().map(|s| s.seq), Some(i));
        }
        assert_eq!(seqs(h.window(0, 10)), vec![0]);
        assert!(
            h.tail().len() <= 10,
            "the tail is trimmed to the advisor's need (5 s window, 5 s look-behind)"
        );
    }

    #[test]
    fn dropping_the_oldest_moves_positions() {
        let mut h = filled(100, 1_000_000_000);
        h.focus(Some(99));
        let before = h.bytes();
        h.drop_oldest(30);
        assert_eq!(h.len(), 70);
        assert_eq!(h.meta(0).map(|m| m.seq), Some(30));
        h.focus(Some(69));
        assert_eq!(h.window(69, usize::MAX).first().map(|s| s.seq), Some(30));
        assert_eq!(h.newest().map(|s| s.seq), Some(99));
        assert!(h.bytes() < before);
    }

    #[test]
    fn the_span_is_sized_in_memory() {
        let mut h = History::default();
        let mut big = snap(0, 1_000_000_000);
        big.cpus = vec![Default::default(); 4096];
        h.push(big, None).unwrap();
        let each = h.meta(0).map_or(0, |m| m.parsed_bytes);
        assert!(each > (PARSED_MIB << 20) / MIN_SPAN, "{each}");
        assert_eq!(h.span(0), MIN_SPAN, "huge snapshots: the shortest span");
    }
}
