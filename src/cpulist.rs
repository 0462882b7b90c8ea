//! The kernel's cpulist format (`0-3,64-67`, empty for none), parsed and printed.
//! Used for `/sys/devices/system/cpu/online`, `shared_cpu_list`, node `cpulist` and
//! everything else that names a set of CPUs.

use std::fmt::Write as _;

/// CPU ids are below this: the kernel's CONFIG_NR_CPUS is at most 8192 on x86-64
/// (MAXSMP) and on powerpc, 4096 on arm64; twice the largest leaves room without letting
/// a corrupt or hostile list (`0-4294967295`) make billions of entries.
pub const MAX_CPUS: u32 = 16384;

/// Parse a cpulist such as `0-3,8,10-11` (also accepts strides `0-7:2`, as the kernel does).
/// Returns the CPUs sorted and de-duplicated. A CPU id of [`MAX_CPUS`] or more is an error.
///
/// ```
/// assert_eq!(llctop::cpulist::parse("0-3,64-67").unwrap(), [0, 1, 2, 3, 64, 65, 66, 67]);
/// assert!(llctop::cpulist::parse("3-1").is_err());
/// ```
pub fn parse(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    let mut cpus = Vec::new();
    if text.is_empty() {
        return Ok(cpus);
    }
    for part in text.split(',') {
        let part = part.trim();
        let (range, stride) = match part.split_once(':') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .map_err(|e| format!("bad stride in {part:?}: {e}"))?,
            ),
            None => (part, 1),
        };
        if stride == 0 {
            return Err(format!("zero stride in {part:?}"));
        }
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (num(a, part)?, num(b, part)?),
            None => {
                let n = num(range, part)?;
                (n, n)
            }
        };
        if hi < lo {
            return Err(format!("descending range {part:?}"));
        }
        if hi >= MAX_CPUS {
            return Err(format!(
                "CPU {hi} in {part:?}: CPU ids are below {MAX_CPUS} (the kernel's NR_CPUS is at most 8192)"
            ));
        }
        cpus.extend((lo..=hi).step_by(stride as usize));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn num(s: &str, part: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|e| format!("bad CPU number in {part:?}: {e}"))
}

/// Format sorted CPUs as a compact cpulist (`0-3,64-67`).
///
/// ```
/// assert_eq!(llctop::cpulist::format(&[0, 1, 2, 8, 10, 11]), "0-2,8,10-11");
/// ```
pub fn format(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && Some(cpus[i + 1]) == end.checked_add(1) {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_lists() {
        assert_eq!(
            parse("0-3,64-67\n").unwrap(),
            vec![0, 1, 2, 3, 64, 65, 66, 67]
        );
        assert_eq!(parse("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse("5").unwrap(), vec![5]);
        assert_eq!(parse("0-6:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse("3,1,1-2").unwrap(), vec![1, 2, 3]);
        assert!(parse("3-1").is_err());
        assert!(parse("a-b").is_err());
        assert!(parse("1,,2").is_err());
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format(&[0, 1, 2, 3, 64, 65, 66, 67]), "0-3,64-67");
        assert_eq!(format(&[1, 3, 5]), "1,3,5");
        assert_eq!(format(&[]), "");
        for s in ["0-55,112-167", "0", "0-1,4,6-9"] {
            assert_eq!(format(&parse(s).unwrap()), s);
        }
    }
}
