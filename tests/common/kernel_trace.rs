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

/// A scheduler line of ftrace text: its stamp (seconds), its CPU and the event from its
/// name on (`sched_switch: prev_comm=…`); None for any other line.
fn sched_line(l: &str) -> Option<(f64, i32, &str)> {
    let at = l.find(": sched_")?;
    let head = &l[..at];
    let ts = head.split_whitespace().last()?.parse::<f64>().ok()?;
    let cpu = head
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse::<i32>().ok())?;
    Some((ts, cpu, &l[at + 2..]))
}

/// The events a second trace instance stamps after llctop's programs (placement.sh).
const BRACKETED: [&str; 3] = ["sched_switch:", "sched_wakeup:", "sched_wakeup_new:"];

/// An event as both traces print it: its kind and fields without `prev_state=`, which a
/// task's exit may change between the two probes (Z in one, X in the other).
fn event_key(ev: &str) -> String {
    ev.split_whitespace()
        .filter(|w| !w.starts_with("prev_state="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// When llctop's programs saw each switch, wakeup and placement, bracketed. A tracepoint
/// calls its probes in the order they were registered: the main trace, enabled before
/// llctop attached, stamps each event before llctop's program reads its clock, and a
/// second instance enabled after it stamps the same event after. The two are
/// microseconds apart but for a vCPU stalled between them (under TCG a host time slice:
/// 2026-11-29, 1% of events 4-20 ms apart, the median 40 us). With `none`, every event's
/// bracket is its own stamp.
pub struct Brackets {
    /// Per CPU, each bracketed event of the second instance in order: (stamp, key).
    after: HashMap<i32, Vec<(f64, String)>>,
}

impl Brackets {
    pub fn parse(after: &str) -> Brackets {
        let mut b = Brackets {
            after: HashMap::new(),
        };
        for (ts, cpu, ev) in after.lines().filter_map(sched_line) {
            if BRACKETED.iter().any(|k| ev.starts_with(k)) {
                b.after.entry(cpu).or_default().push((ts, event_key(ev)));
            }
        }
        b
    }

    pub fn none() -> Brackets {
        Brackets {
            after: HashMap::new(),
        }
    }

    fn cursor(&self) -> Cursor<'_> {
        Cursor {
            b: self,
            next: HashMap::new(),
        }
    }
}

/// A bracket wider than this is a stall between the two probes: its whole width counts
/// in a wait's slack. Narrower ones are the probes' own time under TCG (2026-11-29: the
/// median 40 us, 90% within 114 us), at both ends of a wait alike and within the
/// tolerances the checks already allow.
pub const STALL_S: f64 = 500e-6;

/// The part of a bracket's width a wait's slack counts: all of a stall's, none otherwise.
fn stall(width: f64) -> f64 {
    if width > STALL_S { width } else { 0.0 }
}

/// A walk of the main trace, in order, through the second instance's events.
struct Cursor<'a> {
    b: &'a Brackets,
    next: HashMap<i32, usize>,
}

impl Cursor<'_> {
    /// How long after its main stamp `ts` the second instance stamped this event (0 for
    /// an event it does not bracket, or without brackets). The second instance starts
    /// first and stops last: on each CPU its events before the main trace's first are
    /// passed over (earlier, or another event); from there on the two list the same
    /// events in the same order.
    fn width(&mut self, cpu: i32, ts: f64, ev: &str) -> f64 {
        if self.b.after.is_empty() || !BRACKETED.iter().any(|k| ev.starts_with(k)) {
            return 0.0;
        }
        let key = event_key(ev);
        let list = self.b.after.get(&cpu).map_or(&[][..], Vec::as_slice);
        let i = match self.next.get(&cpu) {
            Some(&i) => i,
            None => list
                .iter()
                .position(|(at, k)| *at >= ts && *k == key)
                .unwrap_or(list.len()),
        };
        let Some((at, k)) = list.get(i) else {
            panic!("cpu{cpu}: the second trace lacks {ts:.6}: {ev}");
        };
        assert!(
            *k == key && *at >= ts,
            "cpu{cpu}: the second trace's next event is not {ts:.6}: {ev}, but {at:.6}: {k}"
        );
        self.next.insert(cpu, i + 1);
        at - ts
    }
}

