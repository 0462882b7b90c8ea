//! Whether the 7.2 cache-aware scheduler runs: what `llc_balancing/enabled` asks for,
//! beside whether the kernel can act on it (procfs source, [`crate::kstate::cache_aware`]).
//! `enabled` reads back the user's request (`sysctl_sched_cache_user`) and says 1 on a
//! machine where the feature is off; the kernel turns it on (`sched_cache_active`) only
//! while some sched-domain partition holds two or more CPUs of one LLC and CPUs outside
//! it (`sched_cache_present`, kernel/sched/topology.c: `sd_in_multi_llcs`).

use serde::{Deserialize, Serialize};

/// `llc_balancing/` at the end of the interval. `None` in the snapshot on kernels
/// without cache-aware scheduling (the source status says why).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheAware {
    /// `llc_balancing/enabled`: what the user asked for.
    pub enabled: bool,
    /// The kernel's condition, by its own rule over the domain partitions: some partition
    /// holds two or more CPUs of one LLC and CPUs outside that LLC.
    pub multi_llc: bool,
    /// The domain partitions the rule was applied to, as cpulists (`0-7`; one per
    /// partition: the top-level one, then each cpuset partition root).
    pub partitions: Vec<String>,
    /// `llc_balancing/aggr_tolerance` (the scale of the limits on a process's threads and
    /// footprint; 0 never aggregates, 100 lifts the limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggr_tolerance: Option<u32>,
    /// `llc_balancing/epoch_affinity_timeout`: epochs without a scan before a process's
    /// preference is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_affinity_timeout: Option<u32>,
    /// `llc_balancing/overaggr_pct`: the LLC utilisation (% of its capacity) up to which
    /// the kernel gathers onto a preferred LLC and refuses moves off it (over-aggregation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overaggr_pct: Option<u32>,
}

impl CacheAware {
    /// Cache-aware balancing runs (the kernel's `sched_cache_active`).
    pub fn active(&self) -> bool {
        self.enabled && self.multi_llc
    }

    /// Why it does not run (`None`: it runs).
    pub fn why_not(&self) -> Option<String> {
        match (self.enabled, self.multi_llc) {
            (true, true) => None,
            (false, _) => Some("llc_balancing/enabled is 0".into()),
            (true, false) => Some(format!(
                "no sched-domain partition spans two LLCs with two CPUs in one (partitions {}): \
                 the kernel keeps it off",
                if self.partitions.is_empty() {
                    "none".to_string()
                } else {
                    self.partitions.join(" ")
                }
            )),
        }
    }

    /// One line for a header or a report: `active`, `off (enabled 0)`, `enabled, not
    /// active: …`.
    pub fn describe(&self) -> String {
        match (self.enabled, self.why_not()) {
            (_, None) => "active".into(),
            (false, _) => "off (llc_balancing/enabled 0)".into(),
            (true, Some(why)) => format!("enabled, not active: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_only_when_asked_for_and_possible() {
        let mut c = CacheAware {
            enabled: true,
            multi_llc: true,
            partitions: vec!["0-7".into()],
            ..Default::default()
        };
        assert!(c.active());
        assert_eq!(c.describe(), "active");
        c.multi_llc = false;
        c.partitions = vec!["0-1".into()];
        assert!(!c.active());
        assert!(
            c.describe()
                .starts_with("enabled, not active: no sched-domain partition spans two LLCs"),
            "{}",
            c.describe()
        );
        assert!(c.describe().contains("(partitions 0-1)"));
        c.enabled = false;
        assert_eq!(c.describe(), "off (llc_balancing/enabled 0)");
        assert_eq!(c.why_not().as_deref(), Some("llc_balancing/enabled is 0"));
    }
}
