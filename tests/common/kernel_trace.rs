//! The kernel's own scheduler tracepoints (ftrace text) replayed into placements, and the
//! `pinned-threads` workload's own view of a start: the oracle of the placement lab
//! (tests/lab/seed_placement.rs), sharing no code with llctop.

use std::collections::{BTreeMap, HashMap};

/// A `pinned-threads` run as the workload saw it: the parent's CPU and each thread's
/// (tid, first CPU, moved by then) in creation order.
pub struct Started {
    pub parent_cpu: i32,
    pub threads: Vec<(u32, i32, bool)>,
}

impl Started {
    pub fn parse(text: &str) -> Started {
        let mut s = Started {
            parent_cpu: -1,
            threads: Vec::new(),
        };
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["parent-cpu", c] => s.parent_cpu = c.parse().unwrap(),
                ["thread", _, tid, cpu, moves] => {
                    s.threads
                        .push((tid.parse().unwrap(), cpu.parse().unwrap(), *moves != "0"))
                }
                _ => {}
            }
        }
        assert!(
            s.parent_cpu >= 0 && !s.threads.is_empty(),
            "workload output: {text}"
        );
        s
    }
}

/// The scheduler lines of `text` stamped between `from` and `to` (seconds), at most 80:
/// what a failed comparison with the trace shows, so that a disagreement can be read.
pub fn trace_around(text: &str, from: f64, to: f64) -> String {
    text.lines()
        .filter(|l| {
            l.find(": sched_")
                .and_then(|at| l[..at].split_whitespace().last()?.parse::<f64>().ok())
                .is_some_and(|ts| (from..=to).contains(&ts))
        })
        .take(80)
        .collect::<Vec<_>>()
        .join("\n")
}

/// How close (seconds, the trace's clock) a change of a CPU's state may come to
/// a placement before the trace cannot say whether llctop's read of that CPU's run
/// queue saw it before or after: the BPF program reads the other CPUs' run queues one by
/// one after the tracepoint, while they switch on their own vCPU threads under TCG.
pub const UNSURE_S: f64 = 200e-6;

/// How long before its trace line a switch may already have taken effect: the kernel sets
/// `rq->curr` (and dequeues a blocking task) before `trace_sched_switch`, and under TCG
/// the vCPU can stall between the two for a host time slice (this lab runs 8 vCPU threads
/// on a 2-CPU VM: 1.04 ms seen in CI). So a switch into or out of idle counts as a change
/// from the CPU's previous trace line (at most this long before) up to its own; one
/// between two tasks leaves the CPU busy and counts at its line.
pub const SWITCH_LAG_S: f64 = 3e-3;

/// One new thread's placement, as the trace has it.
pub struct Placed {
    pub order: usize,
    pub cpu: i32,
    /// When (the trace's clock, seconds).
    pub ts: f64,
    /// Allowed CPUs (other than `cpu`) idle at the placement.
    pub idle: Vec<i32>,
    /// Allowed CPUs whose state changed within UNSURE_S of the placement (a switch into
    /// or out of idle: from its CPU's previous trace line, SWITCH_LAG_S at most, to its
    /// own): idle or not, depending on which side of the change a reader fell.
    pub unsure: Vec<i32>,
    /// The trace's view of each other allowed CPU then, for a failure's message.
    pub state: String,
}

/// The kernel's own tracepoints (ftrace text, one clock for all CPUs), replayed into where each
/// new thread of the given ones was placed, where it first ran, and which of its allowed
/// CPUs were idle at the placement as the kernel's idle_cpu() has it: running their idle
/// task with no task woken, placed or migrated onto them since their last switch, and no
/// wakeup on its way there (a sched_waking whose task has not yet been woken or run,
/// headed for its CPU or, once it migrates, the new one — the kernel's ttwu_pending, a
/// remote wakeup queued for the CPU). An oracle that shares no code with llctop (it
/// reads the trace, not BPF).
pub struct Trace {
    pub placed: HashMap<u32, Placed>,
    pub first_run: HashMap<u32, i32>,
}

