//! The raw stage of the BPF source: read the program's maps into [`Cumulative`] values
//! (totals since attach), and add the slice each CPU is still running so that a task that
//! never switches out is counted too. Kernel reads only; deltas are [`super::delta`]'s.

use std::collections::{HashMap, HashSet};

use libbpf_rs::{MapCore, MapFlags};

use super::layout::{
    ACC_SLOTS, MAX_CPUS, NR_CAUSE, NR_DIST, NR_PC, PREF_UNSET, WAIT_BUCKETS, comm_string,
    pending_counts, pod, skel, types,
};
use crate::clock::mono_ns;
use crate::source::perf::GroupReader;

/// What a process did on one LLC, cumulative: runtime and raw counter values with the
/// enabled/running time to scale them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlcCum {
    pub runtime: u64,
    pub pc: [u64; NR_PC],
    pub enabled: u64,
    pub running: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcCum {
    pub wait_ns: u64,
    pub dist: [u64; NR_DIST],
    pub unclassified: u64,
    pub pref_hit: u64,
    pub pref_miss: u64,
    /// The kernel's preferred LLC as it reports it (a CPU id), -1 for none.
    pub kernel_pref: i64,
    /// The LLCs it ran on (llctop's ids, ascending) and what it did on each: a process
    /// runs on a few of a machine's LLCs, so only those are kept.
    pub llc: Vec<(u32, LlcCum)>,
}

/// A process first seen in a map other than `proc_stats` has no kernel preference.
impl Default for ProcCum {
    fn default() -> Self {
        ProcCum {
            wait_ns: 0,
            dist: [0; NR_DIST],
            unclassified: 0,
            pref_hit: 0,
            pref_miss: 0,
            kernel_pref: -1,
            llc: Vec::new(),
        }
    }
}

impl ProcCum {
    /// Add the wait, preferred-LLC hits and migrations of `c` (its runtime is per LLC:
    /// the caller's).
    fn add_counts(&mut self, c: &types::proc_counts) {
        self.wait_ns += c.wait_ns;
        self.pref_hit += c.pref_hit;
        self.pref_miss += c.pref_miss;
        for (a, b) in self.dist.iter_mut().zip(c.mig_dist) {
            *a += b;
        }
        self.unclassified += c.mig_unclassified;
    }

    /// Its figures on LLC `llc`, to add to (`None` for an LLC id beyond `nr_llc`).
    pub fn on_llc(&mut self, llc: u32, nr_llc: usize) -> Option<&mut LlcCum> {
        if llc as usize >= nr_llc {
            return None;
        }
        let i = match self.llc.binary_search_by_key(&llc, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                self.llc.insert(i, (llc, LlcCum::default()));
                i
            }
        };
        Some(&mut self.llc[i].1)
    }

    /// Its figures on LLC `llc` (zero where it never ran).
    pub fn at(&self, llc: u32) -> LlcCum {
        self.llc
            .binary_search_by_key(&llc, |e| e.0)
            .map_or_else(|_| LlcCum::default(), |i| self.llc[i].1)
    }
}

/// Take every (key, value) out of the hash map `map`: read and deleted in one batch
/// call where the kernel has them, else key by key.
fn take_entries<M: MapCore>(map: &M) -> Vec<(Vec<u8>, Vec<u8>)> {
    if let Ok(it) = map.lookup_and_delete_batch(4096, MapFlags::ANY, MapFlags::ANY) {
        let taken: Vec<_> = it.collect();
        if !taken.is_empty() {
            return taken;
        }
    }
    map.keys()
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|k| {
            let v = map.lookup_and_delete(&k).ok().flatten()?;
            Some((k, v))
        })
        .collect()
}

/// Delete `keys` (each `key_size` bytes) from the hash map `map`: in one batch call,
/// else — where the kernel lacks batches or a key had gone already, which stops a
/// batch — key by key.
pub fn delete_keys<M: MapCore>(map: &M, keys: &[u8], key_size: usize) {
    let n = keys.len() / key_size.max(1);
    if n == 0 {
        return;
    }
    if map
        .delete_batch(keys, n as u32, MapFlags::ANY, MapFlags::ANY)
        .is_ok()
    {
        return;
    }
    for k in keys.chunks_exact(key_size) {
        let _ = map.delete(k);
    }
}

