//! How the BPF source reads and empties the program's maps: batch calls
//! (`BPF_MAP_LOOKUP_BATCH`, `LOOKUP_AND_DELETE_BATCH`, `DELETE_BATCH`) into flat
//! buffers, a read-only mapping for the mmapable accumulator slots, and key-by-key
//! lookups where the kernel refuses a batch. What the values mean is [`super::read`]'s.

use libbpf_rs::{MapCore, MapFlags};

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
pub(super) fn percpu_array<M: MapCore>(map: &M, n: u32) -> Option<Vec<Vec<Vec<u8>>>> {
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
    pub(super) fn each(&self, mut each: impl FnMut(u32, &[u8])) {
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

/// The per-CPU values of key `i` of `map`: from a batch read when there is one, else
/// by a lookup of its own.
pub(super) fn percpu_at<M: MapCore>(
    map: &M,
    batch: Option<&[Vec<Vec<u8>>]>,
    i: u32,
) -> Option<Vec<Vec<u8>>> {
    match batch {
        Some(b) => b.get(i as usize).cloned(),
        None => map
            .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten(),
    }
}

/// Every (key, value) of the hash map `map`, each passed to `each`: read with
/// `BPF_MAP_LOOKUP_BATCH` into two flat buffers, 4,096 entries per call, with no
/// allocation per entry (libbpf-rs's batch iterator makes two per entry: 50,000 entries
/// are read each interval on a busy machine). Where the kernel refuses batch lookups,
/// key by key. A batch refused after the first (a map changed under the walk so that a
/// bucket outgrew a batch) ends the walk: those entries are counted at the next read.
pub(super) fn hash_each<M: MapCore>(map: &M, mut each: impl FnMut(&[u8], &[u8])) {
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
