//! The BPF source: exact scheduler event counts aggregated in the kernel by
//! bpf/llctop.bpf.c, read once per interval.
//!
//! The stages: [`read`] takes the maps' cumulative values (the raw stage), [`delta`]
//! turns two reads into the interval's figures (pure, unit-tested), and [`layout`] holds
//! what the C program and Rust share, from the generated types; `processes.rs` forgets
//! the processes that exited once counted; `attribution.rs` hands the perf source's
//! counters to the program for per-process attribution.
//!
//! Loading ([`BpfSource::load`]) tries, in order: tp_btf hooks with the optional NUMA
//! hooks, tp_btf without them, then the same with raw_tp; a permission error stops the
//! attempts at once. Run-queue waits come from the kernel's own `sched_info` where it
//! keeps it, with no sched_wakeup hook ([`Waits`]). The maps hold cumulative values since
//! attach; each tick reads them with the CPUs' accumulator slots not yet flushed, adds
//! the slice still running on each CPU and what its switch-in found (so a task that
//! never switches is still counted), and takes the difference with the previous read.
//! With tp_btf and sched_info, per-process runtime and waits are instead each task's own
//! kernel counters, settled by a walk over every task before every read ([`settle`]).
//!
//! Fills: per-CPU context switches, migrations in/out, run-queue wait and its histogram;
//! exact migrations by distance and cause with the LLC matrix; processes with exact
//! runtime per LLC, migrations by distance, wait and the preferred LLC (the kernel's own
//! on v7.2+, else emulated from the exact runtime); the detail-event log. Busy time,
//! schedstat and NUMA stay with the procfs source; names and cgroups of the rows come
//! from the enrichment stage (src/enrich.rs).

mod attribution;
pub mod delta;
pub mod features;
pub mod floor;
pub mod layout;
mod maps;
mod processes;
pub mod read;
mod settle;
pub mod tracing;

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::Mutex;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{OpenObject, RingBuffer, RingBufferBuilder};

use self::layout::{MAX_CPUS, NR_PC, parse_event, skel, types};
use self::processes::name_exited;
use self::read::Cumulative;
use self::settle::run_settle;
pub use self::settle::{SETTLED, Walker};
use super::Source;
use crate::preferred::PreferredLlc;
use crate::snapshot::{DetailEvent, EventKind, EventLog, Snapshot, SourceState, SourceStatus};
use crate::source::perf::GroupReader;
use crate::topology::Topology;

/// Detail events kept per snapshot; the rest count as dropped.
const EVENTS_PER_SNAPSHOT: usize = 256;

/// Where the run-queue waits come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits {
    /// The kernel's own `sched_info.last_queued` (CONFIG_SCHED_INFO), read at switch-in:
    /// no sched_wakeup hook.
    SchedInfo,
    /// Stamped by a sched_wakeup hook (and at preemption) and taken at switch-in.
    Stamped,
}

impl Waits {
    /// The kernel keeps sched_info when it has `/proc/PID/schedstat`.
    pub fn of_kernel() -> Self {
        if crate::kroot::KernelRoot::default().exists("/proc/self/schedstat") {
            Waits::SchedInfo
        } else {
            Waits::Stamped
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Waits::SchedInfo => "waits from the kernel's sched_info",
            Waits::Stamped => {
                "waits stamped at wakeup (no CONFIG_SCHED_INFO: /proc/PID/schedstat absent)"
            }
        }
    }
}

/// How the program was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    TpBtf,
    RawTp,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::TpBtf => "tp_btf",
            Mode::RawTp => "raw_tp",
        }
    }
}

/// Why BPF could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

impl LoadError {
    pub fn permission() -> Self {
        LoadError("BPF not permitted: run as root or grant cap_bpf,cap_perfmon".into())
    }
}

static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn libbpf_print(_level: libbpf_rs::PrintLevel, msg: String) {
    if std::env::var_os("LLCTOP_LIBBPF_DEBUG").is_some() {
        eprint!("{msg}");
    }
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        if log.len() > 200 {
            log.remove(0);
        }
        log.push(msg.trim_end().to_string());
    }
}

