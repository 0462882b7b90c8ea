/* SPDX-License-Identifier: GPL-2.0 */
/*
 * When each CPU sat idle, and how much of a watched new thread's run-queue wait fell in
 * the idle time of the CPU that was idle at its placement: the ring of a CPU's switches
 * into and out of idle (idle_mark), the idle time accumulated by a moment (idle_cum_at),
 * a placement's watch (watch_placed) and a switch-in's share of it (watch_wait).
 */

/* CPU cs switched into (idle) or out of idle at t (CLOCK_MONOTONIC): one ring entry
 * with the idle time accumulated by then; nothing when its state does not change. */
static __always_inline void idle_mark(struct cpu_stat *cs, u64 t, u32 idle)
{
	u32 h = cs->idle_head;
	u64 cum = cs->idle_cum;
	if (h) {
		u64 last = cs->idle_t[(h - 1) & (IDLE_RING - 1)];
		if ((last & 1) == idle)
			return;
		if ((last & 1) && t > (last & ~1ULL))
			cum += t - (last & ~1ULL);
	}
	u32 k = h & (IDLE_RING - 1);
	cs->idle_c[k] = cum;
	cs->idle_t[k] = (t & ~1ULL) | idle;
	cs->idle_cum = cum;
	cs->idle_head = h + 1;
}

/* The idle time CPU ys had accumulated by t, from its newest ring entry at or before t;
 * false when t is older than every entry (the ring has moved on) or there is none. */
static __always_inline bool idle_cum_at(struct cpu_stat *ys, u64 t, u64 *out)
{
	u32 h = ys->idle_head;
	for (u32 i = 0; i < IDLE_RING; i++) {
		if (i >= h)
			return false;
		u32 k = (h - 1 - i) & (IDLE_RING - 1);
		u64 tk = ys->idle_t[k];
		u64 at = tk & ~1ULL;
		if (at <= t) {
			*out = ys->idle_c[k] + ((tk & 1) ? t - at : 0);
			return true;
		}
	}
	return false;
}

/* New thread pid of tgid, placed at now while an allowed CPU (idle_cpu, the lowest)
 * sat idle: watch its waits for watch_ns (the first from now: it is queued). */
static __always_inline void watch_placed(u32 pid, u32 tgid, s32 idle_cpu, u64 now)
{
	if (!watch_ns || pid == tgid || idle_cpu < 0)
		return;
	struct idle_watch w = {
		.tgid = tgid,
		.cpu = idle_cpu,
		.placed_ns = now,
		.until_ns = now + watch_ns,
		.ws = now,
	};
	if (bpf_map_update_elem(&idle_watch, &pid, &w, BPF_NOEXIST))
		return;
	if (w.until_ns > watch_until)
		watch_until = w.until_ns;
}

/* Task pid, when it is watched, switched out at t (CLOCK_MONOTONIC) still runnable — it
 * waits from t — or asleep (t 0: no wait); or was woken at t (woken): it waits from t
 * unless it waits already (preempted on its way to sleep and woken while queued, its
 * wait began at the preemption, as the kernel's trace has it) — a wakeup while it runs
 * is overwritten by its switch-out. */
static __always_inline void watch_mark(u32 pid, u64 t, const bool woken)
{
	struct idle_watch *w = bpf_map_lookup_elem(&idle_watch, &pid);
	if (w && !(woken && w->ws))
		w->ws = t;
}

/* Task pid switches in at we (CLOCK_MONOTONIC; read here when 0) after a wait of seg ns
 * by the waits' own clock: when it is watched, the part of the wait within its span, and
 * of that the part its idle CPU sat idle. The wait runs from its stamp (idle_watch.ws),
 * or seg before we without one. Only this switch-in writes the entry (a task switches in
 * on one CPU at a time). */
static __noinline void watch_wait(u32 pid, u64 seg, u64 we)
{
	struct idle_watch *w = bpf_map_lookup_elem(&idle_watch, &pid);
	if (!w)
		return;
	if (!we)
		we = bpf_ktime_get_ns();
	u64 ws = we - seg;
	if (w->ws) {
		ws = w->ws < we ? w->ws : we;
		w->ws = 0;
	}
	u64 lo = ws > w->placed_ns ? ws : w->placed_ns;
	u64 hi = we < w->until_ns ? we : w->until_ns;
	if (hi <= lo)
		return;
	w->wait_ns += hi - lo;
	w->waits++;
	struct cpu_stat *ys = stats_of((u32)w->cpu);
	u64 a = 0, b = 0;
	if (!ys || !idle_cum_at(ys, lo, &a) || !idle_cum_at(ys, hi, &b)) {
		w->partial++;
		return;
	}
	if (b > a)
		w->idle_ns += b - a < hi - lo ? b - a : hi - lo;
}
