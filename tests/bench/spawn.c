/* spawn ROUNDS [ITERS]
 *
 * Thread churn: each round creates two threads that each do ITERS dependent
 * multiply-adds (default 200,000, ~0.3 ms) and joins them; a program made of
 * short tasks on fresh threads. What a profiler costs per thread creation
 * and exit shows here (tests/bench/overhead.py, docs/performance.md). Prints
 * how long after its pthread_create the first thread started running, and
 * how much later the second one did (means over the rounds): under a tracer
 * that handles each creation in turn, the second start slips.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long iters = 200000;
static volatile unsigned long sink;
static double started[2];

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *task(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	started[acc & 1] = now_us();
	for (unsigned long i = 0; i < iters; i++) {
		acc = acc * 6364136223846793005UL + i;
		__asm__ volatile("" : "+r"(acc));
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 0;
	double first = 0, skew = 0;

	if (argc > 2)
		iters = strtoul(argv[2], NULL, 10);
	if (rounds <= 0 || argc > 3) {
		fprintf(stderr, "usage: spawn ROUNDS [ITERS]\n");
		return 64;
	}
	for (long r = 0; r < rounds; r++) {
		pthread_t t[2];
		double t0 = now_us();

		/* arg's low bit: which start time the thread writes */
		for (long i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, task, (void *)(2 * r + 2 + i))) {
				perror("spawn: pthread_create");
				return 1;
			}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		first += started[0] - t0;
		skew += started[1] - started[0];
	}
	printf("first thread started %.1f us after its creation, the second %.1f us after the first\n",
	       first / (double)rounds, skew / (double)rounds);
	return 0;
}
