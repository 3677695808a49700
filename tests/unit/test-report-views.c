/*
 * The calling-context views: top-down and bottom-up trees built from
 * synthetic record files (merging over threads, runs, inlined frames,
 * recursion, locations without frames), their JSON, text and markdown, and
 * a large tree.
 */
#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-views-XXXXXX";

/*
 * Thread 100:  _start -> main(app.c:10) -> a(app.c:20) -> b         30
 *                                                      b -> [kernel]  2
 *                                       a(app.c:22) inlines helper    5
 *              _start -> main(app.c:12) -> c                         10
 *              _start -> main(app.c:14) -> f -> f -> f                4
 *                                          f (the outer one)          1
 *              [libx.so] (no symbols) (a root without frames)               3
 * Thread 101:  start_thread -> worker                                60
 *              the node of b above                                    5
 * 120 samples. id_base renumbers every loc and node, as another run would.
 */
static int write_profile(const char *path, uint64_t id_base)
{
	static char *argv[] = { "./app", NULL };
	struct rep_header h = {
		.mode = "run",
		.argv = argv,
		.pid = 100,
		.wall_ns = 1,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = 1000000,
		.clock_event = true,
		.hostname = "host",
	};
	struct rep_thread t1 = { 100, 100, 0, "app", 1000, 0 };
	struct rep_thread t2 = { 101, 100, 100, "worker", 2000, 0 };
	struct rep_frame f_start[] = { { "_start", "start.S", 5 } };
	struct rep_frame f_main10[] = { { "main", "app.c", 10 } };
	struct rep_frame f_main12[] = { { "main", "app.c", 12 } };
	struct rep_frame f_main14[] = { { "main", "app.c", 14 } };
	struct rep_frame f_a[] = { { "a", "app.c", 20 } };
	struct rep_frame f_b[] = { { "b", "app.c", 30 } };
	struct rep_frame f_c[] = { { "c", "app.c", 40 } };
	struct rep_frame f_inl[] = { { "helper", "app.h", 3 }, { "a", "app.c", 22 } };
	struct rep_frame f_f[] = { { "f", "rec.c", 7 } };
	struct rep_frame f_st[] = { { "start_thread", "pthread_create.c", 442 } };
	struct rep_frame f_w[] = { { "worker", "app.c", 50 } };
	uint64_t B = id_base;
	struct rep_loc locs[] = {
		{ B + 1, 100, 0x1000, "/usr/bin/app", NULL, 0x1000, 1, f_start },
		{ B + 2, 100, 0x1010, "/usr/bin/app", NULL, 0x1010, 1, f_main10 },
		{ B + 3, 100, 0x1020, "/usr/bin/app", NULL, 0x1020, 1, f_main12 },
		{ B + 4, 100, 0x1030, "/usr/bin/app", NULL, 0x1030, 1, f_main14 },
		{ B + 5, 100, 0x1040, "/usr/bin/app", NULL, 0x1040, 1, f_a },
		{ B + 6, 100, 0x1050, "/usr/bin/app", NULL, 0x1050, 1, f_b },
		{ B + 7, 100, 0x1060, "/usr/bin/app", NULL, 0x1060, 1, f_c },
		{ B + 8, 100, 0x1070, "/usr/bin/app", NULL, 0x1070, 2, f_inl },
		{ B + 9, 100, 0x1080, "/usr/bin/app", NULL, 0x1080, 1, f_f },
		{ B + 10, 100, 0x7000, "/lib/libc.so.6", NULL, 0x7000, 1, f_st },
		{ B + 11, 100, 0x1090, "/usr/bin/app", NULL, 0x1090, 1, f_w },
		{ B + 12, 100, 0xffffffff81000000ULL, "[kernel]", NULL, 0, 0, NULL },
		{ B + 13, 100, 0x9234, "/usr/lib/libx.so", NULL, 0x1234, 0, NULL },
	};
	/* node id, parent, loc */
	/* clang-format off */
	uint64_t nodes[][3] = {
		{ 1, 0, 1 },  { 2, 1, 2 },   { 3, 2, 5 },  { 4, 3, 6 },   { 5, 1, 3 },
		{ 6, 5, 7 },  { 7, 2, 8 },   { 8, 1, 4 },  { 9, 8, 9 },   { 10, 9, 9 },
		{ 11, 10, 9 }, { 12, 4, 12 }, { 13, 0, 13 }, { 14, 0, 10 }, { 15, 14, 11 },
	};
	/* clang-format on */
	uint64_t s1[] = { B + 4, 30, B + 12, 2, B + 7, 5, B + 6, 10, B + 11, 4, B + 9, 1, B + 13, 3 };
	uint64_t s2[] = { B + 15, 60, B + 4, 5 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 120 };
	struct rep_writer *w;
	int rc;

	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t1);
	rc = rc ? rc : rep_write_thread(w, &t2);
	for (size_t i = 0; !rc && i < sizeof(locs) / sizeof(locs[0]); i++)
		rc = rep_write_loc(w, &locs[i]);
	for (size_t i = 0; !rc && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = rep_write_node(w, B + nodes[i][0], nodes[i][1] ? B + nodes[i][1] : 0,
				    B + nodes[i][2]);
	rc = rc ? rc : rep_write_samples(w, 100, s1, 7);
	rc = rc ? rc : rep_write_samples(w, 101, s2, 2);
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

/* A path of children by function name (line 0: any call site). */
static uint32_t path(const struct rep_ctree *t, const char *const *names, const uint32_t *lines)
{
	uint32_t n = 0;

	for (size_t i = 0; names[i] && n != REP_NONE; i++)
		n = rep_ctree_child(t, n, names[i], lines ? lines[i] : 0);
	return n;
}

#define P(...) ((const char *const[]){ __VA_ARGS__, NULL })

static uint64_t incl(const struct rep_ctree *t, uint32_t n)
{
	return n == REP_NONE ? UINT64_MAX : t->nodes[n].inclusive;
}

static uint64_t excl(const struct rep_ctree *t, uint32_t n)
{
	return n == REP_NONE ? UINT64_MAX : t->nodes[n].exclusive;
}

/* Every node: inclusive = exclusive + the children's inclusive (top-down);
 * children sorted by the given key. Returns the number of bad nodes. */
static unsigned check_sums(const struct rep_ctree *t, bool bottom_up)
{
	unsigned bad = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		const struct rep_cnode *c = &t->nodes[i];
		uint64_t sum = 0, prev = UINT64_MAX;

		for (uint32_t j = 0; j < c->nchildren; j++) {
			const struct rep_cnode *k = &t->nodes[t->children[c->first_child + j]];
			uint64_t key = bottom_up ? k->exclusive : k->inclusive;

			sum += k->inclusive;
			if (key > prev || k->parent != i || k->depth != c->depth + 1)
				bad++;
			prev = key;
		}
		if (!bottom_up && i && c->inclusive != c->exclusive + sum)
			bad++;
		if (bottom_up && c->inclusive < c->exclusive)
			bad++;
	}
	return bad;
}

