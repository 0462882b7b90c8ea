//! The seed lab: llctop on the seeds' own machine shape and kernel — 8 vCPUs in QEMU 10
//! (tests/lab/lab.sh, shape `2s4llc-smt`): two sockets × two cores × two SMT threads, an
//! L3 per core, so two LLCs per NUMA node with SMT inside each (EPYC CCXs in miniature),
//! on Debian's 7.2 kernel (cache-aware scheduling, schedstat v17, `llc_balancing/`). One
//! boot per scenario; each test checks one aspect and prints what it compared.

mod common;

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

/// The workload's own view: passes per second since its start, per llctop LLC.
struct Passes {
    start_mono_ns: u64,
    /// `[second][llc]`
    per_sec: Vec<Vec<u64>>,
}

impl Passes {
    fn parse(text: &str, llc_of_cpu: &[usize], nr_llc: usize) -> Passes {
        let mut p = Passes {
            start_mono_ns: 0,
            per_sec: Vec::new(),
        };
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["start_mono_ns", ns] => p.start_mono_ns = ns.parse().unwrap(),
                ["passes", sec, _tid, cpu, n] => {
                    let (sec, cpu, n): (usize, usize, u64) = (
                        sec.parse().unwrap(),
                        cpu.parse().unwrap(),
                        n.parse().unwrap(),
                    );
                    if p.per_sec.len() <= sec {
                        p.per_sec.resize(sec + 1, vec![0; nr_llc]);
                    }
                    p.per_sec[sec][llc_of_cpu[cpu]] += n;
                }
                _ => {}
            }
        }
        assert!(
            p.start_mono_ns > 0 && !p.per_sec.is_empty(),
            "workload output: {text}"
        );
        p
    }

    /// The share of the passes on `llc` in the second a snapshot ending at `mono_ns`
    /// mostly covers (`None` outside the run).
    fn share(&self, mono_ns: u64, llc: usize) -> Option<f64> {
        let end = mono_ns.checked_sub(self.start_mono_ns)? as f64 / 1e9;
        let sec = (end - 1.0).round();
        let v = self.per_sec.get(usize::try_from(sec as i64).ok()?)?;
        let total: u64 = v.iter().sum();
        (total > 0).then(|| v[llc] as f64 / total as f64)
    }
}

#[test]
fn lab_7_2_kernel_preferred_llc_is_where_the_kernel_gathers_the_threads() {
    let run = run("7.2", "cache_aware.sh");
    // llctop raised the tolerance for its run and put it back.
    assert_eq!(
        (
            run.value("aggr_before"),
            run.value("aggr_during"),
            run.value("aggr_after")
        ),
        ("1", "100", "1")
    );
    let t: Value = serde_json::from_str(run.block("topology")).expect("topology JSON");
    let llcs = cpus_of(&t["llcs"]);
    let mut llc_of_cpu = vec![0; 8];
    for (l, cpus) in llcs.iter().enumerate() {
        for &c in cpus {
            llc_of_cpu[c as usize] = l;
        }
    }
    let passes = Passes::parse(run.block("share_out"), &llc_of_cpu, llcs.len());
    let rec = recording(run, "cache_aware_recording");
    let pid: u32 = run.value("share_pid").parse().unwrap();
    let cut: u64 = run.value("cut_after_snapshots").parse().unwrap();
    let rows: Vec<(u64, u64, &llctop::snapshot::ProcessStats)> = rec
        .snapshots
        .iter()
        .filter_map(|s| {
            let r = s.processes.as_ref()?.rows.iter().find(|r| r.pid == pid)?;
            Some((s.seq, s.time.mono_ns, r))
        })
        .collect();
    for (seq, mono, r) in &rows {
        let oracle: Vec<String> = (0..llcs.len())
            .map(|l| format!("{:.2}", passes.share(*mono, l).unwrap_or(f64::NAN)))
            .collect();
        println!(
            "lab 7.2/{SHAPE}: #{seq} preferred {:?} ({:?}) hit {:?}; the threads' own share per LLC {oracle:?}",
            r.preferred_llc, r.preferred_kind, r.preferred_hit
        );
        assert_eq!(
            r.preferred_kind,
            llctop::snapshot::PreferredKind::Kernel,
            "7.2: the kernel's own preference"
        );
    }
    // Before the cut, once gathered (llctop's hit >= 0.9): the LLC llctop names is where
    // the threads themselves ran, and the hit ratio is their share there.
    let before: Vec<_> = rows
        .iter()
        .filter(|(seq, _, r)| {
            *seq < cut && r.preferred_llc.is_some() && r.preferred_hit.is_some_and(|h| h >= 0.9)
        })
        .collect();
    assert!(
        before.len() >= 2,
        "the kernel gathered the threads before the cut (gathered_before_cut {})",
        run.value("gathered_before_cut")
    );
    let mut compared = 0;
    for (seq, mono, r) in &before {
        let l = r.preferred_llc.unwrap() as usize;
        let Some(share) = passes.share(*mono, l) else {
            continue; // the snapshot's second is not in the workload's run
        };
        compared += 1;
        let hit = r.preferred_hit.unwrap();
        assert!(
            share >= 0.9,
            "#{seq}: llctop names LLC {l}, the threads ran there {share:.2} of their passes"
        );
        assert!(
            (hit - share).abs() <= 0.15,
            "#{seq}: hit ratio {hit:.2} vs the threads' share {share:.2}"
        );
    }
    assert!(
        compared >= 2,
        "gathered snapshots compared with the workload: {compared}"
    );
    let gathered = before.last().unwrap().2.preferred_llc.unwrap() as usize;
    // After the cut (tolerance 0: never aggregate) the kernel drops the preference:
    // llctop shows none from the next intervals on, never the last value seen, and the
    // threads spread (their own view), so the drop is the kernel's.
    let after: Vec<_> = rows
        .iter()
        .filter(|(seq, mono, _)| *seq >= cut + 2 && passes.share(*mono, 0).is_some())
        .collect();
    assert!(after.len() >= 5, "the workload ran on after the cut");
    for (seq, _, r) in &after[..after.len() - 1] {
        assert_eq!(
            r.preferred_llc, None,
            "#{seq}: a cleared preference shows as none"
        );
        assert_eq!(r.preferred_hit, None, "#{seq}");
    }
    let spread: Vec<f64> = after
        .iter()
        .filter_map(|(_, mono, _)| passes.share(*mono, gathered))
        .collect();
    let mean = spread.iter().sum::<f64>() / spread.len() as f64;
    println!("lab 7.2/{SHAPE}: after the cut, the threads' share on LLC {gathered}: {mean:.2}");
    assert!(
        mean < 0.8,
        "the threads spread once the kernel dropped the preference"
    );
}
