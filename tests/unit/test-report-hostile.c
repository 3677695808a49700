/*
 * Hostile records (issue 22): output and memory bounded by what is printed
 * whatever the depth of the input, a bounded read of pipes and devices, and
 * reports that do not depend on the per-process hash seed.
 */
#include "report/report.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hash.h"
#include "report/escape.h"
#include "report/export.h"
#include "report/json.h"
#include "report/report-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-hostile-XXXXXX";

static size_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A chain of n distinct functions, each with one self sample: the
 * bottom-up tree of all caller paths has n (n + 1) / 2 rows. */
static int write_chain(const char *path, unsigned n)
{
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_thread t = { 1, 1, 0, "t", 1, 0 };
	uint64_t *pairs = malloc(2 * n * sizeof(*pairs));
	struct rep_writer *w;
	int rc;

	if (!pairs)
		return -ENOMEM;
	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc) {
		free(pairs);
		return rc;
	}
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t);
	for (unsigned i = 1; !rc && i <= n; i++) {
		char name[32];
		struct rep_frame f = { name, "chain.c", i };
		struct rep_loc l = { i, 1, 0x1000 + i, "/bin/chain", NULL, 0x1000 + i, 1, &f };

		snprintf(name, sizeof(name), "f%u", i);
		rc = rep_write_loc(w, &l);
		rc = rc ? rc : rep_write_node(w, i, i - 1, i);
		pairs[2 * (i - 1)] = i;
		pairs[2 * (i - 1) + 1] = 1;
	}
	rc = rc ? rc : rep_write_samples(w, 1, pairs, n);
	free(pairs);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static size_t longest_line(const char *s)
{
	size_t best = 0;

	while (*s) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		best = n > best ? n : best;
		s += n + (e != NULL);
	}
	return best;
}

/* Item 11: 226 MB of JSON from a 500 KB record, gigabytes of indentation
 * with --depth 0. */
static void test_deep_chain(void)
{
	enum { N = 3000 };
	struct rep_options o = { .format = REP_FORMAT_JSON, .views = REP_VIEW_ALL };
	struct rep_tree_options to = { 256, 0.0 }; /* psup report's JSON defaults */
	struct rep_profile *p = NULL;
	char file[256], err[256];
	struct rep_ctree td, bu;
	size_t rec;
	char *s;

	snprintf(file, sizeof(file), "%s/chain.cbor", tmpdir);
	CHECK_EQ_INT(write_chain(file, N), 0);
	rec = file_size(file);
	CHECK(rec > 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);

	/* the bottom-up tree of every level: bounded by the top-down one */
	memset(&td, 0, sizeof(td));
	memset(&bu, 0, sizeof(bu));
	CHECK_EQ_INT(rep_ctree_top_down(&td, p), 0);
	CHECK_EQ_INT(td.n, N + 1);
	CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &td, 0, 0.0, 0), 0);
	CHECK(bu.n <= 5 * (size_t)td.n + 4096);
	CHECK(bu.hidden > 0);
	CHECK_EQ_INT(bu.nodes[0].nchildren, N); /* every function still there */
	printf("chain of %d: bottom-up %u rows, %llu subtrees hidden\n", N, bu.n,
	       (unsigned long long)bu.hidden);
	rep_ctree_release(&bu);
	rep_ctree_release(&td);

	/* JSON with the defaults: a bounded multiple of the record */
	s = fx_render_ext(p, &o, &to);
	CHECK(s != NULL);
	if (s) {
		printf("json: %zu bytes from a %zu-byte record\n", strlen(s), rec);
		CHECK(strlen(s) <= 64 * rec);
		CHECK(strstr(s, "\"bottom_up\":0}") == NULL); /* the cut is reported */
	}
	free(s);

	/* text and markdown, every level: no line grows with the depth */
	to.depth = 0;
	o.views = REP_VIEW_TOP_DOWN;
	for (int f = 0; f < 2; f++) {
		o.format = f ? REP_FORMAT_MARKDOWN : REP_FORMAT_TEXT;
		s = fx_render_ext(p, &o, &to);
		CHECK(s != NULL);
		if (s) {
			CHECK(longest_line(s) <= 300);
			CHECK(strstr(s, "[depth 3000] ") != NULL);
		}
		free(s);
	}
	rep_profile_free(p);
}

/* Pretty JSON of a deep nesting: indentation capped. */
static void test_pretty_deep(void)
{
	enum { D = 5000 };
	char *in = malloc(2 * D + 2), *out = NULL;
	size_t n = 0;
	FILE *m;

	if (!in)
		return;
	memset(in, '[', D);
	in[D] = '1';
	memset(in + D + 1, ']', D);
	m = open_memstream(&out, &n);
	CHECK(m && rep_json_pretty(in, 2 * D + 1, m) == 0);
	if (m)
		fclose(m);
	CHECK(out && longest_line(out) <= 200);
	CHECK(n <= (size_t)D * 2 * 200);
	free(out);
	free(in);
}

