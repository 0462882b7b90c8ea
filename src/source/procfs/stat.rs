//! `/proc/stat` → per-CPU busy and steal fractions, system context switches, forks and
//! runnable/blocked task counts. Parsed with procfs-core's `KernelStats`; the CPU number
//! of each per-CPU line is taken from the line itself, because the kernel lists only
//! online CPUs and the position alone would shift after an offline CPU.

use std::collections::HashMap;

use procfs_core::{CpuTime, ExplicitSystemInfo, FromBufReadSI, KernelStats};

use crate::kroot::{KResult, KernelError, KernelRoot, proc_error};

pub const PATH: &str = "/proc/stat";

/// One read of /proc/stat, per-CPU times in clock ticks keyed by CPU number.
#[derive(Debug, Clone)]
pub struct StatSample {
    pub cpus: HashMap<u32, CpuTicks>,
    pub ctxt: u64,
    pub processes: u64,
    pub procs_running: Option<u32>,
    pub procs_blocked: Option<u32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Not idle: user + nice + system + irq + softirq + steal (guest time is already
    /// inside user/nice).
    pub busy: u64,
    pub steal: u64,
    /// busy + idle + iowait.
    pub total: u64,
}

impl From<&CpuTime> for CpuTicks {
    fn from(t: &CpuTime) -> Self {
        let steal = t.steal.unwrap_or(0);
        let busy = t.user + t.nice + t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0) + steal;
        CpuTicks {
            busy,
            steal,
            total: busy + t.idle + t.iowait.unwrap_or(0),
        }
    }
}

/// Busy and steal fractions between two samples of one CPU; `None` if no time passed
/// or the counters went backwards (CPU hot-plugged in between).
pub fn fractions(prev: &CpuTicks, cur: &CpuTicks) -> Option<(f64, f64)> {
    let total = cur.total.checked_sub(prev.total)?;
    if total == 0 {
        return None;
    }
    let busy = cur.busy.checked_sub(prev.busy)?;
    let steal = cur.steal.saturating_sub(prev.steal);
    let t = total as f64;
    Some(((busy as f64 / t).min(1.0), (steal as f64 / t).min(1.0)))
}

pub fn read(root: &KernelRoot) -> KResult<StatSample> {
    let text = root.read(PATH)?;
    parse(&text).map_err(|e| match e {
        ParseError::Proc(e) => proc_error(root.path(PATH), e),
        ParseError::Msg(m) => KernelError::parse(root.path(PATH), m),
    })
}

#[derive(Debug)]
pub enum ParseError {
    Proc(procfs_core::ProcError),
    Msg(String),
}

pub fn parse(text: &str) -> Result<StatSample, ParseError> {
    // Ticks per second only matter for procfs-core's ms/Duration helpers, which we do not
    // use; boot time and page size are not needed either.
    let si = ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    let ks = KernelStats::from_buf_read(text.as_bytes(), &si).map_err(ParseError::Proc)?;
    let ids: Vec<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cpu"))
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        .map(|rest| {
            let id = rest.split_whitespace().next().unwrap_or("");
            id.parse::<u32>()
                .map_err(|e| ParseError::Msg(format!("bad CPU line cpu{id}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    if ids.len() != ks.cpu_time.len() {
        return Err(ParseError::Msg(format!(
            "{} per-CPU lines but {} parsed",
            ids.len(),
            ks.cpu_time.len()
        )));
    }
    Ok(StatSample {
        cpus: ids
            .into_iter()
            .zip(ks.cpu_time.iter().map(CpuTicks::from))
            .collect(),
        ctxt: ks.ctxt,
        processes: ks.processes,
        procs_running: ks.procs_running,
        procs_blocked: ks.procs_blocked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "cpu  551 0 595 11485 69 0 11 5 0 0\n\
cpu0 138 0 256 5954 3 0 2 1 0 0\n\
cpu3 413 0 338 5531 65 0 9 4 0 0\n\
intr 1 2\nctxt 1000\nbtime 1\nprocesses 50\nprocs_running 2\nprocs_blocked 0\n";

    #[test]
    fn keeps_cpu_numbers_across_offline_gaps() {
        let s = parse(TWO).unwrap();
        assert_eq!(s.cpus.len(), 2);
        let c3 = s.cpus[&3];
        assert_eq!(c3.busy, 413 + 338 + 9 + 4);
        assert_eq!(c3.total, c3.busy + 5531 + 65);
        assert_eq!(c3.steal, 4);
        assert_eq!((s.ctxt, s.processes, s.procs_running), (1000, 50, Some(2)));
    }

    #[test]
    fn busy_fraction() {
        let a = CpuTicks {
            busy: 100,
            steal: 0,
            total: 1000,
        };
        let b = CpuTicks {
            busy: 130,
            steal: 5,
            total: 1100,
        };
        let (busy, steal) = fractions(&a, &b).unwrap();
        assert!((busy - 0.3).abs() < 1e-9);
        assert!((steal - 0.05).abs() < 1e-9);
        assert_eq!(fractions(&a, &a), None);
        assert_eq!(fractions(&b, &a), None);
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(parse("cpu0 1 2\n").is_err());
    }
}
