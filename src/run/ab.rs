//! `llctop ab`: an A/B experiment on the running system. The knob (or a profile) is
//! flipped between two values in ABBA-ordered windows; each window starts with a warm-up
//! that is not measured; with a command, the command runs once per window (its wall time
//! and exit status become metrics) or, `--steady`, all along. Everything is recorded when
//! `-o` is given — the experiment, the knob lines, each window, the verdict — and the
//! knob is restored at the end, on a signal and on panic, as every knob session is.

use std::collections::HashSet;
use std::os::fd::AsFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::pipeline::{Ctl, Pipeline, Sink, Tick};
use super::record::Recording;
use super::{Error, Options, knob_session};
use crate::experiment::colocate::{self, CpuMask};
use crate::experiment::runner::{Runner, Step};
use crate::experiment::verdict;
use crate::experiment::{self, Arm, Experiment};
use crate::knobs::session::{Change, KnobEvent};
use crate::knobs::{Session, profile};
use crate::kroot::KernelRoot;
use crate::record::{self, Header, Line, Writer};
use crate::snapshot::Snapshot;
use crate::text::Esc;
use crate::topology::Topology;

/// What to compare and how: the command line of `llctop ab`, as it is parsed.
#[derive(clap::Args, Debug, Clone)]
pub struct Plan {
    /// KNOB=A,B (e.g. relax_domain_level=-1,1; colocate=off,llcN places the command on
    /// one LLC); or --profile.
    #[arg(value_name = "KNOB=A,B", required_unless_present = "profile")]
    pub spec: Option<String>,
    /// Compare the current values (A) with this profile applied (B).
    #[arg(long, value_name = "NAME", conflicts_with = "spec")]
    pub profile: Option<String>,
    /// Measured time per window (with a command: at least one snapshot, until it ends).
    #[arg(long, default_value = "10s", value_parser = crate::parse::parse_duration)]
    pub window: Duration,
    /// Windows per value.
    #[arg(long, default_value_t = 6)]
    pub rounds: u32,
    /// Not measured after each flip.
    #[arg(long, default_value = "2s", value_parser = crate::parse::parse_duration_or_zero)]
    pub warmup: Duration,
    /// Record the experiment (snapshots, knob lines, findings, windows, verdict).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The verdict as JSON on stdout (the command's own output then goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Keep the command running through all windows instead of once per window.
    #[arg(long, requires = "command")]
    pub steady: bool,
    /// End a window's command that runs longer than this (SIGTERM, then SIGKILL after
    /// 5 s): that window is not counted.
    #[arg(long, value_parser = crate::parse::parse_duration, requires = "command")]
    pub timeout: Option<Duration>,
    /// Run the command as this user (never root): its groups, gid and uid from the
    /// password database, a clean environment, in /.
    #[arg(long, value_name = "USER", requires = "command")]
    pub user: Option<String>,
    /// With colocate: running processes llctop did not start to place instead of the
    /// command — each one's threads on the arm's LLC, back on their own CPUs for `off`;
    /// journaled and restored like every knob (at most 64).
    #[arg(long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// A command to run in each window (after `--`): its wall time and exit status
    /// become metrics.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The most running processes one `colocate` experiment places.
const MAX_PIDS: usize = 64;

/// How one arm is put in place.
enum Flip {
    Knob {
        id: String,
    },
    Profile {
        profile: profile::Profile,
    },
    /// Where the command may run (experiment/colocate.rs): each arm's CPUs, A then B —
    /// or, with `pids`, where those running processes' threads run (`off`: their own
    /// CPUs, as they were).
    Colocate {
        masks: [CpuMask; 2],
        off: [bool; 2],
        pids: Vec<u32>,
    },
}

impl Flip {
    /// The running processes `colocate --pid` places (the window's figures are theirs
    /// too); none for any other experiment.
    fn named(&self) -> &[u32] {
        match self {
            Flip::Colocate { pids, .. } => pids,
            _ => &[],
        }
    }