/* Item 12: a pipe is read up to a bound, and says so. */
static void test_stream_bound(void)
{
	char file[256], path[64], err[512];
	struct rep_profile *p = NULL;
	int fds[2], st;
	pid_t pid;

	snprintf(file, sizeof(file), "%s/chain.cbor", tmpdir);
	CHECK(pipe(fds) == 0);
	pid = fork();
	if (pid == 0) {
		/* a whole record file, then zeros for ever */
		static char zeros[65536];
		FILE *f = fopen(file, "r");
		char buf[65536];
		size_t r;

		close(fds[0]);
		while (f && (r = fread(buf, 1, sizeof(buf), f)) > 0)
			if (write(fds[1], buf, r) < 0)
				_exit(0);
		while (write(fds[1], zeros, sizeof(zeros)) > 0)
			;
		_exit(0);
	}
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load_max(p, path, 4 << 20, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "more than 4 MiB from a pipe or device") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	printf("%s\n", err);
	rep_profile_free(p);
	close(fds[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);

	/* /dev/zero: refused at its first item */
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, "/dev/zero", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "/dev/zero: record 1: not a map") != NULL);
	rep_profile_free(p);
}

/* Item 10: the hash seed decides where entries sit, never what prints. */
static void test_seed_independent(void)
{
	static const enum rep_format fmts[] = { REP_FORMAT_TEXT, REP_FORMAT_MARKDOWN,
						REP_FORMAT_JSON, REP_FORMAT_FOLDED,
						REP_FORMAT_SPEEDSCOPE };
	enum { NF = sizeof(fmts) / sizeof(fmts[0]) };
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_thread t = { 1, 1, 0, "t", 1, 0 };
	char file[256], err[256], *first[NF] = { NULL };
	struct rep_writer *w;
	uint64_t pairs[2 * 64];
	int rc;

	/* 64 functions of one name in 64 images, each with 1 sample: the
	 * thread's top function is a tie broken without slot order */
	snprintf(file, sizeof(file), "%s/ties.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(file, REP_WRITER_FORCE, &w), 0);
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t);
	for (unsigned i = 1; i <= 64; i++) {
		char image[32];
		struct rep_frame f = { "same", "s.c", i };
		struct rep_loc l = { i, 1, 0x1000 * i, image, NULL, 0x10, 1, &f };

		snprintf(image, sizeof(image), "/lib/i%u.so", i);
		rc = rc ? rc : rep_write_loc(w, &l);
		rc = rc ? rc : rep_write_node(w, i, 0, i);
		rc = rc ? rc : rep_write_lock_waits(w, 1, 0x100 * i, i, true, NULL, 1, 1000);
		pairs[2 * (i - 1)] = i;
		pairs[2 * (i - 1) + 1] = 1;
	}
	rc = rc ? rc : rep_write_samples(w, 1, pairs, 64);
	CHECK_EQ_INT(rep_writer_close(w) | rc, 0);
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct rep_profile *p = NULL;

		psup_hash_seed_set(seed * 0x9e3779b97f4a7c15ULL);
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
		for (int f = 0; f < NF; f++) {
			struct rep_options o = { .format = fmts[f], .views = REP_VIEW_ALL };
			char *s = fx_render_ext(p, &o, NULL);

			CHECK(s != NULL);
			if (!first[f])
				first[f] = s;
			else {
				CHECK(s && strcmp(s, first[f]) == 0);
				free(s);
			}
		}
		rep_profile_free(p);
	}
	psup_hash_seed_set(0);
	for (int f = 0; f < NF; f++)
		free(first[f]);
}

static char *folded_of(const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return NULL;
	rep_folded_put(mem, name);
	fclose(mem);
	return buf;
}

/* The exports' escaping: a folded frame cannot split (';') or end its line
 * (a newline), a pprof string is UTF-8 without control characters. */
