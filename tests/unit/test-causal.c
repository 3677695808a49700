/* The causal experiment engine's pure parts (speedup choice, length
 * doubling, owed time), its accounting on synthetic samples of this very
 * program (minimizing delays, crediting, new threads, excess, settling), and
 * psup's seccomp filter loaded into a child without a tracer, where every
 * call it traps fails with ENOSYS. */
#include <errno.h>
#include <linux/futex.h>
#include <linux/filter.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "experiments/experiments.h"
#include "supervisor/supervisor.h"
#include "report/report.h"
#include "symbols/symbols.h"
#include "tap.h"

#define MS 1000000ULL

static void test_speedup_distribution(void)
{
	uint64_t rng = 12345;
	unsigned counts[21] = { 0 };
	const unsigned n = 24000;
	bool bad = false;

	/* Step 25: P(0) = 1/2 (12000 expected, sd ~77), the rest uniform
	 * over 25, 50, 75, 100 (3000 each, sd ~51). */
	for (unsigned i = 0; i < n; i++) {
		unsigned s = exp_causal_pick_speedup(&rng, 25);
		if (s > 100 || s % 25)
			bad = true;
		else
			counts[s / 5]++;
	}
	CHECK(!bad);
	CHECK(counts[0] > 11600 && counts[0] < 12400);
	for (unsigned k = 5; k <= 20; k += 5)
		CHECK(counts[k] > 2750 && counts[k] < 3250);
	/* The default, Coz's step of 5: 600 each (sd ~24). */
	memset(counts, 0, sizeof(counts));
	for (unsigned i = 0; i < n; i++) {
		unsigned s = exp_causal_pick_speedup(&rng, 0);
		if (s > 100 || s % 5)
			bad = true;
		else
			counts[s / 5]++;
	}
	CHECK(!bad);
	CHECK(counts[0] > 11600 && counts[0] < 12400);
	for (unsigned k = 1; k <= 20; k++)
		CHECK(counts[k] > 480 && counts[k] < 720);
	/* A step that does not divide 100 is the default's. */
	CHECK_EQ_INT(exp_causal_pick_speedup(&rng, 30) % 5, 0);
}

static void test_length(void)
{
	CHECK_EQ_INT(exp_causal_next_length(10 * MS, 10 * MS, 2000 * MS, 5, 5), 10 * MS);
	CHECK_EQ_INT(exp_causal_next_length(10 * MS, 10 * MS, 2000 * MS, 4, 5), 20 * MS);
	CHECK_EQ_INT(exp_causal_next_length(10 * MS, 10 * MS, 2000 * MS, 0, 5), 20 * MS);
	CHECK_EQ_INT(exp_causal_next_length(1500 * MS, 10 * MS, 2000 * MS, 0, 5), 2000 * MS);
	CHECK_EQ_INT(exp_causal_next_length(2000 * MS, 10 * MS, 2000 * MS, 0, 5), 2000 * MS);
	/* Back down when the visits come four times as often as needed, never
	 * below the initial length. */
	CHECK_EQ_INT(exp_causal_next_length(1280 * MS, 10 * MS, 2000 * MS, 19, 5), 1280 * MS);
	CHECK_EQ_INT(exp_causal_next_length(1280 * MS, 10 * MS, 2000 * MS, 20, 5), 640 * MS);
	CHECK_EQ_INT(exp_causal_next_length(20 * MS, 10 * MS, 2000 * MS, 5000, 5), 10 * MS);
	CHECK_EQ_INT(exp_causal_next_length(10 * MS, 10 * MS, 2000 * MS, 5000, 5), 10 * MS);
	/* A start-up with few visits, then a steady rate of 50 per 10 ms: the
	 * length follows the rate back to 10 ms and stays there. */
	uint64_t len = 10 * MS;
	for (int i = 0; i < 7; i++)
		len = exp_causal_next_length(len, 10 * MS, 2000 * MS, 0, 5);
	CHECK_EQ_INT(len, 1280 * MS);
	for (int i = 0; i < 20; i++)
		len = exp_causal_next_length(len, 10 * MS, 2000 * MS, len / MS * 5, 5);
	CHECK_EQ_INT(len, 10 * MS);
}

/* The length follows the points that saw visits: an idle one (another
 * phase's) does not double it. */
static void test_min_visits(void)
{
	struct exp_point_delta d[3] = {
		{ .name = "merge", .kind = EXP_MEASURE_THROUGHPUT, .delta = 0 },
		{ .name = "map", .kind = EXP_MEASURE_THROUGHPUT, .delta = 50 },
		{ .name = "req", .kind = EXP_MEASURE_LATENCY, .arrivals = 9, .departures = 7 },
	};

	CHECK_EQ_INT(exp_causal_min_visits(d, 2), 50);
	CHECK_EQ_INT(exp_causal_min_visits(d, 3), 7);
	d[1].delta = 3;
	CHECK_EQ_INT(exp_causal_min_visits(d, 3), 3);
	d[1].delta = 0;
	d[2].departures = 0;
	CHECK_EQ_INT(exp_causal_min_visits(d, 3), 0);
	CHECK_EQ_INT(exp_causal_min_visits(d, 0), 0);
}

static void test_owed(void)
{
	int64_t excess = 0;

	CHECK_EQ_INT(exp_causal_owed(10, 10, MS, &excess), 0);
	CHECK_EQ_INT(exp_causal_owed(10, 12, MS, &excess), 0);
	CHECK_EQ_INT(exp_causal_owed(10, 7, MS, &excess), 3 * MS);
	excess = (int64_t)(MS / 2);
	CHECK_EQ_INT(exp_causal_owed(10, 7, MS, &excess), 3 * MS - MS / 2);
	CHECK_EQ_INT(excess, 0);
	excess = (int64_t)(5 * MS);
	CHECK_EQ_INT(exp_causal_owed(10, 7, MS, &excess), 0);
	CHECK_EQ_INT(excess, 2 * MS);
	excess = -(int64_t)(MS / 4);
	CHECK_EQ_INT(exp_causal_owed(10, 9, MS, &excess), MS + MS / 4);
	CHECK_EQ_INT(excess, 0);
}

/* The line every synthetic sample lands in. */
__attribute__((noinline)) static int the_line(int x)
{
	return x * 3 + 1;
}

/* A sample of tid in the line, taken at time (0: now) on cpu (-1: not known). */
static void line_sample(struct exp_causal *c, struct sym_space *sp, pid_t tid, uint64_t time, int cpu)
{
	uint64_t pc = (uint64_t)(uintptr_t)&the_line;

	exp_causal_sample(c, sp, getpid(), tid, &pc, 1, time, cpu);
}

static void samples(struct exp_causal *c, struct sym_space *sp, pid_t tid, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		line_sample(c, sp, tid, 0, -1);
}

/* A new engine with cfg, records to out, and threads tids[0..n) of this
 * process. */
static struct exp_causal *engine_to(const struct exp_causal_config *cfg, const struct exp_sink *out,
				    struct sym_space **sp, const pid_t *tids, unsigned n)
{
	struct exp_causal *c = NULL;

	CHECK_EQ_INT(sym_space_new(getpid(), sp), 0);
	CHECK_EQ_INT(exp_causal_new(cfg, NULL, out, &c), 0);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_INT(exp_causal_thread_new(c, tids[i], getpid()), 0);
	return c;
}

/* The same, records dropped and experiments measured from their start (no
 * warm-up: test_warm_up). */
static struct exp_causal *engine_with(const struct exp_causal_config *cfg, struct sym_space **sp,
				      const pid_t *tids, unsigned n)
{
	struct exp_causal_config cold = *cfg;

	cold.no_warmup = true;
	return engine_to(&cold, NULL, sp, tids, n);
}

/* An engine whose experiments all run the line at 50% for experiment_ns
 * (the first one chosen with seed), with threads a and b. */
static struct exp_causal *half_speed_engine(uint64_t experiment_ns, uint64_t seed, pid_t a, pid_t b,
					    struct sym_space **sp)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = experiment_ns,
		.fixed_speedup = 50,
		.seed = seed,
	};

	return engine_with(&cfg, sp, (const pid_t[]){ a, b }, 2);
}

/* The experiment starts at now, on the line runner sampled just before. */
static void start_on_line(struct exp_causal *c, struct sym_space *sp, pid_t runner, uint64_t now)
{
	line_sample(c, sp, runner, now - MS, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now), 0);
}

/* The next experiment starts at the tick at start, and the program's end
 * cuts it at cut. */
static void start_and_cut(struct exp_causal *c, uint64_t start, uint64_t cut)
{
	struct exp_causal_stats st;

	CHECK_EQ_INT(exp_causal_tick(c, start), 0);
	exp_causal_stats(c, &st);
	CHECK(st.running);
	CHECK_EQ_INT(exp_causal_finish(c, cut), 0);
}

/* What a sink was given: the last experiment record. */
static struct exp_experiment last_exp;
static unsigned nexps;

static int keep_experiment(void *ctx, const struct exp_experiment *e)
{
	(void)ctx;
	last_exp = *e;
	nexps++;
	return 0;
}

/* An experiment warms up at its speedup before it is measured: delays
 * inserted and paid, nothing counted; a warm-up sample that reaches psup
 * after the measuring began is owed but not counted either. */
