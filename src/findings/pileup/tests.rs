//! The pile-up search, its findings and their cost, on hand-built snapshots.
use super::*;
use crate::findings::Severity;
use crate::snapshot::EventLog;

fn place(tgid: u32, tid: u32, ms: u64, cpu: i32, idle: Option<u32>) -> DetailEvent {
    DetailEvent {
        kind: EventKind::Placement,
        mono_ns: ms * 1_000_000,
        pid: tid,
        tgid,
        comm: "stream".into(),
        from_cpu: 0,
        to_cpu: cpu,
        distance: None,
        cause: None,
        nr_cpus_allowed: 4,
        idle_allowed: idle,
        idle_cpu: idle.filter(|&i| i > 0).map(|_| 6),
    }
}

/// The placements, each followed by the thread's first run on the CPU it was placed.
fn snap(placements: Vec<DetailEvent>) -> Snapshot {
    let mut events = Vec::new();
    for p in placements {
        let run = ran(p.pid, p.to_cpu);
        events.push(p);
        events.push(run);
    }
    Snapshot {
        events: Some(EventLog {
            dropped: 0,
            events,
            idle_waits: None,
        }),
        ..Default::default()
    }
}

fn ran(tid: u32, cpu: i32) -> DetailEvent {
    DetailEvent {
        kind: EventKind::FirstRun,
        from_cpu: -1,
        to_cpu: cpu,
        idle_allowed: None,
        idle_cpu: None,
        ..place(0, tid, 0, cpu, None)
    }
}

#[test]
fn two_threads_on_one_cpu_with_an_idle_allowed_cpu_is_a_pile_up() {
    // The seed's trace: 0, 2 taken, then the rest piled on 0 and 2 while 4, 6 idle.
    let s = snap(vec![
        place(10, 11, 0, 0, Some(3)),
        place(10, 12, 1, 2, Some(2)),
        place(10, 13, 2, 0, Some(2)),
        place(10, 14, 3, 2, Some(2)),
    ]);
    let p = find([&s]);
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!((p[0].cpu, p[0].threads, p[0].placed), (0, 2, 4));
    assert_eq!((p[0].idle_allowed, p[0].idle_cpu), (2, Some(6)));
    assert_eq!(p[1].cpu, 2);
    assert!(
        p[0].describe()
            .contains("2 threads of 10 (stream) placed on CPU 0")
    );
}

#[test]
fn stacking_with_every_allowed_cpu_busy_is_not() {
    let s = snap(vec![
        place(10, 11, 0, 0, Some(1)),
        place(10, 12, 1, 2, Some(0)),
        place(10, 13, 2, 0, Some(0)),
    ]);
    assert!(find([&s]).is_empty());
}

#[test]
fn spread_threads_are_not() {
    let s = snap(
        (0..4)
            .map(|i| place(10, 11 + i, i as u64, 2 * i as i32, Some(3 - i)))
            .collect(),
    );
    assert!(find([&s]).is_empty());
}

#[test]
fn starts_are_split_by_a_gap_and_processes_apart() {
    // The same CPU a second apart: two starts, no pile-up; another process's thread
    // on the same CPU does not count either.
    let a = snap(vec![
        place(10, 11, 0, 0, Some(3)),
        place(20, 21, 10, 0, Some(3)),
    ]);
    let b = snap(vec![place(10, 12, 1_000, 0, Some(3))]);
    assert!(find([&a, &b]).is_empty());
    // Across snapshots within the gap: one start.
    let c = snap(vec![place(10, 13, 1_500, 0, Some(3))]);
    let p = find([&b, &c]);
    assert_eq!(
        (p.len(), p[0].first_ns, p[0].last_ns),
        (1, 1_000_000_000, 1_500_000_000)
    );
}

#[test]
fn a_thread_moved_before_it_first_ran_did_not_pile_up() {
    // Placed on 0 with the parent, pulled to idle CPU 1 before it ran (seen on a
    // 2-CPU VM); the next thread placed on 0 and run there is alone on it.
    let mut s = snap(vec![place(10, 12, 1, 0, Some(1))]);
    let log = s.events.as_mut().unwrap();
    log.events.push(place(10, 11, 0, 0, Some(1)));
    log.events.push(ran(11, 1));
    assert!(find([&s]).is_empty());
}

