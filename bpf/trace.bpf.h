/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace mode (`llctop trace`): every context switch, waking, migration, new-task
 * placement, fork and exit as one record in the trace ring buffer, for userspace to write
 * as a Perfetto trace (src/trace/). Off by default: `trace_on` is a load-time constant, so
 * without it the verifier drops every trace path and the trace-only programs
 * (sched_waking, sched_process_fork) are not loaded at all. A record the ring has no room
 * for is counted per CPU (cpu_stat.trace_dropped), never lost silently.
 *
 * Included by llctop.bpf.c after the helpers it uses (topo_of, task_cpu, the maps).
 */

/* Records are submitted without waking the reader: it drains the buffer every few
 * milliseconds on its own. A wakeup per record would make the reader switch in and out
 * for each, and each of those switches would be a record (a loop that feeds itself). */
#define TRACE_SUBMIT 1 /* BPF_RB_NO_WAKEUP */

/* Set by userspace before load for `llctop trace`. */
const volatile bool trace_on = false;

/* Kinds of trace records. */
enum llctop_trace_kind { T_SWITCH = 1, T_WAKING, T_MIGRATE, T_PLACE, T_FORK, T_EXIT, T_EXEC, T_RENAME };
/* A migration the topology cannot classify (a CPU outside it). */
enum { T_DIST_NONE = 255 };

/* One trace record (56 bytes) of the rarer kinds (switches and wakings are staged in
 * batches, below). The fields' meaning depends on the kind:
 *   T_MIGRATE: cpu = the CPU that moved it; from -> target; dist, cause; pid/tgid/prio/comm.
 *   T_PLACE:   cpu = the parent's CPU; target = where the new task was put; pid/tgid/comm;
 *              x = nr_cpus_allowed; y = idle allowed CPUs then (~0: not scanned); from =
 *              the lowest of them (0xffff: none).
 *   T_FORK:    pid/tgid/comm of the child; x = parent pid; y = parent tgid.
 *   T_EXIT:    pid/tgid/comm of the exiting thread.
 *   T_EXEC:    pid/tgid and the new comm of a thread that exec'd.
 *   T_RENAME:  pid/tgid of a thread that named itself, and its new comm. */
struct trace_rec {
	u64 ts; /* CLOCK_MONOTONIC */
	u32 pid;
	u32 tgid;
	u8 kind;
	u8 dist;
	u8 cause;
	u8 pad;
	u16 cpu;
	u16 target;
	u16 from;
	u16 pad2;
	s32 prio;
	u32 x;
	u32 y;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* set before load: the trace buffer, or a page when off */
} trace_rb SEC(".maps");

/*
 * Switches and wakings — most of a trace — are not reserved one by one in the ring buffer
 * (a lock shared by every CPU and a submit each): each CPU stages them in a batch of its
 * own and hands the batch to the ring buffer whole (one copy, one lock) when it is full.
 * A switch and a waking each have their batch: the kernel never runs a program nested in
 * itself on one CPU (it skips the nested run and counts it in the program's
 * recursion_misses, which userspace reads as lost), so a batch has one writer at a time.
 * When the trace ends userspace sets trace_ctl, then reads what the batches still hold.
 */
enum { TRACE_BATCH = 128 };
/* What a batch holds (struct trace_batch.kind). */
enum llctop_trace_batch { TB_SWITCH = 101, TB_WAKING = 102 };
/* A staged switch's state when the kernel made it without firing sched_switch (struct
 * outgoing, unseen()): found at the next switch seen on the CPU and put back at the
 * incoming task's own sched_info.last_arrival; the outgoing task's state is not known. */
enum llctop_trace_state { TS_UNSEEN = 0x8000 };

/* One staged switch or waking (24 bytes). No task name: reading it would touch another
 * cache line of a task that may be cold, at every switch; userspace knows every thread's
 * name from /proc at the start and from the fork, exec and rename records after.
 *   switch: pid/tgid/prio of next; prev_pid; state = prev_state (ftrace encoding).
 *   waking: pid/tgid/prio of the woken task; prev_pid = its CPU (the target). */
struct trace_ev {
	u64 ts;
	u32 pid;
	u32 tgid;
	u32 prev_pid;
	u16 state;
	s16 prio;
};

struct trace_batch {
	u32 kind;
	u32 cpu;
	u32 n;
	u32 pad;
	struct trace_ev ev[TRACE_BATCH];
};

struct trace_stage {
	struct trace_batch sw;
	struct trace_batch wk;
};

/* CPU c's batches are entry c (sized to nr_cpu_ids before load; 1 when off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct trace_stage);
} trace_stage SEC(".maps");

/* Entry 0 is set to 1 by userspace when the trace ends: nothing more is written. A map of
 * its own (not .bss): userspace writes it from the trace's thread through a handle. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} trace_ctl SEC(".maps");

static __always_inline bool trace_stopping(void)
{
	u32 zero = 0;
	u32 *stop = bpf_map_lookup_elem(&trace_ctl, &zero);
	return !stop || *stop;
}

/* Never read or written: carries the records' layouts into BTF (src/source/bpf/tracing.rs). */
const volatile struct {
	enum llctop_trace_kind kind;
	enum llctop_trace_batch batch_kind;
	enum llctop_trace_state state;
	struct trace_rec rec;
	struct trace_batch batch;
} trace_layout;

