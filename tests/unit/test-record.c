/*
 * The record format both ways: writer -> reader -> model -> views, merging,
 * and the reader against truncated, corrupted and random input.
 */
#include "report/report.h"

#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-record-XXXXXX";

/* File offsets where each record of the last written file ends. */
static size_t bounds[64];
static size_t nbounds;

static void note_bound(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && nbounds < 64)
		bounds[nbounds++] = (size_t)st.st_size;
}

/*
 * The test profile. variant 1 describes the same program differently: other
 * loc and node ids, another pid, other addresses, records in another order:
 * merging must still match every location and node.
 */
static int write_profile(const char *path, int variant)
{
	static char *argv[] = { "./app", "--n", "3", NULL };
	struct rep_header h = {
		.mode = "run",
		.argv = argv,
		.pid = variant ? 200 : 100,
		.wall_ns = 5,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = 1000000,
		.jitter_pct = 10,
		.clock_event = true,
		.hw_pmu = false,
		.hostname = "host",
	};
	int pid = variant ? 200 : 100;
	struct rep_thread t1 = { pid, pid, 0, "app", 1000, 0 };
	struct rep_thread t2 = { pid + 1, pid, pid, "worker", 2000, 0 };
	struct rep_frame f_main[] = { { "main", "app.c", 10 } };
	struct rep_frame f_compute[] = { { "compute", "app.c", 20 } };
	struct rep_frame f_memcpy[] = { { "memcpy", NULL, 0 } };
	struct rep_frame f_inl[] = { { "inl_helper", "app.h", 5 }, { "compute", "app.c", 22 } };
	struct rep_frame f_rec[] = { { "rec", "rec.c", 3 } };
	/* loc ids: variant 1 numbers them backwards */
	uint64_t L[8];
	for (int i = 1; i <= 7; i++)
		L[i] = variant ? 100 - (uint64_t)i : (uint64_t)i;
	uint64_t base = variant ? 0x7000 : 0x4000;
	struct rep_loc locs[] = {
		{ L[1], pid, base + 0x100, "/usr/bin/app", "abcd", 0x100, 1, f_main },
		{ L[2], pid, base + 0x200, "/usr/bin/app", "abcd", 0x200, 1, f_compute },
		{ L[3], pid, 0x7f001000, "/lib/libc.so.6", NULL, 0x1000, 1, f_memcpy },
		{ L[4], pid, base + 0x300, "/usr/bin/app", "abcd", 0x300, 2, f_inl },
		{ L[5], pid, 0xffffffff81000000ULL, "[kernel]", NULL, 0, 0, NULL },
		{ L[6], pid, base + 0x1234, "/usr/bin/app", NULL, 0x1234, 0, NULL },
		{ L[7], pid, base + 0x400, "/usr/bin/app", NULL, 0x400, 1, f_rec },
	};
	/* node ids: variant 1 adds 1000 */
	uint64_t N = variant ? 1000 : 0;
	uint64_t s1[] = { N + 2, 10, N + 3, 5, N + 4, 7, N + 5, 2, N + 6, 1 };
	uint64_t s2[] = { N + 8, 4, N + 9, 6 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 35, .lost = 3, .unwind_failures = 2 };
	/* 4 ms of life: 1 running, 0.5 runnable, 2.5 blocked */
	struct rep_thread_times tt = { 1000000, 500000, 2000000, 0, 400000, 100000 };
	struct rep_writer *w;
	int rc;

	nbounds = 0;
	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
		/* each record flushed: note_bound() sees where it ends */
#define W(call) \
	do { \
		rc = (call); \
		if (!rc) \
			rc = rep_writer_flush(w); \
		if (rc) \
			goto out; \
		note_bound(path); \
	} while (0)
	W(rep_write_header(w, &h));
	W(rep_write_thread(w, &t1));
	W(rep_write_thread(w, &t2));
	for (int i = 0; i < 7; i++)
		W(rep_write_loc(w, &locs[variant ? 6 - i : i]));
	W(rep_write_node(w, N + 1, 0, L[1]));
	W(rep_write_node(w, N + 2, N + 1, L[2]));
	W(rep_write_node(w, N + 3, N + 2, L[3]));
	W(rep_write_node(w, N + 4, N + 1, L[4]));
	W(rep_write_node(w, N + 5, N + 2, L[5]));
	W(rep_write_node(w, N + 6, 0, L[6]));
	W(rep_write_node(w, N + 7, N + 1, L[7]));
	W(rep_write_node(w, N + 8, N + 7, L[7]));
	W(rep_write_node(w, N + 9, N + 8, L[3]));
	if (variant) {
		W(rep_write_samples(w, pid + 1, s2, 2));
		W(rep_write_samples(w, pid, s1, 5));
	} else {
		/* split over two records: counts add */
		W(rep_write_samples(w, pid, s1, 2));
		W(rep_write_samples(w, pid, s1 + 4, 3));
		W(rep_write_samples(w, pid + 1, s2, 2));
	}
	W(rep_write_lost(w, pid + 1, 3));
	/* per-CPU rings' losses: any task's, more than the samples */
	W(rep_write_lost(w, 0, 500));
	W(rep_write_exec(w, pid, "/usr/bin/app", 1500));
	/* variant 1 is an older recorder's file: no thread_times */
	if (!variant)
		W(rep_write_thread_times(w, pid + 1, 5000, &tt));
	W(rep_write_thread_end(w, pid + 1, 5000));
	W(rep_write_exit(w, pid, 0, 0, 9000));
	/* variant 0 also ran causal experiments: the corruption and truncation
	 * tests then cover those records too */
	if (!variant) {
		struct rep_causal_info ci = { "run", true, 1000000, 12, "a note" };
		struct exp_point_delta pd[] = {
			{ "app.c:20", EXP_MEASURE_THROUGHPUT, 40, 0, 0, 0, 0, false },
			{ "req", EXP_MEASURE_LATENCY, 0, 30, 28, -2, 1.25, true },
		};
		struct exp_experiment ex = { 8000, "/src/app.c", 20, 0, 2000, 0, 0, 0, 7, 20, 0, 0, 2, pd, false };

		W(rep_write_causal_info(w, &ci));
		W(rep_write_experiment(w, &ex));
		ex.speedup_pct = 50;
		ex.delay_ns = 500;
		ex.delays = 1;
		W(rep_write_experiment(w, &ex));
		W(rep_write_line_samples_at(w, &(struct exp_line_samples){ "/src/app.c", 20, 9, 0, 0 }, 8500));
	}
	W(rep_write_end(w, &e));
#undef W
out:
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf;

	if (psup_read_file(path, &buf, len))
		return NULL;
	return buf;
}

