//! Snapshots folded into series, read back as OpenMetrics: counters, the process cap, knobs.

use super::*;
use crate::snapshot::Precision;

fn snap(topo: &Topology, seq: u64) -> Snapshot {
    let mut s = crate::findings::testing::snap(topo, seq, 0.5);
    s.time.unix_ns = 1_800_000_000_000_000_000 + seq * 1_000_000_000;
    let mut m = crate::snapshot::Migrations {
        llc_matrix: vec![vec![0; topo.llcs.len()]; topo.llcs.len()],
        precision: Precision::Exact,
        ..Default::default()
    };
    m.by_distance.cross_llc = 10;
    m.by_distance.smt = 4;
    s.migrations = Some(m);
    s.cpus[1].switches_unseen = 2;
    s
}

#[test]
fn counters_accumulate_snapshots_and_read_as_openmetrics() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let mut e = Exporter::new(&topo);
    for seq in 0..3 {
        e.update(&snap(&topo, seq));
    }
    let om = e.openmetrics();
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE llctop_migrations counter"), "{om}");
    assert!(
        om.contains("llctop_migrations_total{distance=\"xllc\"} 30"),
        "{om}"
    );
    assert!(
        om.contains("llctop_migrations_total{distance=\"smt\"} 12"),
        "{om}"
    );
    assert!(om.contains("llctop_migrations_exact 1"), "{om}");
    assert!(
        om.contains("llctop_context_switches_unseen_total 6"),
        "{om}"
    );
    // Busy: 0.5 of 1 s on each of 2 CPUs, 3 times: 3 CPU-seconds per LLC.
    assert!(
        om.contains("llctop_llc_busy_seconds_total{llc=\"0\",node=\"0\"} 3.0"),
        "{om}"
    );
    assert!(
        om.contains("llctop_llc_cpus{llc=\"1\",node=\"0\"} 2"),
        "{om}"
    );
    assert!(
        om.contains("# UNIT llctop_llc_busy_seconds seconds"),
        "{om}"
    );
    let c = classic(&om);
    assert!(!c.contains("# EOF") && !c.contains("# UNIT"), "{c}");
    assert!(c.contains("# TYPE llctop_migrations_total counter"), "{c}");
    assert!(
        c.contains("# HELP llctop_migrations_total Task migrations"),
        "{c}"
    );
}

