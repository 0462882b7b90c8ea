//! A/B experiments on a knob: the plan (two values, ABBA-ordered windows, warm-up), the
//! metrics of a window (pure functions over its snapshots), the statistics and the
//! verdict table, and the lines a recording keeps of them, so that `llctop report
//! --compare` recomputes the live verdict from the file. The run itself is run::ab.

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
}
