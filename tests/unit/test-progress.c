/*
 * experiments/progress.c against real programs (progress-fixtures.h, built
 * at test time): breakpoint counters placed by FILE:LINE and FUNCTION count
 * exactly the visits the fixture makes (inlined copies included, in the
 * main executable and in a shared library), psup.h counters are read
 * exactly from the child's memory (C and C++, PIE, non-PIE, static with
 * --gc-sections, stripped), counts survive the thread and the process
 * (retired), a fifth breakpoint finds no debug register and is reported,
 * sampled points count pcs in their code only, notes say when a line moved,
 * and the visit-rate warning fires for a point visited fast (with a
 * synthetic clock: nothing here depends on time). Prints the measured cost
 * of one breakpoint visit on this machine (not asserted).
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "common/util.h"
#include "sampler/sampler.h"
#include "symbols/symbols.h"
#include "tests/unit/progress-child.h"
#include "tests/unit/tap.h"

#define N 2000u /* iterations of the fixture's loop (even, multiple of 4) */

static uint64_t count_of(struct exp_progress *pp, const char *name, enum exp_point_kind kind)
{
	struct exp_point_value v[64];
	int n = exp_progress_read(pp, v, 64);

	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name) && v[i].kind == kind)
			return v[i].count;
	fprintf(stderr, "no point %s\n", name);
	return UINT64_MAX;
}

static bool has_point(struct exp_progress *pp, const char *name)
{
	struct exp_point_value v[64];
	int n = exp_progress_read(pp, v, 64);

	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return true;
	return false;
}

/* Every note, concatenated (for strstr). */
static void drain_notes(struct exp_progress *pp, uint64_t now, char *all, size_t len)
{
	char msg[512];

	all[0] = '\0';
	while (exp_progress_check(pp, now, msg, sizeof(msg)) > 0) {
		printf("# note: %s\n", msg);
		if (strlen(all) + strlen(msg) + 2 < len) {
			strcat(all, msg);
			strcat(all, "\n");
		}
	}
}

static int add(struct exp_progress *pp, const char *spec, enum exp_point_kind kind, bool sampled)
{
	char why[256];
	int err = exp_progress_add(pp, spec, kind, NULL, sampled, why, sizeof(why));

	if (err)
		fprintf(stderr, "add %s: %s\n", spec, why);
	return err;
}

/*
 * One run of a fixture: points added by setup(), the child run through its
 * loop, counts checked while it is stopped at its end (psup.h counters
 * readable), and again after it exited (retired counts).
 */
