#include "experiments/experiments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "symbols/symbols.h"

/* Per process: address (<< 1 | is-return-address) -> loc id. */
struct exp_space {
	pid_t pid;
	struct psup_u64map locs;
	uint64_t unknown_loc; /* shared by addresses in no known mapping */
};

/* Per thread: leaf node -> count since the last flush. */
struct exp_thread {
	pid_t tid;
	struct psup_u64map counts;
};

struct exp_profile {
	struct exp_sink out;
	struct psup_u64map spaces;  /* pid -> struct exp_space * */
	struct psup_u64map threads; /* tid -> struct exp_thread * */
	struct psup_u64map nodes;   /* parent << 32 | loc -> node id */
	uint64_t next_loc, next_node;
	uint64_t kernel_loc;
	uint64_t *pairs; /* flush buffer */
	size_t pairs_cap;
	struct exp_profile_stats stats;
};

int exp_profile_new(const struct exp_sink *out, struct exp_profile **out_p)
{
	struct exp_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (out)
		p->out = *out;
	p->next_loc = 1;
	p->next_node = 1;
	psup_u64map_init(&p->spaces);
	psup_u64map_init(&p->threads);
	psup_u64map_init(&p->nodes);
	*out_p = p;
	return 0;
}

static void free_space(struct exp_space *s)
{
	if (!s)
		return;
	psup_u64map_release(&s->locs);
	free(s);
}

void exp_profile_free(struct exp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->spaces.cap; i++)
		if (p->spaces.keys[i])
			free_space((struct exp_space *)(uintptr_t)p->spaces.vals[i]);
	for (size_t i = 0; i < p->threads.cap; i++) {
		struct exp_thread *t = (struct exp_thread *)(uintptr_t)p->threads.vals[i];
		if (p->threads.keys[i] && t) {
			psup_u64map_release(&t->counts);
			free(t);
		}
	}
	psup_u64map_release(&p->spaces);
	psup_u64map_release(&p->threads);
	psup_u64map_release(&p->nodes);
	free(p->pairs);
	free(p);
}

static void *get_obj(struct psup_u64map *m, uint64_t key, size_t size)
{
	bool created;
	uint64_t *v = psup_u64map_upsert(m, key, &created);

	if (!v)
		return NULL;
	if (!*v) {
		void *o = calloc(1, size);
		if (!o)
			return NULL;
		*v = (uintptr_t)o;
	}
	return (void *)(uintptr_t)*v;
}

void exp_profile_forget_process(struct exp_profile *p, pid_t pid)
{
	uint64_t *v = psup_u64map_find(&p->spaces, (uint64_t)pid);

	if (!v || !*v)
		return;
	struct exp_space *s = (struct exp_space *)(uintptr_t)*v;
	psup_u64map_clear(&s->locs);
	s->unknown_loc = 0;
}

void exp_profile_process_end(struct exp_profile *p, pid_t pid)
{
	uint64_t *v = psup_u64map_find(&p->spaces, (uint64_t)pid);

	if (!v)
		return;
	free_space((struct exp_space *)(uintptr_t)*v);
	psup_u64map_remove(&p->spaces, (uint64_t)pid);
}

static int write_loc(struct exp_profile *p, uint64_t id, pid_t pid, uint64_t addr,
		     const struct sym_loc *sl)
{
	return p->out.loc ? p->out.loc(p->out.ctx, id, pid, addr, sl) : 0;
}

/* The loc id of pc in process pid, symbolized and written when new. An
 * address in no known mapping is not cached: the maps behind it are re-read
 * at a limited rate (code loaded by dlopen shows up a little late), so a
 * later sample of it may resolve. Until then it shares the process's
 * [unknown] location. */
static int64_t loc_of(struct exp_profile *p, struct exp_space *s, struct sym_space *sp,
		      uint64_t pc, bool ret)
{
	uint64_t key = pc << 1 | ret, *v = psup_u64map_find(&s->locs, key);
	struct sym_loc sl;
	int err;

	if (v)
		return (int64_t)*v;
	memset(&sl, 0, sizeof(sl));
	sl.image = "[unknown]";
	/* pc 0 is no code (and key 0 is the map's empty slot). */
	if (pc && sp && sym_space_resolve(sp, pc, ret, &sl) < 0) {
		memset(&sl, 0, sizeof(sl));
		sl.image = "[unknown]";
	}
	if (!strcmp(sl.image, "[unknown]")) {
		if (!s->unknown_loc) {
			s->unknown_loc = p->next_loc++;
			p->stats.locs++;
			err = write_loc(p, s->unknown_loc, s->pid, 0, &sl);
			if (err < 0)
				return err;
		}
		return (int64_t)s->unknown_loc;
	}
	v = psup_u64map_upsert(&s->locs, key, NULL);
	if (!v)
		return -ENOMEM;
	*v = p->next_loc++;
	p->stats.locs++;
	err = write_loc(p, *v, s->pid, pc, &sl);
	return err < 0 ? err : (int64_t)*v;
}

