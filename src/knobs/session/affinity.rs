//! The session's affinity writes: the CPUs the threads of a running process llctop did
//! not start may run on — what `llctop ab colocate=… --pid PID` changes when the operator
//! names the processes. A kernel write like a knob's: refused in a read-only session,
//! owned by one llctop (id `affinity.PID`), journaled *before* the first change with the
//! process's start time and every thread's own CPU set (so that `llctop knobs restore`, or
//! the next run, puts back what a killed run left — on that process only, never on a
//! later one that got its pid), each thread's set read back after it is set, and put back
//! when the experiment's arm is `off` and when the session ends (whatever
//! `--keep-changes` says: a placement is an instrument of the experiment).
//!
//! The processes are the live system's whatever `--sysroot` names (a fixture topology
//! only decides the CPU sets), so their entries are journaled under `/`. A thread that
//! appears after the first change inherited its creator's placed set: it is put back on
//! the set the process's main thread had.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{KnobError, Session};
use crate::cpulist::{self, CpuMask};
use crate::knobs::journal::Entry;

/// Journal ids: `affinity.PID`.
const PREFIX: &str = "affinity.";

/// The journal id of process `pid`'s placement.
pub fn id_of(pid: u32) -> String {
    format!("{PREFIX}{pid}")
}

/// Whether a journal id is a placement (not a registry knob).
pub fn is_affinity_id(id: &str) -> bool {
    id.strip_prefix(PREFIX)
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The root placements are journaled and owned under: the live system's.
fn live() -> PathBuf {
    PathBuf::from("/")
}

/// The kernel's PF_KTHREAD (include/linux/sched.h), in /proc/PID/stat's `flags`.
const PF_KTHREAD: u32 = 0x0020_0000;

/// How many passes over a process's threads a placement makes at most: a thread created
/// while a pass runs inherits its creator's old set and is caught by the next.
const PASSES: usize = 8;

/// A process this session placed: its start time (clock ticks since boot: a reused pid is
/// not it) and the CPU sets its threads had before (`main`: its main thread's, for
/// threads that appear later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placed {
    start_ticks: u64,
    main: Vec<u32>,
    originals: BTreeMap<u32, Vec<u32>>,
}

/// What the journal keeps of a placement: `START TID=CPUS TID=CPUS …`.
fn encode(p: &Placed) -> String {
    let mut s = p.start_ticks.to_string();
    for (tid, cpus) in &p.originals {
        s.push_str(&format!(" {tid}={}", cpulist::format(cpus)));
    }
    s
}

/// [`encode`]'s text back, with the main thread's set from the entry's `original`.
fn decode(restore: &str, main: &str) -> Option<Placed> {
    let mut words = restore.split_whitespace();
    let start_ticks = words.next()?.parse().ok()?;
    let mut originals = BTreeMap::new();
    for w in words {
        let (tid, cpus) = w.split_once('=')?;
        originals.insert(tid.parse().ok()?, cpulist::parse(cpus).ok()?);
    }
    Some(Placed {
        start_ticks,
        main: cpulist::parse(main).ok()?,
        originals,
    })
}

/// Process `pid` as /proc says now: its start time, if it is a user process that is
/// alive (not a zombie, not a kernel thread, not this llctop).
fn user_process(pid: u32) -> Result<u64, String> {
    use procfs_core::FromRead as _;
    if pid == std::process::id() {
        return Err("llctop itself".into());
    }
    let st = procfs_core::process::Stat::from_file(format!("/proc/{pid}/stat"))
        .map_err(|_| "no such process".to_string())?;
    if matches!(st.state, 'Z' | 'X') {
        return Err("it has exited".into());
    }
    if st.flags & PF_KTHREAD != 0 {
        return Err("a kernel thread (its CPUs are the kernel's to set)".into());
    }
    Ok(st.starttime)
}

/// Whether running process `pid` may be placed (checked before an experiment writes
/// anything; checked again at its first placement): alive, a user process, not llctop.
pub fn check_process(pid: u32) -> Result<(), String> {
    user_process(pid)
        .map(|_| ())
        .map_err(|why| format!("{}: {why}", id_of(pid)))
}

