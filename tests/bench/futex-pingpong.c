/* `futex-pingpong N`: two threads hand a token back and forth N times over a
 * raw futex (FUTEX_WAIT / FUTEX_WAKE, no libc lock), then print the time per
 * hand-off. Every hand-off is one wake and usually one wait: the cost of
 * psup's seccomp interception per call shows in the time per hand-off
 * (compare `psup run --causal --runs 1` with a plain run). */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int turn;
static long rounds;

static void wait_for(int want)
{
	int cur;

	while ((cur = atomic_load(&turn)) != want)
		syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
}

static void *player(void *arg)
{
	int me = (int)(long)arg;

	for (long i = 0; i < rounds; i++) {
		wait_for(me);
		atomic_store(&turn, !me);
		syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	pthread_t t;

	rounds = argc > 1 ? atol(argv[1]) : 100000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_create(&t, NULL, player, (void *)1L);
	player((void *)0L);
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%ld hand-offs in %.3f s: %.2f us each\n", rounds * 2, s, s * 1e6 / (double)(rounds * 2));
	return 0;
}