static char *render(const struct rep_profile *p, const struct rep_options *o)
{
	return fx_render_ext(p, o, NULL);
}

static bool json_valid(const char *json)
{
	/* without python3 the string checks still run */
	return access("/usr/bin/python3", X_OK) != 0 || fx_json_parses(tmpdir, json);
}

static void test_top_down(const struct rep_profile *p, uint64_t k)
{
	struct rep_ctree t;

	CHECK_EQ_INT(rep_ctree_top_down(&t, p), 0);
	CHECK_EQ_INT(t.nodes[0].inclusive, 120 * k);
	/* three roots, by inclusive samples */
	CHECK_EQ_INT(t.nodes[0].nchildren, 3);
	if (t.nodes[0].nchildren == 3) {
		CHECK(!strcmp(rep_str(p, t.nodes[t.children[0]].function), "start_thread"));
		CHECK(!strcmp(rep_str(p, t.nodes[t.children[1]].function), "_start"));
		CHECK(!strcmp(rep_str(p, t.nodes[t.children[2]].function), "[libx.so] (no symbols)"));
	}
	CHECK_EQ_INT(incl(&t, path(&t, P("start_thread"), NULL)), 60 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("start_thread", "worker"), NULL)), 60 * k);
	CHECK_EQ_INT(incl(&t, path(&t, P("_start"), NULL)), 57 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start"), NULL)), 0);
	/* main at three lines is one node: the lines are its call sites */
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main"), NULL)), 57 * k);
	CHECK_EQ_INT(t.nodes[path(&t, P("_start"), NULL)].nchildren, 1);
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main", "a"), ((uint32_t[]){ 0, 5, 10 }))),
		     42 * k);
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main", "a", "b"), NULL)), 37 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start", "main", "a", "b"), NULL)), 35 * k);
	CHECK_EQ_INT(t.nodes[path(&t, P("_start", "main", "a", "b"), NULL)].line, 20);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start", "main", "a", "b", "[kernel]"), NULL)), 2 * k);
	/* the inlined helper is a level of its own under a, at a's line 22 */
	{
		uint32_t h = path(&t, P("_start", "main", "a", "helper"), NULL);

		CHECK_EQ_INT(excl(&t, h), 5 * k);
		CHECK(h != REP_NONE && t.nodes[h].inlined && t.nodes[h].line == 22);
		CHECK(h != REP_NONE && !t.nodes[t.nodes[h].parent].inlined);
	}
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main", "c"), ((uint32_t[]){ 0, 5, 12 }))),
		     10 * k);
	/* recursion: a node per level */
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main", "f"), NULL)), 5 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start", "main", "f"), NULL)), 1 * k);
	CHECK_EQ_INT(incl(&t, path(&t, P("_start", "main", "f", "f"), NULL)), 4 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start", "main", "f", "f"), NULL)), 0);
	CHECK_EQ_INT(excl(&t, path(&t, P("_start", "main", "f", "f", "f"), NULL)), 4 * k);
	CHECK_EQ_INT(excl(&t, path(&t, P("[libx.so] (no symbols)"), NULL)), 3 * k);
	CHECK_EQ_INT(check_sums(&t, false), 0);

	{
		struct rep_ctree bu;
		uint32_t n;

		CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &t, 0, 0.0, 0), 0);
		/* functions by self samples */
		CHECK(bu.nodes[0].nchildren >= 7);
		if (bu.nodes[0].nchildren >= 2) {
			CHECK(!strcmp(rep_str(p, bu.nodes[bu.children[0]].function), "worker"));
			CHECK(!strcmp(rep_str(p, bu.nodes[bu.children[1]].function), "b"));
		}
		CHECK_EQ_INT(excl(&bu, path(&bu, P("b"), NULL)), 35 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("b"), NULL)), 37 * k);
		n = path(&bu, P("b", "a", "main", "_start"), ((uint32_t[]){ 0, 20, 10, 5 }));
		CHECK_EQ_INT(excl(&bu, n), 35 * k);
		CHECK_EQ_INT(incl(&bu, n), 37 * k);
		CHECK_EQ_INT(excl(&bu, path(&bu, P("[kernel]", "b"), ((uint32_t[]){ 0, 30 }))),
			     2 * k);
		CHECK_EQ_INT(excl(&bu, path(&bu, P("helper", "a", "main"),
					    ((uint32_t[]){ 0, 22, 10 }))),
			     5 * k);
		CHECK_EQ_INT(excl(&bu, path(&bu, P("helper", "a"), NULL)), 5 * k);
		/* recursion counted once, through the innermost f */
		CHECK_EQ_INT(excl(&bu, path(&bu, P("f"), NULL)), 5 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("f"), NULL)), 5 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("f", "f"), NULL)), 4 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("f", "f", "f", "main"), NULL)), 4 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("f", "main"), NULL)), 1 * k);
		/* functions without self samples: total as in the functions view */
		CHECK_EQ_INT(excl(&bu, path(&bu, P("a"), NULL)), 0);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("a"), NULL)), 42 * k);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("main"), NULL)), 57 * k);
		CHECK_EQ_INT(check_sums(&bu, true), 0);
		{
			uint64_t sum = 0;

			for (uint32_t i = 0; i < bu.nodes[0].nchildren; i++)
				sum += bu.nodes[bu.children[i]].exclusive;
			CHECK_EQ_INT(sum, 120 * k);
		}
		rep_ctree_release(&bu);

		/* a depth limit keeps that many levels */
		CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &t, 2, 0.0, 0), 0);
		CHECK(path(&bu, P("b", "a"), NULL) != REP_NONE);
		CHECK(path(&bu, P("b", "a", "main"), NULL) == REP_NONE);
		CHECK_EQ_INT(bu.max_depth, 2);
		rep_ctree_release(&bu);

		/* functions and callers below 4% (of 120 * k) are left out, and
		 * all functions after the first three */
		CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &t, 0, 4.0, 3), 0);
		CHECK_EQ_INT(bu.nodes[0].nchildren, 3);
		CHECK(path(&bu, P("c"), NULL) != REP_NONE);
		CHECK(path(&bu, P("f"), NULL) == REP_NONE); /* 4th */
		CHECK(path(&bu, P("[kernel]"), NULL) == REP_NONE);
		CHECK_EQ_INT(excl(&bu, path(&bu, P("b", "a", "main", "_start"), NULL)), 35 * k);
		/* 11 functions in all (8 cut), and nothing else cut */
		CHECK_EQ_INT(bu.hidden, 8);
		CHECK_EQ_INT(check_sums(&bu, true), 0);
		rep_ctree_release(&bu);
		CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &t, 0, 3.0, 0), 0);
		/* f: 4 of its 5 through f <- f, the 1 through main alone is cut */
		CHECK_EQ_INT(excl(&bu, path(&bu, P("f", "f", "f", "main"), NULL)), 4 * k);
		CHECK(path(&bu, P("f", "main"), NULL) == REP_NONE);
		rep_ctree_release(&bu);
	}
	rep_ctree_release(&t);
}

