// SPDX-License-Identifier: GPL-2.0
/*
 * llctop's in-kernel aggregation. Every scheduler event is counted here (no sampling)
 * into per-CPU or atomically updated maps; userspace reads cumulative values once per
 * interval and takes deltas. Nothing per event goes to userspace except a rate-limited
 * ring buffer of detail events (placements, cross-LLC migrations) with a drop counter.
 *
 * Each hook exists twice: tp_btf/ (preferred) and raw_tp/ (fallback when the kernel
 * refuses tp_btf); userspace enables one set with set_autoload(). Both read task fields
 * with CO-RE (BPF_CORE_READ), so the same code serves 6.1 … 7.x.
 *
 * The context switch is the hot path (see docs/performance.md). Where the kernel keeps
 * sched_info (CONFIG_SCHED_INFO; userspace sets `sched_info_waits`), the switch hook reads
 * what the scheduler itself just computed instead of recomputing it: the run queue's
 * clock (updated by __schedule right before the tracepoint; the run queue reached
 * through the outgoing task's cfs_rq, as kernels without KALLSYMS_ALL give no address
 * for the per-CPU `runqueues`) as the time, and the incoming
 * task's sched_info.last_queued (its enqueue time, cleared only after the tracepoint) as
 * the start of its wait — no clock read, no task storage, no sched_wakeup hook. With tp_btf
 * (`task_settle`), per-process runtime and waits are not summed per switch at all: each
 * task's own se.sum_exec_runtime and sched_info.run_delay are settled into its process's
 * count for its LLC before it changes LLC, at its last switch and by a walk over every task
 * that userspace runs before each read (settle_walk, or settle_tasks before v6.7).
 * Otherwise (and for the v7.2 preferred-LLC time, judged per slice) per-process sums go
 * to per-CPU accumulators (a slot per process, direct-mapped by tgid), flushed to the
 * shared map only when another process needs the slot.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * Field reads: tp_btf hands us trusted BTF pointers that can be dereferenced directly
 * (a plain load, CO-RE-relocated); raw_tp pointers need bpf_probe_read_kernel, which
 * BPF_CORE_READ does. Handlers take `direct` as a compile-time constant, so each
 * wrapper keeps only its own kind of read.
 */
#define RD(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define TASK_WAKING 0x0200

/*
 * The layout shared with userspace is defined here, once: these named enums and the
 * structs below reach the object's BTF (through `layout` at the end of this block), and
 * libbpf-cargo generates Rust types from it (src/source/bpf/layout.rs decodes them).
 */
enum llctop_limits {
	MAX_CPUS = 4096,
	WAIT_BUCKETS = 32, /* log2 buckets of the run-queue wait histogram */
	/* Hardware-counter slots, in the order of userspace's perf Slot: cycles,
	 * instructions, cache-references, cache-misses, LLC read misses. */
	NR_PC = 5,
	/* Per-CPU accumulator slots (a power of two), one process each. */
	ACC_SLOTS = 256,
	/* The "LLC" of a process's own entry in proc_vals (no LLC has this id): its kernel
	 * preferred LLC. */
	PROC_LLC_SELF = MAX_CPUS,
	/* Entries of proc_vals (one per process and LLC), and the 64-bit words of the
	 * bitmap saying which are in use. */
	PROC_SLOTS = 65536,
	PROC_WORDS = PROC_SLOTS / 64,
	/* The most CPU ids a placement's idle scan covers without bpf_loop. */
	SCAN_BOUNDED_CPUS = 64,
};
/* Distance classes of a migration, nearest first. */
enum llctop_dist { D_SMT, D_LLC, D_XLLC, D_XNODE, NR_DIST };
/* Why a task moved. */
enum llctop_cause { C_WAKEUP, C_LB, C_ACTIVE, C_NUMA, C_OTHER, NR_CAUSE };
/* Kinds of detail events in the ring buffer. */
/* EV_FIRST_RUN: a new task ran for the first time (to_cpu: where). */
enum llctop_event_kind { EV_PLACEMENT = 1, EV_MIGRATION = 2, EV_FIRST_RUN = 3 };

struct cpu_topo {
	u32 core;
	u32 llc;
	u32 node;
	/* The kernel's id of this CPU's LLC (sd_llc_id), the id space of p->preferred_llc,
	 * as userspace derives it (src/preferred.rs: kernel_llc_ids). */
	u32 kernel_llc;
	u32 valid;
};

