/* causal-contention SECONDS [HAMMERERS] [UNIT_ITERS]
 *
 * Lock contention. A client thread does 1 unit of work outside the lock,
 * then takes the lock for a short update and counts one operation
 * (marker causal_lock_done, also causal_lock_op_done(): the progress point).
 * HAMMERERS threads (default 1) hammer the same pthread mutex: 1 unit of
 * preparation outside it (marker causal_lock_hammer), then 1 unit inside it
 * (marker causal_lock_cs). The hammer line is what Coz's fluidanimate lines
 * were (section 4.2.2): making it faster makes the hammerers take the lock
 * more often, so the client waits longer and the program gets SLOWER: its
 * causal curve falls (contention). The critical section's own line rises
 * (a shorter hold lets the client through sooner). UNIT_ITERS defaults to
 * 300,000 (~0.5 ms).
 * Runs until SECONDS of wall time passed; prints "ops N"; exits 0.
 * Ground truth: CAUSAL_CUT=causal_lock_hammer:PCT (or _cs, _client).
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

#define MAX_HAMMERERS 16

static unsigned long hammer_iters, cs_iters, client_iters, update_iters;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long ops, shared_state;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_lock_op_done(void)
{
	ops++; CAUSAL_PROGRESS; /* MARK:causal_lock_done */
}

__attribute__((noipa)) static void hammer_prepare(unsigned long *acc)
{
	CAUSAL_WORK(*acc, hammer_iters) /* MARK:causal_lock_hammer */
}

__attribute__((noipa)) static void hammer_critical(unsigned long *acc)
{
	CAUSAL_WORK(*acc, cs_iters) /* MARK:causal_lock_cs */
}

__attribute__((noipa)) static void client_work(unsigned long *acc)
{
	CAUSAL_WORK(*acc, client_iters) /* MARK:causal_lock_client */
}

__attribute__((noipa)) static void client_update(unsigned long *acc)
{
	CAUSAL_WORK(*acc, update_iters) /* MARK:causal_lock_update */
}

static void *hammerer(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	while (!stop) {
		hammer_prepare(&acc);
		pthread_mutex_lock(&lock);
		hammer_critical(&acc);
		shared_state += acc;
		pthread_mutex_unlock(&lock);
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	int n = (int)causal_arg(argc, argv, 2, 1);
	unsigned long unit = (unsigned long)causal_arg(argc, argv, 3, 300000);
	pthread_t t[MAX_HAMMERERS];
	unsigned long acc = 1;
	double deadline;

	if (n < 1 || n > MAX_HAMMERERS) {
		fprintf(stderr, "causal-contention: 1 to %d hammerers\n", MAX_HAMMERERS);
		return 64;
	}
	hammer_iters = causal_cut(unit, causal_cut_pct("causal_lock_hammer"));
	cs_iters = causal_cut(unit, causal_cut_pct("causal_lock_cs"));
	client_iters = causal_cut(unit, causal_cut_pct("causal_lock_client"));
	update_iters = unit / 10;
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, hammerer, (void *)(i + 2)))
			return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		client_work(&acc);
		pthread_mutex_lock(&lock);
		client_update(&acc);
		shared_state ^= acc;
		pthread_mutex_unlock(&lock);
		causal_lock_op_done();
	}
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	sink = acc;
	printf("ops %lu\n", ops);
	return 0;
}
