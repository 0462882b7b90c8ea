//! The snapshot's resctrl part: what each L3 holds for whom and the memory traffic
//! behind it (the resctrl source), per monitoring group and L3 domain ([`Resctrl`]), and
//! the one figure every consumer reads per LLC, node, process and group ([`CacheMon`]).
//!
//! Occupancy is a level (bytes the L3 holds for the group at the read); bandwidth is a
//! delta of the kernel's cumulative byte counters over the interval, like every counter
//! in a snapshot. A figure the kernel would not give is `None` with its reason
//! ([`Unread`]), never 0.

use serde::{Deserialize, Serialize};

/// Why a resctrl figure is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unread {
    /// The kernel read `Unavailable`: the hardware is not tracking this RMID now (AMD
    /// recycles its counters; also the first read after a counter was reconfigured).
    Unavailable,
    /// The kernel read `Unassigned`: `mbm_event` mode and no hardware counter is assigned
    /// to this event of the group in this domain (`mbm_L3_assignments`).
    Unassigned,
    /// The kernel read `Error`: it could not read the hardware.
    Error,
    /// This kernel does not monitor the event (not in `info/L3_MON/mon_features`).
    NoEvent,
    /// The counter went backwards (a reset, or a reused RMID): the interval is dropped.
    Reset,
    /// No earlier valid reading to take the difference from: a new group, or the first
    /// reading after an `Unavailable` / `Unassigned` one (a stale baseline is never used).
    Baseline,
    /// The file is missing or does not hold a number (the source state says which).
    Unreadable,
    /// The difference is more than any memory moves in the interval (over
    /// [`MAX_BYTES_PER_SEC`]): a corrupt counter, dropped.
    Implausible,
}

impl Unread {
    /// Its JSON name (docs, the TUI's dash tooltips, `report`).
    pub fn label(self) -> &'static str {
        match self {
            Unread::Unavailable => "unavailable",
            Unread::Unassigned => "unassigned",
            Unread::Error => "error",
            Unread::NoEvent => "no_event",
            Unread::Reset => "reset",
            Unread::Baseline => "baseline",
            Unread::Unreadable => "unreadable",
            Unread::Implausible => "implausible",
        }
    }
}

/// More bytes per second than this between one L3 and memory is no measurement (the
/// fastest HBM parts move about 4 TB/s per socket).
pub const MAX_BYTES_PER_SEC: u64 = 16 << 40;

fn no_reason(w: &Option<Unread>) -> bool {
    w.is_none()
}

/// L3 occupancy and memory bandwidth of one group in one domain, or summed (over
/// domains, groups, an LLC's or node's domains).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheMon {
    /// Bytes of L3 tagged with the group's RMID at the read (`llc_occupancy`; a level).
    pub occupancy_bytes: Option<u64>,
    /// Bytes between the L3 and memory over the interval, all memory
    /// (`mbm_total_bytes`, delta).
    pub mbm_total_bytes: Option<u64>,
    /// The same, memory of the L3's own node only (`mbm_local_bytes`, delta).
    pub mbm_local_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "no_reason")]
    pub occupancy_why: Option<Unread>,
    #[serde(default, skip_serializing_if = "no_reason")]
    pub total_why: Option<Unread>,
    #[serde(default, skip_serializing_if = "no_reason")]
    pub local_why: Option<Unread>,
}

/// Add `b` to `a`: a sum with an unknown part is unknown (the first reason is kept).
fn add_part(a: &mut Option<u64>, aw: &mut Option<Unread>, b: Option<u64>, bw: Option<Unread>) {
    match (*a, b) {
        (Some(x), Some(y)) => *a = Some(x.saturating_add(y)),
        (Some(_), None) => {
            *a = None;
            *aw = bw.or(Some(Unread::Unreadable));
        }
        (None, _) => {}
    }
}

impl CacheMon {
    /// Nothing to sum yet: the start of [`CacheMon::add`] chains.
    pub const ZERO: CacheMon = CacheMon {
        occupancy_bytes: Some(0),
        mbm_total_bytes: Some(0),
        mbm_local_bytes: Some(0),
        occupancy_why: None,
        total_why: None,
        local_why: None,
    };

    /// Add another part to this sum (strict: an unknown part makes the sum unknown).
    pub fn add(&mut self, o: &CacheMon) {
        add_part(
            &mut self.occupancy_bytes,
            &mut self.occupancy_why,
            o.occupancy_bytes,
            o.occupancy_why,
        );
        add_part(
            &mut self.mbm_total_bytes,
            &mut self.total_why,
            o.mbm_total_bytes,
            o.total_why,
        );
        add_part(
            &mut self.mbm_local_bytes,
            &mut self.local_why,
            o.mbm_local_bytes,
            o.local_why,
        );
    }

    /// The sum of `parts`, `None` when there are none.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a CacheMon>) -> Option<CacheMon> {
        let mut it = parts.into_iter().peekable();
        it.peek()?;
        let mut acc = CacheMon::ZERO;
        for p in it {
            acc.add(p);
        }
        Some(acc)
    }

    /// Bytes to and from other nodes' memory: total − local (0 when the two reads'
    /// skew makes local exceed total).
    pub fn mbm_remote_bytes(&self) -> Option<u64> {
        Some(self.mbm_total_bytes?.saturating_sub(self.mbm_local_bytes?))
    }

    /// Why remote is unknown: total's reason, else local's.
    pub fn remote_why(&self) -> Option<Unread> {
        self.mbm_remote_bytes()
            .is_none()
            .then(|| self.total_why.or(self.local_why))
            .flatten()
    }
}

