//! Loading the BPF program: open the skeleton, size and fill its read-only data for this
//! machine, pick the hooks this kernel attaches (tp_btf with or without the NUMA hooks,
//! then raw_tp), load, attach, and build the ring buffer of detail events; libbpf's
//! messages kept to say why a load failed.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::Mutex;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{OpenObject, RingBuffer, RingBufferBuilder};

use super::layout::{MAX_CPUS, NR_PC, parse_event, skel, types};
use super::settle::run_settle;
use super::{BpfSource, LoadError, Mode, Waits, Walker, features, layout, read, tracing};
use crate::preferred::PreferredLlc;
use crate::snapshot::DetailEvent;
use crate::topology::Topology;

static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn libbpf_print(_level: libbpf_rs::PrintLevel, msg: String) {
    if std::env::var_os("LLCTOP_LIBBPF_DEBUG").is_some() {
        crate::say!("{}", msg.trim_end_matches('\n'));
    }
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        if log.len() > 200 {
            log.remove(0);
        }
        log.push(msg.trim_end().to_string());
    }
}

pub(super) fn last_libbpf_lines(n: usize) -> String {
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

/// EAGAIN: the verifier stops when a signal is pending for the loading thread (any
/// signal queued to the process may pick it, e.g. a child's SIGCHLD while the spawning
/// thread blocks it, a terminal's SIGWINCH), and libbpf's own five quick retries can all
/// fall inside one burst (seen once in CI; what sent the signals is not known).
/// Not a refusal: the same load is tried again after a pause.
pub(super) fn is_interrupted(e: &libbpf_rs::Error) -> bool {
    e.to_string().contains("(os error 11)")
}

/// Loads interrupted by signals retried this many times more, the pause growing by
/// [`INTERRUPTED_PAUSE`] each time (1.5 s of pauses at most).
pub(super) const INTERRUPTED_RETRIES: u32 = 5;
pub(super) const INTERRUPTED_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

impl BpfSource {
    pub(super) fn load_all(
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
            // A walker the kernel refused with EPERM is refused whatever the NUMA hooks:
            // its other attempt is skipped (each load verifies the whole program again,
            // ~0.6 s of set-up on a small VM).
            let mut refused_walkers: Vec<Walker> = Vec::new();
            for (settle, numa) in settles.iter().flat_map(|&s| [(s, true), (s, false)]) {
                if settle.is_some_and(|w| refused_walkers.contains(&w)) {
                    continue;
                }
                let mut interrupted = 0;
                let loaded = loop {
                    match Self::try_load(topo, mode, numa, waits, settle, trace, feats) {
                        Err(e) if is_interrupted(&e) && interrupted < INTERRUPTED_RETRIES => {
                            interrupted += 1;
                            std::thread::sleep(INTERRUPTED_PAUSE * interrupted);
                        }
                        r => break r,
                    }
                };
                match loaded {
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
                            keep: Vec::new(),
                            readers: Vec::new(),
                            pc_mask: 0,
                            attribution_note: None,
                            features: feats,
                            wakeups: super::WakeupPairs::Off,
                        });
                    }
                    // A walker refused for any reason (EPERM before the verifier runs, the
                    // verifier itself): the program loads without it, and the source says why.
                    Err(e) if settle.is_some() => {
                        if is_permission(&e)
                            && let Some(w) = settle
                        {
                            refused_walkers.push(w);
                        }
                        refused = settle.map(|w| {
                            format!(
                                "the kernel refused the task walker ({}: {e}{}): per-process runtime and waits summed at context switches",
                                w.label(),
                                if is_permission(&e) {
                                    String::new()
                                } else {
                                    format!("; libbpf: {}", last_libbpf_lines(2))
                                }
                            )
                        });
                    }
                    Err(e) if is_permission(&e) => return Err(LoadError::permission()),
                    Err(e) => {
                        last = format!(
                            "{} ({}{}): {e}{}; libbpf: {}",
                            mode.label(),
                            if numa {
                                "with NUMA hooks"
                            } else {
                                "without NUMA hooks"
                            },
                            settle.map_or(String::new(), |w| format!(", {}", w.label())),
                            if interrupted > 0 {
                                format!(
                                    " (the verifier was interrupted by a signal in {} tries)",
                                    interrupted + 1
                                )
                            } else {
                                String::new()
                            },
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
            ro.watch_ns = crate::snapshot::IDLE_WATCH_NS;
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
        // (program, tp_btf or raw_tp, a NUMA hook). The wakeup hook loads with sched_info
        // too: it stamps the waits of new threads watched beside an idle CPU
        // (bpf/idle.bpf.h), a clock read and a compare otherwise.
        for (p, is_btf, is_numa) in [
            (&mut progs.btf_switch, true, false),
            (&mut progs.btf_switch_old, true, false),
            (&mut progs.btf_migrate_old, true, false),
            (&mut progs.btf_wakeup, true, false),
            (&mut progs.btf_wakeup_new, true, false),
            (&mut progs.btf_wakeup_new_bounded, true, false),
            (&mut progs.btf_migrate, true, false),
            (&mut progs.btf_exit, true, false),
            (&mut progs.btf_move_numa, true, true),
            (&mut progs.btf_swap_numa, true, true),
            (&mut progs.raw_switch, false, false),
            (&mut progs.raw_wakeup, false, false),
            (&mut progs.raw_wakeup_new, false, false),
            (&mut progs.raw_wakeup_new_bounded, false, false),
            (&mut progs.raw_migrate, false, false),
            (&mut progs.raw_exit, false, false),
            (&mut progs.raw_move_numa, false, true),
            (&mut progs.raw_swap_numa, false, true),
        ] {
            p.set_autoload(is_btf == btf && (numa || !is_numa));
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
}