static void run_c_variant(const struct pf_variant *v)
{
	unsigned body = fx_marker(pf_src, "BODY"), helper = fx_marker(pf_src, "HELPER");
	unsigned comment = fx_marker(pf_src, "COMMENT"), lib_body = fx_marker(pf_lib_src, "LIB_BODY");
	char s_body[64], s_helper[64], s_comment[64], s_lib[64], notes[4096];
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL;
	struct pf_child c;
	int st;

	printf("# %s\n", v->name);
	snprintf(s_body, sizeof(s_body), "pf.c:%u", body);
	snprintf(s_helper, sizeof(s_helper), "pf.c:%u", helper);
	snprintf(s_comment, sizeof(s_comment), "pf.c:%u", comment);
	snprintf(s_lib, sizeof(s_lib), "pl.c:%u", lib_body);

	/* Round 1: a line, a function, an inlined line (2 sites) = 4 registers. */
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, s_body, EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, "work", EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_helper, EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_body, EXP_POINT_THROUGHPUT, true), -EINVAL); /* same name twice */
	CHECK_EQ_INT(exp_progress_debug_slots(pp), 3);
	if (pf_start(&c, v->name, N, true)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	exp_progress_process_exec(pp, c.pid);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_debug_slots(pp), 4);
	/* The supervisor asks whether a cause-less debug trap's address is
	 * one of these breakpoints (a stray of psup's, never the program's
	 * int1): yes at each site of "work" in this thread, no one byte on
	 * or in another thread. */
	{
		struct sym_lookup l = { 0 };
		struct sym_spec spec;
		char why[128];

		CHECK_EQ_INT(sym_spec_parse("work", &spec, why, sizeof(why)), 0);
		if (sym_space_lookup(sp, &spec, &l) != 0)
			memset(&l, 0, sizeof(l));
		CHECK(l.nsites > 0);
		for (size_t i = 0; i < l.nsites; i++) {
			CHECK(exp_progress_has_breakpoint(pp, c.pid, l.sites[i]));
			CHECK(!exp_progress_has_breakpoint(pp, c.pid, l.sites[i] + 1));
			CHECK(!exp_progress_has_breakpoint(pp, c.pid + 100000, l.sites[i]));
		}
		sym_lookup_release(&l);
		sym_spec_release(&spec);
	}
	/* psup.h points found: "iter", the unnamed one, "tx" begin and end */
	CHECK_EQ_INT(exp_progress_npoints(pp), 3 + 4);
	CHECK(has_point(pp, "iter"));
	CHECK(has_point(pp, "tx"));
	CHECK_EQ_INT(count_of(pp, s_body, EXP_POINT_THROUGHPUT), 0);
	CHECK(pf_continue(&c, &st)); /* the loop, then the stop at its end */
	CHECK_EQ_INT(count_of(pp, s_body, EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, "work", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, s_helper, EXP_POINT_THROUGHPUT), N + N / 2);
	/* "iter" is in the executable and in the library (or linked in) */
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), 2 * N);
	CHECK_EQ_INT(count_of(pp, "tx", EXP_POINT_BEGIN), N / 4);
	CHECK_EQ_INT(count_of(pp, "tx", EXP_POINT_END), N / 4);
	{
		struct exp_point_value vals[16];
		int n = exp_progress_read(pp, vals, 16);
		bool unnamed = false;

		CHECK_EQ_INT(n, 7);
		for (int i = 0; i < n; i++) {
			CHECK(vals[i].resolved);
			if (strstr(vals[i].name, "pf.c:") && vals[i].kind == EXP_POINT_THROUGHPUT &&
			    strcmp(vals[i].name, s_body) && strcmp(vals[i].name, s_helper)) {
				unnamed = true;
				CHECK_EQ_INT(vals[i].count, N);
			}
		}
		CHECK(unnamed);
		/* a shorter array gets the first points */
		CHECK_EQ_INT(exp_progress_read(pp, vals, 2), 2);
	}
	/* the exit stop: last read; then the thread and the process go */
	exp_progress_thread_exiting(pp, c.pid, c.pid);
	CHECK(!pf_continue(&c, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
	CHECK_EQ_INT(count_of(pp, s_body, EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, s_helper, EXP_POINT_THROUGHPUT), N + N / 2);
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), 2 * N);
	CHECK_EQ_INT(count_of(pp, "tx", EXP_POINT_END), N / 4);
	/* the first check only starts the rate window: no warning */
	drain_notes(pp, 1000000000ULL, notes, sizeof(notes));
	CHECK(!strstr(notes, "visits/s"));
	pf_kill(&c);
	sym_space_free(sp);
	sp = NULL;
	exp_progress_free(pp);
	pp = NULL;

	/* Round 2: the library by function and line; a comment line moves to
	 * the next line with code; a fifth register does not exist. */
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, "lib_step", EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_lib, EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_comment, EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_helper, EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_body, EXP_POINT_THROUGHPUT, true), 0); /* sampled */
	if (pf_start(&c, v->name, N, true)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	/* the thread first, the process after: breakpoints opened then */
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	/* unchanged maps: nothing to do, same answer */
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_debug_slots(pp), 4);
	drain_notes(pp, 0, notes, sizeof(notes));
	{
		char want[128];

		snprintf(want, sizeof(want), "no code at line %u; using line %u", comment, body);
		CHECK(strstr(notes, want) != NULL);
		CHECK(strstr(notes, "debug register") != NULL);
	}
	/* sampled: pcs in the line's code count, others do not */
	{
		struct sym_lookup l;
		struct sym_spec spec;
		char why[128];

		CHECK_EQ_INT(sym_spec_parse(s_body, &spec, why, sizeof(why)), 0);
		CHECK_EQ_INT(sym_space_lookup(sp, &spec, &l), 0);
		CHECK(l.nranges > 0);
		for (unsigned i = 0; i < 10 && l.nranges; i++)
			exp_progress_sample(pp, c.pid, l.ranges[0].start);
		if (l.nranges)
			exp_progress_sample(pp, c.pid, l.ranges[l.nranges - 1].end - 1);
		exp_progress_sample(pp, c.pid, c.other);
		exp_progress_sample(pp, c.pid, 0);
		exp_progress_sample(pp, c.pid + 100000, l.nranges ? l.ranges[0].start : 0);
		CHECK_EQ_INT(count_of(pp, s_body, EXP_POINT_THROUGHPUT), 11);
		sym_lookup_release(&l);
		sym_spec_release(&spec);
	}
	CHECK(pf_continue(&c, &st));
	CHECK_EQ_INT(count_of(pp, "lib_step", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, s_lib, EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, s_comment, EXP_POINT_THROUGHPUT), N);
	/* the fifth breakpoint had no register: some visits are missing */
	CHECK(count_of(pp, s_helper, EXP_POINT_THROUGHPUT) < N + N / 2);
	/* psup.h points found without asking: counted since found here (no
	 * process_exec call), which was before the loop */
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), 2 * N);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0); /* known: no-op */
	CHECK(!pf_continue(&c, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
	pf_kill(&c);
	sym_space_free(sp);
	sp = NULL;
	exp_progress_free(pp);
	pp = NULL;

	/* Round 3: 6 sites, 4 registers: a latency pair added after two
	 * points of 2 sites each still gets both ends (round-robin). */
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, "helper", EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, s_helper, EXP_POINT_THROUGHPUT, false), 0);
	{
		char why[128];

		CHECK_EQ_INT(exp_progress_add(pp, "work", EXP_POINT_BEGIN, "w", false, why,
					      sizeof(why)),
			     0);
		CHECK_EQ_INT(exp_progress_add(pp, "other", EXP_POINT_END, "w", false, why,
					      sizeof(why)),
			     0);
	}
	if (pf_start(&c, v->name, N, true)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK(pf_continue(&c, &st));
	CHECK_EQ_INT(count_of(pp, "w", EXP_POINT_BEGIN), N);
	CHECK_EQ_INT(count_of(pp, "w", EXP_POINT_END), N);
	CHECK(count_of(pp, "helper", EXP_POINT_THROUGHPUT) > 0);
	CHECK(count_of(pp, s_helper, EXP_POINT_THROUGHPUT) > 0);
	CHECK(!pf_continue(&c, &st));
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
out:
	pf_kill(&c);
	sym_space_free(sp);
	exp_progress_free(pp);
}

