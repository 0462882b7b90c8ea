//! Which processes share memory (issue "CAS inside", item 5: "which tasks share data"):
//! the same shared mapping — a memfd, a POSIX or SysV shm segment, anonymous shared
//! memory inherited across fork (`/dev/zero (deleted)`), a file mapped `MAP_SHARED` — in
//! two processes' `/proc/PID/maps`, both writable (memory they can exchange data
//! through; a file both map read-only is not), sized by the overlap of the byte ranges of
//! the object each one maps. Read for the busiest live process rows (at most [`MAX_PROCS`]) every
//! [`REFRESH`] rounds, the pairs carried in between; the parse and the pairing are pure
//! functions over text, unit-tested without a kernel.

use std::collections::BTreeMap;

use crate::kroot::KernelRoot;
use crate::snapshot::{SharedPair, Sharing, Snapshot};

/// Processes whose maps are read, the busiest shown rows first.
pub const MAX_PROCS: usize = 64;
/// Rounds between two reads of the maps (the pairs of the last read are carried between).
pub const REFRESH: u64 = 5;
/// Pairs kept, the most bytes first.
pub const MAX_PAIRS: usize = 64;
/// Shared mappings of one process taken into account (more are counted, not paired).
pub const MAX_MAPPINGS: usize = 4_096;

/// The object a shared mapping maps: its device and inode.
pub type Object = (u32, u64);

/// Byte ranges `[start, end)` of an object.
type Ranges = Vec<(u64, u64)>;

/// One shared mapping of a `/proc/PID/maps` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub object: Object,
    /// Its byte range in the object: `[offset, offset + length)`.
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// A device mapping (a GPU's or a driver's memory: shared with the device, not data two
/// processes exchange) — every `/dev/` path but shm and anonymous shared memory.
fn device(name: &str) -> bool {
    name.starts_with("/dev/") && !name.starts_with("/dev/shm/") && !name.starts_with("/dev/zero")
}

