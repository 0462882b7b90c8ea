//! Emulated preferred LLC, for kernels without cache-aware scheduling (before v7.2) or
//! sources that cannot read `p->preferred_llc`.
//!
//! Mirrors the kernel's choice (kernel-interfaces §5): per process, runtime per LLC is
//! decayed geometrically (halved once per sampling period), the preferred LLC is the one
//! with the most decayed runtime, and a new LLC replaces the current preference only when
//! its value exceeds the current one's by more than 2× (hysteresis).
//!
//! The hit ratio of an interval is measured against the preference held *entering* the
//! interval — as a slice under the kernel's preference is judged against the one read
//! at its switch-in; a process
//! seen for the first time is measured against the preference its first interval gives.

use rustc_hash::FxHashMap as HashMap;

use crate::snapshot::SatSum;
use crate::topology::Topology;

/// The kernel's id of each of llctop's LLCs (indexed by llctop LLC id), in the id space of
/// `p->preferred_llc` (`sd_llc_id`). Since v7.2 the kernel allocates these densely when it
/// builds the sched domains: it visits the CPUs in increasing order and gives each LLC
/// not seen yet the lowest free id (kernel/sched/topology.c: build_sched_domains,
/// __sched_domains_alloc_llc_id) — at boot, the rank of the LLC by its lowest online CPU.
/// The kernel keeps an id while any CPU of the LLC stays online, so after CPU hotplug its
/// ids may differ from this; an LLC without an online CPU has none.
pub fn kernel_llc_ids(topo: &Topology) -> Vec<Option<u32>> {
    let first_online = |cpus: &[u32]| {
        cpus.iter()
            .copied()
            .filter(|&c| topo.cpus.iter().any(|x| x.cpu == c && x.online))
            .min()
    };
    let mut order: Vec<(u32, usize)> = topo
        .llcs
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((first_online(&l.cpus)?, i)))
        .collect();
    order.sort_unstable();
    let mut ids = vec![None; topo.llcs.len()];
    for (rank, (_, i)) in order.into_iter().enumerate() {
        ids[i] = Some(rank as u32);
    }
    ids
}

#[derive(Debug, Clone, Default)]
struct State {
    /// (LLC, decayed runtime) of the LLCs the process ran on, by LLC: a process runs on
    /// a few of a machine's LLCs, and a machine may run thousands of processes.
    decayed: Vec<(u32, f64)>,
    preferred: Option<u32>,
}

impl State {
    fn at(&self, llc: u32) -> f64 {
        self.decayed
            .binary_search_by_key(&llc, |e| e.0)
            .map_or(0.0, |i| self.decayed[i].1)
    }
}

/// What the tracker says about one process for one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preference {
    pub preferred_llc: Option<u32>,
    /// Runtime on the preferred LLC / runtime in the interval; `None` without runtime.
    pub hit: Option<f64>,
}

#[derive(Debug, Default)]
pub struct PreferredLlc {
    procs: HashMap<u32, State>,
}

impl PreferredLlc {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one interval of a process's runtime per LLC (indexed by LLC id).
    pub fn update(&mut self, pid: u32, runtime_per_llc: &[u64]) -> Preference {
        let sparse: Vec<(u32, u64)> = runtime_per_llc
            .iter()
            .enumerate()
            .filter(|e| *e.1 > 0)
            .map(|(l, &r)| (l as u32, r))
            .collect();
        self.update_sparse(pid, &sparse)
    }

