#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"
#include "report/export.h"
#include "report/html.h"
#include "report/json.h"
#include "report/report-internal.h"

/*
 * The views. Everything is aggregated once from the merged profile (struct
 * agg), then laid out: text and markdown share a cell table, JSON is written
 * directly with typed numbers.
 *
 * self  = samples whose leaf location's innermost frame is the row's key;
 * total = samples with the key anywhere on the call path, counted once per
 *         sample however often it recurs (agg_totals()).
 */

/* ---- aggregation ---------------------------------------------------------- */

struct fn_row {
	uint32_t name, image, file;
	uint64_t self, total;
	uint32_t on_path; /* its frames on the path walked (agg_totals()) */
};

struct ln_row {
	uint32_t file, line, function, image;
	uint64_t self, total;
	uint32_t on_path; /* its frames on the path walked (agg_totals()) */
};

struct im_row {
	uint32_t image;
	uint64_t self;
};

/* An image on a sampled call path whose loc records say what symbols the
 * recorder found for it (rep_mloc.symbols). */
struct dbg_row {
	uint32_t image, symbols;
	uint64_t total;   /* samples with the image on the path, once each */
	uint32_t on_path; /* its locs on the path walked (agg_totals()) */
};

struct th_row {
	uint32_t thread;
	uint32_t top_fn; /* REP_NONE when the thread has no samples */
};

struct agg {
	const struct rep_profile *p;
	uint64_t total;
	struct fn_row *fns;
	uint32_t nfns, fns_cap;
	struct psup_u64map fn_ix; /* name << 32 | image -> row + 1 */
	struct ln_row *lns;
	uint32_t nlns, lns_cap;
	struct rep_index ln_ix;
	struct im_row *ims;
	uint32_t nims, ims_cap;
	struct psup_u64map im_ix; /* image -> row + 1 */
	struct th_row *ths;
	struct dbg_row *dbg;
	uint32_t ndbg, dbg_cap;
	struct psup_u64map dbg_ix;     /* image -> row + 1 */
	uint32_t *frame_fn, *frame_ln; /* per profile frame: row, lazily */
	uint64_t *node_self;
	uint32_t *fn_order, *ln_order, *im_order, *th_order;
	size_t *hidden; /* rows hidden per view, for JSON */
};

static uint32_t fn_row_of(struct agg *a, uint32_t frame, uint32_t image)
{
	const struct rep_mframe *f = &a->p->frames[frame];
	uint64_t key = ((uint64_t)f->function << 32) | image, *slot;
	bool created;

	if (a->frame_fn[frame] != REP_NONE)
		return a->frame_fn[frame];
	if (rep_grow32((void **)&a->fns, &a->fns_cap, a->nfns, sizeof(*a->fns)))
		return REP_NONE;
	slot = psup_u64map_upsert(&a->fn_ix, key, &created);
	if (!slot)
		return REP_NONE;
	if (created) {
		struct fn_row *r = &a->fns[a->nfns];

		memset(r, 0, sizeof(*r));
		r->name = f->function;
		r->image = image;
		*slot = ++a->nfns;
	}
	if (!a->fns[*slot - 1].file)
		a->fns[*slot - 1].file = f->file;
	return a->frame_fn[frame] = (uint32_t)(*slot - 1);
}

struct ln_key {
	uint32_t file, line, function;
};

static bool ln_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct ln_row *r = &((const struct agg *)ctx)->lns[row];
	const struct ln_key *k = key;

	return r->file == k->file && r->line == k->line && r->function == k->function;
}

static uint64_t ln_hash(uint32_t file, uint32_t line, uint32_t function)
{
	return psup_hash64(((uint64_t)file << 32 | line) ^ psup_hash64(function + 1ULL));
}

static uint64_t ln_rowhash(const void *ctx, uint32_t row)
{
	const struct ln_row *r = &((const struct agg *)ctx)->lns[row];

	return ln_hash(r->file, r->line, r->function);
}

static uint32_t ln_row_of(struct agg *a, uint32_t frame, uint32_t image)
{
	const struct rep_mframe *f = &a->p->frames[frame];
	/* without a file the line number means nothing: key by function */
	struct ln_key k = { f->file, f->file ? f->line : 0, f->function };
	uint64_t h = ln_hash(k.file, k.line, k.function);
	uint32_t row;

	if (a->frame_ln[frame] != REP_NONE)
		return a->frame_ln[frame];
	row = rep_index_find(&a->ln_ix, h, ln_eq, a, &k);
	if (row == REP_NONE) {
		struct ln_row *r;

		if (rep_grow32((void **)&a->lns, &a->lns_cap, a->nlns, sizeof(*a->lns)))
			return REP_NONE;
		r = &a->lns[a->nlns];
		memset(r, 0, sizeof(*r));
		r->file = k.file;
		r->line = k.line;
		r->function = k.function;
		r->image = image;
		if (rep_index_add(&a->ln_ix, h, a->nlns, ln_rowhash, a))
			return REP_NONE;
		row = a->nlns++;
	}
	return a->frame_ln[frame] = row;
}

static uint32_t im_row_of(struct agg *a, uint32_t image)
{
	uint64_t *slot;
	bool created;

	if (rep_grow32((void **)&a->ims, &a->ims_cap, a->nims, sizeof(*a->ims)))
		return REP_NONE;
	slot = psup_u64map_upsert(&a->im_ix, image, &created);
	if (!slot)
		return REP_NONE;
	if (created) {
		a->ims[a->nims].image = image;
		a->ims[a->nims].self = 0;
		*slot = ++a->nims;
	}
	return (uint32_t)(*slot - 1);
}

/* The row of loc l's image among the images with debug notes (l->symbols
 * set), REP_NONE when out of memory. */
static uint32_t dbg_row_of(struct agg *a, const struct rep_mloc *l)
{
	uint64_t *slot;
	bool created;
	struct dbg_row *r;

	if (rep_grow32((void **)&a->dbg, &a->dbg_cap, a->ndbg, sizeof(*a->dbg)))
		return REP_NONE;
	slot = psup_u64map_upsert(&a->dbg_ix, l->image, &created);
	if (!slot)
		return REP_NONE;
	if (created) {
		r = &a->dbg[a->ndbg];
		memset(r, 0, sizeof(*r));
		r->image = l->image;
		r->symbols = l->symbols;
		*slot = ++a->ndbg;
	}
	return (uint32_t)(*slot - 1);
}

static void agg_release(struct agg *a)
{
	free(a->dbg);
	psup_u64map_release(&a->dbg_ix);
	free(a->fns);
	psup_u64map_release(&a->fn_ix);
	free(a->lns);
	rep_index_release(&a->ln_ix);
	free(a->ims);
	psup_u64map_release(&a->im_ix);
	free(a->ths);
	free(a->frame_fn);
	free(a->frame_ln);
	free(a->node_self);
	free(a->fn_order);
	free(a->ln_order);
	free(a->im_order);
	free(a->th_order);
}

static const char *S(const struct agg *a, uint32_t id)
{
	const char *s = rep_str(a->p, id);

	return s ? s : "";
}

static int cmp_fn(const void *x, const void *y, void *ctx)
{
	const struct agg *a = ctx;
	const struct fn_row *r = &a->fns[*(const uint32_t *)x], *s = &a->fns[*(const uint32_t *)y];
	int c;

	if (r->self != s->self)
		return r->self > s->self ? -1 : 1;
	if ((c = strcmp(S(a, r->name), S(a, s->name))))
		return c;
	if (r->total != s->total)
		return r->total > s->total ? -1 : 1;
	return strcmp(S(a, r->image), S(a, s->image));
}

static int cmp_ln(const void *x, const void *y, void *ctx)
{
	const struct agg *a = ctx;
	const struct ln_row *r = &a->lns[*(const uint32_t *)x], *s = &a->lns[*(const uint32_t *)y];
	int c;

	if (r->self != s->self)
		return r->self > s->self ? -1 : 1;
	if (r->total != s->total)
		return r->total > s->total ? -1 : 1;
	if ((c = strcmp(S(a, r->file), S(a, s->file))))
		return c;
	if (r->line != s->line)
		return r->line < s->line ? -1 : 1;
	return strcmp(S(a, r->function), S(a, s->function));
}

static int cmp_im(const void *x, const void *y, void *ctx)
{
	const struct agg *a = ctx;
	const struct im_row *r = &a->ims[*(const uint32_t *)x], *s = &a->ims[*(const uint32_t *)y];

	if (r->self != s->self)
		return r->self > s->self ? -1 : 1;
	return strcmp(S(a, r->image), S(a, s->image));
}

static int cmp_th(const void *x, const void *y, void *ctx)
{
	const struct agg *a = ctx;
	const struct rep_mthread *r = &a->p->threads[a->ths[*(const uint32_t *)x].thread];
	const struct rep_mthread *s = &a->p->threads[a->ths[*(const uint32_t *)y].thread];

	if (r->samples != s->samples)
		return r->samples > s->samples ? -1 : 1;
	if (r->run != s->run)
		return r->run < s->run ? -1 : 1;
	return r->tid < s->tid ? -1 : r->tid > s->tid;
}

static uint32_t *order(uint32_t n, int (*cmp)(const void *, const void *, void *), struct agg *a)
{
	uint32_t *o = malloc((n ? n : 1) * sizeof(*o));

	if (!o)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		o[i] = i;
	qsort_r(o, n, sizeof(*o), cmp, a);
	return o;
}

/* A row's occurrence entering the path walked (dir 1: the first one from
 * the root gets the samples under the node) or leaving it (dir -1). */
static void path_count(uint32_t *on_path, uint64_t *total, int dir, uint64_t under)
{
	if (dir < 0)
		(*on_path)--;
	else if (!(*on_path)++)
		*total = rep_sat_add(*total, under);
}

/* Node n's frames, and its image's debug row, entering or leaving the path. */
static void path_step(struct agg *a, const struct rep_profile *p, uint32_t n, int dir, uint64_t under)
{
	const struct rep_mloc *l = &p->locs[p->nodes[n].loc];

	for (uint32_t f = l->frames; f < l->frames + l->nframes; f++) {
		struct fn_row *fr = &a->fns[a->frame_fn[f]];
		struct ln_row *lr = &a->lns[a->frame_ln[f]];

		path_count(&fr->on_path, &fr->total, dir, under);
		path_count(&lr->on_path, &lr->total, dir, under);
	}
	if (l->symbols) {
		struct dbg_row *d = &a->dbg[*psup_u64map_find(&a->dbg_ix, l->image) - 1];

		path_count(&d->on_path, &d->total, dir, under);
	}
}

/*
 * Totals: a row counts a sample once however often it recurs on its path,
 * so it gets the samples under each node where it occurs with no
 * occurrence above (a sample under two such nodes would need the row
 * between them). The nodes' subtrees are summed from the leaves up
 * (children come after their parents), then walked from the roots, each
 * row counting its occurrences on the path: work in the size of the
 * record, where walking each sample's path up to its root took samples
 * times depth times inlined frames (7.4 s for the functions view of a
 * 328 KiB record of 2,000 samples on a chain of 10,000 nodes of 64
 * frames). Only nodes with samples under them are walked: their rows
 * exist (agg_rows()). 0 or -ENOMEM.
 */
