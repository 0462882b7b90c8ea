//! Which process wakes which (`--wakeups`): bpf/wakers.bpf.c's counts per (waker, wakee)
//! pair of user processes, and per (process, waker thread, wakee thread) within one, loaded as an object of its own beside the BPF source's, read
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
use crate::snapshot::{ThreadWake, WakePair, Wakeups};

/// A pair of processes: (waker tgid, wakee tgid).
type Pair = (u32, u32);
/// A pair of threads of one process: (tgid, waker tid, wakee tid).
type Threads = (u32, u32, u32);
/// The per-CPU counts, summed: paired, interrupt, other, lost, within.
type Stats = [u64; 5];

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
    prev_pairs: HashMap<Pair, u64>,
    prev_threads: HashMap<Threads, u64>,
    prev_stats: Stats,
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
                        prev_threads: HashMap::default(),
                        prev_stats: [0; 5],
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
        let pairs: HashMap<Pair, u64> =
            counts(&self.skel.maps.wake_pairs, |w| Some((w(0)?, w(4)?)));
        let threads: HashMap<Threads, u64> = counts(&self.skel.maps.thread_pairs, |w| {
            Some((w(0)?, w(4)?, w(8)?))
        });
        let stats = self.stats();
        let out = self.based.then(|| {
            interval(
                (&self.prev_pairs, &pairs),
                (&self.prev_threads, &threads),
                self.prev_stats,
                stats,
            )
        });
        self.prev_pairs = pairs;
        self.prev_threads = threads;
        self.prev_stats = stats;
        self.based = true;
        out
    }

    /// The per-CPU counts summed.
    fn stats(&self) -> Stats {
        let mut sum = [0u64; 5];
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
        let keys: Vec<Pair> = self
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
        let keys: Vec<Threads> = self
            .prev_threads
            .keys()
            .filter(|(p, _, _)| gone.contains(p))
            .copied()
            .collect();
        let bytes: Vec<u8> = keys
            .iter()
            .flat_map(|&(p, a, b)| [p, a, b, 0].into_iter().flat_map(u32::to_ne_bytes))
            .collect();
        maps::delete_keys(&self.skel.maps.thread_pairs, &bytes, 16);
        for k in keys {
            self.prev_threads.remove(&k);
        }
    }
}

/// A pair map's cumulative counts, each key's u32 words decoded by `key` (given a reader
/// of the word at a byte offset).
fn counts<M: MapCore, K: std::hash::Hash + Eq>(
    map: &M,
    key: impl Fn(&dyn Fn(usize) -> Option<u32>) -> Option<K>,
) -> HashMap<K, u64> {
    maps::entries(map)
        .into_iter()
        .filter_map(|(k, v)| {
            let word = |i: usize| -> Option<u32> {
                Some(u32::from_ne_bytes(k.get(i..i + 4)?.try_into().ok()?))
            };
            let n = u64::from_ne_bytes(v.get(..8)?.try_into().ok()?);
            Some((key(&word)?, n))
        })
        .collect()
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

/// Each key's growth between two reads of cumulative counts (a key absent before counts
/// from zero: new, or deleted and made again), the most first (ties by key), at most
/// [`Wakeups::MAX_PAIRS`].
fn growth<K: Copy + Ord + std::hash::Hash>(
    prev: &HashMap<K, u64>,
    cur: &HashMap<K, u64>,
) -> Vec<(K, u64)> {
    let mut out: Vec<(K, u64)> = cur
        .iter()
        .filter_map(|(k, &n)| {
            let was = prev.get(k).copied().unwrap_or(0);
            let count = if n >= was { n - was } else { n };
            (count > 0).then_some((*k, count))
        })
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(Wakeups::MAX_PAIRS);
    out
}

/// The interval's wakeups from two reads of the cumulative counts (before, now): the
/// process pairs' and the thread pairs' growth, and the stats'.
pub fn interval(
    pairs: (&HashMap<Pair, u64>, &HashMap<Pair, u64>),
    threads: (&HashMap<Threads, u64>, &HashMap<Threads, u64>),
    prev_stats: Stats,
    stats: Stats,
) -> Wakeups {
    let d = |i: usize| stats[i].saturating_sub(prev_stats[i]);
    Wakeups {
        pairs: growth(pairs.0, pairs.1)
            .into_iter()
            .map(|((waker, wakee), count)| WakePair {
                waker,
                wakee,
                count,
            })
            .collect(),
        paired: d(0),
        interrupt: d(1),
        other: d(2),
        lost: d(3),
        within: d(4),
        threads: growth(threads.0, threads.1)
            .into_iter()
            .map(|((pid, waker, wakee), count)| ThreadWake {
                pid,
                waker,
                wakee,
                count,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map<K: Copy + Eq + std::hash::Hash>(v: &[(K, u64)]) -> HashMap<K, u64> {
        v.iter().copied().collect()
    }

    fn none() -> HashMap<Threads, u64> {
        HashMap::default()
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
        let w = interval(
            (&prev, &cur),
            (&none(), &none()),
            [1, 2, 3, 4, 5],
            [151, 12, 3, 4, 5],
        );
        let got: Vec<(u32, u32, u64)> = w
            .pairs
            .iter()
            .map(|p| (p.waker, p.wakee, p.count))
            .collect();
        // Unchanged pairs are left out; a new one counts from zero.
        assert_eq!(got, [(10, 20, 100), (20, 10, 50), (50, 60, 3)]);
        assert_eq!(
            (w.paired, w.interrupt, w.other, w.lost, w.within),
            (150, 10, 0, 0, 0)
        );
        assert!(w.threads.is_empty());
    }

    #[test]
    fn thread_pairs_within_a_process_are_their_own_growth() {
        let prev = map(&[((7, 70, 71), 10), ((7, 71, 70), 10)]);
        let cur = map(&[((7, 70, 71), 410), ((7, 71, 70), 310), ((9, 90, 91), 2)]);
        let w = interval(
            (&HashMap::default(), &HashMap::default()),
            (&prev, &cur),
            [0; 5],
            [0, 0, 0, 0, 702],
        );
        let got: Vec<(u32, u32, u32, u64)> = w
            .threads
            .iter()
            .map(|t| (t.pid, t.waker, t.wakee, t.count))
            .collect();
        assert_eq!(got, [(7, 70, 71, 400), (7, 71, 70, 300), (9, 90, 91, 2)]);
        assert_eq!((w.within, w.paired), (702, 0));
    }

    #[test]
    fn a_pair_made_again_after_its_deletion_counts_from_zero() {
        let w = interval(
            (&map(&[((1, 2), 900)]), &map(&[((1, 2), 4)])),
            (&none(), &none()),
            [0; 5],
            [0; 5],
        );
        assert_eq!(w.pairs[0].count, 4);
    }

    #[test]
    fn at_most_max_pairs_are_kept() {
        let cur: HashMap<Pair, u64> = (0..200u32)
            .map(|i| ((i, i + 1), u64::from(i) + 1))
            .collect();
        let threads: HashMap<Threads, u64> = (0..200u32)
            .map(|i| ((1, i, i + 1), u64::from(i) + 1))
            .collect();
        let w = interval(
            (&HashMap::default(), &cur),
            (&none(), &threads),
            [0; 5],
            [0; 5],
        );
        assert_eq!(w.pairs.len(), Wakeups::MAX_PAIRS);
        assert_eq!(w.pairs[0].count, 200);
        assert_eq!(w.threads.len(), Wakeups::MAX_PAIRS);
        assert_eq!(w.threads[0].count, 200);
    }
}
