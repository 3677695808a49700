/* causal-saturated SECONDS [THREADS] [UNIT_ITERS] [LOCAL_UNITS] [CS_UNITS]
 *
 * A saturated lock: THREADS threads (default 2) each do LOCAL_UNITS
 * (default 1) of work outside one pthread mutex, then CS_UNITS (default 2)
 * inside it (marker causal_sat_cs), and count an operation there (marker
 * causal_sat_done, also causal_sat_op_done(): the progress point). With
 * more demand for the lock than it can serve (THREADS * CS_UNITS > CS_UNITS
 * + LOCAL_UNITS) the lock is the program: a critical section x% shorter
 * makes every operation x% shorter until the lock stops being the
 * bottleneck, so the truth at 25% and 50% is about 25% and 50% (issue 19's
 * "critical sections under-predicted"). UNIT_ITERS defaults to 300,000
 * (~0.5 ms).
 * Runs until SECONDS of wall time passed; prints "ops N"; exits 0.
 * Ground truth: CAUSAL_CUT=causal_sat_cs:PCT (or causal_sat_local).
 * Exit: 0, 64 on a usage error, 70 when a thread cannot be created.
 */
#include <pthread.h>

#include "causal-common.h"

#define MAX_THREADS 16

static unsigned long local_iters, cs_iters;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long ops;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_sat_op_done(void)
{
	ops++; CAUSAL_PROGRESS; /* MARK:causal_sat_done */
}

__attribute__((noipa)) static void local_work(unsigned long *acc)
{
	CAUSAL_WORK(*acc, local_iters) /* MARK:causal_sat_local */
}

__attribute__((noipa)) static void critical_work(unsigned long *acc)
{
	CAUSAL_WORK(*acc, cs_iters) /* MARK:causal_sat_cs */
}

static void *worker(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	while (!stop) {
		local_work(&acc);
		pthread_mutex_lock(&lock);
		critical_work(&acc);
		causal_sat_op_done();
		pthread_mutex_unlock(&lock);
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	unsigned long nthreads = (unsigned long)causal_arg(argc, argv, 2, 2);
	unsigned long unit = (unsigned long)causal_arg(argc, argv, 3, 300000);
	double local_units = causal_arg(argc, argv, 4, 1), cs_units = causal_arg(argc, argv, 5, 2);
	pthread_t t[MAX_THREADS];
	double deadline;

	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "%s: THREADS must be 1 to %d\n", argv[0], MAX_THREADS);
		return 64;
	}
	local_iters = causal_cut((unsigned long)(local_units * (double)unit), causal_cut_pct("causal_sat_local"));
	cs_iters = causal_cut((unsigned long)(cs_units * (double)unit), causal_cut_pct("causal_sat_cs"));
	for (unsigned long i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 3)))
			return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (unsigned long i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("ops %lu\n", ops);
	return 0;
}
