/*
 * Witch (Wen, Liu, Byrne & Chabbi, ASPLOS 2018): sampled memory accesses
 * watched with the debug registers, for dead stores (DeadCraft), silent
 * stores (SilentCraft) and silent loads (LoadCraft). The decisions and the
 * attribution; the command does the ptrace work and calls in here at each
 * sample and trap.
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/util.h"

struct wslot {
	bool used; /* armed (or being armed) */
	bool live; /* armed with its value read */
	enum exp_witch_kind kind;
	uint64_t addr;
	unsigned len;   /* watched bytes (1, 2, 4, 8) */
	unsigned bytes; /* M: the sampled access's size (section 6.4) */
	unsigned fp;    /* EXP_WITCH_FP32 / FP64 / 0 */
	uint64_t ctx;
	uint8_t value[8];
};

struct wthread {
	pid_t tid;
	struct wslot slot[EXP_WITCH_MAX_SLOTS];
	/* Section 4.1: samples seen since a register of the kind was last
	 * free (k; the next sample replaces with probability N/k). */
	uint64_t k[EXP_WITCH_KINDS];
};

/* mu and eta of one (kind, context), section 4.2; narmed: watches from it
 * now armed, among which a trap's samples are shared. */
struct wctx {
	double mu, eta;
	unsigned narmed;
};

struct wpair {
	uint64_t watch, trap;
	unsigned kind;
	double waste, use;                   /* bytes, accumulated */
	uint64_t waste_written, use_written; /* what records said so far */
};

struct exp_witch {
	struct exp_sink out;
	struct exp_witch_config c;
	unsigned nslots[EXP_WITCH_KINDS];
	unsigned slots_of[EXP_WITCH_KINDS][EXP_WITCH_MAX_SLOTS];
	uint64_t rng;
	struct psup_u64map threads; /* tid -> struct wthread * */
	struct psup_u64map ctxs;    /* (ctx << 2 | kind) + 1 -> index + 1 in ctxv */
	struct wctx *ctxv;
	size_t nctx, ctx_cap;
	/* pairs: open addressing over pairv indices */
	struct wpair *pairv;
	size_t npairs, pairs_cap;
	uint32_t *pair_slots; /* index + 1, 0 empty */
	size_t pair_slot_cap;
	struct exp_witch_stats stats, stats_written;
};

static const char *const kind_names[EXP_WITCH_KINDS] = { "dead", "silent", "load" };

const char *exp_witch_kind_name(enum exp_witch_kind kind)
{
	return (unsigned)kind < EXP_WITCH_KINDS ? kind_names[kind] : "?";
}

/* Splits the debug registers between the analyses asked for: each gets
 * its own reservoir over its own registers (the paper runs one tool at a
 * time; several at once share the four). */
static void split_slots(struct exp_witch *x)
{
	unsigned kinds[EXP_WITCH_KINDS], n = 0, next = 0;

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++)
		if (x->c.kinds & (1u << k))
			kinds[n++] = k;
	for (unsigned i = 0; n && i < x->c.slots; i++) {
		unsigned k = kinds[i % n];
		x->slots_of[k][x->nslots[k]++] = next++;
	}
}

int exp_witch_new(const struct exp_sink *out, const struct exp_witch_config *c, struct exp_witch **out_x)
{
	struct exp_witch *x;
	unsigned nk = 0;

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++)
		nk += !!(c->kinds & (1u << k));
	if (!nk || c->kinds >> EXP_WITCH_KINDS || c->slots > EXP_WITCH_MAX_SLOTS || c->slots < nk ||
	    !(c->fp_precision >= 0.0) || !c->weight)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	if (out)
		x->out = *out;
	x->c = *c;
	x->rng = c->seed ? c->seed : psup_rand_seed();
	if (!x->rng)
		x->rng = 0x9e3779b97f4a7c15ULL;
	psup_u64map_init(&x->threads);
	psup_u64map_init(&x->ctxs);
	split_slots(x);
	*out_x = x;
	return 0;
}

