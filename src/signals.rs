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
use std::sync::{Arc, Condvar, Mutex, OnceLock};

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
        // The bell for the waiters ([`nap`]): a thread blocked on signal-hook's self-pipe
        // rings it for each stop signal (a handler cannot notify a condition variable).
        let mut signals =
            signal_hook::iterator::Signals::new(STOP_SIGNALS).map_err(|e| e.to_string())?;
        std::thread::Builder::new()
            .name("llctop-signals".into())
            .spawn(move || {
                for _ in signals.forever() {
                    ring();
                }
            })
            .map_err(|e| e.to_string())?;
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
    ring();
}

/// The bell: rung with each stop (a signal, [`request`], or [`ring`] after a flag is set
/// by hand), counting its rings, so that a waiter sleeps a whole interval yet wakes at
/// once for a stop — not polling a flag every few milliseconds (serve at `--interval 10s`
/// woke 20 times a second for it: nearly all of its CPU time).
fn bell() -> &'static (Mutex<u64>, Condvar) {
    static BELL: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());
    &BELL
}

/// Wake every [`nap`] now (after setting a stop flag that a waiter looks at).
pub fn ring() {
    let (rings, woken) = bell();
    let mut n = rings.lock().unwrap_or_else(|p| p.into_inner());
    *n = n.wrapping_add(1);
    woken.notify_all();
}

/// The bell's count now: take it before looking at a stop flag, then [`nap`] from it, so
/// a ring between the look and the nap is not missed.
pub fn rings() -> u64 {
    *bell().0.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sleep for `d`, or less when the bell rang since its count was `seen`.
pub fn nap(seen: u64, d: std::time::Duration) {
    let (rings, woken) = bell();
    let n = rings.lock().unwrap_or_else(|p| p.into_inner());
    let _ = woken
        .wait_timeout_while(n, d, |n| *n == seen)
        .unwrap_or_else(|p| p.into_inner());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_nap_ends_at_a_ring_and_a_ring_before_it_is_not_missed() {
        // A ring while napping wakes the nap long before its 30 s.
        let seen = rings();
        let t = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            ring();
        });
        let t0 = Instant::now();
        nap(seen, Duration::from_secs(30));
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        t.join().unwrap();
        // A ring between taking the count and napping: the nap returns at once.
        let seen = rings();
        ring();
        let t0 = Instant::now();
        nap(seen, Duration::from_secs(30));
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        // No ring: the nap lasts its time.
        let t0 = Instant::now();
        nap(rings(), Duration::from_millis(100));
        assert!(t0.elapsed() >= Duration::from_millis(100));
    }
}