/* Prints p into a heap string (caller frees). */
static char *render(const struct rep_profile *p, enum rep_format f, unsigned views, unsigned top)
{
	struct rep_options o = { f, views, top, 0.0, NULL };

	return fx_render_ext(p, &o, NULL);
}

/*
 * The number under key in the JSON row of section that contains match (an
 * exact `"k":"v"` text), or -1. Sections come in a fixed order, so the next
 * one bounds the search.
 */
static long long json_num(const char *json, const char *section, const char *match,
			  const char *key)
{
	static const char *const order[] = { "runs", "summary", "images", "functions",
					     "lines", "threads", "hidden" };
	char pat[128];
	const char *s, *end = NULL, *row, *rend, *k;

	snprintf(pat, sizeof(pat), "\"%s\":", section);
	s = strstr(json, pat);
	if (!s)
		return -1;
	for (size_t i = 0; i + 1 < PSUP_ARRAY_SIZE(order); i++) {
		if (strcmp(order[i], section) == 0) {
			snprintf(pat, sizeof(pat), "\"%s\":", order[i + 1]);
			end = strstr(s, pat);
		}
	}
	row = strstr(s, match);
	if (!row || (end && row > end))
		return -1;
	while (row > s && *row != '{')
		row--;
	rend = strchr(row, '}');
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	k = strstr(row, pat);
	if (!k || !rend || k > rend)
		return -1;
	return strtoll(k + strlen(pat), NULL, 10);
}

/* Occurrences of sub in the functions section of json. */
static int count_fn(const char *json, const char *sub)
{
	const char *s = strstr(json, "\"functions\":"), *end = s ? strstr(s, "\"lines\":") : NULL;
	int n = 0;

	while (s && (s = strstr(s, sub)) && (!end || s < end)) {
		n++;
		s++;
	}
	return n;
}

static bool python_ok;

/* Checks that json parses with python3's json module. */
static void check_json_parses(const char *json)
{
	if (python_ok)
		CHECK(fx_json_parses(tmpdir, json));
}

