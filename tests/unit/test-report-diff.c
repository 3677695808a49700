/*
 * psup diff (report/diff.c): the statistics (Student's t, Welch's test),
 * matching functions of two builds by name and not by address, the verdicts
 * and --fail-if-slower, and the inputs that cannot be compared.
 */
#include "report/diff.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-diff-XXXXXX";

/* One run of prog: na samples in work_a, nb in work_b (both with lines),
 * nu in code without symbols, nc in a function named other. Functions sit
 * at base + offsets, so another base is another build (another address). */
struct run {
	const char *prog, *build_id, *fn_a;
	uint64_t base;
	uint64_t na, nb, nu, nc;
};

/* Every run's sampling period (ns): 1 ms but in test_huge_values. */
static uint64_t run_period = 1000000;

static int write_run(const char *path, const struct run *r)
{
	char exe[128];
	char *argv[] = { exe, NULL };
	struct rep_header h = {
		.mode = "run",
		.argv = argv,
		.pid = 100,
		.wall_ns = 1,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = run_period,
		.clock_event = true,
		.hostname = "host",
	};
	struct rep_thread t1 = { 100, 100, 0, "app", 1000, 0 };
	struct rep_frame fa[] = { { r->fn_a ? r->fn_a : "work_a", "app.c", 10 } };
	struct rep_frame fb[] = { { "work_b", "app.c", 20 } };
	struct rep_frame fc[] = { { "other", "app.c", 30 } };
	struct rep_loc locs[] = {
		{ 1, 100, r->base + 0x10, exe, r->build_id, r->base + 0x10, 1, fa },
		{ 2, 100, r->base + 0x90, exe, r->build_id, r->base + 0x90, 1, fb },
		{ 3, 100, r->base + 0x200, exe, r->build_id, r->base + 0x200, 0, NULL },
		{ 4, 100, r->base + 0x300, exe, r->build_id, r->base + 0x300, 1, fc },
	};
	uint64_t s[] = { 1, r->na, 2, r->nb, 3, r->nu, 4, r->nc };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = r->na + r->nb + r->nu + r->nc };
	struct rep_writer *w;
	int rc;

	snprintf(exe, sizeof(exe), "/build/%s", r->prog);
	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t1);
	for (size_t i = 0; !rc && i < 4; i++)
		rc = rep_write_loc(w, &locs[i]);
	for (size_t i = 0; !rc && i < 4; i++)
		rc = rep_write_node(w, i + 1, 0, i + 1);
	rc = rc ? rc : rep_write_samples(w, 100, s, 4);
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static int nfile;

/* A profile of the runs given. */
static struct rep_profile *side(const struct run *runs, int n)
{
	struct rep_profile *p = NULL;
	char path[256], err[512];

	if (rep_profile_new(&p))
		return NULL;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/r%d.cbor", tmpdir, nfile++);
		if (write_run(path, &runs[i]) || rep_profile_load(p, path, err, sizeof(err))) {
			fprintf(stderr, "cannot make run %d: %s\n", i, err);
			rep_profile_free(p);
			return NULL;
		}
	}
	return p;
}

/* Compares; the error text in err when it fails. */
static int diff(const struct run *b, int nb, const struct run *n, int nn, struct rep_diff **d,
		char *err, size_t len)
{
	struct rep_profile *pb = side(b, nb), *pn = side(n, nn);
	int rc = pb && pn ? rep_diff_new(pb, pn, d, err, len) : -ENOMEM;

	rep_profile_free(pb);
	rep_profile_free(pn);
	return rc;
}

static const struct rep_diff_row *fn_row(const struct rep_diff *d, const char *name)
{
	for (size_t i = 0; i < rep_diff_nfunctions(d); i++)
		if (!strcmp(rep_diff_function(d, i)->function, name))
			return rep_diff_function(d, i);
	return NULL;
}

static bool near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

