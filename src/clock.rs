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

/// `YYYYMMDD-HHMMSSZ` of a Unix time (UTC; no time-zone database needed).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `HH:MM:SS` of a Unix time in ns, in the local time zone (the C library's, from
/// TZ or /etc/localtime, as `date` shows it); UTC with a `Z` where it cannot be had.
pub fn local_hms(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as libc::time_t;
    // SAFETY: tm is plain data that localtime_r fills; both pointers are valid.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if ok {
        format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
    } else {
        let rem = (unix_ns / 1_000_000_000) % 86_400;
        format!("{:02}:{:02}:{:02}Z", rem / 3600, (rem / 60) % 60, rem % 60)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clocks_advance() {
        let (a, b) = (super::mono_ns(), super::mono_ns());
        assert!(b >= a && a > 0);
        assert!(super::unix_ns() > 1_600_000_000 * 1_000_000_000);
    }

    #[test]
    fn local_time_is_the_c_librarys() {
        let t = super::local_hms(1_795_244_016_000_000_000);
        assert_eq!(t.len(), 8, "{t}");
        assert!(t.ends_with(":36"), "seconds do not depend on the zone: {t}");
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(super::utc_stamp(0), "19700101-000000Z");
        assert_eq!(super::utc_stamp(1_795_244_016), "20261121-065336Z");
    }
}