static int agg_totals(struct agg *a, const struct rep_profile *p)
{
	uint32_t nn = p->nnodes, *first = malloc((nn + 1) * sizeof(*first)),
		 *next = malloc((nn + 1) * sizeof(*next));
	uint64_t *under = malloc((nn + 1) * sizeof(*under)), *stack = malloc((2 * (size_t)nn + 1) * sizeof(*stack));
	size_t top = 0;
	int rc = -ENOMEM;

	if (!first || !next || !under || !stack)
		goto out;
	memcpy(under, a->node_self, nn * sizeof(*under));
	memset(first, 0xff, (nn + 1) * sizeof(*first));
	for (uint32_t n = nn; n-- > 0;) {
		uint32_t up = p->nodes[n].parent;

		if (!under[n])
			continue;
		if (up == REP_NONE) {
			stack[top++] = (uint64_t)n << 1;
			continue;
		}
		under[up] = rep_sat_add(under[up], under[n]);
		next[n] = first[up];
		first[up] = n;
	}
	/* An entry n << 1 enters n, (n << 1) | 1 leaves it. */
	while (top) {
		uint64_t e = stack[--top];
		uint32_t n = (uint32_t)(e >> 1);

		if (e & 1) {
			path_step(a, p, n, -1, 0);
			continue;
		}
		path_step(a, p, n, 1, under[n]);
		stack[top++] = e | 1;
		for (uint32_t c = first[n]; c != REP_NONE; c = next[c])
			stack[top++] = (uint64_t)c << 1;
	}
	rc = 0;
out:
	free(first);
	free(next);
	free(under);
	free(stack);
	return rc;
}

/*
 * Self counts, and the rows in the order the leaves' paths first meet
 * their frames (ties are broken in that order): each path is walked up to
 * the first node an earlier path walked, so every frame of the record is
 * looked up once. 0 or -ENOMEM.
 */
static int agg_rows(struct agg *a, const struct rep_profile *p)
{
	uint8_t *seen = calloc(p->nnodes + 1, 1);

	if (!seen)
		return -ENOMEM;
	for (uint32_t n = 0; n < p->nnodes; n++) {
		uint64_t c = a->node_self[n];
		const struct rep_mloc *l;
		uint32_t row;

		if (!c)
			continue;
		a->total = rep_sat_add(a->total, c);
		l = &p->locs[p->nodes[n].loc];
		if ((row = im_row_of(a, l->image)) == REP_NONE)
			goto out;
		a->ims[row].self = rep_sat_add(a->ims[row].self, c);
		if ((row = fn_row_of(a, l->frames, l->image)) == REP_NONE)
			goto out;
		a->fns[row].self = rep_sat_add(a->fns[row].self, c);
		if ((row = ln_row_of(a, l->frames, l->image)) == REP_NONE)
			goto out;
		a->lns[row].self = rep_sat_add(a->lns[row].self, c);

		/* Parents were defined before their children, so the walk ends. */
		for (uint32_t m = n; m != REP_NONE && !seen[m]; m = p->nodes[m].parent) {
			seen[m] = 1;
			l = &p->locs[p->nodes[m].loc];
			if (l->symbols && dbg_row_of(a, l) == REP_NONE)
				goto out;
			for (uint32_t f = l->frames; f < l->frames + l->nframes; f++)
				if (fn_row_of(a, f, l->image) == REP_NONE || ln_row_of(a, f, l->image) == REP_NONE)
					goto out;
		}
	}
	free(seen);
	return 0;
out:
	free(seen);
	return -ENOMEM;
}

static int agg_build(struct agg *a, const struct rep_profile *p)
{
	memset(a, 0, sizeof(*a));
	a->p = p;
	psup_u64map_init(&a->fn_ix);
	psup_u64map_init(&a->im_ix);
	psup_u64map_init(&a->dbg_ix);
	rep_index_init(&a->ln_ix);
	a->frame_fn = malloc((p->nframes + 1) * sizeof(uint32_t));
	a->frame_ln = malloc((p->nframes + 1) * sizeof(uint32_t));
	a->node_self = calloc(p->nnodes + 1, sizeof(uint64_t));
	a->ths = calloc(p->nthreads + 1, sizeof(*a->ths));
	if (!a->frame_fn || !a->frame_ln || !a->node_self || !a->ths)
		return -ENOMEM;
	memset(a->frame_fn, 0xff, (p->nframes + 1) * sizeof(uint32_t));
	memset(a->frame_ln, 0xff, (p->nframes + 1) * sizeof(uint32_t));

	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct psup_u64map *m = &p->threads[t].leaves;

		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				a->node_self[m->keys[i] - 1] =
					rep_sat_add(a->node_self[m->keys[i] - 1], m->vals[i]);
	}
	if (agg_rows(a, p) || agg_totals(a, p))
		return -ENOMEM;

	/* each thread's top function by self samples */
	uint64_t *tmp = calloc(a->nfns + 1, sizeof(uint64_t));

	if (!tmp)
		return -ENOMEM;
	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct psup_u64map *m = &p->threads[t].leaves;
		uint32_t best = REP_NONE;

		a->ths[t].thread = t;
		for (size_t i = 0; i < m->cap; i++) {
			const struct rep_mloc *l;
			uint32_t fr;

			if (!m->keys[i] || !m->vals[i])
				continue;
			l = &p->locs[p->nodes[m->keys[i] - 1].loc];
			fr = a->frame_fn[l->frames];
			tmp[fr] = rep_sat_add(tmp[fr], m->vals[i]);
			/* a total order (count, name, row): the slots' order is
			 * keyed per process, the report must not be */
			if (best == REP_NONE || tmp[fr] > tmp[best])
				best = fr;
			else if (tmp[fr] == tmp[best]) {
				int c = strcmp(S(a, a->fns[fr].name), S(a, a->fns[best].name));

				if (c < 0 || (c == 0 && fr < best))
					best = fr;
			}
		}
		a->ths[t].top_fn = best;
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i] && m->vals[i])
				tmp[a->frame_fn[p->locs[p->nodes[m->keys[i] - 1].loc].frames]] = 0;
	}
	free(tmp);

	a->fn_order = order(a->nfns, cmp_fn, a);
	a->ln_order = order(a->nlns, cmp_ln, a);
	a->im_order = order(a->nims, cmp_im, a);
	a->th_order = order(p->nthreads, cmp_th, a);
	if (!a->fn_order || !a->ln_order || !a->im_order || !a->th_order)
		return -ENOMEM;
	return 0;
}

static double pct(uint64_t x, uint64_t total)
{
	return total ? 100.0 * (double)x / (double)total : 0.0;
}

/* Whether sorted row i (with the given share) is shown. */
static bool row_shown(const struct rep_options *o, size_t shown, double share)
{
	if (o->top && shown >= o->top)
		return false;
	return share >= o->min_percent;
}

/* ---- run facts --------------------------------------------------------------- */

static uint64_t run_duration(const struct rep_run *r)
{
	uint64_t end = r->complete && r->end_time ? r->end_time : r->last_time;

	return end > r->mono_ns ? end - r->mono_ns : 0;
}

static void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.2f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
}

static const char *sig_name(int sig)
{
	const char *s = sig > 0 && sig < 128 ? sigabbrev_np(sig) : NULL;

	return s ? s : "?";
}

/* How the run ended, in words. */
static void run_ended(const struct agg *a, const struct rep_run *r, char *buf, size_t len)
{
	const char *reason = rep_str(a->p, r->end_reason);
	char exit[64] = "";

	if (r->exited && r->exit_signal)
		snprintf(exit, sizeof(exit), "killed by SIG%s", sig_name(r->exit_signal));
	else if (r->exited && r->exit_status >= 0)
		snprintf(exit, sizeof(exit), "exited with status %d", r->exit_status);
	else if (r->exited)
		snprintf(exit, sizeof(exit), "exited");
	if (!r->complete) {
		if (r->truncated)
			snprintf(buf, len, "cut short: truncated after %zu records%s%s", r->nrecords,
				 exit[0] ? ", target " : "", exit);
		else
			snprintf(buf, len, "incomplete: no end record%s%s", exit[0] ? ", target " : "",
				 exit);
		return;
	}
	/* (No exit record: an attached process that lost its traced leader,
	 * or a recorder before exit records.) */
	if (!reason || strcmp(reason, "exit") == 0)
		snprintf(buf, len, "%s", exit[0] ? exit : "exited, status not known");
	else if (strcmp(reason, "detach") == 0)
		snprintf(buf, len, "detached%s%s", exit[0] ? ", target " : "", exit);
	else if (strcmp(reason, "interrupted") == 0)
		snprintf(buf, len, "interrupted%s%s", exit[0] ? ", target " : "", exit);
	else if (strcmp(reason, "error") == 0)
		snprintf(buf, len, "stopped by a recorder error%s%s", exit[0] ? ", target " : "", exit);
	else
		snprintf(buf, len, "%.60s%s%s", reason, exit[0] ? ", target " : "", exit);
}

/* The command line of a run, arguments with spaces quoted. Caller frees. */
static char *run_command(const struct agg *a, const struct rep_run *r)
{
	size_t len = 1, n = 0;
	char *s;

	if (!r->has_argv || !r->nargv) {
		const char *path = rep_str(a->p, r->exec_path);
		char buf[64];

		if (path)
			return strdup(path);
		snprintf(buf, sizeof(buf), "pid %d", r->pid);
		return strdup(buf);
	}
	for (uint32_t i = 0; i < r->nargv; i++)
		len += strlen(S(a, r->argv[i])) + 3;
	s = malloc(len);
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < r->nargv; i++) {
		const char *arg = S(a, r->argv[i]);
		bool quote = !*arg || strpbrk(arg, " \t\n'\"");

		n += (size_t)snprintf(s + n, len - n, "%s%s%s%s", i ? " " : "", quote ? "'" : "",
				      arg, quote ? "'" : "");
	}
	return s;
}

/*
 * The name a program was started as, when its executable is known by
 * another: argv[0]'s base name for the run whose executable (its exec
 * record, /proc/PID/exe: symlinks resolved) is image, when the two base
 * names differ (redis-server, a link to redis-check-rdb). NULL otherwise.
 */
static const char *started_as(const struct agg *a, uint32_t image)
{
	const struct rep_profile *p = a->p;

	for (uint32_t i = 0; image && i < p->nruns; i++) {
		const struct rep_run *r = &p->runs[i];
		const char *arg0, *file;

		if (r->exec_path != image || !r->has_argv || !r->nargv)
			continue;
		arg0 = rep_base_name(S(a, r->argv[0]));
		file = rep_base_name(S(a, image));
		if (*arg0 && strcmp(arg0, file))
			return arg0;
	}
	return NULL;
}

struct totals {
	uint64_t duration, lost, unwind;
	uint64_t lost_cpu; /* in per-CPU rings: whose is not known */
	uint32_t threads, processes;
};

static void totals(const struct rep_profile *p, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < p->nruns; i++) {
		const struct rep_run *r = &p->runs[i];

		t->duration = rep_sat_add(t->duration, run_duration(r));
		t->lost = rep_sat_add(t->lost, r->lost > r->end_lost ? r->lost : r->end_lost);
		t->lost_cpu = rep_sat_add(t->lost_cpu, r->lost_cpu);
		t->unwind = rep_sat_add(t->unwind, r->unwind_failures);
		t->threads += r->nthreads;
		t->processes += r->nprocesses;
	}
}

/* ---- cells for text and markdown -------------------------------------------- */

enum col_flags {
	C_RIGHT = 1 << 0, /* numbers */
	C_CODE = 1 << 1,  /* names: markdown code spans */
	C_PATH = 1 << 2,  /* truncate at the start, keeping the file name */
	/* function names: truncated at the start too, so what tells two
	 * overloads or instances apart (the name and the parameter list at
	 * the end of "ns::Class<T>::name(args)") stays */
	C_FUNC = 1 << 3,
};

