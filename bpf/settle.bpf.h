/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-process time per LLC: the per-CPU accumulator slots and their flush, the emulated
 * and kernel preferred LLC, a slice's CPU time (and counters) to its LLC, and settling a
 * task's own runtime and waits into its process before it changes LLC (task_settle), with
 * a slice's preferred-LLC verdict.
 */

/* Hand slot a to process tgid: what it holds for another process is flushed to
 * proc_vals (LLC llc, this CPU's) first. Out of line: a process takes a slot over rarely
 * next to the switches that find theirs. */
static __noinline void acc_take(struct acc_slot *a, u32 tgid, u32 llc)
{
	if (a->tgid) {
		struct proc_llc_val *v = llc_of(a->tgid, llc, true);
		if (v) {
			u64 *from = (u64 *)&a->c;
			u64 *to = (u64 *)&v->c;
#pragma unroll
			for (int w = 0; w < sizeof(struct proc_counts) / sizeof(u64); w++)
				if (from[w])
					__sync_fetch_and_add(&to[w], from[w]);
		}
	}
	__builtin_memset(a, 0, sizeof(*a));
	a->tgid = tgid;
	a->pref = PREF_UNSET;
}

/* The accumulator slot of process tgid on this CPU: the slot it maps to, taken over
 * (acc_take) when it holds another process. */
static __always_inline struct acc_slot *acc_of(u32 cpu, u32 tgid, const volatile struct cpu_topo *t)
{
	u32 i = cpu * ACC_SLOTS + (tgid & (ACC_SLOTS - 1));
	struct acc_slot *a = bpf_map_lookup_elem(&acc, &i);
	if (a && a->tgid != tgid)
		acc_take(a, tgid, t ? t->llc : 0);
	return a;
}

/* Store process tgid's kernel-preferred LLC (-1: none) in its own proc_vals entry. No
 * preference needs storing only for a process that had one. */
static __noinline void store_pref(u32 tgid, s32 pref)
{
	struct proc_llc_val *v = llc_of(tgid, PROC_LLC_SELF, pref >= 0);
	if (v && v->preferred_llc != pref)
		v->preferred_llc = pref;
}

/* Add a completed slice to process tgid on LLC llc in proc_vals: its runtime and, with
 * counters, their deltas (kept together: they scale each other). */
static __noinline void slice_to_llc(u32 tgid, u32 llc, u64 ran, struct pc_delta *pd, bool have_pc)
{
	struct proc_llc_val *v = llc_of(tgid, llc, true);
	if (!v)
		return;
	if (ran)
		__sync_fetch_and_add(&v->c.runtime_ns, ran);
	if (have_pc) {
#pragma unroll
		for (int i = 0; i < NR_PC; i++)
			if (pd->pc[i])
				__sync_fetch_and_add(&v->pc[i], pd->pc[i]);
		__sync_fetch_and_add(&v->pc_enabled, pd->enabled);
		__sync_fetch_and_add(&v->pc_running, pd->running);
	}
}

/* A task's kernel counters at its last settle (task_settle). */
struct task_acct {
	u64 runtime; /* se.sum_exec_runtime */
	u64 delay;   /* sched_info.run_delay */
	u64 runs;    /* sched_info.pcount */
	u32 done;    /* settled at its exit: what it runs after does not count */
	/* The proc_vals entry its last settle went to (PROC_SLOTS: none): the next one on
	 * the same LLC finds it without the proc_idx hash, once its key is checked. */
	u32 ent;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_acct);
} task_acct SEC(".maps");

/* Settle task p: the CPU time and run-queue wait the kernel counted for it since its last
 * settle were spent on llc, the LLC of the CPU it is on (its CPU changes only through
 * set_task_cpu, whose sched_migrate_task hook settles it before it changes LLC), and go
 * to its process's entry for that LLC (LLC_UNKNOWN: a CPU outside the topology, not
 * counted).
 * Two settles of one task at once (the iterator on one CPU, a hook on another) each take
 * their part by exchange, so the parts add up. */