static void test_round_trip(const char *a, const char *b)
{
	struct rep_profile *p;
	char err[256];
	char *json;

	/* nothing loaded yet: every format still prints */
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	json = render(p, REP_FORMAT_JSON, 0, 0);
	CHECK(json && strstr(json, "\"runs\":[]"));
	if (json)
		check_json_parses(json);
	free(json);
	json = render(p, REP_FORMAT_TEXT, 0, 0);
	CHECK(json && strstr(json, "no samples"));
	free(json);
	CHECK_EQ_INT(rep_profile_load(p, a, err, sizeof(err)), 0);
	CHECK(!rep_profile_truncated(p, NULL));
	json = render(p, REP_FORMAT_JSON, 0, 0);
	CHECK(json != NULL);
	if (!json) {
		rep_profile_free(p);
		return;
	}
	/* functions: self and total; memcpy in libc also counts, in total, for
	 * compute and main that called it; rec counts once per sample. */
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "samples"), 35);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "lost"), 3);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "lost_cpu_rings"), 500);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "unwind_failures"), 2);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "duration_ns"), 9000);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "threads"), 2);
	CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "processes"), 1);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"compute\"", "self"), 10);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"compute\"", "total"), 24);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"main\"", "self"), 0);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"main\"", "total"), 34);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"memcpy\"", "self"), 11);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"memcpy\"", "total"), 11);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"inl_helper\"", "self"), 7);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"rec\"", "self"), 4);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"rec\"", "total"), 10);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"[kernel]\"", "self"), 2);
	CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"[app] (no symbols)\"", "self"), 1);
	CHECK_EQ_INT(count_fn(json, "\"function\":\"compute\",\"image\""), 1);
	/* sorted by self: memcpy (11) first */
	CHECK(strstr(json, "\"functions\":[{\"function\":\"memcpy\"") != NULL);
	/* images of the leaf */
	CHECK_EQ_INT(json_num(json, "images", "\"image\":\"/usr/bin/app\"", "samples"), 22);
	CHECK_EQ_INT(json_num(json, "images", "\"image\":\"/lib/libc.so.6\"", "samples"), 11);
	CHECK_EQ_INT(json_num(json, "images", "\"image\":\"[kernel]\"", "samples"), 2);
	/* lines: the inlined call site of compute has total only */
	CHECK_EQ_INT(json_num(json, "lines", "\"file\":\"app.c\",\"line\":20", "self"), 10);
	CHECK_EQ_INT(json_num(json, "lines", "\"file\":\"app.c\",\"line\":22", "self"), 0);
	CHECK_EQ_INT(json_num(json, "lines", "\"file\":\"app.c\",\"line\":22", "total"), 7);
	CHECK_EQ_INT(json_num(json, "lines", "\"file\":\"app.h\",\"line\":5", "self"), 7);
	CHECK_EQ_INT(json_num(json, "lines", "\"file\":\"app.c\",\"line\":10", "total"), 34);
	/* threads */
	CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"app\"", "samples"), 25);
	CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"worker\"", "samples"), 10);
	CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"worker\"", "lost"), 3);
	CHECK(strstr(json, "\"name\":\"app\",\"samples\":25,\"percent\":71.4286,\"lost\":0,"
			   "\"top_function\":\"compute\"") != NULL);
	CHECK(strstr(json, "\"top_function\":\"memcpy\"") != NULL);
	/* thread times: the worker's as written, the main thread's unknown */
	CHECK(strstr(json, "\"top_function\":\"memcpy\",\"times\":{\"running\":1000000,"
			   "\"runnable\":500000,\"blocked\":2500000,\"blocked_futex\":2000000,"
			   "\"blocked_io\":0,\"blocked_sleep\":400000,\"blocked_other\":100000}}") != NULL);
	CHECK(strstr(json, "\"top_function\":\"compute\",\"times\":null}") != NULL);
	CHECK(strstr(json, "\"thread_times\":true") != NULL);
	/* the run */
	CHECK(strstr(json, "\"argv\":[\"./app\",\"--n\",\"3\"]") != NULL);
	CHECK(strstr(json, "\"exit_status\":0,\"exit_signal\":null") != NULL);
	CHECK(strstr(json, "\"complete\":true,\"truncated\":false") != NULL);
	check_json_parses(json);
	free(json);

	/* text and markdown carry the same numbers */
	json = render(p, REP_FORMAT_TEXT, 0, 3);
	CHECK(json && strstr(json, "Functions") && strstr(json, "compute") &&
	      strstr(json, "exited with status 0") && strstr(json, "more rows hidden") && strstr(json, "(4 more rows hidden"));
	if (json && strstr(json, "Functions")) {
		/* top 3 by self: memcpy, compute, inl_helper; rec is hidden */
		const char *fns = strstr(json, "Functions");

		CHECK(strstr(fns, "inl_helper") != NULL);
		CHECK(strstr(fns, "  rec ") == NULL || strstr(fns, "  rec ") > strstr(fns, "Lines"));
	}
	free(json);
	json = render(p, REP_FORMAT_MARKDOWN, REP_VIEW_FUNCTIONS, 0);
	CHECK(json && strstr(json, "### Functions") && strstr(json, "| `compute` |") &&
	      !strstr(json, "### Summary"));
	free(json);

	/* merge: the same program described with other ids adds up */
	CHECK_EQ_INT(rep_profile_load(p, b, err, sizeof(err)), 0);
	json = render(p, REP_FORMAT_JSON, 0, 0);
	CHECK(json != NULL);
	if (json) {
		CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "runs"), 2);
		CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "samples"), 70);
		CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "threads"), 4);
		CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "processes"), 2);
		CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"compute\"", "self"), 20);
		CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"compute\"", "total"), 48);
		CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"rec\"", "total"), 20);
		CHECK_EQ_INT(json_num(json, "functions", "\"function\":\"main\"", "total"), 68);
		CHECK_EQ_INT(count_fn(json, "\"function\":\"compute\",\"image\""), 1);
		CHECK_EQ_INT(count_fn(json, "\"function\":\"[app] (no symbols)\",\"image\""), 1);
		CHECK_EQ_INT(json_num(json, "images", "\"image\":\"/usr/bin/app\"", "samples"), 44);
		/* threads stay per run */
		CHECK(strstr(json, "\"run\":1,\"tid\":101,") && strstr(json, "\"run\":2,\"tid\":201,"));
		check_json_parses(json);
		free(json);
	}
	json = render(p, REP_FORMAT_TEXT, REP_VIEW_SUMMARY, 0);
	CHECK(json && strstr(json, "runs") && strstr(json, "70"));
	/* The program's own losses, a share of its samples; the CPU rings'
	 * apart, never as a share of the program's (1000 of 70: 1428%). */
	CHECK(json && strstr(json, "lost samples       6 (8.57% of samples)"));
	CHECK(json && strstr(json, "lost in CPU rings  1000 (not attributable"));
	CHECK(json && !strstr(json, "1428"));
	CHECK(json && strstr(json, "--sample-per-thread"));
	free(json);
	rep_profile_free(p);
}

/* err is one line that names the input. */
static void check_err(const char *err, const char *name)
{
	CHECK(err[0] != '\0');
	CHECK(strchr(err, '\n') == NULL);
	CHECK(strncmp(err, name, strlen(name)) == 0);
}

static FILE *devnull;

/* Loads buf; it must load or fail with a one-line -EINVAL; what loads must
 * print. Returns the load's result. */
static int load_any(const void *buf, size_t len)
{
	struct rep_profile *p;
	struct rep_options o = { REP_FORMAT_TEXT, 0, 0, 0.0, NULL };
	char err[256];
	int rc;

	if (rep_profile_new(&p))
		return -ENOMEM;
	err[0] = 'x';
	err[1] = '\0';
	rc = rep_profile_load_buf(p, buf, len, "fuzz", err, sizeof(err));
	if (rc) {
		if (rc != -EINVAL) {
			CHECK_EQ_INT(rc, -EINVAL);
		}
		check_err(err, "fuzz: ");
	} else {
		CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		o.format = REP_FORMAT_JSON;
		CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		/* the causal outputs of whatever survived */
		o.views = REP_VIEW_CAUSAL;
		CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		o.format = REP_FORMAT_TEXT;
		CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
		o.format = REP_FORMAT_COZ;
		CHECK_EQ_INT(rep_print(p, &o, devnull), 0);
	}
	rep_profile_free(p);
	return rc;
}

