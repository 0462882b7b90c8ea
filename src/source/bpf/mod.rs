//! The BPF source: exact scheduler event counts aggregated in the kernel by
//! bpf/llctop.bpf.c, read once per interval.
//!
//! The stages: [`read`] takes the maps' cumulative values (the raw stage), [`delta`]
//! turns two reads into the interval's figures (pure, unit-tested), and [`layout`] holds
//! what the C program and Rust share, from the generated types; `processes.rs` forgets
//! the processes that exited once counted; `attribution.rs` hands the perf source's
//! counters to the program for per-process attribution; `watch.rs` takes new threads'
//! waits beside an idle CPU once their span is over.
//!
//! Loading ([`BpfSource::load`], `load.rs`) tries, in order: tp_btf hooks with the optional NUMA
//! hooks, tp_btf without them, then the same with raw_tp; a permission error stops the
//! attempts at once. Run-queue waits come from the kernel's own `sched_info` where it
//! keeps it; the sched_wakeup hook then only stamps the waits of new threads watched beside
//! an idle CPU ([`Waits`]). The maps hold cumulative values since
//! attach; each tick reads them with the CPUs' accumulator slots not yet flushed, adds
//! the slice still running on each CPU and what its switch-in found (so a task that
//! never switches is still counted), and takes the difference with the previous read.
//! With tp_btf and sched_info, per-process runtime and waits are instead each task's own
//! kernel counters, settled by a walk over every task before every read ([`settle`]).
//!
//! Fills: per-CPU context switches, migrations in/out, run-queue wait and its histogram;
//! exact migrations by distance and cause with the LLC matrix; processes with exact
//! runtime per LLC, migrations by distance, wait and the preferred LLC (the kernel's own
//! on v7.2+, else emulated from the exact runtime); the detail-event log, with new
//! threads' waits while the CPU idle at their placement sat idle (a pile-up's cost). Busy time,
//! schedstat and NUMA stay with the procfs source; names and cgroups of the rows come
//! from the enrichment stage (src/enrich.rs).

mod attribution;
mod cas;
pub mod delta;
pub mod features;
pub mod floor;
pub mod layout;
mod load;
mod maps;
mod processes;
pub mod read;
mod settle;
pub mod tracing;
pub mod wakers;
mod watch;

use std::cell::RefCell;
use std::rc::Rc;

use libbpf_rs::RingBuffer;

use self::layout::skel;
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
    /// The kernel's own `sched_info.last_queued` (CONFIG_SCHED_INFO), read at switch-in;
    /// the sched_wakeup hook stamps only the waits of threads watched beside an idle CPU.
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

/// The source state's word when `--wakeups` asked for the wakeup pairs and they are not
/// counted (the reason follows).
pub const NO_WAKEUPS: &str = "no wakeup pairs";

