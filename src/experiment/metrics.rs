//! The figures an experiment compares, each one value per window computed from the
//! window's snapshots alone (pure): rates per second over the window's summed interval
//! time, CPU-time-weighted ratios, percentiles of the merged run-queue wait histogram.
//! Each has a unit and which direction is better (if either); docs/metrics.md defines
//! them under "Experiments".

use std::collections::BTreeMap;

use crate::snapshot::SatSum;
use crate::snapshot::{Cause, Snapshot};
use crate::topology::Distance;

/// Which direction of a change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// A change is reported as higher/lower, not better/worse.
    Neither,
}

/// What a metric key means: unit and direction. Keys are `family.name`; the families with
/// a variable part (balance levels, causes, NUMA counters) share one definition.
pub fn describe(key: &str) -> (&'static str, Better) {
    let family = key.split('.').next().unwrap_or(key);
    match (family, key) {
        (_, "migrations.xllc" | "migrations.xnode") => ("/s", Better::Lower),
        ("migrations" | "cause" | "balance" | "numa", _) => ("/s", Better::Neither),
        (_, "preferred_hit") => ("%", Better::Higher),
        (_, "rq_wait.p50" | "rq_wait.p99") => ("µs", Better::Lower),
        (_, "busy") => ("%", Better::Neither),
        // Per LLC and node (diff's): busy too.
        (_, k) if k.ends_with(".busy") => ("%", Better::Neither),
        (_, "ipc") => ("", Better::Higher),
        (_, "mpki") => ("", Better::Lower),
        (_, "l3_misses") => ("/s", Better::Lower),
        (_, "l3.preferred") => ("%", Better::Higher),
        ("l3", _) => ("MiB", Better::Neither),
        (_, "membw.remote" | "membw.remote_share") => (
            if key.ends_with("share") { "%" } else { "MB/s" },
            Better::Lower,
        ),
        ("membw", _) => ("MB/s", Better::Neither),
        (_, "command.wall") => ("s", Better::Lower),
        (_, "command.rq_wait") => ("ms/s", Better::Lower),
        (_, "command.wait_per_run") => ("µs", Better::Lower),
        (_, "command.failed") => ("%", Better::Lower),
        _ => ("", Better::Neither),
    }
}

/// Whether the metric `key` is an upper bound: a percentile of the run-queue wait's log2
/// histogram is the top of its bucket (shown `≤`, compared in whole doublings).
pub fn is_bound(key: &str) -> bool {
    key.starts_with("rq_wait.p")
}

/// `v` of metric `key`, with its unit, as people read it (`≤8.39 ms`, `57.2/s`, `65.4%`).
pub fn shown(key: &str, v: f64) -> String {
    crate::units::figure(v, describe(key).0, is_bound(key))
}

/// Percentile `q` of a log2 histogram (bucket i counts [2^i, 2^(i+1)) ns) as the upper
/// bound of the bucket holding it, in ns; None when empty.
pub fn hist_percentile(hist: &[u64], q: f64) -> Option<f64> {
    let total: u64 = hist.iter().copied().sat_sum();
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, n) in hist.iter().enumerate() {
        seen = u64::saturating_add(seen, *n);
        if seen >= rank {
            return Some(2f64.powi(i as i32 + 1));
        }
    }
    None
}