static void test_warm_up(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 10 * MS,
		.fixed_speedup = 50,
		.seed = 11,
	};
	struct exp_sink sink = { .experiment = keep_experiment };
	struct exp_causal_stats st;
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 1201, b = 1202;
	uint64_t now = 1000 * MS;

	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	nexps = 0;
	start_on_line(c, sp, a, now);
	exp_causal_stats(c, &st);
	CHECK(st.running);
	CHECK_EQ_INT(st.speedup_pct, 50);

	/* Warming up: a's line makes b owe and pay, as measured. */
	line_sample(c, sp, a, now + MS, -1);
	line_sample(c, sp, a, now + 2 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), MS);
	exp_causal_held(c, b, MS, MS, 0);
	/* 10 ms (the default; half the length when that is longer): measured from
	 * here. A warm-up sample arriving now is still owed. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 10 * MS), 0);
	line_sample(c, sp, a, now + 9 * MS, -1);
	line_sample(c, sp, a, now + 12 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), MS);
	exp_causal_held(c, b, MS, MS, 0);
	CHECK_EQ_INT(exp_causal_tick(c, now + 19 * MS), 0);
	CHECK_EQ_INT(nexps, 0);
	CHECK_EQ_INT(exp_causal_tick(c, now + 20 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	CHECK_EQ_INT(nexps, 1);
	/* Its 10 measured ms, the one measured delay and line sample. */
	CHECK_EQ_INT(last_exp.duration_ns, 10 * MS);
	CHECK_EQ_INT(last_exp.delays, 1);
	CHECK_EQ_INT(last_exp.delay_ns, MS / 2);
	CHECK_EQ_INT(last_exp.selected_samples, 1);
	CHECK_EQ_INT(last_exp.pauses, 1);

	/* The next one, on the same line at the same speedup, finds the
	 * program warm: measured from its start (cut short after 11 ms, over
	 * half its length: kept). */
	start_and_cut(c, now + 21 * MS, now + 32 * MS);
	CHECK_EQ_INT(nexps, 2);
	CHECK_EQ_INT(last_exp.duration_ns, 11 * MS);
	/* After a cut the next one warms up again; cut short while warming
	 * up, it is not counted as dropped: nothing was measured. */
	start_and_cut(c, now + 40 * MS, now + 48 * MS);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.experiments, 2);
	CHECK_EQ_INT(st.dropped, 0);
	CHECK_EQ_INT(nexps, 2);

	exp_causal_free(c);
	sym_space_free(sp);
}

