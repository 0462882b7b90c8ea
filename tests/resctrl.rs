//! The resctrl source against trees laid out like the kernel's (tests/common/resctrl.rs,
//! after Documentation/filesystems/resctrl.rst), driven between intervals like a kernel:
//! the figures llctop gives per LLC, node, group and process equal the values the test
//! wrote — computed here from the script, not by llctop's code — in the snapshot, in a
//! recording read back, in `serve`'s scrape and on the TUI's screen. Edge values
//! (Unavailable, Unassigned, resets, garbage, missing files, huge values, a domain with
//! no LLC) and llctop's own groups (made, filled, removed; a killed run's removed by
//! `knobs restore`; ENOSPC) are covered too.

mod common;

use std::collections::BTreeMap;

use common::resctrl::{Spec, Tree};
use llctop::collect::Collector;
use llctop::snapshot::{GroupKind, Snapshot, SourceState, Unread};
use llctop::source::Source;
use llctop::source::resctrl::{ResctrlSource, Setup};

/// A collector over the resctrl source alone.
fn collector(t: &Tree, setup: Setup) -> Collector {
    let src: Box<dyn Source> = Box::new(ResctrlSource::new(&t.root, &t.topo, setup));
    Collector::new(&t.root, t.topo.clone(), vec![src])
}

fn state(s: &Snapshot) -> (SourceState, String) {
    let st = s
        .sources
        .iter()
        .find(|x| x.name == "resctrl")
        .expect("a resctrl state");
    (st.state, st.reason.clone().unwrap_or_default())
}