static int witch_pairs(struct exp_witch *x, const char *kind, const uint64_t *vals, size_t n)
{
	return x->out.witch_pairs ? x->out.witch_pairs(x->out.ctx, kind, vals, n) : 0;
}

static int witch_stats(struct exp_witch *x, const char *name, const uint64_t *vals, size_t n)
{
	return x->out.witch_stats ? x->out.witch_stats(x->out.ctx, name, vals, n) : 0;
}

void exp_witch_free(struct exp_witch *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->threads.cap; i++)
		if (x->threads.keys[i])
			free((void *)(uintptr_t)x->threads.vals[i]);
	psup_u64map_release(&x->threads);
	psup_u64map_release(&x->ctxs);
	free(x->ctxv);
	free(x->pairv);
	free(x->pair_slots);
	free(x);
}

unsigned exp_witch_slots(const struct exp_witch *x, enum exp_witch_kind kind)
{
	return (unsigned)kind < EXP_WITCH_KINDS ? x->nslots[kind] : 0;
}

static struct wthread *thread_get(struct exp_witch *x, pid_t tid, bool create)
{
	bool created;
	uint64_t *v = create ? psup_u64map_upsert(&x->threads, (uint64_t)tid, &created)
			     : psup_u64map_find(&x->threads, (uint64_t)tid);
	struct wthread *t;

	if (!v)
		return NULL;
	if (*v)
		return (struct wthread *)(uintptr_t)*v;
	t = calloc(1, sizeof(*t));
	if (!t) {
		psup_u64map_remove(&x->threads, (uint64_t)tid);
		return NULL;
	}
	t->tid = tid;
	*v = (uintptr_t)t;
	return t;
}

static struct wctx *ctx_get(struct exp_witch *x, enum exp_witch_kind kind, uint64_t ctx)
{
	uint64_t key = ((ctx << 2) | (uint64_t)kind) + 1;
	bool created;
	uint64_t *v = psup_u64map_upsert(&x->ctxs, key, &created);

	if (!v)
		return NULL;
	if (created) {
		if (x->nctx == x->ctx_cap) {
			size_t cap = x->ctx_cap ? 2 * x->ctx_cap : 64;
			struct wctx *n = realloc(x->ctxv, cap * sizeof(*n));
			if (!n) {
				psup_u64map_remove(&x->ctxs, key);
				return NULL;
			}
			x->ctxv = n;
			x->ctx_cap = cap;
		}
		memset(&x->ctxv[x->nctx], 0, sizeof(x->ctxv[0]));
		*v = ++x->nctx;
	}
	return &x->ctxv[*v - 1];
}

static uint64_t pair_hash(uint64_t watch, uint64_t trap, unsigned kind)
{
	return psup_hash64(watch * 0x9e3779b97f4a7c15ULL ^ psup_hash64(trap) ^ kind);
}

static struct wpair *pair_get(struct exp_witch *x, uint64_t watch, uint64_t trap, unsigned kind)
{
	size_t mask, i;

	if (x->npairs * 2 >= x->pair_slot_cap) {
		size_t cap = x->pair_slot_cap ? 2 * x->pair_slot_cap : 256;
		uint32_t *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t p = 0; p < x->npairs; p++) {
			const struct wpair *e = &x->pairv[p];
			for (i = pair_hash(e->watch, e->trap, e->kind) & (cap - 1); slots[i];
			     i = (i + 1) & (cap - 1))
				;
			slots[i] = (uint32_t)p + 1;
		}
		free(x->pair_slots);
		x->pair_slots = slots;
		x->pair_slot_cap = cap;
	}
	mask = x->pair_slot_cap - 1;
	for (i = pair_hash(watch, trap, kind) & mask; x->pair_slots[i]; i = (i + 1) & mask) {
		struct wpair *e = &x->pairv[x->pair_slots[i] - 1];
		if (e->watch == watch && e->trap == trap && e->kind == kind)
			return e;
	}
	if (x->npairs == x->pairs_cap) {
		size_t cap = x->pairs_cap ? 2 * x->pairs_cap : 64;
		struct wpair *n = realloc(x->pairv, cap * sizeof(*n));
		if (!n)
			return NULL;
		x->pairv = n;
		x->pairs_cap = cap;
	}
	struct wpair *e = &x->pairv[x->npairs];
	memset(e, 0, sizeof(*e));
	e->watch = watch;
	e->trap = trap;
	e->kind = kind;
	x->pair_slots[i] = (uint32_t)++x->npairs;
	return e;
}

