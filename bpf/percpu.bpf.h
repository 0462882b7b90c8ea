/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU state and the task reads every hook makes: this CPU's cpu_stat, a task's CPU
 * and state (tp_btf or raw_tp reads), the run-queue wait's start and end with its log2
 * histogram, a CPU's topology entry, and the dropped-process count.
 */

static __always_inline struct cpu_stat *stats_of(u32 cpu)
{
	return bpf_map_lookup_elem(&cpu_stats, &cpu);
}

static __always_inline struct cpu_stat *this_cpu(void)
{
	return stats_of(bpf_get_smp_processor_id());
}

static __always_inline u32 task_cpu(struct task_struct *p, const bool direct)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return RD(direct, p, thread_info.cpu);
	struct task_struct___cpu *q = (void *)p;
	return RD(direct, q, cpu);
}

static __always_inline u32 task_state(struct task_struct *p, const bool direct)
{
	if (bpf_core_field_exists(p->__state))
		return RD(direct, p, __state);
	struct task_struct___pre514 *q = (void *)p;
	return (u32)RD(direct, q, state);
}

/* floor(log2(v)) for v > 0, in five steps */
static __always_inline u32 log2_u64(u64 v)
{
	u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* Record that task p (pid) starts waiting now. The lowest bit of the stored time marks
 * a new task's first wait, so its first switch-in is known without another lookup. */
static __always_inline void wait_begin(struct task_struct *p, u32 pid, u64 now, bool first,
				       const bool direct)
{
	now = first ? now | 1 : now & ~1ULL;
	if (direct && have_task_storage) {
		u64 *ts = bpf_task_storage_get(&wait_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (ts)
			*ts = now;
	} else {
		bpf_map_update_elem(&wait_start, &pid, &now, BPF_ANY);
	}
}

/* Take (and clear) the time task p started waiting, 0 if it was not waiting. */
static __always_inline u64 wait_end(struct task_struct *p, u32 pid, const bool direct)
{
	u64 start = 0;
	if (direct && have_task_storage) {
		u64 *ts = bpf_task_storage_get(&wait_ts, p, 0, 0);
		if (ts) {
			start = *ts;
			*ts = 0;
		}
	} else {
		u64 *ts = bpf_map_lookup_elem(&wait_start, &pid);
		if (ts) {
			start = *ts;
			bpf_map_delete_elem(&wait_start, &pid);
		}
	}
	return start;
}

static __always_inline const volatile struct cpu_topo *topo_of(u32 cpu)
{
	if (cpu >= MAX_CPUS)
		return NULL;
	/* Bounded again on the register the access uses: 6.1's verifier loses the bound
	 * when the compiler checks one copy of cpu and indexes with another, reloaded from
	 * the stack (seen in the migrate hook). */
	asm volatile("" : "+r"(cpu));
	cpu &= MAX_CPUS - 1;
	const volatile struct cpu_topo *t = &topo[cpu];
	return t->valid ? t : NULL;
}

static __always_inline void count_proc_dropped(void)
{
	struct cpu_stat *cs = this_cpu();
	if (cs)
		cs->proc_dropped++;
}