    /// The CPUs the command starts with in `arm` (None: llctop's own, inherited).
    fn mask(&self, arm: Arm) -> Option<CpuMask> {
        match self {
            Flip::Colocate { masks, pids, .. } if pids.is_empty() => Some(masks[arm as usize]),
            _ => None,
        }
    }
}

/// How a window's command ended: wall time (s) and exit code (None: by a signal).
type Ended = (f64, Option<i32>);

/// When its wait returned (CLOCK_MONOTONIC, ns) and how it ended.
type Reaped = (u64, Ended);

/// How the experiment's command is run: as whom, and where its output goes.
struct Workload {
    argv: Vec<String>,
    user: Option<crate::child::RunAs>,
    /// Its stdout to llctop's stderr (`--json`: stdout is the verdict's).
    stdout_to_stderr: bool,
}

/// A command started (a window's, or the steady one): its process group, when it
/// started, and how it ended (filled by its waiter thread).
struct Running {
    pgid: u32,
    started: Instant,
    done: Arc<Mutex<Option<Reaped>>>,
}

impl Running {
    fn ended(&self) -> Option<Ended> {
        self.ended_before(u64::MAX)
    }

    /// How it ended, if it had ended when a snapshot stamped `mono_ns` began to read its
    /// sources: all it did is then in that snapshot. A command reaped after the stamp
    /// (the stamp is taken before the sources are read, the tick runs after them) has a
    /// tail the next snapshot holds, so its window ends there.
    fn ended_before(&self, mono_ns: u64) -> Option<Ended> {
        let (at, e) = self.done.lock().ok().and_then(|g| *g)?;
        (at <= mono_ns).then_some(e)
    }

