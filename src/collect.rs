//! The collector: owns the topology, the sources and the enrichment stage, and runs the
//! pipeline once per tick — every source reads its raw counters and turns them into the
//! interval's figures (process rows for the busiest and for the processes a run keeps,
//! [`crate::procgroup::KeptRows`], resolved just before the read), [`crate::enrich`]
//! names the process rows (once),
//! [`crate::kstate::cache_aware::explain`] says why a process has no preferred LLC,
//! [`crate::kstate::sharing`] which processes map the same shared memory, and
//! [`aggregate`] derives the per-LLC, per-node and system figures from the per-CPU
//! values and the LLC migration matrix — in one place, whatever the source.

use std::time::Duration;

use crate::clock::{mono_ns, unix_ns};
use crate::enrich::ProcessInfo;
use crate::kroot::KernelRoot;
use crate::procgroup::KeptRows;
use crate::snapshot::SatSum;
use crate::snapshot::{CpuStats, GroupStats, Snapshot};
use crate::source::Source;
use crate::topology::Topology;

pub struct Collector {
    topo: Topology,
    sources: Vec<Box<dyn Source>>,
    processes: ProcessInfo,
    sharing: crate::kstate::sharing::SharedMemory,
    seq: u64,
    prev_mono: Option<u64>,
    /// Processes the sources give rows whatever their rank, and where to find them.
    kept: KeptRows,
    root: KernelRoot,
}

impl Collector {
    /// Drop every source now (BPF programs detached, perf counters closed, llctop's
    /// resctrl groups removed): the run is over, and what it waits for next (a child that
    /// takes its time to stop) must not hold them.
    pub fn release_sources(&mut self) {
        self.sources.clear();
    }

    /// `root`: where the enrichment stage reads `/proc/PID` (the sources' own root).
    pub fn new(root: &KernelRoot, topo: Topology, sources: Vec<Box<dyn Source>>) -> Self {
        Collector {
            topo,
            sources,
            processes: ProcessInfo::new(root.clone()),
            sharing: crate::kstate::sharing::SharedMemory::new(root.clone()),
            seq: 0,
            prev_mono: None,
            kept: KeptRows::default(),
            root: root.clone(),
        }
    }

    /// The handle that says which processes get a row whatever their rank.
    pub fn kept_rows(&self) -> KeptRows {
        self.kept.clone()
    }

    /// Number the snapshots on from `seq` (a flight recorder's history of this boot goes
    /// on across restarts).
    pub fn continue_after(&mut self, seq: u64) {
        self.seq = seq.saturating_add(1);
    }

    /// Run the sources and the enrichment stage into a snapshot stamped `now` (the end of
    /// the interval since `prev`, which the sources use for rates).
    fn read(&mut self, now: u64, prev: Option<u64>) -> Snapshot {
        let mut snap = empty_snapshot(&self.topo);
        snap.time.mono_ns = now;
        snap.time.unix_ns = unix_ns();
        snap.time.interval_ns = prev.map_or(0, |p| now.saturating_sub(p));
        let kept = self.kept.resolve(&self.root);
        for s in &mut self.sources {
            s.keep_rows(&kept);
            s.sample(&self.topo, &mut snap);
        }
        self.processes.enrich(&mut snap);
        // Why a process has no preferred LLC (7.2+): the kernel's rules over the figures
        // the sources just read (thread counts come from the enrichment).
        crate::kstate::cache_aware::explain(&self.topo, &mut snap);
        snap
    }

    /// The stages that need the snapshot's number: which rows share memory.
    fn number(&mut self, snap: &mut Snapshot) {
        snap.seq = self.seq;
        self.seq += 1;
        self.sharing.read(snap);
    }

    /// Read every source. The first call takes the baseline and returns `None`; each later
    /// call returns the snapshot of the interval since the previous call.
    pub fn tick(&mut self) -> Option<Snapshot> {
        self.tick_after(0)
    }

    /// [`Collector::tick`] after `missed` ticks that did not run (said in the snapshot).
    fn tick_after(&mut self, missed: u32) -> Option<Snapshot> {
        let now = mono_ns();
        let prev = self.prev_mono.replace(now);
        let mut snap = self.read(now, prev);
        prev?;
        snap.time.missed_ticks = missed;
        self.number(&mut snap);
        aggregate(&self.topo, &mut snap);
        Some(snap)
    }

