//! The placement pile-up of shared/seeds/001: threads of one process started together,
//! placed on one CPU and run there, while another CPU they were allowed on sat idle. Found
//! from the BPF program's events alone: placements of new threads (`kind = placement`,
//! `pid != tgid`: a process's first thread is its parent's fork), with the idle
//! allowed CPUs seen at that moment, and first runs (`kind = first_run`, where each new
//! thread ran first). A thread moved before it first ran did not pile up; placements
//! without idle information (older recordings) or without a first run are never guessed
//! about.

use std::collections::{BTreeMap, HashMap};

use super::harm::Harm;
use super::{Fact, Finding, Kind, Suggestion, Unit, Window};
use crate::snapshot::{DetailEvent, EventKind, Snapshot};

/// Placements of one process less than this apart belong to one start: threads started
/// together.
pub const START_GAP_NS: u64 = 1_000_000_000;

/// One pile-up: in one start of a process, `threads` of its new threads were placed on
/// `cpu` and first ran there, and the kernel placed the second or a later of them there
/// while `idle_allowed` other allowed CPUs (the lowest `idle_cpu`) were idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PileUp {
    pub tgid: u32,
    pub comm: String,
    pub cpu: i32,
    /// Threads of the start placed on `cpu` that first ran there, and their ids.
    pub threads: usize,
    pub tids: Vec<u32>,
    /// Placements in the start (on any CPU).
    pub placed: usize,
    /// Most idle allowed CPUs seen at one of the piled placements.
    pub idle_allowed: u32,
    pub idle_cpu: Option<i32>,
    pub nr_cpus_allowed: u32,
    /// The start's first and last placement (CLOCK_MONOTONIC ns).
    pub first_ns: u64,
    pub last_ns: u64,
}

impl PileUp {
    /// What it cost, measured in `snaps` (harm.rs), or why that is not known.
    pub fn harm(&self, snaps: &[Snapshot]) -> Result<Harm, &'static str> {
        super::harm::pile_up(
            self.tgid,
            self.idle_cpu,
            (self.first_ns, self.last_ns),
            &self.tids,
            snaps,
        )
    }
}

/// Every pile-up in these snapshots' events, in time order.
pub fn find<'a>(snapshots: impl IntoIterator<Item = &'a Snapshot>) -> Vec<PileUp> {
    let mut f = Finder::default();
    for s in snapshots {
        f.push(s);
    }
    f.finish()
}

/// A start is judged once the newest snapshot is this much later than its last
/// placement: no later placement can join it, and its threads have had time to run.
pub const SETTLE_NS: u64 = 10 * START_GAP_NS;

/// The pile-up search fed one snapshot at a time (`llctop report` reads a recording as
/// a stream): it keeps the placements of the starts not yet judged and the first runs
/// they may need, not the recording.
#[derive(Debug, Default)]
pub struct Finder {
    /// Placements of new threads by process, not yet judged.
    by_proc: BTreeMap<u32, Vec<DetailEvent>>,
    /// Where each thread first ran, and when.
    first_run: HashMap<u32, (i32, u64)>,
    out: Vec<PileUp>,
}

impl Finder {
    pub fn push(&mut self, s: &Snapshot) {
        for e in s.events.iter().flat_map(|l| &l.events) {
            match e.kind {
                // A process's own first thread is placed by its parent's fork: not one
                // of the threads it starts.
                EventKind::Placement if e.pid != e.tgid => {
                    self.by_proc.entry(e.tgid).or_default().push(e.clone())
                }
                EventKind::Placement => {}
                EventKind::FirstRun => {
                    self.first_run.entry(e.pid).or_insert((e.to_cpu, e.mono_ns));
                }
                EventKind::Migration => {}
            }
        }
        let settled = s.time.mono_ns.saturating_sub(SETTLE_NS);
        let done: Vec<u32> = self
            .by_proc
            .iter()
            .filter(|(_, evs)| evs.iter().all(|e| e.mono_ns < settled))
            .map(|(&t, _)| t)
            .collect();
        for tgid in done {
            if let Some(evs) = self.by_proc.remove(&tgid) {
                self.judge(evs);
            }
        }
        // A first run follows its thread's placement: one older than every placement
        // still waiting is of no use any more.
        let oldest = self
            .by_proc
            .values()
            .flatten()
            .map(|e| e.mono_ns)
            .min()
            .unwrap_or(settled);
        self.first_run.retain(|_, (_, t)| *t >= oldest.min(settled));
    }

    /// Every pile-up found, in time order.
    pub fn finish(mut self) -> Vec<PileUp> {
        for evs in std::mem::take(&mut self.by_proc).into_values() {
            self.judge(evs);
        }
        let mut out = self.out;
        out.sort_by_key(|p| (p.first_ns, p.tgid, p.cpu));
        out
    }

    /// The pile-ups of one process's placements: split into starts, each judged.
    fn judge(&mut self, mut evs: Vec<DetailEvent>) {
        evs.sort_by_key(|e| e.mono_ns);
        let first_run: HashMap<u32, i32> = evs
            .iter()
            .filter_map(|e| Some((e.pid, self.first_run.get(&e.pid)?.0)))
            .collect();
        let evs: Vec<&DetailEvent> = evs.iter().collect();
        let mut start = 0;
        for i in 1..=evs.len() {
            let ends = i == evs.len() || evs[i].mono_ns - evs[i - 1].mono_ns >= START_GAP_NS;
            if ends {
                self.out.extend(in_start(&evs[start..i], &first_run));
                start = i;
            }
        }
    }
}

