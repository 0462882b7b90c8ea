//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.
//! One module per scenario (tests/lab/seed_*.rs); this one: trace.sh — a Perfetto trace of the seeds' machine (issue "Timeline").

use crate::common;

use common::lab::LabRun;
use std::collections::BTreeMap;

use serde_json::Value;

const SHAPE: &str = "2s4llc-smt";

fn run(kernel: &str, scenario: &str) -> &'static LabRun {
    common::lab::run(kernel, SHAPE, scenario)
}

#[test]
fn lab_7_2_smt_trace_has_the_machine_each_hop_classified_and_the_pile_up_on_its_process() {
    let run = run("7.2", "trace.sh");
    println!("{}", run.block("trace_err"));
    let d = common::lab::perfetto_of(run, "trace");
    assert_eq!(d["cut"], 0, "a whole trace");
    let tracks = d["tracks"].as_object().unwrap();
    let name = |uuid: &Value| {
        tracks[&uuid.to_string()]["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // The track tree: 2 nodes → 4 LLCs → 8 CPUs, as the guest's sysfs says (cpus 0-3 node 0,
    // an L3 per core: 0-1, 2-3, 4-5, 6-7).
    let (nodes, cpus) = common::cpu_tracks(&d);
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert_eq!(cpus.len(), 8, "{cpus:?}");
    for (c, llc, node) in cpus {
        let first = c - c % 2;
        assert!(
            llc.contains(&format!("LLC {} [{}-{}]", c / 2, first, first + 1)),
            "CPU {c} under {llc}"
        );
        assert!(
            node.starts_with(&format!("node {}", c / 4)),
            "LLC of CPU {c} under {node}"
        );
    }
    // Each hopper's migrations: its own count, each of the distance its CPUs are apart.
    let instants = d["instants"].as_array().unwrap();
    for (key, dist) in [
        ("hop_smt", "smt"),
        ("hop_llc", "cross_llc"),
        ("hop_node", "cross_node"),
    ] {
        let pid: u64 = run.value(&format!("{key}_pid")).parse().unwrap();
        let done = run.block(&format!("{key}_out"));
        let hops: u64 = done
            .lines()
            .find_map(|l| l.strip_prefix("done "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key}: {done}"));
        let mine: Vec<&Value> = instants
            .iter()
            .filter(|e| e["args"]["tid"] == pid && e["categories"][0] == "migration")
            .collect();
        let by: BTreeMap<String, usize> = mine.iter().fold(BTreeMap::new(), |mut m, e| {
            *m.entry(e["args"]["distance"].as_str().unwrap().to_string())
                .or_default() += 1;
            m
        });
        println!("lab 7.2/{SHAPE} trace: {key} ({pid}) hopped {hops}: {by:?}");
        assert_eq!(mine.len() as u64, hops, "{key}: the workload's own count");
        assert_eq!(
            by.get(dist).copied().unwrap_or(0) as u64,
            hops,
            "{key}: all {dist}"
        );
    }
    // Pile-ups: each finding slice of kind pile_up on a process track is on a start whose
    // own output shows threads first run on one CPU.
    let starts: Vec<(u64, String)> = run
        .value("starts")
        .split_whitespace()
        .map(|s| {
            (
                run.value(&format!("{s}_pid")).parse().unwrap(),
                run.block(&format!("{s}_out")).to_string(),
            )
        })
        .collect();
    let piles: Vec<u64> = d["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "begin" && e["categories"][1] == "pile_up")
        .filter_map(|e| tracks[&e["track"].to_string()]["process"][0].as_u64())
        .collect();
    println!("lab 7.2/{SHAPE} trace: pile-up slices on processes {piles:?}");
    for e in d["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "begin")
    {
        println!(
            "  finding slice on {}: {} ({})",
            name(&e["track"]),
            e["name"],
            e["args"]["summary"]
        );
    }
    assert!(
        !piles.is_empty(),
        "a pile-up on a process track:\n{}",
        run.tail()
    );
    for pid in &piles {
        let (_, out) = starts
            .iter()
            .find(|(p, _)| p == pid)
            .unwrap_or_else(|| panic!("pile-up on {pid}, not one of the starts {starts:?}"));
        let firsts: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("thread "))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        let stacked = firsts
            .iter()
            .any(|c| firsts.iter().filter(|x| *x == c).count() >= 2);
        assert!(stacked, "start {pid}: its threads' first CPUs {firsts:?}");
    }
}
