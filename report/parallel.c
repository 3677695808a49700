#include "report/report.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"
#include "report/json.h"
#include "report/report-internal.h"

/*
 * Parallel efficiency (Tallent & Mellor-Crummey 2009, section 2): work,
 * idleness and overhead per calling context, the Table 1 reading of the
 * regions that matter, and lock blame.
 */

const char rep_overhead_default[] =
	"pthread_mutex_*,__pthread_mutex_*,pthread_rwlock_*,__pthread_rwlock_*,"
	"pthread_spin_*,pthread_cond_*,__pthread_cond_*,___pthread_cond_*,"
	"pthread_barrier_*,pthread_join,__pthread_clockjoin_ex,pthread_create*,"
	"__pthread_create_*,create_thread,allocate_stack,pthread_once,__pthread_once*,"
	"__lll_lock_*,__lll_unlock_*,lll_*,__futex*,futex_*,__GI___futex*,"
	"sem_wait,sem_post,sem_timedwait,sem_clockwait,__new_sem_*,do_futex_wait*,"
	"sched_yield,__sched_yield,std::mutex::*,std::condition_variable::*,std::thread::*";

#define MAX_PATTERNS 256

struct patterns {
	char *buf;
	const char *pat[MAX_PATTERNS];
	unsigned n;
};

static int patterns_parse(struct patterns *ps, const char *spec)
{
	const char *dflt = rep_overhead_default;
	size_t len;
	char *s;

	memset(ps, 0, sizeof(*ps));
	if (!spec)
		spec = dflt;
	else if (spec[0] == '+')
		spec++;
	else
		dflt = "";
	len = strlen(dflt) + strlen(spec) + 2;
	ps->buf = malloc(len);
	if (!ps->buf)
		return -ENOMEM;
	snprintf(ps->buf, len, "%s%s%s", spec == dflt ? "" : dflt, dflt[0] && spec != dflt ? "," : "",
		 spec);
	for (s = strtok(ps->buf, ","); s && ps->n < MAX_PATTERNS; s = strtok(NULL, ","))
		if (*s)
			ps->pat[ps->n++] = s;
	return 0;
}

static bool patterns_match(const struct patterns *ps, const char *fn)
{
	for (unsigned i = 0; fn && i < ps->n; i++)
		if (fnmatch(ps->pat[i], fn, 0) == 0)
			return true;
	return false;
}

/* Code whose callers decide whether it is overhead: the C and C++ runtime,
 * the dynamic linker, the kernel. */
static bool system_image(const char *image)
{
	static const char *const libs[] = {
		"libc.so*",
		"libc-*.so",
		"libpthread*",
		"ld-linux*",
		"ld-*.so*",
		"libstdc++*",
		"libgcc_s*",
		"\\[kernel\\]*",
		"\\[vdso\\]*",
		"linux-vdso*",
	};
	const char *b;

	if (!image)
		return false;
	b = rep_base_name(image);
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (fnmatch(libs[i], b, 0) == 0)
			return true;
	return false;
}

int rep_overhead_flags(const struct rep_profile *p, const char *spec, bool **out)
{
	struct patterns ps;
	bool *ov, *sys;
	int rc = patterns_parse(&ps, spec);

	*out = NULL;
	if (rc)
		return rc;
	ov = calloc((size_t)p->nnodes + 1, sizeof(*ov));
	sys = calloc((size_t)p->nnodes + 1, sizeof(*sys));
	if (!ov || !sys) {
		free(ov);
		free(sys);
		free(ps.buf);
		return -ENOMEM;
	}
	/* From the leaf outwards through system code, up to and including
	 * the first frame outside it: ov[n] = a match in n, or n is system
	 * code and its caller is overhead. Nodes come after their parents,
	 * so one pass does it. */
	for (uint32_t n = 0; n < p->nnodes; n++) {
		const struct rep_mnode *mn = &p->nodes[n];
		const struct rep_mloc *l = &p->locs[mn->loc];
		bool match = false;

		for (uint32_t i = 0; i < l->nframes && !match; i++)
			match = patterns_match(&ps, rep_str(p, p->frames[l->frames + i].function));
		sys[n] = system_image(rep_str(p, l->image));
		ov[n] = match || (sys[n] && mn->parent != REP_NONE && mn->parent < n && ov[mn->parent]);
	}
	free(sys);
	free(ps.buf);
	*out = ov;
	return 0;
}