/* The warning itself, on this thread: a point visited N times in a
 * synthetic 10 ms window. */
static void check_rate_warning(void);

__attribute__((noinline, noipa)) int progress_test_visit(int x)
{
	return x * 3 + 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check_rate_warning(void)
{
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL;
	pid_t self = getpid(), tid = (pid_t)syscall(SYS_gettid);
	char notes[4096];
	volatile int sink = 0;
	double t0, t1, t2;
	const unsigned n = 20000;

	printf("# breakpoint on this thread\n");
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, "progress_test_visit", EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(sym_space_new(self, &sp), 0);
	CHECK_EQ_INT(exp_progress_thread_new(pp, tid, self), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, self), 0);
	drain_notes(pp, 1000, notes, sizeof(notes)); /* window starts at 1 us */
	t0 = now_s();
	for (unsigned i = 0; i < n; i++)
		sink += progress_test_visit((int)i);
	t1 = now_s();
	CHECK_EQ_INT(count_of(pp, "progress_test_visit", EXP_POINT_THROUGHPUT), n);
	/* 20000 visits over 1 s of the synthetic clock: 20000/s x 11 us = 22% */
	drain_notes(pp, 1000 + 1000000000ULL, notes, sizeof(notes));
	CHECK(strstr(notes, "20000 visits/s") != NULL);
	CHECK(strstr(notes, "--sampled-progress") != NULL);
	CHECK(strstr(notes, "psup.h") != NULL);
	/* once */
	drain_notes(pp, 1000 + 3000000000ULL, notes, sizeof(notes));
	CHECK(!strstr(notes, "visits/s"));
	exp_progress_thread_gone(pp, tid);
	/* the thread's counters are closed: visits now are not counted */
	for (unsigned i = 0; i < 100; i++)
		sink += progress_test_visit((int)i);
	CHECK_EQ_INT(count_of(pp, "progress_test_visit", EXP_POINT_THROUGHPUT), n);
	t2 = now_s();
	for (unsigned i = 0; i < n; i++)
		sink += progress_test_visit((int)i);
	/* The measurement, for docs and the visit-rate warning's constant. */
	printf("# bp visit cost: %.1f us per visit (%u visits, %.1f ms; without: %.3f ms)\n",
	       ((t1 - t0) - (now_s() - t2)) / n * 1e6, n, (t1 - t0) * 1e3, (now_s() - t2) * 1e3);
	(void)sink;
	sym_space_free(sp);
	exp_progress_free(pp);
}

