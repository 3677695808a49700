/* causal-amdahl SECONDS [UNIT_ITERS]
 *
 * Serial and parallel phases (Amdahl's law), in rounds: the main thread does
 * 2 units of serial work (marker causal_amdahl_serial), then two worker threads
 * do 1 unit each at the same time (marker causal_amdahl_parallel) while the
 * main thread waits at a barrier; the round is counted at
 * marker causal_amdahl_round (also causal_amdahl_round_done()). A round takes
 * 3 units of wall time on 2 idle cores, 2 of them serial: speeding the
 * serial line by x speeds the program by 2x/3, the parallel line (run by
 * both workers) by x/3, though a CPU profile gives both lines half the
 * samples. UNIT_ITERS defaults to 1,000,000 (~2 ms).
 * Runs until SECONDS of wall time passed; prints "rounds N"; exits 0.
 * Ground truth: CAUSAL_CUT=causal_amdahl_serial:PCT (or _parallel).
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

#define WORKERS 2

static unsigned long serial_iters, parallel_iters;
static pthread_barrier_t start_barrier, end_barrier;
static volatile int stop;
static unsigned long rounds;
static volatile unsigned long sink;

__attribute__((noipa)) static void serial_phase(void)
{
	unsigned long acc = 1;

	CAUSAL_WORK(acc, serial_iters) /* MARK:causal_amdahl_serial */
	sink = acc;
}

__attribute__((noipa)) static void parallel_phase(unsigned long seed)
{
	unsigned long acc = seed;

	CAUSAL_WORK(acc, parallel_iters) /* MARK:causal_amdahl_parallel */
	sink = acc;
}

__attribute__((noipa)) void causal_amdahl_round_done(void)
{
	rounds++; CAUSAL_PROGRESS; /* MARK:causal_amdahl_round */
}

static void *worker(void *arg)
{
	unsigned long seed = (unsigned long)arg;

	for (;;) {
		pthread_barrier_wait(&start_barrier);
		if (stop)
			return NULL;
		parallel_phase(seed);
		pthread_barrier_wait(&end_barrier);
	}
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	unsigned long unit = (unsigned long)causal_arg(argc, argv, 2, 1000000);
	pthread_t t[WORKERS];
	double deadline;

	serial_iters = causal_cut(2 * unit, causal_cut_pct("causal_amdahl_serial"));
	parallel_iters = causal_cut(unit, causal_cut_pct("causal_amdahl_parallel"));
	pthread_barrier_init(&start_barrier, NULL, WORKERS + 1);
	pthread_barrier_init(&end_barrier, NULL, WORKERS + 1);
	for (unsigned long i = 0; i < WORKERS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 3)))
			return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		serial_phase();
		pthread_barrier_wait(&start_barrier);
		pthread_barrier_wait(&end_barrier);
		causal_amdahl_round_done();
	}
	stop = 1;
	pthread_barrier_wait(&start_barrier);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	printf("rounds %lu\n", rounds);
	return 0;
}
