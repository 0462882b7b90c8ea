//! The report's L3 section: what each LLC's L3 held over the recording (mean and peak
//! occupancy, of the LLC's share of the L3) and the memory traffic behind it (local and
//! remote bandwidth), the processes llctop monitored in groups of its own (where their
//! L3 bytes were), and the readings resctrl would not give, by reason — folded one
//! snapshot at a time, rendered once.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::snapshot::{CacheMon, Snapshot, Unread};
use crate::topology::Topology;
use crate::units::{bytes, bytes_per_sec};

/// A level's mean and peak, and a counter's sum over the intervals it was known.
#[derive(Debug, Default, Clone)]
struct Fold {
    occ_sum: f64,
    occ_n: u64,
    occ_peak: u64,
    local: u64,
    remote: u64,
    /// Seconds of the intervals whose local and remote bytes were both known.
    bw_secs: f64,
    /// Intervals whose bandwidth was not.
    bw_unknown: u64,
}

impl Fold {
    fn add(&mut self, c: &CacheMon, secs: f64) {
        if let Some(o) = c.occupancy_bytes {
            self.occ_sum += o as f64;
            self.occ_n += 1;
            self.occ_peak = self.occ_peak.max(o);
        }
        match (c.mbm_local_bytes, c.mbm_remote_bytes()) {
            (Some(l), Some(r)) => {
                self.local = self.local.saturating_add(l);
                self.remote = self.remote.saturating_add(r);
                self.bw_secs += secs;
            }
            _ => self.bw_unknown += 1,
        }
    }

    fn mean(&self) -> Option<u64> {
        (self.occ_n > 0).then(|| (self.occ_sum / self.occ_n as f64) as u64)
    }

    /// `mean  peak  local/s  remote/s  remote%`.
    fn columns(&self, capacity: Option<u64>) -> String {
        let of = |v: u64| match capacity {
            Some(c) if c > 0 => format!("{:>4.0}%", 100.0 * v as f64 / c as f64),
            _ => "    -".into(),
        };
        let (mean, peak) = match self.mean() {
            Some(m) => (
                format!("{:>10} {}", bytes(m), of(m)),
                format!("{:>10}", bytes(self.occ_peak)),
            ),
            None => (format!("{:>16}", "-"), format!("{:>10}", "-")),
        };
        let (local, remote, share) = if self.bw_secs > 0.0 {
            let all = self.local.saturating_add(self.remote);
            (
                bytes_per_sec(self.local, self.bw_secs),
                bytes_per_sec(self.remote, self.bw_secs),
                if all > 0 {
                    format!("{:.0}%", 100.0 * self.remote as f64 / all as f64)
                } else {
                    "-".into()
                },
            )
        } else {
            ("-".into(), "-".into(), "-".into())
        };
        format!("{mean} {peak} {local:>11} {remote:>11} {share:>7}")
    }
}

#[derive(Debug, Default)]
struct Proc {
    comm: String,
    fold: Fold,
    /// L3 bytes summed over the snapshots per LLC (where its cache was).
    per_llc: BTreeMap<u32, u64>,
}

/// The section's totals.
#[derive(Debug, Default)]
pub(super) struct L3 {
    snapshots: u64,
    all: Fold,
    llcs: BTreeMap<u32, Fold>,
    procs: BTreeMap<u32, Proc>,
    unread: BTreeMap<&'static str, u64>,
}

impl L3 {
    /// Fold one snapshot in.
    pub(super) fn add(&mut self, s: &Snapshot) {
        let Some(r) = &s.resctrl else {
            return;
        };
        let secs = s.time.interval_secs();
        self.snapshots += 1;
        self.all.add(&r.total, secs);
        for g in &s.llcs {
            if let Some(c) = &g.cache {
                self.llcs.entry(g.id).or_default().add(c, secs);
            }
        }
        for g in r.groups.iter().filter(|g| g.pid.is_some()) {
            let pid = g.pid.unwrap_or(0);
            let p = self.procs.entry(pid).or_default();
            if let Some(row) = s
                .processes
                .iter()
                .flat_map(|t| &t.rows)
                .find(|x| x.pid == pid)
                && !row.comm.is_empty()
            {
                p.comm.clone_from(&row.comm);
            }
            p.fold.add(&g.total, secs);
            for d in &g.domains {
                if let (Some(l), Some(o)) = (d.llc, d.mon.occupancy_bytes) {
                    let e = p.per_llc.entry(l).or_default();
                    *e = e.saturating_add(o);
                }
            }
        }
        for d in r.groups.iter().flat_map(|g| &g.domains) {
            let m = &d.mon;
            for w in [m.occupancy_why, m.total_why, m.local_why]
                .into_iter()
                .flatten()
                .filter(|w| *w != Unread::NoEvent)
            {
                *self.unread.entry(w.label()).or_default() += 1;
            }
        }
    }