struct col {
	const char *head;
	unsigned flags;
	unsigned maxw;
};

struct table {
	const struct col *cols;
	unsigned ncols;
	char **cells;
	size_t ncells, cap;
};

static int cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (t->ncells == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		char **nc = realloc(t->cells, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		t->cells = nc;
		t->cap = ncap;
	}
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	t->cells[t->ncells++] = s;
	return 0;
}

static void table_release(struct table *t)
{
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
}

static void put_cell_text(FILE *out, const struct col *c, const char *s, size_t w)
{
	size_t sw = rep_text_width(s);

	if (sw > w && w > 3) {
		if (c->flags & (C_PATH | C_FUNC)) {
			fputs("...", out);
			rep_text_put(out, s + rep_text_offset(s, sw - (w - 3)), SIZE_MAX);
		} else {
			rep_text_put(out, s, rep_text_offset(s, w - 3));
			fputs("...", out);
		}
		return;
	}
	if ((c->flags & C_RIGHT) && sw < w)
		fprintf(out, "%*s", (int)(w - sw), "");
	rep_text_put(out, s, SIZE_MAX);
	if (!(c->flags & C_RIGHT) && sw < w)
		fprintf(out, "%*s", (int)(w - sw), "");
}

static void table_print_text(const struct table *t, FILE *out)
{
	size_t nrows = t->ncells / t->ncols;
	size_t w[16];

	for (unsigned j = 0; j < t->ncols; j++) {
		w[j] = rep_text_width(t->cols[j].head);
		for (size_t i = 0; i < nrows; i++) {
			size_t cw = rep_text_width(t->cells[i * t->ncols + j]);

			if (cw > w[j])
				w[j] = cw;
		}
		if (t->cols[j].maxw && w[j] > t->cols[j].maxw)
			w[j] = t->cols[j].maxw;
	}
	for (size_t i = 0; i <= nrows; i++) {
		char *const *row = i ? &t->cells[(i - 1) * t->ncols] : NULL;
		unsigned last = t->ncols - 1;

		/* no trailing blanks: stop after the last cell with text */
		while (row && last > 0 && !row[last][0])
			last--;
		fputs("  ", out);
		for (unsigned j = 0; j <= last; j++) {
			const char *s = row ? row[j] : t->cols[j].head;

			if (j == last && !(t->cols[j].flags & C_RIGHT) && rep_text_width(s) <= w[j])
				rep_text_put(out, s, SIZE_MAX);
			else
				put_cell_text(out, &t->cols[j], s, w[j]);
			if (j < last)
				fputs("  ", out);
		}
		fputc('\n', out);
	}
}

static void table_print_md(const struct table *t, FILE *out)
{
	size_t nrows = t->ncells / t->ncols;

	fputc('|', out);
	for (unsigned j = 0; j < t->ncols; j++) {
		fputc(' ', out);
		rep_md_put(out, t->cols[j].head, false);
		fputs(" |", out);
	}
	fputs("\n|", out);
	for (unsigned j = 0; j < t->ncols; j++)
		fputs(t->cols[j].flags & C_RIGHT ? "---:|" : "---|", out);
	fputc('\n', out);
	for (size_t i = 0; i < nrows; i++) {
		fputc('|', out);
		for (unsigned j = 0; j < t->ncols; j++) {
			fputc(' ', out);
			rep_md_put(out, t->cells[i * t->ncols + j], t->cols[j].flags & C_CODE);
			fputs(" |", out);
		}
		fputc('\n', out);
	}
}

/* HTML: a table of the cells, every one escaped; C_RIGHT cells are numbers,
 * C_CODE ones names in a monospace font (cut with an ellipsis, the whole
 * text in the title attribute). */
static void table_print_html(const struct table *t, FILE *out)
{
	size_t nrows = t->ncells / t->ncols;

	fputs("<table>\n<tr>", out);
	for (unsigned j = 0; j < t->ncols; j++) {
		fputs(t->cols[j].flags & C_RIGHT ? "<th class=\"r\">" : "<th>", out);
		rep_html_put(out, t->cols[j].head);
		fputs("</th>", out);
	}
	fputs("</tr>\n", out);
	for (size_t i = 0; i < nrows; i++) {
		fputs("<tr>", out);
		for (unsigned j = 0; j < t->ncols; j++) {
			const char *s = t->cells[i * t->ncols + j];

			if (t->cols[j].flags & C_RIGHT) {
				fputs("<td class=\"r\">", out);
			} else if (t->cols[j].flags & C_CODE) {
				fputs("<td class=\"c\" title=\"", out);
				rep_html_put(out, s);
				fputs("\">", out);
			} else {
				fputs("<td>", out);
			}
			rep_html_put(out, s);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
}

static void print_title(FILE *out, enum rep_format f, const char *title, const char *note)
{
	if (f == REP_FORMAT_HTML) {
		fputs("<h2>", out);
		rep_html_put(out, title);
		fputs("</h2>\n", out);
		if (note) {
			fputs("<p class=\"note\">", out);
			rep_html_put(out, note);
			fputs("</p>\n", out);
		}
	} else if (f == REP_FORMAT_MARKDOWN) {
		fprintf(out, "### %s\n\n", title);
		if (note)
			fprintf(out, "%s\n\n", note);
	} else {
		fprintf(out, "%s%s%s\n", title, note ? " -- " : "", note ? note : "");
	}
}

static void print_table(FILE *out, enum rep_format f, const struct table *t, size_t hidden)
{
	if (f == REP_FORMAT_HTML) {
		if (t->ncells)
			table_print_html(t, out);
		else
			fputs("<p class=\"note\">no samples</p>\n", out);
		if (hidden)
			fprintf(out, "<p class=\"note\">%zu more row%s hidden (--top, --min-percent)</p>\n",
				hidden, hidden == 1 ? "" : "s");
		return;
	}
	if (f == REP_FORMAT_MARKDOWN) {
		if (t->ncells)
			table_print_md(t, out);
		else
			fputs("_no samples_\n", out);
		if (hidden)
			fprintf(out, "\n_%zu more row%s hidden (--top, --min-percent)_\n", hidden,
				hidden == 1 ? "" : "s");
	} else {
		if (t->ncells)
			table_print_text(t, out);
		else
			fputs("  (no samples)\n", out);
		if (hidden)
			fprintf(out, "  (%zu more row%s hidden: --top, --min-percent)\n", hidden,
				hidden == 1 ? "" : "s");
	}
	fputc('\n', out);
}

const char *rep_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* ---- views ---------------------------------------------------------------------- */

struct warnings {
	char *w[8];
	size_t n, more;
};

static void warn_add(struct warnings *w, char *s)
{
	if (!s)
		return;
	if (w->n < (sizeof(w->w) / sizeof(w->w[0])))
		w->w[w->n++] = s;
	else {
		free(s);
		w->more++;
	}
}

/* "12.50% of samples", or "more than the samples recorded": a share over
 * 100% reads as a bug. */
static const char *lost_share(uint64_t lost, uint64_t total, char *buf, size_t len)
{
	if (lost > total)
		snprintf(buf, len, "more than the %" PRIu64 " samples recorded", total);
	else
		snprintf(buf, len, "%.2f%% of samples", pct(lost, total));
	return buf;
}

static void warnings_build(const struct agg *a, const struct totals *t, struct warnings *w)
{
	const struct rep_profile *p = a->p;
	double lostp = pct(t->lost, a->total);
	char buf[256], *s;

	memset(w, 0, sizeof(*w));
	if (!a->total && t->lost == 0 && asprintf(&s, "no samples were recorded") >= 0)
		warn_add(w, s);
	if ((lostp > 1.0 || (!a->total && t->lost)) &&
	    asprintf(&s, "%" PRIu64 " of the program's samples were lost (%s): its rings filled "
			 "before psup drained them (psup was busy unwinding and writing); a longer "
			 "--period gives it fewer to drain",
		     t->lost, lost_share(t->lost, a->total, buf, sizeof(buf))) >= 0)
		warn_add(w, s);
	if (t->lost_cpu && (pct(t->lost_cpu, a->total) > 1.0 || !a->total) &&
	    asprintf(&s, "%" PRIu64 " samples were lost in the CPU rings, not attributable: they "
			 "hold every task's samples on those CPUs (psup's own and other programs' "
			 "too); --sample-per-thread samples only the program's threads",
		     t->lost_cpu) >= 0)
		warn_add(w, s);
	for (uint32_t i = 0; i < p->nruns; i++) {
		if (p->runs[i].complete)
			continue;
		run_ended(a, &p->runs[i], buf, sizeof(buf));
		if (asprintf(&s, "%s: %s", S(a, p->runs[i].file), buf) >= 0)
			warn_add(w, s);
	}
}

static void warnings_release(struct warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->w[i]);
}

static int view_summary(const struct agg *a, const struct rep_options *o, FILE *out)
{
	const struct rep_profile *p = a->p;
	const struct rep_run *r0 = p->nruns ? &p->runs[0] : NULL;
	static const struct col kv_cols[] = { { "", 0, 0 }, { "", 0, 0 } };
	static const struct col run_cols[] = {
		{ "run", C_RIGHT, 0 },
		{ "file", C_PATH, 24 },
		{ "ended", 0, 44 },
		{ "duration", C_RIGHT, 0 },
		{ "samples", C_RIGHT, 0 },
		{ "lost", C_RIGHT, 0 },
	};
	struct table kv = { kv_cols, 2, NULL, 0, 0 }, runs = { run_cols, 6, NULL, 0, 0 };
	struct warnings warn;
	struct totals t;
	char buf[256], dur[64], per[64];
	char *cmd = NULL;
	bool same_cmd = true;
	double lostp;
	int rc = 0;

	totals(p, &t);
	warnings_build(a, &t, &warn);
	lostp = pct(t.lost, a->total);
	if (r0) {
		cmd = run_command(a, r0);
		if (!cmd) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 1; i < p->nruns; i++) {
			char *c = run_command(a, &p->runs[i]);

			if (!c) {
				rc = -ENOMEM;
				goto out;
			}
			same_cmd &= strcmp(c, cmd) == 0;
			free(c);
		}
	}
	if (o->format == REP_FORMAT_JSON) {
		bool f = true;

		fputs(",\"summary\":{", out);
		rep_json_ku64(out, &f, "runs", p->nruns);
		rep_json_kstr(out, &f, "command", same_cmd ? cmd : NULL);
		rep_json_ku64(out, &f, "samples", a->total);
		rep_json_ku64(out, &f, "lost", t.lost);
		rep_json_kpct(out, &f, "lost_percent", lostp);
		rep_json_ku64(out, &f, "lost_cpu_rings", t.lost_cpu);
		rep_json_ku64(out, &f, "duration_ns", t.duration);
		rep_json_ku64(out, &f, "threads", t.threads);
		rep_json_ku64(out, &f, "processes", t.processes);
		rep_json_ku64(out, &f, "unwind_failures", t.unwind);
		rep_json_key(out, &f, "warnings");
		fputc('[', out);
		for (size_t i = 0; i < warn.n; i++) {
			fputs(i ? "," : "", out);
			rep_json_str(out, warn.w[i]);
		}
		fputs("]}", out);
		goto out;
	}

	print_title(out, o->format, "Summary", NULL);
	if (r0) {
		const char *event = rep_str(p, r0->event);

		if (r0->clock) {
			fmt_ns(per, sizeof(per), r0->period);
			snprintf(buf, sizeof(buf), "%.100s, period %s", event ? event : "?", per);
		} else {
			snprintf(buf, sizeof(buf), "%.100s, period %" PRIu64 " events",
				 event ? event : "?", r0->period);
		}
		if (r0->jitter)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " +-%" PRIu64 "%%",
				 r0->jitter);
		if (r0->per_cpu)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
				 ", sampled per CPU (cpu-clock)");
		if (r0->hw_pmu)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ", hardware PMU");
		rc |= cell(&kv, "command");
		rc |= cell(&kv, "%s%s", cmd, same_cmd ? "" : " (and others: see the runs)");
		rc |= cell(&kv, "mode");
		rc |= cell(&kv, "%s", r0->mode ? S(a, r0->mode) : "?");
		rc |= cell(&kv, "event");
		rc |= cell(&kv, "%s", buf);
		if (r0->thread_events) {
			/* How threads got their switch records, blocks and
			 * wakeups (docs/format.md, header). */
			bool inherited = !strcmp(rep_str(p, r0->thread_events), "inherited");

			rc |= cell(&kv, "thread events");
			if (inherited)
				rc |= cell(&kv, "inherited from per-CPU events (none opened per new thread)");
			else if (!strcmp(rep_str(p, r0->thread_events), "inherited_then_per_thread"))
				rc |= cell(&kv,
					   "inherited from per-CPU events until the kernel refused "
					   "(%s); then opened per thread (%" PRIu64 " sets)",
					   r0->thread_events_why ? S(a, r0->thread_events_why) : "?",
					   r0->own_sets_after);
			else if (r0->thread_events_why)
				rc |= cell(&kv, "opened per thread (%s)", S(a, r0->thread_events_why));
			else
				rc |= cell(&kv, "%s", S(a, r0->thread_events));
		}
		if (r0->new_threads) {
			/* How psup learnt of new threads (docs/format.md). */
			const char *how = rep_str(p, r0->new_threads);

			rc |= cell(&kv, "new threads");
			if (!strcmp(how, "records"))
				rc |= cell(&kv, "told by the kernel's records, none stopped");
			else if (!strcmp(how, "stopped"))
				rc |= cell(&kv, "stopped at their creation (ptrace)");
			else
				rc |= cell(&kv, "%s", S(a, r0->new_threads));
		}
	}
	fmt_ns(dur, sizeof(dur), t.duration);
	rc |= cell(&kv, "runs");
	rc |= cell(&kv, "%" PRIu32, p->nruns);
	rc |= cell(&kv, "duration");
	rc |= cell(&kv, "%s%s", dur, p->nruns > 1 ? " (all runs)" : "");
	rc |= cell(&kv, "samples");
	rc |= cell(&kv, "%" PRIu64, a->total);
	rc |= cell(&kv, "lost samples");
	rc |= cell(&kv, "%" PRIu64 " (%s)", t.lost, lost_share(t.lost, a->total, buf, sizeof(buf)));
	if (t.lost_cpu) {
		rc |= cell(&kv, "lost in CPU rings");
		rc |= cell(&kv, "%" PRIu64 " (not attributable: any task's, psup's own included)",
			   t.lost_cpu);
	}
	rc |= cell(&kv, "threads");
	rc |= cell(&kv, "%" PRIu32, t.threads);
	rc |= cell(&kv, "processes");
	rc |= cell(&kv, "%" PRIu32, t.processes);
	rc |= cell(&kv, "unwind failures");
	if (t.unwind && a->total)
		rc |= cell(&kv, "%" PRIu64 " (stacks cut short: %.2f%% of samples)", t.unwind,
			   100.0 * (double)t.unwind / (double)a->total);
	else
		rc |= cell(&kv, "%" PRIu64, t.unwind);
	if (p->nruns == 1) {
		run_ended(a, r0, buf, sizeof(buf));
		rc |= cell(&kv, "ended");
		rc |= cell(&kv, "%s", buf);
	}
	for (uint32_t i = 0; i < p->nruns && p->nruns > 1; i++) {
		const struct rep_run *r = &p->runs[i];

		run_ended(a, r, buf, sizeof(buf));
		fmt_ns(dur, sizeof(dur), run_duration(r));
		rc |= cell(&runs, "%" PRIu32, i + 1);
		rc |= cell(&runs, "%s", S(a, r->file));
		rc |= cell(&runs, "%s", buf);
		rc |= cell(&runs, "%s", dur);
		rc |= cell(&runs, "%" PRIu64, r->samples);
		rc |= cell(&runs, "%" PRIu64, r->lost > r->end_lost ? r->lost : r->end_lost);
	}
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	if (o->format == REP_FORMAT_MARKDOWN) {
		/* GitHub tables need a header row; an empty one reads as a list */
		table_print_md(&kv, out);
	} else {
		size_t kw = 0;

		for (size_t i = 0; i < kv.ncells; i += 2)
			if (strlen(kv.cells[i]) > kw)
				kw = strlen(kv.cells[i]);
		for (size_t i = 0; i < kv.ncells; i += 2) {
			fprintf(out, "  %-*s  ", (int)kw, kv.cells[i]);
			rep_text_put(out, kv.cells[i + 1], SIZE_MAX);
			fputc('\n', out);
		}
	}
	if (p->nruns > 1) {
		fputc('\n', out);
		if (o->format == REP_FORMAT_MARKDOWN)
			table_print_md(&runs, out);
		else
			table_print_text(&runs, out);
	}
	/* warnings last in the summary, where they are seen */
	if (warn.n)
		fputc('\n', out);
	for (size_t i = 0; i < warn.n; i++) {
		if (o->format == REP_FORMAT_MARKDOWN) {
			fputs("> **warning:** ", out);
			rep_md_put(out, warn.w[i], false);
			fputs("\n", out);
		} else {
			fputs("warning: ", out);
			rep_text_put(out, warn.w[i], SIZE_MAX);
			fputc('\n', out);
		}
	}
	fputc('\n', out);