/* sched_switch's prev_state as its ftrace event encodes it (__trace_sched_switch_state):
 * preempted is TASK_REPORT_MAX (0x100, "R+"); else the highest TASK_REPORT bit of the
 * state (with exit_state), TASK_REPORT_IDLE (0x80, "I") for an idle kthread. */
static __always_inline u32 trace_prev_state(bool preempt, struct task_struct *p, const bool direct)
{
	if (preempt)
		return 0x100;
	u32 raw = task_state(p, direct);
	u32 s = (raw | (u32)RD(direct, p, exit_state)) & 0x7f;
	if (!s)
		return raw == 0x402 ? 0x80 : 0;
	return 1u << log2_u64(s);
}

/* A record reserved and stamped, or NULL (counted as dropped; none while stopping). */
static __always_inline struct trace_rec *trace_reserve(u8 kind, u32 cpu)
{
	if (trace_stopping())
		return NULL;
	struct trace_rec *r = bpf_ringbuf_reserve(&trace_rb, sizeof(*r), 0);
	if (!r) {
		struct cpu_stat *cs = stats_of(cpu);
		if (cs)
			cs->trace_dropped++;
		return NULL;
	}
	r->ts = bpf_ktime_get_ns();
	r->kind = kind;
	r->cpu = (u16)cpu;
	r->dist = 0;
	r->cause = 0;
	r->pad = 0;
	r->pad2 = 0;
	r->target = 0;
	r->from = 0;
	r->x = 0;
	r->y = 0;
	return r;
}

/* pid, tgid, prio and comm of p into r. */
static __always_inline void trace_task(struct trace_rec *r, struct task_struct *p, const bool direct)
{
	r->pid = RD(direct, p, pid);
	r->tgid = RD(direct, p, tgid);
	r->prio = RD(direct, p, prio);
	if (direct)
		__builtin_memcpy(r->comm, p->comm, sizeof(r->comm));
	else
		BPF_CORE_READ_STR_INTO(&r->comm, p, comm);
}

/* The next free slot of this CPU's batch of `kind` (its record is then filled and the
 * batch handed over with trace_staged), or NULL while the trace is stopping. */
static __always_inline struct trace_ev *trace_slot(struct trace_batch **bp, u32 cpu, bool waking)
{
	if (trace_stopping())
		return NULL;
	struct trace_stage *st = bpf_map_lookup_elem(&trace_stage, &cpu);
	if (!st)
		return NULL;
	struct trace_batch *b = waking ? &st->wk : &st->sw;
	*bp = b;
	return &b->ev[b->n & (TRACE_BATCH - 1)];
}

/* The slot just filled counts; a full batch goes to the ring buffer whole. */
static __always_inline void trace_staged(struct trace_batch *b, u32 cpu, u32 kind)
{
	u32 n = (b->n & (TRACE_BATCH - 1)) + 1;
	if (n < TRACE_BATCH) {
		b->n = n;
		return;
	}
	b->kind = kind;
	b->cpu = cpu;
	b->n = TRACE_BATCH;
	if (bpf_ringbuf_output(&trace_rb, b, sizeof(*b), TRACE_SUBMIT)) {
		struct cpu_stat *cs = stats_of(cpu);
		if (cs)
			cs->trace_dropped += TRACE_BATCH;
	}
	b->n = 0;
}

/* pid, tgid and prio of p into a staged event. */
static __always_inline void trace_ev_task(struct trace_ev *e, struct task_struct *p, const bool direct)
{
	e->pid = RD(direct, p, pid);
	e->tgid = RD(direct, p, tgid);
	e->prio = (s16)RD(direct, p, prio);
}

/* A switch at `ts` (CLOCK_MONOTONIC: the switch hook has it already, from the run
 * queue's clock — a clock read costs more than the rest of the record on a VM). */
static __always_inline void trace_switch_body(u32 cpu, bool preempt, struct task_struct *prev,
					      struct task_struct *next, u64 ts, const bool direct)
{
	struct trace_batch *b;
	struct trace_ev *e = trace_slot(&b, cpu, false);
	if (!e)
		return;
	e->ts = ts;
	trace_ev_task(e, next, direct);
	e->prev_pid = RD(direct, prev, pid);
	e->state = (u16)trace_prev_state(preempt, prev, direct);
	trace_staged(b, cpu, TB_SWITCH);
}

static __noinline void trace_switch_direct(u32 cpu, bool preempt, struct task_struct *prev,
					   struct task_struct *next, u64 ts)
{
	trace_switch_body(cpu, preempt, prev, next, ts, true);
}

static __noinline void trace_switch_probe(u32 cpu, bool preempt, struct task_struct *prev,
					  struct task_struct *next, u64 ts)
{
	trace_switch_body(cpu, preempt, prev, next, ts, false);
}