/// The values a scripted kernel shows: per (group, leaf, event), occupancy a level and
/// the byte counters cumulative.
#[derive(Default)]
struct Script {
    now: BTreeMap<(String, String, &'static str), u64>,
    before: BTreeMap<(String, String, &'static str), u64>,
}

impl Script {
    /// Step `k`: new occupancy, and `inc` more bytes (local 3/5 of them) per counter.
    fn step(&mut self, t: &Tree, groups: &[&str], k: u64) {
        self.before = self.now.clone();
        for (gi, g) in groups.iter().enumerate() {
            for (li, leaf) in t.leaves().iter().enumerate() {
                let (gi, li) = (gi as u64, li as u64);
                let occ = (gi + 1) * 3_000_000 + li * 65_536 + k * 4096;
                let inc = (gi + 1) * (li + 1) * 1_000_003 + k * 7;
                let key = |e| (g.to_string(), leaf.clone(), e);
                self.now.insert(key("llc_occupancy"), occ);
                let tot = self.now.get(&key("mbm_total_bytes")).copied().unwrap_or(0) + inc;
                let loc = self.now.get(&key("mbm_local_bytes")).copied().unwrap_or(0) + inc * 3 / 5;
                self.now.insert(key("mbm_total_bytes"), tot);
                self.now.insert(key("mbm_local_bytes"), loc);
                for e in ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"] {
                    t.set_value(g, leaf, e, self.now[&key(e)]);
                }
            }
        }
    }

    fn level(&self, g: &str, leaf: &str) -> u64 {
        self.now[&(g.to_string(), leaf.to_string(), "llc_occupancy")]
    }

    fn delta(&self, g: &str, leaf: &str, e: &'static str) -> u64 {
        let k = (g.to_string(), leaf.to_string(), e);
        self.now[&k] - self.before[&k]
    }
}

/// Bytes per second as memory bandwidth is quoted (decimal units, one decimal).
fn decimal_rate(v: f64) -> String {
    match v {
        v if v >= 1e12 => format!("{:.1} TB/s", v / 1e12),
        v if v >= 1e9 => format!("{:.1} GB/s", v / 1e9),
        v if v >= 1e6 => format!("{:.1} MB/s", v / 1e6),
        v if v >= 1e3 => format!("{:.1} kB/s", v / 1e3),
        v => format!("{v:.0} B/s"),
    }
}

#[test]
fn snc2_figures_per_llc_node_and_group_equal_the_scripted_kernel() {
    let t = Tree::new(Spec::intel_snc2());
    let groups = ["", "p1", "p1/mon_groups/m1", "mon_groups/m2"];
    for g in &groups[1..] {
        t.group(g);
    }
    let top = ["", "p1"];
    let mut c = collector(&t, Setup::default());
    let mut script = Script::default();
    script.step(&t, &groups, 0);
    let first = script.now.clone();
    assert!(c.tick().is_none(), "the baseline");
    let leaves = t.leaves();
    // This fixture's LLCs are the four SNC nodes in CPU order: node n is LLC n.
    let node_of_leaf = |leaf: &str| -> u32 { leaf[leaf.len() - 2..].parse().unwrap() };
    let mut recorded = Vec::new();
    for k in 1..=4 {
        script.step(&t, &groups, k);
        let s = c.tick().expect("a snapshot");
        let (st, why) = state(&s);
        assert_eq!(st, SourceState::Active, "{why}");
        assert!(
            why.contains("2 L3 domains (per node: sub-NUMA clustering), 4 groups of 224 RMIDs"),
            "{why}"
        );
        let r = s.resctrl.as_ref().expect("resctrl figures");
        // Each group, each node's part of each L3 (never the L3's own sum as well).
        for g in &groups {
            let got = r.groups.iter().find(|x| x.path == *g).expect("the group");
            assert_eq!(got.domains.len(), 4, "{g}: one reading per SNC node");
            for (d, leaf) in got.domains.iter().zip(&leaves) {
                assert_eq!(d.node, Some(node_of_leaf(leaf)), "{g} {leaf}");
                assert_eq!(
                    d.llc,
                    Some(node_of_leaf(leaf)),
                    "{g} {leaf}: its LLC by cache id and node"
                );
                assert_eq!(
                    d.mon.occupancy_bytes,
                    Some(script.level(g, leaf)),
                    "{g} {leaf}"
                );
                assert_eq!(
                    d.mon.mbm_total_bytes,
                    Some(script.delta(g, leaf, "mbm_total_bytes"))
                );
                assert_eq!(
                    d.mon.mbm_local_bytes,
                    Some(script.delta(g, leaf, "mbm_local_bytes"))
                );
            }
            let sum: u64 = leaves.iter().map(|l| script.level(g, l)).sum();
            assert_eq!(got.total.occupancy_bytes, Some(sum), "{g}: total");
        }
        // Per LLC / node: the root's and p1's readings (m1 is inside p1; m2 inside the root).
        for leaf in &leaves {
            let n = node_of_leaf(leaf);
            let occ: u64 = top.iter().map(|g| script.level(g, leaf)).sum();
            let tot: u64 = top
                .iter()
                .map(|g| script.delta(g, leaf, "mbm_total_bytes"))
                .sum();
            let loc: u64 = top
                .iter()
                .map(|g| script.delta(g, leaf, "mbm_local_bytes"))
                .sum();
            let llc = s.llcs[n as usize].cache.expect("LLC figures");
            assert_eq!(
                (
                    llc.occupancy_bytes,
                    llc.mbm_total_bytes,
                    llc.mbm_local_bytes
                ),
                (Some(occ), Some(tot), Some(loc)),
                "LLC {n}"
            );
            assert_eq!(llc.mbm_remote_bytes(), Some(tot - loc));
            let node = s.nodes.iter().find(|x| x.id == n).and_then(|x| x.cache);
            assert_eq!(node, Some(llc), "node {n} = its one LLC");
        }
        let all: u64 = top
            .iter()
            .flat_map(|g| leaves.iter().map(move |l| (g, l)))
            .map(|(g, l)| script.level(g, l))
            .sum();
        assert_eq!(r.total.occupancy_bytes, Some(all), "the machine");
        recorded.push(s);
    }
    // The TUI draws the same figures: the Cache view and the Overview coloured by
    // occupancy (formatted here, by this test, from the script's numbers).
    let mut app = llctop::tui::app::App::live(
        t.topo.clone(),
        std::time::Duration::from_secs(1),
        Vec::new(),
    );
    for s in &recorded {
        app.handle(llctop::tui::app::Msg::Tick(Box::new(
            llctop::run::pipeline::Tick::of(s.clone()),
        )));
    }
    let last = recorded.last().unwrap();
    let secs = last.time.interval_ns as f64 / 1e9;
    app.view = llctop::tui::app::ViewId::Cache;
    let screen = llctop::tui::render_to_text(&app, 160, 50).join("\n");
    let share = 61440.0 * 1024.0 / 2.0; // an SNC2 node's half of the 60 MiB L3
    for leaf in &leaves {
        let n = node_of_leaf(leaf);
        let occ: u64 = top.iter().map(|g| script.level(g, leaf)).sum();
        let loc: u64 = top
            .iter()
            .map(|g| script.delta(g, leaf, "mbm_local_bytes"))
            .sum();
        let want = format!(
            "{:.1} MiB {:.0}%",
            occ as f64 / 1048576.0,
            occ as f64 / share * 100.0
        );
        let line = screen
            .lines()
            .find(|l| l.trim_start_matches('│').starts_with(&format!("{n} ")) && l.contains("MiB"))
            .unwrap_or_else(|| panic!("no row for LLC {n}:\n{screen}"));
        assert!(line.contains(&want), "LLC {n}: {want:?} not in {line:?}");
        let want = decimal_rate(loc as f64 / secs);
        assert!(
            line.contains(&want),
            "LLC {n}: local {want} not in {line:?}"
        );
    }
    assert!(
        screen.contains("L3 occupancy and memory bandwidth per LLC (resctrl)"),
        "{screen}"
    );
    app.view = llctop::tui::app::ViewId::Overview;
    app.handle(llctop::tui::app::Msg::Key(
        ratatui::crossterm::event::KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Char('c'),
            ratatui::crossterm::event::KeyModifiers::NONE,
        ),
    ));
    let screen = llctop::tui::render_to_text(&app, 200, 60).join("\n");
    assert!(
        screen.contains("LLC map — L3 occupancy per LLC"),
        "{screen}"
    );
    let occ0: u64 = top.iter().map(|g| script.level(g, &leaves[0])).sum();
    assert!(
        screen.contains(&format!("L3 {:.1} MiB", occ0 as f64 / 1048576.0)),
        "{screen}"
    );
    // serve's series: the last occupancy, and every interval's bytes added up.
    let mut ex = llctop::serve::metrics::Exporter::new(&t.topo);
    for s in &recorded {
        ex.update(s);
    }
    let om = ex.openmetrics();
    for leaf in &leaves {
        let n = node_of_leaf(leaf);
        let occ: u64 = top.iter().map(|g| script.level(g, leaf)).sum();
        // Steps 1..=4 after the baseline at step 0: the counters' whole climb.
        let climbed = |e: &'static str| -> u64 {
            top.iter()
                .map(|g| {
                    script.now[&(g.to_string(), leaf.clone(), e)]
                        - first[&(g.to_string(), leaf.clone(), e)]
                })
                .sum()
        };
        let loc = climbed("mbm_local_bytes");
        let rem = climbed("mbm_total_bytes") - loc;
        for (series, v) in [
            (
                format!("llctop_llc_occupancy_bytes{{llc=\"{n}\",node=\"{n}\"}} {occ}"),
                occ,
            ),
            (
                format!(
                    "llctop_memory_bandwidth_bytes_total{{llc=\"{n}\",node=\"{n}\",locality=\"local\"}} {loc}"
                ),
                loc,
            ),
            (
                format!(
                    "llctop_memory_bandwidth_bytes_total{{llc=\"{n}\",node=\"{n}\",locality=\"remote\"}} {rem}"
                ),
                rem,
            ),
        ] {
            assert!(om.contains(&series), "{series} ({v}) not in:\n{om}");
        }
        assert!(
            om.contains(&format!(
                "llctop_llc_capacity_bytes{{llc=\"{n}\",node=\"{n}\"}} 31457280"
            )),
            "{om}"
        );
    }
    // The recording stores the same figures (one data model).
    let path = t.path().join("rec.jsonl");
    let header = llctop::record::Header::new(
        (None, None),
        std::time::Duration::from_secs(1),
        t.topo.clone(),
        Vec::new(),
    );
    let mut w = llctop::record::Writer::create(&path, &header).unwrap();
    for s in &recorded {
        w.write_snapshot(s).unwrap();
    }
    w.finish().unwrap();
    let back = llctop::record::reader::open(&path).unwrap();
    assert_eq!(back.snapshots.len(), recorded.len());
    for (a, b) in back.snapshots.iter().zip(&recorded) {
        assert_eq!(a.resctrl, b.resctrl);
        assert_eq!(
            a.llcs.iter().map(|g| g.cache).collect::<Vec<_>>(),
            b.llcs.iter().map(|g| g.cache).collect::<Vec<_>>()
        );
    }
}

