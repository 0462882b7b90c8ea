//! The stop signals, once for the whole process: SIGINT (Ctrl-C), SIGTERM (`kill`), SIGHUP
//! (a closed terminal, a dropped ssh) and SIGQUIT (Ctrl-\\) end a run the way `q` does —
//! files finished, knobs restored, BPF detached, children stopped. [`install`] registers
//! them (after it, they no longer kill the process); every long loop and every reader of a
//! file looks at [`requested`] so that a stop is honoured within a second; [`count`] tells
//! a second signal from the first (a second Ctrl-C stops waiting for a stubborn child);
//! [`last`] is the exit status's (128 + the signal). [`request`] is the same stop asked for
//! from inside (an MCP server whose client went away). Low in the crate: readers
//! (record/) and runs (run/) both use it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals that end a run the way `q` does.
pub const STOP_SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// The one stop flag.
fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// The last stop signal received (0: none).
static LAST: AtomicUsize = AtomicUsize::new(0);
/// Stop signals received.
static COUNT: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Register the stop signals (once; later calls return the same flag): from now on each
/// sets the stop flag, which is returned, instead of killing the process.
pub fn install() -> Result<Arc<AtomicBool>, std::io::Error> {
    let res = INSTALLED.get_or_init(|| {
        for sig in STOP_SIGNALS {
            signal_hook::flag::register(sig, Arc::clone(flag())).map_err(|e| e.to_string())?;
            // SAFETY: the handler only stores to atomics, which is async-signal-safe.
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    LAST.store(sig as usize, Ordering::Relaxed);
                    COUNT.fetch_add(1, Ordering::Relaxed);
                })
            }
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    match res {
        Ok(()) => Ok(Arc::clone(flag())),
        Err(e) => Err(std::io::Error::other(e.clone())),
    }
}

/// Whether a stop was asked for (a signal, or [`request`]).
pub fn requested() -> bool {
    flag().load(Ordering::Relaxed)
}

/// Ask for the stop from inside, as a signal would (without one for the exit status).
pub fn request() {
    flag().store(true, Ordering::Relaxed);
}

/// Stop signals received so far.
pub fn count() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// The last stop signal received, if any.
pub fn last() -> Option<i32> {
    match LAST.load(Ordering::Relaxed) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}