out:
	warnings_release(&warn);
	table_release(&kv);
	table_release(&runs);
	free(cmd);
	return rc;
}

/* The symbols the recorder found for image, 0 when unknown. */
static uint32_t image_symbols(const struct agg *a, uint32_t image)
{
	uint64_t *slot = psup_u64map_find(&a->dbg_ix, image);

	return slot ? a->dbg[*slot - 1].symbols : 0;
}

static const char *symbols_meaning(const char *symbols)
{
	if (!strcmp(symbols, "symtab"))
		return "no debug info: function names from its symbol table, no source lines";
	if (!strcmp(symbols, "dynsym"))
		return "stripped: only its exported functions have names, no source lines\n    "
		       "(a row \"[image] after F\" is code without a name that follows F, not F)";
	if (!strcmp(symbols, "none"))
		return "stripped: no symbols at all, no source lines";
	return NULL; /* "dwarf", or something newer */
}

static int cmp_dbg(const void *x, const void *y, void *ctx)
{
	const struct agg *a = ctx;
	const struct dbg_row *r = &a->dbg[*(const uint32_t *)x], *s = &a->dbg[*(const uint32_t *)y];

	if (r->total != s->total)
		return r->total > s->total ? -1 : 1;
	return strcmp(S(a, r->image), S(a, s->image));
}

/*
 * Says which images that got samples lack debug info, what that costs, and
 * once how to get it. The recorder looks the debug info up (in the file, by
 * build-id, by .gnu_debuglink, in debuginfod's client cache), so it takes a
 * new recording. It asks no debuginfod server itself (a download would hold
 * the program at a stop): debuginfod-find (Debian's debuginfod package)
 * fetches the files into that cache first.
 */
static int print_debug_info(const struct agg *a, const struct rep_options *o, FILE *out)
{
	uint32_t *idx = malloc((a->ndbg + 1) * sizeof(*idx)), n = 0;
	const char *first = NULL;
	bool md = o->format == REP_FORMAT_MARKDOWN, libc = false;

	if (!idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < a->ndbg; i++) {
		const char *img = S(a, a->dbg[i].image);

		if (img[0] != '[' && a->dbg[i].total && symbols_meaning(S(a, a->dbg[i].symbols)))
			idx[n++] = i;
	}
	if (!n) {
		free(idx);
		return 0;
	}
	qsort_r(idx, n, sizeof(*idx), cmp_dbg, (void *)a);
	print_title(out, o->format, "Debug info",
		    "images with samples that psup could not give source lines");
	for (uint32_t i = 0; i < n; i++) {
		const struct dbg_row *r = &a->dbg[idx[i]];
		const char *img = S(a, r->image), *base = rep_base_name(img);

		if (!first)
			first = img;
		libc |= !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
		if (md) {
			fputs("- ", out);
			rep_md_put(out, base, true);
		} else {
			fputs("  ", out);
			rep_text_put(out, base, SIZE_MAX);
		}
		fprintf(out, " (on the path of %.1f%% of the samples):%s%s\n",
			pct(r->total, a->total), md ? " " : "\n    ",
			symbols_meaning(S(a, r->symbols)));
	}
	fputs(md ? "\n" : "", out);
	fputs(md ? "To get them, install the images' debug symbols and record again: on Debian, "
		   "the `-dbgsym` package of the package that ships the file ("
		 : "  to get them, install the images' debug symbols and record again: on Debian,\n"
		   "  the -dbgsym package of the package that ships the file\n  (",
	      out);
	if (md) {
		char *cmd = NULL;

		if (asprintf(&cmd, "dpkg -S %s", first) < 0) {
			free(idx);
			return -ENOMEM;
		}
		rep_md_put(out, cmd, true);
		free(cmd);
	} else {
		fputs("dpkg -S ", out);
		rep_text_put(out, first, SIZE_MAX);
	}
	fputs(" names it)", out);
	if (libc)
		fputs(md ? ", `libc6-dbg` for libc" : ", libc6-dbg for libc", out);
	fputs(md ? "; or fetch them from a debuginfod server before recording: "
		   "`DEBUGINFOD_URLS=https://debuginfod.debian.net debuginfod-find debuginfo FILE` "
		   "(Debian's `debuginfod` package) for each file; psup reads debuginfod's cache.\n\n"
		 : ";\n  or fetch them from a debuginfod server before recording, for each file:\n"
		   "  DEBUGINFOD_URLS=https://debuginfod.debian.net debuginfod-find debuginfo FILE\n"
		   "  (Debian's debuginfod package); psup reads debuginfod's cache\n\n",
	      out);
	free(idx);
	return 0;
}