/// The scheduler lines of `text` stamped between `from` and `to` (seconds), at most 80:
/// what a failed comparison with the trace shows, so that a disagreement can be read.
pub fn trace_around(text: &str, from: f64, to: f64) -> String {
    text.lines()
        .filter(|l| sched_line(l).is_some_and(|(ts, _, _)| (from..=to).contains(&ts)))
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
    /// Allowed CPUs whose state changed within UNSURE_S of the placement, or while
    /// llctop's program may not yet have read it (up to `seen_by`), a switch into or out
    /// of idle counting from its CPU's previous trace line (SWITCH_LAG_S at most) to its
    /// own: idle or not, depending on which side of the change a reader fell.
    pub unsure: Vec<i32>,
    /// By when llctop's placement program had surely run (the second trace's stamp of
    /// the placement; `ts` without brackets).
    pub seen_by: f64,
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
    pub fn parse(text: &str, tids: &[u32], allowed: &[i32], brackets: &Brackets) -> Trace {
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
        let mut at_placement: Vec<u32> = Vec::new();
        let mut t = Trace {
            placed: HashMap::new(),
            first_run: HashMap::new(),
        };
        let mut cursor = brackets.cursor();
        for (ts, cpu, ev) in text.lines().filter_map(sched_line) {
            let width = cursor.width(cpu, ts, ev);
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
                            seen_by: ts + width,
                            state: state.join("; "),
                        },
                    );
                    at_placement.push(pid as u32);
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
        for tid in at_placement {
            let Some(p) = t.placed.get_mut(&tid) else {
                continue;
            };
            // From its stamp to when llctop's program had surely run.
            let (ts, seen_by) = (p.ts, p.seen_by);
            p.unsure = allowed
                .iter()
                .copied()
                .filter(|&c| c != p.cpu)
                .filter(|c| {
                    changes.get(c).is_some_and(|v| {
                        v.iter()
                            .any(|&(a, b)| a <= seen_by + UNSURE_S && b >= ts - UNSURE_S)
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
/// creation, idle part); and how far from these a reader of the same events may be for
/// when it saw them (the brackets' stalls, STALL_S): `slack` for the wait, the stalls
/// at the events that began or ended one, `idle_slack` for its idle part, those and the
/// stalls at its CPU's switches into or out of idle while it waited.
#[derive(Debug, Default, Clone)]
pub struct Waited {
    pub wait: f64,
    pub idle: f64,
    pub waits: Vec<(f64, f64, f64)>,
    pub slack: f64,
    pub idle_slack: f64,
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
    brackets: &Brackets,
) -> std::collections::BTreeMap<u32, Waited> {
    waited_within(text, watched, brackets, |born| (born, born + span))
}

/// From the kernel's trace: these threads' run-queue wait between `from` and `to` (the
/// trace's clock, seconds), in all — the oracle of a figure summed over whole snapshots
/// (a process's wait over the snapshots a finding spans). Threads whose creation the
/// trace lacks count nothing.
pub fn waited_between(text: &str, tids: &[u32], from: f64, to: f64) -> f64 {
    let watched: Vec<(u32, i32)> = tids.iter().map(|&t| (t, -1)).collect();
    waited_within(text, &watched, &Brackets::none(), |_| (from, to))
        .values()
        .map(|w| w.wait)
        .sum()
}

/// The walk both share: each watched thread's waits (and the part while its CPU idled)
/// inside the window `window` gives for its creation time.
fn waited_within(
    text: &str,
    watched: &[(u32, i32)],
    brackets: &Brackets,
    window: impl Fn(f64) -> (f64, f64),
) -> std::collections::BTreeMap<u32, Waited> {
    use std::collections::BTreeMap;
    let field = |l: &str, k: &str| -> Option<String> {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
    };
    let pid_of = |l: &str, k: &str| -> Option<u32> { field(l, k)?.parse().ok() };
    let cpu_of: BTreeMap<u32, i32> = watched.iter().copied().collect();
    let mut idle: BTreeMap<i32, bool> = BTreeMap::new();
    let mut born: BTreeMap<u32, f64> = BTreeMap::new();
    // The threads waiting, each with when its wait began and that event's bracket.
    let mut waiting: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    let mut out: BTreeMap<u32, Waited> = watched.iter().map(|w| (w.0, Waited::default())).collect();
    let mut last: Option<f64> = None;
    let mut cursor = brackets.cursor();
    let within = |born: &BTreeMap<u32, f64>, t: &u32, from: f64, to: f64| {
        born.get(t).is_some_and(|&b| {
            let (start, end) = window(b);
            from <= end && to >= start
        })
    };
    for (ts, c, ev) in text.lines().filter_map(sched_line) {
        let width = stall(cursor.width(c, ts, ev));
        if let Some(t0) = last {
            for t in waiting.keys() {
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
        if ev.starts_with("sched_wakeup_new:") || ev.starts_with("sched_wakeup:") {
            if let Some(p) = pid_of(ev, "pid=").filter(|p| cpu_of.contains_key(p)) {
                // A wakeup of a thread already waiting leaves its wait's start.
                waiting.entry(p).or_insert((ts, width));
                if ev.starts_with("sched_wakeup_new:") && !born.contains_key(&p) {
                    born.insert(p, ts);
                    // Where the window lies, for a reader stamping the creation later.
                    let e = out.entry(p).or_default();
                    e.slack += width;
                    e.idle_slack += width;
                }
            }
        } else if ev.starts_with("sched_switch:") {
            let (prev, next) = ev.split_once("==>").unwrap_or((ev, ""));
            if let Some(p) = pid_of(prev, "prev_pid=").filter(|p| cpu_of.contains_key(p)) {
                // Preempted (R, R+) it waits on; asleep or gone it does not.
                if field(prev, "prev_state=").is_some_and(|s| s.starts_with('R')) {
                    waiting.insert(p, (ts, width));
                } else {
                    waiting.remove(&p);
                }
            }
            if let Some(n) = pid_of(next, "next_pid=") {
                if let Some((from, w0)) = waiting.remove(&n)
                    && within(&born, &n, from, ts)
                {
                    let e = out.entry(n).or_default();
                    e.slack += w0 + width;
                    e.idle_slack += w0 + width;
                }
                let now_idle = n == 0;
                if idle.insert(c, now_idle).is_some_and(|was| was != now_idle) {
                    for t in waiting.keys().filter(|t| cpu_of[t] == c) {
                        if within(&born, t, ts, ts) {
                            out.entry(*t).or_default().idle_slack += width;
                        }
                    }
                }
            }
        }
    }
    out
}
