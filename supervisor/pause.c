/*
 * Pauses (Coz's virtual speedup from outside the process) and psup's seccomp
 * stops. See "causal profiling" in supervisor.h for the contract.
 *
 * A pause is a ptrace stop held for a while: PTRACE_INTERRUPT, then at the
 * interrupt stop the hold hook says for how long, and one timerfd (armed at
 * the earliest deadline) resumes the held threads. The owed time is decided
 * at the stop, not at the request, so a thread that paid its debt at a
 * seccomp stop meanwhile is not paused twice.
 */
#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/user.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* Resume a hold this much before its deadline rather than sleep again for
 * less than the timer's own slack. */
#define PAUSE_SLACK_NS 20000ULL

/* The kernel's internal restart codes, seen in rax at a stop inside a
 * system call that the interrupt broke off (include/linux/errno.h). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

void sup_session_set_pause_hooks(struct sup_session *s, const struct sup_pause_hooks *h)
{
	s->pause_hooks = *h;
}

void sup_session_pause_stats(const struct sup_session *s, struct sup_pause_stats *out)
{
	*out = s->pstats;
}

bool sup_thread_is_held(struct sup_session *s, pid_t tid)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	return t && (t->flags & SUP_THREAD_HELD);
}

/* PTRACE_SYSCALL while the exit of an intercepted call is awaited: any
 * other request would clear the kernel's syscall tracing of the thread. */
static int resume_request(const struct sup_thread *t)
{
	return (t->flags & SUP_THREAD_SYSEXIT) ? PTRACE_SYSCALL : PTRACE_CONT;
}

static void arm_timer(struct sup_session *s)
{
	uint64_t first = 0;
	struct itimerspec its = { 0 };

	for (size_t i = 0; i < s->nheld; i++) {
		struct sup_thread *t = sup_thread_find(s, s->held[i]);
		if (t && (t->flags & SUP_THREAD_HELD) && (!first || t->hold_until < first))
			first = t->hold_until;
	}
	if (first) {
		its.it_value.tv_sec = (time_t)(first / 1000000000ULL);
		its.it_value.tv_nsec = (long)(first % 1000000000ULL);
	}
	/* A zero it_value disarms. */
	if (timerfd_settime(s->pausefd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		pr_debug("pause timer: %s", strerror(errno));
}

/* Marks t held for ns from t0 (when it stopped running for psup), not
 * before now; the list and the timer are the caller's. */
static void set_hold(struct sup_session *s, struct sup_thread *t, uint64_t ns, uint64_t t0, uint64_t now)
{
	t->flags |= SUP_THREAD_HELD;
	t->pause_t0 = t0;
	t->hold_asked = ns;
	t->hold_until = t0 + ns > now ? t0 + ns : now;
	s->pstats.holds++;
	s->pstats.held_ns += ns;
}

/* Ends t's hold. When extend, the hook may hold it on instead: returns
 * true then (t stays held, from now, in the list). */
static bool end_hold(struct sup_session *s, struct sup_thread *t, uint64_t now, bool resume, bool extend)
{
	uint64_t lost = now > t->pause_t0 ? now - t->pause_t0 : 0, more = 0;

	extend = extend && !s->stopping;
	t->flags &= ~SUP_THREAD_HELD;
	s->pstats.lost_ns += lost;
	if (s->pause_hooks.held)
		more = s->pause_hooks.held(s->pause_hooks.arg, t->tid, t->hold_asked, lost, extend);
	if (more && extend) {
		set_hold(s, t, more, now, now);
		s->pstats.extended++;
		return true;
	}
	if (resume)
		sup_thread_resume(t, resume_request(t), 0);
	return false;
}

/* Resumes the holds that are due, or holds them on when their thread came
 * to owe more meanwhile; compacts the list (it holds tids, so a thread
 * freed meanwhile simply is not found). */
static void release_due(struct sup_session *s, bool all)
{
	uint64_t now = psup_now_ns();
	size_t k = 0;

	/* The timer fires at the earliest deadline, so a hold is due: the
	 * hook's look at what happened meanwhile is taken once, before the
	 * time, which makes it time the due threads lost. */
	if (!all && s->nheld && s->pause_hooks.due) {
		s->pause_hooks.due(s->pause_hooks.arg);
		now = psup_now_ns();
	}
	for (size_t i = 0; i < s->nheld; i++) {
		struct sup_thread *t = sup_thread_find(s, s->held[i]);
		if (!t || !(t->flags & SUP_THREAD_HELD))
			continue;
		if ((all || t->hold_until <= now + PAUSE_SLACK_NS) && !end_hold(s, t, now, true, !all))
			continue;
		s->held[k++] = s->held[i];
	}
	s->nheld = k;
	if (s->pausefd >= 0)
		arm_timer(s);
}

static void on_pause_timer(void *arg, int fd)
{
	struct sup_session *s = arg;
	uint64_t buf;

	s->lstats.timers++;
	while (read(fd, &buf, sizeof(buf)) > 0)
		;
	release_due(arg, false);
}

static int ensure_timer(struct sup_session *s)
{
	int err;

	if (s->pausefd >= 0)
		return 0;
	s->pausefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->pausefd < 0) {
		s->pausefd = -1;
		return -errno;
	}
	err = sup_session_watch(s, s->pausefd, on_pause_timer, s);
	if (err < 0) {
		close(s->pausefd);
		s->pausefd = -1;
	}
	return err;
}

/* Holds the stopped thread t for ns from now (t0: when it stopped running
 * for psup). Returns false when it cannot be held (it is then still stopped:
 * the caller resumes it). */
static bool hold(struct sup_session *s, struct sup_thread *t, uint64_t ns, uint64_t t0)
{
	uint64_t now = psup_now_ns();

	if (ensure_timer(s) < 0)
		return false;
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? s->capheld * 2 : 16;
		pid_t *h = realloc(s->held, cap * sizeof(*h));
		if (!h)
			return false;
		s->held = h;
		s->capheld = cap;
	}
	s->held[s->nheld++] = t->tid;
	/* The hold counts from when the thread stopped running. */
	set_hold(s, t, ns, t0, now);
	arm_timer(s);
	return true;
}

