//! The procfs source on a synthetic kernel root: the topology of the `offline-2s-32cpu`
//! fixture plus a hand-made /proc whose threads move between two reads in known ways.
//! Every count and attribution in the resulting snapshot is known in advance.
//!
//! Topology: llc0 = 0-2,16-18 (node0), llc1 = 4-7,20-23 (node0), llc2 = 8-9,11,24-27
//! (node1), llc3 = 12-15,28-31 (node1); cpu n and n+16 are SMT siblings; 3, 10, 19 offline.

use std::fs;
use std::path::Path;

use llctop::collect::Collector;
use llctop::snapshot::{Precision, PreferredKind, SourceState};
use llctop::source::procfs::ProcfsSource;

use crate::common;
use common::{put, writable_root};

fn tps() -> u64 {
    // SAFETY: no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as u64
}

/// A 52-field /proc/PID/task/TID/stat line.
fn stat_line(tid: u32, comm: &str, state: char, starttime: u64, cpu: u32) -> String {
    let mut f: Vec<String> = vec![tid.to_string(), format!("({comm})"), state.to_string()];
    f.extend(std::iter::repeat_n("0".to_string(), 49));
    // fields are 1-based in proc(5): starttime 22, num_threads 20, processor 39
    f[21] = starttime.to_string();
    f[19] = "1".into();
    f[38] = cpu.to_string();
    f.join(" ") + "\n"
}

struct Thread {
    pid: u32,
    tid: u32,
    comm: &'static str,
    state: char,
    cpu: u32,
    runtime: u64,
    wait: u64,
    start_s: f64,
}

fn write_proc(
    root: &Path,
    threads: &[Thread],
    uptime: f64,
    stat_cpu_busy: &[(u32, u64, u64)],
    ctxt: u64,
) {
    let _ = fs::remove_dir_all(root.join("proc"));
    for t in threads {
        let base = format!("proc/{}/task/{}", t.pid, t.tid);
        let start = (t.start_s * tps() as f64) as u64;
        put(
            root,
            &format!("{base}/stat"),
            &stat_line(t.tid, t.comm, t.state, start, t.cpu),
        );
        put(
            root,
            &format!("{base}/schedstat"),
            &format!("{} {} 1\n", t.runtime, t.wait),
        );
    }
    put(root, "proc/uptime", &format!("{uptime:.2} 0.00\n"));
    let mut stat = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
    for &(cpu, busy, idle) in stat_cpu_busy {
        stat.push_str(&format!("cpu{cpu} {busy} 0 0 {idle} 0 0 0 0 0 0\n"));
    }
    stat.push_str(&format!(
        "intr 0\nctxt {ctxt}\nbtime 1\nprocesses 10\nprocs_running 3\nprocs_blocked 0\n"
    ));
    put(root, "proc/stat", &stat);
}

#[allow(clippy::too_many_arguments)]
fn th(
    pid: u32,
    tid: u32,
    comm: &'static str,
    state: char,
    cpu: u32,
    runtime: u64,
    wait: u64,
    start_s: f64,
) -> Thread {
    Thread {
        pid,
        tid,
        comm,
        state,
        cpu,
        runtime,
        wait,
        start_s,
    }
}