/* Which analyses an access feeds: stores (a read-modify-write is a store
 * too, as MEM_UOPS_RETIRED:ALL_STORES counts it) feed dead and silent,
 * loads feed load. */
static unsigned kinds_of(unsigned access_flags)
{
	unsigned k = 0;

	if (access_flags & EXP_WITCH_WRITE)
		k |= (1u << EXP_WITCH_DEAD) | (1u << EXP_WITCH_SILENT);
	if (access_flags & EXP_WITCH_READ)
		k |= 1u << EXP_WITCH_LOAD;
	return k;
}

static void slot_free(struct exp_witch *x, struct wslot *s)
{
	if (!s->used)
		return;
	struct wctx *c = ctx_get(x, s->kind, s->ctx);
	if (c && c->narmed)
		c->narmed--;
	s->used = s->live = false;
}

int exp_witch_sample(struct exp_witch *x, pid_t tid, uint64_t ctx,
		     const struct exp_witch_access *acc, unsigned nacc, const double *weight,
		     struct exp_witch_plan *plan)
{
	struct wthread *t = thread_get(x, tid, true);

	memset(plan, 0, sizeof(*plan));
	if (!t)
		return -ENOMEM;
	x->stats.samples++;
	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
		const struct exp_witch_access *a = NULL;
		unsigned n = x->nslots[k], pick = EXP_WITCH_MAX_SLOTS;

		if (!(x->c.kinds & (1u << k)))
			continue;
		/* The first access of the instruction this analysis looks at. */
		for (unsigned i = 0; i < nacc && !a; i++)
			if (kinds_of(acc[i].flags) & (1u << k))
				a = &acc[i];
		if (!a)
			continue;
		struct wctx *c = ctx_get(x, k, ctx);
		if (!c)
			return -ENOMEM;
		/* Section 4.2: every sample counts in its context. */
		c->mu += weight ? weight[k] : 1.0;
		x->stats.kind[k].samples++;
		plan->kinds |= 1u << k;
		/* Section 4.1: a free register takes the sample; else the k-th
		 * sample since one was last free replaces a random one with
		 * probability N/k, so every sample is watched with the same
		 * probability. */
		for (unsigned i = 0; i < n; i++)
			if (!t->slot[x->slots_of[k][i]].used) {
				pick = x->slots_of[k][i];
				break;
			}
		if (pick == EXP_WITCH_MAX_SLOTS) {
			if (t->k[k] < n)
				t->k[k] = n;
			t->k[k]++;
			if (psup_rand_next(&x->rng) % t->k[k] >= n) {
				x->stats.kind[k].not_chosen++;
				continue;
			}
			pick = x->slots_of[k][psup_rand_next(&x->rng) % n];
			slot_free(x, &t->slot[pick]);
			x->stats.kind[k].replaced++;
		} else {
			t->k[k] = n;
		}
		struct wslot *s = &t->slot[pick];
		s->used = true;
		s->live = false;
		s->kind = (enum exp_witch_kind)k;
		s->addr = a->addr;
		s->len = a->len;
		s->bytes = a->size;
		s->fp = a->flags & (EXP_WITCH_FP32 | EXP_WITCH_FP64);
		s->ctx = ctx;
		c->narmed++;
		struct exp_witch_arm *arm = &plan->arm[plan->narm++];
		arm->slot = pick;
		arm->kind = (enum exp_witch_kind)k;
		arm->addr = a->addr;
		arm->len = a->len;
		/* Dead stores need to see loads too (a load in between makes
		 * the store useful), and loads are only seen with RW. */
		arm->readwrite = k != EXP_WITCH_SILENT;
	}
	return 0;
}