static int view_images(const struct agg *a, const struct rep_options *o, FILE *out)
{
	static const struct col cols[] = {
		{ "samples", C_RIGHT, 0 },
		{ "percent", C_RIGHT, 0 },
		{ "cum%", C_RIGHT, 0 },
		{ "image", C_PATH | C_CODE, 64 },
	};
	struct table t = { cols, 4, NULL, 0, 0 };
	size_t shown = 0, hidden = 0;
	uint64_t cum = 0;
	int rc = 0;

	if (o->format == REP_FORMAT_JSON)
		fputs(",\"images\":[", out);
	for (uint32_t i = 0; i < a->nims; i++) {
		const struct im_row *r = &a->ims[a->im_order[i]];

		cum = rep_sat_add(cum, r->self);
		if (!row_shown(o, shown, pct(r->self, a->total))) {
			hidden++;
			continue;
		}
		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(shown ? ",{" : "{", out);
			rep_json_kstr(out, &f, "image", S(a, r->image));
			if (started_as(a, r->image))
				rep_json_kstr(out, &f, "started_as", started_as(a, r->image));
			rep_json_ku64(out, &f, "samples", r->self);
			rep_json_kpct(out, &f, "percent", pct(r->self, a->total));
			rep_json_kpct(out, &f, "cum_percent", pct(cum, a->total));
			rep_json_kstr(out, &f, "symbols", rep_str(a->p, image_symbols(a, r->image)));
			fputc('}', out);
		} else {
			rc |= cell(&t, "%" PRIu64, r->self);
			rc |= cell(&t, "%.1f%%", pct(r->self, a->total));
			rc |= cell(&t, "%.1f%%", pct(cum, a->total));
			if (started_as(a, r->image))
				rc |= cell(&t, "%s (started as %s)", S(a, r->image), started_as(a, r->image));
			else
				rc |= cell(&t, "%s", S(a, r->image));
		}
		shown++;
	}
	if (o->format == REP_FORMAT_JSON) {
		fputc(']', out);
	} else if (!rc) {
		print_title(out, o->format, "Images", "samples whose innermost frame is in the image");
		print_table(out, o->format, &t, hidden);
		rc = print_debug_info(a, o, out);
	}
	a->hidden[0] = hidden;
	table_release(&t);
	return rc ? -ENOMEM : 0;
}

/* Whether some row of the lines view has a source line. */
static bool lines_known(const struct agg *a)
{
	for (uint32_t i = 0; i < a->nlns; i++)
		if (a->lns[i].file && (a->lns[i].self || a->lns[i].total))
			return true;
	return false;
}

static int view_functions(const struct agg *a, const struct rep_options *o, FILE *out)
{
	static const struct col cols[] = {
		{ "self", C_RIGHT, 0 },
		{ "self%", C_RIGHT, 0 },
		{ "cum%", C_RIGHT, 0 },
		{ "total%", C_RIGHT, 0 },
		{ "function", C_CODE | C_FUNC, 60 },
		{ "image", C_CODE, 12 },
		{ "source", C_CODE | C_PATH, 16 },
	};
	struct table t = { cols, 7, NULL, 0, 0 };
	size_t shown = 0, hidden = 0;
	uint64_t cum = 0;
	int rc = 0;

	if (o->format == REP_FORMAT_JSON)
		fputs(",\"functions\":[", out);
	for (uint32_t i = 0; i < a->nfns; i++) {
		const struct fn_row *r = &a->fns[a->fn_order[i]];
		double selfp = pct(r->self, a->total), totp = pct(r->total, a->total);
		const char *file = rep_str(a->p, r->file);

		cum = rep_sat_add(cum, r->self);
		if (!row_shown(o, shown, selfp > totp ? selfp : totp)) {
			hidden++;
			continue;
		}
		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(shown ? ",{" : "{", out);
			rep_json_kstr(out, &f, "function", S(a, r->name));
			rep_json_kstr(out, &f, "image", S(a, r->image));
			rep_json_kstr(out, &f, "file", file);
			rep_json_ku64(out, &f, "self", r->self);
			rep_json_kpct(out, &f, "self_percent", selfp);
			rep_json_kpct(out, &f, "cum_percent", pct(cum, a->total));
			rep_json_ku64(out, &f, "total", r->total);
			rep_json_kpct(out, &f, "total_percent", totp);
			fputc('}', out);
		} else {
			rc |= cell(&t, "%" PRIu64, r->self);
			rc |= cell(&t, "%.1f%%", selfp);
			rc |= cell(&t, "%.1f%%", pct(cum, a->total));
			rc |= cell(&t, "%.1f%%", totp);
			rc |= cell(&t, "%s", S(a, r->name));
			rc |= cell(&t, "%s",
				   started_as(a, r->image) ? started_as(a, r->image) : rep_base_name(S(a, r->image)));
			rc |= cell(&t, "%s", file ? rep_base_name(file) : "");
		}
		shown++;
	}
	if (o->format == REP_FORMAT_JSON) {
		fputc(']', out);
	} else if (!rc) {
		print_title(out, o->format, "Functions",
			    "self: samples in the function itself; total: with what it calls");
		print_table(out, o->format, &t, hidden);
	}
	a->hidden[1] = hidden;
	table_release(&t);
	return rc ? -ENOMEM : 0;
}

static int view_lines(const struct agg *a, const struct rep_options *o, FILE *out)
{
	static const struct col cols[] = {
		{ "self", C_RIGHT, 0 },
		{ "self%", C_RIGHT, 0 },
		{ "total", C_RIGHT, 0 },
		{ "total%", C_RIGHT, 0 },
		{ "line", C_CODE | C_PATH, 26 },
		{ "function", C_CODE | C_FUNC, 60 },
	};
	struct table t = { cols, 6, NULL, 0, 0 };
	size_t shown = 0, hidden = 0;
	uint64_t cum = 0;
	int rc = 0;

	if (o->format == REP_FORMAT_JSON)
		fputs(",\"lines\":[", out);
	for (uint32_t i = 0; i < a->nlns; i++) {
		const struct ln_row *r = &a->lns[a->ln_order[i]];
		double selfp = pct(r->self, a->total), totp = pct(r->total, a->total);
		const char *file = rep_str(a->p, r->file);

		cum = rep_sat_add(cum, r->self);
		if (!row_shown(o, shown, selfp > totp ? selfp : totp)) {
			hidden++;
			continue;
		}
		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(shown ? ",{" : "{", out);
			rep_json_kstr(out, &f, "file", file);
			rep_json_key(out, &f, "line");
			if (file)
				fprintf(out, "%" PRIu32, r->line);
			else
				fputs("null", out);
			rep_json_kstr(out, &f, "function", S(a, r->function));
			rep_json_kstr(out, &f, "image", S(a, r->image));
			rep_json_ku64(out, &f, "self", r->self);
			rep_json_kpct(out, &f, "self_percent", selfp);
			rep_json_kpct(out, &f, "cum_percent", pct(cum, a->total));
			rep_json_ku64(out, &f, "total", r->total);
			rep_json_kpct(out, &f, "total_percent", totp);
			fputc('}', out);
		} else {
			rc |= cell(&t, "%" PRIu64, r->self);
			rc |= cell(&t, "%.1f%%", selfp);
			rc |= cell(&t, "%" PRIu64, r->total);
			rc |= cell(&t, "%.1f%%", totp);
			if (file)
				rc |= cell(&t, "%s:%" PRIu32, rep_base_name(file), r->line);
			else
				rc |= cell(&t, "-");
			rc |= cell(&t, "%s", S(a, r->function));
		}
		shown++;
	}
	if (o->format == REP_FORMAT_JSON) {
		fputc(']', out);
	} else if (!rc && a->total && !lines_known(a)) {
		/* a table of "-" says nothing: say why there are no lines */
		print_title(out, o->format, "Lines", NULL);
		fputs(o->format == REP_FORMAT_MARKDOWN
			      ? "_no sampled code has source line information: its images have no "
				"debug info (see Debug info under Images)_\n\n"
			      : "  (no sampled code has source line information: its images have no "
				"debug info; see Debug info under Images)\n\n",
		      out);
	} else if (!rc) {
		print_title(out, o->format, "Lines",
			    "self: samples at the line; total: with the calls made from it");
		print_table(out, o->format, &t, hidden);
	}
	a->hidden[2] = hidden;
	table_release(&t);
	return rc ? -ENOMEM : 0;
}

/* Whether any run has thread_times records (else the states are unknown and
 * the threads view is as without them). */
static bool have_times(const struct rep_profile *p)
{
	for (uint32_t i = 0; i < p->nruns; i++)
		if (p->runs[i].has_times)
			return true;
	return false;
}

static uint64_t times_blocked(const struct rep_thread_times *t)
{
	return rep_sat_add(rep_sat_add(t->blocked_futex, t->blocked_io),
			   rep_sat_add(t->blocked_sleep, t->blocked_other));
}

/* The thread's lifetime as the recorder accounted it: the sum of the states. */
static uint64_t times_life(const struct rep_thread_times *t)
{
	return rep_sat_add(rep_sat_add(t->running, t->runnable), times_blocked(t));
}

/* A share of the lifetime, whole percents; "<1%" keeps a small nonzero
 * share from reading as nothing. */
static int cell_share(struct table *t, uint64_t x, uint64_t life)
{
	double v = pct(x, life);

	if (x && v < 0.5)
		return cell(t, "<1%%");
	return cell(t, "%.0f%%", v);
}

static void json_times(FILE *out, bool *first, const struct rep_mthread *th)
{
	const struct rep_thread_times *t = &th->times;
	bool f = true;

	rep_json_key(out, first, "times");
	if (!th->has_times) {
		fputs("null", out);
		return;
	}
	fputc('{', out);
	rep_json_ku64(out, &f, "running", t->running);
	rep_json_ku64(out, &f, "runnable", t->runnable);
	rep_json_ku64(out, &f, "blocked", times_blocked(t));
	rep_json_ku64(out, &f, "blocked_futex", t->blocked_futex);
	rep_json_ku64(out, &f, "blocked_io", t->blocked_io);
	rep_json_ku64(out, &f, "blocked_sleep", t->blocked_sleep);
	rep_json_ku64(out, &f, "blocked_other", t->blocked_other);
	fputc('}', out);
}

/* A thread's name cell: its latest name, and the first one when it was
 * renamed since ("C2 CompilerThre (was java)"). */
static int thread_name_cell(struct table *t, const struct agg *a, const struct rep_mthread *th)
{
	if (th->name && th->old_name)
		return cell(t, "%s (was %s)", S(a, th->name), S(a, th->old_name));
	return cell(t, "%s", th->name ? S(a, th->name) : "");
}

/* One row of the thread states table: the same threads as the threads
 * table, in the same order. */
static int states_row(struct table *t, bool multi, const struct agg *a,
		      const struct rep_mthread *th)
{
	const struct rep_thread_times *tt = &th->times;
	uint64_t life = times_life(tt);
	int rc = 0;

	if (multi)
		rc |= cell(t, "%" PRIu32, th->run + 1);
	rc |= cell(t, "%d", th->tid);
	rc |= thread_name_cell(t, a, th);
	if (!th->has_times) {
		/* unknown: a recorder that stopped before the thread's end */
		for (int i = 0; i < 9; i++)
			rc |= cell(t, "-");
		return rc;
	}
	rc |= cell(t, "%.3fs", (double)life / 1e9);
	rc |= cell(t, "%.3fs", (double)tt->running / 1e9);
	rc |= cell_share(t, tt->running, life);
	rc |= cell_share(t, tt->runnable, life);
	rc |= cell_share(t, times_blocked(tt), life);
	rc |= cell_share(t, tt->blocked_futex, life);
	rc |= cell_share(t, tt->blocked_io, life);
	rc |= cell_share(t, tt->blocked_sleep, life);
	rc |= cell_share(t, tt->blocked_other, life);
	return rc;
}

/*
 * Threads by samples. When the recorder wrote thread_times, a second table
 * with the same rows gives each thread's time per scheduling state: the
 * threads table is already near 100 columns wide, so the states get a table
 * of their own rather than more columns. JSON puts them in the thread's row.
 */
