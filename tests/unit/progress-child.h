#ifndef PSUP_TESTS_UNIT_PROGRESS_CHILD_H
#define PSUP_TESTS_UNIT_PROGRESS_CHILD_H

/* Runs a fixture of progress-fixtures.h as a child that stops itself: no
 * ptrace, only SIGSTOP / SIGCONT and waitpid(WUNTRACED). */

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/progress-fixtures.h"

struct pf_child {
	pid_t pid;
	int out;
	uint64_t work, other; /* addresses it printed (pf.c only) */
};

/* Waits until the child stops (true) or ends (false, *status set). */
static inline bool pf_wait_stop(struct pf_child *c, int *status)
{
	int st;

	while (waitpid(c->pid, &st, WUNTRACED) < 0)
		if (errno != EINTR)
			return false;
	if (status)
		*status = st;
	if (WIFSTOPPED(st))
		return true;
	c->pid = -1;
	return false;
}

/* Starts dir/name with argument n; returns with the child stopped before
 * its loop (addresses read for pf.c). */
static inline int pf_start(struct pf_child *c, const char *name, unsigned n, bool prints)
{
	char path[160], arg[32];
	int fds[2];

	memset(c, 0, sizeof(*c));
	c->out = -1;
	snprintf(path, sizeof(path), "%s/%s", pf_dir, name);
	snprintf(arg, sizeof(arg), "%u", n);
	if (pipe(fds))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	c->out = fds[0];
	if (prints) {
		char buf[512];

		if (fx_read_until(c->out, buf, sizeof(buf), "end\n") < 0)
			return -1;
		sscanf(strstr(buf, "work "), "work %lx", (unsigned long *)&c->work);
		sscanf(strstr(buf, "other "), "other %lx", (unsigned long *)&c->other);
	}
	return pf_wait_stop(c, NULL) ? 0 : -1;
}

/* Resumes the child up to its next stop (true) or its end (false). */
static inline bool pf_continue(struct pf_child *c, int *status)
{
	if (c->pid <= 0 || kill(c->pid, SIGCONT))
		return false;
	return pf_wait_stop(c, status);
}

static inline void pf_kill(struct pf_child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = -1;
	}
	if (c->out >= 0)
		close(c->out);
	c->out = -1;
}

#endif
