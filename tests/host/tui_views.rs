//! Every TUI view rendered from fixture snapshots into ratatui's TestBackend on 2, 16,
//! 256 (and for the LLC map 512) CPU topologies, with assertions on what is on screen;
//! the too-small terminal; the Knobs view changing a fixture knob through the session;
//! the README key table against the keymap; replay showing what live showed.

use crate::common;

use llctop::run::pipeline::{Tick, Ticker};
use std::time::Duration;

use llctop::collect::{aggregate, empty_snapshot};
use llctop::counters;
use llctop::kroot::KernelRoot;
use llctop::snapshot::{
    Balance, ByCause, ByDistance, CgroupNuma, Counters, DetailEvent, DomainBalance, EventKind,
    EventLog, LbStats, Migrations, NodeNuma, NumaStats, Precision, PreferredKind, ProcessStats,
    ProcessTable, Snapshot, SnapshotTime, SourceStatus,
};
use llctop::topology::{self, Distance, Topology};
use llctop::tui::app::{App, Msg, ViewId};
use llctop::tui::theme::{self, Theme};
use llctop::tui::{keymap, render_to_text};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn fixture_topology(name: &str) -> Topology {
    let root = KernelRoot::new(format!(
        "{}/tests/fixtures/topology/{name}",
        env!("CARGO_MANIFEST_DIR")
    ));
    topology::discover(&root).expect("fixture topology")
}

/// 2 (this VM's shape), 16 (2 nodes × 2 LLCs × 4) and 256 (2-socket EPYC 7763) CPUs.
fn topologies() -> Vec<(&'static str, Topology)> {
    vec![
        ("2cpu", fixture_topology("devvm-2cpu")),
        ("16cpu", topology::synthetic(2, 2, 4)),
        ("256cpu", fixture_topology("epyc-7763-2s")),
    ]
}

fn counters(cycles: u64, instructions: u64, misses: u64) -> Counters {
    let mut c = Counters {
        cycles: Some(cycles),
        instructions: Some(instructions),
        cache_references: Some(misses * 4),
        cache_misses: Some(misses),
        llc_read_misses: Some(misses / 2),
        ..Counters::default()
    };
    counters::derive(&mut c, 1.0);
    c
}

fn event(kind: EventKind, comm: &str, tgid: u32, from: i32, to: i32, allowed: u32) -> DetailEvent {
    DetailEvent {
        kind,
        mono_ns: 500_000_000,
        pid: tgid + 1,
        tgid,
        comm: comm.into(),
        from_cpu: from,
        to_cpu: to,
        distance: (kind == EventKind::Migration).then_some(Distance::CrossLlc),
        cause: (kind == EventKind::Migration).then_some(llctop::snapshot::Cause::Wakeup),
        nr_cpus_allowed: allowed,
        idle_allowed: (kind == EventKind::Placement).then_some(1),
        idle_cpu: (kind == EventKind::Placement).then_some(0),
    }
}

/// A snapshot with every part filled, deterministic in `seq`.
fn fixture_snapshot(topo: &Topology, seq: u64) -> Snapshot {
    let mut s = empty_snapshot(topo);
    s.seq = seq;
    s.time = SnapshotTime {
        unix_ns: 1_795_000_000_000_000_000 + seq * 1_000_000_000,
        mono_ns: (seq + 1) * 1_000_000_000,
        interval_ns: 1_000_000_000,
        missed_ticks: 0,
    };
    let n_cpu = topo.cpus.len() as u32;
    let n_llc = topo.llcs.len();
    for c in s.cpus.iter_mut() {
        // CPU 3 is the busy one the pile-up lands on; the rest mostly idle.
        let busy = if c.cpu == 3 % n_cpu {
            0.97
        } else {
            (c.cpu % 7) as f64 * 0.05
        };
        c.busy = Some(busy);
        c.steal = Some(0.0);
        c.ctx_switches = Some(1000 + c.cpu as u64);
        c.migrations_in = Some(3);
        c.migrations_out = Some(2);
        c.rq_wait_ns = Some(if c.cpu == 3 % n_cpu {
            300_000_000
        } else {
            1_000_000
        });
        c.runnable = Some(if c.cpu == 3 % n_cpu { 4 } else { 0 });
        c.rq_wait_hist = Some(vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 8, 2]);
        c.counters = Some(Box::new(counters(2_000_000_000, 3_000_000_000, 3_000_000)));
    }
    let matrix: Vec<Vec<u64>> = (0..n_llc)
        .map(|a| {
            (0..n_llc)
                .map(|b| if a == b { 50 } else { 7 + seq })
                .collect()
        })
        .collect();
    s.migrations = Some(Migrations {
        precision: Precision::Exact,
        by_distance: ByDistance {
            smt: 10,
            llc: 100,
            cross_llc: 40 + seq,
            cross_node: 7,
        },
        by_cause: Some(ByCause {
            wakeup: 120,
            load_balance: 30,
            active_balance: 2,
            numa: 5,
            other: 0,
        }),
        llc_matrix: matrix,
        unclassified: 0,
        preferred: None,
    });
    let mut per_llc = vec![0u64; n_llc];
    per_llc[0] = 3_000_000_000;
    if n_llc > 1 {
        per_llc[1] = 200_000_000;
    }
    let stream = ProcessStats {
        pid: 4242,
        comm: "stream".into(),
        threads: 4,
        exited: false,
        cpu_time_ns: per_llc.iter().sum(),
        runtime_per_llc_ns: per_llc.clone(),
        preferred_llc: Some(0),
        preferred_kind: PreferredKind::Emulated,
        preferred_hit: Some(0.25),
        llc_spread: if n_llc > 1 { 2 } else { 1 },
        migrations: 30,
        cross_llc_migrations: 12,
        migrations_by_distance: None,
        rq_wait_ns: 250_000_000,
        // Waits summed at switch-in (not settled per task): no runs counted.
        runs: None,
        // Two switch-ins the kernel made without the tracepoint: a lower-bound wait.
        switches_unseen: 2,
        moves_onto_preferred: None,
        moves_off_preferred: None,
        cgroup: Some("/bench".into()),
        sched_ext: None,
        counters: Some(counters(1_000_000_000, 400_000_000, 5_000_000)),
        counters_per_llc: per_llc
            .iter()
            .map(|&r| (r > 0).then(|| counters(r, r / 2, r / 1000)))
            .collect(),
        cache: None,
        cache_group: None,
        no_preference: Vec::new(),
    };
    let pg = ProcessStats {
        pid: 1001,
        comm: "postgres".into(),
        threads: 12,
        cpu_time_ns: 500_000_000,
        runtime_per_llc_ns: vec![500_000_000 / n_llc as u64; n_llc],
        preferred_llc: Some((n_llc - 1) as u32),
        preferred_kind: PreferredKind::Kernel,
        preferred_hit: Some(0.9),
        llc_spread: n_llc as u32,
        migrations: 4,
        cross_llc_migrations: 0,
        rq_wait_ns: 1_000_000,
        cgroup: Some("/db".into()),
        sched_ext: None,
        counters: Some(counters(800_000_000, 1_600_000_000, 100_000)),
        ..ProcessStats::default()
    };
    s.processes = Some(ProcessTable {
        precision: Precision::Exact,
        total: 97,
        rows: vec![stream, pg],
        ..ProcessTable::default()
    });
    let last = (n_cpu - 1) as i32;
    // Four new threads per snapshot, each placed on CPU 3 and first run there.
    let mut events: Vec<DetailEvent> = (0..4u32)
        .flat_map(|i| {
            let cpu = 3 % n_cpu as i32;
            let tid = 5000 + seq as u32 * 4 + i;
            let placed = DetailEvent {
                pid: tid,
                ..event(EventKind::Placement, "stream", 4242, 0, cpu, n_cpu)
            };
            let ran = DetailEvent {
                pid: tid,
                from_cpu: -1,
                ..event(EventKind::FirstRun, "stream", 4242, 0, cpu, n_cpu)
            };
            [placed, ran]
        })
        .collect();
    events.push(event(
        EventKind::Migration,
        "postgres",
        1001,
        0,
        last,
        n_cpu,
    ));
    s.events = Some(EventLog {
        dropped: 0,
        events,
        idle_waits: None,
    });
    let lb = |count| LbStats {
        count,
        balanced: count / 2,
        failed: count / 10,
        gained: count / 5,
        ..LbStats::default()
    };
    s.balance = Some(Balance {
        version: 17,
        domains: vec![
            DomainBalance {
                level: 0,
                name: Some("MC".into()),
                cpus: n_cpu,
                busy: lb(40),
                idle: lb(300),
                newidle: lb(9000 + seq * 100),
                alb_count: 3,
                ttwu_wake_remote: 77,
                ttwu_move_affine: 11,
                ..DomainBalance::default()
            },
            DomainBalance {
                level: 1,
                name: Some("NUMA".into()),
                cpus: n_cpu,
                newidle: lb(500),
                ..DomainBalance::default()
            },
        ],
    });
    s.numa = Some(NumaStats {
        balancing_mode: Some(1),
        vmstat: [
            ("numa_pages_migrated".to_string(), 120),
            ("numa_hint_faults".to_string(), 300),
        ]
        .into_iter()
        .collect(),
        nodes: topo
            .nodes
            .iter()
            .map(|n| NodeNuma {
                node: n.id,
                counters: [
                    ("numa_hit".to_string(), 5000),
                    ("numa_miss".to_string(), 40),
                ]
                .into_iter()
                .collect(),
                mem_total_kb: Some(64 * 1048576),
                mem_free_kb: Some(16 * 1048576),
            })
            .collect(),
        cgroups: vec![CgroupNuma {
            path: "/db".into(),
            numa_pages_migrated: Some(77),
            numa_pte_updates: Some(1000),
            numa_hint_faults: Some(300),
        }],
    });
    s.sources = vec![
        SourceStatus::active(llctop::snapshot::SourceName::Bpf),
        SourceStatus::active(llctop::snapshot::SourceName::ProcfsStat),
        SourceStatus::degraded(
            llctop::snapshot::SourceName::Perf,
            "AMD: generic cache-references/misses count L2, not L3 (MPKI is L2 MPKI)",
        ),
    ];
    aggregate(topo, &mut s);
    s
}

