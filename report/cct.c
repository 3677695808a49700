#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report-internal.h"

/*
 * The calling-context trees of the top-down and bottom-up views, built once
 * from the merged profile. The profile's node tree is already merged over
 * threads and runs by (parent, loc); here each loc is expanded into one level
 * per frame, and contexts that differ only in a leaf line fold together, so a
 * node is a function at a call site, as a reader thinks of it.
 */

struct ckey {
	uint32_t parent, function, image, file, line;
	bool inlined;
	bool spawned; /* a thread's outermost frame under its creation context */
};

static uint64_t ckey_hash(const struct ckey *k)
{
	uint64_t h = psup_hash64(((uint64_t)k->parent << 32) | k->function);

	h = psup_hash64(h ^ (((uint64_t)k->image << 32) | k->file));
	return psup_hash64(h ^ (((uint64_t)k->line << 2) | (uint64_t)k->spawned << 1 | k->inlined));
}

static uint64_t cnode_hash(const void *ctx, uint32_t row)
{
	const struct rep_cnode *c = &((const struct rep_ctree *)ctx)->nodes[row];
	struct ckey k = { c->parent, c->function, c->image, c->file, c->line, c->inlined,
			  c->spawned };

	return ckey_hash(&k);
}

static bool cnode_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct rep_cnode *c = &((const struct rep_ctree *)ctx)->nodes[row];
	const struct ckey *k = key;

	return c->parent == k->parent && c->function == k->function && c->image == k->image &&
	       c->file == k->file && c->line == k->line && c->inlined == k->inlined &&
	       c->spawned == k->spawned;
}

static int ctree_init(struct rep_ctree *t, const struct rep_profile *p)
{
	memset(t, 0, sizeof(*t));
	t->p = p;
	rep_index_init(&t->ix);
	t->cap = 256;
	t->nodes = malloc(t->cap * sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].parent = REP_NONE;
	t->nodes[0].fn = REP_NONE;
	t->n = 1;
	return 0;
}

void rep_ctree_release(struct rep_ctree *t)
{
	free(t->nodes);
	free(t->children);
	rep_index_release(&t->ix);
	memset(t, 0, sizeof(*t));
}

/* The row of k, created (with zero counts) when absent; REP_NONE on ENOMEM.
 * fns maps (function, image) to the dense fn index. */
static uint32_t ctree_get(struct rep_ctree *t, struct psup_u64map *fns, const struct ckey *key)
{
	/* without a file the line number means nothing */
	struct ckey kk = *key, *k = &kk;
	uint64_t h, *slot;
	struct rep_cnode *c;
	uint32_t row;
	bool created;

	if (!k->file)
		k->line = 0;
	h = ckey_hash(k);
	row = rep_index_find(&t->ix, h, cnode_eq, t, k);

	if (row != REP_NONE)
		return row;
	if (rep_grow32((void **)&t->nodes, &t->cap, t->n, sizeof(*t->nodes)))
		return REP_NONE;
	slot = psup_u64map_upsert(fns, ((uint64_t)k->function << 32) | k->image, &created);
	if (!slot)
		return REP_NONE;
	if (created)
		*slot = ++t->nfns;
	c = &t->nodes[t->n];
	memset(c, 0, sizeof(*c));
	c->parent = k->parent;
	c->function = k->function;
	c->image = k->image;
	c->file = k->file;
	c->line = k->line;
	c->inlined = k->inlined;
	c->spawned = k->spawned;
	c->fn = (uint32_t)(*slot - 1);
	c->depth = t->nodes[k->parent].depth + 1;
	c->first_child = c->nchildren = 0;
	if (c->depth > t->max_depth)
		t->max_depth = c->depth;
	if (rep_index_add(&t->ix, h, t->n, cnode_hash, t))
		return REP_NONE;
	return t->n++;
}

/* ---- ordering the children ------------------------------------------------ */

struct sortctx {
	const struct rep_ctree *t;
	bool by_exclusive;
};

static const char *str(const struct rep_profile *p, uint32_t id)
{
	const char *s = rep_str(p, id);

	return s ? s : "";
}

