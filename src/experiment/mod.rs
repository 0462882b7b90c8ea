//! A/B experiments on a knob: the plan (two values, ABBA-ordered windows, warm-up), the
//! metrics of a window (pure functions over its snapshots), the statistics and the
//! verdict table, and the lines a recording keeps of them, so that `llctop report
//! --compare` recomputes the live verdict from the file. The run itself is run::ab.

pub mod colocate;
pub mod metrics;
pub mod runner;
pub mod stats;
pub mod verdict;

use serde::{Deserialize, Serialize};

/// Which of the two values a window measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    A,
    B,
}

/// What an experiment compares (`"type":"experiment"` in a recording, after the header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// The knob's id, or `profile:NAME` (A: the values before, B: the profile applied).
    pub knob: String,
    pub a: String,
    pub b: String,
    pub window_ns: u64,
    pub warmup_ns: u64,
    /// Windows per value.
    pub rounds: u32,
    /// The command run in each window (or kept running, `steady`); empty: none.
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub steady: bool,
}

impl Experiment {
    /// The value of each window: ABBA ABBA … (`rounds` windows per value), so a steady
    /// drift weighs on both values alike.
    pub fn order(&self) -> Vec<Arm> {
        (0..self.rounds)
            .flat_map(|r| {
                if r % 2 == 0 {
                    [Arm::A, Arm::B]
                } else {
                    [Arm::B, Arm::A]
                }
            })
            .collect()
    }

    pub fn value(&self, arm: Arm) -> &str {
        match arm {
            Arm::A => &self.a,
            Arm::B => &self.b,
        }
    }
}

/// One measured window (`"type":"window"`): the snapshots `first_seq..=last_seq` (after
/// the warm-up) ran with `value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub index: u32,
    pub arm: Arm,
    pub value: String,
    pub first_seq: u64,
    pub last_seq: u64,
    /// The window's command: wall time and exit code (None: killed by a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_secs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The processes of the experiment's command (the window's, or the `--steady` one)
    /// seen in the window's snapshots: rows of its process group's members, alive at a
    /// snapshot (one that lived between two is not seen), at most
    /// [`MAX_COMMAND_PIDS`]. The `command.rq_wait` and `command.wait_per_run` metrics are
    /// theirs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_pids: Vec<u32>,
    /// Why the verdict leaves this window out (shorter than 90% of the planned window,
    /// a snapshot without its figures, the knob changed behind the experiment's back);
    /// absent: counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_counted: Option<String>,
}

/// The most processes of a command a window keeps.
pub const MAX_COMMAND_PIDS: usize = 1024;

/// The share of the planned window a window must have measured to be counted.
pub const MIN_WINDOW_SHARE: f64 = 0.9;

impl Experiment {
    /// Whether `windows` can be this experiment's: at least one round, at most the
    /// planned number of windows, each index once and in order, each with the arm and
    /// value the ABBA order gives it, and snapshot ranges that run forward and do not
    /// overlap. A recording whose window lines fail this is refused, not judged.
    pub fn check_windows(&self, windows: &[Window]) -> Result<(), String> {
        let order = self.order();
        if order.is_empty() {
            return Err("the experiment plans no windows (rounds 0)".into());
        }
        if windows.len() > order.len() {
            return Err(format!(
                "{} window lines for {} planned windows",
                windows.len(),
                order.len()
            ));
        }
        let mut last: Option<&Window> = None;
        for w in windows {
            let i = w.index as usize;
            let Some(&arm) = order.get(i) else {
                return Err(format!("window {i}: only {} are planned", order.len()));
            };
            if w.arm != arm || w.value != self.value(arm) {
                return Err(format!(
                    "window {i}: arm {:?} = {:?}, but the plan runs {arm:?} = {:?} there",
                    w.arm,
                    w.value,
                    self.value(arm)
                ));
            }
            if w.first_seq > w.last_seq {
                return Err(format!(
                    "window {i}: snapshots #{}..=#{} run backwards",
                    w.first_seq, w.last_seq
                ));
            }
            if let Some(p) = last {
                if w.index <= p.index {
                    return Err(format!(
                        "window {i} after window {}: a repeated or out-of-order window",
                        p.index
                    ));
                }
                if w.first_seq <= p.last_seq {
                    return Err(format!(
                        "window {i} (#{}..) overlaps window {} (..#{})",
                        w.first_seq, p.index, p.last_seq
                    ));
                }
            }
            last = Some(w);
        }
        Ok(())
    }
}