static void test_export_escapes(void)
{
	static const struct {
		const char *in, *folded, *text;
	} cases[] = {
		{ "a;b", "a:b", "a;b" },
		{ "x\ny 3", "x?y 3", "x?y 3" },
		{ "evil_\x1b]0;t\x07", "evil_?]0:t?", "evil_?]0;t?" },
		{ "c1_\xc2\x9b"
		  "31m",
		  "c1_?31m", "c1_?31m" },
		{ "bad\xff\xc3x", "bad?\x3fx", "bad?\x3fx" },
		{ "caf\xc3\xa9", "caf\xc3\xa9", "caf\xc3\xa9" },
		{ "", "?", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *f = folded_of(cases[i].in), *t = rep_text_dup(cases[i].in);

		CHECK(f && strcmp(f, cases[i].folded) == 0);
		CHECK(t && strcmp(t, cases[i].text) == 0);
		free(f);
		free(t);
	}
	{
		char *t = rep_text_dup(NULL);

		CHECK(t && !*t);
		free(t);
	}
}

/* Frames (';'-separated) of the longest line of folded text s, and how
 * many lines begin with prefix. */
static size_t folded_frames(const char *s, const char *prefix, size_t *nprefix)
{
	size_t most = 0, frames = 1;

	*nprefix = 0;
	for (const char *l = s; *l; l++) {
		if (l == s || l[-1] == '\n') {
			*nprefix += strncmp(l, prefix, strlen(prefix)) == 0;
			frames = 1;
		}
		if (*l == ';')
			frames++;
		if (*l == '\n' && frames > most)
			most = frames;
	}
	return most;
}

/* The exports of deep stacks: each the innermost REP_EXPORT_MAX_FRAMES
 * frames under a "[truncated]" root frame. Without the bound every sample
 * printed its whole stack: a 100 KiB record of 2000 nodes on a loc of 8000
 * inlined frames made 3 GB of folded lines (found while fuzz-exports ran,
 * by a record written for it). */
static void test_exports_deep(void)
{
	enum { N = 3000,
	       F = 5000 };
	struct rep_options o = { .format = REP_FORMAT_FOLDED };
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_thread t = { 1, 1, 0, "t", 1, 0 };
	struct rep_frame *frames = calloc(F, sizeof(*frames));
	char(*names)[16] = calloc(F, sizeof(*names));
	struct rep_profile *p = NULL;
	char file[256], err[256], *s;
	struct rep_writer *w;
	uint64_t pair[2] = { 1, 1 };
	size_t n;

	/* a chain of N functions, a sample at each depth */
	snprintf(file, sizeof(file), "%s/chain.cbor", tmpdir);
	CHECK_EQ_INT(write_chain(file, N), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
	s = fx_render_ext(p, &o, NULL);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_INT(folded_frames(s, "[truncated];", &n), REP_EXPORT_MAX_FRAMES + 1);
		CHECK_EQ_INT(n, N - REP_EXPORT_MAX_FRAMES);
		CHECK(strstr(s, "\n[truncated];f953;f954;") != NULL); /* f3000's innermost */
		CHECK(strstr(s, "\nf1;f2;f3;") != NULL);              /* shallower stacks are whole */
	}
	free(s);
	o.format = REP_FORMAT_SPEEDSCOPE;
	s = fx_render_ext(p, &o, NULL);
	CHECK(s && strstr(s, "{\"name\":\"[truncated]\"}") != NULL);
	free(s);
	rep_profile_free(p);

	/* one loc of F inlined frames: refused, in one line, as no psup
	 * writes it (REP_LOC_MAX_FRAMES); one of the most it takes, whole */
	CHECK(frames && names);
	if (!frames || !names)
		goto out;
	for (unsigned i = 0; i < F; i++) {
		snprintf(names[i], sizeof(names[i]), "g%u", i);
		frames[i] = (struct rep_frame){ names[i], "inl.c", i + 1 };
	}
	for (unsigned k = 0; k < 2; k++) {
		unsigned nf = k ? REP_LOC_MAX_FRAMES : F;

		snprintf(file, sizeof(file), "%s/inlined%u.cbor", tmpdir, nf);
		CHECK_EQ_INT(rep_writer_open(file, REP_WRITER_FORCE, &w), 0);
		CHECK_EQ_INT(rep_write_header(w, &h), 0);
		CHECK_EQ_INT(rep_write_thread(w, &t), 0);
		CHECK_EQ_INT(rep_write_loc(w, &(struct rep_loc){ 1, 1, 0x10, "/bin/inl", NULL, 0x10, nf, frames }),
			     0);
		CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
		CHECK_EQ_INT(rep_write_samples(w, 1, pair, 1), 0);
		CHECK_EQ_INT(rep_writer_close(w), 0);
		CHECK_EQ_INT(rep_profile_new(&p), 0);
		err[0] = '\0';
		if (!k) {
			CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), -EINVAL);
			CHECK(strstr(err, "inlined frames") != NULL && !strchr(err, '\n'));
			rep_profile_free(p);
			continue;
		}
		CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
		o.format = REP_FORMAT_FOLDED;
		s = fx_render_ext(p, &o, NULL);
		CHECK(s && strncmp(s, "g63;g62;", 8) == 0);
		CHECK(s && strstr(s, ";g1;g0 1\n") != NULL);
		CHECK(s && folded_frames(s, "", &n) == REP_LOC_MAX_FRAMES);
		free(s);
		rep_profile_free(p);
	}

	/* That loc under a chain of C nodes, a sample at each of the last K:
	 * each function's total is K, however often it recurs on a path (the
	 * views once walked every sample's path: K x C x 64 frames). */
	enum { C = 3000,
	       K = 1000 };
	uint64_t *counts = calloc(2 * K, sizeof(*counts));

	CHECK(counts != NULL);
	if (!counts)
		goto out;
	snprintf(file, sizeof(file), "%s/recursive.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(file, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_loc(w, &(struct rep_loc){ 1, 1, 0x10, "/bin/inl", NULL, 0x10, REP_LOC_MAX_FRAMES,
							 frames }),
		     0);
	for (unsigned i = 1; i <= C; i++)
		CHECK_EQ_INT(rep_write_node(w, i, i - 1, 1), 0);
	for (unsigned i = 0; i < K; i++) {
		counts[2 * i] = C - K + 1 + i;
		counts[2 * i + 1] = 1;
	}
	CHECK_EQ_INT(rep_write_samples(w, 1, counts, K), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
	o.format = REP_FORMAT_JSON;
	o.views = REP_VIEW_FUNCTIONS;
	s = fx_render_ext(p, &o, NULL);
	CHECK(s && strstr(s, "\"function\":\"g63\"") != NULL);
	CHECK(s && strstr(s, "\"total\":1000,") != NULL);
	CHECK(s && !strstr(s, "\"total\":1001") && !strstr(s, "\"total\":2000"));
	free(s);
	rep_profile_free(p);
	free(counts);
out:
	free(frames);
	free(names);
}

