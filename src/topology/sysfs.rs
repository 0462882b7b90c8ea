//! Topology discovery from `/sys/devices/system/{cpu,node}` (through the kernel root).
//!
//! Rules (kernel-interfaces §9): `online` is authoritative; offline CPUs have no
//! `topology/` or `cache/` and are listed as offline; the LLC of a CPU is its highest-level
//! `Unified` cache keyed by `(level, shared_cpu_list)` — never by `id` alone — intersected
//! with the CPU's node; without cache directories, `cluster_cpus_list`, then
//! `package_cpus_list`, then the node stand in.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Cpu, Llc, LlcBasis, Node, Topology};
use crate::cpulist;
use crate::kroot::{KResult, KernelError, KernelRoot};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// Read the topology under `root`. Fails only when the CPU list itself cannot be read.
pub fn discover(root: &KernelRoot) -> KResult<Topology> {
    let online = read_online(root)?;
    let all = all_cpus(root, &online)?;
    let nodes = read_nodes(root, &online)?;
    let node_of: HashMap<u32, u32> = nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(move |&c| (c, n.id)))
        .collect();

    let mut cpus: Vec<Cpu> = Vec::with_capacity(all.len());
    let mut core_index: HashMap<CoreKey, u32> = HashMap::new();
    // The LLC key of each online CPU, with the facts about its cache.
    let mut llc_keys: BTreeMap<u32, LlcCandidate> = BTreeMap::new();

    for &cpu in &all {
        if !online.contains(&cpu) {
            cpus.push(Cpu {
                cpu,
                online: false,
                core: None,
                core_id: None,
                package: None,
                die: None,
                cluster: None,
                llc: None,
                node: None,
                smt_siblings: Vec::new(),
            });
            continue;
        }
        let topo = format!("{CPU_DIR}/cpu{cpu}/topology");
        let package = root.read_value_opt::<i64>(format!("{topo}/physical_package_id"))?;
        let die = root.read_value_opt::<i64>(format!("{topo}/die_id"))?;
        let cluster = root.read_value_opt::<i64>(format!("{topo}/cluster_id"))?;
        let core_id = root.read_value_opt::<i64>(format!("{topo}/core_id"))?;
        let siblings = first_list(root, &topo, &["thread_siblings_list", "core_cpus_list"])?
            .map(|s| only_online(s, &online))
            .unwrap_or_else(|| vec![cpu]);
        let key = CoreKey::new(&siblings, cpu, package, die, core_id);
        let next = core_index.len() as u32;
        let core = *core_index.entry(key).or_insert(next);
        let node = node_of.get(&cpu).copied();
        let cand = llc_candidate(root, cpu, &topo, &online)?;
        llc_keys.insert(cpu, cand);
        cpus.push(Cpu {
            cpu,
            online: true,
            core: Some(core),
            core_id: non_negative(core_id),
            package: non_negative(package),
            die: non_negative(die),
            // cluster_id is -1 or 65535 when the platform has no clusters.
            cluster: non_negative(cluster).filter(|&c| c != 0xffff),
            llc: None,
            node,
            smt_siblings: siblings,
        });
    }

    let llcs = group_llcs(&mut cpus, llc_keys, &nodes);
    Ok(Topology { cpus, llcs, nodes })
}

