//! Sched domains and what a relax_domain_level value means on this machine.
//!
//! The kernel's domains are read from `/sys/kernel/debug/sched/domains/cpuN/domainM/`
//! (`name`, `flags`, and `level` since v6.10), which exists only while `sched/verbose` is
//! on; the knob session turns it on just for the read. Without it (lockdown, no root) the
//! domains are derived from the CPU topology and their levels estimated from the default
//! topology table (SMT, CLS, MC, PKG, NODE, NUMA…), and every note says so.
//!
//! relax_domain_level clears SD_BALANCE_NEWIDLE and SD_BALANCE_WAKE on domains whose
//! level is `>= value` since v6.10 and `> value` before (kernel-interfaces §3).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::kroot::KernelRoot;
pub use crate::kroot::kernel_version;
use crate::topology::Topology;

use super::ValueNote;

pub const DOMAINS_DIR: &str = "/sys/kernel/debug/sched/domains";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Domain {
    /// `domainM` index (bottom-up, after degenerate domains were removed).
    pub index: u32,
    pub name: String,
    /// `sd->level`; estimated when the kernel does not expose it (see `DomainInfo`).
    pub level: u32,
    /// Flag names, empty when unknown.
    pub flags: Vec<String>,
    /// CPUs in the domain's span, when known.
    #[serde(default)]
    pub span: Vec<u32>,
}

impl Domain {
    pub fn shares_llc(&self) -> bool {
        self.flags
            .iter()
            .any(|f| f == "SD_SHARE_LLC" || f == "SD_SHARE_PKG_RESOURCES")
    }

    pub fn balances_newidle(&self) -> bool {
        self.flags.iter().any(|f| f == "SD_BALANCE_NEWIDLE")
    }
}

/// The domains of one CPU and where they came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainInfo {
    pub cpu: u32,
    pub domains: Vec<Domain>,
    /// Read from debugfs (`true`) or derived from topology.
    pub from_kernel: bool,
    /// Levels were read from `level` files (v6.10+), not estimated from names.
    pub exact_levels: bool,
    /// Why domains or levels are estimated.
    pub note: Option<String>,
}

/// Read the domains of `cpu` from debugfs (`None` when the directory is absent).
pub fn read_kernel(root: &KernelRoot, cpu: u32) -> Option<DomainInfo> {
    let dir = format!("{DOMAINS_DIR}/cpu{cpu}");
    let idx = root.numbered_entries(&dir, "domain").ok()?;
    if idx.is_empty() {
        return None;
    }
    let mut domains = Vec::new();
    let mut exact = true;
    let mut estimate = LevelEstimate {
        cfg: LevelConfig::read(root).unwrap_or(LevelConfig::ALL),
        numa_seen: 0,
    };
    for m in idx {
        let d = format!("{dir}/domain{m}");
        let name = root
            .read_trimmed(format!("{d}/name"))
            .unwrap_or_else(|_| "?".into());
        let flags = root
            .read_trimmed(format!("{d}/flags"))
            .map(|f| f.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let level = match root.read_value::<u32>(format!("{d}/level")) {
            Ok(l) => l,
            Err(_) => {
                exact = false;
                estimate.level(&name)
            }
        };
        domains.push(Domain {
            index: m,
            name,
            level,
            flags,
            span: Vec::new(),
        });
    }
    Some(DomainInfo {
        cpu,
        domains,
        from_kernel: true,
        exact_levels: exact,
        note: (!exact).then(|| {
            "levels estimated from domain names (this kernel has no domains/*/level; v6.10+)"
                .to_string()
        }),
    })
}

/// Which optional topology levels this kernel was built with, from symbol names in
/// `/proc/kallsyms` (names are visible without privileges): SMT needs CONFIG_SCHED_SMT
/// (`sched_smt_present`), CLS CONFIG_SCHED_CLUSTER (`cpu_cluster_flags`), MC
/// CONFIG_SCHED_MC (`cpu_core_flags`). `None` when kallsyms cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelConfig {
    pub smt: bool,
    pub cls: bool,
    pub mc: bool,
}

impl LevelConfig {
    pub const ALL: LevelConfig = LevelConfig {
        smt: true,
        cls: true,
        mc: true,
    };

