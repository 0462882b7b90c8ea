// SPDX-License-Identifier: GPL-2.0
/*
 * Which process wakes which (issue "CAS inside", item 5: which tasks share data): every
 * wakeup one user process makes of another, counted per (waker, wakee) pair on the
 * scheduler's own wakeup path (sched_waking, which try_to_wake_up() fires for each task
 * it wakes, before it picks a CPU); and within one process, which thread wakes which,
 * per (process, waker thread, wakee thread).
 *
 * The waker is `current` only when the wakeup is made in task context: a wakeup from an
 * interrupt or a softirq served on the way out of one runs on whatever task the
 * interrupt landed on. So the context is read from the CPU's preempt count, as the
 * kernel's in_task() does (hardirq, NMI and softirq-serving bits), and wakeups made in
 * interrupt context are counted apart, never to a pair. The preempt count is per-CPU on
 * x86 (`__preempt_count`, or `pcpu_hot.preempt_count` from v6.2 to v6.14): reaching it
 * needs its address, which a kernel without KALLSYMS_ALL does not give BPF; the object
 * then fails to load and userspace says why (src/source/bpf/wakers.rs). Other
 * architectures keep it elsewhere; llctop reads it on x86-64 only and says so.
 *
 * An object of its own: loaded only when asked for (`--wakeups`), so that a kernel that
 * refuses it refuses nothing else, and a run that does not ask pays nothing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/* PF_KTHREAD: a kernel thread (no user process on either side of a pair). */
#define PF_KTHREAD 0x00200000
/* in_task()'s mask: NMI (bits 20–23; one bit before v5.11), hardirq (16–19) and the
 * softirq-serving offset (bit 8). Bits 0–7 (preemption disabled, as the wakeup path's
 * locks do) and 9–15 (softirqs disabled in task context) leave it task context. */
#define NOT_TASK_MASK 0x00ff0100

/* The pairs kept; a pair beyond them is counted lost (userspace forgets the pairs of
 * processes that exited). */
#define WAKE_PAIRS 16384

struct wake_key {
	u32 waker; /* tgid */
	u32 wakee; /* tgid */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* Not preallocated: an element deleted by userspace is freed after RCU, so an
	 * increment racing its deletion cannot land in another pair's reused element. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, WAKE_PAIRS);
	__type(key, struct wake_key);
	__type(value, u64);
} wake_pairs SEC(".maps");

/* Two threads of one process. */
struct thread_key {
	u32 tgid;
	u32 waker; /* the waking thread's pid */
	u32 wakee; /* the woken thread's pid */
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, WAKE_PAIRS);
	__type(key, struct thread_key);
	__type(value, u64);
} thread_pairs SEC(".maps");

/* Per CPU, one element: the wakeups seen, by where they went. */
struct wake_stats {
	u64 paired;    /* counted to a pair */
	u64 interrupt; /* made in interrupt context: no waker */
	u64 other;     /* a kernel thread on either side */
	u64 lost;      /* a pair map full */
	u64 within;    /* between threads of one process, counted to a thread pair */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct wake_stats);
} wake_stats SEC(".maps");

/* The per-CPU preempt count (x86). Weak: absent symbols read as NULL. */
extern const int __preempt_count __ksym __weak;
struct pcpu_hot {
	int preempt_count;
} __attribute__((preserve_access_index));
extern const struct pcpu_hot pcpu_hot __ksym __weak;

/* Set by userspace: which of the above holds the preempt count on this kernel. */
const volatile u32 preempt_from = 0;
enum { PC_PERCPU = 1, PC_PCPU_HOT = 2 };

/* The preempt count as an unsigned value (x86 keeps PREEMPT_NEED_RESCHED inverted in its
 * top bit, so a task that need not reschedule has it set), or -1 where it cannot be read. */
static __always_inline s64 preempt_count(void)
{
	if (preempt_from == PC_PERCPU && bpf_ksym_exists(&__preempt_count))
		return *(const u32 *)bpf_this_cpu_ptr(&__preempt_count);
	if (preempt_from == PC_PCPU_HOT && bpf_ksym_exists(&pcpu_hot))
		return (u32)((const struct pcpu_hot *)bpf_this_cpu_ptr(&pcpu_hot))->preempt_count;
	/* Unreached: userspace loads this object only with a place named. */
	return -1;
}

static __always_inline struct wake_stats *stats(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&wake_stats, &zero);
}

/* One more wakeup of the pair at `key` in `map` (made by whichever CPU gets there
 * first); false when the map is full. */
static __always_inline bool bump(void *map, void *key)
{
	u64 *n = bpf_map_lookup_elem(map, key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return true;
	}
	u64 one = 1;
	/* Another CPU may have made the pair meanwhile: then add to its count. */
	if (!bpf_map_update_elem(map, key, &one, BPF_NOEXIST))
		return true;
	n = bpf_map_lookup_elem(map, key);
	if (!n)
		return false;
	__sync_fetch_and_add(n, 1);
	return true;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(wakers_waking, struct task_struct *p)
{
	struct wake_stats *st = stats();
	if (!st)
		return 0;
	s64 pc = preempt_count();
	if (pc < 0 || (pc & NOT_TASK_MASK)) {
		st->interrupt++;
		return 0;
	}
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	struct wake_key k = {
		.waker = BPF_CORE_READ(cur, tgid),
		.wakee = p->tgid,
	};
	if (k.waker == 0 || (BPF_CORE_READ(cur, flags) & PF_KTHREAD) || (p->flags & PF_KTHREAD)) {
		st->other++;
		return 0;
	}
	if (k.waker == k.wakee) {
		struct thread_key t = {
			.tgid = k.waker,
			.waker = BPF_CORE_READ(cur, pid),
			.wakee = p->pid,
		};
		if (!bump(&thread_pairs, &t)) {
			st->lost++;
			return 0;
		}
		st->within++;
		return 0;
	}
	if (!bump(&wake_pairs, &k)) {
		st->lost++;
		return 0;
	}
	st->paired++;
	return 0;
}