static int cmp_child(const void *x, const void *y, void *ctx)
{
	const struct sortctx *s = ctx;
	const struct rep_cnode *a = &s->t->nodes[*(const uint32_t *)x];
	const struct rep_cnode *b = &s->t->nodes[*(const uint32_t *)y];
	uint64_t a1 = s->by_exclusive ? a->exclusive : a->inclusive;
	uint64_t b1 = s->by_exclusive ? b->exclusive : b->inclusive;
	uint64_t a2 = s->by_exclusive ? a->inclusive : a->exclusive;
	uint64_t b2 = s->by_exclusive ? b->inclusive : b->exclusive;
	int c;

	if (a1 != b1)
		return a1 > b1 ? -1 : 1;
	if (a2 != b2)
		return a2 > b2 ? -1 : 1;
	if ((c = strcmp(str(s->t->p, a->function), str(s->t->p, b->function))))
		return c;
	if ((c = strcmp(str(s->t->p, a->file), str(s->t->p, b->file))))
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->inlined != b->inlined)
		return a->inlined ? 1 : -1;
	return strcmp(str(s->t->p, a->image), str(s->t->p, b->image));
}

/* Lays the children out in one array (parents come before their children,
 * so one counting pass does it) and sorts each node's list. */
static int ctree_link(struct rep_ctree *t, bool by_exclusive)
{
	struct sortctx s = { t, by_exclusive };
	uint32_t *fill;

	free(t->children);
	t->children = malloc((size_t)t->n * sizeof(*t->children));
	fill = calloc(t->n, sizeof(*fill));
	if (!t->children || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->n; i++)
		t->nodes[i].nchildren = 0;
	for (uint32_t i = 1; i < t->n; i++)
		t->nodes[t->nodes[i].parent].nchildren++;
	for (uint32_t i = 0, off = 0; i < t->n; i++) {
		t->nodes[i].first_child = off;
		off += t->nodes[i].nchildren;
	}
	for (uint32_t i = 1; i < t->n; i++) {
		struct rep_cnode *par = &t->nodes[t->nodes[i].parent];

		t->children[par->first_child + fill[t->nodes[i].parent]++] = i;
	}
	free(fill);
	for (uint32_t i = 0; i < t->n; i++)
		if (t->nodes[i].nchildren > 1)
			qsort_r(&t->children[t->nodes[i].first_child], t->nodes[i].nchildren,
				sizeof(uint32_t), cmp_child, &s);
	return 0;
}

/* ---- top-down ----------------------------------------------------------------- */

/* What one group of threads (those created at one context) adds up. */
struct td_group {
	uint32_t ctx;   /* profile node of the creation context, REP_NONE: none */
	uint64_t *self; /* profile node -> samples with it as the leaf */
	uint64_t *idle; /* profile node -> idleness, millionths */
	uint32_t *list; /* the profile nodes its samples need, ascending */
	uint32_t nlist;
};

static int add_leaf(uint64_t *arr, uint64_t n, uint64_t v, uint32_t nnodes)
{
	if (n >= nnodes)
		return 0;
	arr[n] = rep_sat_add(arr[n], v);
	return 1;
}

/* Marks n and its ancestors into g->list (mark: per profile node, the group
 * number + 1 that marked it last). */
