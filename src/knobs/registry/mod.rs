//! The knob registry: every knob this kernel offers, discovered at runtime through the
//! kernel root — the feature names from the features file (or BTF under lockdown), the
//! debugfs directories as the kernel lists them, the cgroups that carry a control file.
//! Each knob gets its current value and whether it can be written, probed by opening it
//! for writing (which changes nothing), so a refusal is reported with the kernel's reason.
//!
//! What each family of knobs is and how it is found is in `discover.rs`.
//!
//! The registry is also the write allowlist: the session writes only to paths of knobs
//! found here (plus cgroup knobs resolved inside their mount by [`Registry::resolve`]).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde::Serialize;

mod discover;

use crate::kroot::{KernelError, KernelRoot};
use crate::mounts::Mounts;
use crate::topology::Topology;

use super::access::refusal;
use super::domains::{self, DomainInfo, Semantics};
use super::{Access, Family, Knob, KnobType, catalog, cgroup, scheduler};

const NUMA_SYSCTL: &str = "/proc/sys/kernel/numa_balancing";
const SCHEDSTATS: &str = "/proc/sys/kernel/sched_schedstats";
const CPUSET_RELAX: &str = "cpuset.sched_relax_domain_level";
const CGROUP_NUMA: &str = "cpu.numa_load_balance";

/// Something llctop looked for and this kernel does not offer, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub what: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Registry {
    pub knobs: Vec<Knob>,
    pub missing: Vec<Missing>,
    /// The domains relax_domain_level notes were computed from.
    pub domains: Option<DomainInfo>,
    pub semantics: Semantics,
    #[serde(skip)]
    root: KernelRoot,
    #[serde(skip)]
    mounts: Mounts,
    #[serde(skip)]
    topo: Option<Topology>,
    /// The schedulers the `scheduler` knob can choose (PATH's `scx_*`, config.toml's).
    pub schedulers: Vec<scheduler::Binary>,
    /// The scheduler this process's session started, while it runs (its value wins when
    /// two names load the same ops).
    #[serde(skip)]
    pub(crate) sched_started: Option<String>,
}

/// What an `llc_balancing/` knob does while cache-aware scheduling does not run (`None`:
/// it runs, or the knob is `enabled` itself set to 0, which says so by its value).
pub fn cache_aware_effect(c: &crate::snapshot::CacheAware, id: &str) -> Option<String> {
    match (c.enabled, c.multi_llc) {
        (true, true) => None,
        (false, _) if id == "llc_balancing.enabled" => None,
        (false, _) => {
            Some("no effect now: cache-aware scheduling is off (llc_balancing.enabled 0)".into())
        }
        (true, false) => Some(format!(
            "enabled but not active: {}",
            c.why_not().unwrap_or_default()
        )),
    }
}

impl Registry {
    /// Discover every knob under `root`. Reads only; domains are read from debugfs only
    /// if `sched/verbose` already exposes them (see `Session::read_domains`).
    pub fn discover(root: &KernelRoot, topo: Option<&Topology>) -> Registry {
        let mut r = Registry {
            knobs: Vec::new(),
            missing: Vec::new(),
            domains: None,
            semantics: Semantics::for_version(domains::kernel_version(root)),
            root: root.clone(),
            mounts: Mounts::discover(root),
            topo: topo.cloned(),
            schedulers: scheduler::on_path(&std::env::var("PATH").unwrap_or_default()),
            sched_started: None,
        };
        r.features();
        r.domain_knobs();
        r.numa();
        r.llc_balancing();
        r.tunables();
        r.scheduler_knob();
        r.mark_in_effect();
        r
    }

    /// The `scheduler` knob, on a kernel with sched_ext (rebuilt when the choices change).
    fn scheduler_knob(&mut self) {
        self.knobs.retain(|k| k.id != scheduler::ID);
        self.missing.retain(|m| m.what != scheduler::ID);
        match scheduler::knob(&self.root, &self.schedulers, self.sched_started.as_deref()) {
            Some(k) => self.knobs.push(k),
            None => self.missing.push(Missing {
                what: scheduler::ID.into(),
                reason: crate::kstate::sched_ext::ABSENT.into(),
            }),
        }
    }

    /// Add config.toml's `[schedulers]` to the choices (a name there replaces a binary of
    /// the same name found on PATH).
    pub fn add_schedulers(&mut self, configured: Vec<scheduler::Binary>) {
        if configured.is_empty() {
            return;
        }
        self.schedulers
            .retain(|b| !configured.iter().any(|c| c.name == b.name));
        self.schedulers.extend(configured);
        self.schedulers.sort_by(|a, b| a.name.cmp(&b.name));
        self.scheduler_knob();
    }

