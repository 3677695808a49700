/* threadforker N
 *
 * Starts a second thread (which waits on a pipe), then from the main thread
 * forks N children in a row, each of which execs /bin/true; waits for each
 * (exit 0), then lets the second thread end. The children of a process with
 * more than one thread, as node's, java's or a thread pool's: t3078.
 * Exit: 0 when every child exited 0, 1 one did not, 64 usage, 71 setup
 * failed (pipe, thread, fork), 124 a child did not end within 30 s.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void *waiter(void *arg)
{
	char c;

	(void)arg;
	while (read(fds[0], &c, 1) < 0)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : -1;
	int status = 0, bad = 0;

	if (n < 1) {
		fprintf(stderr, "usage: threadforker N\n");
		return 64;
	}
	if (pipe(fds) < 0 || pthread_create(&t, NULL, waiter, NULL) != 0)
		return 71;
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 71;
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		for (int tries = 0; waitpid(pid, &status, WNOHANG) == 0; tries++) {
			struct timespec ms = { 0, 1000000 };

			if (tries > 30000)
				return 124;
			nanosleep(&ms, NULL);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad = 1;
	}
	if (write(fds[1], "x", 1) != 1 || pthread_join(t, NULL) != 0)
		return 71;
	return bad;
}
