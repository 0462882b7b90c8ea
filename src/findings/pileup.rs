//! The placement pile-up of shared/seeds/001: threads of one process started together,
//! placed on one CPU and run there, while another CPU they were allowed on sat idle. Found
//! from the BPF program's events alone: placements of new threads (`kind = placement`,
//! `pid != tgid`: a process's first thread is its parent's fork), with the idle
//! allowed CPUs seen at that moment, and first runs (`kind = first_run`, where each new
//! thread ran first). A thread moved before it first ran did not pile up; placements
//! without idle information (older recordings) or without a first run are never guessed
//! about.

use std::collections::{BTreeMap, HashMap};

use super::harm::{HANDOVER_NS, Harm};
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
#[derive(Debug, Default, Clone)]
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
    /// `pile-up: ` and [`PileUp::facts`]: the line a list of placements shows.
    pub fn describe(&self) -> String {
        format!("pile-up: {}", self.facts())
    }

    /// What happened, in words (a finding's summary: its kind's title says "pile-up").
    pub fn facts(&self) -> String {
        format!(
            "{} threads of {} ({}) placed on CPU {} while {} allowed CPU{} sat idle{} ({} placed, {} CPUs allowed)",
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
///
/// Where the source measures the threads' waits, a start stays in the windows that begin
/// up to [`HANDOVER_NS`] after its last placement, so that its finding gets the measured
/// cost: a window may begin just after a start it followed (a run's first, short windows;
/// an interval stretched by a missed tick) before the waits came (seen once in the lab on
/// 7.2). Until they come a start is no finding: its cost may be nothing.
pub fn detect(w: &Window) -> Vec<Finding> {
    let start = w.start_mono_ns();
    let reach = if super::harm::measures_waits(w.context) {
        HANDOVER_NS
    } else {
        0
    };
    find(w.context)
        .into_iter()
        .filter(|p| p.last_ns.saturating_add(reach) >= start)
        .filter_map(|p| {
            let cost = p.harm(w.context);
            // Its waits are still to come (the BPF program hands them over two seconds
            // after the placement): judged when they have, never shown as a finding whose
            // cost may turn out to be nothing. The report's placements say it meanwhile.
            if cost == Err(super::harm::PENDING) {
                return None;
            }
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
                Ok(h) => format!("{}; {}", p.facts(), h.said(&named.join(", "))),
                Err(why) => format!("{}; {why}", p.facts()),
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
                command: "give each thread its own allowed CPU (taskset or numactl per thread), or try the seed's find_idlest_group() patch: no knob changes where a fork places its new thread".into(),
                why: "find_idlest_group() lets a start fill the local group up to the NUMA imbalance threshold (the number of LLCs), whatever the task's allowed CPUs".into(),
            });
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests;
