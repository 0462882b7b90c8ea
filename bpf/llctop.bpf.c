// SPDX-License-Identifier: GPL-2.0
/*
 * llctop's in-kernel aggregation. Every scheduler event is counted here (no sampling)
 * into per-CPU or atomically updated maps; userspace reads cumulative values once per
 * interval and takes deltas. Nothing per event goes to userspace except a rate-limited
 * ring buffer of detail events (placements, cross-LLC migrations) with a drop counter.
 *
 * Each hook exists twice: tp_btf/ (preferred) and raw_tp/ (fallback when the kernel
 * refuses tp_btf); userspace enables one set with set_autoload(). Both read task fields
 * with CO-RE (BPF_CORE_READ), so the same code serves 6.1 … 7.x.
 *
 * The context switch is the hot path (see docs/performance.md). Where the kernel keeps
 * sched_info (CONFIG_SCHED_INFO; userspace sets `sched_info_waits`), the switch hook reads
 * what the scheduler itself just computed instead of recomputing it: the run queue's
 * clock (updated by __schedule right before the tracepoint; the run queue reached
 * through the outgoing task's cfs_rq, as kernels without KALLSYMS_ALL give no address
 * for the per-CPU `runqueues`) as the time, and the incoming
 * task's sched_info.last_queued (its enqueue time, cleared only after the tracepoint) as
 * the start of its wait — no clock read, no task storage, no work in the sched_wakeup
 * hook (it stamps only new threads watched beside an idle CPU: idle.bpf.h). With tp_btf
 * (`task_settle`), per-process runtime and waits are not summed per switch at all: each
 * task's own se.sum_exec_runtime and sched_info.run_delay are settled into its process's
 * count for its LLC before it changes LLC, at its last switch and by a walk over every task
 * that userspace runs before each read (settle_walk, or settle_tasks before v6.7).
 * Otherwise (and for the v7.2 preferred-LLC time, judged per slice) per-process sums go
 * to per-CPU accumulators (a slot per process, direct-mapped by tgid), flushed to the
 * shared map only when another process needs the slot.
 *
 * One object, split by concern: llctop.h (includes, the layout shared with userspace
 * through BTF, the maps), then percpu.bpf.h (per-CPU state, waits), procs.bpf.h
 * (per-process entries, event budget), events.bpf.h (idle scan, the event ring),
 * trace.bpf.h (trace mode), counters.bpf.h (hardware counters), settle.bpf.h (time per
 * LLC, preferred LLC, task settling), cas.bpf.h (a process's cache group, v7.2+),
 * idle.bpf.h (each CPU's idle time, new threads' waits beside an idle CPU), switch.bpf.h (switch, wakeups, placement) and
 * migrate.bpf.h (migrations, NUMA marks, exit); this file holds the hooks.
 */

#include "llctop.h"
#include "percpu.bpf.h"
#include "procs.bpf.h"
#include "events.bpf.h"
#include "trace.bpf.h"
#include "counters.bpf.h"
#include "settle.bpf.h"
#include "cas.bpf.h"
#include "idle.bpf.h"
#include "switch.bpf.h"
#include "migrate.bpf.h"

/* ---- the task walkers: first in the object, so that a kernel refusing one refuses it
 * before the hooks are verified (libbpf loads programs in the object's order; a refused
 * walker costs a second load, src/source/bpf/load.rs) ---- */

/* Run by userspace before each read (and once at attach) where settle_walk is not
 * there: every task's runtime and wait since its last settle, on the LLC of the CPU it
 * is on (task_settle), and each process's cache group from its leader (v7.2+: cas_read). */
SEC("iter/task")
int settle_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	if (!p || !task_settle)
		return 0;
	const volatile struct cpu_topo *t = topo_of(task_cpu(p, true));
	task_settle_one(p, t ? t->llc : LLC_UNKNOWN, SETTLE_READ);
	if (p->pid == p->tgid)
		cas_read(p);
	return 0;
}

/* The open-coded task iterator (v6.7+). Weak: the program that calls it is loaded only
 * where the kernel's BTF has it (userspace checks: src/source/bpf/settle.rs). */
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;

