/* witch-loop SECONDS | witch-loop --until FILE
 *
 * For attach scenarios: prints "ready", then for SECONDS of wall time (or,
 * with --until, until FILE exists: looked at after every round) repeats Listing 2's
 * pattern on a small array in two threads: zero it (marked loop_zero, dead),
 * rewrite it (marked loop_rewrite, used by the read), read it back. Dead
 * stores are half the bytes judged. Exit 0 when the sums read back are
 * right, 1 when not, 64 on a usage error.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 50000

static double secs;
static const char *until_file;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int more(double end)
{
	return until_file ? access(until_file, F_OK) != 0 : now() < end;
}

static void *run(void *arg)
{
	volatile int *a = calloc(N, sizeof(*a));
	double end = now() + secs;
	long bad = 0;

	(void)arg;
	if (!a)
		return (void *)1;
	while (more(end)) {
		long sum = 0;
		for (int i = 0; i < N; i++) a[i] = 0; /* MARK:loop_zero */
		for (int i = 0; i < N; i++) a[i] = i; /* MARK:loop_rewrite */
		for (int i = 0; i < N; i++) sum += a[i];
		bad += sum != (long)N * (N - 1) / 2;
	}
	free((void *)a);
	return (void *)bad;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r1, *r2;

	if (argc == 3 && !strcmp(argv[1], "--until")) {
		until_file = argv[2];
	} else if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: witch-loop SECONDS | witch-loop --until FILE\n");
		return 64;
	}
	if (pthread_create(&t, NULL, run, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	r1 = run(NULL);
	pthread_join(t, &r2);
	if (r1 || r2) {
		fprintf(stderr, "witch-loop: wrong sums\n");
		return 1;
	}
	return 0;
}