static void test_stats(void)
{
	double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 }, m, sd;
	double a = 4.0 / 5, b = 9.0 / 6, t = 2 / sqrt(a + b);
	double df = (a + b) * (a + b) / (a * a / 4 + b * b / 5);

	rep_diff_mean_sd(v, 8, &m, &sd);
	CHECK(near(m, 5, 1e-12));
	CHECK(near(sd, sqrt(32.0 / 7), 1e-12));
	rep_diff_mean_sd(v, 1, &m, &sd);
	CHECK(m == 2 && sd == 0);
	/* Student's t: tables' two-sided 5% points, and Cauchy's P(|T| > 1) */
	CHECK(near(rep_diff_t_two_sided(12.7062047, 1), 0.05, 1e-6));
	CHECK(near(rep_diff_t_two_sided(4.30265273, 2), 0.05, 1e-6));
	CHECK(near(rep_diff_t_two_sided(2.22813885, 10), 0.05, 1e-6));
	CHECK(near(rep_diff_t_two_sided(1, 1), 0.5, 1e-12));
	CHECK(near(rep_diff_t_two_sided(-1, 1), 0.5, 1e-12));
	CHECK(near(rep_diff_t_two_sided(2.0, 10), 0.0733880, 1e-6));
	CHECK(near(rep_diff_t_two_sided(0, 5), 1, 1e-12));
	CHECK(rep_diff_t_two_sided(INFINITY, 3) == 0);
	/* Welch: t and Welch-Satterthwaite df by hand */
	CHECK(near(rep_diff_welch(10, 4, 5, 12, 9, 6), rep_diff_t_two_sided(t, df), 1e-12));
	CHECK(near(rep_diff_welch(12, 9, 6, 10, 4, 5), rep_diff_t_two_sided(t, df), 1e-12));
	CHECK(near(df, 8.672, 0.001));
	CHECK(isnan(rep_diff_welch(10, 4, 1, 12, 9, 6)));
	CHECK(isnan(rep_diff_welch(10, 4, 5, 12, 9, 1)));
	CHECK(rep_diff_welch(10, 0, 2, 10, 0, 2) == 1);
	CHECK(rep_diff_welch(10, 0, 2, 11, 0, 2) == 0);
}

/* work_a doubles between the builds (at another address: a rebuild), work_b
 * does not: matched by name, a is significant and slower, b is not. */
static void test_rebuild(void)
{
	struct run b[] = { { "app", "aaaa", NULL, 0x1000, 1000, 500, 0, 20 },
			   { "app", "aaaa", NULL, 0x1000, 1030, 510, 0, 22 } };
	struct run n[] = { { "app", "bbbb", NULL, 0x8000, 2010, 505, 0, 21 },
			   { "app", "bbbb", NULL, 0x8000, 1990, 498, 0, 19 } };
	const struct rep_diff_row *ra, *rb, *pr;
	struct rep_diff *d = NULL;
	char err[512] = "", why[512] = "";

	CHECK_EQ_INT(diff(b, 2, n, 2, &d, err, sizeof(err)), 0);
	if (!d) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	CHECK(rep_diff_can_judge(d));
	/* one row per function, not one per address */
	CHECK_EQ_INT(rep_diff_nfunctions(d), 3);
	ra = fn_row(d, "work_a");
	rb = fn_row(d, "work_b");
	CHECK(ra && rb);
	if (ra && rb) {
		CHECK(ra == rep_diff_function(d, 0)); /* sorted first */
		CHECK(near(ra->base.mean, 1015e6, 1));
		CHECK(near(ra->new.mean, 2000e6, 1));
		CHECK(near(ra->change_pct, 100.0 * 985 / 1015, 1e-6));
		CHECK(ra->significant && ra->p < 0.05);
		CHECK(near(ra->base.share, (1000.0 / 1520 + 1030.0 / 1562) / 2, 1e-9));
		CHECK(!rb->significant && rb->p > 0.05);
		CHECK_EQ_INT(ra->base.n, 2);
	}
	pr = rep_diff_program(d);
	CHECK(pr->function == NULL && pr->change > 0);
	/* lines match too (app.c:10 of work_a) */
	CHECK_EQ_INT(rep_diff_nlines(d), 3);
	CHECK(rep_diff_line(d, 0)->line == 10 && rep_diff_line(d, 0)->significant);
	CHECK(rep_diff_slower(d, 10, why, sizeof(why)));
	CHECK(strstr(why, "slower") != NULL);
	/* a 200% gate: work_a's +97% and the program's +65% stay under it */
	CHECK(!rep_diff_slower(d, 200, why, sizeof(why)));
	rep_diff_free(d);

	/* The reverse is faster: no gate fails. */
	d = NULL;
	CHECK_EQ_INT(diff(n, 2, b, 2, &d, err, sizeof(err)), 0);
	if (d) {
		ra = fn_row(d, "work_a");
		CHECK(ra && ra->significant && ra->change < 0);
		CHECK(!rep_diff_slower(d, 0, why, sizeof(why)));
		rep_diff_free(d);
	}
}