    /// The section's text: empty when no snapshot had resctrl's figures (the source's
    /// reason is among the report's source notes then).
    pub(super) fn section(
        &self,
        topo: &Topology,
        snapshots: usize,
    ) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        if self.snapshots == 0 {
            return Ok(out);
        }
        writeln!(
            out,
            "\nL3 occupancy and memory bandwidth (resctrl; {} of {snapshots} snapshots)",
            self.snapshots
        )?;
        writeln!(
            out,
            "  {:<12} {:>16} {:>10} {:>11} {:>11} {:>7}",
            "", "mean (of L3)", "peak", "local/s", "remote/s", "remote"
        )?;
        writeln!(out, "  {:<12} {}", "all", self.all.columns(None))?;
        for l in &topo.llcs {
            let Some(f) = self.llcs.get(&l.id) else {
                writeln!(out, "  llc{:<9} not read", l.id)?;
                continue;
            };
            let node = l.node.map_or("-".into(), |n| n.to_string());
            writeln!(
                out,
                "  {:<12} {}",
                format!("llc{} n{node}", l.id),
                f.columns(topo.llc_capacity_bytes(l.id))
            )?;
        }
        if !self.procs.is_empty() {
            writeln!(
                out,
                "  monitored processes (llctop's resctrl groups), by mean occupancy"
            )?;
            let mut procs: Vec<(&u32, &Proc)> = self.procs.iter().collect();
            procs.sort_by_key(|(_, p)| std::cmp::Reverse(p.fold.mean().unwrap_or(0)));
            for (pid, p) in procs.into_iter().take(10) {
                let total: u64 = p.per_llc.values().sum();
                let most = p
                    .per_llc
                    .iter()
                    .max_by_key(|(_, v)| **v)
                    .filter(|_| total > 0)
                    .map_or(String::new(), |(l, v)| {
                        format!(
                            "  most on llc{l} ({:.0}%)",
                            100.0 * *v as f64 / total as f64
                        )
                    });
                let name = crate::text::cell(&format!("{pid} {}", p.comm), 12);
                writeln!(out, "  {name:<12} {}{most}", p.fold.columns(None))?;
            }
        }
        if !self.unread.is_empty() {
            let parts: Vec<String> = self
                .unread
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            writeln!(
                out,
                "  readings without a figure: {} (docs/metrics.md, resctrl)",
                parts.join(", ")
            )?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{GroupStats, Resctrl, SnapshotTime};

    fn mon(o: u64, t: u64, l: u64) -> CacheMon {
        CacheMon {
            occupancy_bytes: Some(o),
            mbm_total_bytes: Some(t),
            mbm_local_bytes: Some(l),
            ..CacheMon::default()
        }
    }

    #[test]
    fn means_peaks_and_rates_over_the_known_intervals() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut l3 = L3::default();
        for (o, t, l) in [
            (1 << 20, 2_000_000, 1_500_000),
            (3 << 20, 4_000_000, 3_500_000),
        ] {
            l3.add(&Snapshot {
                time: SnapshotTime {
                    interval_ns: 1_000_000_000,
                    ..Default::default()
                },
                llcs: vec![GroupStats {
                    id: 0,
                    cache: Some(mon(o, t, l)),
                    ..Default::default()
                }],
                resctrl: Some(Resctrl {
                    total: mon(o, t, l),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        // A snapshot without resctrl counts as not read.
        l3.add(&Snapshot::default());
        let text = l3.section(&topo, 3).unwrap();
        assert!(text.contains("(resctrl; 2 of 3 snapshots)"), "{text}");
        // mean 2 MiB, peak 3 MiB; 5 MB local and 1 MB remote over 2 s.
        assert!(text.contains("2.0 MiB"), "{text}");
        assert!(text.contains("3.0 MiB"), "{text}");
        assert!(text.contains("2.5 MB/s"), "{text}");
        assert!(
            text.contains("500 kB/s") || text.contains("500.0 kB/s"),
            "{text}"
        );
        assert!(text.contains("17%"), "{text}");
        assert!(text.contains("llc1 "), "{text}");
        assert!(text.contains("not read"), "{text}");
        assert!(L3::default().section(&topo, 3).unwrap().is_empty());
    }
}