static int64_t node_of(struct exp_profile *p, uint64_t parent, uint64_t loc)
{
	bool created;
	uint64_t *v;
	int err;

	if (parent >= (1ULL << 32) || loc >= (1ULL << 32))
		return -EOVERFLOW;
	v = psup_u64map_upsert(&p->nodes, parent << 32 | loc, &created);
	if (!v)
		return -ENOMEM;
	if (!created)
		return (int64_t)*v;
	*v = p->next_node++;
	p->stats.nodes++;
	err = p->out.node ? p->out.node(p->out.ctx, *v, parent, loc) : 0;
	return err < 0 ? err : (int64_t)*v;
}

/* The leaf node of pcs (innermost first), interned from the outermost caller
 * down; 0 when npcs is 0. */
static int64_t context_of(struct exp_profile *p, struct exp_space *s, struct sym_space *sp,
			  const uint64_t *pcs, unsigned npcs)
{
	uint64_t node = 0;
	int64_t r;

	for (unsigned i = npcs; i-- > 0;) {
		r = loc_of(p, s, sp, pcs[i], i > 0);
		if (r < 0)
			return r;
		r = node_of(p, node, (uint64_t)r);
		if (r < 0)
			return r;
		node = (uint64_t)r;
	}
	return (int64_t)node;
}

static struct exp_space *space_of(struct exp_profile *p, pid_t pid)
{
	struct exp_space *s = get_obj(&p->spaces, (uint64_t)pid, sizeof(*s));

	if (s)
		s->pid = pid;
	return s;
}

int64_t exp_profile_context(struct exp_profile *p, struct sym_space *sp, pid_t pid,
			    const uint64_t *pcs, unsigned npcs)
{
	struct exp_space *s = space_of(p, pid);

	return s ? context_of(p, s, sp, pcs, npcs) : -ENOMEM;
}

int64_t exp_profile_add(struct exp_profile *p, struct sym_space *sp, pid_t pid, pid_t tid,
			const uint64_t *pcs, unsigned npcs, unsigned flags)
{
	struct exp_space *s = space_of(p, pid);
	struct exp_thread *t = get_obj(&p->threads, (uint64_t)tid, sizeof(*t));
	uint64_t node, *count;
	int64_t r;

	if (!s || !t)
		return -ENOMEM;
	t->tid = tid;
	r = context_of(p, s, sp, pcs, npcs);
	if (r < 0)
		return (int)r;
	node = (uint64_t)r;
	if (flags & EXP_SAMPLE_KERNEL) {
		if (!p->kernel_loc) {
			p->kernel_loc = p->next_loc++;
			p->stats.locs++;
			int err = write_loc(p, p->kernel_loc, pid, 0, NULL);
			if (err < 0)
				return err;
		}
		r = node_of(p, node, p->kernel_loc);
		if (r < 0)
			return r;
		node = (uint64_t)r;
	}
	if (!node)
		return 0;
	count = psup_u64map_upsert(&t->counts, node, NULL);
	if (!count)
		return -ENOMEM;
	(*count)++;
	p->stats.samples++;
	return (int64_t)node;
}

static int flush_thread(struct exp_profile *p, struct exp_thread *t)
{
	long n = psup_u64map_drain_pairs(&t->counts, &p->pairs, &p->pairs_cap);

	if (n <= 0)
		return (int)n;
	return p->out.samples ? p->out.samples(p->out.ctx, t->tid, p->pairs, (size_t)n) : 0;
}

int exp_profile_flush(struct exp_profile *p)
{
	for (size_t i = 0; i < p->threads.cap; i++) {
		struct exp_thread *t = (struct exp_thread *)(uintptr_t)p->threads.vals[i];
		int err;

		if (!p->threads.keys[i] || !t)
			continue;
		err = flush_thread(p, t);
		if (err < 0)
			return err;
	}
	return 0;
}

int exp_profile_thread_end(struct exp_profile *p, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&p->threads, (uint64_t)tid);
	struct exp_thread *t;
	int err;

	if (!v || !*v)
		return 0;
	t = (struct exp_thread *)(uintptr_t)*v;
	err = flush_thread(p, t);
	psup_u64map_remove(&p->threads, (uint64_t)tid);
	psup_u64map_release(&t->counts);
	free(t);
	return err;
}

void exp_profile_stats(const struct exp_profile *p, struct exp_profile_stats *out)
{
	*out = p->stats;
}
