#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/util.h"
#include "report/escape.h"
#include "report/html.h"
#include "report/json.h"
#include "report/report-internal.h"

/*
 * The causal profile (Coz, Curtsinger & Berger, SOSP 2015, sections 2-3.4):
 * the experiment records of every loaded run, turned into one curve per
 * (selected line, progress point): predicted program speedup over line
 * speedup, with a bootstrap confidence interval per point, ranked by the
 * slope of a least-squares fit.
 *
 * The statistics, exactly (docs/format.md and docs/causal.md say the same):
 *
 *  - Experiments with the same line, point and speedup are pooled by adding
 *    visits and effective durations (Coz section 2, "Producing a causal
 *    profile"): effective duration = duration - inserted delay (the paper's
 *    D). Throughput: period p_s = sum(effective) / sum(delta).
 *  - Latency (Little's law, L = lambda W): per experiment the mean number in
 *    flight is its time average over virtual time (the points' seventh
 *    item, signed: docs/format.md); in records without it, the mean of its
 *    value at the start and at the end, in_flight_begin + (arrivals -
 *    departures) / 2, at least 0; pooled, lambda = sum(arrivals) /
 *    sum(effective) and L = the duration-weighted mean in flight, so W_s =
 *    sum(L_i * effective_i) / sum(arrivals_i), none when that sum is not
 *    positive.
 *  - Program speedup at s: (p_0 - p_s) / p_0, or (W_0 - W_s) / W_0 for
 *    latency, so it is positive when the period or the latency falls. The
 *    baseline p_0 comes from the 0% experiments of the SAME line, as the
 *    paper prescribes and Coz's viewer does: line-dependent overhead of the
 *    delays then cancels out.
 *  - Phase correction (eq. 5-8): every speedup is multiplied by
 *    f = (t_obs / s_obs) * (s / T) -- t_obs the summed durations of the
 *    line's 0% experiments, s_obs the samples in the line during them, s
 *    the line's samples in the measured parts of all 0% experiments and T
 *    their length (line_samples' count0 and time0): at 0% nothing is
 *    paused, while over the whole run the pauses of other lines'
 *    experiments hold the line's thread (f read 0.88 for a line that runs
 *    throughout). Records without time0: t_obs and s_obs over all the
 *    line's experiments, s its samples over the whole run and T the run's
 *    time up to the last line_samples record, wall time both (the delays
 *    of its own experiments pause the other threads, not the line; per
 *    second of effective time f read 0.92). f estimates t_A / T, so it is
 *    clamped to [0, 1]; it is 1 when a term is missing (no line_samples, no
 *    sample in the line during its experiments) and for end-to-end
 *    experiments, which cover the whole run.
 *  - End-to-end experiments (--runs) use the run itself as the period: a
 *    point named "end-to-end" with one visit per run.
 *  - Outliers (winsorize()): each experiment's period over the pooled
 *    baseline is pulled in to CZ_CLIP robust sds of what its neighbours
 *    say; on clean data nothing moves.
 *  - 95% intervals of the points (point_intervals()): the noise of one
 *    experiment pooled over the curve's repeated speedups, delta method,
 *    Student's t, and the phase factor's own noise (factor_noise()); a
 *    point with an experiment pulled in also holds its neighbours' value.
 *    Without a repeated speedup: the bootstrap's.
 *  - 95% interval of the slope: the wider of the same model and a
 *    bootstrap over experiments: the n experiments of a (line, point)
 *    drawn n times with replacement, 1000 times from a fixed seed (the
 *    output is deterministic); a draw without a usable baseline is
 *    skipped; percentile interval. Not stratified by speedup on purpose: a
 *    speedup measured by a single experiment would then never vary.
 *  - The slope is a least-squares fit weighted by the experiments behind
 *    each point (the same as fitting the experiments one by one, pooled per
 *    speedup), in percent of program speedup per percent of line speedup.
 *  - An experiment whose point saw fewer than CZ_MIN_VISITS visits
 *    (latency: arrivals or departures) does not count for that point, as in
 *    Coz's runtime, which does not log them: a warm-up or an experiment cut
 *    by the end of the run measures a period it did not see, and pooled with
 *    few others it would dominate a speedup's value. End-to-end runs count
 *    one visit each and are exempt. The report says how many were left out.
 *  - A curve is drawn when it has a 0% baseline with visits, at least
 *    CZ_MIN_SPEEDUPS distinct speedups with visits (0% included) and at
 *    least CZ_MIN_EXPERIMENTS experiments; every other (line, point) with
 *    experiments is listed as insufficient, saying what is missing.
 *  - Contention: the curve falls significantly, i.e. the slope's whole 95%
 *    interval is below -CZ_CONTENTION_SLOPE (a line whose 100% speedup
 *    would cost the program at least 10%).
 *  - How much longer (curve_advise()): the interval narrows as
 *    1/sqrt(experiments), toward CZ_TARGET_HALF_WIDTH points at 100% or
 *    half the effect.
 */

#define CZ_MIN_VISITS 5
#define CZ_NOISY_CV 0.3
#define CZ_MIN_SPEEDUPS 3
#define CZ_MIN_EXPERIMENTS 4
/* Not 0.05: a line whose true curve is flat read -0.03 to -0.08, with
 * narrow intervals, on the spinner program (t5140, quiet machine; what is
 * left of psup's own cost on the threads), and was flagged one run in
 * several. A line competing with the critical path reads far below it
 * (t5050's hammer line -0.20 to -0.24). */
#define CZ_CONTENTION_SLOPE 0.10
#define CZ_CLIP 3.0              /* robust sds before an experiment is pulled in */
#define CZ_CLIP_FLOOR 0.01       /* the least sd assumed: 1% of the baseline */
#define CZ_NEIGHBOUR 15          /* speedup points either side that judge an experiment */
#define CZ_TARGET_HALF_WIDTH 5.0 /* slope interval, points at 100%, worth waiting for */
#define CZ_BOOTSTRAP 1000
#define CZ_SEED 0x5eed0c0ffee15ULL
#define CZ_NSPEEDUPS 101 /* 0..100 */
#define CZ_E2E_POINT "end-to-end"

/* ---- the loaded records ------------------------------------------------- */

struct cz_point {
	uint32_t name; /* string id */
	enum exp_measure kind;
};

struct cz_pdelta {
	uint32_t point; /* row in points */
	uint64_t delta, arrivals, departures;
	int64_t in_flight;
	double mean_in_flight; /* measured over time; NAN: not recorded */
};

struct cz_exp {
	uint32_t run;        /* profile run row */
	uint32_t file, line; /* string id (0: none), line */
	uint32_t speedup;
	uint64_t time, duration, delay, delays, selected, total, pause, pauses;
	bool e2e;
	uint32_t first, npts; /* into pds */
};

struct cz_lsamples {
	uint32_t run, file, line;
	uint64_t count, count0; /* count0: in the 0% experiments' measured parts */
	uint64_t hash;
};

struct cz_run {
	uint32_t run; /* profile run row */
	bool has_info;
	uint32_t mode, note; /* string ids */
	bool crediting;
	uint64_t period_ns, scope_lines;
	uint64_t ls_time; /* time of the last line_samples record, 0: none */
	uint64_t time0;   /* the 0% experiments' measured time, the latest; 0: none */
};

/* A progress_totals entry: the latest per (run, point) wins. */
struct cz_total {
	uint32_t run, point;
	uint64_t visits, departures;
};

struct rep_causal {
	struct cz_total *totals;
	uint32_t ntotals, totals_cap;
	struct cz_exp *exps;
	uint32_t nexps, exps_cap;
	struct cz_pdelta *pds;
	uint32_t npds, pds_cap;
	struct cz_point *points;
	uint32_t npoints, points_cap;
	struct cz_lsamples *ls;
	uint32_t nls, ls_cap;
	struct rep_index ls_ix;
	struct cz_run *runs;
	uint32_t nruns, runs_cap;
};

/* A point of experiment e that saw fewer than CZ_MIN_VISITS visits (latency:
 * arrivals or departures); end-to-end runs count one each and are exempt. */
static bool low_visits(const struct rep_causal *cz, const struct cz_exp *e, const struct cz_pdelta *d)
{
	if (e->e2e)
		return false;
	if (cz->points[d->point].kind == EXP_MEASURE_LATENCY)
		return d->arrivals < CZ_MIN_VISITS || d->departures < CZ_MIN_VISITS;
	return d->delta < CZ_MIN_VISITS;
}

void rep_causal_free(struct rep_causal *cz)
{
	if (!cz)
		return;
	free(cz->totals);
	free(cz->exps);
	free(cz->pds);
	free(cz->points);
	free(cz->ls);
	rep_index_release(&cz->ls_ix);
	free(cz->runs);
	free(cz);
}

bool rep_profile_has_causal(const struct rep_profile *p)
{
	return p && p->causal;
}

size_t rep_profile_nexperiments(const struct rep_profile *p)
{
	return p && p->causal ? p->causal->nexps : 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return psup_hash64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6)));
}

struct ls_key {
	uint32_t run, file, line;
};

static bool ls_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct rep_causal *cz = ctx;
	const struct ls_key *k = key;
	const struct cz_lsamples *l = &cz->ls[row];

	return l->run == k->run && l->file == k->file && l->line == k->line;
}

static uint64_t ls_rowhash(const void *ctx, uint32_t row)
{
	return ((const struct rep_causal *)ctx)->ls[row].hash;
}

static struct cz_run *run_get(struct rep_causal *cz, uint32_t run)
{
	for (uint32_t i = cz->nruns; i-- > 0;)
		if (cz->runs[i].run == run)
			return &cz->runs[i];
	if (rep_grow32((void **)&cz->runs, &cz->runs_cap, cz->nruns, sizeof(*cz->runs)))
		return NULL;
	memset(&cz->runs[cz->nruns], 0, sizeof(cz->runs[0]));
	cz->runs[cz->nruns].run = run;
	return &cz->runs[cz->nruns++];
}

static int64_t point_get(struct rep_profile *p, struct rep_causal *cz, struct rep_slice name,
			 enum exp_measure kind)
{
	int64_t id;

	if (!name.p || !name.len) {
		name.p = "(unnamed)";
		name.len = strlen(name.p);
	}
	id = rep_strtab_intern(&p->strs, name.p, name.len);
	if (id < 0)
		return id;
	for (uint32_t i = 0; i < cz->npoints; i++)
		if (cz->points[i].name == (uint32_t)id && cz->points[i].kind == kind)
			return i;
	if (rep_grow32((void **)&cz->points, &cz->points_cap, cz->npoints, sizeof(*cz->points)))
		return -ENOMEM;
	memset(&cz->points[cz->npoints], 0, sizeof(cz->points[0]));
	cz->points[cz->npoints].name = (uint32_t)id;
	cz->points[cz->npoints].kind = kind;
	return cz->npoints++;
}

static int add_pdelta(struct rep_profile *p, struct rep_causal *cz, struct rep_slice name,
		      enum exp_measure kind, uint64_t delta, uint64_t arr, uint64_t dep,
		      int64_t in_flight, double mean_in_flight)
{
	int64_t pt = point_get(p, cz, name, kind);
	struct cz_pdelta *d;

	if (pt < 0)
		return (int)pt;
	if (rep_grow32((void **)&cz->pds, &cz->pds_cap, cz->npds, sizeof(*cz->pds)))
		return -ENOMEM;
	d = &cz->pds[cz->npds++];
	d->point = (uint32_t)pt;
	d->delta = delta;
	d->arrivals = arr;
	d->departures = dep;
	d->in_flight = in_flight;
	d->mean_in_flight = mean_in_flight;
	return 0;
}

/* The kind of a point as read; -1 for an unknown one. */
static int point_kind(const struct rep_rpoint *rp)
{
	if (rp->kind.len == 7 && memcmp(rp->kind.p, "latency", 7) == 0)
		return EXP_MEASURE_LATENCY;
	if (rp->kind.len == 10 && memcmp(rp->kind.p, "throughput", 10) == 0)
		return EXP_MEASURE_THROUGHPUT;
	return -1;
}

