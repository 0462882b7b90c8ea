//! Discovery of each knob family: sched features, the sched-domain knobs and what
//! relax_domain_level's values mean on this machine, NUMA balancing (system-wide and per
//! cgroup), the 7.2 `llc_balancing/` directory and the balance tunables.

use std::path::{Path, PathBuf};

use super::{CGROUP_NUMA, CPUSET_RELAX, Missing, NUMA_SYSCTL, Registry, SCHEDSTATS};
use crate::knobs::access::{SCHED_DIR, debugfs_absence, refusal};
use crate::knobs::domains::{self, DomainInfo};
use crate::knobs::features::{self, FeatureRead};
use crate::knobs::{Access, Bit, Family, Knob, KnobType, ValueNote, catalog, cgroup};

impl Registry {
    /// Use `info` (read from the kernel) for the relax_domain_level notes and range.
    pub fn set_domains(&mut self, info: DomainInfo) {
        self.domains = Some(info);
        let ids: Vec<String> = self
            .knobs
            .iter()
            .filter(|k| k.id == "relax_domain_level" || k.id.starts_with("relax_domain_level@"))
            .map(|k| k.id.clone())
            .collect();
        for id in ids {
            if let Some(i) = self.knobs.iter().position(|k| k.id == id) {
                let (notes, aliases, kind) = self.relax_meaning();
                let k = &mut self.knobs[i];
                k.notes = notes;
                k.aliases = aliases;
                if matches!(k.kind, KnobType::Int { .. }) {
                    k.kind = kind;
                }
            }
        }
    }

    pub(super) fn features(&mut self) {
        let (path, features, access, source) = match features::read(&self.root) {
            FeatureRead::File { path, features } => {
                let access = self.access(Path::new(path));
                (path, features, access, None)
            }
            FeatureRead::Decoded {
                path,
                features,
                refused,
            } => (
                path,
                features,
                Access::ReadOnly(refused),
                Some(
                    "decoded from .sysctl_sched_features in sched/debug with __SCHED_FEAT_* from BTF"
                        .to_string(),
                ),
            ),
            FeatureRead::Unavailable { reason } => {
                self.missing.push(Missing {
                    what: "sched features".into(),
                    reason,
                });
                return;
            }
        };
        for (name, on) in features {
            let cat = catalog::feature(&name);
            self.knobs.push(Knob {
                id: format!("feature.{name}"),
                family: Family::Feature,
                path: path.into(),
                kind: KnobType::Feature { name },
                value: Some(if on { "on" } else { "off" }.into()),
                value_source: source.clone(),
                value_reason: None,
                default: cat.default.map(str::to_string),
                access: access.clone(),
                description: cat.description.into(),
                reference: cat.reference.map(str::to_string),
                notes: Vec::new(),
                aliases: Vec::new(),
                not_in_effect: None,
            });
        }
        for (name, why) in catalog::SEED_FEATURES {
            let id = format!("feature.{name}");
            if self.get(&id).is_none() {
                self.missing.push(Missing {
                    what: id,
                    reason: why.to_string(),
                });
            }
        }
    }

    pub(super) fn domain_knobs(&mut self) {
        let verbose = format!("{SCHED_DIR}/verbose");
        if self.root.exists(&verbose) {
            let k = self.file_knob(
                "sched.verbose",
                Family::Domain,
                verbose.into(),
                KnobType::Bool,
            );
            self.knobs.push(k);
        }
        // Domains as the kernel shows them, when verbose already exposes them.
        let cpu0 = self.first_cpu();
        if let Some(info) = domains::read_kernel(&self.root, cpu0) {
            self.domains = Some(info);
        }
        let debugfs_relax = format!("{SCHED_DIR}/relax_domain_level");
        if self.root.exists(&debugfs_relax) {
            let k = self.relax_knob("relax_domain_level".into(), debugfs_relax.into());
            self.knobs.push(k);
            return;
        }
        if let Some(mount) = self.mounts.cpuset_v1.clone() {
            for cg in cgroup::walk_with_file(&self.root, &mount, CPUSET_RELAX) {
                let id = if cg == "/" {
                    "relax_domain_level".to_string()
                } else {
                    format!("relax_domain_level@{cg}")
                };
                let k = self.relax_knob(id, cgroup::join(&mount, &cg).join(CPUSET_RELAX));
                self.knobs.push(k);
            }
            if self.get("relax_domain_level").is_some() {
                return;
            }
        }
        // No runtime interface: the boot value, read-only, with the reason.
        let cmdline = self.root.read("/proc/cmdline").ok();
        let boot = cmdline.as_deref().and_then(|c| {
            c.split_whitespace()
                .find_map(|w| w.strip_prefix("relax_domain_level="))
                .map(str::to_string)
        });
        let mut k = self.relax_knob("relax_domain_level".into(), "/proc/cmdline".into());
        k.value = Some(boot.clone().unwrap_or_else(|| "-1".into()));
        k.value_source = Some(match boot {
            Some(_) => "boot parameter relax_domain_level= in /proc/cmdline".into(),
            None => "no relax_domain_level= in /proc/cmdline: the default, -1".into(),
        });
        k.value_reason = None;
        k.access = Access::ReadOnly(
            "no runtime interface on this kernel: no sched/relax_domain_level in debugfs (an RFC, not merged) and no cgroup v1 cpuset mount (cgroup v2 has no equivalent; since 6.12 cpuset v1 also needs CONFIG_CPUSETS_V1); only the boot parameter relax_domain_level= sets it"
                .into(),
        );
        self.knobs.push(k);
    }

