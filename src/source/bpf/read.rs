//! The raw stage of the BPF source: read the program's maps into [`Cumulative`] values
//! (totals since attach), and add the slice each CPU is still running so that a task that
//! never switches out is counted too. Kernel reads only; deltas are [`super::delta`]'s.
//! The map access itself (batch calls, the mapped slots) is maps.rs's.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use libbpf_rs::MapCore;

use super::layout::{
    ACC_SLOTS, MAX_CPUS, NR_CAUSE, NR_DIST, NR_PC, PREF_UNSET, PROC_LLC_SELF, WAIT_BUCKETS,
    comm_string, pending_counts, pod, skel, types,
};
pub use super::maps::{Mapped, Mappings, delete_keys};
use super::maps::{array_each, matrix_sums, mig_sums, proc_entries, take_entries};
use crate::clock::mono_ns;
use crate::source::perf::GroupReader;

/// What a process did on one LLC, cumulative: runtime, and the counters where any were
/// read for it (boxed: without a PMU or attribution, as on most machines, an entry is 16
/// bytes instead of 64, which the fold and the deltas of 10,000 processes feel; issue
/// "Scale", docs/performance.md (h)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LlcCum {
    pub runtime: u64,
    pub pc: Option<Box<PcCum>>,
}

/// Raw counter values of a process on one LLC, cumulative, with the enabled/running time
/// to scale them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcCum {
    pub pc: [u64; NR_PC],
    pub enabled: u64,
    pub running: u64,
}

/// An LLC where a process did nothing.
pub static NOTHING: LlcCum = LlcCum {
    runtime: 0,
    pc: None,
};

/// No counter counted.
static NO_PC: PcCum = PcCum {
    pc: [0; NR_PC],
    enabled: 0,
    running: 0,
};

impl LlcCum {
    /// Its counters (zero where none were read).
    pub fn pc(&self) -> &PcCum {
        self.pc.as_deref().unwrap_or(&NO_PC)
    }

