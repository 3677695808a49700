#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"

/*
 * Rule 2: the child stops itself, the parent seizes it, then the child execs.
 * Its first stop may be seen as a signal-delivery-stop (seized before the
 * SIGSTOP was dequeued) or as a group-stop (stopped before the seize).
 * PSUP_TEST_SEIZE_DELAY_MS delays the seize to force the second case.
 * Test: t1010-first-stop-kinds.
 */
static int first_stop(pid_t pid, char *why, size_t whylen)
{
	for (;;) {
		struct sup_stop st;
		int status;

		if (waitpid(pid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "waiting for the child: %s", strerror(errno));
			return -errno;
		}
		sup_stop_classify(status, &st);
		pr_trace("first stop: %s sig=%d", sup_stop_kind_name(st.kind), st.sig);
		switch (st.kind) {
		case SUP_STOP_SIGNAL:
			if (st.sig != SIGSTOP) {
				/* Not ours: deliver it, keep waiting. */
				ptrace(PTRACE_CONT, pid, 0L, (long)st.sig);
				continue;
			}
			/* Our own SIGSTOP: suppress it. */
			ptrace(PTRACE_CONT, pid, 0L, 0L);
			return 0;
		case SUP_STOP_GROUP:
			/* Stopped before the seize: SIGCONT ends the group
			 * stop; its delivery stop is passed on later
			 * (ignored by default before exec). */
			kill(pid, SIGCONT);
			ptrace(PTRACE_CONT, pid, 0L, 0L);
			return 0;
		case SUP_STOP_EXITED:
		case SUP_STOP_KILLED:
			snprintf(why, whylen, "the child died before exec");
			return -ECHILD;
		default:
			ptrace(PTRACE_CONT, pid, 0L, 0L);
			continue;
		}
	}
}

/* SIGPIPE's disposition before sup_ignore_sigpipe(), for the child. */
static struct sigaction sigpipe_before;
static bool sigpipe_saved;

void sup_ignore_sigpipe(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	if (sigpipe_saved)
		return;
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGPIPE, &ign, &sigpipe_before) == 0)
		sigpipe_saved = true;
}

int sup_spawn(char *const argv[], unsigned flags, const struct sup_hooks *hooks,
	      struct sup_session **out, char *why, size_t whylen)
{
	struct sup_session *s;
	int errpipe[2] = { -1, -1 };
	long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT |
		    PTRACE_O_EXITKILL;
	const char *delay = getenv("PSUP_TEST_SEIZE_DELAY_MS");
	long no_stops_opts = 0;
	struct sock_fprog *filter = NULL, *ptrace_filter = NULL;
	pid_t pid;
	int err;

