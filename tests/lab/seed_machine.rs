//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.
//! One module per scenario (tests/lab/seed_*.rs); this one: foundation.sh and distances.sh — the machine as the guest's sysfs has it, schedstat v17, exact hops per distance class, the `llc_balancing/` knobs.

use crate::common;

use common::lab::{LabRun, cpus_of, hops_of, recording};

use serde_json::Value;

const SHAPE: &str = "2s4llc-smt";

fn run(kernel: &str, scenario: &str) -> &'static LabRun {
    common::lab::run(kernel, SHAPE, scenario)
}

#[test]
fn lab_7_2_smt_two_llcs_per_node_with_smt_inside() {
    let run = run("7.2", "foundation.sh");
    let t: Value = serde_json::from_str(run.block("topology")).expect("topology JSON");
    let llcs = cpus_of(&t["llcs"]);
    let nodes = cpus_of(&t["nodes"]);
    println!("lab 7.2/{SHAPE}: llcs {llcs:?} nodes {nodes:?}");
    assert_eq!(llcs, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
    assert_eq!(nodes, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    let llc_nodes: Vec<u64> = (0..4)
        .map(|i| t["llcs"][i]["node"].as_u64().unwrap())
        .collect();
    assert_eq!(llc_nodes, [0, 0, 1, 1], "two LLCs per node");
    // SMT: each LLC is one core of two sibling threads.
    for c in t["cpus"].as_array().unwrap() {
        let cpu = c["cpu"].as_u64().unwrap();
        assert_eq!(c["core"].as_u64(), Some(cpu / 2), "cpu{cpu}'s core");
    }
    assert!(run.block("tree").starts_with("2 nodes · 4 LLCs · 8 CPUs"));
}

#[test]
fn lab_7_2_smt_schedstat_v17_levels_from_the_kernel() {
    let run = run("7.2", "foundation.sh");
    assert_eq!(run.value("schedstat_version"), "17");
    let rec = recording(run, "recording");
    let mut names: Vec<String> = Vec::new();
    let mut newidle = 0;
    for s in &rec.snapshots {
        let b = s.balance.as_ref().expect("balance in every snapshot");
        assert_eq!(b.version, 17);
        names = b
            .domains
            .iter()
            .map(|d| d.name.clone().unwrap_or_default())
            .collect();
        assert!(
            b.domains.iter().all(|d| !d.derived_name),
            "v17 names its domains"
        );
        newidle += b.domains.iter().map(|d| d.newidle.count).sum::<u64>();
    }
    println!("lab 7.2/{SHAPE}: domains {names:?}, newidle balance attempts {newidle}");
    // The LLC is the core, so MC collapses into SMT.
    assert_eq!(names, ["SMT", "PKG", "NUMA"]);
    assert!(newidle > 0, "spinners and sleepers make newidle balancing");
}

#[test]
fn lab_7_2_smt_hops_counted_exactly_per_distance_class() {
    let run = run("7.2", "distances.sh");
    let rec = recording(run, "distances_recording");
    let (cpu_ms, hwm) = common::lab::record_cost(run);
    println!(
        "lab 7.2/{SHAPE}: llctop record's CPU time {cpu_ms:.1} ms per interval, peak resident {hwm} KiB"
    );
    let pid = |k: &str| -> u32 { run.value(k).parse().unwrap() };
    let smt = hops_of(&rec, pid("hop_smt_pid"));
    let llc = hops_of(&rec, pid("hop_llc_pid"));
    let node = hops_of(&rec, pid("hop_node_pid"));
    println!("lab 7.2/{SHAPE}: 0<->1 {smt:?}\n  0<->2 {llc:?}\n  0<->4 {node:?}");
    assert_eq!((smt.smt, smt.total()), (100, 100), "0<->1 are SMT siblings");
    assert_eq!(
        (llc.cross_llc, llc.total()),
        (100, 100),
        "0<->2: another LLC, same node"
    );
    assert_eq!(
        (node.cross_node, node.total()),
        (100, 100),
        "0<->4: another node"
    );
    // The machine's matrix holds the hops (and whatever else moved).
    let mut m = vec![vec![0u64; 4]; 4];
    for s in &rec.snapshots {
        let mm = &s.migrations.as_ref().expect("migrations").llc_matrix;
        for (a, row) in mm.iter().enumerate() {
            for (b, v) in row.iter().enumerate() {
                m[a][b] += v;
            }
        }
    }
    println!("lab 7.2/{SHAPE}: LLC matrix over the recording {m:?}");
    assert!(m[0][0] >= 100, "the SMT hops stay in LLC 0");
    assert!(m[0][1] >= 50 && m[1][0] >= 50, "0->2 and 2->0");
    assert!(m[0][2] >= 50 && m[2][0] >= 50, "0->4 and 4->0");
    // Per CPU in and out (kept in a copy per LLC of the CPUs whose hook counted them,
    // summed by llctop): each move is one in and one out, the hopper's CPUs got theirs.
    let n = rec.snapshots.first().map_or(0, |s| s.cpus.len());
    let (mut ins, mut outs, mut total) = (vec![0u64; n], vec![0u64; n], 0u64);
    for s in &rec.snapshots {
        for (c, cpu) in s.cpus.iter().enumerate().take(n) {
            ins[c] += cpu.migrations_in.unwrap_or(0);
            outs[c] += cpu.migrations_out.unwrap_or(0);
        }
        total += s.migrations.as_ref().expect("migrations").total();
    }
    let (i, o): (u64, u64) = (ins.iter().sum(), outs.iter().sum());
    println!("lab 7.2/{SHAPE}: migrations in per CPU {ins:?}, out {outs:?}, total {total}");
    // The in/out map is read a moment after the classes: a move between shows in one.
    assert!(i.abs_diff(o) <= 2, "in {i} vs out {o}");
    assert!(
        i.abs_diff(total) <= 2 + total / 100,
        "in {i} vs total {total}"
    );
    for c in [1, 2, 4] {
        assert!(
            ins[c] >= 50 && outs[c] >= 50,
            "CPU {c}: in {} out {}",
            ins[c],
            outs[c]
        );
    }
}

#[test]
fn lab_7_2_llc_balancing_knobs_listed_writable() {
    let run = run("7.2", "distances.sh");
    let reg: Value = serde_json::from_str(run.block("knobs_json")).expect("knobs JSON");
    let knobs = reg["knobs"].as_array().unwrap();
    let mut llc: Vec<(String, String, String)> = knobs
        .iter()
        .filter(|k| k["family"] == "llc_balancing")
        .map(|k| {
            (
                k["id"].as_str().unwrap().to_string(),
                k["type"].as_str().unwrap().to_string(),
                k["access"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    llc.sort();
    println!("lab 7.2/{SHAPE}: {llc:?}");
    let ids: Vec<&str> = llc.iter().map(|k| k.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "llc_balancing.aggr_tolerance",
            "llc_balancing.enabled",
            "llc_balancing.epoch_affinity_timeout",
            "llc_balancing.epoch_period",
            "llc_balancing.imb_pct",
            "llc_balancing.overaggr_pct",
        ]
    );
    assert!(
        llc.iter().all(|k| k.2 == "writable"),
        "root in the guest, no lockdown"
    );
    assert_eq!(llc[1].1, "bool", "enabled is a switch");
    // Types, ranges and meanings from 7.2's fair.c; an out-of-range value is refused
    // before anything is written.
    let range = |id: &str| -> (i64, i64, String) {
        let k = knobs.iter().find(|k| k["id"] == id).expect(id);
        (
            k["min"].as_i64().unwrap_or(i64::MIN),
            k["max"].as_i64().unwrap_or(i64::MIN),
            k["description"].as_str().unwrap_or("").to_string(),
        )
    };
    for (id, lo, hi) in [
        ("llc_balancing.aggr_tolerance", 0, 100),
        ("llc_balancing.epoch_period", 1, 10_000),
        ("llc_balancing.epoch_affinity_timeout", 0, 10_000),
        ("llc_balancing.imb_pct", 0, 1_000),
        ("llc_balancing.overaggr_pct", 0, 1_000),
    ] {
        let (min, max, d) = range(id);
        println!("lab 7.2/{SHAPE}: {id} {min}..={max}: {d}");
        assert_eq!((min, max), (lo, hi), "{id}");
        assert!(d.contains("Range"), "{id}: {d}");
    }
    println!(
        "lab 7.2/{SHAPE}: aggr_tolerance=500: rc {} {}",
        run.value("refused_rc"),
        run.block("refused").trim()
    );
    assert_eq!(run.value("refused_rc"), "4", "refused as invalid");
    assert!(run.block("refused").contains("outside 0..=100"));
    assert_eq!(run.value("aggr_after_refusal"), "1", "nothing written");
    // No cgroup v1 cpuset on 7.2: relax_domain_level says why it cannot be changed.
    let relax = knobs
        .iter()
        .find(|k| k["id"] == "relax_domain_level")
        .expect("relax_domain_level listed");
    println!(
        "lab 7.2/{SHAPE}: relax_domain_level {} {}",
        relax["access"], relax["reason"]
    );
    assert_eq!(relax["access"], "read_only");
    assert!(
        relax["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no runtime interface")),
        "{relax}"
    );
}
