//! The scheduler in charge over a recording: stretches of consecutive snapshots under
//! one scheduler (`eevdf`, or a sched_ext BPF scheduler), for `report`, and the one that
//! ran most of a recording, for `diff`; the same stretches of whether the 7.2
//! cache-aware scheduler ran (`active`, `off`, `enabled, not active: why`), for `report`.

use std::fmt::Write as _;

use crate::snapshot::Snapshot;
use crate::text::Esc;

/// A stretch of snapshots under one scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct Stretch {
    /// [`crate::snapshot::SchedExt::describe`].
    pub who: String,
    /// Start, CLOCK_MONOTONIC ns (the first snapshot's interval start).
    pub start_mono_ns: u64,
    pub secs: f64,
    pub snapshots: usize,
    /// `nr_rejected` at the stretch's last snapshot, while a BPF scheduler ran.
    pub rejected: Option<u64>,
}

/// Which state the stretches follow.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Follows {
    /// The scheduler in charge (`/sys/kernel/sched_ext`).
    #[default]
    SchedExt,
    /// Whether cache-aware scheduling ran (`llc_balancing/`, the domain partitions).
    CacheAware,
}

#[derive(Debug, Default)]
pub struct Schedulers {
    pub stretches: Vec<Stretch>,
    follows: Follows,
}

impl Schedulers {
    pub fn following(follows: Follows) -> Schedulers {
        Schedulers {
            stretches: Vec::new(),
            follows,
        }
    }

    pub fn add(&mut self, s: &Snapshot) {
        let (who, rejected) = match self.follows {
            Follows::SchedExt => {
                let Some(x) = &s.sched_ext else {
                    return;
                };
                (x.describe(), x.enabled().then_some(x.nr_rejected).flatten())
            }
            Follows::CacheAware => {
                let Some(c) = &s.cache_aware else {
                    return;
                };
                (c.describe(), None)
            }
        };
        match self.stretches.last_mut() {
            Some(l) if l.who == who => {
                l.secs += s.time.interval_secs();
                l.snapshots += 1;
                l.rejected = rejected;
            }
            _ => self.stretches.push(Stretch {
                who,
                start_mono_ns: s.time.mono_ns.saturating_sub(s.time.interval_ns),
                secs: s.time.interval_secs(),
                snapshots: 1,
                rejected,
            }),
        }
    }

    /// The scheduler that ran the longest (ties: the first).
    pub fn main(&self) -> Option<&str> {
        let mut by: Vec<(&str, f64)> = Vec::new();
        for s in &self.stretches {
            match by.iter_mut().find(|(w, _)| *w == s.who) {
                Some(e) => e.1 += s.secs,
                None => by.push((&s.who, s.secs)),
            }
        }
        by.iter()
            .fold(None, |best: Option<(&str, f64)>, &(w, t)| match best {
                Some((_, bt)) if bt >= t => best,
                _ => Some((w, t)),
            })
            .map(|(w, _)| w)
    }

    /// The report's section; empty when no snapshot said (a kernel without sched_ext, or
    /// a recording made before llctop read it).
    pub fn section(&self, t0_mono_ns: u64) -> String {
        let mut out = String::new();
        if self.stretches.is_empty() {
            return out;
        }
        let title = match self.follows {
            Follows::SchedExt => "Scheduler in charge (/sys/kernel/sched_ext",
            Follows::CacheAware => {
                "Cache-aware scheduling (llc_balancing/enabled and the kernel's rule over the domain partitions"
            }
        };
        let _ = writeln!(out, "\n{title}; seconds from the start)");
        for s in &self.stretches {
            let at = s.start_mono_ns.saturating_sub(t0_mono_ns) as f64 / 1e9;
            let _ = writeln!(
                out,
                "  {:+7.1}s {:<40} {:>8.1} s  {} snapshots{}",
                at,
                Esc(&s.who),
                s.secs,
                s.snapshots,
                s.rejected
                    .map(|n| format!(", {n} tasks rejected"))
                    .unwrap_or_default()
            );
        }
        out
    }
}

/// The scheduler that ran most of the recording, for `diff`.
pub fn main_of(snaps: &[Snapshot]) -> Option<String> {
    let mut s = Schedulers::default();
    snaps.iter().for_each(|x| s.add(x));
    s.main().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::SchedExt;

    fn snap(seq: u64, state: &str, ops: Option<&str>) -> Snapshot {
        let mut s = Snapshot {
            seq,
            ..Default::default()
        };
        s.time.interval_ns = 1_000_000_000;
        s.time.mono_ns = (seq + 1) * 1_000_000_000;
        s.sched_ext = Some(SchedExt {
            state: state.into(),
            ops: ops.map(Into::into),
            switch_all: Some(true),
            nr_rejected: Some(seq),
            ..Default::default()
        });
        s
    }

    #[test]
    fn stretches_follow_the_scheduler_and_the_main_one_is_the_longest() {
        let mut s = Schedulers::default();
        for i in 0..2 {
            s.add(&snap(i, "disabled", None));
        }
        for i in 2..6 {
            s.add(&snap(i, "enabled", Some("bpfland_1.1.4_x86_64")));
        }
        s.add(&snap(6, "disabled", None));
        let who: Vec<_> = s
            .stretches
            .iter()
            .map(|x| (x.who.as_str(), x.snapshots))
            .collect();
        assert_eq!(
            who,
            [("eevdf", 2), ("scx bpfland (all tasks)", 4), ("eevdf", 1)]
        );
        assert_eq!(s.stretches[1].rejected, Some(5));
        assert_eq!(s.main(), Some("scx bpfland (all tasks)"));
        let text = s.section(0);
        assert!(text.contains("   +2.0s scx bpfland (all tasks)"), "{text}");
        assert!(text.contains("5 tasks rejected"), "{text}");
        // Without sched_ext: nothing said here (the source line says why).
        let none = Schedulers::default();
        assert_eq!((none.main(), none.section(0)), (None, String::new()));
    }

    #[test]
    fn cache_aware_stretches_say_why_it_did_not_run() {
        let mut c = Schedulers::following(Follows::CacheAware);
        for (i, (enabled, multi)) in [(true, true), (true, true), (true, false), (false, false)]
            .into_iter()
            .enumerate()
        {
            let mut s = snap(i as u64, "disabled", None);
            s.cache_aware = Some(crate::snapshot::CacheAware {
                enabled,
                multi_llc: multi,
                partitions: vec![if multi { "0-7" } else { "0-1" }.into()],
                ..Default::default()
            });
            c.add(&s);
        }
        let who: Vec<_> = c.stretches.iter().map(|x| x.snapshots).collect();
        assert_eq!(who, [2, 1, 1]);
        let text = c.section(0);
        assert!(
            text.contains("Cache-aware scheduling (llc_balancing/enabled"),
            "{text}"
        );
        assert!(text.contains("   +0.0s active"), "{text}");
        assert!(
            text.contains("   +2.0s enabled, not active: no sched-domain partition spans two LLCs"),
            "{text}"
        );
        assert!(
            text.contains("   +3.0s off (llc_balancing/enabled 0)"),
            "{text}"
        );
        // A kernel without it: nothing said.
        let mut none = Schedulers::following(Follows::CacheAware);
        none.add(&snap(0, "enabled", None));
        assert_eq!(none.section(0), String::new());
    }
}
