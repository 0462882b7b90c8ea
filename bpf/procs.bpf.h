/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-process, per-LLC entries: finding or taking a proc_vals entry (a bounded search of
 * the free bitmap from a hint), and the per-CPU budget that rate-limits detail events.
 */

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