/// Whether process `pid` is still the one that started at `start_ticks`.
fn same_process(pid: u32, start_ticks: u64) -> bool {
    user_process(pid).is_ok_and(|t| t == start_ticks)
}

/// The threads of process `pid` (none once it is gone).
fn threads(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Set every thread of `pid` to the CPUs `cpus_of(tid)` gives, in passes until one finds
/// no thread it has not set; each set read back. A thread that ended meanwhile is no
/// error. Returns the threads set.
fn set_threads(pid: u32, cpus_of: impl Fn(u32) -> Vec<u32>) -> Result<usize, KnobError> {
    let path = PathBuf::from(format!("/proc/{pid}/task"));
    let mut done = std::collections::BTreeSet::new();
    for _ in 0..PASSES {
        let mut new = 0;
        for tid in threads(pid) {
            if !done.insert(tid) {
                continue;
            }
            new += 1;
            let cpus = cpus_of(tid);
            let mask = CpuMask::of(&cpus).map_err(KnobError::Refused)?;
            let gone = |e: &std::io::Error| e.raw_os_error() == Some(libc::ESRCH);
            match mask.apply(tid as i32) {
                Ok(()) => {}
                Err(e) if gone(&e) => continue,
                Err(e) => {
                    return Err(KnobError::Write {
                        path: path.join(tid.to_string()),
                        written: format!("sched_setaffinity {}", cpulist::format(&cpus)),
                        cause: e.to_string(),
                    });
                }
            }
            match CpuMask::of_thread(tid as i32) {
                Ok(m) if m.cpus() == cpus => {}
                Ok(m) => {
                    return Err(KnobError::ReadBack {
                        path: path.join(tid.to_string()),
                        wrote: cpulist::format(&cpus),
                        read: cpulist::format(&m.cpus()),
                    });
                }
                Err(e) if gone(&e) => {}
                Err(e) => {
                    return Err(KnobError::ReadBack {
                        path: path.join(tid.to_string()),
                        wrote: cpulist::format(&cpus),
                        read: e.to_string(),
                    });
                }
            }
        }
        if new == 0 {
            break;
        }
    }
    Ok(done.len())
}

impl Session {
    /// Put every thread of running process `pid` on `cpus` (journaled with each thread's
    /// own set before its first change). Returns the threads placed.
    pub fn affinity_place(&mut self, pid: u32, cpus: &[u32]) -> Result<usize, KnobError> {
        let id = id_of(pid);
        if self.opts.read_only {
            return Err(KnobError::ReadOnlySession { id });
        }
        match self.placed.get(&pid) {
            Some(p) if !same_process(pid, p.start_ticks) => {
                return Err(KnobError::Refused(format!(
                    "{id}: the process has exited since llctop placed it"
                )));
            }
            Some(_) => {}
            None => {
                let start_ticks =
                    user_process(pid).map_err(|why| KnobError::Refused(format!("{id}: {why}")))?;
                let originals: BTreeMap<u32, Vec<u32>> = threads(pid)
                    .into_iter()
                    .filter_map(|t| Some((t, CpuMask::of_thread(t as i32).ok()?.cpus())))
                    .collect();
                let main = originals.get(&pid).cloned().ok_or_else(|| {
                    KnobError::Refused(format!("{id}: its main thread's CPUs could not be read"))
                })?;
                let placed = Placed {
                    start_ticks,
                    main,
                    originals,
                };
                self.owners.acquire(&live(), &id).map_err(KnobError::Busy)?;
                let recorded = self.journal.record(Entry {
                    root: live(),
                    id: id.clone(),
                    path: PathBuf::from(format!("/proc/{pid}")),
                    original: cpulist::format(&placed.main),
                    restore_bytes: encode(&placed),
                    changed_unix_ns: crate::clock::unix_ns(),
                    pid: std::process::id(),
                    kept: false,
                });
                if let Err(e) = recorded {
                    self.owners.release(&live(), &id);
                    return Err(e.into());
                }
                self.placed.insert(pid, placed);
            }
        }
        set_threads(pid, |_| cpus.to_vec())
    }

    /// Put process `pid`'s threads back on the sets they had before this session placed
    /// them (the `off` arm); its journal entry goes. A process gone since has nothing to
    /// put back. Returns the threads put back (`None`: it was not placed).
    pub fn affinity_restore(&mut self, pid: u32) -> Result<Option<usize>, KnobError> {
        let Some(p) = self.placed.get(&pid).cloned() else {
            return Ok(None);
        };
        let n = if same_process(pid, p.start_ticks) {
            set_threads(pid, |tid| p.originals.get(&tid).unwrap_or(&p.main).clone())?
        } else {
            0
        };
        self.placed.remove(&pid);
        let id = id_of(pid);
        self.journal.remove(&live(), &id)?;
        self.owners.release(&live(), &id);
        Ok(Some(n))
    }

    /// The session ends: every process it placed put back.
    pub(super) fn affinity_finish(&mut self) -> (Vec<String>, Vec<KnobError>) {
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        let pids: Vec<u32> = self.placed.keys().copied().collect();
        for pid in pids {
            match self.affinity_restore(pid) {
                Ok(n) => ok.push(format!(
                    "{}: back on its own CPUs ({} threads)",
                    id_of(pid),
                    n.unwrap_or(0)
                )),
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    }

    /// A journal entry a killed run left (`llctop knobs restore`, the next run): the
    /// process's threads back on their own sets — if it is still the process that was
    /// placed (its start time); a pid that names another process now is left alone.
    pub(super) fn affinity_restore_entry(&mut self, e: &Entry) -> Result<(), KnobError> {
        let pid: u32 =
            e.id.strip_prefix(PREFIX)
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| KnobError::Refused(format!("{}: not a placement", e.id)))?;
        let expect = PathBuf::from(format!("/proc/{pid}"));
        if e.path != expect {
            return Err(KnobError::Refused(format!(
                "{}: journal path {} is not {}",
                e.id,
                e.path.display(),
                expect.display()
            )));
        }
        let p = decode(&e.restore_bytes, &e.original).ok_or_else(|| {
            KnobError::Refused(format!("{}: the journal's entry cannot be read", e.id))
        })?;
        if same_process(pid, p.start_ticks) {
            set_threads(pid, |tid| p.originals.get(&tid).unwrap_or(&p.main).clone())?;
        } else {
            self.notes.push(format!(
                "{}: the process llctop placed has exited; nothing to put back",
                e.id
            ));
        }
        self.journal.remove(&live(), &e.id)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_the_journals_text_round_trip() {
        assert_eq!(id_of(42), "affinity.42");
        assert!(is_affinity_id("affinity.42"));
        assert!(!is_affinity_id("affinity.") && !is_affinity_id("affinity.4x"));
        assert!(!is_affinity_id("numa_balancing"));
        let p = Placed {
            start_ticks: 900,
            main: vec![0, 1, 2, 3],
            originals: [(42, vec![0, 1, 2, 3]), (43, vec![2])].into(),
        };
        assert_eq!(encode(&p), "900 42=0-3 43=2");
        assert_eq!(decode(&encode(&p), "0-3"), Some(p));
        assert_eq!(decode("x 42=0", "0"), None);
        assert_eq!(decode("1 42", "0"), None);
        assert_eq!(decode("1 42=0-99999999", "0"), None, "a hostile list");
    }

    #[test]
    fn only_a_live_user_process_can_be_placed() {
        assert!(user_process(std::process::id()).is_err(), "llctop itself");
        assert!(user_process(u32::MAX).is_err(), "none");
        // kthreadd (pid 2) is a kernel thread wherever /proc is the kernel's.
        if std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd") {
            let why = user_process(2).unwrap_err();
            assert!(why.contains("kernel thread"), "{why}");
        }
    }
}
