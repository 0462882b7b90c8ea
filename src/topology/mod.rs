//! CPU, LLC and NUMA topology: the model ([`Topology`]), its discovery from sysfs
//! ([`sysfs`]) and its human-readable rendering ([`render`]).
//!
//! The LLC here is the *scheduler's* LLC: the highest unified cache level, grouped by its
//! `shared_cpu_list`, intersected with the NUMA node (Intel SNC splits a sysfs L3 into
//! several scheduler LLCs). LLC ids are dense `0..n` in CPU order; node ids are the
//! kernel's. Every consumer (sources, BPF arrays, views) classifies by this one model.

pub mod render;
pub mod sysfs;

use serde::{Deserialize, Serialize};

pub use sysfs::discover;

/// One CPU. Offline CPUs have no topology in sysfs: their optional fields are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub cpu: u32,
    pub online: bool,
    /// Dense, system-wide physical core index (like `lscpu`'s CORE column).
    pub core: Option<u32>,
    /// The kernel's `core_id` (unique only within a package/die).
    #[serde(default)]
    pub core_id: Option<u32>,
    pub package: Option<u32>,
    #[serde(default)]
    pub die: Option<u32>,
    #[serde(default)]
    pub cluster: Option<u32>,
    pub llc: Option<u32>,
    pub node: Option<u32>,
    /// SMT siblings including this CPU (`thread_siblings_list`).
    #[serde(default)]
    pub smt_siblings: Vec<u32>,
}

/// How an LLC's CPU set was determined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlcBasis {
    /// Highest-level unified cache's `shared_cpu_list`.
    Cache,
    /// As `Cache`, but the cache spans several NUMA nodes (Intel SNC) and the scheduler's
    /// LLC is its intersection with the node.
    CacheSplitByNode,
    /// No cache information: `cluster_cpus_list`.
    Cluster,
    /// No cache or cluster information: `package_cpus_list`.
    Package,
    /// Nothing in sysfs at all: one LLC per node.
    Node,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Llc {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub node: Option<u32>,
    /// Cache level (3 for an L3); `None` when not derived from a cache.
    pub level: Option<u8>,
    pub size_kb: Option<u64>,
    #[serde(default = "default_basis")]
    pub basis: LlcBasis,
    /// The cache's own `shared_cpu_list` when it differs from `cpus` (SNC split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_cpus: Option<Vec<u32>>,
    /// The kernel's id of the cache (`cache/indexN/id`): unique per level, not a
    /// position (resctrl names its L3 domains by it). `None` when not derived from a
    /// cache or the kernel gives no id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_id: Option<u32>,
}

fn default_basis() -> LlcBasis {
    LlcBasis::Cache
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: u32,
    pub cpus: Vec<u32>,
    /// Row of the SLIT distance table, in the order of `Topology::nodes`.
    #[serde(default)]
    pub distances: Vec<u32>,
}

/// Distance between the two CPUs of a migration, nearest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distance {
    /// Same physical core (SMT sibling).
    Smt,
    /// Different core, same LLC.
    Llc,
    /// Different LLC, same NUMA node.
    CrossLlc,
    /// Different NUMA node.
    CrossNode,
}

impl Distance {
    pub const ALL: [Distance; 4] = [
        Distance::Smt,
        Distance::Llc,
        Distance::CrossLlc,
        Distance::CrossNode,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Distance::Smt => "smt",
            Distance::Llc => "llc",
            Distance::CrossLlc => "xllc",
            Distance::CrossNode => "xnode",
        }
    }

    /// Its JSON name (recordings, `ByDistance`'s fields, trace event names): `smt`,
    /// `llc`, `cross_llc`, `cross_node`.
    pub fn key(self) -> &'static str {
        match self {
            Distance::Smt => "smt",
            Distance::Llc => "llc",
            Distance::CrossLlc => "cross_llc",
            Distance::CrossNode => "cross_node",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topology {
    pub cpus: Vec<Cpu>,
    pub llcs: Vec<Llc>,
    pub nodes: Vec<Node>,
}

impl Topology {
    /// The CPU with this number, if the kernel knows it.
    pub fn cpu(&self, cpu: u32) -> Option<&Cpu> {
        // `cpus` is sorted by number and usually dense, so try the direct index first.
        match self.cpus.get(cpu as usize) {
            Some(c) if c.cpu == cpu => Some(c),
            _ => self.cpus.iter().find(|c| c.cpu == cpu),
        }
    }

    pub fn online_cpus(&self) -> impl Iterator<Item = &Cpu> {
        self.cpus.iter().filter(|c| c.online)
    }

    /// The bytes of cache an LLC has to itself: its cache's size, divided among the
    /// scheduler LLCs the cache is split into (sub-NUMA clustering gives each node its
    /// share). What L3 occupancy is a fraction of.
    pub fn llc_capacity_bytes(&self, llc: u32) -> Option<u64> {
        let l = self.llcs.iter().find(|l| l.id == llc)?;
        let size = l.size_kb?.checked_mul(1024)?;
        let parts = match l.cache_id {
            Some(id) => self
                .llcs
                .iter()
                .filter(|x| x.cache_id == Some(id) && x.level == l.level)
                .count()
                .max(1),
            None => 1,
        };
        Some(size / parts as u64)
    }

    pub fn llc_of(&self, cpu: u32) -> Option<u32> {
        self.cpu(cpu).and_then(|c| c.llc)
    }

    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.cpu(cpu).and_then(|c| c.node)
    }

    /// Position of a node id in `nodes` (node ids may be sparse).
    pub fn node_index(&self, node: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == node)
    }

    /// The largest CPU number plus one (size for per-CPU arrays).
    pub fn nr_cpu_ids(&self) -> usize {
        self.cpus.last().map_or(0, |c| c.cpu as usize + 1)
    }

    /// Classify a move from `from` to `to`; `None` for the same CPU or an unknown CPU.
    pub fn distance(&self, from: u32, to: u32) -> Option<Distance> {
        if from == to {
            return None;
        }
        let a = self.cpu(from)?;
        let b = self.cpu(to)?;
        if a.node.is_some() && b.node.is_some() && a.node != b.node {
            return Some(Distance::CrossNode);
        }
        let (la, lb) = (a.llc?, b.llc?);
        if la != lb {
            return Some(Distance::CrossLlc);
        }
        if a.core.is_some() && a.core == b.core {
            return Some(Distance::Smt);
        }
        Some(Distance::Llc)
    }

    /// One-line summary, e.g. `2 nodes · 16 LLCs · 128 CPUs`.
    pub fn summary(&self) -> String {
        let online = self.online_cpus().count();
        let offline = self.cpus.len() - online;
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut s = format!(
            "{} · {} · {}",
            plural(self.nodes.len(), "node"),
            plural(self.llcs.len(), "LLC"),
            plural(online, "CPU")
        );
        if offline > 0 {
            s.push_str(&format!(" ({offline} offline)"));
        }
        s
    }
}

