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
/// The trace buffer's default (`--buffer`): 8 MiB, some 350,000 staged switches — seconds
/// of a busy machine's if the writer stalled. Its pages are mapped into llctop twice (the
/// ring wraps through a second mapping), so it counts twice in llctop's resident memory.
pub const RING_DEFAULT: &str = "8MiB";

/// How a trace is taken: its ring buffer's size (bytes, a power of two) and whether
/// wakings are traced (a sched_waking hook: a clock read per wakeup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceConfig {
    pub ring: u32,
    pub wakings: bool,
}

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
    /// event's encoding), `next_pid` came in. (No names: the reader knows them from the
    /// other records.) `unseen`: the kernel made it without firing sched_switch; it was
    /// found at the next switch seen on the CPU and put back at `next_pid`'s own
    /// arrival (sched_info), and `prev_state` is not known (0).
    Switch {
        ts: u64,
        cpu: u32,
        prev_pid: u32,
        prev_state: u32,
        next_pid: u32,
        next_tgid: u32,
        next_prio: i32,
        unseen: bool,
    },
    /// `pid` is woken (sched_waking) by a task on `cpu`, to run on `target_cpu`.
    Waking {
        ts: u64,
        cpu: u32,
        target_cpu: u32,
        pid: u32,
        tgid: u32,
        prio: i32,
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
    /// Thread `pid` named itself `comm`.
    Rename {
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
            | TraceRecord::Rename { ts, .. }
            | TraceRecord::Exit { ts, .. } => *ts,
        }
    }
}

/// Decode one trace ring-buffer record — a batch of switches or wakings (`struct
/// trace_batch`) or one of the rarer records (`struct trace_rec`) — into `f`. False when
/// it does not decode.
pub fn decode(b: &[u8], f: &mut impl FnMut(TraceRecord)) -> bool {
    if b.len() == std::mem::size_of::<types::trace_batch>() {
        let batch: types::trace_batch = pod(b);
        return decode_batch(&batch, f);
    }
    match parse_trace(b) {
        Some(r) => {
            f(r);
            true
        }
        None => false,
    }
}

/// A CPU's staged batches (switches, wakings) as records can be read from them: the
/// program writes a batch's kind and CPU only when it hands a full batch over, so a CPU
/// whose batch never filled (a quiet CPU, a short trace) has kind 0 in its stage — set
/// here, or its events would not decode and be lost without a count.
fn staged(st: types::trace_stage, cpu: u32) -> [types::trace_batch; 2] {
    use types::llctop_trace_batch as B;
    let (mut sw, mut wk) = (st.sw, st.wk);
    sw.kind = B::TB_SWITCH.0;
    wk.kind = B::TB_WAKING.0;
    sw.cpu = cpu;
    wk.cpu = cpu;
    [sw, wk]
}

/// The first `n` events of a batch as records.
fn decode_batch(b: &types::trace_batch, f: &mut impl FnMut(TraceRecord)) -> bool {
    use types::llctop_trace_batch as B;
    let switch = match B(b.kind) {
        B::TB_SWITCH => true,
        B::TB_WAKING => false,
        _ => return false,
    };
    let n = (b.n as usize).min(b.ev.len());
    for e in &b.ev[..n] {
        f(if switch {
            {
                let unseen = u32::from(e.state) == types::llctop_trace_state::TS_UNSEEN.0;
                TraceRecord::Switch {
                    ts: e.ts,
                    cpu: b.cpu,
                    prev_pid: e.prev_pid,
                    prev_state: if unseen { 0 } else { u32::from(e.state) },
                    next_pid: e.pid,
                    next_tgid: e.tgid,
                    next_prio: i32::from(e.prio),
                    unseen,
                }
            }
        } else {
            TraceRecord::Waking {
                ts: e.ts,
                cpu: b.cpu,
                target_cpu: e.prev_pid,
                pid: e.pid,
                tgid: e.tgid,
                prio: i32::from(e.prio),
            }
        });
    }
    true
}

