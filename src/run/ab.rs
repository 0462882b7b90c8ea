//! `llctop ab`: an A/B experiment on the running system. The knob (or a profile) is
//! flipped between two values in ABBA-ordered windows; each window starts with a warm-up
//! that is not measured; with a command, the command runs once per window (its wall time
//! and exit status become metrics) or, `--steady`, all along. Everything is recorded when
//! `-o` is given — the experiment, the knob lines, each window, the verdict — and the
//! knob is restored at the end, on a signal and on panic, as every knob session is.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Error, Options, Run, finish_session, knob_session};
use crate::experiment::runner::{Runner, Step};
use crate::experiment::verdict::{self, Verdict};
use crate::experiment::{self, Arm, Experiment};
use crate::knobs::session::Change;
use crate::knobs::{Session, profile};
use crate::kroot::KernelRoot;
use crate::record::{self, Header, Line, Writer};
use crate::text::Esc;
use crate::topology::Topology;

/// What to compare and how (the command line of `llctop ab`).
#[derive(Debug, Clone)]
pub struct Plan {
    /// `KNOB=A,B`; `None` with a profile.
    pub spec: Option<String>,
    /// Compare the values before (A) with the profile applied (B).
    pub profile: Option<String>,
    pub window: Duration,
    pub warmup: Duration,
    pub rounds: u32,
    pub output: Option<PathBuf>,
    pub json: bool,
    pub steady: bool,
    pub command: Vec<String>,
}

/// How one arm is put in place.
enum Flip {
    Knob { id: String },
    Profile { profile: profile::Profile },
}

/// How a window's command ended: wall time (s) and exit code (None: by a signal).
type Ended = (f64, Option<i32>);

/// A command started for a window: when it ended and how (filled by its waiter thread).
struct Running {
    child_id: u32,
    done: Arc<Mutex<Option<Ended>>>,
}

fn spawn(cmd: &[String]) -> Result<(Child, Instant), Error> {
    let (prog, args) = cmd.split_first().ok_or("empty command")?;
    let child = Command::new(prog)
        .args(args)
        .spawn()
        .map_err(|e| format!("{prog}: {e}"))?;
    Ok((child, Instant::now()))
}

fn start_window_command(cmd: &[String]) -> Result<Running, Error> {
    let (mut child, t0) = spawn(cmd)?;
    let done = Arc::new(Mutex::new(None));
    let d = Arc::clone(&done);
    let child_id = child.id();
    std::thread::spawn(move || {
        let status = child.wait().ok();
        let secs = t0.elapsed().as_secs_f64();
        if let Ok(mut g) = d.lock() {
            *g = Some((secs, status.and_then(|s| s.code())));
        }
    });
    Ok(Running { child_id, done })
}

