/* threads N CPU_SECONDS_EACH
 *   N threads each spin in thread_spin() for CPU_SECONDS_EACH of their own
 *   CPU time; the main thread joins them and exits 0.
 * threads --futex N ROUNDS
 *   N threads pass a token around a ring ROUNDS times under one mutex and
 *   condition variable (lots of futex blocking); the number of passes must be
 *   exactly N*ROUNDS.
 * threads --churn SECONDS | threads --churn-until FILE
 *   prints "<pid> ready", then for SECONDS of wall time (or until FILE
 *   exists, looked at after every 4 threads) keeps 4 threads alive, each
 *   doing a little work and exiting, replaced at once (threads created and
 *   ending in a tight loop, for attach tests).
 * Exit: 0 on success, 64 usage, 71 pthread_create failed, 1 wrong pass count,
 * 124 a thread waited 30 s for the token (no progress).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30

static double spin_seconds;

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long turn;
	unsigned long count;
	unsigned long n;
	unsigned long rounds;
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

static volatile unsigned long sink;

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) void *thread_spin(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	while (thread_cpu_seconds() < spin_seconds)
		for (unsigned long i = 0; i < 1000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:thread_spin */
	sink = acc;
	return NULL;
}

static void *token_pass(void *arg)
{
	unsigned long me = (unsigned long)arg;

	pthread_mutex_lock(&ring.lock);
	for (unsigned long r = 0; r < ring.rounds; r++) {
		while (ring.turn != me) {
			struct timespec deadline;
			int err;

			clock_gettime(CLOCK_MONOTONIC, &deadline);
			deadline.tv_sec += WAIT_TIMEOUT_S;
			err = pthread_cond_timedwait(&ring.cond, &ring.lock, &deadline);
			if (err == ETIMEDOUT && ring.turn != me) {
				fprintf(stderr, "threads: thread %lu waited %d s for the token (round %lu, count %lu)\n",
					me, WAIT_TIMEOUT_S, r, ring.count);
				_exit(124);
			}
		}
		ring.count++;
		ring.turn = (me + 1) % ring.n;
		pthread_cond_broadcast(&ring.cond);
	}
	pthread_mutex_unlock(&ring.lock);
	return NULL;
}

static int parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || *end || !*s || *s == '-') ? -1 : 0;
}

static int run_threads(unsigned long n, void *(*fn)(void *))
{
	pthread_t *tids = calloc(n, sizeof(*tids));
	int err;

	if (!tids) {
		fprintf(stderr, "threads: out of memory\n");
		return 71;
	}
	for (unsigned long i = 0; i < n; i++) {
		err = pthread_create(&tids[i], NULL, fn, (void *)i);
		if (err) {
			fprintf(stderr, "threads: pthread_create #%lu: %s\n", i, strerror(err));
			_exit(71);
		}
	}
	for (unsigned long i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}

static __attribute__((noipa)) void *churn_thread(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < 20000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:churn */
	sink = acc;
	return NULL;
}

static int churn(double seconds, const char *until_file)
{
	struct timespec start, now;
	pthread_t t[4];
	unsigned long made = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < 4; i++) {
			int err = pthread_create(&t[i], NULL, churn_thread, (void *)made++);
			if (err) {
				fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
				return 71;
			}
		}
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		if (until_file) {
			if (access(until_file, F_OK) == 0)
				return 0;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 >= seconds)
			return 0;
	}
}

int main(int argc, char **argv)
{
	pthread_condattr_t attr;
	unsigned long n;
	char *end;
	int ret;

	if (argc == 3 && !strcmp(argv[1], "--churn")) {
		double secs = strtod(argv[2], &end);
		if (*end || secs <= 0) {
			fprintf(stderr, "usage: threads --churn SECONDS\n");
			return 64;
		}
		return churn(secs, NULL);
	}
	if (argc == 3 && !strcmp(argv[1], "--churn-until"))
		return churn(0, argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--futex")) {
		if (parse_ulong(argv[2], &ring.n) || ring.n == 0 || parse_ulong(argv[3], &ring.rounds)) {
			fprintf(stderr, "usage: threads --futex N ROUNDS\n");
			return 64;
		}
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&ring.cond, &attr);
		ret = run_threads(ring.n, token_pass);
		if (ret)
			return ret;
		if (ring.count != ring.n * ring.rounds) {
			fprintf(stderr, "threads: %lu token passes, expected %lu\n", ring.count, ring.n * ring.rounds);
			return 1;
		}
		return 0;
	}

	if (argc != 3 || parse_ulong(argv[1], &n) || n == 0) {
		fprintf(stderr, "usage: threads N CPU_SECONDS_EACH\n       threads --futex N ROUNDS\n");
		return 64;
	}
	spin_seconds = strtod(argv[2], &end);
	if (*end || spin_seconds < 0) {
		fprintf(stderr, "threads: bad CPU_SECONDS_EACH '%s'\n", argv[2]);
		return 64;
	}
	return run_threads(n, thread_spin);
}
