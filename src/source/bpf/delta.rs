//! The delta stage of the BPF source: two [`Cumulative`] reads → the interval's per-CPU
//! counts, exact migrations by distance and cause with the LLC matrix, and the process
//! rows (runtime per LLC, migrations, wait, preferred LLC, attributed counters). Pure
//! functions over data: no kernel, unit-tested here. Names, thread counts and cgroups of
//! the rows are the enrichment stage's (src/enrich.rs).

use super::layout::{self, NR_DIST, NR_PC};
use super::read::{Cumulative, LlcCum, ProcCum};
use crate::counters;
use crate::preferred::PreferredLlc;
use crate::snapshot::{
    Counters, CpuStats, Migrations, Precision, PreferredKind, ProcessStats, ProcessTable,
    RawCounters,
};
use crate::source::perf::Slot;
use crate::topology::Topology;

/// `cur - prev` of a cumulative counter; one that went backwards was re-created (LRU
/// eviction) and counts from zero.
pub fn d(cur: u64, prev: u64) -> u64 {
    if cur >= prev { cur - prev } else { cur }
}

/// Per-CPU context switches, migrations in/out, run-queue wait and its histogram, for
/// the online CPUs below `nr_cpus`.
pub fn cpus(prev: &Cumulative, cur: &Cumulative, out: &mut [CpuStats]) {
    for c in out.iter_mut().filter(|c| c.online) {
        let i = c.cpu as usize;
        let (Some(&sw), Some(&psw)) = (cur.switches.get(i), prev.switches.get(i)) else {
            continue;
        };
        c.switches_unseen = d(
            cur.unseen.get(i).copied().unwrap_or(0),
            prev.unseen.get(i).copied().unwrap_or(0),
        );
        c.ctx_switches = Some(d(sw, psw) + c.switches_unseen);
        c.migrations_in = Some(d(cur.mig_in[i], prev.mig_in[i]));
        c.migrations_out = Some(d(cur.mig_out[i], prev.mig_out[i]));
        c.rq_wait_ns = Some(d(cur.rq_wait[i], prev.rq_wait[i]));
        let mut h: Vec<u64> = cur.hist[i]
            .iter()
            .zip(&prev.hist[i])
            .map(|(&a, &b)| d(a, b))
            .collect();
        while h.last() == Some(&0) {
            h.pop();
        }
        c.rq_wait_hist = Some(h);
        c.runnable = None;
        // A sample at this read, not a delta.
        let cas = cur.cas.get(i).copied().flatten();
        c.cas_queued = cas.map(|x| x.0);
        c.cas_queued_pref = cas.map(|x| x.1);
    }
}

/// Context switches of the interval made without the tracepoint, and all of them (the
/// seen ones and those), over every CPU.
pub fn unseen(prev: &Cumulative, cur: &Cumulative) -> (u64, u64) {
    let sum = |c: &[u64], p: &[u64]| -> u64 { c.iter().zip(p).map(|(&a, &b)| d(a, b)).sum() };
    let unseen = sum(&cur.unseen, &prev.unseen);
    (unseen, sum(&cur.switches, &prev.switches) + unseen)
}

/// Exact migrations of the interval: by distance, by cause, and the LLC matrix.
pub fn migrations(prev: &Cumulative, cur: &Cumulative, nr_llc: usize) -> Migrations {
    let cell = |a: usize, b: usize| {
        let i = a * nr_llc + b;
        d(
            cur.matrix.get(i).copied().unwrap_or(0),
            prev.matrix.get(i).copied().unwrap_or(0),
        )
    };
    Migrations {
        precision: Precision::Exact,
        by_distance: layout::by_distance(|i| d(cur.dist[i], prev.dist[i])),
        by_cause: Some(layout::by_cause(|i| d(cur.cause[i], prev.cause[i]))),
        llc_matrix: (0..nr_llc)
            .map(|a| (0..nr_llc).map(|b| cell(a, b)).collect())
            .collect(),
        unclassified: d(cur.unclassified, prev.unclassified),
        preferred: cur
            .kernel_preferred
            .then(|| crate::snapshot::PreferredMoves {
                onto: layout::by_cause(|i| d(cur.pref_moves[0][i], prev.pref_moves[0][i])),
                off: layout::by_cause(|i| d(cur.pref_moves[1][i], prev.pref_moves[1][i])),
            }),
    }
}

