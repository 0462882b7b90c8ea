//! Values typed on a command line or in a config file, parsed and bounded: durations
//! (intervals, runs, windows, timeouts) and the trace buffer's size. A leaf: the command
//! line (cli.rs), the plans it flattens (ab, trace) and the config files all use it.

use std::time::Duration;

/// The shortest interval: the kernel's own time accounting moves in ticks (10 ms at
/// HZ=100), and a snapshot of a large machine (every CPU's and process's counters) takes
/// milliseconds to read — below this, llctop would measure itself.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The longest interval: an hour between snapshots is a report, not a view.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest run, window or warm-up: 30 days; beyond it a duration is a typo (and
/// deadline arithmetic stays far from overflow).
pub const MAX_SPAN: Duration = Duration::from_secs(30 * 24 * 3600);

/// `--interval`: a duration from [`MIN_INTERVAL`] to [`MAX_INTERVAL`].
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < MIN_INTERVAL || d > MAX_INTERVAL {
        return Err(format!(
            "{s}: the interval must be from {} to {}",
            humantime::format_duration(MIN_INTERVAL),
            humantime::format_duration(MAX_INTERVAL)
        ));
    }
    Ok(d)
}

/// A duration: `1s`, `500ms`, `2m` (humantime), or plain seconds (`2`, `0.25`); never
/// zero, at most [`MAX_SPAN`].
/// A trace buffer size: `64KiB` … `1GiB` (or plain bytes), a power of two.
pub fn parse_buffer(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let (num, mult) = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        .iter()
        .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((t, 1));
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a size such as 32MiB"))?;
    let bytes = n
        .checked_mul(mult)
        .filter(|b| (64 << 10..=1 << 30).contains(b) && b.is_power_of_two())
        .ok_or_else(|| format!("{s:?}: a power of two from 64KiB to 1GiB"))?;
    u32::try_from(bytes).map_err(|_| format!("{s:?}: too large"))
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
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
    if d > MAX_SPAN {
        return Err(format!(
            "{s}: at most {} (30 days)",
            humantime::format_duration(MAX_SPAN)
        ));
    }
    Ok(d)
}

/// A duration that may be zero (`0`, `0s`).
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    match s.trim_end_matches('s') {
        "0" => Ok(Duration::ZERO),
        _ => parse_duration(s),
    }
}

/// A size such as `1GiB`, `512M`, `4096`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (e.g. 512MiB, 1G)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("{s:?}: unknown unit (B, KiB, MiB, GiB, TiB)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?}: too large"))
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
        for bad in ["18446744073709551615s", "999999h", "31d", "1e300"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_interval("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_interval("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["1ns", "9ms", "61m", "18446744073709551615s"] {
            let e = parse_interval(bad).unwrap_err();
            assert!(
                e.contains("interval") || e.contains("at most") || !e.is_empty(),
                "{bad}: {e}"
            );
        }
        assert!(parse_duration("soon").is_err());
    }
}
