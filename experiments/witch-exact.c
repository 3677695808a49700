/*
 * Witch exact mode: dead stores, silent stores and silent loads measured on
 * every access (the ground truth the sampled witch approximates; DeadSpy,
 * RedSpy and LoadSpy in the Witch paper, section 7). Semantics are in
 * experiments.h.
 *
 * Shadow memory: per process, a hash from a 64-byte line of memory to its
 * shadow (who stored each byte last, whether a load read it since, who
 * loaded it last and the value loaded). Lines live in chunks that never
 * move, so an access holds pointers to its lines while it judges them.
 * Contexts are interned to 32-bit indices to keep the shadow at ~10 bytes
 * per byte of memory.
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "symbols/symbols.h"

_Static_assert((int)EXP_WEXACT_READ == (int)SYM_ACCESS_READ &&
		       (int)EXP_WEXACT_WRITE == (int)SYM_ACCESS_WRITE,
	       "access flags pass through from sym_insn_decode()");
_Static_assert((int)EXP_WEXACT_FP32 == (int)SYM_INSN_FP32 && (int)EXP_WEXACT_FP64 == (int)SYM_INSN_FP64,
	       "float flags pass through from sym_insn_decode()");

#define WX_LINE_SHIFT 6
#define WX_LINE_BYTES (1u << WX_LINE_SHIFT)
#define WX_CHUNK_LINES 64 /* lines per allocation (~38 KiB) */
/* Lines one access can span. */
#define WX_MAX_LINES (EXP_WEXACT_MAX_SIZE / WX_LINE_BYTES + 2)

struct wx_line {
	uint32_t store_ctx[WX_LINE_BYTES]; /* valid where has_store */
	uint32_t load_ctx[WX_LINE_BYTES];  /* valid where has_load */
	uint8_t load_val[WX_LINE_BYTES];   /* valid where has_load */
	uint64_t has_store;                /* bit b: byte b was stored */
	uint64_t pending;                  /* bit b: its last store is not judged yet (dead store) */
	uint64_t has_load;                 /* bit b: byte b was loaded */
};

struct wx_proc {
	pid_t pid;
	struct psup_u64map line_of; /* (line address >> 6) + 1 -> line index */
	struct wx_line **chunks;    /* WX_CHUNK_LINES lines each */
	size_t nchunks, nlines;
};

struct wx_pair {
	uint32_t watch, trap; /* context indices */
	uint64_t waste, use;
};

struct wx_pairs {
	struct psup_u64map index_of; /* watch << 32 | trap -> index + 1 in v */
	struct wx_pair *v;
	size_t len, cap;
	struct exp_wexact_total total;
};

struct exp_wexact {
	double precision;
	struct wx_proc **procs;
	size_t nprocs;
	struct wx_proc *last_proc;
	/* Contexts: ctx + 1 -> index (1-based) in ctxs; UINT64_MAX aside
	 * because its key would be 0. */
	struct psup_u64map ctx_index;
	uint32_t ctx_max_index;
	uint64_t *ctxs;
	size_t nctxs, ctxs_cap;
	struct wx_pairs pairs[EXP_WEXACT_KINDS];
	uint64_t accesses, bytes_loaded, bytes_stored;
};

int exp_wexact_new(double precision, struct exp_wexact **out)
{
	struct exp_wexact *w;

	*out = NULL;
	if (!(precision >= 0) || isinf(precision))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->precision = precision;
	psup_u64map_init(&w->ctx_index);
	for (int k = 0; k < EXP_WEXACT_KINDS; k++)
		psup_u64map_init(&w->pairs[k].index_of);
	*out = w;
	return 0;
}

static void wx_proc_free(struct wx_proc *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	psup_u64map_release(&p->line_of);
	free(p);
}

