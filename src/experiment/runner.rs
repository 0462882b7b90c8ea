//! The course of an experiment, snapshot by snapshot (pure: no I/O): which window is
//! running, whether it is warming up or measured, when it ends (after its measured
//! snapshots, or once its command has ended), which value comes next, and the windows
//! and snapshots the verdict is computed from. `llctop ab` and the TUI's `a` drive it and
//! do the writes and the command themselves.

use std::time::Duration;

use super::verdict::{self, Verdict};
use super::{Arm, Experiment, Window};
use crate::snapshot::Snapshot;

/// What the driver does after a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing to do.
    Continue,
    /// The warm-up is over: the measured part begins (start the window's command).
    Measure,
    /// A window was measured (record it); then put this value in place.
    Flip(Window, Arm),
    /// The last window was measured (record it); the experiment is over.
    Done(Window),
}

/// Where a running experiment is, for a progress line.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// 0-based window, of `total`.
    pub window: usize,
    pub total: usize,
    pub arm: Arm,
    pub measuring: bool,
    /// Snapshots left in this window (None: until its command ends).
    pub left: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Runner {
    pub exp: Experiment,
    order: Vec<Arm>,
    warm: u64,
    measure: u64,
    /// The window's command decides when it ends.
    by_command: bool,
    /// The collector's interval: a measured snapshot much shorter is a catch-up one.
    interval_ns: u64,
    w: usize,
    k: u64,
    first_seq: Option<u64>,
    /// Time measured in the current window (its measured snapshots' intervals).
    measured_ns: u64,
    /// Why the current window will not be counted, once something spoilt it.
    spoilt: Option<String>,
    /// A measured snapshot had the system's busy figure: one without it lacks figures.
    saw_busy: bool,
    windows: Vec<Window>,
    kept: Vec<Snapshot>,
    /// The command's processes found in the next snapshot ([`Runner::command_processes`]).
    pending: Vec<u32>,
    /// The command's processes seen in the current window's measured snapshots.
    command_pids: std::collections::BTreeSet<u32>,
}

fn snapshots_for(ns: u64, interval: Duration) -> u64 {
    (ns as f64 / 1e9 / interval.as_secs_f64().max(1e-9)).round() as u64
}

/// Measured snapshots per window: the fewest whose intervals cover 95% of the window, so
/// that an on-time window always clears the 90% a window must measure to be counted.
fn measured_for(ns: u64, interval: Duration) -> u64 {
    let per = interval.as_secs_f64().max(1e-9);
    ((ns as f64 / 1e9 * 0.95 / per).ceil() as u64).max(1)
}

impl Runner {
    /// An experiment at `interval`; the driver puts [`Runner::first`]'s value in place
    /// before the next snapshot (and, with no warm-up, starts the first command).
    pub fn new(exp: Experiment, interval: Duration) -> Runner {
        let by_command = !exp.command.is_empty() && !exp.steady;
        Runner {
            order: exp.order(),
            warm: snapshots_for(exp.warmup_ns, interval),
            measure: measured_for(exp.window_ns, interval),
            by_command,
            exp,
            interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            w: 0,
            k: 0,
            first_seq: None,
            measured_ns: 0,
            spoilt: None,
            saw_busy: false,
            windows: Vec::new(),
            kept: Vec::new(),
            pending: Vec::new(),
            command_pids: Default::default(),
        }
    }

    /// The processes of the experiment's command found in the snapshot passed next to
    /// [`Runner::on_snapshot`]: kept for its window if that snapshot is measured (at most
    /// [`super::MAX_COMMAND_PIDS`] a window).
    pub fn command_processes(&mut self, pids: impl IntoIterator<Item = u32>) {
        self.pending.clear();
        self.pending.extend(pids);
    }

    pub fn first(&self) -> Arm {
        self.order[0]
    }

    /// The measured part starts with the window (no warm-up).
    pub fn measures_at_once(&self) -> bool {
        self.warm == 0
    }

    pub fn is_done(&self) -> bool {
        self.w >= self.order.len()
    }

    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// The current window will not be counted, for `why` (the first reason stays).
    pub fn spoil(&mut self, why: impl Into<String>) {
        if !self.is_done() && self.spoilt.is_none() {
            self.spoilt = Some(why.into());
        }
    }