    /// Take the baseline now (if not yet taken) and return the source states it found.
    pub fn baseline(&mut self) -> Vec<crate::snapshot::SourceStatus> {
        if self.prev_mono.is_some() {
            return Vec::new();
        }
        let now = mono_ns();
        self.prev_mono = Some(now);
        self.read(now, None).sources
    }

    /// Run `f` on every snapshot, one per `interval`, drift-free, until `f` returns false
    /// or `stop()` says so. Sleeps until the next tick, woken at once by a stop (the
    /// signals' bell, crate::signals::ring) and looking at `stop()` at least every
    /// [`STOP_LOOK`] all the same (a flag set without a ring).
    /// Ticks missed while the process did not run (SIGSTOP, a stalled machine, a slow
    /// `f`) are skipped, not caught up: one longer snapshot, never a burst of slivers.
    pub fn run(
        &mut self,
        interval: Duration,
        stop: impl Fn() -> bool,
        mut f: impl FnMut(Snapshot) -> bool,
    ) {
        let step = STOP_LOOK.min(interval);
        self.baseline();
        let mut deadline = std::time::Instant::now();
        loop {
            // Deadlines a whole interval apart: no drift, and no multiplication to wrap.
            let Some(next) = deadline.checked_add(interval) else {
                return;
            };
            deadline = next;
            loop {
                let seen = crate::signals::rings();
                if stop() {
                    return;
                }
                let now = std::time::Instant::now();
                if now >= deadline {
                    break;
                }
                crate::signals::nap(seen, step.min(deadline - now));
            }
            let (missed, on) = regrid(deadline, std::time::Instant::now(), interval);
            deadline = on;
            if let Some(s) = self.tick_after(missed)
                && !f(s)
            {
                return;
            }
        }
    }
}

/// How often [`Collector::run`] looks at its stop condition while it waits for a tick,
/// besides waking for each ring of the signals' bell.
pub const STOP_LOOK: Duration = Duration::from_secs(1);

/// The ticks missed at a tick due at `deadline` that runs at `now`, and the deadline the
/// next interval counts from: the same grid when the tick is less than half an interval
/// late, else a grid starting `now` — so the next snapshot is never a sliver (a stop of
/// 3.05 intervals gives one snapshot of 3.05 and then a whole one, not one of 0.05).
fn regrid(
    deadline: std::time::Instant,
    now: std::time::Instant,
    interval: Duration,
) -> (u32, std::time::Instant) {
    let missed = missed_ticks(deadline, now, interval);
    if now.saturating_duration_since(deadline) > interval / 2 {
        (missed, now)
    } else {
        (missed, deadline)
    }
}

/// Whole intervals that passed after `deadline` before `now`: the ticks missed.
fn missed_ticks(deadline: std::time::Instant, now: std::time::Instant, interval: Duration) -> u32 {
    let late = now.saturating_duration_since(deadline).as_nanos();
    u32::try_from(late / interval.as_nanos().max(1)).unwrap_or(u32::MAX)
}

/// A snapshot with one entry per CPU/LLC/node and nothing measured yet.
pub fn empty_snapshot(topo: &Topology) -> Snapshot {
    Snapshot {
        cpus: topo
            .cpus
            .iter()
            .map(|c| CpuStats {
                cpu: c.cpu,
                online: c.online,
                ..CpuStats::default()
            })
            .collect(),
        ..Snapshot::default()
    }
}

fn sum_opt<T: Copy + std::ops::Add<Output = T>>(it: impl Iterator<Item = Option<T>>) -> Option<T> {
    it.flatten().reduce(|a, b| a + b)
}

/// The `p` quantile (0..1) of a log2 histogram, as the upper bound of its bucket (ns).
pub fn hist_quantile(hist: &[u64], p: f64) -> Option<u64> {
    let total: u64 = hist.iter().copied().sat_sum();
    if total == 0 {
        return None;
    }
    let want = (p * total as f64).ceil().max(1.0) as u64;
    let mut acc = 0u64;
    for (i, &n) in hist.iter().enumerate() {
        acc = acc.saturating_add(n);
        if acc >= want {
            return Some(1u64 << (i + 1).min(63));
        }
    }
    None
}