static void test_engine(void)
{
	struct exp_causal *c;
	struct exp_causal_stats st;
	struct sym_space *sp;
	pid_t tids[8];
	const pid_t a = 1001, b = 1002, d = 1003;
	uint64_t now = 1000 * MS;
	uint64_t wait_args[6] = { 0, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0 };
	uint64_t wake_args[6] = { 0, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };

	c = half_speed_engine(10 * MS, 7, a, b, &sp);

	/* No experiment before any in-scope sample. */
	CHECK_EQ_INT(exp_causal_tick(c, now), 0);
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	samples(c, sp, a, 1);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.in_scope_samples, 1);
	CHECK_EQ_INT(st.lines, 1);
	CHECK_EQ_INT(exp_causal_tick(c, now), 0);
	exp_causal_stats(c, &st);
	CHECK(st.running);
	CHECK_EQ_INT(st.speedup_pct, 50);
	CHECK(st.file && strstr(st.file, "test-causal.c"));

	/* Coz 3.4.3: a runs the line 4 times: b owes 4 x 0.5 ms, a nothing. */
	samples(c, sp, a, 4);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 1);
	CHECK_EQ_INT(tids[0], b);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 2 * MS);
	/* Paid: nothing more owed. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);
	exp_causal_held(c, b, 2 * MS, 2 * MS, 0);

	/* Both run the line equally: nobody pauses (not n-1 times each). */
	for (int i = 0; i < 10; i++) {
		samples(c, sp, a, 1);
		samples(c, sp, b, 1);
	}
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 0);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);

	/* b now runs it alone: a owes, and is paused at an intercepted wake
	 * (delays before waking anyone). */
	samples(c, sp, b, 3);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, psup_now_ns()));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 3 * MS / 2);
	/* A hold that ran 1 ms long: the excess comes off the next debt. */
	exp_causal_held(c, a, 3 * MS / 2, 5 * MS / 2, 0);
	samples(c, sp, b, 4); /* a owes 2 ms, minus 1 ms of excess */
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 1 * MS);
	exp_causal_held(c, a, MS, MS, 0);
	/* b runs the line while a is held: as the hold runs out, a is held
	 * on for what it came to owe meanwhile (not let go to pay it at its
	 * next stop, wherever that is), then let go when even. */
	samples(c, sp, b, 2);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
	samples(c, sp, b, 2);
	exp_causal_held(c, a, MS, MS, 0);
	CHECK_EQ_INT(exp_causal_hold_on(c, a, psup_now_ns()), MS);
	exp_causal_held(c, a, MS, MS, 0);
	CHECK_EQ_INT(exp_causal_hold_on(c, a, psup_now_ns()), 0);
	/* A hold let go early owes the shortfall at its next pause, not a
	 * hold of its own. */
	samples(c, sp, b, 2);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
	exp_causal_held(c, a, MS, MS / 2, 0);
	CHECK_EQ_INT(exp_causal_hold_on(c, a, psup_now_ns()), 0);
	samples(c, sp, b, 2);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 3 * MS / 2);
	exp_causal_held(c, a, 3 * MS / 2, 3 * MS / 2, 0);

	/* Crediting (3.4.2): a blocks in a futex wait while b runs the line;
	 * when it wakes (its switch-in), a owes nothing. The switch-in of the
	 * resume from the intercepting stop itself is no wake-up. */
	{
		uint64_t t0 = psup_now_ns(), t1;
		CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, t0));
		exp_causal_switch(c, a, false, false, t0 + 1, -1); /* resumed from the stop */
		exp_causal_switch(c, a, true, false, t0 + 2, -1);  /* blocks */
		CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 0);
		samples(c, sp, b, 6);
		t1 = psup_now_ns();
		exp_causal_switch(c, a, false, false, t1, -1); /* woken */
		CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
		/* A wait that returns at once (no switch-out): no credit. */
		CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, psup_now_ns()));
		samples(c, sp, b, 2);
		CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, psup_now_ns()));
		CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
		exp_causal_held(c, a, MS, MS, 0);
	}

	/* Coz 3.4.1: a wait for time is paid before and at its return, never
	 * credited; reads, and polls that cannot wait, stop only before. */
	{
		const uint64_t sleep_args[6] = { 0x1000, 0, 0, 0, 0, 0 };
		const uint64_t poll_now[6] = { 0x1000, 1, 0, 0, 0, 0 };
		const uint64_t poll_wait[6] = { 0x1000, 1, 100, 0, 0, 0 };
		uint64_t t0 = psup_now_ns();

		samples(c, sp, b, 2);
		CHECK(exp_causal_syscall_enter(c, a, SYS_nanosleep, sleep_args, t0));
		CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
		exp_causal_held(c, a, MS, MS, 0);
		exp_causal_switch(c, a, false, false, t0 + 1, -1); /* resumed into it */
		exp_causal_switch(c, a, true, false, t0 + 2, -1);  /* sleeps */
		samples(c, sp, b, 4);
		exp_causal_switch(c, a, false, false, psup_now_ns(), -1); /* wakes */
		/* its return: what b ran meanwhile is owed, not credited */
		exp_causal_switch(c, a, true, false, psup_now_ns(), -1); /* the exit stop */
		CHECK_EQ_INT(exp_causal_hold(c, a, false), 2 * MS);
		exp_causal_held(c, a, 2 * MS, 2 * MS, 0);
		exp_causal_switch(c, a, false, false, psup_now_ns(), -1); /* resumed */
		CHECK(!exp_causal_syscall_enter(c, a, SYS_read, sleep_args, psup_now_ns()));
		CHECK(!exp_causal_syscall_enter(c, a, SYS_poll, poll_now, psup_now_ns()));
		CHECK(exp_causal_syscall_enter(c, a, SYS_poll, poll_wait, psup_now_ns()));
	}

	/* A thread found blocked is not held and not a candidate. */
	samples(c, sp, b, 4);
	CHECK_EQ_INT(exp_causal_hold(c, a, true), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 0);
	exp_causal_switch(c, a, false, false, 0, -1); /* runs again: pays */
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 1);

	/* A new thread owes nothing: its creator's debt (a's 2 ms) stays
	 * its creator's, paid below. */
	CHECK_EQ_INT(exp_causal_thread_new(c, d, getpid()), 0);
	CHECK_EQ_INT(exp_causal_hold(c, d, false), 0);

	/* The experiment ends after its length, once the debtors paid
	 * (settling), and none is owed afterwards. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 5 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(st.running);
	CHECK_EQ_INT(exp_causal_tick(c, now + 11 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(st.running);     /* a still owes 2 ms: settling */
	samples(c, sp, b, 10); /* no longer counted (time 0: now) */
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 2 * MS);
	exp_causal_held(c, a, 2 * MS, 2 * MS, 0);
	{
		/* ...unless taken before the end: it raises what a owes. */
		line_sample(c, sp, b, now + 10 * MS, -1);
		CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
		exp_causal_held(c, a, MS / 2, MS / 2, 0);
		/* d too: settling waits for every debtor. */
		CHECK_EQ_INT(exp_causal_tick(c, now + 12 * MS), 0);
		exp_causal_stats(c, &st);
		CHECK(st.running);
		CHECK_EQ_INT(exp_causal_hold(c, d, false), MS / 2);
		exp_causal_held(c, d, MS / 2, MS / 2, 0);
		/* ...and one taken before the experiment began does not. */
		line_sample(c, sp, b, now - MS, -1);
		CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	}
	CHECK_EQ_INT(exp_causal_tick(c, now + 12 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	CHECK_EQ_INT(st.experiments, 1);
	/* Measured up to the settling (11 ms), which took 1 ms. */
	CHECK_EQ_INT(st.settle_ns, MS);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);
	/* Without progress points the length stays (nothing to double on). */
	CHECK_EQ_INT(st.experiment_ns, 10 * MS);

	/* The next experiment at the next tick (no cool-off: the warm-up,
	 * off here, takes its place); a program exit cuts it short and it is
	 * dropped (it ran under half its length). */
	start_and_cut(c, now + 13 * MS, now + 17 * MS);
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	CHECK_EQ_INT(st.experiments, 1);
	CHECK_EQ_INT(st.dropped, 1);

	exp_causal_thread_gone(c, d, 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* Two threads running the line side by side: the one a sample of the other
 * put one or two delays behind is left to its own samples while it runs
 * the line (Coz's threads pay in their own sample handler), a thread that
 * does not run the line is paused, and so is a runner further behind or
 * whose last line sample is old. */
static void test_line_runners(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 10 * MS,
		.fixed_speedup = 100,
		.seed = 7,
	};
	struct sym_space *sp;
	pid_t tids[8];
	const pid_t a = 1001, b = 1002, d = 1003;
	uint64_t now = 1000 * MS;
	struct exp_causal *c = engine_with(&cfg, &sp, (const pid_t[]){ a, b, d }, 3);

	start_on_line(c, sp, a, now);
	line_sample(c, sp, b, now + MS / 2, -1);
	line_sample(c, sp, a, now + MS, -1);
	line_sample(c, sp, a, now + MS + MS / 2, -1);
	/* Global 2: b owes one delay, d two. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 2 * MS), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 1);
	CHECK_EQ_INT(tids[0], d);
	/* Its last line sample three periods old, b pays. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 4 * MS), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 2);
	/* Running the line again but three delays behind: not jitter. */
	line_sample(c, sp, b, now + 4 * MS, -1);
	line_sample(c, sp, a, now + 4 * MS + 1, -1);
	line_sample(c, sp, a, now + 4 * MS + 2, -1);
	line_sample(c, sp, a, now + 4 * MS + 3, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now + 5 * MS), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 2);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* A thread preempted on a CPU where the line then runs is credited a unit
 * per line sample taken there while it waited, whether the sample reaches
 * psup before or after its switch-out record; samples on another CPU, or
 * after it ran again, are owed; while it waits behind the line it is not
 * paused, while it waits behind anything else (psup) it is. */
static void test_preempt_credit(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 20 * MS,
		.fixed_speedup = 100,
		.seed = 7,
	};
	struct sym_space *sp;
	pid_t tids[8];
	const pid_t a = 4001, b = 4002, d = 4003, e = 4004;
	uint64_t now = 2000 * MS;
	struct exp_causal *c = engine_with(&cfg, &sp, (const pid_t[]){ a, b, d, e }, 4);

	start_on_line(c, sp, a, now);
	/* b waits on CPU 0 from now + 1 ms, d on CPU 1, e on CPU 2. */
	exp_causal_switch(c, b, true, true, now + MS, 0);
	exp_causal_switch(c, e, true, true, now + MS, 2);
	/* Read before d's switch-out: found in the history. */
	line_sample(c, sp, a, now + 2 * MS, 1);
	exp_causal_switch(c, d, true, true, now + MS, 1);
	line_sample(c, sp, a, now + 3 * MS, 0);
	line_sample(c, sp, a, now + 4 * MS, 0);
	/* Global 3: b was credited 2 (CPU 0), d 1 (CPU 1): both owe, but
	 * wait behind the line; e, behind nothing of the line, pays. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 5 * MS), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 1);
	CHECK_EQ_INT(tids[0], e);
	exp_causal_switch(c, b, false, false, now + 5 * MS, 0);
	exp_causal_switch(c, d, false, false, now + 5 * MS, 1);
	/* Taken while b waited, read after it ran again: credited. After:
	 * owed. */
	line_sample(c, sp, a, now + 5 * MS - 1, 0);
	line_sample(c, sp, a, now + 6 * MS, 0);
	/* Global 5: b at 3, owes 2 ms; d at 1, owes 4 ms. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 2 * MS);
	exp_causal_held(c, b, 2 * MS, 2 * MS, 0);
	CHECK_EQ_INT(exp_causal_hold(c, d, false), 4 * MS);
	exp_causal_held(c, d, 4 * MS, 4 * MS, 0);
	/* Global 5, d at 5. d waits again on CPU 1, then runs and blocks;
	 * the line samples of its wait reach psup after both: still
	 * credited, but never past the global count. */
	exp_causal_switch(c, d, true, true, now + 7 * MS, 1);
	exp_causal_switch(c, d, false, false, now + 9 * MS, 1);
	exp_causal_switch(c, d, true, false, now + 9 * MS + 10, 1);
	line_sample(c, sp, a, now + 8 * MS, 1);     /* a 6, global 6: d 6 */
	line_sample(c, sp, b, now + 8 * MS + 5, 1); /* b 4: d capped at 6 */
	line_sample(c, sp, a, now + 10 * MS, 0);    /* a 7, global 7 */
	exp_causal_switch(c, d, false, false, now + 11 * MS, 1);
	CHECK_EQ_INT(exp_causal_hold(c, d, false), MS);
	exp_causal_held(c, d, MS, MS, 0);
	/* A CPU not known credits nothing: e, preempted again, owes all. */
	exp_causal_switch(c, e, false, false, now + 9 * MS, 2);
	exp_causal_switch(c, e, true, true, now + 10 * MS, -1);
	line_sample(c, sp, a, now + 11 * MS, -1); /* global 8 */
	exp_causal_switch(c, e, false, false, now + 12 * MS, 2);
	CHECK_EQ_INT(exp_causal_hold(c, e, false), 8 * MS);
	exp_causal_held(c, e, 8 * MS, 8 * MS, 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* The observer's cost is the thread's own loss, off what it owes: psup's
 * samples taken on the CPU of a thread's preemption while it waited
 * (read before or after its switch-out record; not those on another CPU or
 * after it ran again), and the time from psup's resume of a hold to the
 * thread's switch-in. */
static void test_observer(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 50 * MS,
		.fixed_speedup = 100,
		.seed = 7,
	};
	struct sym_space *sp;
	struct exp_causal_stats st;
	const pid_t a = 4101, b = 4102;
	uint64_t now = 2000 * MS;
	struct exp_causal *c = engine_with(&cfg, &sp, (const pid_t[]){ a, b }, 2);

	start_on_line(c, sp, a, now);
	/* b waits on CPU 0 behind psup (one sample there), then runs. */
	exp_causal_switch(c, b, true, true, now + MS, 0);
	exp_causal_observer(c, 0, now + MS + MS / 2, MS);
	exp_causal_observer(c, 1, now + MS + MS / 2, MS); /* another CPU */
	exp_causal_switch(c, b, false, false, now + 2 * MS, 0);
	exp_causal_observer(c, 0, now + 2 * MS + 1, MS); /* b ran again */
	line_sample(c, sp, a, now + 2 * MS, 1);
	line_sample(c, sp, a, now + 3 * MS, 1);
	line_sample(c, sp, a, now + 4 * MS, 1);
	/* Global 3: b owes 3 ms, less the 1 ms psup took. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 2 * MS);
	/* Resumed at +7 ms, running again at +7.3 ms: 0.3 ms lost more. */
	exp_causal_held(c, b, 2 * MS, 2 * MS, now + 7 * MS);
	exp_causal_switch(c, b, false, false, now + 7 * MS + 300000, 0);
	/* Preempted again on CPU 0 at +8 ms; psup's sample there at +8.5 ms
	 * reaches the engine before b's switch-out record. */
	exp_causal_observer(c, 0, now + 8 * MS + MS / 2, MS);
	exp_causal_switch(c, b, true, true, now + 8 * MS, 0);
	exp_causal_switch(c, b, false, false, now + 9 * MS, 0);
	line_sample(c, sp, a, now + 9 * MS, 1);
	line_sample(c, sp, a, now + 10 * MS, 1);
	line_sample(c, sp, a, now + 11 * MS, 1);
	/* Global 6, b paid 3: owes 3 ms, less 0.3 + 1. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 3 * MS - 300000 - MS);
	exp_causal_held(c, b, 3 * MS - 300000 - MS, 3 * MS - 300000 - MS, now + 14 * MS);
	exp_causal_switch(c, b, false, false, now + 14 * MS, 0);
	/* A pause request: b stops at +15 ms, psup sees the stop 40 us later;
	 * it owes nothing then and is resumed at once, running 10 us later. */
	exp_causal_switch(c, b, true, false, now + 15 * MS, 0);
	exp_causal_interrupted(c, b, now + 15 * MS + 40000);
	exp_causal_switch(c, b, false, false, now + 15 * MS + 50000, 0);
	line_sample(c, sp, a, now + 16 * MS, 1);
	/* Global 7, b paid 6: owes 1 ms, less the 50 us of the stop. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), MS - 50000);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_samples, 2);
	CHECK_EQ_INT(st.observer_ns, 2 * MS);
	CHECK_EQ_INT(st.resumes, 3);
	CHECK_EQ_INT(st.resume_lag_ns, 300000 + 10000);
	CHECK_EQ_INT(st.stops, 1);
	CHECK_EQ_INT(st.stop_lag_ns, 40000);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* A pause's kernel path (psup's request, the thread's stop and its return
 * to its own code) is the thread's CPU time, not its stop's: its samples
 * taken in the kernel from the request to shortly after its switch-in come
 * off what it owes; those before the request, after that tail, or of a
 * request whose stop never came, after a resume's longest lag, do not. */
static void test_pause_kernel(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 100 * MS,
		.fixed_speedup = 100,
		.seed = 7,
	};
	struct sym_space *sp;
	struct exp_causal_stats st;
	const pid_t a = 4301, b = 4302;
	const uint64_t us = 1000, period = 100 * us;
	uint64_t now = 5000 * MS;
	struct exp_causal *c = engine_with(&cfg, &sp, (const pid_t[]){ a, b }, 2);

	start_on_line(c, sp, a, now);
	line_sample(c, sp, a, now + 1 * MS, 1);
	line_sample(c, sp, a, now + 2 * MS, 1);
	exp_causal_kernel_sample(c, b, now + 2 * MS + 500 * us, period); /* a system call */
	exp_causal_pause_sent(c, b, now + 3 * MS);
	exp_causal_kernel_sample(c, b, now + 3 * MS + 20 * us, period);
	exp_causal_switch(c, b, true, false, now + 3 * MS + 30 * us, 0);
	exp_causal_interrupted(c, b, now + 3 * MS + 40 * us);
	/* Global 2: b owes 2 ms, less the 0.1 ms of its kernel path. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 2 * MS - period);
	exp_causal_held(c, b, 2 * MS - period, 2 * MS - period, now + 5 * MS);
	exp_causal_switch(c, b, false, false, now + 5 * MS + 10 * us, 0);
	exp_causal_kernel_sample(c, b, now + 5 * MS + 20 * us, period);  /* its way back */
	exp_causal_kernel_sample(c, b, now + 5 * MS + 200 * us, period); /* its own work */
	line_sample(c, sp, a, now + 6 * MS, 1);
	line_sample(c, sp, a, now + 7 * MS, 1);
	/* Global 4: 2 ms more, less the stop's 10 us, the resume's 10 us and
	 * the way back's sample. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 2 * MS - 20 * us - period);
	exp_causal_held(c, b, 2 * MS - 20 * us - period, 2 * MS - 20 * us - period, now + 9 * MS);
	/* A request whose stop never came: its path lasts a resume's lag. */
	exp_causal_switch(c, b, false, false, now + 9 * MS, 0);
	exp_causal_pause_sent(c, b, now + 10 * MS);
	exp_causal_kernel_sample(c, b, now + 11 * MS, period);
	exp_causal_kernel_sample(c, b, now + 40 * MS, period);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.stop_kernel_samples, 3);
	CHECK_EQ_INT(st.stop_kernel_ns, 3 * period);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* What a sink was given: the last line_samples. */
static struct exp_line_samples last_ls;

static int keep_line_samples(void *ctx, const struct exp_line_samples *ls)
{
	(void)ctx;
	last_ls = *ls;
	return 0;
}

/* A line's samples in the measured parts of 0% experiments, and their
 * length (phase correction's undisturbed s / T): a sample before the
 * experiment counts in the run's total only, and an experiment at 50%
 * adds to neither. */
static void test_zero_counts(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 10 * MS,
		.fixed_speedup = 0,
		.seed = 3,
		.no_warmup = true,
	};
	struct exp_sink sink = { .line_samples = keep_line_samples };
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 1301, b = 1302;
	uint64_t now = 2000 * MS;

	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	start_on_line(c, sp, a, now);
	for (unsigned i = 1; i <= 3; i++)
		line_sample(c, sp, a, now + i * MS, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now + 10 * MS), 0);
	CHECK_EQ_INT(exp_causal_flush(c), 0);
	CHECK_EQ_INT(last_ls.count, 4);
	CHECK_EQ_INT(last_ls.count0, 3);
	CHECK_EQ_INT(last_ls.time0, 10 * MS);
	exp_causal_free(c);
	sym_space_free(sp);

	cfg.fixed_speedup = 50;
	memset(&last_ls, 0, sizeof(last_ls));
	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	start_on_line(c, sp, a, now);
	line_sample(c, sp, a, now + MS, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now + 10 * MS), 0);
	CHECK_EQ_INT(exp_causal_finish(c, now + 11 * MS), 0);
	CHECK_EQ_INT(last_ls.count, 2);
	CHECK_EQ_INT(last_ls.count0, 0);
	CHECK_EQ_INT(last_ls.time0, 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* A stop at an intercepted call while another thread of the program runs
 * is the stopped thread's own loss: off what it owes, as psup's
 * preemptions are (and a stop it would have waited through anyway is
 * not). */
static void test_observer_stop_credit(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 50 * MS,
		.fixed_speedup = 100,
		.seed = 9,
		.no_warmup = true,
	};
	struct exp_causal_stats st;
	struct sym_space *sp;
	const pid_t a = 4301, b = 4302;
	const uint64_t us = 1000;
	uint64_t now = 4000 * MS;
	uint64_t wait_args[6] = { 0, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0 };
	uint64_t wake_args[6] = { 0, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };
	struct exp_causal *c = engine_with(&cfg, &sp, (const pid_t[]){ a, b }, 2);

	start_on_line(c, sp, a, now);
	exp_causal_switch(c, a, false, false, now + 1 * MS, 0);
	exp_causal_switch(c, b, false, false, now + 1 * MS, 1);
	/* b stops at a wake for 300 us while a runs its line */
	exp_causal_switch(c, b, true, false, now + 2 * MS, 1);
	CHECK(!exp_causal_syscall_enter(c, b, SYS_futex, wake_args, now + 2 * MS + 20 * us));
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);
	exp_causal_switch(c, b, false, false, now + 2 * MS + 300 * us, 1);
	/* then at a wait it blocks in at once: nothing lost */
	exp_causal_switch(c, b, true, false, now + 3 * MS, 1);
	CHECK(!exp_causal_syscall_enter(c, b, SYS_futex, wait_args, now + 3 * MS + 20 * us));
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);
	exp_causal_switch(c, b, false, false, now + 3 * MS + 100 * us, 1);
	exp_causal_switch(c, b, true, false, now + 3 * MS + 110 * us, 1); /* blocks */
	exp_causal_switch(c, b, false, false, now + 4 * MS, 1);           /* woken */
	line_sample(c, sp, a, now + 5 * MS, 1);
	line_sample(c, sp, a, now + 6 * MS, 1);
	line_sample(c, sp, a, now + 7 * MS, 1);
	/* Global 3, from after its wake-up: 3 ms less 300 us. */
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 3 * MS - 300 * us);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_stops, 2);
	CHECK_EQ_INT(st.observer_stop_credit_ns, 300 * us);
	CHECK_EQ_INT(st.observer_idle_ns, 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* psup's stops at intercepted calls (and unlock traps) are the observer's:
 * the time the program had no thread runnable while one was in such a stop
 * comes out of the experiment's duration (as a delay every thread took),
 * unless the stopped thread, stopped at a wait, blocked at once after it (it
 * would have waited anyway), or was held there for a pause. */
static void test_observer_idle(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 50 * MS,
		.fixed_speedup = 0,
		.seed = 5,
		.no_warmup = true,
	};
	struct exp_sink sink = { .experiment = keep_experiment };
	struct exp_causal_stats st;
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 4201, b = 4202;
	const uint64_t us = 1000;
	uint64_t now = 3000 * MS;
	uint64_t wait_args[6] = { 0, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0 };
	uint64_t wake_args[6] = { 0, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };

	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	nexps = 0;
	start_on_line(c, sp, a, now);
	exp_causal_switch(c, a, false, false, now + 1 * MS, 0);
	exp_causal_switch(c, b, false, false, now + 1 * MS, 1);
	exp_causal_switch(c, b, true, false, now + 2 * MS, 1); /* b blocks */
	/* a stops at a wake with nothing else running: 200 us idle, kept
	 * once a runs on after its resume. */
	exp_causal_switch(c, a, true, false, now + 3 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 3 * MS + 50 * us));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_switch(c, a, false, false, now + 3 * MS + 200 * us, 0);
	exp_causal_switch(c, a, true, true, now + 5 * MS, 0); /* preempted */
	exp_causal_switch(c, a, false, false, now + 5 * MS + 500 * us, 0);
	/* A wait after which it blocks at once: it would have waited
	 * anyway, nothing taken out. */
	exp_causal_switch(c, a, true, false, now + 6 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 6 * MS + 20 * us));
	exp_causal_switch(c, a, false, false, now + 6 * MS + 100 * us, 0);
	exp_causal_switch(c, a, true, false, now + 6 * MS + 110 * us, 0); /* blocks */
	exp_causal_switch(c, a, false, false, now + 8 * MS, 0);           /* woken */
	/* A stop while b runs: the program was not idle. */
	exp_causal_switch(c, b, false, false, now + 9 * MS, 1);
	exp_causal_switch(c, a, true, false, now + 10 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 10 * MS + 20 * us));
	exp_causal_switch(c, a, false, false, now + 10 * MS + 300 * us, 0);
	exp_causal_switch(c, b, true, false, now + 11 * MS, 1); /* b blocks again */
	/* Two stops in a row, a wake then a wait it blocks in: the first is
	 * kept (a ran between them), the second not. */
	exp_causal_switch(c, a, true, false, now + 12 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 12 * MS + 20 * us));
	exp_causal_switch(c, a, false, false, now + 12 * MS + 100 * us, 0);
	exp_causal_switch(c, a, true, false, now + 12 * MS + 110 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 12 * MS + 120 * us));
	exp_causal_switch(c, a, false, false, now + 12 * MS + 200 * us, 0);
	exp_causal_switch(c, a, true, false, now + 12 * MS + 210 * us, 0); /* blocks */
	exp_causal_switch(c, a, false, false, now + 14 * MS, 0);           /* woken */
	exp_causal_switch(c, a, true, true, now + 15 * MS, 0);
	/* A wake followed by a block at once is kept: the stop delayed the
	 * thread it woke. */
	exp_causal_switch(c, a, false, false, now + 16 * MS, 0);
	exp_causal_switch(c, a, true, false, now + 17 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 17 * MS + 20 * us));
	exp_causal_switch(c, a, false, false, now + 17 * MS + 100 * us, 0);
	exp_causal_switch(c, a, true, false, now + 17 * MS + 110 * us, 0); /* blocks */
	exp_causal_switch(c, a, false, false, now + 19 * MS, 0);
	/* So is the stop at a wait's return (the thread is awake). */
	exp_causal_switch(c, a, true, false, now + 20 * MS, 0);
	exp_causal_syscall_exit(c, a);
	exp_causal_switch(c, a, false, false, now + 20 * MS + 90 * us, 0);
	exp_causal_switch(c, a, true, false, now + 20 * MS + 95 * us, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_stops, 7);
	CHECK_EQ_INT(st.observer_stop_ns, (200 + 100 + 300 + 100 + 90 + 100 + 90) * us);
	CHECK_EQ_INT(exp_causal_tick(c, now + 50 * MS), 0);
	CHECK_EQ_INT(nexps, 1);
	CHECK_EQ_INT(last_exp.observer_ns, (200 + 100 + 100 + 90) * us);
	CHECK_EQ_INT(last_exp.delay_ns, (200 + 100 + 100 + 90) * us); /* 0%: no other delay */
	exp_causal_free(c);
	sym_space_free(sp);

	/* A stop where the thread pays (held for a pause) is the pause's:
	 * its cost is the hold's overshoot, not the observer's idle time. */
	cfg.fixed_speedup = 100;
	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	nexps = 0;
	start_on_line(c, sp, b, now);
	exp_causal_switch(c, a, false, false, now + 1 * MS, 0);
	line_sample(c, sp, b, now + 1 * MS, 1);
	exp_causal_switch(c, a, true, false, now + 3 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 3 * MS + 20 * us));
	CHECK(exp_causal_hold(c, a, false) > 0);
	exp_causal_held(c, a, MS, MS, now + 4 * MS);
	exp_causal_switch(c, a, false, false, now + 4 * MS + 50 * us, 0);
	exp_causal_switch(c, a, true, true, now + 6 * MS, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_stops, 0);
	CHECK_EQ_INT(st.observer_idle_ns, 0);
	exp_causal_free(c);
	sym_space_free(sp);

	/* Another thread held for a pause meanwhile is not runnable: a's stop
	 * during b's pause counts (without it a would have run). a runs the
	 * line, b owes. */
	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b }, 2);
	start_on_line(c, sp, a, now);
	exp_causal_switch(c, a, false, false, now + 1 * MS, 0);
	exp_causal_switch(c, b, false, false, now + 1 * MS, 1);
	line_sample(c, sp, a, now + 1 * MS + 500 * us, 0);
	exp_causal_switch(c, b, true, false, now + 2 * MS, 1);
	exp_causal_interrupted(c, b, now + 2 * MS + 20 * us);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), MS);
	exp_causal_switch(c, a, true, false, now + 2 * MS + 500 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 2 * MS + 520 * us));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_switch(c, a, false, false, now + 2 * MS + 800 * us, 0); /* during b's pause */
	exp_causal_held(c, b, MS, MS, now + 3 * MS);
	exp_causal_switch(c, b, false, false, now + 3 * MS + 50 * us, 1);
	exp_causal_switch(c, b, true, false, now + 3 * MS + 200 * us, 1); /* b blocks */
	exp_causal_switch(c, a, true, false, now + 3 * MS + 500 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 3 * MS + 520 * us));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_switch(c, a, false, false, now + 3 * MS + 600 * us, 0);
	exp_causal_switch(c, a, true, true, now + 5 * MS, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_stops, 2);
	CHECK_EQ_INT(st.observer_stop_ns, 300 * us + 100 * us);
	CHECK_EQ_INT(st.observer_idle_ns, (300 + 100) * us);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* The observer's stops at the edges: unlock traps, stops at once on two
 * threads, a lost switch-in, an experiment's warm-up, a pause request right
 * after a resume, a wait's stop followed at once by another stop, a thread
 * that dies while runnable. */