/// Every entry of the per-CPU array `map` (`n` keys), each as one value per possible CPU,
/// in one `BPF_MAP_LOOKUP_BATCH` call instead of one `bpf()` call per key (issue "Scale":
/// the accumulator alone is 256 keys). libbpf-rs offers batch lookups for other maps
/// only, so this calls libbpf's own `bpf_map_lookup_batch`. `None` where the kernel
/// refuses it or answers part of the map: the caller then reads key by key.
fn percpu_array<M: MapCore>(map: &M, n: u32) -> Option<Vec<Vec<Vec<u8>>>> {
    let ncpu = libbpf_rs::num_possible_cpus().ok()?;
    let size = map.value_size() as usize;
    let stride = size.next_multiple_of(8);
    let (keys, vals) = array_batch(map, n, ncpu)?;
    let mut out = vec![Vec::new(); n as usize];
    for (i, &k) in keys.iter().enumerate() {
        let base = i * ncpu * stride;
        *out.get_mut(k as usize)? = (0..ncpu)
            .map(|c| vals[base + c * stride..base + c * stride + size].to_vec())
            .collect();
    }
    Some(out)
}

/// A plain array map created with `BPF_F_MMAPABLE`, mapped read-only into this process:
/// its values are read with no system call and no copy by the kernel.
pub struct Mapped {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    n: u32,
    size: usize,
    stride: usize,
}

impl Mapped {
    /// Map the first `n` values of `map` (`None` where the kernel refuses: the caller
    /// reads it with batch calls instead).
    pub fn new<M: MapCore>(map: &M, n: u32) -> Option<Mapped> {
        use std::os::fd::AsRawFd;
        let size = map.value_size() as usize;
        let stride = size.next_multiple_of(8);
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        let len = (n as usize * stride).next_multiple_of(page.max(1));
        // SAFETY: a read-only shared mapping of the map's fd, which the kernel sizes and
        // checks; the result is checked for MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        Some(Mapped {
            ptr: std::ptr::NonNull::new(ptr.cast())?,
            len,
            n,
            size,
            stride,
        })
    }

    /// Every (key, value), each copied out of the mapping (the program writes it
    /// meanwhile, as it does during a batch copy) and passed to `each`.
    fn each(&self, mut each: impl FnMut(u32, &[u8])) {
        let mut buf = vec![0u8; self.size];
        for i in 0..self.n {
            // SAFETY: key i < n lies within the mapping (n × stride bytes, mapped in
            // `new`); volatile reads, since the program may write it meanwhile.
            unsafe {
                let src = self.ptr.as_ptr().add(i as usize * self.stride);
                for (j, b) in buf.iter_mut().enumerate() {
                    *b = std::ptr::read_volatile(src.add(j));
                }
            }
            each(i, &buf);
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Every (key, value) of the plain array `map` (`n` keys), each passed to `each`: one
/// batch call into a flat buffer (no allocation per entry: a 256-CPU machine has 65,536
/// accumulator slots), else one lookup per key.
fn array_each<M: MapCore>(map: &M, n: u32, mut each: impl FnMut(u32, &[u8])) {
    let size = map.value_size() as usize;
    let stride = size.next_multiple_of(8);
    if let Some((keys, vals)) = array_batch(map, n, 1) {
        for (&k, v) in keys.iter().zip(vals.chunks_exact(stride)) {
            if let Some(v) = v.get(..size) {
                each(k, v);
            }
        }
        return;
    }
    for i in 0..n {
        if let Ok(Some(v)) = map.lookup(&i.to_ne_bytes(), MapFlags::ANY) {
            each(i, &v);
        }
    }
}

/// The keys and values of the array `map` (`n` keys) from one `BPF_MAP_LOOKUP_BATCH`
/// call: `copies` values per key (the possible CPUs for a per-CPU array, 1 for a plain
/// one), each the value size rounded up to 8 bytes, as the kernel writes them.
fn array_batch<M: MapCore>(map: &M, n: u32, copies: usize) -> Option<(Vec<u32>, Vec<u8>)> {
    use std::os::fd::AsRawFd;
    let stride = (map.value_size() as usize).next_multiple_of(8);
    let mut keys = vec![0u32; n as usize];
    let mut vals = vec![0u8; n as usize * copies * stride];
    let mut count = n;
    let mut next: u32 = 0;
    let opts = libbpf_rs::libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    // SAFETY: the buffers hold `count` keys and `count` × `copies` values of the map's
    // value size rounded up to 8 bytes, as the kernel writes them; the batch token is a
    // u32 (the array's key); the fd is the map's, alive for the call.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_map_lookup_batch(
            map.as_fd().as_raw_fd(),
            std::ptr::null_mut(),
            (&raw mut next).cast(),
            keys.as_mut_ptr().cast(),
            vals.as_mut_ptr().cast(),
            &mut count,
            &opts,
        )
    };
    // The whole array in one call: ENOENT says there is nothing after it.
    if (ret != 0 && ret != -libc::ENOENT) || count != n {
        return None;
    }
    Some((keys, vals))
}