	if (!argv || !argv[0]) {
		snprintf(why, whylen, "no command given");
		return -EINVAL;
	}
	if (flags & SUP_SPAWN_CAUSAL_FILTER) {
		/* Causal profiling (pause.c): a child that psup did not trace
		 * would see ENOSYS from the filter it inherits, so children are
		 * always followed. Built before the fork (rule 2). */
		flags |= SUP_SPAWN_FOLLOW_FORKS;
		opts |= PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD;
		err = sup_seccomp_filter(&filter, !(flags & SUP_SPAWN_CAUSAL_NO_FUTEX),
					 !(flags & SUP_SPAWN_CAUSAL_NO_WAKES), !(flags & SUP_SPAWN_CAUSAL_NO_EXIT));
		if (err < 0) {
			snprintf(why, whylen, "cannot build the seccomp filter: %s", strerror(-err));
			return err;
		}
	}
	if (flags & SUP_SPAWN_NO_STOPS) {
		/* The root alone is traced: nothing it creates is, so a
		 * program that traces its children has them to itself (no
		 * filter), and no thread waits for psup at its creation. */
		if (filter) {
			snprintf(why, whylen, "internal error: no stops with the causal filter");
			err = -EINVAL;
			goto free_filters;
		}
		opts &= ~(long)PTRACE_O_TRACECLONE;
		no_stops_opts = PTRACE_O_TRACECLONE;
		if (flags & SUP_SPAWN_FOLLOW_FORKS)
			no_stops_opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
	} else {
		if (flags & SUP_SPAWN_FOLLOW_FORKS)
			opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
		/* A program that traces its children (strace, gdb) gets them
		 * back from psup (nested.c). Only where the filter costs no
		 * privilege (the child installs it without NO_NEW_PRIVS, or has
		 * that already): a setuid program keeps working. Without it, no
		 * seccomp stop comes. */
		if (sup_seccomp_ptrace_filter(&ptrace_filter) == 0)
			opts |= PTRACE_O_TRACESECCOMP;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
		goto free_filters;
	}
	s->causal_filter = filter != NULL;
	err = sup_session_init(s, false);
	if (err < 0) {
		snprintf(why, whylen, "cannot set up the event loop: %s", strerror(-err));
		goto fail;
	}
	/* Descendants are traced without EXITKILL: one psup cannot detach in
	 * time (a parent blocked in vfork ignores PTRACE_INTERRUPT) must be
	 * left running by the kernel, not killed. Test: t3055-vfork-wait. */
	s->root_opts = opts;
	s->desc_opts = opts & ~PTRACE_O_EXITKILL;
	s->stops_opts = no_stops_opts;
	/* ...except under the filter: descendants outliving a killed psup
	 * would fail every intercepted call (ptrace-rules.md rule 4, scenario 3). */
	if (filter)
		s->desc_opts = opts;
	if (hooks)
		s->hooks = *hooks;
	/* Hooks may use the session (to watch fds) before we return. */
	*out = s;
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		err = -errno;
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	pid_t psup_pid = getpid();
	pid = fork();
	if (pid < 0) {
		err = -errno;
		snprintf(why, whylen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/* The child: only async-signal-safe calls until exec. */
		int e;

		close(errpipe[0]);
		sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
		if (sigpipe_saved)
			sigaction(SIGPIPE, &sigpipe_before, NULL);
		/* Not traced past its exec (let_go_root()): it dies with psup
		 * all the same, unless psup is gone already. */
		if ((flags & SUP_SPAWN_NO_STOPS) &&
		    (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != psup_pid))
			_exit(126);
		kill(getpid(), SIGSTOP);
		/* Seized by now: the filter's stops have a tracer (rule 4). */
		if (filter && (e = -sup_seccomp_install(filter)) != 0) {
			if (write(errpipe[1], &e, sizeof(e)) < 0)
				_exit(126);
			_exit(126);
		}
		if (ptrace_filter)
			sup_seccomp_install_privileged(ptrace_filter);
		execvp(argv[0], argv);
		e = errno;
		if (write(errpipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
	}
	close(errpipe[1]);
	errpipe[1] = -1;
	s->exec_err_fd = errpipe[0];
	s->root = pid;
	if (delay)
		usleep((useconds_t)atoi(delay) * 1000);
	if (ptrace(PTRACE_SEIZE, pid, 0L, opts) < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot trace the child: %s%s", strerror(errno),
			 errno == EPERM ? " (is ptrace forbidden by a seccomp policy or a container?)" : "");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto fail;
	}
	err = first_stop(pid, why, whylen);
	if (err < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto fail;
	}
	struct sup_thread *t = sup_thread_add(s, pid, pid, 0);
	if (!t) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto fail;
	}
	t->flags |= SUP_THREAD_SEEN_STOP;
	sup_thread_report(s, t, true);
	free(filter ? filter->filter : NULL);
	free(filter);
	free(ptrace_filter ? ptrace_filter->filter : NULL);
	free(ptrace_filter);
	return 0;
fail:
	*out = NULL;
	if (errpipe[1] >= 0)
		close(errpipe[1]);
	if (s->exec_err_fd < 0 && errpipe[0] >= 0)
		close(errpipe[0]);
	s->root = 0;
	sup_session_release(s);
	free(s);
free_filters:
	free(filter ? filter->filter : NULL);
	free(filter);
	free(ptrace_filter ? ptrace_filter->filter : NULL);
	free(ptrace_filter);
	return err;
}
