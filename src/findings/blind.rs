//! Counter blind spots: which of the other findings cannot be judged on this machine, or
//! only in part, and why — one LLC or one node (the situation cannot arise), no BPF detail
//! events, no /proc/schedstat, procfs sampling only, no PMU. From the topology and the
//! sources' own states in the window's newest snapshot.

use super::{Finding, Kind, Severity, Window};
use crate::snapshot::{Precision, SourceName};

const KEY: &str = "machine";

/// What cannot be judged, one line each: `(finding kind, why)`.
pub fn items(w: &Window) -> Vec<(Kind, String)> {
    let mut out = Vec::new();
    let why = |name: SourceName, default: &str| {
        w.source_reason(name).unwrap_or_else(|| default.to_string())
    };
    let any = |f: &dyn Fn(&crate::snapshot::Snapshot) -> bool| w.snaps.iter().any(f);
    let one_llc = w.topo.llcs.len() < 2;
    if !any(&|s| s.events.is_some()) {
        out.push((
            Kind::PileUp,
            format!(
                "no placement events without the BPF source ({})",
                why(SourceName::Bpf, "the BPF source was not used")
            ),
        ));
    }
    if one_llc {
        out.push((
            Kind::NewidleChurn,
            "one LLC: no balancing across LLCs to judge".into(),
        ));
        out.push((
            Kind::Scattered,
            "one LLC: threads cannot be scattered over LLCs".into(),
        ));
    } else {
        if !any(&|s| s.balance.is_some()) {
            out.push((
                Kind::NewidleChurn,
                format!(
                    "newidle balancing unseen, judged from migrations alone ({})",
                    why(SourceName::ProcfsSchedstat, "no /proc/schedstat")
                ),
            ));
        }
        if any(&|s| {
            s.processes
                .as_ref()
                .is_some_and(|t| t.precision == Precision::Sampled)
        }) {
            out.push((
                Kind::Scattered,
                format!(
                    "runtime per LLC sampled by procfs, a guess ({})",
                    why(SourceName::Bpf, "the BPF source was not used")
                ),
            ));
        }
    }
    if !any(&|s| s.cpus.iter().any(|c| c.rq_wait_ns.is_some())) {
        out.push((
            Kind::NotConserved,
            format!(
                "no run-queue wait per CPU ({})",
                why(SourceName::Bpf, "the BPF source was not used")
            ),
        ));
    }
    if w.topo.nodes.len() < 2 {
        out.push((Kind::Numa, "one NUMA node: no remote memory".into()));
    } else if !any(&|s| s.numa.is_some()) {
        out.push((
            Kind::Numa,
            format!(
                "no NUMA counters ({})",
                why(SourceName::ProcfsNuma, "not read")
            ),
        ));
    }
    // Over-aggregation needs a kernel that gathers processes, more than one LLC to gather
    // them out of, and the processes' own waits.
    if one_llc {
        out.push((
            Kind::CacheAware,
            "one LLC: no process can be gathered away from idle CPUs".into(),
        ));
    } else if !any(&|s| s.cache_aware.is_some()) {
        out.push((
            Kind::CacheAware,
            format!(
                "nothing gathers a process on one LLC here: {}",
                why(
                    SourceName::ProcfsCacheAware,
                    "cache-aware scheduling not recorded (a kernel before 7.2 or without CONFIG_SCHED_CACHE, or a recording made before llctop read it)"
                )
            ),
        ));
    }
    if let Some(r) = w.source_reason(SourceName::Perf) {
        out.push((
            Kind::BlindSpots,
            format!("the cache cost (misses, IPC) behind any finding cannot be shown: {r}"),
        ));
    }
    out
}

pub fn detect(w: &Window) -> Vec<Finding> {
    let items = items(w);
    if items.is_empty() {
        return Vec::new();
    }
    let text: Vec<String> = items
        .iter()
        .map(|(k, why)| match k {
            Kind::BlindSpots => why.clone(),
            k => format!("{}: {why}", k.title()),
        })
        .collect();
    let mut f = Finding::new(Kind::BlindSpots, KEY, w, text.join("; "));
    f.severity = Severity::Info;
    vec![f]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::findings::testing::snap;
    use crate::snapshot::{Balance, EventLog, NumaStats, SourceStatus};
    use crate::topology::synthetic;

    #[test]
    fn what_cannot_be_judged_is_named_with_the_sources_reasons() {
        let topo = synthetic(1, 1, 2);
        let mut s = snap(&topo, 0, 0.5);
        s.cpus.iter_mut().for_each(|c| c.rq_wait_ns = None);
        s.sources = vec![
            SourceStatus::absent(crate::snapshot::SourceName::Bpf, "no CAP_BPF"),
            SourceStatus::absent(crate::snapshot::SourceName::Perf, "no PMU"),
        ];
        let held = BTreeSet::new();
        let w = Window::trailing(std::slice::from_ref(&s), &topo, &held);
        let kinds: Vec<Kind> = items(&w).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                Kind::PileUp,
                Kind::NewidleChurn,
                Kind::Scattered,
                Kind::NotConserved,
                Kind::Numa,
                Kind::CacheAware,
                Kind::BlindSpots
            ]
        );
        let f = detect(&w);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].summary.contains("no CAP_BPF") && f[0].summary.contains("no PMU"));
    }

    #[test]
    fn a_machine_with_every_source_has_none() {
        let topo = synthetic(2, 2, 2);
        let mut s = snap(&topo, 0, 0.5);
        s.events = Some(EventLog::default());
        s.balance = Some(Balance::default());
        s.numa = Some(NumaStats::default());
        s.cache_aware = Some(crate::snapshot::CacheAware::default());
        let held = BTreeSet::new();
        let w = Window::trailing(std::slice::from_ref(&s), &topo, &held);
        assert!(detect(&w).is_empty(), "{:?}", items(&w));
    }
}