    /// Add counter values and enabled/running time; nothing is stored for all zeros.
    pub fn add_pc(&mut self, pc: &[u64; NR_PC], enabled: u64, running: u64) {
        if enabled == 0 && running == 0 && pc.iter().all(|&v| v == 0) {
            return;
        }
        let c = self.pc.get_or_insert_with(Default::default);
        for (a, b) in c.pc.iter_mut().zip(pc) {
            *a += b;
        }
        c.enabled += enabled;
        c.running += running;
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcCum {
    pub wait_ns: u64,
    pub dist: [u64; NR_DIST],
    pub unclassified: u64,
    /// Runtime of slices begun on / off its kernel-preferred LLC.
    pub pref_hit_ns: u64,
    pub pref_miss_ns: u64,
    /// Switch-ins of its threads made without the tracepoint.
    pub unseen_ins: u64,
    /// Its threads' switch-ins as the kernel counts them (`sched_info.pcount`, settled
    /// per task; 0 where tasks are not settled).
    pub runs: u64,
    /// Its migrations onto and off its kernel-preferred LLC (v7.2+).
    pub to_pref: u64,
    pub off_pref: u64,
    /// The kernel's preferred LLC as it reports it (a CPU id), -1 for none.
    pub kernel_pref: i64,
    /// Whether `kernel_pref` came from the process's own entry (stored at a switch-out).
    pub pref_stored: bool,
    /// The LLCs it ran on (llctop's ids, ascending) and what it did on each: a process
    /// runs on a few of a machine's LLCs, so only those are kept.
    pub llc: Vec<(u32, LlcCum)>,
}

/// A process without its own entry in `proc_vals` has no kernel preference.
impl Default for ProcCum {
    fn default() -> Self {
        ProcCum {
            wait_ns: 0,
            dist: [0; NR_DIST],
            unclassified: 0,
            pref_hit_ns: 0,
            pref_miss_ns: 0,
            unseen_ins: 0,
            runs: 0,
            to_pref: 0,
            off_pref: 0,
            kernel_pref: -1,
            pref_stored: false,
            llc: Vec::new(),
        }
    }
}

impl ProcCum {
    /// Add the wait, preferred-LLC hit and miss time and migrations of `c` (its runtime is per LLC:
    /// the caller's).
    fn add_counts(&mut self, c: &types::proc_counts) {
        self.wait_ns += c.wait_ns;
        self.pref_hit_ns += c.pref_hit_ns;
        self.pref_miss_ns += c.pref_miss_ns;
        self.unseen_ins += c.unseen_ins;
        for (a, b) in self.dist.iter_mut().zip(c.mig_dist) {
            *a += b;
        }
        self.unclassified += c.mig_unclassified;
        self.to_pref += c.mig_to_pref;
        self.off_pref += c.mig_off_pref;
    }

    /// Its figures on LLC `llc`, to add to (`None` for an LLC id beyond `nr_llc`).
    pub fn on_llc(&mut self, llc: u32, nr_llc: usize) -> Option<&mut LlcCum> {
        if llc as usize >= nr_llc {
            return None;
        }
        let i = match self.llc.binary_search_by_key(&llc, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                self.llc.insert(i, (llc, LlcCum::default()));
                i
            }
        };
        Some(&mut self.llc[i].1)
    }

    /// Its figures on LLC `llc` (nothing where it never ran).
    pub fn at(&self, llc: u32) -> &LlcCum {
        self.llc
            .binary_search_by_key(&llc, |e| e.0)
            .map_or(&NOTHING, |i| &self.llc[i].1)
    }
}

impl ProcCum {
    /// Never below `b`, field by field (what an earlier read of the same process saw):
    /// see [`carry`]. The preference is this read's.
    fn at_least(&mut self, b: &ProcCum) {
        let up = |a: &mut u64, b: u64| *a = (*a).max(b);
        up(&mut self.wait_ns, b.wait_ns);
        up(&mut self.pref_hit_ns, b.pref_hit_ns);
        up(&mut self.pref_miss_ns, b.pref_miss_ns);
        up(&mut self.unseen_ins, b.unseen_ins);
        up(&mut self.runs, b.runs);
        up(&mut self.unclassified, b.unclassified);
        up(&mut self.to_pref, b.to_pref);
        up(&mut self.off_pref, b.off_pref);
        for (a, &b) in self.dist.iter_mut().zip(&b.dist) {
            up(a, b);
        }
        for (l, y) in &b.llc {
            let i = match self.llc.binary_search_by_key(l, |e| e.0) {
                Ok(i) => i,
                Err(i) => {
                    self.llc.insert(i, (*l, LlcCum::default()));
                    i
                }
            };
            let x = &mut self.llc[i].1;
            up(&mut x.runtime, y.runtime);
            if let Some(yp) = y.pc.as_deref() {
                let xp = x.pc.get_or_insert_with(Default::default);
                for (a, &b) in xp.pc.iter_mut().zip(&yp.pc) {
                    up(a, b);
                }
                up(&mut xp.enabled, yp.enabled);
                up(&mut xp.running, yp.running);
            }
        }
    }
}

/// Keep every process's figures in `cur` at least what `prev` had, and every process of
/// `prev` in `cur` (the forgotten are taken out of `prev` first, see
/// `BpfSource::forget_exited`). A read may miss counts for a moment — a slot flushed into
/// `proc_vals` after `proc_vals` was read and before the slots were, a slice that ended
/// between two maps — and they come back at the next read; the process's total is then
/// below what an earlier read saw. Taken as it is, that drop would read as an entry
/// re-created (counted from zero) and the counts would be counted again when they come
/// back (the lab's 64-CPU hoppers: 15 cross-LLC hops counted for 10). Held at the
/// earlier figure, the interval counts nothing for it and the next counts only what is
/// new: a read never counts twice, so the held figure is never above the true one.
pub fn carry(prev: &Cumulative, cur: &mut Cumulative) {
    for (&tgid, b) in &prev.procs {
        match cur.procs.get_mut(&tgid) {
            Some(a) => a.at_least(b),
            None => {
                cur.procs.insert(tgid, b.clone());
            }
        }
    }
}

/// Every counter of the program, cumulative since attach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cumulative {
    pub switches: Vec<u64>,
    /// Switches made without the tracepoint, found by the switch hook.
    pub unseen: Vec<u64>,
    pub rq_wait: Vec<u64>,
    pub hist: Vec<[u64; WAIT_BUCKETS]>,
    pub mig_in: Vec<u64>,
    pub mig_out: Vec<u64>,
    pub dist: [u64; NR_DIST],
    pub cause: [u64; NR_CAUSE],
    /// Migrations of tasks with a kernel-preferred LLC onto it (`[0]`) and off it
    /// (`[1]`), by cause (v7.2+).
    pub pref_moves: [[u64; NR_CAUSE]; 2],
    pub unclassified: u64,
    pub dropped: u64,
    /// Per-process updates the program could not store (a map full).
    pub proc_dropped: u64,
    /// `matrix[from * nr_llc + to]`.
    pub matrix: Vec<u64>,
    pub procs: HashMap<u32, ProcCum>,
    /// The `proc_vals` entries read: (tgid, LLC, index).
    pub ents: Vec<(u32, u32, u32)>,
    /// Processes whose last thread exited since the previous read, with their names
    /// (taken out of the `exited` map: each is reported once).
    pub exited: Vec<(u32, String)>,
    /// Processes a CPU still holds counts for (in an accumulator slot) or is running at
    /// this read: their entries may still change.
    pub held: HashSet<u32>,
    /// Whether the kernel reports `p->preferred_llc` (v7.2+ cache-aware scheduling).
    pub kernel_preferred: bool,
    /// Whether tasks are settled before the read (the task walk): the processes' `runs`
    /// are counted only then.
    pub settled: bool,
    /// Each CPU's run queue's cache-aware counts as the settle walk last sampled them
    /// (v7.2+): tasks queued with a preferred LLC, and those on it; None where not
    /// sampled (another kernel, or no switch seen on the CPU yet).
    pub cas: Vec<Option<(u32, u32)>>,
}