    pub fn from_kallsyms(text: &str) -> LevelConfig {
        let mut c = LevelConfig {
            smt: false,
            cls: false,
            mc: false,
        };
        for line in text.lines() {
            match line.split_whitespace().nth(2) {
                Some("sched_smt_present") => c.smt = true,
                Some("cpu_cluster_flags") => c.cls = true,
                Some("cpu_core_flags") => c.mc = true,
                _ => {}
            }
        }
        c
    }

    pub fn read(root: &KernelRoot) -> Option<LevelConfig> {
        root.read("/proc/kallsyms")
            .ok()
            .filter(|t| !t.is_empty())
            .map(|t| LevelConfig::from_kallsyms(&t))
    }
}

/// Domains of `cpu` derived from the CPU topology the way the kernel builds them: the
/// default topology table (SMT, CLS, MC, PKG — PKG skipped when a node is smaller than
/// its package — then NODE and one NUMA level per SLIT distance), `level` counting every
/// configured entry, building stopping at the first domain that spans every CPU, and
/// degenerate domains (one CPU, or the same span as the child) removed.
pub fn from_topology(
    topo: &Topology,
    cpu: u32,
    config: Option<LevelConfig>,
    reason: &str,
) -> DomainInfo {
    let cfg = config.unwrap_or(LevelConfig::ALL);
    let online: Vec<u32> = topo
        .cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| c.cpu)
        .collect();
    let mut domains = Vec::new();
    if let Some(me) = topo.cpus.iter().find(|c| c.cpu == cpu && c.online) {
        let select = |f: &dyn Fn(&crate::topology::Cpu) -> bool| -> Vec<u32> {
            topo.cpus
                .iter()
                .filter(|c| c.online && f(c))
                .map(|c| c.cpu)
                .collect()
        };
        let llc: Vec<u32> = me
            .llc
            .and_then(|l| topo.llcs.iter().find(|x| x.id == l))
            .map(|l| l.cpus.clone())
            .unwrap_or_default();
        let pkg = select(&|c| c.package == me.package);
        let node = select(&|c| c.node == me.node);
        let mut levels: Vec<(&str, Vec<u32>)> = Vec::new();
        if cfg.smt {
            let mut smt = me.smt_siblings.clone();
            if smt.is_empty() {
                smt.push(cpu);
            }
            levels.push(("SMT", smt));
        }
        if cfg.cls {
            let cls = match me.cluster {
                Some(cl) => select(&|c| c.package == me.package && c.cluster == Some(cl)),
                None => vec![cpu],
            };
            levels.push(("CLS", cls));
        }
        if cfg.mc {
            levels.push(("MC", llc.clone()));
        }
        if node.len() >= pkg.len() || topo.nodes.len() <= 1 {
            levels.push(("PKG", pkg));
        }
        if topo.nodes.len() > 1 {
            levels.push(("NODE", node));
            let my_node = topo.nodes.iter().position(|n| Some(n.id) == me.node);
            if let Some(row) = my_node.map(|i| topo.nodes[i].distances.clone()) {
                let mut ds: Vec<u32> = row.iter().copied().filter(|&d| d > 10).collect();
                ds.sort_unstable();
                ds.dedup();
                for d in ds {
                    let span: Vec<u32> = topo
                        .nodes
                        .iter()
                        .zip(&row)
                        .filter(|(_, nd)| **nd <= d)
                        .flat_map(|(n, _)| n.cpus.iter().copied())
                        .collect();
                    levels.push(("NUMA", span));
                }
            }
        }
        let mut prev: Vec<u32> = vec![cpu];
        for (level, (name, mut span)) in levels.into_iter().enumerate() {
            // A domain always contains its child.
            span.extend(prev.iter().copied());
            span.sort_unstable();
            span.dedup();
            if span.len() > 1 && span != prev {
                // Only the flags the notes rely on, derived the way the kernel sets them.
                let mut flags = Vec::new();
                if span.iter().all(|c| llc.contains(c)) {
                    flags.push("SD_SHARE_LLC".to_string());
                }
                if name == "NUMA" {
                    flags.push("SD_NUMA".to_string());
                }
                domains.push(Domain {
                    index: domains.len() as u32,
                    name: name.to_string(),
                    level: level as u32,
                    flags,
                    span: span.clone(),
                });
            }
            let whole = span.len() >= online.len();
            prev = span;
            if whole {
                break;
            }
        }
    }
    let how = if config.is_some() {
        "levels counted from the kernel's configured topology levels (kallsyms)"
    } else {
        "levels estimated assuming SMT, CLS and MC are configured"
    };
    DomainInfo {
        cpu,
        domains,
        from_kernel: false,
        exact_levels: false,
        note: Some(format!("domains derived from topology, {how} ({reason})")),
    }
}