#[test]
fn known_moves_are_counted_and_classified() {
    let (dir, kroot, topo) = writable_root("offline-2s-32cpu");
    let root = dir.path();
    assert_eq!(topo.llcs.len(), 4);

    const MS: u64 = 1_000_000;
    let before = [
        th(100, 100, "app", 'S', 0, 10 * MS, 1000, 1.0),
        th(100, 101, "app-w1", 'S', 1, 20 * MS, 2000, 1.0),
        th(100, 102, "app-w2", 'S', 4, 30 * MS, 3000, 1.0),
        th(100, 104, "app-idle", 'S', 6, 9 * MS, 900, 1.0),
        th(200, 200, "other", 'R', 8, 50 * MS, 0, 1.0),
        th(300, 300, "gone", 'S', 12, 5 * MS, 0, 1.0),
    ];
    let cpus: Vec<u32> = topo.online_cpus().map(|c| c.cpu).collect();
    let stat0: Vec<(u32, u64, u64)> = cpus.iter().map(|&c| (c, 1000, 1000)).collect();
    write_proc(root, &before, 100.0, &stat0, 5000);

    let mut col = Collector::new(
        &kroot,
        topo.clone(),
        vec![Box::new(ProcfsSource::new(kroot.clone(), 10))],
    );
    let baseline = col.baseline();
    assert!(
        baseline
            .iter()
            .any(|s| s.name == "procfs.stat" && s.state == SourceState::Active)
    );

    let after = [
        th(100, 100, "app", 'R', 16, 11 * MS, 1100, 1.0), // SMT sibling of 0
        th(100, 101, "app-w1", 'S', 2, 22 * MS, 2200, 1.0), // same LLC
        th(100, 102, "app-w2", 'R', 8, 33 * MS, 3300, 1.0), // cpu4 node0 -> cpu8 node1
        th(100, 103, "app-new", 'S', 5, 4 * MS, 400, 100.5), // born in the interval
        th(100, 104, "app-idle", 'S', 6, 9 * MS, 900, 1.0), // neither ran nor waited
        th(200, 200, "other", 'R', 9, 55 * MS, 0, 1.0),   // same LLC
        th(400, 400, "late", 'S', 13, 7 * MS, 0, 2.0),    // existed before but was missed
    ];
    // cpu0: 50 busy / 50 idle ticks in the interval; the rest idle.
    let stat1: Vec<(u32, u64, u64)> = cpus
        .iter()
        .map(|&c| {
            if c == 0 {
                (c, 1050, 1050)
            } else {
                (c, 1000, 1100)
            }
        })
        .collect();
    write_proc(root, &after, 101.0, &stat1, 5600);
    let s = col.tick().expect("second tick gives a snapshot");

    // migrations: one of each kind except cross-LLC-same-node
    let m = s.migrations.as_ref().unwrap();
    assert_eq!(m.precision, Precision::Sampled);
    assert_eq!(
        (
            m.by_distance.smt,
            m.by_distance.llc,
            m.by_distance.cross_llc,
            m.by_distance.cross_node
        ),
        (1, 2, 0, 1)
    );
    assert_eq!(m.llc_matrix[0][0], 2);
    assert_eq!(m.llc_matrix[1][2], 1);
    assert_eq!(m.llc_matrix[2][2], 1);

    // per CPU
    let cpu = |n: u32| s.cpus.iter().find(|c| c.cpu == n).unwrap();
    assert_eq!(
        (cpu(0).migrations_out, cpu(16).migrations_in),
        (Some(1), Some(1))
    );
    assert_eq!(
        (cpu(8).migrations_in, cpu(8).migrations_out),
        (Some(1), Some(1))
    );
    assert_eq!(
        cpu(8).rq_wait_ns,
        Some(300),
        "t102's wait delta lands on its new CPU"
    );
    assert_eq!(
        cpu(5).rq_wait_ns,
        Some(400),
        "a new thread counts from zero"
    );
    assert_eq!(
        (cpu(16).runnable, cpu(9).runnable, cpu(2).runnable),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(cpu(0).busy, Some(0.5));
    assert_eq!(cpu(1).busy, Some(0.0));
    assert_eq!(cpu(3).busy, None, "offline CPU has no value, not zero");
    assert!(!cpu(3).online);
    assert_eq!(s.system.ctx_switches, Some(600));

    // LLC/node aggregates from the collector
    assert_eq!(s.llcs[0].migrations_within, Some(2));
    assert_eq!(
        (s.llcs[1].migrations_out, s.llcs[2].migrations_in),
        (Some(1), Some(1))
    );
    assert_eq!(
        (
            s.nodes[0].migrations_out,
            s.nodes[1].migrations_in,
            s.nodes[1].migrations_within
        ),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(
        s.llcs[0].busy,
        Some(0.5 / 6.0 * 1.0),
        "cpu0 at 50% among llc0's 6 online CPUs"
    );

    // processes
    let t = s.processes.as_ref().unwrap();
    assert_eq!(t.precision, Precision::Sampled);
    assert_eq!(t.total, 3, "100, 200, 400 alive");
    let app = t.rows.iter().find(|r| r.pid == 100).unwrap();
    assert_eq!((app.comm.as_str(), app.threads), ("app", 5));
    assert_eq!(app.cpu_time_ns, 10 * MS, "1 + 2 + 3 + 4 ms");
    assert_eq!(app.runtime_per_llc_ns, vec![3 * MS, 4 * MS, 3 * MS, 0]);
    assert_eq!(
        (app.llc_spread, app.migrations, app.cross_llc_migrations),
        (3, 3, 1)
    );
    assert_eq!(app.rq_wait_ns, 100 + 200 + 300 + 400);
    assert_eq!(
        (app.preferred_llc, app.preferred_kind),
        (Some(1), PreferredKind::Emulated)
    );
    assert_eq!(app.preferred_hit, Some(0.4));
    let other = t.rows.iter().find(|r| r.pid == 200).unwrap();
    assert_eq!(
        (other.cpu_time_ns, other.preferred_llc, other.preferred_hit),
        (5 * MS, Some(2), Some(1.0))
    );
    assert!(
        t.rows.iter().all(|r| r.pid != 400),
        "a thread missed before has no known delta"
    );
    assert_eq!(t.rows[0].pid, 100, "sorted by CPU time");

    // sources: schedstat is absent in this tree and says so
    let st = s
        .sources
        .iter()
        .find(|x| x.name == "procfs.schedstat")
        .unwrap();
    assert_eq!(st.state, SourceState::Absent);
    assert!(
        st.reason
            .as_deref()
            .unwrap()
            .contains("schedstat unavailable")
    );
    assert!(s.balance.is_none());
}

#[test]
fn schedstat_balance_appears_when_the_file_does() {
    let (dir, kroot, topo) = writable_root("devvm-2cpu");
    let root = dir.path();
    write_proc(root, &[], 10.0, &[(0, 1, 1), (1, 1, 1)], 1);
    let line = |n: u64| {
        let mut v = vec![0u64; 45];
        v[11] = n; // idle block lb_count (v17: busy 0..11, idle 11..22)
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    put(
        root,
        "proc/schedstat",
        &format!(
            "version 17\ntimestamp 1\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 {}\ncpu1 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 {}\n",
            line(5),
            line(7)
        ),
    );
    put(root, "proc/sys/kernel/sched_schedstats", "1\n");
    let mut col = Collector::new(
        &kroot.clone(),
        topo,
        vec![Box::new(ProcfsSource::new(kroot, 10))],
    );
    col.baseline();
    write_proc(root, &[], 11.0, &[(0, 2, 2), (1, 2, 2)], 2);
    put(
        root,
        "proc/schedstat",
        &format!(
            "version 17\ntimestamp 2\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 {}\ncpu1 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 {}\n",
            line(15),
            line(8)
        ),
    );
    let s = col.tick().unwrap();
    let b = s.balance.expect("balance");
    assert_eq!(b.version, 17);
    assert_eq!(b.domains.len(), 1);
    assert_eq!(
        (
            b.domains[0].name.as_deref(),
            b.domains[0].idle.count,
            b.domains[0].busy.count
        ),
        (Some("MC"), 11, 0)
    );
    let st = s
        .sources
        .iter()
        .find(|x| x.name == "procfs.schedstat")
        .unwrap();
    assert_eq!(st.state, SourceState::Active);

    // A malformed file is reported with its path, not a crash.
    put(
        root,
        "proc/schedstat",
        "version 17\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 MC 3 1 2\n",
    );
    let s = col.tick().unwrap();
    let st = s
        .sources
        .iter()
        .find(|x| x.name == "procfs.schedstat")
        .unwrap();
    assert_eq!(st.state, SourceState::Absent);
    let reason = st.reason.as_deref().unwrap();
    assert!(
        reason.contains("proc/schedstat") && reason.contains("45 counters"),
        "{reason}"
    );
}