/// The per-CPU values of key `i` of `map`: from a batch read when there is one, else
/// by a lookup of its own.
fn percpu_at<M: MapCore>(map: &M, batch: Option<&[Vec<Vec<u8>>]>, i: u32) -> Option<Vec<Vec<u8>>> {
    match batch {
        Some(b) => b.get(i as usize).cloned(),
        None => map
            .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten(),
    }
}

/// Every (key, value) of the hash map `map`, each passed to `each`: read with
/// `BPF_MAP_LOOKUP_BATCH` into two flat buffers, [`BATCH`] entries per call, with no
/// allocation per entry (libbpf-rs's batch iterator makes two per entry: 50,000 entries
/// are read each interval on a busy machine). Where the kernel refuses batch lookups,
/// key by key. A batch refused after the first (a map changed under the walk so that a
/// bucket outgrew a batch) ends the walk: those entries are counted at the next read.
fn hash_each<M: MapCore>(map: &M, mut each: impl FnMut(&[u8], &[u8])) {
    use std::os::fd::AsRawFd;
    const BATCH: usize = 4096;
    let (ks, vs) = (map.key_size() as usize, map.value_size() as usize);
    let mut keys = vec![0u8; ks * BATCH];
    let mut vals = vec![0u8; vs * BATCH];
    // The batch token of a hash map is a bucket index (at least 4 bytes).
    let mut tok_in = vec![0u8; ks.max(4)];
    let mut tok_out = vec![0u8; ks.max(4)];
    let opts = libbpf_rs::libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    let mut first = true;
    loop {
        let mut count = BATCH as u32;
        // SAFETY: the buffers hold BATCH keys and BATCH values of the map's sizes and a
        // token of the size the kernel writes for hash maps; the fd is the map's.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_map_lookup_batch(
                map.as_fd().as_raw_fd(),
                if first {
                    std::ptr::null_mut()
                } else {
                    tok_in.as_mut_ptr().cast()
                },
                tok_out.as_mut_ptr().cast(),
                keys.as_mut_ptr().cast(),
                vals.as_mut_ptr().cast(),
                &mut count,
                &opts,
            )
        };
        if ret != 0 && ret != -libc::ENOENT {
            if first {
                for k in map.keys() {
                    if let Ok(Some(v)) = map.lookup(&k, MapFlags::ANY) {
                        each(&k, &v);
                    }
                }
            }
            return;
        }
        let n = (count as usize).min(BATCH);
        for (k, v) in keys.chunks_exact(ks).zip(vals.chunks_exact(vs)).take(n) {
            each(k, v);
        }
        if ret == -libc::ENOENT {
            return;
        }
        tok_in.copy_from_slice(&tok_out);
        first = false;
    }
}