    /// Stop it (SIGTERM to its group, SIGKILL after the grace or a second Ctrl-C).
    fn stop(&self) {
        crate::child::stop(self.pgid, crate::child::GRACE, || self.ended().is_some());
    }
}

impl Workload {
    /// Start it, on `cpus` when given (set between fork and exec: all it starts inherits
    /// them).
    fn start(&self, cpus: Option<CpuMask>) -> Result<Running, Error> {
        let (prog, args) = self.argv.split_first().ok_or("empty command")?;
        let mut cmd = Command::new(prog);
        cmd.args(args);
        if self.stdout_to_stderr {
            let err = std::io::stderr().as_fd().try_clone_to_owned()?;
            cmd.stdout(std::process::Stdio::from(err));
        }
        crate::child::prepare(
            &mut cmd,
            crate::child::OnParentDeath::Kill,
            self.user.as_ref(),
        );
        if let Some(mask) = cpus {
            // SAFETY: one system call (sched_setaffinity) on a set built before the fork.
            unsafe { cmd.pre_exec(move || mask.apply(0)) };
        }
        let started = Instant::now();
        let mut child: Child = cmd.spawn().map_err(|e| format!("{}: {e}", Esc(prog)))?;
        let done = Arc::new(Mutex::new(None));
        let d = Arc::clone(&done);
        let pgid = child.id();
        std::thread::spawn(move || {
            let status = child.wait().ok();
            let (secs, at) = (started.elapsed().as_secs_f64(), crate::clock::mono_ns());
            if let Ok(mut g) = d.lock() {
                *g = Some((at, (secs, status.and_then(|s| s.code()))));
            }
        });
        Ok(Running {
            pgid,
            started,
            done,
        })
    }
}

/// Say a change on stderr (stdout is the verdict's, JSON with --json).
fn say(c: &Change) {
    let (id, old, new) = (Esc(&c.id), Esc(&c.old), Esc(&c.new));
    if c.old == c.new {
        crate::say!("llctop: {id} already {new}");
    } else {
        crate::say!("llctop: {id}: {old} -> {new} (read back)");
    }
}

/// `n` threads, in words.
fn threads(n: usize) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// Put `arm`'s value in place; the changes are said on stderr and recorded as knob lines.
/// `steady`: the process group of the `--steady` command, which a colocate flip moves.
fn flip(
    s: &mut Session,
    how: &Flip,
    exp: &Experiment,
    arm: Arm,
    steady: Option<u32>,
) -> Result<(), Error> {
    match how {
        Flip::Colocate { masks, off, pids } if !pids.is_empty() => {
            let (mask, off) = (&masks[arm as usize], off[arm as usize]);
            for &pid in pids {
                if off {
                    match s.affinity_restore(pid)? {
                        Some(n) => crate::say!(
                            "llctop: {}: process {pid} back on its own CPUs ({})",
                            colocate::KNOB,
                            threads(n)
                        ),
                        None => {
                            crate::say!("llctop: {}: process {pid} on its own CPUs", colocate::KNOB)
                        }
                    }
                } else {
                    let n = s.affinity_place(pid, &mask.cpus())?;
                    crate::say!(
                        "llctop: {}: process {pid} on {} (CPUs {mask:?}): {}",
                        colocate::KNOB,
                        Esc(exp.value(arm)),
                        threads(n)
                    );
                }
            }
        }
        Flip::Colocate { masks, .. } => {
            let mask = &masks[arm as usize];
            let to = format!("{} (CPUs {mask:?})", Esc(exp.value(arm)));
            match steady {
                Some(pgid) => {
                    let (n, errors) = colocate::place_group(pgid, mask);
                    if !errors.is_empty() {
                        return Err(format!(
                            "{}: the command's threads could not all be moved: {}",
                            colocate::KNOB,
                            Esc(&errors.join("; "))
                        )
                        .into());
                    }
                    crate::say!(
                        "llctop: {}: the command's {n} threads on {to}",
                        colocate::KNOB
                    );
                }
                None => crate::say!("llctop: {}: the next command on {to}", colocate::KNOB),
            }
        }
        Flip::Knob { id } => say(&s.set(id, exp.value(arm))?),
        Flip::Profile { profile } => match arm {
            Arm::B => {
                let (plan, _) = profile.plan(s.registry_mut());
                for c in s.apply(&profile.name, &plan)? {
                    say(&c);
                }
            }
            Arm::A => {
                if let Some(step) = s.undo()? {
                    for c in &step.changes {
                        crate::say!(
                            "llctop: {}: {} -> {} (undone)",
                            Esc(&c.id),
                            Esc(&c.new),
                            Esc(&c.old)
                        );
                    }
                }
            }
        },
    }
    Ok(())
}

/// Run the experiment; prints the verdict table (or JSON).
pub fn run(opts: &Options, root: &KernelRoot, topo: &Topology, plan: &Plan) -> Result<(), Error> {
    // The command and its user are checked before anything is opened or written.
    let workload = match plan.command.first() {
        Some(prog) => {
            crate::child::check_program(prog)?;
            Some(Workload {
                argv: plan.command.clone(),
                user: plan
                    .user
                    .as_deref()
                    .map(crate::child::RunAs::lookup)
                    .transpose()?,
                stdout_to_stderr: plan.json,
            })
        }
        None => None,
    };
    if let Some(out) = &plan.output {
        crate::output::check(out, &[])?;
    }
    let mut s = knob_session(opts, root, Some(topo), false);
    s.read_domains();
    // Everything is checked before anything is written: an unknown or read-only knob
    // or a value it would refuse ends the experiment here.
    let spec_knob = plan
        .spec
        .as_deref()
        .map(experiment::parse_spec)
        .transpose()?;
    if !plan.pids.is_empty()
        && spec_knob
            .as_ref()
            .is_none_or(|(k, _, _)| k != colocate::KNOB)
    {
        return Err(format!(
            "--pid names the running processes {} places (ab {}=off,llcN --pid PID); no other experiment moves a process",
            colocate::KNOB,
            colocate::KNOB
        )
        .into());
    }
    let (knob, a, b, how, held) = match (spec_knob, &plan.profile) {
        (Some((knob, a, b)), None) if knob == colocate::KNOB => {
            if workload.is_none() && plan.pids.is_empty() {
                return Err(format!(
                    "{}: places the command llctop starts (ab {}=off,llcN -- CMD), or running processes named with --pid PID (their threads' CPUs journaled and put back); llctop moves no other process",
                    colocate::KNOB, colocate::KNOB
                )
                .into());
            }
            if plan.pids.len() > MAX_PIDS {
                return Err(format!(
                    "{}: {} processes named; at most {MAX_PIDS}",
                    colocate::KNOB,
                    plan.pids.len()
                )
                .into());
            }
            for &pid in &plan.pids {
                crate::knobs::session::affinity::check_process(pid)?;
            }
            let own = CpuMask::of_thread(0)
                .map_err(|e| format!("{}: llctop's own CPUs: {e}", colocate::KNOB))?
                .cpus();
            let (pa, ca) = colocate::parse(&a, topo, &own)?;
            let (pb, cb) = colocate::parse(&b, topo, &own)?;
            if ca == cb {
                return Err(format!(
                    "{}={},{}: both arms run on CPUs {}: nothing to compare",
                    colocate::KNOB,
                    pa.canonical(),
                    pb.canonical(),
                    crate::cpulist::format(&ca)
                )
                .into());
            }
            let masks = [CpuMask::of(&ca)?, CpuMask::of(&cb)?];
            let off = [&pa, &pb].map(|p| *p == colocate::Placement::Scheduler);
            (
                knob,
                pa.canonical(),
                pb.canonical(),
                Flip::Colocate {
                    masks,
                    off,
                    pids: plan.pids.clone(),
                },
                Vec::new(),
            )
        }
        (Some((knob, a, b)), None) => {
            let (id, a) = s.check(&knob, &a)?;
            let (_, b) = s.check(&id, &b)?;
            (id.clone(), a, b, Flip::Knob { id: id.clone() }, vec![id])
        }
        (None, Some(name)) => {
            let p = profile::find(name, profile::user_dir().as_deref())?;
            let (steps, skipped) = p.plan(s.registry_mut());
            if steps.is_empty() {
                return Err(format!(
                    "profile {name}: nothing it sets can be changed here ({skipped:?})"
                )
                .into());
            }
            let mut ids = Vec::new();
            for (id, value) in &steps {
                ids.push(s.check(id, value)?.0);
            }
            let flip = Flip::Profile { profile: p };
            (
                format!("profile:{name}"),
                "before".into(),
                name.clone(),
                flip,
                ids,
            )
        }
        _ => return Err("give KNOB=A,B or --profile NAME".into()),
    };
    let exp = Experiment {
        knob,
        a,
        b,
        window_ns: plan.window.as_nanos() as u64,
        warmup_ns: plan.warmup.as_nanos() as u64,
        rounds: plan.rounds,
        command: plan.command.clone(),
        steady: plan.steady,
    };
    if plan.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    // The experiment owns its knobs from before the first window to its end, whatever
    // their value: a second experiment (or any llctop change) is refused meanwhile.
    for id in &held {
        s.hold(id)?;
    }
    // The output first: a FIFO's reader is waited for (until a signal) before the
    // sources load.
    let stop = super::stop_flag()?;
    let out = match &plan.output {
        Some(path) => Some(
            crate::output::Output::create(path, &[], super::output_wait(&stop, None))
                .map_err(|e| format!("{}: {e}", Esc(&path.display().to_string())))?,
        ),
        None => None,
    };
    let mut p = Pipeline::start(opts, root, topo, None, stop)?;
    let recording = match out {
        Some(out) => {
            let header = Header::new(
                record::host_and_kernel(root),
                opts.interval,
                topo.clone(),
                p.sources.clone(),
            )
            .with_boot_id(root);
            let mut r = Recording::new(Writer::over(out, &header)?, None);
            r.line(Line::Experiment(exp.clone()))?;
            Some(r)
        }
        None => None,
    };
    let runner = Runner::new(exp.clone(), opts.interval);
    let arm = runner.first();
    let steady = match (&workload, plan.steady) {
        (Some(w), true) => Some(w.start(how.mask(arm))?),
        _ => None,
    };
    flip(&mut s, &how, &exp, arm, steady.as_ref().map(|r| r.pgid))?;
    p.knobs = Some(s);
    let mut ab = Ab {
        total: exp.order().len(),
        exp,
        how,
        held,
        runner,
        arm,
        recording,
        per_window: workload.filter(|_| !plan.steady),
        timeout: plan.timeout,
        cmd: None,
        steady,
        timed_out: false,
        said: None,
        stopping: Vec::new(),
        root: root.clone(),
        members: HashSet::new(),
        kept: p.kept_rows(),
    };
    if ab.runner.measures_at_once() {
        ab.cmd = ab.begin()?;
    }
    ab.keep_rows();
    let res = p.drive(&mut [&mut ab]);
    let v = ab.runner.verdict();
    if plan.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"experiment": ab.exp, "verdict": v}))?
        );
    } else {
        crate::out!("{}", crate::text::guard(&verdict::render(&ab.exp, &v)));
    }
    res
}

