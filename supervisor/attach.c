#include "supervisor/supervisor-internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* Give up rescanning a process that creates threads faster than we seize
 * them; every thread created by a seized one is caught by TRACECLONE anyway. */
#define SUP_ATTACH_MAX_SCANS 1000

static bool tracer_is_us(pid_t tid)
{
	struct sup_proc_status ps;

	return sup_proc_status(tid, &ps) == 0 && ps.tracer == getpid();
}

static bool is_zombie(pid_t tid)
{
	struct sup_proc_status ps;

	return sup_proc_status(tid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X');
}

/* A thread that exited between the listing and the seize, and is gone by
 * now (the kernel refuses a task past its exit with EPERM). */
static bool gone(pid_t tid)
{
	char state;
	int err = sup_proc_state(tid, &state);

	return err == -ENOENT || err == -ESRCH;
}

/* One pass over /proc/PID/task. Returns the number of threads added, or
 * -errno with *why set. */
static int scan_once(struct sup_session *s, pid_t pid, char *why, size_t whylen)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int added = 0;
	long opts = s->root_opts;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d) {
		int err = -errno;
		sup_attach_diagnose(pid, err == -ENOENT ? -ESRCH : err, why, whylen);
		return err == -ENOENT ? -ESRCH : err;
	}
	while ((de = readdir(d))) {
		long v;
		pid_t tid;

		if (psup_parse_long(de->d_name, 1, 0x7fffffff, &v) < 0)
			continue;
		tid = (pid_t)v;
		if (sup_thread_find(s, tid))
			continue;
		for (int tries = 0;; tries++) {
			if (ptrace(PTRACE_SEIZE, tid, 0L, opts) == 0)
				break;
			if (errno == EAGAIN && tries < 100) {
				/* Racing an exec (scenario 10): retry. */
				usleep(1000);
				continue;
			}
			break;
		}
		if (errno && !sup_thread_find(s, tid)) {
			int e = errno;
			errno = 0;
			if (e == 0) {
				/* seized */
			} else if (e == ESRCH) {
				continue; /* exited meanwhile */
			} else if (e == EPERM && tracer_is_us(tid)) {
				/* Auto-attached by TRACECLONE from a seized
				 * creator: its first stop and its creator's
				 * event are on their way, and report it with
				 * its creator (whose events it shares). */
				continue;
			} else if (e == EPERM && is_zombie(tid)) {
				/* A zombie leader after pthread_exit; its
				 * threads run on. Test: t2150-zombie-leader. */
				continue;
			} else if (e == EPERM && tid != pid && gone(tid)) {
				/* A short thread, gone by now (one made by a
				 * thread not seized yet). Test:
				 * t2040-attach-thread-storm. */
				continue;
			} else {
				closedir(d);
				sup_attach_diagnose(pid, -e, why, whylen);
				return -e;
			}
		}
		errno = 0;
		struct sup_thread *t = sup_thread_add(s, tid, pid, 0);
		if (!t) {
			closedir(d);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		sup_thread_report(s, t, s->nthreads == 1);
		added++;
	}
	closedir(d);
	return added;
}