/// What kind of resctrl group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// The root (default) group: every task not in another group.
    Root,
    /// A CTRL_MON group (a directory at the top of the mount): its figures include its
    /// MON groups'.
    CtrlMon,
    /// A MON group (`mon_groups/NAME` of the root or of a CTRL_MON group).
    Mon,
}

/// One group's reading of one L3 domain (or, with sub-NUMA clustering, of one node's
/// part of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainMon {
    /// The L3's cache id (`mon_L3_XX`).
    pub l3: u32,
    /// Sub-NUMA clustering: the node of `mon_sub_L3_YY` this reading is. The L3's own
    /// sum is then not listed (it would count the nodes twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// llctop's LLC the reading belongs to (by cache id and node; `None` when the
    /// topology has no such LLC — the source state says why).
    pub llc: Option<u32>,
    #[serde(flatten)]
    pub mon: CacheMon,
}

/// One monitoring group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResctrlGroup {
    /// Its path under the mount: `""` for the root, `p1`, `mon_groups/m1`,
    /// `p1/mon_groups/m11`.
    pub path: String,
    pub kind: GroupKind,
    /// The process llctop monitors in it (llctop's own `mon_groups/llctop-PID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The sum over `domains`.
    pub total: CacheMon,
    pub domains: Vec<DomainMon>,
}

/// The monitoring hardware's resources, from `info/L3_MON`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResctrlInfo {
    /// `num_rmids`: at most this many monitoring groups (root included).
    pub num_rmids: Option<u32>,
    /// The enabled counter assignment mode (`mbm_assign_mode`: `mbm_event` or
    /// `default`), when the kernel has modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign_mode: Option<String>,
    /// Per L3 domain: its hardware counters (`num_mbm_cntrs`) and how many are free
    /// (`available_mbm_cntrs`), in `mbm_event` mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<DomainCounters>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainCounters {
    pub l3: u32,
    pub total: Option<u32>,
    pub available: Option<u32>,
}

/// resctrl monitoring of the interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resctrl {
    pub info: ResctrlInfo,
    /// The machine: the sum of the root and CTRL_MON groups (each MON group is inside
    /// its parent's figures).
    pub total: CacheMon,
    /// Every group: the root first, then by path.
    pub groups: Vec<ResctrlGroup>,
    /// Counter readings dropped in the interval because they went backwards.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resets: u64,
    /// Readings that were missing or not a number in the interval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Resctrl {
    /// The groups whose figures do not contain one another's: the root and the
    /// CTRL_MON groups.
    pub fn top_level(&self) -> impl Iterator<Item = &ResctrlGroup> {
        self.groups.iter().filter(|g| g.kind != GroupKind::Mon)
    }

    /// llctop's group of process `pid`.
    pub fn of_pid(&self, pid: u32) -> Option<&ResctrlGroup> {
        self.groups.iter().find(|g| g.pid == Some(pid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(o: Option<u64>, t: Option<u64>, l: Option<u64>) -> CacheMon {
        CacheMon {
            occupancy_bytes: o,
            mbm_total_bytes: t,
            mbm_local_bytes: l,
            ..CacheMon::default()
        }
    }

    #[test]
    fn a_sum_with_an_unknown_part_is_unknown_with_its_reason() {
        let a = m(Some(10), Some(100), Some(60));
        let mut b = m(Some(5), None, Some(1));
        b.total_why = Some(Unread::Unassigned);
        let s = CacheMon::sum([&a, &a]).unwrap();
        assert_eq!(
            (s.occupancy_bytes, s.mbm_total_bytes, s.mbm_local_bytes),
            (Some(20), Some(200), Some(120))
        );
        assert_eq!(s.mbm_remote_bytes(), Some(80));
        let s = CacheMon::sum([&a, &b, &a]).unwrap();
        assert_eq!(s.occupancy_bytes, Some(25));
        assert_eq!(
            (s.mbm_total_bytes, s.total_why),
            (None, Some(Unread::Unassigned))
        );
        assert_eq!(s.mbm_remote_bytes(), None);
        assert_eq!(s.remote_why(), Some(Unread::Unassigned));
        assert_eq!(CacheMon::sum([]), None);
    }

    #[test]
    fn remote_is_never_negative_and_huge_sums_saturate() {
        assert_eq!(m(None, Some(5), Some(7)).mbm_remote_bytes(), Some(0));
        let big = m(Some(u64::MAX), Some(u64::MAX), Some(0));
        let s = CacheMon::sum([&big, &big]).unwrap();
        assert_eq!(s.occupancy_bytes, Some(u64::MAX));
    }

    #[test]
    fn reasons_serialise_by_their_labels_and_only_when_set() {
        let mut a = m(None, Some(1), Some(1));
        a.occupancy_why = Some(Unread::NoEvent);
        let j = serde_json::to_string(&a).unwrap();
        assert!(j.contains("\"occupancy_why\":\"no_event\""), "{j}");
        assert!(!j.contains("total_why"), "{j}");
        for u in [
            Unread::Unavailable,
            Unread::Unassigned,
            Unread::Error,
            Unread::NoEvent,
            Unread::Reset,
            Unread::Baseline,
            Unread::Unreadable,
            Unread::Implausible,
        ] {
            assert_eq!(
                serde_json::to_string(&u).unwrap(),
                format!("\"{}\"", u.label())
            );
        }
    }
}
