/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Placements' idle scan and the event ring: which allowed CPUs sat idle when a new task
 * was placed (bpf_loop, or a bounded loop before 5.17), and emitting a detail event
 * (placement, migration, first run) into the rate-limited ring buffer.
 */

/* Which allowed CPUs sit idle: one bpf_loop step per CPU id. */
struct idle_scan {
	u64 mask;  /* address of the task's cpumask bits */
	u64 word;  /* the mask word holding the current CPU */
	u32 target;
	u32 idle;
	s32 first;
};

static long idle_scan_cpu(u64 i, void *ctx)
{
	struct idle_scan *s = ctx;
	if ((i & 63) == 0 &&
	    bpf_probe_read_kernel(&s->word, sizeof(s->word), (void *)(s->mask + (i >> 6) * 8)))
		return 1;
	if (!(s->word & (1ULL << (i & 63))) || i == s->target)
		return 0;
	/* The kernel's idle_cpu(): the idle task runs, nothing is queued, no wakeup is on
	 * its way there. Read as plain values (a rare path: placements only). */
	struct cpu_stat *other = stats_of((u32)i);
	if (!other || !other->rq_addr)
		return 0;
	struct rq *rq = (struct rq *)other->rq_addr;
	u64 curr = (u64)BPF_CORE_READ(rq, curr);
	u64 idle = (u64)BPF_CORE_READ(rq, idle);
	u32 pending = 0;
	if (bpf_core_field_exists(rq->ttwu_pending))
		pending = BPF_CORE_READ(rq, ttwu_pending);
	if (curr && curr == idle && BPF_CORE_READ(rq, nr_running) == 0 && !pending) {
		s->idle++;
		if (s->first < 0)
			s->first = (s32)i;
	}
	return 0;
}

/* A placement's idle allowed CPUs not scanned (see scan_bounded). */
#define IDLE_UNKNOWN (~0U)

/* The idle scan of a placement into cs, one bpf_loop step per CPU id (5.17+): only the
 * wakeup_new programs userspace loads where the kernel has bpf_loop reach it. */
static __noinline void scan_loop(struct cpu_stat *cs, u64 mask, u32 target)
{
	struct idle_scan s = { .mask = mask, .target = target, .first = -1 };
	bpf_loop(nr_cpu_ids < MAX_CPUS ? nr_cpu_ids : MAX_CPUS, idle_scan_cpu, &s, 0);
	cs->scan_idle = s.idle;
	cs->scan_first = s.first;
}

/* The same in a bounded loop, for kernels without bpf_loop: exact up to
 * SCAN_BOUNDED_CPUS CPU ids; beyond, not scanned (IDLE_UNKNOWN: said so). */
static __noinline void scan_bounded(struct cpu_stat *cs, u64 mask, u32 target)
{
	cs->scan_idle = IDLE_UNKNOWN;
	cs->scan_first = -1;
	if (nr_cpu_ids > SCAN_BOUNDED_CPUS)
		return;
	struct idle_scan s = { .mask = mask, .target = target, .first = -1 };
	for (u32 i = 0; i < SCAN_BOUNDED_CPUS && i < nr_cpu_ids; i++)
		if (idle_scan_cpu(i, &s))
			break;
	cs->scan_idle = s.idle;
	cs->scan_first = s.first;
}

static __always_inline void emit_body(struct cpu_stat *cs, u8 kind, struct task_struct *p,
				      s32 from, s32 to, u8 dist, u8 cause, const bool direct)
{
	/* Events carry CLOCK_MONOTONIC (userspace's clock), read only when one is made. */
	u64 now = bpf_ktime_get_ns();
	if (!take_budget(cs, now, kind))
		return;
	/* One null check right after the reservation: 6.1's verifier cannot tell a second
	 * check of the same pointer is decided, and sees the reservation leak past it. */
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		cs->events_dropped++;
		return;
	}
	e->idle_allowed = 0;
	e->idle_cpu = -1;
	if (kind == EV_PLACEMENT) {
		/* Scanned by the wakeup_new hook just before (on_wakeup_new). */
		e->idle_allowed = cs->scan_idle;
		e->idle_cpu = cs->scan_first;
	}
	e->kind = kind;
	e->dist = dist;
	e->cause = cause;
	e->pad = 0;
	e->pid = RD(direct, p, pid);
	e->tgid = RD(direct, p, tgid);
	e->from_cpu = from;
	e->to_cpu = to;
	e->nr_cpus_allowed = RD(direct, p, nr_cpus_allowed);
	e->ts = now;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	bpf_ringbuf_submit(e, 0);
}

/*
 * Detail events are rare next to the events counted (a first run, a placement, a
 * migration within the budget): made out of line, one copy per kind of pointer read, so
 * the hooks' common path stays short (BPF subprograms take five arguments: kind, distance
 * and cause travel packed in one).
 */
#define EV_PACK(kind, dist, cause) ((u32)(kind) | (u32)(dist) << 8 | (u32)(cause) << 16)

static __noinline void emit_direct(struct cpu_stat *cs, struct task_struct *p, s32 from, s32 to,
				   u32 packed)
{
	emit_body(cs, packed & 0xff, p, from, to, (packed >> 8) & 0xff, (packed >> 16) & 0xff, true);
}

static __noinline void emit_probe(struct cpu_stat *cs, struct task_struct *p, s32 from, s32 to,
				  u32 packed)
{
	emit_body(cs, packed & 0xff, p, from, to, (packed >> 8) & 0xff, (packed >> 16) & 0xff, false);
}

#define emit(cs, kind, p, from, to, dist, cause, direct)                                    \
	((direct) ? emit_direct(cs, p, from, to, EV_PACK(kind, dist, cause)) :                  \
		    emit_probe(cs, p, from, to, EV_PACK(kind, dist, cause)))
