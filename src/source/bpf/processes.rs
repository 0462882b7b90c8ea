//! The BPF source's per-process map entries over time: exited processes forgotten once
//! counted (the exit hook's reports, a `kill(tgid, 0)` sweep for the rest), exited rows
//! named as the hook saw them, and the maps filled as a busy machine's for the scale
//! benchmark.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use libbpf_rs::{MapCore, MapFlags};

use super::BpfSource;
use super::layout::{self, types};
use super::read::{self, Cumulative};
use crate::snapshot::ProcessStats;

/// Reads between two sweeps for exited processes the exit hook could not report (its
/// map full): each sweep checks the unchanged, unheld processes with `kill(tgid, 0)`.
pub(super) const SWEEP_EVERY: u64 = 64;

impl BpfSource {
    /// Benchmark support (examples/scale_bench.rs): store processes `first..first + n`
    /// in the per-process maps as a busy machine's would be, each on `llcs_each` LLCs
    /// with `runtime_ns` of runtime (and a wait and a migration) on each. Real map
    /// updates, one `bpf()` call per entry; the maps' limits apply.
    pub fn fill_processes(
        &self,
        first: u32,
        n: u32,
        llcs_each: u32,
        runtime_ns: u64,
    ) -> Result<(), libbpf_rs::Error> {
        let maps = &self.skel.maps;
        for tgid in first..first.saturating_add(n) {
            let stat = types::proc_stat { preferred_llc: -1 };
            maps.proc_stats
                .update(&tgid.to_ne_bytes(), layout::bytes_of(&stat), MapFlags::ANY)?;
            for i in 0..llcs_each.min(self.nr_llc as u32) {
                let key = types::proc_llc_key {
                    tgid,
                    llc: (tgid + i) % self.nr_llc as u32,
                };
                let mut val = types::proc_llc_val::default();
                val.c.runtime_ns = runtime_ns;
                val.c.wait_ns = runtime_ns / 10;
                val.c.mig_dist[0] = runtime_ns / 1_000_000;
                maps.proc_llc.update(
                    layout::bytes_of(&key),
                    layout::bytes_of(&val),
                    MapFlags::ANY,
                )?;
            }
        }
        Ok(())
    }

    /// Processes forgotten since attach (exited, counted, their map entries deleted).
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// The processes with entries in the per-process map `proc_llc` now.
    pub fn processes_in_maps(&self) -> BTreeSet<u32> {
        self.skel
            .maps
            .proc_llc
            .keys()
            .filter_map(|k| Some(u32::from_ne_bytes(k.get(..4)?.try_into().ok()?)))
            .collect()
    }

    /// The processes a CPU held (in an accumulator slot, or running) at the last read.
    pub fn held(&self) -> HashSet<u32> {
        self.prev
            .as_ref()
            .map(|c| c.held.clone())
            .unwrap_or_default()
    }

    /// Delete the map entries of processes that have exited once what they did has been
    /// counted (issue "Scale": per-process state bounded by the processes alive, not by
    /// every process seen). The exit hook reports each process whose last thread exited
    /// (the `exited` map, taken at every read; a sweep every [`SWEEP_EVERY`] reads finds
    /// any it could not report, by `kill(tgid, 0)`: ESRCH). An exited process goes when,
    /// at two reads in a row, its counts did not change and no CPU held it (in an
    /// accumulator slot or running): its last slice was flushed before the first of the
    /// two reads, so the entries hold everything and the deltas have counted it. Its
    /// entries gone, the next read does not see it: no row, nothing kept. The deletions
    /// are two batch calls, whatever the number of processes.
    pub(super) fn forget_exited(&mut self, prev: &Cumulative) {
        let Some(cur) = self.prev.as_ref() else {
            return;
        };
        self.reads += 1;
        let sweep = self.reads.is_multiple_of(SWEEP_EVERY);
        let mut now = HashSet::default();
        for (&tgid, p) in &cur.procs {
            if tgid == 0 || cur.held.contains(&tgid) || prev.procs.get(&tgid) != Some(p) {
                continue;
            }
            if !self.gone.contains_key(&tgid) && sweep && process_gone(tgid) {
                self.gone.insert(tgid, String::new());
            }
            if self.gone.contains_key(&tgid) {
                now.insert(tgid);
            }
        }
        let forget: Vec<u32> = now.intersection(&self.fading).copied().collect();
        let stat_keys: Vec<u8> = forget
            .iter()
            .filter(|t| cur.stat_keys.contains(t))
            .flat_map(|t| t.to_ne_bytes())
            .collect();
        let llc_keys: Vec<u8> = forget
            .iter()
            .flat_map(|&t| {
                let llcs = cur.llc_keys.get(&t).map_or(&[][..], Vec::as_slice);
                llcs.iter()
                    .flat_map(move |l| t.to_ne_bytes().into_iter().chain(l.to_ne_bytes()))
            })
            .collect();
        let maps = &self.skel.maps;
        read::delete_keys(&maps.proc_stats, &stat_keys, 4);
        read::delete_keys(&maps.proc_llc, &llc_keys, 8);
        self.forgotten += forget.len() as u64;
        self.fading = now.difference(&self.fading).copied().collect();
        self.gone
            .retain(|t, _| cur.procs.contains_key(t) && !forget.contains(t));
    }
}

/// Note the processes the exit hook reported in `gone`, and mark the rows of every
/// exited process, named as the exit hook saw them.
pub(super) fn name_exited(
    gone: &mut HashMap<u32, String>,
    exited: &[(u32, String)],
    rows: &mut [ProcessStats],
) {
    gone.extend(exited.iter().cloned());
    for r in rows {
        if let Some(comm) = gone.get(&r.pid) {
            r.exited = true;
            if !comm.is_empty() {
                r.comm.clone_from(comm);
            }
        }
    }
}

/// Whether process `tgid` no longer exists (signal 0 only checks; nothing is sent).
fn process_gone(tgid: u32) -> bool {
    let Ok(pid) = i32::try_from(tgid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing; it reports whether the process exists.
    let failed = unsafe { libc::kill(pid, 0) } == -1;
    failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