/// The shared writable mappings of a maps text (`start-end perms offset major:minor inode
/// path`): those whose permissions are `?w?s`, backed by an object (inode ≠ 0), not a
/// device.
/// At most [`MAX_MAPPINGS`]; a line that does not parse is skipped.
pub fn parse(text: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in text.lines() {
        if out.len() >= MAX_MAPPINGS {
            break;
        }
        let mut f = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(offset), Some(dev), Some(inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let p = perms.as_bytes();
        if p.get(1) != Some(&b'w') || p.get(3) != Some(&b's') {
            continue;
        }
        let name = f.next().unwrap_or("").trim().to_string();
        let parsed = (|| {
            let (a, b) = range.split_once('-')?;
            let len = u64::from_str_radix(b, 16)
                .ok()?
                .checked_sub(u64::from_str_radix(a, 16).ok()?)?;
            let start = u64::from_str_radix(offset, 16).ok()?;
            let (major, minor) = dev.split_once(':')?;
            let dev = (u32::from_str_radix(major, 16).ok()? << 20)
                | u32::from_str_radix(minor, 16).ok()?;
            let inode: u64 = inode.parse().ok()?;
            Some((len, start, dev, inode))
        })();
        let Some((len, start, dev, inode)) = parsed else {
            continue;
        };
        if inode == 0 || device(&name) {
            continue;
        }
        out.push(Mapping {
            object: (dev, inode),
            start,
            end: start.saturating_add(len),
            name,
        });
    }
    out
}

/// `ranges` sorted and merged (overlapping or touching ranges made one).
fn merged(mut ranges: Ranges) -> Ranges {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Bytes in both of two merged range lists.
fn overlap(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            n = n.saturating_add(hi - lo);
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    n
}

/// The pairs of processes that map a part of the same object, with the bytes both map
/// (summed over the objects), the objects, and the name of the one they share most of — the most bytes first, at most [`MAX_PAIRS`].
pub fn pairs(maps: &BTreeMap<u32, Vec<Mapping>>) -> Vec<SharedPair> {
    // object -> pid -> its ranges; and a name per object.
    let mut objects: BTreeMap<Object, BTreeMap<u32, Ranges>> = BTreeMap::new();
    let mut names: BTreeMap<Object, &str> = BTreeMap::new();
    for (&pid, ms) in maps {
        for m in ms {
            objects
                .entry(m.object)
                .or_default()
                .entry(pid)
                .or_default()
                .push((m.start, m.end));
            names.entry(m.object).or_insert(&m.name);
        }
    }
    // (a, b) -> bytes, objects, and the object they share most of (the first in object
    // order among equals) with its bytes. A hash map: with many processes sharing many
    // objects this is the stage's hot loop (examples/sharing_bench.rs).
    #[derive(Default)]
    struct Acc {
        bytes: u64,
        objects: u32,
        best: u64,
        best_object: Object,
    }
    let mut acc: rustc_hash::FxHashMap<(u32, u32), Acc> = Default::default();
    for (obj, by_pid) in objects {
        if by_pid.len() < 2 {
            continue;
        }
        let ranges: Vec<(u32, Ranges)> = by_pid
            .into_iter()
            .map(|(pid, r)| (pid, merged(r)))
            .collect();
        for (i, (a, ra)) in ranges.iter().enumerate() {
            for (b, rb) in &ranges[i + 1..] {
                let bytes = overlap(ra, rb);
                if bytes == 0 {
                    continue;
                }
                let p = acc.entry((*a, *b)).or_default();
                p.bytes = p.bytes.saturating_add(bytes);
                p.objects += 1;
                if bytes > p.best {
                    p.best = bytes;
                    p.best_object = obj;
                }
            }
        }
    }
    let mut kept: Vec<((u32, u32), Acc)> = acc.into_iter().collect();
    kept.sort_by(|x, y| y.1.bytes.cmp(&x.1.bytes).then(x.0.cmp(&y.0)));
    kept.truncate(MAX_PAIRS);
    kept.into_iter()
        .map(|((a, b), p)| SharedPair {
            a,
            b,
            bytes: p.bytes,
            objects: p.objects,
            object: names
                .get(&p.best_object)
                .map_or(String::new(), |n| n.to_string()),
        })
        .collect()
}

/// The stage: reads the maps of the busiest live rows every [`REFRESH`] rounds and puts the
/// pairs (the last read's in between) in each snapshot with process rows.
#[derive(Debug)]
pub struct SharedMemory {
    root: KernelRoot,
    round: u64,
    last: Option<Sharing>,
}

impl SharedMemory {
    pub fn new(root: KernelRoot) -> SharedMemory {
        SharedMemory {
            root,
            round: 0,
            last: None,
        }
    }

    pub fn read(&mut self, snap: &mut Snapshot) {
        let Some(t) = &snap.processes else { return };
        if self.round.is_multiple_of(REFRESH) || self.last.is_none() {
            let mut rows: Vec<_> = t.rows.iter().filter(|r| !r.exited).collect();
            rows.sort_by(|a, b| b.cpu_time_ns.cmp(&a.cpu_time_ns).then(a.pid.cmp(&b.pid)));
            let mut maps = BTreeMap::new();
            let mut read = 0u32;
            for r in rows.into_iter().take(MAX_PROCS) {
                // A process that exited meanwhile, or a kernel thread, has no maps to read.
                if let Ok(text) = self.root.read(format!("/proc/{}/maps", r.pid)) {
                    read += 1;
                    let m = parse(&text);
                    if !m.is_empty() {
                        maps.insert(r.pid, m);
                    }
                }
            }
            self.last = Some(Sharing {
                seq: snap.seq,
                processes: read,
                pairs: pairs(&maps),
            });
        }
        self.round += 1;
        snap.sharing.clone_from(&self.last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "\
55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0004000000 rw-s 00000000 00:01 2049                       /memfd:ring (deleted)
7f0004000000-7f0004100000 rw-s 00000000 00:01 3077                       /dev/zero (deleted)
7f0005000000-7f0005001000 rw-s 00000000 00:06 517                        /dev/dri/renderD128
7f0006000000-7f0006010000 r--s 00010000 fd:01 131                        /var/cache/fonts.cache
7f0006100000-7f0006110000 rw-s 00010000 fd:01 132                        /var/lib/db
7f0007000000-7f0007001000 r--p 00000000 fd:01 99                         /usr/lib/libc.so.6
garbage line
";

    #[test]
    fn shared_writable_mappings_of_objects_are_parsed_devices_read_only_and_private_ones_are_not() {
        let m = parse(PARENT);
        let names: Vec<&str> = m.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "/memfd:ring (deleted)",
                "/dev/zero (deleted)",
                "/var/lib/db"
            ]
        );
        assert_eq!(m[0].object, (1, 2049));
        assert_eq!((m[0].start, m[0].end), (0, 64 << 20));
        // fd:01 is major 253, minor 1; offset 0x10000, 64 KiB long.
        assert_eq!(m[2].object, ((253 << 20) | 1, 132));
        assert_eq!((m[2].start, m[2].end), (0x10000, 0x20000));
    }

    #[test]
    fn pairs_share_the_overlap_of_what_each_maps() {
        let child = "\
7f1000000000-7f1002000000 rw-s 01000000 00:01 2049 /memfd:ring (deleted)
7f1004000000-7f1004100000 rw-s 00000000 00:01 3077 /dev/zero (deleted)
";
        // A third maps another part of the ring than the child, and an unrelated file.
        let other = "\
7f2000000000-7f2001000000 rw-s 00000000 00:01 2049 /memfd:ring (deleted)
7f2001000000-7f2001001000 rw-s 00000000 00:01 9999 /memfd:other (deleted)
";
        let maps: BTreeMap<u32, Vec<Mapping>> = [(10, PARENT), (11, child), (12, other)]
            .into_iter()
            .map(|(p, t)| (p, parse(t)))
            .collect();
        let p = pairs(&maps);
        let got: Vec<(u32, u32, u64, u32)> =
            p.iter().map(|p| (p.a, p.b, p.bytes, p.objects)).collect();
        // 10-11: the ring's [16, 48) MiB and the 1 MiB of /dev/zero; 10-12: the ring's
        // first 16 MiB; 11-12: no byte of the ring in common.
        assert_eq!(
            got,
            [(10, 11, (32 << 20) + (1 << 20), 2), (10, 12, 16 << 20, 1)]
        );
        assert_eq!(p[0].object, "/memfd:ring (deleted)");
    }

    #[test]
    fn ranges_merge_before_they_are_compared() {
        assert_eq!(
            merged(vec![(5, 10), (0, 5), (20, 30), (8, 12)]),
            [(0, 12), (20, 30)]
        );
        assert_eq!(overlap(&[(0, 12), (20, 30)], &[(10, 25)]), 2 + 5);
        assert_eq!(overlap(&[(0, 10)], &[(10, 20)]), 0);
    }

    #[test]
    fn the_mappings_of_one_process_are_bounded() {
        let line = "7f0000000000-7f0000001000 rw-s 00000000 00:01 5 /memfd:x (deleted)\n";
        assert_eq!(parse(&line.repeat(MAX_MAPPINGS + 10)).len(), MAX_MAPPINGS);
    }
}
