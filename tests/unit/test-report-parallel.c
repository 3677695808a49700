/*
 * The parallel-efficiency report on a synthetic recording: overhead by
 * patterns (through runtime code up to the first user frame, replaceable
 * and extensible), threads under their creation contexts in the top-down
 * tree, the efficiency totals and Table 1 readings, and lock blame.
 */
#include "report/report.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

#define M 1000000ULL

/*
 * Thread 100 (2 CPUs, alone: 1 idle per sample):
 *   _start -> main -> compute                                       40
 *   _start -> main -> pthread_mutex_lock -> __lll_lock_wait -> [k]  10
 *   _start -> main -> spawn -> pthread_create -> __clone3  (creation context)
 * Thread 101, created there:
 *   start_thread -> worker -> compute                               30
 *   start_thread -> worker -> my_spin                               10
 *   start_thread -> worker -> pthread_mutex_unlock -> __lll_lock_wake (a waker)
 * Locks: 0x1000 woken by the unlock path (2 sampled waits, 3000 ns), by
 * traced threads between wakeup samples (2 waits, 1500 ns: the unlock
 * path's, as the only sampled holder) and by nobody (1 wait, 1000 ns);
 * 0x2000 by the unlock path (1 wait, 500 ns); 0x3000 only between samples.
 */
static int write_profile(const char *path)
{
	struct rep_header h = {
		.mode = "run",
		.pid = 100,
		.wall_ns = 1,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = 1000000,
		.clock_event = true,
		.cpus = 2,
	};
	struct rep_frame f_start[] = { { "_start", "start.S", 5 } };
	struct rep_frame f_main[] = { { "main", "app.c", 10 } };
	struct rep_frame f_compute[] = { { "compute", "app.c", 20 } };
	struct rep_frame f_lock[] = { { "pthread_mutex_lock", "mutex.c", 80 } };
	struct rep_frame f_llw[] = { { "__lll_lock_wait", "lowlevellock.c", 49 } };
	struct rep_frame f_spawn[] = { { "spawn", "app.c", 30 } };
	struct rep_frame f_pc[] = { { "pthread_create", "pthread_create.c", 831 } };
	struct rep_frame f_clone[] = { { "__clone3", "clone3.S", 62 } };
	struct rep_frame f_st[] = { { "start_thread", "pthread_create.c", 442 } };
	struct rep_frame f_worker[] = { { "worker", "app.c", 40 } };
	struct rep_frame f_spin[] = { { "my_spin", "app.c", 50 } };
	struct rep_frame f_unlock[] = { { "pthread_mutex_unlock", "mutex.c", 90 } };
	struct rep_frame f_wake[] = { { "__lll_lock_wake", "lowlevellock.c", 65 } };
	const char *app = "/usr/bin/app", *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct rep_loc locs[] = {
		{ 1, 100, 0x1000, app, NULL, 0x1000, 1, f_start },
		{ 2, 100, 0x1010, app, NULL, 0x1010, 1, f_main },
		{ 3, 100, 0x1020, app, NULL, 0x1020, 1, f_compute },
		{ 4, 100, 0x7000, libc, NULL, 0x7000, 1, f_lock },
		{ 5, 100, 0x7010, libc, NULL, 0x7010, 1, f_llw },
		{ 6, 100, 0xffffffff81000000ULL, "[kernel]", NULL, 0, 0, NULL },
		{ 7, 100, 0x1030, app, NULL, 0x1030, 1, f_spawn },
		{ 8, 100, 0x7020, libc, NULL, 0x7020, 1, f_pc },
		{ 9, 100, 0x7030, libc, NULL, 0x7030, 1, f_clone },
		{ 10, 100, 0x7040, libc, NULL, 0x7040, 1, f_st },
		{ 11, 100, 0x1040, app, NULL, 0x1040, 1, f_worker },
		{ 12, 100, 0x1050, app, NULL, 0x1050, 1, f_spin },
		{ 13, 100, 0x7050, libc, NULL, 0x7050, 1, f_unlock },
		{ 14, 100, 0x7060, libc, NULL, 0x7060, 1, f_wake },
	};
	/* node id, parent, loc */
	/* clang-format off */
	static const uint64_t nodes[][3] = {
		{ 1, 0, 1 },   { 2, 1, 2 },   { 3, 2, 3 },   { 4, 2, 4 },  { 5, 4, 5 },
		{ 6, 5, 6 },   { 7, 2, 7 },   { 8, 7, 8 },   { 9, 8, 9 },  { 10, 0, 10 },
		{ 11, 10, 11 }, { 12, 11, 3 }, { 13, 11, 12 }, { 14, 11, 13 }, { 15, 14, 14 },
	};
	/* clang-format on */
	struct rep_thread t1 = { 100, 100, 0, "app", 1000, 0 };
	struct rep_thread t2 = { 101, 100, 100, "worker", 2000, 9 };
	uint64_t s1[] = { 3, 40, 6, 10 }, i1[] = { 3, 40 * M, 6, 10 * M };
	uint64_t s2[] = { 12, 30, 13, 10 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 90 };
	struct rep_writer *w;
	int rc = rep_writer_open(path, REP_WRITER_FORCE, &w);

	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t1);
	for (size_t i = 0; !rc && i < sizeof(locs) / sizeof(locs[0]); i++)
		rc = rep_write_loc(w, &locs[i]);
	for (size_t i = 0; !rc && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = rep_write_node(w, nodes[i][0], nodes[i][1], nodes[i][2]);
	rc = rc ? rc : rep_write_thread(w, &t2);
	rc = rc ? rc : rep_write_samples(w, 100, s1, 2);
	rc = rc ? rc : rep_write_idleness(w, 100, i1, 2);
	rc = rc ? rc : rep_write_samples(w, 101, s2, 2);
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x1000, 15, true, NULL, 2, 3000);
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x1000, 0, false, NULL, 1, 1000);
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x1000, 0, true, NULL, 2, 1500);
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x2000, 15, true, NULL, 1, 500);
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x3000, 0, true, NULL, 1, 200);
	/* a join ended by the worker's exit */
	rc = rc ? rc : rep_write_lock_waits(w, 100, 0x4000, 15, true, "exit", 1, 900);
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