impl Trace {
    pub fn parse(text: &str, tids: &[u32], allowed: &[i32]) -> Trace {
        let field = |l: &str, k: &str| -> Option<i64> {
            let v = l.split_whitespace().find_map(|w| w.strip_prefix(k))?;
            v.parse().ok()
        };
        let mut curr: HashMap<i32, (i64, f64)> = HashMap::new(); // cpu -> (pid, since)
        let mut arrived: HashMap<i32, f64> = HashMap::new();
        let mut waking: HashMap<i64, i32> = HashMap::new(); // pid -> CPU it is headed for
        // cpu -> when its state may have changed: (earliest, latest), seconds.
        let mut changes: HashMap<i32, Vec<(f64, f64)>> = HashMap::new();
        // cpu -> its latest trace line.
        let mut last_on: HashMap<i32, f64> = HashMap::new();
        let mut at_placement: Vec<(u32, f64)> = Vec::new();
        let mut t = Trace {
            placed: HashMap::new(),
            first_run: HashMap::new(),
        };
        for l in text.lines() {
            let Some(at) = l.find(": sched_") else {
                continue;
            };
            let head = &l[..at];
            let Some(ts) = head
                .split_whitespace()
                .last()
                .and_then(|w| w.parse::<f64>().ok())
            else {
                continue;
            };
            let Some(cpu) = head
                .split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse::<i32>().ok())
            else {
                continue;
            };
            let ev = &l[at + 2..];
            let before = last_on.insert(cpu, ts);
            let mut changed = |c: i32| changes.entry(c).or_default().push((ts, ts));
            if ev.starts_with("sched_switch:") {
                let next = ev.split("==>").nth(1).and_then(|n| field(n, "next_pid="));
                let Some(next) = next else { continue };
                let was = curr.insert(cpu, (next, ts)).map(|(p, _)| p);
                waking.remove(&next);
                let from = if was.is_none_or(|p| (p == 0) != (next == 0)) {
                    before.map_or(ts, |b| b.max(ts - SWITCH_LAG_S))
                } else {
                    ts
                };
                changes.entry(cpu).or_default().push((from, ts));
                let tid = next as u32;
                if tids.contains(&tid) {
                    t.first_run.entry(tid).or_insert(cpu);
                }
            } else if ev.starts_with("sched_wakeup_new:") {
                let (Some(pid), Some(to)) = (field(ev, "pid="), field(ev, "target_cpu=")) else {
                    continue;
                };
                let to = to as i32;
                if tids.contains(&(pid as u32)) {
                    let idle: Vec<i32> = allowed
                        .iter()
                        .copied()
                        .filter(|&c| c != to)
                        .filter(|c| {
                            curr.get(c).is_some_and(|&(p, since)| {
                                p == 0
                                    && arrived.get(c).is_none_or(|&a| a < since)
                                    && !waking.values().any(|w| w == c)
                            })
                        })
                        .collect();
                    let state: Vec<String> = allowed
                        .iter()
                        .filter(|&&c| c != to)
                        .map(|c| {
                            let w: Vec<_> = waking.iter().filter(|(_, w)| *w == c).collect();
                            format!(
                                "cpu{c}: running {:?}, last woken/placed/moved onto {:?}, wakeups on the way {w:?}",
                                curr.get(c),
                                arrived.get(c)
                            )
                        })
                        .collect();
                    let n = t.placed.len();
                    t.placed.insert(
                        pid as u32,
                        Placed {
                            order: n,
                            cpu: to,
                            ts,
                            idle,
                            unsure: Vec::new(),
                            state: state.join("; "),
                        },
                    );
                    at_placement.push((pid as u32, ts));
                }
                arrived.insert(to, ts);
                changed(to);
            } else if ev.starts_with("sched_waking:") {
                if let (Some(pid), Some(to)) = (field(ev, "pid="), field(ev, "target_cpu=")) {
                    waking.insert(pid, to as i32);
                    changed(to as i32);
                }
            } else if ev.starts_with("sched_wakeup:") {
                if let Some(to) = field(ev, "target_cpu=") {
                    arrived.insert(to as i32, ts);
                    changed(to as i32);
                }
                if let Some(pid) = field(ev, "pid=") {
                    waking.remove(&pid);
                }
            } else if ev.starts_with("sched_migrate_task:")
                && let Some(to) = field(ev, "dest_cpu=")
            {
                arrived.insert(to as i32, ts);
                changed(to as i32);
                if let Some(pid) = field(ev, "pid=")
                    && let Some(w) = waking.get_mut(&pid)
                {
                    *w = to as i32;
                }
            }
        }
        for (tid, ts) in at_placement {
            let Some(p) = t.placed.get_mut(&tid) else {
                continue;
            };
            p.unsure = allowed
                .iter()
                .copied()
                .filter(|&c| c != p.cpu)
                .filter(|c| {
                    changes.get(c).is_some_and(|v| {
                        v.iter()
                            .any(|&(a, b)| a <= ts + UNSURE_S && b >= ts - UNSURE_S)
                    })
                })
                .collect();
        }
        t
    }

    /// Pile-ups by the same rule, from the trace: per CPU, the threads placed there and
    /// run there first, when a second or later of them was placed while an allowed CPU
    /// was idle. (cpu, threads) in CPU order. `maybe`: counting the CPUs whose state
    /// changed within UNSURE_S as idle (the most pile-ups a reader could have seen);
    /// otherwise counting them as busy (the fewest).
    pub fn piled(&self, maybe: bool) -> Vec<(i32, usize)> {
        self.stacked(maybe)
            .into_iter()
            .filter(|s| s.2)
            .map(|(c, n, _)| (c, n))
            .collect()
    }

    /// Per CPU with two or more threads placed and run there first: (cpu, threads,
    /// whether a later one was placed while an allowed CPU was idle).
    pub fn stacked(&self, maybe: bool) -> Vec<(i32, usize, bool)> {
        let mut order: Vec<_> = self.placed.iter().collect();
        order.sort_by_key(|(_, p)| p.order);
        let mut per_cpu: BTreeMap<i32, (usize, bool)> = BTreeMap::new();
        for (tid, p) in order {
            if self.first_run.get(tid) != Some(&p.cpu) {
                continue;
            }
            let idle = p
                .idle
                .iter()
                .filter(|c| maybe || !p.unsure.contains(c))
                .count()
                + if maybe {
                    p.unsure.iter().filter(|c| !p.idle.contains(c)).count()
                } else {
                    0
                };
            let e = per_cpu.entry(p.cpu).or_default();
            e.0 += 1;
            e.1 |= e.0 >= 2 && idle > 0;
        }
        per_cpu
            .into_iter()
            .filter(|(_, (n, _))| *n >= 2)
            .map(|(c, (n, piled))| (c, n, piled))
            .collect()
    }
}