    /// Mark the fair-class knobs while a sched_ext scheduler schedules every task, and
    /// the `llc_balancing/` knobs while cache-aware scheduling does not run (enabled 0,
    /// or no domain partition spans two LLCs: `enabled` then reads 1 all the same): they
    /// are shown and written as ever, but do not steer those tasks.
    fn mark_in_effect(&mut self) {
        let scx = crate::kstate::sched_ext::read(&self.root)
            .ok()
            .flatten()
            .filter(|s| s.runs_fair_tasks());
        let cas = self.topo.as_ref().and_then(|t| {
            crate::kstate::cache_aware::read(&self.root, t, self.mounts.cgroup2.as_deref())
                .ok()
                .flatten()
        });
        for k in &mut self.knobs {
            k.not_in_effect = match (&scx, k.family.fair_class()) {
                (Some(s), Some(how)) => Some(format!(
                    "{how} for the tasks sched_ext schedules (scheduler {}, all tasks)",
                    s.short_name()
                )),
                _ if k.family == Family::LlcBalancing => {
                    cas.as_ref().and_then(|c| cache_aware_effect(c, &k.id))
                }
                _ => None,
            };
        }
    }

    pub fn root(&self) -> &KernelRoot {
        &self.root
    }

    pub fn get(&self, id: &str) -> Option<&Knob> {
        self.knobs.iter().find(|k| k.id == id)
    }

    /// The knob a name spelled the kernel's way stands for: a sched feature as the
    /// features file and the seeds write it (`TTWU_QUEUE`, or `NO_TTWU_QUEUE`: the same
    /// knob), a sysctl as sysctl(8) does (`kernel.numa_balancing`), a debugfs or sysctl
    /// file by the end of its path (`sched/migration_cost_ns`, `scan_delay_ms`) when one
    /// knob alone has it.
    pub fn kernel_spelling(&self, name: &str) -> Option<usize> {
        if name.trim_start_matches('/').is_empty() {
            return None;
        }
        let feature = name.strip_prefix("NO_").unwrap_or(name);
        let feature = feature.strip_prefix("feature.").unwrap_or(feature);
        let feature = feature.strip_prefix("NO_").unwrap_or(feature);
        let fid = format!("feature.{feature}");
        if let Some(i) = self.knobs.iter().position(|k| k.id == fid) {
            return Some(i);
        }
        let tail = Path::new(name.trim_start_matches('/')).to_path_buf();
        let dotted = PathBuf::from(name.replace('.', "/"));
        let mut hits = self.knobs.iter().enumerate().filter(|(_, k)| {
            !matches!(k.kind, KnobType::Feature { .. })
                && (k.path.ends_with(&tail) || k.path.ends_with(&dotted))
        });
        let (i, _) = hits.next()?;
        hits.next().is_none().then_some(i)
    }

    /// A sched feature written as the features file takes it, with no value: `NAME`
    /// turns it on, `NO_NAME` off. The knob's id and the value.
    pub fn features_file_syntax(&self, word: &str) -> Option<(String, &'static str)> {
        let w = word.strip_prefix("feature.").unwrap_or(word);
        if let Some(name) = w.strip_prefix("NO_") {
            let id = format!("feature.{name}");
            if self.get(&id).is_some() {
                return Some((id, "off"));
            }
        }
        let id = format!("feature.{w}");
        self.get(&id).is_some().then_some((id, "on"))
    }

    /// The error for a name that is no knob here, with the closest ids.
    fn unknown(&self, id: &str) -> String {
        // A knob llctop knows this kernel does not offer: why, as `knobs list` says it.
        if let Some(m) = self.missing_for(id) {
            return format!("{id}: not available on this kernel: {}", m.reason);
        }
        format!(
            "no knob {id:?} on this kernel (llctop knobs list){}",
            crate::suggest::did_you_mean(id, self.knobs.iter().map(|k| k.id.as_str()))
        )
    }

    /// The entry of [`Registry::missing`] that `id` names: the same name, a knob of a
    /// missing group (`llc_balancing.enabled` of `sched/llc_balancing`), or a sched
    /// feature by its bare name.
    fn missing_for(&self, id: &str) -> Option<&Missing> {
        let norm = |s: &str| s.trim().replace('/', ".").to_ascii_lowercase();
        let id = norm(id);
        let group = id.split_once('.').map(|(g, _)| g);
        self.missing.iter().find(|m| {
            let what = norm(&m.what);
            what == id
                || what == format!("feature.{id}")
                || id.starts_with(&format!("{what}."))
                || what.ends_with(&format!(".{id}"))
                || group.is_some_and(|g| what.ends_with(&format!(".{g}")))
        })
    }