/// Scaled, derived counters from the difference of two cumulative LLC entries, for the
/// slots in `pc_mask` (`None` when attribution is off).
pub fn counters_between(pc_mask: u32, cur: &LlcCum, prev: &LlcCum, secs: f64) -> Option<Counters> {
    if pc_mask == 0 {
        return None;
    }
    let (cur, prev) = (cur.pc(), prev.pc());
    let pick = |slot: Slot| {
        let i = slot.index();
        (i < NR_PC && pc_mask & (1 << i) != 0).then(|| d(cur.pc[i], prev.pc[i]))
    };
    let raw = RawCounters {
        cycles: pick(Slot::Cycles),
        instructions: pick(Slot::Instructions),
        cache_references: pick(Slot::CacheReferences),
        cache_misses: pick(Slot::CacheMisses),
        llc_read_misses: pick(Slot::LlcReadMisses),
        time_enabled_ns: d(cur.enabled, prev.enabled),
        time_running_ns: d(cur.running, prev.running),
    };
    let mut c = counters::scaled(&raw);
    counters::derive(&mut c, secs);
    Some(c)
}

/// llctop's LLC for one of the kernel's LLC ids (`p->preferred_llc`), through
/// `kernel_llc` (the kernel's id of each llctop LLC, [`crate::preferred::kernel_llc_ids`]);
/// `None` for -1 (no preference) or an id no LLC has.
pub fn kernel_llc_to_llc(id: i64, kernel_llc: &[Option<u32>]) -> Option<u32> {
    let id = u32::try_from(id).ok()?;
    kernel_llc
        .iter()
        .position(|&k| k == Some(id))
        .map(|l| l as u32)
}

/// How the process rows are built.
pub struct ProcessParams<'a> {
    pub topo: &'a Topology,
    pub nr_llc: usize,
    /// Counter slots attributed to processes (0: attribution off).
    pub pc_mask: u32,
    /// The kernel's id of each LLC, to read `p->preferred_llc`.
    pub kernel_llc: &'a [Option<u32>],
    /// Rows kept (the busiest); the rest's counters are summed into `other_counters`.
    pub top: usize,
    /// Processes given a row besides the `top` whenever they ran or moved (sorted).
    pub keep: &'a [u32],
    pub secs: f64,
}