impl Cumulative {
    pub fn zeroed(nr_cpus: usize, nr_llc: usize) -> Self {
        Cumulative {
            switches: vec![0; nr_cpus],
            unseen: vec![0; nr_cpus],
            rq_wait: vec![0; nr_cpus],
            hist: vec![[0; WAIT_BUCKETS]; nr_cpus],
            mig_in: vec![0; nr_cpus],
            mig_out: vec![0; nr_cpus],
            matrix: vec![0; nr_llc * nr_llc],
            cas: vec![None; nr_cpus],
            ..Cumulative::default()
        }
    }
}

/// The slice still running on a CPU when the maps are read, and the runtime the CPU
/// accumulated for its process and has not yet flushed to `proc_vals`.
struct Inflight {
    cpu: u32,
    tgid: u32,
    ns: u64,
    /// (tgid, runtime) of the CPU's accumulator slots.
    acc_runtime: Vec<(u32, u64)>,
    /// Counter values and enabled/running at the slice start (`None`: no baseline).
    pc_start: Option<([u64; NR_PC], u64, u64)>,
}

/// Read every map of `skel` for `nr_cpus` CPUs and `nr_llc` LLCs, adding each CPU's
/// running slice (counters read now through `readers`, when attribution is on). With
/// `settled` (the task walk has just settled every task's kernel runtime), the running
/// slices add no runtime of their own. `hint`: the processes and entries the previous
/// read found, to size the tables once instead of growing them (the process table built
/// at its final size also makes the deltas' walk over it ~20 % faster at 10,000
/// processes, docs/performance.md (h)).
pub fn read(
    skel: &skel::LlctopSkel<'static>,
    nr_cpus: usize,
    nr_llc: usize,
    readers: &[GroupReader],
    mapped: &Mappings,
    settled: bool,
    hint: (usize, usize),
) -> Cumulative {
    let n = nr_cpus;
    let with_pc = !readers.is_empty();
    let mut c = Cumulative::zeroed(n, nr_llc);
    c.procs.reserve(hint.0);
    c.ents.reserve(hint.1);
    let maps = &skel.maps;
    // The processes' completed slices first, then each CPU's running slice: a slice that
    // ends between the two reads is then missed once (and counted at the next read),
    // never counted twice — which would make the next read's total go backwards.
    proc_entries(skel, mapped.vals.as_ref(), |idx, e| {
        let (tgid, llc) = ((e.key >> 32) as u32, e.key as u32);
        let v = &e.v;
        c.ents.push((tgid, llc, idx));
        let p = c.procs.entry(tgid).or_default();
        if llc == PROC_LLC_SELF {
            p.kernel_pref = v.preferred_llc;
            p.pref_stored = true;
            return;
        }
        p.add_counts(&v.c);
        p.runs += v.runs;
        if let Some(l) = p.on_llc(llc, nr_llc) {
            l.runtime += v.c.runtime_ns;
            // Without attribution the program writes no counters: nothing to add.
            if with_pc {
                l.add_pc(&v.pc, v.pc_enabled, v.pc_running);
            }
        }
    });
    // Then what the CPUs' accumulator slots hold unflushed (a slot flushed since
    // proc_vals was read is missed once, never counted twice), and only then the running
    // slices (a slice that completes into a slot after the slots were read is counted
    // once, as running).
    // CPU c's slots are keys [c × ACC_SLOTS, (c + 1) × ACC_SLOTS) of one plain array.
    let mut acc_runtime: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut slot = |i: u32, bytes: &[u8]| {
        let a: types::acc_slot = pod(bytes);
        if a.tgid == 0 {
            return;
        }
        c.held.insert(a.tgid);
        c.procs.entry(a.tgid).or_default().add_counts(&a.c);
        if a.c.runtime_ns != 0
            && let Some(cpu) = acc_runtime.get_mut(i as usize / ACC_SLOTS)
        {
            cpu.push((a.tgid, a.c.runtime_ns));
        }
    };
    match mapped.acc.as_ref() {
        Some(m) => m.each(&mut slot),
        None => array_each(&maps.acc, (n.min(MAX_CPUS) * ACC_SLOTS) as u32, &mut slot),
    }
    // CPU c's stats are entry c of one plain array.
    let mut per_cpu: Vec<(usize, types::cpu_stat)> = Vec::with_capacity(n);
    let mut stat = |i: u32, bytes: &[u8]| per_cpu.push((i as usize, pod(bytes)));
    match mapped.stats.as_ref() {
        Some(m) => m.each(&mut stat),
        None => array_each(&maps.cpu_stats, maps.cpu_stats.max_entries(), &mut stat),
    }
    let now = mono_ns();
    let mut inflight: Vec<Inflight> = Vec::new();
    for (cpu, s) in &per_cpu {
        let cpu = *cpu;
        if cpu < n {
            c.switches[cpu] = s.switches;
            c.unseen[cpu] = s.switches_unseen;
            c.rq_wait[cpu] = s.rq_wait_ns;
            c.hist[cpu] = s.wait_hist;
            c.cas[cpu] = (s.cas_sampled != 0).then_some((s.cas_queued, s.cas_queued_pref));
        }
        for (a, b) in c.dist.iter_mut().zip(s.mig_dist) {
            *a += b;
        }
        for (a, b) in c.cause.iter_mut().zip(s.mig_cause) {
            *a += b;
        }
        for (way, by) in c.pref_moves.iter_mut().zip(s.mig_pref) {
            for (a, b) in way.iter_mut().zip(by) {
                *a += b;
            }
        }
        c.unclassified += s.mig_unclassified;
        c.dropped += s.events_dropped;
        c.proc_dropped += s.proc_dropped;
        let ns = running_ns(s, now);
        if s.curr_pid != 0 {
            c.held.insert(s.curr_tgid);
            // What its switch-in found, still pending on this CPU (read after the
            // slots it moves into: missed once at worst, never counted twice).
            let p = c.procs.entry(s.curr_tgid).or_default();
            let mut pending = pending_counts(s, ns);
            // A slice begun under a preference the process's own entry no longer holds
            // (a thread of it switched in since and read another, or none: the kernel
            // dropped or moved it) is neither hit nor miss time, and its preference is
            // not the process's; without an entry, its switch-in's is the latest known.
            let pref = i64::from(s.curr_pref);
            if p.pref_stored && pref != p.kernel_pref {
                pending.pref_hit_ns = 0;
                pending.pref_miss_ns = 0;
            } else if s.curr_pref != PREF_UNSET {
                p.kernel_pref = pref;
            }
            p.add_counts(&pending);
        }
        inflight.push(Inflight {
            cpu: cpu as u32,
            tgid: if s.curr_pid != 0 { s.curr_tgid } else { 0 },
            ns,
            acc_runtime: acc_runtime
                .get_mut(cpu)
                .map(std::mem::take)
                .unwrap_or_default(),
            pc_start: (s.pc_valid != 0).then_some((
                s.pc_last,
                s.pc_last_enabled,
                s.pc_last_running,
            )),
        });
    }
    // Right after the classes: the matrix and the classes come from two maps read at two
    // moments, and the moves made in between show in one and not yet in the other.
    // Both are kept in copies (per CPU, per LLC of the CPUs that made the moves): summed
    // here.
    let cells = c.matrix.len();
    c.matrix = matrix_sums(
        &maps.llc_matrix,
        mapped.matrix.as_ref(),
        (nr_llc * cells) as u32,
        cells,
    );
    // In and out per CPU, a copy per LLC (of the CPUs that made the moves): summed.
    let mig = mig_sums(
        &maps.cpu_mig,
        mapped.mig.as_ref(),
        nr_llc,
        n.clamp(1, MAX_CPUS),
    );
    for (cpu, (i, o)) in mig.into_iter().enumerate().take(n) {
        c.mig_in[cpu] = i;
        c.mig_out[cpu] = o;
    }
    c.exited = take_entries(&maps.exited)
        .into_iter()
        .map(|(k, v)| {
            let e: types::proc_exit = pod(&v);
            (pod::<u32>(&k), comm_string(&e.comm))
        })
        .collect();
    c.settled = settled;
    c.kernel_preferred = maps
        .bss_data
        .as_ref()
        .is_some_and(|b| b.kernel_preferred_llc != 0);
    if let Some(ro) = maps.rodata_data.as_ref() {
        add_inflight(&mut c, inflight, &ro.topo, nr_llc, readers, settled);
    }
    c
}

