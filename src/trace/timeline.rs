//! What llctop puts in a trace, the same for a live capture (`llctop trace`) and an
//! exported recording (`llctop export --perfetto`): the tracks arranged as the hardware is
//! (node → LLC → CPU), the counters of every snapshot on them, every migration as an
//! instant on the moving thread with a flow arrow from its source CPU to its destination
//! CPU (named by distance, with the cause), placements, and llctop's own events (knob
//! changes, markers, findings as slices, source states, A/B windows) on an `llctop`
//! track. Context switches and wakings go to [`super::sched`]'s per-CPU batches.
//!
//! Timestamps in: CLOCK_MONOTONIC (llctop's clock); out: the trace's, `mono + offset`.
//! This file owns the tracks and the scheduler's events; `counters.rs` the snapshots'
//! counter tracks, `events.rs` the `llctop` track.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

mod counters;
mod events;

use super::perfetto::{Arg, Event, Proc, Thread, TrackKind, Writer};
use super::sched::Sched;
use crate::snapshot::{Cause, DetailEvent, EventKind};
use crate::source::bpf::tracing::{Comm, TraceRecord};
use crate::topology::{Distance, Topology};

/// Track uuids: one space per kind, the id in the low bits.
const T_LLCTOP: u64 = 0x100;
const T_KNOBS: u64 = 0x101;
const T_MARKERS: u64 = 0x102;
const T_SOURCES: u64 = 0x103;
const T_WINDOWS: u64 = 0x104;
const T_NUMA: u64 = 0x105;
/// Findings: one track per kind (slices of one kind never overlap on it).
const T_FINDINGS: u64 = 0x200;
const T_NODE: u64 = 0x1_0000;
const T_LLC: u64 = 0x2_0000;
const T_CPU: u64 = 0x3_0000;
const T_COUNTER: u64 = 0x10_0000_0000;
const T_PROCESS: u64 = 0x20_0000_0000;
const T_THREAD: u64 = 0x30_0000_0000;

/// Counters by the group they belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Scope {
    Node(u32),
    Llc(u32),
    Cpu(u32),
    Numa,
}

impl Scope {
    fn parent(self) -> u64 {
        match self {
            Scope::Node(n) => T_NODE + u64::from(n),
            Scope::Llc(l) => T_LLC + u64::from(l),
            Scope::Cpu(c) => T_CPU + u64::from(c),
            Scope::Numa => T_NUMA,
        }
    }

    fn code(self) -> u64 {
        match self {
            Scope::Node(n) => (1 << 20) | u64::from(n),
            Scope::Llc(l) => (2 << 20) | u64::from(l),
            Scope::Cpu(c) => (3 << 20) | u64::from(c),
            Scope::Numa => 4 << 20,
        }
    }
}

/// What a trace held, for the summary and the tests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub migrations: u64,
    pub by_distance: BTreeMap<&'static str, u64>,
    pub placements: u64,
    pub forks: u64,
    pub exits: u64,
    pub knob_changes: u64,
    pub findings: u64,
    /// Switches the kernel made without sched_switch, put back at the incoming task's
    /// arrival (TraceRecord::Switch's `unseen`).
    pub unseen_switches: u64,
}

/// A trace as far as it reached its output, at a flush.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OnDisk {
    pub bytes: u64,
    pub switches: u64,
    pub wakings: u64,
    pub counts: Counts,
}

/// The trace being written.
pub struct Timeline<W: Write> {
    w: Writer<W>,
    topo: Topology,
    offset: i64,
    sched: Sched,
    /// Declared tracks (counters, processes, threads).
    tracks: HashSet<u64>,
    /// Metric names per counter track uuid (its name, declared once).
    next_flow: u64,
    /// Open finding slices: (kind, key) → the tracks they are open on.
    open: HashMap<(String, String), Vec<u64>>,
    /// Per-CPU counters too.
    cpu_counters: bool,
    /// Every thread's name as known so far (the switches and wakings carry none).
    names: HashMap<u32, Comm>,
    /// Each live process's parent, as its fork (or the first process tree) gave it: an exec
    /// whose process is gone from /proc by the time it is read keeps its parent (a parent
    /// pid of 0 makes Perfetto's importer count "parent pid changed").
    parents: HashMap<u32, u32>,
    /// Where /proc is read (exec's command lines): the trace's `--sysroot`.
    root: crate::kroot::KernelRoot,
    pub counts: Counts,
    /// What reached the output at the last [`Timeline::flush_sched`].
    on_disk: OnDisk,
}