#[test]
fn placements_without_idle_information_are_never_guessed() {
    let s = snap(vec![place(10, 11, 0, 0, None), place(10, 12, 1, 0, None)]);
    assert!(find([&s]).is_empty());
}

#[test]
fn a_window_judges_a_start_it_cuts_whole_from_its_look_behind() {
    let topo = crate::topology::synthetic(1, 1, 8);
    let held = std::collections::BTreeSet::new();
    // A pile-up at 0.5 s into the snapshot of seq 3 (covering 3..4 s).
    let mut snaps: Vec<Snapshot> = (0..8)
        .map(|seq| crate::findings::testing::snap(&topo, seq, 0.5))
        .collect();
    let mut s = snap(vec![
        place(10, 11, 3500, 0, Some(3)),
        place(10, 12, 3501, 0, Some(2)),
    ]);
    s.seq = 3;
    s.time = snaps[3].time;
    snaps[3] = s;
    // A second start of another process whose first placement falls 0.2 s before the
    // window 4..=8 and whose second falls in it: that window judges it whole.
    snaps.push(crate::findings::testing::snap(&topo, 8, 0.5));
    let mut s = snap(vec![place(20, 21, 3800, 0, Some(3))]);
    s.events
        .as_mut()
        .unwrap()
        .events
        .extend(snaps[3].events.as_ref().unwrap().events.clone());
    s.seq = 3;
    s.time = snaps[3].time;
    snaps[3] = s;
    let mut s = snap(vec![place(20, 22, 4300, 0, Some(2))]);
    s.seq = 4;
    s.time = snaps[4].time;
    snaps[4] = s;
    for end in 3..9 {
        let w = Window::trailing(&snaps[..=end], &topo, &held);
        let f: Vec<Finding> = detect(&w).into_iter().filter(|f| f.pids == [10]).collect();
        // Process 10's start (3.5 s) reaches into every window up to the one that
        // begins after it.
        let want = usize::from(w.start_mono_ns() <= 3_501_000_000);
        assert_eq!(f.len(), want, "window {}..={}", w.first_seq(), w.last_seq());
        let other: Vec<Finding> = detect(&w).into_iter().filter(|f| f.pids == [20]).collect();
        if end >= 4 && w.start_mono_ns() <= 4_300_000_000 {
            assert_eq!(
                other.len(),
                1,
                "window {}..={}",
                w.first_seq(),
                w.last_seq()
            );
            assert!(other[0].key.ends_with("at 3800000000"), "{}", other[0].key);
        }
        if let Some(f) = f.first() {
            // No process rows here: its cost is not measured, so it is only info.
            assert_eq!(f.severity, Severity::Info);
            assert!(
                f.summary.contains("its cost is not measured"),
                "{}",
                f.summary
            );
            assert_eq!(f.cpus, [0, 6]);
            assert!(
                f.summary
                    .contains("2 threads of 10 (stream) placed on CPU 0")
            );
        }
    }
}