static void test_output(const struct rep_profile *p)
{
	struct rep_options o = { .format = REP_FORMAT_JSON,
				 .views = REP_VIEW_TOP_DOWN | REP_VIEW_BOTTOM_UP };
	struct rep_tree_options t;
	char *s;

	s = render(p, &o);
	CHECK(s != NULL);
	if (s) {
		CHECK(json_valid(s));
		CHECK(strstr(s, "\"top_down\":[{\"function\":\"start_thread\"") != NULL);
		CHECK(strstr(s, "{\"function\":\"b\",\"file\":\"app.c\",\"line\":20,\"image\":"
				"\"/usr/bin/app\",\"inlined\":false,\"inclusive\":37,"
				"\"exclusive\":35,\"inclusive_percent\":30.8333,"
				"\"exclusive_percent\":29.1667,\"work\":37,\"idleness\":0.000,"
				"\"overhead\":0,\"exclusive_work\":35,\"exclusive_idleness\":0.000,"
				"\"exclusive_overhead\":0,\"idleness_percent\":0.0000,"
				"\"overhead_percent\":0.0000,\"thread_root\":false,\"children\":[") != NULL);
		CHECK(strstr(s, "{\"function\":\"helper\",\"file\":\"app.c\",\"line\":22,"
				"\"image\":\"/usr/bin/app\",\"inlined\":true,\"inclusive\":5,") !=
		      NULL);
		CHECK(strstr(s, "\"bottom_up\":[{\"function\":\"worker\",\"file\":null,"
				"\"line\":null,") != NULL);
		CHECK(strstr(s, "\"callers\":[{\"function\":\"a\",\"file\":\"app.c\",\"line\":20,"
				"\"image\":\"/usr/bin/app\",\"inlined\":false,\"inclusive\":37,"
				"\"exclusive\":35,") != NULL);
		CHECK(strstr(s, "\"hidden\":{\"top_down\":0,\"bottom_up\":0}") != NULL);
		/* the default views stay the old ones */
		CHECK(strstr(s, "\"functions\"") == NULL);
		free(s);
	}
	o.views = 0;
	s = render(p, &o);
	CHECK(s && !strstr(s, "top_down") && strstr(s, "\"functions\":["));
	free(s);
	o.views = REP_VIEW_ALL;
	s = render(p, &o);
	CHECK(s && strstr(s, "\"top_down\":[") && strstr(s, "\"bottom_up\":[") &&
	      strstr(s, "\"threads\":["));
	CHECK(s && json_valid(s));
	free(s);

	/* text: pruned by --min-percent (2 of 120 < 2%) and by --depth */
	o = (struct rep_options){ .format = REP_FORMAT_TEXT, .views = REP_VIEW_TOP_DOWN };
	t = (struct rep_tree_options){ .depth = 12, .min_percent = 2.0 };
	s = fx_render_ext(p, &o, &t);
	CHECK(s != NULL);
	if (s) {
		CHECK(strstr(s, "Top-down") != NULL);
		CHECK(strstr(s, "      b  from app.c:20\n") != NULL);
		CHECK(strstr(s, "        [kernel]  from app.c:30\n") == NULL);
		CHECK(strstr(s, "helper (inlined)  from app.c:22\n") != NULL);
		CHECK(strstr(s, "[libx.so] (no symbols)\n") != NULL); /* 2.5% */
		CHECK(strstr(s, "subtree hidden") != NULL);
		free(s);
	}
	t.min_percent = 0;
	s = fx_render_ext(p, &o, &t);
	CHECK(s && strstr(s, "        [kernel]  from app.c:30\n") && !strstr(s, "hidden"));
	free(s);
	t.depth = 2;
	s = fx_render_ext(p, &o, &t);
	CHECK(s && strstr(s, "    main  from start.S:5\n") && !strstr(s, "  a  from app.c:10"));
	CHECK(s && strstr(s, "more subtrees hidden: --depth, --min-percent"));
	free(s);

	/* bottom-up text: --top counts functions */
	o = (struct rep_options){ .format = REP_FORMAT_TEXT, .views = REP_VIEW_BOTTOM_UP, .top = 2 };
	t = (struct rep_tree_options){ .depth = 12, .min_percent = 1.0 };
	s = fx_render_ext(p, &o, &t);
	CHECK(s != NULL);
	if (s) {
		CHECK(strstr(s, "  worker  [app]\n") != NULL);
		CHECK(strstr(s, "  b  [app]\n") != NULL);
		CHECK(strstr(s, "    a  at app.c:20\n") != NULL);
		CHECK(strstr(s, "  c  [app]\n") == NULL);
		free(s);
	}

	/* markdown: nested bullets */
	o = (struct rep_options){ .format = REP_FORMAT_MARKDOWN,
				  .views = REP_VIEW_TOP_DOWN | REP_VIEW_BOTTOM_UP };
	s = fx_render_ext(p, &o, &t);
	CHECK(s != NULL);
	if (s) {
		CHECK(strstr(s, "### Top-down") && strstr(s, "### Bottom-up"));
		CHECK(strstr(s, "\n- **50.0%** incl (60), self 0.0% (0): `start_thread`\n"));
		CHECK(strstr(s, "\n  - **50.0%** incl (60), self 50.0% (60): `worker` from "
				"`pthread_create.c:442`\n"));
		CHECK(strstr(s, "`helper` _(inlined)_ from `app.c:22`"));
		free(s);
	}
}