static void test_observer_edges(void)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 10 * MS,
		.fixed_speedup = 0,
		.seed = 5,
	};
	struct exp_sink sink = { .experiment = keep_experiment };
	struct exp_causal_stats st;
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 4301, b = 4302, d = 4303;
	const uint64_t us = 1000;
	uint64_t now = 4000 * MS;
	uint64_t wait_args[6] = { 0, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0 };
	uint64_t wake_args[6] = { 0, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };

	c = engine_to(&cfg, &sink, &sp, (const pid_t[]){ a, b, d }, 3);
	nexps = 0;
	start_on_line(c, sp, a, now);
	exp_causal_switch(c, a, false, false, now + 1 * MS, 0);
	exp_causal_switch(c, b, false, false, now + 1 * MS, 1);
	exp_causal_switch(c, b, true, false, now + 2 * MS, 1);
	/* Warming up until +10 ms: a stop from +9.8 to +10.2 ms counts from
	 * +10 ms on. */
	exp_causal_switch(c, a, true, false, now + 9 * MS + 800 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 9 * MS + 900 * us));
	CHECK_EQ_INT(exp_causal_tick(c, now + 10 * MS), 0);
	exp_causal_switch(c, a, false, false, now + 10 * MS + 200 * us, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, 200 * us);
	/* An unlock trap's stop (kept: the mutex is still held). */
	exp_causal_switch(c, a, true, false, now + 11 * MS, 0);
	exp_causal_trapped(c, a, now + 11 * MS + 20 * us, 0x1000);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_switch(c, a, false, false, now + 11 * MS + 100 * us, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, 300 * us);
	/* a and b stopped at once: the idle time in both stops (from b's
	 * stop at +12.1 ms to a's resume at +12.3 ms) counts once. */
	exp_causal_switch(c, b, false, false, now + 11 * MS + 500 * us, 1);
	exp_causal_switch(c, a, true, false, now + 12 * MS, 0);
	exp_causal_switch(c, b, true, false, now + 12 * MS + 100 * us, 1);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 12 * MS + 120 * us));
	CHECK(!exp_causal_syscall_enter(c, b, SYS_futex, wake_args, now + 12 * MS + 130 * us));
	exp_causal_switch(c, a, false, false, now + 12 * MS + 300 * us, 0);
	exp_causal_switch(c, b, false, false, now + 12 * MS + 400 * us, 1);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, (300 + 200) * us);
	exp_causal_switch(c, b, true, false, now + 12 * MS + 500 * us, 1);
	/* A lost switch-in: a stops, its resume's switch-in never comes, it
	 * blocks later: no stop to count. */
	exp_causal_switch(c, a, true, false, now + 13 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 13 * MS + 20 * us));
	exp_causal_switch(c, a, true, false, now + 14 * MS, 0);
	exp_causal_switch(c, a, false, false, now + 15 * MS, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, 500 * us);
	/* A wait's stop, then within 10 us of its resume another stop: a ran
	 * between them, the first counts. */
	exp_causal_switch(c, a, true, false, now + 16 * MS, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 16 * MS + 20 * us));
	exp_causal_switch(c, a, false, false, now + 16 * MS + 100 * us, 0);
	exp_causal_switch(c, a, true, false, now + 16 * MS + 110 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 16 * MS + 120 * us));
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, 600 * us);
	/* ... and the second, followed by a pause request 10 us after its
	 * resume: it ran, so that one counts too. */
	exp_causal_switch(c, a, false, false, now + 16 * MS + 200 * us, 0);
	exp_causal_switch(c, a, true, false, now + 16 * MS + 210 * us, 0);
	exp_causal_interrupted(c, a, now + 16 * MS + 220 * us);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, (600 + 90) * us);
	exp_causal_switch(c, a, false, false, now + 16 * MS + 300 * us, 0);
	/* d dies while runnable (it never switched out): the program is idle
	 * from its death, not before. */
	exp_causal_switch(c, d, false, false, now + 17 * MS, 1);
	exp_causal_switch(c, a, true, false, now + 17 * MS + 100 * us, 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 17 * MS + 120 * us));
	exp_causal_thread_gone(c, d, now + 17 * MS + 200 * us);
	exp_causal_switch(c, a, false, false, now + 17 * MS + 500 * us, 0);
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.observer_idle_ns, (690 + 300) * us);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* Without futex interception (attach, --no-intercept, --no-futex-stops): a
 * thread that owed when it blocked still owes that after the credit at its
 * wake-up, as after an intercepted wait (Coz's pre_block() notes the global
 * count); only the delays inserted while it was blocked are credited. */
