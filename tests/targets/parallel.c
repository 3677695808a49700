/*
 * Known answers for the parallel-efficiency metrics.
 *
 *   parallel phases UNITS   main alone does UNITS of work (serial phase),
 *                           then two threads do UNITS each while main waits
 *                           in pthread_join. CPU time: serial 1, parallel 2;
 *                           on 2 CPUs the serial phase leaves one idle, so
 *                           idleness is 1 of the effort 1 + 2 + 1: 25%.
 *   parallel lock ROUNDS    a holder thread (created in start_holder) takes
 *                           a mutex, signals, and works in holder_critical
 *                           (2 ms) while a waiter blocks on the mutex; the
 *                           unlock wakes the waiter: its wait belongs to
 *                           holder_critical.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A unit is 10 ms of this thread's CPU time, whatever the machine's load. */
static __attribute__((noinline)) void burn(double units)
{
	double end = now() + units * 0.01;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i * 2654435761u;
}

static __attribute__((noinline)) void serial_phase(long units)
{
	burn(units); /* MARK:serial */
}

/* The parallel phase's work, in 1 ms chunks the two threads take from a
 * shared counter: however the scheduler shares the CPUs, both work to the
 * end (a fixed half each would leave one thread alone at the end on a
 * loaded machine, and that is idleness). */
static atomic_long chunks_left;

static void *parallel_worker(void *arg)
{
	(void)arg;
	while (atomic_fetch_sub(&chunks_left, 1) > 0)
		burn(0.1); /* MARK:parallel */
	return NULL;
}

static int phases(long units)
{
	pthread_t t[2];

	serial_phase(units);
	atomic_store(&chunks_left, 2 * 10 * units);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, parallel_worker, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int waiter_tid;

/* Whether thread tid sleeps (blocked on the mutex, here): /proc says S. */
static bool sleeping(int tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[2] == 'S';
}
static atomic_int round_held = -1, round_done = -1;
static long rounds;

static __attribute__((noinline)) void holder_critical(void)
{
	burn(0.2);
	/* every round makes the waiter wait, however loaded the machine */
	for (int i = 0; i < 100000 && !sleeping(atomic_load(&waiter_tid)); i++)
		burn(0.01);
	pthread_mutex_unlock(&lock); /* MARK:release */
}

static void *holder(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		pthread_mutex_lock(&lock);
		atomic_store(&round_held, r);
		/* let the waiter reach the lock and block on it */
		while (atomic_load(&round_done) != r - 1)
			;
		burn(0.05);
		holder_critical();
		while (atomic_load(&round_done) != r)
			;
	}
	return NULL;
}

static __attribute__((noinline)) int start_holder(pthread_t *t)
{
	return pthread_create(t, NULL, holder, NULL);
}

static int locks(void)
{
	pthread_t t;

	atomic_store(&waiter_tid, (int)gettid());
	if (start_holder(&t))
		return 1;
	printf("ready\n"); /* for attach tests */
	fflush(stdout);
	for (int r = 0; r < rounds; r++) {
		while (atomic_load(&round_held) != r)
			;
		pthread_mutex_lock(&lock); /* MARK:wait */
		pthread_mutex_unlock(&lock);
		atomic_store(&round_done, r);
	}
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "phases"))
		return phases(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "lock")) {
		rounds = atol(argv[2]);
		return locks();
	}
	fprintf(stderr, "usage: parallel phases UNITS | parallel lock ROUNDS\n");
	return 2;
}