void exp_wexact_free(struct exp_wexact *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nprocs; i++)
		wx_proc_free(w->procs[i]);
	free(w->procs);
	psup_u64map_release(&w->ctx_index);
	free(w->ctxs);
	for (int k = 0; k < EXP_WEXACT_KINDS; k++) {
		psup_u64map_release(&w->pairs[k].index_of);
		free(w->pairs[k].v);
	}
	free(w);
}

static struct wx_proc *wx_proc_get(struct exp_wexact *w, pid_t pid, bool create)
{
	struct wx_proc *p, **procs;

	if (w->last_proc && w->last_proc->pid == pid)
		return w->last_proc;
	for (size_t i = 0; i < w->nprocs; i++) {
		if (w->procs[i]->pid == pid)
			return w->last_proc = w->procs[i];
	}
	if (!create)
		return NULL;
	procs = realloc(w->procs, (w->nprocs + 1) * sizeof(*procs));
	if (!procs)
		return NULL;
	w->procs = procs;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	psup_u64map_init(&p->line_of);
	w->procs[w->nprocs++] = p;
	return w->last_proc = p;
}

static struct wx_line *wx_line_at(struct wx_proc *p, size_t index)
{
	return &p->chunks[index / WX_CHUNK_LINES][index % WX_CHUNK_LINES];
}

/* The shadow line holding addr, created empty. NULL on -ENOMEM. */
static struct wx_line *wx_line_get(struct wx_proc *p, uint64_t addr)
{
	uint64_t key = (addr >> WX_LINE_SHIFT) + 1;
	uint64_t *slot;
	bool created;

	slot = psup_u64map_find(&p->line_of, key);
	if (slot)
		return wx_line_at(p, *slot);
	if (p->nlines == p->nchunks * WX_CHUNK_LINES) {
		struct wx_line **chunks = realloc(p->chunks, (p->nchunks + 1) * sizeof(*chunks));

		if (!chunks)
			return NULL;
		p->chunks = chunks;
		chunks[p->nchunks] = calloc(WX_CHUNK_LINES, sizeof(struct wx_line));
		if (!chunks[p->nchunks])
			return NULL;
		p->nchunks++;
	}
	slot = psup_u64map_upsert(&p->line_of, key, &created);
	if (!slot)
		return NULL;
	*slot = p->nlines++;
	return wx_line_at(p, *slot);
}

/* The index (>= 1) of context ctx, interned on first sight; 0 on -ENOMEM. */
static uint32_t wx_ctx_index(struct exp_wexact *w, uint64_t ctx)
{
	uint64_t *slot = NULL;
	bool created = false;

	if (ctx == UINT64_MAX) {
		if (w->ctx_max_index)
			return w->ctx_max_index;
	} else {
		slot = psup_u64map_find(&w->ctx_index, ctx + 1);
		if (slot)
			return (uint32_t)*slot;
	}
	if (w->nctxs + 1 >= UINT32_MAX)
		return 0;
	if (w->nctxs == w->ctxs_cap) {
		size_t cap = w->ctxs_cap ? w->ctxs_cap * 2 : 256;
		uint64_t *v = realloc(w->ctxs, cap * sizeof(*v));

		if (!v)
			return 0;
		w->ctxs = v;
		w->ctxs_cap = cap;
	}
	if (ctx != UINT64_MAX) {
		slot = psup_u64map_upsert(&w->ctx_index, ctx + 1, &created);
		if (!slot)
			return 0;
		*slot = w->nctxs + 1;
	} else {
		w->ctx_max_index = (uint32_t)(w->nctxs + 1);
	}
	w->ctxs[w->nctxs++] = ctx;
	return (uint32_t)w->nctxs;
}

/* The totals of pair (watch, trap) of one analysis; NULL on -ENOMEM. The
 * pointer is valid until the next call. */
static struct wx_pair *wx_pair_get(struct wx_pairs *ps, uint32_t watch, uint32_t trap)
{
	uint64_t key = (uint64_t)watch << 32 | trap;
	uint64_t *slot = psup_u64map_find(&ps->index_of, key);
	bool created;