static int apply_experiment(struct rep_loadctx *c, struct rep_causal *cz, const struct rep_rec *r)
{
	const struct rep_crec *cr = r->causal;
	struct rep_profile *p = c->p;
	struct cz_exp *e;
	int64_t file = 0;
	int rc;

	if (!rep_crec_has(cr, REP_CK_SPEEDUP) || !rep_crec_has(cr, REP_CK_DURATION)) {
		rep_load_error(c, "an \"experiment\" record without \"%s\"",
			       rep_crec_has(cr, REP_CK_SPEEDUP) ? "duration" : "speedup");
		return -EINVAL;
	}
	if (cr->u[REP_CK_SPEEDUP] > 100) {
		rep_load_error(c, "an experiment with a speedup of %" PRIu64 "%% (0 to 100)",
			       cr->u[REP_CK_SPEEDUP]);
		return -EINVAL;
	}
	if (cr->u[REP_CK_LINE] > UINT32_MAX) {
		rep_load_error(c, "an experiment's line %" PRIu64 " is out of range", cr->u[REP_CK_LINE]);
		return -EINVAL;
	}
	if (rep_crec_has(cr, REP_CK_FILE) && cr->s[REP_CK_FILE].len &&
	    (file = rep_strtab_intern(&p->strs, cr->s[REP_CK_FILE].p, cr->s[REP_CK_FILE].len)) < 0)
		return (int)file;
	if (rep_grow32((void **)&cz->exps, &cz->exps_cap, cz->nexps, sizeof(*cz->exps)))
		return -ENOMEM;
	e = &cz->exps[cz->nexps];
	memset(e, 0, sizeof(*e));
	e->run = c->run;
	e->file = (uint32_t)file;
	e->line = (uint32_t)cr->u[REP_CK_LINE];
	e->speedup = (uint32_t)cr->u[REP_CK_SPEEDUP];
	e->time = r->u[REP_K_TIME];
	e->duration = cr->u[REP_CK_DURATION];
	e->delay = cr->u[REP_CK_DELAY];
	e->delays = cr->u[REP_CK_DELAYS];
	e->selected = cr->u[REP_CK_SELECTED_SAMPLES];
	e->total = cr->u[REP_CK_TOTAL_SAMPLES];
	e->pause = cr->u[REP_CK_PAUSE];
	e->pauses = cr->u[REP_CK_PAUSES];
	e->e2e = rep_crec_has(cr, REP_CK_END_TO_END) && cr->u[REP_CK_END_TO_END];
	e->first = cz->npds;
	for (size_t i = 0; i < cr->npoints && rep_crec_has(cr, REP_CK_POINTS); i++) {
		const struct rep_rpoint *rp = &cr->points[i];
		int kind = point_kind(rp);

		if (kind < 0) {
			/* the kind's bytes are not echoed: they may be anything */
			rep_load_error(c, "a progress point of an unknown kind (throughput or latency)");
			return -EINVAL;
		}
		if ((rc = add_pdelta(p, cz, rp->name, (enum exp_measure)kind, rp->delta, rp->arrivals,
				     rp->departures, rp->in_flight,
				     rp->have_mean ? (double)rp->mean_milli / 1000 : NAN)))
			return rc;
	}
	/* --runs: the run is the unit of progress */
	if (e->e2e) {
		struct rep_slice n = { CZ_E2E_POINT, strlen(CZ_E2E_POINT) };

		if ((rc = add_pdelta(p, cz, n, EXP_MEASURE_THROUGHPUT, 1, 0, 0, 0, NAN)))
			return rc;
	}
	e->npts = cz->npds - e->first;
	cz->nexps++;
	return 0;
}

static int apply_totals(struct rep_loadctx *c, struct rep_causal *cz, const struct rep_rec *r)
{
	const struct rep_crec *cr = r->causal;

	for (size_t i = 0; i < cr->npoints && rep_crec_has(cr, REP_CK_POINTS); i++) {
		const struct rep_rpoint *rp = &cr->points[i];
		int kind = point_kind(rp);
		int64_t pt;
		uint32_t j;

		if (kind < 0) {
			rep_load_error(c, "a progress point of an unknown kind (throughput or latency)");
			return -EINVAL;
		}
		pt = point_get(c->p, cz, rp->name, (enum exp_measure)kind);
		if (pt < 0)
			return (int)pt;
		for (j = 0; j < cz->ntotals; j++)
			if (cz->totals[j].run == c->run && cz->totals[j].point == (uint32_t)pt)
				break;
		if (j == cz->ntotals) {
			if (rep_grow32((void **)&cz->totals, &cz->totals_cap, cz->ntotals,
				       sizeof(*cz->totals)))
				return -ENOMEM;
			cz->ntotals++;
		}
		cz->totals[j] = (struct cz_total){
			c->run, (uint32_t)pt, kind == EXP_MEASURE_LATENCY ? rp->arrivals : rp->delta,
			rp->departures
		};
	}
	return 0;
}

static int apply_line_samples(struct rep_loadctx *c, struct rep_causal *cz, const struct rep_rec *r)
{
	const struct rep_crec *cr = r->causal;
	struct rep_profile *p = c->p;
	struct ls_key k;
	struct cz_run *run;
	uint32_t row;
	int64_t file;
	uint64_t h;

	if (!rep_crec_has(cr, REP_CK_FILE) || !rep_crec_has(cr, REP_CK_LINE) ||
	    !rep_rec_has(r, REP_K_COUNT)) {
		rep_load_error(c, "a \"line_samples\" record without \"file\", \"line\" or \"count\"");
		return -EINVAL;
	}
	if (cr->u[REP_CK_LINE] > UINT32_MAX) {
		rep_load_error(c, "a line_samples line %" PRIu64 " is out of range", cr->u[REP_CK_LINE]);
		return -EINVAL;
	}
	file = rep_strtab_intern(&p->strs, cr->s[REP_CK_FILE].p, cr->s[REP_CK_FILE].len);
	if (file < 0)
		return (int)file;
	if (!(run = run_get(cz, c->run)))
		return -ENOMEM;
	if (r->u[REP_K_TIME] > run->ls_time)
		run->ls_time = r->u[REP_K_TIME];
	k.run = c->run;
	k.file = (uint32_t)file;
	k.line = (uint32_t)cr->u[REP_CK_LINE];
	h = mix(mix(mix(0, k.run), k.file), k.line);
	row = rep_index_find(&cz->ls_ix, h, ls_eq, cz, &k);
	if (row == REP_NONE) {
		if (rep_grow32((void **)&cz->ls, &cz->ls_cap, cz->nls, sizeof(*cz->ls)))
			return -ENOMEM;
		cz->ls[cz->nls] = (struct cz_lsamples){ k.run, k.file, k.line, 0, 0, h };
		if (rep_index_add(&cz->ls_ix, h, cz->nls, ls_rowhash, cz))
			return -ENOMEM;
		row = cz->nls++;
	}
	/* cumulative: the latest record wins */
	cz->ls[row].count = r->u[REP_K_COUNT];
	cz->ls[row].count0 = cr->u[REP_CK_COUNT0];
	if (cr->u[REP_CK_TIME0] > run->time0)
		run->time0 = cr->u[REP_CK_TIME0];
	return 0;
}

static int apply_info(struct rep_loadctx *c, struct rep_causal *cz, const struct rep_rec *r)
{
	const struct rep_crec *cr = r->causal;
	struct cz_run *run = run_get(cz, c->run);
	int64_t id;

	if (!run)
		return -ENOMEM;
	run->has_info = true;
	id = rep_rec_has(r, REP_K_MODE) ? rep_strtab_intern(&c->p->strs, r->s[REP_K_MODE].p,
							    r->s[REP_K_MODE].len)
					: 0;
	if (id < 0)
		return (int)id;
	run->mode = (uint32_t)id;
	id = rep_crec_has(cr, REP_CK_NOTE) ? rep_strtab_intern(&c->p->strs, cr->s[REP_CK_NOTE].p,
							       cr->s[REP_CK_NOTE].len)
					   : 0;
	if (id < 0)
		return (int)id;
	run->note = (uint32_t)id;
	run->crediting = rep_crec_has(cr, REP_CK_SYSCALL_CREDITING) && cr->u[REP_CK_SYSCALL_CREDITING];
	run->period_ns = cr->u[REP_CK_PERIOD_NS];
	run->scope_lines = cr->u[REP_CK_SCOPE_LINES];
	return 0;
}

int rep_causal_apply(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_causal *cz = c->p->causal;

	if (!r->causal)
		return -EINVAL;
	if (!cz) {
		cz = calloc(1, sizeof(*cz));
		if (!cz)
			return -ENOMEM;
		rep_index_init(&cz->ls_ix);
		c->p->causal = cz;
	}
	switch (r->type) {
	case REP_REC_EXPERIMENT:
		return apply_experiment(c, cz, r);
	case REP_REC_LINE_SAMPLES:
		return apply_line_samples(c, cz, r);
	case REP_REC_CAUSAL_INFO:
		return apply_info(c, cz, r);
	case REP_REC_PROGRESS_TOTALS:
		return apply_totals(c, cz, r);
	default:
		return 0;
	}
}

/* ---- the analysis ------------------------------------------------------------ */

/* One (experiment, point) pair, the unit the curves are made of. */
struct cz_obs {
	uint32_t file, line, point;
	uint32_t speedup;
	uint32_t exp;
	uint32_t pd;
	bool low; /* fewer than CZ_MIN_VISITS visits: left out */
};

struct cz_cpoint {
	unsigned speedup;
	double value, lo, hi; /* program speedup, percent */
	uint32_t n;           /* experiments */
};

struct cz_curve {
	uint32_t file, line, point;
	enum exp_measure kind;
	uint32_t nexp; /* experiments used */
	uint32_t nlow; /* experiments left out: too few visits */
	bool drawn;    /* else insufficient, why says why */
	char why[160];
	double factor;  /* phase correction */
	double base_cv; /* spread of the 0% experiments: sd / mean of
				     their periods (latencies); NAN under 2 */
	double slope, slope_lo, slope_hi;
	bool contention;
	uint32_t nclipped; /* experiments pulled in as outliers */
	double sigma;      /* one experiment's noise, percent of the baseline; 0: unknown */
	uint32_t df;       /* its degrees of freedom */
	/* the slope's interval, half its width in points at 100%, against the
	 * width worth waiting for; what it takes to get there */
	double half_width, target_half_width, more_s, more_s_line;
	uint32_t need_exps;
	struct cz_cpoint pts[CZ_NSPEEDUPS];
	unsigned npts;
};

struct cz_analysis {
	const struct rep_profile *p;
	const struct rep_causal *cz;
	struct cz_curve *curves; /* drawn ones first, ranked by slope */
	uint32_t ncurves, ndrawn, cap;
	double span_s; /* the recorded experiments' time, all runs */
};

static int obs_cmp(const void *a, const void *b)
{
	const struct cz_obs *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	if (x->speedup != y->speedup)
		return x->speedup < y->speedup ? -1 : 1;
	return x->exp < y->exp ? -1 : x->exp > y->exp;
}

static uint64_t eff_duration(const struct cz_exp *e)
{
	return e->duration > e->delay ? e->duration - e->delay : 0;
}

/* Weighted least-squares slope of y over x (weights w: the experiments
 * behind each point); NAN with fewer than two distinct x. */