/* A switch the kernel made without sched_switch, found now: `in` came in at `ts` (its own
 * arrival, on CLOCK_MONOTONIC) after prev_pid, the task the last switch seen here
 * brought in. */
static __always_inline void trace_unseen_body(u32 cpu, struct task_struct *in, u32 prev_pid,
					      u64 ts, const bool direct)
{
	struct trace_batch *b;
	struct trace_ev *e = trace_slot(&b, cpu, false);
	if (!e)
		return;
	e->ts = ts;
	trace_ev_task(e, in, direct);
	e->prev_pid = prev_pid;
	e->state = TS_UNSEEN;
	trace_staged(b, cpu, TB_SWITCH);
}

static __noinline void trace_unseen_direct(u32 cpu, struct task_struct *in, u32 prev_pid, u64 ts)
{
	trace_unseen_body(cpu, in, prev_pid, ts, true);
}

static __noinline void trace_unseen_probe(u32 cpu, struct task_struct *in, u32 prev_pid, u64 ts)
{
	trace_unseen_body(cpu, in, prev_pid, ts, false);
}

#define trace_unseen(cpu, in, prev_pid, ts, direct)                                          \
	((direct) ? trace_unseen_direct(cpu, in, prev_pid, ts) :                                 \
		    trace_unseen_probe(cpu, in, prev_pid, ts))

#define trace_switch(cpu, preempt, prev, next, ts, direct)                                   \
	((direct) ? trace_switch_direct(cpu, preempt, prev, next, ts) :                          \
		    trace_switch_probe(cpu, preempt, prev, next, ts))

/* T_WAKING, T_MIGRATE, T_PLACE, T_EXIT: one task, the CPUs and a packed word
 * (kind | dist << 8 | cause << 16). Out of line, one copy per kind of pointer read. */
static __always_inline void trace_task_event_body(struct task_struct *p, u32 cpu, u32 target,
						  u32 from, u32 packed, const bool direct)
{
	u8 kind = packed & 0xff;
	struct trace_rec *r = trace_reserve(kind, cpu);
	if (!r)
		return;
	trace_task(r, p, direct);
	r->target = (u16)target;
	r->from = (u16)from;
	r->dist = (packed >> 8) & 0xff;
	r->cause = (packed >> 16) & 0xff;
	if (kind == T_PLACE) {
		/* The idle scan the wakeup_new hook made just before (on_wakeup_new). */
		struct cpu_stat *cs = stats_of(cpu);
		r->x = RD(direct, p, nr_cpus_allowed);
		r->y = cs ? cs->scan_idle : IDLE_UNKNOWN;
		r->from = cs && cs->scan_first >= 0 ? (u16)cs->scan_first : 0xffff;
	}
	bpf_ringbuf_submit(r, TRACE_SUBMIT);
}

static __noinline void trace_task_direct(struct task_struct *p, u32 cpu, u32 target, u32 from,
					 u32 packed)
{
	trace_task_event_body(p, cpu, target, from, packed, true);
}

static __noinline void trace_task_probe(struct task_struct *p, u32 cpu, u32 target, u32 from,
					u32 packed)
{
	trace_task_event_body(p, cpu, target, from, packed, false);
}

#define trace_task_event(p, cpu, target, from, kind, dist, cause, direct)                    \
	((direct) ? trace_task_direct(p, cpu, target, from, EV_PACK(kind, dist, cause)) :        \
		    trace_task_probe(p, cpu, target, from, EV_PACK(kind, dist, cause)))

static __always_inline int on_waking(struct task_struct *p, const bool direct)
{
	if (!trace_on)
		return 0;
	u32 cpu = bpf_get_smp_processor_id();
	struct trace_batch *b;
	struct trace_ev *e = trace_slot(&b, cpu, true);
	if (!e)
		return 0;
	e->ts = bpf_ktime_get_ns();
	trace_ev_task(e, p, direct);
	e->prev_pid = task_cpu(p, direct);
	e->state = 0;
	trace_staged(b, cpu, TB_WAKING);
	return 0;
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child,
				   const bool direct)
{
	if (!trace_on)
		return 0;
	struct trace_rec *r = trace_reserve(T_FORK, bpf_get_smp_processor_id());
	if (!r)
		return 0;
	trace_task(r, child, direct);
	r->x = RD(direct, parent, pid);
	r->y = RD(direct, parent, tgid);
	bpf_ringbuf_submit(r, TRACE_SUBMIT);
	return 0;
}

static __always_inline int on_exec(struct task_struct *p, const bool direct)
{
	if (!trace_on)
		return 0;
	trace_task_event(p, bpf_get_smp_processor_id(), 0, 0, T_EXEC, 0, 0, direct);
	return 0;
}

/* A thread renamed itself (prctl PR_SET_NAME, a write to comm): its new name. */
static __always_inline int on_rename(struct task_struct *p, const char *comm, const bool direct)
{
	if (!trace_on)
		return 0;
	struct trace_rec *r = trace_reserve(T_RENAME, bpf_get_smp_processor_id());
	if (!r)
		return 0;
	trace_task(r, p, direct);
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	bpf_ringbuf_submit(r, TRACE_SUBMIT);
	return 0;
}