static void test_truncation(const char *path)
{
	size_t len, b = 0;
	char *buf = slurp(path, &len);

	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK_EQ_INT(bounds[nbounds - 1], len);
	for (size_t n = 0; n <= len; n++) {
		struct rep_profile *p;
		size_t nrec = 0;
		char err[256];
		int rc;

		while (b < nbounds && bounds[b] < n)
			b++;
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		rc = rep_profile_load_buf(p, buf, n, "cut", err, sizeof(err));
		if (n < bounds[0]) {
			/* no complete header: refused */
			CHECK_EQ_INT(rc, -EINVAL);
			check_err(err, "cut: ");
		} else {
			/* a clean load of every complete record */
			bool at_bound = bounds[b] == n;

			CHECK_EQ_INT(rc, 0);
			CHECK_EQ_INT(rep_profile_truncated(p, &nrec), !at_bound);
			CHECK_EQ_INT(nrec, at_bound ? b + 1 : b);
			CHECK_EQ_INT(rep_print(p, &(struct rep_options){ REP_FORMAT_TEXT, 0, 0, 0, NULL },
					       devnull),
				     0);
			if (!at_bound && n == len - 1) {
				char *txt = render(p, REP_FORMAT_TEXT, REP_VIEW_SUMMARY, 0);

				CHECK(txt && strstr(txt, "truncated after"));
				free(txt);
			}
		}
		rep_profile_free(p);
	}
	free(buf);
}

/* Marks the bytes the decoder reads as structure: each item's head and its
 * argument (a length, a number, a tag), not a string's payload. Returns how
 * far the walk got: all of len for a file the writer made. */
static size_t mark_structure(const uint8_t *buf, size_t len, bool *structural)
{
	size_t pos = 0;

	while (pos < len) {
		struct cbor_decoder_result r = cbor_stream_decode(buf + pos, len - pos,
								  &cbor_empty_callbacks, NULL);
		uint8_t info = buf[pos] & 0x1f;
		size_t head = 1 + (info == 24 ? 1 : info == 25 ? 2
					    : info == 26       ? 4
					    : info == 27       ? 8
							       : 0);

		if (r.status != CBOR_DECODER_FINISHED || r.read == 0)
			break;
		for (size_t i = pos; i < pos + head && i < len; i++)
			structural[i] = true;
		pos += r.read;
	}
	return pos;
}

static void test_corruption(const char *path, uint64_t *seed, long *cases)
{
	/* every value at the structure's bytes; in a string's payload the
	 * decoder reads no byte as a head, so a NUL, a byte that is not UTF-8
	 * and a changed letter stand for the rest (test_nasty_strings has the
	 * control characters) */
	static const uint8_t vals[] = { 0x00, 0xff, 0x1b, 0x9b, 0xbf, 0x7f, 0x5b, 0xf6, 0x18 };
	static const uint8_t payload_vals[] = { 0x00, 0xff };
	size_t len;
	uint8_t *buf = (uint8_t *)slurp(path, &len);
	bool *structural;
	int loaded = 0, refused = 0;

	CHECK(buf != NULL);
	if (!buf)
		return;
	structural = calloc(len, sizeof(*structural));
	CHECK_EQ_INT(mark_structure(buf, len, structural), len);
	for (size_t off = 0; off < len; off++) {
		uint8_t orig = buf[off];
		const uint8_t *vs = structural[off] ? vals : payload_vals;
		size_t nv = structural[off] ? PSUP_ARRAY_SIZE(vals) : PSUP_ARRAY_SIZE(payload_vals);

		for (size_t v = 0; v <= nv; v++) {
			buf[off] = v < nv ? vs[v] : orig ^ 0x01;
			if (buf[off] == orig && v < nv)
				continue;
			if (load_any(buf, len) == 0)
				loaded++;
			else
				refused++;
			++*cases;
		}
		buf[off] = orig;
	}
	/* several random bytes changed at once (tests/fuzz/fuzz-reader.c
	 * explores further; here, enough for a loaded 2-core machine under
	 * the sanitizers) */
	for (int i = 0; i < 10000; i++) {
		uint8_t *copy = malloc(len);
		int n = 1 + (int)(psup_rand_next(seed) % 8);

		memcpy(copy, buf, len);
		while (n--)
			copy[psup_rand_next(seed) % len] = (uint8_t)psup_rand_next(seed);
		if (load_any(copy, psup_rand_next(seed) % 4 ? len : psup_rand_next(seed) % len) == 0)
			loaded++;
		else
			refused++;
		free(copy);
		++*cases;
	}
	/* both outcomes happen: the corruption is neither all harmless nor all fatal */
	CHECK(loaded > 0);
	CHECK(refused > 0);
	free(structural);
	free(buf);
}

static void test_garbage(uint64_t *seed, long *cases)
{
	uint8_t buf[512];
	size_t hdr_len;
	char *hdr;
	char path[256];

	snprintf(path, sizeof(path), "%s/a.cbor", tmpdir);
	hdr = slurp(path, &hdr_len);
	CHECK(hdr != NULL);
	if (!hdr)
		return;
	hdr_len = bounds[0];
	for (int i = 0; i < 60000; i++) {
		size_t n = psup_rand_next(seed) % sizeof(buf), start = 0;

		/* half of them after a valid header, so the record parser gets them */
		if (i % 2 && n > hdr_len) {
			memcpy(buf, hdr, hdr_len);
			start = hdr_len;
		}
		for (size_t j = start; j < n; j++) {
			uint64_t r = psup_rand_next(seed);

			/* bias toward CBOR heads that matter: maps, arrays, text */
			buf[j] = (uint8_t)(r % 3 == 0   ? (0xa0 | (r >> 8) % 0x1c)
					   : r % 3 == 1 ? (0x60 | (r >> 8) % 0x1c)
							: r >> 16);
		}
		load_any(buf, n);
		++*cases;
	}
	free(hdr);
}

/* Encodes a tiny CBOR item stream by hand. */
struct enc {
	uint8_t *b;
	size_t n, cap;
};

