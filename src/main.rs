//! The `llctop` command line: subcommands over the library's pipeline.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use llctop::collect::Collector;
use llctop::knobs::{self, Session, journal, journal::Journal, profile, session};
use llctop::kroot::KernelRoot;
use llctop::record::{self, Header};
use llctop::snapshot::Snapshot;
use llctop::snapshot::SourceStatus;
use llctop::source::bpf::BpfSource;
use llctop::source::perf::PerfSource;
use llctop::source::procfs::ProcfsSource;
use llctop::source::{FixedStatus, Source};
use llctop::topology::{self, Distance, Topology};

#[derive(Parser, Debug)]
#[command(
    name = "llctop",
    version,
    about = "Scheduler cache and NUMA behaviour, live: per-LLC occupancy, migrations by distance, preferred-LLC hits"
)]
struct Cli {
    /// Root under which /sys and /proc are read (a fixture tree in tests).
    #[arg(long, global = true, default_value = "/", value_name = "DIR")]
    sysroot: PathBuf,

    /// Time between snapshots (e.g. 1s, 500ms).
    #[arg(long, global = true, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,

    /// Where the data comes from. `auto` picks the best source that works here.
    #[arg(long, global = true, value_enum, default_value_t = SourceKind::Auto)]
    source: SourceKind,

    /// Process rows kept per snapshot (the busiest).
    #[arg(long, global = true, default_value_t = 64)]
    top: usize,

    /// Never write to the kernel (knob changes are refused).
    #[arg(long, global = true)]
    read_only: bool,

    /// Leave knob changes in place on exit (they stay journaled: `llctop knobs restore`
    /// puts the originals back later).
    #[arg(long, global = true)]
    keep_changes: bool,

    /// The knob journal (default: /run/llctop/journal.json as root, else
    /// $XDG_STATE_HOME/llctop/journal.json).
    #[arg(long, global = true, env = "LLCTOP_JOURNAL", value_name = "FILE")]
    journal: Option<PathBuf>,

    /// TUI colour theme: dark, light, high-contrast, colorblind, or one of
    /// $XDG_CONFIG_HOME/llctop/themes/*.toml (NO_COLOR turns colour off).
    #[arg(long, global = true, default_value = "dark", value_name = "NAME")]
    theme: String,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SourceKind {
    /// BPF when it loads, else procfs (the reason is shown).
    Auto,
    /// BPF or fail.
    Bpf,
    /// procfs sampling only.
    Procfs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the CPU / LLC / NUMA topology.
    Topology {
        /// Print JSON instead of the tree.
        #[arg(long)]
        json: bool,
    },
    /// Record snapshots to a JSON Lines file (.gz compresses).
    Record {
        /// Output file.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Stop after this long, i.e. after duration/interval snapshots (default: until
        /// Ctrl-C / SIGTERM).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        changes: Changes,
    },
    /// Summarise a recording.
    Report { file: PathBuf },
    /// The terminal UI (the default without a subcommand when stdout is a terminal).
    Tui {
        #[command(flatten)]
        changes: Changes,
    },
    /// Open a recording in the TUI: the same views, with pause, seek and speed.
    Replay { file: PathBuf },
    /// Print the key table (Markdown), generated from the TUI's keymap.
    Keys,
    /// Print one summary line per interval (the default without a subcommand when
    /// stdout is not a terminal).
    Live {
        /// Stop after this long.
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        changes: Changes,
    },
    /// Kernel policy knobs: list, read, change (journaled), restore.
    Knobs {
        #[command(subcommand)]
        command: KnobsCommand,
    },
}

/// Knob changes for the duration of a `live` or `record` run; restored when it ends
/// (unless --keep-changes) and recorded as knob events.
#[derive(clap::Args, Debug, Default)]
struct Changes {
    /// Set a knob for this run: ID=VALUE (repeatable).
    #[arg(long = "set", value_name = "ID=VALUE")]
    set: Vec<String>,
    /// Apply a profile for this run (llctop knobs profiles).
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
}

#[derive(Subcommand, Debug)]
enum KnobsCommand {
    /// Every knob of this kernel with its value and writability.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print one knob's current value (`--json`: everything about it).
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// What a knob does, its values on this machine, and why it is read-only if it is.
    Describe { id: String },
    /// Change a knob. The original is journaled; `llctop knobs restore` puts it back.
    Set { id: String, value: String },
    /// Put journaled originals back (all, or the given ids) — e.g. after a crash.
    Restore { ids: Vec<String> },
    /// The profiles available (shipped and $XDG_CONFIG_HOME/llctop/profiles).
    Profiles {
        #[arg(long)]
        json: bool,
    },
    /// Apply a profile as one step (journaled; `llctop knobs restore` reverts it).
    Apply { name: String },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = if s.chars().all(|c| c.is_ascii_digit() || c == '.') {
        s.parse::<f64>()
            .map_err(|e| e.to_string())
            .and_then(|x| Duration::try_from_secs_f64(x).map_err(|e| e.to_string()))?
    } else {
        humantime::parse_duration(s).map_err(|e| e.to_string())?
    };
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    if matches!(cli.command, Some(Command::Knobs { .. }))
        && let Some(Command::Knobs { command }) = cli.command.take()
    {
        return ExitCode::from(knobs_cmd(&cli, command));
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("llctop: {e}");
            ExitCode::FAILURE
        }
    }
}