/// The process rows of the interval, busiest first, `top` of them; comm, threads and
/// cgroup are left for the enrichment stage. `preferred` emulates the preferred LLC
/// where the kernel does not report one, and forgets processes gone from the maps.
pub fn processes(
    prev: &Cumulative,
    cur: &Cumulative,
    p: &ProcessParams,
    preferred: &mut PreferredLlc,
) -> ProcessTable {
    let empty = ProcCum::default();
    let llc_counters = |a: &ProcCum, b: &ProcCum| -> Vec<Option<Counters>> {
        if p.pc_mask == 0 {
            return Vec::new();
        }
        (0..p.nr_llc as u32)
            .map(|l| {
                let (x, y) = (a.at(l), b.at(l));
                counters_between(p.pc_mask, x, y, p.secs)
                    .filter(|_| d(x.pc().running, y.pc().running) > 0)
            })
            .collect()
    };
    let total_of = |per_llc: &[Option<Counters>]| {
        let mut c = counters::sum(per_llc.iter().flatten())?;
        counters::derive(&mut c, p.secs);
        Some(c)
    };
    // Each process's runtime per LLC, dense, into `into` (zeroed first).
    let runtime_of = |a: &ProcCum, b: &ProcCum, into: &mut Vec<u64>| {
        into.clear();
        into.resize(p.nr_llc, 0);
        for (l, x) in &a.llc {
            let l = *l;
            if let Some(r) = into.get_mut(l as usize) {
                *r = d(x.runtime, b.at(l).runtime);
            }
        }
    };
    let mut idle_counters = None;
    // Each process's runtime on the LLCs it ran on in the interval, ascending by LLC.
    let mut ran: Vec<(u32, u64)> = Vec::with_capacity(8);
    // Every process's figures first (the emulated preference follows them all), the
    // rows only for the busiest: a machine may run thousands of processes.
    struct Candidate<'c> {
        tgid: u32,
        a: &'c ProcCum,
        b: &'c ProcCum,
        cpu_time_ns: u64,
        preferred: (Option<u32>, Option<f64>, PreferredKind),
        counters_per_llc: Vec<Option<Counters>>,
        counters: Option<Box<Counters>>,
    }
    let mut cands = Vec::with_capacity(cur.procs.len());
    for (&tgid, a) in &cur.procs {
        let b = prev.procs.get(&tgid).unwrap_or(&empty);
        let counters_per_llc = llc_counters(a, b);
        if tgid == 0 {
            idle_counters = total_of(&counters_per_llc);
            continue;
        }
        ran.clear();
        ran.extend(a.llc.iter().filter_map(|(l, x)| {
            let l = *l;
            let r = d(x.runtime, b.at(l).runtime);
            ((l as usize) < p.nr_llc && r > 0).then_some((l, r))
        }));
        let preferred = if cur.kernel_preferred {
            let hits = d(a.pref_hit_ns, b.pref_hit_ns);
            let misses = d(a.pref_miss_ns, b.pref_miss_ns);
            let llc = kernel_llc_to_llc(a.kernel_pref, p.kernel_llc);
            let hit = (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64);
            (llc, hit, PreferredKind::Kernel)
        } else {
            let pref = preferred.update_sparse(tgid, &ran);
            (pref.preferred_llc, pref.hit, PreferredKind::Emulated)
        };
        let cpu_time_ns: u64 = ran.iter().map(|e| e.1).sum();
        let migrations = (0..NR_DIST).map(|i| d(a.dist[i], b.dist[i])).sum::<u64>()
            + d(a.unclassified, b.unclassified);
        let counters = total_of(&counters_per_llc);
        if cpu_time_ns == 0 && migrations == 0 && counters.is_none() {
            continue;
        }
        cands.push(Candidate {
            tgid,
            a,
            b,
            cpu_time_ns,
            preferred,
            counters_per_llc,
            counters: counters.map(Box::new),
        });
    }
    // The busiest `top` and those asked for, busiest first: ranked by small keys (a
    // candidate is large), the top partitioned out before it alone is sorted.
    let (mut kept, mut rest): (Vec<_>, Vec<_>) = cands
        .iter()
        .enumerate()
        .map(|(i, c)| (std::cmp::Reverse(c.cpu_time_ns), c.tgid, i))
        .partition(|&(_, tgid, _)| p.keep.binary_search(&tgid).is_ok());
    let top = p.top.min(rest.len());
    if top < rest.len() {
        rest.select_nth_unstable(top);
    }
    kept.extend(rest.drain(..top));
    kept.sort_unstable();
    let other_counters = total_of(
        &rest
            .iter()
            .filter_map(|&(_, _, i)| cands[i].counters.as_deref().cloned())
            .map(Some)
            .collect::<Vec<_>>(),
    );
    let (kernel_preferred, settled) = (cur.kernel_preferred, cur.settled);
    let rows = kept
        .iter()
        .map(|&(_, _, i)| {
            let c = &mut cands[i];
            let (a, b) = (c.a, c.b);
            let mut runtime = Vec::new();
            runtime_of(a, b, &mut runtime);
            let dist = layout::by_distance(|i| d(a.dist[i], b.dist[i]));
            let (preferred_llc, preferred_hit, preferred_kind) = c.preferred;
            ProcessStats {
                pid: c.tgid,
                cpu_time_ns: c.cpu_time_ns,
                llc_spread: runtime.iter().filter(|&&r| r > 0).count() as u32,
                runtime_per_llc_ns: runtime,
                preferred_llc,
                preferred_kind,
                preferred_hit,
                migrations: dist.total() + d(a.unclassified, b.unclassified),
                cross_llc_migrations: dist.cross_llc + dist.cross_node,
                migrations_by_distance: Some(dist),
                rq_wait_ns: d(a.wait_ns, b.wait_ns),
                runs: settled.then(|| d(a.runs, b.runs)),
                switches_unseen: d(a.unseen_ins, b.unseen_ins),
                moves_onto_preferred: kernel_preferred.then(|| d(a.to_pref, b.to_pref)),
                moves_off_preferred: kernel_preferred.then(|| d(a.off_pref, b.off_pref)),
                counters: c.counters.take().map(|b| *b),
                counters_per_llc: std::mem::take(&mut c.counters_per_llc),
                ..ProcessStats::default()
            }
        })
        .collect();
    let total = cur.procs.keys().filter(|&&t| t != 0).count() as u32;
    preferred.retain(|pid| cur.procs.contains_key(&pid));
    ProcessTable {
        precision: Precision::Exact,
        total,
        rows,
        dropped: d(cur.proc_dropped, prev.proc_dropped),
        idle_counters,
        other_counters,
    }
}