/// `sd->level` from a domain name for kernels without `domains/*/level` (before 6.10):
/// the position of the name in the default topology table with this kernel's configured
/// levels (SMT, CLS, MC, PKG/DIE, NODE, then one NUMA level per distance).
struct LevelEstimate {
    cfg: LevelConfig,
    numa_seen: u32,
}

impl LevelEstimate {
    fn level(&mut self, name: &str) -> u32 {
        let below = |upto: usize| {
            [self.cfg.smt, self.cfg.cls, self.cfg.mc][..upto]
                .iter()
                .filter(|&&b| b)
                .count() as u32
        };
        match name {
            "SMT" => 0,
            "CLS" => below(1),
            "MC" => below(2),
            "PKG" | "DIE" => below(3),
            "NODE" => below(3) + 1,
            _ => {
                self.numa_seen += 1;
                below(3) + 1 + self.numa_seen
            }
        }
    }
}

/// The kernel's comparison for relax_domain_level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Semantics {
    /// v6.10+: domains with `level >= value` stop newidle/wake balancing.
    AtOrAbove,
    /// Before v6.10: domains with `level > value`.
    Above,
}

impl Semantics {
    /// The comparison of a kernel version. `>=` came with commit a1fd0b9d751f
    /// ("sched/fair: Allow disabling sched_balance_newidle with sched_relax_domain_level",
    /// v6.10), which stable backported in June 2024 to the releases listed here.
    pub fn for_version(v: Option<(u32, u32, u32)>) -> Semantics {
        const BACKPORTS: [(u32, u32, u32); 7] = [
            (5, 4, 278),
            (5, 10, 219),
            (5, 15, 161),
            (6, 1, 93),
            (6, 6, 33),
            (6, 8, 12),
            (6, 9, 4),
        ];
        let Some((maj, min, sub)) = v else {
            return Semantics::AtOrAbove;
        };
        if (maj, min) >= (6, 10) {
            return Semantics::AtOrAbove;
        }
        match BACKPORTS.iter().find(|b| (b.0, b.1) == (maj, min)) {
            Some(b) if sub >= b.2 => Semantics::AtOrAbove,
            _ => Semantics::Above,
        }
    }

    fn cleared(self, level: u32, value: i64) -> bool {
        match self {
            Semantics::AtOrAbove => i64::from(level) >= value,
            Semantics::Above => i64::from(level) > value,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Semantics::AtOrAbove => {
                "domains with level >= value (v6.10+, and stable kernels since June 2024)"
            }
            Semantics::Above => "domains with level > value (kernels before the v6.10 fix)",
        }
    }
}