#[test]
fn a_start_stays_judged_until_its_measured_waits_come() {
    use crate::snapshot::{IdleWait, ProcessStats, ProcessTable};
    let topo = crate::topology::synthetic(1, 2, 2);
    let held = Default::default();
    // Intervals as a run's first ones can be: #1 stretched by a missed tick (2.503 s,
    // ending 3.003 s), then 1 s (#2 0.997 s). A start at 2.5..3.001 s, delivered
    // with #1; its threads' waits come with the first reads 2 s after each placement:
    // thread 11's with #3 (5 s), thread 12's with #4 (6 s).
    let ends = [500, 3003, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000];
    let mut snaps: Vec<Snapshot> = (0..ends.len() as u64)
        .map(|seq| crate::findings::testing::snap(&topo, seq, 0.5))
        .collect();
    let mut s = snap(vec![
        place(10, 11, 2500, 0, Some(1)),
        place(10, 12, 3001, 0, Some(1)),
    ]);
    s.seq = 1;
    s.cpus = snaps[1].cpus.clone();
    snaps[1] = s;
    let mut prev = 0;
    for (s, end) in snaps.iter_mut().zip(ends) {
        s.time.mono_ns = end * 1_000_000;
        s.time.interval_ns = (end - prev) * 1_000_000;
        prev = end;
        let mut c = s.cpus[0].clone();
        c.cpu = 6;
        c.busy = Some(0.0);
        s.cpus.push(c);
        s.processes = Some(ProcessTable {
            rows: vec![ProcessStats {
                pid: 10,
                comm: "stream".into(),
                cpu_time_ns: 600_000_000,
                rq_wait_ns: 400_000_000,
                ..Default::default()
            }],
            ..Default::default()
        });
        s.events.get_or_insert_with(Default::default).idle_waits = Some(vec![]);
    }
    let waited = |pid: u32, placed_ms: u64| IdleWait {
        pid,
        tgid: 10,
        cpu: 6,
        placed_ns: placed_ms * 1_000_000,
        wait_ns: 30_000_000,
        waits: 2,
        idle_ns: 20_000_000,
        partial: 0,
    };
    for (seq, w) in [(3, waited(11, 2500)), (4, waited(12, 3001))] {
        if let Some(e) = snaps[seq].events.as_mut() {
            e.idle_waits = Some(vec![w]);
        }
    }
    let judged = |snaps: &[Snapshot], end: usize| {
        let w = Window::trailing(&snaps[..=end], &topo, &held);
        let f: Vec<Finding> = detect(&w).into_iter().filter(|f| f.pids == [10]).collect();
        (w.start_mono_ns(), f)
    };
    // The window ending at #3 holds the start; its cost is not there yet: no finding
    // until it is (it may be nothing).
    let (_, f) = judged(&snaps, 3);
    assert!(
        f.is_empty(),
        "a pile-up whose waits are still to come: {f:?}"
    );
    // The window ending at #4 begins (3.003 s) after the start's last placement, but
    // the start's waits come only now: it is judged, with the measured cost (40 ms
    // beside the idle CPU).
    let (start, f) = judged(&snaps, 4);
    assert!(
        start > 3_001_000_000,
        "the window begins after the start: {start}"
    );
    assert_eq!(f.len(), 1, "the start judged while its waits come");
    assert!(!f[0].summary.contains("not measured"), "{}", f[0].summary);
    assert_eq!(f[0].key, "pid 10 cpu 0 at 2500000000", "the same finding");
    let cost = f[0].cost.as_ref().map(|c| c.value);
    assert!(cost.is_some(), "{:?}", f[0].facts);
    // Windows beginning later than that no longer judge it.
    let (start, f) = judged(&snaps, 9);
    assert!(start > 3_001_000_000 + HANDOVER_NS, "{start}");
    assert!(f.is_empty());
    // Without measured waits (an older recording) nothing comes later: the window
    // after the start does not judge it.
    let mut old = snaps.clone();
    for s in &mut old {
        if let Some(e) = s.events.as_mut() {
            e.idle_waits = None;
        }
    }
    assert!(judged(&old, 4).1.is_empty());
}

