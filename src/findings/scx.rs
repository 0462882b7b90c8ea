//! The advisor while a sched_ext scheduler schedules every task: a knob of the fair class
//! (sched features, domains, `llc_balancing/`, balance tunables, NUMA balancing's task
//! placement) does not steer those tasks, so a finding does not suggest one then; it
//! suggests the experiment that can answer instead — the fair scheduler against the one
//! running (`llctop ab scheduler=eevdf,scx_NAME`).

use super::{Finding, Suggestion, Window};
use crate::knobs::scheduler::ID;

/// Rewrite the suggestions of `found` when the window's last snapshot says a BPF
/// scheduler runs every task.
pub fn redirect(w: &Window, found: &mut [Finding]) {
    let Some(x) = w
        .snaps
        .last()
        .and_then(|s| s.sched_ext.as_ref())
        .filter(|x| x.runs_fair_tasks())
    else {
        return;
    };
    let name = x.short_name();
    for f in found.iter_mut() {
        let Some(s) = &f.suggestion else {
            continue;
        };
        if s.knob.as_deref() == Some(ID) || (s.knob.is_none() && s.profile.is_none()) {
            continue;
        }
        let was = s
            .knob
            .clone()
            .or_else(|| s.profile.as_ref().map(|p| format!("profile {p}")))
            .unwrap_or_default();
        f.suggestion = Some(Suggestion {
            knob: Some(ID.into()),
            value: Some(crate::snapshot::EEVDF.into()),
            profile: None,
            command: format!("llctop ab {ID}=eevdf,scx_{name} -- <workload>"),
            why: format!(
                "scx {name} schedules every task, so the fair-class setting this pattern's seed suggests ({was}) would not steer them; compare the fair scheduler (EEVDF) with it instead"
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Kind;
    use crate::findings::testing::snap;
    use crate::snapshot::{SchedExt, Snapshot};

    /// The suggestion left on a finding that suggested `knob` / `profile`, over `s`.
    fn redirected(s: &Snapshot, knob: Option<&str>, profile: Option<&str>) -> Suggestion {
        let topo = crate::topology::synthetic(1, 2, 2);
        let held = Default::default();
        let w = Window {
            snaps: std::slice::from_ref(s),
            context: &[],
            topo: &topo,
            from_start: true,
            held: &held,
        };
        let mut f = Finding::new(Kind::NewidleChurn, "x", &w, "x".into());
        f.suggestion = Some(Suggestion {
            knob: knob.map(Into::into),
            value: None,
            profile: profile.map(Into::into),
            command: "llctop ab --profile newidle-in-llc -- <workload>".into(),
            why: String::new(),
        });
        let mut found = vec![f];
        redirect(&w, &mut found);
        found.remove(0).suggestion.unwrap()
    }

    #[test]
    fn fair_knobs_give_way_to_the_scheduler_experiment_while_one_runs_every_task() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut s = snap(&topo, 0, 0.5);
        let g = redirected(&s, None, Some("newidle-in-llc"));
        assert_eq!(
            g.profile.as_deref(),
            Some("newidle-in-llc"),
            "no sched_ext: unchanged"
        );
        s.sched_ext = Some(SchedExt {
            state: "enabled".into(),
            ops: Some("lavd_1.1.4_x86_64".into()),
            switch_all: Some(true),
            ..Default::default()
        });
        let g = redirected(&s, None, Some("newidle-in-llc"));
        assert_eq!(
            g.command,
            "llctop ab scheduler=eevdf,scx_lavd -- <workload>"
        );
        assert!(g.why.contains("(profile newidle-in-llc)"), "{}", g.why);
        // Only SCHED_EXT tasks: the fair knobs still steer the rest.
        if let Some(x) = s.sched_ext.as_mut() {
            x.switch_all = Some(false);
        }
        let g = redirected(&s, Some("numa_balancing"), None);
        assert_eq!(g.knob.as_deref(), Some("numa_balancing"));
    }
}