static double fit_slope(const double *x, const double *y, const double *w, unsigned n)
{
	double sw = 0, mx = 0, my = 0, sxx = 0, sxy = 0;

	if (n < 2)
		return NAN;
	for (unsigned i = 0; i < n; i++) {
		sw += w[i];
		mx += w[i] * x[i];
		my += w[i] * y[i];
	}
	if (!(sw > 0))
		return NAN;
	mx /= sw;
	my /= sw;
	for (unsigned i = 0; i < n; i++) {
		sxx += w[i] * (x[i] - mx) * (x[i] - mx);
		sxy += w[i] * (x[i] - mx) * (y[i] - my);
	}
	return sxx > 0 ? sxy / sxx : NAN;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Percentile (0..1) of n sorted values, linear between ranks. */
static double percentile(const double *v, size_t n, double q)
{
	double pos;
	size_t i;

	if (!n)
		return NAN;
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

/* The line's samples s over the run's time T (phase correction's s / T):
 * zero, from the measured parts of the 0% experiments (where no pause held
 * the line's thread for another line's experiment) when every run counted
 * them; else over the whole runs, wall time. */
struct cz_phase {
	double s, T;
	bool zero;
};

static void line_totals(const struct cz_analysis *a, uint32_t file, uint32_t line,
			struct cz_phase *ph)
{
	const struct rep_causal *cz = a->cz;
	double s0 = 0, T0 = 0;

	ph->s = ph->T = 0;
	ph->zero = true;
	for (uint32_t r = 0; r < cz->nruns; r++) {
		const struct cz_run *run = &cz->runs[r];
		const struct rep_run *pr = &a->p->runs[run->run];

		if (!run->ls_time || run->ls_time <= pr->mono_ns)
			continue;
		for (uint32_t i = 0; i < cz->nls; i++)
			if (cz->ls[i].run == run->run && cz->ls[i].file == file && cz->ls[i].line == line) {
				ph->s += (double)cz->ls[i].count;
				s0 += (double)cz->ls[i].count0;
			}
		ph->T += (double)(run->ls_time - pr->mono_ns);
		T0 += (double)run->time0;
		ph->zero = ph->zero && run->time0;
	}
	if (ph->zero && T0 > 0) {
		ph->s = s0;
		ph->T = T0;
	} else {
		ph->zero = false;
	}
}

/* The phase correction factor (eq. 8) from observation sums, unclamped;
 * NAN when undefined. */
static double phase_raw(double t_obs, double s_obs, double s, double T)
{
	if (t_obs <= 0 || s_obs <= 0 || s <= 0 || T <= 0)
		return NAN;
	return (t_obs / s_obs) * (s / T);
}

/* The same, as applied: a share of time, in [0, 1]; 1 when undefined. */
static double phase_factor(double t_obs, double s_obs, double s, double T)
{
	double f = phase_raw(t_obs, s_obs, s, T);

	return isnan(f) || f > 1.0 ? 1.0 : f;
}

/* One experiment of a curve, as the estimators see it. */
struct cz_unit {
	unsigned speedup;
	double a;        /* its weight in its speedup's pooled value: visits
			    (throughput), arrivals (latency) */
	double m;        /* its own period (throughput) or mean latency */
	double q;        /* m over the pooled baseline, winsorized */
	double c;        /* what its neighbours say q is (when clipped) */
	double eff, sel; /* effective duration and samples in the line */
	double wall;     /* its duration (the phase correction's time) */
	bool clipped;    /* q was pulled in: an outlier */
};

/* The phase factor of the experiments picked by idx (NULL: all n): t_obs
 * and s_obs from those at 0% when the line's s / T came from the 0% parts
 * (ph->zero), so that no term holds a pause. */
static double units_factor(const struct cz_unit *u, const uint32_t *idx, uint32_t n,
			   const struct cz_phase *ph)
{
	double t_obs = 0, s_obs = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct cz_unit *x = &u[idx ? idx[i] : i];

		if (ph->zero && x->speedup)
			continue;
		t_obs += x->wall;
		s_obs += x->sel;
	}
	return phase_factor(t_obs, s_obs, ph->s, ph->T);
}

struct cz_strata {
	const struct cz_unit *u; /* the curve's experiments, by speedup */
	uint32_t n;
};

/* Evaluates a curve from the experiments picked by idx (idx == NULL: all of
 * them as they are). The value at a speedup is the weighted mean of its
 * experiments' q (the pooled period sum(effective) / sum(visits), or the
 * pooled latency, over the baseline's); vals[s] gets the program speedup in
 * percent (NAN where undefined), *slope the fit. Returns false when the
 * baseline is undefined. */
static bool curve_eval(const struct cz_strata *st, const uint32_t *idx, bool correct,
		       const struct cz_phase *ph, double *vals, double *slope)
{
	double A[CZ_NSPEEDUPS], AQ[CZ_NSPEEDUPS], base, f;
	double xs[CZ_NSPEEDUPS], ys[CZ_NSPEEDUPS], ws[CZ_NSPEEDUPS];
	uint32_t cnt[CZ_NSPEEDUPS];
	unsigned n = 0;

	memset(A, 0, sizeof(A));
	memset(AQ, 0, sizeof(AQ));
	memset(cnt, 0, sizeof(cnt));
	for (unsigned sp = 0; sp < CZ_NSPEEDUPS; sp++)
		vals[sp] = NAN;
	for (uint32_t i = 0; i < st->n; i++) {
		const struct cz_unit *u = &st->u[idx ? idx[i] : i];

		A[u->speedup] += u->a;
		AQ[u->speedup] += u->a * u->q;
		cnt[u->speedup]++;
	}
	base = A[0] > 0 ? AQ[0] / A[0] : NAN;
	if (!(base > 0))
		return false;
	f = correct ? units_factor(st->u, idx, st->n, ph) : 1.0;
	for (unsigned sp = 0; sp < CZ_NSPEEDUPS; sp++) {
		double m = cnt[sp] && A[sp] > 0 ? AQ[sp] / A[sp] : NAN;

		/* a pooled latency needs a positive mean in flight */
		if (!(m > 0))
			continue;
		vals[sp] = 100.0 * f * (base - m) / base;
		xs[n] = sp;
		ys[n] = vals[sp];
		ws[n] = cnt[sp];
		n++;
	}
	*slope = fit_slope(xs, ys, ws, n);
	return true;
}

/* The median of n values (reordered). */
static double median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One wild experiment (the machine's speed drifted, another program ran)
 * must not move a point or the slope: each experiment's q is pulled in to
 * within CZ_CLIP robust standard deviations of what its neighbours say
 * (winsorizing, Huber's pseudo-observations). The spread is the MAD of the
 * 0% experiments; a 0% experiment is compared with their median, any other
 * with the median of the experiments within CZ_NEIGHBOUR points of speedup
 * (0% excepted), each moved along the curve's least-squares slope to its
 * speedup, so a rising or capped curve is not mistaken for noise. With
 * fewer than 3 baseline experiments, or fewer than 2 neighbours, nothing is
 * judged. On clean data nothing moves: the estimates are the pooled ratios.
 * Returns the number of experiments pulled in, or -ENOMEM.
 */
static int winsorize(struct cz_unit *u, uint32_t n, double *sigma)
{
	double *v, med0, sd, beta, sx = 0, sy = 0, sxx = 0, sxy = 0;
	uint32_t nb = 0, k, clipped = 0;

	*sigma = NAN;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (u[i].speedup == 0)
			v[nb++] = u[i].q;
	if (nb < 3)
		goto out;
	med0 = median(v, nb);
	for (uint32_t i = 0; i < nb; i++)
		v[i] = fabs(v[i] - med0);
	sd = fmax(1.4826 * median(v, nb), CZ_CLIP_FLOOR);
	*sigma = sd;
	for (uint32_t i = 0; i < n; i++) {
		sx += u[i].speedup;
		sy += u[i].q;
	}
	sx /= n;
	sy /= n;
	for (uint32_t i = 0; i < n; i++) {
		sxx += (u[i].speedup - sx) * (u[i].speedup - sx);
		sxy += (u[i].speedup - sx) * (u[i].q - sy);
	}
	beta = sxx > 0 ? sxy / sxx : 0;
	/* centers from the values as read, then every q moves */
	{
		double *c = malloc((n + 1) * sizeof(*c));

		if (!c) {
			free(v);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < n; i++) {
			c[i] = NAN;
			if (u[i].speedup == 0) {
				c[i] = med0;
				continue;
			}
			k = 0;
			for (uint32_t j = 0; j < n; j++)
				if (j != i && u[j].speedup &&
				    abs((int)u[j].speedup - (int)u[i].speedup) <= CZ_NEIGHBOUR)
					v[k++] = u[j].q + beta * ((double)u[i].speedup - u[j].speedup);
			if (k >= 2)
				c[i] = median(v, k);
		}
		for (uint32_t i = 0; i < n; i++) {
			double lim = CZ_CLIP * sd;

			if (isnan(c[i]) || fabs(u[i].q - c[i]) <= lim)
				continue;
			u[i].q = u[i].q > c[i] ? c[i] + lim : c[i] - lim;
			u[i].c = c[i];
			u[i].clipped = true;
			clipped++;
		}
		free(c);
	}
out:
	free(v);
	return (int)clipped;
}

/* The two-sided 95% quantile of Student's t with df degrees of freedom
 * (exact for 1 and 2, Cornish-Fisher above: within 0.1% from 3 on). */
static double t975(double df)
{
	const double z = 1.959963984540054;
	double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, z9 = z7 * z * z;

	if (df < 1.5)
		return 12.706204736;
	if (df < 2.5)
		return 4.302652730;
	return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df) +
	       (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df * df * df * df);
}

/* The coefficient of variation of the single 0% experiments' periods (or
 * latencies): how noisy one experiment is. Above ~0.3 a few experiments
 * cannot tell a 10% effect from noise, whatever the statistics. */
static double baseline_cv(const struct cz_unit *u, uint32_t n)
{
	double sum = 0, sum2 = 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < n && u[i].speedup == 0; i++) {
		double m = u[i].m;

		if (!(m > 0))
			continue;
		sum += m;
		sum2 += m * m;
		k++;
	}
	if (k < 2 || !(sum > 0))
		return NAN;
	sum /= k;
	sum2 = sum2 / k - sum * sum;
	return sqrt(sum2 > 0 ? sum2 * k / (k - 1) : 0) / sum;
}

/* Adds one missing thing to the curve's "why" ("a; b"). */
static void __attribute__((format(printf, 2, 3))) curve_why(struct cz_curve *cv, const char *fmt, ...)
{
	size_t len = strlen(cv->why);
	va_list ap;

	if (len && len + 2 < sizeof(cv->why)) {
		memcpy(cv->why + len, "; ", 3);
		len += 2;
	}
	if (len >= sizeof(cv->why))
		return;
	va_start(ap, fmt);
	vsnprintf(cv->why + len, sizeof(cv->why) - len, fmt, ap);
	va_end(ap);
}

/* How far the phase factor may be off, at 95%: down and up, relative to
 * the factor applied (factor_noise()). */
struct cz_fnoise {
	double down, up;
};

/*
 * The phase factor's own noise (it multiplies every point and the slope):
 * f = (t_obs / s_obs) (s / T) = s / (T R), R = s_obs / t_obs the line's
 * sample rate in its 0% experiments, and s = s_obs + o, o the line's
 * samples in the other 0% experiments (the other lines'), independent of R.
 * Var(log f) = (o / s)^2 (Var(R) / R^2 + 1 / o): R by the ratio estimator
 * over the experiments (their samples in the line against their length:
 * a line that runs in bursts varies more than a Poisson count says), at
 * least 1 / s_obs; o a Poisson count. Nothing when every 0% experiment was
 * the line's (o = 0: f is times only) or f is undefined. f is clamped to 1
 * (it estimates a share of time), so its range is [f e^-z sd, min(1, f e^z
 * sd)] around the raw value, z the points' quantile, relative to f as
 * applied. With lines at random a line's own 0% experiments are a few of
 * all of them: a line sampled 300 times there has f within about 11%
 * either way, 6 points at 50%.
 */
static struct cz_fnoise factor_noise(const struct cz_unit *u, uint32_t n, const struct cz_phase *ph,
				     double f, double z)
{
	struct cz_fnoise fn = { 0, 0 };
	double t_obs = 0, s_obs = 0, m = 0, rr = 0, R, raw, o, vr, sd;

	for (uint32_t i = 0; i < n; i++) {
		if (ph->zero && u[i].speedup)
			continue;
		t_obs += u[i].wall;
		s_obs += u[i].sel;
		m++;
	}
	raw = phase_raw(t_obs, s_obs, ph->s, ph->T);
	if (isnan(raw) || !(f > 0) || !(z > 0))
		return fn;
	R = s_obs / t_obs;
	for (uint32_t i = 0; i < n; i++) {
		if (ph->zero && u[i].speedup)
			continue;
		rr += (u[i].sel - R * u[i].wall) * (u[i].sel - R * u[i].wall);
	}
	vr = m > 1 ? rr * m / (m - 1) / (s_obs * s_obs) : 0;
	vr = fmax(vr, 1 / s_obs);
	o = ph->s - s_obs;
	if (!(o > 0))
		return fn;
	sd = (o / ph->s) * sqrt(vr + 1 / o);
	fn.down = fmax(0, 1 - raw * exp(-z * sd) / f);
	fn.up = fmax(0, fmin(1.0, raw * exp(z * sd)) / f - 1);
	return fn;
}

/* [lo, hi] of v widened by the factor's range, in quadrature with half,
 * the rest of its noise. */
static void widen_by_factor(double v, double half, const struct cz_fnoise *fn, double *lo, double *hi)
{
	double dn = fabs(v) * (v >= 0 ? fn->down : fn->up), dp = fabs(v) * (v >= 0 ? fn->up : fn->down);

	*lo = v - sqrt(half * half + dn * dn);
	*hi = v + sqrt(half * half + dp * dp);
}

/*
 * The 95% interval of each point but the baseline, from the noise of one
 * experiment: the spread of the (winsorized) experiments around their
 * speedup's pooled value, pooled over the curve (N - K degrees of freedom),
 * so a point measured by one experiment gets that experiment's noise and
 * not only its baseline's (the bootstrap's blind spot). Delta method on
 * 100 f (Q_0 - Q_s) / Q_0, Student's t. Without a repeated speedup the
 * bootstrap intervals stay.
 */
static void point_intervals(struct cz_curve *cv, const struct cz_unit *u, uint32_t n, double f,
			    const struct cz_phase *ph)
{
	struct cz_fnoise fn = { 0, 0 };
	double A[CZ_NSPEEDUPS], AQ[CZ_NSPEEDUPS], AA[CZ_NSPEEDUPS], AC[CZ_NSPEEDUPS], ss = 0, var1,
										      q0, n0, t;
	uint32_t N = 0, K = 0;
	bool clipped[CZ_NSPEEDUPS];

	memset(A, 0, sizeof(A));
	memset(AQ, 0, sizeof(AQ));
	memset(AA, 0, sizeof(AA));
	memset(AC, 0, sizeof(AC));
	memset(clipped, 0, sizeof(clipped));
	for (uint32_t i = 0; i < n; i++) {
		if (!(u[i].a > 0))
			continue;
		A[u[i].speedup] += u[i].a;
		AQ[u[i].speedup] += u[i].a * u[i].q;
		AA[u[i].speedup] += u[i].a * u[i].a;
		AC[u[i].speedup] += u[i].a * (u[i].clipped ? u[i].c : u[i].q);
		clipped[u[i].speedup] |= u[i].clipped;
	}
	for (uint32_t i = 0; i < n; i++) {
		double r;

		if (!(u[i].a > 0))
			continue;
		r = u[i].q - AQ[u[i].speedup] / A[u[i].speedup];
		ss += r * r;
		N++;
	}
	for (unsigned sp = 0; sp < CZ_NSPEEDUPS; sp++)
		K += A[sp] > 0;
	if (N <= K || !(A[0] > 0) || !(AQ[0] > 0))
		return;
	var1 = ss / (N - K);
	t = t975(N - K);
	if (ph)
		fn = factor_noise(u, n, ph, f, t);
	q0 = AQ[0] / A[0];
	n0 = A[0] * A[0] / AA[0];
	cv->sigma = 100.0 * sqrt(var1) / q0;
	cv->df = N - K;
	/* the slope is sum(c_s y_s), c_s = n_s (x_s - mean x) / Sxx, every
	 * y_s sharing the baseline's error */
	{
		double sw = 0, mx = 0, sxx = 0, own = 0, shared = 0, half;

		for (unsigned i = 0; i < cv->npts; i++) {
			sw += cv->pts[i].n;
			mx += cv->pts[i].n * (double)cv->pts[i].speedup;
		}
		mx /= sw;
		for (unsigned i = 0; i < cv->npts; i++)
			sxx += cv->pts[i].n * ((double)cv->pts[i].speedup - mx) * ((double)cv->pts[i].speedup - mx);
		for (unsigned i = 0; i < cv->npts && sxx > 0; i++) {
			const struct cz_cpoint *pt = &cv->pts[i];
			double c = pt->n * ((double)pt->speedup - mx) / sxx, qs, ns;

			if (!pt->speedup || !(A[pt->speedup] > 0))
				continue;
			qs = AQ[pt->speedup] / A[pt->speedup];
			ns = A[pt->speedup] * A[pt->speedup] / AA[pt->speedup];
			own += c * c / ns;
			shared += c * qs / q0;
		}
		half = t * 100.0 * f / q0 * sqrt(var1 * (own + shared * shared / n0));
		if (sxx > 0 && isfinite(half)) {
			double lo, hi;

			widen_by_factor(cv->slope, half, &fn, &lo, &hi);
			cv->slope_lo = fmin(cv->slope_lo, lo);
			cv->slope_hi = fmax(cv->slope_hi, hi);
		}
	}
	for (unsigned i = 0; i < cv->npts; i++) {
		struct cz_cpoint *pt = &cv->pts[i];
		double qs, ns, half;

		if (!pt->speedup || !(A[pt->speedup] > 0))
			continue;
		qs = AQ[pt->speedup] / A[pt->speedup];
		ns = A[pt->speedup] * A[pt->speedup] / AA[pt->speedup];
		half = t * 100.0 * f / q0 * sqrt(var1 * (1 / ns + (qs / q0) * (qs / q0) / n0));
		widen_by_factor(pt->value, half, &fn, &pt->lo, &pt->hi);
		/* pulled in: the point is its own reading or what its neighbours
		 * say, and the interval holds both */
		if (clipped[pt->speedup]) {
			double y = 100.0 * f * (q0 - AC[pt->speedup] / A[pt->speedup]) / q0, ylo, yhi;

			widen_by_factor(y, half, &fn, &ylo, &yhi);
			pt->lo = fmin(pt->lo, ylo);
			pt->hi = fmax(pt->hi, yhi);
		}
	}
}

/* How much longer a line with a wide slope interval should be measured: the
 * interval narrows as 1/sqrt(experiments). */
static void curve_advise(const struct cz_analysis *a, struct cz_curve *cv, double mean_len)
{
	double target, k;

	cv->half_width = 100.0 * (cv->slope_hi - cv->slope_lo) / 2;
	target = fmax(CZ_TARGET_HALF_WIDTH, 100.0 * fabs(cv->slope) / 2);
	cv->target_half_width = target;
	cv->need_exps = cv->nexp;
	cv->more_s = cv->more_s_line = 0;
	if (!(cv->half_width > target) || !cv->nexp)
		return;
	k = (cv->half_width / target) * (cv->half_width / target);
	cv->need_exps = k * cv->nexp < 1e9 ? (uint32_t)ceil(k * cv->nexp) : 1000000000u;
	/* at this rate: the line's share of the recording's experiments stays
	 * the same; with --line every experiment is the line's */
	if (a->span_s > 0)
		cv->more_s = (cv->need_exps - cv->nexp) * a->span_s / cv->nexp;
	cv->more_s_line = (cv->need_exps - cv->nexp) * mean_len;
}

static int curve_build(struct cz_analysis *a, struct cz_curve *cv, const struct cz_obs *all,
		       uint32_t nall)
{
	const struct rep_causal *cz = a->cz;
	const char *pname = rep_str(a->p, cz->points[all[0].point].name);
	struct cz_strata st;
	struct cz_phase ph;
	double vals[CZ_NSPEEDUPS], slope, *bv = NULL, *bs = NULL, p0a = 0, p0m = 0, sigma,
					  mean_len = 0;
	uint32_t *idx = NULL, counts[CZ_NSPEEDUPS], n = 0, lowbase = 0;
	struct cz_unit *u = NULL;
	unsigned distinct = 0, nbase = 0;
	uint32_t nboot = 0;
	bool correct = true;
	uint64_t rng = CZ_SEED;
	int rc = 0;

	memset(cv, 0, sizeof(*cv));
	memset(counts, 0, sizeof(counts));
	cv->file = all[0].file;
	cv->line = all[0].line;
	cv->point = all[0].point;
	cv->kind = cz->points[all[0].point].kind;
	cv->factor = 1.0;
	u = calloc(nall + 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	for (uint32_t i = 0; i < nall; i++) {
		const struct cz_exp *e = &cz->exps[all[i].exp];
		const struct cz_pdelta *d = &cz->pds[all[i].pd];
		struct cz_unit *x = &u[n];

		if (all[i].low) {
			lowbase += all[i].speedup == 0;
			continue;
		}
		x->speedup = all[i].speedup;
		x->eff = (double)eff_duration(e);
		x->wall = (double)e->duration;
		x->sel = (double)e->selected;
		if (cv->kind == EXP_MEASURE_LATENCY) {
			/* Measured over the experiment when recorded (signed: the
			 * delays taken out of a short experiment's integral can
			 * exceed it by its noise, and clamped one by one the noise
			 * would only ever add); else the mean of its start and end
			 * values, at least 0. */
			double mif = !isnan(d->mean_in_flight)
					     ? d->mean_in_flight
					     : fmax(0, (double)d->in_flight +
							       ((double)d->arrivals - (double)d->departures) / 2.0);

			x->a = (double)d->arrivals;
			x->m = x->a > 0 ? mif * x->eff / x->a : NAN;
		} else {
			x->a = (double)d->delta;
			x->m = x->a > 0 ? x->eff / x->a : NAN;
		}
		if (isnan(x->m))
			x->a = 0;
		if (x->speedup == 0 && x->a > 0) {
			p0a += x->a;
			p0m += x->a * x->m;
		}
		mean_len += (double)e->duration / 1e9;
		counts[x->speedup]++;
		if (e->e2e)
			correct = false;
		n++;
	}
	cv->nexp = n;
	cv->nlow = nall - n;
	st.u = u;
	st.n = n;
	nbase = counts[0];
	mean_len = n ? mean_len / n : 0;
	/* q: each experiment over the pooled baseline */
	for (uint32_t i = 0; i < n; i++)
		u[i].q = u[i].a > 0 ? (p0a > 0 && p0m > 0 ? u[i].m / (p0m / p0a) : u[i].m) : 0;
	cv->base_cv = baseline_cv(u, n);
	line_totals(a, cv->file, cv->line, &ph);
	if (!curve_eval(&st, NULL, correct, &ph, vals, &slope)) {
		if (!nbase && lowbase)
			curve_why(cv, "the %u experiment%s at 0%% saw fewer than %d visits to %s", lowbase,
				  lowbase == 1 ? "" : "s", CZ_MIN_VISITS, pname ? pname : "?");
		else if (!nbase)
			curve_why(cv, "no 0%% (baseline) experiment");
		else
			curve_why(cv, "the %u experiment%s at 0%% saw no visits to %s", nbase,
				  nbase == 1 ? "" : "s", pname ? pname : "?");
	}
	for (unsigned sp = 0; sp < CZ_NSPEEDUPS; sp++)
		distinct += !isnan(vals[sp]) && counts[sp];
	if (!cv->why[0] && distinct < CZ_MIN_SPEEDUPS)
		curve_why(cv, "%u speedup value%s with visits (need %d, 0%% included)", distinct,
			  distinct == 1 ? "" : "s", CZ_MIN_SPEEDUPS);
	if (n < CZ_MIN_EXPERIMENTS)
		curve_why(cv, "%u experiment%s (need %d)", n, n == 1 ? "" : "s", CZ_MIN_EXPERIMENTS);
	if (cv->why[0] && cv->nlow)
		curve_why(cv, "%u more left out: fewer than %d visits", cv->nlow, CZ_MIN_VISITS);
	if (cv->why[0])
		goto out;

	/* the outliers pulled in, then the estimates again */
	rc = winsorize(u, n, &sigma);
	if (rc < 0)
		goto out;
	cv->nclipped = (uint32_t)rc;
	rc = 0;
	if (cv->nclipped && !curve_eval(&st, NULL, correct, &ph, vals, &slope)) {
		curve_why(cv, "no baseline once outliers are pulled in");
		goto out;
	}
	/* the phase factor as applied to the whole set, for the record */
	cv->factor = correct ? units_factor(u, NULL, n, &ph) : 1.0;
	cv->drawn = true;
	cv->slope = slope;
	for (unsigned sp = 0; sp < CZ_NSPEEDUPS; sp++) {
		if (isnan(vals[sp]) || !counts[sp])
			continue;
		cv->pts[cv->npts++] = (struct cz_cpoint){ sp, vals[sp], vals[sp], vals[sp], counts[sp] };
	}

	/* bootstrap over the curve's experiments */
	idx = malloc((n + 1) * sizeof(*idx));
	bv = malloc((size_t)CZ_BOOTSTRAP * (cv->npts + 1) * sizeof(*bv));
	bs = malloc(CZ_BOOTSTRAP * sizeof(*bs));
	if (!idx || !bv || !bs) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned b = 0; b < CZ_BOOTSTRAP; b++) {
		double bvals[CZ_NSPEEDUPS], bslope;

		/* n experiments drawn with replacement from the n of the curve; a
		 * draw without a baseline says nothing and is skipped */
		for (uint32_t j = 0; j < n; j++)
			idx[j] = (uint32_t)(psup_rand_next(&rng) % n);
		if (!curve_eval(&st, idx, correct, &ph, bvals, &bslope))
			continue;
		for (unsigned i = 0; i < cv->npts; i++)
			bv[(size_t)i * CZ_BOOTSTRAP + nboot] = bvals[cv->pts[i].speedup];
		bs[nboot++] = bslope;
	}
	if (nboot) {
		for (unsigned i = 0; i < cv->npts; i++) {
			double *v = &bv[(size_t)i * CZ_BOOTSTRAP];
			size_t m = 0;

			/* a stratum can lose all its visits in a resample */
			for (uint32_t j = 0; j < nboot; j++)
				if (!isnan(v[j]))
					v[m++] = v[j];
			qsort(v, m, sizeof(*v), dbl_cmp);
			/* a percentile interval of a skewed ratio can miss the
			 * estimate itself; it is widened to hold it */
			if (m) {
				cv->pts[i].lo = fmin(percentile(v, m, 0.025), cv->pts[i].value);
				cv->pts[i].hi = fmax(percentile(v, m, 0.975), cv->pts[i].value);
			}
		}
		{
			size_t m = 0;

			for (uint32_t j = 0; j < nboot; j++)
				if (!isnan(bs[j]))
					bs[m++] = bs[j];
			qsort(bs, m, sizeof(*bs), dbl_cmp);
			cv->slope_lo = m ? fmin(percentile(bs, m, 0.025), slope) : slope;
			cv->slope_hi = m ? fmax(percentile(bs, m, 0.975), slope) : slope;
		}
	} else {
		cv->slope_lo = cv->slope_hi = slope;
	}
	point_intervals(cv, u, n, correct ? cv->factor : 1.0, correct ? &ph : NULL);
	/* falling, and significantly: the whole interval below -CZ_CONTENTION_SLOPE */
	cv->contention = cv->slope_hi < -CZ_CONTENTION_SLOPE;
	curve_advise(a, cv, mean_len);
out:
	free(u);
	free(idx);
	free(bv);
	free(bs);
	return rc;
}

static int curve_rank(const void *a, const void *b)
{
	const struct cz_curve *x = a, *y = b;

	if (x->drawn != y->drawn)
		return x->drawn ? -1 : 1;
	if (x->drawn && x->slope != y->slope)
		return x->slope > y->slope ? -1 : 1;
	if (!x->drawn && x->nexp != y->nexp)
		return x->nexp > y->nexp ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->point < y->point ? -1 : x->point > y->point;
}

static void analysis_release(struct cz_analysis *a)
{
	free(a->curves);
	memset(a, 0, sizeof(*a));
}

static int analysis_build(struct cz_analysis *a, const struct rep_profile *p)
{
	const struct rep_causal *cz = p->causal;
	struct cz_obs *obs = NULL;
	uint32_t nobs = 0;
	int rc = 0;

	memset(a, 0, sizeof(*a));
	a->p = p;
	a->cz = cz;
	if (!cz || !cz->nexps)
		return 0;
	obs = malloc((size_t)cz->npds * sizeof(*obs) + 1);
	if (!obs)
		return -ENOMEM;
	/* the time the experiments took: first start to last end, per run */
	for (uint32_t r = 0; r < p->nruns; r++) {
		uint64_t from = UINT64_MAX, to = 0;

		for (uint32_t i = 0; i < cz->nexps; i++) {
			const struct cz_exp *e = &cz->exps[i];

			if (e->run != r)
				continue;
			if (e->time - (e->time > e->duration ? e->duration : e->time) < from)
				from = e->time - (e->time > e->duration ? e->duration : e->time);
			if (e->time > to)
				to = e->time;
		}
		if (to > from)
			a->span_s += (double)(to - from) / 1e9;
	}
	for (uint32_t i = 0; i < cz->nexps; i++) {
		const struct cz_exp *e = &cz->exps[i];

		if (!e->file)
			continue; /* no selected line: nothing to attribute */
		for (uint32_t j = 0; j < e->npts; j++) {
			const struct cz_pdelta *d = &cz->pds[e->first + j];

			obs[nobs++] = (struct cz_obs){ e->file, e->line, d->point, e->speedup,
						       i, e->first + j, low_visits(cz, e, d) };
		}
	}
	qsort(obs, nobs, sizeof(*obs), obs_cmp);
	for (uint32_t i = 0; i < nobs;) {
		uint32_t j = i;

		while (j < nobs && obs[j].file == obs[i].file && obs[j].line == obs[i].line &&
		       obs[j].point == obs[i].point)
			j++;
		if (rep_grow32((void **)&a->curves, &a->cap, a->ncurves, sizeof(*a->curves))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = curve_build(a, &a->curves[a->ncurves], &obs[i], j - i);
		if (rc)
			goto out;
		a->ndrawn += a->curves[a->ncurves].drawn;
		a->ncurves++;
		i = j;
	}
	if (a->ncurves)
		qsort(a->curves, a->ncurves, sizeof(*a->curves), curve_rank);
out:
	free(obs);
	return rc;
}

/* ---- output helpers ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s && s[1] ? s + 1 : path ? path
					: "?";
}

static const char *S(const struct cz_analysis *a, uint32_t id)
{
	const char *s = rep_str(a->p, id);

	return s ? s : "?";
}

static const char *kind_name(enum exp_measure k)
{
	return k == EXP_MEASURE_LATENCY ? "latency" : "throughput";
}

/* How the experiments were run: the first run that says so. */
static const struct cz_run *info_of(const struct cz_analysis *a, uint32_t *nruns)
{
	const struct cz_run *first = NULL;

	*nruns = 0;
	for (uint32_t i = 0; i < a->cz->nruns; i++) {
		if (!a->cz->runs[i].has_info)
			continue;
		if (!first)
			first = &a->cz->runs[i];
		(*nruns)++;
	}
	return first;
}

/* The lines in scope: the recorder's count when its header had one, else
 * the distinct lines of the line_samples records (every in-scope line a
 * sample fell on: the candidates experiments drew from). psup writes the
 * header before any sample, with 0. */
static uint64_t scope_lines(const struct cz_analysis *a, const struct cz_run *info)
{
	const struct rep_causal *cz = a->cz;
	struct psup_u64map seen;
	uint64_t n;

	if (info && info->scope_lines)
		return info->scope_lines;
	psup_u64map_init(&seen);
	for (uint32_t i = 0; i < cz->nls; i++)
		psup_u64map_upsert(&seen, ((uint64_t)cz->ls[i].file << 32 | cz->ls[i].line) + 1, NULL);
	n = seen.len;
	psup_u64map_release(&seen);
	return n;
}

/* A point's visits (latency: arrivals) and departures over the runs: a run's
 * latest progress_totals when it wrote one, else what its experiments saw. */
static void point_counts(const struct cz_analysis *a, uint32_t point, uint64_t *visits,
			 uint64_t *departures)
{
	const struct rep_causal *cz = a->cz;

	*visits = *departures = 0;
	for (uint32_t r = 0; r < a->p->nruns; r++) {
		bool found = false;

		for (uint32_t j = 0; j < cz->ntotals && !found; j++) {
			if (cz->totals[j].run != r || cz->totals[j].point != point)
				continue;
			*visits = rep_sat_add(*visits, cz->totals[j].visits);
			*departures = rep_sat_add(*departures, cz->totals[j].departures);
			found = true;
		}
		for (uint32_t i = 0; i < cz->nexps && !found; i++) {
			const struct cz_exp *e = &cz->exps[i];

			if (e->run != r)
				continue;
			for (uint32_t j = 0; j < e->npts; j++) {
				const struct cz_pdelta *d = &cz->pds[e->first + j];

				if (d->point != point)
					continue;
				*visits = rep_sat_add(*visits, cz->points[point].kind == EXP_MEASURE_LATENCY
								       ? d->arrivals
								       : d->delta);
				*departures = rep_sat_add(*departures, d->departures);
			}
		}
	}
}

static void fmt_period(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000 && ns % 1000000 == 0)
		snprintf(buf, len, "%" PRIu64 " ms", ns / 1000000);
	else if (ns >= 1000)
		snprintf(buf, len, "%.1f us", (double)ns / 1000.0);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
}

/* The (weighted) fit's prediction at line speedup x. */
static double fit_at(const struct cz_curve *cv, double x)
{
	double sw = 0, mx = 0, my = 0;

	for (unsigned i = 0; i < cv->npts; i++) {
		sw += cv->pts[i].n;
		mx += cv->pts[i].n * (double)cv->pts[i].speedup;
		my += cv->pts[i].n * cv->pts[i].value;
	}
	if (!(sw > 0))
		return NAN;
	return my / sw + cv->slope * (x - mx / sw);
}

/* ---- the terminal plot ------------------------------------------------------ */

#define PLOT_W 60
#define PLOT_H 11

/* The plots show program speedups within +-PLOT_CLIP percent: a wild
 * interval (a speedup seen by one noisy experiment) would otherwise squash
 * every curve into a flat line. */
#define PLOT_CLIP 100.0

/* A small character grid: program speedup (rows) over line speedup (60
 * columns for 0..100%); ':' is the 95% interval, '*' the estimate, '-' the
 * zero line, 'v' / '^' an estimate beyond the clipped range. */
static void plot_text(FILE *out, const struct cz_curve *cv, const char *indent)
{
	char grid[PLOT_H][PLOT_W + 1];
	double ymin = 0, ymax = 0, step;

	for (unsigned i = 0; i < cv->npts; i++) {
		ymin = fmin(ymin, cv->pts[i].lo);
		ymax = fmax(ymax, cv->pts[i].hi);
	}
	ymin = fmax(ymin, -PLOT_CLIP);
	ymax = fmin(ymax, PLOT_CLIP);
	if (ymax - ymin < 2.0) {
		ymax += 1.0;
		ymin -= 1.0;
	}
	step = (ymax - ymin) / (PLOT_H - 1);
	for (int r = 0; r < PLOT_H; r++) {
		memset(grid[r], ' ', PLOT_W);
		grid[r][PLOT_W] = '\0';
	}
#define ROW(y) ((int)lround((ymax - (y)) / step))
	for (int c = 0; c < PLOT_W; c++)
		grid[ROW(0.0)][c] = '-';
	for (unsigned i = 0; i < cv->npts; i++) {
		const struct cz_cpoint *pt = &cv->pts[i];
		int c = (int)lround(pt->speedup * (PLOT_W - 1) / 100.0);
		int top = ROW(fmin(pt->hi, ymax)), bot = ROW(fmax(pt->lo, ymin));

		for (int r = top; r <= bot; r++)
			grid[r][c] = ':';
		if (pt->value > ymax)
			grid[0][c] = '^';
		else if (pt->value < ymin)
			grid[PLOT_H - 1][c] = 'v';
		else
			grid[ROW(pt->value)][c] = '*';
	}
	for (int r = 0; r < PLOT_H; r++) {
		double y = r == ROW(0.0) ? 0.0 : ymax - r * step;
		int end = PLOT_W;

		while (end > 0 && grid[r][end - 1] == ' ')
			end--;
		if (r == 0 || r == PLOT_H - 1 || r == ROW(0.0))
			fprintf(out, "%s%+7.1f%% |%.*s\n", indent, y, end, grid[r]);
		else
			fprintf(out, "%s         |%.*s\n", indent, end, grid[r]);
	}
#undef ROW
	fprintf(out, "%s         +%.*s\n", indent, PLOT_W,
		"------------------------------------------------------------");
	fprintf(out, "%s          0%%%*s50%%%*s100%%  line speedup\n", indent, PLOT_W / 2 - 4, "",
		PLOT_W / 2 - 5, "");
}

/* ---- text and markdown -------------------------------------------------------- */

static void print_curve_table(FILE *out, const struct cz_analysis *a, const struct cz_curve *cv,
			      bool md)
{
	(void)a;
	if (md) {
		fputs("| line speedup | program speedup | 95% CI | experiments |\n"
		      "|---:|---:|---:|---:|\n",
		      out);
		for (unsigned i = 0; i < cv->npts; i++) {
			const struct cz_cpoint *pt = &cv->pts[i];

			fprintf(out, "| %u%% | %+.1f%% | %+.1f%% .. %+.1f%% | %" PRIu32 " |\n", pt->speedup,
				pt->value, pt->lo, pt->hi, pt->n);
		}
		fputc('\n', out);
		return;
	}
	fputs("    line speedup  program speedup  95% CI              experiments\n", out);
	for (unsigned i = 0; i < cv->npts; i++) {
		const struct cz_cpoint *pt = &cv->pts[i];
		char ci[48];

		snprintf(ci, sizeof(ci), "[%+.1f%%, %+.1f%%]", pt->lo, pt->hi);
		fprintf(out, "    %11u%%  %+14.1f%%  %-18s  %11" PRIu32 "\n", pt->speedup, pt->value, ci,
			pt->n);
	}
}

/* A name from the program: markdown code span, or terminal-safe text. */
static void put_str(FILE *out, bool md, const char *s)
{
	if (md)
		rep_md_put(out, s, true);
	else
		rep_text_put(out, s, SIZE_MAX);
}

/* "file:line" as one name. */
static void put_site(FILE *out, bool md, const char *file, uint32_t line)
{
	char buf[320];

	snprintf(buf, sizeof(buf), "%.256s:%" PRIu32, file, line);
	put_str(out, md, buf);
}

/* A duration for a person: seconds, minutes or hours. */
static void fmt_secs(char *buf, size_t len, double s)
{
	if (s < 90)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 90 * 60)
		snprintf(buf, len, "%.0f min", s / 60);
	else
		snprintf(buf, len, "%.1f h", s / 3600);
}

