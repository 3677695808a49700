#include "supervisor/supervisor.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

bool sup_sig_is_stop(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void sup_stop_classify(int wstatus, struct sup_stop *out)
{
	out->sig = 0;
	out->status = 0;
	out->core = false;
	if (WIFEXITED(wstatus)) {
		out->kind = SUP_STOP_EXITED;
		out->status = WEXITSTATUS(wstatus);
		return;
	}
	if (WIFSIGNALED(wstatus)) {
		out->kind = SUP_STOP_KILLED;
		out->sig = WTERMSIG(wstatus);
		out->core = WCOREDUMP(wstatus);
		return;
	}
	if (!WIFSTOPPED(wstatus)) {
		out->kind = SUP_STOP_UNKNOWN;
		return;
	}
	int sig = WSTOPSIG(wstatus);
	int event = (unsigned)wstatus >> 16;

	out->sig = sig;
	switch (event) {
	case 0:
		/* TRACESYSGOOD marks syscall-stops with 0x80. */
		out->kind = sig == (SIGTRAP | 0x80) ? SUP_STOP_SYSCALL : SUP_STOP_SIGNAL;
		if (out->kind == SUP_STOP_SYSCALL)
			out->sig = 0;
		return;
	case PTRACE_EVENT_STOP:
		/* Under SEIZE a group-stop reports the stop signal; an
		 * interrupt, a new thread's first stop and a job-control notify
		 * report SIGTRAP. Rule 3: group stops get PTRACE_LISTEN. */
		out->kind = sup_sig_is_stop(sig) ? SUP_STOP_GROUP : SUP_STOP_EVENT_STOP;
		return;
	case PTRACE_EVENT_CLONE:
		out->kind = SUP_STOP_CLONE;
		break;
	case PTRACE_EVENT_FORK:
		out->kind = SUP_STOP_FORK;
		break;
	case PTRACE_EVENT_VFORK:
		out->kind = SUP_STOP_VFORK;
		break;
	case PTRACE_EVENT_VFORK_DONE:
		out->kind = SUP_STOP_VFORK_DONE;
		break;
	case PTRACE_EVENT_EXEC:
		out->kind = SUP_STOP_EXEC;
		break;
	case PTRACE_EVENT_EXIT:
		out->kind = SUP_STOP_EXIT;
		break;
	case PTRACE_EVENT_SECCOMP:
		out->kind = SUP_STOP_SECCOMP;
		break;
	default:
		out->kind = SUP_STOP_UNKNOWN;
		return;
	}
	/* Event stops carry SIGTRAP; nothing is to be injected. */
	out->sig = 0;
}

const char *sup_stop_kind_name(enum sup_stop_kind kind)
{
	static const char *const names[] = {
		[SUP_STOP_EXITED] = "exited",
		[SUP_STOP_KILLED] = "killed",
		[SUP_STOP_SIGNAL] = "signal",
		[SUP_STOP_GROUP] = "group-stop",
		[SUP_STOP_EVENT_STOP] = "event-stop",
		[SUP_STOP_CLONE] = "clone",
		[SUP_STOP_FORK] = "fork",
		[SUP_STOP_VFORK] = "vfork",
		[SUP_STOP_VFORK_DONE] = "vfork-done",
		[SUP_STOP_EXEC] = "exec",
		[SUP_STOP_EXIT] = "exit-event",
		[SUP_STOP_SECCOMP] = "seccomp",
		[SUP_STOP_SYSCALL] = "syscall",
		[SUP_STOP_UNKNOWN] = "unknown",
	};
	if ((unsigned)kind < sizeof(names) / sizeof(names[0]) && names[kind])
		return names[kind];
	return "unknown";
}
