//! The resctrl tree as llctop reads it: where it is mounted (or why monitoring is not
//! there, with the command that mounts it), what `info/L3_MON` offers, the L3 domains
//! every group has (and with sub-NUMA clustering their per-node parts), which of
//! llctop's LLCs each belongs to — by the cache's id, never by position (the groups there
//! are now: [`crate::kstate::resctrl`]). Layout: Documentation/filesystems/resctrl.rst.

use std::path::{Path, PathBuf};

use super::parse;
use crate::kroot::{KResult, KernelRoot};
use crate::mounts::Mounts;
use crate::snapshot::ResctrlInfo;
use crate::topology::Topology;

/// Where resctrl is mounted by convention (and by `--resctrl-mount`).
pub const DEFAULT_MOUNT: &str = "/sys/fs/resctrl";

/// The command that mounts it, for messages.
pub const MOUNT_COMMAND: &str = "mount -t resctrl resctrl /sys/fs/resctrl";

/// The events this kernel monitors (`mon_features`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Events {
    pub occupancy: bool,
    pub total: bool,
    pub local: bool,
}

pub const OCCUPANCY: &str = "llc_occupancy";
pub const TOTAL: &str = "mbm_total_bytes";
pub const LOCAL: &str = "mbm_local_bytes";

/// One directory of counters every group has: an L3 domain, or (sub-NUMA clustering)
/// one node's part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub l3: u32,
    pub node: Option<u32>,
    /// Its path under a group's `mon_data`.
    pub rel: String,
    pub llc: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Kernel path of the mount.
    pub mount: PathBuf,
    pub events: Events,
    /// `num_rmids`, the assignment mode and `num_mbm_cntrs` (what is free is read
    /// every interval).
    pub info: ResctrlInfo,
    pub leaves: Vec<Leaf>,
    /// What does not map (a domain without an LLC, an LLC without a domain, an SNC L3
    /// read whole), for the source state.
    pub notes: Vec<String>,
}

/// Why monitoring is not there, and what would make it so.
pub fn not_mounted(root: &KernelRoot) -> String {
    let flags = root
        .read("/proc/cpuinfo")
        .map(|t| parse::monitoring_flags(&t))
        .unwrap_or_default();
    if flags.is_empty() {
        return "this CPU reports no cache or memory-bandwidth monitoring (no cqm_occup_llc, cqm_mbm_total or cqm_mbm_local in /proc/cpuinfo; virtual machines rarely pass Intel RDT or AMD PQoS through, and the kernel offers resctrl only where the hardware has it)".into();
    }
    let kernel_has = root
        .read("/proc/filesystems")
        .map(|t| t.split_whitespace().any(|w| w == "resctrl"));
    if matches!(kernel_has, Ok(false)) {
        return format!(
            "the CPU monitors ({}) but this kernel has no resctrl file system (CONFIG_X86_CPU_RESCTRL is off, or rdt=off on its command line)",
            flags.join(", ")
        );
    }
    format!(
        "resctrl is not mounted ({} here): `{MOUNT_COMMAND}`, or run llctop with --resctrl-mount (unmounted again when it ends)",
        flags.join(", ")
    )
}

/// Whether the CPU reports cache or memory-bandwidth monitoring (/proc/cpuinfo's flags;
/// unreadable counts as yes: nothing is ruled out).
pub fn cpu_monitors(root: &KernelRoot) -> bool {
    root.read("/proc/cpuinfo")
        .map(|t| !parse::monitoring_flags(&t).is_empty())
        .unwrap_or(true)
}

/// The mount and what it monitors, or why there is nothing to read.
pub fn find(root: &KernelRoot, topo: &Topology) -> Result<Layout, String> {
    let mounts = Mounts::discover(root);
    if let Some(e) = &mounts.unreadable {
        return Err(format!("cannot tell whether resctrl is mounted: {e}"));
    }
    let Some(mount) = mounts.resctrl else {
        return Err(not_mounted(root));
    };
    layout(root, topo, &mount)
}