fn non_negative(v: Option<i64>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CoreKey {
    Siblings(u32),
    Ids(Option<i64>, Option<i64>, Option<i64>),
}

impl CoreKey {
    fn new(
        siblings: &[u32],
        cpu: u32,
        package: Option<i64>,
        die: Option<i64>,
        core_id: Option<i64>,
    ) -> Self {
        if siblings.contains(&cpu) {
            CoreKey::Siblings(siblings[0])
        } else {
            CoreKey::Ids(package, die, core_id)
        }
    }
}

fn read_online(root: &KernelRoot) -> KResult<BTreeSet<u32>> {
    let path = format!("{CPU_DIR}/online");
    match root.read(&path) {
        Ok(text) => parse_list(root, &path, &text).map(|v| v.into_iter().collect()),
        Err(e) if e.is_not_found() => {
            // Very old or stripped sysfs: a CPU directory with a topology is online.
            let ids = root.numbered_entries(CPU_DIR, "cpu")?;
            Ok(ids
                .into_iter()
                .filter(|c| root.exists(format!("{CPU_DIR}/cpu{c}/topology")))
                .collect())
        }
        Err(e) => Err(e),
    }
}

/// Every CPU the kernel reports: `present` ∪ `cpuN` directories ∪ online.
fn all_cpus(root: &KernelRoot, online: &BTreeSet<u32>) -> KResult<Vec<u32>> {
    let mut all: BTreeSet<u32> = online.clone();
    let present = format!("{CPU_DIR}/present");
    if let Ok(text) = root.read(&present) {
        all.extend(parse_list(root, &present, &text)?);
    }
    match root.numbered_entries(CPU_DIR, "cpu") {
        Ok(ids) => all.extend(ids),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    Ok(all.into_iter().collect())
}

fn parse_list(root: &KernelRoot, path: &str, text: &str) -> KResult<Vec<u32>> {
    cpulist::parse(text).map_err(|e| KernelError::parse(root.path(path), e))
}

fn read_list_opt(root: &KernelRoot, path: &str) -> KResult<Option<Vec<u32>>> {
    match root.read(path) {
        Ok(text) => parse_list(root, path, &text).map(Some),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

fn first_list(root: &KernelRoot, dir: &str, names: &[&str]) -> KResult<Option<Vec<u32>>> {
    for name in names {
        if let Some(list) = read_list_opt(root, &format!("{dir}/{name}"))?
            && !list.is_empty()
        {
            return Ok(Some(list));
        }
    }
    Ok(None)
}

fn only_online(list: Vec<u32>, online: &BTreeSet<u32>) -> Vec<u32> {
    list.into_iter().filter(|c| online.contains(c)).collect()
}

fn read_nodes(root: &KernelRoot, online: &BTreeSet<u32>) -> KResult<Vec<Node>> {
    let ids = match root.numbered_entries(NODE_DIR, "node") {
        Ok(ids) => ids,
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut nodes = Vec::new();
    let mut node_of: HashMap<u32, u32> = HashMap::new();
    for id in ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = read_list_opt(root, &format!("{dir}/cpulist"))?.unwrap_or_default();
        for &c in &cpus {
            if let Some(other) = node_of.insert(c, id) {
                return Err(KernelError::parse(
                    root.path(format!("{dir}/cpulist")),
                    format!("CPU {c} is in node {other} and node {id}"),
                ));
            }
        }
        let distances = match root.read(format!("{dir}/distance")) {
            Ok(text) => text
                .split_whitespace()
                .map(|d| d.parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| KernelError::parse(root.path(format!("{dir}/distance")), e))?,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e),
        };
        nodes.push(Node {
            id,
            cpus: only_online(cpus, online),
            distances,
        });
    }
    if nodes.is_empty() {
        // CONFIG_NUMA=n: the whole machine is one node.
        nodes.push(Node {
            id: 0,
            cpus: online.iter().copied().collect(),
            distances: vec![10],
        });
    }
    Ok(nodes)
}

#[derive(Debug, Clone)]
struct LlcCandidate {
    /// The CPUs sharing it (online only), before the node split.
    shared: Vec<u32>,
    level: Option<u8>,
    size_kb: Option<u64>,
    basis: LlcBasis,
    /// The cache's `id` file.
    cache_id: Option<u32>,
}

/// The highest-level unified cache of `cpu`, or the cluster/package fallback.
fn llc_candidate(
    root: &KernelRoot,
    cpu: u32,
    topo: &str,
    online: &BTreeSet<u32>,
) -> KResult<LlcCandidate> {
    let cache_dir = format!("{CPU_DIR}/cpu{cpu}/cache");
    let indexes = match root.numbered_entries(&cache_dir, "index") {
        Ok(v) => v,
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => return Err(e),
    };
    // (level, shared CPUs, size, cache id) of the highest unified cache so far.
    type Best = (u8, Vec<u32>, Option<u64>, Option<u32>);
    let mut best: Option<Best> = None;
    for idx in indexes {
        let dir = format!("{cache_dir}/index{idx}");
        let Some(kind) = root.read_value_opt::<String>(format!("{dir}/type"))? else {
            continue;
        };
        if kind != "Unified" {
            continue;
        }
        let Some(level) = root.read_value_opt::<u8>(format!("{dir}/level"))? else {
            continue;
        };
        let Some(shared) = read_list_opt(root, &format!("{dir}/shared_cpu_list"))? else {
            continue;
        };
        let size_path = format!("{dir}/size");
        let size_kb = match root.read_value_opt::<String>(&size_path)? {
            Some(s) => Some(parse_size_kb(&s).ok_or_else(|| {
                KernelError::parse(root.path(&size_path), format!("{s:?} is not a cache size"))
            })?),
            None => None,
        };
        if best.as_ref().is_none_or(|(l, ..)| level > *l) {
            // The id names the cache, not its place: a garbled one is no id.
            let id = root
                .read_value_opt::<u32>(format!("{dir}/id"))
                .ok()
                .flatten();
            best = Some((level, shared, size_kb, id));
        }
    }
    if let Some((level, shared, size_kb, cache_id)) = best {
        let mut shared = only_online(shared, online);
        if !shared.contains(&cpu) {
            shared.push(cpu);
            shared.sort_unstable();
        }
        return Ok(LlcCandidate {
            shared,
            level: Some(level),
            size_kb,
            basis: LlcBasis::Cache,
            cache_id,
        });
    }
    for (names, basis) in [
        (&["cluster_cpus_list"][..], LlcBasis::Cluster),
        (
            &["package_cpus_list", "core_siblings_list"][..],
            LlcBasis::Package,
        ),
    ] {
        if let Some(list) = first_list(root, topo, names)? {
            let list = only_online(list, online);
            if list.contains(&cpu) {
                return Ok(LlcCandidate {
                    shared: list,
                    level: None,
                    size_kb: None,
                    basis,
                    cache_id: None,
                });
            }
        }
    }
    Ok(LlcCandidate {
        shared: Vec::new(),
        level: None,
        size_kb: None,
        basis: LlcBasis::Node,
        cache_id: None,
    })
}

/// sysfs cache sizes: `36608K`, occasionally `16M`.
pub fn parse_size_kb(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1),
        'M' | 'm' => (&s[..s.len() - 1], 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Group CPUs into LLCs (split by node), give them dense ids in CPU order and fill
/// `Cpu::llc`. An LLC's CPUs are the CPUs that chose it, so the result is a partition
/// even when firmware reports inconsistent sharing lists.
fn group_llcs(cpus: &mut [Cpu], cands: BTreeMap<u32, LlcCandidate>, nodes: &[Node]) -> Vec<Llc> {
    let node_cpus: HashMap<u32, &Vec<u32>> = nodes.iter().map(|n| (n.id, &n.cpus)).collect();
    // key: (level, the CPU set after the node split, basis)
    type Key = (Option<u8>, Vec<u32>);
    let mut groups: Vec<(Key, Llc)> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    for c in cpus.iter_mut().filter(|c| c.online) {
        let Some(cand) = cands.get(&c.cpu) else {
            continue;
        };
        let mut basis = cand.basis;
        let mut set = cand.shared.clone();
        let mut cache_cpus = None;
        let node_set = c.node.and_then(|n| node_cpus.get(&n).copied());
        if let Some(node_set) = node_set {
            if set.is_empty() {
                set = node_set.clone();
            } else if set.iter().any(|x| !node_set.contains(x)) {
                cache_cpus = Some(set.clone());
                set.retain(|x| node_set.contains(x));
                if basis == LlcBasis::Cache {
                    basis = LlcBasis::CacheSplitByNode;
                }
            }
        }
        if !set.contains(&c.cpu) {
            set.push(c.cpu);
            set.sort_unstable();
        }
        let key: Key = (cand.level, set);
        let slot = match index.get(&key) {
            Some(&i) => i,
            None => {
                groups.push((
                    key.clone(),
                    Llc {
                        id: 0,
                        cpus: Vec::new(),
                        node: c.node,
                        level: cand.level,
                        size_kb: cand.size_kb,
                        basis,
                        cache_cpus,
                        cache_id: cand.cache_id,
                    },
                ));
                index.insert(key, groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[slot].1.cpus.push(c.cpu);
    }
    // Dense ids in order of each LLC's first CPU (CPUs were visited in ascending order,
    // so `groups` is already in that order).
    let mut llcs: Vec<Llc> = groups.into_iter().map(|(_, l)| l).collect();
    let mut llc_of: HashMap<u32, u32> = HashMap::new();
    for (i, l) in llcs.iter_mut().enumerate() {
        l.id = i as u32;
        for &c in &l.cpus {
            llc_of.insert(c, l.id);
        }
    }
    for c in cpus.iter_mut() {
        c.llc = llc_of.get(&c.cpu).copied();
    }
    llcs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_size_kb("36608K"), Some(36608));
        assert_eq!(parse_size_kb("16M"), Some(16384));
        assert_eq!(parse_size_kb("512"), Some(512));
        assert_eq!(parse_size_kb("x"), None);
    }
}