    /// A registered knob (by its id or its kernel spelling), or a cgroup knob
    /// (`cgroup.numa_load_balance@/path`, `relax_domain_level@/path`) resolved inside its
    /// mount and added to the registry.
    pub fn resolve(&mut self, id: &str) -> Result<&Knob, String> {
        if let Some(i) = self.knobs.iter().position(|k| k.id == id) {
            return Ok(&self.knobs[i]);
        }
        let Some((base, cg)) = id.split_once('@') else {
            return match self.kernel_spelling(id) {
                Some(i) => Ok(&self.knobs[i]),
                None => Err(self.unknown(id)),
            };
        };
        let (mount, file) = match base {
            "cgroup.numa_load_balance" => (self.mounts.cgroup2.clone(), CGROUP_NUMA),
            "relax_domain_level" => (self.mounts.cpuset_v1.clone(), CPUSET_RELAX),
            _ => return Err(self.unknown(id)),
        };
        let Some(mount) = mount else {
            return Err(format!(
                "{id}: the cgroup hierarchy for {file} is not mounted"
            ));
        };
        let (norm, path) = cgroup::resolve(&self.root, &mount, cg, file)?;
        let canonical_id = format!("{base}@{norm}");
        if let Some(i) = self.knobs.iter().position(|k| k.id == canonical_id) {
            return Ok(&self.knobs[i]);
        }
        let knob = if base == "relax_domain_level" {
            self.relax_knob(canonical_id, path)
        } else {
            self.cgroup_numa_knob(canonical_id, path)
        };
        self.knobs.push(knob);
        Ok(self.knobs.last().expect("just pushed"))
    }

    /// Re-read every knob's current value (the TUI does so at each interval: another
    /// tool or operator may change a knob while llctop runs). Values decoded under
    /// lockdown are kept: lockdown refuses every writer, so they cannot change. Returns
    /// the ids whose value changed.
    pub fn refresh_values(&mut self) -> Vec<String> {
        let mut changed = Vec::new();
        let mut features: Option<Result<String, String>> = None;
        for i in 0..self.knobs.len() {
            if self.knobs[i].value_source.is_some() {
                continue;
            }
            let k = &self.knobs[i];
            let now = match &k.kind {
                // One read of the features file for all of them.
                KnobType::Feature { .. } => {
                    let text = features.get_or_insert_with(|| {
                        self.root
                            .read(&k.path)
                            .map_err(|e| format!("{}: {}", k.path.display(), refusal(&e)))
                    });
                    text.clone().and_then(|t| {
                        k.kind
                            .decode(&t)
                            .ok_or_else(|| format!("{}: no {}", k.path.display(), k.id))
                    })
                }
                _ => self.read_value(k),
            };
            let k = &mut self.knobs[i];
            let (value, reason) = match now {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e)),
            };
            if value != k.value {
                changed.push(k.id.clone());
            }
            k.value = value;
            k.value_reason = reason;
        }
        self.mark_in_effect();
        changed
    }

    /// Read the current canonical value of a knob from the kernel.
    pub fn read_value(&self, knob: &Knob) -> Result<String, String> {
        if let KnobType::Scheduler { .. } = knob.kind {
            return scheduler::read(&self.root, &self.schedulers, self.sched_started.as_deref());
        }
        let raw = self
            .root
            .read(&knob.path)
            .map_err(|e| format!("{}: {}", knob.path.display(), refusal(&e)))?;
        knob.kind.decode(&raw).ok_or_else(|| {
            format!(
                "{}: unexpected content {:?} for {}",
                knob.path.display(),
                raw.trim(),
                knob.kind.summary()
            )
        })
    }

    fn access(&self, path: &Path) -> Access {
        match OpenOptions::new().write(true).open(self.root.path(path)) {
            Ok(_) => Access::Writable,
            Err(source) => Access::ReadOnly(refusal(&KernelError::Io {
                path: path.to_path_buf(),
                source,
            })),
        }
    }

    /// A knob for a plain file: value, access, catalog entry.
    fn file_knob(&self, id: &str, family: Family, path: PathBuf, kind: KnobType) -> Knob {
        let cat = catalog::knob(id.split('@').next().unwrap_or(id));
        let (value, value_reason) = match self.root.read(&path) {
            Ok(raw) => match kind.decode(&raw) {
                Some(v) => (Some(v), None),
                None => (None, Some(format!("unexpected content {:?}", raw.trim()))),
            },
            Err(e) => (None, Some(refusal(&e))),
        };
        Knob {
            id: id.to_string(),
            family,
            access: self.access(&path),
            path,
            kind,
            value,
            value_source: None,
            value_reason,
            default: cat.default.map(str::to_string),
            description: cat.description.to_string(),
            reference: cat.reference.map(str::to_string),
            notes: Vec::new(),
            aliases: Vec::new(),
            not_in_effect: None,
        }
    }
}