#[cfg(test)]
mod tests {
    use super::super::read;
    use super::*;
    use crate::topology::Distance;

    fn topo() -> Topology {
        crate::topology::tests::sample()
    }

    fn proc(runtime: &[u64], dist: [u64; 4]) -> ProcCum {
        ProcCum {
            dist,
            llc: runtime
                .iter()
                .enumerate()
                .map(|(l, &r)| {
                    (
                        l as u32,
                        LlcCum {
                            runtime: r,
                            ..LlcCum::default()
                        },
                    )
                })
                .collect(),
            kernel_pref: -1,
            ..ProcCum::default()
        }
    }

    #[test]
    fn kernel_llc_ids_map_back_to_llctop_llcs() {
        let ids = [Some(2), Some(0), Some(3), None];
        assert_eq!(kernel_llc_to_llc(0, &ids), Some(1));
        assert_eq!(kernel_llc_to_llc(3, &ids), Some(2));
        assert_eq!(kernel_llc_to_llc(-1, &ids), None, "no preference");
        assert_eq!(kernel_llc_to_llc(1, &ids), None, "an id no LLC has");
    }

    #[test]
    fn deltas_count_from_zero_after_a_reset() {
        assert_eq!(d(10, 4), 6);
        assert_eq!(d(3, 9), 3, "re-created entry: counts from zero");
    }

    #[test]
    fn cpu_deltas_and_trimmed_histogram() {
        let t = topo();
        let n = t.nr_cpu_ids();
        let prev = Cumulative::zeroed(n, 4);
        let mut cur = prev.clone();
        cur.switches[0] = 5;
        cur.mig_in[0] = 2;
        cur.mig_out[1] = 3;
        cur.rq_wait[0] = 1000;
        cur.hist[0][3] = 4;
        let mut s = crate::collect::empty_snapshot(&t);
        s.cpus[1].online = false;
        cpus(&prev, &cur, &mut s.cpus);
        let c0 = &s.cpus[0];
        assert_eq!(
            (c0.ctx_switches, c0.migrations_in, c0.rq_wait_ns),
            (Some(5), Some(2), Some(1000))
        );
        assert_eq!(c0.rq_wait_hist.as_deref(), Some(&[0, 0, 0, 4][..]));
        assert_eq!(
            s.cpus[1].migrations_out, None,
            "offline CPUs are left alone"
        );
        assert_eq!(s.cpus[2].rq_wait_hist.as_deref(), Some(&[][..]));
    }

    #[test]
    fn switches_made_without_the_tracepoint_count_as_switches_and_apart() {
        let t = topo();
        let n = t.nr_cpu_ids();
        let mut prev = Cumulative::zeroed(n, 4);
        prev.switches[0] = 100;
        prev.unseen[0] = 1;
        let mut cur = prev.clone();
        cur.switches[0] = 140;
        cur.unseen[0] = 3;
        cur.switches[2] = 7;
        let mut s = crate::collect::empty_snapshot(&t);
        cpus(&prev, &cur, &mut s.cpus);
        assert_eq!(
            (s.cpus[0].ctx_switches, s.cpus[0].switches_unseen),
            (Some(42), 2)
        );
        assert_eq!(
            (s.cpus[2].ctx_switches, s.cpus[2].switches_unseen),
            (Some(7), 0)
        );
        assert_eq!(
            unseen(&prev, &cur),
            (2, 49),
            "2 unseen of 40 + 7 seen and 2 unseen"
        );
        assert_eq!(unseen(&prev, &prev), (0, 0));
        // In the JSON only where there were some.
        let j = serde_json::to_value(&s.cpus).unwrap_or_default();
        assert_eq!(j[0]["switches_unseen"], 2);
        assert!(j[2].get("switches_unseen").is_none());
    }

    #[test]
    fn the_run_queues_cache_aware_counts_are_the_last_sample_not_a_delta() {
        let t = topo();
        let n = t.nr_cpu_ids();
        let mut prev = Cumulative::zeroed(n, 4);
        prev.cas[0] = Some((5, 5));
        let mut cur = prev.clone();
        cur.cas[0] = Some((3, 2));
        let mut s = crate::collect::empty_snapshot(&t);
        cpus(&prev, &cur, &mut s.cpus);
        assert_eq!(
            (s.cpus[0].cas_queued, s.cpus[0].cas_queued_pref),
            (Some(3), Some(2))
        );
        // Not sampled (another kernel, or no switch seen there yet): absent, never 0.
        assert_eq!(
            (s.cpus[1].cas_queued, s.cpus[1].cas_queued_pref),
            (None, None)
        );
        let j = serde_json::to_value(&s.cpus).unwrap_or_default();
        assert_eq!(j[0]["cas_queued_pref"], 2);
        assert!(j[1].get("cas_queued").is_none());
    }

