//! Per-process counter attribution of the BPF source: the perf source's per-CPU counter
//! fds go into the program's PERF_EVENT_ARRAY, and the CPUs' group readers are kept to
//! read the running slices' counters at each read.

use libbpf_rs::{MapCore, MapFlags};

use super::BpfSource;
use super::layout::NR_PC;
use crate::source::perf::PerfSource;

impl BpfSource {
    /// Attribute `perf`'s per-CPU counters to processes: their fds go into the
    /// program's PERF_EVENT_ARRAY (the map holds its own reference), which reads them
    /// with `bpf_perf_event_read_value` at every context switch and adds the deltas to
    /// the process that ran. Returns the number of CPUs attributed; on failure
    /// attribution stays off and the reason shows in the bpf source state.
    pub fn attach_counters(&mut self, perf: &PerfSource) -> usize {
        use std::os::fd::AsRawFd;
        let mut mask = 0u32;
        let mut readers = Vec::new();
        let mut errors = Vec::new();
        for cpu in perf.attribution() {
            let mut ok = false;
            for (slot, fd) in &cpu.members {
                let key = (cpu.cpu as usize * NR_PC + slot.index()) as u32;
                let fd = fd.as_raw_fd() as u32;
                match self.skel.maps.pmu.update(
                    &key.to_ne_bytes(),
                    &fd.to_ne_bytes(),
                    MapFlags::ANY,
                ) {
                    Ok(()) => {
                        mask |= 1 << slot.index();
                        ok = true;
                    }
                    Err(e) => errors.push(format!("cpu{} {}: {e}", cpu.cpu, slot.label())),
                }
            }
            match cpu.reader {
                Ok(r) if ok => readers.push(r),
                Ok(_) => {}
                Err(e) => errors.push(format!("cpu{}: {e}", cpu.cpu)),
            }
        }
        self.attribution_note = if readers.is_empty() {
            Some(if errors.is_empty() {
                "per-process counters off: no per-CPU counters open (see the perf source)".into()
            } else {
                format!("per-process counters off: {}", errors.join("; "))
            })
        } else if errors.is_empty() {
            None
        } else {
            Some(format!(
                "per-process counters partial: {}",
                errors.join("; ")
            ))
        };
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            bss.pc_mask = if readers.is_empty() { 0 } else { mask };
        }
        self.pc_mask = mask;
        let n = readers.len();
        self.readers = readers;
        n
    }
}