/// The experiment as a sink of the pipeline: its windows, flips, drift checks, the
/// command of each window, and its lines in the recording (which the recording sink
/// writes with every tick's).
struct Ab {
    exp: Experiment,
    how: Flip,
    /// The knobs the experiment holds (a change behind its back spoils a window).
    held: Vec<String>,
    runner: Runner,
    /// The arm in place now.
    arm: Arm,
    total: usize,
    recording: Option<Recording>,
    /// The command run once per window (None: none, or `--steady`).
    per_window: Option<Workload>,
    timeout: Option<Duration>,
    /// The window's command running now.
    cmd: Option<Running>,
    /// The `--steady` command.
    steady: Option<Running>,
    /// The running command was stopped for running past --timeout.
    timed_out: bool,
    /// The window whose changed knob was said already.
    said: Option<usize>,
    /// The commands asked to stop as the run ends (waited for in `finish`).
    stopping: Vec<Running>,
    /// Where `/proc` is: a process's group is read there.
    root: KernelRoot,
    /// The processes found in a command's process group so far (a pid once, however
    /// many snapshots show it; forgotten once its row says it exited).
    members: HashSet<u32>,
    /// The processes the sources give rows whatever their rank (`keep_rows`).
    kept: crate::procgroup::KeptRows,
}

