//! A recording's time series for charts (`llctop report --html`), folded one snapshot at
//! a time beside the text report's totals ([`super::summary::Summary`]): at most
//! [`COLUMNS`] columns whatever the length. A column holds `width` consecutive snapshots;
//! when the columns reach twice [`COLUMNS`], neighbours merge pairwise and `width`
//! doubles, so memory stays bounded for an hour or a week (the method the page states).

use std::collections::BTreeMap;

use crate::snapshot::{Cause, Snapshot};
use crate::topology::Distance;

/// The page's columns: at most this many after the last merge (and under twice it while
/// folding).
pub const COLUMNS: usize = 320;

/// A mean over the snapshots that had the value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mean {
    pub sum: f64,
    pub n: u32,
}

impl Mean {
    pub fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            self.sum += v;
            self.n += 1;
        }
    }

    fn merge(&mut self, o: Mean) {
        self.sum += o.sum;
        self.n += o.n;
    }

    pub fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
}

/// Counts over a column and whether any snapshot of it had them.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts<const N: usize> {
    pub n: [u64; N],
    pub seen: bool,
}

impl<const N: usize> Default for Counts<N> {
    fn default() -> Self {
        Counts {
            n: [0; N],
            seen: false,
        }
    }
}

impl<const N: usize> Counts<N> {
    fn merge(&mut self, o: &Counts<N>) {
        for (a, b) in self.n.iter_mut().zip(o.n) {
            *a = a.saturating_add(b);
        }
        self.seen |= o.seen;
    }

    /// Per second over `secs`, when seen.
    pub fn rates(&self, secs: f64) -> Option<[f64; N]> {
        (self.seen && secs > 0.0).then(|| self.n.map(|v| v as f64 / secs))
    }
}

/// One column: consecutive snapshots, seconds from the recording's start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Column {
    pub from: f64,
    pub to: f64,
    pub snapshots: u32,
    /// Σ interval seconds (rates divide by it).
    pub secs: f64,
    /// Per LLC (topology order): busy share, run-queue wait (ns of wait per second per
    /// CPU of the LLC, as a share: waiting tasks per CPU), wait p50 and p99 (ns; the
    /// p99 is the column's worst snapshot's).
    pub busy: Vec<Mean>,
    pub wait: Vec<Mean>,
    pub p50: Vec<Mean>,
    pub p99: Vec<Option<u64>>,
    /// Migrations by distance ([`Distance::ALL`] order) and by cause ([`Cause::ALL`]).
    pub by_distance: Counts<4>,
    pub by_cause: Counts<5>,
    /// Runtime-weighted preferred-LLC hit over the process rows.
    pub preferred_hit: Mean,
    /// Load-balance attempts (busy + idle + newidle) per domain level.
    pub balance: BTreeMap<u32, u64>,
    /// NUMA balancing: pages migrated, hinting faults (/proc/vmstat deltas).
    pub numa: Counts<2>,
    /// Per LLC (resctrl): L3 occupancy (bytes, mean of the column's readings).
    pub occupancy: Vec<Mean>,
    /// The machine's memory traffic (resctrl, Σ over LLCs): local and remote bytes (remote
    /// = total − local where both were read).
    pub membw: Counts<2>,
}

impl Column {
    fn new(llcs: usize) -> Column {
        Column {
            busy: vec![Mean::default(); llcs],
            wait: vec![Mean::default(); llcs],
            p50: vec![Mean::default(); llcs],
            p99: vec![None; llcs],
            occupancy: vec![Mean::default(); llcs],
            ..Column::default()
        }
    }

