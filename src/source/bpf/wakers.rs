//! Which process wakes which (`--wakeups`): bpf/wakers.bpf.c's counts per (waker, wakee)
//! pair of user processes, loaded as an object of its own beside the BPF source's, read
//! once per interval (one per-CPU lookup and batch reads of the pairs), turned into the
//! interval's [`Wakeups`] ([`interval`], pure), and the pairs of the processes the BPF
//! source forgot deleted (their counts taken already). Where the kernel does not give BPF
//! the address of its per-CPU preempt count, nothing is counted and [`Wakers::load`] says
//! why: a wakeup in interrupt context cannot be told from one a process made.

mod skel {
    #![allow(
        clippy::all,
        clippy::pedantic,
        non_camel_case_types,
        dead_code,
        unused_imports
    )]
    include!(concat!(env!("OUT_DIR"), "/wakers.skel.rs"));
}

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use rustc_hash::FxHashMap as HashMap;

use super::maps;
use crate::snapshot::{WakePair, Wakeups};

/// Where this kernel keeps the preempt count the program reads (bpf/wakers.bpf.c's
/// `preempt_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptCount {
    /// The per-CPU `__preempt_count` (x86-64 before v6.2 and from v6.15).
    PerCpu = 1,
    /// `pcpu_hot.preempt_count` (x86-64, v6.2 to v6.14).
    PcpuHot = 2,
}

/// The program's name (kernel statistics: scripts/overhead.sh).
pub const PROGRAM: &str = "wakers_waking";

/// Where the preempt count is, from the kernel's BTF; why it cannot be read otherwise.
pub fn preempt_count() -> Result<PreemptCount, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err(
            "llctop reads the preempt count (interrupt context or not) on x86-64 only".into(),
        );
    }
    let btf = libbpf_rs::btf::Btf::from_vmlinux()
        .map_err(|e| format!("the kernel's BTF could not be read ({e})"))?;
    let var = |name: &str| {
        btf.type_by_name::<libbpf_rs::btf::types::Var<'_>>(name)
            .is_some()
    };
    if var("__preempt_count") {
        Ok(PreemptCount::PerCpu)
    } else if var("pcpu_hot") {
        Ok(PreemptCount::PcpuHot)
    } else {
        Err("the kernel's BTF has no per-CPU preempt count (__preempt_count, pcpu_hot)".into())
    }
}

/// The loaded and attached program, and its counts at the last read.
pub struct Wakers {
    skel: skel::WakersSkel<'static>,
    prev_pairs: HashMap<(u32, u32), u64>,
    prev_stats: [u64; 4],
    /// Whether a read has been taken (the first is the baseline).
    based: bool,
}

impl Wakers {
    /// Load and attach; the error says why not, in the source state's words.
    pub fn load() -> Result<Wakers, String> {
        let from = preempt_count().map_err(|e| format!("{}: {e}", super::NO_WAKEUPS))?;
        let mut interrupted = 0;
        loop {
            match Self::try_load(from) {
                Err(e)
                    if super::load::is_interrupted(&e)
                        && interrupted < super::load::INTERRUPTED_RETRIES =>
                {
                    interrupted += 1;
                    std::thread::sleep(super::load::INTERRUPTED_PAUSE * interrupted);
                }
                Err(e) => return Err(refusal(&e.to_string())),
                Ok(skel) => {
                    return Ok(Wakers {
                        skel,
                        prev_pairs: HashMap::default(),
                        prev_stats: [0; 4],
                        based: false,
                    });
                }
            }
        }
    }

    fn try_load(from: PreemptCount) -> Result<skel::WakersSkel<'static>, libbpf_rs::Error> {
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = skel::WakersSkelBuilder::default().open(storage)?;
        if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
            ro.preempt_from = from as u32;
        }
        let mut skel = open.load()?;
        skel.attach()?;
        Ok(skel)
    }

    /// The interval's wakeups since the last read (`None` at the first: the baseline).
    pub fn read(&mut self) -> Option<Wakeups> {
        let pairs: HashMap<(u32, u32), u64> = maps::entries(&self.skel.maps.wake_pairs)
            .into_iter()
            .filter_map(|(k, v)| {
                let word = |b: &[u8], i: usize| -> Option<u32> {
                    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
                };
                let n = u64::from_ne_bytes(v.get(..8)?.try_into().ok()?);
                Some(((word(&k, 0)?, word(&k, 4)?), n))
            })
            .collect();
        let stats = self.stats();
        let out = self
            .based
            .then(|| interval(&self.prev_pairs, &pairs, self.prev_stats, stats));
        self.prev_pairs = pairs;
        self.prev_stats = stats;
        self.based = true;
        out
    }

    /// The per-CPU counts summed: paired, interrupt, other, lost.
    fn stats(&self) -> [u64; 4] {
        let mut sum = [0u64; 4];
        let Ok(Some(per_cpu)) = self
            .skel
            .maps
            .wake_stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        else {
            return sum;
        };
        for v in per_cpu {
            for (i, s) in sum.iter_mut().enumerate() {
                if let Some(b) = v.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()) {
                    *s = s.wrapping_add(u64::from_ne_bytes(b));
                }
            }
        }
        sum
    }

    /// Delete the pairs with a process of `tgids` on either side: processes that exited
    /// and whose last counts were read (the BPF source forgets them likewise). One batch
    /// call.
    pub fn forget(&mut self, tgids: &[u32]) {
        if tgids.is_empty() {
            return;
        }
        let gone: rustc_hash::FxHashSet<u32> = tgids.iter().copied().collect();
        let keys: Vec<(u32, u32)> = self
            .prev_pairs
            .keys()
            .filter(|(a, b)| gone.contains(a) || gone.contains(b))
            .copied()
            .collect();
        let bytes: Vec<u8> = keys
            .iter()
            .flat_map(|(a, b)| a.to_ne_bytes().into_iter().chain(b.to_ne_bytes()))
            .collect();
        maps::delete_keys(&self.skel.maps.wake_pairs, &bytes, 8);
        for k in keys {
            self.prev_pairs.remove(&k);
        }
    }
}