/* ---- efficiency summary ------------------------------------------------------ */

struct region {
	uint32_t node;                    /* a tree row of the function (its first) */
	uint64_t samples, idle, overhead; /* inclusive; idle in millionths */
};

static double effort_of(uint64_t samples, uint64_t idle_micro)
{
	return (double)samples + (double)idle_micro / 1e6;
}

static int cmp_region(const void *x, const void *y)
{
	const struct region *a = x, *b = y;
	double ea = effort_of(a->samples, a->idle), eb = effort_of(b->samples, b->idle);

	if (ea != eb)
		return ea > eb ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

/* Table 1, with the thresholds the README gives. */
#define IDLE_HIGH 20.0
#define OVERHEAD_HIGH 10.0

static const char *reading(double idle_pct, double ovh_pct)
{
	bool hi = idle_pct >= IDLE_HIGH, ho = ovh_pct >= OVERHEAD_HIGH;

	if (!hi && !ho)
		return "effectively parallel: make its serial code faster";
	if (!hi)
		return "synchronization costs more than it should: coarsen the granularity "
		       "(larger tasks, fewer lock round trips)";
	if (!ho)
		return "cores sit idle while it runs: refine the granularity (more, smaller "
		       "parallel pieces; parallelize its serial part)";
	return "idle cores and heavy synchronization: change the parallelization strategy";
}

static const char *reading_key(double idle_pct, double ovh_pct)
{
	bool hi = idle_pct >= IDLE_HIGH, ho = ovh_pct >= OVERHEAD_HIGH;

	return !hi && !ho ? "tune_serial" : !hi ? "coarsen"
				    : !ho       ? "refine"
						: "change_strategy";
}

/* Per function, its inclusive metrics counted once per path: through its
 * outermost occurrence (a recursive function is not counted twice). */
static int regions_build(const struct rep_ctree *t, struct region **out, uint32_t *nout)
{
	struct region *rg = calloc((size_t)t->nfns + 1, sizeof(*rg));
	uint32_t *active = calloc((size_t)t->nfns + 1, sizeof(*active));
	uint32_t *stack = malloc(((size_t)t->max_depth + 2) * sizeof(*stack));
	uint32_t *next = calloc(t->n, sizeof(*next));
	size_t sp = 0;
	uint32_t n = 0;

	if (!rg || !active || !stack || !next) {
		free(rg);
		free(active);
		free(stack);
		free(next);
		return -ENOMEM;
	}
	for (uint32_t f = 0; f <= t->nfns; f++)
		rg[f].node = REP_NONE;
	stack[sp++] = 0;
	while (sp) {
		uint32_t v = stack[sp - 1];
		const struct rep_cnode *c = &t->nodes[v];

		if (next[v] < c->nchildren) {
			uint32_t ch = t->children[c->first_child + next[v]++];
			const struct rep_cnode *k = &t->nodes[ch];

			if (k->fn != REP_NONE && !active[k->fn]++) {
				struct region *r = &rg[k->fn];
				if (r->node == REP_NONE)
					r->node = ch;
				r->samples = rep_sat_add(r->samples, k->inclusive);
				r->idle = rep_sat_add(r->idle, k->idle_incl);
				r->overhead = rep_sat_add(r->overhead, k->overhead_incl);
			}
			stack[sp++] = ch;
			continue;
		}
		sp--;
		if (v && c->fn != REP_NONE)
			active[c->fn]--;
	}
	for (uint32_t f = 0; f <= t->nfns; f++)
		if (rg[f].node != REP_NONE && (rg[f].samples || rg[f].idle))
			rg[n++] = rg[f];
	qsort(rg, n, sizeof(*rg), cmp_region);
	free(active);
	free(stack);
	free(next);
	*out = rg;
	*nout = n;
	return 0;
}

struct span {
	uint32_t run;
	uint64_t start, end;
};

static int cmp_span(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	if (a->run != b->run)
		return a->run < b->run ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

bool rep_profile_parallel(const struct rep_profile *p)
{
	struct span *sp = malloc((p->nthreads + 1) * sizeof(*sp));
	uint32_t n = 0;
	bool parallel = false;

	if (!sp)
		return true; /* say too much rather than hide the view */
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct rep_mthread *t = &p->threads[i];
		const struct rep_run *r = &p->runs[t->run];
		uint64_t run_end = r->complete && r->end_time ? r->end_time : r->last_time;

		if (!t->samples)
			continue;
		sp[n].run = t->run;
		sp[n].start = t->start ? t->start : r->mono_ns;
		sp[n].end = t->end ? t->end : run_end;
		if (sp[n].end < sp[n].start)
			sp[n].end = sp[n].start;
		n++;
	}
	qsort(sp, n, sizeof(*sp), cmp_span);
	for (uint32_t i = 1; i < n && !parallel; i++) {
		uint64_t end = sp[i - 1].end;

		/* the latest end among the earlier threads of the run */
		if (sp[i].run == sp[i - 1].run && sp[i].start < end)
			parallel = true;
		else if (sp[i].run == sp[i - 1].run && end > sp[i].end)
			sp[i].end = end;
	}
	free(sp);
	return parallel;
}

static uint32_t max_cpus(const struct rep_profile *p)
{
	uint32_t m = 0;

	for (uint32_t i = 0; i < p->nruns; i++)
		if (p->runs[i].cpus > m)
			m = p->runs[i].cpus;
	return m;
}

static const char *fn_name(const struct rep_profile *p, uint32_t id)
{
	const char *s = rep_str(p, id);

	return s ? s : "";
}

int rep_view_efficiency(const struct rep_profile *p, const struct rep_ctree *td,
			const struct rep_options *o, FILE *out)
{
	const struct rep_cnode *root = &td->nodes[0];
	double effort = effort_of(root->inclusive, root->idle_incl);
	double work = (double)(root->inclusive - root->overhead_incl);
	struct region *rg = NULL;
	uint32_t nrg = 0, shown = 0, limit = o->top ? o->top : 10;
	bool parallel = rep_profile_parallel(p);
	int rc = regions_build(td, &rg, &nrg);

	if (rc)
		return rc;
	double idle_pct = effort > 0 ? 100.0 * ((double)root->idle_incl / 1e6) / effort : 0;
	double ovh_pct = effort > 0 ? 100.0 * (double)root->overhead_incl / effort : 0;
	double work_pct = effort > 0 ? 100.0 * work / effort : 0;

	if (o->format == REP_FORMAT_JSON) {
		bool f = true;

		fputs(",\"efficiency\":{", out);
		rep_json_ku64(out, &f, "cpus", max_cpus(p));
		rep_json_kbool(out, &f, "measured", p->has_idleness);
		rep_json_kbool(out, &f, "parallel", parallel);
		rep_json_key(out, &f, "effort");
		fprintf(out, "%.3f", effort);
		rep_json_key(out, &f, "work");
		fprintf(out, "%.3f", work);
		rep_json_key(out, &f, "idleness");
		fprintf(out, "%.3f", (double)root->idle_incl / 1e6);
		rep_json_ku64(out, &f, "overhead", root->overhead_incl);
		rep_json_kpct(out, &f, "work_percent", work_pct);
		rep_json_kpct(out, &f, "idleness_percent", idle_pct);
		rep_json_kpct(out, &f, "overhead_percent", ovh_pct);
		rep_json_kstr(out, &f, "reading",
			      parallel ? reading_key(idle_pct, ovh_pct) : NULL);
		rep_json_key(out, &f, "regions");
		fputc('[', out);
		if (!parallel)
			limit = 0;
	} else {
		const char *t = "Parallel efficiency";
		bool md = o->format == REP_FORMAT_MARKDOWN;

		fprintf(out, md ? "### %s\n\n" : "%s\n", t);
		if (!parallel) {
			/* Idleness is measured for every program, but advice on
			 * granularity means nothing to one that never ran two
			 * threads at once. */
			fputs(md ? "_No two threads of the program worked at the same time: there is "
				   "no parallelism to assess._\n\n"
				 : "  (no two threads of the program worked at the same time: there is "
				   "no parallelism to assess)\n\n",
			      out);
			free(rg);
			return 0;
		}
		/* One plain sentence per term (Tallent & Mellor-Crummey, 2.1-2.2). */
		fprintf(out,
			"%seffort: the CPU time the program could have used while it ran: work + "
			"idleness + overhead.\n"
			"%sidleness: CPU time left unused because fewer threads worked than there "
			"are CPUs (%u),%scharged to the code that was running meanwhile.\n"
			"%soverhead: time spent synchronizing or managing threads (locks, waits, "
			"thread creation).\n"
			"%shigh: idleness >= %.0f%% or overhead >= %.0f%% of a function's effort.\n%s",
			md ? "- " : "  ", md ? "- " : "  ", max_cpus(p), md ? " " : "\n    ",
			md ? "- " : "  ", md ? "- " : "  ", IDLE_HIGH, OVERHEAD_HIGH, md ? "\n" : "");
		if (!p->has_idleness) {
			fputs(o->format == REP_FORMAT_MARKDOWN
				      ? "_no idleness recorded (a recording from an older psup, or no "
					"context-switch records)_\n\n"
				      : "  (no idleness recorded: a recording from an older psup, or "
					"no context-switch records)\n\n",
			      out);
			free(rg);
			return 0;
		}
		if (o->format == REP_FORMAT_MARKDOWN)
			fprintf(out,
				"Whole program: work **%.1f%%**, idleness **%.1f%%**, overhead "
				"**%.1f%%** of effort: %s.\n\n| effort%% | idle%% | overhead%% | "
				"function | reading |\n|---:|---:|---:|---|---|\n",
				work_pct, idle_pct, ovh_pct, reading(idle_pct, ovh_pct));
		else
			fprintf(out,
				"  whole program: work %.1f%%, idleness %.1f%%, overhead %.1f%% of "
				"effort\n    -> %s\n\n  %7s  %6s  %9s  %s\n",
				work_pct, idle_pct, ovh_pct, reading(idle_pct, ovh_pct), "effort%",
				"idle%", "overhead%", "function: reading");
	}
	for (uint32_t i = 0; i < nrg && shown < limit; i++) {
		const struct region *r = &rg[i];
		const struct rep_cnode *c = &td->nodes[r->node];
		const char *name = fn_name(p, c->function);
		double e = effort_of(r->samples, r->idle);
		double share = effort > 0 ? 100.0 * e / effort : 0;
		double ri = e > 0 ? 100.0 * ((double)r->idle / 1e6) / e : 0;
		double ro = e > 0 ? 100.0 * (double)r->overhead / e : 0;

		/* the regions worth a reading: not runtime code (overhead is
		 * read at its caller) */
		if (share < (o->min_percent > 0 ? o->min_percent : 5.0))
			break;
		if (name[0] == '[' || system_image(rep_str(p, c->image)))
			continue;
		/* main and its like are the whole program, read above */
		if (share >= 99.5)
			continue;
		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(shown ? ",{" : "{", out);
			rep_json_kstr(out, &f, "function", name);
			rep_json_kstr(out, &f, "image", rep_str(p, c->image));
			rep_json_key(out, &f, "effort");
			fprintf(out, "%.3f", e);
			rep_json_kpct(out, &f, "effort_percent", share);
			rep_json_kpct(out, &f, "idleness_percent", ri);
			rep_json_kpct(out, &f, "overhead_percent", ro);
			rep_json_kstr(out, &f, "reading", reading_key(ri, ro));
			fputc('}', out);
		} else if (o->format == REP_FORMAT_MARKDOWN) {
			fprintf(out, "| %.1f | %.1f | %.1f | ", share, ri, ro);
			rep_md_put(out, name, true);
			fprintf(out, " | %s |\n", reading(ri, ro));
		} else {
			fprintf(out, "  %6.1f%%  %5.1f%%  %8.1f%%  ", share, ri, ro);
			rep_text_put(out, name, SIZE_MAX);
			fprintf(out, ": %s\n", reading(ri, ro));
		}
		shown++;
	}
	if (o->format == REP_FORMAT_JSON)
		fputs("]}", out);
	else
		fputc('\n', out);
	free(rg);
	return 0;
}