static void test_block_carries_debt(void)
{
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 3101, b = 3102;
	uint64_t now = 5000 * MS;

	c = half_speed_engine(10 * MS, 9, a, b, &sp);
	start_on_line(c, sp, b, now);
	/* b runs the line twice while a runs (a owes 2 units: 1 ms), then a
	 * blocks on a futex, unpaid, and b runs it twice more meanwhile. */
	line_sample(c, sp, b, now + 1 * MS, -1);
	line_sample(c, sp, b, now + 2 * MS, -1);
	exp_causal_switch(c, a, true, false, now + 3 * MS, -1);
	exp_causal_block_futex(c, a, now + 3 * MS);
	line_sample(c, sp, b, now + 4 * MS, -1);
	line_sample(c, sp, b, now + 5 * MS, -1);
	exp_causal_switch(c, a, false, false, now + 6 * MS, -1);
	/* Credited the two executions of its wait, not the two before. */
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* Without interception (attach, --no-intercept): a thread that blocked on a
 * futex is credited at its switch-in with the global count as of that
 * switch-in, not with the samples that reached psup since. */
static void test_switch_credit(void)
{
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 3001, b = 3002;
	uint64_t now = 5000 * MS;

	c = half_speed_engine(10 * MS, 9, a, b, &sp);
	start_on_line(c, sp, b, now);
	exp_causal_switch(c, a, true, false, now + 3 * MS, -1);
	exp_causal_block_futex(c, a, now + 3 * MS);
	line_sample(c, sp, b, now + 4 * MS, -1);
	line_sample(c, sp, b, now + 5 * MS, -1);
	line_sample(c, sp, b, now + 7 * MS, -1); /* after the wake */
	exp_causal_switch(c, a, false, false, now + 6 * MS, -1);
	/* a owes the one sample after its wake-up (0.5 ms), not three. */
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	CHECK_EQ_INT(exp_causal_hold(c, b, false), 0);
	/* A switch-in without a futex block before it credits nothing. */
	line_sample(c, sp, b, now + 8 * MS, -1);
	exp_causal_switch(c, a, false, false, now + 9 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	/* a stops at 11 ms (a ptrace stop psup answers late): the line
	 * execution at 12 ms is not owed at this stop, only later. */
	line_sample(c, sp, b, now + 10 * MS, -1);
	exp_causal_switch(c, a, true, false, now + 11 * MS, -1);
	line_sample(c, sp, b, now + 12 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	exp_causal_switch(c, a, false, false, now + 13 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* Two ways a thread woken by the line's thread used to owe the delays it
 * should have been credited: its wait returned at once because psup's own
 * stop at the call outlasted the waker's line (no block, no switch-in after
 * one), and a line sample taken before its wake-up that reached psup after
 * its switch-in record (another thread's ring). */
static void test_late_credit(void)
{
	uint64_t wait_args[6] = { 0, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0 };
	uint64_t wake_args[6] = { 0, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 5001, b = 5002;
	uint64_t now = 7000 * MS;

	c = half_speed_engine(50 * MS, 11, a, b, &sp);
	start_on_line(c, sp, b, now);

	/* a stops at its wait at 1 ms; b runs the line at 2 and 3 ms and
	 * changes the value; a is resumed at 3.5 ms, its wait fails at once,
	 * and its next call stops it at 3.6 ms: credited as of 3.5 ms. */
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + MS));
	line_sample(c, sp, b, now + 2 * MS, -1);
	line_sample(c, sp, b, now + 3 * MS, -1);
	exp_causal_switch(c, a, false, false, now + 3 * MS + MS / 2, -1);
	/* ...then runs on, preempted while b runs the line on another CPU
	 * (or one not known): that it owes. */
	exp_causal_switch(c, a, true, true, now + 3 * MS + MS / 2 + 10000, -1);
	line_sample(c, sp, b, now + 3 * MS + MS / 2 + 20000, -1);
	exp_causal_switch(c, a, false, false, now + 3 * MS + MS / 2 + 30000, -1);
	exp_causal_switch(c, a, true, false, now + 3 * MS + MS / 2 + 100000, -1);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 4 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	/* A line sample after its resume is owed (at a pause stop). */
	exp_causal_switch(c, a, false, false, now + 4 * MS + 100000, -1);
	line_sample(c, sp, b, now + 4 * MS + MS / 2, -1);
	exp_causal_switch(c, a, true, false, now + 4 * MS + 800000, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);

	/* a blocks at 6 ms and wakes at 8 ms; b's sample of 7 ms arrives
	 * after the switch-in: credited too. One of 9 ms is owed. */
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 5 * MS));
	exp_causal_switch(c, a, false, false, now + 5 * MS + 1000, -1);
	exp_causal_switch(c, a, true, false, now + 6 * MS, -1);
	exp_causal_switch(c, a, false, false, now + 8 * MS, -1);
	line_sample(c, sp, b, now + 7 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	line_sample(c, sp, b, now + 9 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	/* Its next call ends that: every sample was drained before it. */
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wake_args, now + 10 * MS));
	line_sample(c, sp, b, now + 7 * MS + MS / 2, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* No thread pays before a blocking wait (Coz's pre_block() only notes the
 * global count): its debt goes into the wait, and only the delays inserted
 * while it was blocked are credited at its wake-up; the debt is paid after
 * it. Except before the wait for a mutex (one known from an unlock trap):
 * the wait ends with the lock taken, and the debt paid after it would be
 * paid inside the critical section. A thread with an unlock trap pays there
 * too (inside its critical section, as Coz's unlock wrapper does) and not
 * before the wake of the unlock, which runs after the release. */
static void test_unlock_trap(void)
{
	uint64_t wait_args[6] = { 0x1000, FUTEX_WAIT_PRIVATE, 2, 0, 0, 0 };
	uint64_t cond_args[6] = { 0x2000, FUTEX_WAIT_BITSET_PRIVATE, 0, 0, 0, ~0ULL };
	struct exp_causal *c;
	struct sym_space *sp;
	pid_t tids[8];
	const pid_t a = 6001, b = 6002, d = 6003;
	uint64_t now = 9000 * MS;

	c = half_speed_engine(50 * MS, 13, a, b, &sp);
	CHECK_EQ_INT(exp_causal_thread_new(c, d, getpid()), 0);
	exp_causal_set_trap(c, a, true);
	exp_causal_set_trap(c, 9999, true); /* unknown: ignored */
	/* Before an experiment nothing is wanted. */
	CHECK(!exp_causal_trap_wanted(c, a));
	start_on_line(c, sp, b, now);
	/* a unlocks a mutex (owing nothing yet): it is known to unlock. */
	exp_causal_trapped(c, a, now + MS / 2, 0x1000);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);

	/* b runs the line twice: a and d owe 1 ms; a's trap is wanted. */
	line_sample(c, sp, b, now + MS, -1);
	line_sample(c, sp, b, now + 2 * MS, -1);
	CHECK(exp_causal_trap_wanted(c, a));
	CHECK(!exp_causal_trap_wanted(c, b));
	CHECK(!exp_causal_trap_wanted(c, d));
	/* An armed thread is interrupted like any other: a pause must
	 * follow the line's execution, not wait for the next unlock. */
	CHECK_EQ_INT(exp_causal_tick(c, now + 3 * MS), 0);
	CHECK_EQ_INT(exp_causal_pause_candidates(c, tids, 8), 2);

	/* Both wait, d elsewhere (nothing paid there), a for the mutex: it
	 * pays first. A line sample taken before their calls reaches psup
	 * after them: it is debt taken into the wait, not a delay of the
	 * wait. */
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 3 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS);
	exp_causal_held(c, a, MS, MS, 0);
	CHECK(!exp_causal_syscall_enter(c, d, SYS_futex, cond_args, now + 3 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, d, false), 0);
	line_sample(c, sp, b, now + 3 * MS - 100, -1);
	/* Both block; b runs the line twice more; both wake at 6 ms. */
	exp_causal_switch(c, a, true, false, now + 3 * MS + 1000, -1);
	exp_causal_switch(c, d, true, false, now + 3 * MS + 2000, -1);
	line_sample(c, sp, b, now + 4 * MS, -1);
	line_sample(c, sp, b, now + 5 * MS, -1);
	exp_causal_switch(c, a, false, false, now + 6 * MS, -1);
	exp_causal_switch(c, d, false, false, now + 6 * MS, -1);
	/* Each is credited the two line executions of its wait, not what it
	 * owed at its call: d pays its three when next stopped, a the late
	 * one at its unlock. */
	CHECK_EQ_INT(exp_causal_hold(c, d, false), 3 * MS / 2);
	exp_causal_held(c, d, 3 * MS / 2, 3 * MS / 2, 0);
	CHECK_EQ_INT(exp_causal_hold(c, d, false), 0);
	exp_causal_trapped(c, a, now + 6 * MS, 0x1000);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	CHECK(!exp_causal_trap_wanted(c, a));
	/* The wake of its unlock (after the release) pays nothing: the debt
	 * waits for its next trap; a wake elsewhere pays before, as ever. */
	uint64_t mwake_args[6] = { 0x1000, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };
	uint64_t cwake_args[6] = { 0x2000, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0 };
	line_sample(c, sp, b, now + 7 * MS, -1);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, mwake_args, now + 7 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, cwake_args, now + 7 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	/* Its trap gone: the mutex is still its process's, and a wait for
	 * it still pays first; after an exec the address means nothing. */
	line_sample(c, sp, b, now + 8 * MS, -1);
	exp_causal_set_trap(c, a, false);
	CHECK(!exp_causal_trap_wanted(c, a));
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 9 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_held(c, a, MS / 2, MS / 2, 0);
	exp_causal_switch(c, a, false, false, now + 9 * MS + 1000, -1);
	exp_causal_process_forget(c, getpid());
	line_sample(c, sp, b, now + 10 * MS, -1);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, now + 11 * MS));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* runner runs the line n times, a ms apart from first; then waiter enters a
 * futex wait at call_at (its debt goes into the wait: it pays nothing
 * there) and blocks at out_at. */
static void line_then_wait(struct exp_causal *c, struct sym_space *sp, pid_t runner, uint64_t first,
			   int n, pid_t waiter, uint64_t call_at, uint64_t out_at)
{
	static const uint64_t wait_args[6] = { 0x1000, FUTEX_WAIT_PRIVATE, 2, 0, 0, 0 };

	for (int i = 0; i < n; i++)
		line_sample(c, sp, runner, first + (uint64_t)i * MS, -1);
	CHECK(!exp_causal_syscall_enter(c, waiter, SYS_futex, wait_args, call_at));
	CHECK_EQ_INT(exp_causal_hold(c, waiter, false), 0);
	exp_causal_switch(c, waiter, true, false, out_at, -1);
}

/* Ticks every ms from *t, the runner sampled in the line before each tick,
 * until the engine has ended `ended` experiments and runs one (or not). */
static void tick_until(struct exp_causal *c, struct sym_space *sp, pid_t runner, uint64_t *t,
		       uint64_t ended, bool running)
{
	struct exp_causal_stats st;
	uint64_t limit = *t + 200 * MS;

	for (; *t < limit; *t += MS) {
		line_sample(c, sp, runner, *t - MS / 2, -1);
		CHECK_EQ_INT(exp_causal_tick(c, *t), 0);
		exp_causal_stats(c, &st);
		if (st.experiments == ended && st.running == running)
			return;
	}
	CHECK(!"the engine never got there");
}

/* A thread that began its wait in one experiment and wakes in the next took
 * none of the next one's debt into it: the counts start anew. One that began
 * it between two experiments and wakes in the next is credited at its
 * wake-up as any other: the line's delays run while it slept are not its
 * debt (Amdahl's workers at the barrier while the serial line runs). */
static void test_wait_across_experiments(void)
{
	static const uint64_t wait_args[6] = { 0x1000, FUTEX_WAIT_PRIVATE, 2, 0, 0, 0 };
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t a = 7001, b = 7002;
	uint64_t now = 12000 * MS, t;

	c = half_speed_engine(10 * MS, 17, a, b, &sp);
	start_on_line(c, sp, b, now);
	/* b runs the line 4 times; a waits owing all 4 and blocks. */
	line_then_wait(c, sp, b, now + MS, 4, a, now + 5 * MS, now + 5 * MS + 1000);
	/* The experiment ends, cools off, and the next begins. */
	t = now + 6 * MS;
	tick_until(c, sp, b, &t, 1, true);
	/* b runs the line once more while a is blocked; a wakes: credited
	 * that one, and owing nothing of the first experiment's 4. */
	line_sample(c, sp, b, t + MS, -1);
	exp_causal_switch(c, a, false, false, t + 2 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);

	/* That experiment ends; a waits and blocks before the next begins. */
	t += 3 * MS;
	tick_until(c, sp, b, &t, 2, false);
	CHECK(!exp_causal_syscall_enter(c, a, SYS_futex, wait_args, t + 100));
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	exp_causal_switch(c, a, true, false, t + 200, -1);
	t += MS;
	tick_until(c, sp, b, &t, 2, true);
	/* b runs the line twice while a sleeps, then wakes it. */
	line_sample(c, sp, b, t + MS, -1);
	line_sample(c, sp, b, t + 2 * MS, -1);
	exp_causal_switch(c, a, false, false, t + 2 * MS + 100, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), 0);
	/* The line's next execution is a's debt, as for any thread. */
	line_sample(c, sp, b, t + 3 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, a, false), MS / 2);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* An engine whose experiments run the line at 100% for 100 ms, without a
 * warm-up, with threads tids. */
static struct exp_causal *full_speed_engine(uint64_t seed, const pid_t *tids, unsigned n, struct sym_space **sp)
{
	struct exp_causal_config cfg = {
		.period_ns = MS,
		.experiment_ns = 100 * MS,
		.fixed_speedup = 100,
		.seed = seed,
	};

	return engine_with(&cfg, sp, tids, n);
}

/* Wakes not intercepted: a woken thread takes over what its waker owed at
 * the wakeup (Coz's waker pays first, and the woken thread runs that much
 * later), whichever of the two rings is read first. A waker that paid before
 * its wakeup passes nothing on; one that paid only after it still does. The
 * debt taken over is owed time, not a lower count: the woken thread's own
 * line samples still raise the global count. */
static void test_wake_inherit(void)
{
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t l = 7101, w = 7102;
	uint64_t now = 20000 * MS;

	c = full_speed_engine(23, (const pid_t[]){ l, w }, 2, &sp);
	start_on_line(c, sp, l, now);
	/* l runs the line 3 times and blocks; w, owing 3 ms, wakes it. The
	 * switch-in is read before the wakeup. */
	line_then_wait(c, sp, l, now + MS, 3, l, now + 4 * MS, now + 4 * MS + 100);
	exp_causal_switch(c, l, false, false, now + 5 * MS + 100, -1);
	exp_causal_wakeup(c, w, l, now + 5 * MS);
	CHECK_EQ_INT(exp_causal_tick(c, now + 6 * MS), 0);
	/* Owing what it took over, l runs the line once more before it
	 * pays: the sample still raises the global count (w owes 4), it does
	 * not pay l's debt instead (l still owes the 3 it took over). */
	line_sample(c, sp, l, now + 6 * MS + 100, -1);
	CHECK_EQ_INT(exp_causal_hold(c, l, false), 3 * MS);
	exp_causal_held(c, l, 3 * MS, 3 * MS, 0);
	CHECK_EQ_INT(exp_causal_hold(c, w, false), 4 * MS);
	exp_causal_held(c, w, 4 * MS, 4 * MS, 0);

	/* Twice more; w pays (stopped at 9 ms) before it wakes l at 12 ms:
	 * nothing to take over. The wakeup is read first this time. */
	line_then_wait(c, sp, l, now + 7 * MS, 2, l, now + 8 * MS + 500, now + 8 * MS + 600);
	exp_causal_switch(c, w, true, true, now + 9 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, w, false), 2 * MS);
	exp_causal_held(c, w, 2 * MS, 2 * MS, 0);
	exp_causal_switch(c, w, false, false, now + 11 * MS, -1);
	exp_causal_wakeup(c, w, l, now + 12 * MS);
	exp_causal_switch(c, l, false, false, now + 12 * MS + 100, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now + 13 * MS), 0);
	CHECK_EQ_INT(exp_causal_hold(c, l, false), 0);

	/* Twice more; w wakes l at 16 ms owing 2 and pays only at 17 ms,
	 * before psup reads the wakeup: l still takes the 2 over. */
	line_then_wait(c, sp, l, now + 14 * MS, 2, l, now + 15 * MS + 500, now + 15 * MS + 600);
	exp_causal_switch(c, l, false, false, now + 16 * MS + 100, -1);
	exp_causal_switch(c, w, true, true, now + 17 * MS, -1);
	CHECK_EQ_INT(exp_causal_hold(c, w, false), 2 * MS);
	exp_causal_held(c, w, 2 * MS, 2 * MS, 0);
	exp_causal_switch(c, w, false, false, now + 19 * MS, -1);
	exp_causal_wakeup(c, w, l, now + 16 * MS);
	CHECK_EQ_INT(exp_causal_tick(c, now + 20 * MS), 0);
	CHECK_EQ_INT(exp_causal_hold(c, l, false), 2 * MS);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* A thread's exit that does not stop (SUP_SPAWN_CAUSAL_NO_EXIT) wakes its
 * joiner: the joiner takes over what the thread still owed, though the
 * thread is gone before its wakeup record is read. A thread that paid before
 * its exit passes nothing on. */
