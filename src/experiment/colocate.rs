//! The `colocate` experiment: where the command an A/B experiment starts may run — where
//! the scheduler puts it (`off`) or confined to one LLC's CPUs (`llcN`) — the test of a
//! candidate group the advisor names (processes that share memory or wake each other on
//! different LLCs; 7.2 has no kernel interface that groups them). `llctop ab
//! colocate=off,llc2 -- CMD`.
//!
//! The experiment's own command is placed: a window's command starts with its arm's CPUs
//! (set between fork and exec, so every thread and child it makes inherits them); a
//! `--steady` command's process group is moved, thread by thread, at each flip; nothing
//! of it outlives the experiment (src/child.rs), so none of that is journaled. Running
//! processes llctop did not start are placed only when named (`--pid`): through the knob
//! session's affinity writes (src/knobs/session/affinity.rs), journaled with each
//! thread's own CPUs and put back for `off` and at the end.

pub use crate::cpulist::CpuMask;
use crate::topology::Topology;

/// The pseudo-knob's name in `KNOB=A,B`.
pub const KNOB: &str = "colocate";

/// One arm's placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The scheduler's own: the CPUs llctop itself may run on (the command inherits them).
    Scheduler,
    /// Confined to the online CPUs of this LLC (llctop's id, as every view shows it).
    Llc(u32),
}

impl Placement {
    /// The value as llctop writes it (`off`, `llc2`).
    pub fn canonical(&self) -> String {
        match self {
            Placement::Scheduler => "off".into(),
            Placement::Llc(l) => format!("llc{l}"),
        }
    }
}

/// An arm's value checked against the machine: its placement and CPUs. `own` is the set
/// llctop may run on; an LLC's CPUs outside it are left out (a cpuset or taskset around
/// llctop still binds its command), and an LLC with none left is refused.
pub fn parse(value: &str, topo: &Topology, own: &[u32]) -> Result<(Placement, Vec<u32>), String> {
    let v = value.trim();
    if matches!(v, "off" | "scheduler") {
        return Ok((Placement::Scheduler, own.to_vec()));
    }
    let id: u32 = v
        .strip_prefix("llc")
        .unwrap_or(v)
        .parse()
        .map_err(|_| format!("{KNOB}={v:?}: expected off or llcN (an LLC llctop shows)"))?;
    let llc = topo.llcs.iter().find(|l| l.id == id).ok_or_else(|| {
        let ids: Vec<String> = topo.llcs.iter().map(|l| format!("llc{}", l.id)).collect();
        format!("{KNOB}=llc{id}: no such LLC here ({})", ids.join(", "))
    })?;
    let cpus: Vec<u32> = llc
        .cpus
        .iter()
        .copied()
        .filter(|c| topo.cpu(*c).is_some_and(|c| c.online) && own.contains(c))
        .collect();
    if cpus.is_empty() {
        return Err(format!(
            "{KNOB}=llc{id}: none of its CPUs ({}) is online and allowed to llctop ({})",
            crate::cpulist::format(&llc.cpus),
            crate::cpulist::format(own)
        ));
    }
    Ok((Placement::Llc(id), cpus))
}

/// How many passes [`place_group`] makes at most: a thread created while a pass runs
/// inherits its creator's old set and is caught by the next.
const PASSES: usize = 8;

/// Move every thread of process group `pgid` (an experiment's command, from
/// src/child.rs) to `mask`: passes over the group's processes and their threads until one
/// finds no thread it has not placed. Returns the threads placed and the errors (a thread
/// that ended meanwhile is no error).
pub fn place_group(pgid: u32, mask: &CpuMask) -> (usize, Vec<String>) {
    let mut done = std::collections::BTreeSet::new();
    let mut errors = Vec::new();
    for _ in 0..PASSES {
        let mut new = 0;
        for (pid, _) in crate::child::group_members(pgid) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tasks
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            {
                if !done.insert(tid) {
                    continue;
                }
                new += 1;
                match mask.apply(tid) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => errors.push(format!("thread {tid}: {e}")),
                }
            }
        }
        if new == 0 {
            break;
        }
    }
    (done.len(), errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two LLCs of two CPUs (0–1, 2–3), CPU 3 offline.
    fn topo() -> Topology {
        let mut t = crate::topology::synthetic(1, 2, 2);
        if let Some(c) = t.cpus.iter_mut().find(|c| c.cpu == 3) {
            c.online = false;
        }
        t
    }

    #[test]
    fn values_name_the_scheduler_or_an_llc_and_take_its_online_allowed_cpus() {
        let t = topo();
        let own = [0, 1, 2, 3];
        assert_eq!(
            parse("off", &t, &own),
            Ok((Placement::Scheduler, own.to_vec()))
        );
        assert_eq!(
            parse(" llc0 ", &t, &own),
            Ok((Placement::Llc(0), vec![0, 1]))
        );
        assert_eq!(
            parse("1", &t, &own),
            Ok((Placement::Llc(1), vec![2])),
            "CPU 3 offline"
        );
        assert_eq!(parse("llc0", &t, &[1, 2]), Ok((Placement::Llc(0), vec![1])));
        assert!(
            parse("llc1", &t, &[0, 1])
                .unwrap_err()
                .contains("none of its CPUs")
        );
        assert!(parse("llc7", &t, &own).unwrap_err().contains("llc0, llc1"));
        assert!(
            parse("llcx", &t, &own)
                .unwrap_err()
                .contains("expected off or llcN")
        );
        assert_eq!(Placement::Llc(1).canonical(), "llc1");
        assert_eq!(Placement::Scheduler.canonical(), "off");
    }

    #[test]
    fn a_mask_holds_its_cpus_and_refuses_what_a_set_cannot() {
        assert_eq!(
            CpuMask::of(&[0, 5, 63]).map(|m| m.cpus()),
            Ok(vec![0, 5, 63])
        );
        assert!(CpuMask::of(&[libc::CPU_SETSIZE as u32]).is_err());
    }
}
