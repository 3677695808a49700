/* manythreads N
 *
 * Creates N threads (64 KiB stacks) that wait at a gate until all have reached
 * it (so every thread blocks there at least once, whatever the scheduler ran
 * first), then each spins briefly and calls getpid() GETPID_CALLS times (every call must
 * return the process's pid) and exits; the main thread joins them all.
 * Exit: 0 on success, 1 wrong getpid() result or call count, 64 usage,
 * 71 pthread_create failed, 124 a thread waited 120 s at the gate (or the
 * main thread 120 s for them to reach it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GETPID_CALLS 3000
#define GATE_TIMEOUT_S 120 /* creating 1000 traced threads can take a while */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond, arrived_cond;
static unsigned long arrived, nthreads;
static int gate_open;
static pid_t pid;
static unsigned long calls, wrong;
static volatile unsigned long sink;

/* GATE_TIMEOUT_S from now, on the condition variables' clock. */
static struct timespec gate_deadline(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += GATE_TIMEOUT_S;
	return t;
}

__attribute__((noipa)) void *many_thread(void *arg)
{
	unsigned long acc = (unsigned long)arg, bad = 0;
	struct timespec deadline = gate_deadline();

	pthread_mutex_lock(&gate_lock);
	if (++arrived == nthreads)
		pthread_cond_signal(&arrived_cond);
	while (!gate_open) {
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &deadline) == ETIMEDOUT && !gate_open) {
			fprintf(stderr, "manythreads: gate still closed after %d s\n", GATE_TIMEOUT_S);
			_exit(124);
		}
	}
	pthread_mutex_unlock(&gate_lock);

	for (unsigned long i = 0; i < 100000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:many_thread */
	sink = acc;
	for (int i = 0; i < GETPID_CALLS; i++)
		bad += getpid() != pid;
	__atomic_add_fetch(&calls, GETPID_CALLS, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&wrong, bad, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_condattr_t cattr;
	struct timespec deadline;
	pthread_attr_t attr;
	pthread_t *tids;
	unsigned long n;
	char *end;
	int err;

	if (argc != 2 || (n = strtoul(argv[1], &end, 10), *end) || argv[1][0] == '-' || n == 0) {
		fprintf(stderr, "usage: manythreads N\n");
		return 64;
	}
	tids = calloc(n, sizeof(*tids));
	if (!tids) {
		fprintf(stderr, "manythreads: out of memory\n");
		return 71;
	}
	pid = getpid();
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&gate_cond, &cattr);
	pthread_cond_init(&arrived_cond, &cattr);
	nthreads = n;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);

	for (unsigned long i = 0; i < n; i++) {
		err = pthread_create(&tids[i], &attr, many_thread, (void *)i);
		if (err) {
			fprintf(stderr, "manythreads: pthread_create #%lu: %s\n", i, strerror(err));
			return 71;
		}
	}
	deadline = gate_deadline();
	pthread_mutex_lock(&gate_lock);
	while (arrived < n) {
		if (pthread_cond_timedwait(&arrived_cond, &gate_lock, &deadline) == ETIMEDOUT && arrived < n) {
			fprintf(stderr, "manythreads: %lu of %lu threads at the gate after %d s\n", arrived, n,
				GATE_TIMEOUT_S);
			_exit(124);
		}
	}
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	for (unsigned long i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	free(tids);

	if (calls != n * GETPID_CALLS || wrong) {
		fprintf(stderr, "manythreads: %lu getpid calls (expected %lu), %lu returned a pid other than %d\n",
			calls, n * GETPID_CALLS, wrong, pid);
		return 1;
	}
	return 0;
}