static bool curve_is_wide(const struct cz_curve *cv)
{
	return cv->need_exps > cv->nexp;
}

/* "interval +-18.0 pts at 100%: about 4.0x the experiments (28) for +-9.0
 * (~3 min more at this rate, ~40 s with --line a.c:10)": how much longer to
 * run (text: the parenthesis on a line of its own). */
static void put_advice(FILE *out, const struct cz_analysis *a, const struct cz_curve *cv,
		       enum rep_format f)
{
	double k = (double)cv->need_exps / cv->nexp;
	const char *pm = f == REP_FORMAT_HTML ? "&plusmn;" : "+-";
	char more[32], line[32], site[320];

	fmt_secs(more, sizeof(more), cv->more_s);
	fmt_secs(line, sizeof(line), cv->more_s_line);
	snprintf(site, sizeof(site), "%.256s:%" PRIu32, base_name(S(a, cv->file)), cv->line);
	fprintf(out, "interval %s%.1f pts at 100%%: about %.*fx the experiments (%" PRIu32 ") for %s%.1f%s(",
		pm, cv->half_width, k < 10 ? 1 : 0, k, cv->need_exps, pm, cv->target_half_width,
		f == REP_FORMAT_TEXT ? "\n      " : " ");
	if (cv->more_s > 0)
		fprintf(out, "~%s more at this rate, ", more);
	fprintf(out, "~%s with --line ", line);
	if (f == REP_FORMAT_HTML)
		rep_html_put(out, site);
	else
		put_str(out, f == REP_FORMAT_MARKDOWN, site);
	fputc(')', out);
}

