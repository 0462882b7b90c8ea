//! From counter readings to an interval's figures (pure): occupancy is the level read;
//! bandwidth is the difference between two consecutive valid readings of a cumulative
//! byte counter — a counter that went backwards drops the interval (counted), a reading
//! the kernel would not give (`Unavailable`, `Unassigned`, `Error`) makes the next valid
//! one a new baseline, and a difference beyond any memory's speed is dropped.

use super::parse::Value;
use crate::snapshot::{MAX_BYTES_PER_SEC, Unread};

/// A figure or why there is none.
pub type Figure = (Option<u64>, Option<Unread>);

/// Occupancy: the level itself.
pub fn level(v: Value) -> Figure {
    match v {
        Value::Bytes(b) => (Some(b), None),
        Value::Not(why) => (None, Some(why)),
    }
}

/// A cumulative counter's interval: `prev` is its last valid reading (updated here).
pub fn step(prev: &mut Option<u64>, v: Value, interval_ns: u64) -> Figure {
    let Value::Bytes(now) = v else {
        *prev = None;
        return level(v);
    };
    let Some(before) = prev.replace(now) else {
        return (None, Some(Unread::Baseline));
    };
    let Some(d) = now.checked_sub(before) else {
        return (None, Some(Unread::Reset));
    };
    // Most a counter can move in the interval (never below a second's worth, so that a
    // sliver of an interval is not judged on its own).
    let most =
        u128::from(MAX_BYTES_PER_SEC) * u128::from(interval_ns.max(1_000_000_000)) / 1_000_000_000;
    if u128::from(d) > most {
        return (None, Some(Unread::Implausible));
    }
    (Some(d), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn differences_of_valid_readings() {
        let mut p = None;
        assert_eq!(
            step(&mut p, Value::Bytes(1000), S),
            (None, Some(Unread::Baseline))
        );
        assert_eq!(step(&mut p, Value::Bytes(1500), S), (Some(500), None));
        assert_eq!(step(&mut p, Value::Bytes(1500), S), (Some(0), None));
    }

    #[test]
    fn a_counter_going_back_drops_the_interval_and_restarts_from_there() {
        let mut p = Some(5_000);
        assert_eq!(
            step(&mut p, Value::Bytes(200), S),
            (None, Some(Unread::Reset))
        );
        assert_eq!(step(&mut p, Value::Bytes(700), S), (Some(500), None));
    }

    #[test]
    fn an_unavailable_reading_makes_the_next_one_a_new_baseline() {
        let mut p = Some(100);
        assert_eq!(
            step(&mut p, Value::Not(Unread::Unavailable), S),
            (None, Some(Unread::Unavailable))
        );
        // A stale value from before is never the base (AMD's "stale baseline" bug).
        assert_eq!(
            step(&mut p, Value::Bytes(9_000_000), S),
            (None, Some(Unread::Baseline))
        );
        assert_eq!(step(&mut p, Value::Bytes(9_000_100), S), (Some(100), None));
        assert_eq!(
            step(&mut p, Value::Not(Unread::Unassigned), S),
            (None, Some(Unread::Unassigned))
        );
        assert_eq!(p, None);
    }

    #[test]
    fn a_jump_beyond_any_memory_is_dropped_not_a_rate() {
        let mut p = Some(0);
        assert_eq!(
            step(&mut p, Value::Bytes(u64::MAX), S),
            (None, Some(Unread::Implausible))
        );
        assert_eq!(step(&mut p, Value::Bytes(u64::MAX), S), (Some(0), None));
        // The bound is per second of the interval: 20 TiB in 2 s passes, 40 TiB does not.
        let mut p = Some(0);
        assert!(step(&mut p, Value::Bytes(20 << 40), 2 * S).0.is_some());
        let mut p = Some(0);
        assert_eq!(
            step(&mut p, Value::Bytes(40 << 40), 2 * S).1,
            Some(Unread::Implausible)
        );
    }

    #[test]
    fn occupancy_is_the_level_read() {
        assert_eq!(level(Value::Bytes(3 << 20)), (Some(3 << 20), None));
        assert_eq!(
            level(Value::Not(Unread::Error)),
            (None, Some(Unread::Error))
        );
    }
}
