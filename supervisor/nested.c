/*
 * Programs that trace their own children under `psup run` (issue 22 item 8).
 * psup traces every child of the program, and a thread has one tracer: the
 * child's PTRACE_TRACEME, or its parent's PTRACE_ATTACH/SEIZE of it, failed
 * with EPERM (`psup run -- strace -f true`: "PTRACE_TRACEME: Operation not
 * permitted"; gdb alike). The run-mode filter (seccomp.c:
 * sup_seccomp_ptrace_filter) stops those three requests; psup then lets go
 * of the thread the program wants, with its process and that process's
 * descendants, before the call runs:
 *
 * - PTRACE_TRACEME: the caller is detached at this very stop; the kernel
 *   then runs the call (a seccomp stop's call is checked again after the
 *   tracer let go, and RET_TRACE then allows it), untraced: it succeeds.
 * - PTRACE_ATTACH/SEIZE of a thread psup traces: its threads are detached at
 *   their next stop (an interrupt brings one, rule 12), and the caller's call
 *   is skipped and re-issued (the instruction backed up, as for a call the
 *   kernel does not restart): it stops again until its target is free.
 *
 * Their samples from then on are not recorded: the program's tracer owns
 * them (the run's inherited events still run in them until psup ends; what
 * they write is dropped). Other requests, targets psup does not trace, a TRACEME whose parent
 * is psup and an ATTACH of an exiting thread run unchanged (EPERM, as
 * natively for a traced or exiting thread).
 * Limitation: the filter stays with the program (rule 4), so one of these
 * three requests made after psup let go of the caller fails with ENOSYS
 * unless the caller's tracer traces seccomp stops (a tracer under a tracer
 * under psup). Test: t1093-nested-tracers.
 */
#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* Whether psup is the parent of thread tid's process. */
static bool parent_is_psup(pid_t tid)
{
	struct sup_proc_status ps;

	return sup_proc_status(tid, &ps) == 0 && ps.ppid == getpid();
}

/* Whether t is past its exit: its exit stop came, or (a process's leader
 * let go of at its exit without one, sup_session_no_exit_stops()) it is a
 * zombie whose other threads live on. */
static bool thread_ended(const struct sup_thread *t)
{
	struct sup_proc_status ps;

	if (t->flags & SUP_THREAD_EXITING)
		return true;
	return t->tid == t->pid && sup_proc_status(t->tid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X');
}

/* Detaches, at their next stop, every thread of process pid and of its
 * descendants that psup traces, but the thread keep (stopped now; the
 * caller decides). */
static void release_tree(struct sup_session *s, pid_t pid, struct sup_thread *keep)
{
	unsigned n = 0;

	for (size_t i = 0; i < s->threads.cap; i++) {
		if (!s->threads.keys[i] || !s->threads.vals[i])
			continue;
		struct sup_thread *t = (struct sup_thread *)(uintptr_t)s->threads.vals[i];
		if (t == keep || (t->flags & SUP_THREAD_DETACHING) || thread_ended(t))
			continue;
		if (t->pid != pid && !sup_proc_descends_from(t->pid, pid))
			continue;
		t->flags |= SUP_THREAD_DETACHING;
		ptrace(PTRACE_INTERRUPT, t->tid, 0L, 0L); /* ESRCH: its exit is on its way */
		n++;
	}
	pr_info("the program traces process %d: psup lets go of it and its descendants (%u threads); "
		"their samples are not recorded",
		pid, n + (keep != NULL));
}

/* The caller's call is skipped and re-issued: it stops here again. */
static void retry_call(struct sup_thread *t)
{
	struct user_regs_struct regs;

	if (sup_thread_regs_of(t, &regs) == 0) {
		regs.orig_rax = (unsigned long long)-1LL; /* skip this execution */
		regs.rax = SYS_ptrace;                    /* the number, again */
		regs.rip -= 2;                            /* the syscall instruction */
		sup_thread_set_regs(t, &regs);
	}
	sup_thread_resume(t, PTRACE_CONT, 0);
}

bool sup_nested_on_seccomp(struct sup_session *s, struct sup_thread *t)
{
	const struct __ptrace_syscall_info *info = sup_thread_syscall_info(t);
	struct sup_thread *target;

	if (!info || info->op != PTRACE_SYSCALL_INFO_SECCOMP || info->seccomp.ret_data != SUP_SECCOMP_PTRACE_DATA)
		return false;
	switch ((long)info->seccomp.args[0]) {
	case PTRACE_TRACEME:
		/* Its parent is psup (the run's program): psup traces it
		 * already, and the call fails with EPERM as for any traced
		 * process. Letting go would lose the rest of its profile and
		 * its exit status, psup being its tracer again. */
		if (parent_is_psup(t->tid))
			break;
		release_tree(s, t->pid, t);
		sup_detach_thread(s, t, 0);
		if (s->stopping && !s->nthreads)
			s->done = true;
		return true;
	case PTRACE_ATTACH:
	case PTRACE_SEIZE:
		target = sup_thread_find(s, (pid_t)info->seccomp.args[1]);
		/* Not psup's, the program's own process, or an exiting thread
		 * (a zombie leader whose other threads live on: the kernel
		 * refuses it, and a retry would wait for its whole process):
		 * the call runs as it is. */
		if (!target || target->pid == t->pid || target->pid == s->root || thread_ended(target))
			break;
		if (!(target->flags & SUP_THREAD_DETACHING))
			release_tree(s, target->pid, NULL);
		retry_call(t);
		return true;
	default:
		break;
	}
	sup_thread_resume(t, PTRACE_CONT, 0);
	return true;
}