fn themes() -> Vec<Theme> {
    theme::load_all(None).0
}

fn live_app(topo: &Topology, n: u64) -> App {
    live_app_with(topo, n, |_| {})
}

/// [`live_app`] with each snapshot changed by `f` before it arrives.
fn live_app_with(topo: &Topology, n: u64, f: impl Fn(&mut Snapshot)) -> App {
    let mut app = App::live(topo.clone(), Duration::from_secs(1), themes());
    app.host = Some("fixture".into());
    app.kernel = Some("7.2.0".into());
    // The pipeline's step judges each snapshot, as the feed thread's does.
    let mut ticker = Ticker::new(topo, &[]);
    for i in 0..n {
        let mut s = fixture_snapshot(topo, i);
        f(&mut s);
        app.handle(Msg::Tick(Box::new(ticker.tick(s))));
    }
    app
}

fn key(app: &mut App, c: KeyCode) {
    app.handle(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

fn screen(app: &App, w: u16, h: u16) -> String {
    render_to_text(app, w, h).join("\n")
}

fn has(text: &str, needle: &str, what: &str) {
    assert!(
        text.contains(needle),
        "{what}: {needle:?} not on screen:\n{text}"
    );
}

#[test]
fn a_narrow_header_drops_the_kernel_then_the_host_never_the_mode() {
    let topo = topology::synthetic(2, 4, 8);
    let mut app = live_app(&topo, 2);
    app.host = Some("a-rather-long-host-name.example.com".into());
    app.kernel = Some("7.2.13+deb14-amd64".into());
    let line = |app: &App, w: u16| render_to_text(app, w, 30)[0].clone();
    let wide = line(&app, 200);
    assert!(
        wide.contains("a-rather-long-host-name.example.com · 7.2.13+deb14-amd64 · 2 nodes"),
        "{wide}"
    );
    let mid = line(&app, 100);
    assert!(
        mid.contains("a-rather-long-host-name.example.com · 2 nodes"),
        "{mid}"
    );
    assert!(mid.contains("live every 1s"), "{mid}");
    let narrow = line(&app, 60);
    assert!(
        narrow.starts_with("llctop 2 nodes · 8 LLCs · 64 CPUs  live every 1s"),
        "{narrow}"
    );
}

#[test]
fn header_says_what_is_degraded_and_why() {
    for (name, topo) in topologies() {
        let app = live_app(&topo, 3);
        let s = screen(&app, 160, 50);
        has(&s, &topo.summary(), name);
        has(&s, "fixture · 7.2.0", name);
        has(&s, "live every 1s", name);
        has(&s, "perf ◐ AMD: generic…", name);
        has(&s, "i: why (1)", name);
        assert!(!s.contains("count L2, not L3"), "{name}: folded\n{s}");
        has(&s, "1 Overview", name);
        // `i` expands the header: the whole reason on its own line; `i` folds it again.
        let mut app = app;
        key(&mut app, KeyCode::Char('i'));
        let s = screen(&app, 160, 50);
        has(
            &s,
            "perf: AMD: generic cache-references/misses count L2, not L3",
            name,
        );
        has(&s, "i: fold", name);
        key(&mut app, KeyCode::Char('i'));
        has(&screen(&app, 160, 50), "i: why (1)", name);
        // Too narrow for the reasons: the marks alone, and the key still said.
        let s = screen(&app, 60, 24);
        has(&s, "perf ◐  i: why (1)", name);
    }
}

/// Help scrolls to its last row on a small terminal; `?` and Esc go back to the view it
/// was opened from; a status message said on one view does not replace another view's
/// key hints.
#[test]
fn help_scrolls_to_its_last_row_and_goes_back() {
    let topo = topology::synthetic(2, 2, 4);
    let mut app = live_app(&topo, 3);
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('?'));
    let last = "try the selected";
    for (w, h) in [(80, 24), (160, 45), (60, 16)] {
        let s = screen(&app, w, h);
        has(&s, "Help — keys 1–", "top");
        assert!(!s.contains(last), "{w}×{h}: the last row is below\n{s}");
        for _ in 0..3 {
            key(&mut app, KeyCode::PageDown);
            screen(&app, w, h);
        }
        let s = screen(&app, w, h);
        has(&s, last, &format!("{w}×{h}: scrolled to the end"));
        has(&s, "quit, like q", &format!("{w}×{h}: the very last row"));
        key(&mut app, KeyCode::Up);
        let up = screen(&app, w, h);
        assert_ne!(up, s, "{w}×{h}: one up moves at once");
        key(&mut app, KeyCode::PageUp);
        key(&mut app, KeyCode::PageUp);
        key(&mut app, KeyCode::PageUp);
    }
    key(&mut app, KeyCode::Char('?'));
    assert_eq!(app.view, llctop::tui::app::ViewId::Processes, "? goes back");
    key(&mut app, KeyCode::Char('7'));
    key(&mut app, KeyCode::F(1));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.view, llctop::tui::app::ViewId::Knobs, "Esc goes back");
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Char('s'));
    has(&screen(&app, 120, 30), "sorted by", "said on Processes");
    key(&mut app, KeyCode::Char('7'));
    let s = screen(&app, 120, 30);
    assert!(!s.contains("sorted by"), "not on Knobs\n{s}");
    has(&s, "q quit", "Knobs shows its key hints");
}