/* Filled by userspace from llctop's topology before load. */
const volatile struct cpu_topo topo[MAX_CPUS];
const volatile u32 nr_llc = 1;
const volatile u32 nr_cpu_ids = 1;
/* Detail events allowed per CPU per 100 ms. */
const volatile u32 event_budget = 64;

/* Bit i set: pmu[cpu * NR_PC + i] may hold a counter. Written by userspace after it
 * fills the pmu map; 0 (the default) turns attribution off. */
u32 pc_mask = 0;

/* Set to 1 by the switch hook when task_struct has preferred_llc (v7.2+). */
u32 kernel_preferred_llc = 0;

/* Set by userspace before load when the kernel keeps sched_info (/proc/PID/schedstat
 * exists): waits come from sched_info.last_queued and the sched_wakeup hook stays
 * unloaded. Otherwise the wakeup hook stamps each wait (task storage or a hash). */
const volatile bool sched_info_waits = false;

/* What the kernel offers, probed by userspace before load (src/source/bpf/features.rs):
 * task-local storage maps (5.11); without them the maps that need it are not created and
 * waits are stamped in a hash. The code that needs bpf_loop (5.17) lives only in the
 * programs userspace loads where the kernel has it (the _bounded wakeup_new programs
 * scan allowed CPUs in a bounded loop instead); no program needs an atomic that fetches
 * (5.12) except the per-task settle, which is only on where the kernel has both. */
const volatile bool have_task_storage = true;

/* Set by userspace before load, with tp_btf hooks, sched_info and an iter/task program:
 * each task's runtime and run-queue wait are the kernel's own se.sum_exec_runtime and
 * sched_info.run_delay, settled (task_settle_one()) into its process's entry for the LLC
 * it ran on when it moves to another LLC, at its last switch, and when userspace runs the
 * task iterator before each read — not at every context switch. Otherwise the switch hook
 * adds each slice and each wait it sees to the outgoing process's accumulator slot. */
const volatile bool task_settle = false;
/* CLOCK_MONOTONIC when userspace loaded the program: a task started after it counts
 * from its start; one started before, from the first time a settle sees it (the task
 * iterator, run at attach, sees every task). */
const volatile u64 load_ns = 0;

/* NUMA-balancing marks in numa_pending (the migrate hook looks only when there are). */
u64 numa_marks = 0;

/* How often (rq clock ns) a CPU pairs its rq clock with CLOCK_MONOTONIC for userspace. */
#define CAL_NS 50000000ULL
/* acc_slot.pref before this CPU stored a preference for the slot's process;
 * cpu_stat.curr_pref when the switch-in read none. */
enum llctop_pref { PREF_UNSET = -2 };
/* cpu_stat.curr_hit: the running task's switch-in on or off its kernel-preferred LLC. */
enum llctop_curr_hit { CURR_NONE, CURR_HIT, CURR_MISS };