/* A run without samples exports as nothing: no folded line, a speedscope
 * file without profiles, a pprof profile without samples. Found by
 * fuzz-exports: the folded export passed qsort() its NULL array of no
 * lines (undefined; the sanitizer build stops on it). */
static void test_exports_empty(void)
{
	static const enum rep_format fmts[] = { REP_FORMAT_FOLDED, REP_FORMAT_SPEEDSCOPE,
						REP_FORMAT_PPROF };
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_thread t = { 1, 1, 0, "t", 1, 0 };
	struct rep_end e = { .time = 9, .reason = "exit" };
	struct rep_profile *p;
	struct rep_writer *w;
	char file[256], err[256];

	snprintf(file, sizeof(file), "%s/empty.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(file, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_end(w, &e), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct rep_options o = { .format = fmts[i] };
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		CHECK(mem != NULL);
		if (!mem)
			continue;
		CHECK_EQ_INT(rep_print(p, &o, mem), 0);
		fclose(mem);
		if (fmts[i] == REP_FORMAT_FOLDED)
			CHECK_EQ_INT(len, 0);
		else if (fmts[i] == REP_FORMAT_SPEEDSCOPE)
			CHECK(buf && strstr(buf, "\"profiles\":[]") != NULL);
		else
			CHECK(len > 0); /* gzip's header and trailer at least */
		free(buf);
	}
	rep_profile_free(p);
}

/* A count and a period of 1e18 each (a record may say so): the weights
 * saturate, as the counts do, where they wrapped to a small number. */
static void test_exports_huge_weights(void)
{
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1000000000000000000ULL, .clock_event = true };
	struct rep_thread t = { 1, 1, 0, "t", 1, 0 };
	struct rep_frame f[] = { { "hot", "hot.c", 1 } };
	struct rep_options o = { .format = REP_FORMAT_SPEEDSCOPE };
	uint64_t pair[2] = { 1, 1000000000000000000ULL };
	struct rep_profile *p;
	struct rep_writer *w;
	char file[256], err[256], *s;

	snprintf(file, sizeof(file), "%s/huge.cbor", tmpdir);
	CHECK_EQ_INT(rep_writer_open(file, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &h), 0);
	CHECK_EQ_INT(rep_write_thread(w, &t), 0);
	CHECK_EQ_INT(rep_write_loc(w, &(struct rep_loc){ 1, 1, 0x10, "/bin/hot", NULL, 0x10, 1, f }), 0);
	CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
	CHECK_EQ_INT(rep_write_samples(w, 1, pair, 1), 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
	s = fx_render_ext(p, &o, NULL);
	CHECK(s && strstr(s, "\"weights\":[18446744073709551615]") != NULL);
	CHECK(s && strstr(s, "\"endValue\":18446744073709551615") != NULL);
	free(s);
	rep_profile_free(p);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	test_exports_huge_weights();
	test_deep_chain();
	test_pretty_deep();
	test_stream_bound();
	test_seed_independent();
	test_export_escapes();
	test_exports_empty();
	test_exports_deep();
	fx_run("rm -rf %s", tmpdir);
	return tap_done();
}
