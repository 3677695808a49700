/*
 * The causal profile: experiment records written, read back and turned into
 * curves whose answers are computed by hand below (program speedup, phase
 * correction, Little's law, end-to-end runs, contention, what is missing),
 * every output format, and the reader on cut and corrupted causal records.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-causal-XXXXXX";
static FILE *devnull;

#define MS 1000000ULL
#define S_ 1000000000ULL
#define START (100 * S_) /* header mono_ns */

struct exp_spec {
	const char *file;
	unsigned line, speedup;
	uint64_t duration, delay, selected;
	const char *point;
	bool latency;
	uint64_t delta, arrivals, departures;
	int64_t in_flight;
	bool e2e;
};

/*
 * Hand-computed answers (effective duration = duration - delay):
 *  a.c:10 "ops": 0%: 1 s / 100 visits = 10 ms; 50%: 0.9 s / 100 = 9 ms
 *     -> (10 - 9) / 10 = +10%; 100%: 0.8 s / 100 = 8 ms -> +20%.
 *     Fit over (0,0) (50,10) (100,20): slope 0.2. Identical repeats: the
 *     bootstrap interval is the point itself.
 *  b.c:20 "ops": the same measurements, but the line ran during half of the
 *     run (phase correction, eq. 8): t_obs = 7.2 s of experiments (their
 *     durations: delays inserted do not change how often the line is
 *     sampled) with s_obs = 600 samples in the line; s = 270 samples over
 *     the run; T = the run's time up to the line_samples record = 6.48 s ->
 *     f = (7.2 / 600) * (270 / 6.48) = 0.5: +5%, +10%, slope 0.1.
 *  c.c:30 "req" (latency): W = sum(mean in flight x eff) / arrivals;
 *     0%: in flight 10, 100 in and 100 out in 1 s: W = 10 x 1 s / 100 =
 *     100 ms; 50%: in flight 8: 80 ms -> +20%; 100%: starts at 4 with 100 in
 *     and 96 out, so the mean in flight is 4 + 4/2 = 6: 60 ms -> +40%.
 *     Latency falls: the program speedup is positive. Slope 0.4.
 *  l.c:35 "req" (latency) as c.c:30, with the mean in flight measured over
 *     time recorded (5, 4, 3 while start and end say 10 throughout): W =
 *     50, 40 and 30 ms -> +20%, +40%. The 100% mean comes from two
 *     experiments, 7 and -1 (a short experiment's delays taken out can
 *     exceed its integral): summed as they are, (7 - 1) x 1 s / 200 = 30
 *     ms; clamped one by one they would read 35 ms, +30%.
 *  d.c:40 "ops": 50% takes 1.1 s per 100 visits, 100% 1.2 s: -10%, -20%,
 *     slope -0.2 with the whole interval below 0: contention.
 *  h.c:80 "ops": noisy repeats (90/110 at 0%), so the interval has width,
 *     and an experiment with 3 visits, which is left out (fewer than 5);
 *     the slope is a fit weighted by the experiments behind each point.
 *  m.c:5 end-to-end runs (--runs): 0% runs of 2 s, 50% 1.9 s, 100% 1.8 s:
 *     +5%, +10% (no phase correction for whole runs), point "end-to-end".
 *  e.c:50: only 50% experiments: no baseline. f.c:60: 0% and 50%: two
 *  speedup values. g.c:70: three experiments. i.c:90: the baseline saw no
 *  visits.
 */