struct cpu_stat {
	/* What every switch touches first, together. */
	u64 last_switch_ns;   /* when the current slice began (rq clock, or CLOCK_MONOTONIC) */
	/* An rq clock reading and CLOCK_MONOTONIC taken with it (both 0 when last_switch_ns
	 * is CLOCK_MONOTONIC): userspace puts last_switch_ns on its own clock with them. */
	u64 cal_clock;
	/* This CPU's run queue (its address, taken at a switch here; 0 until then): the
	 * placement hook reads other CPUs' idle state from it. */
	u64 rq_addr;
	u64 switches;
	u64 rq_wait_ns;
	u64 rq_wait_cnt;
	u32 curr_pid;         /* running since last_switch_ns (0 = idle) */
	u32 curr_tgid;
	/* What curr's switch-in found, owed to its process and added to its accumulator
	 * slot when it switches out (one slot per switch): the run-queue wait that ended
	 * then, whether it began on its kernel-preferred LLC (CURR_HIT / CURR_MISS, 0 no
	 * preference: the slice's runtime is then hit or miss time), and that preference
	 * (PREF_UNSET: not read). Userspace adds them to curr_tgid with the running slice. */
	u64 curr_wait;
	s32 curr_pref;
	u32 curr_hit;
	u64 cal_mono;
	/* Run-queue waits by log2 bucket: [i] counts waits in [2^i, 2^(i+1)) ns. */
	u64 wait_hist[WAIT_BUCKETS];
	u64 mig_dist[NR_DIST];
	u64 mig_cause[NR_CAUSE];
	u64 mig_unclassified;
	u64 wakeup_new;
	/* Switches whose outgoing task is not the one the last switch seen here brought in:
	 * the kernel switched without calling this program (some kernels skip the
	 * tracepoint for some tasks); the wait that unseen switch-in ended is lost. */
	u64 switches_unseen;
	u64 events_dropped;
	/* Trace records (trace mode) the trace ring buffer had no room for. */
	u64 trace_dropped;
	/* Updates of proc_vals / proc_idx / exited refused because the map was full. */
	u64 proc_dropped;
	u64 budget_window;
	/* The last placement's idle scan (on_wakeup_new): the allowed CPUs other than the
	 * target that were idle, and the lowest (-1: none); IDLE_UNKNOWN when not scanned. */
	u32 scan_idle;
	s32 scan_first;
	u32 budget_used;        /* migration events in this window */
	u32 budget_used_new;    /* placement and first-run events in this window */
	u32 pc_valid;         /* pc_last holds a reading taken at the last switch */
	/* Counter values (raw) at the last switch, and the enabled/running times of the
	 * first slot that read; the slice since then belongs to curr_tgid. */
	u64 pc_last[NR_PC];
	u64 pc_last_enabled;
	u64 pc_last_running;
} __attribute__((aligned(64)));

#ifndef BPF_F_MMAPABLE
#define BPF_F_MMAPABLE (1U << 10)
#endif

/* CPU c's stats are entry c of one plain array, written by CPU c only (each entry whole
 * cache lines: no line shared between CPUs). Not a per-CPU array: mmapable, so userspace
 * reads them through a read-only mapping, with no copy per interval of every possible
 * CPU's value (the switch hook measured the same within the spread; the accumulator
 * slots, moved the same way, measured cheaper). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set to nr_cpu_ids before load */
	__type(key, u32);
	__type(value, struct cpu_stat);
} cpu_stats SEC(".maps");

/* Migrations onto / away from each CPU: cpu_mig[llc * nr_cpu_ids + cpu] counts those of
 * CPU cpu made by the CPUs of LLC llc (their hook ran there) — a copy per LLC, added to
 * atomically by its own CPUs only, like llc_matrix. Userspace sums the copies through a
 * read-only mapping: a per-CPU array was copied by the kernel at every read, a value per
 * CPU per possible CPU (1 MB on a 256-CPU machine). */
struct cpu_mig {
	u64 in;
	u64 out;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set to nr_llc * nr_cpu_ids before load */
	__type(key, u32);
	__type(value, struct cpu_mig);
} cpu_mig SEC(".maps");

/* llc_matrix[(llc * nr_llc + from) * nr_llc + to]: the moves from LLC `from` to LLC `to`
 * made by the CPUs of LLC `llc` (their hook ran there): a copy per LLC, added to
 * atomically by its own CPUs only, so a count's cache line stays within one LLC. Userspace
 * sums the copies through a read-only mapping: a per-CPU array would be copied by the
 * kernel at every read — nr_llc² values per CPU, 8 MB on a 256-CPU, 64-LLC machine — and
 * a copy per CPU mapped would still be as large (issue "Scale"). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set to nr_llc * nr_llc * nr_llc before load */
	__type(key, u32);
	__type(value, u64);
} llc_matrix SEC(".maps");

/* Without sched_info_waits: when each runnable-but-not-running task started waiting:
 * task-local storage on the tp_btf path (no hashing), a hash keyed by pid on the raw_tp
 * path. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u64);
} wait_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} wait_start SEC(".maps");

/* Process entries: plain hash and array, not LRU. Userspace gives a process's entries
 * back once it exited and its counts were read, so they hold the processes alive (and
 * the just exited); when they are full anyway, what could not be stored is counted
 * (cpu_stat.proc_dropped), never lost silently by evicting another process's counts. */

struct proc_llc_key {
	u32 tgid;
	u32 llc;
};