/// Every counter of the program, cumulative since attach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cumulative {
    pub switches: Vec<u64>,
    pub rq_wait: Vec<u64>,
    pub hist: Vec<[u64; WAIT_BUCKETS]>,
    pub mig_in: Vec<u64>,
    pub mig_out: Vec<u64>,
    pub dist: [u64; NR_DIST],
    pub cause: [u64; NR_CAUSE],
    pub unclassified: u64,
    pub dropped: u64,
    /// Per-process updates the program could not store (a map full).
    pub proc_dropped: u64,
    /// `matrix[from * nr_llc + to]`.
    pub matrix: Vec<u64>,
    pub procs: HashMap<u32, ProcCum>,
    /// Each process's `proc_llc` keys (the LLCs it has an entry for).
    pub llc_keys: HashMap<u32, Vec<u32>>,
    /// The processes with a `proc_stats` entry.
    pub stat_keys: HashSet<u32>,
    /// Processes whose last thread exited since the previous read, with their names
    /// (taken out of the `exited` map: each is reported once).
    pub exited: Vec<(u32, String)>,
    /// Processes a CPU still holds counts for (in an accumulator slot) or is running at
    /// this read: their entries may still change.
    pub held: HashSet<u32>,
    /// Whether the kernel reports `p->preferred_llc` (v7.2+ cache-aware scheduling).
    pub kernel_preferred: bool,
}

impl Cumulative {
    pub fn zeroed(nr_cpus: usize, nr_llc: usize) -> Self {
        Cumulative {
            switches: vec![0; nr_cpus],
            rq_wait: vec![0; nr_cpus],
            hist: vec![[0; WAIT_BUCKETS]; nr_cpus],
            mig_in: vec![0; nr_cpus],
            mig_out: vec![0; nr_cpus],
            matrix: vec![0; nr_llc * nr_llc],
            ..Cumulative::default()
        }
    }
}

/// The slice still running on a CPU when the maps are read, and the runtime the CPU
/// accumulated for its process and has not yet flushed to `proc_llc`.
struct Inflight {
    cpu: u32,
    tgid: u32,
    ns: u64,
    /// (tgid, runtime) of the CPU's accumulator slots.
    acc_runtime: Vec<(u32, u64)>,
    /// Counter values and enabled/running at the slice start (`None`: no baseline).
    pc_start: Option<([u64; NR_PC], u64, u64)>,
}