#[test]
fn overview_shows_every_llc_with_cells_then_summaries() {
    for (name, topo) in topologies() {
        let app = live_app(&topo, 3);
        let s = screen(&app, 160, 50);
        has(&s, "node 0", name);
        let last = topo.llcs.len() - 1;
        has(&s, &format!("LLC {last}"), name);
        // CPU 3's cell (or CPU 1 on 2 CPUs) is hot with run-queue wait.
        let hot = 3 % topo.cpus.len();
        has(&s, &format!("{hot:>3}  97%*"), name);
        has(&s, "wait p50", name);
        has(&s, "MPKI 1.0", name);
    }
    // 2 CPUs leave room for the per-CPU table.
    let topo = fixture_topology("devvm-2cpu");
    let s = screen(&live_app(&topo, 2), 120, 40);
    has(&s, "STEAL", "2cpu table");
    has(&s, "300.0ms", "2cpu rq wait/s of cpu1");

    // 256 CPUs at 80×24 and 512 at 100×30: one summary line per LLC.
    let epyc = fixture_topology("epyc-7763-2s");
    let s = screen(&live_app(&epyc, 2), 80, 24);
    has(&s, "n0 LLC 0", "256 summary");
    assert!(!s.contains("97%*"), "no cells in summary mode");
    let big = topology::synthetic(4, 16, 8);
    assert_eq!(big.cpus.len(), 512);
    let s = screen(&live_app(&big, 2), 180, 45);
    has(&s, "n3 LLC 63", "512 summary in columns");
    let s = screen(&live_app(&big, 2), 200, 80);
    has(&s, "LLC 63", "512 at a tall terminal");
    // Too many LLCs for full lines: compact columns, and what does not fit is counted.
    let s = screen(&live_app(&big, 2), 80, 24);
    has(&s, "n0 L0 ", "512 compact");
    has(&s, "more LLCs: enlarge the terminal", "512 in 80×24");
}

#[test]
fn migrations_view_rates_matrix_and_recent() {
    for (name, topo) in topologies() {
        let mut app = live_app(&topo, 5);
        key(&mut app, KeyCode::Char('2'));
        let s = screen(&app, 160, 50);
        has(&s, "Migrations/s by distance and cause — exact", name);
        has(&s, "xllc", name);
        has(&s, "wakeup", name);
        has(&s, "  44/s", name); // cross_llc of seq 4
        has(&s, "LLC × LLC migrations/s", name);
        has(&s, "postgres", name);
        has(&s, "allowed", name);
        if topo.llcs.len() > 1 && topo.llcs.len() <= 16 {
            has(&s, "→1", name);
            has(&s, "11", name); // off-diagonal of seq 4
        }
    }
}

#[test]
fn processes_view_sorts_filters_and_drills_into_a_pile_up() {
    for (name, topo) in topologies() {
        let mut app = live_app(&topo, 3);
        key(&mut app, KeyCode::Char('3'));
        let s = screen(&app, 160, 50);
        has(&s, "2 shown of 97", name);
        has(&s, "CPU%▼", name);
        has(&s, "stream", name);
        has(&s, "postgres", name);
        has(&s, "0e", name); // emulated preference
        has(&s, &format!("{}k", topo.llcs.len() - 1), name); // the kernel's
        has(&s, "25%", name);
        has(&s, "0.40", name); // stream IPC
        has(&s, "≥250.0ms", name); // stream's wait, a lower bound
        // By name, then reversed.
        key(&mut app, KeyCode::Char('s'));
        assert_eq!(app.process_rows()[0].comm, "postgres", "{name}: by COMM");
        has(&screen(&app, 160, 50), "COMM▲", name);
        key(&mut app, KeyCode::Char('S'));
        assert_eq!(app.process_rows()[0].comm, "stream", "{name}: reversed");
        has(&screen(&app, 160, 50), "COMM▼", name);
        key(&mut app, KeyCode::Char('S'));
        // Sort by IPC: lowest first; filter; drill.
        for _ in 0..7 {
            key(&mut app, KeyCode::Char('s'));
        }
        let rows = app.process_rows();
        assert_eq!(rows[0].comm, "stream", "{name}: lowest IPC first");
        key(&mut app, KeyCode::Char('/'));
        for c in "post".chars() {
            key(&mut app, KeyCode::Char(c));
        }
        key(&mut app, KeyCode::Enter);
        let s = screen(&app, 160, 50);
        has(&s, "1 shown of 97", name);
        assert!(!s.contains("stream "), "{name}: filtered out");
        key(&mut app, KeyCode::Esc);
        app.proc_sel = 0;
        app.sort = llctop::tui::app::SortKey::Cpu;
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.drill, Some(4242));
        let s = screen(&app, 160, 50);
        has(&s, "Process 4242", name);
        has(&s, "runtime per LLC", name);
        has(&s, "← preferred", name);
        has(&s, "IPC 0.40", name);
        has(
            &s,
            "wait ≥250.0ms/s (2 switch-ins unseen: waits missing)",
            name,
        );
        has(
            &s,
            &format!(
                "pile-up: 12 threads of 4242 (stream) placed on CPU {} while 1 allowed CPU sat idle",
                3 % topo.cpus.len()
            ),
            name,
        );
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.drill, None);
    }
}

