//! The scheduler series: whether a sched_ext BPF scheduler is in charge
//! (`llctop_sched_ext_enabled`), which one (`llctop_sched_ext{scheduler,ops,scope}`, the
//! old label set dropped when it changes) and the tasks it refused
//! (`llctop_sched_ext_rejected_tasks`). A kernel without sched_ext gets none of them.
//! Whether the 7.2 cache-aware scheduler is asked for and runs
//! (`llctop_cache_aware_enabled`, `llctop_cache_aware_active`); a kernel without it gets
//! neither.

use prometheus_client::registry::Registry;

use super::series::{Group, Labels, Metrics, S};
use crate::snapshot::Snapshot;

/// Registered at the first snapshot that has sched_ext (cache-aware scheduling).
#[derive(Default)]
pub struct SchedSeries {
    registered: bool,
    cache_aware_registered: bool,
    /// The labels of the `llctop_sched_ext` series shown.
    shown: Option<Labels>,
}

impl SchedSeries {
    pub fn update(&mut self, m: &Metrics, r: &mut Registry, s: &Snapshot) {
        if let Some(c) = &s.cache_aware {
            if !self.cache_aware_registered {
                self.cache_aware_registered = true;
                m.register_group(r, Group::CacheAware);
            }
            m.put(S::CacheAwareEnabled, &[], f64::from(u8::from(c.enabled)));
            m.put(S::CacheAwareActive, &[], f64::from(u8::from(c.active())));
        }
        let Some(x) = &s.sched_ext else {
            return;
        };
        if !self.registered {
            self.registered = true;
            m.register_group(r, Group::SchedExt);
        }
        m.put(S::SchedExtEnabled, &[], f64::from(u8::from(x.enabled())));
        let scope = match (x.enabled(), x.switch_all) {
            (true, Some(false)) => "ext_only",
            _ => "all",
        };
        let labels = S::SchedExt.def().labels(&[
            x.short_name(),
            x.ops.as_deref().unwrap_or_default(),
            scope,
        ]);
        let info = m.get(S::SchedExt);
        if let Some(old) = self.shown.replace(labels.clone())
            && old != labels
        {
            info.remove(&old);
        }
        info.put(&labels, 1.0);
        let rejected = if x.enabled() { x.nr_rejected } else { None };
        m.put(S::SchedExtRejected, &[], rejected.unwrap_or(0) as f64);
    }
}
