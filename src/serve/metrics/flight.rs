//! The flight recorder's series: what its kept history takes (`llctop_flight_recorder_bytes`,
//! `_segments`, `_oldest_seconds`), the dumps written by reason
//! (`llctop_flight_recorder_dumps_total{reason}`) and its state
//! (`llctop_flight_recorder_state{state}`: one of them 1). Only with the recorder on.

use std::collections::BTreeMap;

use prometheus_client::registry::Registry;

use super::series::{Group, Metrics, S};
use crate::flight::{State, Status};

/// Registered at the first status; the dumps counted so far, by reason.
#[derive(Default)]
pub struct FlightSeries {
    registered: bool,
    dumps: BTreeMap<String, u64>,
}

impl FlightSeries {
    pub fn update(&mut self, m: &Metrics, r: &mut Registry, st: &Status) {
        if !self.registered {
            self.registered = true;
            m.register_group(r, Group::FlightRecorder);
            for reason in ["signal", "http", "warning", "critical"] {
                m.put(S::FlightDumps, &[reason], 0.0);
            }
        }
        m.put(S::FlightBytes, &[], st.bytes as f64);
        m.put(S::FlightSegments, &[], st.segments as f64);
        m.put(S::FlightOldest, &[], st.oldest_seconds);
        for (reason, &n) in &st.dumps {
            let seen = self.dumps.entry(reason.clone()).or_default();
            m.put(S::FlightDumps, &[reason], n.saturating_sub(*seen) as f64);
            *seen = n;
        }
        for l in State::LABELS {
            m.put(
                S::FlightState,
                &[l],
                if l == st.state.label() { 1.0 } else { 0.0 },
            );
        }
    }
}
