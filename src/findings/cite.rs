//! Where a finding's number comes from: a field of the snapshots (a path into their JSON,
//! the recording's own form) and how it is aggregated over the finding's snapshots.
//! [`Cite::resolve`] recomputes the number from the JSON, sharing no code with the
//! detectors that computed it from the typed snapshots — the check that evidence says
//! what the snapshots say.
//!
//! A path is `/`-separated: object keys, array indices, or `key=value` to pick the array
//! element whose `key` is `value` (`processes/rows/pid=4242/cpu_time_ns`,
//! `cpus/cpu=2/rq_wait_ns`, `balance/domains/level=1/newidle/count`); in a `key=value`
//! segment `%2F` stands for `/` and `%25` for `%` (cgroup paths, [`escape`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::snapshot::Snapshot;

/// How the field's values over the snapshots become one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agg {
    /// Sum (a snapshot without the field adds 0).
    Sum,
    /// Mean of the snapshots that have it.
    Mean,
    /// Sum divided by the seconds of all the snapshots.
    Rate,
    /// Largest value.
    Max,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cite {
    pub field: String,
    pub agg: Agg,
    pub first_seq: u64,
    pub last_seq: u64,
}

/// A value for a `key=value` segment.
pub fn escape(value: &str) -> String {
    value.replace('%', "%25").replace('/', "%2F")
}

fn unescape(value: &str) -> String {
    value.replace("%2F", "/").replace("%25", "%")
}

fn pick<'a>(v: &'a Value, seg: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => match seg.split_once('=') {
            Some((k, want)) => a.iter().find(|e| match e.get(k) {
                Some(Value::String(s)) => *s == unescape(want),
                Some(x) => *x.to_string() == *want,
                None => false,
            }),
            None => a.get(seg.parse::<usize>().ok()?),
        },
        _ => None,
    }
}

impl Cite {
    /// The field in one snapshot's JSON.
    fn value_in(&self, snap: &Value) -> Option<f64> {
        let mut v = snap;
        for seg in self.field.split('/').filter(|s| !s.is_empty()) {
            v = pick(v, seg)?;
        }
        v.as_f64()
    }

    /// The number recomputed from the snapshots `first_seq..=last_seq` of `snaps`, through
    /// their JSON; `None` when no snapshot of the range has the field.
    pub fn resolve(&self, snaps: &[Snapshot]) -> Option<f64> {
        let range: Vec<&Snapshot> = snaps
            .iter()
            .filter(|s| (self.first_seq..=self.last_seq).contains(&s.seq))
            .collect();
        let mut vals = Vec::new();
        let mut secs = 0.0;
        for s in &range {
            let j = serde_json::to_value(s).ok()?;
            secs += j.pointer("/time/interval_ns")?.as_f64()? / 1e9;
            if let Some(x) = self.value_in(&j) {
                vals.push(x);
            }
        }
        if vals.is_empty() {
            return None;
        }
        let sum: f64 = vals.iter().sum();
        Some(match self.agg {
            Agg::Sum => sum,
            Agg::Mean => sum / vals.len() as f64,
            Agg::Rate => sum / secs,
            Agg::Max => vals.iter().copied().fold(f64::MIN, f64::max),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{CpuStats, SnapshotTime};

    fn snap(seq: u64, wait: u64) -> Snapshot {
        Snapshot {
            seq,
            time: SnapshotTime {
                interval_ns: 2_000_000_000,
                ..Default::default()
            },
            cpus: vec![
                CpuStats {
                    cpu: 0,
                    ..Default::default()
                },
                CpuStats {
                    cpu: 3,
                    rq_wait_ns: Some(wait),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn paths_pick_by_key_and_aggregate_over_the_range() {
        let snaps = [snap(0, 100), snap(1, 300), snap(2, 1000)];
        let c = |agg| Cite {
            field: "cpus/cpu=3/rq_wait_ns".into(),
            agg,
            first_seq: 0,
            last_seq: 1,
        };
        assert_eq!(c(Agg::Sum).resolve(&snaps), Some(400.0));
        assert_eq!(c(Agg::Mean).resolve(&snaps), Some(200.0));
        assert_eq!(c(Agg::Rate).resolve(&snaps), Some(100.0));
        assert_eq!(c(Agg::Max).resolve(&snaps), Some(300.0));
        let by_index = Cite {
            field: "cpus/1/rq_wait_ns".into(),
            ..c(Agg::Sum)
        };
        assert_eq!(by_index.resolve(&snaps), Some(400.0));
        // CPU 0 has no wait (null): nothing to recompute.
        let none = Cite {
            field: "cpus/cpu=0/rq_wait_ns".into(),
            ..c(Agg::Sum)
        };
        assert_eq!(none.resolve(&snaps), None);
    }
}
