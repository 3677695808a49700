/*
 * psup diff: per function and per line, the change between two sets of runs
 * with its significance (report/diff.h).
 */
#include "report/diff.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"
#include "report/html.h"
#include "report/json.h"
#include "report/report-internal.h"

/* ---- statistics --------------------------------------------------------- */

void rep_diff_mean_sd(const double *v, unsigned n, double *mean, double *sd)
{
	double m = 0, ss = 0;

	for (unsigned i = 0; i < n; i++)
		m += v[i];
	m = n ? m / n : 0;
	for (unsigned i = 0; i < n; i++)
		ss += (v[i] - m) * (v[i] - m);
	*mean = m;
	*sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
}

/* The continued fraction of the regularized incomplete beta function
 * (Lentz's method, as in Numerical Recipes' betacf). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap, h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

/* I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
	double bt;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return bt * beta_cf(a, b, x) / a;
	return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

double rep_diff_t_two_sided(double t, double df)
{
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return 0;
	return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double rep_diff_welch(double m1, double v1, unsigned n1, double m2, double v2, unsigned n2)
{
	double a, b, se2, t, df;

	if (n1 < 2 || n2 < 2)
		return NAN;
	if (m1 == m2)
		return 1;
	a = v1 / n1;
	b = v2 / n2;
	se2 = a + b;
	if (!(se2 > 0))
		return 0;
	t = (m2 - m1) / sqrt(se2);
	/* Welch-Satterthwaite */
	df = se2 * se2 / (a * a / (n1 - 1) + b * b / (n2 - 1));
	return rep_diff_t_two_sided(t, df);
}

/* ---- rows --------------------------------------------------------------- */

struct drow {
	struct rep_diff_row r;
	char *key; /* image '\0' function '\0' file '\0' line, keylen bytes */
	size_t keylen;
	double *val; /* per run (base runs, then new runs): time */
	double *shr; /* per run: share of the run's samples */
};

struct dtable {
	struct drow *rows;
	uint32_t n, cap;
	struct rep_index ix;
	const struct drow **sorted;
};

struct rep_diff {
	unsigned nb, nn; /* runs per side */
	bool clock;
	double period[2]; /* mean period per side */
	const char *prog[2];
	bool rebuilt, same_build;
	struct drow program;
	struct dtable fns, lines;
	double *run_total; /* samples per run */
	/* strings the rows point to */
	char **strs;
	size_t nstrs, strs_cap;
};

struct dkey {
	const char *p;
	size_t len;
};

static bool dkey_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct dtable *t = ctx;
	const struct dkey *k = key;

	return t->rows[row].keylen == k->len && memcmp(t->rows[row].key, k->p, k->len) == 0;
}

static uint64_t drow_hash(const void *ctx, uint32_t row)
{
	const struct dtable *t = ctx;

	return rep_hash_bytes(t->rows[row].key, t->rows[row].keylen, t->ix.seed);
}

static char *keep(struct rep_diff *d, const char *s)
{
	char *c;

	if (!s)
		return NULL;
	if (d->nstrs == d->strs_cap) {
		size_t cap = d->strs_cap ? 2 * d->strs_cap : 64;
		char **n = realloc(d->strs, cap * sizeof(*n));

		if (!n)
			return NULL;
		d->strs = n;
		d->strs_cap = cap;
	}
	c = strdup(s);
	if (c)
		d->strs[d->nstrs++] = c;
	return c;
}

static int drow_alloc(struct drow *r, unsigned nruns)
{
	r->val = calloc(nruns, sizeof(double));
	r->shr = calloc(nruns, sizeof(double));
	return r->val && r->shr ? 0 : -ENOMEM;
}

/* The row of (image, function, file, line), made on first use. */
static struct drow *dtable_get(struct rep_diff *d, struct dtable *t, const char *image,
			       const char *function, const char *file, unsigned line)
{
	char lbuf[16];
	size_t li = strlen(image) + 1, lf = strlen(function) + 1, lfile = file ? strlen(file) + 1 : 0;
	size_t ll = file ? (size_t)snprintf(lbuf, sizeof(lbuf), "%u", line) : 0;
	size_t len = li + lf + lfile + ll;
	char *key = malloc(len ? len : 1);
	struct dkey k = { key, len };
	uint64_t h;
	uint32_t row;
	struct drow *r;

	if (!key)
		return NULL;
	memcpy(key, image, li);
	memcpy(key + li, function, lf);
	if (file) {
		memcpy(key + li + lf, file, lfile);
		memcpy(key + li + lf + lfile, lbuf, ll);
	}
	h = rep_hash_bytes(key, len, t->ix.seed);
	row = rep_index_find(&t->ix, h, dkey_eq, t, &k);
	if (row != UINT32_MAX) {
		free(key);
		return &t->rows[row];
	}
	if (rep_grow32((void **)&t->rows, &t->cap, t->n, sizeof(*t->rows)))
		goto fail;
	r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->keylen = len;
	r->r.image = keep(d, image);
	r->r.function = keep(d, function);
	r->r.file = file ? keep(d, file) : NULL;
	r->r.line = line;
	if (!r->r.image || !r->r.function || (file && !r->r.file) || drow_alloc(r, d->nb + d->nn)) {
		free(r->val);
		free(r->shr);
		goto fail;
	}
	if (rep_index_add(&t->ix, h, t->n, drow_hash, t)) {
		free(r->val);
		free(r->shr);
		goto fail;
	}
	t->n++;
	return r;
fail:
	free(key);
	return NULL;
}

