//! How much memory a snapshot holds ([`Snapshot::approx_bytes`]), for sizing histories
//! in MiB.

use super::*;

impl Snapshot {
    /// About how many bytes this snapshot holds in memory: its structs and what they
    /// point to (vectors, strings, boxed counters, maps at a flat cost per entry). An
    /// estimate from the contents, for sizing a history in MiB (the TUI's), not an
    /// allocator's count.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        const MAP_ENTRY: usize = 64; // a BTreeMap<String, u64> entry with a short key
        let counters = |c: &Option<Counters>| c.as_ref().map_or(0, |_| size_of::<Counters>());
        let cpus: usize = self
            .cpus
            .iter()
            .map(|c| {
                size_of::<CpuStats>()
                    + c.rq_wait_hist.as_ref().map_or(0, |h| h.capacity() * 8)
                    + c.counters.as_ref().map_or(0, |_| size_of::<Counters>())
                    + c.counters_raw
                        .as_ref()
                        .map_or(0, |_| size_of::<RawCounters>())
            })
            .sum();
        let groups: usize = self
            .llcs
            .iter()
            .chain(&self.nodes)
            .map(|g| size_of::<GroupStats>() + counters(&g.counters))
            .sum();
        let migrations = self.migrations.as_ref().map_or(0, |m| {
            size_of::<Migrations>()
                + m.llc_matrix
                    .iter()
                    .map(|r| size_of::<Vec<u64>>() + r.capacity() * 8)
                    .sum::<usize>()
        });
        let processes = self.processes.as_ref().map_or(0, |t| {
            size_of::<ProcessTable>()
                + t.rows
                    .iter()
                    .map(|r| {
                        size_of::<ProcessStats>()
                            + r.comm.capacity()
                            + r.runtime_per_llc_ns.capacity() * 8
                            + r.cgroup.as_ref().map_or(0, String::capacity)
                            + counters(&r.counters)
                            + r.counters_per_llc.capacity() * size_of::<Option<Counters>>()
                    })
                    .sum::<usize>()
        });
        let balance = self.balance.as_ref().map_or(0, |b| {
            size_of::<Balance>() + b.domains.capacity() * size_of::<DomainBalance>()
        });
        let numa = self.numa.as_ref().map_or(0, |n| {
            size_of::<NumaStats>()
                + n.vmstat.len() * MAP_ENTRY
                + n.nodes
                    .iter()
                    .map(|x| size_of::<NodeNuma>() + x.counters.len() * MAP_ENTRY)
                    .sum::<usize>()
                + n.cgroups
                    .iter()
                    .map(|c| size_of::<CgroupNuma>() + c.path.capacity())
                    .sum::<usize>()
        });
        let events = self.events.as_ref().map_or(0, |l| {
            size_of::<EventLog>()
                + l.events
                    .iter()
                    .map(|e| size_of::<DetailEvent>() + e.comm.capacity())
                    .sum::<usize>()
        });
        let sources: usize = self
            .sources
            .iter()
            .map(|s| {
                size_of::<SourceStatus>()
                    + s.name.capacity()
                    + s.reason.as_ref().map_or(0, String::capacity)
            })
            .sum();
        let resctrl = self.resctrl.as_ref().map_or(0, |r| {
            size_of::<Resctrl>()
                + r.info.counters.capacity() * size_of::<DomainCounters>()
                + r.groups
                    .iter()
                    .map(|g| {
                        size_of::<ResctrlGroup>()
                            + g.path.capacity()
                            + g.domains.capacity() * size_of::<DomainMon>()
                    })
                    .sum::<usize>()
        });
        size_of::<Snapshot>()
            + resctrl
            + cpus
            + groups
            + migrations
            + processes
            + balance
            + numa
            + events
            + sources
    }
}