#[test]
fn assignable_counters_unassigned_is_null_with_its_reason_and_the_counters_are_in_the_state() {
    let t = Tree::new(Spec::amd_genoa());
    t.group("mon_groups/web");
    let mut c = collector(&t, Setup::default());
    assert!(c.tick().is_none());
    // The web group has no counter in CCD 3 (L3 24): the kernel reads "Unassigned".
    t.set(
        "mon_groups/web",
        "mon_L3_24",
        "mbm_total_bytes",
        "Unassigned",
    );
    t.set(
        "mon_groups/web",
        "mon_L3_24",
        "mbm_local_bytes",
        "Unassigned",
    );
    t.write(
        "sys/fs/resctrl/info/L3_MON/available_mbm_cntrs",
        "0=30;8=30;16=30;24=31;32=30;40=30;48=30;56=30;64=30;72=30;80=30;88=30\n",
    );
    for leaf in t.leaves() {
        t.set_value("", &leaf, "mbm_total_bytes", 5_000);
    }
    let s = c.tick().unwrap();
    let r = s.resctrl.as_ref().unwrap();
    assert_eq!(r.info.assign_mode.as_deref(), Some("mbm_event"));
    assert_eq!(r.info.counters.len(), 12);
    let ccd3 = r.info.counters.iter().find(|x| x.l3 == 24).unwrap();
    assert_eq!((ccd3.total, ccd3.available), (Some(32), Some(31)));
    let (st, why) = state(&s);
    assert_eq!(st, SourceState::Active, "{why}");
    assert!(why.contains("12 L3 domains, 2 groups of 256 RMIDs; mbm_event mode: 32 counters per domain, 30 free in L3 0"), "{why}");
    let web = r
        .groups
        .iter()
        .find(|g| g.path == "mon_groups/web")
        .unwrap();
    assert_eq!(web.kind, GroupKind::Mon);
    let d = web.domains.iter().find(|d| d.l3 == 24).unwrap();
    assert_eq!(
        (d.mon.mbm_total_bytes, d.mon.total_why),
        (None, Some(Unread::Unassigned))
    );
    assert_eq!(d.mon.mbm_remote_bytes(), None);
    assert_eq!(
        web.total.mbm_total_bytes, None,
        "a sum with an unknown part is unknown"
    );
    assert_eq!(
        web.total.occupancy_bytes,
        Some(0),
        "occupancy is still read"
    );
    // The root's counters all moved by 5000: each CCD's LLC shows it (ids 0, 8 … 88 are
    // LLCs 0 … 11, by cache id).
    for (i, g) in s.llcs.iter().enumerate() {
        assert_eq!(g.cache.unwrap().mbm_total_bytes, Some(5_000), "LLC {i}");
    }
    // Counted again once the counter is assigned: that interval is a new baseline.
    t.set("mon_groups/web", "mon_L3_24", "mbm_total_bytes", "800");
    let s = c.tick().unwrap();
    let d = s
        .resctrl
        .unwrap()
        .groups
        .into_iter()
        .find(|g| g.path == "mon_groups/web")
        .unwrap();
    let d = d.domains.iter().find(|d| d.l3 == 24).unwrap();
    assert_eq!(d.mon.total_why, Some(Unread::Baseline));
    t.set("mon_groups/web", "mon_L3_24", "mbm_total_bytes", "1800");
    let s = c.tick().unwrap();
    let g = s
        .resctrl
        .unwrap()
        .groups
        .into_iter()
        .find(|g| g.path == "mon_groups/web")
        .unwrap();
    assert_eq!(
        g.domains
            .iter()
            .find(|d| d.l3 == 24)
            .unwrap()
            .mon
            .mbm_total_bytes,
        Some(1000)
    );
}

#[test]
fn without_mbm_local_remote_is_unknown_and_the_state_says_so() {
    let mut spec = Spec::amd_genoa();
    spec.features = vec!["llc_occupancy", "mbm_total_bytes"];
    spec.counters = None;
    let t = Tree::new(spec);
    let mut c = collector(&t, Setup::default());
    c.tick();
    t.set_value("", "mon_L3_00", "mbm_total_bytes", 100);
    let s = c.tick().unwrap();
    let (st, why) = state(&s);
    assert_eq!(st, SourceState::Degraded);
    assert!(
        why.contains("no mbm_local_bytes: local and remote bandwidth unknown"),
        "{why}"
    );
    let l = s.llcs[0].cache.unwrap();
    assert_eq!(l.mbm_total_bytes, Some(100));
    assert_eq!(
        (l.mbm_local_bytes, l.local_why),
        (None, Some(Unread::NoEvent))
    );
    assert_eq!(
        (l.mbm_remote_bytes(), l.remote_why()),
        (None, Some(Unread::NoEvent))
    );
}