#[test]
fn process_series_are_capped_and_forget_processes_that_leave() {
    let topo = crate::topology::synthetic(1, 1, 2);
    let mut e = Exporter::new(&topo).with_process_series(2);
    let table = |pids: &[(u32, u64)]| crate::snapshot::ProcessTable {
        rows: pids
            .iter()
            .map(|&(pid, ms)| crate::snapshot::ProcessStats {
                pid,
                comm: format!("p{pid}"),
                cpu_time_ns: ms * 1_000_000,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut s = snap(&topo, 0);
    s.processes = Some(table(&[(1, 500), (2, 300), (3, 100)]));
    e.update(&s);
    let om = e.openmetrics();
    assert!(
        om.contains("llctop_process_cpu_seconds_total{pid=\"1\",comm=\"p1\"} 0.5"),
        "{om}"
    );
    assert!(!om.contains("pid=\"3\""), "over the cap: {om}");
    assert!(om.contains("llctop_process_series_dropped 1"), "{om}");
    assert!(om.contains("llctop_process_series_limit 2"), "{om}");
    // Process 1 exits: its series go; 3 comes in with its own.
    s.processes = Some(table(&[(2, 300), (3, 200)]));
    e.update(&s);
    let om = e.openmetrics();
    assert!(
        !om.contains("pid=\"1\""),
        "an exited process keeps nothing: {om}"
    );
    assert!(
        om.contains("llctop_process_cpu_seconds_total{pid=\"2\",comm=\"p2\"} 0.6"),
        "{om}"
    );
    assert!(om.contains("pid=\"3\""), "{om}");
}

#[test]
fn a_knob_keeps_one_info_series_whatever_its_history() {
    let topo = crate::topology::synthetic(1, 1, 2);
    let mut e = Exporter::new(&topo);
    let mut v = BTreeMap::new();
    v.insert("numa_balancing".to_string(), "0".to_string());
    v.insert("feature.TTWU_QUEUE".to_string(), "on".to_string());
    e.knobs(&v);
    v.insert("numa_balancing".to_string(), "1".to_string());
    e.knobs(&v);
    let om = e.openmetrics();
    assert!(
        om.contains("llctop_knob_value{knob=\"numa_balancing\"} 1"),
        "{om}"
    );
    assert!(
        om.contains("llctop_knob_value{knob=\"feature.TTWU_QUEUE\"} 1"),
        "{om}"
    );
    assert!(
        om.contains("llctop_knob{knob=\"numa_balancing\",value=\"1\"} 1"),
        "{om}"
    );
    assert!(
        !om.contains("value=\"0\""),
        "the old value's series is gone: {om}"
    );
}

#[test]
fn the_scheduler_in_charge_is_a_gauge_and_one_info_series() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let mut e = Exporter::new(&topo);
    let mut s = snap(&topo, 0);
    e.update(&s);
    // A kernel without sched_ext: no series at all.
    assert!(!e.openmetrics().contains("llctop_sched_ext_enabled "));
    s.sched_ext = Some(crate::snapshot::SchedExt {
        state: "enabled".into(),
        ops: Some("bpfland_1.1.4_x86_64_unknown_linux_gnu".into()),
        switch_all: Some(true),
        nr_rejected: Some(2),
        ..Default::default()
    });
    e.update(&s);
    let om = e.openmetrics();
    assert!(om.contains("llctop_sched_ext_enabled 1"), "{om}");
    assert!(om.contains("llctop_sched_ext_rejected_tasks 2"), "{om}");
    assert!(
        om.contains("llctop_sched_ext{scheduler=\"bpfland\",ops=\"bpfland_1.1.4_x86_64_unknown_linux_gnu\",scope=\"all\"} 1"),
        "{om}"
    );
    s.sched_ext = Some(crate::snapshot::SchedExt {
        state: "disabled".into(),
        ..Default::default()
    });
    e.update(&s);
    let om = e.openmetrics();
    assert!(om.contains("llctop_sched_ext_enabled 0"), "{om}");
    assert!(
        om.contains("llctop_sched_ext{scheduler=\"eevdf\",ops=\"\",scope=\"all\"} 1"),
        "{om}"
    );
    assert!(
        !om.contains("bpfland"),
        "the old scheduler's series is dropped: {om}"
    );
    assert!(om.contains("llctop_sched_ext_rejected_tasks 0"), "{om}");
}

#[test]
fn whether_cache_aware_scheduling_runs_is_two_gauges() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let mut e = Exporter::new(&topo);
    let mut s = snap(&topo, 0);
    e.update(&s);
    // A kernel without it: neither series.
    assert!(!e.openmetrics().contains("llctop_cache_aware"));
    s.cache_aware = Some(crate::snapshot::CacheAware {
        enabled: true,
        multi_llc: false,
        partitions: vec!["0-1".into()],
        ..Default::default()
    });
    e.update(&s);
    let om = e.openmetrics();
    assert!(om.contains("llctop_cache_aware_enabled 1"), "{om}");
    assert!(om.contains("llctop_cache_aware_active 0"), "{om}");
    s.cache_aware = Some(crate::snapshot::CacheAware {
        enabled: true,
        multi_llc: true,
        partitions: vec!["0-3".into()],
        ..Default::default()
    });
    e.update(&s);
    assert!(e.openmetrics().contains("llctop_cache_aware_active 1"));
}

#[test]
fn findings_are_a_gauge_per_kind_and_severity_and_a_fired_counter() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let mut e = Exporter::new(&topo);
    let om = e.openmetrics();
    // Every kind and severity from the start, at 0.
    assert!(
        om.contains("llctop_finding_active{kind=\"pile_up\",severity=\"critical\"} 0"),
        "{om}"
    );
    assert!(
        om.contains("llctop_findings_fired_total{kind=\"not_conserved\",severity=\"warning\"} 0"),
        "{om}"
    );
    // CPU 2 waits all along while CPU 3 of its LLC idles (seed 002): critical.
    let mut t = crate::run::pipeline::Ticker::new(&topo, &[]);
    for seq in 0..6 {
        let mut s = crate::findings::testing::snap(&topo, seq, 0.9);
        s.cpus[2].rq_wait_ns = Some(1_000_000_000);
        s.cpus[3].busy = Some(0.02);
        e.tick(&t.tick(s));
    }
    let om = e.openmetrics();
    assert!(
        om.contains("llctop_finding_active{kind=\"not_conserved\",severity=\"critical\"} 1"),
        "{om}"
    );
    assert!(
        om.contains("llctop_findings_fired_total{kind=\"not_conserved\",severity=\"critical\"} 1"),
        "{om}"
    );
    assert!(
        om.contains("llctop_finding_active{kind=\"pile_up\",severity=\"critical\"} 0"),
        "{om}"
    );
}