/* A tree too deep for recursive walkers, and a wide one. */
static void test_large(void)
{
	enum { DEPTH = 3000,
	       WIDE = 4000 };
	struct rep_frame fr = { "r", "r.c", 1 };
	struct rep_loc l = { 1, 1, 0x10, "/bin/big", NULL, 0x10, 1, &fr };
	struct rep_frame fw[WIDE];
	char names[WIDE][16];
	struct rep_header h = { .mode = "run", .pid = 1, .event = "task-clock", .period = 1 };
	struct rep_profile *p = NULL;
	struct rep_writer *w;
	char file[256];
	uint64_t pair[2];
	int rc;

	snprintf(file, sizeof(file), "%s/big.cbor", tmpdir);
	rc = rep_writer_open(file, REP_WRITER_FORCE, &w);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		return;
	rc |= rep_write_header(w, &h);
	rc |= rep_write_loc(w, &l);
	for (uint64_t i = 1; i <= DEPTH; i++)
		rc |= rep_write_node(w, i, i - 1, 1);
	pair[0] = DEPTH;
	pair[1] = 7;
	rc |= rep_write_samples(w, 1, pair, 1);
	for (int i = 0; i < WIDE; i++) {
		struct rep_loc lw = { 2 + (uint64_t)i, 1, 0x100 + (uint64_t)i, "/bin/big", NULL,
				      0x100 + (uint64_t)i, 1, &fw[i] };

		snprintf(names[i], sizeof(names[i]), "w%d", i);
		fw[i] = (struct rep_frame){ names[i], "w.c", (unsigned)i + 1 };
		rc |= rep_write_loc(w, &lw);
		rc |= rep_write_node(w, 10000 + (uint64_t)i, 1, 2 + (uint64_t)i);
		pair[0] = 10000 + (uint64_t)i;
		pair[1] = 1;
		rc |= rep_write_samples(w, 1, pair, 1);
	}
	CHECK_EQ_INT(rep_writer_close(w) | rc, 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, file, sizeof(file)), 0);
	{
		struct rep_ctree t, bu;
		struct rep_options o = { .format = REP_FORMAT_JSON, .views = REP_VIEW_ALL };
		struct rep_tree_options to = { 0, 0.0 };
		char *s;

		CHECK_EQ_INT(rep_ctree_top_down(&t, p), 0);
		CHECK_EQ_INT(t.n, 1 + DEPTH + WIDE);
		CHECK_EQ_INT(t.max_depth, DEPTH);
		CHECK_EQ_INT(t.nodes[0].inclusive, 7 + WIDE);
		CHECK_EQ_INT(check_sums(&t, false), 0);
		CHECK_EQ_INT(rep_ctree_bottom_up(&bu, &t, 0, 0.0, 0), 0);
		/* r: self 7 through one path of DEPTH levels; total counted once */
		CHECK_EQ_INT(excl(&bu, path(&bu, P("r"), NULL)), 7);
		CHECK_EQ_INT(incl(&bu, path(&bu, P("r"), NULL)), 7 + WIDE);
		CHECK_EQ_INT(bu.max_depth, DEPTH);
		CHECK_EQ_INT(check_sums(&bu, true), 0);
		rep_ctree_release(&bu);
		rep_ctree_release(&t);
		s = render(p, &o);
		CHECK(s && strstr(s, "\"hidden\":{\"images\":0,\"functions\":0,\"lines\":0,"
				     "\"threads\":0,\"top_down\":0,\"bottom_up\":0}"));
		free(s);
		/* psup report's default for JSON: deep enough, and parsers that
		 * recurse (Python's json) still read it */
		to.depth = 256;
		s = fx_render_ext(p, &o, &to);
		CHECK(s && json_valid(s));
		CHECK(s && strstr(s, "\"top_down\":1,\"bottom_up\":1}"));
		free(s);
		o.format = REP_FORMAT_TEXT;
		to.depth = 12;
		to.min_percent = 1.0;
		s = fx_render_ext(p, &o, &to);
		CHECK(s && strstr(s, "more subtrees hidden"));
		free(s);
	}
	rep_profile_free(p);
}

