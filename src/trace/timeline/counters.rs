//! The counter tracks of a timeline: each snapshot's figures per node, LLC and CPU (busy,
//! waits, migrations by distance, preferred-LLC hits, balancing, NUMA) at the start of its
//! interval, each value holding until the next.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::{Scope, T_COUNTER, T_NUMA, Timeline};
use crate::snapshot::{GroupStats, Snapshot};
use crate::trace::perfetto::TrackKind;

impl<W: Write> Timeline<W> {
    fn counter(
        &mut self,
        scope: Scope,
        metric: u64,
        name: &str,
        unit: &str,
        mono: u64,
        v: f64,
    ) -> io::Result<()> {
        if !v.is_finite() {
            return Ok(());
        }
        let uuid = T_COUNTER | (scope.code() << 8) | metric;
        if self.tracks.insert(uuid) {
            self.w.track(
                uuid,
                Some(scope.parent()),
                name,
                &TrackKind::Counter { unit: unit.into() },
                Some(metric as i32),
            )?;
        }
        let ts = self.ts(mono);
        self.w.counter(ts, uuid, v)
    }

    /// The counters of one snapshot, at the start of its interval (each value holds
    /// until the next).
    pub fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        let start = s.time.mono_ns.saturating_sub(s.time.interval_ns);
        let secs = s.time.interval_secs();
        if secs <= 0.0 {
            return Ok(());
        }
        let per_s = |n: u64| n as f64 / secs;
        for g in &s.llcs {
            self.group(Scope::Llc(g.id), g, start, secs)?;
        }
        for g in &s.nodes {
            self.group(Scope::Node(g.id), g, start, secs)?;
        }
        // Preferred-LLC hit per LLC: of the runtime of the shown processes that prefer
        // it, the share spent on it.
        let mut pref: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for r in s.processes.iter().flat_map(|t| &t.rows) {
            if let Some(p) = r.preferred_llc {
                let on = r.runtime_per_llc_ns.get(p as usize).copied().unwrap_or(0);
                let e = pref.entry(p).or_default();
                e.0 = e.0.saturating_add(on);
                e.1 = e.1.saturating_add(r.cpu_time_ns);
            }
        }
        for (llc, (on, all)) in pref {
            if all > 0 {
                let v = 100.0 * on as f64 / all as f64;
                self.counter(Scope::Llc(llc), 3, "preferred-LLC hit", "%", start, v)?;
            }
        }
        // Migrations into and out of each LLC by distance, from the LLC matrix.
        if let Some(m) = &s.migrations
            && !m.llc_matrix.is_empty()
        {
            let node_of = |l: usize| self.topo.llcs.get(l).and_then(|x| x.node);
            let n = m.llc_matrix.len();
            let mut cells = vec![[0u64; 5]; n];
            for (from, row) in m.llc_matrix.iter().enumerate() {
                for (to, &c) in row.iter().enumerate() {
                    if from == to {
                        cells[from][4] = cells[from][4].saturating_add(c);
                        continue;
                    }
                    let far = usize::from(node_of(from) != node_of(to));
                    if let Some(x) = cells.get_mut(to) {
                        x[far] = x[far].saturating_add(c);
                    }
                    cells[from][2 + far] = cells[from][2 + far].saturating_add(c);
                }
            }
            for (l, c) in cells.iter().enumerate() {
                let Some(id) = self.topo.llcs.get(l).map(|x| x.id) else {
                    continue;
                };
                for (i, name) in [
                    "in cross_llc",
                    "in cross_node",
                    "out cross_llc",
                    "out cross_node",
                    "within",
                ]
                .iter()
                .enumerate()
                {
                    self.counter(
                        Scope::Llc(id),
                        10 + i as u64,
                        name,
                        "/s",
                        start,
                        per_s(c[i]),
                    )?;
                }
            }
        }
        if self.cpu_counters {
            for c in &s.cpus {
                if let Some(b) = c.busy {
                    self.counter(Scope::Cpu(c.cpu), 0, "busy", "%", start, 100.0 * b)?;
                }
                if let Some(w) = c.rq_wait_ns {
                    self.counter(
                        Scope::Cpu(c.cpu),
                        1,
                        "run-queue wait",
                        "ms/s",
                        start,
                        w as f64 / 1e6 / secs,
                    )?;
                }
                if let Some(n) = c.migrations_in {
                    self.counter(Scope::Cpu(c.cpu), 2, "migrations in", "/s", start, per_s(n))?;
                }
                if let Some(n) = c.migrations_out {
                    self.counter(
                        Scope::Cpu(c.cpu),
                        3,
                        "migrations out",
                        "/s",
                        start,
                        per_s(n),
                    )?;
                }
            }
        }
        if let Some(numa) = &s.numa {
            if !numa.vmstat.is_empty() && self.tracks.insert(T_NUMA) {
                self.w
                    .track(T_NUMA, None, "NUMA balancing", &TrackKind::Plain, Some(90))?;
            }
            for (i, (k, &v)) in numa.vmstat.iter().enumerate() {
                self.counter(Scope::Numa, i as u64, k, "/s", start, per_s(v))?;
            }
            for n in &numa.nodes {
                for (i, k) in ["numa_miss", "numa_foreign", "other_node"]
                    .iter()
                    .enumerate()
                {
                    if let Some(&v) = n.counters.get(*k) {
                        self.counter(
                            Scope::Node(n.node),
                            20 + i as u64,
                            k,
                            "pages/s",
                            start,
                            per_s(v),
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    fn group(&mut self, scope: Scope, g: &GroupStats, start: u64, secs: f64) -> io::Result<()> {
        if let Some(b) = g.busy {
            self.counter(scope, 0, "busy", "%", start, 100.0 * b)?;
        }
        if let Some(w) = g.rq_wait_ns {
            self.counter(
                scope,
                1,
                "run-queue wait",
                "ms/s",
                start,
                w as f64 / 1e6 / secs,
            )?;
        }
        if let Some(p) = g.rq_wait_p99_ns {
            self.counter(scope, 2, "run-queue wait p99", "us", start, p as f64 / 1e3)?;
        }
        if let Some(c) = &g.counters {
            if let Some(ipc) = c.ipc {
                self.counter(scope, 4, "IPC", "instructions/cycle", start, ipc)?;
            }
            if let Some(m) = c.mpki {
                self.counter(scope, 5, "MPKI", "misses/1000 instructions", start, m)?;
            }
            if let Some(m) = c.l3_misses_per_sec {
                self.counter(scope, 6, "L3 misses", "/s", start, m)?;
            }
        }
        Ok(())
    }
}