/// The most members remembered at once (a fork-heavy command's churn is forgotten).
const MAX_MEMBERS: usize = 4 * experiment::MAX_COMMAND_PIDS;

/// The command's processes among `snap`'s rows: a row is one when it leads one of the
/// process groups `pgids` or its `/proc/PID/stat` says it belongs to one (read for each
/// live row not yet known: the rows are the snapshot's top few; `members` remembers the
/// ones found, so an exited row counts when an earlier snapshot saw it alive). A process
/// that lived between two snapshots is not seen.
fn command_rows(
    root: &KernelRoot,
    snap: &Snapshot,
    pgids: &[u32],
    members: &mut HashSet<u32>,
) -> Vec<u32> {
    let mut found = Vec::new();
    let Some(t) = snap.processes.as_ref() else {
        return found;
    };
    if members.len() > MAX_MEMBERS {
        members.clear();
    }
    for r in &t.rows {
        let known = members.contains(&r.pid) || pgids.contains(&r.pid);
        let member = known
            || (!r.exited
                && crate::procgroup::pgrp_of(root, r.pid).is_some_and(|g| pgids.contains(&g)));
        if !member {
            continue;
        }
        found.push(r.pid);
        if r.exited {
            members.remove(&r.pid);
        } else {
            members.insert(r.pid);
        }
    }
    found
}