    #[test]
    fn migrations_by_distance_cause_and_matrix() {
        let mut prev = Cumulative::zeroed(2, 2);
        prev.dist = [1, 1, 1, 1];
        prev.matrix = vec![1, 0, 0, 0];
        let mut cur = prev.clone();
        cur.dist = [2, 3, 4, 9];
        cur.cause = [1, 2, 3, 4, 5];
        cur.matrix = vec![2, 7, 0, 1];
        cur.unclassified = 6;
        let m = migrations(&prev, &cur, 2);
        assert_eq!(m.precision, Precision::Exact);
        assert_eq!(m.by_distance.get(Distance::Smt), 1);
        assert_eq!(m.by_distance.get(Distance::CrossNode), 8);
        let c = m.by_cause.unwrap();
        assert_eq!((c.wakeup, c.numa, c.other), (1, 4, 5));
        assert_eq!(m.llc_matrix, vec![vec![1, 7], vec![0, 1]]);
        assert_eq!(m.total(), 1 + 2 + 3 + 8 + 6);
    }

    #[test]
    fn process_rows_busiest_first_rest_summed_idle_apart() {
        let t = topo();
        let prev = Cumulative::zeroed(16, 4);
        let mut cur = prev.clone();
        cur.procs.insert(10, proc(&[100, 0, 0, 0], [0, 1, 0, 0]));
        cur.procs.insert(11, proc(&[300, 100, 0, 0], [0, 0, 2, 1]));
        cur.procs.insert(12, proc(&[50, 0, 0, 0], [0; 4]));
        cur.procs.insert(13, proc(&[0; 4], [0; 4])); // did nothing: no row
        cur.procs.insert(0, proc(&[900, 0, 0, 0], [0; 4])); // idle: never a row
        let params = ProcessParams {
            topo: &t,
            nr_llc: 4,
            pc_mask: 0,
            kernel_llc: &[],
            top: 2,
            keep: &[],
            secs: 1.0,
        };
        let mut pref = PreferredLlc::new();
        let table = processes(&prev, &cur, &params, &mut pref);
        assert_eq!(table.total, 4, "every process seen, idle excluded");
        let pids: Vec<u32> = table.rows.iter().map(|r| r.pid).collect();
        assert_eq!(pids, vec![11, 10]);
        let r = &table.rows[0];
        assert_eq!((r.cpu_time_ns, r.llc_spread, r.migrations), (400, 2, 3));
        assert_eq!(r.cross_llc_migrations, 3);
        assert_eq!(r.preferred_kind, PreferredKind::Emulated);
        assert_eq!(r.preferred_llc, Some(0));
        assert_eq!(r.preferred_hit, Some(0.75));
        assert!(r.comm.is_empty(), "names are the enrichment stage's");
        assert_eq!((table.idle_counters, table.other_counters), (None, None));
        assert_eq!(pref.len(), 4, "the emulation follows every live process");
        // A process asked for has a row beside the busiest two, in its rank; one that
        // did nothing still has none.
        let params = ProcessParams {
            keep: &[12, 13],
            ..params
        };
        let table = processes(&prev, &cur, &params, &mut pref);
        let pids: Vec<u32> = table.rows.iter().map(|r| r.pid).collect();
        assert_eq!(pids, vec![11, 10, 12]);
        let params = ProcessParams {
            keep: &[10],
            ..params
        };
        let table = processes(&prev, &cur, &params, &mut pref);
        let pids: Vec<u32> = table.rows.iter().map(|r| r.pid).collect();
        assert_eq!(
            pids,
            vec![11, 10, 12],
            "the top two besides the one asked for"
        );
    }

