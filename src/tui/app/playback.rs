//! Playback: live history (follow, pause, browse) and replay (play at a speed, seek,
//! stop at the end). Pure state changes.

use crate::run::pipeline::Tick;
use std::time::Duration;

use super::history::Packed;
use super::{App, Effect, HISTORY_MIB, HISTORY_MIN, Level};
use crate::knobs::session::KnobEvent;
use crate::record::Marker;
use crate::snapshot::Snapshot;

/// How many of the oldest snapshots (packed sizes in bytes, oldest first) go so that
/// they and `parsed` bytes are within [`HISTORY_MIB`], keeping at least [`HISTORY_MIN`].
pub fn history_excess(
    packed: impl DoubleEndedIterator<Item = usize> + ExactSizeIterator,
    parsed: usize,
) -> usize {
    let len = packed.len();
    let mut total = parsed;
    let mut keep = 0usize;
    for b in packed.rev() {
        total = total.saturating_add(b);
        if keep >= HISTORY_MIN && total > HISTORY_MIB << 20 {
            break;
        }
        keep += 1;
    }
    len - keep
}

pub struct Replay {
    pub file: String,
    pub speed: f64,
    pub playing: bool,
    /// Replay time accumulated towards the next snapshot.
    pub(super) carry: Duration,
    pub truncated: bool,
    /// The recording is still being read (its snapshots arrive as it plays).
    pub loading: bool,
}

impl App {
    /// A live tick of the pipeline: its snapshot kept (history bounded to
    /// [`HISTORY_MIB`]), shown unless paused, its judgement taken in, recorded when
    /// recording; the session's knobs re-read at the pipeline's cadence.
    pub(super) fn tick(&mut self, t: Tick) {
        let Tick {
            snap, found, knobs, ..
        } = t;
        let (seq, end_ns, interval_ns) = (snap.seq, snap.time.mono_ns, snap.time.interval_ns);
        let kept = self.recording.is_some().then(|| snap.clone());
        if let Err(e) = self.snaps.push(snap, None) {
            self.say(Level::Bad, e);
            return;
        }
        self.snaps.focus(self.pos);
        let lines = self.judge(found, seq);
        if let Some(snap) = kept {
            let mut t = Tick::of(snap);
            (t.lines, t.knobs) = (lines, knobs);
            self.effect(Effect::RecordTick(Box::new(t)));
        }
        self.poll_trace();
        if self.session.is_some() {
            if crate::run::pipeline::knobs_due(self.knobs_read_ns, end_ns, interval_ns) {
                self.knobs_read_ns = Some(end_ns);
                self.effect(Effect::RefreshKnobs);
            }
            self.ab_snapshot();
        }
        // Within the bound (the common case): no walk over every kept snapshot.
        let n = if self.snaps.bytes() <= HISTORY_MIB << 20 {
            0
        } else {
            let parsed = self.snaps.parsed_bytes();
            history_excess(self.snaps.metas().iter().map(Packed::bytes), parsed)
        };
        if n > 0 {
            self.snaps.drop_oldest(n);
            self.pos = self.pos.map(|p| p.saturating_sub(n));
        }
        if !self.paused || self.pos.is_none() {
            self.pos = Some(self.snaps.len() - 1);
        }
    }