type Error = Box<dyn std::error::Error>;

fn run(mut cli: Cli) -> Result<(), Error> {
    let root = KernelRoot::new(&cli.sysroot);
    let topo = topology::discover(&root)?;
    let command = cli.command.take();
    match command {
        Some(Command::Topology { json }) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&topo)?);
            } else {
                print!("{}", topology::render::tree(&topo));
            }
            Ok(())
        }
        Some(Command::Report { file }) => {
            let rec = record::reader::open(&file)?;
            print!("{}", record::report::render(&rec));
            Ok(())
        }
        Some(Command::Record {
            output,
            duration,
            changes,
        }) => record_cmd(&cli, root, topo, &output, duration, &changes),
        Some(Command::Live { duration, changes }) => live(&cli, root, topo, duration, &changes),
        Some(Command::Tui { changes }) => tui_live(&cli, root, topo, &changes),
        Some(Command::Replay { file }) => tui_replay(&cli, &file),
        Some(Command::Keys) => {
            print!("{}", llctop::tui::keymap::markdown_table());
            Ok(())
        }
        None if need_terminal().is_ok() => tui_live(&cli, root, topo, &Changes::default()),
        None => live(&cli, root, topo, None, &Changes::default()),
        Some(Command::Knobs { .. }) => Err("knobs is handled before the pipeline".into()),
    }
}

/// A knob session for this command line: the registry of `root`, the journal, and the
/// --read-only / --keep-changes options.
fn knob_session(cli: &Cli, root: &KernelRoot, topo: Option<&Topology>, keep: bool) -> Session {
    let registry = knobs::Registry::discover(root, topo);
    let journal = Journal::new(cli.journal.clone().unwrap_or_else(journal::default_path));
    Session::new(
        registry,
        journal,
        session::Options {
            read_only: cli.read_only,
            keep_changes: keep || cli.keep_changes,
        },
    )
}