#[test]
fn cache_balance_numa_and_help_views() {
    for (name, topo) in topologies() {
        let mut app = live_app(&topo, 3);
        key(&mut app, KeyCode::Char('4'));
        let s = screen(&app, 160, 50);
        has(&s, "Hardware counters per LLC", name);
        has(&s, "1.50", name); // IPC
        has(&s, "stream", name);
        key(&mut app, KeyCode::Char('5'));
        let s = screen(&app, 200, 50);
        has(&s, "/proc/schedstat v17", name);
        has(&s, "newidle lb", name);
        has(&s, "9.2k", name); // newidle count of seq 2
        has(&s, "NUMA", name);
        key(&mut app, KeyCode::Char('6'));
        let s = screen(&app, 160, 50);
        has(&s, "NUMA balancing: 1 (normal)", name);
        has(&s, "48.0 GiB", name);
        has(&s, "numa_pages_migrated 120", name);
        has(&s, "/db", name);
        key(&mut app, KeyCode::Char('?'));
        let s = screen(&app, 160, 50);
        has(&s, "q / F10", name);
        has(&s, "start / stop recording", name);
        has(&s, "colorblind", name);
    }
}

/// `/` searches every list (each view its own search), the process table keeps its key
/// columns whole at 80×24 by leaving out the least needed, and n / N step through the
/// markers.
#[test]
fn every_list_searches_and_80x24_keeps_the_key_columns() {
    let topo = topology::synthetic(2, 2, 4);
    let mut app = live_app(&topo, 3);
    key(&mut app, KeyCode::Char('3'));
    let s = screen(&app, 80, 24);
    for col in [
        "PID", "COMM", "CPU%", "xLLC/s", "WAIT/s", "postgres", "250.0ms",
    ] {
        has(&s, col, "80×24");
    }
    assert!(
        !s.contains("CGROUP"),
        "the least needed column goes first:\n{s}"
    );
    let wide = screen(&app, 200, 40);
    has(&wide, "CGROUP", "200 columns: every column");
    // Findings: search by seed.
    key(&mut app, KeyCode::Char('8'));
    let all = app.finding_rows().len();
    assert!(all >= 2, "{all}");
    key(&mut app, KeyCode::Char('/'));
    for c in "001".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let rows = app.finding_rows();
    assert!(
        !rows.is_empty() && rows.len() < all,
        "{} of {all}",
        rows.len()
    );
    has(
        &screen(&app, 160, 45),
        "matching \"001\"",
        "findings search",
    );
    // Help: its own search; the findings one stays.
    key(&mut app, KeyCode::Char('9'));
    key(&mut app, KeyCode::Char('/'));
    for c in "marker".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let s = screen(&app, 160, 45);
    has(&s, "drop a marker", "help search");
    has(&s, "to the next marker", "help search");
    assert!(!s.contains("next theme"), "help filtered:\n{s}");
    key(&mut app, KeyCode::Esc);
    has(
        &screen(&app, 160, 45),
        "next theme",
        "Esc clears the search",
    );
    key(&mut app, KeyCode::Char('8'));
    assert!(
        app.finding_rows().len() < all,
        "the Findings search is its own"
    );
    // Overview has no list: `/` says where it works.
    key(&mut app, KeyCode::Char('1'));
    key(&mut app, KeyCode::Char('/'));
    assert!(app.input.is_none());
    has(&screen(&app, 160, 45), "/ searches the lists", "overview");
}

#[test]
fn markers_are_one_key_away_in_history() {
    let topo = topology::synthetic(1, 2, 2);
    let mut app = live_app(&topo, 8);
    for (after, label) in [(2u64, "A"), (5, "B")] {
        let s = app.snaps.unpack(after as usize).expect("snapshot");
        app.markers.push(llctop::record::Marker {
            after_seq: Some(after),
            unix_ns: s.time.unix_ns,
            mono_ns: s.time.mono_ns + 1,
            label: label.into(),
        });
    }
    app.pos = Some(0);
    app.paused = true;
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.current().map(|s| s.seq), Some(3), "after A");
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.current().map(|s| s.seq), Some(6), "after B");
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.current().map(|s| s.seq), Some(6), "none after B");
    has(&screen(&app, 120, 30), "no marker after", "said");
    key(&mut app, KeyCode::Char('N'));
    assert_eq!(app.current().map(|s| s.seq), Some(3), "back to A");
    key(&mut app, KeyCode::Char('N'));
    assert_eq!(app.current().map(|s| s.seq), Some(3), "none before A");
}

#[test]
fn views_say_why_when_a_source_is_missing() {
    let topo = topology::synthetic(1, 2, 2);
    let mut app = App::live(topo.clone(), Duration::from_secs(1), themes());
    let mut s = empty_snapshot(&topo);
    s.time.interval_ns = 1_000_000_000;
    s.sources = vec![
        SourceStatus::absent(
            llctop::snapshot::SourceName::Perf,
            "hardware counters unsupported: no hardware PMU for this event (common in VMs)",
        ),
        SourceStatus::absent(
            llctop::snapshot::SourceName::ProcfsSchedstat,
            "schedstat unavailable (CONFIG_SCHEDSTATS off: /proc/schedstat does not exist)",
        ),
    ];
    app.handle(Msg::Tick(Box::new(Tick::of(s))));
    for (k, want) in [
        ('4', "no hardware PMU"),
        ('5', "CONFIG_SCHEDSTATS off"),
        ('2', "no source counted migrations"),
    ] {
        key(&mut app, KeyCode::Char(k));
        let text = screen(&app, 120, 40);
        has(&text, "not available", &format!("view {k}"));
        has(&text, want, &format!("view {k}"));
    }
    // Before any snapshot: a waiting line, not an empty screen.
    let app = App::live(topo, Duration::from_secs(1), themes());
    has(
        &screen(&app, 100, 30),
        "waiting for the first snapshot",
        "start",
    );
}

#[test]
fn tiny_terminal_says_so() {
    let app = live_app(&topology::synthetic(2, 2, 4), 2);
    for v in ViewId::ALL {
        let mut a = live_app(&topology::synthetic(2, 2, 4), 2);
        a.view = v;
        let s = screen(&a, 40, 12);
        has(&s, "terminal too small", v.title());
        has(&s, "40×12", v.title());
    }
    let s = screen(&app, 60, 16);
    assert!(!s.contains("too small"), "60×16 is enough");
}