/// The layout of the resctrl mounted at `mount`.
pub fn layout(root: &KernelRoot, topo: &Topology, mount: &Path) -> Result<Layout, String> {
    let mon = mount.join("info/L3_MON");
    if !root.is_dir(&mon) {
        return Err(format!(
            "resctrl at {} monitors nothing (no info/L3_MON): this CPU allocates cache but does not monitor it",
            mount.display()
        ));
    }
    let features = root
        .read(mon.join("mon_features"))
        .map(|t| parse::features(&t))
        .map_err(|e| e.to_string())?;
    let has = |f: &str| features.iter().any(|x| x == f);
    let events = Events {
        occupancy: has(OCCUPANCY),
        total: has(TOTAL),
        local: has(LOCAL),
    };
    if !(events.occupancy || events.total || events.local) {
        return Err(format!(
            "resctrl at {} lists no L3 event llctop reads (mon_features: {})",
            mount.display(),
            if features.is_empty() {
                "empty".to_string()
            } else {
                features.join(", ")
            }
        ));
    }
    let num = |name: &str| root.read_value_opt::<u32>(mon.join(name)).ok().flatten();
    let info = ResctrlInfo {
        num_rmids: num("num_rmids"),
        assign_mode: root
            .read(mon.join("mbm_assign_mode"))
            .ok()
            .and_then(|t| parse::assign_mode(&t)),
        counters: root
            .read(mon.join("num_mbm_cntrs"))
            .map(|t| {
                parse::domain_counts(&t)
                    .into_iter()
                    .map(|(l3, n)| crate::snapshot::DomainCounters {
                        l3,
                        total: Some(n),
                        available: None,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    let (leaves, notes) = leaves(root, topo, mount).map_err(|e| e.to_string())?;
    if leaves.is_empty() {
        return Err(format!(
            "resctrl at {} has no L3 domain in mon_data",
            mount.display()
        ));
    }
    Ok(Layout {
        mount: mount.to_path_buf(),
        events,
        info,
        leaves,
        notes,
    })
}

/// The counter directories under the root group's `mon_data`, mapped to LLCs.
fn leaves(root: &KernelRoot, topo: &Topology, mount: &Path) -> KResult<(Vec<Leaf>, Vec<String>)> {
    let data = mount.join("mon_data");
    let mut leaves = Vec::new();
    let mut notes = Vec::new();
    for name in root.list_subdirs(&data)? {
        let Some(l3) = parse::l3_dir(&name) else {
            continue;
        };
        let subs: Vec<(u32, String)> = root
            .list_subdirs(data.join(&name))?
            .into_iter()
            .filter_map(|s| Some((parse::sub_l3_dir(&s)?, s)))
            .collect();
        let candidates: Vec<&crate::topology::Llc> = topo
            .llcs
            .iter()
            .filter(|l| l.level == Some(3) && l.cache_id == Some(l3))
            .collect();
        if candidates.is_empty() {
            let ids: Vec<String> = topo
                .llcs
                .iter()
                .filter_map(|l| l.cache_id.filter(|_| l.level == Some(3)))
                .map(|i| i.to_string())
                .collect();
            notes.push(format!(
                "L3 domain {l3} ({name}) is no L3 of this topology (its L3 cache ids: {}): read, not given to an LLC",
                if ids.is_empty() { "none".into() } else { ids.join(", ") }
            ));
        }
        if subs.is_empty() {
            let llc = match candidates.as_slice() {
                [one] => Some(one.id),
                [] => None,
                many => {
                    let nodes: Vec<String> = many
                        .iter()
                        .filter_map(|l| l.node.map(|n| n.to_string()))
                        .collect();
                    notes.push(format!(
                        "L3 {l3} is split between nodes {} (sub-NUMA clustering) but this kernel gives only its sum (no mon_sub_L3_YY, Linux 6.11+): not given per LLC or node",
                        nodes.join(", ")
                    ));
                    None
                }
            };
            leaves.push(Leaf {
                l3,
                node: None,
                rel: name.clone(),
                llc,
            });
            continue;
        }
        for (node, sub) in subs {
            let llc = candidates
                .iter()
                .find(|l| l.node == Some(node))
                .or(match candidates.as_slice() {
                    [one] => Some(one),
                    _ => None,
                })
                .map(|l| l.id);
            if llc.is_none() && !candidates.is_empty() {
                notes.push(format!(
                    "L3 {l3}'s node {node} part ({sub}) matches no LLC of node {node}"
                ));
            }
            leaves.push(Leaf {
                l3,
                node: Some(node),
                rel: format!("{name}/{sub}"),
                llc,
            });
        }
    }
    for l in &topo.llcs {
        if l.level == Some(3) && !leaves.iter().any(|x| x.llc == Some(l.id)) {
            notes.push(match l.cache_id {
                Some(c) => format!("LLC {} (L3 {c}) has no resctrl domain", l.id),
                None => format!(
                    "LLC {} has no cache id in sysfs: its resctrl domain cannot be found",
                    l.id
                ),
            });
        }
    }
    Ok((leaves, notes))
}

/// The counters free for assignment per domain (`available_mbm_cntrs`), read every
/// interval (they change as groups come and go).
pub fn available_counters(root: &KernelRoot, mount: &Path) -> Option<Vec<(u32, u32)>> {
    root.read(mount.join("info/L3_MON/available_mbm_cntrs"))
        .ok()
        .map(|t| parse::domain_counts(&t))
}
