/* execer N
 *
 * The main thread starts a second thread, which (not being the thread-group
 * leader) execve()s /proc/self/exe with N-1; the kernel kills the old leader
 * and the exec'ing thread takes over the leader's pid. Repeats until N is 0,
 * then exits 0. Prints nothing when all goes well. The pid is passed along as
 * a hidden second argument and must never change.
 * Exit: 0 on success, 64 usage, 71 pthread_create failed, 2 execve failed,
 * 3 the pid changed across an exec, 124 the exec did not happen within 30 s.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30

static char next_n[32], pid_arg[32];

static void *exec_next(void *arg)
{
	char *argv[] = { "execer", next_n, pid_arg, NULL };
	extern char **environ;

	(void)arg;
	execve("/proc/self/exe", argv, environ);
	fprintf(stderr, "execer: execve /proc/self/exe from a thread: %s\n", strerror(errno));
	_exit(2);
}

int main(int argc, char **argv)
{
	struct timespec deadline;
	unsigned long n;
	pthread_t tid;
	char *end;
	int err;

	if (argc < 2 || argc > 3 || (n = strtoul(argv[1], &end, 10), *end) || argv[1][0] == '-') {
		fprintf(stderr, "usage: execer N\n");
		return 64;
	}
	if (argc == 3 && strtol(argv[2], NULL, 10) != getpid()) {
		fprintf(stderr, "execer: pid %d after exec from a thread, was %s\n", getpid(), argv[2]);
		return 3;
	}
	if (n == 0)
		return 0;

	snprintf(next_n, sizeof(next_n), "%lu", n - 1);
	snprintf(pid_arg, sizeof(pid_arg), "%d", getpid());
	err = pthread_create(&tid, NULL, exec_next, NULL);
	if (err) {
		fprintf(stderr, "execer: pthread_create: %s\n", strerror(err));
		return 71;
	}
	/* The exec ends this thread; getting past the join means it did not. */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += WAIT_TIMEOUT_S;
	err = pthread_timedjoin_np(tid, NULL, &deadline);
	fprintf(stderr, "execer: no exec within %d s (%s)\n", WAIT_TIMEOUT_S, err ? strerror(err) : "thread returned");
	return 124;
}
