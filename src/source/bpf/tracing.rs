//! The BPF source in trace mode (`llctop trace`): the program writes every context
//! switch, waking, migration, placement, fork and exit to its trace ring buffer
//! (bpf/trace.bpf.h); [`TraceTap`] hands that buffer to a thread of the trace writer's
//! own, decoded record by record into [`TraceRecord`]s, and reads how many records each
//! CPU could not write.

use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};

use super::layout::{MAX_CPUS, cause, distance, pod, types};
use crate::snapshot::Cause;
use crate::topology::Distance;

/// The trace ring buffer's size when nothing is traced (one page: the map must exist).
pub const RING_OFF: u32 = 4096;
/// The default trace ring buffer: 32 MiB, about half a million records — a second of a
/// busy machine's switches if the writer stalled.
pub const RING_DEFAULT: u32 = 32 << 20;

/// A task name as the kernel keeps it (`comm`, NUL-padded), without an allocation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    pub fn from_c(c: &[std::ffi::c_char]) -> Comm {
        let mut b = [0u8; 16];
        for (d, &s) in b.iter_mut().zip(c) {
            *d = s as u8;
        }
        Comm(b)
    }

    pub fn named(s: &str) -> Comm {
        let mut b = [0u8; 16];
        for (d, s) in b.iter_mut().take(15).zip(s.bytes()) {
            *d = s;
        }
        Comm(b)
    }

    pub fn as_string(&self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_string())
    }
}

/// One trace record (timestamps CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, PartialEq)]
pub enum TraceRecord {
    /// A context switch on `cpu`: `prev_pid` left in `prev_state` (the sched_switch ftrace
    /// event's encoding), `next_pid` came in.
    Switch {
        ts: u64,
        cpu: u32,
        prev_pid: u32,
        prev_state: u32,
        next_pid: u32,
        next_tgid: u32,
        next_prio: i32,
        next_comm: Comm,
    },
    /// `pid` is woken (sched_waking) by a task on `cpu`, to run on `target_cpu`.
    Waking {
        ts: u64,
        cpu: u32,
        target_cpu: u32,
        pid: u32,
        tgid: u32,
        prio: i32,
        comm: Comm,
    },
    /// `pid` moved from `from` to `to` (the move made on `cpu`); `distance` None: a CPU
    /// outside the topology.
    Migrate {
        ts: u64,
        cpu: u32,
        pid: u32,
        tgid: u32,
        prio: i32,
        comm: Comm,
        from: u32,
        to: u32,
        distance: Option<Distance>,
        cause: Cause,
    },
    /// A new task placed on `to` by its parent on `cpu`: `idle_allowed` of the CPUs it may
    /// use (other than `to`) were idle then, the lowest `idle_cpu`.
    Place {
        ts: u64,
        cpu: u32,
        pid: u32,
        tgid: u32,
        comm: Comm,
        to: u32,
        nr_cpus_allowed: u32,
        idle_allowed: u32,
        idle_cpu: Option<u32>,
    },
    /// `pid` (of process `tgid`) forked by `parent_pid` (of `parent_tgid`).
    Fork {
        ts: u64,
        pid: u32,
        tgid: u32,
        parent_pid: u32,
        parent_tgid: u32,
        comm: Comm,
    },
    /// Thread `pid` exec'd a program now called `comm`.
    Exec {
        ts: u64,
        pid: u32,
        tgid: u32,
        comm: Comm,
    },
    /// Thread `pid` exits.
    Exit {
        ts: u64,
        cpu: u32,
        pid: u32,
        tgid: u32,
        comm: Comm,
    },
}

impl TraceRecord {
    pub fn ts(&self) -> u64 {
        match self {
            TraceRecord::Switch { ts, .. }
            | TraceRecord::Waking { ts, .. }
            | TraceRecord::Migrate { ts, .. }
            | TraceRecord::Place { ts, .. }
            | TraceRecord::Fork { ts, .. }
            | TraceRecord::Exec { ts, .. }
            | TraceRecord::Exit { ts, .. } => *ts,
        }
    }
}

/// Decode one trace ring-buffer record (`struct trace_rec`).
pub fn parse_trace(b: &[u8]) -> Option<TraceRecord> {
    use types::llctop_trace_kind as K;
    if b.len() < std::mem::size_of::<types::trace_rec>() {
        return None;
    }
    let r: types::trace_rec = pod(b);
    let (ts, cpu, pid, tgid) = (r.ts, u32::from(r.cpu), r.pid, r.tgid);
    let comm = Comm::from_c(&r.comm);
    Some(match K(u32::from(r.kind)) {
        K::T_SWITCH => TraceRecord::Switch {
            ts,
            cpu,
            prev_pid: r.y,
            prev_state: r.x,
            next_pid: pid,
            next_tgid: tgid,
            next_prio: r.prio,
            next_comm: comm,
        },
        K::T_WAKING => TraceRecord::Waking {
            ts,
            cpu,
            target_cpu: u32::from(r.target),
            pid,
            tgid,
            prio: r.prio,
            comm,
        },
        K::T_MIGRATE => TraceRecord::Migrate {
            ts,
            cpu,
            pid,
            tgid,
            prio: r.prio,
            comm,
            from: u32::from(r.from),
            to: u32::from(r.target),
            distance: distance(u32::from(r.dist)),
            cause: cause(u32::from(r.cause)),
        },
        K::T_PLACE => TraceRecord::Place {
            ts,
            cpu,
            pid,
            tgid,
            comm,
            to: u32::from(r.target),
            nr_cpus_allowed: r.x,
            idle_allowed: r.y,
            idle_cpu: (r.from != u16::MAX).then_some(u32::from(r.from)),
        },
        K::T_FORK => TraceRecord::Fork {
            ts,
            pid,
            tgid,
            parent_pid: r.x,
            parent_tgid: r.y,
            comm,
        },
        K::T_EXEC => TraceRecord::Exec {
            ts,
            pid,
            tgid,
            comm,
        },
        K::T_EXIT => TraceRecord::Exit {
            ts,
            cpu,
            pid,
            tgid,
            comm,
        },
        _ => return None,
    })
}