/// Read every map of `skel` for `nr_cpus` CPUs and `nr_llc` LLCs, adding each CPU's
/// running slice (counters read now through `readers`, when attribution is on).
pub fn read(
    skel: &skel::LlctopSkel<'static>,
    nr_cpus: usize,
    nr_llc: usize,
    readers: &[GroupReader],
    acc: Option<&Mapped>,
) -> Cumulative {
    let n = nr_cpus;
    let mut c = Cumulative::zeroed(n, nr_llc);
    let maps = &skel.maps;
    // The processes' completed slices first, then each CPU's running slice: a slice that
    // ends between the two reads is then missed once (and counted at the next read),
    // never counted twice — which would make the next read's total go backwards.
    hash_each(&maps.proc_stats, |key, bytes| {
        let tgid = pod::<u32>(key);
        let s: types::proc_stat = pod(bytes);
        c.stat_keys.insert(tgid);
        c.procs.entry(tgid).or_default().kernel_pref = s.preferred_llc;
    });
    hash_each(&maps.proc_llc, |key, bytes| {
        let k: types::proc_llc_key = pod(key);
        let v: types::proc_llc_val = pod(bytes);
        c.llc_keys.entry(k.tgid).or_default().push(k.llc);
        let p = c.procs.entry(k.tgid).or_default();
        p.add_counts(&v.c);
        if let Some(l) = p.on_llc(k.llc, nr_llc) {
            l.runtime += v.c.runtime_ns;
            for (a, b) in l.pc.iter_mut().zip(v.pc) {
                *a += b;
            }
            l.enabled += v.pc_enabled;
            l.running += v.pc_running;
        }
    });
    // Then what the CPUs' accumulator slots hold unflushed (a slot flushed since
    // proc_llc was read is missed once, never counted twice), and only then the running
    // slices (a slice that completes into a slot after the slots were read is counted
    // once, as running).
    // CPU c's slots are keys [c × ACC_SLOTS, (c + 1) × ACC_SLOTS) of one plain array.
    let mut acc_runtime: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut slot = |i: u32, bytes: &[u8]| {
        let a: types::acc_slot = pod(bytes);
        if a.tgid == 0 {
            return;
        }
        c.held.insert(a.tgid);
        c.procs.entry(a.tgid).or_default().add_counts(&a.c);
        if a.c.runtime_ns != 0
            && let Some(cpu) = acc_runtime.get_mut(i as usize / ACC_SLOTS)
        {
            cpu.push((a.tgid, a.c.runtime_ns));
        }
    };
    match acc {
        Some(m) => m.each(&mut slot),
        None => array_each(&maps.acc, (n.min(MAX_CPUS) * ACC_SLOTS) as u32, &mut slot),
    }
    let zero = 0u32.to_ne_bytes();
    let per_cpu = maps
        .cpu_stats
        .lookup_percpu(&zero, MapFlags::ANY)
        .ok()
        .flatten()
        .unwrap_or_default();
    let now = mono_ns();
    let mut inflight: Vec<Inflight> = Vec::new();
    for (cpu, bytes) in per_cpu.iter().enumerate() {
        let s: types::cpu_stat = pod(bytes);
        if cpu < n {
            c.switches[cpu] = s.switches;
            c.rq_wait[cpu] = s.rq_wait_ns;
            c.hist[cpu] = s.wait_hist;
        }
        for (a, b) in c.dist.iter_mut().zip(s.mig_dist) {
            *a += b;
        }
        for (a, b) in c.cause.iter_mut().zip(s.mig_cause) {
            *a += b;
        }
        c.unclassified += s.mig_unclassified;
        c.dropped += s.events_dropped;
        c.proc_dropped += s.proc_dropped;
        if s.curr_pid != 0 {
            c.held.insert(s.curr_tgid);
            // What its switch-in found, still pending on this CPU (read after the
            // slots it moves into: missed once at worst, never counted twice).
            let p = c.procs.entry(s.curr_tgid).or_default();
            p.add_counts(&pending_counts(&s));
            if s.curr_pref != PREF_UNSET {
                p.kernel_pref = i64::from(s.curr_pref);
            }
        }
        inflight.push(Inflight {
            cpu: cpu as u32,
            tgid: if s.curr_pid != 0 { s.curr_tgid } else { 0 },
            ns: running_ns(&s, now),
            acc_runtime: acc_runtime
                .get_mut(cpu)
                .map(std::mem::take)
                .unwrap_or_default(),
            pc_start: (s.pc_valid != 0).then_some((
                s.pc_last,
                s.pc_last_enabled,
                s.pc_last_running,
            )),
        });
    }
    // Right after the classes: the matrix and the classes come from two maps read at two
    // moments, and the moves made in between show in one and not yet in the other.
    // Both are per-CPU copies (each CPU counts the moves it made): summed here.
    let matrix = percpu_array(&maps.llc_matrix, c.matrix.len() as u32);
    for i in 0..c.matrix.len() as u32 {
        if let Some(vals) = percpu_at(&maps.llc_matrix, matrix.as_deref(), i) {
            c.matrix[i as usize] = vals.iter().map(|b| pod::<u64>(b)).sum();
        }
    }
    let mig = percpu_array(&maps.cpu_mig, n as u32);
    for cpu in 0..n as u32 {
        if let Some(vals) = percpu_at(&maps.cpu_mig, mig.as_deref(), cpu) {
            for b in &vals {
                let m: types::cpu_mig = pod(b);
                c.mig_in[cpu as usize] += m.r#in;
                c.mig_out[cpu as usize] += m.out;
            }
        }
    }
    c.exited = take_entries(&maps.exited)
        .into_iter()
        .map(|(k, v)| {
            let e: types::proc_exit = pod(&v);
            (pod::<u32>(&k), comm_string(&e.comm))
        })
        .collect();
    c.kernel_preferred = maps
        .bss_data
        .as_ref()
        .is_some_and(|b| b.kernel_preferred_llc != 0);
    if let Some(ro) = maps.rodata_data.as_ref() {
        add_inflight(&mut c, inflight, &ro.topo, nr_llc, readers);
    }
    c
}