static int view_threads(const struct agg *a, const struct rep_options *o, FILE *out)
{
	/* clang-format off */
	static const struct col cols[] = {
		{ "run", C_RIGHT, 0 },     { "tid", C_RIGHT, 0 },      { "pid", C_RIGHT, 0 },
		{ "name", C_CODE, 40 },    { "samples", C_RIGHT, 0 },  { "percent", C_RIGHT, 0 },
		{ "lost", C_RIGHT, 0 },    { "top function", C_CODE | C_FUNC, 60 },
	};
	/* clang-format on */
	/* clang-format off */
	static const struct col scols[] = {
		{ "run", C_RIGHT, 0 },      { "tid", C_RIGHT, 0 },     { "name", C_CODE, 40 },
		{ "lifetime", C_RIGHT, 0 }, { "running", C_RIGHT, 0 }, { "run%", C_RIGHT, 0 },
		{ "wait%", C_RIGHT, 0 },    { "blocked%", C_RIGHT, 0 }, { "futex%", C_RIGHT, 0 },
		{ "io%", C_RIGHT, 0 },      { "sleep%", C_RIGHT, 0 },  { "other%", C_RIGHT, 0 },
	};
	/* clang-format on */
	const struct rep_profile *p = a->p;
	bool multi = p->nruns > 1, times = have_times(p);
	/* the run column only when there are several runs */
	struct table t = { multi ? cols : cols + 1, multi ? 8 : 7, NULL, 0, 0 };
	struct table st = { multi ? scols : scols + 1, multi ? 12 : 11, NULL, 0, 0 };
	size_t shown = 0, hidden = 0;
	int rc = 0;

	if (o->format == REP_FORMAT_JSON)
		fputs(",\"threads\":[", out);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct th_row *tr = &a->ths[a->th_order[i]];
		const struct rep_mthread *th = &p->threads[tr->thread];
		const char *top = tr->top_fn != REP_NONE ? S(a, a->fns[tr->top_fn].name) : NULL;
		double share = pct(th->samples, a->total);

		if (!row_shown(o, shown, share)) {
			hidden++;
			continue;
		}
		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(shown ? ",{" : "{", out);
			rep_json_ku64(out, &f, "run", th->run + 1ULL);
			rep_json_ku64(out, &f, "tid", (uint64_t)th->tid);
			rep_json_ku64(out, &f, "pid", (uint64_t)th->pid);
			rep_json_kstr(out, &f, "name", rep_str(p, th->name));
			if (th->old_name)
				rep_json_kstr(out, &f, "first_name", rep_str(p, th->old_name));
			rep_json_ku64(out, &f, "samples", th->samples);
			rep_json_kpct(out, &f, "percent", share);
			rep_json_ku64(out, &f, "lost", th->lost);
			rep_json_kstr(out, &f, "top_function", top);
			if (times)
				json_times(out, &f, th);
			fputc('}', out);
		} else {
			if (multi)
				rc |= cell(&t, "%" PRIu32, th->run + 1);
			rc |= cell(&t, "%d", th->tid);
			rc |= cell(&t, "%d", th->pid);
			rc |= thread_name_cell(&t, a, th);
			rc |= cell(&t, "%" PRIu64, th->samples);
			rc |= cell(&t, "%.1f%%", share);
			rc |= cell(&t, "%" PRIu64, th->lost);
			rc |= cell(&t, "%s", top ? top : "");
			if (times)
				rc |= states_row(&st, multi, a, th);
		}
		shown++;
	}
	if (o->format == REP_FORMAT_JSON) {
		fputc(']', out);
	} else if (!rc) {
		print_title(out, o->format, "Threads", NULL);
		if (!t.ncells && !hidden) {
			fputs(o->format == REP_FORMAT_MARKDOWN ? "_no threads_\n\n" : "  (no threads)\n\n",
			      out);
		} else {
			print_table(out, o->format, &t, hidden);
		}
		if (st.ncells) {
			print_title(out, o->format, "Thread states",
				    "lifetime = running + wait (runnable, for a CPU) + "
				    "blocked (futex, io, sleep, other)");
			print_table(out, o->format, &st, 0);
			fputs(o->format == REP_FORMAT_MARKDOWN
				      ? "other: blocked in the kernel on something psup does not count "
					"as a futex, I/O or a sleep (waiting for a child process, a page "
					"fault, or a call it does not recognize).\n\n"
				      : "  other: blocked in the kernel on something psup does not count "
					"as a futex, I/O or a sleep\n    (waiting for a child process, a "
					"page fault, or a call it does not recognize).\n\n",
			      out);
		}
	}
	a->hidden[3] = hidden;
	table_release(&t);
	table_release(&st);
	return rc ? -ENOMEM : 0;
}

/* ---- calling-context trees ------------------------------------------------------ */

struct tree_view {
	const struct agg *a;
	const struct rep_options *o;
	const struct rep_tree_options *to;
	const struct rep_ctree *t;
	bool bottom_up;
	FILE *out;
	int numw;      /* width of the sample columns */
	bool parallel; /* with idleness: show idle% and ovh% (bottom-up: of self) */
};

/* A share of the total effort (samples + idleness): x in millionths of a
 * sample when micro, else samples. */
static double effort_pct(const struct tree_view *v, uint64_t x, bool micro)
{
	const struct rep_cnode *root = &v->t->nodes[0];
	double effort = (double)root->inclusive + (double)root->idle_incl / 1e6;
	double val = micro ? (double)x / 1e6 : (double)x;

	return effort > 0 ? 100.0 * val / effort : 0.0;
}

/* The sort key is also the pruning key, so a hidden child hides the
 * siblings after it as well. */
static bool cnode_shown(const struct tree_view *v, const struct rep_cnode *c)
{
	uint64_t key = v->bottom_up ? c->exclusive : c->inclusive;

	if (v->to->depth && c->depth > v->to->depth)
		return false;
	return pct(key, v->a->total) >= v->to->min_percent;
}

static const char *cnode_name(const struct tree_view *v, const struct rep_cnode *c, char *buf,
			      size_t len)
{
	const char *name = S(v->a, c->function);

	/* C++ names can run for hundreds of columns: keep the tree readable */
	if (v->o->format != REP_FORMAT_JSON && rep_text_width(name) > 100) {
		snprintf(buf, len, "%.*s...", (int)rep_text_offset(name, 97), name);
		return buf;
	}
	return name;
}

/* "file:line" of the call site, the file without its directories; "" when
 * unknown. */
static void cnode_site(const struct tree_view *v, const struct rep_cnode *c, char *buf, size_t len)
{
	const char *file = rep_str(v->a->p, c->file);

	buf[0] = 0;
	if (file && c->line)
		snprintf(buf, len, "%s:%" PRIu32, rep_base_name(file), c->line);
	else if (file)
		snprintf(buf, len, "%s", rep_base_name(file));
}

static void tree_enter_json(const struct tree_view *v, const struct rep_cnode *c, bool first)
{
	FILE *out = v->out;
	const char *file = rep_str(v->a->p, c->file);
	bool f = true;

	fputs(first ? "{" : ",{", out);
	rep_json_kstr(out, &f, "function", S(v->a, c->function));
	rep_json_kstr(out, &f, "file", file);
	rep_json_key(out, &f, "line");
	if (file && c->line)
		fprintf(out, "%" PRIu32, c->line);
	else
		fputs("null", out);
	rep_json_kstr(out, &f, "image", S(v->a, c->image));
	rep_json_kbool(out, &f, "inlined", c->inlined);
	rep_json_ku64(out, &f, "inclusive", c->inclusive);
	rep_json_ku64(out, &f, "exclusive", c->exclusive);
	rep_json_kpct(out, &f, "inclusive_percent", pct(c->inclusive, v->a->total));
	rep_json_kpct(out, &f, "exclusive_percent", pct(c->exclusive, v->a->total));
	if (v->bottom_up && v->parallel) {
		/* of the self samples (the row's inclusive fields say the same) */
		rep_json_ku64(out, &f, "exclusive_work", c->exclusive - c->overhead_excl);
		rep_json_key(out, &f, "exclusive_idleness");
		fprintf(out, "%.3f", (double)c->idle_excl / 1e6);
		rep_json_ku64(out, &f, "exclusive_overhead", c->overhead_excl);
		rep_json_kpct(out, &f, "exclusive_idleness_percent", effort_pct(v, c->idle_excl, true));
		rep_json_kpct(out, &f, "exclusive_overhead_percent",
			      effort_pct(v, c->overhead_excl, false));
	} else if (!v->bottom_up) {
		/* Tallent & Mellor-Crummey: work (samples that are not
		 * overhead), idleness, overhead, and their share of the effort */
		rep_json_ku64(out, &f, "work", c->inclusive - c->overhead_incl);
		rep_json_key(out, &f, "idleness");
		fprintf(out, "%.3f", (double)c->idle_incl / 1e6);
		rep_json_ku64(out, &f, "overhead", c->overhead_incl);
		rep_json_ku64(out, &f, "exclusive_work", c->exclusive - c->overhead_excl);
		rep_json_key(out, &f, "exclusive_idleness");
		fprintf(out, "%.3f", (double)c->idle_excl / 1e6);
		rep_json_ku64(out, &f, "exclusive_overhead", c->overhead_excl);
		rep_json_kpct(out, &f, "idleness_percent", effort_pct(v, c->idle_incl, true));
		rep_json_kpct(out, &f, "overhead_percent", effort_pct(v, c->overhead_incl, false));
		rep_json_kbool(out, &f, "thread_root", c->spawned);
	}
	rep_json_key(out, &f, v->bottom_up ? "callers" : "children");
	fputc('[', out);
}

/* Levels indented in text and markdown trees. --depth 0 on a deep recursion
 * would print indentation quadratic in the depth (gigabytes for a chain of
 * 100k calls): deeper lines keep this indentation and say their depth. */
enum { TREE_INDENT_MAX = 40 };

static void tree_indent(FILE *out, uint32_t depth)
{
	uint32_t levels = depth - 1 < TREE_INDENT_MAX ? depth - 1 : TREE_INDENT_MAX;

	fprintf(out, "%*s", (int)(2 * levels), "");
}

static void tree_depth_note(FILE *out, uint32_t depth)
{
	if (depth - 1 > TREE_INDENT_MAX)
		fprintf(out, "[depth %" PRIu32 "] ", depth);
}

static void tree_enter_text(const struct tree_view *v, const struct rep_cnode *c)
{
	uint64_t m1 = v->bottom_up ? c->exclusive : c->inclusive;
	uint64_t m2 = v->bottom_up ? c->inclusive : c->exclusive;
	char name[128], site[256];
	FILE *out = v->out;

	cnode_site(v, c, site, sizeof(site));
	fprintf(out, "  %*" PRIu64 "  %6.1f%%  %*" PRIu64 "  %6.1f%%  ", v->numw, m1,
		pct(m1, v->a->total), v->numw, m2, pct(m2, v->a->total));
	if (v->parallel)
		fprintf(out, "%5.1f%%  %5.1f%%  ", effort_pct(v, c->idle_incl, true),
			effort_pct(v, c->overhead_incl, false));
	tree_indent(out, c->depth);
	tree_depth_note(out, c->depth);
	if (c->spawned)
		fputs("[thread] ", out);
	rep_text_put(out, cnode_name(v, c, name, sizeof(name)), SIZE_MAX);
	if (c->inlined)
		fputs(" (inlined)", out);
	if (site[0]) {
		fputs(v->bottom_up ? "  at " : "  from ", out);
		rep_text_put(out, site, SIZE_MAX);
	} else if (v->bottom_up && c->depth == 1 && S(v->a, c->function)[0] != '[') {
		fputs("  [", out);
		rep_text_put(out, rep_base_name(S(v->a, c->image)), SIZE_MAX);
		fputc(']', out);
	}
	fputc('\n', out);
}

