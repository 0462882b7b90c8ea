//! Kernel state read both by the sources (every interval) and by the knobs session
//! (before and after it writes): which sched_ext scheduler is in charge, whether the 7.2
//! cache-aware scheduler runs, resctrl's group directories, and which processes map the
//! same shared memory. Plain reads through the one root prefix ([`crate::kroot`]); the
//! sources and the knobs sit above this module, so neither reaches into the other.

pub mod cache_aware;
pub mod resctrl;
pub mod sched_ext;
pub mod sharing;
