//! `llctop trace`: a bounded capture written as a Perfetto trace as it runs. The BPF source
//! is loaded in trace mode; one thread owns the trace file and drains the trace ring
//! buffer into it (per-CPU sched bundles, migrations, placements, forks), while the run's
//! collector goes on as in `record` and sends each snapshot, its knob changes, the
//! advisor's findings and the sources' state changes to that thread. It ends at
//! `--duration`, on a signal, or — with `-- CMD` — when the command exits (llctop then
//! exits with the command's status). Records the ring buffer had no room for are counted
//! per CPU, written into the trace's statistics and said at the end.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::timeline::Timeline;
use crate::findings::advisor::FindingLine;
use crate::knobs::session::KnobEvent;
use crate::kroot::KernelRoot;
use crate::output::Output;
use crate::run::pipeline::{Ctl, Pipeline, Sink, Tick};
use crate::run::{self, Changes, Error, Options};
use crate::snapshot::{Snapshot, SourceStatus};
use crate::source::bpf::tracing::TraceTap;
use crate::text::Esc;
use crate::topology::Topology;

/// What to trace and where: the command line of `llctop trace` (src/cli.rs flattens it).
#[derive(Debug, Clone, clap::Args)]
pub struct Plan {
    /// Output file (`.pftrace`).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Stop after this long, in wall time (default: until the command exits, or
    /// Ctrl-C, SIGTERM, SIGHUP, SIGQUIT).
    #[arg(long, value_parser = crate::parse::parse_duration)]
    pub duration: Option<Duration>,
    /// Counter tracks per CPU too (busy, run-queue wait, migrations in and out).
    #[arg(long)]
    pub cpu_counters: bool,
    /// The kernel's trace buffer: a power of two from 64KiB to 1GiB (records the
    /// writer has not read when it is full are counted as lost).
    #[arg(long, default_value = crate::source::bpf::tracing::RING_DEFAULT, value_parser = crate::parse::parse_buffer)]
    pub buffer: u32,
    /// Leave wakings out (no sched_waking hook: a third of the capture cost per
    /// switch; the thread states then show no Runnable stretch after a sleep).
    #[arg(long)]
    pub no_wakings: bool,
    /// A command to trace (after `--`): the trace covers its lifetime and llctop
    /// exits with its status.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// What the collector's thread tells the trace's.
enum Msg {
    Snapshot(Box<Snapshot>),
    Knob(KnobEvent),
    KnobSeen {
        mono: u64,
        id: String,
        old: String,
        new: String,
    },
    Finding(u64, Box<FindingLine>),
    Source(u64, SourceStatus),
    /// `-- CMD`'s lifetime (to the trace's end when it outlived it).
    Command {
        start: u64,
        end: u64,
        argv: Vec<String>,
    },
}

/// (CLOCK_BOOTTIME, CLOCK_MONOTONIC) now.
fn boot_and_mono() -> (u64, u64) {
    let read = |id| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec; both clocks exist on Linux.
        unsafe { libc::clock_gettime(id, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let mono = read(libc::CLOCK_MONOTONIC);
    (read(libc::CLOCK_BOOTTIME), mono)
}

/// How the trace ended on the writer's side.
struct Written {
    /// The trace, finished but not yet committed (a run whose set-up failed discards it).
    out: Option<Output>,
    error: Option<String>,
    switches: u64,
    wakings: u64,
    counts: super::timeline::Counts,
    bytes: u64,
    lost: Vec<u64>,
    /// Runs of the trace's programs the kernel skipped (nested on a CPU).
    skipped: u64,
    undecoded: u64,
}

/// The writer thread: the trace ring buffer and the collector's messages into the file.
fn writer_thread(
    tap: TraceTap,
    mut tl: Timeline<Output>,
    rx: mpsc::Receiver<Msg>,
    done: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    cut: Option<std::fs::File>,
    keep: Arc<AtomicBool>,
) -> Written {
    let error: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    let tl_cell = std::cell::RefCell::new(&mut tl);
    let fail = |e: std::io::Error| {
        let mut g = error.borrow_mut();
        if g.is_none() {
            *g = Some(e.to_string());
        }
    };
    let drained = tap.drain(
        Duration::from_millis(25),
        |r| {
            if error.borrow().is_none()
                && let Err(e) = tl_cell.borrow_mut().record(&r)
            {
                fail(e);
            }
        },
        || {
            let mut t = tl_cell.borrow_mut();
            while let Ok(m) = rx.try_recv() {
                if error.borrow().is_some() {
                    continue;
                }
                let res = match m {
                    Msg::Snapshot(s) => t.snapshot(&s).and_then(|()| t.flush_sched()),
                    Msg::Knob(ev) => t.knob(&ev),
                    Msg::KnobSeen { mono, id, old, new } => {
                        t.knob_changed(mono, &id, &old, &new, None)
                    }
                    Msg::Finding(mono, l) => t.finding(mono, &l),
                    Msg::Source(mono, s) => t.source_state(mono, &s),
                    Msg::Command { start, end, argv } => t.command(start, end, &argv),
                };
                if let Err(e) = res {
                    fail(e);
                }
            }
            let failed = error.borrow().is_some();
            if failed {
                // The collector stops too: nothing more can be written.
                stop.store(true, Ordering::Relaxed);
                crate::signals::ring();
            }
            !failed && !done.load(Ordering::Relaxed)
        },
    );
    let undecoded = match drained {
        Ok(n) => n,
        Err(e) => {
            fail(std::io::Error::other(format!("trace ring buffer: {e}")));
            0
        }
    };
    let lost = tap.dropped();
    let skipped = tap.skipped();
    let mut error = error.into_inner();
    let total: u64 = lost.iter().sum::<u64>() + skipped;
    if error.is_none()
        && total > 0
        && let Err(e) = tl.note(
            crate::clock::mono_ns(),
            &format!(
                "{total} records lost: {} for want of room in the ring buffer, {skipped} runs the kernel skipped (nested)",
                total - skipped
            ),
        )
    {
        error = Some(e.to_string());
    }
    if error.is_none()
        && let Err(e) = tl.flush_sched()
    {
        error = Some(e.to_string());
    }
    // Once the run's set-up succeeded the trace is worth keeping however it ends (a full
    // disk included); a failed set-up discards it.
    if keep.load(Ordering::Relaxed) {
        tl.output_mut().keep();
    }
    // What the summary counts: all of it, or — once a write failed — what the file
    // holds, cut at the last flush that reached it.
    let (mut switches, mut wakings, mut counts) = (tl.switches(), tl.wakings(), tl.counts.clone());
    let cut_at = |committed: u64| {
        if let Some(f) = cut.as_ref()
            && f.metadata().is_ok_and(|m| m.is_file())
        {
            let _ = f.set_len(committed);
        }
    };
    // A failed write: the file is cut back to the last flush that reached it — whole
    // packets, and exactly what the summary then counts.
    let mut held = |d: super::timeline::OnDisk| {
        cut_at(d.bytes);
        (switches, wakings, counts) = (d.switches, d.wakings, d.counts);
        d.bytes
    };
    let mut out = None;
    let bytes = if error.is_none() {
        let flushed = tl.on_disk().clone();
        match tl.finish(crate::clock::mono_ns(), &lost) {
            Ok(o) => {
                out = Some(o);
                0
            }
            Err(e) => {
                error = Some(e.to_string());
                held(flushed)
            }
        }
    } else {
        held(tl.on_disk().clone())
    };
    Written {
        out,
        error,
        switches,
        wakings,
        counts,
        bytes,
        lost,
        skipped,
        undecoded,
    }
}

/// The command, started once the trace is being written, as a child that cannot outlive
/// llctop (child.rs); a thread waits for it and stops the run when it exits.
struct Command {
    pid: u32,
    started_mono: u64,
    waiter: std::thread::JoinHandle<Option<std::process::ExitStatus>>,
}

fn start_command(cmd: &[String], stop: &Arc<AtomicBool>) -> Result<Command, Error> {
    let (prog, args) = cmd.split_first().ok_or("empty command")?;
    let mut c = std::process::Command::new(prog);
    c.args(args);
    crate::child::prepare(&mut c, crate::child::OnParentDeath::Kill, None);
    let started_mono = crate::clock::mono_ns();
    let mut child: Child = c.spawn().map_err(|e| format!("{}: {e}", Esc(prog)))?;
    let pid = child.id();
    let stop = Arc::clone(stop);
    let waiter = std::thread::spawn(move || {
        let st = child.wait().ok();
        stop.store(true, Ordering::Relaxed);
        crate::signals::ring();
        st
    });
    Ok(Command {
        pid,
        started_mono,
        waiter,
    })
}

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    plan: &Plan,
    changes: &Changes,
) -> Result<(), Error> {
    // Everything that can be checked first is: the changes and the command.
    run::check_changes(opts, root, topo, changes)?;
    if let Some(prog) = plan.command.first() {
        crate::child::check_program(prog)?;
    }
    let stop = run::stop_flag()?;
    // The output next (a FIFO's reader is waited for before anything loads); until the
    // first snapshot reaches it, a failure discards it (an existing file is left whole).
    let named =
        |e: &dyn std::fmt::Display| format!("{}: {e}", Esc(&plan.output.display().to_string()));
    let out = Output::create(&plan.output, &[], run::output_wait(&stop, plan.duration))
        .map_err(|e| named(&e))?;
    let cut = out.try_clone_file().ok();
    let (sources, tap) = crate::source::select_traced(
        opts.top,
        root,
        topo,
        crate::source::bpf::tracing::TraceConfig {
            ring: plan.buffer,
            wakings: !plan.no_wakings,
        },
        opts.resctrl_setup(root, topo),
        opts.wakeups,
    )
    .map_err(|e| format!("llctop trace needs the BPF source (every switch is its records): {e}"))?;
    let mut p = Pipeline::with_sources(opts, root, topo, plan.duration, Arc::clone(&stop), sources);
    let (boot, mono) = boot_and_mono();
    let offset = boot as i64 - mono as i64;
    let mut tl = Timeline::new(out, topo, offset, plan.cpu_counters);
    tl.set_root(root.clone());
    let (release, machine) = uname();
    let (procs, threads) = super::procs::scan(root);
    // The preamble flushed: a trace cut by a full disk keeps at least it.
    tl.start(&release, &machine, Some((boot, mono)))
        .and_then(|()| tl.process_tree(mono, &procs, &threads))
        .and_then(|()| tl.start_stats(mono, topo.nr_cpu_ids()))
        .and_then(|()| tl.flush_sched())
        .map_err(|e| named(&e))?;
    let (tx, rx) = mpsc::channel::<Msg>();
    let done = Arc::new(AtomicBool::new(false));
    let keep = Arc::new(AtomicBool::new(false));
    let writer = {
        let (done, stop, keep) = (Arc::clone(&done), Arc::clone(&stop), Arc::clone(&keep));
        std::thread::Builder::new()
            .name("llctop-trace".into())
            .spawn(move || writer_thread(tap, tl, rx, done, stop, cut, keep))?
    };
    for s in &p.sources {
        if s.reason.is_some() {
            let _ = tx.send(Msg::Source(mono, s.clone()));
        }
    }
    // The knobs and the command: a failure ends the run before its first snapshot, and
    // the trace is discarded with it.
    let setup = p.change_knobs(opts, root, topo, changes).and_then(|()| {
        if plan.command.is_empty() {
            Ok(None)
        } else {
            start_command(&plan.command, &stop).map(Some)
        }
    });
    let command = match setup {
        Ok(c) => {
            keep.store(true, Ordering::Relaxed);
            c
        }
        Err(e) => {
            done.store(true, Ordering::Relaxed);
            drop(tx);
            drop(p);
            let _ = writer.join();
            return Err(e);
        }
    };
    crate::say!(
        "llctop: tracing to {} ({}; Ctrl-C stops)",
        Esc(&plan.output.display().to_string()),
        match (&plan.command, plan.duration) {
            (c, _) if !c.is_empty() => format!("until {} exits", Esc(&c[0])),
            (_, Some(d)) => format!("for {}", humantime::format_duration(d)),
            _ => "until stopped".to_string(),
        }
    );
    let mut sink = Traced {
        tx: Some(tx),
        done,
        writer: Some(writer),
        command,
        argv: plan.command.clone(),
        written: None,
        status: None,
    };
    p.drive(&mut [&mut sink])?;
    let (w, status) = (
        sink.written
            .take()
            .ok_or("the trace writer thread panicked")?,
        sink.status,
    );
    let committed = match w.out {
        Some(out) if w.error.is_none() => Some(out.commit().map_err(|e| named(&e))?),
        _ => None,
    };
    let lost: u64 = w.lost.iter().sum();
    let mut line = format!(
        "llctop: trace {}: {} switches, {} wakings, {} migrations ({}), {} placements, {} forks",
        Esc(&plan.output.display().to_string()),
        w.switches,
        w.wakings,
        w.counts.migrations,
        w.counts
            .by_distance
            .iter()
            .map(|(d, n)| format!("{d} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        w.counts.placements,
        w.counts.forks,
    );
    let size = std::fs::metadata(&plan.output).map_or(w.bytes, |m| m.len());
    if size > 0 {
        line.push_str(&format!(
            "; {} bytes{}",
            size,
            if w.switches > 0 {
                format!(" ({:.1} per switch)", size as f64 / w.switches as f64)
            } else {
                String::new()
            }
        ));
    }
    line.push_str(&format!(
        "; {lost} records lost (ring buffer full), {} skipped (the kernel runs no program nested in itself)",
        w.skipped
    ));
    if w.counts.unseen_switches > 0 {
        line.push_str(&format!(
            "; {} switches the kernel made without sched_switch, put back at the incoming task's arrival (sched_info)",
            w.counts.unseen_switches
        ));
    }
    if w.undecoded > 0 {
        line.push_str(&format!(", {} undecodable", w.undecoded));
    }
    if let Some(c) = committed.filter(|c| c.old.is_some()) {
        line.push_str(&c.to_string());
    }
    crate::say!("{line}");
    let _ = std::io::stderr().flush();
    if let Some(e) = w.error {
        return Err(named(&format!("{e} (the trace is cut at its last whole packet)")).into());
    }
    if let Some(st) = status {
        use std::os::unix::process::ExitStatusExt as _;
        let code = st
            .code()
            .or_else(|| st.signal().map(|s| 128 + s))
            .unwrap_or(1);
        run::set_exit_status(u8::try_from(code).unwrap_or(1));
    }
    Ok(())
}

/// The trace as a sink of the pipeline: each tick's snapshot, knob events and changes
/// seen, findings and source changes go to the writer thread; at the end the command is
/// asked to stop before the knobs are restored and the programs detached, and waited for
/// only after the writer has finished.
struct Traced {
    tx: Option<mpsc::Sender<Msg>>,
    done: Arc<AtomicBool>,
    writer: Option<std::thread::JoinHandle<Written>>,
    command: Option<Command>,
    argv: Vec<String>,
    /// How the writer ended (`None`: it panicked).
    written: Option<Written>,
    /// The command's exit status.
    status: Option<std::process::ExitStatus>,
}

impl Traced {
    fn send(&self, m: Msg) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(m).is_ok())
    }
}

impl Sink for Traced {
    fn tick(&mut self, t: &Tick, _: &mut Ctl) -> Result<bool, Error> {
        let now = t.snap.time.mono_ns;
        let mut go = self.send(Msg::Snapshot(Box::new(t.snap.clone())));
        for ev in &t.knobs.events {
            go &= self.send(Msg::Knob(ev.clone()));
        }
        // Changes made by anyone else (another llctop, a sysctl), seen by re-reading.
        for c in &t.knobs.seen {
            go &= self.send(Msg::KnobSeen {
                mono: now,
                id: c.id.clone(),
                old: c.old.clone(),
                new: c.new.clone(),
            });
        }
        for l in &t.lines {
            go &= self.send(Msg::Finding(now, Box::new(l.clone())));
        }
        for c in &t.sources {
            go &= self.send(Msg::Source(now, c.now.clone()));
        }
        Ok(go)
    }

    /// The run is over (its duration, a signal, the command's end): the command is
    /// asked to stop before the knobs are restored and the BPF programs detached, so a
    /// command that ignores SIGTERM holds nothing of the kernel's.
    fn stopping(&mut self) {
        if let Some(c) = &self.command
            && !c.waiter.is_finished()
        {
            crate::child::signal_group(c.pid, libc::SIGTERM);
        }
    }

    fn finish(&mut self, last: &[KnobEvent]) -> Result<(), Error> {
        for ev in last {
            self.send(Msg::Knob(ev.clone()));
        }
        if let Some(c) = &self.command {
            self.send(Msg::Command {
                start: c.started_mono,
                end: crate::clock::mono_ns(),
                argv: self.argv.clone(),
            });
        }
        self.done.store(true, Ordering::Relaxed);
        self.tx = None;
        self.written = self.writer.take().and_then(|w| w.join().ok());
        // The programs are gone with the writer's tap: now the command may be waited
        // for, SIGKILL after the grace (at once on a second Ctrl-C).
        if let Some(c) = self.command.take() {
            let how = crate::child::stop(c.pid, crate::child::GRACE, || c.waiter.is_finished());
            if how == crate::child::Stopped::Killed {
                crate::say!(
                    "llctop: {} did not end on SIGTERM: killed",
                    Esc(self.argv.first().map_or("", String::as_str))
                );
            }
            if c.waiter.is_finished() {
                self.status = c.waiter.join().ok().flatten();
            }
        }
        Ok(())
    }
}

/// The kernel's release and machine (uname(2)), for the trace's system info.
fn uname() -> (String, String) {
    // SAFETY: utsname is plain data that uname fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    (s(&u.release), s(&u.machine))
}