#[test]
fn themes_and_no_color_render() {
    let topo = topology::synthetic(2, 2, 4);
    let mut app = live_app(&topo, 2);
    let names: Vec<String> = app.themes.iter().map(|t| t.name.clone()).collect();
    for _ in &names {
        key(&mut app, KeyCode::Char('t'));
        has(&screen(&app, 120, 40), "LLC 3", &app.theme().name.clone());
    }
    app.themes = vec![Theme::mono()];
    app.theme = 0;
    let backend = ratatui::backend::TestBackend::new(120, 40);
    let mut term = ratatui::Terminal::new(backend).expect("terminal");
    term.draw(|f| llctop::tui::views::draw(f, &app))
        .expect("draw");
    let buf = term.backend().buffer();
    let colored = buf
        .content()
        .iter()
        .filter(|c| c.fg != ratatui::style::Color::Reset || c.bg != ratatui::style::Color::Reset)
        .count();
    assert_eq!(colored, 0, "NO_COLOR: no colour anywhere");
}

fn knob_fixture() -> (tempfile::TempDir, KernelRoot, llctop::knobs::Session) {
    let (dir, root, topo) = common::writable_root("qemu-lab-2s2llc");
    let d = dir.path();
    common::put(
        d,
        "proc/self/mountinfo",
        "32 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n",
    );
    common::put(
        d,
        "sys/kernel/debug/sched/features",
        "PLACE_LAG TTWU_QUEUE \n",
    );
    common::put(d, "proc/sys/kernel/numa_balancing", "1\n");
    let s = llctop::knobs::Session::new(
        llctop::knobs::Registry::discover(&root, Some(&topo)),
        llctop::knobs::journal::Journal::new(d.join("journal.json")),
        llctop::knobs::session::Options::default(),
    );
    (dir, root, s)
}

#[test]
fn knobs_view_toggles_edits_undoes_and_shows_read_back() {
    let (dir, root, session) = knob_fixture();
    let topo = topology::discover(&root).expect("topology");
    let mut app = live_app(&topo, 2);
    app.session = Some(session);
    app.profiles = llctop::knobs::profile::load_all(None).0;
    key(&mut app, KeyCode::Char('7'));
    let s = screen(&app, 160, 50);
    has(&s, "feature.TTWU_QUEUE", "knobs");
    has(&s, "writable", "knobs");
    let i = app
        .knobs()
        .iter()
        .position(|k| k.id == "feature.TTWU_QUEUE")
        .expect("listed");
    for _ in 0..i {
        key(&mut app, KeyCode::Down);
    }
    key(&mut app, KeyCode::Char('x'));
    let features = dir.path().join("sys/kernel/debug/sched/features");
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("feature.TTWU_QUEUE: on → off"), "{status}");
    assert!(status.contains("wrote \"NO_TTWU_QUEUE\""), "{status}");
    let s = screen(&app, 160, 50);
    has(&s, "off *", "changed value marked");
    has(&s, "1 changed (restored on exit)", "knobs");
    has(&s, "read back", "log");
    // Enter edits numa_balancing: an invalid value is refused, nothing written.
    let j = app
        .knobs()
        .iter()
        .position(|k| k.id == "numa_balancing")
        .expect("listed");
    app.knob_sel = j;
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Backspace);
    for c in "9".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("invalid value"), "{status}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("proc/sys/kernel/numa_balancing")).expect("read"),
        "1\n"
    );
    key(&mut app, KeyCode::Char('u'));
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("undid feature.TTWU_QUEUE"), "{status}");
    assert!(
        std::fs::read_to_string(&features)
            .expect("read")
            .contains("TTWU_QUEUE")
            && !std::fs::read_to_string(&features)
                .expect("read")
                .contains("NO_TTWU_QUEUE")
    );
    // The profile chooser opens and Esc closes it.
    key(&mut app, KeyCode::Char('p'));
    has(&screen(&app, 160, 50), "Apply a profile", "picker");
    key(&mut app, KeyCode::Esc);
    assert!(app.profile_pick.is_none());
    assert_eq!(app.knob_log.len(), 2, "set and undo logged");
}

#[test]
fn readme_key_table_is_generated_from_the_keymap() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let (start, end) = ("<!-- keys:start -->\n", "<!-- keys:end -->");
    let a = readme
        .find(start)
        .expect("README has the keys:start marker")
        + start.len();
    let b = readme.find(end).expect("README has the keys:end marker");
    assert_eq!(
        &readme[a..b],
        keymap::markdown_table(),
        "README key table differs from the keymap: regenerate it with `llctop keys`"
    );
}

/// Live renders of each snapshot while the TUI records, then the replay of that file:
/// the same numbers on every view for the same snapshot.
#[test]
fn replay_shows_what_live_showed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = topology::synthetic(2, 2, 4);
    let mut live = App::live(topo.clone(), Duration::from_secs(1), themes());
    live.record_dir = dir.path().to_path_buf();
    key(&mut live, KeyCode::Char('r'));
    assert!(live.recording.is_some(), "{:?}", live.status);
    let views = ['1', '2', '3', '4', '5', '6', '8'];
    let mut seen: Vec<Vec<Vec<String>>> = Vec::new();
    let mut ticker = Ticker::new(&topo, &[]);
    for i in 0..4 {
        live.handle(Msg::Tick(Box::new(ticker.tick(fixture_snapshot(&topo, i)))));
        let mut per_view = Vec::new();
        for v in views {
            key(&mut live, KeyCode::Char(v));
            per_view.push(body(&render_to_text(&live, 160, 50)));
        }
        seen.push(per_view);
        if i == 1 {
            key(&mut live, KeyCode::Char('m'));
        }
    }
    key(&mut live, KeyCode::Char('r'));
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".json.gz"))
        .expect("a recording");
    let rec = llctop::record::reader::open(&file).expect("recording");
    assert_eq!(rec.snapshots.len(), 4);
    assert_eq!(rec.markers.len(), 1);
    // The findings live judged went into the file as they fired; the report's, recomputed
    // from the snapshots, agree with them.
    let fired: Vec<_> = rec
        .findings
        .iter()
        .map(|l| (l.seq, l.finding.kind, l.finding.key.clone()))
        .collect();
    let live_fired: Vec<_> = live
        .advisor
        .episodes
        .iter()
        .map(|e| (e.fired_seq, e.kind(), e.updates[0].key.clone()))
        .collect();
    assert!(!fired.is_empty());
    assert_eq!(fired, live_fired);
    let report = llctop::record::report::render(&rec);
    has(&report, "Findings (", "report");
    assert!(!report.contains("differ from these"), "{report}");
    let mut replay = App::replay(rec, "x", themes());
    key(&mut replay, KeyCode::Char(' '));
    for (i, per_view) in seen.iter().enumerate() {
        replay.pos = Some(i);
        for (v, want) in views.iter().zip(per_view) {
            key(&mut replay, KeyCode::Char(*v));
            // One line taller: the replay header adds the timeline.
            let got = body(&render_to_text(&replay, 160, 51));
            assert_eq!(&got, want, "snapshot {i}, view {v}");
        }
    }
    let s = screen(&replay, 160, 50);
    has(&s, "REPLAY 4/4", "replay header");
    has(&s, "timeline [", "timeline");
    has(&s, "M", "marker on the timeline");
}