/* What a process did on one LLC: completed runtime, run-queue waits that ended there,
 * runtime of slices begun on / off its kernel-preferred LLC, and its migrations — kept
 * in the shared array (proc_vals) and, until flushed there, in a CPU's accumulator slot
 * (acc). Only u64s: a flush adds them word by word. */
struct proc_counts {
	u64 runtime_ns;
	u64 wait_ns;
	/* Runtime of the slices that began on (hit) / off (miss) its kernel-preferred LLC. */
	u64 pref_hit_ns;
	u64 pref_miss_ns;
	/* The process's migrations, by distance and unclassified, under the LLC of the
	 * CPU that ran the migrate hook (not where the task went: a per-process sum). */
	u64 mig_dist[NR_DIST];
	u64 mig_unclassified;
	/* Switch-ins of its threads the kernel made without calling the switch hook
	 * (cpu_stat.switches_unseen): the run-queue waits they ended are missing. */
	u64 unseen_ins;
};

/* A process on one LLC: its counts, and the counter deltas of its completed slices
 * (raw, with the enabled/running time deltas to scale them). The idle task is tgid 0
 * (counters only), so that per-process sums add up to the per-CPU totals. */
struct proc_llc_val {
	struct proc_counts c;
	u64 pc[NR_PC];
	u64 pc_enabled;
	u64 pc_running;
	/* In the process's own entry (LLC PROC_LLC_SELF): the last p->preferred_llc seen
	 * (the kernel's LLC id); -1 for none, and in every other entry. */
	s64 preferred_llc;
};

/* proc_vals entry i: the process and LLC it belongs to, and their counts. The key is
 * PROC_KEY_NONE while the entry is free or being set up: an entry is zeroed before its
 * key is published, and userspace sets the key back to PROC_KEY_NONE before it frees it. */
#define PROC_KEY_NONE (~0ULL)
struct proc_llc_ent {
	u64 key; /* tgid << 32 | llc */
	struct proc_llc_val v;
};

/* Where process tgid's entry for LLC llc is in proc_vals. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROC_SLOTS);
	__type(key, struct proc_llc_key);
	__type(value, u32);
} proc_idx SEC(".maps");

/* The per-process counts, index-addressed and mmapable: userspace reads the entries in
 * use (proc_used) through a mapping every interval, with no system call and no copy by
 * the kernel, instead of walking a hash of 40,000 entries with batch calls (issue
 * "Scale": that walk was 10 ms of a 10,000-process interval). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, PROC_SLOTS);
	__type(key, u32);
	__type(value, struct proc_llc_ent);
} proc_vals SEC(".maps");

/* Which proc_vals entries are in use (bit i of word i / 64). The program sets a bit when
 * it takes an entry; userspace clears it when it frees one (an exited process, counted),
 * through the mapping of .bss. proc_hint: a word to start looking for a free entry at. */
u64 proc_used[PROC_WORDS];
u32 proc_hint;

/* proc_vals entry i is taken while this hash holds key i: an update with BPF_NOEXIST is
 * the test-and-set every kernel has (an atomic that fetches, such as a fetch-or on the
 * bitmap, needs 5.12). The bitmap says the same for userspace's reads: the program sets a
 * bit (an add, which every kernel has) once it holds the claim, userspace clears it and
 * then deletes the claim when it frees the entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PROC_SLOTS);
	__type(key, u32);
	__type(value, u8);
} proc_claim SEC(".maps");

/* Processes whose last thread exited since userspace last took them (it reads and
 * deletes them every interval), with the name /proc/PID/comm had: userspace forgets
 * their entries once counted and names them without reading /proc. */
struct proc_exit {
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u32); /* tgid */
	__type(value, struct proc_exit);
} exited SEC(".maps");

/* What a CPU owes proc_vals for one process on its LLC, not yet flushed: the slot
 * tgid & (ACC_SLOTS - 1) of the CPU holds the last process there; another one takes it
 * over after flushing it. Userspace adds the slots to what it reads from proc_vals. */
struct acc_slot {
	u32 tgid;             /* 0: empty */
	s32 pref;             /* preferred_llc last stored for tgid, PREF_UNSET none */
	struct proc_counts c;
};