    pub(crate) fn first_cpu(&self) -> u32 {
        self.topo
            .as_ref()
            .and_then(|t| t.cpus.iter().find(|c| c.online).map(|c| c.cpu))
            .unwrap_or(0)
    }

    /// Notes, aliases and the valid range for relax_domain_level from the domains.
    pub(super) fn relax_meaning(&self) -> (Vec<ValueNote>, Vec<ValueNote>, KnobType) {
        let info = self.domains.clone().or_else(|| {
            self.topo.as_ref().map(|t| {
                domains::from_topology(
                    t,
                    self.first_cpu(),
                    domains::LevelConfig::read(&self.root),
                    "sched/domains is not readable: sched/verbose is off or locked",
                )
            })
        });
        let semantics = ValueNote {
            value: "semantics".into(),
            meaning: format!(
                "this kernel clears balancing on {}",
                self.semantics.describe()
            ),
        };
        match info {
            Some(info) => {
                let (mut notes, aliases) = domains::relax_notes(&info, self.semantics);
                notes.insert(0, semantics);
                // The kernel accepts -1 ..= sched_domain_level_max + 1; with exact levels
                // the top level is known, else leave the range to the kernel's EINVAL.
                let max = if info.exact_levels {
                    info.domains
                        .iter()
                        .map(|d| i64::from(d.level))
                        .max()
                        .unwrap_or(0)
                        + 1
                } else {
                    16
                };
                (notes, aliases, KnobType::Int { min: -1, max })
            }
            None => (
                vec![semantics],
                Vec::new(),
                KnobType::Int { min: -1, max: 16 },
            ),
        }
    }

    pub(super) fn relax_knob(&self, id: String, path: PathBuf) -> Knob {
        let (notes, aliases, kind) = self.relax_meaning();
        let mut k = self.file_knob(&id, Family::Domain, path, kind);
        k.notes = notes;
        k.aliases = aliases;
        k
    }

    pub(super) fn cgroup_numa_knob(&self, id: String, path: PathBuf) -> Knob {
        self.file_knob(&id, Family::Numa, path, KnobType::Bool)
    }

    pub(super) fn numa(&mut self) {
        let cgroups: Vec<String> = match &self.mounts.cgroup2 {
            Some(m) => cgroup::walk_with_file(&self.root, m, CGROUP_NUMA),
            None => Vec::new(),
        };
        if self.root.exists(NUMA_SYSCTL) {
            let mut bits = vec![
                Bit {
                    value: 1,
                    name: "normal".into(),
                },
                Bit {
                    value: 2,
                    name: "memory_tiering".into(),
                },
            ];
            // Mode 4 only means something where the kernel has per-cgroup control.
            if !cgroups.is_empty() {
                bits.push(Bit {
                    value: 4,
                    name: "cgroup".into(),
                });
            }
            let k = self.file_knob(
                "numa_balancing",
                Family::Numa,
                NUMA_SYSCTL.into(),
                KnobType::Bitmask { bits },
            );
            self.knobs.push(k);
        } else {
            self.missing.push(Missing {
                what: "numa_balancing".into(),
                reason: "no /proc/sys/kernel/numa_balancing (kernel without CONFIG_NUMA_BALANCING)"
                    .into(),
            });
        }
        if let Some(m) = self.mounts.cgroup2.clone() {
            for cg in &cgroups {
                let k = self.cgroup_numa_knob(
                    format!("cgroup.numa_load_balance@{cg}"),
                    cgroup::join(&m, cg).join(CGROUP_NUMA),
                );
                self.knobs.push(k);
            }
        }
        if cgroups.is_empty() {
            self.missing.push(Missing {
                what: "per-cgroup NUMA balancing".into(),
                reason: match &self.mounts.cgroup2 {
                    Some(_) => {
                        "no cgroup has cpu.numa_load_balance (an RFC, not in mainline)".into()
                    }
                    None => "no cgroup2 mount".into(),
                },
            });
        }
        self.debugfs_dir("numa_balancing", Family::Numa, |name| KnobType::Int {
            min: 0,
            max: if name == "scan_size_mb" {
                1 << 20
            } else {
                u32::MAX as i64
            },
        });
    }

