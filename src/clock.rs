//! The two clocks every part of llctop stamps with: CLOCK_MONOTONIC (intervals, BPF
//! timestamps, markers) and the wall clock (recordings, journal entries).

use std::time::{SystemTime, UNIX_EPOCH};

/// CLOCK_MONOTONIC in ns (the clock of `bpf_ktime_get_ns`).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall clock in ns since the Unix epoch (0 if the clock is before it).
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clocks_advance() {
        let (a, b) = (super::mono_ns(), super::mono_ns());
        assert!(b >= a && a > 0);
        assert!(super::unix_ns() > 1_600_000_000 * 1_000_000_000);
    }
}