impl Ab {
    /// The processes whose figures are the windows' metrics, given rows from the next
    /// snapshot on: the commands' process groups (their members found at each read) and
    /// the processes named.
    fn keep_rows(&self) {
        self.kept.set(self.pgids(), self.how.named().to_vec());
    }

    /// The process groups of the commands running now (the window's and `--steady`'s).
    fn pgids(&self) -> Vec<u32> {
        self.cmd
            .iter()
            .chain(&self.steady)
            .map(|r| r.pgid)
            .collect()
    }

    /// One tick of the experiment: the recording's lines, the drift and timeout checks,
    /// the command's rows, and the window's end and flip.
    fn step(&mut self, t: &Tick, ctl: &mut Ctl) -> Result<bool, Error> {
        if let Some(r) = self.recording.as_mut() {
            r.write_tick(t)?;
        }
        if let Some(s) = ctl.session.as_ref() {
            self.check_drift(s);
        }
        self.enforce_timeout();
        let pgids = self.pgids();
        let named = self.how.named();
        if !pgids.is_empty() || !named.is_empty() {
            let mut found = command_rows(&self.root, &t.snap, &pgids, &mut self.members);
            let rows = t.snap.processes.iter().flat_map(|p| &p.rows);
            found.extend(rows.filter(|r| named.contains(&r.pid)).map(|r| r.pid));
            self.runner.command_processes(found);
        }
        let stamp = t.snap.time.mono_ns;
        let ended = self.cmd.as_ref().and_then(|c| c.ended_before(stamp));
        let (win, next) = match self.runner.on_snapshot(&t.snap, ended) {
            Step::Continue => return Ok(true),
            Step::Measure => {
                self.members.clear();
                self.cmd = self.begin()?;
                self.timed_out = false;
                return Ok(true);
            }
            Step::Flip(w, next) => (w, Some(next)),
            Step::Done(w) => (w, None),
        };
        self.cmd = None;
        self.timed_out = false;
        crate::say!(
            "llctop: window {}/{} ({} = {}) measured: snapshots #{}–#{}{}",
            win.index + 1,
            self.total,
            Esc(&self.exp.knob),
            Esc(&win.value),
            win.first_seq,
            win.last_seq,
            win.not_counted
                .as_deref()
                .map(|why| format!(", not counted: {}", Esc(why)))
                .unwrap_or_default()
        );
        if let Some(r) = self.recording.as_mut() {
            r.line(Line::Window(win))?;
        }
        let Some(next) = next else {
            return Ok(false);
        };
        if let Some(s) = ctl.session.as_mut() {
            let steady = self.steady.as_ref().map(|r| r.pgid);
            flip(s, &self.how, &self.exp, next, steady)?;
            self.arm = next;
        }
        if self.runner.measures_at_once() {
            self.members.clear();
            self.cmd = self.begin()?;
        }
        Ok(true)
    }

    /// The measured part of a window begins: its command starts.
    fn begin(&self) -> Result<Option<Running>, Error> {
        let cpus = self.how.mask(self.arm);
        self.per_window.as_ref().map(|w| w.start(cpus)).transpose()
    }

    /// A value changed behind the experiment's back spoils the window it happened in
    /// (re-read at every snapshot).
    fn check_drift(&mut self, s: &Session) {
        let drift = s.drifted(&self.held);
        if drift.is_empty() {
            return;
        }
        let w = self.runner.progress().window;
        if self.said != Some(w) {
            crate::say!(
                "llctop: window {}/{} not counted: {}",
                w + 1,
                self.total,
                Esc(&drift.join("; "))
            );
            self.said = Some(w);
        }
        self.runner.spoil(drift.join("; "));
    }