static void tree_enter_md(const struct tree_view *v, const struct rep_cnode *c)
{
	uint64_t m1 = v->bottom_up ? c->exclusive : c->inclusive;
	uint64_t m2 = v->bottom_up ? c->inclusive : c->exclusive;
	char name[128], site[256];
	FILE *out = v->out;

	cnode_site(v, c, site, sizeof(site));
	tree_indent(out, c->depth);
	fprintf(out, "- **%.1f%%** %s (%" PRIu64 "), %s %.1f%% (%" PRIu64 ")", pct(m1, v->a->total),
		v->bottom_up ? "self" : "incl", m1, v->bottom_up ? "total" : "self",
		pct(m2, v->a->total), m2);
	if (v->parallel)
		fprintf(out, ", idle %.1f%%, overhead %.1f%%", effort_pct(v, c->idle_incl, true),
			effort_pct(v, c->overhead_incl, false));
	fputs(": ", out);
	tree_depth_note(out, c->depth);
	fputs(c->spawned ? "[thread] " : "", out);
	rep_md_put(out, cnode_name(v, c, name, sizeof(name)), true);
	if (c->inlined)
		fputs(" _(inlined)_", out);
	if (site[0]) {
		fputs(v->bottom_up ? " at " : " from ", out);
		rep_md_put(out, site, true);
	} else if (v->bottom_up && c->depth == 1 && S(v->a, c->function)[0] != '[') {
		/* "[image+0x..]" and "[kernel]" name their image already */
		fputs(" in ", out);
		rep_md_put(out, rep_base_name(S(v->a, c->image)), true);
	}
	fputc('\n', out);
}

/* Prints the tree in pre-order without recursion (a recursive program makes
 * deep trees); returns the number of hidden subtrees or -ENOMEM. */
static int64_t tree_walk(const struct tree_view *v)
{
	struct frame {
		uint32_t node, next, printed;
	} * st;
	const struct rep_ctree *t = v->t;
	size_t sp = 0;
	int64_t hidden = 0;

	st = malloc(((size_t)t->max_depth + 2) * sizeof(*st));
	if (!st)
		return -ENOMEM;
	st[sp++] = (struct frame){ 0, 0, 0 };
	while (sp) {
		struct frame *fr = &st[sp - 1];
		const struct rep_cnode *c = &t->nodes[fr->node];
		uint32_t limit = UINT32_MAX, ch = REP_NONE;

		/* --top counts the functions of the bottom-up view */
		if (fr->node == 0 && v->bottom_up && v->o->top)
			limit = v->o->top;
		while (fr->next < c->nchildren) {
			uint32_t k = t->children[c->first_child + fr->next++];
			const struct rep_cnode *kc = &t->nodes[k];

			if (!kc->inclusive && !kc->exclusive)
				continue;
			if (fr->printed >= limit || !cnode_shown(v, kc)) {
				hidden++;
				continue;
			}
			ch = k;
			break;
		}
		if (ch == REP_NONE) {
			if (fr->node && v->o->format == REP_FORMAT_JSON)
				fputs("]}", v->out);
			sp--;
			continue;
		}
		if (v->o->format == REP_FORMAT_JSON)
			tree_enter_json(v, &t->nodes[ch], fr->printed == 0);
		else if (v->o->format == REP_FORMAT_MARKDOWN)
			tree_enter_md(v, &t->nodes[ch]);
		else
			tree_enter_text(v, &t->nodes[ch]);
		fr->printed++;
		st[sp++] = (struct frame){ ch, 0, 0 };
	}
	free(st);
	return hidden;
}

static int view_tree(const struct agg *a, const struct rep_options *o,
		     const struct rep_tree_options *to, FILE *out, const struct rep_ctree *t,
		     bool bottom_up)
{
	struct tree_view v = { a, o, to, t, bottom_up, out, 5, a->p->has_idleness };
	const char *what = bottom_up ? "--top, --depth, --min-percent" : "--depth, --min-percent";
	char buf[32];
	int64_t hidden;

	if (o->format == REP_FORMAT_JSON) {
		fputs(bottom_up ? ",\"bottom_up\":[" : ",\"top_down\":[", out);
	} else {
		if (bottom_up)
			print_title(out, o->format, "Bottom-up",
				    v.parallel
					    ? "functions by self samples, each with the call paths "
					      "that reached it (self, total: its samples through that "
					      "path; idle%, ovh%: the idleness and overhead of its self "
					      "samples, as shares of the total effort; at: the line of "
					      "the call in the caller)"
					    : "functions by self samples, each with the call paths "
					      "that reached it (self, total: its samples through that "
					      "path; at: the line of the call in the caller)");
		else
			print_title(out, o->format, "Top-down",
				    v.parallel
					    ? "calling contexts from the outermost callers, each thread "
					      "under the context that created it ([thread]) (incl: "
					      "samples in the context and its callees; self: in the "
					      "function itself; idle%, ovh%: its idleness and overhead, "
					      "as shares of the total effort; from: the line of the "
					      "call in the caller)"
					    : "calling contexts from the outermost callers, each thread "
					      "under the context that created it ([thread]) (incl: "
					      "samples in the context and its callees; self: in the "
					      "function itself; from: the line of the call in the "
					      "caller)");
		if (o->format == REP_FORMAT_TEXT) {
			if ((size_t)snprintf(buf, sizeof(buf), "%" PRIu64, a->total) > (size_t)v.numw)
				v.numw = (int)strlen(buf);
			fprintf(out, "  %*s  %7s  %*s  %7s  %s%s\n", v.numw,
				bottom_up ? "self" : "incl", bottom_up ? "self%" : "incl%", v.numw,
				bottom_up ? "total" : "self", bottom_up ? "total%" : "self%",
				v.parallel ? " idle%    ovh%  " : "",
				bottom_up ? "function, then its callers" : "function");
		}
	}
	hidden = tree_walk(&v);
	if (hidden < 0)
		return (int)hidden;
	hidden += (int64_t)t->hidden; /* what the bottom-up builder left out */
	if (o->format == REP_FORMAT_JSON) {
		fputc(']', out);
	} else {
		bool none = !t->nodes[0].nchildren || !a->total;

		if (o->format == REP_FORMAT_MARKDOWN) {
			if (none)
				fputs("_no samples_\n", out);
			if (hidden)
				fprintf(out, "\n_%" PRId64 " more subtree%s hidden (%s)_\n", hidden,
					hidden == 1 ? "" : "s", what);
		} else {
			if (none)
				fputs("  (no samples)\n", out);
			if (hidden)
				fprintf(out, "  (%" PRId64 " more subtree%s hidden: %s)\n", hidden,
					hidden == 1 ? "" : "s", what);
		}
		fputc('\n', out);
	}
	a->hidden[bottom_up ? 5 : 4] = (size_t)hidden;
	return 0;
}

static void json_runs(const struct agg *a, FILE *out)
{
	const struct rep_profile *p = a->p;
	char buf[256];

	fputs("\"runs\":[", out);
	for (uint32_t i = 0; i < p->nruns; i++) {
		const struct rep_run *r = &p->runs[i];
		bool f = true;

		fputs(i ? ",{" : "{", out);
		rep_json_kstr(out, &f, "file", S(a, r->file));
		rep_json_key(out, &f, "argv");
		if (r->has_argv) {
			fputc('[', out);
			for (uint32_t j = 0; j < r->nargv; j++) {
				fputs(j ? "," : "", out);
				rep_json_str(out, S(a, r->argv[j]));
			}
			fputc(']', out);
		} else {
			fputs("null", out);
		}
		rep_json_kstr(out, &f, "exec", rep_str(p, r->exec_path));
		rep_json_kstr(out, &f, "mode", rep_str(p, r->mode));
		rep_json_ku64(out, &f, "pid", (uint64_t)r->pid);
		rep_json_kstr(out, &f, "event", rep_str(p, r->event));
		rep_json_ku64(out, &f, "period", r->period);
		rep_json_ku64(out, &f, "jitter", r->jitter);
		rep_json_kbool(out, &f, "clock", r->clock);
		rep_json_kbool(out, &f, "hw_pmu", r->hw_pmu);
		rep_json_kbool(out, &f, "per_cpu", r->per_cpu);
		rep_json_kstr(out, &f, "thread_events", rep_str(p, r->thread_events));
		rep_json_kstr(out, &f, "thread_events_why", rep_str(p, r->thread_events_why));
		rep_json_kstr(out, &f, "new_threads", rep_str(p, r->new_threads));
		if (r->own_sets_after)
			rep_json_ku64(out, &f, "thread_events_own_after", r->own_sets_after);
		rep_json_kstr(out, &f, "hostname", rep_str(p, r->hostname));
		rep_json_kstr(out, &f, "recorder", rep_str(p, r->version));
		rep_json_ku64(out, &f, "wall_ns", r->wall_ns);
		rep_json_ku64(out, &f, "duration_ns", run_duration(r));
		rep_json_ku64(out, &f, "samples", r->samples);
		rep_json_ku64(out, &f, "lost", r->lost > r->end_lost ? r->lost : r->end_lost);
		rep_json_ku64(out, &f, "lost_cpu_rings", r->lost_cpu);
		rep_json_ku64(out, &f, "unwind_failures", r->unwind_failures);
		rep_json_ku64(out, &f, "threads", r->nthreads);
		rep_json_ku64(out, &f, "processes", r->nprocesses);
		rep_json_kbool(out, &f, "thread_times", r->has_times);
		rep_json_ku64(out, &f, "records", r->nrecords);
		rep_json_kbool(out, &f, "complete", r->complete);
		rep_json_kbool(out, &f, "truncated", r->truncated);
		rep_json_kstr(out, &f, "end_reason", rep_str(p, r->end_reason));
		rep_json_key(out, &f, "exit_status");
		if (r->exited && !r->exit_signal && r->exit_status >= 0)
			fprintf(out, "%d", r->exit_status);
		else
			fputs("null", out);
		rep_json_key(out, &f, "exit_signal");
		if (r->exited && r->exit_signal)
			fprintf(out, "%d", r->exit_signal);
		else
			fputs("null", out);
		run_ended(a, r, buf, sizeof(buf));
		rep_json_kstr(out, &f, "ended", buf);
		fputc('}', out);
	}
	fputc(']', out);
}

/* ---- the HTML page ----------------------------------------------------------------- */

/*
 * psup report --format html: one page of every view asked for. The
 * functions, lines and threads tables are HTML tables; the flame graph draws
 * the top-down tree (report/html.c, report/flame.js); the causal plots are
 * causal.c's; the other views (summary, images, efficiency, locks, witch,
 * the tree views) are their text form, escaped, in <pre>.
 */
struct html_page {
	const struct agg *a;
	const struct rep_options *o;    /* format HTML */
	const struct rep_options *text; /* the same, format TEXT */
	const struct rep_tree_options *to;
	const struct rep_ctree *td, *bu;
	FILE *out;
};

enum html_pre_view { PRE_SUMMARY,
		     PRE_IMAGES,
		     PRE_EFFICIENCY,
		     PRE_LOCKS,
		     PRE_WITCH,
		     PRE_TOP_DOWN,
		     PRE_BOTTOM_UP };