/// The label of LLC `l` as llctop's topology shows it: `node 0 · LLC 3 [24-31] L3 32 MiB`.
pub fn llc_label(topo: &Topology, l: &crate::topology::Llc) -> String {
    let mut s = String::new();
    if let Some(n) = l.node {
        s.push_str(&format!("node {n} · "));
    }
    s.push_str(&format!(
        "LLC {} [{}]",
        l.id,
        crate::cpulist::format(&l.cpus)
    ));
    if let Some(level) = l.level {
        s.push_str(&format!(" L{level}"));
    }
    if let Some(kb) = l.size_kb {
        s.push_str(&format!(" {}", crate::topology::render::size(kb)));
    }
    let _ = topo;
    s
}

impl<W: Write> Timeline<W> {
    /// A timeline on `w` for `topo`; trace time = CLOCK_MONOTONIC + `offset`.
    pub fn new(w: W, topo: &Topology, offset: i64, cpu_counters: bool) -> Timeline<W> {
        Timeline {
            w: Writer::new(w),
            topo: topo.clone(),
            offset,
            sched: Sched::new(),
            tracks: HashSet::new(),
            next_flow: 1,
            open: HashMap::new(),
            cpu_counters,
            names: HashMap::new(),
            parents: HashMap::new(),
            root: crate::kroot::KernelRoot::default(),
            counts: Counts::default(),
            on_disk: OnDisk::default(),
        }
    }

    /// What reached the output at the last [`Timeline::flush_sched`]: a trace cut at its
    /// `bytes` after a failed write holds exactly its counts.
    pub fn on_disk(&self) -> &OnDisk {
        &self.on_disk
    }

    fn ts(&self, mono: u64) -> u64 {
        mono.saturating_add_signed(self.offset)
    }

    pub fn bytes(&self) -> u64 {
        self.w.bytes()
    }

    /// Bytes that reached the output (whole packets).
    pub fn committed(&self) -> u64 {
        self.w.committed()
    }

    pub fn switches(&self) -> u64 {
        self.sched.switches
    }

    pub fn wakings(&self) -> u64 {
        self.sched.wakings
    }

    /// The system, the clocks and the track tree: nodes, their LLCs, their CPUs; the
    /// `llctop` track and its children.
    pub fn start(
        &mut self,
        release: &str,
        machine: &str,
        clocks: Option<(u64, u64)>,
    ) -> io::Result<()> {
        self.w.system_info(release, machine)?;
        if let Some((boot, mono)) = clocks {
            self.w.clock_snapshot(boot, mono)?;
        }
        self.w
            .track(T_LLCTOP, None, "llctop", &TrackKind::Plain, Some(0))?;
        for (uuid, name) in [
            (T_KNOBS, "knob changes"),
            (T_MARKERS, "markers"),
            (T_SOURCES, "source states"),
            (T_WINDOWS, "A/B windows"),
        ] {
            self.w
                .track(uuid, Some(T_LLCTOP), name, &TrackKind::Plain, None)?;
        }
        let topo = self.topo.clone();
        for (rank, node) in topo.nodes.iter().enumerate() {
            let name = format!("node {} [{}]", node.id, crate::cpulist::format(&node.cpus));
            self.w.track(
                T_NODE + u64::from(node.id),
                None,
                &name,
                &TrackKind::Plain,
                Some(rank as i32 + 1),
            )?;
        }
        for (rank, l) in topo.llcs.iter().enumerate() {
            let parent = l.node.map(|n| T_NODE + u64::from(n));
            self.w.track(
                T_LLC + u64::from(l.id),
                parent,
                &llc_label(&topo, l),
                &TrackKind::Plain,
                Some(rank as i32),
            )?;
            for &c in &l.cpus {
                self.w.track(
                    T_CPU + u64::from(c),
                    Some(T_LLC + u64::from(l.id)),
                    &format!("CPU {c}"),
                    &TrackKind::Plain,
                    Some(1000 + c as i32),
                )?;
            }
        }
        Ok(())
    }

    /// Processes and threads known at the start (`ts`: CLOCK_MONOTONIC).
    /// Read /proc under `root` (a live trace's `--sysroot`).
    pub fn set_root(&mut self, root: crate::kroot::KernelRoot) {
        self.root = root;
    }