    /// Feed one interval of a process's runtime on the LLCs it ran on: (LLC id, runtime),
    /// ascending by LLC.
    pub fn update_sparse(&mut self, pid: u32, runtime: &[(u32, u64)]) -> Preference {
        let st = self.procs.entry(pid).or_default();
        for d in &mut st.decayed {
            d.1 /= 2.0;
        }
        for &(l, r) in runtime {
            match st.decayed.binary_search_by_key(&l, |e| e.0) {
                Ok(i) => st.decayed[i].1 += r as f64,
                Err(i) => st.decayed.insert(i, (l, r as f64)),
            }
        }
        let entering = st.preferred;
        let best = argmax(&st.decayed);
        st.preferred = match (st.preferred, best) {
            (None, b) => b,
            (Some(cur), Some(b)) if b != cur => {
                if st.at(b) > 2.0 * st.at(cur) {
                    Some(b)
                } else {
                    Some(cur)
                }
            }
            (cur, _) => cur,
        };
        let measured = entering.or(st.preferred);
        let total: u64 = runtime.iter().map(|e| e.1).sat_sum();
        let on = |p: u32| {
            runtime
                .binary_search_by_key(&p, |e| e.0)
                .map_or(0, |i| runtime[i].1)
        };
        let hit = match (measured, total) {
            (_, 0) => None,
            (None, _) => Some(0.0),
            (Some(p), t) => Some(on(p) as f64 / t as f64),
        };
        Preference {
            preferred_llc: st.preferred,
            hit,
        }
    }

    /// Forget processes not in `alive` (called once per interval).
    pub fn retain(&mut self, alive: impl Fn(u32) -> bool) {
        self.procs.retain(|pid, _| alive(*pid));
    }

    pub fn len(&self) -> usize {
        self.procs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }
}

/// The LLC with the most decayed runtime (the lowest id of those tied); `None` when none
/// has any.
fn argmax(v: &[(u32, f64)]) -> Option<u32> {
    let mut best: Option<(u32, f64)> = None;
    for &(l, x) in v {
        if x > 0.0 && best.is_none_or(|(_, b)| x > b) {
            best = Some((l, x));
        }
    }
    best.map(|(l, _)| l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_llc_ids_rank_llcs_by_their_first_online_cpu() {
        let mut t = crate::topology::tests::sample();
        // LLC l holds CPUs 2l, 2l+1, 2l+8, 2l+9: ranks follow the ids.
        assert_eq!(kernel_llc_ids(&t), [Some(0), Some(1), Some(2), Some(3)]);
        // Interleaved numbering: LLC 0's lowest CPU is 6, LLC 3's is 0.
        t.llcs[0].cpus = vec![6, 7];
        t.llcs[3].cpus = vec![0, 1];
        assert_eq!(kernel_llc_ids(&t), [Some(3), Some(1), Some(2), Some(0)]);
        // An LLC whose CPUs are all offline has no id; the others close ranks.
        for c in &mut t.cpus {
            if c.cpu == 2 || c.cpu == 3 {
                c.online = false;
            }
        }
        t.llcs[1].cpus = vec![2, 3];
        assert_eq!(kernel_llc_ids(&t), [Some(2), None, Some(1), Some(0)]);
    }

    #[test]
    fn first_interval_picks_argmax() {
        let mut p = PreferredLlc::new();
        let r = p.update(1, &[10, 30, 0]);
        assert_eq!(r.preferred_llc, Some(1));
        assert_eq!(r.hit, Some(0.75));
    }

    #[test]
    fn hysteresis_needs_more_than_double() {
        let mut p = PreferredLlc::new();
        p.update(1, &[100, 0]);
        // decayed: [50, 100] -> 100 is not > 2*50: stays on 0; hit measured against 0.
        let r = p.update(1, &[0, 100]);
        assert_eq!(r.preferred_llc, Some(0));
        assert_eq!(r.hit, Some(0.0));
        // decayed: [25, 150] -> 150 > 50: switches to 1; hit still measured against 0.
        let r = p.update(1, &[0, 100]);
        assert_eq!(r.preferred_llc, Some(1));
        assert_eq!(r.hit, Some(0.0));
        let r = p.update(1, &[0, 100]);
        assert_eq!(r.hit, Some(1.0));
    }

    #[test]
    fn idle_interval_has_no_hit_ratio_and_decays() {
        let mut p = PreferredLlc::new();
        p.update(7, &[0, 64]);
        let r = p.update(7, &[0, 0]);
        assert_eq!(r.preferred_llc, Some(1));
        assert_eq!(r.hit, None);
        p.retain(|pid| pid != 7);
        assert!(p.is_empty());
    }

    #[test]
    fn no_runtime_ever_means_no_preference() {
        let mut p = PreferredLlc::new();
        let r = p.update(3, &[0, 0]);
        assert_eq!(
            r,
            Preference {
                preferred_llc: None,
                hit: None
            }
        );
    }
}
