/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hot path: the context switch (the outgoing task's slice and wait, the incoming
 * task's wait from sched_info, switches the program did not see), wakeups, and a new
 * task's placement with its idle scan.
 */

/* The task a switch takes off the CPU, as read from it. */
struct outgoing {
	u64 arrived; /* its sched_info.last_arrival (run queue clock), 0 unread */
	u32 pid;
	u32 tgid;
	s32 pref;    /* its preferred_llc, PREF_UNSET unread */
};

/* The kernel switched on this CPU without calling the switch hook: the outgoing task o
 * is not the one the last switch seen here brought in. Some kernels skip the
 * tracepoint for some tasks (seen on a vendor 6.18: switches out of its guest agent's
 * threads and out of idle). The task seen last ran from the last seen switch until o's
 * own arrival (`o->arrived`, on the run queue's clock; 0 without sched_info, or when it
 * is out of that span: then until now); that slice is settled here, and o's is set up
 * as if its switch-in had been seen, with its preferred-LLC verdict read now. The wait
 * that ended at the unseen switch-in is lost (the kernel has cleared its start):
 * counted per CPU and, in the slot of o's process, per process. With task_settle (ts)
 * the runtime is the kernel's own and the slice settles only its preferred-LLC time. */
static __noinline void unseen(struct cpu_stat *cs, u32 cpu, u64 now, struct outgoing *o,
			     bool ts)
{
	const volatile struct cpu_topo *t = topo_of(cpu);
	u64 arrived = o->arrived;
	u32 pid = o->pid, tgid = o->tgid;
	s32 pref = o->pref;
	cs->switches_unseen++;
	if (!(arrived > cs->last_switch_ns && arrived <= now))
		arrived = now;
	u32 was = cs->curr_pid ? cs->curr_tgid : 0;
	u64 ran = cs->curr_pid ? arrived - cs->last_switch_ns : 0;
	struct acc_slot *pa = t && was ? acc_of(cpu, was, t) : NULL;
	if (pa)
		settle(cs, pa, was, ran, !ts);
	else if (t && ran && !ts) {
		struct pc_delta none = {};
		slice_to_llc(was, t->llc, ran, &none, false);
	}
	cs->last_switch_ns = arrived;
	cs->curr_pid = pid;
	cs->curr_tgid = tgid;
	cs->curr_wait = 0;
	cs->curr_hit = t ? verdict(pref, t) : CURR_NONE;
	cs->curr_pref = pref;
	/* With task_settle the process's waits are the kernel's run_delay: none missing. */
	struct acc_slot *pb = t && pid && !ts ? acc_of(cpu, tgid, t) : NULL;
	if (pb)
		pb->c.unseen_ins++;
}

/* A time read by the switch hook (the run queue's clock when kq) on CLOCK_MONOTONIC,
 * with this CPU's last calibration pair (as trace records are). */
static __always_inline u64 mono_of(struct cpu_stat *cs, u64 t, const bool kq)
{
	return kq ? t - cs->cal_clock + cs->cal_mono : t;
}

/* Time t read by the switch hook at now (both on the run queue's clock when kq) on
 * CLOCK_MONOTONIC read now: exact across CPUs, where the calibration pair of mono_of
 * is off by up to a tick between CPUs whose sched_clock is not stable (QEMU TCG: enough
 * to put one CPU's idle spell on the wrong side of another's wait). For the rarer
 * points that compare CPUs: idle switches and watched waits. */
static __always_inline u64 ktime_of(u64 now, u64 t, const bool kq)
{
	return kq ? bpf_ktime_get_ns() - (now - t) : t;
}

/* The switch hook's body, with kq (the kernel's sched_info gives the waits, the run
 * queue the clock) and ts (task_settle: runtime and per-process waits settled from the
 * kernel's own counters elsewhere) literals: on_switch picks one copy, decided at load,
 * so the compiler lays the kept one out as straight code without carrying the flags. */
static __always_inline int switch_body(bool preempt, struct task_struct *prev,
				       struct task_struct *next, const bool direct, const bool kq,
				       const bool has_rq, const bool ts)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct cpu_stat *cs = stats_of(cpu);
	if (!cs)
		return 0;
	/* prev is the task this CPU's last switch brought in, kept in cs (before the first
	 * switch seen here it counts as idle: no slice has a start yet). */
	u32 prev_pid = cs->curr_pid;
	u32 prev_tgid = prev_pid ? cs->curr_tgid : 0;
	u32 next_pid = RD(direct, next, pid);
	u64 start = 0;
	bool first = false;
	if (kq && next_pid) {
		/* The kernel's own: enqueued at last_queued (0: not waiting), never run
		 * before when last_arrival is 0 (both change only after this tracepoint,
		 * in sched_info_arrive, which sets last_arrival with pcount; unlike pcount,
		 * last_arrival shares last_queued's cache line: one line, not two, on 6.18). */
		start = RD(direct, next, sched_info.last_queued);
		first = RD(direct, next, sched_info.last_arrival) == 0;
	}
	struct rq *rq = NULL;
	if (has_rq) {
		rq = direct ? prev->se.cfs_rq->rq : BPF_CORE_READ(prev, se.cfs_rq, rq);
		if (!cs->rq_addr)
			cs->rq_addr = (u64)rq;
	}
	u64 now;
	if (kq) {
		now = rq ? RD(direct, rq, clock) : 0;
		if (now - cs->cal_clock > CAL_NS) {
			cs->cal_clock = now;
			cs->cal_mono = bpf_ktime_get_ns();
		}
	} else {
		now = bpf_ktime_get_ns();
	}
	const volatile struct cpu_topo *t = topo_of(cpu);

	/* Close the slice that just ended. prev's process gets, in its accumulator slot
	 * on this CPU, the runtime and what its switch-in found (the wait that ended then,
	 * its preferred-LLC verdict); with counters, the runtime and counter deltas go
	 * straight to proc_vals together (the idle task's counters to tgid 0). */
	struct pc_delta pd;
	bool have_pc = read_counters(cs, cpu, &pd);
	u32 out_pid = RD(direct, prev, pid);
	if (out_pid != prev_pid && cs->last_switch_ns) {
		struct outgoing o = {
			.arrived = kq && out_pid ? RD(direct, prev, sched_info.last_arrival) : 0,
			.pid = out_pid,
			.tgid = out_pid ? RD(direct, prev, tgid) : 0,
			.pref = PREF_UNSET,
		};
		if (bpf_core_field_exists(prev->preferred_llc) && out_pid)
			o.pref = RD(direct, prev, preferred_llc);
		/* Tracing: the unseen switch-in put back where the kernel's sched_info says
		 * it was (only with it: without, or for idle, its time is not known). */
		if (trace_on && kq && o.arrived > cs->last_switch_ns && o.arrived <= now)
			trace_unseen(cpu, prev, prev_pid, mono_of(cs, o.arrived, kq),
				     direct);
		/* The unseen switch took this CPU out of idle at o's arrival (into idle:
		 * when is not known; marked now, so its idle time is not counted). */
		if (!cs->curr_pid != !o.pid)
			idle_mark(cs, ktime_of(now, o.pid && o.arrived > cs->last_switch_ns &&
						       o.arrived <= now ? o.arrived : now, kq),
				  !o.pid);
		unseen(cs, cpu, now, &o, ts);
		prev_pid = o.pid;
		prev_tgid = o.tgid;
	}
	u64 ran = cs->last_switch_ns && now > cs->last_switch_ns && prev_pid != 0 ?
			  now - cs->last_switch_ns : 0;
	/* With task_settle the slot is needed only for the preferred-LLC time (v7.2+),
	 * which is judged per slice; a task's last switch (it exited) settles it. */
	const bool slot = !ts || bpf_core_field_exists(next->preferred_llc);
	struct acc_slot *pa = slot && t && prev_pid ? acc_of(cpu, prev_tgid, t) : NULL;
	if (pa)
		settle(cs, pa, prev_tgid, ran, !have_pc && !ts);
	if (t && (have_pc || (ran && !pa && !ts)))
		slice_to_llc(prev_tgid, t->llc, ts ? 0 : ran, &pd, have_pc);
	if (ts && out_pid && task_state(prev, direct) == TASK_DEAD)
		task_settle_one(prev, t ? t->llc : LLC_UNKNOWN, SETTLE_LAST);
	if (!prev_pid != !next_pid)
		idle_mark(cs, ktime_of(now, now, kq), !next_pid);
	cs->last_switch_ns = now;
	cs->curr_pid = next_pid;
	cs->curr_tgid = next_pid ? RD(direct, next, tgid) : 0;
	cs->curr_wait = 0;
	cs->curr_hit = 0;
	cs->curr_pref = PREF_UNSET;
	cs->switches++;
	/* The switch's time on CLOCK_MONOTONIC: the run queue's clock (kq) put on it with
	 * this CPU's last calibration pair (taken within CAL_NS; the two clocks run at one
	 * rate in between), or the clock read above. */
	if (trace_on)
		trace_switch(cpu, preempt, prev, next, mono_of(cs, now, kq),
			     direct);

	/* Whether waits are watched now (a new thread placed beside an idle CPU, up to
	 * watch_ns after the last span): read once for both ends of the switch. */
	const bool watching = watch_ns && mono_of(cs, now, kq) <= watch_until + watch_ns;
	/* prev stays runnable when preempted (or still TASK_RUNNING): it starts waiting. */
	if (!kq) {
		u32 pid = RD(direct, prev, pid);
		if (pid != 0 && (preempt || task_state(prev, direct) == TASK_RUNNING))
			wait_begin(prev, pid, now, false, direct);
	} else if (watching && out_pid) {
		/* (with sched_info, only a watched thread's wait is stamped: see idle_watch.ws;
		 * as long as its switch-ins are read, so no stamp goes stale) */
		watch_mark(out_pid, preempt || task_state(prev, direct) == TASK_RUNNING ?
					    bpf_ktime_get_ns() : 0, false);
	}

	if (next_pid == 0)
		return 0;
	if (!kq) {
		start = wait_end(next, next_pid, direct);
		first = start & 1;
	}
	if (first)
		emit(cs, EV_FIRST_RUN, next, -1, cpu, 0, 0, direct);
	if (start && now > start) {
		u64 d = now - start;
		cs->rq_wait_ns += d;
		cs->rq_wait_cnt++;
		u32 b = log2_u64(d);
		if (b >= WAIT_BUCKETS)
			b = WAIT_BUCKETS - 1;
		cs->wait_hist[b & (WAIT_BUCKETS - 1)]++;
		if (t && !ts)
			cs->curr_wait = d;
	}
	/* A new thread placed beside an idle CPU: how much of this wait that CPU sat idle
	 * (from the wait's own stamp; without one, d back: the start's low bit, a first
	 * wait's mark, is 1 ns). A wait ending up to watch_ns after the last span may still
	 * reach into it. */
	if (watching)
		watch_wait(next_pid, start && now > start ? now - start : 0, kq ? 0 : now);

	/* The kernel's own preferred LLC (cache-aware scheduling, v7.2+): the slice that
	 * begins is a hit when it begins on the LLC whose kernel id is the preference (its
	 * runtime is added to pref_hit_ns or pref_miss_ns when it ends); -1 (none, or
	 * dropped) is kept too, so a cleared preference does not linger. */
	if (bpf_core_field_exists(next->preferred_llc) && t) {
		if (!kernel_preferred_llc)
			kernel_preferred_llc = 1;
		int pref = RD(direct, next, preferred_llc);
		cs->curr_hit = verdict(pref, t);
		cs->curr_pref = pref;
	}
	return 0;
}