    pub fn process_tree(
        &mut self,
        mono: u64,
        procs: &[Proc],
        threads: &[Thread],
    ) -> io::Result<()> {
        for t in threads {
            self.names.insert(t.tid, Comm::named(&t.name));
        }
        for p in procs {
            self.parents.insert(p.pid, p.ppid);
        }
        let ts = self.ts(mono);
        self.w.process_tree(ts, procs, threads)
    }

    fn name_of(&self, tid: u32) -> Comm {
        self.names.get(&tid).copied().unwrap_or_default()
    }

    /// The track of thread `tid` of process `pid` (declared the first time).
    fn thread_track(&mut self, pid: u32, tid: u32, comm: &str) -> io::Result<u64> {
        let uuid = T_THREAD + u64::from(tid);
        if self.tracks.insert(uuid) {
            self.w.track(
                uuid,
                None,
                comm,
                &TrackKind::Thread {
                    pid,
                    tid,
                    name: comm.to_string(),
                },
                None,
            )?;
        }
        Ok(uuid)
    }

    /// The track of process `pid` (declared the first time).
    fn process_track(&mut self, pid: u32, comm: &str) -> io::Result<u64> {
        let uuid = T_PROCESS + u64::from(pid);
        if self.tracks.insert(uuid) {
            self.w.track(
                uuid,
                None,
                comm,
                &TrackKind::Process {
                    pid,
                    name: comm.to_string(),
                },
                None,
            )?;
        }
        Ok(uuid)
    }

