/* causal-pipeline SECONDS [pthread|futex] [CONSUME_ITERS]
 *
 * A two-stage pipeline over a bounded queue (8 slots): the producer does
 * PRODUCE work per item (marker causal_pipe_produce, half the consumer's), the
 * consumer does CONSUME_ITERS (default 600,000) per item
 * (marker causal_pipe_consume) and counts the item (marker causal_pipe_done,
 * also causal_pipe_item_done() for a FUNCTION spec). The consumer is the
 * bottleneck: speeding its line speeds the program up 1:1 until it is as
 * fast as the producer (50%), speeding the producer's line does nothing
 * (it then waits longer on a full queue).
 *   pthread  the queue is guarded by a pthread mutex and two condvars
 *   futex    the same over a hand-rolled lock and sequence-counter waits on
 *            raw syscall(SYS_futex), as Rust's std, Go and many
 *            hand-rolled locks do (no pthread call for Coz to intercept)
 * Producer stops at SECONDS of wall time, or, with CAUSAL_PIPE_UNTIL=FILE
 * in the environment, once FILE exists (looked at after every item: an
 * attach test says when it is done with the program); prints "items N";
 * exits 0.
 * Ground truth: CAUSAL_CUT=causal_pipe_consume:PCT (or _produce).
 * Exit: 0, 64 on a usage error.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "causal-common.h"

#define QUEUE_SLOTS 8

static unsigned long produce_iters, consume_iters;
static double deadline;
static const char *until_file;
static int use_futex;
static unsigned long items;
static volatile unsigned long sink;

/* The queue: a count of ready items (the items carry no data). */
static int queued, finished;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;

/* futex mode: 0 free, 1 locked, 2 locked with waiters (Drepper, "Futexes
 * are tricky", mutex3); each condition is a sequence number to wait on. */
static atomic_int flock;
static atomic_int seq_not_empty, seq_not_full;

static long futex(atomic_int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static void raw_lock(void)
{
	int c = 0;

	if (atomic_compare_exchange_strong(&flock, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&flock, 2);
	while (c != 0) {
		futex(&flock, FUTEX_WAIT_PRIVATE, 2);
		c = atomic_exchange(&flock, 2);
	}
}

static void raw_unlock(void)
{
	if (atomic_fetch_sub(&flock, 1) != 1) {
		atomic_store(&flock, 0);
		futex(&flock, FUTEX_WAKE_PRIVATE, 1);
	}
}

/* Called locked; returns locked. */
static void raw_wait(atomic_int *seq)
{
	int v = atomic_load(seq);

	raw_unlock();
	futex(seq, FUTEX_WAIT_PRIVATE, v);
	raw_lock();
}

static void raw_signal(atomic_int *seq)
{
	atomic_fetch_add(seq, 1);
	futex(seq, FUTEX_WAKE_PRIVATE, 1);
}

static void q_lock(void) { if (use_futex) raw_lock(); else pthread_mutex_lock(&mutex); }
static void q_unlock(void) { if (use_futex) raw_unlock(); else pthread_mutex_unlock(&mutex); }
static void q_wait_not_full(void) { if (use_futex) raw_wait(&seq_not_full); else pthread_cond_wait(&not_full, &mutex); }
static void q_wait_not_empty(void) { if (use_futex) raw_wait(&seq_not_empty); else pthread_cond_wait(&not_empty, &mutex); }
static void q_signal_not_full(void) { if (use_futex) raw_signal(&seq_not_full); else pthread_cond_signal(&not_full); }
static void q_signal_not_empty(void) { if (use_futex) raw_signal(&seq_not_empty); else pthread_cond_signal(&not_empty); }

__attribute__((noipa)) static void produce_one(void)
{
	unsigned long acc = 1;

	CAUSAL_WORK(acc, produce_iters) /* MARK:causal_pipe_produce */
	sink = acc;
}

__attribute__((noipa)) static void consume_one(void)
{
	unsigned long acc = 2;

	CAUSAL_WORK(acc, consume_iters) /* MARK:causal_pipe_consume */
	sink = acc;
}

__attribute__((noipa)) void causal_pipe_item_done(void)
{
	items++; CAUSAL_PROGRESS; /* MARK:causal_pipe_done */
}

static void *producer(void *arg)
{
	(void)arg;
	while (until_file ? access(until_file, F_OK) != 0 : causal_now() < deadline) {
		produce_one();
		q_lock();
		while (queued == QUEUE_SLOTS)
			q_wait_not_full();
		queued++;
		q_signal_not_empty();
		q_unlock();
	}
	q_lock();
	finished = 1;
	q_signal_not_empty();
	q_unlock();
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		q_lock();
		while (queued == 0 && !finished)
			q_wait_not_empty();
		if (queued == 0) {
			q_unlock();
			return NULL;
		}
		queued--;
		q_signal_not_full();
		q_unlock();
		consume_one();
		causal_pipe_item_done();
	}
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	const char *mode = argc > 2 ? argv[2] : "pthread";
	pthread_t p, c;

	if (!strcmp(mode, "futex")) {
		use_futex = 1;
	} else if (strcmp(mode, "pthread")) {
		fprintf(stderr, "usage: causal-pipeline SECONDS [pthread|futex] [CONSUME_ITERS]\n");
		return 64;
	}
	consume_iters = (unsigned long)causal_arg(argc, argv, 3, 600000);
	produce_iters = consume_iters / 2;
	produce_iters = causal_cut(produce_iters, causal_cut_pct("causal_pipe_produce"));
	consume_iters = causal_cut(consume_iters, causal_cut_pct("causal_pipe_consume"));
	deadline = causal_now() + seconds;
	until_file = getenv("CAUSAL_PIPE_UNTIL");
	if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL))
		return 70;
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("items %lu\n", items);
	return 0;
}
