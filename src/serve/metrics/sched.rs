//! The scheduler series: whether a sched_ext BPF scheduler is in charge
//! (`llctop_sched_ext_enabled`), which one (`llctop_sched_ext{scheduler,ops,scope}`, the
//! old label set dropped when it changes) and the tasks it refused
//! (`llctop_sched_ext_rejected_tasks`). A kernel without sched_ext gets none of them.

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{Labels, Level, l};
use crate::snapshot::Snapshot;

/// Registered at the first snapshot that has sched_ext.
#[derive(Default)]
pub struct SchedSeries {
    series: Option<Series>,
}

struct Series {
    enabled: Gauge,
    info: Level,
    rejected: Gauge,
    shown: Option<Labels>,
}

impl Series {
    fn register(r: &mut Registry) -> Series {
        let s = Series {
            enabled: Gauge::default(),
            info: Level::default(),
            rejected: Gauge::default(),
            shown: None,
        };
        r.register(
            "sched_ext_enabled",
            "1 while a sched_ext BPF scheduler is enabled (/sys/kernel/sched_ext/state), 0 while the fair scheduler (EEVDF) runs everything",
            s.enabled.clone(),
        );
        r.register(
            "sched_ext",
            "The scheduler in charge as labels (scheduler: eevdf or the BPF scheduler's short name; ops: root/ops; scope: all or ext_only), always 1",
            s.info.clone(),
        );
        r.register(
            "sched_ext_rejected_tasks",
            "Tasks the running BPF scheduler refused since it was enabled (/sys/kernel/sched_ext/nr_rejected; 0 while none runs)",
            s.rejected.clone(),
        );
        s
    }
}

impl SchedSeries {
    pub fn update(&mut self, r: &mut Registry, s: &Snapshot) {
        let Some(x) = &s.sched_ext else {
            return;
        };
        let me = self.series.get_or_insert_with(|| Series::register(r));
        me.enabled.set(i64::from(x.enabled()));
        let scope = match (x.enabled(), x.switch_all) {
            (true, Some(false)) => "ext_only",
            _ => "all",
        };
        let labels = l(&[
            ("scheduler", x.short_name().to_string()),
            ("ops", x.ops.clone().unwrap_or_default()),
            ("scope", scope.to_string()),
        ]);
        if let Some(old) = me.shown.replace(labels.clone())
            && old != labels
        {
            me.info.remove(&old);
        }
        me.info.get_or_create(&labels).set(1.0);
        let rejected = if x.enabled() { x.nr_rejected } else { None };
        me.rejected
            .set(i64::try_from(rejected.unwrap_or(0)).unwrap_or(i64::MAX));
    }
}