    fn add(&mut self, s: &Snapshot, from: f64, to: f64) {
        if self.snapshots == 0 {
            self.from = from;
        }
        self.to = to;
        self.snapshots += 1;
        let secs = s.time.interval_secs();
        self.secs += secs;
        for (i, g) in s.llcs.iter().enumerate().take(self.busy.len()) {
            self.busy[i].add(g.busy);
            let per_cpu = secs * f64::from(g.cpus.max(1));
            self.wait[i].add(g.rq_wait_ns.map(|w| w as f64 / 1e9 / per_cpu));
            self.p50[i].add(g.rq_wait_p50_ns.map(|v| v as f64));
            if let Some(p) = g.rq_wait_p99_ns {
                self.p99[i] = Some(self.p99[i].map_or(p, |q| q.max(p)));
            }
            if let Some(c) = &g.cache {
                self.occupancy[i].add(c.occupancy_bytes.map(|b| b as f64));
                if let (Some(t), Some(l)) = (c.mbm_total_bytes, c.mbm_local_bytes) {
                    self.membw.seen = true;
                    self.membw.n[0] = self.membw.n[0].saturating_add(l);
                    self.membw.n[1] = self.membw.n[1].saturating_add(t.saturating_sub(l));
                }
            }
        }
        if let Some(m) = &s.migrations {
            self.by_distance.seen = true;
            for (a, d) in self.by_distance.n.iter_mut().zip(Distance::ALL) {
                *a = a.saturating_add(m.by_distance.get(d));
            }
            if let Some(c) = &m.by_cause {
                self.by_cause.seen = true;
                for (a, k) in self.by_cause.n.iter_mut().zip(Cause::ALL) {
                    *a = a.saturating_add(c.get(k));
                }
            }
        }
        self.preferred_hit.add(s.preferred_hit().0);
        if let Some(b) = &s.balance {
            for d in &b.domains {
                let n = d
                    .busy
                    .count
                    .saturating_add(d.idle.count)
                    .saturating_add(d.newidle.count);
                let e = self.balance.entry(d.level).or_default();
                *e = e.saturating_add(n);
            }
        }
        if let Some(n) = &s.numa {
            self.numa.seen = true;
            let get = |k: &str| n.vmstat.get(k).copied().unwrap_or(0);
            self.numa.n[0] = self.numa.n[0].saturating_add(get("numa_pages_migrated"));
            self.numa.n[1] = self.numa.n[1].saturating_add(get("numa_hint_faults"));
        }
    }

    fn merge(&mut self, o: Column) {
        self.to = o.to;
        self.snapshots += o.snapshots;
        self.secs += o.secs;
        for (a, b) in self.busy.iter_mut().zip(o.busy) {
            a.merge(b);
        }
        for (a, b) in self.wait.iter_mut().zip(o.wait) {
            a.merge(b);
        }
        for (a, b) in self.p50.iter_mut().zip(o.p50) {
            a.merge(b);
        }
        for (a, b) in self.p99.iter_mut().zip(o.p99) {
            *a = match (*a, b) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
        }
        self.by_distance.merge(&o.by_distance);
        self.by_cause.merge(&o.by_cause);
        self.preferred_hit.merge(o.preferred_hit);
        for (l, n) in o.balance {
            let e = self.balance.entry(l).or_default();
            *e = e.saturating_add(n);
        }
        self.numa.merge(&o.numa);
        for (a, b) in self.occupancy.iter_mut().zip(o.occupancy) {
            a.merge(b);
        }
        self.membw.merge(&o.membw);
    }
}

/// The columns so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    llcs: usize,
    /// Snapshots per column (a power of two).
    pub width: u32,
    pub columns: Vec<Column>,
    t0: Option<u64>,
}

impl Series {
    pub fn new(llcs: usize) -> Series {
        Series {
            llcs,
            width: 1,
            columns: Vec::new(),
            t0: None,
        }
    }

    /// Fold the next snapshot in (in recording order).
    pub fn add(&mut self, s: &Snapshot) {
        let begin = s.time.mono_ns.saturating_sub(s.time.interval_ns);
        let t0 = *self.t0.get_or_insert(begin);
        let at = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
        let full = self
            .columns
            .last()
            .is_none_or(|c| c.snapshots >= self.width);
        if full {
            if self.columns.len() >= 2 * COLUMNS {
                self.halve();
            }
            if self
                .columns
                .last()
                .is_none_or(|c| c.snapshots >= self.width)
            {
                self.columns.push(Column::new(self.llcs));
            }
        }
        if let Some(c) = self.columns.last_mut() {
            c.add(s, at(begin), at(s.time.mono_ns));
        }
    }

