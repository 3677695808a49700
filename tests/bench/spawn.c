/* spawn ROUNDS [ITERS]
 *
 * Thread churn: each round creates two threads that each do ITERS dependent
 * multiply-adds (default 200,000, ~0.3 ms) and joins them; a program made of
 * short tasks on fresh threads. What a profiler costs per thread creation
 * and exit shows here (tests/bench/overhead.py, README "Performance").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long iters = 200000;
static volatile unsigned long sink;

static void *task(void *arg)
{
	unsigned long acc = (unsigned long)arg;

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

	if (argc > 2)
		iters = strtoul(argv[2], NULL, 10);
	if (rounds <= 0 || argc > 3) {
		fprintf(stderr, "usage: spawn ROUNDS [ITERS]\n");
		return 64;
	}
	for (long r = 0; r < rounds; r++) {
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, task, (void *)(r + i + 1))) {
				perror("spawn: pthread_create");
				return 1;
			}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}