static void test_exit_wake(void)
{
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t l = 7201, w = 7202, j = 7203;
	uint64_t now = 30000 * MS;

	c = full_speed_engine(29, (const pid_t[]){ l, w, j }, 3, &sp);
	start_on_line(c, sp, l, now);
	/* j waits to join w; l runs the line 3 times; w ends owing 3 ms. */
	line_then_wait(c, sp, l, now, 0, j, now + MS / 2, now + MS / 2 + 100);
	for (int i = 1; i <= 3; i++)
		line_sample(c, sp, l, now + (uint64_t)i * MS, -1);
	exp_causal_thread_gone(c, w, now + 5 * MS);
	exp_causal_switch(c, j, false, false, now + 5 * MS + 100, -1);
	exp_causal_wakeup(c, w, j, now + 5 * MS);
	CHECK_EQ_INT(exp_causal_tick(c, now + 6 * MS), 0);
	/* j was credited the 3 at its wake-up, and owes them for w. */
	CHECK_EQ_INT(exp_causal_hold(c, j, false), 3 * MS);
	exp_causal_held(c, j, 3 * MS, 3 * MS, 0);

	/* A thread that paid before its end passes nothing on. */
	CHECK_EQ_INT(exp_causal_thread_new(c, w + 10, getpid()), 0);
	line_then_wait(c, sp, l, now + 10 * MS, 0, j, now + 9 * MS, now + 9 * MS + 100);
	line_sample(c, sp, l, now + 10 * MS, -1);
	line_sample(c, sp, l, now + 11 * MS, -1);
	exp_causal_switch(c, w + 10, true, true, now + 12 * MS + 200, -1);
	CHECK_EQ_INT(exp_causal_hold(c, w + 10, false), 2 * MS);
	exp_causal_held(c, w + 10, 2 * MS, 2 * MS, 0);
	exp_causal_thread_gone(c, w + 10, now + 15 * MS);
	exp_causal_wakeup(c, w + 10, j, now + 15 * MS);
	exp_causal_switch(c, j, false, false, now + 15 * MS + 100, -1);
	CHECK_EQ_INT(exp_causal_tick(c, now + 16 * MS), 0);
	CHECK_EQ_INT(exp_causal_hold(c, j, false), 0);
	exp_causal_free(c);
	sym_space_free(sp);
}