/// The metrics of one window (its measured snapshots), by key.
pub fn window(snaps: &[Snapshot]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let secs: f64 = snaps.iter().map(|s| s.time.interval_secs()).sum();
    if snaps.is_empty() || secs <= 0.0 {
        return m;
    }
    let mut put = |k: String, v: f64| {
        if v.is_finite() {
            m.insert(k, v);
        }
    };
    // Migrations by distance and cause (BPF exact, or procfs sampled).
    let migs: Vec<_> = snaps.iter().filter_map(|s| s.migrations.as_ref()).collect();
    if migs.len() == snaps.len() {
        for d in Distance::ALL {
            let n: u64 = migs.iter().map(|x| x.by_distance.get(d)).sat_sum();
            put(format!("migrations.{}", d.label()), n as f64 / secs);
        }
        if migs.iter().all(|x| x.by_cause.is_some()) {
            for c in Cause::ALL {
                let n: u64 = migs
                    .iter()
                    .filter_map(|x| x.by_cause)
                    .map(|b| b.get(c))
                    .sat_sum();
                put(format!("cause.{}", c.label()), n as f64 / secs);
            }
        }
    }
    // Preferred-LLC hits, weighted by CPU time.
    let (mut num, mut den) = (0.0, 0.0);
    for r in snaps
        .iter()
        .filter_map(|s| s.processes.as_ref())
        .flat_map(|t| &t.rows)
    {
        if let Some(h) = r.preferred_hit {
            num += h * r.cpu_time_ns as f64;
            den += r.cpu_time_ns as f64;
        }
    }
    if den > 0.0 {
        put("preferred_hit".into(), 100.0 * num / den);
    }
    // Run-queue wait percentiles from the merged per-CPU histograms.
    let mut hist: Vec<u64> = Vec::new();
    for h in snaps
        .iter()
        .flat_map(|s| &s.cpus)
        .filter_map(|c| c.rq_wait_hist.as_ref())
    {
        if hist.len() < h.len() {
            hist.resize(h.len(), 0);
        }
        for (a, b) in hist.iter_mut().zip(h) {
            *a = a.saturating_add(*b);
        }
    }
    for (k, q) in [("rq_wait.p50", 0.5), ("rq_wait.p99", 0.99)] {
        if let Some(ns) = hist_percentile(&hist, q) {
            put(k.into(), ns / 1e3);
        }
    }
    let busy: Vec<f64> = snaps.iter().filter_map(|s| s.system.busy).collect();
    if busy.len() == snaps.len() {
        put(
            "busy".into(),
            100.0 * busy.iter().sum::<f64>() / busy.len() as f64,
        );
    }
    // Load balancing per domain level, per second.
    let mut lb: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let bal: Vec<_> = snaps.iter().filter_map(|s| s.balance.as_ref()).collect();
    if bal.len() == snaps.len() {
        for d in bal.iter().flat_map(|b| &b.domains) {
            let name = d.name.clone().unwrap_or_else(|| format!("L{}", d.level));
            let e = lb.entry(name).or_default();
            e[0] = e[0].saturating_add(d.newidle.count);
            e[1] = e[1].saturating_add(d.busy.count);
            e[2] = e[2].saturating_add(d.idle.count);
        }
        for (name, [n, b, i]) in lb {
            put(format!("balance.{name}.newidle"), n as f64 / secs);
            put(format!("balance.{name}.busy"), b as f64 / secs);
            put(format!("balance.{name}.idle"), i as f64 / secs);
        }
    }
    // NUMA balancing counters (vmstat), per second.
    let numa: Vec<_> = snaps.iter().filter_map(|s| s.numa.as_ref()).collect();
    if numa.len() == snaps.len() {
        for k in [
            "numa_hint_faults",
            "numa_pages_migrated",
            "numa_pte_updates",
        ] {
            if numa.iter().all(|n| n.vmstat.contains_key(k)) {
                let v: u64 = numa.iter().map(|n| n.vmstat[k]).sat_sum();
                put(format!("numa.{k}"), v as f64 / secs);
            }
        }
    }
    // Hardware counters over every CPU.
    let (mut cyc, mut ins, mut miss, mut l3) = (0u64, 0u64, 0u64, 0u64);
    let (mut have_ipc, mut have_l3) = (false, false);
    for c in snaps
        .iter()
        .flat_map(|s| &s.cpus)
        .filter_map(|c| c.counters.as_ref())
    {
        if let (Some(a), Some(b)) = (c.cycles, c.instructions) {
            cyc = cyc.saturating_add(a);
            ins = ins.saturating_add(b);
            have_ipc = true;
            miss = miss.saturating_add(c.cache_misses.unwrap_or(0));
        }
        if let Some(x) = c.l3_misses.or(c.llc_read_misses) {
            l3 = l3.saturating_add(x);
            have_l3 = true;
        }
    }
    if have_ipc && cyc > 0 && ins > 0 {
        put("ipc".into(), ins as f64 / cyc as f64);
        put("mpki".into(), miss as f64 * 1000.0 / ins as f64);
    }
    if have_l3 {
        put("l3_misses".into(), l3 as f64 / secs);
    }
    cache(snaps, secs, &mut put);
    m
}

/// The figures of the experiment's own command over a window's snapshots, from the rows
/// of its processes `pids` (alive or exited in the snapshot): `command.rq_wait`, their
/// run-queue wait per second of the window (ms/s), and `command.wait_per_run`, that wait
/// per run of theirs (µs: the kernel's schedstat ratio; for processes that block between
/// runs, as a pipe pair's, their mean wakeup latency) where every row counted its runs.
/// Empty without pids or rows of theirs.
pub fn command(snaps: &[Snapshot], pids: &[u32]) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let secs: f64 = snaps.iter().map(|s| s.time.interval_secs()).sum();
    if pids.is_empty() || secs <= 0.0 {
        return m;
    }
    // A recording's window line may list them in any order.
    let mut pids = pids.to_vec();
    pids.sort_unstable();
    let (mut wait, mut runs, mut rows, mut all_runs) = (0u64, 0u64, 0usize, true);
    for r in snaps
        .iter()
        .filter_map(|s| s.processes.as_ref())
        .flat_map(|t| &t.rows)
        .filter(|r| pids.binary_search(&r.pid).is_ok())
    {
        rows += 1;
        wait = wait.saturating_add(r.rq_wait_ns);
        match r.runs {
            Some(n) => runs = runs.saturating_add(n),
            None => all_runs = false,
        }
    }
    if rows == 0 {
        return m;
    }
    m.insert("command.rq_wait".into(), wait as f64 / 1e6 / secs);
    if all_runs && runs > 0 {
        m.insert(
            "command.wait_per_run".into(),
            wait as f64 / runs as f64 / 1e3,
        );
    }
    m
}