/* ---- lock blame ------------------------------------------------------------------ */

struct lockrow {
	uint32_t first; /* index into sorted p->locks order */
	uint32_t n;
	uint64_t waits, wait_ns;
};

static int cmp_lock_entry(const void *x, const void *y, void *ctx)
{
	const struct rep_profile *p = ctx;
	const struct rep_mlock *a = &p->locks[*(const uint32_t *)x];
	const struct rep_mlock *b = &p->locks[*(const uint32_t *)y];

	if (a->run != b->run)
		return a->run < b->run ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* sampled holders first, then exits of threads (joins), then traced
	 * wakers without a context, then no traced waker */
	int ka = a->exit ? 1 : a->ctx != REP_NONE ? 0
		       : a->traced                ? 2
						  : 3;
	int kb = b->exit ? 1 : b->ctx != REP_NONE ? 0
		       : b->traced                ? 2
						  : 3;
	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (a->wait_ns != b->wait_ns)
		return a->wait_ns > b->wait_ns ? -1 : 1;
	return a->ctx < b->ctx ? -1 : a->ctx > b->ctx;
}

static int cmp_lockrow(const void *x, const void *y)
{
	const struct lockrow *a = x, *b = y;

	if (a->wait_ns != b->wait_ns)
		return a->wait_ns > b->wait_ns ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* The frame where the holder released: the innermost outside the runtime. */
static const struct rep_mframe *release_frame(const struct rep_profile *p, uint32_t node)
{
	const struct rep_mframe *first = NULL;

	for (uint32_t n = node; n != REP_NONE && n < p->nnodes; n = p->nodes[n].parent) {
		const struct rep_mloc *l = &p->locs[p->nodes[n].loc];

		if (!first)
			first = &p->frames[l->frames];
		if (!system_image(rep_str(p, l->image)))
			return &p->frames[l->frames];
	}
	return first;
}

#define PATH_FRAMES 8

/* A name from the program, escaped for the format (markdown: a code span). */
static void put_name(FILE *out, enum rep_format f, const char *s)
{
	if (f == REP_FORMAT_MARKDOWN)
		rep_md_put(out, s, true);
	else
		rep_text_put(out, s, SIZE_MAX);
}

/* "file:line", the file without its directories, escaped as a name. */
static void put_site(FILE *out, enum rep_format f, const char *file, unsigned line)
{
	char buf[320];

	snprintf(buf, sizeof(buf), "%.256s:%u", rep_base_name(file), line);
	put_name(out, f, buf);
}

static void print_path(const struct rep_profile *p, uint32_t node, enum rep_format f, FILE *out)
{
	unsigned k = 0;
	bool first = true;

	for (uint32_t n = node; n != REP_NONE && n < p->nnodes; n = p->nodes[n].parent) {
		const struct rep_mloc *l = &p->locs[p->nodes[n].loc];

		for (uint32_t i = 0; i < l->nframes; i++) {
			const struct rep_mframe *fr = &p->frames[l->frames + i];
			const char *file = rep_str(p, fr->file);

			if (f == REP_FORMAT_JSON) {
				bool kf = true;

				fputs(first ? "{" : ",{", out);
				rep_json_kstr(out, &kf, "function", fn_name(p, fr->function));
				rep_json_kstr(out, &kf, "file", file);
				rep_json_ku64(out, &kf, "line", fr->line);
				rep_json_kstr(out, &kf, "image", rep_str(p, l->image));
				fputc('}', out);
			} else if (k < PATH_FRAMES) {
				fputs(first ? "" : " <- ", out);
				put_name(out, f, fn_name(p, fr->function));
				if (file && fr->line) {
					fputs(" (", out);
					put_site(out, f, file, fr->line);
					fputc(')', out);
				}
			} else if (k == PATH_FRAMES) {
				fputs(" <- ...", out);
			}
			first = false;
			k++;
		}
	}
}

int rep_view_locks(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	uint32_t *ord = malloc(((size_t)p->nlocks + 1) * sizeof(*ord));
	struct lockrow *rows = malloc(((size_t)p->nlocks + 1) * sizeof(*rows));
	uint32_t nrows = 0, limit = o->top ? o->top : UINT32_MAX;
	uint64_t total = 0;

	if (!ord || !rows) {
		free(ord);
		free(rows);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nlocks; i++)
		ord[i] = i;
	qsort_r(ord, p->nlocks, sizeof(*ord), cmp_lock_entry, (void *)p);
	for (uint32_t i = 0; i < p->nlocks; i++) {
		const struct rep_mlock *l = &p->locks[ord[i]];
		const struct rep_mlock *prev = i ? &p->locks[ord[i - 1]] : NULL;

		if (!prev || prev->run != l->run || prev->pid != l->pid || prev->addr != l->addr)
			rows[nrows++] = (struct lockrow){ i, 0, 0, 0 };
		rows[nrows - 1].n++;
		rows[nrows - 1].waits = rep_sat_add(rows[nrows - 1].waits, l->waits);
		rows[nrows - 1].wait_ns = rep_sat_add(rows[nrows - 1].wait_ns, l->wait_ns);
		total = rep_sat_add(total, l->wait_ns);
	}
	qsort(rows, nrows, sizeof(*rows), cmp_lockrow);

	if (o->format == REP_FORMAT_JSON) {
		fputs(",\"locks\":[", out);
	} else {
		const char *note = "futex waits by lock (process and address), each blamed on the "
				   "calling contexts of the threads that ended it by releasing: "
				   "their critical sections; joins on the exit of the thread joined";
		if (o->format == REP_FORMAT_MARKDOWN)
			fprintf(out, "### Locks\n\n_%s_\n\n", note);
		else
			fprintf(out, "Locks\n  (%s)\n", note);
		if (!nrows)
			fputs(o->format == REP_FORMAT_MARKDOWN ? "_no futex waits recorded_\n"
							       : "  (no futex waits recorded)\n",
			      out);
	}
	for (uint32_t r = 0; r < nrows && r < limit; r++) {
		const struct lockrow *lr = &rows[r];
		const struct rep_mlock *l0 = &p->locks[ord[lr->first]];
		double share = total ? 100.0 * (double)lr->wait_ns / (double)total : 0;
		/* Wakeups between wakeup samples (traced waker, no context) are
		 * shared among the sampled holders of the lock in proportion
		 * to their sampled waits: a sampled estimate, as the profile
		 * is. */
		uint64_t sampled_ns = 0, unsampled_ns = 0, unsampled_waits = 0;
		for (uint32_t j = 0; j < lr->n; j++) {
			const struct rep_mlock *l = &p->locks[ord[lr->first + j]];
			if (l->exit) {
				continue; /* a join: its own row */
			} else if (l->ctx != REP_NONE) {
				sampled_ns = rep_sat_add(sampled_ns, l->wait_ns);
			} else if (l->traced) {
				unsampled_ns = rep_sat_add(unsampled_ns, l->wait_ns);
				unsampled_waits = rep_sat_add(unsampled_waits, l->waits);
			}
		}

		if (o->format == REP_FORMAT_JSON) {
			bool f = true;

			fputs(r ? ",{" : "{", out);
			rep_json_ku64(out, &f, "pid", (uint64_t)l0->pid);
			rep_json_key(out, &f, "address");
			fprintf(out, "\"0x%" PRIx64 "\"", l0->addr);
			rep_json_ku64(out, &f, "waits", lr->waits);
			rep_json_ku64(out, &f, "wait_ns", lr->wait_ns);
			rep_json_kpct(out, &f, "wait_percent", share);
			rep_json_key(out, &f, "holders");
			fputc('[', out);
		} else if (o->format == REP_FORMAT_MARKDOWN) {
			fprintf(out, "- lock `0x%" PRIx64 "` (pid %d): **%.3f s** waited in %" PRIu64 " waits (%.1f%%)\n", l0->addr, l0->pid, (double)lr->wait_ns / 1e9,
				lr->waits, share);
		} else {
			fprintf(out, "  lock 0x%" PRIx64 " (pid %d): %.3f s waited in %" PRIu64 " waits, %.1f%% of all waits\n", l0->addr, l0->pid,
				(double)lr->wait_ns / 1e9, lr->waits, share);
		}
		for (uint32_t j = 0; j < lr->n; j++) {
			const struct rep_mlock *l = &p->locks[ord[lr->first + j]];
			const struct rep_mframe *rf = l->ctx != REP_NONE ? release_frame(p, l->ctx) : NULL;
			double part = sampled_ns ? (double)l->wait_ns / (double)sampled_ns : 0;
			uint64_t ns = l->wait_ns, waits = l->waits;

			if (l->exit) {
				/* a join: its own waits, nothing shared */
			} else if (l->ctx != REP_NONE) {
				ns += (uint64_t)((double)unsampled_ns * part + 0.5);
				waits += (uint64_t)((double)unsampled_waits * part + 0.5);
			} else if (l->traced && sampled_ns) {
				continue; /* shared among the holders above */
			}
			double hs = lr->wait_ns ? 100.0 * (double)ns / (double)lr->wait_ns : 0;

			if (o->format == REP_FORMAT_JSON) {
				bool f = true;

				fputs(j ? ",{" : "{", out);
				rep_json_ku64(out, &f, "waits", waits);
				rep_json_ku64(out, &f, "wait_ns", ns);
				rep_json_kpct(out, &f, "wait_percent", hs);
				rep_json_ku64(out, &f, "sampled_waits", l->ctx != REP_NONE ? l->waits : 0);
				rep_json_kbool(out, &f, "traced", l->ctx != REP_NONE || l->traced);
				rep_json_kbool(out, &f, "thread_exit", l->exit);
				rep_json_key(out, &f, "released_in");
				if (rf) {
					bool g = true;
					fputc('{', out);
					rep_json_kstr(out, &g, "function", fn_name(p, rf->function));
					rep_json_kstr(out, &g, "file", rep_str(p, rf->file));
					rep_json_ku64(out, &g, "line", rf->line);
					fputc('}', out);
				} else {
					fputs("null", out);
				}
				rep_json_key(out, &f, "frames");
				fputc('[', out);
				if (l->ctx != REP_NONE)
					print_path(p, l->ctx, o->format, out);
				fputs("]}", out);
				continue;
			}
			fputs(o->format == REP_FORMAT_MARKDOWN ? "  - " : "    ", out);
			fprintf(out, "%5.1f%%  %.3f s, %" PRIu64 " waits: ", hs, (double)ns / 1e9, waits);
			if (l->ctx == REP_NONE) {
				fputs(l->exit     ? "(ended by the exit of a thread psup never sampled: "
						    "pthread_join)\n"
				      : l->traced ? "(released by traced threads, but no wakeup sample "
						    "caught their context)\n"
						  : "(no traced thread released it: timeouts, signals, "
						    "threads psup does not see)\n",
				      out);
				continue;
			}
			if (l->exit)
				fputs("ended by the exit of a thread (pthread_join), ", out);
			if (rf) {
				const char *file = rep_str(p, rf->file);
				fputs(l->exit ? "last sampled in " : "released in ", out);
				put_name(out, o->format, fn_name(p, rf->function));
				if (file && rf->line) {
					fputs(" at ", out);
					put_site(out, o->format, file, rf->line);
				}
				fputs(o->format == REP_FORMAT_MARKDOWN ? "<br>" : "\n          ", out);
			}
			print_path(p, l->ctx, o->format, out);
			fputc('\n', out);
		}
		if (o->format == REP_FORMAT_JSON)
			fputs("]}", out);
	}
	if (o->format == REP_FORMAT_JSON)
		fputc(']', out);
	else
		fputc('\n', out);
	free(ord);
	free(rows);
	return 0;
}