static void dtable_release(struct dtable *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->rows[i].key);
		free(t->rows[i].val);
		free(t->rows[i].shr);
	}
	free(t->rows);
	free(t->sorted);
	rep_index_release(&t->ix);
}

void rep_diff_free(struct rep_diff *d)
{
	if (!d)
		return;
	dtable_release(&d->fns);
	dtable_release(&d->lines);
	free(d->program.val);
	free(d->program.shr);
	free(d->run_total);
	for (size_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	free(d->strs);
	free(d);
}

/* ---- reading the two sides ---------------------------------------------- */

static void set_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	char *shown;

	va_start(ap, fmt);
	if (len)
		vsnprintf(err, len, fmt, ap);
	va_end(ap);
	/* Program and function names come from the files: the message goes
	 * to a terminal, so with the text views' rules (escape.h). */
	if (len && (shown = rep_text_dup(err))) {
		snprintf(err, len, "%s", shown);
		free(shown);
	}
}

/* The program a run profiled: the file name of what its root process
 * executed, else of argv[0]; NULL when the file says neither (attach). */
static const char *run_program(const struct rep_profile *p, const struct rep_run *r)
{
	const char *s = rep_str(p, r->exec_path);

	if (!s && r->has_argv && r->nargv)
		s = rep_str(p, r->argv[0]);
	return s ? rep_base_name(s) : NULL;
}

/* The build-id of the image named prog (a file name) in p, or NULL. */
static const char *image_build_id(const struct rep_profile *p, const char *name)
{
	for (uint32_t i = 0; name && i < p->nlocs; i++) {
		const char *img = rep_str(p, p->locs[i].image);

		if (p->locs[i].build_id && img && strcmp(rep_base_name(img), name) == 0)
			return rep_str(p, p->locs[i].build_id);
	}
	return NULL;
}

/* The name an image of a NEW loc goes by: BASE's name for the same build-id. */
static const char *image_key(const struct rep_profile *base, const struct rep_profile *p,
			     const struct rep_mloc *l)
{
	const char *img = rep_base_name(rep_str(p, l->image));
	const char *bid = rep_str(p, l->build_id);

	if (p == base || !bid)
		return img;
	for (uint32_t i = 0; i < base->nlocs; i++) {
		const char *b = rep_str(base, base->locs[i].build_id);

		if (b && strcmp(b, bid) == 0)
			return rep_base_name(rep_str(base, base->locs[i].image));
	}
	return img;
}

/* Adds the samples of side s (0 base, 1 new) to the rows. Per-image name
 * lookups are cached by the loc's image string id. */
static int add_side(struct rep_diff *d, const struct rep_profile *base,
		    const struct rep_profile *p, int s, uint64_t *unnamed, const char **unnamed_name)
{
	unsigned first = s ? d->nb : 0;
	struct psup_u64map img_cache; /* image id -> index into names + 1 */
	const char **names = NULL;
	size_t nnames = 0;
	uint64_t worst = 0;
	int rc = 0;

	psup_u64map_init(&img_cache);
	for (uint32_t ti = 0; ti < p->nthreads; ti++) {
		const struct rep_mthread *th = &p->threads[ti];
		unsigned run = first + th->run;

		for (size_t j = 0; j < th->leaves.cap; j++) {
			uint64_t node, n = th->leaves.vals[j];
			const struct rep_mloc *l;
			const struct rep_mframe *f;
			const char *img, *fn, *file;
			uint64_t *slot;
			bool created;
			struct drow *r;
			double t;

			if (!th->leaves.keys[j] || !n)
				continue;
			node = th->leaves.keys[j] - 1;
			l = &p->locs[p->nodes[node].loc];
			f = &p->frames[l->frames];
			t = (double)n * (double)p->runs[th->run].period;
			d->run_total[run] += (double)n;
			d->program.val[run] += t;
			d->program.shr[run] += (double)n;
			if (l->unnamed) {
				*unnamed += n;
				if (n > worst) {
					worst = n;
					*unnamed_name = keep(d, rep_str(p, f->function));
				}
				continue;
			}
			slot = psup_u64map_upsert(&img_cache, l->image, &created);
			if (!slot) {
				rc = -ENOMEM;
				goto out;
			}
			if (created) {
				const char **nn = realloc(names, (nnames + 1) * sizeof(*nn));

				if (!nn) {
					rc = -ENOMEM;
					goto out;
				}
				names = nn;
				names[nnames++] = image_key(base, p, l);
				*slot = nnames;
			}
			img = names[*slot - 1];
			fn = rep_str(p, f->function);
			r = dtable_get(d, &d->fns, img ? img : "?", fn ? fn : "?", NULL, 0);
			if (!r) {
				rc = -ENOMEM;
				goto out;
			}
			r->val[run] += t;
			r->shr[run] += (double)n;
			file = rep_str(p, f->file);
			if (!file || !f->line)
				continue;
			r = dtable_get(d, &d->lines, img ? img : "?", fn ? fn : "?", file, f->line);
			if (!r) {
				rc = -ENOMEM;
				goto out;
			}
			r->val[run] += t;
			r->shr[run] += (double)n;
		}
	}
out:
	psup_u64map_release(&img_cache);
	free(names);
	return rc;
}