/// The screen from the view tabs down (the header differs: live vs replay).
fn body(lines: &[String]) -> Vec<String> {
    let start = lines
        .iter()
        .position(|l| l.contains("1 Overview"))
        .unwrap_or(0);
    // The last line is the status line (recording messages differ).
    lines[start..lines.len() - 1].to_vec()
}

#[test]
fn knobs_view_runs_an_ab_experiment_to_its_verdict_and_stops_on_a() {
    let (dir, root, session) = knob_fixture();
    let topo = topology::discover(&root).expect("topology");
    let mut app = live_app(&topo, 2);
    app.session = Some(session);
    key(&mut app, KeyCode::Char('7'));
    app.knob_sel = app
        .knobs()
        .iter()
        .position(|k| k.id == "feature.TTWU_QUEUE")
        .expect("listed");
    let features = dir.path().join("sys/kernel/debug/sched/features");
    let feat = || std::fs::read_to_string(&features).expect("read");
    let feed = |app: &mut App, from: u64, n: u64| {
        for i in from..from + n {
            app.handle(Msg::Tick(Box::new(Tick::of(fixture_snapshot(&topo, i)))));
        }
    };
    // a asks for B, offering the other value of an on/off knob.
    key(&mut app, KeyCode::Char('a'));
    has(
        &screen(&app, 160, 50),
        "A/B feature.TTWU_QUEUE: now vs off",
        "prompt",
    );
    key(&mut app, KeyCode::Enter);
    let status = app.status.clone().expect("status").text;
    assert!(
        status.contains("A/B feature.TTWU_QUEUE: on vs off"),
        "{status}"
    );
    // Window 1 (A): 2 s warm-up + 10 s measured, then B is put in place.
    feed(&mut app, 2, 11);
    assert!(!feat().contains("NO_TTWU_QUEUE"), "still A");
    feed(&mut app, 13, 1);
    assert!(feat().contains("NO_TTWU_QUEUE"), "window 2 runs B");
    let s = screen(&app, 160, 50);
    has(&s, "A/B experiment", "panel");
    has(&s, "window 2/12: B = off", "panel");
    // All twelve windows: the verdict, and A (the value before) in place again.
    feed(&mut app, 14, 12 * 12 - 12);
    let st = app.experiment.as_ref().expect("experiment");
    let v = st.verdict.as_ref().expect("verdict");
    assert_eq!((v.windows, v.planned), (12, 12));
    assert!(!feat().contains("NO_TTWU_QUEUE"), "ends on A");
    let s = screen(&app, 160, 50);
    has(&s, "12 of 12 windows", "verdict");
    // The fixture's snapshots are the same under both values: nothing differs.
    assert!(
        v.rows.iter().all(|r| r.verdict.starts_with("no ")),
        "{:?}",
        v.rows
    );
    // Again, stopped with a while B runs: A is put back.
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Enter);
    feed(&mut app, 200, 13);
    assert!(feat().contains("NO_TTWU_QUEUE"));
    key(&mut app, KeyCode::Char('a'));
    assert!(!feat().contains("NO_TTWU_QUEUE"), "stopped: A back");
    let v = app.experiment.as_ref().and_then(|e| e.verdict.clone());
    assert_eq!(
        v.map(|v| (v.windows, v.planned)),
        Some((1, 12)),
        "stopped after one window"
    );
}

/// The fixture snapshots hold NUMA balancing at work (300 hinting faults/s, none local):
/// the advisor's finding shows in the header and the Findings view with its evidence,
/// and trying it opens the A/B prompt for numa_balancing with B filled in — nothing is
/// written until the operator accepts it there.
#[test]
fn findings_view_shows_the_evidence_and_opens_the_suggested_experiment() {
    let (dir, root, session) = knob_fixture();
    let topo = topology::discover(&root).expect("topology");
    let mut app = live_app(&topo, 3);
    app.session = Some(session);
    let s = screen(&app, 160, 50);
    has(
        &s,
        "⚑ 3 findings WARNING",
        "findings line in the header: the worst",
    );
    key(&mut app, KeyCode::Char('8'));
    let s = screen(&app, 160, 50);
    has(&s, "Findings — ", "the view");
    has(
        &s,
        "NUMA balancing / remote memory",
        "every finding in the view",
    );
    let i = app
        .findings()
        .iter()
        .position(|e| e.kind() == llctop::findings::Kind::Numa)
        .expect("NUMA finding held");
    for _ in 0..i {
        key(&mut app, KeyCode::Down);
    }
    assert_eq!(app.finding_sel, i);
    let s = screen(&app, 160, 50);
    has(&s, "seed 003 per-cgroup NUMA balancing", "its seed");
    has(&s, "sum of numa/vmstat/numa_hint_faults", "a fact's cite");
    has(
        &s,
        "try: llctop ab --profile numa-balancing-off",
        "the suggestion",
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view, ViewId::Knobs);
    let input = app.input.clone().expect("the A/B prompt is open");
    assert_eq!(
        (input.kind, input.text.as_str()),
        (
            llctop::tui::app::InputKind::Ab("numa_balancing".into()),
            "0"
        )
    );
    has(
        &screen(&app, 160, 50),
        "A/B numa_balancing: now vs 0",
        "prompt",
    );
    key(&mut app, KeyCode::Esc);
    assert!(app.experiment.is_none());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("proc/sys/kernel/numa_balancing")).expect("read"),
        "1\n",
        "the advisor never writes"
    );
    // Replay judges the recording whole and finds the same episodes as live did.
    let header =
        llctop::record::Header::new((None, None), Duration::from_secs(1), topo.clone(), vec![]);
    let all = (0..app.snaps.len()).map(|i| app.snaps.unpack(i).expect("snapshot"));
    let rec = llctop::record::reader::Recording::of(header, all.collect());
    let mut replay = App::replay(rec, "r.jsonl", themes());
    assert_eq!(replay.advisor.episodes, app.advisor.episodes);
    key(&mut replay, KeyCode::End);
    key(&mut replay, KeyCode::Char('8'));
    replay.finding_sel = i;
    key(&mut replay, KeyCode::Enter);
    let status = replay.status.clone().expect("status").text;
    assert!(
        status.contains("replay: knobs cannot be changed; try: llctop ab"),
        "{status}"
    );
}