static void print_text(FILE *out, const struct cz_analysis *a, const struct rep_options *o)
{
	bool md = o->format == REP_FORMAT_MARKDOWN;
	const struct rep_causal *cz = a->cz;
	const struct cz_run *info;
	uint32_t ninfo, shown = 0, limit = o->top ? o->top : UINT32_MAX, detail;
	char per[32];

	info = info_of(a, &ninfo);
	fputs(md ? "## Causal profile\n\n" : "Causal profile\n", out);
	fprintf(out, md ? "- experiments: %" PRIu32 "\n" : "  experiments   %" PRIu32 "\n", cz->nexps);
	if (info) {
		fmt_period(per, sizeof(per), info->period_ns);
		fputs(md ? "- mode: " : "  mode          ", out);
		put_str(out, md, info->mode ? S(a, info->mode) : "?");
		fprintf(out, ", delay crediting at synchronization calls: %s\n",
			info->crediting ? "yes" : "no");
		fprintf(out, md ? "- sampling period: %s (delay = speedup x period)\n" : "  period        %s (delay = speedup x period)\n",
			per);
		fprintf(out, md ? "- lines in scope: %" PRIu64 "\n" : "  scope         %" PRIu64 " lines\n",
			scope_lines(a, info));
		if (info->note) {
			fputs(md ? "- note: " : "  note          ", out);
			if (md)
				rep_md_put(out, S(a, info->note), false);
			else
				rep_text_put(out, S(a, info->note), SIZE_MAX);
			fputc('\n', out);
		}
	}
	if (!md)
		fputs("  progress points\n", out);
	for (uint32_t i = 0; i < cz->npoints; i++) {
		const struct cz_point *pt = &cz->points[i];
		uint64_t visits, departures;

		point_counts(a, i, &visits, &departures);
		fputs(md ? "- progress point " : "    ", out);
		put_str(out, md, S(a, pt->name));
		if (pt->kind == EXP_MEASURE_LATENCY)
			fprintf(out, " (latency): %" PRIu64 " arrivals, %" PRIu64 " departures\n", visits,
				departures);
		else
			fprintf(out, " (throughput): %" PRIu64 " visits\n", visits);
	}
	fputc('\n', out);
	if (!cz->nexps && info && !scope_lines(a, info)) {
		/* Nothing to experiment on: not a matter of time. */
		fputs(md ? "_no experiment ran: no sample fell on a source line in scope; widen the "
			   "scope with `--scope GLOB` (source files) or `--binary-scope GLOB` (whole "
			   "images), or give the program debug info (`-g`)_\n\n"
			 : "  (no experiment ran: no sample fell on a source line in scope; widen the\n"
			   "  scope with --scope GLOB (source files) or --binary-scope GLOB (whole\n"
			   "  images), or give the program debug info (-g))\n\n",
		      out);
		return;
	}
	if (!cz->nexps) {
		fputs(md ? "_no experiment finished_\n\n"
			 : "  (no experiment finished: the program ended or was stopped before the first one did)\n\n",
		      out);
		return;
	}
	if (!a->ndrawn) {
		fputs(md ? "_no line has enough experiments for a curve yet_\n\n"
			 : "  (no line has enough experiments for a curve yet: see below)\n\n",
		      out);
	} else {
		fputs(md ? "### Lines ranked by predicted impact\n\n"
			   "| # | line | point | slope | 95% CI | fit at 100% | experiments | |\n"
			   "|---:|---|---|---:|---:|---:|---:|---|\n"
			 : "  Lines ranked by the slope of program speedup over line speedup\n"
			   "  (+1.00: every 1% of line speedup gives 1% of program speedup)\n"
			   "     #   slope  95% CI            fit@100%  exps  line (point)\n",
		      out);
		for (uint32_t i = 0; i < a->ndrawn; i++) {
			const struct cz_curve *cv = &a->curves[i];
			char lbl[96], ci[48];

			if (shown >= limit && !cv->contention)
				continue;
			shown++;
			snprintf(lbl, sizeof(lbl), "%.80s:%" PRIu32, base_name(S(a, cv->file)), cv->line);
			snprintf(ci, sizeof(ci), "[%+.2f, %+.2f]", cv->slope_lo, cv->slope_hi);
			if (md) {
				fprintf(out, "| %" PRIu32 " | ", i + 1);
				put_str(out, md, lbl);
				fputs(" | ", out);
				put_str(out, md, S(a, cz->points[cv->point].name));
				fprintf(out, " | %+.3f | %s | %+.1f%% | %" PRIu32 " | %s |\n", cv->slope, ci,
					fit_at(cv, 100), cv->nexp, cv->contention ? "contention" : "");
			} else {
				fprintf(out, "  %4" PRIu32 "  %+6.3f  %-16s  %+7.1f%%  %4" PRIu32 "  ", i + 1,
					cv->slope, ci, fit_at(cv, 100), cv->nexp);
				put_str(out, md, lbl);
				fputs(" (", out);
				put_str(out, md, S(a, cz->points[cv->point].name));
				fprintf(out, ")%s\n", cv->contention ? "  CONTENTION: the curve falls" : curve_is_wide(cv) ? "  (wide: run longer)"
															   : "");
			}
		}
		if (shown < a->ndrawn)
			fprintf(out, md ? "\n_%" PRIu32 " more lines hidden (--top)_\n" : "  (%" PRIu32 " more lines hidden: --top)\n",
				a->ndrawn - shown);
		fputc('\n', out);
		detail = a->ndrawn < 5 ? a->ndrawn : 5;
		if (o->top && o->top < detail)
			detail = o->top;
		for (uint32_t i = 0; i < a->ndrawn; i++) {
			const struct cz_curve *cv = &a->curves[i];

			if (i >= detail && !cv->contention)
				continue;
			fprintf(out, md ? "### %" PRIu32 ". " : "  %" PRIu32 ". ", i + 1);
			put_site(out, md, base_name(S(a, cv->file)), cv->line);
			if (!md) {
				fputs("  (", out);
				put_str(out, md, S(a, cv->file));
				fputc(')', out);
			}
			fputs(md ? " (point " : "  point ", out);
			put_str(out, md, S(a, cz->points[cv->point].name));
			fprintf(out, md ? ", %s)\n\n" : " (%s)\n", kind_name(cv->kind));
			fprintf(out, md ? "slope %+.3f (95%% CI %+.3f .. %+.3f), %" PRIu32 " experiments, phase correction x%.2f%s\n\n" : "    slope %+.3f (95%% CI %+.3f .. %+.3f), %" PRIu32 " experiments, phase correction x%.2f%s\n",
				cv->slope, cv->slope_lo, cv->slope_hi, cv->nexp, cv->factor,
				cv->contention ? "; the curve falls: speeding this line up slows the program (contention)" : "");
			if (cv->nclipped)
				fprintf(out, md ? "%" PRIu32 " outlier experiment%s pulled in to 3 sd of %s neighbours\n\n" : "    %" PRIu32 " outlier experiment%s pulled in to 3 sd of %s neighbours\n",
					cv->nclipped, cv->nclipped == 1 ? "" : "s",
					cv->nclipped == 1 ? "its" : "their");
			if (curve_is_wide(cv)) {
				fputs(md ? "" : "    ", out);
				put_advice(out, a, cv, o->format);
				fputs(md ? "\n\n" : "\n", out);
			}
			if (cv->base_cv > CZ_NOISY_CV)
				fprintf(out, md ? "_noisy: single 0%% experiments vary by %.0f%% (sd/mean); longer "
						  "experiments (--experiment-ms) or a quieter machine help_\n\n"
						: "    noisy: single 0%% experiments vary by %.0f%% (sd/mean); longer "
						  "experiments (--experiment-ms) or a quieter machine help\n",
					100 * cv->base_cv);
			print_curve_table(out, a, cv, md);
			if (md)
				fputs("```\n", out);
			plot_text(out, cv, md ? "" : "    ");
			fputs(md ? "```\n\n" : "\n", out);
		}
	}
	if (a->ncurves > a->ndrawn) {
		fputs(md ? "### Lines without enough experiments\n\n| line | point | experiments | missing |\n|---|---|---:|---|\n"
			 : "  Lines without enough experiments for a curve\n",
		      out);
		for (uint32_t i = a->ndrawn; i < a->ncurves; i++) {
			const struct cz_curve *cv = &a->curves[i];

			/* the most experimented first; --top bounds the list */
			if (i - a->ndrawn >= limit) {
				fprintf(out, md ? "\n_%" PRIu32 " more (--top)_\n" : "    (%" PRIu32 " more: --top)\n",
					a->ncurves - i);
				break;
			}
			fputs(md ? "| " : "    ", out);
			put_site(out, md, base_name(S(a, cv->file)), cv->line);
			fputs(md ? " | " : "  point ", out);
			put_str(out, md, S(a, cz->points[cv->point].name));
			/* why names the progress point: the binary's text */
			if (md) {
				fprintf(out, " | %" PRIu32 " | ", cv->nexp);
				rep_md_put(out, cv->why, false);
				fputs(" |\n", out);
			} else {
				fprintf(out, ": %" PRIu32 " experiment%s: ", cv->nexp, cv->nexp == 1 ? "" : "s");
				rep_text_put(out, cv->why, SIZE_MAX);
				fputc('\n', out);
			}
		}
		fputc('\n', out);
	}
}

