/* causal-spinner SECONDS [UNIT_ITERS]
 *
 * A busy thread beside the work: one thread spins on a line that has
 * nothing to do with progress (marker causal_spinner_spin) while the main
 * thread does the work, 7 units on one line (causal_spinner_a) and 3 on
 * another (causal_spinner_b) per round, counted at causal_spinner_round
 * (also causal_spinner_round_done()). Two busy threads: on 2 cores every
 * CPU the observer takes, it takes from one of them. The truth: the spin
 * line 0 at any speedup, line a 70% and line b 30% at 100%
 * (CAUSAL_CUT=causal_spinner_a:PCT, _b, _spin). UNIT_ITERS defaults to
 * 200,000 (~0.3 ms). Runs until SECONDS of wall time passed; prints
 * "rounds N"; exits 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

static unsigned long a_iters, b_iters, spin_iters;
static volatile int stop;
static unsigned long rounds;
static volatile unsigned long sink;

__attribute__((noipa)) static void spin(void)
{
	unsigned long acc = 7;

	CAUSAL_WORK(acc, spin_iters) /* MARK:causal_spinner_spin */
	sink = acc;
}

__attribute__((noipa)) static void work_a(void)
{
	unsigned long acc = 1;

	CAUSAL_WORK(acc, a_iters) /* MARK:causal_spinner_a */
	sink = acc;
}

__attribute__((noipa)) static void work_b(void)
{
	unsigned long acc = 3;

	CAUSAL_WORK(acc, b_iters) /* MARK:causal_spinner_b */
	sink = acc;
}

__attribute__((noipa)) void causal_spinner_round_done(void)
{
	rounds++; CAUSAL_PROGRESS; /* MARK:causal_spinner_round */
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!stop)
		spin();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	unsigned long unit = (unsigned long)causal_arg(argc, argv, 2, 200000);
	pthread_t t;
	double deadline;

	a_iters = causal_cut(7 * unit, causal_cut_pct("causal_spinner_a"));
	b_iters = causal_cut(3 * unit, causal_cut_pct("causal_spinner_b"));
	spin_iters = causal_cut(unit, causal_cut_pct("causal_spinner_spin"));
	if (!spin_iters)
		spin_iters = 1;
	if (pthread_create(&t, NULL, spinner, NULL))
		return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		work_a();
		work_b();
		causal_spinner_round_done();
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("rounds %lu\n", rounds);
	return 0;
}