fn kill(pid: u32) {
    // SAFETY: plain kill(2) of our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

/// Say a change on stderr (stdout is the verdict's, JSON with --json).
fn say(c: &Change) {
    let (id, old, new) = (Esc(&c.id), Esc(&c.old), Esc(&c.new));
    if c.old == c.new {
        eprintln!("llctop: {id} already {new}");
    } else {
        eprintln!("llctop: {id}: {old} -> {new} (read back)");
    }
}

/// Put `arm`'s value in place; the changes are said on stderr and recorded as knob lines.
fn flip(s: &mut Session, how: &Flip, exp: &Experiment, arm: Arm) -> Result<(), Error> {
    match how {
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
                        eprintln!(
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
    let mut s = knob_session(opts, root, Some(topo), false);
    s.read_domains();
    // Everything is checked before anything is written: an unknown or read-only knob
    // or a value it would refuse ends the experiment here.
    let (knob, a, b, how, held) = match (&plan.spec, &plan.profile) {
        (Some(spec), None) => {
            let (knob, a, b) = experiment::parse_spec(spec)?;
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
            record::output::Output::open(path, super::output_wait(&stop, None))
                .map_err(|e| format!("{}: {e}", path.display()))?,
        ),
        None => None,
    };
    let mut run = Run::start_with(opts, root, topo, None, stop)?;
    let mut writer = match out {
        Some(out) => {
            let header = Header::new(
                record::host_and_kernel(root),
                opts.interval,
                topo.clone(),
                run.sources.clone(),
            )
            .with_knobs(s.registry());
            let mut w = Writer::over(out, &header)?;
            w.write_experiment_line(Line::Experiment(exp.clone()))?;
            Some(w)
        }
        None => None,
    };
    let mut runner = Runner::new(exp.clone(), opts.interval);
    let total = exp.order().len();
    let steady = if plan.steady && !plan.command.is_empty() {
        Some(spawn(&plan.command)?.0)
    } else {
        None
    };
    flip(&mut s, &how, &exp, runner.first())?;
    run.knobs = Some(s);
    let per_window_cmd = !plan.command.is_empty() && !plan.steady;
    // The measured part of a window begins: its command starts.
    let begin = || -> Result<Option<Running>, Error> {
        if per_window_cmd {
            Ok(Some(start_window_command(&plan.command)?))
        } else {
            Ok(None)
        }
    };
    let mut cmd: Option<Running> = if runner.measures_at_once() {
        begin()?
    } else {
        None
    };
    let mut error: Option<Error> = None;
    // The window whose changed knob was said already.
    let mut said: Option<usize> = None;
    run.each(|snap, knobs| {
        let mut step = || -> Result<bool, Error> {
            if let (Some(wr), Some(s)) = (writer.as_mut(), knobs.as_mut()) {
                wr.write_snapshot(snap)?;
                for ev in s.take_events() {
                    wr.write_knob(&ev)?;
                }
            }
            // Re-read at every snapshot: a value changed behind the experiment's back
            // spoils the window it happened in.
            if let Some(s) = knobs.as_ref() {
                let drift = s.drifted(&held);
                if !drift.is_empty() {
                    let w = runner.progress().window;
                    if said != Some(w) {
                        eprintln!(
                            "llctop: window {}/{total} not counted: {}",
                            w + 1,
                            Esc(&drift.join("; "))
                        );
                        said = Some(w);
                    }
                    runner.spoil(drift.join("; "));
                }
            }
            let ended = cmd
                .as_ref()
                .and_then(|c| c.done.lock().ok().and_then(|g| *g));
            let (win, next) = match runner.on_snapshot(snap, ended) {
                Step::Continue => return Ok(true),
                Step::Measure => {
                    cmd = begin()?;
                    return Ok(true);
                }
                Step::Flip(w, next) => (w, Some(next)),
                Step::Done(w) => (w, None),
            };
            cmd = None;
            eprintln!(
                "llctop: window {}/{} ({} = {}) measured: snapshots #{}–#{}{}",
                win.index + 1,
                total,
                Esc(&exp.knob),
                Esc(&win.value),
                win.first_seq,
                win.last_seq,
                win.not_counted
                    .as_deref()
                    .map(|why| format!(", not counted: {}", Esc(why)))
                    .unwrap_or_default()
            );
            if let Some(wr) = writer.as_mut() {
                wr.write_experiment_line(Line::Window(win))?;
            }
            let Some(next) = next else {
                return Ok(false);
            };
            if let Some(s) = knobs.as_mut() {
                flip(s, &how, &exp, next)?;
            }
            if runner.measures_at_once() {
                cmd = begin()?;
            }
            Ok(true)
        };
        match step() {
            Ok(go_on) => go_on,
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    if let Some(c) = cmd.take() {
        kill(c.child_id);
    }
    if let Some(mut c) = steady {
        kill(c.id());
        let _ = c.wait();
    }
    if let Some(s) = run.knobs.as_mut() {
        finish_session(s);
    }
    let v: Verdict = runner.verdict();
    if let Some(mut wr) = writer {
        if let Some(s) = run.knobs.as_mut() {
            for ev in s.take_events() {
                wr.write_knob(&ev)?;
            }
        }
        wr.write_experiment_line(Line::Verdict(v.clone()))?;
        wr.finish()?;
    }
    if plan.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"experiment": exp, "verdict": v}))?
        );
    } else {
        print!("{}", crate::text::guard(&verdict::render(&exp, &v)));
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