/// The trace ring buffer and the per-CPU statistics of a BPF source loaded in trace mode,
/// as handles of their own (they outlive the source's borrow, and move to a thread).
pub struct TraceTap {
    ring: MapHandle,
    stats: MapHandle,
    nr_cpus: usize,
}

impl TraceTap {
    pub(super) fn new(
        ring: &libbpf_rs::Map<'_>,
        stats: &libbpf_rs::Map<'_>,
        nr_cpus: usize,
    ) -> Result<TraceTap, libbpf_rs::Error> {
        Ok(TraceTap {
            ring: MapHandle::try_from(ring)?,
            stats: MapHandle::try_from(stats)?,
            nr_cpus: nr_cpus.min(MAX_CPUS),
        })
    }

    /// Records each CPU could not write (the ring buffer was full), by CPU.
    pub fn dropped(&self) -> Vec<u64> {
        (0..self.nr_cpus as u32)
            .map(|cpu| {
                self.stats
                    .lookup(&cpu.to_ne_bytes(), MapFlags::ANY)
                    .ok()
                    .flatten()
                    .map_or(0, |b| pod::<types::cpu_stat>(&b).trace_dropped)
            })
            .collect()
    }

    /// Drain the ring buffer: each record, decoded, to `on_record` as it is read; between
    /// reads (`poll` apart) `between` runs and says whether to go on. When it says
    /// no, what is left in the buffer is read to its end. A record that does not decode is
    /// counted and skipped (the count is returned).
    pub fn drain(
        &self,
        poll: std::time::Duration,
        mut on_record: impl FnMut(TraceRecord),
        mut between: impl FnMut() -> bool,
    ) -> Result<u64, libbpf_rs::Error> {
        let mut bad = 0u64;
        {
            let mut b = RingBufferBuilder::new();
            b.add(&self.ring, |data: &[u8]| {
                match parse_trace(data) {
                    Some(r) => on_record(r),
                    None => bad += 1,
                }
                0
            })?;
            let rb = b.build()?;
            // The program does not wake this reader (bpf/trace.bpf.h: each wakeup would
            // be more switches to trace): it reads what is there every `poll`.
            while between() {
                rb.consume()?;
                std::thread::sleep(poll);
            }
            rb.consume()?;
        }
        Ok(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u8) -> types::trace_rec {
        let mut r = types::trace_rec {
            ts: 1_000,
            pid: 42,
            tgid: 40,
            kind,
            cpu: 3,
            target: 5,
            from: 1,
            prio: 120,
            x: 7,
            y: 9,
            ..Default::default()
        };
        for (d, s) in r.comm.iter_mut().zip(b"worker\0") {
            *d = *s as std::ffi::c_char;
        }
        r
    }

    fn bytes(r: &types::trace_rec) -> Vec<u8> {
        super::super::layout::bytes_of(r).to_vec()
    }

    #[test]
    fn every_kind_decodes_with_its_fields() {
        use types::llctop_trace_kind as K;
        let s = parse_trace(&bytes(&rec(K::T_SWITCH.0 as u8))).unwrap();
        assert_eq!(
            s,
            TraceRecord::Switch {
                ts: 1_000,
                cpu: 3,
                prev_pid: 9,
                prev_state: 7,
                next_pid: 42,
                next_tgid: 40,
                next_prio: 120,
                next_comm: Comm::named("worker"),
            }
        );
        let mut m = rec(K::T_MIGRATE.0 as u8);
        m.dist = 2;
        m.cause = 1;
        let TraceRecord::Migrate {
            from,
            to,
            distance,
            cause,
            ..
        } = parse_trace(&bytes(&m)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (from, to, distance, cause),
            (1, 5, Some(Distance::CrossLlc), Cause::LoadBalance)
        );
        m.dist = 255;
        assert!(matches!(
            parse_trace(&bytes(&m)),
            Some(TraceRecord::Migrate { distance: None, .. })
        ));
        let mut p = rec(K::T_PLACE.0 as u8);
        p.from = u16::MAX;
        assert!(matches!(
            parse_trace(&bytes(&p)),
            Some(TraceRecord::Place {
                idle_cpu: None,
                nr_cpus_allowed: 7,
                idle_allowed: 9,
                to: 5,
                ..
            })
        ));
        assert!(matches!(
            parse_trace(&bytes(&rec(K::T_FORK.0 as u8))),
            Some(TraceRecord::Fork {
                parent_pid: 7,
                parent_tgid: 9,
                ..
            })
        ));
        assert!(parse_trace(&bytes(&rec(0))).is_none(), "unknown kind");
        assert!(parse_trace(&[0u8; 8]).is_none(), "short");
        assert_eq!(
            Comm::named("a-very-long-thread-name").as_string(),
            "a-very-long-thr"
        );
    }
}