/* A view's text form, escaped, in a <pre>. 0 or -ENOMEM. */
static int html_pre(const struct html_page *pg, enum html_pre_view v)
{
	const struct rep_profile *p = pg->a->p;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc = 0;

	if (!mem)
		return -ENOMEM;
	switch (v) {
	case PRE_SUMMARY:
		rc = view_summary(pg->a, pg->text, mem);
		break;
	case PRE_IMAGES:
		rc = view_images(pg->a, pg->text, mem);
		break;
	case PRE_EFFICIENCY:
		rc = rep_view_efficiency(p, pg->td, pg->text, mem);
		break;
	case PRE_LOCKS:
		rc = rep_view_locks(p, pg->text, mem);
		break;
	case PRE_WITCH:
		rc = rep_witch_print(p, pg->text, mem);
		break;
	case PRE_TOP_DOWN:
		rc = view_tree(pg->a, pg->text, pg->to, mem, pg->td, false);
		break;
	case PRE_BOTTOM_UP:
		rc = view_tree(pg->a, pg->text, pg->to, mem, pg->bu, true);
		break;
	}
	if (fclose(mem) != 0 && !rc)
		rc = -ENOMEM;
	if (!rc) {
		/* no trailing blank lines inside the box */
		while (len && buf[len - 1] == '\n')
			buf[--len] = '\0';
		/* line by line: the escaper turns a newline into '?' */
		fputs("<pre>", pg->out);
		for (char *line = buf, *nl; line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			rep_html_put(pg->out, line);
			if (nl)
				fputc('\n', pg->out);
		}
		fputs("</pre>\n", pg->out);
	}
	free(buf);
	return rc;
}

static void html_section(FILE *out, const char *id, const char *title)
{
	fprintf(out, "<section id=\"%s\">\n<h2>%s</h2>\n", id, title);
}

static int print_html_page(const struct agg *a, const struct rep_options *o,
			   const struct rep_tree_options *to, const struct rep_ctree *td,
			   const struct rep_ctree *bu, FILE *out)
{
	/* clang-format off */
	static const struct { unsigned bit; const char *id, *title; } nav[] = {
		{ REP_VIEW_SUMMARY, "summary", "Summary" },
		{ 0, "flame", "Flame graph" },
		{ REP_VIEW_FUNCTIONS, "functions", "Functions" },
		{ REP_VIEW_LINES, "lines", "Lines" },
		{ REP_VIEW_THREADS, "threads", "Threads" },
		{ REP_VIEW_EFFICIENCY, "efficiency", "Efficiency" },
		{ REP_VIEW_LOCKS, "locks", "Locks" },
		{ REP_VIEW_WITCH, "witch", "Witch" },
		{ REP_VIEW_CAUSAL, "causal", "Causal profile" },
		{ REP_VIEW_IMAGES, "images", "Images" },
		{ REP_VIEW_TOP_DOWN, "top-down", "Top-down" },
		{ REP_VIEW_BOTTOM_UP, "bottom-up", "Bottom-up" },
	};
	/* clang-format on */
	struct rep_options text = *o;
	const struct rep_profile *p = a->p;
	struct html_page pg = { a, o, &text, to, td, bu, out };
	/* the flame graph goes with the top-down data: every view set but
	 * causal or witch alone */
	bool flame = (o->views & ~(unsigned)(REP_VIEW_CAUSAL | REP_VIEW_WITCH)) != 0;
	int rc = 0;

	text.format = REP_FORMAT_TEXT;
	rep_html_begin(out, "psup profile");
	fputs("<h1>psup profile</h1>\n<nav>", out);
	for (size_t i = 0; i < sizeof(nav) / sizeof(nav[0]); i++)
		if (nav[i].bit ? (o->views & nav[i].bit) != 0 : flame)
			fprintf(out, "<a href=\"#%s\">%s</a>", nav[i].id, nav[i].title);
	fprintf(out, "</nav>\n<p id=\"totals\">Samples: <b id=\"total-samples\">%" PRIu64 "</b> in %" PRIu32 " thread%s, %" PRIu32 " run%s.</p>\n",
		a->total, p->nthreads, p->nthreads == 1 ? "" : "s", p->nruns, p->nruns == 1 ? "" : "s");
	if (o->views & REP_VIEW_SUMMARY) {
		html_section(out, "summary", "Summary");
		rc = html_pre(&pg, PRE_SUMMARY);
		fputs("</section>\n", out);
	}
	if (!rc && flame) {
		html_section(out, "flame", "Flame graph");
		fputs("<p class=\"note\">The calling-context tree: callers below, callees above, width "
		      "= samples with the frame on the stack. Click a frame to zoom (click it again or "
		      "&ldquo;reset zoom&rdquo; to zoom out), hover for counts, search to highlight "
		      "functions. Blue-green frames are inlined.</p>\n",
		      out);
		if (td->n && td->nodes[0].inclusive)
			rc = rep_html_flame(out, NULL, td, "flame-graph");
		else
			fputs("<p class=\"note\">no samples</p>\n", out);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_FUNCTIONS)) {
		fputs("<section id=\"functions\">\n", out);
		rc = view_functions(a, o, out);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_LINES)) {
		fputs("<section id=\"lines\">\n", out);
		rc = view_lines(a, o, out);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_THREADS)) {
		fputs("<section id=\"threads\">\n", out);
		rc = view_threads(a, o, out);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_EFFICIENCY)) {
		html_section(out, "efficiency", "Parallel efficiency");
		rc = html_pre(&pg, PRE_EFFICIENCY);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_LOCKS)) {
		html_section(out, "locks", "Locks");
		rc = html_pre(&pg, PRE_LOCKS);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_WITCH)) {
		html_section(out, "witch", "Witch: wasted memory accesses");
		rc = html_pre(&pg, PRE_WITCH);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_CAUSAL)) {
		html_section(out, "causal", "Causal profile");
		if (rep_profile_has_causal(p))
			rc = rep_causal_html_body(p, o, out);
		else
			fputs("<p class=\"note\">no causal experiments: record with psup run -p, "
			      "--latency, --causal or --runs</p>\n",
			      out);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_IMAGES)) {
		html_section(out, "images", "Images");
		rc = html_pre(&pg, PRE_IMAGES);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_TOP_DOWN)) {
		html_section(out, "top-down", "Top-down");
		rc = html_pre(&pg, PRE_TOP_DOWN);
		fputs("</section>\n", out);
	}
	if (!rc && (o->views & REP_VIEW_BOTTOM_UP)) {
		html_section(out, "bottom-up", "Bottom-up");
		rc = html_pre(&pg, PRE_BOTTOM_UP);
		fputs("</section>\n", out);
	}
	rep_html_end(out);
	return rc;
}

int rep_print(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	return rep_print_ext(p, o, NULL, out);
}

int rep_print_ext(const struct rep_profile *p, const struct rep_options *o,
		  const struct rep_tree_options *t, FILE *out)
{
	static const char *const names[] = { "images", "functions", "lines",
					     "threads", "top_down", "bottom_up" };
	struct rep_options opt = *o;
	struct rep_tree_options topt = { 0, 0.0 };
	size_t hidden[6] = { 0 };
	struct rep_ctree td, bu;
	bool *overhead = NULL;
	struct agg a;
	int rc;

	memset(&td, 0, sizeof(td));
	memset(&bu, 0, sizeof(bu));
	if (!opt.views) {
		opt.views = REP_VIEW_DEFAULT;
		if (p->has_idleness && rep_profile_parallel(p))
			opt.views |= REP_VIEW_EFFICIENCY;
		if (p->nlocks)
			opt.views |= REP_VIEW_LOCKS;
		if (rep_witch_present(p))
			opt.views |= REP_VIEW_WITCH;
		if (rep_profile_has_causal(p))
			opt.views |= REP_VIEW_CAUSAL;
	}
	if (!(opt.min_percent >= 0.0)) /* also NaN */
		opt.min_percent = 0.0;
	if (t)
		topt = *t;
	if (!(topt.min_percent >= 0.0))
		topt.min_percent = 0.0;
	if (rep_format_is_export(opt.format))
		return rep_export_print(p, &opt, out);
	/* coz is a causal-only format: the causal view is the output */
	if (opt.format == REP_FORMAT_COZ || opt.format == REP_FORMAT_COZ_JSONL) {
		rc = rep_causal_print(p, &opt, out);
		if (!rc && (fflush(out) != 0 || ferror(out)))
			rc = -EIO;
		return rc;
	}
	rc = agg_build(&a, p);
	if (rc)
		goto out;
	a.hidden = hidden;
	/* html: the flame graph draws the top-down tree */
	if (opt.views & (REP_VIEW_TOP_DOWN | REP_VIEW_BOTTOM_UP | REP_VIEW_EFFICIENCY) ||
	    opt.format == REP_FORMAT_HTML) {
		rc = rep_overhead_flags(p, opt.overhead, &overhead);
		if (!rc)
			rc = rep_ctree_top_down_ext(&td, p, overhead);
	}
	if (!rc && (opt.views & REP_VIEW_BOTTOM_UP))
		rc = rep_ctree_bottom_up(&bu, &td, topt.depth, topt.min_percent, opt.top);
	if (rc)
		goto out;
	if (opt.format == REP_FORMAT_HTML) {
		rc = print_html_page(&a, &opt, &topt, &td, &bu, out);
		if (!rc && (fflush(out) != 0 || ferror(out)))
			rc = -EIO;
		goto out;
	}
	if (opt.format == REP_FORMAT_JSON) {
		fputc('{', out);
		json_runs(&a, out);
	} else if (opt.format == REP_FORMAT_MARKDOWN) {
		fputs("## psup profile\n\n", out);
	}
	if (!rc && (opt.views & REP_VIEW_SUMMARY))
		rc = view_summary(&a, &opt, out);
	if (!rc && (opt.views & REP_VIEW_IMAGES))
		rc = view_images(&a, &opt, out);
	if (!rc && (opt.views & REP_VIEW_FUNCTIONS))
		rc = view_functions(&a, &opt, out);
	if (!rc && (opt.views & REP_VIEW_LINES))
		rc = view_lines(&a, &opt, out);
	if (!rc && (opt.views & REP_VIEW_THREADS))
		rc = view_threads(&a, &opt, out);
	if (!rc && (opt.views & REP_VIEW_EFFICIENCY))
		rc = rep_view_efficiency(p, &td, &opt, out);
	if (!rc && (opt.views & REP_VIEW_LOCKS))
		rc = rep_view_locks(p, &opt, out);
	if (!rc && (opt.views & REP_VIEW_TOP_DOWN))
		rc = view_tree(&a, &opt, &topt, out, &td, false);
	if (!rc && (opt.views & REP_VIEW_BOTTOM_UP))
		rc = view_tree(&a, &opt, &topt, out, &bu, true);
	if (!rc && (opt.views & REP_VIEW_WITCH))
		rc = rep_witch_print(p, &opt, out);
	if (!rc && (opt.views & REP_VIEW_CAUSAL))
		rc = rep_causal_print(p, &opt, out);
	if (!rc && opt.format == REP_FORMAT_JSON) {
		bool f = true;

		fputs(",\"hidden\":{", out);
		for (int i = 0; i < 6; i++)
			if (opt.views & (REP_VIEW_IMAGES << i))
				rep_json_ku64(out, &f, names[i], hidden[i]);
		fputs("}}\n", out);
	}
	if (!rc && (fflush(out) != 0 || ferror(out)))
		rc = -EIO;
out:
	rep_ctree_release(&td);
	rep_ctree_release(&bu);
	free(overhead);
	agg_release(&a);
	return rc;
}