    pub(super) fn elapsed(&mut self, d: Duration) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        if !r.playing {
            return;
        }
        let Some(p) = self.pos else {
            return;
        };
        r.carry += d.mul_f64(r.speed);
        let mut p = p;
        while let Some(next) = self.snaps.meta(p + 1) {
            let step = Duration::from_nanos(next.interval_ns.max(1));
            if r.carry < step {
                break;
            }
            r.carry -= step;
            p += 1;
        }
        if p + 1 >= self.snaps.len() {
            r.carry = Duration::ZERO;
            // Still loading: wait for the next snapshot rather than stop.
            if !r.loading {
                r.playing = false;
                self.paused = true;
            }
        }
        self.pos = Some(p);
    }

    /// One line of the recording being replayed: a snapshot joins the others and is
    /// judged by the advisor as `Advisor::over` judges a whole recording (the same
    /// trailing window at each snapshot); knob changes and markers join theirs.
    pub(super) fn replayed(
        &mut self,
        line: crate::record::Line<Snapshot, KnobEvent, Marker>,
        packed: Option<Packed>,
    ) {
        use crate::record::Line;
        match line {
            Line::Snapshot(s) => {
                if let Err(e) = self.snaps.push(s, packed) {
                    self.say(Level::Bad, e);
                    return;
                }
                if self.pos.is_none() {
                    self.pos = Some(0);
                }
                self.snaps.focus(self.pos);
                self.advisor.observe(&self.topo, self.snaps.tail());
            }
            Line::Knob(k) => self.knob_log.push(k),
            Line::Marker(m) => self.markers.push(m),
            // Written after the first interval by `record`: the values it began with.
            Line::KnobValues(v) if self.start_knobs.is_empty() => self.start_knobs = v,
            _ => {}
        }
    }

    pub(super) fn toggle_pause(&mut self) {
        if let Some(r) = self.replay.as_mut() {
            if !r.playing && self.pos.is_some_and(|p| p + 1 >= self.snaps.len()) {
                // At the end: play again from the start.
                self.pos = (!self.snaps.is_empty()).then_some(0);
            }
            r.playing = !r.playing;
            self.paused = !r.playing;
        } else {
            self.paused = !self.paused;
            if !self.paused && !self.snaps.is_empty() {
                self.pos = Some(self.snaps.len() - 1);
            }
        }
    }

    pub(super) fn seek(&mut self, by: i64) {
        let Some(p) = self.pos else {
            return;
        };
        let last = self.snaps.len().saturating_sub(1) as i64;
        let to = (p as i64 + by).clamp(0, last) as usize;
        self.pos = Some(to);
        match self.replay.as_mut() {
            Some(r) => r.carry = Duration::ZERO,
            None => self.paused = to as i64 != last || self.paused,
        }
    }

    /// Show the first snapshot after the next marker (`forward`) or the one the previous
    /// marker came after; says so when there is none that way.
    pub(super) fn seek_marker(&mut self, forward: bool) {
        let Some(now) = self.current().map(|s| s.time.mono_ns) else {
            return;
        };
        let mut at: Vec<(u64, &str)> = self
            .markers
            .iter()
            .map(|m| (m.mono_ns, m.label.as_str()))
            .collect();
        at.sort_by_key(|m| m.0);
        // A marker lies between the snapshot that ends before it and the next one.
        let target = if forward {
            at.iter().find(|m| m.0 >= now)
        } else {
            // Markers before the snapshot shown, not the one it starts after.
            let start = now.saturating_sub(self.current().map_or(0, |s| s.time.interval_ns));
            at.iter().rev().find(|m| m.0 < start)
        };
        let Some(&(ns, label)) = target else {
            let which = if forward { "after" } else { "before" };
            self.say(Level::Info, format!("no marker {which} this snapshot"));
            return;
        };
        let label = label.to_string();
        let Some(i) = self.snaps.metas().iter().position(|s| s.mono_ns > ns) else {
            self.say(
                Level::Info,
                format!("marker {label:?} is after the last snapshot"),
            );
            return;
        };
        let p = self.pos.unwrap_or(0) as i64;
        self.seek(i as i64 - p);
        self.say(Level::Info, format!("marker {label:?}"));
    }

    pub(super) fn speed(&mut self, faster: bool) {
        let Some(r) = self.replay.as_mut() else {
            self.say(Level::Info, "speed applies to replay");
            return;
        };
        r.speed = if faster {
            (r.speed * 2.0).min(64.0)
        } else {
            (r.speed / 2.0).max(1.0 / 16.0)
        };
        let s = r.speed;
        self.say(Level::Info, format!("replay speed ×{s}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_is_bounded_in_mib_but_keeps_its_minimum() {
        let mib = 1 << 20;
        // Small packed snapshots: all stay.
        assert_eq!(history_excess(vec![1_000; 10_000].into_iter(), 0), 0);
        // A quarter MiB each: HISTORY_MIB of them stay, fewer with parsed ones beside them.
        assert_eq!(history_excess(vec![mib / 4; 200].into_iter(), 0), 200 - 128);
        assert_eq!(
            history_excess(vec![mib / 4; 200].into_iter(), 16 * mib),
            200 - 64
        );
        // Huge ones: never fewer than HISTORY_MIN.
        assert_eq!(
            history_excess(vec![64 * mib; 100].into_iter(), 0),
            100 - HISTORY_MIN
        );
        // The newest are kept: a big old one goes first.
        let mut sizes = vec![mib / 4; HISTORY_MIN + 10];
        sizes[0] = 40 * mib;
        assert_eq!(history_excess(sizes.into_iter(), 0), 1);
    }

    #[test]
    fn a_snapshots_estimate_grows_with_the_machine() {
        use crate::collect::empty_snapshot;
        use crate::topology::synthetic;
        let small = empty_snapshot(&synthetic(1, 1, 2)).approx_bytes();
        let mut big = empty_snapshot(&synthetic(4, 16, 8));
        let bare = big.approx_bytes();
        for c in &mut big.cpus {
            c.rq_wait_hist = Some(vec![1; 32]);
        }
        assert!(small < bare, "{small} vs {bare}");
        assert_eq!(
            big.approx_bytes() - bare,
            512 * 32 * 8,
            "each CPU's histogram"
        );
    }
}
