/* exit_group
 *
 * Three threads block: one in a raw FUTEX_WAIT, one in read() on a pipe
 * nobody writes, one in nanosleep(). Once /proc shows all three sleeping
 * (state S), a fourth, non-leader thread calls exit(9), i.e. exit_group, while
 * the main thread waits in pthread_join. Every thread must go down with it.
 * Exit: 9 on success, 3 the blockers were not seen sleeping within 30 s,
 * 64 usage, 71 setup failed, 124 exit(9) did not end the process within 60 s.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30
#define NBLOCKERS 3

static int pipefd[2];
static int futex_word;
static pid_t blocker_tid[NBLOCKERS];

static void set_tid(int i)
{
	__atomic_store_n(&blocker_tid[i], (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
}

/* The blockers give up after 30 s so a failed run still ends. */
static void *block_futex(void *arg)
{
	struct timespec ts = { WAIT_TIMEOUT_S, 0 };

	(void)arg;
	set_tid(0);
	syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	return NULL;
}

static void *block_read(void *arg)
{
	char c;

	(void)arg;
	set_tid(1);
	if (read(pipefd[0], &c, 1) < 0)
		perror("exit_group: read");
	return NULL;
}

static void *block_sleep(void *arg)
{
	struct timespec ts = { WAIT_TIMEOUT_S, 0 };

	(void)arg;
	set_tid(2);
	nanosleep(&ts, NULL);
	return NULL;
}

static int is_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' && p[2] == 'S';
}

static void *exiter(void *arg)
{
	struct timespec ms = { 0, 1000000 }, start, now;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int sleeping = 0;

		for (int i = 0; i < NBLOCKERS; i++)
			sleeping += is_sleeping(__atomic_load_n(&blocker_tid[i], __ATOMIC_SEQ_CST));
		if (sleeping == NBLOCKERS)
			exit(9);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > WAIT_TIMEOUT_S) {
			fprintf(stderr, "exit_group: only %d of %d threads blocked after %d s\n",
				sleeping, NBLOCKERS, WAIT_TIMEOUT_S);
			_exit(3);
		}
		nanosleep(&ms, NULL);
	}
}

int main(int argc, char **argv)
{
	static void *(*const fns[])(void *) = { block_futex, block_read, block_sleep, exiter };
	struct timespec deadline;
	pthread_t tid;
	int err;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: exit_group\n");
		return 64;
	}
	if (pipe(pipefd)) {
		perror("exit_group: pipe");
		return 71;
	}
	for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		err = pthread_create(&tid, NULL, fns[i], NULL);
		if (err) {
			fprintf(stderr, "exit_group: pthread_create: %s\n", strerror(err));
			return 71;
		}
	}
	/* tid is the exiter: it ends the whole process, so this join never returns. */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 2 * WAIT_TIMEOUT_S;
	err = pthread_timedjoin_np(tid, NULL, &deadline);
	fprintf(stderr, "exit_group: process still alive after exit(9): %s\n", err ? strerror(err) : "exiter returned");
	return 124;
}
