/* witch-drcheck PID
 *
 * Prints the debug control register (DR7) of every thread of PID, one
 * "TID DR7" line each, by seizing each thread, interrupting it, reading
 * DR7 with PTRACE_PEEKUSER and detaching. Scenarios use it after psup
 * detached: nothing psup armed may be left. Exit 0, 1 on an error, 64 on
 * a usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int rc = 0;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: witch-drcheck PID\n");
		return 64;
	}
	snprintf(path, sizeof(path), "/proc/%s/task", argv[1]);
	dir = opendir(path);
	if (!dir) {
		perror(path);
		return 1;
	}
	while ((d = readdir(dir))) {
		pid_t tid = atoi(d->d_name);
		int status;
		long dr7;

		if (tid <= 0)
			continue;
		if (ptrace(PTRACE_SEIZE, tid, 0L, 0L) < 0 || ptrace(PTRACE_INTERRUPT, tid, 0L, 0L) < 0 ||
		    waitpid(tid, &status, __WALL) < 0) {
			fprintf(stderr, "witch-drcheck: %d: %s\n", tid, strerror(errno));
			rc = 1;
			continue;
		}
		errno = 0;
		dr7 = ptrace(PTRACE_PEEKUSER, tid, (void *)offsetof(struct user, u_debugreg[7]), 0L);
		if (errno) {
			fprintf(stderr, "witch-drcheck: %d: %s\n", tid, strerror(errno));
			rc = 1;
		} else {
			printf("%d %#lx\n", tid, dr7);
		}
		ptrace(PTRACE_DETACH, tid, 0L, 0L);
	}
	closedir(dir);
	return rc;
}
