/* causal-count N [THREADS]
 *
 * Exact visit counts for progress points: THREADS threads (default 2: the
 * main thread and one more, which exits before the main thread ends) each
 * visit marker causal_count_line, inside causal_count_visit(), exactly N times,
 * with ~20 us of work between visits (marker causal_count_work). A progress
 * point on that line or function must count exactly N x THREADS visits.
 * Prints "visits M"; exits 0.
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

#define MAX_THREADS 8

static unsigned long n_visits;
static unsigned long visits;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_count_visit(void)
{
	__atomic_add_fetch(&visits, 1, __ATOMIC_RELAXED); CAUSAL_PROGRESS; /* MARK:causal_count_line */
}

static void *visitor(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < n_visits; i++) {
		CAUSAL_WORK(acc, 12000) /* MARK:causal_count_work */
		causal_count_visit();
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads;
	pthread_t t[MAX_THREADS];

	n_visits = (unsigned long)causal_arg(argc, argv, 1, 1000);
	nthreads = (int)causal_arg(argc, argv, 2, 2);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "causal-count: 1 to %d threads\n", MAX_THREADS);
		return 64;
	}
	for (long i = 1; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, visitor, (void *)(i + 2)))
			return 70;
	for (int i = 1; i < nthreads; i++)
		pthread_join(t[i], NULL);
	visitor((void *)1);
	printf("visits %lu\n", visits);
	return 0;
}