/// `llctop knobs …`: prints results on stdout, errors on stderr; returns the exit code
/// (0 ok, 1 other error, 3 unknown knob, 4 invalid value, 5 not writable / read-only,
/// 6 the kernel refused or a read failed, 7 read-back mismatch, 8 journal error).
fn knobs_cmd(cli: &Cli, command: KnobsCommand) -> u8 {
    let root = KernelRoot::new(&cli.sysroot);
    let topo = topology::discover(&root).ok();
    // One-shot commands keep their changes: the journal remembers the originals.
    let mut s = knob_session(cli, &root, topo.as_ref(), true);
    let fail = |e: &dyn std::fmt::Display, code: u8| {
        eprintln!("llctop: {e}");
        code
    };
    match command {
        KnobsCommand::List { json } => {
            if let Some(why) = s.read_domains() {
                s.registry_mut().missing.push(knobs::registry::Missing {
                    what: "sched domains".into(),
                    reason: format!("{why}; relax_domain_level levels estimated from topology"),
                });
            }
            if json {
                match serde_json::to_string_pretty(s.registry()) {
                    Ok(t) => println!("{t}"),
                    Err(e) => return fail(&e, 1),
                }
            } else {
                print!("{}", knobs::render::list(s.registry()));
            }
            0
        }
        KnobsCommand::Get { id, json } => {
            s.read_domains();
            let reg = s.registry_mut();
            let knob = match reg.resolve(&id) {
                Ok(k) => k.clone(),
                Err(e) => return fail(&e, 3),
            };
            if json {
                return match serde_json::to_string_pretty(&knob) {
                    Ok(t) => {
                        println!("{t}");
                        0
                    }
                    Err(e) => fail(&e, 1),
                };
            }
            match reg.read_value(&knob) {
                Ok(v) => {
                    println!("{v}");
                    0
                }
                Err(e) => match &knob.value {
                    // The lockdown fallback knows the value without opening the file.
                    Some(v) if knob.value_source.is_some() => {
                        println!("{v}");
                        0
                    }
                    _ => fail(&e, 6),
                },
            }
        }
        KnobsCommand::Describe { id } => {
            s.read_domains();
            match s.registry_mut().resolve(&id) {
                Ok(k) => {
                    print!("{}", knobs::render::describe(k));
                    0
                }
                Err(e) => fail(&e, 3),
            }
        }
        KnobsCommand::Set { id, value } => {
            s.read_domains();
            match s.set(&id, &value) {
                Ok(c) => {
                    print_change(&s, &c);
                    0
                }
                Err(e) => fail(&e, e.exit_code()),
            }
        }
        KnobsCommand::Apply { name } => {
            let profile = match profile::find(&name, profile::user_dir().as_deref()) {
                Ok(p) => p,
                Err(e) => return fail(&e, 3),
            };
            s.read_domains();
            match apply_profile(&mut s, &profile) {
                Ok(()) => 0,
                Err(e) => fail(&e, e.exit_code()),
            }
        }
        KnobsCommand::Restore { ids } => match s.restore_journal(&ids) {
            Ok((ok, failed)) => {
                for e in s.take_events() {
                    println!("{}: {} -> {} (restored)", e.id, e.old, e.new);
                }
                if ok.is_empty() && failed.is_empty() {
                    println!(
                        "nothing to restore (journal {})",
                        s.journal().path().display()
                    );
                }
                let mut code = 0;
                for e in &failed {
                    code = fail(e, e.exit_code());
                }
                code
            }
            Err(e) => fail(&e, e.exit_code()),
        },
        KnobsCommand::Profiles { json } => {
            let (all, errors) = profile::load_all(profile::user_dir().as_deref());
            for e in &errors {
                eprintln!("llctop: {e}");
            }
            if json {
                match serde_json::to_string_pretty(&all) {
                    Ok(t) => println!("{t}"),
                    Err(e) => return fail(&e, 1),
                }
            } else {
                print!("{}", knobs::render::profiles(&all));
            }
            u8::from(!errors.is_empty())
        }
    }
}

fn print_change(s: &Session, c: &session::Change) {
    if c.old == c.new {
        println!("{}: already {}", c.id, c.new);
    } else if s.options().keep_changes {
        println!(
            "{}: {} -> {} (read back; journaled in {}: `llctop knobs restore` puts back the original)",
            c.id,
            c.old,
            c.new,
            s.journal().path().display()
        );
    } else {
        println!(
            "{}: {} -> {} (read back; restored on exit)",
            c.id, c.old, c.new
        );
    }
}

