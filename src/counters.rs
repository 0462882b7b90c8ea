//! Hardware counter arithmetic, shared by the perf source and the per-LLC/node
//! aggregation: multiplexing scale, the derived metrics (IPC, miss ratio, MPKI, L3
//! misses/s), and sums over groups of CPUs. Pure functions, unit-tested with known numbers.

use crate::snapshot::{Counters, RawCounters};

/// `raw · enabled / running`, the estimate of what a multiplexed counter would have
/// counted had it run all the time. `None` when it never ran.
pub fn scale(raw: u64, enabled: u64, running: u64) -> Option<u64> {
    if running == 0 {
        return None;
    }
    if running >= enabled {
        return Some(raw);
    }
    Some(((raw as u128 * enabled as u128) / running as u128) as u64)
}

/// Scaled counters from raw ones (derived metrics not yet filled).
pub fn scaled(raw: &RawCounters) -> Counters {
    let s = |v: Option<u64>| v.and_then(|v| scale(v, raw.time_enabled_ns, raw.time_running_ns));
    Counters {
        cycles: s(raw.cycles),
        instructions: s(raw.instructions),
        cache_references: s(raw.cache_references),
        cache_misses: s(raw.cache_misses),
        llc_read_misses: s(raw.llc_read_misses),
        ..Counters::default()
    }
}

/// Fill the derived metrics from the counts of an interval of `secs` seconds.
pub fn derive(c: &mut Counters, secs: f64) {
    let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    };
    c.ipc = ratio(c.instructions, c.cycles);
    c.miss_ratio = ratio(c.cache_misses, c.cache_references);
    c.mpki = ratio(c.cache_misses, c.instructions).map(|r| r * 1000.0);
    let l3 = c.l3_misses.or(c.llc_read_misses);
    c.l3_misses_per_sec = match l3 {
        Some(m) if secs > 0.0 => Some(m as f64 / secs),
        _ => None,
    };
}

/// Sum counters over CPUs: a counter is summed over the CPUs that have it, and is `None`
/// only if none has it. `None` when no CPU has counters at all.
pub fn sum<'a>(items: impl IntoIterator<Item = &'a Counters>) -> Option<Counters> {
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (x, None) | (None, x) => x,
    };
    let mut out: Option<Counters> = None;
    for c in items {
        let o = out.get_or_insert_with(Counters::default);
        o.cycles = add(o.cycles, c.cycles);
        o.instructions = add(o.instructions, c.instructions);
        o.cache_references = add(o.cache_references, c.cache_references);
        o.cache_misses = add(o.cache_misses, c.cache_misses);
        o.llc_read_misses = add(o.llc_read_misses, c.llc_read_misses);
        o.l3_lookups = add(o.l3_lookups, c.l3_lookups);
        o.l3_misses = add(o.l3_misses, c.l3_misses);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_estimates_multiplexed_counts() {
        assert_eq!(scale(1000, 100, 100), Some(1000), "not multiplexed");
        assert_eq!(
            scale(1000, 100, 25),
            Some(4000),
            "ran a quarter of the time"
        );
        assert_eq!(scale(1000, 100, 0), None, "never scheduled on the PMU");
        assert_eq!(scale(u64::MAX / 2, 4, 2), Some(u64::MAX - 1), "no overflow");
        let raw = RawCounters {
            cycles: Some(3_000),
            instructions: Some(1_500),
            cache_misses: None,
            time_enabled_ns: 1_000,
            time_running_ns: 500,
            ..RawCounters::default()
        };
        let c = scaled(&raw);
        assert_eq!(
            (c.cycles, c.instructions, c.cache_misses),
            (Some(6_000), Some(3_000), None)
        );
    }

    #[test]
    fn derived_metrics_from_known_numbers() {
        let mut c = Counters {
            cycles: Some(2_000_000),
            instructions: Some(3_000_000),
            cache_references: Some(40_000),
            cache_misses: Some(6_000),
            llc_read_misses: Some(5_000),
            ..Counters::default()
        };
        derive(&mut c, 0.5);
        assert_eq!(c.ipc, Some(1.5));
        assert_eq!(c.miss_ratio, Some(0.15));
        assert_eq!(c.mpki, Some(2.0));
        assert_eq!(
            c.l3_misses_per_sec,
            Some(10_000.0),
            "LL read misses / 0.5 s"
        );
        c.l3_misses = Some(1_000);
        derive(&mut c, 0.5);
        assert_eq!(c.l3_misses_per_sec, Some(2_000.0), "uncore L3 misses win");
        let mut none = Counters::default();
        derive(&mut none, 1.0);
        assert_eq!((none.ipc, none.mpki), (None, None));
    }

    #[test]
    fn sums_keep_missing_counters_missing() {
        let a = Counters {
            cycles: Some(10),
            instructions: Some(20),
            ..Counters::default()
        };
        let b = Counters {
            cycles: Some(5),
            llc_read_misses: Some(7),
            ..Counters::default()
        };
        let s = sum([&a, &b]).unwrap();
        assert_eq!(
            (s.cycles, s.instructions, s.llc_read_misses),
            (Some(15), Some(20), Some(7))
        );
        assert_eq!(s.cache_misses, None);
        assert!(sum(std::iter::empty::<&Counters>()).is_none());
    }
}