static void e_need(struct enc *e, size_t k)
{
	while (e->n + k > e->cap) {
		e->cap = e->cap ? e->cap * 2 : 256;
		e->b = realloc(e->b, e->cap);
	}
}
static void e_map(struct enc *e, size_t n)
{
	e_need(e, 9);
	e->n += cbor_encode_map_start(n, e->b + e->n, 9);
}
static void e_arr(struct enc *e, size_t n)
{
	e_need(e, 9);
	e->n += cbor_encode_array_start(n, e->b + e->n, 9);
}
static void e_uint(struct enc *e, uint64_t v)
{
	e_need(e, 9);
	e->n += cbor_encode_uint(v, e->b + e->n, 9);
}
static void e_str(struct enc *e, const char *s)
{
	size_t l = strlen(s);

	e_need(e, 9 + l);
	e->n += cbor_encode_string_start(l, e->b + e->n, 9);
	memcpy(e->b + e->n, s, l);
	e->n += l;
}

static void e_header(struct enc *e, uint64_t version, bool extra)
{
	e_map(e, extra ? 4 : 3);
	e_str(e, "type");
	e_str(e, "header");
	e_str(e, "format");
	e_str(e, "psup");
	e_str(e, "version");
	e_uint(e, version);
	if (extra) {
		e_str(e, "some_future_key");
		e_arr(e, 2);
		e_map(e, 1);
		e_str(e, "x");
		e_uint(e, 1);
		e_str(e, "y");
	}
}

static int load_enc(struct enc *e, char *err, size_t errlen)
{
	struct rep_profile *p;
	int rc;

	rep_profile_new(&p);
	rc = rep_profile_load_buf(p, e->b, e->n, "hand", err, errlen);
	rep_profile_free(p);
	e->n = 0;
	return rc;
}

static void test_schema_rules(void)
{
	struct enc e = { 0 };
	char err[256];

	/* minimal header, after the self-described CBOR tag; unknown keys and
	 * record types are ignored */
	e_need(&e, 3);
	e.n += cbor_encode_tag(55799, e.b, 3);
	e_header(&e, 1, true);
	e_map(&e, 2);
	e_str(&e, "type");
	e_str(&e, "from_the_future");
	e_str(&e, "payload");
	e_arr(&e, 1);
	e_str(&e, "z");
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), 0);

	/* a newer format version is refused */
	e_header(&e, 2, false);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	check_err(err, "hand: record 1: ");
	CHECK(strstr(err, "version 2") != NULL);

	/* version 0 is damage, not a newer psup (issue 22) */
	e_header(&e, 0, false);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "damaged") != NULL && strstr(err, "newer psup") == NULL);

	/* the first record must be a header */
	e_map(&e, 1);
	e_str(&e, "type");
	e_str(&e, "thread");
	e_header(&e, 1, false);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "header") != NULL);

	/* not CBOR maps at all */
	e_uint(&e, 7);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL); /* empty */
	CHECK(strstr(err, "empty") != NULL && strncmp(err, "hand: empty", 11) == 0);

	/* a node whose parent is itself: no cycles */
	e_header(&e, 1, false);
	e_map(&e, 4);
	e_str(&e, "type");
	e_str(&e, "loc");
	e_str(&e, "id");
	e_uint(&e, 1);
	e_str(&e, "image");
	e_str(&e, "/bin/x");
	e_str(&e, "frames");
	e_arr(&e, 0);
	e_map(&e, 4);
	e_str(&e, "type");
	e_str(&e, "node");
	e_str(&e, "id");
	e_uint(&e, 5);
	e_str(&e, "parent");
	e_uint(&e, 5);
	e_str(&e, "loc");
	e_uint(&e, 1);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	check_err(err, "hand: record 3: ");

	/* a sample of an undefined node */
	e_header(&e, 1, false);
	e_map(&e, 3);
	e_str(&e, "type");
	e_str(&e, "samples");
	e_str(&e, "tid");
	e_uint(&e, 9);
	e_str(&e, "counts");
	e_arr(&e, 2);
	e_uint(&e, 77);
	e_uint(&e, 1);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	check_err(err, "hand: record 2: ");
	CHECK(strstr(err, "77") != NULL);

	/* absent keys do not inherit the previous record's values: the second
	 * unknown-function loc has no "near", so it is "[x] (no symbols)" */
	{
		struct rep_profile *p;
		char *out;

		e_header(&e, 1, false);
		/* clang-format off */
		for (int i = 1; i <= 2; i++) {
			e_map(&e, i == 1 ? 4 : 3);
			e_str(&e, "type"); e_str(&e, "loc");
			e_str(&e, "id"); e_uint(&e, (uint64_t)i);
			e_str(&e, "image"); e_str(&e, "/bin/x");
			if (i == 1) {
				e_str(&e, "near"); e_str(&e, "f");
			}
			e_map(&e, 3);
			e_str(&e, "type"); e_str(&e, "node");
			e_str(&e, "id"); e_uint(&e, (uint64_t)i);
			e_str(&e, "loc"); e_uint(&e, (uint64_t)i);
			e_map(&e, 3);
			e_str(&e, "type"); e_str(&e, "samples");
			e_str(&e, "tid"); e_uint(&e, 1);
			e_str(&e, "counts"); e_arr(&e, 2); e_uint(&e, (uint64_t)i); e_uint(&e, 1);
		}
		/* clang-format on */
		rep_profile_new(&p);
		CHECK_EQ_INT(rep_profile_load_buf(p, e.b, e.n, "hand", err, sizeof(err)), 0);
		out = render(p, REP_FORMAT_JSON, REP_VIEW_FUNCTIONS, 0);
		CHECK(out && strstr(out, "[x] after f") && strstr(out, "[x] (no symbols)"));
		free(out);
		rep_profile_free(p);
		e.n = 0;
	}

	/* a known key of the wrong type */
	e_header(&e, 1, false);
	e_map(&e, 3);
	e_str(&e, "type");
	e_str(&e, "lost");
	e_str(&e, "tid");
	e_str(&e, "nine");
	e_str(&e, "count");
	e_uint(&e, 1);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "tid") != NULL);

	/* deep nesting in an unknown key: refused, without recursing 100000 deep */
	e_header(&e, 1, false);
	e_map(&e, 2);
	e_str(&e, "type");
	e_str(&e, "x");
	e_str(&e, "deep");
	for (int i = 0; i < 100000; i++)
		e_arr(&e, 1);
	e_uint(&e, 0);
	CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "nested") != NULL);

	/* a length far beyond the input cannot be complete: a truncated tail,
	 * and no allocation of that size */
	{
		struct rep_profile *p;
		size_t nrec = 0;

		e_header(&e, 1, false);
		e_map(&e, 2);
		e_str(&e, "type");
		e_str(&e, "samples");
		e_str(&e, "counts");
		e_need(&e, 9);
		e.b[e.n++] = 0x9b; /* array, 8-byte length */
		for (int i = 0; i < 8; i++)
			e.b[e.n++] = 0x7f;
		rep_profile_new(&p);
		CHECK_EQ_INT(rep_profile_load_buf(p, e.b, e.n, "hand", err, sizeof(err)), 0);
		CHECK(rep_profile_truncated(p, &nrec));
		CHECK_EQ_INT(nrec, 1);
		rep_profile_free(p);
		e.n = 0;
	}
	free(e.b);
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Records wait in the writer until a flush, the close or a batch's worth of
 * them (a write per record cost a thread-churning program three system
 * calls per thread); the header goes out at once. */
