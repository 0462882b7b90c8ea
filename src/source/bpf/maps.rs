//! How the BPF source reads and empties the program's maps: batch calls
//! (`BPF_MAP_LOOKUP_BATCH`, `LOOKUP_AND_DELETE_BATCH`, `DELETE_BATCH`) into flat
//! buffers, mappings of the mmapable arrays (the accumulator slots read-only, the
//! per-process entries writable) with the bitmap of entries in use in `.bss`, and
//! key-by-key lookups where the kernel refuses a batch. What the values mean is
//! [`super::read`]'s.

use libbpf_rs::{MapCore, MapFlags};

use super::layout::{PROC_KEY_NONE, PROC_SLOTS, bytes_of, pod, skel, types};

/// Take every (key, value) out of the hash map `map`: read and deleted in one batch
/// call where the kernel has them, else key by key.
pub(super) fn take_entries<M: MapCore>(map: &M) -> Vec<(Vec<u8>, Vec<u8>)> {
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

/// Every (key, value) of `map`: batch calls where the kernel has them, else key by key.
pub fn entries<M: MapCore>(map: &M) -> Vec<(Vec<u8>, Vec<u8>)> {
    match map.lookup_batch(1024, MapFlags::ANY, MapFlags::ANY) {
        Ok(it) => it.collect(),
        Err(_) => map
            .keys()
            .filter_map(|k| Some((k.clone(), map.lookup(&k, MapFlags::ANY).ok()??)))
            .collect(),
    }
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

/// Migrations onto and away from each of `n` CPUs, `(in, out)`, summed over the copies
/// of `cpu_mig`: copy l is keys `[l × n, (l + 1) × n)` of the plain array `map`
/// (`copies × n` keys), read through its mapping `m`, else with one batch call.
pub(super) fn mig_sums<M: MapCore>(
    map: &M,
    m: Option<&Mapped>,
    copies: usize,
    n: usize,
) -> Vec<(u64, u64)> {
    let mut out = vec![(0u64, 0u64); n];
    if n == 0 {
        return out;
    }
    let mut add = |i: u32, b: &[u8]| {
        let v: types::cpu_mig = pod(b);
        if let Some(o) = out.get_mut(i as usize % n) {
            o.0 += v.r#in;
            o.1 += v.out;
        }
    };
    match m {
        Some(m) => m.each(&mut add),
        None => array_each(map, (copies * n) as u32, &mut add),
    }
    out
}

/// The LLC matrix (`cells` = nr_llc² cells) summed over its copies: copy c is keys
/// `[c × cells, (c + 1) × cells)` of the plain array `map` (`n` keys), read through its
/// mapping `m`, else with one batch call.
pub(super) fn matrix_sums<M: MapCore>(
    map: &M,
    m: Option<&Mapped>,
    n: u32,
    cells: usize,
) -> Vec<u64> {
    let mut out = vec![0u64; cells];
    if cells == 0 {
        return out;
    }
    let mut add = |i: u32, b: &[u8]| {
        if let Some(o) = out.get_mut(i as usize % cells) {
            *o += pod::<u64>(b);
        }
    };
    match m {
        // Whole words, with no copy through a buffer: 262,144 keys on a 64-LLC machine.
        Some(m) => {
            for i in 0..n {
                if let (Some(w), Some(o)) = (m.word(i), out.get_mut(i as usize % cells)) {
                    *o += w.load(std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        None => array_each(map, n, &mut add),
    }
    out
}

/// A plain array map created with `BPF_F_MMAPABLE`, mapped into this process: its
/// values are read with no system call and no copy by the kernel. Read-only, or
/// writable where userspace gives entries back (`proc_vals`).
pub struct Mapped {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    n: u32,
    size: usize,
    stride: usize,
}

impl Mapped {
    /// Map the first `n` values of `map`, writable or not (`None` where the kernel
    /// refuses: the caller reads it with batch calls instead).
    pub fn new<M: MapCore>(map: &M, n: u32, writable: bool) -> Option<Mapped> {
        use std::os::fd::AsRawFd;
        let size = map.value_size() as usize;
        let stride = size.next_multiple_of(8);
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        let len = (n as usize * stride).next_multiple_of(page.max(1));
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a shared mapping of the map's fd, which the kernel sizes and checks;
        // the result is checked for MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
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

    /// Every (key, value), each copied out of the mapping and passed to `each`.
    pub(super) fn each(&self, mut each: impl FnMut(u32, &[u8])) {
        let mut buf = vec![0u8; self.size];
        for i in 0..self.n {
            self.copy(i, &mut buf);
            each(i, &buf);
        }
    }

    /// Copy value `i` (`i < n`) into `buf` (the value size): word by word, volatile,
    /// since the program may write it meanwhile (as it does during a batch copy).
    pub(super) fn copy(&self, i: u32, buf: &mut [u8]) {
        if i >= self.n || buf.len() != self.size {
            return;
        }
        // SAFETY: value i < n lies within the mapping (n × stride bytes, mapped in
        // `new`), 8-byte aligned (page-aligned base, stride a multiple of 8); the words
        // and the bytes after them stay within its `size` bytes.
        unsafe {
            let src = self.ptr.as_ptr().add(i as usize * self.stride);
            let words = self.size / 8;
            for w in 0..words {
                let v = std::ptr::read_volatile(src.add(w * 8).cast::<u64>());
                buf[w * 8..w * 8 + 8].copy_from_slice(&v.to_ne_bytes());
            }
            for (j, b) in buf.iter_mut().enumerate().skip(words * 8) {
                *b = std::ptr::read_volatile(src.add(j));
            }
        }
    }

    /// The first 8 bytes of value `i` as an atomic word (`None` beyond `n`, or for
    /// values under 8 bytes): read with acquire ordering before the rest of an entry,
    /// written by userspace only in a writable mapping.
    pub(super) fn word(&self, i: u32) -> Option<&std::sync::atomic::AtomicU64> {
        if i >= self.n || self.size < 8 {
            return None;
        }
        // SAFETY: value i lies within the mapping and is 8-byte aligned (see `copy`);
        // AtomicU64 has u64's layout, and the program accesses the word atomically or by
        // plain aligned stores; the reference lives no longer than the mapping (&self).
        Some(unsafe {
            &*self
                .ptr
                .as_ptr()
                .add(i as usize * self.stride)
                .cast::<std::sync::atomic::AtomicU64>()
        })
    }

    /// Write `bytes` (the value size) into value `i` of a writable mapping.
    pub(super) fn write(&self, i: u32, bytes: &[u8]) {
        if i >= self.n || bytes.len() != self.size {
            return;
        }
        // SAFETY: value i lies within the mapping (see `copy`), which the caller mapped
        // writable; volatile stores, the program may read it meanwhile.
        unsafe {
            let dst = self.ptr.as_ptr().add(i as usize * self.stride);
            for (j, &b) in bytes.iter().enumerate() {
                std::ptr::write_volatile(dst.add(j), b);
            }
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
pub(super) fn array_each<M: MapCore>(map: &M, n: u32, mut each: impl FnMut(u32, &[u8])) {
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

/// The program's mmapable arrays as mapped into this process (`None` for one the kernel
/// refused to map: it is read with batch calls instead).
pub struct Mappings {
    /// The per-CPU stats (entry c: CPU c's), read-only.
    pub stats: Option<Mapped>,
    /// The accumulator slots, read-only.
    pub acc: Option<Mapped>,
    /// The per-process entries (`proc_vals`), writable: userspace gives entries back.
    pub vals: Option<Mapped>,
    /// The LLC matrix, a copy per LLC, read-only.
    pub matrix: Option<Mapped>,
    /// The per-CPU migrations in and out, a copy per LLC, read-only.
    pub mig: Option<Mapped>,
}

/// `proc_vals` is mapped in steps of this many entries (608 KB), as far as the entries
/// in use reach: the kernel maps an mmapable array's pages at `mmap` (they count in the
/// resident size), and the program takes the lowest free entries.
const VALS_STEP: usize = 4096;

impl Mappings {
    /// Map `proc_vals` as far as the highest entry marked in use (in steps of
    /// [`VALS_STEP`]), mapping it again larger when the entries in use have grown past
    /// the mapping. `None` (batch reads) where the kernel refuses.
    pub(super) fn cover_vals(&mut self, skel: &skel::LlctopSkel<'static>) {
        let Some(bss) = skel.maps.bss_data.as_deref() else {
            return;
        };
        let top = used_words(bss)
            .filter(|&(_, w)| w != 0)
            .last()
            .map_or(0, |(i, w)| i * 64 + 64 - w.leading_zeros() as usize);
        let want = top.max(1).next_multiple_of(VALS_STEP).min(PROC_SLOTS);
        if self.vals.as_ref().is_some_and(|m| m.n as usize >= want) {
            return;
        }
        self.vals = None;
        self.vals = Mapped::new(&skel.maps.proc_vals, want as u32, true);
    }
}

/// The bitmap of `proc_vals` entries in use, a word at a time (volatile: the program
/// sets bits meanwhile).
fn used_words(bss: &types::bss) -> impl Iterator<Item = (usize, u64)> + '_ {
    bss.proc_used
        .iter()
        .enumerate()
        // SAFETY: a reference to a word of the mapped .bss, aligned and alive.
        .map(|(w, word)| (w, unsafe { std::ptr::read_volatile(word) }))
}

/// How many `proc_vals` entries are marked in use in the bitmap.
pub(super) fn proc_entries_marked(skel: &skel::LlctopSkel<'static>) -> usize {
    skel.maps.bss_data.as_deref().map_or(0, |bss| {
        used_words(bss).map(|(_, w)| w.count_ones() as usize).sum()
    })
}

/// Every published `proc_vals` entry, with its index: those whose bit is set in the
/// bitmap of `.bss` and whose key is not [`PROC_KEY_NONE`] (free, or being set up by the
/// program). Through the mapping, with no system call; else one batch read of the array.
pub(super) fn proc_entries(
    skel: &skel::LlctopSkel<'static>,
    vals: Option<&Mapped>,
    mut each: impl FnMut(u32, &types::proc_llc_ent),
) {
    let Some(bss) = skel.maps.bss_data.as_deref() else {
        return;
    };
    let in_use = |i: u32| {
        bss.proc_used
            .get(i as usize / 64)
            // SAFETY: as in `used_words`.
            .is_some_and(|w| unsafe { std::ptr::read_volatile(w) } >> (i % 64) & 1 != 0)
    };
    let Some(m) = vals else {
        array_each(&skel.maps.proc_vals, PROC_SLOTS as u32, |i, bytes| {
            let e: types::proc_llc_ent = pod(bytes);
            if e.key != PROC_KEY_NONE && in_use(i) {
                each(i, &e);
            }
        });
        return;
    };
    let mut buf = vec![0u8; std::mem::size_of::<types::proc_llc_ent>()];
    for (w, mut bits) in used_words(bss) {
        while bits != 0 {
            let i = (w * 64) as u32 + bits.trailing_zeros();
            bits &= bits - 1;
            // The key first (acquire: what the program wrote before publishing it is
            // seen after), then the entry. One taken beyond the mapping since it was
            // last extended is looked up.
            let e: types::proc_llc_ent = match m.word(i) {
                Some(k) => {
                    if k.load(std::sync::atomic::Ordering::Acquire) == PROC_KEY_NONE {
                        continue;
                    }
                    m.copy(i, &mut buf);
                    pod(&buf)
                }
                None => match skel.maps.proc_vals.lookup(&i.to_ne_bytes(), MapFlags::ANY) {
                    Ok(Some(b)) => pod(&b),
                    _ => continue,
                },
            };
            if e.key != PROC_KEY_NONE {
                each(i, &e);
            }
        }
    }
}

/// Give the `proc_vals` entries `idx` back (their `proc_idx` keys deleted already): each
/// key set to [`PROC_KEY_NONE`], then its bit cleared, then the claims deleted (one batch
/// call), so the program may take them again (bpf/procs.bpf.h `proc_take`).
pub(super) fn free_proc_entries(
    skel: &mut skel::LlctopSkel<'static>,
    vals: Option<&Mapped>,
    idx: &[u32],
) {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    for &i in idx {
        match vals.and_then(|m| m.word(i)) {
            Some(k) => k.store(PROC_KEY_NONE, Ordering::Release),
            None => {
                let key = i.to_ne_bytes();
                if let Ok(Some(bytes)) = skel.maps.proc_vals.lookup(&key, MapFlags::ANY) {
                    let mut e: types::proc_llc_ent = pod(&bytes);
                    e.key = PROC_KEY_NONE;
                    let _ = skel
                        .maps
                        .proc_vals
                        .update(&key, bytes_of(&e), MapFlags::ANY);
                }
            }
        }
    }
    let Some(bss) = skel.maps.bss_data.as_deref_mut() else {
        return;
    };
    for &i in idx {
        if let Some(w) = bss.proc_used.get_mut(i as usize / 64) {
            // SAFETY: a word of the mapped .bss, 8-byte aligned; AtomicU64 has u64's
            // layout and the program changes it only atomically.
            let w = unsafe { AtomicU64::from_ptr(w) };
            w.fetch_and(!(1u64 << (i % 64)), Ordering::AcqRel);
        }
    }
    if let Some(&low) = idx.iter().min() {
        // SAFETY: as above, for the hint (the program stores it plainly: a hint).
        let hint = unsafe { AtomicU32::from_ptr(&mut bss.proc_hint) };
        hint.fetch_min(low / 64, Ordering::Relaxed);
    }
    // The claims in one batch call (an exit storm is one bpf() call, not one per exit).
    let keys: Vec<u8> = idx.iter().flat_map(|i| i.to_ne_bytes()).collect();
    delete_keys(&skel.maps.proc_claim, &keys, std::mem::size_of::<u32>());
}

/// Take a free `proc_vals` entry as the program does (the lowest clear bit of the first
/// word with one, from the hint on): for userspace that fills the maps as the program
/// would (the scale benchmark). `None` when every entry is taken.
pub(super) fn take_proc_entry(skel: &mut skel::LlctopSkel<'static>) -> Option<u32> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let bss = skel.maps.bss_data.as_deref_mut()?;
    let start = bss.proc_hint as usize;
    let n = bss.proc_used.len();
    for k in 0..n {
        let w = (start + k) % n;
        // SAFETY: as in `free_proc_entries`.
        let word = unsafe { AtomicU64::from_ptr(&mut bss.proc_used[w]) };
        let used = word.load(Ordering::Acquire);
        if used == u64::MAX {
            continue;
        }
        let bit = !used & used.wrapping_add(1);
        let i = (w * 64) as u32 + bit.trailing_zeros();
        // The program's own test-and-set: a claim it cannot make when another has it.
        if skel
            .maps
            .proc_claim
            .update(&i.to_ne_bytes(), &[1], MapFlags::NO_EXIST)
            .is_ok()
        {
            word.fetch_or(bit, Ordering::AcqRel);
            bss.proc_hint = w as u32;
            return Some(i);
        }
    }
    None
}