int sup_attach(pid_t pid, unsigned flags, const struct sup_hooks *hooks, struct sup_session **out,
	       char *why, size_t whylen)
{
	struct sup_session *s;
	int err, scans = 0, added;

	if (pid <= 0) {
		snprintf(why, whylen, "invalid pid %d", pid);
		return -EINVAL;
	}
	if (pid == getpid()) {
		snprintf(why, whylen, "cannot attach to pid %d: that is psup itself", pid);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = sup_session_init(s, true);
	if (err < 0) {
		snprintf(why, whylen, "cannot set up the event loop: %s", strerror(-err));
		goto fail;
	}
	/* TRACEEXIT: a thread that exits while attached (a leader calling
	 * pthread_exit stays a zombie) must be known, or the detach would wait
	 * for a stop that cannot come. */
	s->root_opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
	if (hooks)
		s->hooks = *hooks;
	{
		struct sup_proc_status ps;
		if (sup_proc_status(pid, &ps) == 0 && ps.tgid > 0 && ps.tgid != pid) {
			pr_info("%d is a thread of process %d: attaching to the process", pid, ps.tgid);
			pid = ps.tgid;
		}
	}
	s->root = pid;
	/* No stops: the threads the process creates are not traced (the
	 * records tell them); its pidfd tells its end where its leader is
	 * not traced. Opened before the threads are seized. They are seized
	 * with TRACECLONE all the same: a thread made during the scan, its
	 * creator's events open, is reported with its creator and shares
	 * them (found by the scan, it would open a second set); each thread
	 * loses the option at its first stop (let_go_attached()). */
	if ((flags & SUP_ATTACH_NO_STOPS) && is_zombie(pid)) {
		/* A zombie leader cannot be traced: the last seized
		 * thread's death is the process's end and status, which an
		 * untraced thread could outlive. Stops, then. Test:
		 * t2070-attach-leader-exits. */
		pr_debug("%d's leader is a zombie: the threads it creates are stopped", pid);
	} else if (flags & SUP_ATTACH_NO_STOPS) {
		err = sup_session_watch_end(s, pid);
		if (err == 0)
			s->attach_told = true;
		else
			pr_debug("no pidfd for %d (%s): the threads it creates are stopped", pid, strerror(-err));
	}
	/* Hooks may use the session (to watch fds) before we return. */
	*out = s;
	errno = 0;
	/* Rescan until a pass finds no new thread (scenario 5). */
	do {
		added = scan_once(s, pid, why, whylen);
		if (added < 0) {
			err = added;
			goto fail;
		}
	} while (added > 0 && ++scans < SUP_ATTACH_MAX_SCANS);
	if (!s->nthreads) {
		err = -ESRCH;
		if (is_zombie(pid))
			snprintf(why, whylen, "cannot attach to pid %d: it is a zombie (exited, not yet reaped by its parent)", pid);
		else
			sup_attach_diagnose(pid, -ESRCH, why, whylen);
		goto fail;
	}
	return 0;
fail:
	/* Threads seized so far run on: the session's own loop detaches
	 * them. */
	*out = NULL;
	sup_session_free(s);
	return err;
}

void sup_detach_begin(struct sup_session *s)
{
	for (size_t i = 0; i < s->threads.cap; i++) {
		if (!s->threads.keys[i] || !s->threads.vals[i])
			continue;
		struct sup_thread *t = (struct sup_thread *)(uintptr_t)s->threads.vals[i];
		struct sup_proc_status ps;
		/* A zombie leader no exit stop told (sup_session_no_exit_stops())
		 * may be marked detaching already (nested.c): a leader is looked
		 * at whatever its flags. */
		if ((t->flags & SUP_THREAD_DETACHING) && t->tid != t->pid)
			continue;
		if (t->flags & SUP_THREAD_LET_GO) {
			/* Not traced any more: nothing to undo. */
			sup_thread_remove(s, t, false);
			i = (size_t)-1;
			continue;
		}
		if ((t->flags & SUP_THREAD_EXITING) ||
		    (sup_proc_status(t->tid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X'))) {
			/* Past its exit (a zombie leader waiting for its
			 * group): no stop will come, nothing is left to undo.
			 * Test: t2070-attach-leader-exits. */
			sup_thread_remove(s, t, true);
			i = (size_t)-1; /* removal moves entries: rescan */
			continue;
		}
		if (t->flags & SUP_THREAD_DETACHING)
			continue;
		t->flags |= SUP_THREAD_DETACHING;
		/* Rule 12: PTRACE_DETACH needs a ptrace stop; the interrupt
		 * brings one (or another stop wins the race, rule 7: the loop
		 * detaches at whichever comes first). */
		ptrace(PTRACE_INTERRUPT, t->tid, 0L, 0L); /* ESRCH: its exit is on its way */
	}
}

/*
 * A thread blocked in one of the calls the kernel never restarts after a
 * stop (signal(7): epoll_wait, semop, sigtimedwait, io_getevents, and every
 * socket call on a socket with SO_RCVTIMEO or SO_SNDTIMEO: accept, recv*,
 * send*, connect, and read/write on it) returns -EINTR when our
 * PTRACE_INTERRUPT arrives: the program would see an EINTR caused by psup
 * alone. At the interrupt stop, back the thread up to re-execute the call,
 * as the kernel does for restartable ones; its arguments are still in their
 * registers (a relative timeout starts over; a TCP connect whose handshake
 * went on meanwhile times out with EALREADY instead of EINPROGRESS). A call
 * that returns -EINTR has done nothing (one that sent or received part of
 * its data returns the count). Not when a signal is pending: then the EINTR
 * is the program's own. The others (nanosleep, poll, select, pause,
 * sigsuspend, msgrcv, futex, ...) return a restart code the kernel acts on
 * itself. Tests: t2020-attach-blocked, t2027-attach-no-eintr (every call of
 * signal(7)'s lists), t4035-interrupt-psup-alone (a run-mode detach).
 */
static bool never_restarted(long nr)
{
	switch (nr) {
	case SYS_accept:
	case SYS_accept4:
	case SYS_connect:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_sendmmsg:
	case SYS_read:
	case SYS_readv:
	case SYS_write:
	case SYS_writev:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_rt_sigtimedwait:
	case SYS_io_getevents:
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
		return true;
	default:
		return false;
	}
}

/* Whether a pending signal can be why a call ended with EINTR: not one the
 * program ignores, explicitly or by default (SIGCHLD, SIGURG, SIGWINCH
 * without a handler), which the kernel discards at its delivery and which
 * interrupts nothing natively. A traced thread queues those too (ptrace
 * shows every signal): a SIGINT that psup passes on to a program ignoring it
 * (t4035) left the EINTR psup's interrupt caused. */
static bool signal_interrupts(const struct sup_proc_status *ps)
{
	uint64_t pending = ps->sigpnd | ps->shdpnd, dfl_ign = 0;

	if (!ps->signal_pending)
		return false;
	if (!pending)
		return true; /* pending, but not where we looked: be careful */
	dfl_ign = (1ULL << (SIGCHLD - 1)) | (1ULL << (SIGURG - 1)) | (1ULL << (SIGWINCH - 1));
	return (pending & ~ps->sigign & ~(dfl_ign & ~ps->sigcgt)) != 0;
}

void sup_thread_restart_interrupted(struct sup_thread *t)
{
	struct user_regs_struct regs;

	if (sup_thread_regs_of(t, &regs) < 0)
		return;
	if ((long)regs.rax != -EINTR || !never_restarted((long)regs.orig_rax))
		return;
	struct sup_proc_status ps;
	if (sup_proc_status(t->tid, &ps) < 0 || signal_interrupts(&ps))
		return; /* the EINTR may be the program's own: leave it */
	regs.rax = regs.orig_rax;
	regs.rip -= 2; /* the syscall instruction, 0f 05 */
	if (sup_thread_set_regs(t, &regs) == 0)
		pr_debug("thread %d: restarting its interrupted system call %lld", t->tid,
			 (long long)regs.orig_rax);
}

void sup_detach_thread(struct sup_session *s, struct sup_thread *t, int sig)
{
	long dr7;

	/* Rule 12: clear DR7 first, then DR0-3, only when something is set
	 * (writing an address register creates a kernel breakpoint slot). */
	errno = 0;
	dr7 = ptrace(PTRACE_PEEKUSER, t->tid, (void *)offsetof(struct user, u_debugreg[7]), 0L);
	if (!errno && dr7) {
		ptrace(PTRACE_POKEUSER, t->tid, (void *)offsetof(struct user, u_debugreg[7]), 0L);
		for (int i = 0; i < 4; i++)
			ptrace(PTRACE_POKEUSER, t->tid, (void *)offsetof(struct user, u_debugreg[i]), 0L);
	}
	pid_t tid = t->tid;
	/* Perf fds are closed by the thread_gone hook before the detach. */
	sup_thread_remove(s, t, false);
	if (ptrace(PTRACE_DETACH, tid, 0L, (long)sig) < 0 && errno != ESRCH)
		pr_debug("detach %d: %s", tid, strerror(errno));
	pr_trace("detached %d (signal %d)", tid, sig);
}