/* One element, so that one read of its iterator is one run of settle_walk. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} settle_once SEC(".maps");

/* settle_tasks' work in one program run, where the kernel has the open-coded task
 * iterator: every thread visited under RCU with no reference taken or pid looked up per
 * task (the kernel's task iterator does both, and runs the program once per task:
 * ~3x the cost, docs/performance.md (h)). Run by userspace before each read instead of
 * settle_tasks. The walk has no reschedule point: ~0.2 us per thread on one CPU. */
SEC("iter/bpf_map_elem")
int settle_walk(struct bpf_iter__bpf_map_elem *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *p;
	if (!ctx->key || !task_settle)
		return 0;
	/* Here only: bpf_loop's callback (a BPF_PSEUDO_FUNC load) is refused by kernels
	 * before 5.13 even where it is never reached, and settle_tasks runs on those. */
	cas_rq_counts();
	bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_THREADS);
	while ((p = bpf_iter_task_next(&it))) {
		/* thread_info.cpu directly: every kernel with this iterator has it there
		 * (task_cpu()'s fallback branch does not survive the loop's codegen). */
		const volatile struct cpu_topo *t = topo_of(p->thread_info.cpu);
		task_settle_one(p, t ? t->llc : LLC_UNKNOWN, SETTLE_READ);
		/* Once per process: its leader's cache group (v7.2+). */
		if (p->pid == p->tgid)
			cas_read(p);
	}
	bpf_iter_task_destroy(&it);
	return 0;
}

/* ---- tp_btf (BTF-typed raw tracepoints): preferred ---- */

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true, true);
}

/* The same for kernels without atomic exchange (before 5.12): no per-task settle. */
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch_old, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true, false);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(btf_wakeup, struct task_struct *p)
{
	return on_wakeup(p, false, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new, struct task_struct *p)
{
	return on_wakeup_new(p, true, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new_bounded, struct task_struct *p)
{
	return on_wakeup_new(p, true, false);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(btf_migrate, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, true, true);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(btf_migrate_old, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, true, false);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p)
{
	return on_exit(p, true);
}

SEC("tp_btf/sched_move_numa")
int BPF_PROG(btf_move_numa, struct task_struct *p, int src_cpu, int dst_cpu)
{
	return mark_numa(p, true);
}

SEC("tp_btf/sched_swap_numa")
int BPF_PROG(btf_swap_numa, struct task_struct *src, int src_cpu, struct task_struct *dst, int dst_cpu)
{
	mark_numa(src, true);
	return mark_numa(dst, true);
}

/* Trace mode only (loaded when userspace sets trace_on). */
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_waking, struct task_struct *p)
{
	return on_waking(p, true);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child, true);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(btf_exec, struct task_struct *p)
{
	return on_exec(p, true);
}

SEC("tp_btf/task_rename")
int BPF_PROG(btf_rename, struct task_struct *p, const char *comm)
{
	return on_rename(p, comm, true);
}

/* ---- raw_tp: fallback with the same handlers ---- */

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, false, false);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_wakeup, struct task_struct *p)
{
	return on_wakeup(p, false, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new, struct task_struct *p)
{
	return on_wakeup_new(p, false, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new_bounded, struct task_struct *p)
{
	return on_wakeup_new(p, false, false);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(raw_migrate, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, false, false);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_exit, struct task_struct *p)
{
	return on_exit(p, false);
}

SEC("raw_tp/sched_move_numa")
int BPF_PROG(raw_move_numa, struct task_struct *p, int src_cpu, int dst_cpu)
{
	return mark_numa(p, false);
}

SEC("raw_tp/sched_swap_numa")
int BPF_PROG(raw_swap_numa, struct task_struct *src, int src_cpu, struct task_struct *dst, int dst_cpu)
{
	mark_numa(src, false);
	return mark_numa(dst, false);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_waking, struct task_struct *p)
{
	return on_waking(p, false);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child, false);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(raw_exec, struct task_struct *p)
{
	return on_exec(p, false);
}

SEC("raw_tp/task_rename")
int BPF_PROG(raw_rename, struct task_struct *p, const char *comm)
{
	return on_rename(p, comm, false);
}