/* CPU c's slots are [c * ACC_SLOTS, (c + 1) * ACC_SLOTS) of one plain array, each
 * written by its own CPU only. Not a per-CPU array: the slot a switch touches measured
 * ~8% more per switch there (per-CPU map memory comes from vmalloc'd chunks). */
/* Mmapable: userspace reads the slots through a read-only mapping, with no system call
 * and no copy of 80 bytes × 256 slots × CPUs by the kernel every interval. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, ACC_SLOTS); /* set to nr_cpu_ids * ACC_SLOTS before load */
	__type(key, u32);
	__type(value, struct acc_slot);
} acc SEC(".maps");

/* The per-CPU perf counters, pmu[cpu * NR_PC + slot], filled by userspace with the
 * perf source's fds (sized to nr_cpu_ids * NR_PC before load). */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} pmu SEC(".maps");

/* Tasks about to be moved by NUMA balancing (set by sched_move/swap_numa). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u8);
} numa_pending SEC(".maps");

struct event {
	u8 kind;
	u8 dist;   /* EV_MIGRATION: distance class */
	u8 cause;  /* EV_MIGRATION: cause */
	u8 pad;
	u32 pid;
	u32 tgid;
	s32 from_cpu; /* EV_PLACEMENT: the CPU of the parent (current) */
	s32 to_cpu;
	u32 nr_cpus_allowed;
	/* EV_PLACEMENT: the CPUs the task may use, other than to_cpu, that were idle when
	 * it was placed — as the kernel's idle_cpu() judges: running the idle task with
	 * nothing queued or being woken there (a CPU not seen switching since attach is not
	 * counted) — and the lowest of them (-1: none). */
	u32 idle_allowed;
	s32 idle_cpu;
	u64 ts;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* Never read or written: its type carries the shared layout into BTF (see the enums). */
const volatile struct {
	enum llctop_limits limits;
	enum llctop_dist dist;
	enum llctop_cause cause;
	enum llctop_event_kind kind;
	enum llctop_pref pref;
	enum llctop_curr_hit curr_hit;
	struct event event;
	struct acc_slot acc_slot;
} layout;

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

/* Bitmap words a search for a free proc_vals entry looks at, from proc_hint on (a bounded
 * loop: bpf_loop is 5.17+). 1,024 entries: a full stretch that long only when the table
 * is nearly full, and then the take is counted in proc_dropped. */
enum { TAKE_WORDS = 16 };

/* Take a free proc_vals entry for process tgid on LLC llc, zero it, store its index in
 * proc_idx and publish its key: its index, or -1 when none is free or another CPU stored
 * one for the same key meanwhile (this one is then given back). A global function: the
 * verifier checks it once, not at every path that reaches it. Every step is one an old
 * kernel has (see proc_claim): the claim, then the key set to PROC_KEY_NONE and the
 * values zeroed, then the bit set, then the key published by an add (from
 * PROC_KEY_NONE: ~0 + key + 1 = key) — userspace reads an entry whose bit is set once
 * its key is not PROC_KEY_NONE. */
__noinline int proc_take(u32 tgid, u32 llc)
{
	struct proc_llc_key k = { .tgid = tgid, .llc = llc };
	u32 idx = PROC_SLOTS, word = 0;
	u64 bit = 0;
	u8 one = 1;
	u32 hint = proc_hint;
	for (u32 i = 0; i < TAKE_WORDS; i++) {
		u32 w = (hint + i) & (PROC_WORDS - 1);
		u64 used = proc_used[w];
		if (used == ~0ULL)
			continue;
		u64 b = ~used & -~used;
		u32 cand = w * 64 + log2_u64(b);
		/* Another CPU holds it (its bit may not show yet): the next word. */
		if (bpf_map_update_elem(&proc_claim, &cand, &one, BPF_NOEXIST))
			continue;
		idx = cand;
		word = w;
		bit = b;
		break;
	}
	struct proc_llc_ent *e = bpf_map_lookup_elem(&proc_vals, &idx);
	if (!e)
		return -1;
	e->key = PROC_KEY_NONE;
	__builtin_memset(&e->v, 0, sizeof(e->v));
	e->v.preferred_llc = -1;
	__sync_fetch_and_add(&proc_used[word & (PROC_WORDS - 1)], bit);
	proc_hint = word;
	if (!bpf_map_update_elem(&proc_idx, &k, &idx, BPF_NOEXIST)) {
		/* Published last: userspace reads an entry once its key is set. */
		__sync_fetch_and_add(&e->key, ((u64)tgid << 32 | llc) + 1);
		return (int)idx;
	}
	__sync_fetch_and_add(&proc_used[word & (PROC_WORDS - 1)], -bit);
	bpf_map_delete_elem(&proc_claim, &idx);
	return -1;
}

