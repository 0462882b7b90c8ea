//! The kernel's cpulist format (`0-3,64-67`, empty for none), parsed and printed, and a
//! set of CPUs as sched_setaffinity(2) takes it ([`CpuMask`]). Used for
//! `/sys/devices/system/cpu/online`, `shared_cpu_list`, node `cpulist`, the CPUs a
//! thread may run on, and everything else that names a set of CPUs.

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

/// A CPU set as sched_setaffinity(2) takes it (built before a fork: nothing allocates in
/// the child).
#[derive(Clone, Copy)]
pub struct CpuMask(libc::cpu_set_t);

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format(&self.cpus()))
    }
}

impl CpuMask {
    pub fn of(cpus: &[u32]) -> Result<CpuMask, String> {
        // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(format!(
                    "CPU {c}: beyond the {} a CPU set holds",
                    libc::CPU_SETSIZE
                ));
            }
            // SAFETY: c is below CPU_SETSIZE (checked above).
            unsafe { libc::CPU_SET(c as usize, &mut set) };
        }
        Ok(CpuMask(set))
    }

    pub fn cpus(&self) -> Vec<u32> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: every c is below CPU_SETSIZE.
            .filter(|c| unsafe { libc::CPU_ISSET(*c, &self.0) })
            .map(|c| c as u32)
            .collect()
    }

    /// Set thread `tid`'s allowed CPUs (0: the calling thread). Async-signal-safe: one
    /// system call, so it may run between fork and exec.
    pub fn apply(&self, tid: i32) -> std::io::Result<()> {
        // SAFETY: a valid cpu_set_t of its own size.
        let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&self.0), &self.0) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Thread `tid`'s allowed CPUs (0: the calling thread).
    pub fn of_thread(tid: i32) -> std::io::Result<CpuMask> {
        // SAFETY: cpu_set_t is plain bits; the kernel fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid cpu_set_t of its own size.
        let r = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
        if r == 0 {
            Ok(CpuMask(set))
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
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