/*
 * A stripped program (issue 17): 40 addresses of /usr/bin/ls without a
 * function, 30 of them after the exported "fts_open" and 10 before any, plus
 * libc code named from its symbol table, and the kernel. Threads as asked:
 * tid 7 alone, or tids 7 and 8 spinning at once (overlap) or one after the
 * other (serial: 8 starts when 7 ends, as an exec replaces a thread).
 */
enum { T_ONE,
       T_OVERLAP,
       T_SERIAL };

static int write_stripped(const char *path, int threads, bool lines, bool with_keys)
{
	static char *argv[] = { "ls", NULL };
	struct rep_header h = {
		.mode = "run",
		.argv = argv,
		.pid = 7,
		.wall_ns = 1,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = 1000000,
		.clock_event = true,
		.hostname = "host",
		.cpus = 2,
	};
	struct rep_thread t7 = { 7, 7, 0, "ls", 1000, 0 };
	struct rep_thread t8 = { 8, 7, threads == T_SERIAL ? 0 : 7, "ls2",
				 threads == T_SERIAL ? 5000 : 2000, 0 };
	struct rep_frame fmain = { "__libc_start_main", lines ? "libc-start.c" : NULL,
				   lines ? 360 : 0 };
	struct rep_loc root = { 1, 7, 0x7000, "/lib/libc.so.6", NULL, 0x7000, 1, &fmain };
	struct rep_loc_symbols libc_sy = { NULL, "symtab" };
	struct rep_loc kern = { 2, 7, 0xffffffff81000000ULL, "[kernel]", NULL, 0, 0, NULL };
	struct rep_thread_times tt = { 400, 100, 0, 0, 0, 500 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 100 };
	struct rep_writer *w;
	uint64_t pairs[2], idle[2];
	int rc;

	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t7);
	if (threads == T_SERIAL)
		rc = rc ? rc : rep_write_thread_end(w, 7, 5000);
	if (threads != T_ONE)
		rc = rc ? rc : rep_write_thread(w, &t8);
	rc = rc ? rc : rep_write_loc_ext(w, &root, with_keys ? &libc_sy : NULL);
	rc = rc ? rc : rep_write_node(w, 1, 0, 1);
	rc = rc ? rc : rep_write_loc(w, &kern);
	rc = rc ? rc : rep_write_node(w, 2, 1, 2);
	pairs[0] = 2;
	pairs[1] = 20;
	rc = rc ? rc : rep_write_samples(w, 7, pairs, 1);
	for (uint64_t i = 0; !rc && i < 40; i++) {
		struct rep_loc l = { 10 + i, 7, 0x10000 + i * 16, "/usr/bin/ls", NULL,
				     0x10000 + i * 16, 0, NULL };
		struct rep_loc_symbols sy = { i < 30 ? "fts_open" : NULL, "dynsym" };

		rc = rep_write_loc_ext(w, &l, with_keys ? &sy : NULL);
		rc = rc ? rc : rep_write_node(w, 10 + i, 1, 10 + i);
		pairs[0] = 10 + i;
		pairs[1] = 2;
		idle[0] = 10 + i;
		idle[1] = 2000000; /* one idle CPU per sample */
		rc = rc ? rc : rep_write_samples(w, threads != T_ONE && i % 2 ? 8 : 7, pairs, 1);
		rc = rc ? rc : rep_write_idleness(w, threads != T_ONE && i % 2 ? 8 : 7, idle, 1);
	}
	rc = rc ? rc : rep_write_thread_times(w, 7, 9000, &tt);
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static struct rep_profile *load_stripped(int threads, bool lines, bool with_keys)
{
	struct rep_profile *p = NULL;
	char file[256], err[512];

	snprintf(file, sizeof(file), "%s/stripped.cbor", tmpdir);
	CHECK_EQ_INT(write_stripped(file, threads, lines, with_keys), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, file, err, sizeof(err)), 0);
	return p;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (; s && (s = strstr(s, needle)); s++)
		n++;
	return n;
}