    /// One snapshot taken while the current window's value was in place. `command`:
    /// how the window's command ended, once it has (wall time, exit code).
    pub fn on_snapshot(&mut self, snap: &Snapshot, command: Option<(f64, Option<i32>)>) -> Step {
        if self.is_done() {
            return Step::Continue;
        }
        self.k += 1;
        let pending = std::mem::take(&mut self.pending);
        if self.k <= self.warm {
            return if self.k == self.warm {
                Step::Measure
            } else {
                Step::Continue
            };
        }
        self.first_seq.get_or_insert(snap.seq);
        self.measured_ns = self.measured_ns.saturating_add(snap.time.interval_ns);
        if snap.system.busy.is_some() {
            self.saw_busy = true;
        } else if self.saw_busy {
            self.spoil(format!("snapshot #{} has no busy figure", snap.seq));
        }
        if snap.time.interval_ns < self.interval_ns / 2 {
            self.spoil(format!(
                "snapshot #{} covers {:.1} ms of a {:.0} ms interval",
                snap.seq,
                snap.time.interval_ns as f64 / 1e6,
                self.interval_ns as f64 / 1e6
            ));
        }
        self.kept.push(snap.clone());
        for pid in pending {
            if self.command_pids.len() >= super::MAX_COMMAND_PIDS {
                break;
            }
            self.command_pids.insert(pid);
        }
        let finished = if self.by_command {
            command.is_some()
        } else {
            self.k >= self.warm + self.measure
        };
        if !finished {
            return Step::Continue;
        }
        let arm = self.order[self.w];
        let planned = self.exp.window_ns as f64;
        if !self.by_command && (self.measured_ns as f64) < super::MIN_WINDOW_SHARE * planned {
            self.spoil(format!(
                "measured {:.3} s of the planned {:.3} s",
                self.measured_ns as f64 / 1e9,
                planned / 1e9
            ));
        }
        let win = Window {
            index: self.w as u32,
            arm,
            value: self.exp.value(arm).into(),
            first_seq: self.first_seq.unwrap_or(snap.seq),
            last_seq: snap.seq,
            command_secs: command.map(|c| c.0),
            exit_code: command.and_then(|c| c.1),
            command_pids: std::mem::take(&mut self.command_pids).into_iter().collect(),
            not_counted: self.spoilt.take(),
        };
        self.windows.push(win.clone());
        self.w += 1;
        self.k = 0;
        self.first_seq = None;
        self.measured_ns = 0;
        match self.order.get(self.w) {
            Some(&next) => Step::Flip(win, next),
            None => Step::Done(win),
        }
    }

    pub fn progress(&self) -> Progress {
        let i = self.w.min(self.order.len() - 1);
        let measuring = self.k >= self.warm && !self.is_done();
        Progress {
            window: i,
            total: self.order.len(),
            arm: self.order[i],
            measuring,
            left: (!self.by_command).then(|| (self.warm + self.measure).saturating_sub(self.k)),
        }
    }

