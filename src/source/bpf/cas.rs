//! Each process's cache group (v7.2+ cache-aware scheduling: bpf/cas.bpf.h's `cas_procs`,
//! filled by the task walk from each leader's `p->sched_cache_grp`): taken out of the map
//! after the walk, every interval, as the snapshot's [`CacheGroup`] per process.

use std::collections::HashMap;

use libbpf_rs::MapCore;

use super::layout::{pod, types};
use super::maps::{delete_keys, entries};
use crate::snapshot::CacheGroup;

/// The kernel's page size for `footprint` (pages; x86-64 and the lab's kernels: 4 KiB).
const PAGE: u64 = 4096;

/// Every entry of `map`, taken out, by tgid.
pub(super) fn take<M: MapCore>(map: &M) -> HashMap<u32, CacheGroup> {
    let all = entries(map);
    let bytes: Vec<u8> = all.iter().flat_map(|(k, _)| k.iter().copied()).collect();
    delete_keys(map, &bytes, std::mem::size_of::<u32>());
    all.iter()
        .map(|(k, v)| (pod::<u32>(k), group(&pod::<types::cas_proc>(v))))
        .collect()
}

/// The map's entry as the snapshot has it.
fn group(c: &types::cas_proc) -> CacheGroup {
    CacheGroup {
        present: c.has_grp != 0,
        nr_running_avg: c.nr_running_avg,
        footprint_bytes: c.footprint.saturating_mul(PAGE),
        // The kernel compares `(long)(epoch - grp->epoch)`: wrapping, signed (each run
        // queue keeps its own epoch: a group scanned from another CPU can be ahead). No
        // group, no scan.
        epochs_since_scan: if c.has_grp != 0 {
            c.rq_epoch.wrapping_sub(c.grp_epoch) as i64
        } else {
            0
        },
        cpu: u32::try_from(c.cpu).ok(),
        numa_node: u32::try_from(c.numa_nid).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_as_the_kernel_keeps_it() {
        let c = types::cas_proc {
            nr_running_avg: 3,
            footprint: 256,
            grp_epoch: u64::MAX,
            rq_epoch: 4,
            cpu: -1,
            numa_nid: 1,
            has_grp: 1,
            ..Default::default()
        };
        let g = group(&c);
        assert!(g.present);
        assert_eq!(g.footprint_bytes, 1 << 20);
        assert_eq!(g.epochs_since_scan, 5, "wrapping, as the kernel's long");
        assert_eq!((g.cpu, g.numa_node), (None, Some(1)));
        let none = group(&types::cas_proc {
            rq_epoch: 900,
            ..Default::default()
        });
        assert!(!none.present);
        assert_eq!(none.epochs_since_scan, 0, "no group, no scan");
    }
}