	if (slot)
		return &ps->v[*slot - 1];
	if (ps->len == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 64;
		struct wx_pair *v = realloc(ps->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		ps->v = v;
		ps->cap = cap;
	}
	slot = psup_u64map_upsert(&ps->index_of, key, &created);
	if (!slot)
		return NULL;
	ps->v[ps->len] = (struct wx_pair){ .watch = watch, .trap = trap };
	*slot = ++ps->len;
	return &ps->v[ps->len - 1];
}

/* Adds bytes of waste or use to (watch, trap). Consecutive bytes of one
 * access mostly share their watch context: the caller keeps *cache. */
static int wx_attribute(struct wx_pairs *ps, uint32_t watch, uint32_t trap, bool waste,
			uint64_t bytes, struct wx_pair **cache)
{
	struct wx_pair *pr = *cache;

	if (!pr || pr->watch != watch || pr->trap != trap) {
		pr = wx_pair_get(ps, watch, trap);
		*cache = pr;
		if (!pr)
			return -ENOMEM;
	}
	if (waste) {
		pr->waste += bytes;
		ps->total.waste += bytes;
	} else {
		pr->use += bytes;
		ps->total.use += bytes;
	}
	return 0;
}

static bool wx_float_same(double a, double b, double precision)
{
	if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
		return false; /* bitwise-equal ones were taken already */
	return fabs(a - b) <= precision * fmax(fabs(a), fabs(b));
}

/*
 * Whether now[] holds the same value as prev[] over the bytes where
 * judged[] is set (section 6.4: one verdict for the instruction). A float
 * or double element judged in full is compared within the precision; one
 * judged in part, bytewise on its judged bytes.
 */
static bool wx_same_value(const uint8_t *prev, const uint8_t *now, const bool *judged,
			  unsigned size, unsigned flags, double precision)
{
	unsigned esize = flags & EXP_WEXACT_FP64 ? 8 : flags & EXP_WEXACT_FP32 ? 4
									       : 1;

	for (unsigned e = 0; e < size; e += esize) {
		unsigned n = e + esize <= size ? esize : size - e;
		unsigned njudged = 0;
		bool bytes_same = true;

		for (unsigned b = e; b < e + n; b++) {
			if (!judged[b])
				continue;
			njudged++;
			bytes_same &= prev[b] == now[b];
		}
		if (bytes_same)
			continue;
		if (njudged != esize || n != esize || esize == 1)
			return false;
		if (esize == 4) {
			float x, y;

			memcpy(&x, prev + e, 4);
			memcpy(&y, now + e, 4);
			if (!wx_float_same(x, y, precision))
				return false;
		} else {
			double x, y;

			memcpy(&x, prev + e, 8);
			memcpy(&y, now + e, 8);
			if (!wx_float_same(x, y, precision))
				return false;
		}
	}
	return true;
}

/* The lines of [addr, addr + size), created as needed; returns how many, or
 * -ENOMEM. */
static int wx_lines_get(struct wx_proc *p, uint64_t addr, unsigned size, struct wx_line **lines)
{
	uint64_t first = addr >> WX_LINE_SHIFT, last = (addr + size - 1) >> WX_LINE_SHIFT;
	int n = 0;

	for (uint64_t l = first; l <= last; l++) {
		lines[n] = wx_line_get(p, l << WX_LINE_SHIFT);
		if (!lines[n])
			return -ENOMEM;
		n++;
	}
	return n;
}

static int wx_load(struct exp_wexact *w, const struct exp_wexact_access *a, uint32_t me,
		   struct wx_line **lines)
{
	struct wx_pairs *dead = &w->pairs[EXP_WEXACT_DEAD_STORE];
	struct wx_pairs *silent = &w->pairs[EXP_WEXACT_SILENT_LOAD];
	struct wx_pair *cache_dead = NULL, *cache_silent = NULL;
	uint8_t prev[EXP_WEXACT_MAX_SIZE];
	bool judged[EXP_WEXACT_MAX_SIZE];
	unsigned njudged = 0;
	bool waste;
	int err = 0;