/// How long the slice running on a CPU has run at `now` (CLOCK_MONOTONIC). The slice
/// start is on the run queue's clock when the program paired that clock with
/// CLOCK_MONOTONIC (`cal_clock`, `cal_mono`), else on CLOCK_MONOTONIC itself.
fn running_ns(s: &types::cpu_stat, now: u64) -> u64 {
    if s.curr_pid == 0 || s.last_switch_ns == 0 {
        return 0;
    }
    let now_there = if s.cal_mono != 0 {
        (i128::from(now) - i128::from(s.cal_mono) + i128::from(s.cal_clock)).max(0) as u64
    } else {
        now
    };
    now_there.saturating_sub(s.last_switch_ns)
}

/// Add each CPU's running slice to its process on that CPU's LLC: its runtime so far
/// and, with attribution, the counters since the slice began (read now from the same
/// counter group).
fn add_inflight(
    c: &mut Cumulative,
    inflight: Vec<Inflight>,
    topo: &[types::cpu_topo],
    nr_llc: usize,
    readers: &[GroupReader],
    settled: bool,
) {
    for f in inflight {
        let Some(t) = topo.get(f.cpu as usize).filter(|t| t.valid != 0) else {
            continue;
        };
        let counters = f.pc_start.and_then(|(start, en, run)| {
            let r = readers.iter().find(|r| r.cpu == f.cpu)?.read().ok()?;
            let mut pc = [0u64; NR_PC];
            for (slot, v) in &r.values {
                pc[slot.index()] = v.saturating_sub(start[slot.index()]);
            }
            Some((
                pc,
                r.enabled.saturating_sub(en),
                r.running.saturating_sub(run),
            ))
        });
        for &(tgid, ns) in &f.acc_runtime {
            if let Some(l) = c.procs.entry(tgid).or_default().on_llc(t.llc, nr_llc) {
                l.runtime += ns;
            }
        }
        let ns = if settled { 0 } else { f.ns };
        if ns == 0 && counters.is_none() {
            continue;
        }
        let Some(l) = c.procs.entry(f.tgid).or_default().on_llc(t.llc, nr_llc) else {
            continue;
        };
        l.runtime += ns;
        if let Some((pc, en, run)) = counters {
            l.add_pc(&pc, en, run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_slice_is_measured_on_the_clock_it_started_on() {
        let mut s = types::cpu_stat {
            curr_pid: 7,
            last_switch_ns: 1_000,
            ..Default::default()
        };
        // CLOCK_MONOTONIC start (no pairing): plain difference.
        assert_eq!(running_ns(&s, 1_500), 500);
        assert_eq!(running_ns(&s, 900), 0, "never negative");
        // Run-queue clock start, paired: rq clock 1_200 was CLOCK_MONOTONIC 50_000.
        s.cal_clock = 1_200;
        s.cal_mono = 50_000;
        assert_eq!(running_ns(&s, 50_300), 500);
        assert_eq!(running_ns(&s, 0), 0);
        // Idle, or no switch seen yet.
        s.curr_pid = 0;
        assert_eq!(running_ns(&s, 50_300), 0);
        s.curr_pid = 7;
        s.last_switch_ns = 0;
        assert_eq!(running_ns(&s, 50_300), 0);
    }

    #[test]
    fn counters_are_stored_only_once_some_were_counted() {
        let mut l = LlcCum::default();
        l.add_pc(&[0; NR_PC], 0, 0);
        assert!(l.pc.is_none(), "all zeros: nothing stored");
        assert_eq!(l.pc(), &NO_PC);
        let mut pc = [0; NR_PC];
        pc[1] = 30;
        l.add_pc(&pc, 10, 5);
        l.add_pc(&pc, 10, 5);
        let c = l.pc();
        assert_eq!((c.pc[1], c.pc[0], c.enabled, c.running), (60, 0, 20, 10));
        assert_eq!(NOTHING.pc(), &NO_PC);
    }

    #[test]
    fn a_process_without_its_own_entry_has_no_kernel_preference() {
        assert_eq!(ProcCum::default().kernel_pref, -1);
    }
}