/// The pile-ups of one start (placements of one process, in time order).
fn in_start(evs: &[&DetailEvent], first_run: &HashMap<u32, i32>) -> Vec<PileUp> {
    let (Some(first), Some(last)) = (evs.first(), evs.last()) else {
        return Vec::new();
    };
    /// The idle allowed CPUs at a placement: how many, and the lowest.
    type Idle = (u32, Option<i32>);
    // Per CPU: threads placed and run there, and the idle allowed CPUs at the later ones.
    let mut per_cpu: BTreeMap<i32, (Vec<u32>, Option<Idle>)> = BTreeMap::new();
    for e in evs {
        if first_run.get(&e.pid) != Some(&e.to_cpu) {
            continue;
        }
        let (tids, worst) = per_cpu.entry(e.to_cpu).or_default();
        tids.push(e.pid);
        let n = tids.len();
        if n >= 2
            && let Some(idle) = e.idle_allowed.filter(|&i| i > 0)
            && worst.is_none_or(|(w, _)| idle > w)
        {
            *worst = Some((idle, e.idle_cpu));
        }
    }
    per_cpu
        .into_iter()
        .filter_map(|(cpu, (tids, worst))| {
            let (idle_allowed, idle_cpu) = worst?;
            Some(PileUp {
                tgid: first.tgid,
                comm: last.comm.clone(),
                cpu,
                threads: tids.len(),
                tids,
                placed: evs.len(),
                idle_allowed,
                idle_cpu,
                nr_cpus_allowed: evs.iter().map(|e| e.nr_cpus_allowed).max().unwrap_or(0),
                first_ns: first.mono_ns,
                last_ns: last.mono_ns,
            })
        })
        .collect()
}

impl PileUp {
    /// One line of evidence, for the report and the TUI.
    pub fn describe(&self) -> String {
        format!(
            "pile-up: {} threads of {} ({}) placed on CPU {} while {} allowed CPU{} sat idle{} ({} placed, {} CPUs allowed)",
            self.threads,
            self.tgid,
            self.comm,
            self.cpu,
            self.idle_allowed,
            if self.idle_allowed == 1 { "" } else { "s" },
            self.idle_cpu
                .map(|c| format!(", e.g. CPU {c}"))
                .unwrap_or_default(),
            self.placed,
            self.nr_cpus_allowed
        )
    }
}

/// The pile-ups of the window as findings: the starts that reached into the window,
/// judged whole — their placements before it are in the window's look-behind
/// ([`Window::context`]), so a start the window cuts is the same start (the same key) as
/// in the windows before, and one whose threads first ran only after the window's first
/// snapshots is still judged once they have.
pub fn detect(w: &Window) -> Vec<Finding> {
    let start = w.start_mono_ns();
    find(w.context)
        .into_iter()
        .filter(|p| p.last_ns >= start)
        .map(|p| {
            let cost = p.harm(w.context);
            // The CPUs the cost was measured against: each measured thread's, else the
            // pile-up's example.
            let mut idle_cpus: Vec<u32> =
                super::harm::idle_waits(p.tgid, &p.tids, w.context)
                    .iter()
                    .map(|w| w.cpu)
                    .collect();
            idle_cpus.sort_unstable();
            idle_cpus.dedup();
            if idle_cpus.is_empty() || cost.is_ok_and(|h| h.measured.is_none()) {
                idle_cpus = p.idle_cpu.and_then(|c| u32::try_from(c).ok()).into_iter().collect();
            }
            let named: Vec<String> = idle_cpus.iter().map(|c| c.to_string()).collect();
            let summary = match &cost {
                Ok(h) => format!("{}; {}", p.describe(), h.said(&named.join(", "))),
                Err(why) => format!("{}; {why}", p.describe()),
            };
            let mut f = Finding::new(
                Kind::PileUp,
                format!("pid {} cpu {} at {}", p.tgid, p.cpu, p.first_ns),
                w,
                summary,
            );
            f.severity = Harm::severity(cost.ok());
            f.facts = vec![
                Fact::derived("threads placed and run on the CPU", p.threads as f64, Unit::Count),
                Fact::derived("idle allowed CPUs at a piled placement", p.idle_allowed as f64, Unit::Count),
                Fact::derived("threads placed in the start", p.placed as f64, Unit::Count),
                Fact::derived("CPUs allowed", p.nr_cpus_allowed as f64, Unit::Count),
            ];
            if let Ok(h) = cost {
                let facts = h.facts();
                f.cost = facts.first().cloned();
                f.facts.extend(facts);
            }
            f.cpus = std::iter::once(p.cpu)
                .filter_map(|c| u32::try_from(c).ok())
                .chain(idle_cpus)
                .collect();
            f.pids = vec![p.tgid];
            f.suggestion = Some(Suggestion {
                knob: None,
                value: None,
                profile: None,
                command: "no knob changes fork placement: give each thread its own allowed CPU (taskset/numactl per thread), or try the seed's find_idlest_group() patch".into(),
                why: "find_idlest_group() lets a start fill the local group up to the NUMA imbalance threshold (the number of LLCs), whatever the task's allowed CPUs".into(),
            });
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
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
}