/* Runs that agree within their Poisson spread are not significant even when
 * each side agrees with itself exactly (the floor on the variance). */
static void test_floor(void)
{
	struct run b[] = { { "app", "aaaa", NULL, 0x1000, 100, 500, 0, 0 },
			   { "app", "aaaa", NULL, 0x1000, 100, 500, 0, 0 } };
	struct run n[] = { { "app", "aaaa", NULL, 0x1000, 110, 500, 0, 0 },
			   { "app", "aaaa", NULL, 0x1000, 110, 500, 0, 0 } };
	struct rep_diff *d = NULL;
	char err[512] = "", why[512];

	CHECK_EQ_INT(diff(b, 2, n, 2, &d, err, sizeof(err)), 0);
	if (d) {
		const struct rep_diff_row *ra = fn_row(d, "work_a");

		CHECK(ra && !ra->significant && near(ra->change_pct, 10, 1e-9));
		CHECK(!rep_diff_slower(d, 5, why, sizeof(why)));
		rep_diff_free(d);
	}
}

/* One run per side: the changes, no significance. */
static void test_one_run(void)
{
	struct run b[] = { { "app", "aaaa", NULL, 0x1000, 1000, 500, 0, 20 } };
	struct run n[] = { { "app", "aaaa", NULL, 0x1000, 2000, 500, 0, 20 } };
	struct rep_diff *d = NULL;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *mem;

	CHECK_EQ_INT(diff(b, 1, n, 1, &d, err, sizeof(err)), 0);
	if (!d)
		return;
	CHECK(!rep_diff_can_judge(d));
	CHECK(isnan(fn_row(d, "work_a")->p) && !fn_row(d, "work_a")->significant);
	CHECK(near(fn_row(d, "work_a")->change_pct, 100, 1e-9));
	mem = open_memstream(&buf, &len);
	CHECK_EQ_INT(rep_diff_print(d, &(struct rep_diff_options){ REP_FORMAT_TEXT, 0 }, mem), 0);
	fclose(mem);
	CHECK(strstr(buf, "cannot judge") != NULL);
	free(buf);
	rep_diff_free(d);
}