fn apply_profile(s: &mut Session, p: &profile::Profile) -> Result<(), session::KnobError> {
    let (plan, skipped) = p.plan(s.registry_mut());
    for sk in skipped {
        println!("{}: skipped {sk}", p.name);
    }
    for c in s.apply(&p.name, &plan)? {
        print_change(s, &c);
    }
    Ok(())
}

/// Apply `--profile` and `--set` for a run (after `read_domains`, so named values such as
/// `relax_domain_level=llc` resolve on this machine).
fn apply_changes(s: &mut Session, changes: &Changes) -> Result<(), Error> {
    if changes.profile.is_none() && changes.set.is_empty() {
        return Ok(());
    }
    s.read_domains();
    if let Some(name) = &changes.profile {
        let p = profile::find(name, profile::user_dir().as_deref())?;
        apply_profile(s, &p)?;
    }
    for kv in &changes.set {
        let Some((id, value)) = kv.split_once('=') else {
            return Err(format!("--set {kv:?}: expected ID=VALUE").into());
        };
        let c = s.set(id.trim(), value.trim())?;
        print_change(s, &c);
    }
    Ok(())
}

/// End a run's knob session: restore (unless kept) and say what happened.
fn finish_session(s: &mut Session) {
    let (restored, failed) = s.finish();
    if !restored.is_empty() {
        eprintln!("llctop: restored {}", restored.join(", "));
    }
    for e in &failed {
        eprintln!("llctop: could not restore: {e} (`llctop knobs restore` retries)");
    }
    let kept = s.pending();
    if s.options().keep_changes && !kept.is_empty() {
        eprintln!(
            "llctop: kept {} (--keep-changes); `llctop knobs restore` puts the originals back",
            kept.join(", ")
        );
    }
}

/// Write the session's new knob events to the recording.
fn write_knob_events(
    k: &mut Option<Session>,
    w: &mut record::Writer,
) -> Result<(), record::RecordError> {
    for ev in k.as_mut().map(|s| s.take_events()).unwrap_or_default() {
        w.write_knob(&ev)?;
    }
    Ok(())
}

/// Build the sources for `--source`. BPF runs first so that procfs (busy, schedstat,
/// NUMA) can use its process rows.
fn sources(cli: &Cli, root: &KernelRoot, topo: &Topology) -> Result<Vec<Box<dyn Source>>, Error> {
    sources_for(cli.source, cli.top, root, topo)
}

fn sources_for(
    kind: SourceKind,
    top: usize,
    root: &KernelRoot,
    topo: &Topology,
) -> Result<Vec<Box<dyn Source>>, Error> {
    // Hardware counters wherever they can be opened (a fixture root has no PMU of its own).
    let perf = root.is_live().then(|| PerfSource::open(root, topo));
    let procfs = || ProcfsSource::new(root.clone(), top);
    let mut list: Vec<Box<dyn Source>> = if kind == SourceKind::Procfs {
        vec![Box::new(procfs())]
    } else {
        match BpfSource::load(topo, top) {
            Ok(mut bpf) => {
                // Per-process counters: the BPF program reads perf's counters at switches.
                if let Some(p) = perf.as_ref() {
                    bpf.attach_counters(p);
                }
                vec![Box::new(bpf), Box::new(procfs().without_task_scan())]
            }
            Err(e) if kind == SourceKind::Bpf => return Err(e.into()),
            Err(e) => vec![
                Box::new(FixedStatus(SourceStatus::absent(
                    "bpf",
                    format!("{e}; using procfs sampling"),
                ))),
                Box::new(procfs()),
            ],
        }
    };
    match perf {
        Some(p) => list.push(Box::new(p)),
        None => list.push(Box::new(FixedStatus(SourceStatus::absent(
            "perf",
            "--sysroot is not the live system: its hardware counters cannot be opened",
        )))),
    }
    Ok(list)
}