static void run_cxx(void)
{
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL;
	struct pf_child c;
	int st;

	printf("# pfx\n");
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, "ns::step", EXP_POINT_THROUGHPUT, false), 0);
	CHECK_EQ_INT(add(pp, "ns::scale(int)", EXP_POINT_THROUGHPUT, false), 0);
	if (pf_start(&c, "pfx", N, false)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	exp_progress_process_exec(pp, c.pid);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK(pf_continue(&c, &st));
	CHECK_EQ_INT(count_of(pp, "ns::step", EXP_POINT_THROUGHPUT), 2 * N);
	CHECK_EQ_INT(count_of(pp, "ns::scale(int)", EXP_POINT_THROUGHPUT), N);
	/* one psup.h point in a template instantiated twice: one point */
	CHECK_EQ_INT(exp_progress_npoints(pp), 3);
	CHECK_EQ_INT(count_of(pp, "step", EXP_POINT_THROUGHPUT), 2 * N);
	exp_progress_thread_exiting(pp, c.pid, c.pid);
	CHECK(!pf_continue(&c, &st));
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
	CHECK_EQ_INT(count_of(pp, "step", EXP_POINT_THROUGHPUT), 2 * N);
out:
	pf_kill(&c);
	sym_space_free(sp);
	exp_progress_free(pp);
}

/* A library loaded with dlopen after the first look is found at the next
 * (the mappings changed); unloaded, its counts stay. */
static void run_dlopen(void)
{
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL;
	struct exp_point_value v[8];
	char notes[4096];
	struct pf_child c;
	int st;

	printf("# pfd (dlopen)\n");
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(add(pp, "lib_step", EXP_POINT_THROUGHPUT, false), 0);
	if (pf_start(&c, "pfd", N, false)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	exp_progress_process_exec(pp, c.pid);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_read(pp, v, 8), 1);
	CHECK(!v[0].resolved);
	CHECK_EQ_INT(exp_progress_debug_slots(pp), 1);
	drain_notes(pp, 0, notes, sizeof(notes));
	CHECK(strstr(notes, "lib_step: not found") != NULL);
	CHECK(pf_continue(&c, &st)); /* dlopen'ed */
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_npoints(pp), 2); /* + psup.h "iter" of the library */
	CHECK_EQ_INT(exp_progress_read(pp, v, 8), 2);
	CHECK(v[0].resolved);
	CHECK(pf_continue(&c, &st)); /* counted */
	CHECK_EQ_INT(count_of(pp, "lib_step", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), N);
	CHECK(pf_continue(&c, &st)); /* dlclose'd */
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(count_of(pp, "lib_step", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), N);
	exp_progress_thread_exiting(pp, c.pid, c.pid);
	CHECK(!pf_continue(&c, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
	CHECK_EQ_INT(count_of(pp, "lib_step", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, "iter", EXP_POINT_THROUGHPUT), N);
out:
	pf_kill(&c);
	sym_space_free(sp);
	exp_progress_free(pp);
}

/* Waits until process pid (not our child) is stopped; false when it is
 * gone. A guard of 60 s against a broken fixture, not a timing check. */
static bool wait_stopped(pid_t pid)
{
	char path[64], *buf = NULL;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 60000; i++) {
		const char *st;

		if (psup_read_file(path, &buf, NULL))
			return false;
		st = strrchr(buf, ')');
		if (st && st[1] == ' ' && st[2] == 'T') {
			free(buf);
			return true;
		}
		free(buf);
		usleep(1000);
	}
	return false;
}

