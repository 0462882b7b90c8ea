//! What llctop prints, one way: a reader that goes away never makes llctop panic. Every
//! line for stdout goes through [`out!`]/[`outln!`] and every status line for stderr
//! through [`say!`] (crate macros, defined here). A write to stdout that finds the pipe
//! closed (`llctop live | head -1`: EPIPE — Rust ignores SIGPIPE) marks stdout gone and asks
//! for the run's stop ([`crate::signals::request`]) — so a run ends as on `q`, knobs
//! restored — and the command exits 0, as `ripgrep | head` does; nothing more is written
//! there. A write to stderr that fails is dropped: status lines are for a reader who may
//! be gone. Text produced by a library (completions, man pages) is rendered into memory
//! first and written through here.

use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

static GONE: AtomicBool = AtomicBool::new(false);

/// Whether stdout's reader went away.
pub fn gone() -> bool {
    GONE.load(Ordering::Relaxed)
}

/// Write to stdout (flushed); false once its reader has gone (then the stop is asked for).
pub fn write_bytes(b: &[u8]) -> bool {
    if gone() {
        return false;
    }
    let mut o = io::stdout().lock();
    match o.write_all(b).and_then(|()| o.flush()) {
        Ok(()) => true,
        Err(e) => {
            GONE.store(true, Ordering::Relaxed);
            if e.kind() != io::ErrorKind::BrokenPipe {
                say_line(format_args!("llctop: stdout: {e}"));
            }
            crate::signals::request();
            false
        }
    }
}

/// [`write_bytes`] of formatted text.
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> bool {
    match args.as_str() {
        Some(s) => write_bytes(s.as_bytes()),
        None => write_bytes(args.to_string().as_bytes()),
    }
}

/// A line on stderr; an error writing it is dropped.
pub fn say_line(args: std::fmt::Arguments<'_>) {
    let mut e = io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.write_all(b"\n");
}

/// Text to stdout (see the module doc); evaluates to whether it was written.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::stdout::write_fmt(format_args!($($t)*))
    };
}

/// A line to stdout (see the module doc); evaluates to whether it was written.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write_bytes(b"\n")
    };
    ($($t:tt)*) => {
        $crate::stdout::write_bytes(format!("{}\n", format_args!($($t)*)).as_bytes())
    };
}

/// A status line to stderr, never a panic (see the module doc).
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {
        $crate::stdout::say_line(format_args!($($t)*))
    };
}
