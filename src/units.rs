//! Quantities as people read them, one rule everywhere (TUI, headless lines, report,
//! diff): counts and rates with SI suffixes (`1.2k`, `5.6M`/s); cache sizes and occupancy
//! in binary units (`12.3 MiB`: caches are sized in powers of two), memory bandwidth in
//! decimal bytes per second (`4.2 GB/s`: how memory bandwidth is quoted). A figure with a
//! unit ([`figure`]: diff, ab, pages) is given to three significant digits with its unit,
//! times scaled (µs → ms → s); a percentile of a log2 histogram is an upper bound, and
//! says so: `≤8.4 ms`.

/// `v` to three significant digits (no exponent; a whole number as it is).
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            "–".into()
        };
    }
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        // 0.0123 → 3 significant digits.
        let digits = (-a.log10().floor()) as usize + 2;
        format!("{v:.digits$}")
    }
}

/// A figure in `unit` as people read it: three significant digits, large counts with SI
/// suffixes (`57.2/s`, `1.2k/s`), times scaled to the unit that reads best (`850 µs`,
/// `8.4 ms`, `1.20 s`); `bound`: the value is an upper bound (a log2 histogram's bucket),
/// shown `≤…`.
pub fn figure(v: f64, unit: &str, bound: bool) -> String {
    let le = if bound { "≤" } else { "" };
    if !v.is_finite() {
        return "–".into();
    }
    let text = match unit {
        "µs" | "us" => {
            let a = v.abs();
            if a >= 1e6 {
                format!("{} s", sig3(v / 1e6))
            } else if a >= 1e3 {
                format!("{} ms", sig3(v / 1e3))
            } else {
                format!("{} µs", sig3(v))
            }
        }
        "ns" => return figure(v / 1e3, "µs", bound),
        "s" => format!("{} s", sig3(v)),
        "%" => format!("{}%", sig3(v)),
        "/s" => {
            if v.abs() >= 1e4 {
                format!("{}/s", si(v))
            } else {
                format!("{}/s", sig3(v))
            }
        }
        "" => {
            if v.abs() >= 1e4 {
                si(v)
            } else {
                sig3(v)
            }
        }
        u => format!("{} {u}", sig3(v)),
    };
    format!("{le}{text}")
}

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
    fn figures_have_their_unit_and_three_digits() {
        assert_eq!(sig3(41383.7995), "41384");
        assert_eq!(sig3(3290.5349), "3291");
        assert_eq!(sig3(0.5891), "0.589");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(2.166), "2.17");
        assert_eq!(figure(41383.8, "µs", false), "41.4 ms");
        assert_eq!(figure(8388.6, "µs", true), "≤8.39 ms");
        assert_eq!(figure(70000.0, "µs", false), "70.0 ms");
        assert_eq!(figure(1_200_000.0, "µs", false), "1.20 s");
        assert_eq!(figure(850.0, "µs", false), "850 µs");
        assert_eq!(figure(57.18, "/s", false), "57.2/s");
        assert_eq!(figure(14578.0, "/s", false), "15k/s");
        assert_eq!(figure(65.39, "%", false), "65.4%");
        assert_eq!(figure(0.0, "%", false), "0%");
        assert_eq!(figure(3.2, "MB/s", false), "3.20 MB/s");
    }

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