    /// The verdict over the windows measured so far.
    pub fn verdict(&self) -> Verdict {
        verdict::compute(&self.exp, &self.windows, &self.kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::SnapshotTime;

    fn exp(rounds: u32, warm_s: u64, window_s: u64, command: bool) -> Experiment {
        Experiment {
            knob: "k".into(),
            a: "0".into(),
            b: "1".into(),
            window_ns: window_s * 1_000_000_000,
            warmup_ns: warm_s * 1_000_000_000,
            rounds,
            command: if command { vec!["true".into()] } else { vec![] },
            steady: false,
        }
    }

    fn snap(seq: u64) -> Snapshot {
        Snapshot {
            seq,
            time: SnapshotTime {
                unix_ns: 0,
                mono_ns: 0,
                interval_ns: 1_000_000_000,
                missed_ticks: 0,
            },
            ..Default::default()
        }
    }

    #[test]
    fn windows_warm_up_measure_and_flip_in_abba_order() {
        let mut r = Runner::new(exp(2, 1, 2, false), Duration::from_secs(1));
        assert_eq!(r.first(), Arm::A);
        let mut steps = Vec::new();
        for seq in 0..12 {
            steps.push(r.on_snapshot(&snap(seq), None));
        }
        // Per window: 1 warm-up snapshot (then Measure), 2 measured, the last flips.
        assert_eq!(steps[0], Step::Measure);
        assert_eq!(steps[1], Step::Continue);
        let Step::Flip(w0, next) = &steps[2] else {
            panic!("{:?}", steps[2])
        };
        assert_eq!(
            (w0.arm, w0.first_seq, w0.last_seq, *next),
            (Arm::A, 1, 2, Arm::B)
        );
        assert!(matches!(&steps[5], Step::Flip(w, Arm::B) if w.arm == Arm::B));
        assert!(matches!(&steps[8], Step::Flip(w, Arm::A) if w.arm == Arm::B));
        assert!(matches!(&steps[11], Step::Done(w) if w.arm == Arm::A && w.last_seq == 11));
        assert!(r.is_done());
        assert_eq!(r.on_snapshot(&snap(12), None), Step::Continue);
        assert!(r.windows().iter().all(|w| w.command_pids.is_empty()));
        assert_eq!(r.windows().len(), 4);
        assert_eq!(r.verdict().windows, 4);
    }

    #[test]
    fn a_command_window_lasts_until_the_command_ends() {
        let mut r = Runner::new(exp(1, 0, 1, true), Duration::from_secs(1));
        assert!(r.measures_at_once());
        assert_eq!(r.on_snapshot(&snap(0), None), Step::Continue);
        assert_eq!(r.progress().left, None);
        assert_eq!(r.on_snapshot(&snap(1), None), Step::Continue);
        let Step::Flip(w, Arm::B) = r.on_snapshot(&snap(2), Some((2.5, Some(0)))) else {
            panic!()
        };
        assert_eq!((w.first_seq, w.last_seq, w.command_secs), (0, 2, Some(2.5)));
        assert!(r.progress().measuring);
    }

    #[test]
    fn a_windows_command_processes_are_those_seen_in_its_measured_snapshots() {
        let mut r = Runner::new(exp(1, 1, 2, false), Duration::from_secs(1));
        // A steady command's processes in the warm-up: not the window's.
        r.command_processes([5]);
        assert_eq!(r.on_snapshot(&snap(0), None), Step::Measure);
        r.command_processes([7, 8]);
        assert_eq!(r.on_snapshot(&snap(1), None), Step::Continue);
        r.command_processes([8, 9]);
        let Step::Flip(w, _) = r.on_snapshot(&snap(2), None) else {
            panic!()
        };
        assert_eq!(w.command_pids, vec![7, 8, 9]);
        // Each window its own: none noted for this snapshot, none kept.
        assert_eq!(r.on_snapshot(&snap(3), None), Step::Measure);
        r.command_processes(0..2000);
        r.on_snapshot(&snap(4), None);
        let Step::Done(w) = r.on_snapshot(&snap(5), None) else {
            panic!()
        };
        assert_eq!(
            w.command_pids.len(),
            crate::experiment::MAX_COMMAND_PIDS,
            "bounded"
        );
    }

    fn short(seq: u64, ms: u64) -> Snapshot {
        let mut s = snap(seq);
        s.time.interval_ns = ms * 1_000_000;
        s
    }

    #[test]
    fn a_window_shorter_than_planned_or_spoilt_is_measured_but_not_counted() {
        // After a stall the old collector fired a burst of sliver snapshots: a window
        // made of them measured 0.5 ms of its 1 s.
        let mut r = Runner::new(exp(2, 0, 1, false), Duration::from_secs(1));
        let Step::Flip(w, _) = r.on_snapshot(&short(0, 1), None) else {
            panic!()
        };
        let why = w.not_counted.expect("not counted");
        assert!(why.contains("covers 1.0 ms"), "{why}");
        // An on-time window counts.
        let Step::Flip(w, _) = r.on_snapshot(&snap(1), None) else {
            panic!()
        };
        assert_eq!(w.not_counted, None);
        // A knob changed behind the experiment's back spoils its window.
        r.spoil("k: now 7, not the 1 llctop put in place");
        let Step::Flip(w, _) = r.on_snapshot(&snap(2), None) else {
            panic!()
        };
        assert!(w.not_counted.as_deref().unwrap().contains("now 7"));
        // A snapshot without busy after others had it: figures missing.
        let mut busy = snap(3);
        busy.system.busy = Some(0.5);
        let mut r2 = Runner::new(exp(1, 0, 2, false), Duration::from_secs(1));
        assert_eq!(r2.on_snapshot(&busy, None), Step::Continue);
        let Step::Flip(w, _) = r2.on_snapshot(&snap(4), None) else {
            panic!()
        };
        assert!(w.not_counted.as_deref().unwrap().contains("no busy"));
        let v = r.verdict();
        assert_eq!((v.windows, v.measured(), v.planned), (1, 3, 4));
        assert_eq!(v.not_counted.len(), 2);
        let text = super::verdict::render(&r.exp, &v);
        assert!(text.contains("1 of 4 windows of 1.0 s counted"), "{text}");
        assert!(text.contains("not counted: window 1:"), "{text}");
        assert!(
            text.contains("stopped early: 3 of 4 windows measured"),
            "{text}"
        );
    }

    #[test]
    fn a_long_snapshot_after_a_stall_still_counts() {
        let mut r = Runner::new(exp(1, 0, 1, false), Duration::from_secs(1));
        let mut long = snap(0);
        long.time.interval_ns = 5_500_000_000;
        long.time.missed_ticks = 4;
        let Step::Flip(w, _) = r.on_snapshot(&long, None) else {
            panic!()
        };
        assert_eq!(w.not_counted, None);
    }

    #[test]
    fn measured_snapshots_cover_most_of_the_window() {
        let ms = Duration::from_millis;
        assert_eq!(measured_for(1_000_000_000, ms(1000)), 1);
        assert_eq!(measured_for(10_000_000_000, ms(1000)), 10);
        assert_eq!(measured_for(1_000_000_000, ms(300)), 4);
        assert_eq!(measured_for(3_000_000_000, ms(500)), 6);
        assert_eq!(measured_for(100_000_000, ms(1000)), 1);
    }
}