/// The Overview answers "is work cache-local?" on any machine: below the map, a system
/// line, moves per second by distance (cross-LLC marked impossible on one LLC), the
/// preferred-LLC hit, busy and wait history graphs on one shared scale with a time axis,
/// and the top movers — from 1 CPU to 512, at 80×24 and larger.
#[test]
fn overview_answers_whether_work_stays_cache_local_on_any_machine() {
    let shapes = [
        ("1cpu", topology::synthetic(1, 1, 1)),
        ("2cpu", fixture_topology("devvm-2cpu")),
        ("4cpu", topology::synthetic(1, 2, 2)),
        ("16cpu", topology::synthetic(2, 2, 4)),
        ("256cpu", fixture_topology("epyc-7763-2s")),
        ("512cpu", topology::synthetic(2, 32, 8)),
    ];
    for (name, topo) in shapes {
        let app = live_app_with(&topo, 5, |s| {
            s.system.load = Some([0.52, 0.40, 0.33]);
            s.system.user = Some(0.12);
            s.system.system = Some(0.03);
        });
        for (w, h) in [(80, 24), (160, 45), (250, 70)] {
            let s = screen(&app, w, h);
            let what = format!("{name} {w}×{h}");
            has(&s, "LLC map", &what);
            let panel = s.contains("Is work cache-local?");
            if topo.cpus.len() <= 16 || h >= 70 {
                assert!(panel, "{what}: the panel\n{s}");
            }
            if !panel {
                continue;
            }
            has(&s, "load 0.52 0.40 0.33", &what);
            has(&s, "user 12%", &what);
            has(&s, "moves/s", &what);
            has(&s, "preferred-LLC hit", &what);
            if topo.llcs.len() == 1 {
                has(&s, "xllc n/a", &what);
                has(&s, "one LLC: no cross-LLC move possible", &what);
            } else {
                assert!(!s.contains("xllc n/a"), "{what}");
            }
            // Graphs and movers where the map leaves them room: every machine at 250×70,
            // the small ones at 80×24 too.
            if h < 70 && topo.cpus.len() > 4 {
                continue;
            }
            has(&s, "now", &what); // the time axis
            has(&s, "busy % per", &what);
            has(&s, "run-queue wait per", &what);
            if topo.llcs.len() == 1 {
                has(&s, "top movers (one LLC: by migrations)", &what);
            } else {
                has(&s, "top cross-LLC movers", &what);
            }
            if topo.llcs.len() > 8 {
                has(&s, "busy % per node", &what);
            }
        }
    }
}

/// Migrations at 80×24: every rate row (distances and causes) whole, each sparkline with
/// its latest value and its scale (the largest value drawn) and the time it spans.
#[test]
fn migrations_keep_every_rate_row_with_its_scale_at_80x24() {
    let topo = topology::synthetic(2, 2, 4);
    let mut app = live_app(&topo, 6);
    key(&mut app, KeyCode::Char('2'));
    for (w, h) in [(80, 24), (160, 45)] {
        let s = screen(&app, w, h);
        for d in llctop::topology::Distance::ALL {
            has(&s, &format!("│{:<15}", d.label()), &format!("{w}×{h}"));
        }
        for c in llctop::snapshot::Cause::ALL {
            has(&s, &format!("│{:<15}", c.label()), &format!("{w}×{h}"));
        }
        has(&s, "max", &format!("{w}×{h}: the scale"));
        has(&s, "s · now →", &format!("{w}×{h}: the span"));
    }
}

fn click(app: &mut App, x: u16, y: u16) {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    app.handle(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    }));
}

/// The mouse: a click on a tab shows its view; on a row selects it; on the selected row
/// does what Enter does (Processes: drill in); the wheel moves the selection.
#[test]
fn mouse_clicks_tabs_and_rows() {
    let topo = topology::synthetic(2, 2, 4);
    let mut app = live_app(&topo, 3);
    let s = render_to_text(&app, 160, 45);
    let tabs_y = s
        .iter()
        .position(|l| l.contains(" 3 Processes "))
        .expect("tabs") as u16;
    let x = s[tabs_y as usize].find(" 3 Processes ").expect("tab") as u16;
    click(&mut app, x + 3, tabs_y);
    assert_eq!(app.view, llctop::tui::app::ViewId::Processes);
    let s = render_to_text(&app, 160, 45);
    let row = s.iter().position(|l| l.contains("postgres")).expect("row") as u16;
    click(&mut app, 10, row);
    let pid = app.process_rows()[app.proc_sel].pid;
    assert_eq!(pid, 1001, "the clicked row is selected");
    render_to_text(&app, 160, 45);
    click(&mut app, 10, row);
    assert_eq!(
        app.drill,
        Some(1001),
        "a click on the selected row drills in"
    );
    key(&mut app, KeyCode::Esc);
    render_to_text(&app, 160, 45);
    use ratatui::crossterm::event::{MouseEvent, MouseEventKind};
    app.handle(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: 10,
        row,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.proc_sel, 0, "the wheel moves the selection");
    // Help: what the view it was opened from shows, from docs/metrics.md.
    key(&mut app, KeyCode::Char('?'));
    let s = screen(&app, 160, 45);
    has(&s, "Processes:", "help for the view");
    has(
        &s,
        "CPU% — cpu_time_ns / interval",
        "a definition from metrics.md",
    );
}

/// Knobs at 80×24: ten rows of the list (the change log waits for a taller terminal and
/// says so), cells cut with `…`, and `/` finds a knob by name.
#[test]
fn knobs_list_gets_the_rows_at_80x24_and_searches() {
    let (_dir, root, session) = knob_fixture();
    let topo = topology::discover(&root).expect("topology");
    let mut app = live_app(&topo, 2);
    app.session = Some(session);
    key(&mut app, KeyCode::Char('7'));
    let s = screen(&app, 80, 24);
    let rows = s
        .lines()
        .filter(|l| {
            l.starts_with('│')
                && (l.contains("writable") || l.contains("read-only") || l.contains("…"))
        })
        .count();
    assert!(
        rows >= 8.min(app.knobs().len()),
        "{rows} knob rows at 80×24:\n{s}"
    );
    has(&s, "log: taller terminal", "80×24");
    assert!(!screen(&app, 160, 50).contains("log: taller"), "160×50");
    key(&mut app, KeyCode::Char('/'));
    for c in "numa_bal".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let ids: Vec<&str> = app.knob_rows().iter().map(|k| k.id.as_str()).collect();
    assert!(ids.contains(&"numa_balancing"), "{ids:?}");
    assert!(!ids.contains(&"feature.TTWU_QUEUE"), "{ids:?}");
    has(
        &screen(&app, 120, 30),
        "matching \"numa_bal\"",
        "search in the title",
    );
}

