//! The `share` workload's own view of where its threads ran (llctop-workload share):
//! passes per slot (100 ms; whole seconds from older workloads) per CPU, folded per LLC of the guest's topology — the oracle of the
//! kernel's preferred LLC in the lab.

/// The workload's own view: passes per slot since its start, per llctop LLC.
pub struct Passes {
    start_mono_ns: u64,
    /// The slot's length in seconds (`slot_ms`; 1 when the workload does not say).
    slot_s: f64,
    /// `[slot][llc]`
    per_slot: Vec<Vec<u64>>,
}

impl Passes {
    /// The workload's output; `llcs`: each LLC's CPUs (the guest's topology).
    pub fn parse(text: &str, llcs: &[Vec<u64>]) -> Passes {
        let nr_llc = llcs.len();
        let mut llc_of_cpu =
            vec![usize::MAX; llcs.iter().flatten().max().map_or(0, |&c| c as usize + 1)];
        for (l, cpus) in llcs.iter().enumerate() {
            for &c in cpus {
                llc_of_cpu[c as usize] = l;
            }
        }
        let mut p = Passes {
            start_mono_ns: 0,
            slot_s: 1.0,
            per_slot: Vec::new(),
        };
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["start_mono_ns", ns] => p.start_mono_ns = ns.parse().unwrap(),
                ["slot_ms", ms] => p.slot_s = ms.parse::<f64>().unwrap() / 1e3,
                ["passes", slot, _tid, cpu, n] => {
                    let (slot, cpu, n): (usize, usize, u64) = (
                        slot.parse().unwrap(),
                        cpu.parse().unwrap(),
                        n.parse().unwrap(),
                    );
                    if p.per_slot.len() <= slot {
                        p.per_slot.resize(slot + 1, vec![0; nr_llc]);
                    }
                    p.per_slot[slot][llc_of_cpu[cpu]] += n;
                }
                _ => {}
            }
        }
        assert!(
            p.start_mono_ns > 0 && p.slot_s > 0.0 && !p.per_slot.is_empty(),
            "workload output: {text}"
        );
        p
    }

    /// The LLCs the passes are folded over.
    pub fn llcs(&self) -> usize {
        self.per_slot.first().map_or(0, Vec::len)
    }

    /// The share of the passes on `llc` over the second before `mono_ns` (a 1 s snapshot
    /// ending then): each of the workload's slots it overlaps weighted by the overlap, as
    /// the workload counts slots from its own start, not the snapshots'. Slots are 100 ms
    /// (CI 2026-11-29, 64 vCPUs: with whole seconds a snapshot where llctop measured ≥ 0.9
    /// on LLC 5 got 0.72 from the two seconds it straddled — passes spread evenly over a
    /// second the threads had moved in). `None` outside the run.
    pub fn share(&self, mono_ns: u64, llc: usize) -> Option<f64> {
        let end = mono_ns.checked_sub(self.start_mono_ns)? as f64 / 1e9 / self.slot_s;
        let begin = end - 1.0 / self.slot_s;
        let (mut sum, mut weight) = (0.0, 0.0);
        let first = begin.floor().max(0.0) as usize;
        for k in first..=end.floor() as usize {
            let Some(v) = self.per_slot.get(k) else {
                continue;
            };
            let total: u64 = v.iter().sum();
            let w = end.min(k as f64 + 1.0) - begin.max(k as f64);
            if total == 0 || w <= 0.0 {
                continue;
            }
            sum += w * v[llc] as f64 / total as f64;
            weight += w;
        }
        (weight > 0.0).then(|| sum / weight)
    }
}
