/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's cache group (v7.2+ cache-aware scheduling, CONFIG_SCHED_CACHE), read from
 * its leader thread by the settle walk once per interval into cas_procs: the figures the
 * kernel's rules for a preferred LLC read, so that userspace can say why a process has
 * none (src/kstate/cache_aware.rs). Compiled out by the verifier where task_struct has
 * no sched_cache_grp.
 */

static __noinline void cas_read(struct task_struct *p)
{
	if (!bpf_core_field_exists(p->sched_cache_grp))
		return;
	u32 tgid = BPF_CORE_READ(p, tgid);
	struct cas_proc c = { .cpu = -1, .numa_nid = -1 };
	struct sched_cache_group *g = BPF_CORE_READ(p, sched_cache_grp);
	if (g) {
		c.has_grp = 1;
		c.nr_running_avg = BPF_CORE_READ(g, nr_running_avg);
		c.footprint = BPF_CORE_READ(g, footprint);
		c.grp_epoch = BPF_CORE_READ(g, epoch);
		c.cpu = BPF_CORE_READ(g, cpu);
	}
	if (bpf_core_field_exists(p->numa_preferred_nid))
		c.numa_nid = BPF_CORE_READ(p, numa_preferred_nid);
	/* The run queue's address is llctop's own (cpu_stat, no kernel type): taken out
	 * of it before the CO-RE read, which would relocate the whole expression. */
	struct cpu_stat *cs = stats_of(task_cpu(p, false));
	struct rq *rq = cs ? (struct rq *)cs->rq_addr : NULL;
	if (rq && bpf_core_field_exists(rq->cpu_epoch))
		c.rq_epoch = BPF_CORE_READ(rq, cpu_epoch);
	bpf_map_update_elem(&cas_procs, &tgid, &c, BPF_ANY);
}

/* One CPU's run-queue counts into its stats (a bpf_loop step). */
static long cas_rq_cpu(u64 i, void *ctx)
{
	struct cpu_stat *cs = stats_of((u32)i);
	if (!cs || !cs->rq_addr)
		return 0;
	/* Out of llctop's own map first, then the CO-RE reads (see cas_read). */
	struct rq *rq = (struct rq *)cs->rq_addr;
	cs->cas_queued = BPF_CORE_READ(rq, nr_llc_running);
	cs->cas_queued_pref = BPF_CORE_READ(rq, nr_pref_llc_running);
	cs->cas_sampled = 1;
	return 0;
}

/* Every CPU's run-queue cache-aware counts, once per walk of settle_walk (v7.2+,
 * CONFIG_SCHED_CACHE; the open-coded task walk, v6.7+, which 7.2 settles with): a
 * sample at the read, not a time average. Compiled out by the verifier where struct
 * rq has no nr_llc_running (bpf_loop, 5.17+, is then never reached). */
static __noinline void cas_rq_counts(void)
{
	struct rq *none = NULL;
	if (!bpf_core_field_exists(none->nr_llc_running) ||
	    !bpf_core_field_exists(none->nr_pref_llc_running))
		return;
	bpf_loop(nr_cpu_ids < MAX_CPUS ? nr_cpu_ids : MAX_CPUS, cas_rq_cpu, NULL, 0);
}