/*
 * Two threads that worked from start to end on 2 CPUs: no idleness record,
 * but their thread times say the switch records were there; cpus 0 writes
 * no "cpus" (unknown), so no idleness was measured.
 */
static int write_busy(const char *path, unsigned cpus)
{
	struct rep_header h = {
		.mode = "run",
		.pid = 200,
		.wall_ns = 1,
		.mono_ns = 1000,
		.event = "task-clock",
		.period = 1000000,
		.clock_event = true,
		.cpus = cpus,
	};
	struct rep_frame f_spin[] = { { "spin", "app.c", 7 } };
	struct rep_loc loc = { 1, 200, 0x1000, "/usr/bin/app", NULL, 0x1000, 1, f_spin };
	struct rep_thread ts[] = { { 200, 200, 0, "app", 1000, 0 },
				   { 201, 200, 200, "app", 1100, 0 },
				   { 202, 200, 200, "app", 1200, 0 } };
	struct rep_thread_times tt = { .running = 8000 };
	uint64_t s[] = { 1, 8 };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = 16 };
	struct rep_writer *w;
	int rc = rep_writer_open(path, REP_WRITER_FORCE, &w);

	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	for (size_t i = 0; !rc && i < 3; i++)
		rc = rep_write_thread(w, &ts[i]);
	rc = rc ? rc : rep_write_loc(w, &loc);
	rc = rc ? rc : rep_write_node(w, 1, 0, 1);
	for (pid_t tid = 201; !rc && tid <= 202; tid++) {
		rc = rep_write_samples(w, tid, s, 1);
		rc = rc ? rc : rep_write_thread_times(w, tid, 9500, &tt);
		rc = rc ? rc : rep_write_thread_end(w, tid, 9500);
	}
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static char *render(const struct rep_profile *p, const struct rep_options *o)
{
	return fx_render_ext(p, o, NULL);
}

/* The first profile node whose location's innermost frame is function. */
static uint32_t node_of_loc(const struct rep_profile *p, const char *function)
{
	for (uint32_t n = 0; n < p->nnodes; n++) {
		const struct rep_mloc *l = &p->locs[p->nodes[n].loc];
		const char *f = l->nframes ? rep_str(p, p->frames[l->frames].function) : "";
		if (f && !strcmp(f, function))
			return n;
	}
	return REP_NONE;
}