/* Inputs that cannot be compared: one line each, no crash. */
static void test_malformed(void)
{
	struct run app[] = { { "app", "aaaa", NULL, 0x1000, 1000, 500, 0, 20 } };
	struct run other[] = { { "busy", "cccc", NULL, 0x1000, 1000, 500, 0, 20 } };
	struct run copy[] = { { "app-copy", "aaaa", NULL, 0x1000, 1100, 500, 0, 20 } };
	struct run stripped[] = { { "app", "dddd", NULL, 0x1000, 10, 5, 2000, 0 } };
	struct run renamed[] = { { "app", "eeee", "work_z", 0x1000, 0, 0, 0, 0 } };
	struct rep_diff *d = NULL;
	char err[512] = "";

	CHECK_EQ_INT(diff(app, 1, other, 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "different programs") && !strchr(err, '\n') && !d);
	/* the names in it are the files': escaped for the terminal */
	struct run evil[] = { { "\x1b[2Jevil", "ffff", NULL, 0x1000, 1000, 500, 0, 20 } };

	CHECK_EQ_INT(diff(app, 1, evil, 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "?[2Jevil") && !strchr(err, '\x1b') && !d);
	/* another name, one build-id: a copy of the same program */
	CHECK_EQ_INT(diff(app, 1, copy, 1, &d, err, sizeof(err)), 0);
	rep_diff_free(d);
	d = NULL;
	CHECK_EQ_INT(diff(app, 1, stripped, 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "without symbols") && strstr(err, "NEW") && !d);
	CHECK_EQ_INT(diff(stripped, 1, app, 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "without symbols") && strstr(err, "BASE") && !d);
	/* the same program, but no function with samples on both sides */
	renamed[0].nu = 0;
	{
		struct run only_z[] = { { "app", "eeee", "work_z", 0x1000, 100, 0, 0, 0 } };
		struct run only_b[] = { { "app", "aaaa", NULL, 0x1000, 0, 100, 0, 0 } };

		CHECK_EQ_INT(diff(only_z, 1, only_b, 1, &d, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "no function in common") && !d);
	}
	/* a run without samples */
	CHECK_EQ_INT(diff(app, 1, renamed, 1, &d, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no samples") && !d);
}

/* Names from the binary go through each format's escaper; JSON parses. */
static void test_formats(void)
{
	struct run b[] = { { "app", "aaaa", "evil\x1b]0;x\a|`name", 0x1000, 1000, 500, 0, 20 },
			   { "app", "aaaa", "evil\x1b]0;x\a|`name", 0x1000, 1010, 505, 0, 20 } };
	struct run n[] = { { "app", "aaaa", "evil\x1b]0;x\a|`name", 0x1000, 2000, 500, 0, 20 },
			   { "app", "aaaa", "evil\x1b]0;x\a|`name", 0x1000, 2020, 505, 0, 20 } };
	enum rep_format fmts[] = { REP_FORMAT_TEXT, REP_FORMAT_MARKDOWN, REP_FORMAT_JSON };
	struct rep_diff *d = NULL;
	char err[512] = "";

	CHECK_EQ_INT(diff(b, 2, n, 2, &d, err, sizeof(err)), 0);
	if (!d)
		return;
	for (size_t i = 0; i < 3; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		CHECK_EQ_INT(rep_diff_print(d, &(struct rep_diff_options){ fmts[i], 0 }, mem), 0);
		fclose(mem);
		CHECK(!strchr(buf, '\x1b') && !strchr(buf, '\a'));
		if (fmts[i] == REP_FORMAT_MARKDOWN)
			CHECK(strstr(buf, "\\|") != NULL && strstr(buf, "|`name") == NULL);
		if (fmts[i] == REP_FORMAT_JSON) {
			CHECK(access("/usr/bin/python3", X_OK) != 0 || fx_json_parses(tmpdir, buf));
			CHECK(strstr(buf, "\"verdict\":\"slower\"") != NULL);
		}
		if (fmts[i] == REP_FORMAT_TEXT)
			CHECK(strstr(buf, "slower") != NULL && strstr(buf, "Functions") != NULL);
		free(buf);
	}
	rep_diff_free(d);
}

/* Counts times periods far beyond any run's (a record can say anything):
 * every cell shows its value, in exponent form, whole. The change cell
 * had its '+' put in front by a memmove of the whole cell, which ran one
 * byte past it when the value filled it, into the percent cell after it,
 * and the cell printed into the next one. */
static void test_huge_values(void)
{
	struct run b[] = { { "app", "aaaa", NULL, 0x1000, 1, 0, 0, 0 } };
	struct run n[] = { { "app", "aaaa", NULL, 0x1000, 1000000000000000000, 0, 0, 0 } };
	struct rep_diff *d = NULL;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	run_period = 1000000000000000000;
	rc = diff(b, 1, n, 1, &d, err, sizeof(err));
	run_period = 1000000;
	CHECK_EQ_INT(rc, 0);
	if (!d)
		return;
	mem = open_memstream(&buf, &len);
	CHECK_EQ_INT(rep_diff_print(d, &(struct rep_diff_options){ REP_FORMAT_TEXT, 0 }, mem), 0);
	fclose(mem);
	/* work_a: base 1e18 ns, new 1e36 ns, change +1e36 ns, +1e20 percent */
	CHECK(strstr(buf, "\n    1e+09 s      -     1e+27 s      -     +1e+27 s  +1e+20%  100.0%") !=
	      NULL);
	CHECK(strstr(buf, "Program: 1e+09 s -> 1e+27 s per run (sd - -> -), +1e+27 s +1e+20%,") !=
	      NULL);
	free(buf);
	rep_diff_free(d);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_stats();
	test_rebuild();
	test_floor();
	test_one_run();
	test_malformed();
	test_formats();
	test_huge_values();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return tap_done();
}
