//! Starting the TUI: live (sources on the feed thread, the knob session here, restored
//! on exit unless --keep-changes; recordings on `r`) or over a recording (replay), with
//! the themes of `--theme`, after checking for a terminal before anything is touched.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::app::ViewId;
use super::app::history::Packed;
use super::theme::{self, Theme};
use super::{App, MakeSources, Msg};
use crate::knobs::{Access, Knob, Session, profile};
use crate::kroot::KernelRoot;
use crate::record;
use crate::run::{self, Changes, Error, Options};
use crate::source;
use crate::topology::Topology;

/// The TUI draws on stdout and reads keys from stdin: refuse early (before any knob is
/// touched) without a terminal.
pub fn need_terminal() -> Result<(), Error> {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Ok(())
    } else {
        Err("the TUI needs a terminal on stdin and stdout (use `llctop live` or `llctop record` otherwise)".into())
    }
}

/// The themes: NO_COLOR gives the monochrome one; otherwise all themes with `first` at
/// the start of the cycle.
pub fn themes(first: &str) -> Result<Vec<Theme>, Error> {
    if theme::no_color() {
        return Ok(vec![Theme::mono()]);
    }
    let (mut all, errors) = theme::load_all(theme::user_dir().as_deref());
    for e in errors {
        crate::say!("llctop: theme: {e}");
    }
    let Some(i) = all.iter().position(|t| t.name == first) else {
        let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
        return Err(format!("unknown theme {first:?} (have: {})", names.join(", ")).into());
    };
    all.rotate_left(i);
    Ok(all)
}

/// What the header says about knobs, most telling first: most knobs read-only
/// (lockdown), then sched domains unreadable (`domains`), then whatever is missing.
pub fn knob_notes(session: &Session, domains: Option<String>) -> Vec<String> {
    let mut notes = Vec::new();
    let reg = session.registry();
    let ro: Vec<&Knob> = reg
        .knobs
        .iter()
        .filter(|k| !k.access.is_writable())
        .collect();
    if let Some(first) = ro.first()
        && let Access::ReadOnly(why) = &first.access
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
    // A seed's feature that mainline never took is absent everywhere: `llctop knobs list`
    // says so; the header keeps to what is missing on this machine.
    let seed_feature = |what: &str| {
        crate::knobs::catalog::SEED_FEATURES
            .iter()
            .any(|(name, _)| what.strip_prefix("feature.") == Some(*name))
    };
    for m in reg.missing.iter().filter(|m| !seed_feature(&m.what)) {
        notes.push(format!("{}: {}", m.what, m.reason));
    }
    notes
}

/// The TUI on the live system with `changes` applied for the session.
/// How the TUI looks and answers: theme, the view shown first, key rebindings.
pub struct Look {
    pub theme: String,
    pub view: ViewId,
    pub keys: std::collections::BTreeMap<String, Vec<String>>,
}

impl Look {
    fn apply(&self, app: &mut App) -> Result<(), Error> {
        app.view = self.view;
        app.keymap = super::keymap::with_overrides(&self.keys).map_err(Error::from)?;
        Ok(())
    }
}