void exp_witch_armed(struct exp_witch *x, pid_t tid, unsigned slot, int err, const uint8_t *value)
{
	struct wthread *t = thread_get(x, tid, false);
	struct wslot *s;

	if (!t || slot >= EXP_WITCH_MAX_SLOTS || !t->slot[slot].used)
		return;
	s = &t->slot[slot];
	if (err < 0) {
		if (err == -ENOSPC)
			x->stats.no_slot++;
		else
			x->stats.arm_failed++;
		slot_free(x, s);
		return;
	}
	memcpy(s->value, value, s->len);
	s->live = true;
	x->stats.kind[s->kind].armed++;
}

bool exp_witch_slot_is_armed(const struct exp_witch *x, pid_t tid, unsigned slot)
{
	uint64_t *v = psup_u64map_find(&x->threads, (uint64_t)tid);
	const struct wthread *t = v ? (const struct wthread *)(uintptr_t)*v : NULL;

	return t && slot < EXP_WITCH_MAX_SLOTS && t->slot[slot].live;
}

int exp_witch_slot_range(const struct exp_witch *x, pid_t tid, unsigned slot, uint64_t *addr,
			 unsigned *len)
{
	uint64_t *v = psup_u64map_find(&x->threads, (uint64_t)tid);
	const struct wthread *t = v ? (const struct wthread *)(uintptr_t)*v : NULL;

	if (!t || slot >= EXP_WITCH_MAX_SLOTS || !t->slot[slot].live)
		return -ENOENT;
	*addr = t->slot[slot].addr;
	*len = t->slot[slot].len;
	return 0;
}

/* Equal within the relative precision for floats (SilentCraft 6.1). */
static bool same_value(const struct exp_witch *x, const struct wslot *s, const uint8_t *now)
{
	if (!memcmp(s->value, now, s->len))
		return true;
	if (s->fp == EXP_WITCH_FP64 && s->len == 8) {
		double a, b;
		memcpy(&a, s->value, 8);
		memcpy(&b, now, 8);
		return isfinite(a) && isfinite(b) &&
		       fabs(a - b) <= x->c.fp_precision * fmax(fabs(a), fabs(b));
	}
	if (s->fp == EXP_WITCH_FP32 && s->len == 4) {
		float a, b;
		memcpy(&a, s->value, 4);
		memcpy(&b, now, 4);
		return isfinite(a) && isfinite(b) &&
		       fabs((double)a - (double)b) <= x->c.fp_precision * fmax(fabs(a), fabs(b));
	}
	return false;
}