	for (unsigned i = 0, b = a->addr % WX_LINE_BYTES, l = 0; i < a->size; i++) {
		struct wx_line *ln = lines[l];
		uint64_t bit = 1ULL << b;

		/* The store before is used: not dead. */
		if (ln->pending & bit) {
			if (wx_attribute(dead, ln->store_ctx[b], me, false, 1, &cache_dead) < 0)
				err = -ENOMEM;
			ln->pending &= ~bit;
		}
		judged[i] = ln->has_load & bit;
		prev[i] = ln->load_val[b];
		njudged += judged[i];
		if (++b == WX_LINE_BYTES)
			b = 0, l++;
	}
	waste = njudged && wx_same_value(prev, a->before, judged, a->size, a->flags, w->precision);
	for (unsigned i = 0, b = a->addr % WX_LINE_BYTES, l = 0; i < a->size; i++) {
		struct wx_line *ln = lines[l];

		if (judged[i] &&
		    wx_attribute(silent, ln->load_ctx[b], me, waste, 1, &cache_silent) < 0)
			err = -ENOMEM;
		ln->has_load |= 1ULL << b;
		ln->load_ctx[b] = me;
		ln->load_val[b] = a->before[i];
		if (++b == WX_LINE_BYTES)
			b = 0, l++;
	}
	w->bytes_loaded += a->size;
	return err;
}

static int wx_store(struct exp_wexact *w, const struct exp_wexact_access *a, uint32_t me,
		    struct wx_line **lines)
{
	struct wx_pairs *dead = &w->pairs[EXP_WEXACT_DEAD_STORE];
	struct wx_pairs *silent = &w->pairs[EXP_WEXACT_SILENT_STORE];
	struct wx_pair *cache_dead = NULL, *cache_silent = NULL;
	bool judged[EXP_WEXACT_MAX_SIZE];
	unsigned njudged = 0;
	bool waste;
	int err = 0;

