/* rawsleep [SECONDS]
 *
 * A thread named "rawsleeper" sleeps the way Go's runtime does: 50 us at a
 * time through a syscall instruction of its own, in a function whose name
 * says nothing (step), then waits 20 ms on a condition variable nobody
 * signals. A read of /proc at a drain nearly always finds the thread in
 * that wait, not at the sleep's site: the code before the site (mov
 * $SYS_nanosleep, %eax; syscall) is what tells the sleep. The main thread
 * joins it after SECONDS (default 1.5) and prints "rounds N".
 * Exit: 0, 64 on a usage error, 71 on a setup error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

static double deadline;
static unsigned long rounds;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* nanosleep(ts, NULL) without the C library. */
__attribute__((noinline)) static long step(const struct timespec *ts)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_nanosleep), "D"(ts), "S"(0L) : "rcx", "r11", "memory");
	return ret;
}

static void *sleeper(void *arg)
{
	const struct timespec nap = { 0, 50 * 1000 };

	(void)arg;
	/* The sleep as long as asked, not 50 us of timer slack more. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	while (now_s() < deadline) {
		struct timespec until;

		step(&nap);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 20 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&mutex);
		pthread_cond_timedwait(&never, &mutex, &until);
		pthread_mutex_unlock(&mutex);
		rounds++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 1.5;
	char *end;
	pthread_t t;
	int err;

	if (argc > 2 || (argc == 2 && ((seconds = strtod(argv[1], &end)), *end || seconds <= 0))) {
		fprintf(stderr, "usage: rawsleep [SECONDS]\n");
		return 64;
	}
	deadline = now_s() + seconds;
	err = pthread_create(&t, NULL, sleeper, NULL);
	if (err) {
		fprintf(stderr, "rawsleep: pthread_create: %s\n", strerror(err));
		return 71;
	}
	pthread_setname_np(t, "rawsleeper");
	pthread_join(t, NULL);
	printf("rounds %lu\n", rounds);
	return 0;
}