/* ---- JSON ----------------------------------------------------------------------- */


/* A finite number, or null. */
static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.4f", v);
	else
		fputs("null", out);
}

static void json_line_label(FILE *out, const struct cz_analysis *a, const struct cz_curve *cv)
{
	char lbl[600];

	snprintf(lbl, sizeof(lbl), "%.500s:%" PRIu32, base_name(S(a, cv->file)), cv->line);
	fputs("\"line\":", out);
	rep_json_str(out, lbl);
	fputs(",\"path\":", out);
	rep_json_str(out, S(a, cv->file));
	fputs(",\"point\":", out);
	rep_json_str(out, S(a, a->cz->points[cv->point].name));
	fprintf(out, ",\"kind\":\"%s\",\"experiments\":%" PRIu32 ",\"low_visit_experiments\":%" PRIu32,
		kind_name(cv->kind), cv->nexp, cv->nlow);
}

static void print_json(FILE *out, const struct cz_analysis *a)
{
	const struct rep_causal *cz = a->cz;
	const struct cz_run *info;
	uint32_t ninfo;

	info = info_of(a, &ninfo);
	fputs(",\"causal\":{\"info\":{", out);
	fputs("\"mode\":", out);
	rep_json_str(out, info && info->mode ? S(a, info->mode) : NULL);
	fprintf(out, ",\"syscall_crediting\":%s", info && info->crediting ? "true" : "false");
	fprintf(out, ",\"period_ns\":%" PRIu64 ",\"scope_lines\":%" PRIu64,
		info ? info->period_ns : 0, scope_lines(a, info));
	fputs(",\"note\":", out);
	rep_json_str(out, info && info->note ? S(a, info->note) : NULL);
	fprintf(out, ",\"experiments\":%" PRIu32 ",\"runs\":%" PRIu32 ",\"min_speedups\":%d,"
		     "\"min_experiments\":%d,\"min_visits\":%d,\"bootstrap\":%d,\"contention_slope\":%.2f,"
		     "\"outlier_sd\":%.1f,\"experiment_seconds\":",
		cz->nexps, a->p->nruns, CZ_MIN_SPEEDUPS, CZ_MIN_EXPERIMENTS, CZ_MIN_VISITS, CZ_BOOTSTRAP,
		-CZ_CONTENTION_SLOPE, CZ_CLIP);
	json_num(out, a->span_s);
	fputc('}', out);
	fputs(",\"progress_points\":[", out);
	for (uint32_t i = 0; i < cz->npoints; i++) {
		const struct cz_point *pt = &cz->points[i];
		uint64_t visits, departures;

		point_counts(a, i, &visits, &departures);
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		rep_json_str(out, S(a, pt->name));
		fprintf(out, ",\"kind\":\"%s\",\"visits\":%" PRIu64, kind_name(pt->kind), visits);
		if (pt->kind == EXP_MEASURE_LATENCY)
			fprintf(out, ",\"departures\":%" PRIu64, departures);
		fputc('}', out);
	}
	fputs("],\"lines\":[", out);
	for (uint32_t i = 0; i < a->ndrawn; i++) {
		const struct cz_curve *cv = &a->curves[i];

		fputs(i ? ",{" : "{", out);
		json_line_label(out, a, cv);
		fputs(",\"slope\":", out);
		json_num(out, cv->slope);
		fputs(",\"slope_ci_low\":", out);
		json_num(out, cv->slope_lo);
		fputs(",\"slope_ci_high\":", out);
		json_num(out, cv->slope_hi);
		fprintf(out, ",\"contention\":%s,\"phase_correction\":", cv->contention ? "true" : "false");
		json_num(out, cv->factor);
		fputs(",\"baseline_cv\":", out);
		json_num(out, cv->base_cv);
		fprintf(out, ",\"outliers\":%" PRIu32 ",\"experiment_sd\":", cv->nclipped);
		json_num(out, cv->df ? cv->sigma : NAN);
		fputs(",\"ci_half_width\":", out);
		json_num(out, cv->half_width);
		fputs(",\"ci_target_half_width\":", out);
		json_num(out, cv->target_half_width);
		fprintf(out, ",\"experiments_needed\":%" PRIu32 ",\"more_seconds\":", cv->need_exps);
		json_num(out, cv->more_s);
		fputs(",\"more_seconds_fixed_line\":", out);
		json_num(out, cv->more_s_line);
		fputs(",\"curve\":[", out);
		for (unsigned j = 0; j < cv->npts; j++) {
			const struct cz_cpoint *pt = &cv->pts[j];

			fprintf(out, "%s{\"speedup\":%u,\"program_speedup\":", j ? "," : "", pt->speedup);
			json_num(out, pt->value);
			fputs(",\"ci_low\":", out);
			json_num(out, pt->lo);
			fputs(",\"ci_high\":", out);
			json_num(out, pt->hi);
			fprintf(out, ",\"experiments\":%" PRIu32 "}", pt->n);
		}
		fputs("]}", out);
	}
	fputs("],\"insufficient\":[", out);
	for (uint32_t i = a->ndrawn; i < a->ncurves; i++) {
		const struct cz_curve *cv = &a->curves[i];

		fputs(i > a->ndrawn ? ",{" : "{", out);
		json_line_label(out, a, cv);
		fputs(",\"missing\":", out);
		rep_json_str(out, cv->why);
		fputc('}', out);
	}
	fputs("]}", out);
}