	for (unsigned i = 0, b = a->addr % WX_LINE_BYTES, l = 0; i < a->size; i++) {
		judged[i] = lines[l]->has_store & (1ULL << b);
		njudged += judged[i];
		if (++b == WX_LINE_BYTES)
			b = 0, l++;
	}
	waste = njudged && wx_same_value(a->before, a->after, judged, a->size, a->flags, w->precision);
	for (unsigned i = 0, b = a->addr % WX_LINE_BYTES, l = 0; i < a->size; i++) {
		struct wx_line *ln = lines[l];
		uint64_t bit = 1ULL << b;

		/* Stored again before any load: the earlier store was dead. */
		if ((ln->pending & bit) &&
		    wx_attribute(dead, ln->store_ctx[b], me, true, 1, &cache_dead) < 0)
			err = -ENOMEM;
		if (judged[i] &&
		    wx_attribute(silent, ln->store_ctx[b], me, waste, 1, &cache_silent) < 0)
			err = -ENOMEM;
		ln->pending |= bit;
		ln->has_store |= bit;
		ln->store_ctx[b] = me;
		if (++b == WX_LINE_BYTES)
			b = 0, l++;
	}
	w->bytes_stored += a->size;
	return err;
}

int exp_wexact_access(struct exp_wexact *w, pid_t pid, const struct exp_wexact_access *a)
{
	struct wx_line *lines[WX_MAX_LINES];
	struct wx_proc *p;
	uint32_t me;
	int err = 0, n;

	if (a->size == 0 || a->size > EXP_WEXACT_MAX_SIZE || a->addr + a->size - 1 < a->addr ||
	    !(a->flags & (EXP_WEXACT_READ | EXP_WEXACT_WRITE)) || !a->before ||
	    ((a->flags & EXP_WEXACT_WRITE) && !a->after))
		return -EINVAL;
	/* Everything that allocates comes before the shadow changes, so a
	 * failure drops the access whole. */
	p = wx_proc_get(w, pid, true);
	if (!p)
		return -ENOMEM;
	me = wx_ctx_index(w, a->ctx);
	if (!me)
		return -ENOMEM;
	n = wx_lines_get(p, a->addr, a->size, lines);
	if (n < 0)
		return n;

	w->accesses++;
	if (a->flags & EXP_WEXACT_READ)
		err = wx_load(w, a, me, lines);
	if (a->flags & EXP_WEXACT_WRITE) {
		int e = wx_store(w, a, me, lines);

		if (e < 0)
			err = e;
	}
	return err;
}

void exp_wexact_process_end(struct exp_wexact *w, pid_t pid)
{
	for (size_t i = 0; i < w->nprocs; i++) {
		if (w->procs[i]->pid != pid)
			continue;
		if (w->last_proc == w->procs[i])
			w->last_proc = NULL;
		wx_proc_free(w->procs[i]);
		w->procs[i] = w->procs[--w->nprocs];
		return;
	}
}

void exp_wexact_total(const struct exp_wexact *w, enum exp_wexact_kind kind,
		      struct exp_wexact_total *out)
{
	if ((unsigned)kind >= EXP_WEXACT_KINDS) {
		*out = (struct exp_wexact_total){ 0 };
		return;
	}
	*out = w->pairs[kind].total;
}

double exp_wexact_fraction(const struct exp_wexact_total *t)
{
	uint64_t all = t->waste + t->use;

	return all ? (double)t->waste / (double)all : 0.0;
}

static int wx_pair_cmp(const void *pa, const void *pb)
{
	const struct exp_wexact_pair *a = pa, *b = pb;

	if (a->waste != b->waste)
		return a->waste > b->waste ? -1 : 1;
	if (a->use != b->use)
		return a->use > b->use ? -1 : 1;
	if (a->watch_ctx != b->watch_ctx)
		return a->watch_ctx < b->watch_ctx ? -1 : 1;
	if (a->trap_ctx != b->trap_ctx)
		return a->trap_ctx < b->trap_ctx ? -1 : 1;
	return 0;
}

int exp_wexact_pairs(const struct exp_wexact *w, enum exp_wexact_kind kind,
		     struct exp_wexact_pair **out, size_t *n)
{
	const struct wx_pairs *ps;
	struct exp_wexact_pair *v;

	*out = NULL;
	*n = 0;
	if ((unsigned)kind >= EXP_WEXACT_KINDS)
		return -EINVAL;
	ps = &w->pairs[kind];
	if (!ps->len)
		return 0;
	v = malloc(ps->len * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ps->len; i++) {
		v[i] = (struct exp_wexact_pair){
			.watch_ctx = w->ctxs[ps->v[i].watch - 1],
			.trap_ctx = w->ctxs[ps->v[i].trap - 1],
			.waste = ps->v[i].waste,
			.use = ps->v[i].use,
		};
	}
	qsort(v, ps->len, sizeof(*v), wx_pair_cmp);
	*out = v;
	*n = ps->len;
	return 0;
}

void exp_wexact_stats(const struct exp_wexact *w, struct exp_wexact_stats *out)
{
	*out = (struct exp_wexact_stats){
		.accesses = w->accesses,
		.bytes_loaded = w->bytes_loaded,
		.bytes_stored = w->bytes_stored,
		.processes = w->nprocs,
	};
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wx_proc *p = w->procs[i];

		out->shadow_bytes += sizeof(*p) + p->nchunks * (WX_CHUNK_LINES * sizeof(struct wx_line) + sizeof(*p->chunks)) +
				     p->line_of.cap * 2 * sizeof(uint64_t);
	}
}