#define LLC_UNKNOWN (~0U)
/* Why a task is settled: the iterator before a read, a move to another LLC, its exit
 * (its last switch: nothing after counts). */
enum { SETTLE_READ, SETTLE_MOVE, SETTLE_LAST };
static __noinline void task_settle_one(struct task_struct *p, u32 llc, u32 why)
{
	u64 rt = p->se.sum_exec_runtime;
	struct task_acct *a = bpf_task_storage_get(&task_acct, p, 0, 0);
	/* The iterator skips a task that did not run since (most of them) without reading
	 * its wait: a wait ends when it runs, or at a move (settled then, before an LLC
	 * change) or its exit. */
	if (a && why == SETTLE_READ && a->runtime == rt)
		return;
	u64 dl = p->sched_info.run_delay;
	u64 pc = p->sched_info.pcount;
	if (!a) {
		struct task_acct init = { .ent = PROC_SLOTS };
		if (p->start_time < load_ns) {
			init.runtime = rt;
			init.delay = dl;
			init.runs = pc;
		}
		a = bpf_task_storage_get(&task_acct, p, &init, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!a) {
			count_proc_dropped();
			return;
		}
	}
	if (a->done)
		return;
	if (why != SETTLE_LAST && a->runtime == rt && a->delay == dl && a->runs == pc)
		return;
	if (why == SETTLE_LAST)
		a->done = 1;
	u64 ran = rt - __sync_lock_test_and_set(&a->runtime, rt);
	u64 waited = dl - __sync_lock_test_and_set(&a->delay, dl);
	u64 runs = pc - __sync_lock_test_and_set(&a->runs, pc);
	if ((!ran && !waited && !runs) || llc == LLC_UNKNOWN)
		return;
	u32 tgid = p->tgid;
	u32 i = a->ent;
	struct proc_llc_ent *e = i < PROC_SLOTS ? bpf_map_lookup_elem(&proc_vals, &i) : NULL;
	/* The entry is another's once userspace freed it (its process exited) and the
	 * program gave it out again: its key says so. */
	if (e && e->key != ((u64)tgid << 32 | llc))
		e = NULL;
	if (!e) {
		e = ent_of(tgid, llc, true, &i);
		if (!e)
			return;
		a->ent = i;
	}
	if (ran)
		__sync_fetch_and_add(&e->v.c.runtime_ns, ran);
	if (waited)
		__sync_fetch_and_add(&e->v.c.wait_ns, waited);
	if (runs)
		__sync_fetch_and_add(&e->v.runs, runs);
}

/* Settle a slice of process tgid that ended after ran ns into its slot pa: the runtime
 * (unless counters take it to proc_vals with them), what its switch-in found (the wait
 * that ended then; ran as preferred-LLC hit or miss time) and the preference read then. */
static __always_inline void settle(struct cpu_stat *cs, struct acc_slot *pa, u32 tgid, u64 ran,
				   bool runtime)
{
	if (runtime)
		pa->c.runtime_ns += ran;
	pa->c.wait_ns += cs->curr_wait;
	if (cs->curr_hit == CURR_HIT)
		pa->c.pref_hit_ns += ran;
	else if (cs->curr_hit == CURR_MISS)
		pa->c.pref_miss_ns += ran;
	s32 pref = cs->curr_pref;
	if (pref != PREF_UNSET && pref != pa->pref) {
		store_pref(tgid, pref);
		pa->pref = pref;
	}
}

/* A slice's preferred-LLC verdict: CURR_HIT when it begins on the LLC whose kernel id is
 * the preference pref, CURR_MISS elsewhere, CURR_NONE without one (pref < 0). */
static __always_inline u32 verdict(int pref, const volatile struct cpu_topo *t)
{
	if (pref < 0)
		return CURR_NONE;
	return (u32)pref == t->kernel_llc ? CURR_HIT : CURR_MISS;
}
