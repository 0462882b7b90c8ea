//! Per-process runtime and waits settled from each task's own kernel counters: the task
//! iterator (bpf/llctop.bpf.c `settle_tasks`) that llctop runs before every read, and
//! the word the source state uses for this path. The program settles a task's
//! `se.sum_exec_runtime` and `sched_info.run_delay` deltas into its process's entry for
//! its LLC before the task changes LLC, at its last switch and in this iterator, so the
//! sched_switch hook keeps no per-process work (docs/performance.md (a)).

use super::layout::skel;

/// The source state's word on where per-process runtime and waits come from, when the
/// kernel's own per-task counters are settled.
pub const SETTLED: &str = "per-process runtime and waits: the kernel's own se.sum_exec_runtime and sched_info.run_delay, settled per task at migrations, exits and each read";

/// Run the task iterator once: every task's runtime and wait since its last settle go to
/// its process's entry. One `bpf()` call (the iterator's fd) and a read that returns
/// nothing. Without the iterator program (not loaded: the per-switch path), nothing.
pub fn run_settle(skel: &skel::LlctopSkel<'static>) -> Result<(), libbpf_rs::Error> {
    use std::io::Read;
    let Some(link) = skel.links.settle_tasks.as_ref() else {
        return Ok(());
    };
    let mut it = libbpf_rs::Iter::new(link)?;
    let mut buf = [0u8; 64];
    while it.read(&mut buf).map_err(libbpf_rs::Error::from)? > 0 {}
    Ok(())
}