    /// A command past --timeout is stopped (SIGTERM, SIGKILL after the grace) without
    /// holding the loop; its window is not counted.
    fn enforce_timeout(&mut self) {
        let (Some(c), Some(limit)) = (self.cmd.as_ref(), self.timeout) else {
            return;
        };
        if c.ended().is_some() {
            return;
        }
        let over = c.started.elapsed().saturating_sub(limit);
        if over > Duration::ZERO && !self.timed_out {
            self.timed_out = true;
            let limit = humantime::format_duration(limit);
            crate::say!(
                "llctop: window {}/{}: the command ran past --timeout {limit}: stopped, not counted",
                self.runner.progress().window + 1,
                self.total,
            );
            self.runner
                .spoil(format!("the command ran past --timeout {limit}"));
            crate::child::signal_group(c.pgid, libc::SIGTERM);
        } else if over >= crate::child::GRACE {
            crate::child::signal_group(c.pgid, libc::SIGKILL);
        }
    }
}

impl Sink for Ab {
    /// The tick's step, then the processes the next read gives rows (the command the
    /// step may have started among them).
    fn tick(&mut self, t: &Tick, ctl: &mut Ctl) -> Result<bool, Error> {
        let go_on = self.step(t, ctl);
        self.keep_rows();
        go_on
    }

    /// The commands are asked to stop; the pipeline then restores the knobs and
    /// detaches the BPF programs *before* they are waited for (a command that ignores
    /// SIGTERM holds nothing of the kernel's).
    fn stopping(&mut self) {
        self.stopping = self
            .cmd
            .take()
            .into_iter()
            .chain(self.steady.take())
            .collect();
        for c in &self.stopping {
            if c.ended().is_none() {
                crate::child::signal_group(c.pgid, libc::SIGTERM);
            }
        }
    }

    /// The commands waited for (SIGKILL after the grace); the last knob events and the
    /// verdict recorded.
    fn finish(&mut self, last: &[KnobEvent]) -> Result<(), Error> {
        for c in &self.stopping {
            c.stop();
        }
        if let Some(r) = self.recording.as_mut() {
            for ev in last {
                r.knob(ev)?;
            }
            r.line(Line::Verdict(self.runner.verdict()))?;
            r.close(&[])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reaped_after_a_snapshots_stamp_ends_its_window_at_the_next() {
        let done = Arc::new(Mutex::new(Some((1_000, (2.5, Some(0))))));
        let c = Running {
            pgid: 0,
            started: Instant::now(),
            done,
        };
        assert_eq!(c.ended(), Some((2.5, Some(0))));
        assert_eq!(
            c.ended_before(999),
            None,
            "its tail is in the next snapshot"
        );
        assert_eq!(c.ended_before(1_000), Some((2.5, Some(0))));
        let running = Running {
            pgid: 0,
            started: Instant::now(),
            done: Arc::new(Mutex::new(None)),
        };
        assert_eq!(running.ended_before(u64::MAX), None);
    }

    #[test]
    fn the_commands_rows_are_its_process_groups_members_remembered_until_they_exit() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let stat = |pid: u32, pgrp: u32| {
            crate::procgroup::fake_process(dir.path(), pid, pgrp, None)
                .unwrap_or_else(|e| panic!("{e}"));
        };
        stat(100, 100);
        stat(101, 100);
        stat(200, 200);
        let root = KernelRoot::new(dir.path());
        let snap = crate::snapshot::with_rows;
        let mut members = HashSet::new();
        // The leader, its child (its /proc says group 100), not 200; 300 has no /proc.
        let s = snap(&[(100, false), (101, false), (200, false), (300, false)]);
        assert_eq!(
            command_rows(&root, &s, &[100], &mut members),
            vec![100, 101]
        );
        // The child exited (its /proc gone): still the command's, once, then forgotten.
        std::fs::remove_dir_all(dir.path().join("proc/101")).unwrap_or_else(|e| panic!("{e}"));
        let s = snap(&[(101, true)]);
        assert_eq!(command_rows(&root, &s, &[100], &mut members), vec![101]);
        assert!(!members.contains(&101));
        // An exited row never seen alive is not known to be the command's.
        let s = snap(&[(102, true)]);
        assert!(command_rows(&root, &s, &[100], &mut members).is_empty());
    }
}
