//! The terminal UI (ratatui + crossterm), model / message / update / view:
//!
//! - [`app`]: the model and its `update` (the only place state changes);
//! - [`views`]: drawing, one view per file;
//! - [`keymap`]: every key binding as data (help and README come from it);
//! - [`theme`]: palettes from themes/*.toml, NO_COLOR;
//! - this module: the terminal (restored on quit, error and panic), the live feed thread
//!   and the event loop.
//!
//! Sources run on their own thread and send snapshots over a channel, so the UI never
//! waits on the kernel; replay feeds the same model from a recording.

pub mod app;
pub mod keymap;
pub mod launch;
pub mod shot;
pub mod theme;
pub mod views;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind,
};

use crate::kroot::KernelRoot;
use crate::run::pipeline::{Ctl, Pipeline, Sink, Tick};
use crate::source::Source;
use crate::topology::Topology;
pub use app::{App, Msg};

/// Fault injection for tests: `LLCTOP_FAULT=feed-panic` makes the feed thread panic at
/// its start (tests/tui_tmux.rs checks that the program then ends, restoring the knobs).
pub const FAULT_ENV: &str = "LLCTOP_FAULT";

/// Builds the sources on the feed thread (BPF and perf handles are not `Send`).
pub type MakeSources = Box<dyn FnOnce() -> Result<Vec<Box<dyn Source>>, String> + Send>;

/// Start the live feed: build the sources, start the run's pipeline on them (the
/// baseline's source states go to the UI at once), then one tick per interval until
/// `stop` or the UI goes away. The knob session is the UI's (it re-reads its own values).
pub fn spawn_feed(
    opts: crate::run::Options,
    root: KernelRoot,
    topo: Topology,
    make: MakeSources,
    stop: Arc<AtomicBool>,
    tx: Sender<Msg>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("llctop-feed".into())
        .spawn(move || {
            let feed_tx = tx.clone();
            let body = std::panic::AssertUnwindSafe(move || {
                if std::env::var(FAULT_ENV).as_deref() == Ok("feed-panic") {
                    panic!("{FAULT_ENV}=feed-panic");
                }
                let sources = match make() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = feed_tx.send(Msg::FeedError(e));
                        return;
                    }
                };
                let mut p = Pipeline::unwatched(&opts, &root, &topo, stop, sources);
                if feed_tx.send(Msg::Sources(p.sources.clone())).is_err() {
                    return;
                }
                let _ = p.drive(&mut [&mut Feed { tx: feed_tx }]);
            });
            // A panic here must end the program, not leave a UI without data: the UI
            // quits on FeedPanic, restoring the terminal and the knobs.
            if let Err(p) = std::panic::catch_unwind(body) {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                let _ = tx.send(Msg::FeedPanic(what));
            }
        })
}

/// The TUI as a sink of the pipeline: each tick over the channel to the UI thread.
struct Feed {
    tx: Sender<Msg>,
}

impl Sink for Feed {
    fn tick(&mut self, t: &Tick, _: &mut Ctl) -> Result<bool, crate::run::Error> {
        Ok(self.tx.send(Msg::Tick(Box::new(t.clone()))).is_ok())
    }
}

/// Run the UI until the operator quits or `stop` is set (SIGINT/SIGTERM). The terminal
/// is put back on return, on error and on panic (ratatui's hook).
/// Messages taken from the feed between two looks at the keyboard.
const MSGS_PER_TURN: usize = 256;

pub fn run(app: &mut App, rx: Receiver<Msg>, stop: &AtomicBool) -> std::io::Result<()> {
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            // Half-initialised (raw mode on, no alternate screen): put it back.
            let _ = ratatui::try_restore();
            return Err(e);
        }
    };
    // Clicks and the wheel; a panic hook turns mouse reporting off again before
    // ratatui's own restores the rest of the terminal.
    ratatui::crossterm::execute!(std::io::stdout(), EnableMouseCapture)?;
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableMouseCapture);
        prev(info);
    }));
    let res = event_loop(&mut terminal, app, &rx, stop);
    let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::try_restore()?;
    res
}

/// Terminal events read on their own thread: a hung-up terminal (closed window, dropped
/// ssh) can leave a read spinning on end-of-file inside crossterm, and the UI must still
/// see the stop flag and end. The channel closes when reading fails.
fn spawn_input() -> std::io::Result<Receiver<Event>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("llctop-input".into())
        .spawn(move || {
            while let Ok(e) = event::read() {
                if tx.send(e).is_err() {
                    return;
                }
            }
        })?;
    Ok(rx)
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    rx: &Receiver<Msg>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let input = spawn_input()?;
    let mut last = Instant::now();
    let mut dirty = true;
    loop {
        if dirty {
            terminal.draw(|f| views::draw(f, app))?;
            dirty = false;
        }
        match input.recv_timeout(Duration::from_millis(50)) {
            Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                step(terminal, app, Msg::Key(k))?;
                dirty = true;
            }
            Ok(Event::Mouse(m)) => {
                step(terminal, app, Msg::Mouse(m))?;
                dirty = true;
            }
            Ok(Event::Resize(..)) => dirty = true,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(std::io::Error::other("the terminal went away"));
            }
        }
        // A bounded batch per turn: a replay's loader can send faster than this loop
        // takes, and keys must still be read.
        for m in rx.try_iter().take(MSGS_PER_TURN) {
            step(terminal, app, m)?;
            dirty = true;
        }
        let now = Instant::now();
        if app.replay.as_ref().is_some_and(|r| r.playing) {
            let before = app.pos;
            app.handle(Msg::Elapsed(now - last));
            dirty |= app.pos != before || !app.replay.as_ref().is_some_and(|r| r.playing);
        }
        last = now;
        if app.quit || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

/// [`App::handle`], with the screen drawn first when an effect is about to wait on the
/// kernel (a sched_ext scheduler starting or stopping), saying what it waits for.
fn step(terminal: &mut ratatui::DefaultTerminal, app: &mut App, msg: Msg) -> std::io::Result<()> {
    let fx = app.update(msg);
    if let Some(text) = app.wait_notice(&fx) {
        app.say(app::Level::Info, text);
        terminal.draw(|f| views::draw(f, app))?;
    }
    for e in fx {
        app.perform(e);
    }
    Ok(())
}

/// Draw `app` into a `width`×`height` test backend and return the screen as text lines
/// (for tests and for `llctop` checks without a terminal).
pub fn render_to_text(app: &App, width: u16, height: u16) -> Vec<String> {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let Ok(mut term) = ratatui::Terminal::new(backend);
    if term.draw(|f| views::draw(f, app)).is_err() {
        return Vec::new();
    }
    let buf = term.backend().buffer().clone();
    (0..height)
        .map(|y| {
            let mut line = String::new();
            let mut x = 0;
            while x < width {
                let cell = &buf[(x, y)];
                line.push_str(cell.symbol());
                x += 1;
            }
            line
        })
        .collect()
}