/// resctrl's figures: each LLC's L3 occupancy (mean, MiB), the machine's memory
/// bandwidth (local, remote: MB/s; the remote share), and the share of the monitored
/// processes' L3 bytes on their preferred LLC — each only when every snapshot of the
/// window has it.
fn cache(snaps: &[Snapshot], secs: f64, put: &mut impl FnMut(String, f64)) {
    const MIB: f64 = 1024.0 * 1024.0;
    let n_llc = snaps.iter().map(|s| s.llcs.len()).min().unwrap_or(0);
    for i in 0..n_llc {
        let occ: Option<Vec<u64>> = snaps
            .iter()
            .map(|s| s.llcs[i].cache?.occupancy_bytes)
            .collect();
        if let Some(v) = occ {
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
            put(format!("l3.llc{}", snaps[0].llcs[i].id), mean / MIB);
        }
    }
    let totals: Option<Vec<_>> = snaps
        .iter()
        .map(|s| s.resctrl.as_ref().map(|r| r.total))
        .collect();
    if let Some(t) = totals {
        let local: Option<u64> = t.iter().map(|c| c.mbm_local_bytes).sum();
        let remote: Option<u64> = t.iter().map(|c| c.mbm_remote_bytes()).sum();
        if let (Some(l), Some(r)) = (local, remote) {
            put("membw.local".into(), l as f64 / secs / 1e6);
            put("membw.remote".into(), r as f64 / secs / 1e6);
            if l + r > 0 {
                put(
                    "membw.remote_share".into(),
                    100.0 * r as f64 / (l + r) as f64,
                );
            }
        }
    }
    // Monitored processes with a preferred LLC: their L3 bytes there, of all theirs.
    let (mut on, mut all) = (0u64, 0u64);
    for s in snaps {
        let Some(r) = &s.resctrl else { continue };
        for row in s.processes.iter().flat_map(|t| &t.rows) {
            let (Some(pref), Some(g)) = (row.preferred_llc, r.of_pid(row.pid)) else {
                continue;
            };
            for d in &g.domains {
                if let Some(o) = d.mon.occupancy_bytes {
                    all = all.saturating_add(o);
                    if d.llc == Some(pref) {
                        on = on.saturating_add(o);
                    }
                }
            }
        }
    }
    if all > 0 {
        put("l3.preferred".into(), 100.0 * on as f64 / all as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{ByDistance, CpuStats, Migrations, SnapshotTime};

    fn snap(cross_llc: u64, hist: Vec<u64>) -> Snapshot {
        Snapshot {
            time: SnapshotTime {
                unix_ns: 0,
                mono_ns: 0,
                interval_ns: 500_000_000,
                missed_ticks: 0,
            },
            migrations: Some(Migrations {
                by_distance: ByDistance {
                    cross_llc,
                    ..Default::default()
                },
                ..Default::default()
            }),
            cpus: vec![CpuStats {
                rq_wait_hist: Some(hist),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn rates_are_per_second_of_the_window() {
        let w = window(&[snap(10, vec![0; 4]), snap(30, vec![0; 4])]);
        assert_eq!(w["migrations.xllc"], 40.0, "40 moves in 1 s");
        assert_eq!(w["migrations.xnode"], 0.0);
        assert!(!w.contains_key("cause.wakeup"), "no causes: not a metric");
        assert!(!w.contains_key("rq_wait.p50"), "no waits");
        assert_eq!(describe("migrations.xllc"), ("/s", Better::Lower));
        assert_eq!(describe("balance.SMT.newidle"), ("/s", Better::Neither));
    }

    #[test]
    fn l3_occupancy_bandwidth_and_the_preferred_share_from_resctrl() {
        use crate::snapshot::{
            CacheMon, DomainMon, GroupKind, GroupStats, ProcessStats, ProcessTable, Resctrl,
            ResctrlGroup,
        };
        let mon = |o: u64, t: u64, l: u64| CacheMon {
            occupancy_bytes: Some(o),
            mbm_total_bytes: Some(t),
            mbm_local_bytes: Some(l),
            ..CacheMon::default()
        };
        let mk = |occ0: u64, occ1: u64| {
            let mut s = snap(0, vec![]);
            s.llcs = vec![
                GroupStats {
                    id: 0,
                    cache: Some(mon(occ0, 0, 0)),
                    ..Default::default()
                },
                GroupStats {
                    id: 1,
                    cache: Some(mon(occ1, 0, 0)),
                    ..Default::default()
                },
            ];
            s.processes = Some(ProcessTable {
                rows: vec![ProcessStats {
                    pid: 7,
                    preferred_llc: Some(1),
                    ..Default::default()
                }],
                ..Default::default()
            });
            s.resctrl = Some(Resctrl {
                total: mon(occ0 + occ1, 3_000_000, 2_000_000),
                groups: vec![ResctrlGroup {
                    path: "mon_groups/llctop-7".into(),
                    kind: GroupKind::Mon,
                    pid: Some(7),
                    total: CacheMon::default(),
                    domains: vec![
                        DomainMon {
                            l3: 0,
                            node: None,
                            llc: Some(0),
                            mon: mon(occ0, 0, 0),
                        },
                        DomainMon {
                            l3: 8,
                            node: None,
                            llc: Some(1),
                            mon: mon(occ1, 0, 0),
                        },
                    ],
                }],
                ..Default::default()
            });
            s
        };
        let w = window(&[mk(1 << 20, 3 << 20), mk(3 << 20, 5 << 20)]);
        assert_eq!(w["l3.llc0"], 2.0, "MiB, the mean");
        assert_eq!(w["l3.llc1"], 4.0);
        // 6 MB local and 4 MB remote in 1 s.
        assert_eq!(w["membw.local"], 4.0);
        assert_eq!(w["membw.remote"], 2.0);
        assert!((w["membw.remote_share"] - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(w["l3.preferred"], 100.0 * 8.0 / 12.0);
        assert_eq!(describe("l3.llc3"), ("MiB", Better::Neither));
        assert_eq!(describe("l3.preferred"), ("%", Better::Higher));
        assert_eq!(describe("membw.remote"), ("MB/s", Better::Lower));
        assert_eq!(describe("membw.remote_share"), ("%", Better::Lower));
        // A snapshot without resctrl: no such metric for the window.
        let w = window(&[mk(1, 1), snap(0, vec![])]);
        assert!(!w.contains_key("l3.llc0") && !w.contains_key("membw.local"));
    }

    #[test]
    fn the_commands_figures_are_its_processes_rows() {
        use crate::snapshot::{ProcessStats, ProcessTable};
        let row = |pid: u32, wait_ms: u64, runs: Option<u64>| ProcessStats {
            pid,
            rq_wait_ns: wait_ms * 1_000_000,
            runs,
            ..Default::default()
        };
        let with = |rows: Vec<ProcessStats>| {
            let mut s = snap(0, vec![]);
            s.processes = Some(ProcessTable {
                rows,
                ..Default::default()
            });
            s
        };
        // Two 0.5 s snapshots; the command is processes 7 and 9 (listed in any order),
        // 8 is another's.
        let snaps = [
            with(vec![row(7, 3, Some(1000)), row(8, 50, Some(1))]),
            with(vec![row(9, 1, Some(1000)), row(7, 0, Some(0))]),
        ];
        let m = command(&snaps, &[9, 7]);
        assert_eq!(m["command.rq_wait"], 4.0, "4 ms in 1 s");
        assert_eq!(m["command.wait_per_run"], 2.0, "4 ms over 2,000 runs: 2 µs");
        assert_eq!(describe("command.wait_per_run"), ("µs", Better::Lower));
        assert_eq!(describe("command.rq_wait"), ("ms/s", Better::Lower));
        // A row without its runs counted: no wait per run, the wait still.
        let snaps = [with(vec![row(7, 3, None)]), with(vec![row(9, 1, Some(10))])];
        let m = command(&snaps, &[7, 9]);
        assert!(!m.contains_key("command.wait_per_run") && m.contains_key("command.rq_wait"));
        // No processes of the command seen, or none in the rows: nothing.
        assert!(command(&snaps, &[]).is_empty());
        assert!(command(&snaps, &[42]).is_empty());
    }

    #[test]
    fn wait_percentiles_come_from_the_merged_histogram() {
        // 99 waits in [1024, 2048) ns, 1 in [2^20, 2^21).
        let mut h = vec![0u64; 21];
        h[10] = 99;
        h[20] = 1;
        let w = window(&[snap(0, h)]);
        assert_eq!(w["rq_wait.p50"], 2.048);
        assert_eq!(w["rq_wait.p99"], 2.048);
        assert_eq!(hist_percentile(&[0, 0, 1], 1.0), Some(8.0));
        assert_eq!(hist_percentile(&[0, 0], 0.5), None);
    }
}