/* Mean, sd and share of both sides, the change and its p-value. The test
 * gives each side a variance of at least its Poisson floor: a count of N
 * samples varies by about sqrt(N) from run to run even where the runs
 * happened to agree, so two runs with equal counts do not make every
 * difference significant. */
static void row_stats(struct rep_diff *d, struct drow *w)
{
	struct rep_diff_row *r = &w->r;
	unsigned n[2] = { d->nb, d->nn };
	struct rep_diff_side *side[2] = { &r->base, &r->new };
	double var[2];

	for (int s = 0; s < 2; s++) {
		unsigned first = s ? d->nb : 0;
		double share = 0;

		side[s]->n = n[s];
		rep_diff_mean_sd(w->val + first, n[s], &side[s]->mean, &side[s]->sd);
		for (unsigned i = 0; i < n[s]; i++)
			share += d->run_total[first + i] > 0 ? w->shr[first + i] / d->run_total[first + i] : 0;
		side[s]->share = n[s] ? share / n[s] : 0;
		var[s] = side[s]->sd * side[s]->sd;
		if (var[s] < side[s]->mean * d->period[s])
			var[s] = side[s]->mean * d->period[s];
	}
	r->change = r->new.mean - r->base.mean;
	r->change_pct = r->base.mean > 0 ? 100 * r->change / r->base.mean
					 : (r->change > 0 ? INFINITY : 0);
	r->share_change = r->new.share - r->base.share;
	r->p = rep_diff_welch(r->base.mean, var[0], n[0], r->new.mean, var[1], n[1]);
	r->significant = !isnan(r->p) && r->p < REP_DIFF_ALPHA;
}

static int row_cmp(const void *a, const void *b)
{
	const struct drow *x = *(const struct drow *const *)a, *y = *(const struct drow *const *)b;
	double cx = fabs(x->r.change), cy = fabs(y->r.change);
	int c;

	if (x->r.significant != y->r.significant)
		return x->r.significant ? -1 : 1;
	if (cx != cy)
		return cx > cy ? -1 : 1;
	if ((c = strcmp(x->r.function, y->r.function)))
		return c;
	if ((c = strcmp(x->r.image, y->r.image)))
		return c;
	if (x->r.file && y->r.file && (c = strcmp(x->r.file, y->r.file)))
		return c;
	return (x->r.line > y->r.line) - (x->r.line < y->r.line);
}

static int finish_table(struct rep_diff *d, struct dtable *t)
{
	t->sorted = malloc((t->n ? t->n : 1) * sizeof(*t->sorted));
	if (!t->sorted)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		row_stats(d, &t->rows[i]);
		t->sorted[i] = &t->rows[i];
	}
	qsort(t->sorted, t->n, sizeof(*t->sorted), row_cmp);
	return 0;
}

/* Checks the runs of one side: samples in each, one program, one kind of
 * event. Sets d->prog[s], d->period[s] and d->clock. */
