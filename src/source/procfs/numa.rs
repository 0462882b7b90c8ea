//! NUMA counters: `/proc/vmstat` (`numa_*`, `pgmigrate_*`, `pgpromote_*`, `pgdemote_*`,
//! parsed by procfs-core's `VmStat`), `/sys/devices/system/node/nodeN/{numastat,meminfo}`,
//! `/proc/sys/kernel/numa_balancing` ([`NumaReader`], the procfs source's), and the NUMA
//! balancing counters of cgroup `memory.stat` (v6.12+) for the cgroups that own the shown
//! processes (the enrichment stage's, src/enrich.rs: it needs the rows' cgroups).

use std::collections::{BTreeMap, HashMap};

use procfs_core::VmStat;

use crate::kroot::KernelRoot;
use crate::snapshot::{NodeNuma, NumaStats};
use crate::topology::Topology;

const VMSTAT_PREFIXES: [&str; 4] = ["numa_", "pgmigrate_", "pgpromote_", "pgdemote_"];
pub const CGROUP_KEYS: [&str; 3] = [
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
];

pub type Counters = BTreeMap<String, u64>;

/// Differences of counters present in both maps (a counter that went backwards is skipped).
pub fn diff(prev: &Counters, cur: &Counters) -> Counters {
    cur.iter()
        .filter_map(|(k, v)| Some((k.clone(), v.checked_sub(*prev.get(k)?)?)))
        .collect()
}

/// `name value` lines, as in numastat and memory.stat.
pub fn parse_kv(text: &str) -> Counters {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse::<u64>().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// `Node 0 MemTotal:  4417752 kB` lines → (MemTotal, MemFree) in KiB.
pub fn parse_node_meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let mut total = None;
    let mut free = None;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 4 {
            match f[2] {
                "MemTotal:" => total = f[3].parse().ok(),
                "MemFree:" => free = f[3].parse().ok(),
                _ => {}
            }
        }
    }
    (total, free)
}

#[derive(Debug, Default)]
pub struct NumaReader {
    prev_vmstat: Option<Counters>,
    prev_nodes: HashMap<u32, Counters>,
}

/// What one read gave, with the reasons for what it could not give.
pub struct NumaRead {
    pub stats: Option<NumaStats>,
    pub missing: Vec<String>,
}

impl NumaReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Read the system and node counters; the first call (no previous values) yields no
    /// deltas. `cgroups` of the result stay empty.
    pub fn read(&mut self, root: &KernelRoot, topo: &Topology) -> NumaRead {
        let mut missing = Vec::new();
        let balancing_mode = match root.read_value_opt::<u32>("/proc/sys/kernel/numa_balancing") {
            Ok(v) => {
                if v.is_none() {
                    missing.push(
                        "/proc/sys/kernel/numa_balancing absent (CONFIG_NUMA_BALANCING off)".into(),
                    );
                }
                v
            }
            Err(e) => {
                missing.push(e.to_string());
                None
            }
        };

        let vm = match root.parse::<VmStat>("/proc/vmstat") {
            Ok(v) => Some(
                v.0.into_iter()
                    .filter(|(k, _)| VMSTAT_PREFIXES.iter().any(|p| k.starts_with(p)))
                    .filter_map(|(k, v)| Some((k, u64::try_from(v).ok()?)))
                    .collect::<Counters>(),
            ),
            Err(e) => {
                missing.push(e.to_string());
                None
            }
        };
        let vm_delta = match (&self.prev_vmstat, &vm) {
            (Some(p), Some(c)) => Some(diff(p, c)),
            _ => None,
        };
        if vm.is_some() {
            self.prev_vmstat = vm;
        }

        let mut nodes = Vec::new();
        let mut first = self.prev_nodes.is_empty();
        for node in &topo.nodes {
            let dir = format!("/sys/devices/system/node/node{}", node.id);
            let cur = match root.read(format!("{dir}/numastat")) {
                Ok(t) => parse_kv(&t),
                Err(e) => {
                    if !e.is_not_found() {
                        missing.push(e.to_string());
                    }
                    continue;
                }
            };
            let (mem_total_kb, mem_free_kb) = root
                .read(format!("{dir}/meminfo"))
                .map(|t| parse_node_meminfo(&t))
                .unwrap_or((None, None));
            match self.prev_nodes.insert(node.id, cur.clone()) {
                Some(p) => nodes.push(NodeNuma {
                    node: node.id,
                    counters: diff(&p, &cur),
                    mem_total_kb,
                    mem_free_kb,
                }),
                None => first = true,
            }
        }

        if vm_delta.is_none() || first {
            return NumaRead {
                stats: None,
                missing,
            };
        }
        NumaRead {
            stats: Some(NumaStats {
                balancing_mode,
                vmstat: vm_delta.unwrap_or_default(),
                nodes,
                cgroups: Vec::new(),
            }),
            missing,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_and_diff() {
        let a = parse_kv("numa_hit 10\nnuma_miss 1\nbad\nx y\n");
        assert_eq!(a.len(), 2);
        let b = parse_kv("numa_hit 15\nnuma_miss 0\nnuma_new 3\n");
        let d = diff(&a, &b);
        assert_eq!(d.get("numa_hit"), Some(&5));
        assert_eq!(d.get("numa_miss"), None, "went backwards");
        assert_eq!(d.get("numa_new"), None, "no previous value");
    }

    #[test]
    fn node_meminfo() {
        let t = "Node 0 MemTotal:        4417752 kB\nNode 0 MemFree:         1000 kB\nNode 0 MemUsed: 5 kB\n";
        assert_eq!(parse_node_meminfo(t), (Some(4417752), Some(1000)));
    }
}
