#include "report/report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report-internal.h"

/*
 * The merged profile. Every file is one run; its locations and context-tree
 * nodes are renamed into profile-wide rows, so runs of different processes,
 * address layouts and builds add up: a location is identified by its image and
 * its frames (function, file, line), a node by (parent node, location).
 * File-local ids are only looked up in per-load maps, which also enforce that
 * a record only refers to ids defined by earlier records -- this is what makes
 * a truncated file readable, and it rules out node cycles by construction.
 */

/* ---- hashing and the row index ------------------------------------------ */

uint64_t rep_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return psup_hash64(h);
}

static uint64_t hash_mix(uint64_t h, uint64_t v)
{
	return psup_hash64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6)));
}

void rep_index_init(struct rep_index *ix)
{
	memset(ix, 0, sizeof(*ix));
	ix->seed = psup_hash_seed();
}

/* The caller's hash is not keyed; the slot is (a record's author who
 * inverts the hash cannot make rows share a probe chain). */
static size_t index_home(const struct rep_index *ix, uint64_t hash)
{
	return psup_hash64(hash ^ ix->seed) & (ix->cap - 1);
}

void rep_index_release(struct rep_index *ix)
{
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}

uint32_t rep_index_find(const struct rep_index *ix, uint64_t hash, rep_index_eq_fn eq,
			const void *ctx, const void *key)
{
	if (!ix->cap)
		return REP_NONE;
	for (size_t i = index_home(ix, hash);; i = (i + 1) & (ix->cap - 1)) {
		uint32_t s = ix->slots[i];

		if (!s)
			return REP_NONE;
		if (eq(ctx, s - 1, key))
			return s - 1;
	}
}

static void index_put(struct rep_index *ix, uint64_t hash, uint32_t row)
{
	size_t i = index_home(ix, hash);

	while (ix->slots[i])
		i = (i + 1) & (ix->cap - 1);
	ix->slots[i] = row + 1;
}

int rep_index_add(struct rep_index *ix, uint64_t hash, uint32_t row,
		  uint64_t (*row_hash)(const void *ctx, uint32_t row), const void *ctx)
{
	if ((ix->len + 1) * 2 > ix->cap) {
		size_t ncap = ix->cap ? ix->cap * 2 : 64;
		uint32_t *old = ix->slots;
		size_t ocap = ix->cap;

		ix->slots = calloc(ncap, sizeof(*ix->slots));
		if (!ix->slots) {
			ix->slots = old;
			return -ENOMEM;
		}
		ix->cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i])
				index_put(ix, row_hash(ctx, old[i] - 1), old[i] - 1);
		free(old);
	}
	index_put(ix, hash, row);
	ix->len++;
	return 0;
}

/* ---- strings -------------------------------------------------------------- */

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct rep_strtab *t = ctx;
	const struct str_key *k = key;

	return t->lens[row] == k->len && memcmp(t->strs[row], k->s, k->len) == 0;
}

static uint64_t str_rowhash(const void *ctx, uint32_t row)
{
	const struct rep_strtab *t = ctx;

	return rep_hash_bytes(t->strs[row], t->lens[row], t->ix.seed);
}