/*
 * C++ names longer than a column: the end, which tells overloads apart,
 * stays ("...operator[](int const&)"); a thread renamed after its record
 * shows its new name with the first beside it.
 */
static void test_long_names_renames(void)
{
	static char *argv[] = { "./app", NULL };
	struct rep_header h = { .mode = "run", .argv = argv, .pid = 100, .wall_ns = 1, .mono_ns = 1000, .event = "task-clock", .period = 1000000, .clock_event = true, .hostname = "host" };
	struct rep_thread t1 = { 100, 100, 0, "java", 1000, 0 };
	struct rep_frame fa[] = { { "std::__detail::_Map_base<std::string, Foo>::operator[](std::string const&)",
				    "map.h", 5 } };
	struct rep_frame fb[] = { { "std::__detail::_Map_base<std::string, Foo>::operator[](int const&)",
				    "map.h", 9 } };
	struct rep_loc locs[] = {
		{ 1, 100, 0x1000, "/usr/bin/app", NULL, 0x1000, 1, fa },
		{ 2, 100, 0x1010, "/usr/bin/app", NULL, 0x1010, 1, fb },
	};
	uint64_t s1[] = { 1, 6, 2, 4 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 10 };
	struct rep_options o = { .format = REP_FORMAT_TEXT,
				 .views = REP_VIEW_FUNCTIONS | REP_VIEW_THREADS };
	struct rep_profile *p = NULL;
	struct rep_writer *w;
	char path[256], err[512], *out;
	int rc;

	snprintf(path, sizeof(path), "%s/long.cbor", tmpdir);
	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		return;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t1);
	rc = rc ? rc : rep_write_thread_rename(w, 100, 100, "C2 CompilerThre");
	for (size_t i = 0; !rc && i < sizeof(locs) / sizeof(locs[0]); i++)
		rc = rep_write_loc(w, &locs[i]);
	rc = rc ? rc : rep_write_node(w, 1, 0, 1);
	rc = rc ? rc : rep_write_node(w, 2, 0, 2);
	rc = rc ? rc : rep_write_samples(w, 100, s1, 2);
	rc = rc ? rc : rep_write_end(w, &e);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(rep_writer_close(w), 0);
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, path, err, sizeof(err)), 0);
	out = render(p, &o);
	CHECK(out && strstr(out, "operator[](std::string const&)"));
	CHECK(out && strstr(out, "operator[](int const&)"));
	CHECK(out && strstr(out, "C2 CompilerThre (was java)"));
	free(out);
	o.format = REP_FORMAT_JSON;
	out = render(p, &o);
	CHECK(out && strstr(out, "\"name\":\"C2 CompilerThre\",\"first_name\":\"java\""));
	free(out);
	rep_profile_free(p);
}