static void mark_path(const struct rep_profile *p, struct td_group *g, uint32_t gi, uint32_t *mark,
		      uint32_t n)
{
	while (n != REP_NONE && n < p->nnodes && mark[n] != gi + 1) {
		mark[n] = gi + 1;
		g->list[g->nlist++] = n;
		n = p->nodes[n].parent;
	}
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Lays the nodes of g->list into the tree: a path of the group starts under
 * root (row 0, or the creation context's row, marked spawned), each loc a
 * level per frame. at[] gets, per profile node, the row of its innermost
 * frame. The list is in ascending order, which is topological: the model
 * creates a node after its parent.
 */
static int lay_group(struct rep_ctree *t, struct psup_u64map *fns, const struct rep_profile *p,
		     const struct td_group *g, uint32_t root, const struct rep_mframe *site,
		     const bool *overhead, uint32_t *at)
{
	for (uint32_t j = 0; j < g->nlist; j++) {
		uint32_t n = g->list[j];
		const struct rep_mnode *mn = &p->nodes[n];
		const struct rep_mloc *l = &p->locs[mn->loc];
		struct ckey k = { root, 0, l->image, 0, 0, false, root != 0 };

		if (mn->parent != REP_NONE && mn->parent < n) {
			const struct rep_mloc *pl = &p->locs[p->nodes[mn->parent].loc];

			/* the caller's innermost frame is where it made the call */
			k.parent = at[mn->parent];
			k.file = p->frames[pl->frames].file;
			k.line = p->frames[pl->frames].line;
			k.spawned = false;
		} else if (site) {
			k.file = site->file;
			k.line = site->line;
		}
		/* outermost frame first: inlined callees hang below their caller */
		for (uint32_t i = l->nframes; i-- > 0;) {
			const struct rep_mframe *f = &p->frames[l->frames + i];

			k.function = f->function;
			k.inlined = i + 1 < l->nframes;
			k.parent = ctree_get(t, fns, &k);
			if (k.parent == REP_NONE)
				return -ENOMEM;
			k.file = f->file;
			k.line = f->line;
			k.spawned = false;
		}
		at[n] = k.parent;
		if (!g->self)
			continue;
		struct rep_cnode *c = &t->nodes[at[n]];
		c->exclusive = rep_sat_add(c->exclusive, g->self[n]);
		c->idle_excl = rep_sat_add(c->idle_excl, g->idle[n]);
		if (overhead && overhead[n])
			c->overhead_excl = rep_sat_add(c->overhead_excl, g->self[n]);
	}
	return 0;
}

int rep_ctree_top_down(struct rep_ctree *t, const struct rep_profile *p)
{
	return rep_ctree_top_down_ext(t, p, NULL);
}

int rep_ctree_top_down_ext(struct rep_ctree *t, const struct rep_profile *p, const bool *overhead)
{
	struct psup_u64map fns, gix;
	struct td_group *groups = NULL;
	uint32_t ngroups = 0, groups_cap = 0;
	uint32_t *at = NULL, *mark = NULL, *mark0 = NULL, *at_base = NULL;
	size_t nn = (size_t)p->nnodes + 1;
	int rc;

	psup_u64map_init(&fns);
	psup_u64map_init(&gix);
	rc = ctree_init(t, p);
	if (rc)
		goto out;
	rc = -ENOMEM;
	at = malloc(nn * sizeof(*at));
	at_base = malloc(nn * sizeof(*at_base));
	/* group 0's marks apart: its list grows while the others mark theirs */
	mark = calloc(nn, sizeof(*mark));
	mark0 = calloc(nn, sizeof(*mark0));
	if (!at || !at_base || !mark || !mark0)
		goto out;

	/* Group the threads by creation context: group 0 is the threads
	 * without one (the first thread, threads of an attach). */
	for (uint32_t i = 0; i <= p->nthreads; i++) {
		uint32_t ctx = i ? p->threads[i - 1].ctx : REP_NONE;
		uint64_t *slot;
		bool created;

		if (ctx != REP_NONE && ctx >= p->nnodes)
			ctx = REP_NONE;
		slot = psup_u64map_upsert(&gix, (uint64_t)ctx + 1, &created);
		if (!slot)
			goto out;
		if (created) {
			if (rep_grow32((void **)&groups, &groups_cap, ngroups, sizeof(*groups)))
				goto out;
			memset(&groups[ngroups], 0, sizeof(groups[ngroups]));
			groups[ngroups].ctx = ctx;
			*slot = ++ngroups;
		}
		if (!i)
			continue;
		struct td_group *g = &groups[*slot - 1];
		if (!g->self) {
			g->self = calloc(nn, sizeof(*g->self));
			g->idle = calloc(nn, sizeof(*g->idle));
			g->list = malloc(nn * sizeof(*g->list));
			if (!g->self || !g->idle || !g->list)
				goto out;
		}
		const struct rep_mthread *th = &p->threads[i - 1];
		for (size_t j = 0; j < th->leaves.cap; j++)
			if (th->leaves.keys[j])
				add_leaf(g->self, th->leaves.keys[j] - 1, th->leaves.vals[j], p->nnodes);
		for (size_t j = 0; j < th->idle.cap; j++)
			if (th->idle.keys[j])
				add_leaf(g->idle, th->idle.keys[j] - 1, th->idle.vals[j], p->nnodes);
	}
	/* Group 0 also lays the creation contexts, where the others hang. */
	if (!groups[0].list && !(groups[0].list = malloc(nn * sizeof(*groups[0].list))))
		goto out;
	for (uint32_t gi = 0; gi < ngroups; gi++) {
		struct td_group *g = &groups[gi];
		if (!g->self)
			continue;
		for (uint32_t n = 0; n < p->nnodes; n++)
			if (g->self[n] || g->idle[n])
				mark_path(p, g, gi, gi ? mark : mark0, n);
		if (gi)
			mark_path(p, &groups[0], 0, mark0, g->ctx);
	}
	for (uint32_t gi = 0; gi < ngroups; gi++)
		qsort(groups[gi].list, groups[gi].nlist, sizeof(uint32_t), cmp_u32);
	if (lay_group(t, &fns, p, &groups[0], 0, NULL, overhead, at_base))
		goto out;
	for (uint32_t gi = 1; gi < ngroups; gi++) {
		const struct td_group *g = &groups[gi];
		const struct rep_mloc *cl = &p->locs[p->nodes[g->ctx].loc];

		if (!g->self)
			continue;
		if (lay_group(t, &fns, p, g, at_base[g->ctx], &p->frames[cl->frames], overhead, at))
			goto out;
	}
	for (uint32_t i = t->n; i-- > 1;) {
		struct rep_cnode *c = &t->nodes[i], *par = &t->nodes[c->parent];

		c->inclusive = rep_sat_add(c->inclusive, c->exclusive);
		c->idle_incl = rep_sat_add(c->idle_incl, c->idle_excl);
		c->overhead_incl = rep_sat_add(c->overhead_incl, c->overhead_excl);
		par->inclusive = rep_sat_add(par->inclusive, c->inclusive);
		par->idle_incl = rep_sat_add(par->idle_incl, c->idle_incl);
		par->overhead_incl = rep_sat_add(par->overhead_incl, c->overhead_incl);
	}
	rc = ctree_link(t, false);
out:
	for (uint32_t gi = 0; gi < ngroups; gi++) {
		free(groups[gi].self);
		free(groups[gi].idle);
		free(groups[gi].list);
	}
	free(groups);
	free(at);
	free(at_base);
	free(mark);
	free(mark0);
	psup_u64map_release(&fns);
	psup_u64map_release(&gix);
	return rc;
}

/* ---- bottom-up ---------------------------------------------------------------- */

/*
 * contrib[v]: the samples of v's subtree for which v is the innermost
 * occurrence of its function: inclusive(v) minus the inclusive samples of
 * the nearest descendants of the same function. A depth-first walk keeps,
 * per function, the sum of those nearest descendants seen so far.
 */
static int innermost_contrib(const struct rep_ctree *td, uint64_t *contrib)
{
	uint64_t *claimed = calloc((size_t)td->nfns + 1, sizeof(*claimed));
	uint64_t *saved = malloc((size_t)td->n * sizeof(*saved));
	uint32_t *stack = malloc(((size_t)td->max_depth + 2) * sizeof(*stack));
	uint32_t *next = calloc(td->n, sizeof(*next));
	size_t sp = 0;
	int rc = -ENOMEM;

	if (!claimed || !saved || !stack || !next)
		goto out;
	stack[sp++] = 0;
	while (sp) {
		uint32_t v = stack[sp - 1];
		const struct rep_cnode *c = &td->nodes[v];

		if (next[v] < c->nchildren) {
			uint32_t ch = td->children[c->first_child + next[v]++];
			uint32_t f = td->nodes[ch].fn;

			saved[ch] = claimed[f];
			claimed[f] = 0;
			stack[sp++] = ch;
			continue;
		}
		sp--;
		if (v) {
			contrib[v] = c->inclusive - claimed[c->fn];
			claimed[c->fn] = saved[v] + c->inclusive;
		}
	}
	rc = 0;
out:
	free(claimed);
	free(saved);
	free(stack);
	free(next);
	return rc;
}

/* An occurrence of a function in the top-down tree with what it adds to the
 * bottom-up view; cursor climbs to the caller as the occurrence is carried
 * one level further up. */
struct bu_item {
	uint32_t cursor, fn;
	uint64_t excl, incl;
	uint64_t idle, ovh; /* of the exclusive samples */
};

struct bu_ctx {
	const struct rep_ctree *td;
	struct bu_item *items;
};

/* Items of one function together. */
static int cmp_item_fn(const void *x, const void *y)
{
	const struct bu_item *a = x, *b = y;

	return a->fn < b->fn ? -1 : a->fn > b->fn;
}

/* Items of one caller (and call site) together; those without a caller
 * (the path ends) last. */
static int cmp_item_caller(const void *x, const void *y, void *ctx)
{
	const struct rep_ctree *td = ctx;
	const struct rep_cnode *a = &td->nodes[((const struct bu_item *)x)->cursor];
	const struct rep_cnode *b = &td->nodes[((const struct bu_item *)y)->cursor];
	const struct rep_cnode *ca = &td->nodes[a->parent], *cb = &td->nodes[b->parent];

	if ((a->parent == 0) != (b->parent == 0))
		return a->parent == 0 ? 1 : -1;
	if (ca->fn != cb->fn)
		return ca->fn < cb->fn ? -1 : 1;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return (int)ca->inlined - (int)cb->inlined;
}

/* The same, then by the caller's node: items that climb to the same node
 * end up side by side, and merge_items() makes them one. */
static int cmp_item_climb(const void *x, const void *y, void *ctx)
{
	const struct rep_ctree *td = ctx;
	uint32_t pa = td->nodes[((const struct bu_item *)x)->cursor].parent;
	uint32_t pb = td->nodes[((const struct bu_item *)y)->cursor].parent;
	int c = cmp_item_caller(x, y, ctx);

	return c ? c : (pa > pb) - (pa < pb);
}

static bool same_caller(const struct rep_ctree *td, const struct bu_item *x,
			const struct bu_item *y)
{
	return cmp_item_caller(x, y, (void *)td) == 0;
}

/* Items at the same node have the same path from there on: one item with
 * their sums carries them (without it, many lines of a function under one
 * deep stack cost lines x depth). Returns the new end of [begin, end). */
static uint32_t merge_items(struct bu_item *items, uint32_t begin, uint32_t end)
{
	uint32_t n = begin;

	for (uint32_t i = begin; i < end; i++) {
		struct bu_item *last = &items[n - 1];

		if (n > begin && last->cursor == items[i].cursor) {
			last->excl += items[i].excl;
			last->incl += items[i].incl;
			last->idle = rep_sat_add(last->idle, items[i].idle);
			last->ovh += items[i].ovh;
			continue;
		}
		items[n++] = items[i];
	}
	return n;
}

struct bu_group {
	uint32_t begin, end; /* items */
	uint64_t excl, incl, idle, ovh;
};

static void bu_group_add(struct bu_group *g, const struct bu_item *it)
{
	g->excl += it->excl;
	g->incl += it->incl;
	g->idle = rep_sat_add(g->idle, it->idle);
	g->ovh += it->ovh;
}

static int cmp_group(const void *x, const void *y, void *ctx)
{
	const struct bu_ctx *c = ctx;
	const struct bu_group *a = x, *b = y;
	const struct rep_cnode *na = &c->td->nodes[c->items[a->begin].cursor];
	const struct rep_cnode *nb = &c->td->nodes[c->items[b->begin].cursor];
	int r;

	if (a->excl != b->excl)
		return a->excl > b->excl ? -1 : 1;
	if (a->incl != b->incl)
		return a->incl > b->incl ? -1 : 1;
	if ((r = strcmp(str(c->td->p, na->function), str(c->td->p, nb->function))))
		return r;
	return strcmp(str(c->td->p, na->image), str(c->td->p, nb->image));
}

struct bu_work {
	uint32_t row, begin, end;
};

/* Rows of a bottom-up tree: BU_BUDGET_PER_NODE per top-down row, plus
 * BU_BUDGET_MIN. */
enum { BU_BUDGET_PER_NODE = 4,
       BU_BUDGET_MIN = 4096 };

/* A row: g's samples; its idleness and overhead are those of its self
 * samples, in both the exclusive and the inclusive fields (a bottom-up row
 * is about where the time went itself). */
static uint32_t bu_add(struct rep_ctree *t, uint32_t parent, const struct rep_cnode *like,
		       const struct rep_cnode *site, const struct bu_group *g)
{
	struct rep_cnode *c;

	if (rep_grow32((void **)&t->nodes, &t->cap, t->n, sizeof(*t->nodes)))
		return REP_NONE;
	c = &t->nodes[t->n];
	memset(c, 0, sizeof(*c));
	c->parent = parent;
	c->function = like->function;
	c->image = like->image;
	c->fn = like->fn;
	c->inlined = site ? like->inlined : false;
	c->file = site ? site->file : 0;
	c->line = site ? site->line : 0;
	c->depth = t->nodes[parent].depth + 1;
	c->exclusive = g->excl;
	c->inclusive = g->incl;
	c->idle_excl = c->idle_incl = g->idle;
	c->overhead_excl = c->overhead_incl = g->ovh;
	if (c->depth > t->max_depth)
		t->max_depth = c->depth;
	return t->n++;
}

static bool bu_shown(const struct rep_ctree *td, uint64_t excl, double min_percent)
{
	uint64_t total = td->nodes[0].inclusive;

	return min_percent <= 0 || (total && 100.0 * (double)excl / (double)total >= min_percent);
}

/*
 * Built top-down from the functions, one level of callers at a time, and
 * only where the view shows it: a profile of many deep contexts has far more
 * caller paths than anyone reads, so the cuts (depth, share, number of
 * functions) are made here and only counted in t->hidden.
 */
int rep_ctree_bottom_up(struct rep_ctree *t, const struct rep_ctree *td, uint32_t max_depth,
			double min_percent, uint32_t max_functions)
{
	struct bu_ctx ctx = { td, NULL };
	struct bu_group *groups = NULL;
	struct bu_work *work = NULL;
	uint64_t *contrib = NULL;
	uint32_t nitems = 0, ngroups = 0, groups_cap = 0;
	size_t nwork = 0, work_cap = 0, head = 0;
	/* Every top-down node can add a path of callers as long as its depth:
	 * a deep chain of distinct functions makes a tree quadratic in the
	 * record. Bound it (and the view's output) by the top-down tree's
	 * size; what is left out is counted as hidden. */
	uint32_t budget = td->n < (UINT32_MAX - BU_BUDGET_MIN) / BU_BUDGET_PER_NODE
				  ? BU_BUDGET_PER_NODE * td->n + BU_BUDGET_MIN
				  : UINT32_MAX;
	int rc;

	rc = ctree_init(t, td->p);
	if (rc)
		goto out;
	rc = -ENOMEM;
	t->nodes[0].exclusive = t->nodes[0].inclusive = td->nodes[0].inclusive;
	t->nodes[0].idle_excl = t->nodes[0].idle_incl = td->nodes[0].idle_incl;
	t->nodes[0].overhead_excl = t->nodes[0].overhead_incl = td->nodes[0].overhead_incl;
	contrib = calloc(td->n, sizeof(*contrib));
	ctx.items = malloc((size_t)td->n * sizeof(*ctx.items));
	if (!contrib || !ctx.items)
		goto out;
	rc = innermost_contrib(td, contrib);
	if (rc)
		goto out;
	rc = -ENOMEM;
	for (uint32_t v = 1; v < td->n; v++)
		if (td->nodes[v].exclusive || contrib[v])
			ctx.items[nitems++] = (struct bu_item){ v, td->nodes[v].fn,
								td->nodes[v].exclusive, contrib[v],
								td->nodes[v].idle_excl,
								td->nodes[v].overhead_excl };

	/* level 1: the functions, whatever their call sites */
	qsort(ctx.items, nitems, sizeof(*ctx.items), cmp_item_fn);
	groups_cap = 64;
	groups = malloc(groups_cap * sizeof(*groups));
	if (!groups)
		goto out;
	for (uint32_t i = 0; i < nitems;) {
		struct bu_group g = { i, i, 0, 0, 0, 0 };

		for (; g.end < nitems && ctx.items[g.end].fn == ctx.items[i].fn; g.end++)
			bu_group_add(&g, &ctx.items[g.end]);
		if (ngroups == groups_cap) {
			struct bu_group *ng = realloc(groups, groups_cap * 2 * sizeof(*ng));

			if (!ng)
				goto out;
			groups = ng;
			groups_cap *= 2;
		}
		groups[ngroups++] = g;
		i = g.end;
	}
	qsort_r(groups, ngroups, sizeof(*groups), cmp_group, &ctx);
	for (uint32_t i = 0; i < ngroups; i++) {
		const struct bu_group *g = &groups[i];
		uint32_t row;

		if ((max_functions && i >= max_functions) || !bu_shown(td, g->excl, min_percent)) {
			t->hidden++;
			continue;
		}
		row = bu_add(t, 0, &td->nodes[ctx.items[g->begin].cursor], NULL, g);
		if (row == REP_NONE)
			goto out;
		if (nwork == work_cap) {
			struct bu_work *nw;

			work_cap = work_cap ? work_cap * 2 : 64;
			nw = realloc(work, work_cap * sizeof(*nw));
			if (!nw)
				goto out;
			work = nw;
		}
		work[nwork++] = (struct bu_work){ row, g->begin, g->end };
	}

	/* The callers, a level at a time (breadth first, so that the node
	 * budget leaves out the deepest levels first). */
	while (head < nwork) {
		struct bu_work wk = work[head++];
		uint32_t depth = t->nodes[wk.row].depth;

		qsort_r(&ctx.items[wk.begin], wk.end - wk.begin, sizeof(*ctx.items),
			cmp_item_climb, (void *)td);
		for (uint32_t i = wk.begin; i < wk.end;) {
			struct bu_group g = { i, i, 0, 0, 0, 0 };
			const struct rep_cnode *site = &td->nodes[ctx.items[i].cursor];
			uint32_t row;

			if (site->parent == 0)
				break; /* the rest of the paths end here */
			for (; g.end < wk.end && same_caller(td, &ctx.items[i], &ctx.items[g.end]);
			     g.end++)
				bu_group_add(&g, &ctx.items[g.end]);
			i = g.end;
			if ((max_depth && depth >= max_depth) || t->n >= budget ||
			    !bu_shown(td, g.excl, min_percent)) {
				if (g.excl || g.incl)
					t->hidden++;
				continue;
			}
			row = bu_add(t, wk.row, &td->nodes[site->parent], site, &g);
			if (row == REP_NONE)
				goto out;
			for (uint32_t j = g.begin; j < g.end; j++)
				ctx.items[j].cursor = td->nodes[ctx.items[j].cursor].parent;
			g.end = merge_items(ctx.items, g.begin, g.end);
			if (nwork == work_cap) {
				struct bu_work *nw;

				work_cap *= 2;
				nw = realloc(work, work_cap * sizeof(*nw));
				if (!nw)
					goto out;
				work = nw;
			}
			work[nwork++] = (struct bu_work){ row, g.begin, g.end };
		}
	}
	rc = ctree_link(t, true);
out:
	free(contrib);
	free(ctx.items);
	free(groups);
	free(work);
	return rc;
}

uint32_t rep_ctree_child(const struct rep_ctree *t, uint32_t node, const char *function,
			 uint32_t line)
{
	const struct rep_cnode *c = &t->nodes[node];

	for (uint32_t i = 0; i < c->nchildren; i++) {
		const struct rep_cnode *ch = &t->nodes[t->children[c->first_child + i]];

		if (strcmp(str(t->p, ch->function), function) == 0 && (!line || ch->line == line))
			return t->children[c->first_child + i];
	}
	return REP_NONE;
}