/// A thread's run-queue wait by the kernel's trace (`idle_while_each_waited`), seconds:
/// in all, the part while its CPU idled, and each wait (start and end after its
/// creation, idle part).
#[derive(Debug, Default, Clone)]
pub struct Waited {
    pub wait: f64,
    pub idle: f64,
    pub waits: Vec<(f64, f64, f64)>,
}

/// From the kernel's trace: for each watched thread (its id and a CPU), its run-queue
/// wait — from its wakeup (or a preempted switch-out) to its switch-in — within `span`
/// seconds after its own creation (`sched_wakeup_new`), and the part of that wait while
/// its CPU ran the idle task: the wait that CPU could have spared, exactly (the trace's
/// clock), in seconds; and each wait, to show where two accounts part.
pub fn idle_while_each_waited(
    text: &str,
    watched: &[(u32, i32)],
    span: f64,
) -> std::collections::BTreeMap<u32, Waited> {
    waited_within(text, watched, |born| (born, born + span))
}

/// From the kernel's trace: these threads' run-queue wait between `from` and `to` (the
/// trace's clock, seconds), in all — the oracle of a figure summed over whole snapshots
/// (a process's wait over the snapshots a finding spans). Threads whose creation the
/// trace lacks count nothing.
pub fn waited_between(text: &str, tids: &[u32], from: f64, to: f64) -> f64 {
    let watched: Vec<(u32, i32)> = tids.iter().map(|&t| (t, -1)).collect();
    waited_within(text, &watched, |_| (from, to))
        .values()
        .map(|w| w.wait)
        .sum()
}