int exp_witch_trap(struct exp_witch *x, pid_t tid, unsigned slot, unsigned trap_flags,
		   const uint8_t *value, uint64_t trap_ctx, struct exp_witch_verdict *out)
{
	struct wthread *t = thread_get(x, tid, false);
	struct wslot *s;
	bool waste;

	memset(out, 0, sizeof(*out));
	if (!t || slot >= EXP_WITCH_MAX_SLOTS || !t->slot[slot].live)
		return -ENOENT;
	s = &t->slot[slot];
	out->kind = s->kind;
	x->stats.kind[s->kind].traps++;
	switch (s->kind) {
	case EXP_WITCH_DEAD:
		/* DeadCraft: a load first (a read-modify-write reads before it
		 * writes) makes the store useful; a store kills it. */
		if (!(trap_flags & (EXP_WITCH_READ | EXP_WITCH_WRITE))) {
			x->stats.kind[s->kind].unknown++;
			out->disarm = true;
			slot_free(x, s);
			return 0;
		}
		waste = !(trap_flags & EXP_WITCH_READ);
		break;
	case EXP_WITCH_SILENT:
		/* A W watchpoint: the trap is a store; its value decides. */
		waste = same_value(x, s, value);
		break;
	case EXP_WITCH_LOAD:
	default:
		if (!(trap_flags & (EXP_WITCH_READ | EXP_WITCH_WRITE))) {
			x->stats.kind[s->kind].unknown++;
			out->disarm = true;
			slot_free(x, s);
			return 0;
		}
		if (!(trap_flags & EXP_WITCH_READ)) {
			/* LoadCraft 6.2: x86 has no read-only watchpoint; a
			 * store is dropped and the watch stays. */
			x->stats.kind[s->kind].dropped++;
			out->dropped = true;
			return 0;
		}
		waste = same_value(x, s, value);
		break;
	}
	/* Section 4.2: the watch stands for the samples of its context not
	 * yet represented, shared with the other watches from it. */
	struct wctx *c = ctx_get(x, s->kind, s->ctx);
	if (!c)
		return -ENOMEM;
	double share = c->mu - c->eta;
	if (c->narmed > 1)
		share /= c->narmed;
	if (share < 0)
		share = 0;
	c->eta += share;
	double bytes = share * (double)x->c.weight * (double)s->bytes;
	struct wpair *p = pair_get(x, s->ctx, trap_ctx, s->kind);
	if (!p)
		return -ENOMEM;
	if (waste) {
		p->waste += bytes;
		x->stats.kind[s->kind].waste_traps++;
	} else {
		p->use += bytes;
		x->stats.kind[s->kind].use_traps++;
	}
	out->waste = waste;
	out->bytes = bytes;
	out->disarm = true;
	/* 4.1: a trap frees the register: the next sample takes it. */
	slot_free(x, s);
	t->k[s->kind] = 0;
	return 0;
}

void exp_witch_disarmed(struct exp_witch *x, pid_t tid, unsigned slot)
{
	struct wthread *t = thread_get(x, tid, false);

	if (t && slot < EXP_WITCH_MAX_SLOTS)
		slot_free(x, &t->slot[slot]);
}

void exp_witch_thread_end(struct exp_witch *x, pid_t tid)
{
	struct wthread *t = thread_get(x, tid, false);

	if (!t)
		return;
	for (unsigned i = 0; i < EXP_WITCH_MAX_SLOTS; i++) {
		if (t->slot[i].live)
			x->stats.kind[t->slot[i].kind].expired++;
		slot_free(x, &t->slot[i]);
	}
	psup_u64map_remove(&x->threads, (uint64_t)tid);
	free(t);
}

void exp_witch_skip(struct exp_witch *x, enum exp_witch_skip why)
{
	if ((unsigned)why < EXP_WITCH_SKIPS)
		x->stats.skipped[why]++;
}

void exp_witch_get_stats(const struct exp_witch *x, struct exp_witch_stats *out)
{
	*out = x->stats;
}

int exp_witch_totals(const struct exp_witch *x, enum exp_witch_kind kind, double *waste,
		     double *use)
{
	*waste = *use = 0;
	for (size_t i = 0; i < x->npairs; i++)
		if (x->pairv[i].kind == (unsigned)kind) {
			*waste += x->pairv[i].waste;
			*use += x->pairv[i].use;
		}
	return 0;
}

static const char *const skip_names[EXP_WITCH_SKIPS] = {
	[EXP_WITCH_SKIP_SYSCALL] = "in_syscall",
	[EXP_WITCH_SKIP_NO_ACCESS] = "no_access",
	[EXP_WITCH_SKIP_UNWATCHABLE] = "unwatchable",
	[EXP_WITCH_SKIP_DECODE] = "undecodable",
	[EXP_WITCH_SKIP_READ] = "unreadable",
	[EXP_WITCH_SKIP_STEP] = "step_interrupted",
	[EXP_WITCH_SKIP_BLOCKED] = "signal_blocked",
	[EXP_WITCH_SKIP_STRAY] = "stray_trap",
};