#[test]
fn unavailable_resets_and_garbage_are_never_a_rate() {
    let t = Tree::new(Spec::intel_snc2());
    let leaf = "mon_L3_00/mon_sub_L3_00";
    let mut c = collector(&t, Setup::default());
    t.set("", leaf, "mbm_total_bytes", "1000");
    c.tick();
    let read = |c: &mut Collector| {
        let s = c.tick().unwrap();
        let r = s.resctrl.clone().unwrap();
        (
            r.groups[0].domains[0].mon,
            r.resets,
            r.unreadable,
            state(&s),
        )
    };
    // Unavailable (AMD: the RMID lost its counter): null with the reason.
    t.set("", leaf, "mbm_total_bytes", "Unavailable");
    let (m, ..) = read(&mut c);
    assert_eq!(
        (m.mbm_total_bytes, m.total_why),
        (None, Some(Unread::Unavailable))
    );
    // Back, far higher: a new baseline, never the difference to the stale 1000.
    t.set("", leaf, "mbm_total_bytes", "900000000");
    let (m, ..) = read(&mut c);
    assert_eq!(m.total_why, Some(Unread::Baseline));
    t.set("", leaf, "mbm_total_bytes", "900000500");
    let (m, ..) = read(&mut c);
    assert_eq!(m.mbm_total_bytes, Some(500));
    // A reset: dropped and counted.
    t.set("", leaf, "mbm_total_bytes", "42");
    let (m, resets, _, (st, why)) = read(&mut c);
    assert_eq!(
        (m.mbm_total_bytes, m.total_why, resets),
        (None, Some(Unread::Reset), 1)
    );
    assert_eq!(st, SourceState::Degraded);
    assert!(
        why.contains("1 counter went backwards (reset or reused RMID): its interval dropped"),
        "{why}"
    );
    t.set("", leaf, "mbm_total_bytes", "142");
    let (m, resets, ..) = read(&mut c);
    assert_eq!((m.mbm_total_bytes, resets), (Some(100), 0));
    // A huge jump: dropped as implausible, and the next interval counts again.
    t.set("", leaf, "mbm_total_bytes", "18446744073709551000");
    let (m, ..) = read(&mut c);
    assert_eq!(m.total_why, Some(Unread::Implausible));
    t.set("", leaf, "mbm_total_bytes", "18446744073709551615");
    let (m, ..) = read(&mut c);
    assert_eq!(m.mbm_total_bytes, Some(615));
    // Garbage, and the kernel's Error: named in the state, the other files still read.
    t.set("", leaf, "llc_occupancy", "12x4");
    t.set("", leaf, "mbm_local_bytes", "Error");
    t.set("", "mon_L3_32/mon_sub_L3_03", "llc_occupancy", "65536");
    let s = c.tick().unwrap();
    let r = s.resctrl.as_ref().unwrap();
    let m = r.groups[0].domains[0].mon;
    assert_eq!(
        (m.occupancy_bytes, m.occupancy_why),
        (None, Some(Unread::Unreadable))
    );
    assert_eq!(m.local_why, Some(Unread::Error));
    assert_eq!(r.unreadable, 1);
    let (_, why) = state(&s);
    assert!(
        why.contains("mon_L3_00/mon_sub_L3_00/llc_occupancy: not a count (5 bytes")
            && !why.contains("12x4"),
        "{why}"
    );
    assert_eq!(s.llcs[3].cache.unwrap().occupancy_bytes, Some(65536));
    assert_eq!(
        s.llcs[0].cache.unwrap().occupancy_bytes,
        None,
        "LLC 0's reading is unknown"
    );
    // A group whose file is missing (its read fails): named, the others still read.
    t.group("mon_groups/odd");
    let f = t
        .mount()
        .join("mon_groups/odd/mon_data/mon_L3_32/mon_sub_L3_02/mbm_total_bytes");
    std::fs::remove_file(&f).unwrap();
    let s = c.tick().unwrap();
    let (_, why) = state(&s);
    assert!(
        why.contains("odd/mon_data/mon_L3_32/mon_sub_L3_02/mbm_total_bytes: No such file"),
        "{why}"
    );
    let odd = s
        .resctrl
        .as_ref()
        .unwrap()
        .groups
        .iter()
        .find(|g| g.path == "mon_groups/odd")
        .unwrap();
    assert_eq!(odd.domains[2].mon.total_why, Some(Unread::Unreadable));
    assert_eq!(
        odd.domains[3].mon.total_why,
        Some(Unread::Baseline),
        "its other files read"
    );
    std::fs::write(&f, "5\n").unwrap();
    let s = c.tick().unwrap();
    let odd = s
        .resctrl
        .as_ref()
        .unwrap()
        .groups
        .iter()
        .find(|g| g.path == "mon_groups/odd")
        .unwrap();
    assert_eq!(
        odd.domains[2].mon.total_why,
        Some(Unread::Baseline),
        "back: a new baseline"
    );
}

#[test]
fn a_domain_without_an_llc_and_an_llc_without_a_domain_are_said() {
    let mut spec = Spec::amd_genoa();
    // The kernel lists L3 99, which this topology does not have, and not L3 88.
    spec.domains = (0..11)
        .map(|i| (i * 8, vec![]))
        .chain([(99, vec![])])
        .collect();
    let t = Tree::new(spec);
    let mut c = collector(&t, Setup::default());
    c.tick();
    t.set_value("", "mon_L3_99", "llc_occupancy", 7);
    t.set_value("", "mon_L3_00", "llc_occupancy", 9);
    let s = c.tick().unwrap();
    let (st, why) = state(&s);
    assert_eq!(st, SourceState::Degraded);
    assert!(
        why.contains("L3 domain 99 (mon_L3_99) is no L3 of this topology"),
        "{why}"
    );
    assert!(
        why.contains("LLC 11 (L3 88) has no resctrl domain"),
        "{why}"
    );
    let r = s.resctrl.as_ref().unwrap();
    let d99 = r.groups[0].domains.iter().find(|d| d.l3 == 99).unwrap();
    assert_eq!(
        (d99.llc, d99.mon.occupancy_bytes),
        (None, Some(7)),
        "read, given to no LLC"
    );
    assert_eq!(s.llcs[0].cache.unwrap().occupancy_bytes, Some(9));
    assert_eq!(s.llcs[11].cache, None);
    assert_eq!(r.total.occupancy_bytes, Some(16), "the machine counts it");
}