#[test]
fn the_cost_is_the_processes_wait_over_the_start_and_the_second_after() {
    let topo = crate::topology::synthetic(1, 2, 2);
    let held = Default::default();
    // Snapshots of 1 s; the start at 2.5 s; the process waits 400 ms of 1 s in the
    // snapshots covering 2..5 s, and 900 ms in a later one (outside the span).
    let mut snaps: Vec<Snapshot> = (0..8)
        .map(|seq| crate::findings::testing::snap(&topo, seq, 0.5))
        .collect();
    let mut s = snap(vec![
        place(10, 11, 2500, 0, Some(1)),
        place(10, 12, 2501, 0, Some(1)),
        place(10, 13, 2502, 0, Some(1)),
    ]);
    s.seq = 2;
    s.time = snaps[2].time;
    s.cpus = snaps[2].cpus.clone();
    snaps[2] = s;
    for (seq, wait) in [(2, 400), (3, 400), (6, 900)] {
        snaps[seq].processes = Some(crate::snapshot::ProcessTable {
            rows: vec![crate::snapshot::ProcessStats {
                pid: 10,
                comm: "stream".into(),
                cpu_time_ns: 600_000_000,
                rq_wait_ns: wait * 1_000_000,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    // CPU 6 (the idle allowed CPU of `place`) idle; snapshot cpus are 0..4 in this
    // topology, so give it one.
    for s in &mut snaps {
        let mut c = s.cpus[0].clone();
        c.cpu = 6;
        c.busy = Some(0.0);
        s.cpus.push(c);
    }
    let p = find(&snaps[..]);
    assert_eq!(p.len(), 1);
    let h = p[0].harm(&snaps).unwrap();
    assert_eq!(
        (h.wait_ns, h.cpu_ns, h.snapshots),
        (800_000_000, 1_200_000_000, 2)
    );
    assert_eq!(h.idle_share, 1.0);
    // The "idle" CPU's vCPU taken by the hypervisor 90% of the time: it could spare
    // little of the wait.
    let mut stolen = snaps.clone();
    for s in &mut stolen {
        if let Some(c) = s.cpus.iter_mut().find(|c| c.cpu == 6) {
            c.steal = Some(0.9);
        }
    }
    let hs = p[0].harm(&stolen).unwrap();
    assert!((hs.idle_share - 0.1).abs() < 1e-9, "{hs:?}");
    assert_eq!(Harm::severity(Some(hs)), Severity::Info);
    // The idle share weighted by the wait: 600 ms waited while CPU 6 idled, 200 ms
    // while it was busy, and every other snapshot of the span (the threads gone, other
    // work on CPU 6) spares nothing and weighs nothing: not a plain mean.
    let mut weighted = snaps.clone();
    for s in &mut weighted {
        let busy = if s.seq == 2 { 0.0 } else { 1.0 };
        if let Some(c) = s.cpus.iter_mut().find(|c| c.cpu == 6) {
            c.busy = Some(busy);
        }
        if let Some(t) = s.processes.as_mut() {
            t.rows[0].rq_wait_ns = if s.seq == 2 { 600_000_000 } else { 200_000_000 };
        }
    }
    let hw = p[0].harm(&weighted).unwrap();
    // The 600 ms waited in the start's snapshot, but the start came half-way through
    // it (2.5 s): CPU 6 had 500 ms to spare after it, not 600 — of 800 ms waited.
    assert_eq!(hw.idle_wait_ns(), 500_000_000);
    assert!((hw.idle_share - 0.625).abs() < 1e-9, "{hw:?}");
    // A start late in an idle second: 600 ms waited, CPU 6 idle all along, but the
    // start at 2.9 s leaves it 100 ms — never more than it idled after the start.
    let mut late = weighted.clone();
    for (seq, at) in [(2usize, 2900u64)] {
        if let Some(l) = late[seq].events.as_mut() {
            for (k, e) in l.events.iter_mut().enumerate() {
                e.mono_ns = (at + k as u64) * 1_000_000;
            }
        }
    }
    let pl = find(&late[..]);
    assert_eq!(pl.len(), 1);
    let hl = pl[0].harm(&late).unwrap();
    assert_eq!(hl.idle_wait_ns(), 100_000_000, "{hl:?}");
    let w = Window::trailing(&snaps[..=3], &topo, &held);
    let f = detect(&w);
    assert_eq!(f[0].severity, Severity::Critical, "{}", f[0].summary);
    assert!(
        f[0].summary.contains("waited 800.0 ms queued while CPU 6 was 100% idle: about 800.0 ms (40% of its runnable time)"),
        "{}",
        f[0].summary
    );
    // The same start where the balancer split the threads at once: a few ms queued.
    for seq in [2, 3] {
        if let Some(t) = snaps[seq].processes.as_mut() {
            t.rows[0].rq_wait_ns = 2_000_000;
        }
    }
    let w = Window::trailing(&snaps[..=3], &topo, &held);
    assert_eq!(detect(&w)[0].severity, Severity::Info);
}