fn group(id: u32, cpus: &[&CpuStats]) -> GroupStats {
    let busy: Vec<f64> = cpus.iter().filter_map(|c| c.busy).collect();
    let mut hist: Option<Vec<u64>> = None;
    for h in cpus.iter().filter_map(|c| c.rq_wait_hist.as_ref()) {
        let acc = hist.get_or_insert_with(Vec::new);
        if acc.len() < h.len() {
            acc.resize(h.len(), 0);
        }
        for (a, b) in acc.iter_mut().zip(h) {
            *a = a.saturating_add(*b);
        }
    }
    GroupStats {
        rq_wait_p50_ns: hist.as_deref().and_then(|h| hist_quantile(h, 0.5)),
        rq_wait_p99_ns: hist.as_deref().and_then(|h| hist_quantile(h, 0.99)),
        id,
        cpus: cpus.len() as u32,
        busy: (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64),
        ctx_switches: sum_opt(cpus.iter().map(|c| c.ctx_switches)),
        rq_wait_ns: sum_opt(cpus.iter().map(|c| c.rq_wait_ns)),
        runnable: sum_opt(cpus.iter().map(|c| c.runnable)),
        cas_queued: sum_opt(cpus.iter().map(|c| c.cas_queued)),
        cas_queued_pref: sum_opt(cpus.iter().map(|c| c.cas_queued_pref)),
        counters: crate::counters::sum(cpus.iter().filter_map(|c| c.counters.as_deref())),
        ..GroupStats::default()
    }
}

/// Add the LLCs' uncore L3 readings to the LLC groups and their nodes, then derive the
/// group metrics over the interval.
fn attach_counters(topo: &Topology, snap: &mut Snapshot, secs: f64) {
    for u in &snap.uncore_l3 {
        let llc_node = topo
            .llcs
            .iter()
            .find(|l| l.id == u.llc)
            .and_then(|l| l.node)
            .and_then(|n| snap.nodes.iter().position(|g| g.id == n));
        let groups = snap
            .llcs
            .iter_mut()
            .filter(|g| g.id == u.llc)
            .chain(llc_node.and_then(|i| snap.nodes.get_mut(i)));
        for g in groups {
            let c = g.counters.get_or_insert_with(Default::default);
            let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (x, None) | (None, x) => x,
            };
            c.l3_lookups = add(c.l3_lookups, u.lookups);
            c.l3_misses = add(c.l3_misses, u.misses);
        }
    }
    for g in snap.llcs.iter_mut().chain(snap.nodes.iter_mut()) {
        if let Some(c) = g.counters.as_mut() {
            crate::counters::derive(c, secs);
        }
    }
}

/// Fill `llcs`, `nodes` and `system.busy` from the per-CPU values and the migration matrix.
pub fn aggregate(topo: &Topology, snap: &mut Snapshot) {
    let by_cpu = |cpus: &[u32]| -> Vec<&CpuStats> {
        cpus.iter()
            .filter_map(|&c| snap.cpu(c).filter(|s| s.online))
            .collect()
    };
    let mut llcs: Vec<GroupStats> = topo
        .llcs
        .iter()
        .map(|l| group(l.id, &by_cpu(&l.cpus)))
        .collect();
    let mut nodes: Vec<GroupStats> = topo
        .nodes
        .iter()
        .map(|n| group(n.id, &by_cpu(&n.cpus)))
        .collect();
    let online: Vec<&CpuStats> = snap.cpus.iter().filter(|c| c.online).collect();
    snap.system.busy = group(0, &online).busy;

    if let Some(m) = &snap.migrations {
        let n = m.llc_matrix.len();
        let node_pos = |llc: usize| {
            topo.llcs
                .get(llc)
                .and_then(|l| l.node)
                .and_then(|id| topo.node_index(id))
        };
        for g in llcs.iter_mut().chain(nodes.iter_mut()) {
            g.migrations_in = Some(0);
            g.migrations_out = Some(0);
            g.migrations_within = Some(0);
        }
        let bump = |g: &mut GroupStats, f: fn(&mut GroupStats) -> &mut Option<u64>, v: u64| {
            if let Some(x) = f(g) {
                *x = x.saturating_add(v);
            }
        };
        for (from, row) in m.llc_matrix.iter().enumerate().take(n) {
            for (to, &v) in row.iter().enumerate() {
                if v == 0 {
                    continue;
                }
                if from == to {
                    if let Some(g) = llcs.get_mut(from) {
                        bump(g, |g| &mut g.migrations_within, v);
                    }
                } else {
                    if let Some(g) = llcs.get_mut(from) {
                        bump(g, |g| &mut g.migrations_out, v);
                    }
                    if let Some(g) = llcs.get_mut(to) {
                        bump(g, |g| &mut g.migrations_in, v);
                    }
                }
                match (node_pos(from), node_pos(to)) {
                    (Some(a), Some(b)) if a == b => {
                        bump(&mut nodes[a], |g| &mut g.migrations_within, v)
                    }
                    (a, b) => {
                        if let Some(a) = a {
                            bump(&mut nodes[a], |g| &mut g.migrations_out, v);
                        }
                        if let Some(b) = b {
                            bump(&mut nodes[b], |g| &mut g.migrations_in, v);
                        }
                    }
                }
            }
        }
    }
    snap.llcs = llcs;
    snap.nodes = nodes;
    let secs = snap.time.interval_secs();
    attach_counters(topo, snap, secs);
    attach_cache(topo, snap);
}

