//! The BPF source's per-process map entries over time: exited processes forgotten once
//! counted (the exit hook's reports, a `kill(tgid, 0)` sweep for the rest), exited rows
//! named as the hook saw them, and the maps filled as a busy machine's for the scale
//! benchmark.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use libbpf_rs::{MapCore, MapFlags};

use super::BpfSource;
use super::layout::{self, types};
use super::maps;
use super::read::{self, Cumulative};
use crate::snapshot::ProcessStats;

/// Reads between two sweeps for exited processes the exit hook could not report (its
/// map full): each sweep checks the unchanged, unheld processes with `kill(tgid, 0)`.
pub(super) const SWEEP_EVERY: u64 = 64;

impl BpfSource {
    /// Benchmark support (examples/scale_bench.rs): store processes `first..first + n`
    /// in the per-process maps as a busy machine's would be, each on `llcs_each` LLCs
    /// with `runtime_ns` of runtime (and a wait and a migration) on each. What the
    /// program does: a `proc_vals` entry taken and published for each new (process,
    /// LLC) and its index stored in `proc_idx` (one `bpf()` call), the counts written
    /// into the entry (through the mapping); the maps' limits apply.
    pub fn fill_processes(
        &mut self,
        first: u32,
        n: u32,
        llcs_each: u32,
        runtime_ns: u64,
    ) -> Result<(), libbpf_rs::Error> {
        let nr_llc = self.nr_llc as u32;
        let llcs = move |tgid: u32| (0..llcs_each.min(nr_llc)).map(move |i| (tgid + i) % nr_llc);
        for tgid in first..first.saturating_add(n) {
            // Its own entry too, as a v7.2 kernel's process with a preferred LLC has.
            for llc in llcs(tgid).chain([layout::PROC_LLC_SELF]) {
                let key = types::proc_llc_key { tgid, llc };
                let key_bytes = layout::bytes_of(&key);
                let idx = match self.skel.maps.proc_idx.lookup(key_bytes, MapFlags::ANY)? {
                    Some(b) => layout::pod::<u32>(&b),
                    None => {
                        let idx = maps::take_proc_entry(&mut self.skel)
                            .ok_or_else(|| std::io::Error::other("proc_vals is full"))?;
                        self.skel.maps.proc_idx.update(
                            key_bytes,
                            &idx.to_ne_bytes(),
                            MapFlags::NO_EXIST,
                        )?;
                        idx
                    }
                };
                let mut e = types::proc_llc_ent {
                    key: layout::PROC_KEY_NONE,
                    ..Default::default()
                };
                if llc == layout::PROC_LLC_SELF {
                    e.v.preferred_llc = i64::from(tgid % nr_llc);
                } else {
                    e.v.c.runtime_ns = runtime_ns;
                    e.v.c.wait_ns = runtime_ns / 10;
                    e.v.c.mig_dist[0] = runtime_ns / 1_000_000;
                    e.v.preferred_llc = -1;
                }
                let published = u64::from(tgid) << 32 | u64::from(llc);
                self.mapped.cover_vals(&self.skel);
                match self.mapped.vals.as_ref().filter(|m| m.word(idx).is_some()) {
                    Some(m) => {
                        m.write(idx, layout::bytes_of(&e));
                        if let Some(k) = m.word(idx) {
                            k.store(published, std::sync::atomic::Ordering::Release);
                        }
                    }
                    None => {
                        e.key = published;
                        self.skel.maps.proc_vals.update(
                            &idx.to_ne_bytes(),
                            layout::bytes_of(&e),
                            MapFlags::ANY,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Processes forgotten since attach (exited, counted, their map entries deleted).
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// The processes with entries in the per-process map `proc_idx` now.
    pub fn processes_in_maps(&self) -> BTreeSet<u32> {
        self.skel
            .maps
            .proc_idx
            .keys()
            .filter_map(|k| Some(u32::from_ne_bytes(k.get(..4)?.try_into().ok()?)))
            .collect()
    }

    /// The keys of `proc_idx` and the `proc_vals` entries marked in use, counted in that
    /// order: equal but for entries the program is setting up meanwhile (marked before
    /// their key is stored); more entries than that would be entries leaked.
    pub fn entries_in_use(&self) -> (usize, usize) {
        let keys = self.skel.maps.proc_idx.keys().count();
        (keys, maps::proc_entries_marked(&self.skel))
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
    /// are two batch calls, whatever the number of processes. Returns the processes
    /// forgotten.
    pub(super) fn forget_exited(&mut self, prev: &Cumulative) -> Vec<u32> {
        let Some(cur) = self.prev.as_ref() else {
            return Vec::new();
        };
        self.reads += 1;
        let sweep = self.reads.is_multiple_of(SWEEP_EVERY);
        let mut now = HashSet::default();
        // Between sweeps only the exited processes can go: they alone are compared.
        let candidates: Vec<(u32, &read::ProcCum)> = if sweep {
            cur.procs.iter().map(|(&t, p)| (t, p)).collect()
        } else {
            self.gone
                .keys()
                .filter_map(|t| Some((*t, cur.procs.get(t)?)))
                .collect()
        };
        for (tgid, p) in candidates {
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
        let forget_set: HashSet<u32> = forget.iter().copied().collect();
        let ents: Vec<(u32, u32, u32)> = cur
            .ents
            .iter()
            .filter(|e| forget_set.contains(&e.0))
            .copied()
            .collect();
        let llc_keys: Vec<u8> = ents
            .iter()
            .flat_map(|&(t, l, _)| t.to_ne_bytes().into_iter().chain(l.to_ne_bytes()))
            .collect();
        let idx: Vec<u32> = ents.iter().map(|e| e.2).collect();
        // The index first: the program then takes a new entry for a key it sees again,
        // never the one given back.
        read::delete_keys(&self.skel.maps.proc_idx, &llc_keys, 8);
        maps::free_proc_entries(&mut self.skel, self.mapped.vals.as_ref(), &idx);
        self.forgotten += forget.len() as u64;
        self.fading = now.difference(&self.fading).copied().collect();
        self.gone
            .retain(|t, _| cur.procs.contains_key(t) && !forget.contains(t));
        // Out of the read the next one is compared with too: that read does not carry
        // them on (read::carry), and a new process that takes the number counts from zero.
        if let Some(cur) = self.prev.as_mut() {
            for t in &forget {
                cur.procs.remove(t);
            }
        }
        forget
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