const char *exp_witch_skip_name(enum exp_witch_skip why)
{
	return (unsigned)why < EXP_WITCH_SKIPS && skip_names[why] ? skip_names[why] : "?";
}

/*
 * Records: per analysis, the bytes of each pair attributed since the last
 * flush ("witch_pairs"), then the counters since the last flush
 * ("witch_stats"); a reader sums them. Bytes are kept as doubles (shares
 * of samples) and written as the integer growth of their running totals,
 * so nothing is lost to rounding over many flushes.
 */
int exp_witch_flush(struct exp_witch *x)
{
	enum { BATCH = 1024 };
	uint64_t vals[4 * BATCH];
	int err;

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
		size_t n = 0;

		if (!(x->c.kinds & (1u << k)))
			continue;
		for (size_t i = 0; i < x->npairs; i++) {
			struct wpair *p = &x->pairv[i];
			uint64_t waste = (uint64_t)llround(p->waste), use = (uint64_t)llround(p->use);

			if (p->kind != k || (waste == p->waste_written && use == p->use_written))
				continue;
			vals[4 * n] = p->watch;
			vals[4 * n + 1] = p->trap;
			vals[4 * n + 2] = waste - p->waste_written;
			vals[4 * n + 3] = use - p->use_written;
			p->waste_written = waste;
			p->use_written = use;
			if (++n == BATCH) {
				err = witch_pairs(x, kind_names[k], vals, 4 * n);
				if (err)
					return err;
				n = 0;
			}
		}
		if (n) {
			err = witch_pairs(x, kind_names[k], vals, 4 * n);
			if (err)
				return err;
		}
	}
	/* Counters: per analysis [samples, armed, replaced, not_chosen, traps,
	 * waste_traps, use_traps, dropped, unknown, expired], then the skips. */
	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
		const struct exp_witch_kind_stats *a = &x->stats.kind[k], *b = &x->stats_written.kind[k];
		uint64_t v[EXP_WITCH_KIND_COUNTERS] = {
			a->samples - b->samples,
			a->armed - b->armed,
			a->replaced - b->replaced,
			a->not_chosen - b->not_chosen,
			a->traps - b->traps,
			a->waste_traps - b->waste_traps,
			a->use_traps - b->use_traps,
			a->dropped - b->dropped,
			a->unknown - b->unknown,
			a->expired - b->expired,
		};
		bool any = false;

		if (!(x->c.kinds & (1u << k)))
			continue;
		for (unsigned i = 0; i < EXP_WITCH_KIND_COUNTERS; i++)
			any |= v[i] != 0;
		if (!any)
			continue;
		err = witch_stats(x, kind_names[k], v, EXP_WITCH_KIND_COUNTERS);
		if (err)
			return err;
	}
	uint64_t sk[EXP_WITCH_SKIPS + 4];
	bool any = false;
	for (unsigned i = 0; i < EXP_WITCH_SKIPS; i++) {
		sk[i] = x->stats.skipped[i] - x->stats_written.skipped[i];
		any |= sk[i] != 0;
	}
	sk[EXP_WITCH_SKIPS] = x->stats.samples - x->stats_written.samples;
	sk[EXP_WITCH_SKIPS + 1] = x->stats.no_slot - x->stats_written.no_slot;
	sk[EXP_WITCH_SKIPS + 2] = x->stats.arm_failed - x->stats_written.arm_failed;
	sk[EXP_WITCH_SKIPS + 3] = x->stats.signals - x->stats_written.signals;
	for (unsigned i = EXP_WITCH_SKIPS; i < EXP_WITCH_SKIPS + 4; i++)
		any |= sk[i] != 0;
	if (any) {
		err = witch_stats(x, "all", sk, EXP_WITCH_SKIPS + 4);
		if (err)
			return err;
	}
	x->stats_written = x->stats;
	return 0;
}

void exp_witch_signal_seen(struct exp_witch *x)
{
	x->stats.signals++;
}