/// How long the slice running on a CPU has run at `now` (CLOCK_MONOTONIC). The slice
/// start is on the run queue's clock when the program paired that clock with
/// CLOCK_MONOTONIC (`cal_clock`, `cal_mono`), else on CLOCK_MONOTONIC itself.
fn running_ns(s: &types::cpu_stat, now: u64) -> u64 {
    if s.curr_pid == 0 || s.last_switch_ns == 0 {
        return 0;
    }
    let now_there = if s.cal_mono != 0 {
        (i128::from(now) - i128::from(s.cal_mono) + i128::from(s.cal_clock)).max(0) as u64
    } else {
        now
    };
    now_there.saturating_sub(s.last_switch_ns)
}

/// Add each CPU's running slice to its process on that CPU's LLC: its runtime so far
/// and, with attribution, the counters since the slice began (read now from the same
/// counter group).
fn add_inflight(
    c: &mut Cumulative,
    inflight: Vec<Inflight>,
    topo: &[types::cpu_topo],
    nr_llc: usize,
    readers: &[GroupReader],
) {
    for f in inflight {
        let Some(t) = topo.get(f.cpu as usize).filter(|t| t.valid != 0) else {
            continue;
        };
        let counters = f.pc_start.and_then(|(start, en, run)| {
            let r = readers.iter().find(|r| r.cpu == f.cpu)?.read().ok()?;
            let mut pc = [0u64; NR_PC];
            for (slot, v) in &r.values {
                pc[slot.index()] = v.saturating_sub(start[slot.index()]);
            }
            Some((
                pc,
                r.enabled.saturating_sub(en),
                r.running.saturating_sub(run),
            ))
        });
        for &(tgid, ns) in &f.acc_runtime {
            if let Some(l) = c.procs.entry(tgid).or_default().on_llc(t.llc, nr_llc) {
                l.runtime += ns;
            }
        }
        if f.ns == 0 && counters.is_none() {
            continue;
        }
        let Some(l) = c.procs.entry(f.tgid).or_default().on_llc(t.llc, nr_llc) else {
            continue;
        };
        l.runtime += f.ns;
        if let Some((pc, en, run)) = counters {
            for (a, b) in l.pc.iter_mut().zip(pc) {
                *a += b;
            }
            l.enabled += en;
            l.running += run;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_slice_is_measured_on_the_clock_it_started_on() {
        let mut s = types::cpu_stat {
            curr_pid: 7,
            last_switch_ns: 1_000,
            ..Default::default()
        };
        // CLOCK_MONOTONIC start (no pairing): plain difference.
        assert_eq!(running_ns(&s, 1_500), 500);
        assert_eq!(running_ns(&s, 900), 0, "never negative");
        // Run-queue clock start, paired: rq clock 1_200 was CLOCK_MONOTONIC 50_000.
        s.cal_clock = 1_200;
        s.cal_mono = 50_000;
        assert_eq!(running_ns(&s, 50_300), 500);
        assert_eq!(running_ns(&s, 0), 0);
        // Idle, or no switch seen yet.
        s.curr_pid = 0;
        assert_eq!(running_ns(&s, 50_300), 0);
        s.curr_pid = 7;
        s.last_switch_ns = 0;
        assert_eq!(running_ns(&s, 50_300), 0);
    }

    #[test]
    fn a_process_seen_first_outside_proc_stats_has_no_kernel_preference() {
        assert_eq!(ProcCum::default().kernel_pref, -1);
    }
}
