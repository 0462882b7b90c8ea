/* SPDX-License-Identifier: GPL-2.0 */
/*
 * llctop's BPF program, the part every other part reads: the includes, the field-read
 * macro, the layout shared with userspace through BTF (limits, distance, cause and event
 * enums, the per-CPU, per-process and event structs — defined once, here; Rust's types
 * are generated from the object's BTF) and the maps. Included first by llctop.bpf.c.
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
	/* A CPU's last switches into or out of idle kept (cpu_stat.idle_t, a power of
	 * two), and the new threads whose waits are watched at once (idle_watch). */
	IDLE_RING = 32,
	IDLE_WATCHES = 4096,
	/* Processes whose cache group the settle walk keeps per interval (cas_procs). */
	CAS_PROCS = 8192,
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
 * exists): waits come from sched_info.last_queued and the sched_wakeup hook only stamps
 * the waits of threads watched beside an idle CPU (idle_watch; a clock read and a
 * compare otherwise). Without, the wakeup hook stamps each wait (task storage or a hash). */
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
	/* Migrations of tasks with a kernel-preferred LLC (v7.2+) onto it ([0]) and off it
	 * ([1]), by cause: counted on the CPU that ran the migrate hook. */
	u64 mig_pref[2][NR_CAUSE];
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
	/* When this CPU ran its idle task: its last IDLE_RING switches into or out of idle
	 * (entry i of idle_head counted: [i % IDLE_RING]), each one's time on
	 * CLOCK_MONOTONIC with bit 0 set when the CPU went idle then, and the idle time it
	 * had accumulated by then (idle_c). Written by this CPU only (idle_mark); a switch
	 * on another CPU reads them to tell how long this one sat idle within a wait
	 * (idle_cum_at). */
	u64 idle_cum;
	u32 idle_head;
	u32 idle_pad;
	u64 idle_t[IDLE_RING];
	u64 idle_c[IDLE_RING];
	/* This CPU's run queue's cache-aware counts (v7.2+), sampled by settle_walk (the
	 * open-coded task walk) before each read (cas_rq_counts; cas_sampled set then): tasks queued here with a
	 * kernel-preferred LLC (rq->nr_llc_running) and those of them on it
	 * (rq->nr_pref_llc_running). Written by the walk's CPU, once per read. */
	u32 cas_queued;
	u32 cas_queued_pref;
	u32 cas_sampled;
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
	/* Its migrations onto (to) and off (off) its kernel-preferred LLC (v7.2+): from a
	 * CPU outside it to one inside, and from inside to outside. */
	u64 mig_to_pref;
	u64 mig_off_pref;
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
	/* Its threads' switch-ins as the kernel counts them (sched_info.pcount), settled
	 * with the waits they ended (task_settle_one); 0 where tasks are not settled. Here,
	 * not in proc_counts: the accumulator slots of the switch path never hold it. */
	u64 runs;
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

/* A new thread placed while an allowed CPU sat idle (a pile-up's cost, issue "Advisor
 * you can trust"): the CPU its placement's idle scan found idle (the lowest), and, from
 * its placement until `until_ns` (CLOCK_MONOTONIC), the run-queue wait it had and the
 * part of that wait while that CPU ran its idle task — the wait that CPU could have
 * spared, measured at each switch-in (watch_wait). `partial`: waits whose start was older
 * than the idle CPU's ring (their idle part not counted). Written only at its own
 * switch-ins; userspace takes an entry once its span is over (idle_watch, by pid). */
struct idle_watch {
	u32 tgid;
	s32 cpu;
	u64 placed_ns;
	u64 until_ns;
	u64 wait_ns;
	u64 idle_ns;
	u32 waits;
	u32 partial;
	/* When its current wait began (CLOCK_MONOTONIC), 0 when it is not waiting: stamped
	 * at its placement, its wakeups (the sched_wakeup hook, loaded for this with
	 * sched_info too) and its switch-outs still runnable; cleared at a switch-out asleep
	 * and at the switch-in that ends the wait. One clock for every CPU, read where the
	 * wait begins, as the kernel's own trace stamps it: a run queue's clock lags behind
	 * it by as long as the queue went without an update. */
	u64 ws;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IDLE_WATCHES);
	__type(key, u32); /* pid */
	__type(value, struct idle_watch);
} idle_watch SEC(".maps");

/* How long after its placement a thread's waits are watched (userspace sets it: the
 * pile-up's cost span); 0: not at all. watch_until: the latest until_ns of any watch (the
 * switch hook looks a task up only before it). */
const volatile u64 watch_ns = 0;
u64 watch_until = 0;

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
	struct idle_watch idle_watch;
} layout;

/* A process's cache group as the kernel keeps it (v7.2+, CONFIG_SCHED_CACHE: its
 * leader's p->sched_cache_grp), read by the settle walk once per interval: the figures
 * the kernel's own rules for a preferred LLC read (get_pref_llc, invalid_llc_nr,
 * exceed_llc_capacity, account_mm_sched in kernel/sched/fair.c of 7.2). Userspace takes
 * every entry after the walk and empties the map. */
struct cas_proc {
	u64 nr_running_avg; /* grp->nr_running_avg: its threads running, averaged */
	u64 footprint;      /* grp->footprint, pages */
	u64 grp_epoch;      /* grp->epoch: the epoch of its last scan */
	u64 rq_epoch;       /* rq->cpu_epoch of the leader's CPU */
	s32 cpu;            /* grp->cpu: the CPU of its preferred LLC, -1 none */
	s32 numa_nid;       /* p->numa_preferred_nid, -1 none (or no NUMA balancing) */
	u32 has_grp;        /* 0: no cache group (a kernel thread, or not set up) */
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CAS_PROCS);
	__type(key, u32);
	__type(value, struct cas_proc);
} cas_procs SEC(".maps");