static void test_writer_batches(void)
{
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_thread t = { .tid = 2, .pid = 1, .parent = 1, .name = "t", .time = 5 };
	char path[256], err[256];
	struct rep_writer *w;
	struct rep_profile *p;
	off_t header, before;
	int i;

	snprintf(path, sizeof(path), "%s/batches.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, 0, &w), 0);
	CHECK_EQ_INT(rep_writer_flush(NULL), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	header = file_size(path);
	CHECK(header > 0);
	for (i = 0; i < 100; i++) {
		t.tid = 2 + i;
		CHECK_EQ_INT(rep_write_thread(w, &t), 0);
		CHECK_EQ_INT(rep_write_thread_end(w, t.tid, 10), 0);
	}
	CHECK(file_size(path) == header);
	CHECK_EQ_INT(rep_writer_flush(w), 0);
	before = file_size(path);
	CHECK(before > header);
	/* bounded: a run that never flushes still writes as it goes */
	for (i = 0; i < 10000 && file_size(path) == before; i++)
		CHECK_EQ_INT(rep_write_thread_end(w, 2, 10), 0);
	CHECK(file_size(path) > before);
	CHECK(i < 10000);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	rep_profile_free(p);
}

/* Names with quotes, control characters and bytes that are not UTF-8 must
 * still give valid JSON and harmless text. */
static void test_nasty_strings(void)
{
	char path[256], err[256];
	struct rep_frame fr[] = { { "we\"ird\\ \x01 \xff\xfe \xe2\x82 ok\xc3\xa9 |`<b>", "f\tile.c", 1 } };
	struct rep_loc l = { 1, 1, 0x10, "/x/\x1b[31mimg", NULL, 0x10, 1, fr };
	struct rep_header h = { .mode = "attach", .pid = 1, .event = "task-clock", .period = 1 };
	uint64_t s[] = { 1, 3 };
	struct rep_writer *w;
	struct rep_profile *p;
	char *out;

	snprintf(path, sizeof(path), "%s/nasty.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, 0, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_loc(w, &l), 0);
	CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
	CHECK_EQ_INT(rep_write_samples(w, 1, s, 1), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	/* CBOR text is UTF-8: the stray bytes (0xff, 0xfe and the cut-short
	 * 0xe2 0x82) are U+FFFD in the file, one each; the rest as it was. */
	FILE *f = fopen(path, "rb");
	char raw[4096];
	size_t nraw = f ? fread(raw, 1, sizeof(raw), f) : 0;

	if (f)
		fclose(f);
	CHECK(nraw > 0 && !memmem(raw, nraw, "\xff", 1) && !memmem(raw, nraw, "\xfe", 1));
	static const char want[] = " \x01 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd ok\xc3\xa9 ";
	CHECK(memmem(raw, nraw, want, sizeof(want) - 1) != NULL);
	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	out = render(p, REP_FORMAT_JSON, 0, 0);
	CHECK(out != NULL);
	if (out) {
		CHECK(strstr(out, "\xef\xbf\xbd") != NULL);
		CHECK(strstr(out, "\"mode\":\"attach\"") != NULL);
		check_json_parses(out);
	}
	free(out);
	out = render(p, REP_FORMAT_TEXT, 0, 0);
	CHECK(out && !strchr(out, '\x1b') && !strchr(out, '\x01'));
	CHECK(out && strstr(out, "incomplete: no end record"));
	free(out);
	out = render(p, REP_FORMAT_MARKDOWN, 0, 0);
	CHECK(out && strstr(out, "\\|") && !strstr(out, "|`<b>"));
	free(out);
	rep_profile_free(p);
}

/* Thread rows: an exec (thread_end, thread) keeps one row; a reused tid
 * after samples is a new thread; late samples stay with their thread. */
static void test_threads(void)
{
	char path[256], err[256];
	struct rep_header h = { .mode = "run", .pid = 10, .event = "task-clock", .period = 1 };
	struct rep_frame fr[] = { { "f", "f.c", 1 } };
	struct rep_loc l = { 1, 10, 0x10, "/bin/t", NULL, 0x10, 1, fr };
	struct rep_thread t;
	uint64_t s[] = { 1, 2 };
	struct rep_writer *w;
	struct rep_profile *p;
	char *json;

	snprintf(path, sizeof(path), "%s/threads.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, 0, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_loc(w, &l), 0);
	CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
	t = (struct rep_thread){ 10, 10, 0, "psup", 1, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 10, 2), 0);
	t.name = "app";
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	t = (struct rep_thread){ 11, 10, 10, "first", 3, 1 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_samples(w, 11, s, 1), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 11, 4), 0);
	CHECK_EQ_INT(rep_write_samples(w, 11, s, 1), 0); /* flushed late */
	t.name = "second";
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_samples(w, 11, s, 1), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);

	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	json = render(p, REP_FORMAT_JSON, REP_VIEW_THREADS | REP_VIEW_SUMMARY, 0);
	CHECK(json != NULL);
	if (json) {
		CHECK_EQ_INT(json_num(json, "summary", "\"runs\"", "threads"), 3);
		CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"first\"", "samples"), 4);
		CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"second\"", "samples"), 2);
		CHECK_EQ_INT(json_num(json, "threads", "\"name\":\"app\"", "samples"), 0);
		CHECK(strstr(json, "\"psup\"") == NULL);
		check_json_parses(json);
	}
	free(json);
	rep_profile_free(p);
}