/* Code without a function: one row per group, the addresses kept. */
static void test_unnamed(void)
{
	struct rep_profile *p = load_stripped(T_ONE, true, true);
	struct rep_options o = { .format = REP_FORMAT_TEXT,
				 .views = REP_VIEW_FUNCTIONS | REP_VIEW_LINES };
	char *s = render(p, &o);

	CHECK(s && !strstr(s, "+0x"));
	CHECK(s && strstr(s, "    60  60.0%   60.0%   60.0%  [ls] after fts_open"));
	CHECK(s && strstr(s, "    20  20.0%  100.0%   20.0%  [ls] (no symbols)"));
	CHECK(s && strstr(s, "    60  60.0%     60   60.0%  -                 [ls] after fts_open\n"));
	free(s);
	/* 42 locations: every address of ls stays one (for views by
	 * instruction), though the views group them */
	CHECK_EQ_INT(p->nlocs, 42);
	o.format = REP_FORMAT_JSON;
	s = render(p, &o);
	CHECK(s && count(s, "\"function\":\"[ls] after fts_open\"") == 2); /* functions, lines */
	CHECK(s && count(s, "{\"function\":") == 4);
	CHECK(s && json_valid(s));
	free(s);
	rep_profile_free(p);

	/* records from before "near" and "symbols": one group per image */
	p = load_stripped(T_ONE, true, false);
	o.format = REP_FORMAT_TEXT;
	s = render(p, &o);
	CHECK(s && !strstr(s, "+0x") && !strstr(s, "after"));
	CHECK(s && strstr(s, "    80  80.0%   80.0%   80.0%  [ls] (no symbols)"));
	free(s);
	o.views = REP_VIEW_IMAGES;
	s = render(p, &o);
	CHECK(s && !strstr(s, "Debug info")); /* unknown: nothing to say */
	free(s);
	rep_profile_free(p);
}

/* Images say which have no debug info, and once how to get it. */
static void test_debug_info(void)
{
	struct rep_profile *p = load_stripped(T_ONE, true, true);
	struct rep_options o = { .format = REP_FORMAT_TEXT, .views = REP_VIEW_IMAGES };
	char *s = render(p, &o);

	CHECK(s && strstr(s, "Debug info -- "));
	CHECK(s && strstr(s, "\n  ls (on the path of 80.0% of the samples):\n    stripped: only its "
			     "exported functions have names"));
	CHECK(s && strstr(s, "\n  libc.so.6 (on the path of 100.0% of the samples):\n    no debug "
			     "info: function names from its symbol table"));
	/* ordered by share: libc (on every path) first */
	CHECK(s && strstr(s, "  libc.so.6 (") < strstr(s, "  ls ("));
	CHECK(s && count(s, "DEBUGINFOD_URLS") == 1 && count(s, "-dbgsym") == 1);
	CHECK(s && strstr(s, "dpkg -S /lib/libc.so.6") && strstr(s, "libc6-dbg for libc"));
	free(s);
	o.format = REP_FORMAT_MARKDOWN;
	s = render(p, &o);
	CHECK(s && strstr(s, "### Debug info") && strstr(s, "- `ls` (on the path of 80.0%"));
	free(s);
	o.format = REP_FORMAT_JSON;
	s = render(p, &o);
	CHECK(s && strstr(s, "\"image\":\"/usr/bin/ls\",\"samples\":80,\"percent\":80.0000,"
			     "\"cum_percent\":80.0000,\"symbols\":\"dynsym\"}"));
	CHECK(s && strstr(s, "\"image\":\"[kernel]\",\"samples\":20,\"percent\":20.0000,"
			     "\"cum_percent\":100.0000,\"symbols\":null}"));
	free(s);
	rep_profile_free(p);
}