static const struct exp_spec exps[] = {
	{ "/src/a.c", 10, 0, 1 * S_, 0, 50, "ops", false, 100, 0, 0, 0, false },
	{ "/src/a.c", 10, 0, 1 * S_, 0, 50, "ops", false, 100, 0, 0, 0, false },
	{ "/src/a.c", 10, 50, 1200 * MS, 300 * MS, 50, "ops", false, 100, 0, 0, 0, false },
	{ "/src/a.c", 10, 50, 1200 * MS, 300 * MS, 50, "ops", false, 100, 0, 0, 0, false },
	{ "/src/a.c", 10, 100, 1400 * MS, 600 * MS, 50, "ops", false, 100, 0, 0, 0, false },
	{ "/src/a.c", 10, 100, 1400 * MS, 600 * MS, 50, "ops", false, 100, 0, 0, 0, false },

	{ "/src/b.c", 20, 0, 1 * S_, 0, 100, "ops", false, 100, 0, 0, 0, false },
	{ "/src/b.c", 20, 0, 1 * S_, 0, 100, "ops", false, 100, 0, 0, 0, false },
	{ "/src/b.c", 20, 50, 1200 * MS, 300 * MS, 100, "ops", false, 100, 0, 0, 0, false },
	{ "/src/b.c", 20, 50, 1200 * MS, 300 * MS, 100, "ops", false, 100, 0, 0, 0, false },
	{ "/src/b.c", 20, 100, 1400 * MS, 600 * MS, 100, "ops", false, 100, 0, 0, 0, false },
	{ "/src/b.c", 20, 100, 1400 * MS, 600 * MS, 100, "ops", false, 100, 0, 0, 0, false },

	{ "/src/c.c", 30, 0, 1 * S_, 0, 0, "req", true, 0, 100, 100, 10, false },
	{ "/src/c.c", 30, 0, 1 * S_, 0, 0, "req", true, 0, 100, 100, 10, false },
	{ "/src/c.c", 30, 50, 1 * S_, 0, 0, "req", true, 0, 100, 100, 8, false },
	{ "/src/c.c", 30, 100, 1 * S_, 0, 0, "req", true, 0, 100, 96, 4, false },

	{ "/src/d.c", 40, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/d.c", 40, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/d.c", 40, 50, 1400 * MS, 300 * MS, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/d.c", 40, 100, 1800 * MS, 600 * MS, 0, "ops", false, 100, 0, 0, 0, false },

	{ "/src/h.c", 80, 0, 1 * S_, 0, 0, "ops", false, 90, 0, 0, 0, false },
	{ "/src/h.c", 80, 0, 1 * S_, 0, 0, "ops", false, 110, 0, 0, 0, false },
	{ "/src/h.c", 80, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/h.c", 80, 50, 1 * S_, 0, 0, "ops", false, 105, 0, 0, 0, false },
	{ "/src/h.c", 80, 50, 1 * S_, 0, 0, "ops", false, 115, 0, 0, 0, false },
	{ "/src/h.c", 80, 100, 1 * S_, 0, 0, "ops", false, 120, 0, 0, 0, false },
	{ "/src/h.c", 80, 100, 1 * S_, 0, 0, "ops", false, 130, 0, 0, 0, false },
	/* 3 visits in a second: fewer than 5, left out (it would make 100% slower) */
	{ "/src/h.c", 80, 100, 1 * S_, 0, 0, "ops", false, 3, 0, 0, 0, false },

	{ "/src/m.c", 5, 0, 2 * S_, 0, 0, NULL, false, 0, 0, 0, 0, true },
	{ "/src/m.c", 5, 0, 2 * S_, 0, 0, NULL, false, 0, 0, 0, 0, true },
	{ "/src/m.c", 5, 50, 1900 * MS, 0, 0, NULL, false, 0, 0, 0, 0, true },
	{ "/src/m.c", 5, 100, 1800 * MS, 0, 0, NULL, false, 0, 0, 0, 0, true },

	{ "/src/e.c", 50, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/e.c", 50, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/e.c", 50, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/e.c", 50, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/f.c", 60, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/f.c", 60, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/f.c", 60, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/f.c", 60, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/g.c", 70, 0, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/g.c", 70, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/g.c", 70, 100, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/i.c", 90, 0, 1 * S_, 0, 0, "ops", false, 0, 0, 0, 0, false },
	{ "/src/i.c", 90, 50, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/i.c", 90, 100, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
	{ "/src/i.c", 90, 100, 1 * S_, 0, 0, "ops", false, 100, 0, 0, 0, false },
};

/* l.c:35 (see above): speedup and recorded mean in flight per experiment. */
static const struct {
	unsigned speedup;
	double mean;
} l_means[] = { { 0, 5 }, { 0, 5 }, { 50, 4 }, { 100, 7 }, { 100, -1 } };
#define NEXPS (PSUP_ARRAY_SIZE(exps) + PSUP_ARRAY_SIZE(l_means))

/* Whether write_file's line_samples carry the 0% parts' counts (b.c:20:
 * 36 samples in 1.2 s of 0% experiments, test_zero_phase()). */
static bool with_zero;

/* File offsets where each record ends, for the truncation test. */
static size_t bounds[128];
static size_t nbounds;

static int write_file(const char *path, bool with_info)
{
	struct rep_header h = { .mode = "run", .pid = 42, .mono_ns = START, .event = "task-clock", .period = MS, .clock_event = true };
	struct rep_causal_info ci = { "run", true, MS, 123, NULL };
	struct rep_writer *w;
	struct stat st;
	int rc;

	nbounds = 0;
	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
#define W(call) \
	do { \
		rc = (call); \
		if (rc) \
			goto out; \
		if (nbounds < 128 && stat(path, &st) == 0) \
			bounds[nbounds++] = (size_t)st.st_size; \
	} while (0)
	W(rep_write_header(w, &h));
	if (with_info)
		W(rep_write_causal_info(w, &ci));
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(exps); i++) {
		const struct exp_spec *s = &exps[i];
		struct exp_point_delta pd = { s->point, s->latency ? EXP_MEASURE_LATENCY : EXP_MEASURE_THROUGHPUT,
					      s->delta, s->arrivals, s->departures, s->in_flight, 0, false };
		struct exp_experiment e = {
			.time = START + i + 1,
			.file = s->file,
			.line = s->line,
			.speedup_pct = s->speedup,
			.duration_ns = s->duration,
			.delay_ns = s->delay,
			.delays = s->delay / (MS / 2),
			.selected_samples = s->selected,
			.total_samples = 1000,
			.pause_ns = s->delay,
			.pauses = 3,
			.npoints = s->point ? 1 : 0,
			.points = &pd,
			.end_to_end = s->e2e,
		};

		W(rep_write_experiment(w, &e));
	}
	/* l.c:35: 1 s latency experiments whose start and end say 10 in flight
	 * throughout, with the mean measured over time recorded */
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(l_means); i++) {
		struct exp_point_delta pd = { "req", EXP_MEASURE_LATENCY, 0, 100, 100, 10, l_means[i].mean, true };
		struct exp_experiment e = {
			.time = START + PSUP_ARRAY_SIZE(exps) + i + 1,
			.file = "/src/l.c",
			.line = 35,
			.speedup_pct = l_means[i].speedup,
			.duration_ns = 1 * S_,
			.total_samples = 1000,
			.pauses = 3,
			.npoints = 1,
			.points = &pd,
		};

		W(rep_write_experiment(w, &e));
	}
	/* cumulative point counts, visits outside experiments included: the
	 * latest record wins */
	{
		struct exp_point_delta tot[] = { { "ops", EXP_MEASURE_THROUGHPUT, 10, 0, 0, 0, 0, false },
						 { "req", EXP_MEASURE_LATENCY, 0, 2, 1, 0, 0, false } };

		W(rep_write_progress_totals(w, START + 5, 2, tot));
		tot[0].delta = 5000;
		tot[1].arrivals = 410;
		tot[1].departures = 407;
		W(rep_write_progress_totals(w, START + 6, 2, tot));
	}
	/* T = 6.48 s: the run so far */
	W(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/b.c", 20, 999, 0, 0 }, START + 1));
	W(rep_write_line_samples_at(w,
				    &(struct exp_line_samples){ "/src/b.c", 20, 270, with_zero ? 36 : 0,
								with_zero ? 1200 * MS : 0 },
				    START + 6480 * MS));
	W(rep_write_line_samples_at(w,
				    &(struct exp_line_samples){ "/src/a.c", 10, 0, 0, with_zero ? 1200 * MS : 0 },
				    START + 6480 * MS));
#undef W
out:
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

/* Prints p into a heap string (caller frees). */
static char *render(const struct rep_profile *p, enum rep_format f, unsigned views, unsigned top)
{
	struct rep_options o = { f, views, top, 0.0, NULL };

	return fx_render_ext(p, &o, NULL);
}

/* The JSON object of the causal "lines" (or "insufficient") entry whose
 * "line" is label, as a heap string; NULL when absent. */
static char *entry(const char *json, const char *section, const char *label)
{
	char key[64], match[96];
	const char *sec, *end, *at, *stop;
	int depth = 0;

	snprintf(key, sizeof(key), "\"%s\":[", section);
	snprintf(match, sizeof(match), "{\"line\":\"%s\"", label);
	sec = strstr(json, "\"causal\":");
	if (!sec || !(sec = strstr(sec, key)))
		return NULL;
	at = strstr(sec, match);
	end = strstr(sec, "\"insufficient\":[");
	if (!at || (strcmp(section, "lines") == 0 && end && at > end))
		return NULL;
	for (stop = at; *stop; stop++) {
		depth += *stop == '{' || *stop == '[';
		depth -= *stop == '}' || *stop == ']';
		if (depth == 0)
			break;
	}
	return strndup(at, (size_t)(stop - at) + 1);
}

/* The number after "key": in s, NAN when absent. */
static double num(const char *s, const char *key)
{
	char k[64];
	const char *at;

	if (!s)
		return NAN;
	snprintf(k, sizeof(k), "\"%s\":", key);
	at = strstr(s, k);
	return at ? strtod(at + strlen(k), NULL) : NAN;
}

/* The curve point at speedup sp of an entry, as a heap string. */
static char *cpoint(const char *e, unsigned sp)
{
	char k[48];
	const char *at, *end;

	snprintf(k, sizeof(k), "{\"speedup\":%u,", sp);
	if (!e || !(at = strstr(e, k)) || !(end = strchr(at, '}')))
		return NULL;
	return strndup(at, (size_t)(end - at) + 1);
}

#define NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

static void check_curve(const char *json, const char *label, double slope, double at50,
			double at100, bool exact)
{
	char *e = entry(json, "lines", label), *p0 = cpoint(e, 0), *p50 = cpoint(e, 50),
	     *p100 = cpoint(e, 100);

	CHECK(e != NULL);
	if (!e)
		fprintf(stderr, "  no curve for %s\n", label);
	NEAR(num(e, "slope"), slope, 1e-3);
	NEAR(num(p0, "program_speedup"), 0, 1e-3);
	NEAR(num(p50, "program_speedup"), at50, 1e-3);
	NEAR(num(p100, "program_speedup"), at100, 1e-3);
	if (exact) {
		NEAR(num(p50, "ci_low"), at50, 1e-3);
		NEAR(num(p50, "ci_high"), at50, 1e-3);
		NEAR(num(e, "slope_ci_low"), slope, 1e-3);
		NEAR(num(e, "slope_ci_high"), slope, 1e-3);
	}
	free(e);
	free(p0);
	free(p50);
	free(p100);
}

static void check_missing(const char *json, const char *label, const char *why)
{
	char *e = entry(json, "insufficient", label);

	CHECK(e && strstr(e, why));
	if (!e || !strstr(e, why))
		fprintf(stderr, "  %s: expected \"%s\" in %s\n", label, why, e ? e : "(none)");
	CHECK(entry(json, "lines", label) == NULL);
	free(e);
}

static bool python_ok;

/* Checks that json parses with python3's json module. */
static void check_json_parses(const char *json)
{
	if (python_ok)
		CHECK(fx_json_parses(tmpdir, json));
}

#define COZ_VIEWER "/usr/share/coz-profiler/viewer/js/profile.js"

/*
 * Coz's own viewer code (profile.js of coz-profiler, run by node) reads the
 * --format coz output and computes the same throughput curves. For latency
 * it shows the opposite sign: it computes (W_0 - W_s) / W_0 and then negates
 * it for points it wants minimized, so a falling latency plots as a slowdown
 * (docs/causal.md, "Report formats, and Coz's viewer"). Its latency also uses the number in
 * flight at each experiment's end, not the mean over it, hence 20% at 100%
 * here where psup says 40%. And it applies no phase correction (b.c:20).
 */
static void check_coz_viewer(const char *coz)
{
	static const char js[] =
		"const fs = require('fs'), vm = require('vm');\n"
		"const ctx = {}; vm.createContext(ctx);\n"
		"vm.runInContext(fs.readFileSync('" COZ_VIEWER "', 'utf8') + '\\nthis.Profile = Profile;', ctx);\n"
		"const p = new ctx.Profile(fs.readFileSync(process.argv[2], 'utf8'), null, null, () => 0,\n"
		"  (t, m) => console.log('warning', t));\n"
		"for (const r of p.getSpeedupData(0)) for (const q of r.progress_points)\n"
		"  if (q.measurements.length) console.log(r.name, q.name, q.measurements.map(m =>\n"
		"    Math.round(m.speedup * 100) + ':' + (m.progress_speedup * 100).toFixed(2)).join(' '));\n";
	char jspath[300], cozpath[300], cmd[800], line[512], *all = NULL;
	size_t n = 0;
	FILE *f, *m;

	if (access(COZ_VIEWER, R_OK) != 0 || system("command -v node >/dev/null 2>&1") != 0) {
		printf("# node or coz-profiler's viewer missing: the coz viewer check is skipped\n");
		return;
	}
	snprintf(jspath, sizeof(jspath), "%s/view.js", tmpdir);
	snprintf(cozpath, sizeof(cozpath), "%s/profile.coz", tmpdir);
	if (!(f = fopen(jspath, "w")))
		return;
	fputs(js, f);
	fclose(f);
	if (!(f = fopen(cozpath, "w")))
		return;
	fputs(coz, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "node '%s' '%s' 2>&1", jspath, cozpath);
	f = popen(cmd, "r");
	m = open_memstream(&all, &n);
	CHECK(f && m);
	if (!f || !m)
		return;
	while (fgets(line, sizeof(line), f))
		fputs(line, m);
	CHECK_EQ_INT(pclose(f), 0);
	fclose(m);
	CHECK(all && strstr(all, "/src/a.c:10 ops 0:0.00 50:10.00 100:20.00\n"));
	CHECK(all && strstr(all, "/src/d.c:40 ops 0:0.00 50:-10.00 100:-20.00\n"));
	CHECK(all && strstr(all, "/src/m.c:5 end-to-end 0:0.00 50:5.00 100:10.00\n"));
	CHECK(all && strstr(all, "/src/b.c:20 ops 0:0.00 50:10.00 100:20.00\n"));
	CHECK(all && strstr(all, "/src/c.c:30 req 0:0.00 50:-20.00 100:-20.00\n"));
	/* psup's mean in flight where the record has it: the report's +20%
	 * and +40%, in the viewer's sign */
	CHECK(all && strstr(all, "/src/l.c:35 req 0:0.00 50:-20.00 100:-40.00\n"));
	CHECK(all && !strstr(all, "warning"));
	if (all && !strstr(all, "/src/a.c:10 ops 0:0.00 50:10.00 100:20.00\n"))
		fprintf(stderr, "coz viewer said:\n%s", all);
	free(all);
}

static void test_answers(const char *path)
{
	struct rep_profile *p;
	char err[256], *json, *json2, *e, *advice = NULL;
	const char *a, *b;

	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK(!rep_profile_has_causal(p));
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	CHECK(rep_profile_has_causal(p));
	CHECK_EQ_INT(rep_profile_nexperiments(p), NEXPS);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(json != NULL);
	if (!json)
		goto out;
	check_json_parses(json);
	check_curve(json, "a.c:10", 0.2, 10, 20, true);
	check_curve(json, "b.c:20", 0.1, 5, 10, false);
	e = entry(json, "lines", "b.c:20");
	NEAR(num(e, "phase_correction"), 0.5, 1e-3);
	free(e);
	check_curve(json, "c.c:30", 0.4, 20, 40, false);
	/* the mean in flight measured over time wins over start and end */
	check_curve(json, "l.c:35", 0.4, 20, 40, false);
	check_curve(json, "d.c:40", -0.2, -10, -20, true);
	check_curve(json, "m.c:5", 0.1, 5, 10, true);
	e = entry(json, "lines", "m.c:5");
	CHECK(e && strstr(e, "\"point\":\"end-to-end\""));
	free(e);
	e = entry(json, "lines", "d.c:40");
	CHECK(e && strstr(e, "\"contention\":true"));
	free(e);
	e = entry(json, "lines", "a.c:10");
	CHECK(e && strstr(e, "\"contention\":false") && strstr(e, "\"kind\":\"throughput\"") &&
	      strstr(e, "\"path\":\"/src/a.c\"") && strstr(e, "\"experiments\":6"));
	NEAR(num(e, "phase_correction"), 1.0, 1e-9); /* no samples in the line: uncorrected */
	NEAR(num(e, "baseline_cv"), 0, 1e-9);
	free(e);
	e = entry(json, "lines", "c.c:30");
	CHECK(e && strstr(e, "\"kind\":\"latency\""));
	free(e);
	/* h.c:80: 0% pools 300 visits in 3 s (10 ms), 50% 220 in 2 s (9.09 ms),
	 * 100% 250 in 2 s (8 ms): +9.09%, +20%; the resamples spread around */
	e = entry(json, "lines", "h.c:80");
	{
		char *p50 = cpoint(e, 50);

		NEAR(num(p50, "program_speedup"), 100.0 / 11.0, 1e-3);
		/* the fit weighs each point by its experiments: (0, 0) x3,
		 * (50, 9.09) x2, (100, 20) x2 give 0.19893 (0.2 unweighted) */
		NEAR(num(e, "slope"), 0.19893, 1e-4);
		CHECK(strstr(e, "\"experiments\":7,\"low_visit_experiments\":1,"));
		/* periods of the single 0% experiments: 11.11, 9.09, 10 ms */
		NEAR(num(e, "baseline_cv"), 0.1005, 1e-4); /* sd / mean, n - 1 */
		{
			char *p100 = cpoint(e, 100);

			NEAR(num(p100, "program_speedup"), 20, 1e-3);
			free(p100);
		}
		CHECK(num(p50, "ci_low") < num(p50, "program_speedup") - 1);
		CHECK(num(p50, "ci_high") > num(p50, "program_speedup") + 1);
		CHECK(num(e, "slope_ci_low") < num(e, "slope") && num(e, "slope_ci_high") > num(e, "slope"));
		free(p50);
	}
	free(e);
	/* how much longer: h.c:80's interval is wider than worth reading; it
	 * narrows as 1/sqrt(experiments), at the rate the recording ran them */
	e = entry(json, "lines", "h.c:80");
	{
		double hw = num(e, "ci_half_width"), target = num(e, "ci_target_half_width");
		double need = num(e, "experiments_needed"), span = num(json, "experiment_seconds");
		char want[96];

		/* the JSON's slopes have 4 decimals */
		NEAR(hw, 100 * (num(e, "slope_ci_high") - num(e, "slope_ci_low")) / 2, 0.01);
		NEAR(target, fmax(5, 100 * fabs(num(e, "slope")) / 2), 0.01);
		CHECK(hw > target);
		CHECK_EQ_INT(need, ceil(hw / target * hw / target * 7 - 1e-9));
		CHECK(span > 1.9 && span < 2.1); /* m.c's 2 s run: the first start */
		NEAR(num(e, "more_seconds"), (need - 7) * span / 7, 1e-3);
		/* --line: every experiment the line's, each 1 s */
		NEAR(num(e, "more_seconds_fixed_line"), need - 7, 1e-3);
		snprintf(want, sizeof(want), "the experiments (%.0f) for +-%.1f", need, target);
		advice = strdup(want);
	}
	free(e);
	/* a.c:10's interval is exact: nothing to wait for */
	e = entry(json, "lines", "a.c:10");
	CHECK(e && strstr(e, "\"experiments_needed\":6,\"more_seconds\":0.0000,"));
	free(e);
	/* ranked by slope: c (0.4), a (0.2), b and h, m (0.1), ..., d last */
	a = strstr(json, "{\"line\":\"c.c:30\"");
	b = strstr(json, "{\"line\":\"a.c:10\"");
	CHECK(a && b && a < b);
	a = strstr(json, "{\"line\":\"d.c:40\"");
	b = strstr(json, "\"insufficient\":");
	CHECK(a && b && a < b && !strstr(a + 1, "{\"line\":\"m.c:5\""));
	check_missing(json, "e.c:50", "no 0% (baseline) experiment");
	check_missing(json, "f.c:60", "2 speedup values with visits (need 3");
	check_missing(json, "g.c:70", "3 experiments (need 4)");
	check_missing(json, "i.c:90", "the 1 experiment at 0% saw fewer than 5 visits to ops");
	/* progress points and info */
	/* visits: the totals where written, else the sum over experiments */
	CHECK(strstr(json, "{\"name\":\"ops\",\"kind\":\"throughput\",\"visits\":5000}") != NULL);
	CHECK(strstr(json, "{\"name\":\"req\",\"kind\":\"latency\",\"visits\":410,\"departures\":407}") != NULL);
	CHECK(strstr(json, "{\"name\":\"end-to-end\",\"kind\":\"throughput\",\"visits\":4}") != NULL);
	CHECK(strstr(json, "\"mode\":\"run\",\"syscall_crediting\":true,\"period_ns\":1000000,"
			   "\"scope_lines\":123,\"note\":null,\"experiments\":52") != NULL);
	/* deterministic: the bootstrap has a fixed seed */
	json2 = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(json2 && strcmp(json, json2) == 0);
	free(json2);
	free(json);

	/* the other formats */
	json = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(json && strstr(json, "Causal profile") && strstr(json, "c.c:30") &&
	      strstr(json, "CONTENTION") && strstr(json, "no 0% (baseline) experiment") &&
	      strstr(json, "line speedup") && strstr(json, "*"));
	/* the advice in the detail, a mark in the ranking */
	CHECK(json && advice && strstr(json, advice) &&
	      strstr(json, "\n      (~5 s more at this rate, ~18 s with --line h.c:80)\n"));
	CHECK(json && strstr(json, "h.c:80 (ops)  (wide: run longer)\n") &&
	      !strstr(json, "a.c:10 (ops)  (wide"));
	free(json);
	json = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 1);
	/* --top 1: the first line and, always, the falling ones */
	CHECK(json && strstr(json, "c.c:30") && strstr(json, "d.c:40") && !strstr(json, "a.c:10 (ops)"));
	/* and the first of the four insufficient lines */
	CHECK(json && strstr(json, "(3 more: --top)"));
	free(json);
	json = render(p, REP_FORMAT_MARKDOWN, REP_VIEW_CAUSAL, 0);
	CHECK(json && strstr(json, "## Causal profile") && strstr(json, "| `c.c:30` |"));
	CHECK(json && advice && strstr(json, advice) && strstr(json, "with --line `h.c:80`)\n"));
	free(json);
	json = render(p, REP_FORMAT_HTML, 0, 0);
	CHECK(json && strncmp(json, "<!DOCTYPE html>", 15) == 0 && strstr(json, "</html>"));
	CHECK(json && strstr(json, "<br>interval &plusmn;"));
	if (json) {
		size_t nsvg = 0;

		for (const char *s = json; (s = strstr(s, "<svg")); s++)
			nsvg++;
		CHECK_EQ_INT(nsvg, 7); /* a b c d h l m */
		/* self-contained: inline scripts only (the flame graph's), no
		 * external resources; links only within the page */
		CHECK(!strstr(json, "<script src") && !strstr(json, "src=") &&
		      !strstr(json, "href=\"http") && !strstr(json, "<link") &&
		      !strstr(json, "@import") && !strstr(json, "url("));
		CHECK(strstr(json, "<section id=\"causal\">"));
	}
	free(json);
	json = render(p, REP_FORMAT_COZ, 0, 0);
	CHECK(json && strncmp(json, "startup\ttime=100000000000\n", 26) == 0);
	CHECK(json && strstr(json, "experiment\tselected=/src/a.c:10\tspeedup=0.50\tduration=900000000"
				   "\tselected-samples=50\nthroughput-point\tname=ops\tdelta=100\n"));
	/* Coz logs the number in flight at the end: 4 + 100 - 96 */
	CHECK(json && strstr(json, "experiment\tselected=/src/c.c:30\tspeedup=1.00\tduration=1000000000"
				   "\tselected-samples=0\nlatency-point\tname=req\tarrivals=100"
				   "\tdepartures=96\tdifference=8\n"));
	CHECK(json && strstr(json, "\nruntime\ttime=") && strstr(json, "samples\tlocation=/src/b.c:20\tcount=270\n") &&
	      !strstr(json, "location=/src/a.c:10"));
	if (json)
		check_coz_viewer(json);
	free(json);
out:
	free(advice);
	rep_profile_free(p);
}

/* The default report of a file without samples but with experiments prints,
 * and the view of a file without causal records says so. */
static void test_no_causal(void)
{
	struct rep_profile *p;
	char path[300], err[256], *s;
	struct rep_header h = { .mode = "attach", .pid = 7, .mono_ns = START };
	struct rep_causal_info ci = { "attach", false, MS, 9, "attach mode: no delay crediting" };
	struct rep_writer *w;

	snprintf(path, sizeof(path), "%s/none.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	CHECK(!rep_profile_has_causal(p));
	s = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "no causal records"));
	free(s);
	s = render(p, REP_FORMAT_JSON, REP_VIEW_ALL, 0);
	CHECK(s && !strstr(s, "\"causal\""));
	free(s);
	rep_profile_free(p);

	/* info, no experiment yet: the view says none finished */
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_causal_info(w, &ci), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	CHECK(rep_profile_has_causal(p));
	CHECK_EQ_INT(rep_profile_nexperiments(p), 0);
	s = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "no experiment finished") && strstr(s, "attach mode: no delay crediting"));
	CHECK(s && !strstr(s, "no sample fell on a source line in scope"));
	free(s);
	s = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "\"mode\":\"attach\",\"syscall_crediting\":false") &&
	      strstr(s, "\"lines\":[],\"insufficient\":[]"));
	if (s)
		check_json_parses(s);
	free(s);
	rep_profile_free(p);

	/* no line in scope had a sample (no debug info, a scope that misses
	 * the code): the view says so and what to do, not that time ran out */
	ci.scope_lines = 0;
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_causal_info(w, &ci), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	s = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "no sample fell on a source line in scope") && strstr(s, "--scope") &&
	      strstr(s, "--binary-scope") && strstr(s, "debug info"));
	CHECK(s && !strstr(s, "the program ended or was stopped"));
	free(s);
	s = render(p, REP_FORMAT_MARKDOWN, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "no sample fell on a source line in scope"));
	free(s);
	rep_profile_free(p);

	/* psup's header knows no scope yet (0): the lines in scope are the
	 * distinct lines of the line_samples records */
	ci.scope_lines = 0;
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_causal_info(w, &ci), 0);
	CHECK_EQ_INT(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/b.c", 20, 5, 0, 0 }, START + 1), 0);
	CHECK_EQ_INT(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/a.c", 10, 3, 0, 0 }, START + 2), 0);
	CHECK_EQ_INT(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/b.c", 20, 9, 0, 0 }, START + 3), 0);
	CHECK_EQ_INT(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/b.c", 21, 1, 0, 0 }, START + 4), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	s = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "\"scope_lines\":3,"));
	free(s);
	s = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "scope         3 lines"));
	free(s);
	/* two runs of the same lines: still 3 */
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	s = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(s && strstr(s, "\"scope_lines\":3,"));
	free(s);
	rep_profile_free(p);
}