/* The entry of process tgid on LLC llc in proc_vals and its index (*idx): looked up in
 * proc_idx, else (when create) taken (proc_take; when another CPU took one for the same
 * key meanwhile, that one). NULL when all are taken: counted in proc_dropped. Out of
 * line: reached from a slot takeover, a slice with counters or a task's settle, not from
 * every switch. */
static __noinline struct proc_llc_ent *ent_of(u32 tgid, u32 llc, bool create, u32 *idx)
{
	struct proc_llc_key k = { .tgid = tgid, .llc = llc };
	u32 *at = bpf_map_lookup_elem(&proc_idx, &k);
	if (!at && create) {
		proc_take(tgid, llc);
		at = bpf_map_lookup_elem(&proc_idx, &k);
	}
	if (!at) {
		if (create)
			count_proc_dropped();
		return NULL;
	}
	u32 i = *at;
	struct proc_llc_ent *e = bpf_map_lookup_elem(&proc_vals, &i);
	if (!e) {
		if (create)
			count_proc_dropped();
		return NULL;
	}
	*idx = i;
	return e;
}

static __always_inline struct proc_llc_val *llc_of(u32 tgid, u32 llc, bool create)
{
	u32 idx;
	struct proc_llc_ent *e = ent_of(tgid, llc, create, &idx);
	return e ? &e->v : NULL;
}

/* Rate limiter for detail events: event_budget per CPU per 100 ms for migrations, and as
 * many again for new tasks (placements, first runs), so a storm of migrations cannot
 * crowd out the placements a pile-up is judged on. */
static __always_inline bool take_budget(struct cpu_stat *cs, u64 now, u8 kind)
{
	u64 window = now / 100000000ULL;
	if (cs->budget_window != window) {
		cs->budget_window = window;
		cs->budget_used = 0;
		cs->budget_used_new = 0;
	}
	u32 *used = kind == EV_MIGRATION ? &cs->budget_used : &cs->budget_used_new;
	if (*used >= event_budget) {
		cs->events_dropped++;
		return false;
	}
	(*used)++;
	return true;
}

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

#include "trace.bpf.h"

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
	if (!a) {
		struct task_acct init = { .ent = PROC_SLOTS };
		if (p->start_time < load_ns) {
			init.runtime = rt;
			init.delay = dl;
		}
		a = bpf_task_storage_get(&task_acct, p, &init, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!a) {
			count_proc_dropped();
			return;
		}
	}
	if (a->done)
		return;
	if (why != SETTLE_LAST && a->runtime == rt && a->delay == dl)
		return;
	if (why == SETTLE_LAST)
		a->done = 1;
	u64 ran = rt - __sync_lock_test_and_set(&a->runtime, rt);
	u64 waited = dl - __sync_lock_test_and_set(&a->delay, dl);
	if ((!ran && !waited) || llc == LLC_UNKNOWN)
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
		trace_switch(cpu, preempt, prev, next, kq ? now - cs->cal_clock + cs->cal_mono : now,
			     direct);

	/* prev stays runnable when preempted (or still TASK_RUNNING): it starts waiting. */
	if (!kq) {
		u32 pid = RD(direct, prev, pid);
		if (pid != 0 && (preempt || task_state(prev, direct) == TASK_RUNNING))
			wait_begin(prev, pid, now, false, direct);
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

/* Without sched_info_waits: a woken task starts waiting. */
static __always_inline int on_wakeup(struct task_struct *p, bool first, const bool direct)
{
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
	emit(cs, EV_PLACEMENT, p, here, to, 0, 0, direct);
	if (trace_on)
		trace_task_event(p, here, to, 0, T_PLACE, 0, 0, direct);
	return 0;
}

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

/* ---- tp_btf (BTF-typed raw tracepoints): preferred ---- */

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true, true);
}

