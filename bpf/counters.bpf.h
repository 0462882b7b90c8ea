/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hardware counters: reading this CPU's perf counters (perf_event arrays userspace
 * opened) and their deltas since the last switch, for per-process attribution.
 */


struct pc_delta {
	u64 pc[NR_PC];
	u64 enabled;
	u64 running;
};

/*
 * Read this CPU's counters (bpf_perf_event_read_value on the perf source's own fds) and
 * return the deltas since the previous switch in *out. False when attribution is off,
 * nothing could be read, or this is the first reading on this CPU (baseline only).
 */
static __noinline bool read_counters_on(struct cpu_stat *cs, u32 cpu, struct pc_delta *out)
{
	u32 mask = pc_mask;
	if (!mask || cpu >= MAX_CPUS)
		return false;
	bool any = false, times = false;
	__builtin_memset(out, 0, sizeof(*out));
#pragma unroll
	for (int i = 0; i < NR_PC; i++) {
		if (!(mask & (1u << i)))
			continue;
		struct bpf_perf_event_value v;
		if (bpf_perf_event_read_value(&pmu, cpu * NR_PC + i, &v, sizeof(v)))
			continue;
		if (cs->pc_valid && v.counter >= cs->pc_last[i])
			out->pc[i] = v.counter - cs->pc_last[i];
		cs->pc_last[i] = v.counter;
		if (!times) {
			times = true;
			if (cs->pc_valid && v.enabled >= cs->pc_last_enabled &&
			    v.running >= cs->pc_last_running) {
				out->enabled = v.enabled - cs->pc_last_enabled;
				out->running = v.running - cs->pc_last_running;
			}
			cs->pc_last_enabled = v.enabled;
			cs->pc_last_running = v.running;
		}
		any = true;
	}
	bool had = cs->pc_valid;
	cs->pc_valid = any;
	return any && had;
}

/* Out of line but for the check that attribution is on at all. */
static __always_inline bool read_counters(struct cpu_stat *cs, u32 cpu, struct pc_delta *out)
{
	return pc_mask && read_counters_on(cs, cpu, out);
}