/* The tick is needed often in every experiment, 0% included (its baseline
 * pays the ticks the experiments above 0% pay), and while unlock traps
 * stop; between experiments it is not. */
static void test_fast_tick(void)
{
	struct exp_causal_config cfg = { .period_ns = MS, .experiment_ns = 10 * MS, .seed = 31 };
	struct exp_causal *c;
	struct sym_space *sp;
	const pid_t l = 7301, w = 7302;
	uint64_t now = 40000 * MS;

	for (int speedup = 0; speedup <= 50; speedup += 50) {
		uint64_t t = now;
		int ticks = 0;

		cfg.fixed_speedup = speedup;
		c = engine_with(&cfg, &sp, (const pid_t[]){ l, w }, 2);
		CHECK(!exp_causal_wants_fast_tick(c)); /* no experiment yet */
		start_on_line(c, sp, l, now);
		CHECK(exp_causal_wants_fast_tick(c));
		/* to the tick that ends it: no experiment until the next one */
		while (exp_causal_wants_fast_tick(c) && ticks++ < 1000) {
			t += MS;
			CHECK_EQ_INT(exp_causal_tick(c, t), 0);
		}
		CHECK(!exp_causal_wants_fast_tick(c));
		CHECK(ticks > 5 && ticks < 1000);
		/* an unlock trap's stop between experiments */
		exp_causal_trapped(c, w, t + 100, 0x1000);
		CHECK(exp_causal_wants_fast_tick(c));
		exp_causal_free(c);
		sym_space_free(sp);
	}
}

