/* leader_exit CPU_SECONDS
 *
 * Starts 2 threads spinning in leader_exit_spin(), then the main thread calls
 * pthread_exit() (the leader becomes a zombie while its threads run). Each
 * thread spins for CPU_SECONDS of its own CPU time; the last one to finish
 * calls exit(7).
 * Exit: 7 on success, 64 usage, 71 pthread_create failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTHREADS 2

static double spin_seconds;
static int running = NTHREADS;
static volatile unsigned long sink;

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) void *leader_exit_spin(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	while (thread_cpu_seconds() < spin_seconds)
		for (unsigned long i = 0; i < 1000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:leader_exit_spin */
	sink = acc;
	if (__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST) == 0)
		exit(7);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid;
	char *end;
	int err;

	if (argc != 2 || ((spin_seconds = strtod(argv[1], &end)), *end || spin_seconds < 0)) {
		fprintf(stderr, "usage: leader_exit CPU_SECONDS\n");
		return 64;
	}
	for (long i = 0; i < NTHREADS; i++) {
		err = pthread_create(&tid, NULL, leader_exit_spin, (void *)i);
		if (err) {
			fprintf(stderr, "leader_exit: pthread_create: %s\n", strerror(err));
			return 71;
		}
	}
	pthread_exit(NULL);
}