int64_t rep_strtab_intern(struct rep_strtab *t, const char *s, size_t len)
{
	struct str_key k = { s, len };
	uint64_t h;
	uint32_t row;
	char *copy;

	if (!s)
		return 0;
	if (len > UINT32_MAX - 1)
		return -EINVAL;
	h = rep_hash_bytes(s, len, t->ix.seed);
	row = rep_index_find(&t->ix, h, str_eq, t, &k);
	if (row != REP_NONE)
		return row;
	if (t->len == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 256;
		char **ns;
		uint32_t *nl;

		if (t->cap >= UINT32_MAX / 4)
			return -ENOMEM;
		ns = realloc(t->strs, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		t->strs = ns;
		nl = realloc(t->lens, ncap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		t->lens = nl;
		t->cap = ncap;
	}
	if (t->len == 0) {
		/* id 0 stands for "no string" */
		t->strs[0] = NULL;
		t->lens[0] = 0;
		t->len = 1;
	}
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->strs[t->len] = copy;
	t->lens[t->len] = (uint32_t)len;
	if (rep_index_add(&t->ix, h, t->len, str_rowhash, t)) {
		free(copy);
		return -ENOMEM;
	}
	return t->len++;
}

static int64_t intern_str(struct rep_profile *p, const char *s)
{
	return rep_strtab_intern(&p->strs, s, s ? strlen(s) : 0);
}

static int64_t intern_slice(struct rep_profile *p, struct rep_slice s)
{
	return rep_strtab_intern(&p->strs, s.p, s.len);
}

/* ---- the profile ------------------------------------------------------------ */

int rep_profile_new(struct rep_profile **out)
{
	struct rep_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	rep_index_init(&p->strs.ix);
	rep_index_init(&p->loc_ix);
	psup_u64map_init(&p->node_ix);
	psup_u64map_init(&p->lock_ix);
	/* make id 0 exist so rep_str() can index safely */
	if (intern_str(p, "") < 0) {
		rep_profile_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void rep_profile_free(struct rep_profile *p)
{
	if (!p)
		return;
	for (uint32_t i = 1; i < p->strs.len; i++)
		free(p->strs.strs[i]);
	free(p->strs.strs);
	free(p->strs.lens);
	rep_index_release(&p->strs.ix);
	free(p->locs);
	rep_index_release(&p->loc_ix);
	free(p->frames);
	free(p->nodes);
	psup_u64map_release(&p->node_ix);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		psup_u64map_release(&p->threads[i].leaves);
		psup_u64map_release(&p->threads[i].idle);
	}
	free(p->threads);
	free(p->locks);
	psup_u64map_release(&p->lock_ix);
	for (uint32_t i = 0; i < p->nruns; i++)
		free(p->runs[i].argv);
	free(p->runs);
	rep_witch_free(p->witch);
	rep_causal_free(p->causal);
	free(p);
}

int rep_grow32(void **arr, uint32_t *cap, uint32_t n, size_t sz)
{
	uint32_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 4)
		return -ENOMEM;
	ncap = *cap ? *cap * 2 : 64;
	na = realloc(*arr, (size_t)ncap * sz);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* ---- loading ------------------------------------------------------------------- */

void rep_loadctx_init(struct rep_loadctx *c, struct rep_profile *p, const char *name,
		      char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->p = p;
	c->run = REP_NONE;
	c->name = name;
	c->err = err;
	c->errlen = errlen;
	psup_u64map_init(&c->locs);
	psup_u64map_init(&c->nodes);
	psup_u64map_init(&c->tids);
	psup_u64map_init(&c->pids);
	if (err && errlen)
		err[0] = '\0';
}

void rep_loadctx_release(struct rep_loadctx *c)
{
	psup_u64map_release(&c->locs);
	psup_u64map_release(&c->nodes);
	psup_u64map_release(&c->tids);
	psup_u64map_release(&c->pids);
}

void rep_load_error(struct rep_loadctx *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->err || !c->errlen)
		return;
	n = snprintf(c->err, c->errlen, "%s: record %zu: ", c->name, c->index + 1);
	if (n < 0 || (size_t)n >= c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* clang-format off */
static const char *rec_names[] = {
	[REP_REC_UNKNOWN] = "unknown", [REP_REC_HEADER] = "header",
	[REP_REC_THREAD] = "thread", [REP_REC_THREAD_END] = "thread_end",
	[REP_REC_LOC] = "loc", [REP_REC_NODE] = "node", [REP_REC_SAMPLES] = "samples",
	[REP_REC_LOST] = "lost", [REP_REC_EXEC] = "exec", [REP_REC_EXIT] = "exit",
	[REP_REC_END] = "end", [REP_REC_THREAD_TIMES] = "thread_times",
	[REP_REC_IDLENESS] = "idleness", [REP_REC_LOCK_WAITS] = "lock_waits",
	[REP_REC_WITCH_CONFIG] = "witch_config", [REP_REC_WITCH_PAIRS] = "witch_pairs",
	[REP_REC_WITCH_STATS] = "witch_stats",
	[REP_REC_EXPERIMENT] = "experiment", [REP_REC_LINE_SAMPLES] = "line_samples",
	[REP_REC_CAUSAL_INFO] = "causal_info", [REP_REC_PROGRESS_TOTALS] = "progress_totals",
};
/* clang-format on */

static int need(struct rep_loadctx *c, const struct rep_rec *r, enum rep_key k,
		const char *key)
{
	if (rep_rec_has(r, k))
		return 0;
	rep_load_error(c, "a \"%s\" record without \"%s\"", rec_names[r->type], key);
	return -EINVAL;
}

static int mark_pid(struct rep_loadctx *c, uint64_t pid)
{
	bool created;

	if (pid == 0)
		return 0;
	return psup_u64map_upsert(&c->pids, pid, &created) ? 0 : -ENOMEM;
}

static int apply_header(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_profile *p = c->p;
	struct rep_run *run;
	int64_t id;
	int rc;

	if (c->run != REP_NONE) {
		rep_load_error(c, "a second header (concatenated files must be given as separate files)");
		return -EINVAL;
	}
	if (!rep_rec_has(r, REP_K_FORMAT) ||
	    r->s[REP_K_FORMAT].len != 4 || memcmp(r->s[REP_K_FORMAT].p, "psup", 4) != 0) {
		rep_load_error(c, "not a psup record file (the header's format is not \"psup\")");
		return -EINVAL;
	}
	if ((rc = need(c, r, REP_K_VERSION, "version")))
		return rc;
	/* Versions count from 1: a 0 is damage, not a psup from the future. */
	if (r->u[REP_K_VERSION] == 0) {
		rep_load_error(c, "damaged header: format version 0 (psup records start at 1)");
		return -EINVAL;
	}
	if (r->u[REP_K_VERSION] > REP_FORMAT_VERSION) {
		rep_load_error(c, "format version %llu is not one this psup reads (%d); use a newer psup",
			       (unsigned long long)r->u[REP_K_VERSION], REP_FORMAT_VERSION);
		return -EINVAL;
	}
	if (rep_grow32((void **)&p->runs, &p->runs_cap, p->nruns, sizeof(*p->runs)))
		return -ENOMEM;
	run = &p->runs[p->nruns];
	memset(run, 0, sizeof(*run));
	run->exit_status = -1;
	if (r->nargv && rep_rec_has(r, REP_K_ARGV)) {
		run->argv = calloc(r->nargv, sizeof(*run->argv));
		if (!run->argv)
			return -ENOMEM;
	}
	c->run = p->nruns++;
	run->has_argv = rep_rec_has(r, REP_K_ARGV);
	if (run->has_argv) {
		for (size_t i = 0; i < r->nargv; i++) {
			if ((id = intern_slice(p, r->argv[i])) < 0)
				return (int)id;
			run->argv[run->nargv++] = (uint32_t)id;
		}
	}
#define TEXT(field, key) \
	do { \
		id = rep_rec_has(r, key) ? intern_slice(p, r->s[key]) : 0; \
		if (id < 0) \
			return (int)id; \
		run->field = (uint32_t)id; \
	} while (0)
	TEXT(mode, REP_K_MODE);
	TEXT(event, REP_K_EVENT);
	TEXT(hostname, REP_K_HOSTNAME);
	TEXT(version, REP_K_PSUP);
	TEXT(thread_events, REP_K_THREAD_EVENTS);
	TEXT(thread_events_why, REP_K_THREAD_EVENTS_WHY);
	TEXT(new_threads, REP_K_NEW_THREADS);
#undef TEXT
	if ((id = intern_str(p, c->name)) < 0)
		return (int)id;
	run->file = (uint32_t)id;
	run->period = r->u[REP_K_PERIOD];
	run->jitter = r->u[REP_K_JITTER];
	run->clock = rep_rec_has(r, REP_K_CLOCK) && r->u[REP_K_CLOCK];
	run->hw_pmu = rep_rec_has(r, REP_K_HW_PMU) && r->u[REP_K_HW_PMU];
	run->per_cpu = rep_rec_has(r, REP_K_PER_CPU) && r->u[REP_K_PER_CPU];
	run->cpus = r->u[REP_K_CPUS] <= UINT32_MAX ? (uint32_t)r->u[REP_K_CPUS] : 0;
	run->pid = rep_rec_has(r, REP_K_PID) ? (int)r->u[REP_K_PID] : 0;
	run->wall_ns = r->u[REP_K_WALL_NS];
	run->mono_ns = r->u[REP_K_MONO_NS];
	run->last_time = run->mono_ns;
	return mark_pid(c, (uint64_t)run->pid);
}

enum { TG_FIND,
       TG_GET,
       TG_NEW_IF_ENDED };

/* The thread row of tid in this run. TG_GET creates one when the tid is
 * unknown (an attach that missed the creation); TG_NEW_IF_ENDED also when the
 * tid's thread ended (the kernel reused the tid). Samples and lost counts of
 * an ended thread still belong to it: a recorder may flush them after the
 * thread_end. */
static int thread_get(struct rep_loadctx *c, uint64_t tid, int how, uint32_t *row)
{
	struct rep_profile *p = c->p;
	struct rep_mthread *t;
	uint64_t *slot;
	bool created, create = how != TG_FIND;

	slot = psup_u64map_find(&c->tids, tid);
	/* An ended thread without a sample is taken over rather than kept as
	 * an empty row: that is how an exec (thread_end, then thread) looks. */
	if (slot && how == TG_NEW_IF_ENDED && p->threads[*slot - 1].ended &&
	    !p->threads[*slot - 1].samples && !p->threads[*slot - 1].lost)
		p->threads[*slot - 1].ended = false;
	if (slot && (how != TG_NEW_IF_ENDED || !p->threads[*slot - 1].ended)) {
		*row = (uint32_t)(*slot - 1);
		return 0;
	}
	if (!create) {
		*row = REP_NONE;
		return 0;
	}
	if (rep_grow32((void **)&p->threads, &p->threads_cap, p->nthreads, sizeof(*p->threads)))
		return -ENOMEM;
	slot = psup_u64map_upsert(&c->tids, tid, &created);
	if (!slot)
		return -ENOMEM;
	t = &p->threads[p->nthreads];
	memset(t, 0, sizeof(*t));
	t->run = c->run;
	t->tid = (int)tid;
	psup_u64map_init(&t->leaves);
	psup_u64map_init(&t->idle);
	t->ctx = REP_NONE;
	*row = p->nthreads++;
	*slot = *row + 1ULL;
	p->runs[c->run].nthreads++;
	return 0;
}

static int check_node(struct rep_loadctx *c, uint64_t id, const char *what, uint32_t *row)
{
	uint64_t *slot = id ? psup_u64map_find(&c->nodes, id) : NULL;

	if (!slot) {
		rep_load_error(c, "%s refers to node %llu, which no earlier record defines",
			       what, (unsigned long long)id);
		return -EINVAL;
	}
	*row = (uint32_t)(*slot - 1);
	return 0;
}

static int apply_thread(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_mthread *t;
	uint32_t row, ctx = REP_NONE;
	int64_t name;
	int rc;

	if ((rc = need(c, r, REP_K_TID, "tid")))
		return rc;
	if (r->u[REP_K_TID] == 0) {
		rep_load_error(c, "a thread with tid 0");
		return -EINVAL;
	}
	if (rep_rec_has(r, REP_K_CTX) && r->u[REP_K_CTX] &&
	    (rc = check_node(c, r->u[REP_K_CTX], "a thread's \"ctx\"", &ctx)))
		return rc;
	name = rep_rec_has(r, REP_K_NAME) ? intern_slice(c->p, r->s[REP_K_NAME]) : 0;
	if (name < 0)
		return (int)name;
	/* A record for a live thread renames it: it keeps what it had. */
	if ((rc = thread_get(c, r->u[REP_K_TID], TG_FIND, &row)))
		return rc;
	if (row != REP_NONE && !c->p->threads[row].ended && !rep_rec_has(r, REP_K_CTX) &&
	    !rep_rec_has(r, REP_K_TIME)) {
		t = &c->p->threads[row];
		if (name && t->name && (uint32_t)name != t->name && !t->old_name)
			t->old_name = t->name;
		if (name)
			t->name = (uint32_t)name;
		if (name && t->old_name == (uint32_t)name)
			t->old_name = 0; /* back to the first name */
		return 0;
	}
	if ((rc = thread_get(c, r->u[REP_K_TID], TG_NEW_IF_ENDED, &row)))
		return rc;
	t = &c->p->threads[row];
	t->pid = rep_rec_has(r, REP_K_PID) ? (int)r->u[REP_K_PID] : t->tid;
	if (rep_rec_has(r, REP_K_PARENT))
		t->parent = r->u[REP_K_PARENT] <= INT32_MAX ? (int)r->u[REP_K_PARENT] : 0;
	if (name)
		t->name = (uint32_t)name;
	t->ctx = rep_rec_has(r, REP_K_CTX) && r->u[REP_K_CTX] ? ctx : REP_NONE;
	t->start = rep_rec_has(r, REP_K_TIME) ? r->u[REP_K_TIME] : 0;
	t->end = 0;
	return mark_pid(c, (uint64_t)t->pid);
}

/* Merges a location: by image and frames; an address without a function
 * also by its offset (an instruction-level view can tell them apart), while
 * its name is the image's group (unknown_name), so the views by function and
 * line have one row per group, not one per address. "[kernel]" is all
 * kernel code. */
struct loc_key {
	uint32_t image;
	const struct rep_mframe *frames;
	uint32_t nframes;
	bool unnamed;
	uint64_t offset;
};

static bool loc_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct rep_profile *p = ctx;
	const struct loc_key *k = key;
	const struct rep_mloc *l = &p->locs[row];

	return l->image == k->image && l->nframes == k->nframes && l->unnamed == k->unnamed &&
	       (!k->unnamed || l->offset == k->offset) &&
	       memcmp(&p->frames[l->frames], k->frames, k->nframes * sizeof(*k->frames)) == 0;
}

static uint64_t loc_rowhash(const void *ctx, uint32_t row)
{
	return ((const struct rep_profile *)ctx)->locs[row].hash;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* Kernel and unmapped code: one location each, whatever the offset. */
static bool whole_image_name(const char *img)
{
	return strcmp(img, "[kernel]") == 0 || strcmp(img, REP_IMAGE_UNKNOWN) == 0;
}

/*
 * The name of code without a function. One row per address would flood the
 * functions and lines views (a stripped program has thousands), so the
 * address is named by its group: "[ls] after F" when the recorder found F,
 * the function that ends last before it (in a stripped image, the nearest
 * exported function; the code is NOT F's, hence "after" rather than "F" or
 * "F+0x..", which would read as F's own code), else "[ls] (no symbols)" for
 * an image without symbols (or not known to have some: older records) and
 * "[ls] (unnamed code)" for code in an image that has symbols (a PLT entry,
 * padding). The offset stays in the loc (rep_mloc.offset).
 */
static int64_t unknown_name(struct rep_profile *p, uint32_t image, struct rep_slice near,
			    const char *symbols)
{
	const char *img = rep_str(p, image);
	const char *base = base_name(img);
	size_t n = strlen(base);
	char buf[1024];

	if (whole_image_name(img))
		return intern_str(p, img);
	/* "[vdso]" gives "[vdso] ..." */
	if (n >= 2 && base[0] == '[' && base[n - 1] == ']') {
		base++;
		n -= 2;
	}
	if (n > 400)
		n = 400;
	if (near.p && near.len)
		snprintf(buf, sizeof(buf), "[%.*s] after %.*s", (int)n, base,
			 (int)(near.len < 400 ? near.len : 400), near.p);
	else if (symbols && (!strcmp(symbols, "dwarf") || !strcmp(symbols, "symtab")))
		snprintf(buf, sizeof(buf), "[%.*s] (unnamed code)", (int)n, base);
	else
		snprintf(buf, sizeof(buf), "[%.*s] (no symbols)", (int)n, base);
	return intern_str(p, buf);
}

static int apply_loc(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_profile *p = c->p;
	struct rep_mloc *l;
	struct loc_key key;
	uint32_t first = p->nframes, nframes, row;
	uint64_t h, *slot;
	int64_t image, id, unknown = 0, symbols = 0;
	char symbuf[16] = "";
	bool created;
	int rc;

	if ((rc = need(c, r, REP_K_ID, "id")))
		return rc;
	if (r->u[REP_K_ID] == 0) {
		rep_load_error(c, "a loc with id 0");
		return -EINVAL;
	}
	if (psup_u64map_find(&c->locs, r->u[REP_K_ID])) {
		rep_load_error(c, "loc %llu is defined twice", (unsigned long long)r->u[REP_K_ID]);
		return -EINVAL;
	}
	image = rep_rec_has(r, REP_K_IMAGE) && r->s[REP_K_IMAGE].len
			? intern_slice(p, r->s[REP_K_IMAGE])
			: intern_str(p, REP_IMAGE_UNKNOWN);
	if (image < 0)
		return (int)image;
	if (rep_rec_has(r, REP_K_SYMBOLS) && r->s[REP_K_SYMBOLS].len) {
		struct rep_slice sy = r->s[REP_K_SYMBOLS];

		if ((symbols = intern_slice(p, sy)) < 0)
			return (int)symbols;
		snprintf(symbuf, sizeof(symbuf), "%.*s", (int)(sy.len < 15 ? sy.len : 15), sy.p);
	}
	if (r->nframes > REP_LOC_MAX_FRAMES) {
		rep_load_error(c, "loc %llu has %zu inlined frames (psup writes at most 16)",
			       (unsigned long long)r->u[REP_K_ID], (size_t)r->nframes);
		return -EINVAL;
	}
	nframes = r->nframes ? (uint32_t)r->nframes : 1;
	if (p->nframes > UINT32_MAX - nframes)
		return -ENOMEM;
	while (p->frames_cap < p->nframes + nframes)
		if (rep_grow32((void **)&p->frames, &p->frames_cap, p->frames_cap, sizeof(*p->frames)))
			return -ENOMEM;
	h = hash_mix(0, (uint64_t)image);
	for (uint32_t i = 0; i < nframes; i++) {
		struct rep_mframe *f = &p->frames[first + i];
		const struct rep_rframe *rf = i < r->nframes ? &r->frames[i] : NULL;

		memset(f, 0, sizeof(*f));
		if (rf && rf->function.p && rf->function.len) {
			id = intern_slice(p, rf->function);
		} else {
			if (!unknown)
				unknown = unknown_name(p, (uint32_t)image,
						       rep_rec_has(r, REP_K_NEAR) ? r->s[REP_K_NEAR]
										  : (struct rep_slice){ 0 },
						       symbuf[0] ? symbuf : NULL);
			id = unknown;
		}
		if (id < 0)
			return (int)id;
		f->function = (uint32_t)id;
		if (rf && rf->file.len) {
			if ((id = intern_slice(p, rf->file)) < 0)
				return (int)id;
			f->file = (uint32_t)id;
			f->line = (uint32_t)rf->line;
		}
		h = hash_mix(h, f->function);
		h = hash_mix(h, f->file);
		h = hash_mix(h, f->line);
	}
	key.image = (uint32_t)image;
	key.frames = &p->frames[first];
	key.nframes = nframes;
	key.unnamed = unknown > 0 && !whole_image_name(rep_str(p, (uint32_t)image));
	key.offset = key.unnamed ? r->u[REP_K_OFFSET] : 0;
	if (key.unnamed)
		h = hash_mix(h, key.offset);
	row = rep_index_find(&p->loc_ix, h, loc_eq, p, &key);
	if (row == REP_NONE) {
		if (rep_grow32((void **)&p->locs, &p->locs_cap, p->nlocs, sizeof(*p->locs)))
			return -ENOMEM;
		l = &p->locs[p->nlocs];
		l->image = (uint32_t)image;
		l->build_id = 0;
		if (rep_rec_has(r, REP_K_BUILD_ID)) {
			if ((id = intern_slice(p, r->s[REP_K_BUILD_ID])) < 0)
				return (int)id;
			l->build_id = (uint32_t)id;
		}
		l->offset = r->u[REP_K_OFFSET];
		l->frames = first;
		l->nframes = nframes;
		l->hash = h;
		l->symbols = (uint32_t)symbols;
		l->unnamed = key.unnamed;
		if (rep_index_add(&p->loc_ix, h, p->nlocs, loc_rowhash, p))
			return -ENOMEM;
		row = p->nlocs++;
		p->nframes += nframes;
	}
	slot = psup_u64map_upsert(&c->locs, r->u[REP_K_ID], &created);
	if (!slot)
		return -ENOMEM;
	*slot = row + 1ULL;
	return 0;
}

static int apply_node(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_profile *p = c->p;
	uint64_t id = r->u[REP_K_ID], *slot, key;
	uint32_t parent = REP_NONE, loc, row;
	bool created;
	int rc;

	if ((rc = need(c, r, REP_K_ID, "id")) || (rc = need(c, r, REP_K_LOC, "loc")))
		return rc;
	if (id == 0) {
		rep_load_error(c, "a node with id 0");
		return -EINVAL;
	}
	if (psup_u64map_find(&c->nodes, id)) {
		rep_load_error(c, "node %llu is defined twice", (unsigned long long)id);
		return -EINVAL;
	}
	/* The parent must already exist: no forward references, hence no cycle. */
	if (rep_rec_has(r, REP_K_PARENT) && r->u[REP_K_PARENT] &&
	    (rc = check_node(c, r->u[REP_K_PARENT], "a node's parent", &parent)))
		return rc;
	slot = psup_u64map_find(&c->locs, r->u[REP_K_LOC]);
	if (!slot || !r->u[REP_K_LOC]) {
		rep_load_error(c, "node %llu refers to loc %llu, which no earlier record defines",
			       (unsigned long long)id, (unsigned long long)r->u[REP_K_LOC]);
		return -EINVAL;
	}
	loc = (uint32_t)(*slot - 1);
	key = ((uint64_t)(parent + 1) << 32) | (loc + 1ULL);
	/* room first, so a key in the map always points at a row */
	if (p->nnodes >= UINT32_MAX - 2 ||
	    rep_grow32((void **)&p->nodes, &p->nodes_cap, p->nnodes, sizeof(*p->nodes)))
		return -ENOMEM;
	slot = psup_u64map_upsert(&p->node_ix, key, &created);
	if (!slot)
		return -ENOMEM;
	if (created) {
		p->nodes[p->nnodes].parent = parent;
		p->nodes[p->nnodes].loc = loc;
		*slot = ++p->nnodes;
	}
	row = (uint32_t)(*slot - 1);
	slot = psup_u64map_upsert(&c->nodes, id, &created);
	if (!slot)
		return -ENOMEM;
	*slot = row + 1ULL;
	return 0;
}

/* A per-thread record of (leaf node, value) pairs, "samples" or
 * "idleness": adds each value to the thread's map (its leaves, or its idle
 * map) and their sum to *total; *trow gets the thread's row. */
static int apply_node_pairs(struct rep_loadctx *c, const struct rep_rec *r, bool idle,
			    uint32_t *trow, uint64_t *total)
{
	struct rep_profile *p = c->p;
	uint32_t nrow;
	uint64_t *slot;
	int rc;

	*total = 0;
	if ((rc = need(c, r, REP_K_TID, "tid")) || (rc = need(c, r, REP_K_COUNTS, "counts")))
		return rc;
	if (r->ncounts % 2) {
		rep_load_error(c, "\"counts\" has an odd number of values");
		return -EINVAL;
	}
	if (r->u[REP_K_TID] == 0) {
		rep_load_error(c, "%s of tid 0", idle ? "idleness" : "samples");
		return -EINVAL;
	}
	if ((rc = thread_get(c, r->u[REP_K_TID], TG_GET, trow)))
		return rc;
	for (size_t i = 0; i < r->ncounts; i += 2) {
		struct rep_mthread *t = &p->threads[*trow];
		uint64_t n = r->counts[i + 1];

		if ((rc = check_node(c, r->counts[i], "\"counts\"", &nrow)))
			return rc;
		if (!n)
			continue;
		slot = psup_u64map_upsert(idle ? &t->idle : &t->leaves, nrow + 1ULL, NULL);
		if (!slot)
			return -ENOMEM;
		*slot = rep_sat_add(*slot, n);
		*total = rep_sat_add(*total, n);
	}
	return 0;
}

static int apply_samples(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_profile *p = c->p;
	struct rep_run *run = &p->runs[c->run];
	uint32_t trow;
	uint64_t n;
	int rc = apply_node_pairs(c, r, false, &trow, &n);

	if (rc)
		return rc;
	p->threads[trow].samples = rep_sat_add(p->threads[trow].samples, n);
	run->samples = rep_sat_add(run->samples, n);
	p->samples = rep_sat_add(p->samples, n);
	return 0;
}

/* Idleness of a thread: node -> millionths of a sample, like samples. */
static int apply_idleness(struct rep_loadctx *c, const struct rep_rec *r)
{
	uint32_t trow;
	uint64_t n;
	int rc = apply_node_pairs(c, r, true, &trow, &n);

	if (rc)
		return rc;
	c->p->runs[c->run].has_idleness = true;
	c->p->has_idleness = true;
	c->p->idle_micro = rep_sat_add(c->p->idle_micro, n);
	return 0;
}

/* Keyed: colliding keys are chained by rehashing below, and the address is
 * the record's to choose. */
static uint64_t lock_hash(uint32_t run, int pid, uint64_t addr, uint32_t ctx, bool traced,
			  bool exit)
{
	uint64_t h = psup_hash64(addr ^ psup_hash_seed() ^ ((uint64_t)run << 32) ^ traced ^
				 ((uint64_t)exit << 1));

	h = psup_hash64(h ^ (((uint64_t)(uint32_t)pid << 32) | ctx));
	return h ? h : 1;
}

/* Lock waits merge by (run, pid, address, waker context): an address means
 * nothing across runs, the context does. */
static int apply_lock_waits(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_profile *p = c->p;
	uint32_t ctx = REP_NONE;
	uint64_t key, *slot;
	bool created, traced, exit;
	int rc;

	if ((rc = need(c, r, REP_K_PID, "pid")) || (rc = need(c, r, REP_K_ADDR, "addr")))
		return rc;
	exit = rep_rec_has(r, REP_K_REASON) && r->s[REP_K_REASON].len == 4 &&
	       !memcmp(r->s[REP_K_REASON].p, "exit", 4);
	if (rep_rec_has(r, REP_K_CTX) && r->u[REP_K_CTX] &&
	    (rc = check_node(c, r->u[REP_K_CTX], "a lock's \"ctx\"", &ctx)))
		return rc;
	/* a waker's context is a traced waker; files before "traced" had
	 * only untraced ones without context */
	traced = ctx != REP_NONE || exit || (rep_rec_has(r, REP_K_TRACED) && r->u[REP_K_TRACED]);
	key = lock_hash(c->run, (int)r->u[REP_K_PID], r->u[REP_K_ADDR], ctx, traced, exit);
	for (;;) {
		slot = psup_u64map_upsert(&p->lock_ix, key, &created);
		if (!slot)
			return -ENOMEM;
		if (created)
			break;
		struct rep_mlock *l = &p->locks[*slot - 1];
		if (l->run == c->run && l->pid == (int)r->u[REP_K_PID] &&
		    l->addr == r->u[REP_K_ADDR] && l->ctx == ctx && l->traced == traced &&
		    l->exit == exit) {
			l->waits = rep_sat_add(l->waits, r->u[REP_K_COUNT]);
			l->wait_ns = rep_sat_add(l->wait_ns, r->u[REP_K_WAIT_NS]);
			return 0;
		}
		key = psup_hash64(key) | 1;
	}
	if (rep_grow32((void **)&p->locks, &p->locks_cap, p->nlocks, sizeof(*p->locks))) {
		psup_u64map_remove(&p->lock_ix, key);
		return -ENOMEM;
	}
	p->locks[p->nlocks] = (struct rep_mlock){
		.run = c->run,
		.pid = (int)r->u[REP_K_PID],
		.addr = r->u[REP_K_ADDR],
		.ctx = ctx,
		.traced = traced,
		.exit = exit,
		.waits = r->u[REP_K_COUNT],
		.wait_ns = r->u[REP_K_WAIT_NS],
	};
	*slot = ++p->nlocks;
	return 0;
}

/* Time in each state: several records of one thread row add up (a thread
 * taken over by an exec keeps one row, see thread_get). */
static int apply_thread_times(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_thread_times *tt;
	struct rep_mthread *t;
	uint32_t row;
	int rc;

	if ((rc = need(c, r, REP_K_TID, "tid")))
		return rc;
	if (r->u[REP_K_TID] == 0) {
		rep_load_error(c, "thread times of tid 0");
		return -EINVAL;
	}
	if ((rc = thread_get(c, r->u[REP_K_TID], TG_GET, &row)))
		return rc;
	t = &c->p->threads[row];
	tt = &t->times;
	/* absent keys read as 0 */
	tt->running = rep_sat_add(tt->running, r->u[REP_K_RUNNING]);
	tt->runnable = rep_sat_add(tt->runnable, r->u[REP_K_RUNNABLE]);
	tt->blocked_futex = rep_sat_add(tt->blocked_futex, r->u[REP_K_BLOCKED_FUTEX]);
	tt->blocked_io = rep_sat_add(tt->blocked_io, r->u[REP_K_BLOCKED_IO]);
	tt->blocked_sleep = rep_sat_add(tt->blocked_sleep, r->u[REP_K_BLOCKED_SLEEP]);
	tt->blocked_other = rep_sat_add(tt->blocked_other, r->u[REP_K_BLOCKED_OTHER]);
	t->has_times = true;
	c->p->runs[c->run].has_times = true;
	return 0;
}

static int apply_lost(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_run *run = &c->p->runs[c->run];
	uint32_t row;
	int rc;

	if ((rc = need(c, r, REP_K_COUNT, "count")))
		return rc;
	if (!rep_rec_has(r, REP_K_TID) || !r->u[REP_K_TID]) {
		run->lost_cpu = rep_sat_add(run->lost_cpu, r->u[REP_K_COUNT]);
		return 0;
	}
	if ((rc = thread_get(c, r->u[REP_K_TID], TG_GET, &row)))
		return rc;
	c->p->threads[row].lost = rep_sat_add(c->p->threads[row].lost, r->u[REP_K_COUNT]);
	run->lost = rep_sat_add(run->lost, r->u[REP_K_COUNT]);
	return 0;
}

int rep_model_apply(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_run *run;
	uint32_t row;
	int64_t id;
	int rc;

	if (c->run == REP_NONE && r->type != REP_REC_HEADER) {
		rep_load_error(c, "not a psup record file (the first record is not a header)");
		return -EINVAL;
	}
	if (r->type == REP_REC_HEADER)
		return apply_header(c, r);
	run = &c->p->runs[c->run];
	if (rep_rec_has(r, REP_K_TIME) && r->u[REP_K_TIME] > run->last_time)
		run->last_time = r->u[REP_K_TIME];
	switch (r->type) {
	case REP_REC_THREAD:
		return apply_thread(c, r);
	case REP_REC_THREAD_END:
		if ((rc = need(c, r, REP_K_TID, "tid")))
			return rc;
		if ((rc = thread_get(c, r->u[REP_K_TID], TG_FIND, &row)))
			return rc;
		if (row != REP_NONE) {
			c->p->threads[row].ended = true;
			if (rep_rec_has(r, REP_K_TIME))
				c->p->threads[row].end = r->u[REP_K_TIME];
		}
		return 0;
	case REP_REC_LOC:
		return apply_loc(c, r);
	case REP_REC_NODE:
		return apply_node(c, r);
	case REP_REC_SAMPLES:
		return apply_samples(c, r);
	case REP_REC_LOST:
		return apply_lost(c, r);
	case REP_REC_THREAD_TIMES:
		return apply_thread_times(c, r);
	case REP_REC_IDLENESS:
		return apply_idleness(c, r);
	case REP_REC_LOCK_WAITS:
		return apply_lock_waits(c, r);
	case REP_REC_WITCH_CONFIG:
	case REP_REC_WITCH_PAIRS:
	case REP_REC_WITCH_STATS:
		return rep_witch_apply(c, r);
	case REP_REC_EXEC:
		if ((rc = need(c, r, REP_K_PID, "pid")))
			return rc;
		if ((int)r->u[REP_K_PID] == run->pid && rep_rec_has(r, REP_K_PATH)) {
			if ((id = intern_slice(c->p, r->s[REP_K_PATH])) < 0)
				return (int)id;
			run->exec_path = (uint32_t)id;
		}
		return mark_pid(c, r->u[REP_K_PID]);
	case REP_REC_EXIT:
		if ((rc = need(c, r, REP_K_PID, "pid")))
			return rc;
		if ((int)r->u[REP_K_PID] == run->pid) {
			run->exited = true;
			run->exit_status = rep_rec_has(r, REP_K_STATUS) ? (int)r->u[REP_K_STATUS] : -1;
			run->exit_signal = rep_rec_has(r, REP_K_SIGNAL) ? (int)r->u[REP_K_SIGNAL] : 0;
		}
		return mark_pid(c, r->u[REP_K_PID]);
	case REP_REC_END:
		run->complete = true;
		run->end_time = r->u[REP_K_TIME];
		id = rep_rec_has(r, REP_K_REASON) ? intern_slice(c->p, r->s[REP_K_REASON]) : 0;
		if (id < 0)
			return (int)id;
		run->end_reason = (uint32_t)id;
		run->end_samples = r->u[REP_K_SAMPLES];
		run->end_lost = r->u[REP_K_LOST];
		run->unwind_failures = r->u[REP_K_UNWIND_FAILURES];
		if (rep_rec_has(r, REP_K_THREAD_EVENTS)) {
			/* How the run's thread events ended up (the header
			 * said how they began). */
			if ((id = intern_slice(c->p, r->s[REP_K_THREAD_EVENTS])) < 0)
				return (int)id;
			run->thread_events = (uint32_t)id;
			id = rep_rec_has(r, REP_K_THREAD_EVENTS_WHY)
				     ? intern_slice(c->p, r->s[REP_K_THREAD_EVENTS_WHY])
				     : 0;
			if (id < 0)
				return (int)id;
			run->thread_events_why = (uint32_t)id;
			run->own_sets_after = rep_rec_has(r, REP_K_COUNT) ? r->u[REP_K_COUNT] : 0;
		}
		if (rep_rec_has(r, REP_K_NEW_THREADS)) {
			if ((id = intern_slice(c->p, r->s[REP_K_NEW_THREADS])) < 0)
				return (int)id;
			run->new_threads = (uint32_t)id;
		}
		return 0;
	case REP_REC_EXPERIMENT:
	case REP_REC_LINE_SAMPLES:
	case REP_REC_CAUSAL_INFO:
	case REP_REC_PROGRESS_TOTALS:
		return rep_causal_apply(c, r);
	default:
		/* unknown record types are a newer recorder's business */
		return 0;
	}
}

void rep_model_finish(struct rep_loadctx *c, bool truncated)
{
	struct rep_run *run = &c->p->runs[c->run];

	run->truncated = truncated;
	run->nrecords = c->index;
	run->nprocesses = (uint32_t)c->pids.len;
	/* The switch records that timed its threads' states also counted
	 * its working threads, against its CPUs: no idleness record then
	 * means none (two threads busy from start to end), not unmeasured. */
	if (run->has_times && run->cpus) {
		run->has_idleness = true;
		c->p->has_idleness = true;
	}
	c->p->last_truncated = truncated;
	c->p->last_nrecords = c->index;
}

bool rep_profile_truncated(const struct rep_profile *p, size_t *nrecords)
{
	if (nrecords)
		*nrecords = p->last_nrecords;
	return p->last_truncated;
}