/* The text of the row of the "Thread states" table that contains match:
 * from the line's start to its end, in a static buffer ("" when none). */
static const char *states_line(const char *txt, const char *match)
{
	static char line[256];
	const char *s = txt ? strstr(txt, "Thread states") : NULL, *m, *b, *e;

	line[0] = '\0';
	if (!s || !(m = strstr(s, match)))
		return line;
	for (b = m; b > s && b[-1] != '\n'; b--)
		;
	e = strchr(m, '\n');
	if (!e)
		e = m + strlen(m);
	snprintf(line, sizeof(line), "%.*s", (int)(e - b), b);
	return line;
}

/* Per-thread scheduling states: thread_times records sum per thread row
 * (an exec keeps the row), a reused tid gets its own, the views show them;
 * a file without them prints as before; bad thread_times records fail. */
static void test_thread_times(void)
{
	char path[256], err[256];
	struct rep_header h = { .mode = "run", .pid = 10, .event = "task-clock", .period = 1 };
	struct rep_frame fr[] = { { "f", "f.c", 1 } };
	struct rep_loc l = { 1, 10, 0x10, "/bin/t", NULL, 0x10, 1, fr };
	/* 1 s: 0.5 running, 0.1 runnable, 0.2 futex, 0.1 io, 0.1 sleep */
	struct rep_thread_times t1 = { 500000000, 100000000, 200000000, 100000000, 100000000, 0 };
	/* after the exec: 1 s more, all of it asleep but 3 ms of other */
	struct rep_thread_times t2 = { 0, 0, 0, 0, 997000000, 3000000 };
	struct rep_thread_times t3 = { 2000000000, 0, 0, 0, 0, 0 };
	struct rep_thread t;
	uint64_t s[] = { 1, 5 };
	struct rep_writer *w;
	struct rep_profile *p;
	struct enc e = { 0 };
	char *out;

	snprintf(path, sizeof(path), "%s/times.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, 0, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_loc(w, &l), 0);
	CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
	t = (struct rep_thread){ 10, 10, 0, "main", 1, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_samples(w, 10, s, 1), 0);
	/* tid 11 execs: its two records sum in one row */
	t = (struct rep_thread){ 11, 10, 10, "pre", 2, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_thread_times(w, 11, 3, &t1), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 11, 3), 0);
	t.name = "post";
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_thread_times(w, 11, 4, &t2), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 11, 4), 0);
	/* tid 12 had samples, then the tid is reused: two rows */
	t = (struct rep_thread){ 12, 10, 10, "old12", 5, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_samples(w, 12, s, 1), 0);
	CHECK_EQ_INT(rep_write_thread_times(w, 12, 6, &t3), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 12, 6), 0);
	t = (struct rep_thread){ 12, 10, 10, "new12", 7, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_thread_times(w, 12, 8, &t1), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 12, 8), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);

	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	out = render(p, REP_FORMAT_JSON, REP_VIEW_THREADS, 0);
	CHECK(out != NULL);
	if (out) {
		CHECK(strstr(out, "\"thread_times\":true") != NULL);
		CHECK(strstr(out, "\"name\":\"post\",\"samples\":0,\"percent\":0.0000,\"lost\":0,"
				  "\"top_function\":null,\"times\":{\"running\":500000000,"
				  "\"runnable\":100000000,\"blocked\":1400000000,"
				  "\"blocked_futex\":200000000,\"blocked_io\":100000000,"
				  "\"blocked_sleep\":1097000000,\"blocked_other\":3000000}}") != NULL);
		CHECK_EQ_INT(json_num(out, "threads", "\"name\":\"old12\"", "running"), 2000000000);
		CHECK_EQ_INT(json_num(out, "threads", "\"name\":\"new12\"", "running"), 500000000);
		CHECK_EQ_INT(json_num(out, "threads", "\"name\":\"new12\"", "blocked"), 400000000);
		CHECK(strstr(out, "\"name\":\"pre\"") == NULL);
		CHECK(strstr(out, "\"top_function\":\"f\",\"times\":null}") != NULL); /* main */
		check_json_parses(out);
	}
	free(out);
	out = render(p, REP_FORMAT_TEXT, REP_VIEW_THREADS, 0);
	CHECK(out && strstr(out, "Thread states -- lifetime = run") &&
	      strstr(out, "running  run%  wait%  blocked%  futex%  io%  sleep%  other%"));
	/* post: 2 s; run 25%, wait 5%, blocked 70% = futex 10, io 5, sleep 55, other <1 */
	CHECK(strcmp(states_line(out, "post"),
		     "   11  post     2.000s   0.500s   25%     5%       70%     10%   5%     55%     <1%") == 0);
	CHECK(strcmp(states_line(out, "old12"),
		     "   12  old12    2.000s   2.000s  100%     0%        0%      0%   0%      0%      0%") == 0);
	CHECK(strcmp(states_line(out, "main"),
		     "   10  main          -        -     -      -         -       -    -       -       -") == 0);
	{
		/* no line of the view is wider than 100 columns */
		const char *l = out;
		size_t maxw = 0;

		while (l && *l) {
			const char *nl = strchr(l, '\n');
			size_t n = nl ? (size_t)(nl - l) : strlen(l);

			if (n > maxw)
				maxw = n;
			l = nl ? nl + 1 : NULL;
		}
		CHECK(maxw <= 100);
	}
	free(out);
	/* --top 1: the states table shows the same rows as the threads table */
	out = render(p, REP_FORMAT_TEXT, REP_VIEW_THREADS, 1);
	CHECK(out && strstr(out, "Thread states") && !strstr(out, "post"));
	free(out);
	out = render(p, REP_FORMAT_MARKDOWN, REP_VIEW_THREADS, 0);
	CHECK(out && strstr(out, "### Thread states") &&
	      strstr(out, "| `post` | 2.000s | 0.500s | 25% | 5% | 70% | 10% | 5% | 55% | \\<1% |"));
	free(out);
	rep_profile_free(p);

	/* without thread_times (an older recorder): the view as before */
	snprintf(path, sizeof(path), "%s/notimes.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(path, 0, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	t = (struct rep_thread){ 10, 10, 0, "main", 1, 0 };
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_thread_end(w, 10, 2), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	out = render(p, REP_FORMAT_JSON, REP_VIEW_THREADS, 0);
	CHECK(out && strstr(out, "\"thread_times\":false") && !strstr(out, "\"times\"") &&
	      strstr(out, "\"top_function\":null}]"));
	free(out);
	out = render(p, REP_FORMAT_TEXT, REP_VIEW_THREADS, 0);
	CHECK(out && strstr(out, "Threads") && strstr(out, "main") && !strstr(out, "Thread states"));
	free(out);
	rep_profile_free(p);

	/* records by hand: absent states read as 0, unknown keys are skipped;
	 * no tid, tid 0 or a state that is not a number fail */
	e_header(&e, 1, false);
	e_map(&e, 4);
	e_str(&e, "type");
	e_str(&e, "thread_times");
	e_str(&e, "tid");
	e_uint(&e, 5);
	e_str(&e, "blocked_io");
	e_uint(&e, 7);
	e_str(&e, "blocked_gpu");
	e_uint(&e, 9);
	rep_profile_new(&p);
	CHECK_EQ_INT(rep_profile_load_buf(p, e.b, e.n, "hand", err, sizeof(err)), 0);
	out = render(p, REP_FORMAT_JSON, REP_VIEW_THREADS, 0);
	CHECK(out && strstr(out, "\"times\":{\"running\":0,\"runnable\":0,\"blocked\":7,"
				 "\"blocked_futex\":0,\"blocked_io\":7,"));
	free(out);
	rep_profile_free(p);
	e.n = 0;
	for (int bad = 0; bad < 3; bad++) {
		e_header(&e, 1, false);
		e_map(&e, 2);
		e_str(&e, "type");
		e_str(&e, "thread_times");
		e_str(&e, bad == 0 ? "running" : bad == 1 ? "tid"
							  : "runnable");
		if (bad == 2)
			e_str(&e, "lots");
		else
			e_uint(&e, bad == 0 ? 1 : 0);
		CHECK_EQ_INT(load_enc(&e, err, sizeof(err)), -EINVAL);
		check_err(err, "hand: record 2: ");
	}
	free(e.b);
}