/// `KNOB=A,B` → (knob, A, B).
pub fn parse_spec(spec: &str) -> Result<(String, String, String), String> {
    let (knob, values) = spec
        .split_once('=')
        .ok_or_else(|| format!("{spec:?}: expected KNOB=A,B"))?;
    let (a, b) = values
        .split_once(',')
        .ok_or_else(|| format!("{spec:?}: expected two values, A,B"))?;
    let (knob, a, b) = (knob.trim(), a.trim(), b.trim());
    if knob.is_empty() || a.is_empty() || b.is_empty() || b.contains(',') {
        return Err(format!("{spec:?}: expected KNOB=A,B"));
    }
    Ok((knob.into(), a.into(), b.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_alternate_abba_with_rounds_per_value() {
        let e = Experiment {
            knob: "k".into(),
            a: "0".into(),
            b: "1".into(),
            window_ns: 1,
            warmup_ns: 0,
            rounds: 3,
            command: vec![],
            steady: false,
        };
        use Arm::{A, B};
        assert_eq!(e.order(), [A, B, B, A, A, B]);
        assert_eq!(e.value(B), "1");
    }

    #[test]
    fn specs() {
        assert_eq!(
            parse_spec("relax_domain_level=-1,1").unwrap(),
            ("relax_domain_level".into(), "-1".into(), "1".into())
        );
        for bad in [
            "numa_balancing",
            "numa_balancing=1",
            "x=1,2,3",
            "=1,2",
            "k=,2",
        ] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn window_lines_that_make_no_sense_are_refused() {
        let e = Experiment {
            knob: "k".into(),
            a: "0".into(),
            b: "1".into(),
            window_ns: 1,
            warmup_ns: 0,
            rounds: 2,
            command: vec![],
            steady: false,
        };
        let w = |index: u32, arm: Arm, first_seq: u64, last_seq: u64| Window {
            index,
            arm,
            value: e.value(arm).into(),
            first_seq,
            last_seq,
            command_secs: None,
            exit_code: None,
            command_pids: Vec::new(),
            not_counted: None,
        };
        use Arm::{A, B};
        let good = [w(0, A, 0, 1), w(1, B, 3, 4), w(2, B, 6, 7), w(3, A, 9, 9)];
        assert_eq!(e.check_windows(&good), Ok(()));
        assert_eq!(e.check_windows(&good[..2]), Ok(()), "stopped early");
        let bad: Vec<(&str, Vec<Window>)> = vec![
            ("repeated", vec![w(0, A, 0, 1), w(0, A, 0, 1)]),
            ("overlaps", vec![w(0, A, 0, 5), w(1, B, 3, 4)]),
            ("backwards", vec![w(0, A, 5, 1)]),
            ("plan runs", vec![w(0, B, 0, 1)]),
            ("only 4", vec![w(7, A, 0, 1)]),
            ("out-of-order", vec![w(1, B, 0, 1), w(0, A, 3, 4)]),
        ];
        for (want, ws) in bad {
            let err = e.check_windows(&ws).unwrap_err();
            assert!(err.contains(want), "{want}: {err}");
        }
        let mut other = w(1, B, 3, 4);
        other.value = "2".into();
        assert!(e.check_windows(&[other]).is_err(), "a value outside a/b");
        let eight: Vec<Window> = (0..8).map(|i| w(i % 4, A, 0, 0)).collect();
        assert!(
            e.check_windows(&eight)
                .unwrap_err()
                .contains("8 window lines")
        );
        let none = Experiment {
            rounds: 0,
            ..e.clone()
        };
        assert!(none.check_windows(&[]).unwrap_err().contains("rounds 0"));
    }
}
