//! Per-process runtime and waits settled from each task's own kernel counters: the walk
//! over every task that llctop runs before each read, which of the program's two walkers
//! runs it, and the word the source state uses for this path. The program settles a
//! task's `se.sum_exec_runtime` and `sched_info.run_delay` deltas into its process's
//! entry for its LLC before the task changes LLC, at its last switch and in this walk,
//! so the sched_switch hook keeps no per-process work (docs/performance.md (a), (h)).

use std::os::fd::AsFd as _;

use super::layout::skel;

/// The source state's word on where per-process runtime and waits come from, when the
/// kernel's own per-task counters are settled.
pub const SETTLED: &str = "per-process runtime and waits: the kernel's own se.sum_exec_runtime and sched_info.run_delay, settled per task at migrations, exits and each read";

/// How the program walks every task before a read (bpf/llctop.bpf.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walker {
    /// `settle_walk`: the open-coded task iterator (kfuncs `bpf_iter_task_*`, v6.7+)
    /// inside one program run, with no reference taken per task (~0.2 µs per task here).
    OpenCoded,
    /// `settle_tasks`: an iter/task program, which the kernel's task iterator runs once
    /// per task after looking it up by pid and taking a reference (~0.6 µs per task).
    TaskIter,
}

/// The kfunc whose presence in the kernel's BTF says the open-coded task iterator is
/// there.
const OPEN_CODED_KFUNC: &str = "bpf_iter_task_new";

impl Walker {
    /// The walkers this kernel has, fastest first: the open-coded iterator where its
    /// kfuncs are in the kernel's BTF, then the iter/task program (every kernel with
    /// task iterators; a load failure of the first falls back to it).
    pub fn of_kernel() -> Vec<Walker> {
        use libbpf_rs::btf::{Btf, types::Func};
        let open_coded = Btf::from_vmlinux()
            .ok()
            .is_some_and(|btf| btf.type_by_name::<Func>(OPEN_CODED_KFUNC).is_some());
        if open_coded {
            vec![Walker::OpenCoded, Walker::TaskIter]
        } else {
            vec![Walker::TaskIter]
        }
    }

    /// How the source state names it.
    pub fn label(self) -> &'static str {
        match self {
            Walker::OpenCoded => "tasks walked by the open-coded task iterator (v6.7+)",
            Walker::TaskIter => "tasks walked by an iter/task program",
        }
    }

    /// Load only this walker's program (the other is not loaded at all).
    pub fn choose(self, progs: &mut skel::OpenLlctopProgs<'_>) {
        progs.settle_walk.set_autoload(self == Walker::OpenCoded);
        // Its iterator target is a map's elements: attached by `attach` with the map.
        progs.settle_walk.set_autoattach(false);
        progs.settle_tasks.set_autoload(self == Walker::TaskIter);
    }

    /// Attach what `skel.attach()` cannot: the open-coded walk runs as the iterator of
    /// the one-element `settle_once` array, so that one read of it is one program run.
    pub fn attach(self, skel: &mut skel::LlctopSkel<'static>) -> Result<(), libbpf_rs::Error> {
        if self == Walker::OpenCoded {
            let link = skel
                .progs
                .settle_walk
                .attach_iter(skel.maps.settle_once.as_fd())?;
            skel.links.settle_walk = Some(link);
        }
        Ok(())
    }
}

/// Walk every task once: each task's runtime and wait since its last settle go to its
/// process's entry. One `bpf()` call (the iterator's fd) and a read that returns
/// nothing. Without a walker attached (the per-switch path), nothing.
pub fn run_settle(skel: &skel::LlctopSkel<'static>) -> Result<(), libbpf_rs::Error> {
    use std::io::Read;
    let Some(link) = skel
        .links
        .settle_walk
        .as_ref()
        .or(skel.links.settle_tasks.as_ref())
    else {
        return Ok(());
    };
    let mut it = libbpf_rs::Iter::new(link)?;
    let mut buf = [0u8; 64];
    while it.read(&mut buf).map_err(libbpf_rs::Error::from)? > 0 {}
    Ok(())
}