#[test]
fn not_mounted_not_monitoring_and_an_unreadable_mount_are_absent_with_the_reason() {
    let t = Tree::new(Spec::intel_snc2());
    t.write(
        "proc/self/mountinfo",
        "22 1 0:21 / /sys rw - sysfs sysfs rw\n",
    );
    let mut c = collector(&t, Setup::default());
    c.tick();
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Absent);
    assert!(why.contains("resctrl is not mounted (cqm_llc, cqm_occup_llc, cqm_mbm_total, cqm_mbm_local here): `mount -t resctrl resctrl /sys/fs/resctrl`, or run llctop with --resctrl-mount"), "{why}");
    // Mounted while llctop runs: seen at the next interval.
    t.write(
        "proc/self/mountinfo",
        "61 22 0:40 / /sys/fs/resctrl rw - resctrl resctrl rw\n",
    );
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Active, "{why}");
    // Unmounted while llctop runs (the mount point is an empty directory again).
    t.write("proc/self/mountinfo", "");
    std::fs::remove_dir_all(t.mount()).unwrap();
    std::fs::create_dir(t.mount()).unwrap();
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Absent);
    assert!(why.contains("resctrl is not mounted"), "{why}");
    // Mounted, allocation only.
    t.write(
        "proc/self/mountinfo",
        "61 22 0:40 / /sys/fs/resctrl rw - resctrl resctrl rw\n",
    );
    t.write("sys/fs/resctrl/info/L3/cbm_mask", "7ff\n");
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Absent);
    assert!(why.contains("monitors nothing (no info/L3_MON)"), "{why}");
    // No monitoring hardware: absent for the whole run — a mount that comes later is not
    // looked for (nor /proc/cpuinfo read again: a costly read on a big host, every
    // interval).
    t.write("proc/self/mountinfo", "");
    t.write("proc/cpuinfo", "flags\t: fpu sse2\n");
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Absent);
    assert!(
        why.contains("this CPU reports no cache or memory-bandwidth monitoring"),
        "{why}"
    );
    // (Looked for, it would read "monitors nothing": the mount has no L3_MON.)
    t.write(
        "proc/self/mountinfo",
        "61 22 0:40 / /sys/fs/resctrl rw - resctrl resctrl rw\n",
    );
    let (st, why) = state(&c.tick().unwrap());
    assert_eq!(st, SourceState::Absent, "not looked for again");
    assert!(why.contains("reports no cache"), "{why}");
}

/// A writable session on the tree, its journal in the tree's directory.
fn writes(t: &Tree, plan: llctop::source::resctrl::own::Plan) -> Setup {
    use llctop::knobs::{Registry, Session, journal::Journal, session};
    let s = Session::new(
        Registry::discover(&t.root, Some(&t.topo)),
        Journal::new(t.path().join("journal.json")),
        session::Options::default(),
    );
    Setup {
        opts: llctop::source::resctrl::Options { mount: false, plan },
        session: Some(s),
    }
}

fn journal_ids(t: &Tree) -> Vec<String> {
    llctop::knobs::journal::Journal::new(t.path().join("journal.json"))
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect()
}

/// A process in the tree's /proc with these threads.
fn process(t: &Tree, pid: u32, tids: &[u32]) {
    for tid in tids {
        std::fs::create_dir_all(t.path().join(format!("proc/{pid}/task/{tid}"))).unwrap();
    }
}

fn tasks(t: &Tree, group: &str) -> Vec<u32> {
    std::fs::read_to_string(t.mount().join(group).join("tasks"))
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

#[test]
fn llctop_groups_are_made_filled_and_removed_and_never_take_anothers_threads() {
    let t = Tree::new(Spec::intel_snc2());
    process(&t, 4000, &[4000, 4001]);
    process(&t, 5000, &[5000]);
    // Someone else's group holds 5000's only thread.
    t.group("mon_groups/theirs");
    std::fs::write(t.mount().join("mon_groups/theirs/tasks"), "5000\n").unwrap();
    let plan = llctop::source::resctrl::own::Plan {
        top: 0,
        pids: vec![4000, 5000],
    };
    let mut c = collector(&t, writes(&t, plan));
    assert!(c.tick().is_none());
    let mine = "mon_groups/llctop-4000";
    assert!(t.mount().join(mine).is_dir(), "the group is made");
    assert_eq!(tasks(&t, mine), vec![4000, 4001], "with every thread");
    assert!(
        !t.mount().join("mon_groups/llctop-5000").exists(),
        "no group for 5000"
    );
    assert_eq!(
        journal_ids(&t),
        vec!["resctrl.group.llctop-4000"],
        "journaled"
    );
    assert_eq!(tasks(&t, "mon_groups/theirs"), vec![5000], "not moved");
    // The kernel fills the new group's mon_data.
    t.group(mine);
    // A new thread joins; another is put in their group before llctop sees it.
    process(&t, 4000, &[4002, 4003]);
    std::fs::write(t.mount().join("mon_groups/theirs/tasks"), "5000\n4003\n").unwrap();
    t.set_value(mine, "mon_L3_32/mon_sub_L3_02", "llc_occupancy", 3 << 20);
    let s = c.tick().unwrap();
    assert_eq!(tasks(&t, mine), vec![4000, 4001, 4002], "4003 is theirs");
    let (st, why) = state(&s);
    assert_eq!(st, SourceState::Degraded);
    assert!(why.contains("llctop monitors 1 process"), "{why}");
    assert!(why.contains("pid 4000: 1 thread is in resctrl group mon_groups/theirs made by someone else: left there"), "{why}");
    let r = s.resctrl.as_ref().unwrap();
    let g = r.of_pid(4000).expect("the group of pid 4000");
    assert_eq!(g.path, mine);
    assert_eq!(g.domains[2].mon.occupancy_bytes, Some(3 << 20));
    assert_eq!(r.of_pid(5000), None);
    // The process ends: its group goes.
    std::fs::remove_dir_all(t.path().join("proc/4000")).unwrap();
    c.tick();
    assert!(
        !t.mount().join(mine).exists(),
        "removed when the process ended"
    );
    assert!(journal_ids(&t).is_empty());
    // A group made, then the run ends: removed with it.
    process(&t, 4000, &[4000]);
    c.tick();
    assert!(t.mount().join(mine).is_dir());
    drop(c);
    assert!(!t.mount().join(mine).exists(), "removed at the end");
    assert!(journal_ids(&t).is_empty(), "and forgotten");
    assert!(t.mount().join("mon_groups/theirs").is_dir(), "theirs stays");
}

/// Fills the process table like the BPF or procfs source would.
struct Table(std::rc::Rc<std::cell::RefCell<Vec<(u32, u64)>>>);

impl Source for Table {
    fn name(&self) -> &'static str {
        "table"
    }
    fn sample(&mut self, _: &llctop::topology::Topology, snap: &mut Snapshot) {
        let rows = self
            .0
            .borrow()
            .iter()
            .map(|&(pid, ns)| llctop::snapshot::ProcessStats {
                pid,
                cpu_time_ns: ns,
                ..Default::default()
            })
            .collect();
        snap.processes = Some(llctop::snapshot::ProcessTable {
            rows,
            ..Default::default()
        });
    }
}