/* ---- HTML with inline SVG --------------------------------------------------------- */

#define SVG_W 520
#define SVG_H 300
#define SVG_L 60 /* left margin */
#define SVG_R 20
#define SVG_T 20
#define SVG_B 45

static void svg_plot(FILE *out, const struct cz_curve *cv)
{
	double ymin = 0, ymax = 0, ystep;
	const double pw = SVG_W - SVG_L - SVG_R, ph = SVG_H - SVG_T - SVG_B;

	for (unsigned i = 0; i < cv->npts; i++) {
		ymin = fmin(ymin, cv->pts[i].lo);
		ymax = fmax(ymax, cv->pts[i].hi);
	}
	ymin = fmax(ymin, -PLOT_CLIP);
	ymax = fmin(ymax, PLOT_CLIP);
	/* round the axis out to a step of 1, 2, 5 x 10^k, 4 to 8 ticks */
	{
		double span = fmax(ymax - ymin, 1.0), mag = pow(10, floor(log10(span / 5)));

		ystep = mag;
		if (span / ystep > 8)
			ystep = 2 * mag;
		if (span / ystep > 8)
			ystep = 5 * mag;
		if (span / ystep > 8)
			ystep = 10 * mag;
		ymin = floor(ymin / ystep) * ystep;
		ymax = ceil(ymax / ystep) * ystep;
		if (ymax - ymin < ystep) {
			ymax += ystep;
		}
	}
#define X(v) (SVG_L + (v) / 100.0 * pw)
#define Y(v) (SVG_T + (ymax - fmax(fmin((v), ymax), ymin)) / (ymax - ymin) * ph)
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		     "viewBox=\"0 0 %d %d\" role=\"img\">\n",
		SVG_W, SVG_H, SVG_W, SVG_H);
	for (double y = ymin; y <= ymax + ystep / 2; y += ystep) {
		fprintf(out, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"%s\"/>\n", SVG_L,
			X(100), Y(y), Y(y), fabs(y) < ystep / 2 ? "zero" : "grid");
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">%+g%%</text>\n", SVG_L - 6,
			Y(y) + 4, fabs(y) < ystep / 2 ? 0.0 : y);
	}
	for (int x = 0; x <= 100; x += 25) {
		fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" class=\"grid\"/>\n",
			X(x), X(x), SVG_T, Y(ymin));
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"xl\">%d%%</text>\n", X(x),
			Y(ymin) + 16, x);
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">line speedup</text>\n",
		X(50), SVG_H - 6);
	fprintf(out, "<text transform=\"translate(14,%.1f) rotate(-90)\" class=\"xl\">program speedup</text>\n",
		SVG_T + ph / 2);
	/* the 95% band: up along the highs, back along the lows */
	fputs("<polygon class=\"band\" points=\"", out);
	for (unsigned i = 0; i < cv->npts; i++)
		fprintf(out, "%.1f,%.1f ", X(cv->pts[i].speedup), Y(cv->pts[i].hi));
	for (unsigned i = cv->npts; i-- > 0;)
		fprintf(out, "%.1f,%.1f ", X(cv->pts[i].speedup), Y(cv->pts[i].lo));
	fputs("\"/>\n", out);
	/* the fit the ranking uses, dashed */
	if (isfinite(cv->slope))
		fprintf(out, "<line class=\"fit\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			X(0), Y(fit_at(cv, 0)), X(100), Y(fit_at(cv, 100)));
	fputs("<polyline class=\"curve\" points=\"", out);
	for (unsigned i = 0; i < cv->npts; i++)
		fprintf(out, "%.1f,%.1f ", X(cv->pts[i].speedup), Y(cv->pts[i].value));
	fputs("\"/>\n", out);
	for (unsigned i = 0; i < cv->npts; i++)
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>%u%%: %+.1f%% "
			     "[%+.1f%%, %+.1f%%], %" PRIu32 " experiments</title></circle>\n",
			X(cv->pts[i].speedup), Y(cv->pts[i].value), cv->pts[i].speedup,
			cv->pts[i].value, cv->pts[i].lo, cv->pts[i].hi, cv->pts[i].n);
#undef X
#undef Y
	fputs("</svg>\n", out);
}

/* The plots and tables, for the causal page and for the whole-report page
 * (rep_causal_html_body()). */