static void test_writer_errors(const char *a)
{
	struct rep_writer *w;
	struct rep_header h = { .mode = "run", .event = "task-clock" };
	int rc;

	/* O_EXCL unless forced */
	CHECK_EQ_INT(rep_writer_open(a, 0, &w), -EEXIST);
	CHECK_EQ_INT(rep_writer_close(NULL), 0);
	/* the first write error sticks, and close returns it */
	if (access("/dev/full", W_OK) == 0) {
		CHECK_EQ_INT(rep_writer_open("/dev/full", REP_WRITER_FORCE, &w), 0);
		rc = rep_write_header(w, &h);
		CHECK_EQ_INT(rc, -ENOSPC);
		CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), -ENOSPC);
		CHECK_EQ_INT(rep_writer_close(w), -ENOSPC);
	}
	/* unreadable input: errno text */
	{
		struct rep_profile *p;
		char err[256], path[300];

		snprintf(path, sizeof(path), "%s/missing.cbor", tmpdir);
		rep_profile_new(&p);
		CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), -ENOENT);
		check_err(err, path);
		rep_profile_free(p);
	}
}

int main(void)
{
	char a[256], b[256], cmd[300];
	uint64_t seed = 0x1234567887654321ULL;
	long cases = 0;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	devnull = fopen("/dev/null", "w");
	python_ok = system("command -v python3 >/dev/null 2>&1") == 0;
	if (!python_ok)
		printf("# python3 not found: JSON parse checks skipped\n");
	snprintf(a, sizeof(a), "%s/a.cbor", tmpdir);
	snprintf(b, sizeof(b), "%s/b.cbor", tmpdir);
	CHECK_EQ_INT(write_profile(b, 1), 0);
	CHECK_EQ_INT(write_profile(a, 0), 0); /* last: bounds[] describe a */

	test_round_trip(a, b);
	test_schema_rules();
	test_nasty_strings();
	test_threads();
	test_thread_times();
	test_truncation(a);
	test_corruption(a, &seed, &cases);
	test_garbage(&seed, &cases);
	test_writer_errors(a);
	test_writer_batches();
	printf("# %ld corrupted or random inputs\n", cases);

	fclose(devnull);
	/* PSUP_TEST_KEEP=1 keeps the files, to look at them with psup report */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (getenv("PSUP_TEST_KEEP"))
		printf("# files kept in %s\n", tmpdir);
	else if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return tap_done();
}
