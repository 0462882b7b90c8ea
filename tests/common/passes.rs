//! The `share` workload's own view of where its threads ran (llctop-workload share):
//! passes per second per CPU, folded per LLC of the guest's topology — the oracle of the
//! kernel's preferred LLC in the lab.

/// The workload's own view: passes per second since its start, per llctop LLC.
pub struct Passes {
    start_mono_ns: u64,
    /// `[second][llc]`
    per_sec: Vec<Vec<u64>>,
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
            per_sec: Vec::new(),
        };
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                ["start_mono_ns", ns] => p.start_mono_ns = ns.parse().unwrap(),
                ["passes", sec, _tid, cpu, n] => {
                    let (sec, cpu, n): (usize, usize, u64) = (
                        sec.parse().unwrap(),
                        cpu.parse().unwrap(),
                        n.parse().unwrap(),
                    );
                    if p.per_sec.len() <= sec {
                        p.per_sec.resize(sec + 1, vec![0; nr_llc]);
                    }
                    p.per_sec[sec][llc_of_cpu[cpu]] += n;
                }
                _ => {}
            }
        }
        assert!(
            p.start_mono_ns > 0 && !p.per_sec.is_empty(),
            "workload output: {text}"
        );
        p
    }

    /// The LLCs the passes are folded over.
    pub fn llcs(&self) -> usize {
        self.per_sec.first().map_or(0, Vec::len)
    }

    /// The share of the passes on `llc` over the second before `mono_ns` (a 1 s snapshot
    /// ending then): each of the workload's seconds it overlaps weighted by the overlap, as
    /// the workload counts whole seconds from its own start, not the snapshots' (CI
    /// 2026-11-28: the second a snapshot mostly covered said 0.75 on an LLC where the
    /// kernel's own switch-ins put the threads the whole interval, the moves of the
    /// gathering falling in the part of that second before the snapshot). `None` outside
    /// the run.
    pub fn share(&self, mono_ns: u64, llc: usize) -> Option<f64> {
        let end = mono_ns.checked_sub(self.start_mono_ns)? as f64 / 1e9;
        let begin = end - 1.0;
        let (mut sum, mut weight) = (0.0, 0.0);
        let first = begin.floor().max(0.0) as usize;
        for k in first..=end.floor() as usize {
            let Some(v) = self.per_sec.get(k) else {
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
