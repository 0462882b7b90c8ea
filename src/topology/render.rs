//! `llctop topology` output: the readable tree (node → LLC → cores → CPUs) and the JSON
//! shape documented in README/docs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{LlcBasis, Topology};
use crate::cpulist;

/// Human-readable size of a cache in KiB (`32 MiB`, `35.8 MiB`, `512 KiB`).
pub fn size(kb: u64) -> String {
    if kb >= 1024 {
        let mib = kb as f64 / 1024.0;
        if (mib - mib.round()).abs() < 0.05 {
            format!("{:.0} MiB", mib)
        } else {
            format!("{:.1} MiB", mib)
        }
    } else {
        format!("{kb} KiB")
    }
}

fn basis_note(b: LlcBasis) -> &'static str {
    match b {
        LlcBasis::Cache => "",
        LlcBasis::CacheSplitByNode => " (cache split by node, as the scheduler does)",
        LlcBasis::Cluster => " (no cache info: cluster)",
        LlcBasis::Package => " (no cache info: package)",
        LlcBasis::Node => " (no cache info: node)",
    }
}

/// The tree printed by `llctop topology`.
pub fn tree(t: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", t.summary());
    for node in &t.nodes {
        let dist = if node.distances.is_empty() {
            String::new()
        } else {
            format!(
                "  distances {}",
                node.distances
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        let _ = writeln!(
            out,
            "node{}  cpus {}{}",
            node.id,
            cpulist::format(&node.cpus),
            dist
        );
        for llc in t.llcs.iter().filter(|l| l.node == Some(node.id)) {
            let level = llc.level.map_or("LLC".to_string(), |l| format!("L{l}"));
            let sz = llc
                .size_kb
                .map_or(String::new(), |k| format!(" {}", size(k)));
            let _ = writeln!(
                out,
                "  llc{}  {}{}  cpus {}{}",
                llc.id,
                level,
                sz,
                cpulist::format(&llc.cpus),
                basis_note(llc.basis)
            );
            // cores in order of their first CPU
            let mut cores: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for &c in &llc.cpus {
                if let Some(core) = t.cpu(c).and_then(|x| x.core) {
                    cores.entry(core).or_default().push(c);
                }
            }
            let mut line = String::from("   ");
            for (core, cpus) in cores {
                let item = format!(" core{}[{}]", core, cpulist::format(&cpus));
                if line.len() + item.len() > 100 {
                    let _ = writeln!(out, "{line}");
                    line = String::from("   ");
                }
                line.push_str(&item);
            }
            let _ = writeln!(out, "{line}");
        }
    }
    let orphans: Vec<u32> = t
        .online_cpus()
        .filter(|c| c.node.is_none_or(|n| t.node_index(n).is_none()))
        .map(|c| c.cpu)
        .collect();
    if !orphans.is_empty() {
        let _ = writeln!(out, "no node: cpus {}", cpulist::format(&orphans));
    }
    let offline: Vec<u32> = t.cpus.iter().filter(|c| !c.online).map(|c| c.cpu).collect();
    if !offline.is_empty() {
        let _ = writeln!(out, "offline: cpus {}", cpulist::format(&offline));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_tree() {
        let t = crate::topology::tests::sample();
        let s = tree(&t);
        assert!(s.starts_with("2 nodes · 4 LLCs · 16 CPUs\n"), "{s}");
        assert!(s.contains("node1  cpus 4-7,12-15  distances 32 10"), "{s}");
        assert!(s.contains("  llc3  L3 32 MiB  cpus 6-7,14-15"), "{s}");
        assert!(s.contains("core0[0,8] core1[1,9]"), "{s}");
        assert_eq!(size(36608), "35.8 MiB");
        assert_eq!(size(512), "512 KiB");
    }
}