    /// The lab's 64-CPU hopper: 10 cross-LLC hops, 5 counted in one CPU's slot and 5 in
    /// another's; one read misses a slot flushed between the two maps. Every hop is
    /// counted once over the reads, and so is the runtime; a process a read missed
    /// altogether stays, with nothing counted for it.
    #[test]
    fn a_read_that_misses_counts_for_a_moment_counts_them_once() {
        let t = topo();
        let params = ProcessParams {
            topo: &t,
            nr_llc: 4,
            pc_mask: 0,
            kernel_llc: &[],
            top: 10,
            keep: &[],
            secs: 1.0,
        };
        let mut pref = PreferredLlc::new();
        let reads = [
            // Both slots read: 10 hops, 400 ns.
            Some(proc(&[200, 200, 0, 0], [0, 0, 10, 0])),
            // A slot of 5 hops and 200 ns flushed between the maps: missed.
            Some(proc(&[200, 0, 0, 0], [0, 0, 5, 0])),
            // In proc_vals now; 1 hop and 50 ns more meanwhile.
            Some(proc(&[250, 200, 0, 0], [0, 0, 11, 0])),
            // Only in a slot flushed between the maps: not seen at all.
            None,
            Some(proc(&[250, 200, 0, 0], [0, 0, 11, 0])),
        ];
        let mut prev = Cumulative::zeroed(16, 4);
        let (mut hops, mut ns) = (0, 0);
        for r in reads {
            let mut cur = Cumulative::zeroed(16, 4);
            if let Some(p) = r {
                cur.procs.insert(7, p);
            }
            read::carry(&prev, &mut cur);
            assert!(cur.procs.contains_key(&7), "carried on");
            let table = processes(&prev, &cur, &params, &mut pref);
            for row in &table.rows {
                hops += row.migrations;
                ns += row.cpu_time_ns;
            }
            prev = cur;
        }
        assert_eq!((hops, ns), (11, 450), "each counted once");
        // A process forgotten (taken out of the read kept) is not carried: a new one with
        // its number counts from zero.
        prev.procs.remove(&7);
        let mut cur = Cumulative::zeroed(16, 4);
        cur.procs.insert(7, proc(&[30, 0, 0, 0], [1, 0, 0, 0]));
        read::carry(&prev, &mut cur);
        let table = processes(&prev, &cur, &params, &mut pref);
        assert_eq!(
            (table.rows[0].cpu_time_ns, table.rows[0].migrations),
            (30, 1)
        );
    }

    #[test]
    fn kernel_preference_and_attributed_counters() {
        let t = topo();
        let prev = Cumulative::zeroed(16, 4);
        let mut cur = prev.clone();
        cur.kernel_preferred = true;
        let mut p = proc(&[0, 500, 0, 0], [0; 4]);
        p.pref_hit_ns = 3_000;
        p.pref_miss_ns = 1_000;
        p.unseen_ins = 2;
        p.runs = 9;
        // The kernel numbered llctop's LLC 1 as 3.
        p.kernel_pref = 3;
        // Multiplexed half the time: scaled ×2.
        p.llc[1].1.add_pc(&[1000, 2000, 10, 5, 1], 100, 50);
        cur.procs.insert(20, p);
        let mut idle = proc(&[0; 4], [0; 4]);
        idle.llc[0].1.add_pc(&[10, 0, 0, 0, 0], 7, 7);
        cur.procs.insert(0, idle);
        let params = ProcessParams {
            topo: &t,
            nr_llc: 4,
            pc_mask: 0b00011,
            kernel_llc: &[Some(0), Some(3), Some(1), Some(2)],
            top: 10,
            keep: &[],
            secs: 1.0,
        };
        let table = processes(&prev, &cur, &params, &mut PreferredLlc::new());
        let r = &table.rows[0];
        assert_eq!(r.preferred_kind, PreferredKind::Kernel);
        assert_eq!(
            (r.preferred_llc, r.preferred_hit),
            (t.llc_of(2), Some(0.75))
        );
        assert_eq!(r.switches_unseen, 2);
        assert_eq!(r.runs, None, "runs unknown where tasks are not settled");
        let c = r.counters.as_ref().unwrap();
        assert_eq!((c.cycles, c.instructions), (Some(2000), Some(4000)));
        assert_eq!(c.cache_misses, None, "slot not in the mask");
        cur.settled = true;
        let settled = processes(&prev, &cur, &params, &mut PreferredLlc::new());
        assert_eq!(
            settled.rows[0].runs,
            Some(9),
            "the kernel's switch-ins, settled"
        );
        assert_eq!(c.ipc, Some(2.0));
        assert_eq!(r.counters_per_llc.len(), 4);
        assert!(r.counters_per_llc[0].is_none(), "no slice ran there");
        let idle = table.idle_counters.unwrap();
        assert_eq!(idle.cycles, Some(10));
    }
}