static int check_side(struct rep_diff *d, const struct rep_profile *p, int s, char *err,
		      size_t errlen)
{
	const char *side = s ? "NEW" : "BASE";
	double period = 0;

	if (!p->nruns) {
		set_err(err, errlen, "diff: no %s run (give record files on both sides)", side);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < p->nruns; i++) {
		const struct rep_run *r = &p->runs[i];
		const char *prog = run_program(p, r);
		const char *file = rep_str(p, r->file);

		if (!r->samples) {
			set_err(err, errlen, "diff: %s: no samples (a run too short to profile?)",
				file ? file : side);
			return -EINVAL;
		}
		if (i == 0 && s == 0)
			d->clock = r->clock;
		if (r->clock != d->clock) {
			set_err(err, errlen,
				"diff: %s samples another kind of event than the first file (clock "
				"and hardware events do not compare); record both sides with one event",
				file ? file : side);
			return -EINVAL;
		}
		if (prog && d->prog[s] && strcmp(prog, d->prog[s])) {
			set_err(err, errlen,
				"diff: the %s files profile different programs (%s and %s); each "
				"side holds runs of one program",
				side, d->prog[s], prog);
			return -EINVAL;
		}
		/* a copy: the diff outlives the profiles */
		if (prog && !d->prog[s] && !(d->prog[s] = keep(d, prog))) {
			set_err(err, errlen, "diff: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
		period += (double)r->period;
	}
	d->period[s] = period / p->nruns;
	return 0;
}

int rep_diff_new(const struct rep_profile *base, const struct rep_profile *new,
		 struct rep_diff **out, char *err, size_t errlen)
{
	struct rep_diff *d = calloc(1, sizeof(*d));
	uint64_t unnamed[2] = { 0, 0 };
	const char *unnamed_name[2] = { NULL, NULL };
	const struct rep_profile *side[2] = { base, new };
	const char *bid[2];
	bool common = false;
	int rc;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	rep_index_init(&d->fns.ix);
	rep_index_init(&d->lines.ix);
	if ((rc = check_side(d, base, 0, err, errlen)) || (rc = check_side(d, new, 1, err, errlen)))
		goto fail;
	d->nb = base->nruns;
	d->nn = new->nruns;
	bid[0] = image_build_id(base, d->prog[0]);
	bid[1] = image_build_id(new, d->prog[1]);
	d->same_build = bid[0] && bid[1] && strcmp(bid[0], bid[1]) == 0;
	d->rebuilt = bid[0] && bid[1] && !d->same_build;
	if (d->prog[0] && d->prog[1] && strcmp(d->prog[0], d->prog[1]) && !d->same_build) {
		set_err(err, errlen,
			"diff: BASE profiles %s and NEW profiles %s: different programs (diff "
			"compares runs of one program, matched by name or build-id)",
			d->prog[0], d->prog[1]);
		rc = -EINVAL;
		goto fail;
	}
	d->run_total = calloc(d->nb + d->nn, sizeof(double));
	if (!d->run_total || drow_alloc(&d->program, d->nb + d->nn)) {
		rc = -ENOMEM;
		goto fail;
	}
	for (int s = 0; s < 2; s++)
		if ((rc = add_side(d, base, side[s], s, &unnamed[s], &unnamed_name[s])))
			goto fail;
	for (int s = 0; s < 2; s++) {
		double total = 0;

		for (unsigned i = s ? d->nb : 0; i < (s ? d->nb + d->nn : d->nb); i++)
			total += d->run_total[i];
		/* Most of the time in code without names: nothing to match. */
		if (total > 0 && unnamed[s] * 2 > total) {
			set_err(err, errlen,
				"diff: most %s samples are in code without symbols (%s): functions "
				"match by name, so record a build that has symbols",
				s ? "NEW" : "BASE", unnamed_name[s] ? unnamed_name[s] : "stripped");
			rc = -EINVAL;
			goto fail;
		}
	}
	for (uint32_t i = 0; i < d->fns.n && !common; i++) {
		bool in[2] = { false, false };

		for (unsigned k = 0; k < d->nb + d->nn; k++)
			in[k >= d->nb] |= d->fns.rows[i].val[k] > 0;
		common = in[0] && in[1];
	}
	if (!common) {
		set_err(err, errlen,
			"diff: BASE and NEW have no function in common (different programs, or "
			"code without symbols)");
		rc = -EINVAL;
		goto fail;
	}
	d->program.r.function = NULL;
	d->program.r.image = NULL;
	row_stats(d, &d->program);
	if ((rc = finish_table(d, &d->fns)) || (rc = finish_table(d, &d->lines)))
		goto fail;
	*out = d;
	return 0;
fail:
	if (rc == -ENOMEM)
		set_err(err, errlen, "diff: %s", strerror(ENOMEM));
	rep_diff_free(d);
	return rc;
}

const struct rep_diff_row *rep_diff_program(const struct rep_diff *d)
{
	return &d->program.r;
}

size_t rep_diff_nfunctions(const struct rep_diff *d)
{
	return d->fns.n;
}

const struct rep_diff_row *rep_diff_function(const struct rep_diff *d, size_t i)
{
	return i < d->fns.n ? &d->fns.sorted[i]->r : NULL;
}

size_t rep_diff_nlines(const struct rep_diff *d)
{
	return d->lines.n;
}

const struct rep_diff_row *rep_diff_line(const struct rep_diff *d, size_t i)
{
	return i < d->lines.n ? &d->lines.sorted[i]->r : NULL;
}

bool rep_diff_can_judge(const struct rep_diff *d)
{
	return d->nb >= 2 && d->nn >= 2;
}

/* ---- --fail-if-slower --------------------------------------------------- */

static bool row_slower(const struct rep_diff_row *r, double pct)
{
	return r->significant && r->change > 0 && r->change_pct > pct;
}

/* v in the runs' unit, with a '+' before it when plus and v > 0: at most
 * 17 bytes ("+999999999.999 s", "-1.23e+27 s"), well inside a cell. A
 * time of 1e9 s and more (counts times periods that no run makes, but a
 * record can say) goes in exponent form: "%.3f" would print every digit,
 * cut at the cell's end. */
static void fmt_val(const struct rep_diff *d, char *buf, size_t len, double v, bool plus)
{
	const char *sign = plus && v > 0 ? "+" : "";
	double a = fabs(v);

	if (!d->clock)
		snprintf(buf, len, "%s%.4g ev", sign, v);
	else if (a < 1e3)
		snprintf(buf, len, "%s%.0f ns", sign, v);
	else if (a < 1e6)
		snprintf(buf, len, "%s%.2f us", sign, v / 1e3);
	else if (a < 1e9)
		snprintf(buf, len, "%s%.2f ms", sign, v / 1e6);
	else if (a < 1e18)
		snprintf(buf, len, "%s%.3f s", sign, v / 1e9);
	else
		snprintf(buf, len, "%s%.3g s", sign, v / 1e9);
}

/* At most 11 bytes ("+999999.9%", "+1.23e+20%"): the cell has 16. */
static void fmt_pct(char *buf, size_t len, double pct)
{
	if (isinf(pct))
		snprintf(buf, len, "new");
	else if (fabs(pct) < 1e6)
		snprintf(buf, len, "%+.1f%%", pct);
	else
		snprintf(buf, len, "%+.3g%%", pct);
}

bool rep_diff_slower(const struct rep_diff *d, double pct, char *why, size_t len)
{
	const struct rep_diff_row *worst = NULL;
	char b[32], n[32], c[32], name[128];

	if (row_slower(&d->program.r, pct))
		worst = &d->program.r;
	/* else the function that lost the most time */
	for (size_t i = 0; worst != &d->program.r && i < d->fns.n; i++) {
		const struct rep_diff_row *r = &d->fns.sorted[i]->r;

		if (row_slower(r, pct) && (!worst || r->change > worst->change))
			worst = r;
	}
	if (!worst)
		return false;
	fmt_val(d, b, sizeof(b), worst->base.mean, false);
	fmt_val(d, n, sizeof(n), worst->new.mean, false);
	fmt_pct(c, sizeof(c), worst->change_pct);
	/* Names from the binary go into a message: only printable text. */
	name[0] = 0;
	if (worst->function) {
		size_t k = 0;

		for (const char *s = worst->function; *s && k + 1 < sizeof(name); s++)
			name[k++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?';
		name[k] = 0;
	}
	snprintf(why, len,
		 "diff: NEW is slower than BASE: %s %s per run (%s -> %s, p %.2g), beyond "
		 "--fail-if-slower %g%%",
		 worst->function ? name : "the program", c, b, n, worst->p, pct);
	return true;
}

/* ---- output ------------------------------------------------------------- */

static const char *verdict(const struct rep_diff *d, const struct rep_diff_row *r)
{
	if (!rep_diff_can_judge(d))
		return "?";
	if (!r->significant)
		return "~";
	return r->change > 0 ? "slower" : "faster";
}

static void fmt_sd(char *buf, size_t len, const struct rep_diff_side *s)
{
	if (s->n < 2)
		snprintf(buf, len, "-");
	else if (s->mean > 0)
		snprintf(buf, len, "%.1f%%", 100 * s->sd / s->mean);
	else
		snprintf(buf, len, "0%%");
}

static void fmt_p(char *buf, size_t len, double p)
{
	if (isnan(p))
		snprintf(buf, len, "-");
	else if (p < 0.0001)
		snprintf(buf, len, "<0.0001");
	else
		snprintf(buf, len, "%.4f", p);
}

/* The cells of a row, formatted. */
struct cells {
	char base[32], bsd[16], new[32], nsd[16], change[32], pct[16], bshare[16], nshare[16], p[16];
};

static void row_cells(const struct rep_diff *d, const struct rep_diff_row *r, struct cells *c)
{
	fmt_val(d, c->base, sizeof(c->base), r->base.mean, false);
	fmt_sd(c->bsd, sizeof(c->bsd), &r->base);
	fmt_val(d, c->new, sizeof(c->new), r->new.mean, false);
	fmt_sd(c->nsd, sizeof(c->nsd), &r->new);
	fmt_val(d, c->change, sizeof(c->change), r->change, true);
	fmt_pct(c->pct, sizeof(c->pct), r->change_pct);
	snprintf(c->bshare, sizeof(c->bshare), "%.1f%%", 100 * r->base.share);
	snprintf(c->nshare, sizeof(c->nshare), "%.1f%%", 100 * r->new.share);
	fmt_p(c->p, sizeof(c->p), r->p);
}

static void put_name(FILE *out, enum rep_format f, const char *s, bool code)
{
	if (f == REP_FORMAT_MARKDOWN)
		rep_md_put(out, s, code);
	else
		rep_text_put(out, s, SIZE_MAX);
}

static void put_line_name(FILE *out, enum rep_format f, const struct rep_diff_row *r)
{
	char num[16];

	put_name(out, f, rep_base_name(r->file), f == REP_FORMAT_MARKDOWN);
	snprintf(num, sizeof(num), ":%u ", r->line);
	fputs(num, out);
	put_name(out, f, r->function, f == REP_FORMAT_MARKDOWN);
}

static void put_header(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out)
{
	bool md = o->format == REP_FORMAT_MARKDOWN;
	const char *prog = d->prog[1] ? d->prog[1] : d->prog[0];

	fputs(md ? "# psup diff\n\n" : "psup diff: ", out);
	fprintf(out, "%u BASE run%s against %u NEW run%s", d->nb, d->nb == 1 ? "" : "s", d->nn,
		d->nn == 1 ? "" : "s");
	if (prog) {
		fputs(" of ", out);
		put_name(out, o->format, prog, md);
	}
	if (d->rebuilt)
		fputs(" (rebuilt: build-ids differ; matched by function name)", out);
	else if (d->same_build)
		fputs(" (one build)", out);
	fputs(md ? "\n\n" : "\n", out);
	if (rep_diff_can_judge(d))
		fprintf(out,
			"Significance: Welch's t-test over the runs, p < %g (a count of N samples "
			"is given a spread of at least sqrt(N))%s",
			REP_DIFF_ALPHA, md ? "\n\n" : "\n");
	else
		fprintf(out,
			"Significance: cannot judge with one run on a side (record each side twice "
			"or more); changes below are not tested%s",
			md ? "\n\n" : "\n");
}

static void put_table(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out,
		      const struct dtable *t, bool lines)
{
	bool md = o->format == REP_FORMAT_MARKDOWN;
	size_t n = o->top && o->top < t->n ? o->top : t->n;
	struct cells c;

	if (md) {
		fprintf(out, "\n## %s\n\n", lines ? "Lines" : "Functions");
		fputs("| base | sd | new | sd | change | % | share base | share new | p | verdict | "
		      "name |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|:--|:--|\n",
		      out);
	} else {
		fprintf(out, "\n%s (time per run; significant changes first)\n",
			lines ? "Lines" : "Functions");
		fprintf(out, "%11s %6s %11s %6s %12s %8s %7s %7s %8s %-7s %s\n", "base", "sd", "new", "sd",
			"change", "%", "share", "->", "p", "verdict", lines ? "line" : "function");
	}
	for (size_t i = 0; i < n; i++) {
		const struct rep_diff_row *r = &t->sorted[i]->r;

		row_cells(d, r, &c);
		if (md)
			fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | ", c.base, c.bsd,
				c.new, c.nsd, c.change, c.pct, c.bshare, c.nshare, c.p, verdict(d, r));
		else
			fprintf(out, "%11s %6s %11s %6s %12s %8s %7s %7s %8s %-7s ", c.base, c.bsd, c.new,
				c.nsd, c.change, c.pct, c.bshare, c.nshare, c.p, verdict(d, r));
		if (lines)
			put_line_name(out, o->format, r);
		else
			put_name(out, o->format, r->function, md);
		/* the image, unless it is the program or the name says it */
		if (strcmp(r->image, d->prog[0] ? d->prog[0] : "") && r->function[0] != '[') {
			fputs(md ? " (" : " (", out);
			put_name(out, o->format, r->image, md);
			fputs(")", out);
		}
		fputs(md ? " |\n" : "\n", out);
	}
	if (n < t->n)
		fprintf(out, "%s%zu more (--top 0 shows all)\n", md ? "\n" : "  ... ", t->n - n);
}

static void json_num(FILE *out, bool *first, const char *key, double v)
{
	rep_json_key(out, first, key);
	if (isfinite(v))
		fprintf(out, "%.6g", v);
	else
		fputs("null", out);
}

static void json_side(FILE *out, bool *first, const char *key, const struct rep_diff_side *s)
{
	bool f = true;

	rep_json_key(out, first, key);
	fputc('{', out);
	rep_json_ku64(out, &f, "runs", s->n);
	json_num(out, &f, "mean", s->mean);
	json_num(out, &f, "sd", s->n > 1 ? s->sd : NAN);
	json_num(out, &f, "share", s->share);
	fputc('}', out);
}

static void json_row(const struct rep_diff *d, FILE *out, const struct rep_diff_row *r)
{
	bool f = true;
	const char *v = verdict(d, r);

	fputc('{', out);
	if (r->function) {
		rep_json_kstr(out, &f, "function", r->function);
		rep_json_kstr(out, &f, "image", r->image);
	}
	if (r->file) {
		rep_json_kstr(out, &f, "file", r->file);
		rep_json_ku64(out, &f, "line", r->line);
	}
	json_side(out, &f, "base", &r->base);
	json_side(out, &f, "new", &r->new);
	json_num(out, &f, "change", r->change);
	json_num(out, &f, "change_percent", r->change_pct);
	json_num(out, &f, "share_change", r->share_change);
	json_num(out, &f, "p", r->p);
	rep_json_key(out, &f, "significant");
	fputs(isnan(r->p) ? "null" : r->significant ? "true"
						    : "false",
	      out);
	rep_json_key(out, &f, "verdict");
	if (strcmp(v, "?") == 0)
		fputs("null", out);
	else
		rep_json_str(out, strcmp(v, "~") == 0 ? "same" : v);
	fputc('}', out);
}

static void json_table(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out,
		       bool *first, const char *key, const struct dtable *t)
{
	size_t n = o->top && o->top < t->n ? o->top : t->n;

	rep_json_key(out, first, key);
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		json_row(d, out, &t->sorted[i]->r);
	}
	fputc(']', out);
}

int rep_diff_print(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out)
{
	if (o->format == REP_FORMAT_JSON) {
		bool f = true;

		fputc('{', out);
		rep_json_ku64(out, &f, "base_runs", d->nb);
		rep_json_ku64(out, &f, "new_runs", d->nn);
		rep_json_kstr(out, &f, "program", d->prog[1] ? d->prog[1] : d->prog[0]);
		rep_json_kbool(out, &f, "rebuilt", d->rebuilt);
		rep_json_kstr(out, &f, "unit", d->clock ? "ns" : "events");
		rep_json_kbool(out, &f, "can_judge", rep_diff_can_judge(d));
		json_num(out, &f, "alpha", REP_DIFF_ALPHA);
		rep_json_key(out, &f, "total");
		json_row(d, out, &d->program.r);
		json_table(d, o, out, &f, "functions", &d->fns);
		json_table(d, o, out, &f, "lines", &d->lines);
		fputs("}\n", out);
	} else {
		bool md = o->format == REP_FORMAT_MARKDOWN;
		const struct rep_diff_row *r = &d->program.r;
		struct cells c;

		put_header(d, o, out);
		row_cells(d, r, &c);
		fprintf(out,
			"%sProgram%s: %s -> %s per run (sd %s -> %s), %s %s, p %s, %s%s\n",
			md ? "**" : "", md ? "**" : "", c.base, c.new, c.bsd, c.nsd, c.change, c.pct, c.p,
			!rep_diff_can_judge(d) ? "not judged" : !r->significant ? "within noise"
										: verdict(d, r),
			"");
		put_table(d, o, out, &d->fns, false);
		if (d->lines.n)
			put_table(d, o, out, &d->lines, true);
		else
			fputs(md ? "\n## Lines\n\nno sampled code has source line information\n"
				 : "\nLines: no sampled code has source line information\n",
			      out);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- the HTML page ------------------------------------------------------ */

/* A table of the rows as put_table() prints them, every name escaped; the
 * verdict cell's class is the verdict (slower, faster) for the colour. */
static void html_table(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out,
		       const struct dtable *t, bool lines)
{
	static const char *const heads[] = { "base", "sd", "new", "sd", "change",
					     "%", "share base", "share new", "p" };
	size_t n = o->top && o->top < t->n ? o->top : t->n;
	struct cells c;

	fprintf(out, "<section id=\"%s\">\n<h2>%s</h2>\n", lines ? "lines" : "functions",
		lines ? "Lines" : "Functions");
	fputs("<p class=\"note\">time per run; significant changes first</p>\n<table>\n<tr>", out);
	for (size_t j = 0; j < sizeof(heads) / sizeof(heads[0]); j++)
		fprintf(out, "<th class=\"r\">%s</th>", heads[j]);
	fprintf(out, "<th>verdict</th><th>%s</th></tr>\n", lines ? "line" : "function");
	for (size_t i = 0; i < n; i++) {
		const struct rep_diff_row *r = &t->sorted[i]->r;
		const char *v = verdict(d, r);
		const char *cell[] = { c.base, c.bsd, c.new, c.nsd, c.change, c.pct, c.bshare, c.nshare, c.p };
		char num[16];

		row_cells(d, r, &c);
		fputs("<tr>", out);
		for (size_t j = 0; j < sizeof(cell) / sizeof(cell[0]); j++) {
			fputs("<td class=\"r\">", out);
			rep_html_put(out, cell[j]);
			fputs("</td>", out);
		}
		fprintf(out, "<td class=\"verdict%s%s\">", v[0] == 's' || v[0] == 'f' ? " " : "",
			v[0] == 's' || v[0] == 'f' ? v : "");
		rep_html_put(out, v);
		fputs("</td><td class=\"c\">", out);
		if (lines) {
			rep_html_put(out, rep_base_name(r->file));
			snprintf(num, sizeof(num), ":%u ", r->line);
			fputs(num, out);
		}
		rep_html_put(out, r->function);
		/* the image, unless it is the program or the name says it */
		if (strcmp(r->image, d->prog[0] ? d->prog[0] : "") && r->function[0] != '[') {
			fputs(" (", out);
			rep_html_put(out, r->image);
			fputs(")", out);
		}
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (n < t->n)
		fprintf(out, "<p class=\"note\">%zu more rows (--top 0 shows all)</p>\n", t->n - n);
	fputs("</section>\n", out);
}

int rep_diff_print_html(const struct rep_diff *d, const struct rep_profile *base,
			const struct rep_profile *new, const struct rep_diff_options *o, FILE *out)
{
	const struct rep_diff_row *r = &d->program.r;
	const char *prog = d->prog[1] ? d->prog[1] : d->prog[0];
	struct rep_ctree tb, tn;
	struct cells c;
	int rc;

	memset(&tb, 0, sizeof(tb));
	memset(&tn, 0, sizeof(tn));
	rc = rep_ctree_top_down(&tb, base);
	if (!rc)
		rc = rep_ctree_top_down(&tn, new);
	if (rc)
		goto out;
	rep_html_begin(out, "psup diff");
	fputs("<style>td.verdict.slower{color:#b00;font-weight:600}"
	      "td.verdict.faster{color:#0550ae;font-weight:600}</style>\n"
	      "<h1>psup diff</h1>\n<nav><a href=\"#summary\">Summary</a>"
	      "<a href=\"#flame\">Flame graph</a><a href=\"#functions\">Functions</a>"
	      "<a href=\"#lines\">Lines</a></nav>\n"
	      "<section id=\"summary\">\n<h2>Summary</h2>\n<p>",
	      out);
	fprintf(out, "<b id=\"base-runs\">%u</b> BASE run%s against <b id=\"new-runs\">%u</b> NEW run%s",
		d->nb, d->nb == 1 ? "" : "s", d->nn, d->nn == 1 ? "" : "s");
	if (prog) {
		fputs(" of <code>", out);
		rep_html_put(out, prog);
		fputs("</code>", out);
	}
	if (d->rebuilt)
		fputs(" (rebuilt: build-ids differ; matched by function name)", out);
	else if (d->same_build)
		fputs(" (one build)", out);
	fputs("</p>\n", out);
	if (rep_diff_can_judge(d))
		fprintf(out,
			"<p id=\"significance\" data-can-judge=\"1\">Significance: Welch's t-test over "
			"the runs, p &lt; %g (a count of N samples is given a spread of at least "
			"sqrt(N))</p>\n",
			REP_DIFF_ALPHA);
	else
		fputs("<p id=\"significance\" data-can-judge=\"0\">Significance: cannot judge with "
		      "one run on a side (record each side twice or more); changes below are not "
		      "tested</p>\n",
		      out);
	row_cells(d, r, &c);
	fputs("<p id=\"program\"><b>Program</b>: ", out);
	/* the cells are numbers and units: nothing to escape */
	fprintf(out, "%s &rarr; %s per run (sd %s &rarr; %s), %s %s, p %s, %s</p>\n</section>\n",
		c.base, c.new, c.bsd, c.nsd, c.change, c.pct, c.p,
		!rep_diff_can_judge(d) ? "not judged" : !r->significant ? "within noise"
									: verdict(d, r));
	fputs("<section id=\"flame\">\n<h2>Differential flame graph</h2>\n<p class=\"note\">NEW's "
	      "calling contexts, widths by NEW's samples; colour by the change of each context's "
	      "share of all samples against BASE: red grew, blue shrank, deep red not in BASE; "
	      "hover for both counts</p>\n",
	      out);
	rc = rep_html_flame(out, &tb, &tn, "flame-graph");
	if (rc)
		goto out;
	fputs("</section>\n", out);
	html_table(d, o, out, &d->fns, false);
	if (d->lines.n)
		html_table(d, o, out, &d->lines, true);
	else
		fputs("<section id=\"lines\">\n<h2>Lines</h2>\n<p class=\"note\">no sampled code has "
		      "source line information</p>\n</section>\n",
		      out);
	rep_html_end(out);
	rc = ferror(out) ? -EIO : 0;
out:
	rep_ctree_release(&tb);
	rep_ctree_release(&tn);
	return rc;
}