/// The walk both share: each watched thread's waits (and the part while its CPU idled)
/// inside the window `window` gives for its creation time.
fn waited_within(
    text: &str,
    watched: &[(u32, i32)],
    window: impl Fn(f64) -> (f64, f64),
) -> std::collections::BTreeMap<u32, Waited> {
    use std::collections::{BTreeMap, BTreeSet};
    let field = |l: &str, k: &str| -> Option<String> {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
    };
    let pid_of = |l: &str, k: &str| -> Option<u32> { field(l, k)?.parse().ok() };
    let cpu_of: BTreeMap<u32, i32> = watched.iter().copied().collect();
    let mut idle: BTreeMap<i32, bool> = BTreeMap::new();
    let mut born: BTreeMap<u32, f64> = BTreeMap::new();
    let mut waiting: BTreeSet<u32> = BTreeSet::new();
    let mut out: BTreeMap<u32, Waited> = watched.iter().map(|w| (w.0, Waited::default())).collect();
    let mut last: Option<f64> = None;
    for l in text.lines() {
        let Some(at) = l.find(": sched_") else {
            continue;
        };
        let head = &l[..at];
        let (Some(ts), Some(c)) = (
            head.split_whitespace()
                .last()
                .and_then(|w| w.parse::<f64>().ok()),
            head.split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse::<i32>().ok()),
        ) else {
            continue;
        };
        if let Some(t0) = last {
            for t in &waiting {
                let Some(&from) = born.get(t) else { continue };
                let (start, end) = window(from);
                let (lo, hi) = (t0.max(start), ts.min(end));
                if hi > lo {
                    let e = out.entry(*t).or_default();
                    let idled = if idle.get(&cpu_of[t]) == Some(&true) {
                        hi - lo
                    } else {
                        0.0
                    };
                    e.wait += hi - lo;
                    e.idle += idled;
                    match e.waits.last_mut() {
                        Some(w) if (w.1 - (lo - from)).abs() < 1e-9 => {
                            w.1 = hi - from;
                            w.2 += idled;
                        }
                        _ => e.waits.push((lo - from, hi - from, idled)),
                    }
                }
            }
        }
        last = Some(ts);
        let ev = &l[at + 2..];
        if ev.starts_with("sched_wakeup_new:") || ev.starts_with("sched_wakeup:") {
            if let Some(p) = pid_of(ev, "pid=").filter(|p| cpu_of.contains_key(p)) {
                waiting.insert(p);
                if ev.starts_with("sched_wakeup_new:") {
                    born.entry(p).or_insert(ts);
                }
            }
        } else if ev.starts_with("sched_switch:") {
            let (prev, next) = ev.split_once("==>").unwrap_or((ev, ""));
            if let Some(p) = pid_of(prev, "prev_pid=").filter(|p| cpu_of.contains_key(p)) {
                // Preempted (R, R+) it waits on; asleep or gone it does not.
                if field(prev, "prev_state=").is_some_and(|s| s.starts_with('R')) {
                    waiting.insert(p);
                } else {
                    waiting.remove(&p);
                }
            }
            if let Some(n) = pid_of(next, "next_pid=") {
                waiting.remove(&n);
                idle.insert(c, n == 0);
            }
        }
    }
    out
}