fn last_libbpf_lines(n: usize) -> String {
    LIBBPF_LOG
        .lock()
        .map(|l| {
            l.iter()
                .rev()
                .take(n)
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .unwrap_or_default()
}

/// EPERM: no CAP_BPF/CAP_PERFMON (or lockdown). EACCES is the verifier refusing a
/// program, which is a load failure to retry differently, not a privilege problem.
fn is_permission(e: &libbpf_rs::Error) -> bool {
    e.to_string().contains("(os error 1)")
}

/// The source state's word on the preferred LLC, by where it comes from.
pub const PREFERRED_KERNEL: &str = "preferred LLC: the kernel's own (p->preferred_llc)";
pub const PREFERRED_EMULATED: &str = "preferred LLC emulated from each process's runtime per LLC: this kernel has no p->preferred_llc (cache-aware scheduling, v7.2+ with CONFIG_SCHED_CACHE)";

pub struct BpfSource {
    skel: skel::LlctopSkel<'static>,
    /// The accumulator slots and the per-process entries mapped into this process.
    mapped: read::Mappings,
    ringbuf: RingBuffer<'static>,
    pending: Rc<RefCell<Vec<DetailEvent>>>,
    mode: Mode,
    waits: Waits,
    /// Runtime and per-process waits are the kernel's own counters, settled per task
    /// (this walker runs before every read), not summed at every switch.
    settle: Option<Walker>,
    /// Why this read's task walk failed.
    settle_error: Option<String>,
    /// Why the program was loaded without a task walker the kernel has (it refused it).
    settle_refused: Option<String>,
    /// How long the last read's task walk took (zero without one).
    settle_time: std::time::Duration,
    disabled: Vec<&'static str>,
    nr_llc: usize,
    nr_cpus: usize,
    prev: Option<Cumulative>,
    /// Exited processes whose entries did not change in the last read and no CPU held:
    /// forgotten (their map entries deleted) when the same holds at the next read.
    fading: rustc_hash::FxHashSet<u32>,
    /// Processes forgotten since attach.
    forgotten: u64,
    /// Exited processes not yet forgotten, with their names (empty when only the sweep
    /// found them gone).
    gone: rustc_hash::FxHashMap<u32, String>,
    /// Reads since attach (the sweep runs every [`processes::SWEEP_EVERY`]).
    reads: u64,
    preferred: PreferredLlc,
    /// The kernel's id of each LLC (`p->preferred_llc`'s id space).
    kernel_llc: Vec<Option<u32>>,
    top: usize,
    /// Per-process counter attribution: the CPUs' group readers and the slots the BPF
    /// program reads (bit i = `Slot::ALL[i]`); `attribution_note` says why it is off.
    readers: Vec<GroupReader>,
    pc_mask: u32,
    attribution_note: Option<String>,
    /// What the kernel offered at load (the parts switched off are named in the state).
    features: features::Features,
}

impl BpfSource {
    /// Load and attach, trying tp_btf then raw_tp, with and without the NUMA hooks.
    pub fn load(topo: &Topology, top: usize) -> Result<Self, LoadError> {
        Self::load_modes(topo, top, &[Mode::TpBtf, Mode::RawTp])
    }

    /// Like [`load`](Self::load), trying only `modes` (tests force the raw_tp fallback).
    pub fn load_modes(topo: &Topology, top: usize, modes: &[Mode]) -> Result<Self, LoadError> {
        Self::load_with(topo, top, modes, Waits::of_kernel())
    }

    /// Like [`load_modes`](Self::load_modes) with the waits taken as `waits` says (tests
    /// run the stamped path on a kernel that has sched_info).
    pub fn load_with(
        topo: &Topology,
        top: usize,
        modes: &[Mode],
        waits: Waits,
    ) -> Result<Self, LoadError> {
        Self::load_walkers(topo, top, modes, waits, &Walker::of_kernel())
    }

    /// Like [`load_with`](Self::load_with), settling tasks with the first of `walkers`
    /// that loads (tests run each walker on one kernel).
    pub fn load_walkers(
        topo: &Topology,
        top: usize,
        modes: &[Mode],
        waits: Waits,
        walkers: &[Walker],
    ) -> Result<Self, LoadError> {
        Self::load_all(topo, top, modes, waits, walkers, None, None)
    }

    /// Like [`load_with`](Self::load_with) with the kernel features named in `without`
    /// (`task_storage`, `bpf_loop`, `fetch_atomics`) taken as missing: tests run every
    /// old kernel's path on a new one.
    pub fn load_without(
        topo: &Topology,
        top: usize,
        modes: &[Mode],
        waits: Waits,
        without: &str,
    ) -> Result<Self, LoadError> {
        let feats = features::Features::probe().without(without);
        Self::load_all(
            topo,
            top,
            modes,
            waits,
            &Walker::of_kernel(),
            None,
            Some(feats),
        )
    }

    /// Load in trace mode with a trace ring buffer of `ring` bytes (a power of two, at
    /// least a page): every switch, waking, migration, placement, fork and exit is also
    /// written to it ([`tracing`]; [`BpfSource::trace_tap`] reads it).
    pub fn load_traced(
        topo: &Topology,
        top: usize,
        cfg: tracing::TraceConfig,
    ) -> Result<Self, LoadError> {
        Self::load_all(
            topo,
            top,
            &[Mode::TpBtf, Mode::RawTp],
            Waits::of_kernel(),
            &Walker::of_kernel(),
            Some(cfg),
            None,
        )
    }

    /// The trace ring buffer and per-CPU statistics as handles for a thread of their own
    /// (a source loaded in trace mode; otherwise the ring is a page nothing writes to).
    pub fn trace_tap(&self) -> Result<tracing::TraceTap, LoadError> {
        use std::os::fd::AsFd;
        let p = &self.skel.progs;
        let progs = [
            &p.btf_switch,
            &p.raw_switch,
            &p.btf_switch_old,
            &p.btf_migrate_old,
            &p.btf_waking,
            &p.raw_waking,
            &p.btf_wakeup_new,
            &p.raw_wakeup_new,
            &p.btf_wakeup_new_bounded,
            &p.raw_wakeup_new_bounded,
            &p.btf_migrate,
            &p.raw_migrate,
            &p.btf_fork,
            &p.raw_fork,
            &p.btf_exec,
            &p.raw_exec,
            &p.btf_exit,
            &p.raw_exit,
            &p.btf_rename,
            &p.raw_rename,
        ]
        .into_iter()
        .filter(|p| p.autoload())
        .filter_map(|p| p.as_fd().try_clone_to_owned().ok())
        .collect();
        let maps = tracing::TraceMaps {
            ring: &self.skel.maps.trace_rb,
            stage: &self.skel.maps.trace_stage,
            ctl: &self.skel.maps.trace_ctl,
            stats: &self.skel.maps.cpu_stats,
        };
        tracing::TraceTap::new(maps, progs, self.nr_cpus)
            .map_err(|e| LoadError(format!("trace ring buffer: {e}")))
    }

    fn load_all(
        topo: &Topology,
        top: usize,
        modes: &[Mode],
        waits: Waits,
        walkers: &[Walker],
        trace: Option<tracing::TraceConfig>,
        feats: Option<features::Features>,
    ) -> Result<Self, LoadError> {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, libbpf_print)));
        let feats = feats.unwrap_or_else(features::Features::probe);
        // Field offsets come from the kernel's BTF (CO-RE): without it nothing loads, and
        // libbpf would only say EINVAL.
        if !feats.btf {
            return Err(LoadError(format!(
                "this kernel has no BTF ({} is absent: CONFIG_DEBUG_INFO_BTF off): llctop's BPF program finds the kernel's fields through it",
                features::VMLINUX_BTF
            )));
        }
        let mut last = String::new();
        // A kernel may refuse a task walker alone (EPERM for an iterator program, seen on
        // a 6.18 build): the program then loads without one, and says so.
        let mut refused: Option<String> = None;
        for &mode in modes {
            // Settling tasks from the kernel's own counters needs direct task pointers,
            // sched_info, task-local storage and atomic exchange; without a task walker
            // it falls back to the slots.
            let mut settles: Vec<Option<Walker>> = Vec::new();
            if mode == Mode::TpBtf && waits == Waits::SchedInfo && feats.settle() {
                settles.extend(walkers.iter().copied().map(Some));
            }
            settles.push(None);
            for (settle, numa) in settles.iter().flat_map(|&s| [(s, true), (s, false)]) {
                match Self::try_load(topo, mode, numa, waits, settle, trace, feats) {
                    Ok((skel, ringbuf, pending)) => {
                        let nr_cpus = topo.nr_cpu_ids().max(1);
                        let slots = nr_cpus.min(MAX_CPUS) * layout::ACC_SLOTS;
                        let nr_llc = topo.llcs.len().max(1);
                        let mapped = read::Mappings {
                            stats: read::Mapped::new(
                                &skel.maps.cpu_stats,
                                nr_cpus.min(MAX_CPUS) as u32,
                                false,
                            ),
                            acc: read::Mapped::new(&skel.maps.acc, slots as u32, false),
                            vals: None,
                            matrix: read::Mapped::new(
                                &skel.maps.llc_matrix,
                                (nr_llc * nr_llc * nr_llc) as u32,
                                false,
                            ),
                            mig: read::Mapped::new(
                                &skel.maps.cpu_mig,
                                (nr_llc * nr_cpus.min(MAX_CPUS)) as u32,
                                false,
                            ),
                        };
                        return Ok(BpfSource {
                            skel,
                            mapped,
                            ringbuf,
                            pending,
                            mode,
                            waits,
                            settle,
                            settle_error: None,
                            settle_refused: refused.filter(|_| settle.is_none()),
                            settle_time: Default::default(),
                            disabled: if numa {
                                vec![]
                            } else {
                                vec!["sched_move_numa", "sched_swap_numa"]
                            },
                            nr_llc: topo.llcs.len().max(1),
                            nr_cpus,
                            prev: None,
                            fading: Default::default(),
                            forgotten: 0,
                            gone: Default::default(),
                            reads: 0,
                            preferred: PreferredLlc::new(),
                            kernel_llc: crate::preferred::kernel_llc_ids(topo),
                            top,
                            readers: Vec::new(),
                            pc_mask: 0,
                            attribution_note: None,
                            features: feats,
                        });
                    }
                    Err(e) if is_permission(&e) && settle.is_some() => {
                        refused = settle.map(|w| {
                            format!(
                                "the kernel refused the task walker ({}: {e}): per-process runtime and waits summed at context switches",
                                w.label()
                            )
                        });
                    }
                    Err(e) if is_permission(&e) => return Err(LoadError::permission()),
                    Err(e) => {
                        last = format!(
                            "{} ({}{}): {e}; libbpf: {}",
                            mode.label(),
                            if numa {
                                "with NUMA hooks"
                            } else {
                                "without NUMA hooks"
                            },
                            settle.map_or(String::new(), |w| format!(", {}", w.label())),
                            last_libbpf_lines(3)
                        );
                    }
                }
            }
        }
        Err(LoadError(format!("BPF program failed to load: {last}")))
    }

    #[allow(clippy::type_complexity)]
    fn try_load(
        topo: &Topology,
        mode: Mode,
        numa: bool,
        waits: Waits,
        settle: Option<Walker>,
        trace: Option<tracing::TraceConfig>,
        feats: features::Features,
    ) -> Result<
        (
            skel::LlctopSkel<'static>,
            RingBuffer<'static>,
            Rc<RefCell<Vec<DetailEvent>>>,
        ),
        libbpf_rs::Error,
    > {
        // The open object must outlive the skeleton, which lives as long as the source:
        // one small leak per successful or failed attempt, a handful per process at most.
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = skel::LlctopSkelBuilder::default().open(storage)?;
        let nr_cpus = topo.nr_cpu_ids().clamp(1, MAX_CPUS);
        let nr_llc = topo.llcs.len().max(1);
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.sched_info_waits = waits == Waits::SchedInfo;
            ro.task_settle = settle.is_some();
            ro.have_task_storage = feats.task_storage;
            ro.trace_on = trace.is_some();
            ro.load_ns = crate::clock::mono_ns();
            ro.nr_llc = nr_llc as u32;
            ro.nr_cpu_ids = nr_cpus as u32;
            let kernel_llc = crate::preferred::kernel_llc_ids(topo);
            for c in topo.online_cpus() {
                let (Some(core), Some(llc)) = (c.core, c.llc) else {
                    continue;
                };
                let Some(slot) = ro.topo.get_mut(c.cpu as usize) else {
                    continue;
                };
                *slot = types::cpu_topo {
                    core,
                    llc,
                    // CPUs without a node (no NUMA) share node 0.
                    node: c.node.unwrap_or(0),
                    kernel_llc: kernel_llc
                        .get(llc as usize)
                        .copied()
                        .flatten()
                        .unwrap_or(u32::MAX),
                    valid: 1,
                };
            }
        }
        open.maps.cpu_stats.set_max_entries(nr_cpus as u32)?;
        open.maps
            .cpu_mig
            .set_max_entries((nr_llc * nr_cpus) as u32)?;
        open.maps
            .acc
            .set_max_entries((nr_cpus * layout::ACC_SLOTS) as u32)?;
        open.maps.pmu.set_max_entries((nr_cpus * NR_PC) as u32)?;
        if !feats.task_storage {
            // Not created: the code that uses them is switched off (have_task_storage).
            open.maps.wait_ts.set_autocreate(false)?;
            open.maps.task_acct.set_autocreate(false)?;
        }
        open.maps
            .trace_rb
            .set_max_entries(trace.map_or(tracing::RING_OFF, |t| t.ring))?;
        open.maps
            .trace_stage
            .set_max_entries(if trace.is_some() { nr_cpus as u32 } else { 1 })?;
        open.maps
            .llc_matrix
            .set_max_entries((nr_llc * nr_llc * nr_llc) as u32)?;
        let progs = &mut open.progs;
        let btf = mode == Mode::TpBtf;
        // (program, tp_btf or raw_tp, a NUMA hook, a wakeup hook)
        let stamps = waits == Waits::Stamped;
        for (p, is_btf, is_numa, is_wakeup) in [
            (&mut progs.btf_switch, true, false, false),
            (&mut progs.btf_switch_old, true, false, false),
            (&mut progs.btf_migrate_old, true, false, false),
            (&mut progs.btf_wakeup, true, false, true),
            (&mut progs.btf_wakeup_new, true, false, false),
            (&mut progs.btf_wakeup_new_bounded, true, false, false),
            (&mut progs.btf_migrate, true, false, false),
            (&mut progs.btf_exit, true, false, false),
            (&mut progs.btf_move_numa, true, true, false),
            (&mut progs.btf_swap_numa, true, true, false),
            (&mut progs.raw_switch, false, false, false),
            (&mut progs.raw_wakeup, false, false, true),
            (&mut progs.raw_wakeup_new, false, false, false),
            (&mut progs.raw_wakeup_new_bounded, false, false, false),
            (&mut progs.raw_migrate, false, false, false),
            (&mut progs.raw_exit, false, false, false),
            (&mut progs.raw_move_numa, false, true, false),
            (&mut progs.raw_swap_numa, false, true, false),
        ] {
            p.set_autoload(is_btf == btf && (numa || !is_numa) && (stamps || !is_wakeup));
        }
        // Without atomic exchange (before 5.12) the switch and migrate programs that can
        // settle tasks are refused whole: their _old twins leave the settle out.
        for (p, old) in [
            (&mut progs.btf_switch, false),
            (&mut progs.btf_migrate, false),
            (&mut progs.btf_switch_old, true),
            (&mut progs.btf_migrate_old, true),
        ] {
            if old == feats.fetch_atomics {
                p.set_autoload(false);
            }
        }
        // The placement's idle scan: with bpf_loop where the kernel has it, else the
        // program with the bounded scan (the other is not loaded: an old kernel refuses
        // a program that holds a bpf_loop callback at all).
        for (p, bounded) in [
            (&mut progs.btf_wakeup_new, false),
            (&mut progs.raw_wakeup_new, false),
            (&mut progs.btf_wakeup_new_bounded, true),
            (&mut progs.raw_wakeup_new_bounded, true),
        ] {
            if bounded == feats.bpf_loop {
                p.set_autoload(false);
            }
        }
        // The trace-only hooks.
        let wakings = trace.is_some_and(|t| t.wakings);
        for (p, is_btf, waking) in [
            (&mut progs.btf_waking, true, true),
            (&mut progs.btf_fork, true, false),
            (&mut progs.btf_exec, true, false),
            (&mut progs.btf_rename, true, false),
            (&mut progs.raw_waking, false, true),
            (&mut progs.raw_fork, false, false),
            (&mut progs.raw_exec, false, false),
            (&mut progs.raw_rename, false, false),
        ] {
            p.set_autoload(is_btf == btf && trace.is_some() && (wakings || !waking));
        }
        match settle {
            Some(w) => w.choose(progs),
            None => {
                progs.settle_tasks.set_autoload(false);
                progs.settle_walk.set_autoload(false);
            }
        }
        let mut skel = open.load()?;
        skel.attach()?;
        if let Some(w) = settle {
            w.attach(&mut skel)?;
            // Every task alive now gets its baseline (counted from here on).
            run_settle(&skel)?;
        }
        let pending: Rc<RefCell<Vec<DetailEvent>>> = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&pending);
        let mut rb = RingBufferBuilder::new();
        rb.add(&skel.maps.events, move |data: &[u8]| {
            if let Some(e) = parse_event(data) {
                sink.borrow_mut().push(e);
            }
            0
        })?;
        let ringbuf = rb.build()?;
        Ok((skel, ringbuf, pending))
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn waits(&self) -> Waits {
        self.waits
    }

    /// Whether runtime and per-process waits come from the kernel's per-task counters
    /// (settled by a walk over every task before each read, and at migrations and exits).
    pub fn settles_tasks(&self) -> bool {
        self.settle.is_some()
    }

    /// Which walker settles the tasks before each read, if they are settled.
    pub fn walker(&self) -> Option<Walker> {
        self.settle
    }

    /// How long the last read's task walk took (zero where tasks are not settled):
    /// the part of a read that grows with the tasks alive (examples/scale_bench.rs).
    pub fn settle_time(&self) -> std::time::Duration {
        self.settle_time
    }

    /// The state line of the source: how it is attached, where the preferred LLC comes
    /// from, what is missing.
    /// `unseen`: the interval's switches made without the tracepoint, of all switches.
    fn status(&self, kernel_preferred: bool, unseen: (u64, u64)) -> SourceStatus {
        let (missed, all) = unseen;
        let mut parts = vec![self.mode.label().to_string()];
        if missed > 0 {
            parts.push(format!(
                "{missed} of {all} context switches made without the sched_switch tracepoint (this kernel skips it for some tasks): {}",
                if self.settle.is_some() {
                    "the run-queue waits they ended are missing from the per-CPU waits (per-process runtimes and waits are the kernel's own)"
                } else if self.waits == Waits::SchedInfo {
                    "the run-queue waits they ended are missing, runtimes split at the tasks' own arrival times"
                } else {
                    "the run-queue waits they ended are missing, their tasks' runtimes go to the task seen before them"
                }
            ));
        } else if self.disabled.is_empty() {
            parts.push("every event counted in the kernel".into());
        }
        parts.push(self.waits.label().to_string());
        parts.extend(
            self.features
                .degradations(self.nr_cpus, self.waits == Waits::SchedInfo),
        );
        if let Some(w) = self.settle {
            parts.push(format!("{SETTLED} ({})", w.label()));
        }
        if let Some(e) = &self.settle_error {
            parts.push(e.clone());
        }
        if let Some(e) = &self.settle_refused {
            parts.push(e.clone());
        }
        if !self.disabled.is_empty() {
            parts.push(format!(
                "hooks not available on this kernel: {}",
                self.disabled.join(", ")
            ));
        }
        let mut reason = parts.join("; ");
        reason = format!(
            "{reason}; {}",
            if kernel_preferred {
                PREFERRED_KERNEL
            } else {
                PREFERRED_EMULATED
            }
        );
        if let Some(note) = &self.attribution_note {
            reason = format!("{reason}; {note}");
        } else if self.pc_mask != 0 {
            reason = format!(
                "{reason}; per-process counters on {} CPUs",
                self.readers.len()
            );
        }
        SourceStatus {
            name: "bpf".into(),
            state: if missed > 0 || self.settle_error.is_some() {
                SourceState::Degraded
            } else {
                SourceState::Active
            },
            reason: Some(reason),
        }
    }
}

