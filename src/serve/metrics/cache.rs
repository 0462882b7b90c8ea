//! The resctrl series: what each LLC's L3 holds (a gauge, with the LLC's share of the
//! L3 beside it) and the memory traffic behind it (a byte counter by locality), the
//! readings resctrl would not give by reason, and — with `--process-series` — the same
//! for the processes llctop monitors in groups of its own. A figure resctrl did not give
//! in an interval adds nothing (an occupancy it could not read is dropped from the
//! scrape, never shown as 0).

use std::collections::BTreeMap;

use super::series::{Labels, Metric, Metrics, S, llc_values};
use crate::snapshot::{CacheMon, Snapshot, Unread};
use crate::topology::Topology;

/// The state kept between snapshots (the series are in [`Metrics`]).
#[derive(Default)]
pub struct CacheSeries {
    /// pid → labels of its process series shown now.
    proc_shown: BTreeMap<u32, Labels>,
    /// The capacities are set (at the first snapshot with resctrl's figures: a host
    /// without resctrl gets none of these series).
    capacity_set: bool,
}

fn llc_labels(topo: &Topology, id: u32) -> Labels {
    let [a, b] = llc_values(topo, id);
    S::LlcOccupancy.def().labels(&[&a, &b])
}

impl CacheSeries {
    /// Fold one snapshot in; per-process series for the monitored processes when
    /// `processes` (the `--process-series` limit) is not 0.
    pub fn update(&mut self, m: &Metrics, s: &Snapshot, topo: &Topology, processes: usize) {
        let Some(r) = &s.resctrl else {
            return;
        };
        if !self.capacity_set {
            self.capacity_set = true;
            for llc in &topo.llcs {
                if let Some(c) = topo.llc_capacity_bytes(llc.id) {
                    m.get(S::LlcCapacity)
                        .put(&llc_labels(topo, llc.id), c as f64);
                }
            }
        }
        for g in &s.llcs {
            let labels = llc_labels(topo, g.id);
            let occupancy = m.get(S::LlcOccupancy);
            match g.cache.and_then(|c| c.occupancy_bytes) {
                Some(o) => occupancy.put(&labels, o as f64),
                None => occupancy.remove(&labels),
            }
            if let Some(c) = g.cache {
                add_bandwidth(m.get(S::MemoryBandwidth), &labels, &c);
            }
        }
        let mut unread: BTreeMap<&'static str, u64> = BTreeMap::new();
        for d in r.groups.iter().flat_map(|g| &g.domains) {
            let m = &d.mon;
            for w in [m.occupancy_why, m.total_why, m.local_why]
                .into_iter()
                .flatten()
            {
                if w != Unread::NoEvent {
                    *unread.entry(w.label()).or_default() += 1;
                }
            }
        }
        for (reason, n) in unread {
            m.put(S::ResctrlUnread, &[reason], n as f64);
        }
        if processes == 0 {
            return;
        }
        let comm = |pid: u32| {
            s.processes
                .iter()
                .flat_map(|t| &t.rows)
                .find(|p| p.pid == pid)
                .map_or(String::new(), |p| p.comm.clone())
        };
        let (proc_occupancy, proc_bandwidth) = (m.get(S::ProcOccupancy), m.get(S::ProcBandwidth));
        let mut shown = BTreeMap::new();
        let mut groups: Vec<_> = r.groups.iter().filter(|g| g.pid.is_some()).collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.total.occupancy_bytes.unwrap_or(0)));
        for g in groups.into_iter().take(processes) {
            let pid = g.pid.unwrap_or(0);
            let labels = S::ProcOccupancy
                .def()
                .labels(&[&pid.to_string(), &comm(pid)]);
            match g.total.occupancy_bytes {
                Some(o) => proc_occupancy.put(&labels, o as f64),
                None => proc_occupancy.remove(&labels),
            }
            add_bandwidth(proc_bandwidth, &labels, &g.total);
            shown.insert(pid, labels);
        }
        for (pid, old) in std::mem::replace(&mut self.proc_shown, shown) {
            if self.proc_shown.get(&pid) != Some(&old) {
                proc_occupancy.remove(&old);
                for loc in ["local", "remote", "unknown"] {
                    proc_bandwidth.remove(&with(&old, loc));
                }
            }
        }
    }
}

fn with(labels: &Labels, locality: &str) -> Labels {
    let mut v = labels.clone();
    v.push(("locality".into(), locality.into()));
    v
}

/// Add an interval's local and remote bytes where resctrl gave them; without a local
/// count (a kernel without `mbm_local_bytes`) the total goes to `locality="unknown"`, so
/// that the sum over localities is always all the traffic counted.
fn add_bandwidth(c: &Metric, labels: &Labels, m: &CacheMon) {
    match (m.mbm_local_bytes, m.mbm_remote_bytes(), m.mbm_total_bytes) {
        (Some(loc), Some(rem), _) => {
            c.put(&with(labels, "local"), loc as f64);
            c.put(&with(labels, "remote"), rem as f64);
        }
        (None, _, Some(tot)) => {
            c.put(&with(labels, "unknown"), tot as f64);
        }
        _ => {}
    }
}
