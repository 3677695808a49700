/* forker N
 *
 * Forks N children in a row; each forks a grandchild that exits 3, checks
 * that status and exits 5. Then one vfork() child that execs /bin/true (exit
 * 0), and one child killed with SIGKILL right after fork. Every status is
 * checked; waits are bounded by 30 s.
 * Exit: 0 if all statuses are as expected, 1 a child's status was not 5 (it
 * exits 6 when its grandchild's status was not 3), 2 the vfork/exec child did
 * not exit 0, 3 the killed child did not die of SIGKILL, 64 usage, 71 fork
 * failed, 124 a child did not end within 30 s.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30

static double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* waitpid() with a deadline: polls with WNOHANG, 1 ms apart. Exits 124 on
 * timeout, since a hung child is exactly the failure to report loudly. */
static int wait_child(pid_t pid, const char *who)
{
	double deadline = monotonic_seconds() + WAIT_TIMEOUT_S;
	struct timespec ms = { 0, 1000000 };
	int status;
	pid_t got;

	for (;;) {
		got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return status;
		if (got < 0 && errno != EINTR) {
			fprintf(stderr, "forker: waitpid %s %d: %s\n", who, pid, strerror(errno));
			_exit(71);
		}
		if (monotonic_seconds() > deadline) {
			fprintf(stderr, "forker: %s %d did not end within %d s\n", who, pid, WAIT_TIMEOUT_S);
			_exit(124);
		}
		nanosleep(&ms, NULL);
	}
}

static pid_t fork_or_die(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "forker: fork: %s\n", strerror(errno));
		_exit(71);
	}
	return pid;
}

static void child(void)
{
	pid_t pid = fork_or_die();
	int status;

	if (pid == 0)
		_exit(3);
	status = wait_child(pid, "grandchild");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) {
		fprintf(stderr, "forker: grandchild %d: status 0x%x, expected exit 3\n", pid, status);
		_exit(6);
	}
	_exit(5);
}

/* Its own function, so no local of main() lives across vfork() (the child
 * borrows the parent's stack until it execs). */
__attribute__((noipa)) static pid_t vfork_true(void)
{
	pid_t pid = vfork();

	if (pid < 0) {
		fprintf(stderr, "forker: vfork: %s\n", strerror(errno));
		_exit(71);
	}
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	unsigned long n;
	int status, ret = 0;
	char *end;
	pid_t pid;

	if (argc != 2 || (n = strtoul(argv[1], &end, 10), *end) || argv[1][0] == '-') {
		fprintf(stderr, "usage: forker N\n");
		return 64;
	}

	for (unsigned long i = 0; i < n; i++) {
		pid = fork_or_die();
		if (pid == 0)
			child();
		status = wait_child(pid, "child");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 5) {
			fprintf(stderr, "forker: child #%lu (%d): status 0x%x, expected exit 5\n", i, pid, status);
			ret = ret ? ret : 1;
		}
	}

	pid = vfork_true();
	status = wait_child(pid, "vfork child");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "forker: vfork+exec /bin/true (%d): status 0x%x, expected exit 0\n", pid, status);
		ret = ret ? ret : 2;
	}

	pid = fork_or_die();
	if (pid == 0) {
		alarm(2 * WAIT_TIMEOUT_S); /* never outlive a failed test */
		for (;;)
			pause();
	}
	kill(pid, SIGKILL);
	status = wait_child(pid, "killed child");
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		fprintf(stderr, "forker: killed child (%d): status 0x%x, expected SIGKILL\n", pid, status);
		ret = ret ? ret : 3;
	}
	return ret;
}
