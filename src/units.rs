//! Quantities as people read them, one rule everywhere (TUI, headless lines, report,
//! diff): counts and rates with SI suffixes (`1.2k`, `5.6M`/s); cache sizes and occupancy
//! in binary units (`12.3 MiB`: caches are sized in powers of two), memory bandwidth in
//! decimal bytes per second (`4.2 GB/s`: how memory bandwidth is quoted).

/// 1234 → `1.2k`, 5_600_000 → `5.6M`.
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A count over `secs` as a per-second rate.
pub fn rate(count: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "–".into();
    }
    si(count as f64 / secs)
}

/// Bytes in binary units: `512 B`, `48.0 KiB`, `12.3 MiB`, `1.5 GiB`.
pub fn bytes(v: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut f = v as f64;
    let mut i = 0;
    while f >= 1024.0 && i + 1 < UNITS.len() {
        f /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v} B")
    } else {
        format!("{f:.1} {}", UNITS[i])
    }
}

/// `count` bytes over `secs` as a decimal rate: `850 B/s`, `12.0 kB/s`, `4.2 GB/s`.
pub fn bytes_per_sec(count: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "–".into();
    }
    let v = count as f64 / secs;
    const UNITS: [&str; 5] = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut f = v;
    let mut i = 0;
    while f >= 1000.0 && i + 1 < UNITS.len() {
        f /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{f:.0} {}", UNITS[i])
    } else {
        format!("{f:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_sizes_and_decimal_rates() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(48 * 1024), "48.0 KiB");
        assert_eq!(bytes(32 << 20), "32.0 MiB");
        assert_eq!(bytes(12_900_000), "12.3 MiB");
        assert_eq!(bytes(u64::MAX), "16777216.0 TiB");
        assert_eq!(bytes_per_sec(850, 1.0), "850 B/s");
        assert_eq!(bytes_per_sec(4_200_000_000, 1.0), "4.2 GB/s");
        assert_eq!(bytes_per_sec(24_000, 2.0), "12.0 kB/s");
        assert_eq!(bytes_per_sec(1, 0.0), "–");
    }
}
