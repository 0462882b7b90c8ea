//! Context switches and wakings per CPU, gathered into Perfetto's compact sched encoding
//! (pure: records in, `CompactSched` bundles out). A CPU's events go into its batch in the
//! order they arrive and are sorted by time when the batch is taken (a waking in an
//! interrupt can reach the ring buffer between a switch's clock read and its record);
//! timestamps are delta-encoded (the first absolute), task names interned per bundle.
//! A batch is taken when it holds [`BATCH`] events, and whenever the writer asks (at
//! each snapshot and at the end), so memory stays bounded whatever the trace's length.

use std::collections::HashMap;

use perfetto_protos::ftrace_event_bundle::ftrace_event_bundle::CompactSched;

use crate::source::bpf::tracing::Comm;

/// Events per CPU per bundle.
pub const BATCH: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Switch {
    ts: u64,
    prev_state: u32,
    next_pid: u32,
    next_prio: i32,
    next_comm: Comm,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Waking {
    ts: u64,
    pid: u32,
    target_cpu: u32,
    prio: i32,
    comm: Comm,
}

#[derive(Debug, Default)]
struct CpuBatch {
    switches: Vec<Switch>,
    wakings: Vec<Waking>,
}

impl CpuBatch {
    fn len(&self) -> usize {
        self.switches.len() + self.wakings.len()
    }
}

/// The batches of every CPU.
#[derive(Debug, Default)]
pub struct Sched {
    cpus: Vec<CpuBatch>,
    /// Events taken out as bundles so far.
    pub switches: u64,
    pub wakings: u64,
}

impl Sched {
    pub fn new() -> Sched {
        Sched::default()
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuBatch {
        let i = cpu as usize;
        if self.cpus.len() <= i {
            self.cpus.resize_with(i + 1, CpuBatch::default);
        }
        &mut self.cpus[i]
    }

    /// A switch on `cpu`; true when that CPU's batch is full (take it).
    #[allow(clippy::too_many_arguments)]
    pub fn switch(
        &mut self,
        cpu: u32,
        ts: u64,
        prev_state: u32,
        next_pid: u32,
        next_prio: i32,
        next_comm: Comm,
    ) -> bool {
        let b = self.cpu(cpu);
        b.switches.push(Switch {
            ts,
            prev_state,
            next_pid,
            next_prio,
            next_comm,
        });
        b.len() >= BATCH
    }

    /// A waking seen on `cpu` of `pid`, to run on `target_cpu`; true when full.
    pub fn waking(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: u32,
        target_cpu: u32,
        prio: i32,
        comm: Comm,
    ) -> bool {
        let b = self.cpu(cpu);
        b.wakings.push(Waking {
            ts,
            pid,
            target_cpu,
            prio,
            comm,
        });
        b.len() >= BATCH
    }

    /// The bundle of `cpu`'s batch (None when empty); the batch starts again empty.
    pub fn take(&mut self, cpu: u32) -> Option<CompactSched> {
        let b = self.cpus.get_mut(cpu as usize)?;
        if b.len() == 0 {
            return None;
        }
        let mut sw = std::mem::take(&mut b.switches);
        let mut wk = std::mem::take(&mut b.wakings);
        sw.sort_by_key(|s| s.ts);
        wk.sort_by_key(|w| w.ts);
        self.switches += sw.len() as u64;
        self.wakings += wk.len() as u64;
        Some(encode(&sw, &wk))
    }

    /// Every CPU with events, and its bundle.
    pub fn take_all(&mut self) -> Vec<(u32, CompactSched)> {
        (0..self.cpus.len() as u32)
            .filter_map(|c| self.take(c).map(|s| (c, s)))
            .collect()
    }
}

fn encode(sw: &[Switch], wk: &[Waking]) -> CompactSched {
    let mut cs = CompactSched::new();
    let mut names: HashMap<Comm, u32> = HashMap::new();
    let mut intern = |c: Comm, table: &mut Vec<String>| -> u32 {
        *names.entry(c).or_insert_with(|| {
            table.push(c.as_string());
            (table.len() - 1) as u32
        })
    };
    let mut last = 0u64;
    for s in sw {
        cs.switch_timestamp.push(s.ts - last);
        last = s.ts;
        cs.switch_prev_state.push(i64::from(s.prev_state));
        cs.switch_next_pid.push(s.next_pid as i32);
        cs.switch_next_prio.push(s.next_prio);
        let i = intern(s.next_comm, &mut cs.intern_table);
        cs.switch_next_comm_index.push(i);
    }
    let mut last = 0u64;
    for w in wk {
        cs.waking_timestamp.push(w.ts - last);
        last = w.ts;
        cs.waking_pid.push(w.pid as i32);
        cs.waking_target_cpu.push(w.target_cpu as i32);
        cs.waking_prio.push(w.prio);
        let i = intern(w.comm, &mut cs.intern_table);
        cs.waking_comm_index.push(i);
        cs.waking_common_flags.push(1);
    }
    cs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_sorted_delta_encoded_and_interned() {
        let mut s = Sched::new();
        let (a, b) = (Comm::named("worker"), Comm::named("swapper/1"));
        assert!(!s.switch(1, 1_000, 1, 42, 120, a));
        // Arrived late but earlier in time: sorted into place.
        assert!(!s.switch(1, 900, 0, 0, 120, b));
        assert!(!s.switch(1, 1_500, 0x100, 42, 120, a));
        assert!(!s.waking(1, 950, 42, 1, 120, a));
        assert!(s.take(0).is_none(), "CPU 0 had nothing");
        let cs = s.take(1).unwrap();
        assert_eq!(cs.switch_timestamp, vec![900, 100, 500]);
        assert_eq!(cs.switch_next_pid, vec![0, 42, 42]);
        assert_eq!(cs.switch_prev_state, vec![0, 1, 0x100]);
        assert_eq!(
            cs.intern_table,
            vec!["swapper/1".to_string(), "worker".into()]
        );
        assert_eq!(cs.switch_next_comm_index, vec![0, 1, 1]);
        assert_eq!(cs.waking_timestamp, vec![950]);
        assert_eq!(cs.waking_comm_index, vec![1]);
        assert_eq!((s.switches, s.wakings), (3, 1));
        assert!(s.take(1).is_none(), "taken");
    }

    #[test]
    fn a_full_batch_says_so() {
        let mut s = Sched::new();
        let c = Comm::named("x");
        for i in 0..BATCH - 1 {
            assert!(!s.switch(0, i as u64, 0, 1, 120, c));
        }
        assert!(s.switch(0, BATCH as u64, 0, 1, 120, c));
        assert_eq!(s.take_all().len(), 1);
    }
}
