//! Which processes share memory: pairs of process rows that map a part of the same shared
//! object writable (src/kstate/sharing.rs reads them from `/proc/PID/maps`).

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