/// The wakeup pairs (`--wakeups`): not asked for, counted, or why not.
enum WakeupPairs {
    Off,
    On(Box<wakers::Wakers>),
    Refused(String),
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
    /// Processes given a row besides the `top` (sorted: [`Source::keep_rows`]).
    keep: Vec<u32>,
    /// Per-process counter attribution: the CPUs' group readers and the slots the BPF
    /// program reads (bit i = `Slot::ALL[i]`); `attribution_note` says why it is off.
    readers: Vec<GroupReader>,
    pc_mask: u32,
    attribution_note: Option<String>,
    /// What the kernel offered at load (the parts switched off are named in the state).
    features: features::Features,
    wakeups: WakeupPairs,
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

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Count which process wakes which (bpf/wakers.bpf.c, an object of its own): from the
    /// next read on, each snapshot has `wakeups`; where the kernel refuses it, the state
    /// says why (and the run says it once on stderr).
    pub fn count_wakeups(&mut self) {
        self.wakeups = match wakers::Wakers::load() {
            Ok(w) => WakeupPairs::On(Box::new(w)),
            Err(e) => {
                crate::say!("llctop: --wakeups: {}", crate::text::Esc(&e));
                WakeupPairs::Refused(e)
            }
        };
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
        let lost = (missed > 0).then(|| {
            format!(
                "{missed} of {all} context switches made without the sched_switch tracepoint (this kernel skips it for some tasks): {}",
                if self.settle.is_some() {
                    "the run-queue waits they ended are missing from the per-CPU waits (per-process runtimes and waits are the kernel's own)"
                } else if self.waits == Waits::SchedInfo {
                    "the run-queue waits they ended are missing, runtimes split at the tasks' own arrival times"
                } else {
                    "the run-queue waits they ended are missing, their tasks' runtimes go to the task seen before them"
                }
            )
        });
        // Degraded only when the switches it missed could move a shown figure (the waits
        // they ended) by more than 1%; below that the loss is a note (the TUI's `i`, the
        // recording), not a ◐ on every screen.
        let matters = unseen_matters(missed, all);
        if let Some(l) = lost.as_ref().filter(|_| matters) {
            parts.push(l.clone());
        } else if missed == 0 && self.disabled.is_empty() {
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
        match &self.wakeups {
            WakeupPairs::Off => {}
            WakeupPairs::On(_) => parts.push(WAKEUPS_COUNTED.into()),
            WakeupPairs::Refused(e) => parts.push(e.clone()),
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
            name: crate::snapshot::SourceName::Bpf.as_str().into(),
            state: if matters || self.settle_error.is_some() {
                SourceState::Degraded
            } else {
                SourceState::Active
            },
            reason: Some(reason),
            note: lost.filter(|_| !matters).map(|l| {
                format!("{l}: at most 1% of the interval's switches, too few to move a figure")
            }),
        }
    }
}

/// The source state's word with the wakeup pairs counted.
pub const WAKEUPS_COUNTED: &str = "wakeup pairs counted (sched_waking in task context; wakeups in interrupt context go to no pair)";

/// Whether `missed` of `all` switches made without the tracepoint could move a shown
/// figure (the waits they ended) by more than 1%: then the source is degraded.
pub fn unseen_matters(missed: u64, all: u64) -> bool {
    missed.saturating_mul(100) > all
}

impl Source for BpfSource {
    fn name(&self) -> &'static str {
        crate::snapshot::SourceName::Bpf.as_str()
    }

    fn keep_rows(&mut self, tgids: &[u32]) {
        if self.keep != tgids {
            self.keep = tgids.to_vec();
        }
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
        let mut cur = read::read(
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
        if let Some(prev) = self.prev.as_ref() {
            read::carry(prev, &mut cur);
        }
        let mut events = std::mem::take(&mut *self.pending.borrow_mut());
        let unseen = self
            .prev
            .as_ref()
            .map_or((0, 0), |p| delta::unseen(p, &cur));
        snap.sources.push(self.status(cur.kernel_preferred, unseen));
        // The pairs' read beside the maps' (the first is the baseline of both).
        if let WakeupPairs::On(w) = &mut self.wakeups {
            snap.wakeups = w.read();
        }
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
            keep: &self.keep,
            secs: snap.time.interval_secs(),
        };
        let mut table = delta::processes(&prev, cur, &params, &mut self.preferred);
        name_exited(&mut self.gone, &cur.exited, &mut table.rows);
        // The cache groups the walk read (v7.2+; empty elsewhere).
        if self.settle.is_some() && cur.kernel_preferred {
            let mut groups = cas::take(&self.skel.maps.cas_procs);
            for r in &mut table.rows {
                r.cache_group = groups.remove(&r.pid);
            }
        }
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
            idle_waits: Some(watch::take_ended(
                &self.skel.maps.idle_watch,
                snap.time.mono_ns,
            )),
        });
        let forgot = self.forget_exited(&prev);
        if let WakeupPairs::On(w) = &mut self.wakeups {
            w.forget(&forgot);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_loss_below_one_percent_is_a_note_not_a_degradation() {
        // 4 of 2,192 (the new user's machine, issue 51): a note.
        assert!(!super::unseen_matters(4, 2192));
        assert!(!super::unseen_matters(10, 1000));
        assert!(super::unseen_matters(11, 1000));
        assert!(super::unseen_matters(1, 0));
        assert!(!super::unseen_matters(0, 0));
    }
}