/// Sum resctrl's readings into the LLCs and nodes: every top-level group's (the root's
/// and each CTRL_MON group's; a MON group is inside its parent) reading of each LLC's
/// domain; a node is the sum of its LLCs, unknown when one of them is.
fn attach_cache(topo: &Topology, snap: &mut Snapshot) {
    let Some(r) = &snap.resctrl else {
        return;
    };
    let mut parts: Vec<Vec<&crate::snapshot::CacheMon>> = vec![Vec::new(); snap.llcs.len()];
    for g in r.top_level() {
        for d in &g.domains {
            if let Some(p) = d.llc.and_then(|l| snap.llcs.iter().position(|g| g.id == l)) {
                parts[p].push(&d.mon);
            }
        }
    }
    let sums: Vec<Option<crate::snapshot::CacheMon>> = parts
        .into_iter()
        .map(crate::snapshot::CacheMon::sum)
        .collect();
    for (g, s) in snap.llcs.iter_mut().zip(&sums) {
        g.cache = *s;
    }
    for n in snap.nodes.iter_mut() {
        let mine: Vec<Option<&crate::snapshot::CacheMon>> = topo
            .llcs
            .iter()
            .filter(|l| l.node == Some(n.id))
            .map(|l| {
                snap.llcs
                    .iter()
                    .position(|g| g.id == l.id)
                    .and_then(|p| sums[p].as_ref())
            })
            .collect();
        n.cache = if !mine.is_empty() && mine.iter().all(Option::is_some) {
            crate::snapshot::CacheMon::sum(mine.into_iter().flatten())
        } else {
            None
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Migrations;

    #[test]
    fn ticks_missed_are_whole_intervals_late() {
        let t0 = std::time::Instant::now();
        let s = Duration::from_secs(1);
        assert_eq!(missed_ticks(t0, t0, s), 0);
        // On time or a little late: the grid stays; half an interval late or more: a new
        // grid from now, so the next snapshot is whole.
        let ms = Duration::from_millis;
        assert_eq!(regrid(t0, t0 + ms(10), ms(100)), (0, t0));
        assert_eq!(regrid(t0, t0 + ms(60), ms(100)), (0, t0 + ms(60)));
        assert_eq!(regrid(t0, t0 + ms(3050), ms(100)), (30, t0 + ms(3050)));
        assert_eq!(missed_ticks(t0, t0 + Duration::from_millis(999), s), 0);
        assert_eq!(missed_ticks(t0, t0 + Duration::from_millis(5_500), s), 5);
        assert_eq!(missed_ticks(t0 + s, t0, s), 0, "early is not late");
    }

    #[test]
    fn aggregates_groups_and_matrix() {
        let t = crate::topology::tests::sample();
        let mut s = empty_snapshot(&t);
        for c in &mut s.cpus {
            c.busy = Some(if c.cpu < 8 { 1.0 } else { 0.0 });
            c.rq_wait_ns = Some(10);
            c.runnable = Some(1);
        }
        s.cpus[3].online = false; // offline CPUs do not count
        let mut m = vec![vec![0u64; 4]; 4];
        m[0][0] = 5; // within llc0
        m[0][1] = 2; // llc0 -> llc1, same node 0
        m[1][3] = 7; // llc1 (node 0) -> llc3 (node 1)
        s.migrations = Some(Migrations {
            llc_matrix: m,
            ..Migrations::default()
        });
        aggregate(&t, &mut s);
        // llc0 = cpus 0,1,8,9: busy 1,1,0,0
        assert_eq!(s.llcs[0].busy, Some(0.5));
        assert_eq!(s.llcs[0].cpus, 4);
        assert_eq!(s.llcs[1].cpus, 3, "cpu3 offline");
        assert_eq!(s.llcs[0].rq_wait_ns, Some(40));
        assert_eq!(
            s.llcs[0].ctx_switches, None,
            "no source gave it: stays null"
        );
        assert_eq!(
            (s.llcs[0].migrations_out, s.llcs[0].migrations_within),
            (Some(2), Some(5))
        );
        assert_eq!(
            (s.llcs[1].migrations_in, s.llcs[1].migrations_out),
            (Some(2), Some(7))
        );
        assert_eq!(s.llcs[3].migrations_in, Some(7));
        assert_eq!(
            (
                s.nodes[0].migrations_within,
                s.nodes[0].migrations_out,
                s.nodes[1].migrations_in
            ),
            (Some(7), Some(7), Some(7))
        );
        let sys = s.system.busy.unwrap();
        assert!((sys - 7.0 / 15.0).abs() < 1e-9);
        assert_eq!(
            s.llcs[0].rq_wait_p50_ns, None,
            "no histogram, no percentile"
        );
    }

    #[test]
    fn resctrl_readings_sum_into_llcs_and_nodes_without_counting_mon_groups_twice() {
        use crate::snapshot::{CacheMon, DomainMon, GroupKind, Resctrl, ResctrlGroup, Unread};
        let t = crate::topology::tests::sample();
        let mut s = empty_snapshot(&t);
        let mon = |o: u64, tot: u64| CacheMon {
            occupancy_bytes: Some(o),
            mbm_total_bytes: Some(tot),
            mbm_local_bytes: Some(tot / 2),
            ..CacheMon::default()
        };
        let group = |path: &str, kind, per: &[(u32, CacheMon)]| ResctrlGroup {
            path: path.into(),
            kind,
            pid: None,
            total: CacheMon::default(),
            domains: per
                .iter()
                .map(|(l, m)| DomainMon {
                    l3: *l,
                    node: None,
                    llc: Some(*l),
                    mon: *m,
                })
                .collect(),
        };
        let mut unassigned = mon(7, 0);
        unassigned.mbm_total_bytes = None;
        unassigned.total_why = Some(Unread::Unassigned);
        s.resctrl = Some(Resctrl {
            groups: vec![
                group(
                    "",
                    GroupKind::Root,
                    &[
                        (0, mon(10, 100)),
                        (1, mon(20, 200)),
                        (2, mon(1, 2)),
                        (3, unassigned),
                    ],
                ),
                group("p1", GroupKind::CtrlMon, &[(0, mon(5, 50))]),
                // Inside p1's figures already: not added again.
                group("p1/mon_groups/m1", GroupKind::Mon, &[(0, mon(5, 50))]),
            ],
            ..Resctrl::default()
        });
        aggregate(&t, &mut s);
        let c = |i: usize| s.llcs[i].cache.unwrap();
        assert_eq!(
            (c(0).occupancy_bytes, c(0).mbm_total_bytes),
            (Some(15), Some(150))
        );
        assert_eq!(c(1).occupancy_bytes, Some(20));
        assert_eq!(
            (c(3).mbm_total_bytes, c(3).total_why),
            (None, Some(Unread::Unassigned))
        );
        assert_eq!(c(3).occupancy_bytes, Some(7));
        // Node 0 = LLCs 0 and 1; node 1 = LLCs 2 and 3 (3's bandwidth unknown).
        let n0 = s.nodes[0].cache.unwrap();
        assert_eq!(
            (n0.occupancy_bytes, n0.mbm_local_bytes),
            (Some(35), Some(175))
        );
        let n1 = s.nodes[1].cache.unwrap();
        assert_eq!((n1.occupancy_bytes, n1.mbm_total_bytes), (Some(8), None));
    }

    #[test]
    fn wait_percentiles_from_log2_histograms() {
        // 90 waits in [1024, 2048) ns, 10 in [2^20, 2^21) ns
        let mut h = vec![0u64; 21];
        h[10] = 90;
        h[20] = 10;
        assert_eq!(hist_quantile(&h, 0.5), Some(2048));
        assert_eq!(hist_quantile(&h, 0.9), Some(2048));
        assert_eq!(hist_quantile(&h, 0.99), Some(1 << 21));
        assert_eq!(hist_quantile(&[0, 0], 0.5), None);
        let t = crate::topology::tests::sample();
        let mut s = empty_snapshot(&t);
        s.cpus[0].rq_wait_hist = Some(vec![0, 3]);
        s.cpus[1].rq_wait_hist = Some(vec![0, 0, 0, 1]);
        aggregate(&t, &mut s);
        assert_eq!(
            (s.llcs[0].rq_wait_p50_ns, s.llcs[0].rq_wait_p99_ns),
            (Some(4), Some(16))
        );
    }
}