    /// One record of the live capture.
    pub fn record(&mut self, r: &TraceRecord) -> io::Result<()> {
        match *r {
            TraceRecord::Switch {
                ts,
                cpu,
                prev_state,
                next_pid,
                next_prio,
                unseen,
                ..
            } => {
                self.counts.unseen_switches += u64::from(unseen);
                let ts = self.ts(ts);
                let comm = self.name_of(next_pid);
                if self
                    .sched
                    .switch(cpu, ts, prev_state, next_pid, next_prio, comm)
                {
                    self.take_sched(cpu)?;
                }
            }
            TraceRecord::Waking {
                ts,
                cpu,
                target_cpu,
                pid,
                prio,
                ..
            } => {
                let ts = self.ts(ts);
                let comm = self.name_of(pid);
                if self.sched.waking(cpu, ts, pid, target_cpu, prio, comm) {
                    self.take_sched(cpu)?;
                }
            }
            TraceRecord::Migrate {
                ts,
                pid,
                tgid,
                comm,
                from,
                to,
                distance,
                cause,
                ..
            } => {
                self.names.insert(pid, comm);
                self.migration(&DetailEvent {
                    kind: EventKind::Migration,
                    mono_ns: ts,
                    pid,
                    tgid,
                    comm: comm.as_string(),
                    from_cpu: i32::try_from(from).unwrap_or(-1),
                    to_cpu: i32::try_from(to).unwrap_or(-1),
                    distance,
                    cause: Some(cause),
                    nr_cpus_allowed: 0,
                    idle_allowed: None,
                    idle_cpu: None,
                })?
            }
            TraceRecord::Place {
                ts,
                cpu,
                pid,
                tgid,
                comm,
                to,
                nr_cpus_allowed,
                idle_allowed,
                idle_cpu,
            } => self.placement(&DetailEvent {
                kind: EventKind::Placement,
                mono_ns: ts,
                pid,
                tgid,
                comm: comm.as_string(),
                from_cpu: i32::try_from(cpu).unwrap_or(-1),
                to_cpu: i32::try_from(to).unwrap_or(-1),
                distance: None,
                cause: None,
                nr_cpus_allowed,
                idle_allowed: Some(idle_allowed),
                idle_cpu: idle_cpu.and_then(|c| i32::try_from(c).ok()),
            })?,
            TraceRecord::Fork {
                ts,
                pid,
                tgid,
                parent_tgid,
                comm,
                ..
            } => {
                self.counts.forks += 1;
                self.names.insert(pid, comm);
                if pid == tgid {
                    self.parents.insert(pid, parent_tgid);
                }
                let procs: Vec<Proc> = if pid == tgid {
                    vec![Proc {
                        pid,
                        ppid: parent_tgid,
                        cmdline: vec![comm.as_string()],
                    }]
                } else {
                    Vec::new()
                };
                let threads = [Thread {
                    tid: pid,
                    tgid,
                    name: comm.as_string(),
                }];
                let ts = self.ts(ts);
                self.w.process_tree(ts, &procs, &threads)?;
            }
            TraceRecord::Exec {
                ts,
                pid,
                tgid,
                comm,
            } => {
                // The new program's name and command line (read now: a short-lived
                // one may be gone, then its name stands for it).
                self.names.insert(pid, comm);
                let name = comm.as_string();
                let mut procs = Vec::new();
                if pid == tgid {
                    let cmdline: Vec<String> = self
                        .root
                        .read(format!("/proc/{pid}/cmdline"))
                        .map(|b| {
                            b.split('\0')
                                .filter(|a| !a.is_empty())
                                .take(64)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    // Its parent now, else the one its fork named (it may be gone already).
                    let ppid = self
                        .root
                        .read(format!("/proc/{pid}/stat"))
                        .ok()
                        .and_then(|s| super::procs::stat_parent(&s))
                        .map(|p| p.0)
                        .or_else(|| self.parents.get(&pid).copied())
                        .unwrap_or(0);
                    self.parents.insert(pid, ppid);
                    procs.push(Proc {
                        pid,
                        ppid,
                        cmdline: if cmdline.is_empty() {
                            vec![name.clone()]
                        } else {
                            cmdline
                        },
                    });
                }
                let threads = [Thread {
                    tid: pid,
                    tgid,
                    name,
                }];
                let ts = self.ts(ts);
                self.w.process_tree(ts, &procs, &threads)?;
            }
            TraceRecord::Rename {
                ts,
                pid,
                tgid,
                comm,
            } => {
                self.names.insert(pid, comm);
                let threads = [Thread {
                    tid: pid,
                    tgid,
                    name: comm.as_string(),
                }];
                let ts = self.ts(ts);
                self.w.process_tree(ts, &[], &threads)?;
            }
            TraceRecord::Exit { pid, tgid, .. } => {
                self.counts.exits += 1;
                if pid == tgid {
                    self.parents.remove(&pid);
                }
            }
        }
        Ok(())
    }

    fn take_sched(&mut self, cpu: u32) -> io::Result<()> {
        if let Some(cs) = self.sched.take(cpu) {
            self.w.compact_sched(cpu, cs)?;
        }
        Ok(())
    }

    /// Write every CPU's sched batch (at each snapshot and at the end).
    pub fn flush_sched(&mut self) -> io::Result<()> {
        for (cpu, cs) in self.sched.take_all() {
            self.w.compact_sched(cpu, cs)?;
        }
        self.w.flush()?;
        self.on_disk = OnDisk {
            bytes: self.w.committed(),
            switches: self.switches(),
            wakings: self.wakings(),
            counts: self.counts.clone(),
        };
        Ok(())
    }

    /// A migration: an instant on the thread named by its distance, and a flow from an
    /// instant on the source CPU's track to one on the destination CPU's. An event
    /// without both CPUs draws nothing.
    pub fn migration(&mut self, e: &DetailEvent) -> io::Result<()> {
        let (Ok(from), Ok(to)) = (u32::try_from(e.from_cpu), u32::try_from(e.to_cpu)) else {
            return Ok(());
        };
        let (pid, tgid, comm) = (e.pid, e.tgid, e.comm.as_str());
        let cause = e.cause.unwrap_or(Cause::Other);
        let ts = self.ts(e.mono_ns);
        let dist = e.distance.map_or("unclassified", Distance::key);
        self.counts.migrations += 1;
        *self.counts.by_distance.entry(dist).or_default() += 1;
        let flow = self.next_flow;
        self.next_flow += 1;
        let cats = vec![
            "migration".to_string(),
            dist.to_string(),
            cause.label().to_string(),
        ];
        let llc = |c: u32| self.topo.llc_of(c).map_or(-1, i64::from);
        let args = vec![
            ("from_cpu".to_string(), Arg::Uint(u64::from(from))),
            ("to_cpu".to_string(), Arg::Uint(u64::from(to))),
            ("from_llc".to_string(), Arg::Int(llc(from))),
            ("to_llc".to_string(), Arg::Int(llc(to))),
            ("distance".to_string(), Arg::Str(dist.to_string())),
            ("cause".to_string(), Arg::Str(cause.label().to_string())),
            ("pid".to_string(), Arg::Uint(u64::from(tgid))),
            ("tid".to_string(), Arg::Uint(u64::from(pid))),
        ];
        let thread = self.thread_track(tgid, pid, comm)?;
        self.w.instant(Event {
            ts,
            track: thread,
            name: format!("{dist} {from}→{to}"),
            categories: cats,
            args,
            ..Event::default()
        })?;
        // The CPU tracks' ends of the arrow: the name alone (the thread's instant holds
        // the arguments), a few dozen bytes each.
        let name = format!("{dist} {comm} ({pid}) {cause}", cause = cause.label());
        self.w.instant(Event {
            ts,
            track: T_CPU + u64::from(from),
            name: name.clone(),
            flow_out: vec![flow],
            ..Event::default()
        })?;
        self.w.instant(Event {
            ts,
            track: T_CPU + u64::from(to),
            name,
            flow_in: vec![flow],
            ..Event::default()
        })
    }

    /// A new task's placement (`from_cpu`: where its parent forked it): an instant on its
    /// thread (and the target CPU). An event without both CPUs draws nothing.
    pub fn placement(&mut self, e: &DetailEvent) -> io::Result<()> {
        let (Ok(parent_cpu), Ok(to)) = (u32::try_from(e.from_cpu), u32::try_from(e.to_cpu)) else {
            return Ok(());
        };
        let (pid, tgid, comm) = (e.pid, e.tgid, e.comm.as_str());
        let (nr_cpus_allowed, idle_allowed) = (e.nr_cpus_allowed, e.idle_allowed);
        let idle_cpu = e.idle_cpu.and_then(|c| u32::try_from(c).ok());
        let ts = self.ts(e.mono_ns);
        self.counts.placements += 1;
        let mut args = vec![
            ("cpu".to_string(), Arg::Uint(u64::from(to))),
            ("parent_cpu".to_string(), Arg::Uint(u64::from(parent_cpu))),
            (
                "allowed_cpus".to_string(),
                Arg::Uint(u64::from(nr_cpus_allowed)),
            ),
        ];
        if let Some(n) = idle_allowed {
            args.push(("idle_allowed_cpus".to_string(), Arg::Uint(u64::from(n))));
        }
        if let Some(c) = idle_cpu {
            args.push(("lowest_idle_cpu".to_string(), Arg::Uint(u64::from(c))));
        }
        let name = match (idle_allowed, idle_cpu) {
            (Some(n), Some(c)) if n > 0 => format!("placed on {to} ({n} allowed idle, lowest {c})"),
            _ => format!("placed on {to}"),
        };
        let thread = self.thread_track(tgid, pid, comm)?;
        let cats = vec!["placement".to_string()];
        self.w.instant(Event {
            ts,
            track: thread,
            name: name.clone(),
            categories: cats.clone(),
            args: args.clone(),
            ..Event::default()
        })?;
        self.w.instant(Event {
            ts,
            track: T_CPU + u64::from(to),
            name: format!("{comm} ({pid}) placed"),
            categories: cats,
            args,
            ..Event::default()
        })
    }

    /// The output being written.
    pub fn output_mut(&mut self) -> &mut W {
        self.w.get_mut()
    }

    /// Close what is open (findings still held), write the lost records per CPU, and
    /// return the output.
    pub fn finish(mut self, end_mono: u64, lost: &[u64]) -> io::Result<W> {
        self.flush_sched()?;
        let ts = self.ts(end_mono);
        let open: Vec<Vec<u64>> = self.open.drain().map(|(_, t)| t).collect();
        for tracks in open {
            for t in tracks {
                self.w.slice_end(ts, t)?;
            }
        }
        self.w.ftrace_stats(ts, true, lost)?;
        self.w.into_inner()
    }

    /// Lost records so far at the start (all zero): the phase trace processors pair.
    pub fn start_stats(&mut self, mono: u64, cpus: usize) -> io::Result<()> {
        let ts = self.ts(mono);
        self.w.ftrace_stats(ts, false, &vec![0; cpus])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::bpf::tracing::{Comm, TraceRecord};
    use perfetto_protos::trace::Trace;
    use protobuf::Message as _;

    /// The parent each process-tree packet of `bytes` gives `pid`, in order.
    fn parents_of(bytes: &[u8], pid: i32) -> Vec<i32> {
        let t = Trace::parse_from_bytes(bytes).unwrap();
        t.packet
            .iter()
            .filter(|p| p.has_process_tree())
            .flat_map(|p| p.process_tree().processes.iter())
            .filter(|p| p.pid() == pid)
            .map(|p| p.ppid())
            .collect()
    }

    /// Every track event of `bytes`: (its name, its track uuid, flow ids out, in).
    fn instants(bytes: &[u8]) -> Vec<(String, u64, Vec<u64>, Vec<u64>)> {
        let t = Trace::parse_from_bytes(bytes).unwrap();
        t.packet
            .iter()
            .filter(|p| p.has_track_event())
            .map(|p| {
                let e = p.track_event();
                (
                    e.name().to_string(),
                    e.track_uuid(),
                    e.flow_ids.clone(),
                    e.terminating_flow_ids.clone(),
                )
            })
            .collect()
    }

    fn event(kind: EventKind, from: i32, to: i32) -> DetailEvent {
        DetailEvent {
            kind,
            mono_ns: 1_000,
            pid: 11,
            tgid: 10,
            comm: "worker".into(),
            from_cpu: from,
            to_cpu: to,
            distance: Some(Distance::CrossLlc),
            cause: Some(Cause::Wakeup),
            nr_cpus_allowed: 4,
            idle_allowed: Some(2),
            idle_cpu: Some(3),
        }
    }

    #[test]
    fn a_migration_is_an_instant_on_its_thread_and_a_flow_between_the_cpus() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut tl = Timeline::new(Vec::new(), &topo, 0, false);
        tl.start("7.2", "x86_64", None).unwrap();
        tl.migration(&event(EventKind::Migration, 0, 2)).unwrap();
        // Without a source CPU (an offline one): nothing drawn, nothing counted.
        tl.migration(&event(EventKind::Migration, -1, 2)).unwrap();
        assert_eq!(tl.counts.migrations, 1);
        assert_eq!(tl.counts.by_distance.get("cross_llc"), Some(&1));
        let out = tl.finish(2_000, &[]).unwrap();
        let ev = instants(&out);
        let on_thread: Vec<_> = ev.iter().filter(|e| e.0 == "cross_llc 0→2").collect();
        assert_eq!(on_thread.len(), 1, "{ev:?}");
        let cpu = |c: u64| ev.iter().find(|e| e.1 == T_CPU + c).unwrap();
        let (from, to) = (cpu(0), cpu(2));
        assert_eq!(from.0, "cross_llc worker (11) wakeup");
        assert_eq!(from.2.len(), 1, "the flow leaves the source CPU");
        assert_eq!(to.3, from.2, "and ends on the destination's");
    }

    #[test]
    fn a_placement_says_the_idle_cpus_its_thread_could_have_had() {
        let topo = crate::topology::synthetic(1, 2, 2);
        let mut tl = Timeline::new(Vec::new(), &topo, 0, false);
        tl.start("7.2", "x86_64", None).unwrap();
        tl.placement(&event(EventKind::Placement, 0, 1)).unwrap();
        let mut none_idle = event(EventKind::Placement, 0, 1);
        none_idle.idle_allowed = Some(0);
        tl.placement(&none_idle).unwrap();
        assert_eq!(tl.counts.placements, 2);
        let out = tl.finish(2_000, &[]).unwrap();
        let names: Vec<String> = instants(&out).into_iter().map(|e| e.0).collect();
        assert!(
            names.contains(&"placed on 1 (2 allowed idle, lowest 3)".to_string()),
            "{names:?}"
        );
        assert!(names.contains(&"placed on 1".to_string()), "{names:?}");
        assert_eq!(
            names.iter().filter(|n| *n == "worker (11) placed").count(),
            2
        );
    }

    #[test]
    fn an_exec_whose_process_is_gone_keeps_the_parent_its_fork_gave() {
        let topo = crate::topology::synthetic(1, 1, 2);
        // A root with no /proc/4242: the process exited before its exec was read.
        let dir = tempfile::tempdir().unwrap();
        let mut tl = Timeline::new(Vec::new(), &topo, 0, false);
        tl.set_root(crate::kroot::KernelRoot::new(dir.path()));
        tl.start("7.2", "x86_64", None).unwrap();
        tl.record(&TraceRecord::Fork {
            ts: 10,
            pid: 4242,
            tgid: 4242,
            parent_pid: 100,
            parent_tgid: 100,
            comm: Comm::named("sh"),
        })
        .unwrap();
        tl.record(&TraceRecord::Exec {
            ts: 20,
            pid: 4242,
            tgid: 4242,
            comm: Comm::named("true"),
        })
        .unwrap();
        let out = tl.finish(30, &[]).unwrap();
        assert_eq!(parents_of(&out, 4242), [100, 100], "never 0");
    }
}
