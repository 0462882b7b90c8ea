//! The resctrl series: what each LLC's L3 holds (a gauge, with the LLC's share of the
//! L3 beside it) and the memory traffic behind it (a byte counter by locality), the
//! readings resctrl would not give by reason, and — with `--process-series` — the same
//! for the processes llctop monitors in groups of its own. A figure resctrl did not give
//! in an interval adds nothing (an occupancy it could not read is dropped from the
//! scrape, never shown as 0).

use std::collections::BTreeMap;

use prometheus_client::registry::{Registry, Unit};

use super::{Count, Labels, Level, l};
use crate::snapshot::{CacheMon, Snapshot, Unread};
use crate::topology::Topology;

pub struct CacheSeries {
    occupancy: Level,
    capacity: Level,
    bandwidth: Count,
    unread: Count,
    proc_occupancy: Level,
    proc_bandwidth: Count,
    /// pid → labels of its process series shown now.
    proc_shown: BTreeMap<u32, Labels>,
    /// The capacities are set (at the first snapshot with resctrl's figures: a host
    /// without resctrl gets none of these series).
    capacity_set: bool,
}

impl CacheSeries {
    pub fn register(r: &mut Registry) -> CacheSeries {
        let s = CacheSeries {
            occupancy: Level::default(),
            capacity: Level::default(),
            bandwidth: Count::default(),
            unread: Count::default(),
            proc_occupancy: Level::default(),
            proc_bandwidth: Count::default(),
            proc_shown: BTreeMap::new(),
            capacity_set: false,
        };
        r.register_with_unit(
            "llc_occupancy",
            "L3 bytes held for all resctrl groups in the LLC's L3 (its node's part with sub-NUMA clustering), resctrl llc_occupancy",
            Unit::Bytes,
            s.occupancy.clone(),
        );
        r.register_with_unit(
            "llc_capacity",
            "The LLC's share of its L3 (the cache size, divided among the nodes sharing it)",
            Unit::Bytes,
            s.capacity.clone(),
        );
        r.register_with_unit(
            "memory_bandwidth",
            "Bytes between the LLC's L3 and memory, by locality (local: its node's memory; remote: the rest; unknown: a kernel without mbm_local_bytes), resctrl mbm_*_bytes",
            Unit::Bytes,
            s.bandwidth.clone(),
        );
        r.register(
            "resctrl_readings_unread",
            "resctrl readings that gave no figure, by reason (unavailable, unassigned, error, reset, baseline, unreadable, implausible)",
            s.unread.clone(),
        );
        r.register_with_unit(
            "process_l3_occupancy",
            "L3 bytes held for a process llctop monitors in a resctrl group of its own (--cache-top, --cache-pid; with --process-series)",
            Unit::Bytes,
            s.proc_occupancy.clone(),
        );
        r.register_with_unit(
            "process_memory_bandwidth",
            "Bytes between the L3s and memory for a process llctop monitors, by locality (with --process-series)",
            Unit::Bytes,
            s.proc_bandwidth.clone(),
        );
        s
    }

    /// Fold one snapshot in; per-process series for the monitored processes when
    /// `processes` (the `--process-series` limit) is not 0.
    pub fn update(&mut self, s: &Snapshot, topo: &Topology, processes: usize) {
        let Some(r) = &s.resctrl else {
            return;
        };
        if !self.capacity_set {
            self.capacity_set = true;
            for llc in &topo.llcs {
                if let Some(c) = topo.llc_capacity_bytes(llc.id) {
                    self.capacity
                        .get_or_create(&llc_labels(topo, llc.id))
                        .set(c as f64);
                }
            }
        }
        for g in &s.llcs {
            let labels = llc_labels(topo, g.id);
            match g.cache.and_then(|c| c.occupancy_bytes) {
                Some(o) => {
                    self.occupancy.get_or_create(&labels).set(o as f64);
                }
                None => {
                    self.occupancy.remove(&labels);
                }
            }
            if let Some(c) = g.cache {
                add_bandwidth(&self.bandwidth, &labels, &c);
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
            self.unread
                .get_or_create(&l(&[("reason", reason.to_string())]))
                .inc_by(n);
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
        let mut shown = BTreeMap::new();
        let mut groups: Vec<_> = r.groups.iter().filter(|g| g.pid.is_some()).collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.total.occupancy_bytes.unwrap_or(0)));
        for g in groups.into_iter().take(processes) {
            let pid = g.pid.unwrap_or(0);
            let labels = l(&[("pid", pid.to_string()), ("comm", comm(pid))]);
            match g.total.occupancy_bytes {
                Some(o) => {
                    self.proc_occupancy.get_or_create(&labels).set(o as f64);
                }
                None => {
                    self.proc_occupancy.remove(&labels);
                }
            }
            add_bandwidth(&self.proc_bandwidth, &labels, &g.total);
            shown.insert(pid, labels);
        }
        for (pid, old) in std::mem::replace(&mut self.proc_shown, shown) {
            if self.proc_shown.get(&pid) != Some(&old) {
                self.proc_occupancy.remove(&old);
                for loc in ["local", "remote", "unknown"] {
                    self.proc_bandwidth.remove(&with(&old, loc));
                }
            }
        }
    }
}

fn llc_labels(topo: &Topology, id: u32) -> Labels {
    let node = topo
        .llcs
        .iter()
        .find(|x| x.id == id)
        .and_then(|x| x.node)
        .map_or("-".into(), |n| n.to_string());
    l(&[("llc", id.to_string()), ("node", node)])
}

fn with(labels: &Labels, locality: &str) -> Labels {
    let mut v = labels.clone();
    v.push(("locality".into(), locality.into()));
    v
}

/// Add an interval's local and remote bytes where resctrl gave them; without a local
/// count (a kernel without `mbm_local_bytes`) the total goes to `locality="unknown"`, so
/// that the sum over localities is always all the traffic counted.
fn add_bandwidth(c: &Count, labels: &Labels, m: &CacheMon) {
    match (m.mbm_local_bytes, m.mbm_remote_bytes(), m.mbm_total_bytes) {
        (Some(loc), Some(rem), _) => {
            c.get_or_create(&with(labels, "local")).inc_by(loc);
            c.get_or_create(&with(labels, "remote")).inc_by(rem);
        }
        (None, _, Some(tot)) => {
            c.get_or_create(&with(labels, "unknown")).inc_by(tot);
        }
        _ => {}
    }
}