/* A lines table of nothing but "-" is one line saying why. */
static void test_no_lines(void)
{
	struct rep_profile *p = load_stripped(T_ONE, false, true);
	struct rep_options o = { .format = REP_FORMAT_TEXT, .views = REP_VIEW_LINES };
	char *s = render(p, &o);

	CHECK(s && strstr(s, "Lines\n  (no sampled code has source line information"));
	CHECK(s && !strstr(s, "  -  ") && !strstr(s, "total%"));
	free(s);
	o.format = REP_FORMAT_MARKDOWN;
	s = render(p, &o);
	CHECK(s && strstr(s, "### Lines\n\n_no sampled code has source line information") &&
	      !strstr(s, "|"));
	free(s);
	/* JSON keeps its rows */
	o.format = REP_FORMAT_JSON;
	s = render(p, &o);
	CHECK(s && count(s, "\"file\":null,\"line\":null") == 4);
	free(s);
	rep_profile_free(p);
	/* one line of source is enough for the table */
	p = load_stripped(T_ONE, true, true);
	o.format = REP_FORMAT_TEXT;
	s = render(p, &o);
	CHECK(s && strstr(s, "libc-start.c:360") && !strstr(s, "no sampled code"));
	free(s);
	rep_profile_free(p);
}

/* No advice on parallelism for a program that never ran two threads at
 * once; the terms explained where there is some. */
static void test_serial(void)
{
	static const struct {
		int threads;
		bool parallel;
	} cases[] = { { T_ONE, false }, { T_SERIAL, false }, { T_OVERLAP, true } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rep_profile *p = load_stripped(cases[i].threads, true, true);
		struct rep_options o = { .format = REP_FORMAT_TEXT };
		bool par = cases[i].parallel;
		char *s = render(p, &o); /* the default views */

		CHECK_EQ_INT(rep_profile_parallel(p), par);
		CHECK(s && !strstr(s, "Parallel efficiency") == !par);
		CHECK(s && !strstr(s, "granularity") == !par);
		/* the thread states explain "other" */
		CHECK(s && strstr(s, "  other: blocked in the kernel on something psup does not count"));
		free(s);
		o.views = REP_VIEW_EFFICIENCY;
		s = render(p, &o);
		CHECK(s && !strstr(s, "no two threads of the program worked at the same time") == par);
		CHECK(s && !strstr(s, "  effort: the CPU time") == !par);
		CHECK(s && !strstr(s, "  idleness: CPU time left unused") == !par);
		CHECK(s && !strstr(s, "  overhead: time spent synchronizing") == !par);
		CHECK(s && !strstr(s, "whole program") == !par);
		free(s);
		o.format = REP_FORMAT_JSON;
		s = render(p, &o);
		CHECK(s && strstr(s, par ? "\"parallel\":true" : "\"parallel\":false"));
		CHECK(s && !strstr(s, "\"reading\":null") == par);
		free(s);
		rep_profile_free(p);
	}
}

/* rep_json_pretty: indented, the same JSON. */
static void test_json_pretty(void)
{
	static const char in[] = "{\"a\":[1,{\"s\":\"x,{y}[\\\"]:\"},[],{}],\"b\":null}\n";
	static const char want[] = "{\n  \"a\": [\n    1,\n    {\n      \"s\": \"x,{y}[\\\"]:\"\n"
				   "    },\n    [],\n    {}\n  ],\n  \"b\": null\n}\n";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(rep_json_pretty(in, strlen(in), f), 0);
	fclose(f);
	CHECK(buf && !strcmp(buf, want));
	if (buf && strcmp(buf, want))
		fprintf(stderr, "got:\n%s", buf);
	free(buf);
}

int main(void)
{
	struct rep_profile *p = NULL;
	char f1[256], f2[256], err[512];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(f1, sizeof(f1), "%s/a.cbor", tmpdir);
	snprintf(f2, sizeof(f2), "%s/b.cbor", tmpdir);
	CHECK_EQ_INT(write_profile(f1, 0), 0);
	CHECK_EQ_INT(write_profile(f2, 500), 0);

	CHECK_EQ_INT(rep_profile_new(&p), 0);
	CHECK_EQ_INT(rep_profile_load(p, f1, err, sizeof(err)), 0);
	test_top_down(p, 1);
	test_output(p);
	/* a second run with other ids merges into the same trees */
	CHECK_EQ_INT(rep_profile_load(p, f2, err, sizeof(err)), 0);
	test_top_down(p, 2);
	rep_profile_free(p);

	/* an empty profile prints every view */
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	{
		struct rep_options o = { .format = REP_FORMAT_TEXT, .views = REP_VIEW_ALL };
		char *s = render(p, &o);

		CHECK(s && strstr(s, "Top-down") && strstr(s, "(no samples)"));
		free(s);
		o.format = REP_FORMAT_JSON;
		s = render(p, &o);
		CHECK(s && strstr(s, "\"top_down\":[]") && strstr(s, "\"bottom_up\":[]"));
		CHECK(s && json_valid(s));
		free(s);
	}
	rep_profile_free(p);

	test_large();
	test_long_names_renames();
	test_unnamed();
	test_debug_info();
	test_no_lines();
	test_serial();
	test_json_pretty();

	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return tap_done();
}