/// What each relax_domain_level value does to these domains, and the named values
/// (`default`, `llc`, `node`) accepted as input.
pub fn relax_notes(info: &DomainInfo, sem: Semantics) -> (Vec<ValueNote>, Vec<ValueNote>) {
    let max = info.domains.iter().map(|d| d.level).max().unwrap_or(0);
    let estimated = if info.exact_levels {
        ""
    } else {
        " (levels estimated)"
    };
    let mut notes = vec![ValueNote {
        value: "-1".into(),
        meaning: "no request: the boot default (relax_domain_level= on the command line, else every domain balances)".into(),
    }];
    let mut last = String::new();
    for v in 0..=i64::from(max) + 1 {
        let (kept, cleared): (Vec<&Domain>, Vec<&Domain>) =
            info.domains.iter().partition(|d| !sem.cleared(d.level, v));
        let names = |ds: &[&Domain]| {
            if ds.is_empty() {
                "none".to_string()
            } else {
                ds.iter()
                    .map(|d| format!("{}(L{})", d.name, d.level))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        };
        let mut meaning = String::new();
        let _ = write!(
            meaning,
            "newidle/wake balancing kept in {}; cleared in {}{estimated}",
            names(&kept),
            names(&cleared)
        );
        if meaning == last {
            continue; // same outcome as the previous value
        }
        last = meaning.clone();
        notes.push(ValueNote {
            value: v.to_string(),
            meaning,
        });
    }
    let mut aliases = vec![ValueNote {
        value: "-1".into(),
        meaning: "default".into(),
    }];
    // The LLC domain: the highest one sharing the LLC, else the one named MC.
    let llc = info
        .domains
        .iter()
        .rev()
        .find(|d| d.shares_llc())
        .or_else(|| info.domains.iter().find(|d| d.name == "MC"));
    if let Some(d) = llc {
        aliases.push(ValueNote {
            value: keep_through(d.level, sem).to_string(),
            meaning: "llc".into(),
        });
    }
    if let Some(d) = info
        .domains
        .iter()
        .rev()
        .find(|d| d.name != "NUMA" && d.name != "NODE")
    {
        aliases.push(ValueNote {
            value: keep_through(d.level, sem).to_string(),
            meaning: "node".into(),
        });
    }
    (notes, aliases)
}

/// The smallest value that keeps balancing in the domain at `level` and below.
fn keep_through(level: u32, sem: Semantics) -> i64 {
    match sem {
        Semantics::AtOrAbove => i64::from(level) + 1,
        Semantics::Above => i64::from(level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab_like() -> DomainInfo {
        DomainInfo {
            cpu: 0,
            domains: vec![
                Domain {
                    index: 0,
                    name: "MC".into(),
                    level: 2,
                    flags: vec!["SD_BALANCE_NEWIDLE".into(), "SD_SHARE_LLC".into()],
                    span: vec![],
                },
                Domain {
                    index: 1,
                    name: "NUMA".into(),
                    level: 5,
                    flags: vec!["SD_BALANCE_NEWIDLE".into(), "SD_NUMA".into()],
                    span: vec![],
                },
            ],
            from_kernel: true,
            exact_levels: true,
            note: None,
        }
    }

    #[test]
    fn relax_values_follow_the_kernel_version() {
        let info = lab_like();
        let (notes, aliases) = relax_notes(&info, Semantics::AtOrAbove);
        let llc = aliases.iter().find(|a| a.meaning == "llc").unwrap();
        assert_eq!(llc.value, "3", "v6.10+: MC at level 2 kept by 3");
        let three = notes.iter().find(|n| n.value == "3").unwrap();
        assert!(
            three
                .meaning
                .contains("kept in MC(L2); cleared in NUMA(L5)"),
            "{}",
            three.meaning
        );
        // Values with the same outcome are listed once.
        assert!(!notes.iter().any(|n| n.value == "4"));
        let (_, old) = relax_notes(&info, Semantics::Above);
        assert_eq!(
            old.iter().find(|a| a.meaning == "llc").unwrap().value,
            "2",
            "before 6.10: MC at level 2 kept by 2"
        );
        assert_eq!(Semantics::for_version(Some((6, 1, 80))), Semantics::Above);
        assert_eq!(
            Semantics::for_version(Some((6, 1, 158))),
            Semantics::AtOrAbove
        );
        assert_eq!(
            Semantics::for_version(Some((6, 12, 0))),
            Semantics::AtOrAbove
        );
        assert_eq!(Semantics::for_version(Some((6, 2, 9))), Semantics::Above);
    }

    #[test]
    fn versions_come_from_the_build_string_when_the_release_hides_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        std::fs::write(d.join("proc/sys/kernel/osrelease"), "6.1.0-56-amd64\n").unwrap();
        std::fs::write(
            d.join("proc/version"),
            "Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)\n",
        )
        .unwrap();
        let r = KernelRoot::new(d);
        assert_eq!(kernel_version(&r), Some((6, 1, 158)));
        std::fs::write(d.join("proc/sys/kernel/osrelease"), "6.18.44-fc-v669\n").unwrap();
        std::fs::write(
            d.join("proc/version"),
            "Linux version 6.18.44-fc-v669 #1 SMP\n",
        )
        .unwrap();
        assert_eq!(kernel_version(&r), Some((6, 18, 44)));
    }

    #[test]
    fn derives_domains_from_topology() {
        let t = crate::topology::tests::sample();
        let info = from_topology(&t, 0, None, "test");
        let names: Vec<&str> = info.domains.iter().map(|d| d.name.as_str()).collect();
        assert!(names.contains(&"MC"), "{names:?}");
        assert!(!info.from_kernel && !info.exact_levels);
    }
}