impl Source for BpfSource {
    fn name(&self) -> &'static str {
        "bpf"
    }

    fn sample(&mut self, topo: &Topology, snap: &mut Snapshot) {
        let _ = self.ringbuf.consume();
        // A failed run leaves the running tasks' time since their last settle for the
        // next read: late, never lost or counted twice.
        let t0 = std::time::Instant::now();
        self.settle_error = if self.settle.is_some() {
            run_settle(&self.skel).err().map(|e| {
                format!("the task walk failed ({e}): running tasks' runtime and waits come late")
            })
        } else {
            None
        };
        self.settle_time = t0.elapsed();
        self.mapped.cover_vals(&self.skel);
        let cur = read::read(
            &self.skel,
            self.nr_cpus,
            self.nr_llc,
            &self.readers,
            &self.mapped,
            self.settle.is_some(),
            self.prev
                .as_ref()
                .map_or((0, 0), |p| (p.procs.len(), p.ents.len())),
        );
        let mut events = std::mem::take(&mut *self.pending.borrow_mut());
        let unseen = self
            .prev
            .as_ref()
            .map_or((0, 0), |p| delta::unseen(p, &cur));
        snap.sources.push(self.status(cur.kernel_preferred, unseen));
        let Some(prev) = self.prev.replace(cur) else {
            return;
        };
        let Some(cur) = self.prev.as_ref() else {
            return;
        };
        delta::cpus(&prev, cur, &mut snap.cpus);
        snap.migrations = Some(delta::migrations(&prev, cur, self.nr_llc));
        let params = delta::ProcessParams {
            topo,
            nr_llc: self.nr_llc,
            pc_mask: self.pc_mask,
            kernel_llc: &self.kernel_llc,
            top: self.top,
            secs: snap.time.interval_secs(),
        };
        let mut table = delta::processes(&prev, cur, &params, &mut self.preferred);
        name_exited(&mut self.gone, &cur.exited, &mut table.rows);
        snap.processes = Some(table);
        let overflow = events.len().saturating_sub(EVENTS_PER_SNAPSHOT);
        if overflow > 0 {
            // New tasks' events first (a pile-up is judged on them), then migrations in
            // time order.
            events.sort_by_key(|e| (e.kind == EventKind::Migration, e.mono_ns));
            events.truncate(EVENTS_PER_SNAPSHOT);
            events.sort_by_key(|e| e.mono_ns);
        }
        snap.events = Some(EventLog {
            dropped: delta::d(cur.dropped, prev.dropped) + overflow as u64,
            events,
        });
        self.forget_exited(&prev);
    }
}