/* The same for kernels without atomic exchange (before 5.12): no per-task settle. */
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch_old, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true, false);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(btf_wakeup, struct task_struct *p)
{
	return on_wakeup(p, false, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new, struct task_struct *p)
{
	return on_wakeup_new(p, true, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new_bounded, struct task_struct *p)
{
	return on_wakeup_new(p, true, false);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(btf_migrate, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, true, true);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(btf_migrate_old, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, true, false);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p)
{
	return on_exit(p, true);
}

SEC("tp_btf/sched_move_numa")
int BPF_PROG(btf_move_numa, struct task_struct *p, int src_cpu, int dst_cpu)
{
	return mark_numa(p, true);
}

SEC("tp_btf/sched_swap_numa")
int BPF_PROG(btf_swap_numa, struct task_struct *src, int src_cpu, struct task_struct *dst, int dst_cpu)
{
	mark_numa(src, true);
	return mark_numa(dst, true);
}

/* Trace mode only (loaded when userspace sets trace_on). */
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_waking, struct task_struct *p)
{
	return on_waking(p, true);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child, true);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(btf_exec, struct task_struct *p)
{
	return on_exec(p, true);
}

SEC("tp_btf/task_rename")
int BPF_PROG(btf_rename, struct task_struct *p, const char *comm)
{
	return on_rename(p, comm, true);
}

/* Run by userspace before each read (and once at attach) where settle_walk is not
 * there: every task's runtime and wait since its last settle, on the LLC of the CPU it
 * is on (task_settle). */
SEC("iter/task")
int settle_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	if (!p || !task_settle)
		return 0;
	const volatile struct cpu_topo *t = topo_of(task_cpu(p, true));
	task_settle_one(p, t ? t->llc : LLC_UNKNOWN, SETTLE_READ);
	return 0;
}

/* The open-coded task iterator (v6.7+). Weak: the program that calls it is loaded only
 * where the kernel's BTF has it (userspace checks: src/source/bpf/settle.rs). */
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;

/* One element, so that one read of its iterator is one run of settle_walk. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} settle_once SEC(".maps");

/* settle_tasks' work in one program run, where the kernel has the open-coded task
 * iterator: every thread visited under RCU with no reference taken or pid looked up per
 * task (the kernel's task iterator does both, and runs the program once per task:
 * ~3x the cost, docs/performance.md (h)). Run by userspace before each read instead of
 * settle_tasks. The walk has no reschedule point: ~0.2 us per thread on one CPU. */
SEC("iter/bpf_map_elem")
int settle_walk(struct bpf_iter__bpf_map_elem *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *p;
	if (!ctx->key || !task_settle)
		return 0;
	bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_THREADS);
	while ((p = bpf_iter_task_next(&it))) {
		/* thread_info.cpu directly: every kernel with this iterator has it there
		 * (task_cpu()'s fallback branch does not survive the loop's codegen). */
		const volatile struct cpu_topo *t = topo_of(p->thread_info.cpu);
		task_settle_one(p, t ? t->llc : LLC_UNKNOWN, SETTLE_READ);
	}
	bpf_iter_task_destroy(&it);
	return 0;
}

/* ---- raw_tp: fallback with the same handlers ---- */

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, false, false);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_wakeup, struct task_struct *p)
{
	return on_wakeup(p, false, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new, struct task_struct *p)
{
	return on_wakeup_new(p, false, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new_bounded, struct task_struct *p)
{
	return on_wakeup_new(p, false, false);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(raw_migrate, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu, false, false);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_exit, struct task_struct *p)
{
	return on_exit(p, false);
}

SEC("raw_tp/sched_move_numa")
int BPF_PROG(raw_move_numa, struct task_struct *p, int src_cpu, int dst_cpu)
{
	return mark_numa(p, false);
}

SEC("raw_tp/sched_swap_numa")
int BPF_PROG(raw_swap_numa, struct task_struct *src, int src_cpu, struct task_struct *dst, int dst_cpu)
{
	mark_numa(src, false);
	return mark_numa(dst, false);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_waking, struct task_struct *p)
{
	return on_waking(p, false);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child, false);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(raw_exec, struct task_struct *p)
{
	return on_exec(p, false);
}

SEC("raw_tp/task_rename")
int BPF_PROG(raw_rename, struct task_struct *p, const char *comm)
{
	return on_rename(p, comm, false);
}