/// Every view at 80×24, 160×45 and 250×70 on 2, 16 and 256 CPUs: drawn, its title
/// whole, units on the columns that have them.
#[test]
fn every_view_at_every_size() {
    for (name, topo) in topologies() {
        let mut app = live_app(&topo, 3);
        for (v, title) in [
            ('1', "LLC map"),
            ('2', "Migrations/s"),
            ('3', "Processes —"),
            ('4', "Hardware counters"),
            ('5', "Load balancing"),
            ('6', "NUMA"),
            ('7', "Knobs"),
            ('8', "Findings —"),
            ('9', "Help —"),
        ] {
            key(&mut app, KeyCode::Char(v));
            for (w, h) in [(80, 24), (160, 45), (250, 70)] {
                let s = screen(&app, w, h);
                let what = format!("{name} view {v} {w}×{h}");
                has(&s, title, &what);
                if std::env::var_os("SHOW").is_some() {
                    println!("{what}\n{s}");
                }
                match v {
                    '3' => {
                        for u in ["CPU%", "xLLC/s", "WAIT/s"] {
                            has(&s, u, &what);
                        }
                    }
                    '2' => has(&s, "/s", &what),
                    '5' => {
                        for c in ["busy lb", "idle lb", "newidle lb"] {
                            has(&s, c, &what);
                        }
                    }
                    '6' => has(&s, "MEM TOTAL", &what),
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn the_scheduler_in_charge_is_in_the_header_and_each_process_class_in_processes() {
    let topo = fixture_topology("qemu-lab-2s2llc");
    // A kernel without sched_ext: neither is shown.
    let mut app = live_app(&topo, 2);
    let s = screen(&app, 160, 50);
    assert!(!s.contains("sched "), "{s}");
    key(&mut app, KeyCode::Char('3'));
    assert!(!screen(&app, 160, 50).contains("CLS"));
    let mut app = live_app_with(&topo, 2, |s| {
        s.sched_ext = Some(llctop::snapshot::SchedExt {
            state: "enabled".into(),
            ops: Some("bpfland_1.1.4_x86_64_unknown_linux_gnu".into()),
            switch_all: Some(true),
            ..Default::default()
        });
        if let Some(t) = s.processes.as_mut() {
            t.rows[0].sched_ext = Some(true);
            t.rows[1].sched_ext = Some(false);
        }
    });
    has(
        &screen(&app, 160, 50),
        "sched scx bpfland (all tasks)",
        "header",
    );
    key(&mut app, KeyCode::Char('3'));
    let s = screen(&app, 160, 50);
    has(&s, "CLS", "processes");
    has(&s, " ext ", "processes");
    has(&s, " fair ", "processes");
}

#[test]
fn whether_cache_aware_scheduling_runs_is_in_the_header() {
    let topo = fixture_topology("qemu-lab-2s2llc");
    // A kernel without it: nothing said.
    let app = live_app(&topo, 2);
    assert!(!screen(&app, 160, 50).contains("cache-aware"));
    for (enabled, multi, said) in [
        (true, true, "cache-aware on"),
        (false, true, "cache-aware off"),
        (true, false, "cache-aware enabled, not active"),
    ] {
        let app = live_app_with(&topo, 2, |s| {
            s.cache_aware = Some(llctop::snapshot::CacheAware {
                enabled,
                multi_llc: multi,
                partitions: vec!["0-1".into()],
                ..Default::default()
            });
        });
        has(&screen(&app, 160, 50), said, "header");
    }
}

/// A process the kernel gives no preferred LLC (7.2+): the PREF column codes the first
/// reason, the drill-down says them all with the cache group's figures.
#[test]
fn why_no_preference_is_in_processes_and_the_drill_down() {
    let topo = fixture_topology("qemu-lab-2s2llc");
    let mut app = live_app_with(&topo, 2, |s| {
        s.numa = Some(llctop::snapshot::NumaStats {
            balancing_mode: Some(0),
            ..Default::default()
        });
        if let Some(t) = s.processes.as_mut() {
            let r = &mut t.rows[0];
            r.preferred_llc = None;
            r.preferred_kind = PreferredKind::Kernel;
            r.cache_group = Some(llctop::snapshot::CacheGroup {
                present: true,
                nr_running_avg: 3,
                footprint_bytes: 0,
                epochs_since_scan: 1,
                cpu: None,
                numa_node: None,
            });
            r.no_preference = vec![
                llctop::snapshot::NoPreference::TooManyThreads,
                llctop::snapshot::NoPreference::SingleThread,
            ];
        }
    });
    key(&mut app, KeyCode::Char('3'));
    has(&screen(&app, 160, 50), "–thr", "processes");
    key(&mut app, KeyCode::Enter);
    let s = screen(&app, 200, 50);
    has(
        &s,
        "no preferred LLC: more running threads than the LLC's CPUs; single thread",
        "drill-down",
    );
    has(&s, "NUMA balancing off: not counted", "drill-down");
}

/// Replay's Knobs view lists the knobs the recording began with and their values at the
/// position shown — at 120×30 too, where the change log does not fit (it said "listed
/// below" and listed nothing).
#[test]
fn replay_knobs_view_lists_the_values_at_the_start_and_here() {
    let topo = topology::synthetic(1, 2, 2);
    let snaps: Vec<Snapshot> = (0..4).map(|i| fixture_snapshot(&topo, i)).collect();
    let at = snaps[2].time.mono_ns - 1;
    let mut header = llctop::record::Header::new(
        (Some("h".into()), Some("7.2".into())),
        Duration::from_secs(1),
        topo.clone(),
        Vec::new(),
    );
    header.knobs = [
        ("numa_balancing".to_string(), "1".to_string()),
        ("relax_domain_level".to_string(), "-1".to_string()),
    ]
    .into();
    let mut rec = llctop::record::reader::Recording::of(header, snaps);
    rec.knobs.push(llctop::knobs::session::KnobEvent {
        id: "numa_balancing".into(),
        path: "/proc/sys/kernel/numa_balancing".into(),
        action: llctop::knobs::session::KnobAction::Set,
        old: "1".into(),
        new: "0".into(),
        written: "0".into(),
        read_back: "0".into(),
        unix_ns: 1,
        mono_ns: at,
        label: None,
    });
    let mut app = App::replay(rec, "r.jsonl", themes());
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char('7'));
    app.pos = Some(0);
    let s = screen(&app, 120, 30);
    has(&s, "AT START", "replay knobs");
    has(&s, "relax_domain_level", "replay knobs");
    assert!(!s.contains("listed below"), "{s}");
    has(&s, "0 changed by this point", "before the change");
    app.pos = Some(3);
    let s = screen(&app, 120, 30);
    has(&s, "1 changed by this point", "after the change");
    has(&s, "0 *", "the changed value marked");
}

/// `i` shows each reason whole, wrapped over the rows it needs (it was cut at the screen's
/// width mid-sentence with rows free).
#[test]
fn i_shows_every_reason_whole() {
    let topo = topology::synthetic(1, 2, 2);
    let long = "this CPU reports no cache or memory-bandwidth monitoring (no cqm_occup_llc, cqm_mbm_total or cqm_mbm_local in /proc/cpuinfo; virtual machines rarely pass Intel RDT or AMD PQoS through, and the kernel offers resctrl only where the hardware has it) THE-LAST-WORDS";
    let mut app = live_app_with(&topo, 2, |s| {
        s.sources.push(SourceStatus::absent(
            llctop::snapshot::SourceName::Resctrl,
            long,
        ));
    });
    key(&mut app, KeyCode::Char('i'));
    for (w, h) in [(200, 50), (100, 40), (80, 24)] {
        let s = screen(&app, w, h);
        has(&s, "THE-LAST-WORDS", &format!("{w}×{h}"));
        has(&s, "cqm_mbm_local", &format!("{w}×{h}"));
    }
}