int sup_thread_pause(struct sup_session *s, pid_t tid)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	if (!t)
		return -ESRCH;
	if (s->stopping || (t->flags & (SUP_THREAD_DETACHING | SUP_THREAD_EXITING)) ||
	    !(t->flags & SUP_THREAD_SEEN_STOP))
		return -EBUSY;
	if (t->flags & (SUP_THREAD_PAUSE_PENDING | SUP_THREAD_HELD))
		return -EALREADY;
	if (ptrace(PTRACE_INTERRUPT, tid, 0L, 0L) < 0)
		return -errno; /* ESRCH: its exit is on its way (rule 6) */
	t->flags |= SUP_THREAD_PAUSE_PENDING;
	t->pause_t0 = psup_now_ns();
	s->pstats.requests++;
	return 0;
}

static bool in_blocking_call(struct sup_thread *t)
{
	struct user_regs_struct regs;
	long rax;

	if (sup_thread_regs_of(t, &regs) < 0)
		return true; /* unknown: do not hold */
	if ((long)regs.orig_rax < 0)
		return false; /* stopped in user code (an interrupt entry) */
	rax = (long)regs.rax;
	return rax == -EINTR || rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	       rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK;
}

/* The program's own filter said RET_TRACE: without a tracer that listens
 * for seccomp stops the call fails with ENOSYS, so that is what it gets
 * (skip the call: orig_rax = -1; rax already holds -ENOSYS at this stop,
 * set it anyway). Also without the causal filter: run mode traces seccomp
 * stops for nested.c's filter. Test: scenario 25. */
void sup_seccomp_foreign(struct sup_session *s, struct sup_thread *t)
{
	struct user_regs_struct regs;

	s->pstats.seccomp_foreign++;
	if (sup_thread_regs_of(t, &regs) == 0) {
		regs.orig_rax = (unsigned long long)-1LL;
		regs.rax = (unsigned long long)-ENOSYS;
		sup_thread_set_regs(t, &regs);
	}
	sup_thread_resume(t, resume_request(t), 0);
}

/* t stopped where it may pay (before an intercepted call, at a trap, at
 * an interrupt in user code; now: when it stopped running for psup): holds
 * it for what the hold hook says it owes, or resumes it at once. Where
 * delays are paid decides what a virtual speedup shows (t5050): -vv says
 * where (the printf-style rest), per payment. */
static bool __attribute__((format(printf, 4, 5)))
pay_or_resume(struct sup_session *s, struct sup_thread *t, uint64_t now, const char *fmt, ...)
{
	uint64_t ns = s->pause_hooks.hold ? s->pause_hooks.hold(s->pause_hooks.arg, t->tid, false) : 0;

	if (ns && psup_log_level >= PSUP_LOG_TRACE) {
		char where[64];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(where, sizeof(where), fmt, ap);
		va_end(ap);
		pr_trace("pause: %d pays %llu us %s", t->tid, (unsigned long long)(ns / 1000), where);
	}
	if (ns && hold(s, t, ns, now))
		return true;
	sup_thread_resume(t, resume_request(t), 0);
	return true;
}