int main(void)
{
	char path[] = "/tmp/psup-test-report-parallel-XXXXXX";
	struct rep_profile *p;
	char err[256], *s;
	bool *ov;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(write_profile(path) == 0);
	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	CHECK(p->has_idleness);
	CHECK_EQ_INT(p->idle_micro, 50 * M);

	/* Overhead: the kernel leaf under __lll_lock_wait, and the libc frames;
	 * not compute; my_spin only when the user says so. */
	CHECK(rep_overhead_flags(p, NULL, &ov) == 0);
	uint32_t k = REP_NONE;
	for (uint32_t n = 0; n < p->nnodes; n++)
		if (!strcmp(rep_str(p, p->locs[p->nodes[n].loc].image), "[kernel]"))
			k = n;
	CHECK(k != REP_NONE && ov[k]);
	CHECK(ov[node_of_loc(p, "__lll_lock_wait")]);
	CHECK(ov[node_of_loc(p, "pthread_mutex_lock")]);
	CHECK(!ov[node_of_loc(p, "compute")]);
	CHECK(!ov[node_of_loc(p, "my_spin")]);
	CHECK(!ov[node_of_loc(p, "main")]);
	free(ov);
	CHECK(rep_overhead_flags(p, "+my_spin", &ov) == 0);
	CHECK(ov[node_of_loc(p, "my_spin")] && ov[k]);
	free(ov);
	CHECK(rep_overhead_flags(p, "my_*", &ov) == 0); /* replaces the list */
	CHECK(ov[node_of_loc(p, "my_spin")] && !ov[k]);
	free(ov);

	/* The worker thread hangs under its creation context. */
	struct rep_ctree t;
	CHECK(rep_overhead_flags(p, NULL, &ov) == 0);
	CHECK(rep_ctree_top_down_ext(&t, p, ov) == 0);
	uint32_t n = 0;
	static const char *const chain[] = { "_start", "main", "spawn", "pthread_create",
					     "__clone3", "start_thread", "worker", NULL };
	for (int i = 0; chain[i] && n != REP_NONE; i++)
		n = rep_ctree_child(&t, n, chain[i], 0);
	CHECK(n != REP_NONE);
	if (n != REP_NONE) {
		CHECK_EQ_INT(t.nodes[n].inclusive, 40);
		CHECK(t.nodes[t.nodes[n].parent].spawned);
	}
	CHECK(rep_ctree_child(&t, 0, "start_thread", 0) == REP_NONE);
	CHECK_EQ_INT(t.nodes[0].inclusive, 90);
	CHECK_EQ_INT(t.nodes[0].idle_incl, 50 * M);
	CHECK_EQ_INT(t.nodes[0].overhead_incl, 10);

	/* Bottom-up: each function's row carries the idleness and overhead of
	 * its self samples; over the functions they add up to the program's. */
	struct rep_ctree bu;
	CHECK(rep_ctree_bottom_up(&bu, &t, 0, 0, 0) == 0);
	uint64_t idle = 0, ovh = 0, self = 0;
	for (uint32_t i = 0; i < bu.nodes[0].nchildren; i++) {
		const struct rep_cnode *c = &bu.nodes[bu.children[bu.nodes[0].first_child + i]];
		idle += c->idle_excl;
		ovh += c->overhead_excl;
		self += c->exclusive;
		CHECK_EQ_INT(c->idle_incl, c->idle_excl);
	}
	CHECK_EQ_INT(idle, 50 * M);
	CHECK_EQ_INT(ovh, 10);
	CHECK_EQ_INT(self, 90);
	CHECK_EQ_INT(bu.nodes[0].idle_incl, 50 * M);
	uint32_t w = rep_ctree_child(&bu, 0, "worker", 0);
	CHECK(w != REP_NONE && bu.nodes[w].overhead_excl == 0);
	uint32_t lw = rep_ctree_child(&bu, 0, "[kernel]", 0);
	CHECK(lw != REP_NONE && bu.nodes[lw].overhead_excl == bu.nodes[lw].exclusive);
	rep_ctree_release(&bu);
	rep_ctree_release(&t);
	free(ov);

	/* The efficiency summary: effort 140 = work 80 + idleness 50 + overhead 10. */
	struct rep_options o = { .format = REP_FORMAT_JSON, .views = REP_VIEW_EFFICIENCY };
	s = render(p, &o);
	CHECK(s && strstr(s, "\"efficiency\":{\"cpus\":2,\"measured\":true,\"parallel\":true,\"effort\":140.000,"
			     "\"work\":80.000,\"idleness\":50.000,\"overhead\":10,") != NULL);
	CHECK(s && strstr(s, "\"reading\":\"refine\"") != NULL);
	free(s);
	o.format = REP_FORMAT_TEXT;
	s = render(p, &o);
	CHECK(s && strstr(s, "whole program: work 57.1%, idleness 35.7%, overhead 7.1% of effort") != NULL);
	free(s);

	/* Locks: 0x1000 first (5500 ns), its holder the worker with the
	 * unsampled waits, then nobody; 0x3000 has no sampled holder. */
	o = (struct rep_options){ .format = REP_FORMAT_JSON, .views = REP_VIEW_LOCKS };
	s = render(p, &o);
	CHECK(s && strstr(s, "\"locks\":[{\"pid\":100,\"address\":\"0x1000\",\"waits\":5,"
			     "\"wait_ns\":5500,") != NULL);
	CHECK(s && strstr(s, "\"holders\":[{\"waits\":4,\"wait_ns\":4500,"
			     "\"wait_percent\":81.8182,\"sampled_waits\":2,\"traced\":true,"
			     "\"thread_exit\":false,\"released_in\":{\"function\":\"worker\",\"file\":\"app.c\","
			     "\"line\":40}") != NULL);
	CHECK(s && strstr(s, "{\"waits\":1,\"wait_ns\":1000,\"wait_percent\":18.1818,"
			     "\"sampled_waits\":0,\"traced\":false,\"thread_exit\":false,"
			     "\"released_in\":null,"
			     "\"frames\":[]}") != NULL);
	CHECK(s && strstr(s, "\"address\":\"0x2000\"") > strstr(s, "\"address\":\"0x1000\""));
	CHECK(s && strstr(s, "\"address\":\"0x4000\",\"waits\":1,\"wait_ns\":900,") &&
	      strstr(strstr(s, "\"address\":\"0x4000\""), "\"thread_exit\":true"));
	CHECK(s && strstr(s, "\"address\":\"0x3000\",\"waits\":1,\"wait_ns\":200,"
			     "\"wait_percent\":2.8169,\"holders\":[{\"waits\":1,\"wait_ns\":200,"
			     "\"wait_percent\":100.0000,\"sampled_waits\":0,\"traced\":true,") != NULL);
	free(s);
	o.format = REP_FORMAT_MARKDOWN;
	s = render(p, &o);
	/* names in code spans: a name's own markdown cannot take effect */
	CHECK(s && strstr(s, "released in `worker` at `app.c:40`") != NULL);
	CHECK(s && strstr(s, "ended by the exit of a thread (pthread_join), last sampled in `worker` "
			     "at `app.c:40`") != NULL);
	free(s);

	/* With no views asked for, the default set gains both. */
	o = (struct rep_options){ .format = REP_FORMAT_TEXT };
	s = render(p, &o);
	CHECK(s && strstr(s, "Parallel efficiency") && strstr(s, "Locks"));
	free(s);

	rep_profile_free(p);

	/* No idleness record: none where the switch records were there, and
	 * the default views keep the efficiency view; unknown where the CPUs
	 * were not known. */
	CHECK(write_busy(path, 2) == 0);
	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	CHECK(p->has_idleness && p->idle_micro == 0);
	o = (struct rep_options){ .format = REP_FORMAT_TEXT };
	s = render(p, &o);
	CHECK(s && strstr(s, "whole program: work 100.0%, idleness 0.0%, overhead 0.0% of effort"));
	free(s);
	rep_profile_free(p);
	CHECK(write_busy(path, 0) == 0);
	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	CHECK(!p->has_idleness);
	o = (struct rep_options){ .format = REP_FORMAT_JSON, .views = REP_VIEW_EFFICIENCY };
	s = render(p, &o);
	CHECK(s && strstr(s, "\"measured\":false"));
	free(s);
	rep_profile_free(p);
	unlink(path);
	return tap_done();
}