/// A regular machine without sysfs: `nodes` × `llcs_per_node` LLCs of `cpus_per_llc`
/// CPUs, one CPU per core, numbered node by node. For tests and benchmarks of code that
/// scales with the topology (the TUI's 2–512 CPU layouts); the product discovers.
pub fn synthetic(nodes: u32, llcs_per_node: u32, cpus_per_llc: u32) -> Topology {
    let mut t = Topology::default();
    let n_llc = nodes * llcs_per_node;
    for l in 0..n_llc {
        let node = l / llcs_per_node;
        let cpus: Vec<u32> = (l * cpus_per_llc..(l + 1) * cpus_per_llc).collect();
        for &cpu in &cpus {
            t.cpus.push(Cpu {
                cpu,
                online: true,
                core: Some(cpu),
                core_id: Some(cpu % cpus_per_llc),
                package: Some(node),
                die: Some(0),
                cluster: None,
                llc: Some(l),
                node: Some(node),
                smt_siblings: vec![cpu],
            });
        }
        t.llcs.push(Llc {
            id: l,
            cpus,
            node: Some(node),
            level: Some(3),
            size_kb: Some(32768),
            basis: LlcBasis::Cache,
            cache_cpus: None,
            cache_id: Some(l),
        });
    }
    for n in 0..nodes {
        t.nodes.push(Node {
            id: n,
            cpus: (n * llcs_per_node * cpus_per_llc..(n + 1) * llcs_per_node * cpus_per_llc)
                .collect(),
            distances: (0..nodes).map(|m| if m == n { 10 } else { 32 }).collect(),
        });
    }
    t
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 2 nodes × 2 LLCs × 2 cores × 2 threads = 16 CPUs; CPU n's sibling is n+8.
    pub fn sample() -> Topology {
        let mut cpus = Vec::new();
        for cpu in 0..16u32 {
            let core = cpu % 8;
            cpus.push(Cpu {
                cpu,
                online: true,
                core: Some(core),
                core_id: Some(core % 4),
                package: Some(core / 4),
                die: Some(0),
                cluster: None,
                llc: Some(core / 2),
                node: Some(core / 4),
                smt_siblings: vec![core, core + 8],
            });
        }
        let llcs = (0..4)
            .map(|l| Llc {
                id: l,
                cpus: vec![2 * l, 2 * l + 1, 2 * l + 8, 2 * l + 9],
                node: Some(l / 2),
                level: Some(3),
                size_kb: Some(32768),
                basis: LlcBasis::Cache,
                cache_cpus: None,
                cache_id: Some(l),
            })
            .collect();
        let nodes = (0..2)
            .map(|n| Node {
                id: n,
                cpus: (0..16).filter(|c| (c % 8) / 4 == n).collect(),
                distances: if n == 0 { vec![10, 32] } else { vec![32, 10] },
            })
            .collect();
        Topology { cpus, llcs, nodes }
    }

    #[test]
    fn classifies_distance() {
        let t = sample();
        assert_eq!(t.distance(0, 0), None);
        assert_eq!(t.distance(0, 8), Some(Distance::Smt));
        assert_eq!(t.distance(0, 1), Some(Distance::Llc));
        assert_eq!(t.distance(0, 9), Some(Distance::Llc));
        assert_eq!(t.distance(0, 2), Some(Distance::CrossLlc));
        assert_eq!(t.distance(1, 4), Some(Distance::CrossNode));
        assert_eq!(t.distance(0, 99), None);
        assert_eq!(t.summary(), "2 nodes · 4 LLCs · 16 CPUs");
    }
}
