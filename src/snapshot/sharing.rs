//! Which processes share data: pairs of process rows that map a part of the same shared
//! object writable (src/kstate/sharing.rs reads them from `/proc/PID/maps`), and pairs of
//! processes one of which woke the other (the BPF source with `--wakeups`:
//! bpf/wakers.bpf.c).

use serde::{Deserialize, Serialize};

/// The pairs of the newest read of the maps (read every few snapshots, carried between).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sharing {
    /// The snapshot whose rows the maps were read for.
    pub seq: u64,
    /// Processes whose maps were read (the busiest live rows).
    pub processes: u32,
    /// The most bytes first.
    pub pairs: Vec<SharedPair>,
}

/// Two processes that map a part of the same shared objects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedPair {
    /// The lower pid, then the higher.
    pub a: u32,
    pub b: u32,
    /// Bytes of the objects both map (the overlap of the byte ranges each maps), summed.
    pub bytes: u64,
    /// Shared objects both map a part of, writable.
    pub objects: u32,
    /// The object they share most of, as maps names it (`/memfd:ring (deleted)`).
    pub object: String,
}

/// The interval's wakeups one user process made of another, counted on the scheduler's
/// wakeup path (sched_waking) in task context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wakeups {
    /// The pairs with the most wakeups first, at most [`Wakeups::MAX_PAIRS`].
    pub pairs: Vec<WakePair>,
    /// Wakeups counted to a pair (all of them, also those of pairs beyond `pairs`).
    pub paired: u64,
    /// Wakeups made in interrupt context (hardirq, or a softirq served on its way out):
    /// the task they interrupted is no waker, so they go to no pair.
    pub interrupt: u64,
    /// Wakeups with a kernel thread on either side (recordings before `within` existed
    /// count the wakeups between threads of one process here too).
    pub other: u64,
    /// Wakeups lost: a pair map of the program was full.
    pub lost: u64,
    /// Wakeups between threads of one process, counted to a thread pair (all of them,
    /// also those beyond `threads`).
    #[serde(default)]
    pub within: u64,
    /// The thread pairs within one process with the most wakeups first, at most
    /// [`Wakeups::MAX_PAIRS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadWake>,
}

impl Wakeups {
    /// The pairs a snapshot keeps (of processes, and of threads).
    pub const MAX_PAIRS: usize = 64;
}

/// One thread of a process waking another thread of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadWake {
    /// The process (tgid).
    pub pid: u32,
    /// The waking thread (its pid, a tid).
    pub waker: u32,
    /// The thread woken.
    pub wakee: u32,
    /// Wakeups in the interval.
    pub count: u64,
}

/// One process waking another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakePair {
    /// The process (tgid) that made the wakeups.
    pub waker: u32,
    /// The process woken.
    pub wakee: u32,
    /// Wakeups in the interval.
    pub count: u64,
}
