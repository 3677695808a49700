/* causal-contention SECONDS [HAMMERERS] [UNIT_ITERS] [FIFO] [HAMMER_UNITS]
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
 *
 * FIFO 1 hands the lock over in arrival order (a ticket lock over a mutex
 * and a condition variable) instead of pthread's mutex, which lets the
 * unlocking thread barge back in before the woken waiter runs. With FIFO
 * the cost of contention is the client waiting out the hold in progress,
 * milliseconds, the scale at which sampling and pausing work; with barging
 * it is decided by who runs first in the microseconds after an unlock
 * (tests/bench/causal/README.md). HAMMER_UNITS (default 1) sets the
 * length of the hammerers' preparation and hold in units.
 * Runs until SECONDS of wall time passed; prints "ops N"; exits 0.
 * Ground truth: CAUSAL_CUT=causal_lock_hammer:PCT (or _cs, _client).
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

#define MAX_HAMMERERS 16

static unsigned long hammer_iters, cs_iters, client_iters, update_iters;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn = PTHREAD_COND_INITIALIZER;
static unsigned long next_ticket, serving;
static int fifo;
static volatile int stop;
static unsigned long ops, shared_state;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_lock_op_done(void)
{
	ops++; CAUSAL_PROGRESS; /* MARK:causal_lock_done */
}

__attribute__((noipa)) static void hammer_prepare(unsigned long *acc, unsigned long iters)
{
	CAUSAL_WORK(*acc, iters) /* MARK:causal_lock_hammer */
}

__attribute__((noipa)) static void hammer_critical(unsigned long *acc, unsigned long iters)
{
	CAUSAL_WORK(*acc, iters) /* MARK:causal_lock_cs */
}

__attribute__((noipa)) static void client_work(unsigned long *acc, unsigned long iters)
{
	CAUSAL_WORK(*acc, iters) /* MARK:causal_lock_client */
}

__attribute__((noipa)) static void client_update(unsigned long *acc)
{
	CAUSAL_WORK(*acc, update_iters) /* MARK:causal_lock_update */
}

/* Units of work for one call: with fifo drawn uniformly from half to one
 * and a half of iters, so that the threads' cycles do not lock into one
 * phase (with fixed lengths the client's wait depends on the ratio of the
 * lengths, not on how often the lock is taken: a 25% shorter preparation
 * made the program faster, 50% slower, 100% less slow). */
static unsigned long jitter(unsigned long iters, unsigned long *seed)
{
	if (!fifo)
		return iters;
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	return iters / 2 + *seed % (iters + 1);
}

/* The contended lock: pthread's mutex, or with fifo a ticket lock on it. */
static void contended_lock(void)
{
	unsigned long ticket;

	pthread_mutex_lock(&lock);
	if (!fifo)
		return;
	ticket = next_ticket++;
	while (serving != ticket)
		pthread_cond_wait(&turn, &lock);
	pthread_mutex_unlock(&lock);
}

static void contended_unlock(void)
{
	if (fifo) {
		pthread_mutex_lock(&lock);
		serving++;
		pthread_cond_broadcast(&turn);
	}
	pthread_mutex_unlock(&lock);
}

static void *hammerer(void *arg)
{
	unsigned long acc = (unsigned long)arg, seed = 0x9e3779b97f4a7c15UL * (acc + 1);

	while (!stop) {
		hammer_prepare(&acc, jitter(hammer_iters, &seed));
		contended_lock();
		hammer_critical(&acc, jitter(cs_iters, &seed));
		shared_state += acc;
		contended_unlock();
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	int n = (int)causal_arg(argc, argv, 2, 1);
	unsigned long unit = (unsigned long)causal_arg(argc, argv, 3, 300000);
	double hammer_units = causal_arg(argc, argv, 5, 1);
	pthread_t t[MAX_HAMMERERS];
	unsigned long acc = 1, seed = 0x2545f4914f6cdd1dUL;
	double deadline;

	if (n < 1 || n > MAX_HAMMERERS) {
		fprintf(stderr, "causal-contention: 1 to %d hammerers\n", MAX_HAMMERERS);
		return 64;
	}
	fifo = causal_arg(argc, argv, 4, 0) != 0;
	hammer_iters = causal_cut((unsigned long)(unit * hammer_units), causal_cut_pct("causal_lock_hammer"));
	cs_iters = causal_cut((unsigned long)(unit * hammer_units), causal_cut_pct("causal_lock_cs"));
	client_iters = causal_cut(unit, causal_cut_pct("causal_lock_client"));
	update_iters = unit / 10;
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, hammerer, (void *)(i + 2)))
			return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		client_work(&acc, jitter(client_iters, &seed));
		contended_lock();
		client_update(&acc);
		shared_state ^= acc;
		contended_unlock();
		causal_lock_op_done();
	}
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	sink = acc;
	printf("ops %lu\n", ops);
	return 0;
}