/* `settles`: this program may settle tasks (task_settle_one, whose atomic exchange a
 * kernel before 5.12 refuses anywhere in a program, reached or not: the _old programs
 * leave it out). */
static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next,
				     const bool direct, const bool settles)
{
	/* Decided at load: the verifier drops the other path. */
	const bool has_rq = bpf_core_field_exists(((struct cfs_rq *)0)->rq) &&
			    bpf_core_field_exists(prev->se);
	if (sched_info_waits && has_rq && bpf_core_field_exists(next->sched_info)) {
		if (direct && settles && task_settle)
			return switch_body(preempt, prev, next, direct, true, true, true);
		return switch_body(preempt, prev, next, direct, true, true, false);
	}
	if (has_rq)
		return switch_body(preempt, prev, next, direct, false, true, false);
	return switch_body(preempt, prev, next, direct, false, false, false);
}

/* A woken task starts waiting: without sched_info_waits every one is stamped; with it,
 * only a thread watched beside an idle CPU (while one may be). */
static __always_inline int on_wakeup(struct task_struct *p, bool first, const bool direct)
{
	if (sched_info_waits) {
		u64 until = watch_until;
		if (!until)
			return 0;
		u64 t = bpf_ktime_get_ns();
		if (t <= until)
			watch_mark(RD(direct, p, pid), t, true);
		return 0;
	}
	u32 pid = RD(direct, p, pid);
	if (pid)
		wait_begin(p, pid, bpf_ktime_get_ns(), first, direct);
	return 0;
}

/* A new task placed: its placement's idle scan (with bpf_loop when `loop`, else the
 * bounded one: two programs, userspace loads the one the kernel can take), then the
 * detail event and, tracing, the trace record. */
static __always_inline int on_wakeup_new(struct task_struct *p, const bool direct, const bool loop)
{
	if (!sched_info_waits)
		on_wakeup(p, true, direct);
	struct cpu_stat *cs = this_cpu();
	if (!cs)
		return 0;
	cs->wakeup_new++;
	u32 here = bpf_get_smp_processor_id();
	u32 to = task_cpu(p, direct);
	u64 mask = (u64)RD(direct, p, cpus_ptr);
	if (loop)
		scan_loop(cs, mask, to);
	else
		scan_bounded(cs, mask, to);
	if (cs->scan_idle != IDLE_UNKNOWN && cs->scan_idle)
		watch_placed(RD(direct, p, pid), RD(direct, p, tgid), cs->scan_first,
			     bpf_ktime_get_ns());
	emit(cs, EV_PLACEMENT, p, here, to, 0, 0, direct);
	if (trace_on)
		trace_task_event(p, here, to, 0, T_PLACE, 0, 0, direct);
	return 0;
}
