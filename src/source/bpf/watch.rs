//! New threads' waits beside an idle CPU (the program's `idle_watch`, bpf/idle.bpf.h):
//! each entry whose span is over — [`IDLE_WATCH_NS`] after the placement, and as long
//! again for a wait that reached into it to end — taken out of the map and handed to
//! the snapshot as an [`IdleWait`], once.

use libbpf_rs::MapCore;

use super::layout::{pod, types};
use super::maps::{delete_keys, entries};
use crate::snapshot::{IDLE_WATCH_NS, IdleWait};

/// The entries of `map` over by `now` (CLOCK_MONOTONIC), taken out, in placement order.
pub(super) fn take_ended<M: MapCore>(map: &M, now: u64) -> Vec<IdleWait> {
    let all = entries(map);
    let (out, keys) = ended(
        all.iter()
            .map(|(k, v)| (pod::<u32>(k), pod::<types::idle_watch>(v))),
        now,
    );
    let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_ne_bytes()).collect();
    delete_keys(map, &bytes, std::mem::size_of::<u32>());
    out
}

/// Of the (pid, entry) pairs, those over by `now` as [`IdleWait`]s (placement order) and
/// their keys.
fn ended(
    all: impl Iterator<Item = (u32, types::idle_watch)>,
    now: u64,
) -> (Vec<IdleWait>, Vec<u32>) {
    let mut out = Vec::new();
    let mut keys = Vec::new();
    for (pid, w) in all {
        if w.until_ns.saturating_add(IDLE_WATCH_NS) > now {
            continue;
        }
        keys.push(pid);
        let Ok(cpu) = u32::try_from(w.cpu) else {
            continue;
        };
        out.push(IdleWait {
            pid,
            tgid: w.tgid,
            cpu,
            placed_ns: w.placed_ns,
            wait_ns: w.wait_ns,
            waits: w.waits,
            idle_ns: w.idle_ns.min(w.wait_ns),
            partial: w.partial,
        });
    }
    out.sort_by_key(|w| (w.placed_ns, w.pid));
    (out, keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(placed: u64, wait: u64, idle: u64) -> types::idle_watch {
        types::idle_watch {
            tgid: 7,
            cpu: 3,
            placed_ns: placed,
            until_ns: placed + IDLE_WATCH_NS,
            wait_ns: wait,
            idle_ns: idle,
            waits: 2,
            partial: 0,
            ws: 0,
        }
    }

    #[test]
    fn an_entry_is_taken_once_its_span_and_the_grace_after_are_over() {
        let s = IDLE_WATCH_NS;
        let all = vec![
            (11, entry(0, 5, 4)),
            (12, entry(s, 9, 12)),
            (10, entry(0, 1, 0)),
        ];
        // At 2 s the first two placements' spans (0..1 s) and grace (..2 s) are over.
        let (out, keys) = ended(all.clone().into_iter(), 2 * s);
        assert_eq!(keys, vec![11, 10]);
        assert_eq!(
            out.iter().map(|w| (w.pid, w.idle_ns)).collect::<Vec<_>>(),
            vec![(10, 0), (11, 4)]
        );
        assert_eq!(out[0].cpu, 3);
        assert_eq!(out[0].tgid, 7);
        // Just before, none; an idle part above the wait (a torn read) is the wait.
        assert!(ended(all.clone().into_iter(), 2 * s - 1).0.is_empty());
        let (out, _) = ended(all.into_iter(), 3 * s);
        assert_eq!(out[2].idle_ns, 9);
    }
}
