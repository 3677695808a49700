/* causal-figure1 SECONDS [barrier|spawn] [A_ITERS]
 *
 * The paper's Figure 1 (Coz, section 1), in rounds: two threads run loop a
 * and loop b, and a round ends when both are done. Loop a does A_ITERS units
 * (default 2,000,000), loop b 95% of that (the paper's 2.0e9 vs 1.9e9), so a
 * is the critical path by ~5%: removing loop a entirely speeds a round up by
 * only ~5%, and speeding b does nothing. A causal profile must predict that
 * (no line above ~5% program speedup), where a CPU profile shows a and b as
 * equals.
 *   barrier  two long-lived threads meet at a pthread barrier each round
 *   spawn    each round creates both threads and joins them (the paper's code)
 * Runs rounds until SECONDS of wall time passed, prints "rounds N", exits 0.
 * Progress point: the round counter, marker causal_fig1_round (also
 * causal_fig1_round_done() for a FUNCTION spec; built -DCAUSAL_PSUP_H the
 * line is a PSUP_PROGRESS, -DCAUSAL_COZ_H a COZ_PROGRESS).
 * Ground truth: CAUSAL_CUT=causal_fig1_a:PCT (or _b) really cuts that loop.
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>
#include <string.h>

#include "causal-common.h"

static unsigned long iters_a, iters_b;
static double deadline;
static volatile int stop;
static pthread_barrier_t round_barrier;
static unsigned long rounds;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_fig1_round_done(void)
{
	rounds++; CAUSAL_PROGRESS; /* MARK:causal_fig1_round */
}

__attribute__((noipa)) static void loop_a(void)
{
	unsigned long acc = 1;

	CAUSAL_WORK(acc, iters_a) /* MARK:causal_fig1_a */
	sink = acc;
}

__attribute__((noipa)) static void loop_b(void)
{
	unsigned long acc = 2;

	CAUSAL_WORK(acc, iters_b) /* MARK:causal_fig1_b */
	sink = acc;
}

/* barrier mode: thread a also decides when to stop and counts rounds. */
static void *thread_a(void *arg)
{
	(void)arg;
	for (;;) {
		loop_a();
		pthread_barrier_wait(&round_barrier);
		causal_fig1_round_done();
		if (causal_now() >= deadline)
			stop = 1;
		pthread_barrier_wait(&round_barrier);
		if (stop)
			return NULL;
	}
}

static void *thread_b(void *arg)
{
	(void)arg;
	for (;;) {
		loop_b();
		pthread_barrier_wait(&round_barrier);
		pthread_barrier_wait(&round_barrier);
		if (stop)
			return NULL;
	}
}

static void *once_a(void *arg) { (void)arg; loop_a(); return NULL; }
static void *once_b(void *arg) { (void)arg; loop_b(); return NULL; }

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	const char *mode = argc > 2 ? argv[2] : "barrier";
	pthread_t a, b;

	iters_a = (unsigned long)causal_arg(argc, argv, 3, 2000000);
	iters_b = iters_a / 20 * 19;
	iters_a = causal_cut(iters_a, causal_cut_pct("causal_fig1_a"));
	iters_b = causal_cut(iters_b, causal_cut_pct("causal_fig1_b"));
	deadline = causal_now() + seconds;
	if (!strcmp(mode, "barrier")) {
		pthread_barrier_init(&round_barrier, NULL, 2);
		if (pthread_create(&a, NULL, thread_a, NULL) || pthread_create(&b, NULL, thread_b, NULL))
			return 70;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	} else if (!strcmp(mode, "spawn")) {
		while (causal_now() < deadline) {
			if (pthread_create(&a, NULL, once_a, NULL) || pthread_create(&b, NULL, once_b, NULL))
				return 70;
			pthread_join(a, NULL);
			pthread_join(b, NULL);
			causal_fig1_round_done();
		}
	} else {
		fprintf(stderr, "usage: causal-figure1 SECONDS [barrier|spawn] [A_ITERS]\n");
		return 64;
	}
	printf("rounds %lu\n", rounds);
	return 0;
}