static bool on_seccomp(struct sup_session *s, struct sup_thread *t)
{
	const struct __ptrace_syscall_info *info;
	unsigned long msg = 0;
	uint64_t now = psup_now_ns();
	bool want_exit = false;

	/* One request, not two: the filter's data (whose filter stopped it)
	 * comes with the call's number and arguments, read once per stop
	 * (nested.c looked at it first). Every request on a stopped thread
	 * is a system call on psup's side of the stop, which a futex hand-off
	 * of the program waits for. */
	info = sup_thread_syscall_info(t);
	if (info && info->op != PTRACE_SYSCALL_INFO_SECCOMP)
		info = NULL;
	if (info)
		msg = (unsigned long)info->seccomp.ret_data;
	else if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0L, &msg) < 0)
		return false;
	if (msg != SUP_SECCOMP_DATA) {
		sup_seccomp_foreign(s, t);
		return true;
	}
	s->pstats.seccomp_stops++;
	t->sysexit_nr = -1;
	if (info) {
		uint64_t args[6];
		for (int i = 0; i < 6; i++)
			args[i] = info->seccomp.args[i];
		if (s->pause_hooks.syscall_enter)
			want_exit = s->pause_hooks.syscall_enter(s->pause_hooks.arg, t->tid,
								 (int)info->seccomp.nr, args);
		t->sysexit_nr = (int)info->seccomp.nr;
	}
	if (want_exit)
		t->flags |= SUP_THREAD_SYSEXIT;
	else
		t->flags &= ~SUP_THREAD_SYSEXIT;
	/* Coz 3.4.2: owed delays are executed before the call. */
	return pay_or_resume(s, t, now, "before call %d (arg1 %#llx)", t->sysexit_nr,
			     (unsigned long long)(info ? info->seccomp.args[1] : 0));
}

static bool on_syscall_stop(struct sup_session *s, struct sup_thread *t)
{
	const struct __ptrace_syscall_info *info;

	if (!(t->flags & SUP_THREAD_SYSEXIT))
		return false;
	info = sup_thread_syscall_info(t);
	if (!info) {
		t->flags &= ~SUP_THREAD_SYSEXIT;
		sup_thread_resume(t, PTRACE_CONT, 0);
		return true;
	}
	if (info->op == PTRACE_SYSCALL_INFO_EXIT) {
		/* The exit of the awaited call, or of restart_syscall standing
		 * in for it after an interrupt (a wait with a timeout). A
		 * call made by a signal handler meanwhile is not it. */
		int nr = t->sysexit_nr;
		long cur = -1;
		struct user_regs_struct regs;
		if (sup_thread_regs_of(t, &regs) == 0)
			cur = (long)regs.orig_rax;
		if (cur == nr || cur == SYS_restart_syscall || cur < 0) {
			t->flags &= ~SUP_THREAD_SYSEXIT;
			if (s->pause_hooks.syscall_exit)
				s->pause_hooks.syscall_exit(s->pause_hooks.arg, t->tid, nr,
							    info->exit.rval);
			/* Coz 3.4.1: what a wait for I/O or time let
			 * accumulate is paid as it returns. */
			return pay_or_resume(s, t, psup_now_ns(), "after call %d", nr);
		}
	}
	sup_thread_resume(t, resume_request(t), 0);
	return true;
}

bool sup_pause_on_stop(struct sup_session *s, struct sup_thread *t, const struct sup_stop *st)
{
	uint64_t now;

	if (t->flags & SUP_THREAD_HELD) {
		/* A held thread stopped again: it was made to leave the hold
		 * (SIGKILL from an exit_group). The hold is over. */
		end_hold(s, t, psup_now_ns(), false, false);
	}
	switch (st->kind) {
	case SUP_STOP_SECCOMP:
		if (!s->causal_filter)
			return false;
		return on_seccomp(s, t);
	case SUP_STOP_SYSCALL:
		return on_syscall_stop(s, t);
	case SUP_STOP_SIGNAL: {
		siginfo_t si;
		if (!s->pause_hooks.trap || sup_thread_siginfo(s, t->tid, &si) < 0 ||
		    !s->pause_hooks.trap(s->pause_hooks.arg, t->tid, &si))
			return false;
		/* A trap of the pause hooks (a debt paid at a mutex unlock):
		 * the program never sees it. */
		s->pstats.trap_stops++;
		return pay_or_resume(s, t, psup_now_ns(), "at its unlock trap");
	}
	case SUP_STOP_EVENT_STOP:
		if (!(t->flags & SUP_THREAD_PAUSE_PENDING))
			return false;
		t->flags &= ~SUP_THREAD_PAUSE_PENDING;
		now = psup_now_ns();
		s->pstats.interrupt_ns += now - t->pause_t0;
		if (in_blocking_call(t)) {
			/* Blocked (or blocking) since the request: holding it
			 * would change nothing for it, and its debt is paid
			 * or credited when it comes back. */
			s->pstats.skipped++;
			if (s->pause_hooks.hold)
				s->pause_hooks.hold(s->pause_hooks.arg, t->tid, true);
			sup_thread_restart_interrupted(t);
			sup_thread_resume(t, resume_request(t), 0);
			return true;
		}
		/* The hold counts from the stop, not from the request: a thread
		 * waiting for a CPU meanwhile was not progressing anyway, and a
		 * running one stops within microseconds of the request. */
		if (s->pause_hooks.interrupted)
			s->pause_hooks.interrupted(s->pause_hooks.arg, t->tid, now);
		return pay_or_resume(s, t, now, "at an interrupt");
	default:
		return false;
	}
}

void sup_pause_release_all(struct sup_session *s)
{
	release_due(s, true);
}

void sup_pause_release(struct sup_session *s)
{
	if (s->pausefd >= 0)
		close(s->pausefd);
	s->pausefd = -1;
	free(s->held);
	s->held = NULL;
	s->nheld = s->capheld = 0;
}
