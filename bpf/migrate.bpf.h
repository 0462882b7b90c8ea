/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Migrations: each one classified by distance (SMT, LLC, cross-LLC, cross-node) and
 * cause (wakeup, load balance, active balance — the stopper —, NUMA), counted per CPU
 * and in the LLC matrix; NUMA moves marked; a process's exit settled.
 */

static __always_inline bool current_is_stopper(void)
{
	char comm[16];
	if (bpf_get_current_comm(&comm, sizeof(comm)))
		return false;
	/* "migration/N": the stopper thread (active balance, affinity, exec, NUMA moves) */
	return comm[0] == 'm' && comm[1] == 'i' && comm[2] == 'g' && comm[3] == 'r' &&
	       comm[4] == 'a' && comm[5] == 't' && comm[6] == 'i' && comm[7] == 'o' &&
	       comm[8] == 'n' && comm[9] == '/';
}

/* Take task pid's NUMA-balancing mark, if it has one. */
static __always_inline bool take_numa_mark(u32 pid)
{
	if (!numa_marks || bpf_map_delete_elem(&numa_pending, &pid))
		return false;
	__sync_fetch_and_add(&numa_marks, (u64)-1);
	return true;
}

static __always_inline int on_migrate(struct task_struct *p, int dest, const bool direct,
				      const bool settles)
{
	struct cpu_stat *cs = this_cpu();
	if (!cs)
		return 0;
	u32 pid = RD(direct, p, pid);
	u32 from = task_cpu(p, direct);
	u32 to = (u32)dest;
	if (from == to)
		return 0;

	u8 cause;
	if (take_numa_mark(pid))
		cause = C_NUMA;
	else if (task_state(p, direct) & TASK_WAKING)
		cause = C_WAKEUP;
	else if (current_is_stopper())
		cause = C_ACTIVE;
	else
		cause = C_LB;
	cs->mig_cause[cause]++;

	u32 here = bpf_get_smp_processor_id();
	const volatile struct cpu_topo *h = topo_of(here);
	/* The copy of this CPU's LLC. */
	u32 copy = h && h->llc < nr_llc ? h->llc : 0;
	u32 k = copy * nr_cpu_ids + from;
	struct cpu_mig *m = bpf_map_lookup_elem(&cpu_mig, &k);
	if (m)
		__sync_fetch_and_add(&m->out, 1);
	k = copy * nr_cpu_ids + to;
	m = bpf_map_lookup_elem(&cpu_mig, &k);
	if (m)
		__sync_fetch_and_add(&m->in, 1);

	const volatile struct cpu_topo *a = topo_of(from);
	const volatile struct cpu_topo *b = topo_of(to);
	/* What it ran and waited since its last settle was on from's LLC: settled before it
	 * changes LLC (within one, the LLC it is counted on stays right). */
	if (direct && settles && task_settle && (!a || !b || a->llc != b->llc))
		task_settle_one(p, a ? a->llc : LLC_UNKNOWN, SETTLE_MOVE);
	/* The process's own count goes to this CPU's accumulator slot for it. */
	struct acc_slot *pa = acc_of(here, RD(direct, p, tgid), h);
	if (!a || !b) {
		cs->mig_unclassified++;
		if (pa)
			pa->c.mig_unclassified++;
		if (trace_on)
			trace_task_event(p, here, to, from, T_MIGRATE, T_DIST_NONE, cause, direct);
		return 0;
	}
	u8 d;
	if (a->node != b->node)
		d = D_XNODE;
	else if (a->llc != b->llc)
		d = D_XLLC;
	else if (a->core == b->core)
		d = D_SMT;
	else
		d = D_LLC;
	cs->mig_dist[d]++;
	if (pa && d < NR_DIST)
		pa->c.mig_dist[d]++;
	/* Onto or off the task's kernel-preferred LLC (v7.2+; the kernel's LLC ids). */
	if (d >= D_XLLC && bpf_core_field_exists(p->preferred_llc)) {
		int pref = RD(direct, p, preferred_llc);
		if (pref >= 0 && a->kernel_llc != b->kernel_llc) {
			int way = (u32)pref == b->kernel_llc ? 0 : (u32)pref == a->kernel_llc ? 1 : -1;
			if (way >= 0 && cause < NR_CAUSE) {
				cs->mig_pref[way][cause]++;
				if (pa) {
					if (way == 0)
						pa->c.mig_to_pref++;
					else
						pa->c.mig_off_pref++;
				}
			}
		}
	}
	if (a->llc < nr_llc && b->llc < nr_llc) {
		u32 idx = (copy * nr_llc + a->llc) * nr_llc + b->llc;
		u64 *cell = bpf_map_lookup_elem(&llc_matrix, &idx);
		if (cell)
			__sync_fetch_and_add(cell, 1);
	}
	if (d >= D_XLLC)
		emit(cs, EV_MIGRATION, p, from, to, d, cause, direct);
	if (trace_on)
		trace_task_event(p, here, to, from, T_MIGRATE, d, cause, direct);
	return 0;
}

static __always_inline int mark_numa(struct task_struct *p, const bool direct)
{
	if (!p) /* sched_swap_numa's dst_tsk may be NULL */
		return 0;
	u32 pid = RD(direct, p, pid);
	u8 one = 1;
	if (!bpf_map_update_elem(&numa_pending, &pid, &one, BPF_NOEXIST))
		__sync_fetch_and_add(&numa_marks, 1);
	return 0;
}

static __always_inline int on_exit(struct task_struct *p, const bool direct)
{
	/* task storage goes away with the task; the hash entry must be removed */
	u32 pid = RD(direct, p, pid);
	if (!direct && !sched_info_waits)
		bpf_map_delete_elem(&wait_start, &pid);
	take_numa_mark(pid);
	if (trace_on)
		trace_task_event(p, bpf_get_smp_processor_id(), 0, 0, T_EXIT, 0, 0, direct);
	/* The last thread of the process: note its exit, with the leader's name (what
	 * /proc/PID/comm showed; the leader outlives its threads as a zombie). */
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		u32 tgid = RD(direct, p, tgid);
		struct proc_exit e = {};
		BPF_CORE_READ_STR_INTO(&e.comm, p, group_leader, comm);
		if (bpf_map_update_elem(&exited, &tgid, &e, BPF_ANY))
			count_proc_dropped();
	}
	return 0;
}
