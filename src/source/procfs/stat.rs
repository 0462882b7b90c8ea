//! `/proc/stat` → per-CPU busy and steal fractions, the user and kernel shares of all
//! CPUs' time, system context switches, forks and runnable/blocked task counts;
//! `/proc/loadavg` → the load averages. Parsed with procfs-core's `KernelStats`; the CPU number
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
    /// user + nice.
    pub user: u64,
    /// system + irq + softirq.
    pub kernel: u64,
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
            user: t.user + t.nice,
            kernel: t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0),
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

/// The user and kernel shares of all CPUs' time between two samples (CPUs in both);
/// `None` if no time passed or a counter went backwards.
pub fn user_kernel(prev: &StatSample, cur: &StatSample) -> Option<(f64, f64)> {
    let (mut user, mut kernel, mut total) = (0u64, 0u64, 0u64);
    for (cpu, c) in &cur.cpus {
        let Some(p) = prev.cpus.get(cpu) else {
            continue;
        };
        user = user.saturating_add(c.user.checked_sub(p.user)?);
        kernel = kernel.saturating_add(c.kernel.checked_sub(p.kernel)?);
        total = total.saturating_add(c.total.checked_sub(p.total)?);
    }
    (total > 0).then(|| {
        let t = total as f64;
        ((user as f64 / t).min(1.0), (kernel as f64 / t).min(1.0))
    })
}

pub const LOADAVG: &str = "/proc/loadavg";

/// The three load averages of `/proc/loadavg` (`0.52 0.40 0.33 1/123 4567`).
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok());
    let l = [it.next()??, it.next()??, it.next()??];
    l.iter().all(|x| x.is_finite() && *x >= 0.0).then_some(l)
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

    #[test]
    fn load_averages_and_user_kernel_shares() {
        assert_eq!(
            parse_loadavg("0.52 0.40 0.33 1/123 4567\n"),
            Some([0.52, 0.40, 0.33])
        );
        assert_eq!(parse_loadavg("0.52 x 0.33"), None);
        assert_eq!(parse_loadavg("nan 1 1"), None);
        let a = parse("cpu 0 0 0 0 0 0 0 0 0 0\ncpu0 10 0 5 100 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\nintr 1 2\nctxt 1\nbtime 1\nprocesses 1\n").unwrap();
        let b = parse("cpu 0 0 0 0 0 0 0 0 0 0\ncpu0 40 10 15 120 0 0 0 0 0 0\ncpu1 0 0 10 220 0 0 0 0 0 0\nintr 1 2\nctxt 1\nbtime 1\nprocesses 1\n").unwrap();
        // 40 user+nice and 20 system ticks of 200.
        assert_eq!(user_kernel(&a, &b), Some((0.2, 0.1)));
        assert_eq!(user_kernel(&b, &a), None, "backwards");
    }

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
            ..Default::default()
        };
        let b = CpuTicks {
            busy: 130,
            steal: 5,
            total: 1100,
            ..Default::default()
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