    /// The six 7.2 files. The kernel takes any u32 in the five numbers
    /// (`debugfs_create_u32`); llctop's ranges are where a value still means something
    /// different (kernel/sched/fair.c of 7.2): a tolerance of 100 already lifts every
    /// limit, an epoch of 0 jiffies is taken as 1, and the percentages compare
    /// utilisation against capacity.
    pub(super) fn llc_balancing(&mut self) {
        self.debugfs_dir("llc_balancing", Family::LlcBalancing, |name| {
            let int = |min, max| KnobType::Int { min, max };
            match name {
                "enabled" => KnobType::Bool,
                "aggr_tolerance" => int(0, 100),
                "epoch_period" => int(1, 10_000),
                "epoch_affinity_timeout" => int(0, 10_000),
                "imb_pct" | "overaggr_pct" => int(0, 1_000),
                _ => int(0, u32::MAX as i64),
            }
        });
    }

    /// Every file of `sched/<dir>/` as a knob `<dir>.<file>`; absence is explained.
    fn debugfs_dir(&mut self, dir: &str, family: Family, kind: impl Fn(&str) -> KnobType) {
        let path = format!("{SCHED_DIR}/{dir}");
        match self.root.list_dir(&path) {
            Ok(names) => {
                for name in names {
                    let k = self.file_knob(
                        &format!("{dir}.{name}"),
                        family,
                        PathBuf::from(&path).join(&name),
                        kind(&name),
                    );
                    self.knobs.push(k);
                }
            }
            Err(_) => {
                let why = if self.root.exists(SCHED_DIR) {
                    match dir {
                        "llc_balancing" => {
                            "no sched/llc_balancing/ (cache-aware scheduling needs v7.2+ with CONFIG_SCHED_CACHE)".to_string()
                        }
                        _ => format!("no sched/{dir}/ (kernel without CONFIG_NUMA_BALANCING)"),
                    }
                } else {
                    debugfs_absence(&self.root, &path)
                };
                self.missing.push(Missing {
                    what: format!("sched/{dir}"),
                    reason: why,
                });
            }
        }
    }

    pub(super) fn tunables(&mut self) {
        let u32_max = u32::MAX as i64;
        let files: [(&str, KnobType); 3] = [
            (
                "migration_cost_ns",
                KnobType::Int {
                    min: 0,
                    max: u32_max,
                },
            ),
            (
                "nr_migrate",
                KnobType::Int {
                    min: 0,
                    max: u32_max,
                },
            ),
            (
                "base_slice_ns",
                KnobType::Int {
                    min: 0,
                    max: u32_max,
                },
            ),
        ];
        let mut absent = Vec::new();
        for (name, kind) in files {
            let path = format!("{SCHED_DIR}/{name}");
            if self.root.exists(&path) {
                let k =
                    self.file_knob(&format!("sched.{name}"), Family::Tunable, path.into(), kind);
                self.knobs.push(k);
            } else {
                absent.push(name);
            }
        }
        let scaling = format!("{SCHED_DIR}/tunable_scaling");
        if self.root.exists(&scaling) {
            let k = self.file_knob(
                "sched.tunable_scaling",
                Family::Tunable,
                scaling.into(),
                KnobType::Enum {
                    choices: vec!["none".into(), "log".into(), "linear".into()],
                    numbered: true,
                },
            );
            self.knobs.push(k);
        }
        // preempt lists its own choices: read them, never assume them.
        let preempt = format!("{SCHED_DIR}/preempt");
        let text = match self.root.read(&preempt) {
            Ok(t) => Some(t),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                // Its choices come from the file itself: without it there is no knob.
                self.missing.push(Missing {
                    what: "sched.preempt".into(),
                    reason: refusal(&e),
                });
                None
            }
        };
        if let Some(text) = text {
            let choices: Vec<String> = text
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
                .collect();
            if !choices.is_empty() {
                let k = self.file_knob(
                    "sched.preempt",
                    Family::Tunable,
                    preempt.into(),
                    KnobType::Enum {
                        choices,
                        numbered: false,
                    },
                );
                self.knobs.push(k);
            }
        }
        if !absent.is_empty() {
            self.missing.push(Missing {
                what: format!("sched/{{{}}}", absent.join(",")),
                reason: debugfs_absence(&self.root, SCHED_DIR),
            });
        }
        if self.root.exists(SCHEDSTATS) {
            let k = self.file_knob(
                "kernel.sched_schedstats",
                Family::Tunable,
                SCHEDSTATS.into(),
                KnobType::Bool,
            );
            self.knobs.push(k);
        } else {
            self.missing.push(Missing {
                what: "kernel.sched_schedstats".into(),
                reason: "no /proc/sys/kernel/sched_schedstats (kernel without CONFIG_SCHEDSTATS)"
                    .into(),
            });
        }
    }
}