pub fn live(
    opts: &Options,
    look: &Look,
    root: &KernelRoot,
    topo: &Topology,
    changes: &Changes,
) -> Result<(), Error> {
    need_terminal()?;
    let stop = run::stop_flag()?;
    let themes = themes(&look.theme)?;
    let mut session = run::knob_session(opts, root, Some(topo), false);
    let domains = session.read_domains();
    run::apply_changes(&mut session, changes)?;
    let mut app = App::live(topo.clone(), opts.interval, themes);
    look.apply(&mut app)?;
    (app.host, app.kernel) = record::host_and_kernel(root);
    app.knob_notes = knob_notes(&session, domains);
    app.knob_log = session.take_events();
    app.profiles = profile::load_all(profile::user_dir().as_deref()).0;
    app.session = Some(session);
    let (tx, rx) = std::sync::mpsc::channel();
    let (feed_opts, feed_root, feed_topo) = (opts.clone(), root.clone(), topo.clone());
    let make: MakeSources = Box::new(move || {
        let resctrl = feed_opts.resctrl_setup(&feed_root, &feed_topo);
        source::select(
            feed_opts.source,
            feed_opts.top,
            &feed_root,
            &feed_topo,
            resctrl,
            feed_opts.wakeups,
        )
        .map_err(|e| e.to_string())
    });
    let feed = super::spawn_feed(
        opts.clone(),
        root.clone(),
        topo.clone(),
        make,
        Arc::clone(&stop),
        tx,
    )?;
    let res = super::run(&mut app, rx, &stop);
    stop.store(true, Ordering::Relaxed);
    crate::signals::ring();
    let _ = feed.join();
    if let Some(r) = app.recording.take() {
        let n = r.snapshots();
        let path = r.path.clone();
        match r.finish() {
            Ok(()) => crate::say!("llctop: recorded {n} snapshots to {}", path.display()),
            Err(e) => crate::say!("llctop: recording: {e}"),
        }
    }
    if let Some(mut s) = app.session.take() {
        run::finish_session(&mut s);
    }
    if let Some(f) = app.fatal.take() {
        return Err(f.into());
    }
    res.map_err(|e| format!("terminal: {e}").into())
}

/// Give the memory freed by reading a recording back to the system: the reading and
/// parsing threads' buffers and the parsed snapshots that are now packed sit in the
/// allocator's free lists otherwise (about 15 MB after an hour of a 256-CPU machine).
fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free memory of the allocator's arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Replayed lines in flight between the reading thread and the UI.
const REPLAY_QUEUE: usize = 32;

/// `llctop replay FILE`: the recording in the TUI.
pub fn replay(look: &Look, file: &Path) -> Result<(), Error> {
    need_terminal()?;
    let stop = run::stop_flag()?;
    // The header and the lines up to the first snapshot here (an empty recording is
    // refused before the screen is taken); the rest loads while it plays.
    let mut stream = record::reader::Stream::open(file, u64::MAX)?;
    let mut first = Vec::new();
    for line in &mut stream {
        let line = line?;
        let snapshot = matches!(line, record::Line::Snapshot(_));
        first.push(line);
        if snapshot {
            break;
        }
    }
    if !first.iter().any(|l| matches!(l, record::Line::Snapshot(_))) {
        return Err(format!("{}: no snapshots to replay", file.display()).into());
    }
    let mut app = App::replay_loading(
        &stream.header,
        &file.display().to_string(),
        themes(&look.theme)?,
    );
    for line in first {
        app.handle(Msg::Replayed(Box::new(line)));
    }
    look.apply(&mut app)?;
    // Bounded: the reader waits for the UI rather than queue parsed snapshots (a
    // 256-CPU one is ~180 KB parsed; an unbounded queue held hundreds at a time).
    let (tx, rx) = std::sync::mpsc::sync_channel(REPLAY_QUEUE);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 3));
    std::thread::Builder::new()
        .name("llctop-replay".into())
        .spawn(move || {
            let mut lines = stream.parallel(workers);
            for line in &mut lines {
                // Snapshots are packed here, off the UI thread (it keeps them packed).
                let msg = match line {
                    Ok(record::Line::Snapshot(s)) => match Packed::of(&s) {
                        Ok(p) => Msg::ReplayedPacked(Box::new((s, p))),
                        Err(_) => Msg::Replayed(Box::new(record::Line::Snapshot(s))),
                    },
                    Ok(l) => Msg::Replayed(Box::new(l)),
                    Err(e) => Msg::FeedError(e.to_string()),
                };
                let failed = matches!(msg, Msg::FeedError(_));
                if tx.send(msg).is_err() || failed {
                    return;
                }
            }
            let _ = tx.send(Msg::ReplayLoaded {
                truncated: lines.truncated(),
            });
            drop(lines);
            release_freed_memory();
        })?;
    super::run(&mut app, rx, &stop).map_err(|e| format!("terminal: {e}").into())
}
