//! Writes a big synthetic recording with the shape of a real one, to measure how
//! `llctop report` and `llctop replay` scale with recording length and machine size
//! (issue "Scale"; scripts/scale-recording.sh). Every field a BPF + procfs recording on a
//! machine with schedstat, NUMA and no PMU fills is filled: per-CPU busy, steal, context
//! switches, migrations, run-queue wait and its histogram; the LLC × LLC matrix, by
//! distance and cause; 64 process rows with runtime per LLC; load balancing per domain
//! level; NUMA counters; detail events; source states. Values vary (a fixed-seed
//! generator) so that gzip compresses them as it does real ones.
//!
//! Run: `cargo run --release --example gen_recording -- OUT.jsonl.gz [SNAPSHOTS]
//! [NODES LLCS_PER_NODE CPUS_PER_LLC]` (default 3600 snapshots of 2 × 16 × 8 = 256 CPUs).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use llctop::collect::{aggregate, empty_snapshot};
use llctop::record::{Header, Writer};
use llctop::snapshot::{
    Balance, ByCause, ByDistance, CgroupNuma, DetailEvent, DomainBalance, EventKind, EventLog,
    LbStats, Migrations, NodeNuma, NumaStats, Precision, PreferredKind, ProcessStats, ProcessTable,
    Snapshot, SourceState, SourceStatus,
};
use llctop::topology::{self, Topology};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn frac(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn sources() -> Vec<SourceStatus> {
    [
        ("bpf", SourceState::Active, "tp_btf; every event counted in the kernel; waits from the kernel's sched_info; preferred LLC emulated from runtime per LLC"),
        ("perf", SourceState::Absent, "no PMU: perf_event_open(cycles) ENOENT"),
        ("procfs", SourceState::Active, "/proc/stat, /proc/schedstat v17"),
        ("procfs.numa", SourceState::Active, "vmstat, numastat, cgroup memory.stat"),
    ]
    .into_iter()
    .map(|(name, state, reason)| SourceStatus {
        name: name.into(),
        state,
        reason: Some(reason.into()),
        note: None,
    })
    .collect()
}

fn snapshot(topo: &Topology, seq: u64, rng: &mut Rng) -> Snapshot {
    let mut s = empty_snapshot(topo);
    let interval = 1_000_000_000u64;
    s.seq = seq;
    s.time.interval_ns = interval + rng.below(200_000);
    s.time.mono_ns = 1_000_000_000_000 + (seq + 1) * interval;
    s.time.unix_ns = 1_790_000_000_000_000_000 + (seq + 1) * interval;
    let n_llc = topo.llcs.len();
    let n_cpu = s.cpus.len();
    for c in &mut s.cpus {
        c.busy = Some(rng.frac());
        c.steal = Some(rng.frac() * 0.01);
        c.ctx_switches = Some(rng.below(20_000));
        c.migrations_in = Some(rng.below(500));
        c.migrations_out = Some(rng.below(500));
        c.rq_wait_ns = Some(rng.below(50_000_000));
        c.runnable = Some(rng.below(4) as u32);
        c.rq_wait_hist = Some((0..32).map(|i| rng.below(1 << (16 - i / 2))).collect());
    }
    s.system.busy = Some(rng.frac());
    s.system.user = Some(rng.frac() * 0.5);
    s.system.system = Some(rng.frac() * 0.2);
    s.system.ctx_switches = Some(rng.below(5_000_000));
    s.system.forks = Some(rng.below(2_000));
    s.system.procs_running = Some(rng.below(300) as u32);
    s.system.procs_blocked = Some(rng.below(10) as u32);
    s.system.load = Some([rng.frac() * 200.0, rng.frac() * 200.0, rng.frac() * 200.0]);
    let dist = |rng: &mut Rng| ByDistance {
        smt: rng.below(10_000),
        llc: rng.below(50_000),
        cross_llc: rng.below(20_000),
        cross_node: rng.below(5_000),
    };
    let by_distance = dist(rng);
    s.migrations = Some(Migrations {
        precision: Precision::Exact,
        by_distance,
        by_cause: Some(ByCause {
            wakeup: rng.below(50_000),
            load_balance: rng.below(20_000),
            numa: rng.below(1_000),
            active_balance: rng.below(100),
            other: rng.below(1_000),
        }),
        llc_matrix: (0..n_llc)
            .map(|_| (0..n_llc).map(|_| rng.below(200)).collect())
            .collect(),
        unclassified: 0,
        preferred: None,
    });
    s.processes = Some(ProcessTable {
        precision: Precision::Exact,
        total: 2_000 + rng.below(500) as u32,
        rows: (0..64)
            .map(|i| {
                let per_llc: Vec<u64> = (0..n_llc)
                    .map(|_| {
                        if rng.below(4) == 0 {
                            rng.below(500_000_000)
                        } else {
                            0
                        }
                    })
                    .collect();
                let d = dist(rng);
                ProcessStats {
                    pid: 10_000 + i * 37 + (seq / 600) as u32,
                    comm: format!("worker-{}", i % 16),
                    threads: 1 + rng.below(64) as u32,
                    cpu_time_ns: per_llc.iter().sum(),
                    llc_spread: per_llc.iter().filter(|&&r| r > 0).count() as u32,
                    runtime_per_llc_ns: per_llc,
                    preferred_llc: Some(rng.below(n_llc as u64) as u32),
                    preferred_kind: PreferredKind::Emulated,
                    preferred_hit: Some(rng.frac()),
                    migrations: d.total(),
                    cross_llc_migrations: d.cross_llc + d.cross_node,
                    migrations_by_distance: Some(d),
                    rq_wait_ns: rng.below(100_000_000),
                    cgroup: Some(format!("/system.slice/build-{}.service", i % 8)),
                    ..ProcessStats::default()
                }
            })
            .collect(),
        ..ProcessTable::default()
    });
    let lb = |rng: &mut Rng| LbStats {
        count: rng.below(10_000),
        balanced: rng.below(8_000),
        failed: rng.below(500),
        gained: rng.below(300),
        ..LbStats::default()
    };
    s.balance = Some(Balance {
        version: 17,
        domains: ["SMT", "MC", "PKG", "NUMA"]
            .iter()
            .enumerate()
            .map(|(level, name)| DomainBalance {
                level: level as u32,
                name: Some((*name).into()),
                cpus: n_cpu as u32,
                busy: lb(rng),
                idle: lb(rng),
                newidle: lb(rng),
                ..DomainBalance::default()
            })
            .collect(),
    });
    let keys = [
        "numa_hit",
        "numa_miss",
        "numa_foreign",
        "numa_interleave",
        "numa_local",
        "numa_other",
        "numa_pte_updates",
        "numa_huge_pte_updates",
        "numa_hint_faults",
        "numa_hint_faults_local",
        "numa_pages_migrated",
        "pgmigrate_success",
        "pgmigrate_fail",
    ];
    s.numa = Some(NumaStats {
        balancing_mode: Some(1),
        vmstat: keys
            .iter()
            .map(|k| (k.to_string(), rng.below(100_000)))
            .collect::<BTreeMap<_, _>>(),
        nodes: (0..topo.nodes.len() as u32)
            .map(|node| NodeNuma {
                node,
                counters: keys[..6]
                    .iter()
                    .map(|k| (k.to_string(), rng.below(100_000)))
                    .collect(),
                mem_total_kb: Some(512 << 20),
                mem_free_kb: Some(rng.below(512 << 20)),
            })
            .collect(),
        cgroups: (0..8)
            .map(|i| CgroupNuma {
                path: format!("/system.slice/build-{i}.service"),
                numa_pages_migrated: Some(rng.below(1_000)),
                numa_pte_updates: Some(rng.below(10_000)),
                numa_hint_faults: Some(rng.below(5_000)),
            })
            .collect(),
    });
    s.events = Some(EventLog {
        idle_waits: None,
        dropped: rng.below(100),
        events: (0..48)
            .map(|_| {
                let from = rng.below(n_cpu as u64) as i32;
                let to = rng.below(n_cpu as u64) as i32;
                DetailEvent {
                    kind: EventKind::Migration,
                    mono_ns: s.time.mono_ns - rng.below(interval),
                    pid: 10_000 + rng.below(5_000) as u32,
                    tgid: 10_000 + rng.below(2_000) as u32,
                    comm: "worker".into(),
                    from_cpu: from,
                    to_cpu: to,
                    distance: topo.distance(from as u32, to as u32),
                    cause: None,
                    nr_cpus_allowed: n_cpu as u32,
                    idle_allowed: None,
                    idle_cpu: None,
                }
            })
            .collect(),
    });
    s.sources = sources();
    aggregate(topo, &mut s);
    s
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = PathBuf::from(args.first().ok_or(
        "usage: gen_recording OUT.jsonl[.gz] [SNAPSHOTS] [NODES LLCS_PER_NODE CPUS_PER_LLC]",
    )?);
    let num = |i: usize, default: u64| -> Result<u64, String> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse().map_err(|e| format!("{a}: {e}")))
    };
    let n = num(1, 3600)?;
    let topo = topology::synthetic(num(2, 2)? as u32, num(3, 16)? as u32, num(4, 8)? as u32);
    let header = Header::new(
        (Some("synthetic".into()), Some("7.2.0".into())),
        Duration::from_secs(1),
        topo.clone(),
        sources(),
    );
    let mut w = Writer::create(&out, &header).map_err(|e| e.to_string())?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for seq in 0..n {
        w.write_snapshot(&snapshot(&topo, seq, &mut rng))
            .map_err(|e| e.to_string())?;
    }
    drop(w);
    eprintln!(
        "{}: {n} snapshots of {} ({} bytes)",
        out.display(),
        topo.summary(),
        std::fs::metadata(&out).map_or(0, |m| m.len())
    );
    Ok(())
}