/// A flag set by SIGINT/SIGTERM so that loops end cleanly (files finished, knobs restored).
fn stop_flag() -> Result<Arc<AtomicBool>, Error> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

fn signalled(flag: Arc<AtomicBool>) -> impl Fn() -> bool {
    move || flag.load(Ordering::Relaxed)
}

/// How many snapshots cover `duration` (at least one).
fn snapshot_count(duration: Option<Duration>, interval: Duration) -> Option<u64> {
    duration.map(|d| ((d.as_secs_f64() / interval.as_secs_f64()).round() as u64).max(1))
}

fn record_cmd(
    cli: &Cli,
    root: KernelRoot,
    topo: Topology,
    output: &std::path::Path,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    let flag = stop_flag()?;
    let (host, kernel) = record::host_and_kernel(&root);
    let mut collector = Collector::new(&root, topo.clone(), sources(cli, &root, &topo)?);
    // The baseline tick's source states go into the header.
    let sources = collector.baseline();
    let header = Header {
        format: record::FORMAT.into(),
        version: record::VERSION,
        llctop_version: env!("CARGO_PKG_VERSION").into(),
        host,
        kernel,
        start_unix_ns: llctop::clock::unix_ns(),
        interval_ns: cli.interval.as_nanos() as u64,
        topology: topo.clone(),
        sources,
        command: std::env::args().collect(),
    };
    let mut writer = record::Writer::create(output, &header)?;
    let mut knobs = run_session(cli, &root, &topo, changes)?;
    let mut error: Option<record::RecordError> = None;
    write_knob_events(&mut knobs, &mut writer)?;
    let limit = snapshot_count(duration, cli.interval);
    let mut n = 0;
    collector.run(cli.interval, signalled(flag), |snap| {
        let res = writer
            .write_snapshot(&snap)
            .and_then(|()| write_knob_events(&mut knobs, &mut writer));
        match res {
            Ok(()) => {
                n += 1;
                limit.is_none_or(|l| snap.seq + 1 < l)
            }
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    if let Some(k) = knobs.as_mut() {
        finish_session(k);
    }
    write_knob_events(&mut knobs, &mut writer)?;
    writer.finish()?;
    if let Some(e) = error {
        return Err(e.into());
    }
    eprintln!("llctop: wrote {n} snapshots to {}", output.display());
    Ok(())
}

fn live(
    cli: &Cli,
    root: KernelRoot,
    topo: Topology,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    let flag = stop_flag()?;
    println!("{}", topo.summary());
    let mut collector = Collector::new(&root, topo.clone(), sources(cli, &root, &topo)?);
    let mut knobs = run_session(cli, &root, &topo, changes)?;
    let mut first = true;
    let limit = snapshot_count(duration, cli.interval);
    collector.run(cli.interval, signalled(flag), |snap| {
        if first {
            for s in &snap.sources {
                if let Some(r) = &s.reason {
                    println!("  {} {:?}: {}", s.name, s.state, r);
                }
            }
            first = false;
        }
        println!("{}", summary_line(&snap));
        limit.is_none_or(|l| snap.seq + 1 < l)
    });
    if let Some(k) = knobs.as_mut() {
        finish_session(k);
    }
    Ok(())
}

/// The themes for the TUI: NO_COLOR gives the monochrome one; otherwise all themes with
/// `--theme` first in the cycle.
fn tui_themes(cli: &Cli) -> Result<Vec<llctop::tui::theme::Theme>, Error> {
    use llctop::tui::theme;
    if theme::no_color() {
        return Ok(vec![theme::Theme::mono()]);
    }
    let (mut all, errors) = theme::load_all(theme::user_dir().as_deref());
    for e in errors {
        eprintln!("llctop: theme: {e}");
    }
    let Some(i) = all.iter().position(|t| t.name == cli.theme) else {
        let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
        return Err(format!("unknown theme {:?} (have: {})", cli.theme, names.join(", ")).into());
    };
    all.rotate_left(i);
    Ok(all)
}

/// The TUI on the live system: sources on the feed thread, the knob session here
/// (restored on exit unless --keep-changes), recordings on `r`.
fn tui_live(cli: &Cli, root: KernelRoot, topo: Topology, changes: &Changes) -> Result<(), Error> {
    use llctop::tui::{self, App};
    need_terminal()?;
    let stop = stop_flag()?;
    let themes = tui_themes(cli)?;
    let mut session = knob_session(cli, &root, Some(&topo), false);
    let domains = session.read_domains();
    apply_changes(&mut session, changes)?;
    // Most telling first: most knobs read-only (lockdown), then what is missing.
    let mut notes = Vec::new();
    let reg = session.registry();
    let ro: Vec<&llctop::knobs::Knob> = reg
        .knobs
        .iter()
        .filter(|k| !k.access.is_writable())
        .collect();
    if let Some(first) = ro.first()
        && let llctop::knobs::Access::ReadOnly(why) = &first.access
        && ro.len() * 2 > reg.knobs.len()
    {
        notes.push(format!(
            "{} of {} knobs read-only (e.g. {}: {why})",
            ro.len(),
            reg.knobs.len(),
            first.id
        ));
    }
    if let Some(why) = domains {
        notes.push(format!(
            "sched domains: {why}; relax_domain_level levels estimated from topology"
        ));
    }
    for m in &reg.missing {
        notes.push(format!("{}: {}", m.what, m.reason));
    }
    let mut app = App::live(topo.clone(), cli.interval, themes);
    let (host, kernel) = record::host_and_kernel(&root);
    app.host = host;
    app.kernel = kernel;
    app.knob_notes = notes;
    app.knob_log = session.take_events();
    app.profiles = profile::load_all(profile::user_dir().as_deref()).0;
    app.session = Some(session);
    let (tx, rx) = std::sync::mpsc::channel();
    let (kind, top, feed_root, feed_topo) = (cli.source, cli.top, root.clone(), topo.clone());
    let make: tui::MakeSources =
        Box::new(move || sources_for(kind, top, &feed_root, &feed_topo).map_err(|e| e.to_string()));
    let feed = tui::spawn_feed(
        root.clone(),
        topo,
        cli.interval,
        make,
        Arc::clone(&stop),
        tx,
    )?;
    let res = tui::run(&mut app, rx, &stop);
    stop.store(true, Ordering::Relaxed);
    let _ = feed.join();
    if let Some(r) = app.recording.take() {
        let n = r.snapshots;
        let path = r.path.clone();
        match r.finish() {
            Ok(()) => eprintln!("llctop: recorded {n} snapshots to {}", path.display()),
            Err(e) => eprintln!("llctop: recording: {e}"),
        }
    }
    if let Some(mut s) = app.session.take() {
        finish_session(&mut s);
    }
    res.map_err(|e| format!("terminal: {e}").into())
}

/// The TUI draws on stdout: refuse early (before any knob is touched) without a terminal.
fn need_terminal() -> Result<(), Error> {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Ok(())
    } else {
        Err("the TUI needs a terminal on stdin and stdout (use `llctop live` or `llctop record` otherwise)".into())
    }
}

/// `llctop replay FILE`: the recording in the TUI.
fn tui_replay(cli: &Cli, file: &std::path::Path) -> Result<(), Error> {
    use llctop::tui::{self, App};
    need_terminal()?;
    let stop = stop_flag()?;
    let rec = record::reader::open(file)?;
    if rec.snapshots.is_empty() {
        return Err(format!("{}: no snapshots to replay", file.display()).into());
    }
    let mut app = App::replay(rec, &file.display().to_string(), tui_themes(cli)?);
    let (_tx, rx) = std::sync::mpsc::channel();
    tui::run(&mut app, rx, &stop).map_err(|e| format!("terminal: {e}").into())
}

/// The knob session of a `live`/`record` run with `--set`/`--profile` applied; `None`
/// when the run changes nothing. A failed change ends the run (what was applied is
/// restored when the session drops).
fn run_session(
    cli: &Cli,
    root: &KernelRoot,
    topo: &Topology,
    changes: &Changes,
) -> Result<Option<Session>, Error> {
    if changes.profile.is_none() && changes.set.is_empty() {
        return Ok(None);
    }
    let mut s = knob_session(cli, root, Some(topo), false);
    apply_changes(&mut s, changes)?;
    Ok(Some(s))
}

/// One line per tick: busy overall and per LLC, migrations by distance, top process.
fn summary_line(s: &Snapshot) -> String {
    let pct = |x: Option<f64>| x.map_or("  -".into(), |b| format!("{:3.0}", b * 100.0));
    let llcs: Vec<String> = s.llcs.iter().take(16).map(|g| pct(g.busy)).collect();
    let mut line = format!(
        "#{:<4} busy {}% [llc {}]",
        s.seq,
        pct(s.system.busy).trim(),
        llcs.join(" ")
    );
    if s.llcs.len() > 16 {
        line.push_str(" …");
    }
    if let Some(m) = &s.migrations {
        let parts: Vec<String> = Distance::ALL
            .iter()
            .map(|&d| format!("{} {}", d.label(), m.by_distance.get(d)))
            .collect();
        line.push_str(&format!(
            " | mig{} {}",
            if m.precision == llctop::snapshot::Precision::Sampled {
                "~"
            } else {
                ""
            },
            parts.join(" ")
        ));
    }
    if let Some(c) = llctop::counters::sum(s.nodes.iter().filter_map(|n| n.counters.as_ref())) {
        let mut c = c;
        llctop::counters::derive(&mut c, s.time.interval_secs());
        if let Some(ipc) = c.ipc {
            line.push_str(&format!(" | ipc {ipc:.2}"));
        }
        if let Some(mpki) = c.mpki {
            line.push_str(&format!(" mpki {mpki:.1}"));
        }
    }
    if let Some(c) = s.system.ctx_switches {
        line.push_str(&format!(" | cs {c}"));
    }
    if let Some(top) = s.processes.as_ref().and_then(|t| t.rows.first()) {
        let interval = s.time.interval_ns.max(1) as f64;
        line.push_str(&format!(
            " | top {}({}) {:.0}%",
            top.comm,
            top.pid,
            100.0 * top.cpu_time_ns as f64 / interval
        ));
        if let (Some(p), Some(h)) = (top.preferred_llc, top.preferred_hit) {
            line.push_str(&format!(" pref llc{p} hit {:.0}%", h * 100.0));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn snapshot_counts_cover_the_duration() {
        let s = Duration::from_secs;
        assert_eq!(snapshot_count(Some(s(5)), s(1)), Some(5));
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(2500)), s(1)),
            Some(3)
        );
        assert_eq!(
            snapshot_count(Some(Duration::from_millis(100)), s(1)),
            Some(1)
        );
        assert_eq!(snapshot_count(None, s(1)), None);
    }

    #[test]
    fn summary_line_marks_sampled_migrations() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/topology/epyc-7702p"
        );
        let t = topology::discover(&KernelRoot::new(fixture)).unwrap();
        let mut snap = llctop::collect::empty_snapshot(&t);
        snap.migrations = Some(llctop::snapshot::Migrations {
            llc_matrix: vec![vec![0; 16]; 16],
            ..Default::default()
        });
        llctop::collect::aggregate(&t, &mut snap);
        let line = summary_line(&snap);
        assert!(line.contains("mig~ smt 0 llc 0 xllc 0 xnode 0"), "{line}");
        assert!(
            line.contains("busy -% [llc "),
            "no busy value is shown as -, not 0: {line}"
        );
    }
}