/// Why the program did not load, from libbpf's error: the refusal this kernel is known
/// for named (no address for a per-CPU symbol: kallsyms without CONFIG_KALLSYMS_ALL).
fn refusal(e: &str) -> String {
    let log = super::load::last_libbpf_lines(3);
    if log.contains("failed to find the address") || e.contains("os error 2") {
        format!(
            "{}: this kernel gives BPF no address for its per-CPU preempt count (its kallsyms lack per-CPU symbols: CONFIG_KALLSYMS_ALL off)",
            super::NO_WAKEUPS
        )
    } else {
        format!(
            "{}: the program did not load ({e}; {log})",
            super::NO_WAKEUPS
        )
    }
}

/// The interval's wakeups from two reads of the cumulative counts: each pair's growth
/// (a pair absent before counts from zero: new, or deleted and made again), the most
/// first, at most [`Wakeups::MAX_PAIRS`]; the stats' growth.
pub fn interval(
    prev: &HashMap<(u32, u32), u64>,
    cur: &HashMap<(u32, u32), u64>,
    prev_stats: [u64; 4],
    stats: [u64; 4],
) -> Wakeups {
    let mut pairs: Vec<WakePair> = cur
        .iter()
        .filter_map(|(&(waker, wakee), &n)| {
            let was = prev.get(&(waker, wakee)).copied().unwrap_or(0);
            let count = if n >= was { n - was } else { n };
            (count > 0).then_some(WakePair {
                waker,
                wakee,
                count,
            })
        })
        .collect();
    pairs.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.waker.cmp(&b.waker))
            .then(a.wakee.cmp(&b.wakee))
    });
    pairs.truncate(Wakeups::MAX_PAIRS);
    let d = |i: usize| stats[i].saturating_sub(prev_stats[i]);
    Wakeups {
        pairs,
        paired: d(0),
        interrupt: d(1),
        other: d(2),
        lost: d(3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: &[((u32, u32), u64)]) -> HashMap<(u32, u32), u64> {
        v.iter().copied().collect()
    }

    #[test]
    fn an_interval_is_each_pairs_growth_the_most_first() {
        let prev = map(&[((10, 20), 5), ((20, 10), 7), ((30, 40), 9)]);
        let cur = map(&[
            ((10, 20), 105),
            ((20, 10), 57),
            ((30, 40), 9),
            ((50, 60), 3),
        ]);
        let w = interval(&prev, &cur, [1, 2, 3, 4], [151, 12, 3, 4]);
        let got: Vec<(u32, u32, u64)> = w
            .pairs
            .iter()
            .map(|p| (p.waker, p.wakee, p.count))
            .collect();
        // Unchanged pairs are left out; a new one counts from zero.
        assert_eq!(got, [(10, 20, 100), (20, 10, 50), (50, 60, 3)]);
        assert_eq!((w.paired, w.interrupt, w.other, w.lost), (150, 10, 0, 0));
    }

    #[test]
    fn a_pair_made_again_after_its_deletion_counts_from_zero() {
        let w = interval(&map(&[((1, 2), 900)]), &map(&[((1, 2), 4)]), [0; 4], [0; 4]);
        assert_eq!(w.pairs[0].count, 4);
    }

    #[test]
    fn at_most_max_pairs_are_kept() {
        let cur: HashMap<(u32, u32), u64> = (0..200u32)
            .map(|i| ((i, i + 1), u64::from(i) + 1))
            .collect();
        let w = interval(&HashMap::default(), &cur, [0; 4], [0; 4]);
        assert_eq!(w.pairs.len(), Wakeups::MAX_PAIRS);
        assert_eq!(w.pairs[0].count, 200);
    }
}