/// Decode one of the rarer trace records (`struct trace_rec`).
pub fn parse_trace(b: &[u8]) -> Option<TraceRecord> {
    use types::llctop_trace_kind as K;
    if b.len() < std::mem::size_of::<types::trace_rec>() {
        return None;
    }
    let r: types::trace_rec = pod(b);
    let (ts, cpu, pid, tgid) = (r.ts, u32::from(r.cpu), r.pid, r.tgid);
    let comm = Comm::from_c(&r.comm);
    Some(match K(u32::from(r.kind)) {
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
        K::T_RENAME => TraceRecord::Rename {
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

/// The maps a trace is read from, as handles of their own (they outlive the source's
/// borrow, and move to the trace's thread): the ring buffer, the per-CPU batches, the
/// stop switch and the per-CPU statistics; and the programs that write records, for the
/// runs the kernel skipped (a program is never run nested in itself on one CPU).
pub struct TraceTap {
    ring: MapHandle,
    stage: MapHandle,
    ctl: MapHandle,
    stats: MapHandle,
    progs: Vec<std::os::fd::OwnedFd>,
    nr_cpus: usize,
}

/// The maps of a trace (`TraceTap::new`'s arguments).
pub(super) struct TraceMaps<'a> {
    pub ring: &'a libbpf_rs::Map<'a>,
    pub stage: &'a libbpf_rs::Map<'a>,
    pub ctl: &'a libbpf_rs::Map<'a>,
    pub stats: &'a libbpf_rs::Map<'a>,
}

/// How many times the kernel skipped program `fd` because it was already running on that
/// CPU (`recursion_misses` of its `bpf_prog_info`, v5.12+; 0 when it cannot be read).
fn recursion_misses(fd: std::os::fd::BorrowedFd<'_>) -> u64 {
    use libbpf_rs::libbpf_sys;
    use std::os::fd::AsRawFd;
    // SAFETY: bpf_prog_info is plain data the call fills up to `len` bytes.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: a valid program fd, a pointer to `info` and its size.
    let r = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if r == 0 { info.recursion_misses } else { 0 }
}

impl TraceTap {
    pub(super) fn new(
        maps: TraceMaps<'_>,
        progs: Vec<std::os::fd::OwnedFd>,
        nr_cpus: usize,
    ) -> Result<TraceTap, libbpf_rs::Error> {
        Ok(TraceTap {
            ring: MapHandle::try_from(maps.ring)?,
            stage: MapHandle::try_from(maps.stage)?,
            ctl: MapHandle::try_from(maps.ctl)?,
            stats: MapHandle::try_from(maps.stats)?,
            progs,
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

    /// Runs of the trace's programs the kernel skipped (nested on one CPU): each lost a
    /// record. Not per CPU: the kernel counts them per program.
    pub fn skipped(&self) -> u64 {
        use std::os::fd::AsFd;
        self.progs
            .iter()
            .map(|fd| recursion_misses(fd.as_fd()))
            .fold(0, u64::saturating_add)
    }

    /// Stop writing records (the programs check it before each).
    fn stop(&self) -> Result<(), libbpf_rs::Error> {
        self.ctl
            .update(&0u32.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
    }

    /// What the CPUs' batches still hold (read after [`TraceTap::stop`]).
    fn leftovers(&self, f: &mut impl FnMut(TraceRecord)) {
        for cpu in 0..self.nr_cpus as u32 {
            let Ok(Some(b)) = self.stage.lookup(&cpu.to_ne_bytes(), MapFlags::ANY) else {
                continue;
            };
            let st: types::trace_stage = pod(&b);
            for batch in staged(st, cpu) {
                decode_batch(&batch, f);
            }
        }
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
        let bad = std::cell::Cell::new(0u64);
        let sink = std::cell::RefCell::new(&mut on_record);
        {
            let mut b = RingBufferBuilder::new();
            b.add(&self.ring, |data: &[u8]| {
                if !decode(data, &mut *sink.borrow_mut()) {
                    bad.set(bad.get() + 1);
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
            // Stop the programs, let a run under way finish, then read the buffer to its
            // end and what the batches still hold.
            self.stop()?;
            std::thread::sleep(std::time::Duration::from_millis(20));
            rb.consume()?;
        }
        self.leftovers(&mut *sink.borrow_mut());
        Ok(bad.get())
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
    fn a_stage_that_never_filled_still_decodes() {
        // As the program leaves a CPU that had 3 switches and 1 waking: kind and cpu 0.
        let mut st = types::trace_stage::default();
        st.sw.n = 3;
        st.wk.n = 1;
        for e in st.sw.ev.iter_mut().chain(st.wk.ev.iter_mut()) {
            e.pid = 42;
        }
        let mut got = Vec::new();
        for b in staged(st, 5) {
            assert!(decode_batch(&b, &mut |r| got.push(r)));
        }
        assert_eq!(got.len(), 4);
        assert!(matches!(
            got[0],
            TraceRecord::Switch {
                cpu: 5,
                next_pid: 42,
                ..
            }
        ));
        assert!(matches!(
            got[3],
            TraceRecord::Waking {
                cpu: 5,
                pid: 42,
                ..
            }
        ));
    }

    #[test]
    fn every_kind_decodes_with_its_fields() {
        use types::llctop_trace_kind as K;
        // A batch of switches: its first `n` events, on its CPU.
        let mut b = types::trace_batch {
            kind: types::llctop_trace_batch::TB_SWITCH.0,
            cpu: 3,
            n: 2,
            ..Default::default()
        };
        for (i, e) in b.ev.iter_mut().enumerate() {
            e.ts = 1_000 + i as u64;
            e.pid = 42;
            e.tgid = 40;
            e.prev_pid = 9;
            e.state = 0x100;
            e.prio = 120;
        }
        let mut got = Vec::new();
        assert!(decode(super::super::layout::bytes_of(&b), &mut |r| got.push(r)));
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1],
            TraceRecord::Switch {
                ts: 1_001,
                cpu: 3,
                prev_pid: 9,
                prev_state: 0x100,
                unseen: false,
                next_pid: 42,
                next_tgid: 40,
                next_prio: 120,
            }
        );
        // A switch the kernel made without sched_switch: marked, its prev state unknown.
        b.ev[0].state = types::llctop_trace_state::TS_UNSEEN.0 as u16;
        got.clear();
        assert!(decode(super::super::layout::bytes_of(&b), &mut |r| got.push(r)));
        assert!(matches!(
            got[0],
            TraceRecord::Switch {
                prev_state: 0,
                unseen: true,
                ..
            }
        ));
        assert!(matches!(got[1], TraceRecord::Switch { unseen: false, .. }));
        b.kind = types::llctop_trace_batch::TB_WAKING.0;
        got.clear();
        assert!(decode(super::super::layout::bytes_of(&b), &mut |r| got.push(r)));
        assert!(matches!(
            got[0],
            TraceRecord::Waking {
                target_cpu: 9,
                pid: 42,
                ..
            }
        ));
        b.kind = 7;
        assert!(
            !decode(super::super::layout::bytes_of(&b), &mut |_| {}),
            "unknown batch"
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