#[test]
fn the_busiest_processes_get_groups_without_churn_and_their_rows_the_figures() {
    use llctop::source::resctrl::own::{HOLD, Plan};
    let t = Tree::new(Spec::intel_snc2());
    for p in [100, 200, 300] {
        process(&t, p, &[p]);
    }
    let busy = std::rc::Rc::new(std::cell::RefCell::new(vec![(100, 9), (200, 5), (300, 1)]));
    let setup = writes(
        &t,
        Plan {
            top: 2,
            pids: vec![],
        },
    );
    let sources: Vec<Box<dyn Source>> = vec![
        Box::new(Table(busy.clone())),
        Box::new(ResctrlSource::new(&t.root, &t.topo, setup)),
    ];
    let mut c = Collector::new(&t.root, t.topo.clone(), sources);
    c.tick();
    let made = |p: u32| t.mount().join(format!("mon_groups/llctop-{p}")).is_dir();
    assert!(made(100) && made(200) && !made(300), "the top 2");
    t.group("mon_groups/llctop-100");
    t.set_value(
        "mon_groups/llctop-100",
        "mon_L3_00/mon_sub_L3_01",
        "llc_occupancy",
        777,
    );
    let s = c.tick().unwrap();
    let row = |s: &Snapshot, p: u32| {
        s.processes
            .as_ref()
            .unwrap()
            .rows
            .iter()
            .find(|r| r.pid == p)
            .unwrap()
            .cache
    };
    assert_eq!(
        row(&s, 100).unwrap().occupancy_bytes,
        Some(777),
        "the row carries its group's total"
    );
    assert_eq!(row(&s, 300), None, "not monitored");
    // 300 becomes the busiest: 200 leaves the top 2 but keeps its group for HOLD intervals.
    *busy.borrow_mut() = vec![(300, 50), (100, 9), (200, 5)];
    for i in 0..HOLD {
        c.tick();
        assert!(made(200), "interval {i}: still held");
        assert!(!made(300), "interval {i}: no slot yet");
    }
    c.tick();
    assert!(
        !made(200) && made(300) && made(100),
        "replaced after {HOLD} intervals out of the top"
    );
}