    /// Neighbours merged pairwise; the width doubles.
    fn halve(&mut self) {
        let mut out = Vec::with_capacity(self.columns.len() / 2 + 1);
        let mut it = std::mem::take(&mut self.columns).into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.merge(b);
            }
            out.push(a);
        }
        self.columns = out;
        self.width = self.width.saturating_mul(2);
    }

    /// The recording's length in seconds, as the columns cover it.
    pub fn span(&self) -> f64 {
        self.columns.last().map_or(0.0, |c| c.to)
    }

    /// The start on CLOCK_MONOTONIC (ns), once a snapshot came.
    pub fn t0(&self) -> Option<u64> {
        self.t0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Migrations;

    fn snap(topo: &crate::topology::Topology, seq: u64, busy: f64, xllc: u64) -> Snapshot {
        let mut s = crate::collect::empty_snapshot(topo);
        s.seq = seq;
        s.time.interval_ns = 1_000_000_000;
        s.time.mono_ns = (seq + 1) * 1_000_000_000;
        s.llcs = (0..2)
            .map(|id| crate::snapshot::GroupStats {
                id,
                cpus: 2,
                busy: Some(busy),
                rq_wait_ns: Some(500_000_000),
                rq_wait_p99_ns: Some(seq * 1000),
                cache: Some(crate::snapshot::CacheMon {
                    occupancy_bytes: Some(1 << 20),
                    mbm_total_bytes: Some(3000),
                    mbm_local_bytes: Some(1000),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        let mut m = Migrations::default();
        m.by_distance.cross_llc = xllc;
        s.migrations = Some(m);
        s
    }

    #[test]
    fn columns_stay_bounded_and_keep_every_count_and_mean() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut se = Series::new(2);
        let n = 5 * COLUMNS as u64 + 7;
        for seq in 0..n {
            se.add(&snap(
                &topo,
                seq,
                if seq % 2 == 0 { 0.2 } else { 0.6 },
                seq % 3,
            ));
        }
        assert!(se.columns.len() < 2 * COLUMNS && se.columns.len() >= COLUMNS / 2);
        assert_eq!(se.width, 4);
        // Nothing lost: every snapshot, every migration, the mean busy.
        let snaps: u32 = se.columns.iter().map(|c| c.snapshots).sum();
        assert_eq!(u64::from(snaps), n);
        let xllc: u64 = se.columns.iter().map(|c| c.by_distance.n[2]).sum();
        assert_eq!(xllc, (0..n).map(|s| s % 3).sum::<u64>());
        let (sum, k) = se
            .columns
            .iter()
            .fold((0.0, 0), |(s, k), c| (s + c.busy[0].sum, k + c.busy[0].n));
        let mean = sum / f64::from(k);
        let want = (0..n)
            .map(|s| if s % 2 == 0 { 0.2 } else { 0.6 })
            .sum::<f64>()
            / n as f64;
        assert!((mean - want).abs() < 1e-9, "{mean} {want} {k}");
        // Columns are contiguous in time; the p99 is the worst snapshot's.
        for w in se.columns.windows(2) {
            assert!((w[0].to - w[1].from).abs() < 1e-9);
        }
        assert_eq!(se.columns[0].p99[0], Some((u64::from(se.width) - 1) * 1000));
        assert!((se.span() - n as f64).abs() < 1e-9);
        // resctrl: every LLC's occupancy, the machine's local and remote traffic.
        let c = &se.columns[0];
        assert_eq!(c.occupancy[1].get(), Some(f64::from(1 << 20)));
        assert_eq!(
            c.membw.n,
            [2000 * u64::from(se.width), 4000 * u64::from(se.width)]
        );
        // Half a second of wait per second over 2 CPUs: a quarter waiting per CPU.
        assert!((se.columns[0].wait[0].get().unwrap_or(0.0) - 0.25).abs() < 1e-9);
        assert!((se.columns[0].secs - f64::from(se.width)).abs() < 1e-9);
    }

    #[test]
    fn a_column_without_a_source_says_so() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut s = crate::collect::empty_snapshot(&topo);
        s.time.interval_ns = 1_000_000_000;
        s.time.mono_ns = 1_000_000_000;
        let mut se = Series::new(2);
        se.add(&s);
        let c = &se.columns[0];
        assert_eq!(c.by_distance.rates(c.secs), None);
        assert_eq!(c.busy[0].get(), None);
        assert_eq!(c.preferred_hit.get(), None);
    }
}