/* Delays use the mean period the samples really had (the timer fires a
 * little late), once enough were seen. */
static void test_period(void)
{
	struct exp_causal_config cfg = { .period_ns = MS, .fixed_speedup = 50, .seed = 5 };
	struct exp_causal *c;
	struct sym_space *sp;

	CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), 0);
	CHECK_EQ_INT(exp_causal_thread_new(c, 4001, getpid()), 0);
	CHECK_EQ_INT(exp_causal_thread_new(c, 4002, getpid()), 0);
	for (int i = 0; i < 200; i++)
		exp_causal_observe_period(c, 1100000);
	exp_causal_observe_period(c, 1000 * MS); /* nonsense: ignored */
	line_sample(c, sp, 4001, 0, -1);
	CHECK_EQ_INT(exp_causal_tick(c, 1000 * MS), 0);
	line_sample(c, sp, 4001, 0, -1);
	CHECK_EQ_INT(exp_causal_hold(c, 4002, false), 550000);
	exp_causal_free(c);
	sym_space_free(sp);
}

static void test_config(void)
{
	struct exp_causal_config cfg = { .fixed_speedup = -1, .fixed_line = "main.c" };
	struct exp_causal *c = NULL;

	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), -EINVAL);
	cfg.fixed_line = "main.c:0";
	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), -EINVAL);
	cfg.fixed_line = "main.c:12";
	cfg.fixed_speedup = 101;
	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), -EINVAL);
	cfg.fixed_speedup = 25;
	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), 0);
	/* The fixed line was never sampled: no experiment can start. */
	CHECK_EQ_INT(exp_causal_tick(c, 1000 * MS), 0);
	struct exp_causal_stats st;
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	exp_causal_free(c);
}

/* One call in a child under the filter: 1 when it failed with ENOSYS
 * (trapped, no tracer), 0 otherwise. wake: trapped only by the filter with
 * the wakes (not by SUP_SPAWN_CAUSAL_NO_WAKES's); wait: only by the filter
 * with the futex waits (not by SUP_SPAWN_CAUSAL_NO_FUTEX's). */
struct call {
	const char *what;
	long nr;
	long a0, a1, a2, a3, a4, a5;
	bool trapped, wake, wait;
};

static void filter_case(bool waits, bool wakes, bool exits)
{
	static int word, word2;
	struct sock_fprog *prog;
	struct timespec zero = { 0, 0 };
	sigset_t none;
	struct call calls[] = {
		{ "getpid", SYS_getpid, 0, 0, 0, 0, 0, 0, false, false, false },
		{ "futex wake", SYS_futex, (long)&word, FUTEX_WAKE, 1, 0, 0, 0, true, true, false },
		{ "futex wake private", SYS_futex, (long)&word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0, true, true,
		  false },
		{ "futex wait (value differs)", SYS_futex, (long)&word, FUTEX_WAIT_PRIVATE, 5, 0, 0, 0, true,
		  false, true },
		{ "futex wait_bitset realtime", SYS_futex, (long)&word,
		  FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME, 5, 0, 0, -1, true, false, true },
		{ "futex cmp_requeue", SYS_futex, (long)&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1,
		  (long)&word2, 5, true, true, false },
		{ "futex unlock_pi", SYS_futex, (long)&word2, FUTEX_UNLOCK_PI_PRIVATE, 0, 0, 0, 0, true, true,
		  false },
		{ "futex trylock_pi", SYS_futex, (long)&word2, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0, 0, 0, false,
		  false, false },
		{ "tgkill 0", SYS_tgkill, 0, 0, 0, 0, 0, 0, true, false, false },
		{ "rt_sigtimedwait", SYS_rt_sigtimedwait, (long)&none, 0, (long)&zero, 8, 0, 0, true, false,
		  false },
		{ "read (pays its debt before it may block)", SYS_read, -1, 0, 0, 0, 0, 0, true, false,
		  false },
		{ "nanosleep", SYS_nanosleep, (long)&zero, 0, 0, 0, 0, 0, true, false, false },
		{ "write", SYS_write, -1, 0, 0, 0, 0, 0, false, false, false },
	};
	const unsigned n = sizeof(calls) / sizeof(calls[0]);
	int fds[2];
	char got[32] = { 0 };

	for (unsigned i = 0; i < n; i++)
		calls[i].trapped = calls[i].trapped && (wakes || !calls[i].wake) && (waits || !calls[i].wait);
	sigemptyset(&none);
	CHECK_EQ_INT(sup_seccomp_filter(&prog, waits, wakes, exits), 0);
	CHECK(pipe(fds) == 0);
	/* The C mirror of the filter agrees with the table. */
	for (unsigned i = 0; i < n; i++) {
		uint64_t args[6] = { (uint64_t)calls[i].a0, (uint64_t)calls[i].a1, (uint64_t)calls[i].a2,
				     (uint64_t)calls[i].a3, (uint64_t)calls[i].a4, (uint64_t)calls[i].a5 };
		if (sup_seccomp_traps((int)calls[i].nr, args, waits, wakes, exits) != calls[i].trapped)
			fprintf(stderr, "sup_seccomp_traps disagrees on %s\n", calls[i].what);
		CHECK(sup_seccomp_traps((int)calls[i].nr, args, waits, wakes, exits) == calls[i].trapped);
	}
	CHECK(sup_seccomp_traps(SYS_exit, (uint64_t[6]){ 0 }, waits, wakes, exits) == exits);
	pid_t pid = fork();
	if (pid == 0) {
		char out[32];
		if (sup_seccomp_install(prog) < 0)
			_exit(3);
		for (unsigned i = 0; i < n; i++) {
			long tid = syscall(SYS_gettid);
			if (calls[i].nr == SYS_tgkill) {
				calls[i].a0 = getpid();
				calls[i].a1 = tid;
			}
			errno = 0;
			long r = syscall(calls[i].nr, calls[i].a0, calls[i].a1, calls[i].a2, calls[i].a3,
					 calls[i].a4, calls[i].a5);
			out[i] = r == -1 && errno == ENOSYS ? 'T' : '-';
		}
		if (write(fds[1], out, n) != (ssize_t)n)
			_exit(4);
		/* The thread's own exit, the process's only thread: status 0
		 * unless the filter trapped it (ENOSYS, no tracer). */
		syscall(SYS_exit, 0);
		_exit(6);
	}
	int status;
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == (exits ? 6 : 0));
	CHECK(read(fds[0], got, n) == (ssize_t)n);
	for (unsigned i = 0; i < n; i++) {
		bool trapped = got[i] == 'T';
		if (trapped != calls[i].trapped)
			fprintf(stderr, "%s: %s under the filter%s%s\n", calls[i].what,
				trapped ? "trapped" : "not trapped", wakes ? "" : " without wakes",
				waits ? "" : " without waits");
		CHECK(trapped == calls[i].trapped);
	}
	close(fds[0]);
	close(fds[1]);
	free(prog->filter);
	free(prog);
}

static void test_filter(void)
{
	filter_case(true, true, true);
	filter_case(true, false, true);
	filter_case(false, false, true);
	filter_case(true, true, false);
	filter_case(false, false, false);
}

/* --runs: one experiment per run; the first, with nothing sampled yet, is a
 * 0% baseline; later runs draw from what was sampled. */
static void test_runs(void)
{
	struct exp_causal_config cfg = { .period_ns = MS, .fixed_speedup = -1, .seed = 3 };
	struct exp_causal *c;
	struct exp_causal_stats st;
	struct sym_space *sp;
	unsigned nonzero = 0;

	CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
	CHECK_EQ_INT(exp_causal_new(&cfg, NULL, NULL, &c), 0);
	CHECK_EQ_INT(exp_causal_run_begin(c, 1000 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(st.running);
	CHECK(!st.file);
	CHECK_EQ_INT(st.speedup_pct, 0);
	CHECK_EQ_INT(exp_causal_thread_new(c, 2001, getpid()), 0);
	samples(c, sp, 2001, 3);
	CHECK_EQ_INT(exp_causal_run_end(c, 2000 * MS), 0);
	exp_causal_stats(c, &st);
	CHECK(!st.running);
	CHECK_EQ_INT(st.experiments, 1);
	for (int run = 0; run < 40; run++) {
		CHECK_EQ_INT(exp_causal_run_begin(c, 3000 * MS), 0);
		exp_causal_stats(c, &st);
		CHECK(st.running && st.file && strstr(st.file, "test-causal.c"));
		nonzero += st.speedup_pct != 0;
		CHECK_EQ_INT(exp_causal_run_end(c, 4000 * MS), 0);
	}
	exp_causal_stats(c, &st);
	CHECK_EQ_INT(st.experiments, 41);
	/* Random speedups, about half of them non-zero. */
	CHECK(nonzero >= 8 && nonzero <= 32);
	exp_causal_free(c);
	sym_space_free(sp);
}

int main(void)
{
	test_runs();
	test_switch_credit();
	test_block_carries_debt();
	test_late_credit();
	test_unlock_trap();
	test_wait_across_experiments();
	test_wake_inherit();
	test_exit_wake();
	test_fast_tick();
	test_period();
	test_speedup_distribution();
	test_length();
	test_min_visits();
	test_owed();
	test_engine();
	test_warm_up();
	test_zero_counts();
	test_pause_kernel();
	test_line_runners();
	test_preempt_credit();
	test_observer();
	test_observer_idle();
	test_observer_stop_credit();
	test_observer_edges();
	test_config();
	test_filter();
	return tap_done();
}
