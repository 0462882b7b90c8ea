/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Minimal CO-RE subset of the kernel types llctop's BPF program touches.
 *
 * Every struct is marked preserve_access_index, so libbpf relocates field offsets
 * against the running kernel's BTF at load time; only the fields used here need to
 * exist, and their order/size here does not matter. Fields that exist only on some
 * kernels are tested with bpf_core_field_exists() and live in ___flavor structs.
 * Kept by hand (not `bpftool btf dump`) so the build needs neither bpftool nor the build
 * machine's kernel, and compiles in milliseconds.
 */
#ifndef __LLCTOP_VMLINUX_H__
#define __LLCTOP_VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __s8 s8;
typedef __u8 u8;
typedef __s16 s16;
typedef __u16 u16;
typedef __s32 s32;
typedef __u32 u32;
typedef __s64 s64;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_F_NO_PREALLOC = 1,
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

/* uapi: what bpf_perf_event_read_value() fills. */
struct bpf_perf_event_value {
	__u64 counter;
	__u64 enabled;
	__u64 running;
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct thread_info {
	u32 cpu;
};

/* Only its address is used: the bits start at offset 0 (struct cpumask { bits[] }). */
struct cpumask {
	unsigned long bits[1];
};

/* CONFIG_SCHED_INFO: the kernel's own run-delay accounting (kernel/sched/stats.h). */
struct sched_info {
	unsigned long pcount;
	unsigned long long run_delay;
	unsigned long long last_arrival;
	unsigned long long last_queued;
};

struct rq;

/* The run queue a CFS entity is queued on (CONFIG_FAIR_GROUP_SCHED keeps `rq` in it). */
struct cfs_rq {
	struct rq *rq;
};

struct sched_entity {
	struct cfs_rq *cfs_rq;
	/* The task's CPU time, updated by update_curr() (at every switch and tick). */
	u64 sum_exec_runtime;
};

/* The process's threads that have not yet exited (do_exit decrements it before the
 * sched_process_exit tracepoint: 0 there means the whole group is dead). */
typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
};

/* v7.2+ cache-aware scheduling (CONFIG_SCHED_CACHE): a process's cache group, what
 * get_pref_llc(), invalid_llc_nr() and exceed_llc_capacity() read (kernel/sched/fair.c). */
struct sched_cache_group {
	unsigned long epoch;
	u64 nr_running_avg;
	unsigned long footprint; /* pages, from NUMA-balancing faults */
	int cpu;                 /* the preferred CPU, -1 none */
};

struct task_struct {
	struct thread_info thread_info;
	unsigned int __state;
	unsigned int flags;
	int on_rq;
	pid_t pid;
	pid_t tgid;
	int nr_cpus_allowed;
	const struct cpumask *cpus_ptr;
	char comm[16];
	int prio;       /* as sched_switch's ftrace event shows it (120: nice 0) */
	int exit_state; /* EXIT_ZOMBIE / EXIT_DEAD, or 0 */
	struct task_struct *group_leader;
	struct signal_struct *signal;
	/* v7.2+ cache-aware scheduling (CONFIG_SCHED_CACHE); probed with
	 * bpf_core_field_exists(). */
	int preferred_llc;
	struct sched_cache_group *sched_cache_grp;
	int numa_preferred_nid; /* CONFIG_NUMA_BALANCING */
	struct sched_entity se;
	struct sched_info sched_info;
	u64 start_time; /* CLOCK_MONOTONIC at fork */
};

/* A CPU's run queue; only the fields llctop reads. */
struct rq {
	unsigned long cpu_epoch; /* v7.2+ CONFIG_SCHED_CACHE */
	unsigned int nr_llc_running; /* v7.2+ CONFIG_SCHED_CACHE */
	unsigned int nr_pref_llc_running; /* v7.2+ CONFIG_SCHED_CACHE */
	unsigned int nr_running;
	unsigned int ttwu_pending;
	struct task_struct *curr;
	struct task_struct *idle;
	u64 clock;
};

/* Kernels before 5.14 called the state field `state` (a long). */
struct task_struct___pre514 {
	long state;
};

/* Kernels before 5.16 (or without THREAD_INFO_IN_TASK) keep the CPU in task_struct. */
struct task_struct___cpu {
	unsigned int cpu;
};

struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
};

struct seq_file;

/* The context of an iter/task program: one call per task, then one with task NULL. */
struct bpf_iter_meta {
	struct seq_file *seq;
	u64 session_id;
	u64 seq_num;
};

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
};

struct bpf_map;

/* The context of an iter/bpf_map_elem program: one call per element, then one with key
 * NULL. */
struct bpf_iter__bpf_map_elem {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
	void *key;
	void *value;
};

#pragma clang attribute pop

/* The open-coded task iterator (kfuncs bpf_iter_task_*, v6.7+): opaque state on the
 * program's stack, and which tasks it walks. */
struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));

enum {
	BPF_TASK_ITER_ALL_PROCS = 0,
	BPF_TASK_ITER_ALL_THREADS = 1,
	BPF_TASK_ITER_PROC_THREADS = 2,
};

#endif /* __LLCTOP_VMLINUX_H__ */