static void print_html_body(FILE *out, const struct cz_analysis *a, const struct rep_options *o)
{
	const struct rep_causal *cz = a->cz;
	const struct cz_run *info;
	uint32_t ninfo, limit = o->top ? o->top : UINT32_MAX;
	char per[32];

	info = info_of(a, &ninfo);
	fputs("<p>", out);
	fprintf(out, "%" PRIu32 " experiments", cz->nexps);
	if (info) {
		fmt_period(per, sizeof(per), info->period_ns);
		fputs(", ", out);
		rep_html_put(out, info->mode ? S(a, info->mode) : "?");
		fprintf(out, " mode, delay crediting at synchronization calls: %s, sampling period %s, "
			     "%" PRIu64 " lines in scope",
			info->crediting ? "yes" : "no", per, scope_lines(a, info));
	}
	fputs(".</p>\n", out);
	if (info && info->note) {
		fputs("<p><b>Note:</b> ", out);
		rep_html_put(out, S(a, info->note));
		fputs("</p>\n", out);
	}
	fputs("<p>Each plot shows the predicted program speedup (vertical) if the line were made "
	      "faster by the horizontal amount; the band is the 95% confidence interval (bootstrap "
	      "over experiments), the dashed line the least-squares fit whose slope ranks the "
	      "lines. Values beyond &plusmn;100% are drawn at the edge.</p>\n",
	      out);
	if (!a->ndrawn)
		fputs("<p>No line has enough experiments for a curve yet.</p>\n", out);
	for (uint32_t i = 0, shown = 0; i < a->ndrawn; i++) {
		const struct cz_curve *cv = &a->curves[i];

		if (shown >= limit && !cv->contention)
			continue;
		shown++;
		fprintf(out, "<h3>%" PRIu32 ". <code>", i + 1);
		rep_html_put(out, base_name(S(a, cv->file)));
		fprintf(out, ":%" PRIu32 "</code> &mdash; point <code>", cv->line);
		rep_html_put(out, S(a, cz->points[cv->point].name));
		fprintf(out, "</code> (%s)</h3>\n<p><code>", kind_name(cv->kind));
		rep_html_put(out, S(a, cv->file));
		fprintf(out, "</code><br>slope %+.3f (95%% CI %+.3f to %+.3f), %" PRIu32 " experiments, phase correction &times;%.2f",
			cv->slope, cv->slope_lo, cv->slope_hi, cv->nexp, cv->factor);
		if (cv->contention)
			fputs(" <span class=\"contention\">contention: the curve falls</span>", out);
		if (cv->nclipped)
			fprintf(out, "<br>%" PRIu32 " outlier experiment%s pulled in to 3 sd of %s neighbours",
				cv->nclipped, cv->nclipped == 1 ? "" : "s", cv->nclipped == 1 ? "its" : "their");
		if (curve_is_wide(cv)) {
			fputs("<br>", out);
			put_advice(out, a, cv, REP_FORMAT_HTML);
		}
		fputs("</p>\n", out);
		svg_plot(out, cv);
	}
	if (a->ncurves > a->ndrawn) {
		fputs("<h3>Lines without enough experiments</h3>\n<table>\n<tr><th class=\"l\">line</th>"
		      "<th class=\"l\">point</th><th>experiments</th><th class=\"l\">missing</th></tr>\n",
		      out);
		for (uint32_t i = a->ndrawn; i < a->ncurves; i++) {
			const struct cz_curve *cv = &a->curves[i];

			fputs("<tr><td class=\"l\"><code>", out);
			rep_html_put(out, base_name(S(a, cv->file)));
			fprintf(out, ":%" PRIu32 "</code></td><td class=\"l\"><code>", cv->line);
			rep_html_put(out, S(a, cz->points[cv->point].name));
			fprintf(out, "</code></td><td>%" PRIu32 "</td><td class=\"l\">", cv->nexp);
			rep_html_put(out, cv->why);
			fputs("</td></tr>\n", out);
		}
		fputs("</table>\n", out);
	}
}

int rep_causal_html_body(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	struct cz_analysis a;
	int rc;

	if (!p->causal)
		return 0;
	rc = analysis_build(&a, p);
	if (!rc)
		print_html_body(out, &a, o);
	if (!rc && ferror(out))
		rc = -EIO;
	analysis_release(&a);
	return rc;
}

/* ---- Coz's profile format ------------------------------------------------------ */

/* A Coz location, "FILE:LINE": JSON Lines as a JSON string, the legacy
 * form as text (a tab or newline in the name would end the field). */
static void coz_loc(FILE *out, bool jsonl, const char *file, uint32_t line)
{
	char *s;

	if (!jsonl) {
		rep_text_put(out, file, SIZE_MAX);
		fprintf(out, ":%" PRIu32, line);
		return;
	}
	if (asprintf(&s, "%s:%" PRIu32, file, line) < 0) {
		/* the stream's error makes the report fail */
		fputs("\"?\"", out);
		return;
	}
	rep_json_str(out, s);
	free(s);
}

/*
 * A latency point's "difference", the number in flight Coz's viewer puts in
 * Little's law (W = difference / (arrivals / duration), the differences
 * averaged weighted by duration): Coz logs the count at the experiment's
 * end, one instant of wall time. psup's measured mean over the experiment's
 * virtual time (delays taken out) is the number its own report uses, and
 * with it the viewer computes the report's W_s = sum(L x effective) /
 * sum(arrivals). The legacy form's viewer reads integers (parseInt): the
 * mean is rounded at random, up with the probability of its fraction, so
 * the rounding adds noise and no bias (a fixed seed: the output is
 * deterministic). Records without the mean: the count at the end.
 */
static int64_t coz_in_flight(const struct cz_pdelta *d, uint64_t *rng)
{
	if (isnan(d->mean_in_flight))
		return d->in_flight + (int64_t)d->arrivals - (int64_t)d->departures;

	double lo = floor(d->mean_in_flight), u = (double)(psup_rand_next(rng) >> 11) * 0x1p-53;

	return (int64_t)lo + (u < d->mean_in_flight - lo);
}

/*
 * Coz's two profile forms (libcoz/profiler.cpp, progress_point.h), which
 * `coz plot` reads: the legacy tab-separated "key=value" lines, and the
 * JSON Lines records Coz writes by default since 0.2.5 (profile.jsonl:
 * the same records as objects, "selected_samples" for
 * "selected-samples"). Per run a "startup" record, per experiment an
 * "experiment" whose duration is the EFFECTIVE duration (Coz logs elapsed
 * minus delays) followed by one record per point, then "runtime" and the
 * per-line "samples" totals. Latency "difference": coz_in_flight().
 */
static void print_coz(FILE *out, const struct cz_analysis *a, bool jsonl)
{
	const struct rep_causal *cz = a->cz;
	uint64_t rng = CZ_SEED;

	for (uint32_t r = 0; r < a->p->nruns; r++) {
		const struct rep_run *run = &a->p->runs[r];
		uint64_t last = run->mono_ns;
		bool any = false;

		for (uint32_t i = 0; i < cz->nexps; i++)
			any |= cz->exps[i].run == r;
		for (uint32_t i = 0; i < cz->nls && !any; i++)
			any |= cz->ls[i].run == r;
		if (!any)
			continue;
		fprintf(out, jsonl ? "{\"type\":\"startup\",\"time\":%" PRIu64 "}\n" : "startup\ttime=%" PRIu64 "\n",
			run->mono_ns);
		for (uint32_t i = 0; i < cz->nexps; i++) {
			const struct cz_exp *e = &cz->exps[i];
			bool low = false;

			if (e->run != r)
				continue;
			if (e->time > last)
				last = e->time;
			/* Coz logs an experiment only when each of its points saw
			 * ExperimentTargetDelta (5) visits (libcoz/profiler.cpp):
			 * the report leaves the others out too. */
			for (uint32_t j = 0; j < e->npts; j++)
				low |= low_visits(cz, e, &cz->pds[e->first + j]);
			if (low)
				continue;
			fputs(jsonl ? "{\"type\":\"experiment\",\"selected\":" : "experiment\tselected=", out);
			coz_loc(out, jsonl, e->file ? S(a, e->file) : "<none>", e->line);
			fprintf(out,
				jsonl ? ",\"speedup\":%.2f,\"duration\":%" PRIu64 ",\"selected_samples\":%" PRIu64 "}\n"
				      : "\tspeedup=%.2f\tduration=%" PRIu64 "\tselected-samples=%" PRIu64 "\n",
				e->speedup / 100.0, eff_duration(e), e->selected);
			for (uint32_t j = 0; j < e->npts; j++) {
				const struct cz_pdelta *d = &cz->pds[e->first + j];
				const struct cz_point *pt = &cz->points[d->point];
				bool lat = pt->kind == EXP_MEASURE_LATENCY;

				if (jsonl) {
					fputs(lat ? "{\"type\":\"latency-point\",\"name\":" : "{\"type\":\"throughput-point\",\"name\":", out);
					rep_json_str(out, S(a, pt->name));
				} else {
					fputs(lat ? "latency-point\tname=" : "throughput-point\tname=", out);
					rep_text_put(out, S(a, pt->name), SIZE_MAX);
				}
				if (lat) {
					fprintf(out,
						jsonl ? ",\"arrivals\":%" PRIu64 ",\"departures\":%" PRIu64 ",\"difference\":"
						      : "\tarrivals=%" PRIu64 "\tdepartures=%" PRIu64 "\tdifference=",
						d->arrivals, d->departures);
					/* JSON reads a fraction; the legacy viewer an integer */
					if (jsonl && !isnan(d->mean_in_flight))
						fprintf(out, "%.3f}\n", d->mean_in_flight);
					else
						fprintf(out, "%" PRId64 "%s\n", coz_in_flight(d, &rng), jsonl ? "}" : "");
				} else {
					fprintf(out, jsonl ? ",\"delta\":%" PRIu64 "}\n" : "\tdelta=%" PRIu64 "\n", d->delta);
				}
			}
		}
		for (uint32_t i = 0; i < cz->nruns; i++)
			if (cz->runs[i].run == r && cz->runs[i].ls_time > last)
				last = cz->runs[i].ls_time;
		if (run->end_time > last)
			last = run->end_time;
		fprintf(out, jsonl ? "{\"type\":\"runtime\",\"time\":%" PRIu64 "}\n" : "runtime\ttime=%" PRIu64 "\n",
			last - run->mono_ns);
		for (uint32_t i = 0; i < cz->nls; i++)
			if (cz->ls[i].run == r && cz->ls[i].count) {
				fputs(jsonl ? "{\"type\":\"samples\",\"location\":" : "samples\tlocation=", out);
				coz_loc(out, jsonl, S(a, cz->ls[i].file), cz->ls[i].line);
				fprintf(out, jsonl ? ",\"count\":%" PRIu64 "}\n" : "\tcount=%" PRIu64 "\n", cz->ls[i].count);
			}
	}
}

int rep_causal_print(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	struct cz_analysis a;
	int rc;

	if (!p->causal) {
		/* a view asked for on a file without experiments */
		if (o->format == REP_FORMAT_TEXT)
			fputs("Causal profile\n  (no causal records: record with psup run -p, --latency, "
			      "--causal or --runs)\n\n",
			      out);
		else if (o->format == REP_FORMAT_MARKDOWN)
			fputs("## Causal profile\n\n_no causal records_\n\n", out);
		return 0;
	}
	rc = analysis_build(&a, p);
	if (rc)
		goto out;
	switch (o->format) {
	case REP_FORMAT_JSON:
		print_json(out, &a);
		break;
	case REP_FORMAT_HTML:
		print_html_body(out, &a, o);
		break;
	case REP_FORMAT_COZ:
	case REP_FORMAT_COZ_JSONL:
		print_coz(out, &a, o->format == REP_FORMAT_COZ_JSONL);
		break;
	case REP_FORMAT_TEXT:
	case REP_FORMAT_MARKDOWN:
	default:
		print_text(out, &a, o);
		break;
	}
	if (ferror(out))
		rc = -EIO;
out:
	analysis_release(&a);
	return rc;
}