/* Two runs merge: their experiments pool. */
static void test_merge(const char *path)
{
	struct rep_profile *p;
	char err[256], *json, *e;

	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	CHECK_EQ_INT(rep_profile_nexperiments(p), 2 * NEXPS);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(json && strstr(json, "{\"name\":\"ops\",\"kind\":\"throughput\",\"visits\":10000}"));
	e = entry(json ? json : "", "lines", "a.c:10");
	CHECK(e && strstr(e, "\"experiments\":12"));
	free(e);
	/* g.c:70 now has 6 experiments over 3 speedups: drawn, flat */
	e = entry(json ? json : "", "lines", "g.c:70");
	CHECK(e != NULL);
	NEAR(num(e, "slope"), 0, 1e-9);
	free(e);
	/* the phase correction pools both runs: the same factor */
	e = entry(json ? json : "", "lines", "b.c:20");
	NEAR(num(e, "phase_correction"), 0.5, 1e-3);
	free(e);
	free(json);
	rep_profile_free(p);
}

/* Hand-made records: bad values fail with one line, unknown types are skipped. */
static void test_schema(void)
{
	struct rep_header h = { .mode = "run", .pid = 1, .mono_ns = START };
	struct exp_point_delta pd = { "x", EXP_MEASURE_THROUGHPUT, 1, 0, 0, 0, 0, false };
	struct exp_experiment e = { .time = START + 1, .file = "/a.c", .line = 1, .speedup_pct = 105, .duration_ns = 10, .npoints = 1, .points = &pd };
	char path[300], err[256];
	struct rep_profile *p;
	struct rep_writer *w;

	snprintf(path, sizeof(path), "%s/bad.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_experiment(w, &e), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "record 2: an experiment with a speedup of 105%") && !strchr(err, '\n'));
	rep_profile_free(p);

	/* an unknown record type between two known ones: skipped */
	{
		/* {"type": "future", "x": [1]} */
		static const unsigned char fut[] = { 0xa2, 0x64, 't', 'y', 'p', 'e', 0x66, 'f', 'u', 't',
						     'u', 'r', 'e', 0x61, 'x', 0x81, 0x01 };
		size_t len;
		char *buf;
		FILE *f;

		e.speedup_pct = 0;
		CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
		CHECK_EQ_INT(rep_write_header(w, &h), 0);
		CHECK_EQ_INT(rep_writer_close(w), 0);
		f = fopen(path, "a");
		CHECK(f && fwrite(fut, 1, sizeof(fut), f) == sizeof(fut));
		if (f)
			fclose(f);
		CHECK_EQ_INT(psup_read_file(path, &buf, &len), 0);
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		CHECK_EQ_INT(rep_profile_load_buf(p, buf, len, "fut", err, sizeof(err)), 0);
		CHECK(!rep_profile_truncated(p, NULL));
		rep_profile_free(p);
		free(buf);
	}
}

/* Cuts of the file at, and a byte either side of, every record's end load
 * (a truncated tail) and print in every format; corrupted bytes load or fail
 * with one line, never crash. (test-record cuts a file with causal records
 * at every byte; here each load also runs the bootstrap, so fewer.) */
static void test_cuts_and_corruption(const char *path)
{
	static const enum rep_format fmts[] = { REP_FORMAT_TEXT, REP_FORMAT_JSON, REP_FORMAT_MARKDOWN,
						REP_FORMAT_HTML, REP_FORMAT_COZ };
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int loaded = 0, refused = 0;
	size_t len;
	char *buf;

	CHECK_EQ_INT(psup_read_file(path, &buf, &len), 0);
	if (!buf)
		return;
	for (size_t b = 0; b < nbounds * 3; b++) {
		size_t n = bounds[b / 3] + b % 3 - 1;
		struct rep_profile *p;
		char err[256];

		if (n < bounds[0] || n > len)
			continue;
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		CHECK_EQ_INT(rep_profile_load_buf(p, buf, n, "cut", err, sizeof(err)), 0);
		for (size_t f = 0; f < PSUP_ARRAY_SIZE(fmts); f++) {
			struct rep_options o = { fmts[f], REP_VIEW_ALL, 0, 0.0, NULL };

			CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		}
		rep_profile_free(p);
	}
	for (int i = 0; i < 1500; i++) {
		char *copy = malloc(len);
		struct rep_profile *p;
		char err[256];
		int k = 1 + (int)(psup_rand_next(&seed) % 4), rc;

		memcpy(copy, buf, len);
		/* past the header, into the causal records */
		while (k--)
			copy[bounds[0] + psup_rand_next(&seed) % (len - bounds[0])] =
				(char)psup_rand_next(&seed);
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		err[0] = '\0';
		rc = rep_profile_load_buf(p, copy, len, "fuzz", err, sizeof(err));
		if (rc == 0) {
			struct rep_options o = { REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0, 0.0, NULL };

			loaded++;
			CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
			o.format = REP_FORMAT_COZ;
			CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		} else {
			refused++;
			CHECK_EQ_INT(rc, -EINVAL);
			CHECK(strncmp(err, "fuzz: ", 6) == 0 && !strchr(err, '\n'));
		}
		rep_profile_free(p);
		free(copy);
	}
	CHECK(loaded > 0);
	CHECK(refused > 0);
	free(buf);
}

/* psup's draw (experiments/causal.c): 0% half the time, else 5..100. */
static unsigned exp_pick(uint64_t *rng)
{
	uint64_t r = psup_rand_next(rng);

	return r & 1 ? 0 : (unsigned)(((r >> 1) % 20) + 1) * 5;
}

static int dbl_order(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Writes one line's throughput experiments (speedup, effective ms, visits)
 * to path, one every second. */
struct one_exp {
	unsigned speedup;
	uint64_t eff_ms, visits;
};

static int write_line(const char *path, const char *file, const struct one_exp *x, size_t n)
{
	struct rep_header h = { .mode = "run", .pid = 42, .mono_ns = START, .event = "task-clock", .period = MS, .clock_event = true };
	struct rep_causal_info ci = { "run", true, MS, 10, NULL };
	struct rep_writer *w;
	int rc;

	if ((rc = rep_writer_open(path, REP_WRITER_FORCE, &w)))
		return rc;
	rc = rep_write_header(w, &h);
	if (!rc)
		rc = rep_write_causal_info(w, &ci);
	for (size_t i = 0; i < n && !rc; i++) {
		struct exp_point_delta pd = { "ops", EXP_MEASURE_THROUGHPUT, x[i].visits, 0, 0, 0, 0, false };
		uint64_t delay = x[i].eff_ms * MS * x[i].speedup / 200;
		struct exp_experiment e = {
			.time = START + (i + 1) * S_,
			.file = file,
			.line = 85,
			.speedup_pct = x[i].speedup,
			.duration_ns = x[i].eff_ms * MS + delay,
			.delay_ns = delay,
			.total_samples = 100,
			.npoints = 1,
			.points = &pd,
		};

		rc = rep_write_experiment(w, &e);
	}
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

/*
 * One wild experiment moves neither its point nor the slope. o.c:85 runs
 * 100 visits per experiment; its true period is 10 ms x (1 - 0.4 s / 100)
 * (slope 0.4: +8, +10, +12, +20, +40% at 20, 25, 30, 50, 100%). The one
 * experiment at 25% ran while the machine was slow: 11.3 ms, -13% (issue
 * 19's Amdahl line read -13% at 25% between neighbours near +28%). Its
 * neighbours at 20% and 30% say 9.0 ms (+10%); the baseline's spread (MAD)
 * is below the 1% floor, so it is pulled in to 3% of the baseline above
 * them: 9.3 ms, +7%; its interval holds its neighbours' +10% too; the slope
 * stays near 0.4 (the old pooled estimate read -13% at 25%).
 */
static void test_outlier(void)
{
	static const struct one_exp x[] = {
		{ 0, 1000, 100 },
		{ 0, 1010, 100 },
		{ 0, 990, 100 },
		{ 0, 1000, 100 },
		{ 0, 1000, 100 },
		{ 20, 920, 100 },
		{ 20, 920, 100 },
		{ 25, 1130, 100 },
		{ 30, 880, 100 },
		{ 30, 880, 100 },
		{ 50, 800, 100 },
		{ 50, 800, 100 },
		{ 100, 600, 100 },
		{ 100, 600, 100 },
	};
	struct rep_profile *p;
	char path[300], err[256], *json, *e, *p25;

	snprintf(path, sizeof(path), "%s/outlier.cbor", tmpdir);
	CHECK_EQ_INT(write_line(path, "/src/o.c", x, PSUP_ARRAY_SIZE(x)), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	e = entry(json ? json : "", "lines", "o.c:85");
	p25 = cpoint(e, 25);
	CHECK(e && strstr(e, "\"outliers\":1,"));
	NEAR(num(p25, "program_speedup"), 7.0, 0.05);
	CHECK(num(p25, "ci_low") <= 10 && num(p25, "ci_high") >= 10);
	NEAR(num(e, "slope"), 0.4, 0.005);
	check_json_parses(json ? json : "");
	free(p25);
	free(e);
	free(json);
	json = render(p, REP_FORMAT_TEXT, REP_VIEW_CAUSAL, 0);
	CHECK(json && strstr(json, "    1 outlier experiment pulled in to 3 sd of its neighbours\n"));
	free(json);
	rep_profile_free(p);
}

/* ---- coverage of the intervals, by simulation ------------------------------ */

/*
 * Many simulated lines (each its own curve, as many runs of one line),
 * seeded: a known true curve, experiments of 25 or 50 ms at a speedup drawn
 * as psup draws them (0% half the time, else 5..100 in steps of 5), visits
 * Poisson around the true rate, the machine's speed drifting (AR(1) from one
 * experiment to the next, as a 2-core VM's does) and now and then a wild
 * experiment (the rate off by 25-50%). Checks what issue 19 asks of the
 * intervals: at least 90% of the 95% intervals hold the truth, per point and
 * for the slope; a flat line is flagged as contention in under 5% of runs; the
 * intervals are not absurdly wide. PSUP_SIM_LINES sets the lines per shape.
 */
enum sim_shape { SIM_LINEAR,
		 SIM_FLAT,
		 SIM_CAPPED,
		 SIM_FALLING,
		 SIM_NSHAPES };
static const char *const sim_names[] = { "linear", "flat", "capped", "falling" };

/* The true program speedup (percent) at line speedup x. */
static double sim_truth(enum sim_shape k, double x)
{
	switch (k) {
	case SIM_LINEAR:
		return 0.3 * x;
	case SIM_CAPPED:
		return fmin(0.6 * x, 18.0);
	case SIM_FALLING:
		return -0.2 * x;
	default:
		return 0;
	}
}

static double sim_gauss(uint64_t *rng)
{
	double u = ((double)(psup_rand_next(rng) >> 11) + 0.5) / 9007199254740992.0;
	double v = ((double)(psup_rand_next(rng) >> 11) + 0.5) / 9007199254740992.0;

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static double sim_unif(uint64_t *rng)
{
	return ((double)(psup_rand_next(rng) >> 11) + 0.5) / 9007199254740992.0;
}

struct sim_tally {
	unsigned pts, pts_in, slopes, slopes_in, runs, flagged;
	double pt_err, slope_err; /* sums of absolute errors */
	double *widths;
	unsigned nwidths;
};

static int sim_write(const char *path, unsigned per_shape, unsigned nexp, uint64_t seed)
{
	struct rep_header h = { .mode = "run", .pid = 42, .mono_ns = START, .event = "task-clock", .period = MS, .clock_event = true };
	struct rep_causal_info ci = { "run", true, MS, 100, NULL };
	uint64_t rng = seed, now = START;
	struct rep_writer *w;
	int rc;

	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
	if ((rc = rep_write_header(w, &h)) || (rc = rep_write_causal_info(w, &ci)))
		goto out;
	for (unsigned k = 0; k < SIM_NSHAPES; k++) {
		for (unsigned l = 0; l < per_shape; l++) {
			double drift = 0;
			char file[32];

			snprintf(file, sizeof(file), "/sim/%s.c", sim_names[k]);
			for (unsigned i = 0; i < nexp; i++) {
				unsigned sp = exp_pick(&rng);
				uint64_t eff = (psup_rand_next(&rng) & 1 ? 50 : 25) * MS;
				double rate = 8000.0 / (1 - sim_truth(k, sp) / 100); /* visits/s */
				double mu, visits;
				struct exp_point_delta pd = { "ops", EXP_MEASURE_THROUGHPUT, 0, 0, 0, 0, 0, false };
				struct exp_experiment e = { 0 };

				/* the machine's speed: 4% sd, correlated 0.7 between
				 * neighbours; 4% of experiments off by 25-50% */
				drift = 0.7 * drift + 0.04 * sqrt(1 - 0.49) * sim_gauss(&rng);
				mu = rate * (double)eff / 1e9 * exp(drift);
				if (sim_unif(&rng) < 0.04)
					mu *= sim_unif(&rng) < 0.5 ? 0.5 + 0.25 * sim_unif(&rng)
								   : 1.25 + 0.25 * sim_unif(&rng);
				visits = fmax(0, round(mu + sqrt(mu) * sim_gauss(&rng)));
				pd.delta = (uint64_t)visits;
				now += eff + eff * sp / 200;
				e.time = now;
				e.file = file;
				e.line = l + 1;
				e.speedup_pct = sp;
				e.duration_ns = eff + eff * sp / 200;
				e.delay_ns = eff * sp / 200;
				e.total_samples = 100;
				e.npoints = 1;
				e.points = &pd;
				if ((rc = rep_write_experiment(w, &e)))
					goto out;
			}
		}
	}
out:
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

/* Scores the report of one simulated file into t[shape]. */
static void sim_score(const char *json, unsigned per_shape, struct sim_tally *t)
{
	for (unsigned k = 0; k < SIM_NSHAPES; k++) {
		for (unsigned l = 0; l < per_shape; l++) {
			char label[48], *e;
			const char *at;
			double slope_truth = k == SIM_LINEAR ? 0.3 : k == SIM_FALLING ? -0.2
										      : 0;

			snprintf(label, sizeof(label), "%s.c:%u", sim_names[k], l + 1);
			e = entry(json, "lines", label);
			if (!e)
				continue; /* not drawn: no interval to score */
			t[k].runs++;
			t[k].flagged += strstr(e, "\"contention\":true") != NULL;
			if (k != SIM_CAPPED) {
				t[k].slopes++;
				t[k].slopes_in += num(e, "slope_ci_low") <= slope_truth &&
						  num(e, "slope_ci_high") >= slope_truth;
				t[k].slope_err += fabs(num(e, "slope") - slope_truth);
			}
			for (at = strstr(e, "{\"speedup\":"); at; at = strstr(at + 1, "{\"speedup\":")) {
				double sp = strtod(at + 11, NULL), lo = num(at, "ci_low"), hi = num(at, "ci_high");
				double truth = sim_truth(k, sp);

				if (sp == 0)
					continue;
				t[k].pts++;
				t[k].pts_in += lo <= truth + 1e-9 && hi >= truth - 1e-9;
				t[k].pt_err += fabs(num(at, "program_speedup") - truth);
				if (t[k].widths)
					t[k].widths[t[k].nwidths++] = hi - lo;
			}
			free(e);
		}
	}
}

static void test_coverage(void)
{
	unsigned per_shape = getenv("PSUP_SIM_LINES") ? (unsigned)atoi(getenv("PSUP_SIM_LINES")) : 100;
	const unsigned nexp = 48;
	struct sim_tally t[SIM_NSHAPES];
	struct rep_profile *p;
	char path[300], err[256], *json;
	unsigned pts = 0, pts_in = 0;

	memset(t, 0, sizeof(t));
	snprintf(path, sizeof(path), "%s/sim.cbor", tmpdir);
	CHECK_EQ_INT(sim_write(path, per_shape, nexp, 0x51a7c0feULL), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(json != NULL);
	for (unsigned k = 0; k < SIM_NSHAPES; k++)
		t[k].widths = calloc((size_t)per_shape * nexp, sizeof(double));
	if (json)
		sim_score(json, per_shape, t);
	for (unsigned k = 0; k < SIM_NSHAPES; k++) {
		double med = NAN;

		if (t[k].nwidths) {
			qsort(t[k].widths, t[k].nwidths, sizeof(double), dbl_order);
			med = t[k].widths[t[k].nwidths / 2];
		}
		printf("# %-8s %u lines drawn: points %u/%u = %.1f%% in their 95%% CI (median width %.1f pts, "
		       "mean error %.2f pts); slope %u/%u = %.1f%% (mean error %.3f); flagged contention %u\n",
		       sim_names[k], t[k].runs, t[k].pts_in, t[k].pts, 100.0 * t[k].pts_in / (t[k].pts ? t[k].pts : 1),
		       med, t[k].pt_err / (t[k].pts ? t[k].pts : 1), t[k].slopes_in, t[k].slopes,
		       100.0 * t[k].slopes_in / (t[k].slopes ? t[k].slopes : 1),
		       t[k].slope_err / (t[k].slopes ? t[k].slopes : 1), t[k].flagged);
		pts += t[k].pts;
		pts_in += t[k].pts_in;
		CHECK(t[k].runs >= per_shape * 9 / 10);
		CHECK(t[k].pts_in >= 0.9 * t[k].pts);
		if (k != SIM_CAPPED)
			CHECK(t[k].slopes_in >= 0.9 * t[k].slopes);
		/* one experiment's noise here is ~8 points; a 95% interval of a
		 * point seen by one or two experiments is ~30 wide */
		CHECK(med <= 45);
		free(t[k].widths);
	}
	printf("# all points: %u/%u = %.1f%% in their 95%% CI\n", pts_in, pts, 100.0 * pts_in / (pts ? pts : 1));
	/* a flag needs at least the interval's upper end below 0, a one-sided 2.5%
	 * test: a flat line
	 * flagged more often than that had intervals too narrow */
	CHECK(t[SIM_FLAT].flagged < 0.025 * t[SIM_FLAT].runs);
	CHECK(t[SIM_FALLING].flagged >= 0.5 * t[SIM_FALLING].runs);
	free(json);
	rep_profile_free(p);
}

/*
 * Phase correction from the 0% experiments' measured parts, where no pause
 * of another line's experiment held the line's thread: b.c:20's two 0%
 * experiments (2 s, 200 samples in the line) against 36 samples in the
 * run's 1.2 s at 0%: f = (2 / 200) * (36 / 1.2) = 0.3, where the whole
 * run's counts say 0.5: +3% at 50%, +6% at 100%.
 */
static void test_zero_phase(const char *path)
{
	struct rep_profile *p;
	char err[256], *json = NULL, *e;

	with_zero = true;
	CHECK_EQ_INT(write_file(path, true), 0);
	with_zero = false;
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
	CHECK(json != NULL);
	if (json) {
		check_curve(json, "b.c:20", 0.06, 3, 6, false);
		e = entry(json, "lines", "b.c:20");
		NEAR(num(e, "phase_correction"), 0.3, 1e-3);
		free(e);
		/* no sample in the line: uncorrected, as before */
		e = entry(json, "lines", "a.c:10");
		NEAR(num(e, "phase_correction"), 1.0, 1e-9);
		free(e);
	}
	free(json);
	rep_profile_free(p);
}

/* A fractional mean in flight in Coz's formats: as it is in coz-jsonl; in
 * the legacy form (whose viewer reads integers) rounded at random, its
 * floor or ceiling, and on average the mean. An experiment with fewer than
 * 5 visits is left out, as Coz leaves it out. */
static void test_coz_in_flight(void)
{
	struct rep_header h = { .mode = "run", .pid = 1, .mono_ns = START };
	struct exp_point_delta pd = { "req", EXP_MEASURE_LATENCY, 0, 100, 100, 3, 2.3, true };
	struct exp_experiment e = { .file = "/l.c", .line = 9, .duration_ns = S_, .npoints = 1, .points = &pd };
	char path[300], err[256], *out;
	struct rep_profile *p;
	struct rep_writer *w;
	unsigned n = 0, bad = 0;
	double sum = 0;

	snprintf(path, sizeof(path), "%s/flight.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	for (unsigned i = 0; i < 400; i++) {
		e.time = START + (i + 1) * S_;
		e.speedup_pct = i % 2 ? 50 : 0;
		CHECK_EQ_INT(rep_write_experiment(w, &e), 0);
	}
	/* fewer than 5 arrivals: not logged, as Coz does not log it */
	pd.arrivals = 4;
	e.time += S_;
	CHECK_EQ_INT(rep_write_experiment(w, &e), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	out = render(p, REP_FORMAT_COZ, 0, 0);
	for (const char *s = out; s && (s = strstr(s, "\tdifference=")); s++) {
		long v = strtol(s + 12, NULL, 10);

		bad += v != 2 && v != 3;
		sum += (double)v;
		n++;
	}
	CHECK_EQ_INT(n, 400);
	CHECK_EQ_INT(bad, 0);
	CHECK(out && !strstr(out, "arrivals=4"));
	NEAR(n ? sum / n : 0, 2.3, 0.1);
	/* the end of each experiment would say 3 */
	free(out);
	out = render(p, REP_FORMAT_COZ_JSONL, 0, 0);
	CHECK(out && strstr(out, "\"arrivals\":100,\"departures\":100,\"difference\":2.300}"));
	free(out);
	rep_profile_free(p);
}

/*
 * The phase factor's own noise in the intervals: f.c:7 sampled 100 times in
 * its own four 0% experiments (4 s) against 1,000 in all the 0% parts (80 s:
 * lines at random, the other lines' experiments hold the other 900), f =
 * (4 / 100) (1000 / 80) = 0.5, its log known to sd 0.9 sqrt(1/100 + 1/900)
 * = 0.0949. Every experiment of a speedup alike, that is all the interval
 * holds: at 50%, 100 f (1 - 0.8) = 10%, within [10 e^-ts, 10 e^ts], t =
 * 2.262 (9 degrees of freedom): [8.07, 12.39], and the slope alike. With
 * the line's experiments all the 0% parts (100 in 8 s, --line), f is the
 * same and exact.
 */
static void write_factor_file(const char *path, uint64_t count0, uint64_t time0)
{
	struct rep_header h = { .mode = "run", .pid = 1, .mono_ns = START };
	struct exp_point_delta pd = { "done", EXP_MEASURE_THROUGHPUT, 100, 0, 0, 0, NAN, false };
	struct exp_experiment e = { .file = "/src/f.c", .line = 7, .duration_ns = S_, .npoints = 1, .points = &pd };
	struct rep_writer *w;

	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	for (unsigned i = 0; i < 12; i++) {
		e.time = START + (i + 1) * S_;
		e.speedup_pct = 50 * (i % 3);
		pd.delta = (uint64_t[]){ 120, 150, 200 }[i % 3];
		e.selected_samples = i % 3 ? 20 : 25;
		CHECK_EQ_INT(rep_write_experiment(w, &e), 0);
	}
	CHECK_EQ_INT(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/f.c", 7, 2 * count0, count0, time0 },
					       START + 13 * S_),
		     0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
}

static void test_factor_noise(void)
{
	char path[300], err[256], *json, *e, *pt;
	struct rep_profile *p;

	snprintf(path, sizeof(path), "%s/factor.cbor", tmpdir);
	for (unsigned k = 0; k < 2; k++) {
		write_factor_file(path, k ? 100 : 1000, k ? 8 * S_ : 80 * S_);
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
		json = render(p, REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0);
		e = entry(json, "lines", "f.c:7");
		pt = cpoint(e, 50);
		NEAR(num(e, "phase_correction"), 0.5, 1e-9);
		NEAR(num(pt, "program_speedup"), 10, 1e-9);
		NEAR(num(pt, "ci_low"), k ? 10 : 8.07, 0.01);
		NEAR(num(pt, "ci_high"), k ? 10 : 12.39, 0.01);
		NEAR(num(e, "slope_ci_low") / num(e, "slope"), k ? 1 : 0.8069, 1e-3);
		NEAR(num(e, "slope_ci_high") / num(e, "slope"), k ? 1 : 1.2394, 1e-3);
		free(pt);
		free(e);
		free(json);
		rep_profile_free(p);
	}
}

int main(void)
{
	char path[300], cmd[400];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	devnull = fopen("/dev/null", "w");
	python_ok = system("command -v python3 >/dev/null 2>&1") == 0;
	snprintf(path, sizeof(path), "%s/causal.cbor", tmpdir);
	CHECK_EQ_INT(write_file(path, true), 0);
	test_answers(path);
	test_no_causal();
	test_merge(path);
	test_schema();
	CHECK_EQ_INT(write_file(path, true), 0);
	test_cuts_and_corruption(path);
	test_outlier();
	test_coverage();
	test_zero_phase(path);
	test_coz_in_flight();
	test_factor_noise();
	fclose(devnull);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (getenv("PSUP_TEST_KEEP"))
		printf("# files kept in %s\n", tmpdir);
	else if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return tap_done();
}
