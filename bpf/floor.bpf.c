// SPDX-License-Identifier: GPL-2.0
/*
 * The floor: an empty program on each tracepoint llctop hooks per context switch, loaded
 * next to llctop's in the same window by scripts/overhead.sh, so llctop's cost per event
 * is a ratio to the least any BPF program on that event costs on this machine (the
 * trampoline and the call), measured side by side.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(floor_migrate, struct task_struct *p, int dest_cpu)
{
	return 0;
}