/// README's count of series ("Fleet-wide"): CPUs + 5 per LLC + 9 per domain level + 2
/// per source + a knob's info and, when its value is a number, its value + one per NUMA
/// counter + 3 per cgroup + the fixed ones — for the BPF source, without resctrl,
/// sched_ext or process series.
#[test]
fn the_series_count_is_readmes_formula() {
    use crate::snapshot::*;
    for (nodes, llcs, cpus) in [(1, 1, 2), (2, 4, 8), (2, 16, 16)] {
        let topo = crate::topology::synthetic(nodes, llcs, cpus);
        let mut e = Exporter::new(&topo);
        let mut s = snap(&topo, 1);
        for c in &mut s.cpus {
            c.rq_wait_ns = Some(10);
            c.migrations_in = Some(1);
            c.migrations_out = Some(1);
        }
        crate::collect::aggregate(&topo, &mut s);
        if let Some(m) = &mut s.migrations {
            m.by_cause = Some(ByCause::default());
        }
        s.system.ctx_switches = Some(10);
        s.system.forks = Some(1);
        let levels = 3;
        s.balance = Some(Balance {
            version: 17,
            domains: (0..levels)
                .map(|level| DomainBalance {
                    level,
                    name: Some(format!("L{level}")),
                    ..Default::default()
                })
                .collect(),
        });
        let counters = ["numa_hit", "numa_miss", "pgmigrate_success"];
        let cgroups = ["/a", "/b"];
        s.numa = Some(NumaStats {
            vmstat: counters.iter().map(|k| (k.to_string(), 1)).collect(),
            cgroups: cgroups
                .iter()
                .map(|p| CgroupNuma {
                    path: p.to_string(),
                    numa_pages_migrated: Some(1),
                    numa_pte_updates: Some(1),
                    numa_hint_faults: Some(1),
                })
                .collect(),
            ..Default::default()
        });
        s.processes = Some(ProcessTable {
            rows: vec![ProcessStats {
                pid: 7,
                cpu_time_ns: 1,
                preferred_hit: Some(1.0),
                ..Default::default()
            }],
            ..Default::default()
        });
        s.sources = vec![
            SourceStatus::active(crate::snapshot::SourceName::Bpf),
            SourceStatus::absent(crate::snapshot::SourceName::Perf, "-"),
        ];
        e.update(&s);
        let knobs: BTreeMap<String, String> = [("a", "1"), ("b", "off"), ("c", "fifo")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter()
            .collect();
        e.knobs(&knobs);
        let samples = classic(&e.openmetrics())
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count();
        let numeric = 2;
        let formula = topo.cpus.len()
            + 5 * topo.llcs.len()
            + 9 * levels as usize
            + 2 * s.sources.len()
            + knobs.len()
            + numeric
            + counters.len()
            + 3 * cgroups.len()
            + fixed_series();
        assert_eq!(samples, formula, "{nodes}x{llcs}x{cpus}");
    }
}

#[test]
fn build_info_names_the_version_and_the_kernel_once() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let unknown = Exporter::new(&topo).openmetrics();
    let v = env!("CARGO_PKG_VERSION");
    assert!(
        unknown.contains(&format!(
            "llctop_build_info{{version=\"{v}\",kernel=\"unknown\"}} 1"
        )),
        "{unknown}"
    );
    let om = Exporter::new(&topo)
        .with_kernel(Some("7.2.0-1-amd64"))
        .openmetrics();
    assert!(
        om.contains(&format!(
            "llctop_build_info{{version=\"{v}\",kernel=\"7.2.0-1-amd64\"}} 1"
        )),
        "{om}"
    );
    assert_eq!(om.matches("llctop_build_info{").count(), 1, "{om}");
}

#[test]
fn wakeups_between_processes_are_a_counter_by_kind_from_the_first_snapshot_that_counts_them() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let mut e = Exporter::new(&topo);
    let mut s = snap(&topo, 0);
    e.update(&s);
    // Not counted (no --wakeups, or the kernel refused it): no series.
    assert!(!e.openmetrics().contains("llctop_wakeups"));
    s.wakeups = Some(crate::snapshot::Wakeups {
        pairs: vec![],
        paired: 1_200,
        interrupt: 30,
        other: 7,
        lost: 0,
        within: 5,
        threads: vec![],
    });
    e.update(&s);
    e.update(&s);
    let om = e.openmetrics();
    for (kind, n) in [
        ("paired", 2_400),
        ("interrupt", 60),
        ("other", 14),
        ("lost", 0),
    ] {
        assert!(
            om.contains(&format!("llctop_wakeups_total{{kind=\"{kind}\"}} {n}")),
            "{kind}: {om}"
        );
    }
}