/* A forked child's psup.h counters start as copies of its parent's: only
 * what it counts itself is its own. */
static void run_fork(void)
{
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL, *csp = NULL;
	struct pf_child c;
	char buf[256];
	size_t len = 0;
	pid_t child = 0;
	int st;

	printf("# pff (fork)\n");
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	if (pf_start(&c, "pff", N, false)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	exp_progress_process_exec(pp, c.pid);
	CHECK_EQ_INT(exp_progress_thread_new(pp, c.pid, c.pid), 0);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(kill(c.pid, SIGCONT), 0);
	buf[0] = '\0';
	while (!strstr(buf, "end\n") && len < sizeof(buf) - 1) {
		ssize_t r = read(c.out, buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = '\0';
	}
	CHECK(sscanf(buf, "child %d", &child) == 1 && child > 0);
	if (child <= 0 || !wait_stopped(child)) {
		CHECK(!"forked child stopped");
		goto out;
	}
	/* the child, before its loop: a new process psup was told about */
	CHECK_EQ_INT(sym_space_new(child, &csp), 0);
	CHECK_EQ_INT(exp_progress_thread_new(pp, child, child), 0);
	CHECK_EQ_INT(exp_progress_process(pp, csp, child), 0);
	CHECK_EQ_INT(count_of(pp, "f", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(kill(child, SIGCONT), 0);
	CHECK(wait_stopped(child)); /* after its loop */
	CHECK_EQ_INT(count_of(pp, "f", EXP_POINT_THROUGHPUT), 2 * N);
	exp_progress_thread_exiting(pp, child, child);
	CHECK_EQ_INT(kill(child, SIGCONT), 0);
	CHECK(pf_wait_stop(&c, &st)); /* the parent reaped it, stopped again */
	exp_progress_thread_gone(pp, child);
	exp_progress_process_end(pp, child);
	child = 0; /* reaped: its pid may be another process's now */
	CHECK_EQ_INT(count_of(pp, "f", EXP_POINT_THROUGHPUT), 2 * N);
	CHECK(!pf_continue(&c, &st));
	exp_progress_thread_gone(pp, c.pid);
	exp_progress_process_end(pp, c.pid);
	CHECK_EQ_INT(count_of(pp, "f", EXP_POINT_THROUGHPUT), 2 * N);
out:
	/* a stopped grandchild would outlive us (no parent-death signal
	 * across fork): never leave it behind */
	if (child > 0)
		kill(child, SIGKILL);
	pf_kill(&c);
	sym_space_free(csp);
	sym_space_free(sp);
	exp_progress_free(pp);
}

/* coz.h sites count without libcoz: exact counts, names and kinds from
 * DWARF, and the program runs as it would. */
static void run_coz(const char *name)
{
	struct exp_progress *pp = NULL;
	struct sym_space *sp = NULL;
	struct pf_child c;
	char unnamed[300];
	int st;

	printf("# %s\n", name);
	snprintf(unnamed, sizeof(unnamed), "pfc.c:%u", fx_marker(pfc_src, "COZ_UNNAMED"));
	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	if (pf_start(&c, name, N, false)) {
		CHECK(!"fixture start");
		goto out;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	exp_progress_process_exec(pp, c.pid);
	CHECK_EQ_INT(exp_progress_process(pp, sp, c.pid), 0);
	CHECK_EQ_INT(exp_progress_npoints(pp), 4);
	CHECK(pf_continue(&c, &st));
	CHECK_EQ_INT(count_of(pp, "x", EXP_POINT_THROUGHPUT), N);
	CHECK_EQ_INT(count_of(pp, "tx", EXP_POINT_BEGIN), N / 4);
	CHECK_EQ_INT(count_of(pp, "tx", EXP_POINT_END), N / 4);
	CHECK_EQ_INT(count_of(pp, unnamed, EXP_POINT_THROUGHPUT), N);
	exp_progress_thread_exiting(pp, c.pid, c.pid);
	CHECK(!pf_continue(&c, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	exp_progress_process_end(pp, c.pid);
	CHECK_EQ_INT(count_of(pp, "x", EXP_POINT_THROUGHPUT), N);
out:
	pf_kill(&c);
	sym_space_free(sp);
	exp_progress_free(pp);
}

static void check_api(void)
{
	struct exp_progress *pp = NULL;
	struct exp_point_value v[4];
	char why[256], msg[256];

	CHECK_EQ_INT(exp_progress_new(&pp), 0);
	CHECK_EQ_INT(exp_progress_add(pp, "main.c:", EXP_POINT_THROUGHPUT, NULL, false, why,
				      sizeof(why)),
		     -EINVAL);
	CHECK(strstr(why, "main.c:") != NULL);
	CHECK_EQ_INT(exp_progress_add(pp, "", EXP_POINT_THROUGHPUT, NULL, false, why, sizeof(why)),
		     -EINVAL);
	/* a latency pair: same name, two kinds */
	CHECK_EQ_INT(exp_progress_add(pp, "a.c:3", EXP_POINT_BEGIN, "req", false, why, sizeof(why)), 0);
	CHECK_EQ_INT(exp_progress_add(pp, "a.c:9", EXP_POINT_END, "req", false, why, sizeof(why)), 0);
	CHECK_EQ_INT(exp_progress_add(pp, "a.c:9", EXP_POINT_END, "req", false, why, sizeof(why)),
		     -EINVAL);
	CHECK_EQ_INT(exp_progress_npoints(pp), 2);
	CHECK_EQ_INT(exp_progress_debug_slots(pp), 2);
	CHECK_EQ_INT(exp_progress_read(pp, v, 4), 2);
	CHECK(!strcmp(v[0].name, "req") && v[0].kind == EXP_POINT_BEGIN && !v[0].resolved);
	CHECK(v[1].kind == EXP_POINT_END && v[1].count == 0);
	/* nothing known: no note, no warning */
	CHECK_EQ_INT(exp_progress_check(pp, 5000000000ULL, msg, sizeof(msg)), 0);
	/* unknown threads and processes are fine */
	exp_progress_thread_gone(pp, 12345);
	exp_progress_process_end(pp, 12345);
	exp_progress_sample(pp, 12345, 0x1000);
	exp_progress_free(pp);
	exp_progress_free(NULL);
}

int main(void)
{
	check_api();
	pf_build();
	for (size_t i = 0; i < sizeof(pf_variants) / sizeof(pf_variants[0]); i++)
		if (!pf_variants[i].cxx)
			run_c_variant(&pf_variants[i]);
	if (pf_have_cxx)
		run_cxx();
	run_dlopen();
	run_fork();
	for (size_t i = 0; pf_have_coz && i < sizeof(pfc_variants) / sizeof(pfc_variants[0]); i++)
		if (pf_have_clang || strncmp(pfc_variants[i][1], "clang", 5))
			run_coz(pfc_variants[i][0]);
	check_rate_warning();
	pf_cleanup();
	return tap_done();
}