#[test]
fn a_killed_runs_groups_are_removed_by_knobs_restore() {
    let t = Tree::new(Spec::intel_snc2());
    process(&t, 4000, &[4000, 4001]);
    let j = t.path().join("journal.json");
    let mut child = common::llctop(
        &t.root,
        &j,
        &[
            "record",
            "-o",
            "/dev/null",
            "--source",
            "procfs",
            "--interval",
            "100ms",
            "--cache-pid",
            "4000",
        ],
    )
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let group = t.mount().join("mon_groups/llctop-4000");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !group.join("tasks").exists() {
        assert!(std::time::Instant::now() < deadline, "no group made");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(group.is_dir(), "SIGKILL leaves it");
    assert_eq!(journal_ids(&t), vec!["resctrl.group.llctop-4000"]);
    let out = common::llctop(&t.root, &j, &["knobs", "restore"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("resctrl.group.llctop-4000"), "{text}");
    assert!(!group.exists(), "removed");
    assert!(journal_ids(&t).is_empty());
    // A journal entry naming anything but an llctop group is refused, nothing removed.
    let bad = llctop::knobs::journal::Entry {
        root: t.root.root().to_path_buf(),
        id: "resctrl.group.llctop-1".into(),
        path: "/sys/fs/resctrl/p1".into(),
        original: "absent".into(),
        restore_bytes: "rmdir".into(),
        changed_unix_ns: 1,
        pid: 1,
        kept: false,
    };
    t.group("p1");
    llctop::knobs::journal::Journal::new(&j)
        .record(bad)
        .unwrap();
    let out = common::llctop(&t.root, &j, &["knobs", "restore"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success());
    assert!(text.contains("is not an llctop group"), "{text}");
    assert!(t.mount().join("p1").is_dir());
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn no_rmid_left_is_said_and_monitoring_goes_on() {
    common::require_root();
    let t = Tree::new(Spec::intel_snc2());
    process(&t, 4000, &[4000]);
    // mon_groups on a file system with no inode left: mkdir fails with ENOSPC, as the
    // kernel's does when every RMID is taken.
    let mg = t.mount().join("mon_groups");
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "nr_inodes=1,size=64k", "llctop-test"])
        .arg(&mg)
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mg.clone());
    let plan = llctop::source::resctrl::own::Plan {
        top: 0,
        pids: vec![4000],
    };
    let mut c = collector(&t, writes(&t, plan));
    c.tick();
    t.set_value("", "mon_L3_00/mon_sub_L3_00", "llc_occupancy", 11);
    let s = c.tick().unwrap();
    let (st, why) = state(&s);
    assert_eq!(st, SourceState::Degraded);
    assert!(
        why.contains("no group for pid 4000") && why.contains("ENOSPC: no RMID is free"),
        "{why}"
    );
    assert!(why.contains("trying again in 10 intervals"), "{why}");
    assert_eq!(
        s.llcs[0].cache.unwrap().occupancy_bytes,
        Some(11),
        "the rest is read"
    );
    assert!(
        journal_ids(&t).is_empty(),
        "nothing made, nothing journaled"
    );
}

/// GET `url`'s body (None until it answers).
fn scrape(url: &str) -> Option<String> {
    let mut r = ureq::get(url).call().ok()?;
    r.body_mut().read_to_string().ok()
}

/// A sample's value in a Prometheus text scrape.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[test]
fn serve_and_record_in_their_own_processes_add_up_to_the_scripted_climb() {
    use std::time::{Duration, Instant};
    let t = Tree::new(Spec::amd_genoa());
    let leaves = t.leaves();
    let mut total = vec![1_000u64; leaves.len()];
    let mut local = vec![500u64; leaves.len()];
    for (i, leaf) in leaves.iter().enumerate() {
        t.set_value("", leaf, "mbm_total_bytes", total[i]);
        t.set_value("", leaf, "mbm_local_bytes", local[i]);
        t.set_value("", leaf, "llc_occupancy", 4096);
    }
    let (start_total, start_local) = (total.clone(), local.clone());
    let j = t.path().join("journal.json");
    let port = common::serve::free_port();
    let _serve = common::serve::Kill(
        common::llctop(
            &t.root,
            &j,
            &[
                "--source",
                "procfs",
                "--interval",
                "200ms",
                "serve",
                "--listen",
            ],
        )
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    let rec = t.path().join("rec.jsonl");
    let mut record = common::llctop(
        &t.root,
        &j,
        &["--source", "procfs", "--interval", "150ms", "record", "-o"],
    )
    .arg(&rec)
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let url = format!("http://127.0.0.1:{port}/metrics");
    let occ0 = "llctop_llc_occupancy_bytes{llc=\"0\",node=\"0\"}";
    let deadline = Instant::now() + Duration::from_secs(60);
    while scrape(&url).and_then(|m| sample(&m, occ0)).is_none()
        || std::fs::read_to_string(&rec).map_or(0, |s| s.lines().count()) < 2
    {
        assert!(Instant::now() < deadline, "serve and record did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The kernel's counters climb at their own pace, out of step with both readers.
    for step in 1..=12u64 {
        for (i, leaf) in leaves.iter().enumerate() {
            let inc = (i as u64 + 1) * 1_000_000 + step * 17;
            total[i] += inc;
            local[i] += inc * 2 / 3;
            t.set_value("", leaf, "mbm_total_bytes", total[i]);
            t.set_value("", leaf, "mbm_local_bytes", local[i]);
            t.set_value("", leaf, "llc_occupancy", 4096 * step);
        }
        std::thread::sleep(Duration::from_millis(70));
    }
    // Held still: both readers catch up to exactly the climb.
    let want = |i: usize| {
        let loc = local[i] - start_local[i];
        (loc, total[i] - start_total[i] - loc)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let m = scrape(&url).unwrap_or_default();
        let ok = (0..leaves.len()).all(|i| {
            let s = |loc: &str| {
                sample(
                    &m,
                    &format!("llctop_memory_bandwidth_bytes_total{{llc=\"{i}\",node=\"0\",locality=\"{loc}\"}}"),
                )
            };
            let (l, r) = want(i);
            s("local") == Some(l as f64) && s("remote") == Some(r as f64)
        });
        if ok {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "serve never showed the climb:\n{m}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        sample(&text, occ0),
        Some(4096.0 * 12.0),
        "the last occupancy"
    );
    assert_eq!(
        sample(
            &text,
            "llctop_resctrl_readings_unread_total{reason=\"reset\"}"
        ),
        None,
        "nothing dropped"
    );
    // Prometheus's own linter takes the scrape.
    let mut lint = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (scripts/deps.sh installs prometheus)");
    std::io::Write::write_all(&mut lint.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The recording, ended by SIGTERM: its intervals add up to the same climb.
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: a child of this test, still running.
    unsafe { libc::kill(record.id() as i32, libc::SIGTERM) };
    record.wait().unwrap();
    let r = llctop::record::reader::open(&rec).unwrap();
    for i in 0..leaves.len() {
        let sum = |f: fn(&llctop::snapshot::CacheMon) -> Option<u64>| -> u64 {
            r.snapshots
                .iter()
                .filter_map(|s| s.llcs[i].cache.as_ref().and_then(f))
                .sum()
        };
        let (l, rem) = want(i);
        assert_eq!(sum(|c| c.mbm_local_bytes), l, "LLC {i}: local");
        assert_eq!(sum(|c| c.mbm_remote_bytes()), rem, "LLC {i}: remote");
    }
    // The report's L3 section and diff's figures come from the same recording.
    let out = common::llctop(&t.root, &j, &["report"])
        .arg(&rec)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}");
    let n = r.snapshots.len();
    assert!(
        report.contains(&format!(
            "L3 occupancy and memory bandwidth (resctrl; {n} of {n} snapshots)"
        )),
        "{report}"
    );
    let peak = format!("{:.1} KiB", 4096.0 * 12.0 / 1024.0);
    let row = report
        .lines()
        .find(|l| l.trim_start().starts_with("llc11 n0"))
        .unwrap_or("");
    assert!(
        row.contains(&peak),
        "LLC 11's peak {peak} not in {row:?}\n{report}"
    );
    let out = common::llctop(&t.root, &j, &["diff"])
        .arg(&rec)
        .arg(&rec)
        .output()
        .unwrap();
    let diff = String::from_utf8_lossy(&out.stdout);
    for key in ["l3.llc0", "membw.local", "membw.remote_share"] {
        assert!(diff.contains(key), "{key} not in diff:\n{diff}");
    }
}

#[test]
fn a_read_large_enough_to_share_between_threads_keeps_every_group_its_own() {
    // 12 domains x 3 events x 30 groups = 1080 files: read by several threads.
    let t = Tree::new(Spec::amd_genoa());
    let groups: Vec<String> = (1..30).map(|i| format!("mon_groups/g{i:02}")).collect();
    for g in &groups {
        t.group(g);
    }
    let all: Vec<String> = std::iter::once(String::new()).chain(groups).collect();
    let mut c = collector(&t, Setup::default());
    c.tick();
    for (gi, g) in all.iter().enumerate() {
        for (li, leaf) in t.leaves().iter().enumerate() {
            t.set_value(g, leaf, "llc_occupancy", (gi * 1000 + li) as u64);
            t.set_value(g, leaf, "mbm_total_bytes", (gi * 100 + li) as u64);
        }
    }
    let s = c.tick().unwrap();
    let r = s.resctrl.unwrap();
    assert_eq!(r.groups.len(), 30);
    for (gi, g) in all.iter().enumerate() {
        let got = r.groups.iter().find(|x| &x.path == g).unwrap();
        for (li, d) in got.domains.iter().enumerate() {
            assert_eq!(
                d.mon.occupancy_bytes,
                Some((gi * 1000 + li) as u64),
                "{g} {li}"
            );
            assert_eq!(
                d.mon.mbm_total_bytes,
                Some((gi * 100 + li) as u64),
                "{g} {li}"
            );
        }
    }
}

/// `--resctrl-mount` on this machine's kernel: where the CPU monitors, resctrl is
/// mounted for the run and unmounted at its end; where it does not (this project's VM,
/// QEMU), the kernel's refusal is said, nothing stays mounted and the journal keeps no
/// entry.
#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn resctrl_mount_on_this_kernel_is_undone_or_refused_cleanly() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal.json");
    let out_file = dir.path().join("r.jsonl");
    let mounted_before = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .contains(" resctrl ");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args([
            "--source",
            "procfs",
            "--interval",
            "200ms",
            "--resctrl-mount",
            "--journal",
        ])
        .arg(&j)
        .args(["record", "--duration", "1s", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let rec = llctop::record::reader::open(&out_file).unwrap();
    let st = rec.snapshots[0]
        .sources
        .iter()
        .find(|s| s.name == "resctrl")
        .unwrap();
    let why = st.reason.clone().unwrap_or_default();
    let monitors = !llctop::source::resctrl::parse::monitoring_flags(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap(),
    )
    .is_empty();
    println!("resctrl here: {:?}: {why}", st.state);
    if monitors && !mounted_before {
        assert_ne!(st.state, SourceState::Absent, "{why}");
        assert!(
            err.contains("resctrl unmounted from /sys/fs/resctrl"),
            "{err}"
        );
    } else if !monitors {
        assert_eq!(st.state, SourceState::Absent);
        assert!(
            why.contains("this CPU reports no cache or memory-bandwidth monitoring"),
            "{why}"
        );
        assert!(
            why.contains("--resctrl-mount: "),
            "the mount's failure is said: {why}"
        );
        assert!(why.contains("ENODEV") || why.contains("ENOENT"), "{why}");
    }
    let mounted_after = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .contains(" resctrl ");
    assert_eq!(mounted_after, mounted_before, "left as it was");
    let left = llctop::knobs::journal::Journal::new(&j).entries().unwrap();
    assert!(left.is_empty(), "{left:?}");
}

/// A tree handed to llctop (`--sysroot`) cannot make it read what is not the tree's: a
/// counter that is a link to a secret outside, one that is a FIFO, an info file linked to
/// /dev/zero. The run ends on time, no byte of the secret is in the recording or its
/// report, and the files are said to be refused.
#[test]
fn links_out_fifos_and_devices_in_a_tree_are_refused_never_read() {
    let t = Tree::new(Spec::intel_snc2());
    let secret = t.path().join("outside-secret");
    std::fs::write(&secret, "root:*:20228:0:99999:7:::\n").unwrap();
    let leaf = "mon_L3_00/mon_sub_L3_00";
    let occ = t.counter("", leaf, "llc_occupancy");
    std::fs::remove_file(&occ).unwrap();
    // Outside the tree (--sysroot is the tree's `root`): its parent dir is the tree's top.
    let outside = tempfile::tempdir().unwrap();
    let far = outside.path().join("shadow");
    std::fs::write(&far, "root:*:20228:0:99999:7:::\n").unwrap();
    std::os::unix::fs::symlink(&far, &occ).unwrap();
    let total = t.counter("", leaf, "mbm_total_bytes");
    std::fs::remove_file(&total).unwrap();
    let c = std::ffi::CString::new(total.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let rmids = t.mount().join("info/L3_MON/num_rmids");
    std::fs::remove_file(&rmids).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &rmids).unwrap();
    let out = t.path().join("run.jsonl");
    let j = t.path().join("journal.json");
    let started = std::time::Instant::now();
    let mut child = common::llctop(
        &t.root,
        &j,
        &[
            "--source",
            "procfs",
            "--interval",
            "200ms",
            "record",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "2s",
        ],
    )
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "hung on the tree"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_llctop"))
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&report.stdout);
    for what in [&text, &err, &report.to_string()] {
        assert!(!what.contains("20228"), "the secret leaked: {what}");
    }
    assert!(
        text.contains("outside --sysroot") || text.contains("not a regular file"),
        "the refusal is said in the recording"
    );
    println!("ended in {:?}", started.elapsed());
}
