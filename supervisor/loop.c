#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* Give up detaching after this long: a thread that never stops again would
 * otherwise hang psup (rule 6: never wait for a stop that cannot come). On
 * psup's exit the kernel detaches whatever is left. */
#define SUP_DETACH_TIMEOUT_NS (5ULL * 1000000000ULL)

/* A new thread held in its first stop for its creator's clone or fork event
 * (await_creator()) goes without it after this long. The creator is
 * runnable when its child first stops; only a machine busy enough to leave
 * it waiting for a CPU for this long (or a creator psup lets go of) makes
 * the child pay it. */
#define SUP_AWAIT_CREATOR_NS (200ULL * 1000000ULL)

static const int sup_signals[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void on_signals(void *arg, int fd);
static void on_tick(void *arg, int fd);
static void on_duration(void *arg, int fd);

int sup_session_init(struct sup_session *s, bool attach_mode)
{
	sigset_t set;
	int err;

	s->attach_mode = attach_mode;
	s->test_clone_wait = getenv("PSUP_TEST_CLONE_WAIT") != NULL;
	s->test_creator_late = getenv("PSUP_TEST_CREATOR_LATE") ? atoi(getenv("PSUP_TEST_CREATOR_LATE")) : 0;
	s->epfd = s->sigfd = s->tickfd = s->durfd = s->exec_err_fd = -1;
	s->pausefd = s->told_pidfd = -1;
	s->sched_old = -1;
	psup_u64map_init(&s->threads);
	psup_u64map_init(&s->procs);
	psup_u64map_init(&s->watches);

	sigemptyset(&set);
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(sup_signals); i++)
		sigaddset(&set, sup_signals[i]);
	/* psup's own signals are read from a signalfd by the loop; a spawned
	 * child restores the mask psup started with before exec. They stay
	 * blocked after the session: a second SIGTERM (timeout(1) sends one to
	 * psup and one to its process group) arriving once the loop is over
	 * would otherwise kill psup while it writes the record's end. Test:
	 * t3030-leader-exit. */
	static sigset_t start_mask;
	static bool start_mask_saved;
	sigset_t prev;

	if (sigprocmask(SIG_BLOCK, &set, &prev) < 0)
		return -errno;
	if (!start_mask_saved) {
		start_mask = prev;
		start_mask_saved = true;
	}
	s->old_mask = start_mask;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd < 0)
		return -errno;
	err = sup_session_watch(s, s->sigfd, on_signals, s);
	if (err < 0)
		return err;
	return 0;
}

static void free_dead_watches(struct sup_session *s)
{
	while (s->dead_watches) {
		struct sup_watch *w = s->dead_watches;
		s->dead_watches = w->next_dead;
		free(w);
	}
}

void sup_session_release(struct sup_session *s)
{
	for (size_t i = 0; i < s->threads.cap; i++) {
		struct sup_thread *t = (struct sup_thread *)(uintptr_t)s->threads.vals[i];

		if (s->threads.keys[i] && t) {
			free(t->stack);
			free(t);
		}
	}
	for (size_t i = 0; i < s->procs.cap; i++)
		if (s->procs.keys[i])
			free((void *)(uintptr_t)s->procs.vals[i]);
	for (size_t i = 0; i < s->watches.cap; i++)
		if (s->watches.keys[i] && s->watches.vals[i])
			free((void *)(uintptr_t)s->watches.vals[i]);
	sup_pause_release(s);
	free_dead_watches(s);
	psup_u64map_release(&s->threads);
	psup_u64map_release(&s->procs);
	psup_u64map_release(&s->watches);
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (s->tickfd >= 0)
		close(s->tickfd);
	if (s->durfd >= 0)
		close(s->durfd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->exec_err_fd >= 0)
		close(s->exec_err_fd);
	if (s->told_pidfd >= 0)
		close(s->told_pidfd);
}

int sup_session_watch(struct sup_session *s, int fd, void (*cb)(void *arg, int fd), void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sup_watch *w = calloc(1, sizeof(*w));
	uint64_t *slot;

	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->cb = cb;
	w->arg = arg;
	slot = psup_u64map_upsert(&s->watches, (uint64_t)fd + 1, NULL);
	if (!slot) {
		free(w);
		return -ENOMEM;
	}
	if (*slot) {
		/* A stale watch of a closed, reused fd number. */
		struct sup_watch *old = (struct sup_watch *)(uintptr_t)*slot;
		old->dead = true;
		old->next_dead = s->dead_watches;
		s->dead_watches = old;
	}
	*slot = (uintptr_t)w;
	ev.data.ptr = w;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		if (err == -EEXIST && epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
			return 0;
		*slot = 0;
		free(w);
		return err;
	}
	return 0;
}

void sup_session_unwatch(struct sup_session *s, int fd)
{
	uint64_t *slot = psup_u64map_find(&s->watches, (uint64_t)fd + 1);
	struct sup_watch *w;

	if (!slot || !*slot)
		return;
	w = (struct sup_watch *)(uintptr_t)*slot;
	*slot = 0;
	if (!w->hung_up)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
	/* Events for w may still be in the batch being dispatched: free it
	 * after the batch. */
	w->dead = true;
	w->next_dead = s->dead_watches;
	s->dead_watches = w;
}

static struct itimerspec timer_spec(uint64_t first_ns, uint64_t period_ns)
{
	return (struct itimerspec){
		.it_value = { (time_t)(first_ns / 1000000000ULL), (long)(first_ns % 1000000000ULL) },
		.it_interval = { (time_t)(period_ns / 1000000000ULL), (long)(period_ns % 1000000000ULL) },
	};
}

static int timer_fd(uint64_t first_ns, uint64_t period_ns)
{
	struct itimerspec its = timer_spec(first_ns, period_ns);
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int sup_session_set_tick(struct sup_session *s, uint64_t period_ns, void (*cb)(void *arg), void *arg)
{
	int fd = timer_fd(period_ns, period_ns);

	if (fd < 0)
		return fd;
	if (s->tickfd >= 0) {
		sup_session_unwatch(s, s->tickfd);
		close(s->tickfd);
	}
	s->tickfd = fd;
	s->tick_cb = cb;
	s->tick_arg = arg;
	return sup_session_watch(s, fd, on_tick, s);
}

int sup_session_tick_period(struct sup_session *s, uint64_t period_ns)
{
	struct itimerspec its = timer_spec(period_ns, period_ns);

	if (s->tickfd < 0 || !period_ns)
		return -EINVAL;
	return timerfd_settime(s->tickfd, 0, &its, NULL) < 0 ? -errno : 0;
}

void sup_session_set_duration(struct sup_session *s, uint64_t duration_ns)
{
	int fd;

	if (!duration_ns)
		return;
	fd = timer_fd(duration_ns, 0);
	if (fd < 0) {
		pr_warn("cannot arm the duration timer: %s", strerror(-fd));
		return;
	}
	s->durfd = fd;
	if (sup_session_watch(s, fd, on_duration, s) < 0)
		pr_warn("cannot watch the duration timer");
}

static void drain_fd(int fd)
{
	uint64_t buf[16];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void on_tick(void *arg, int fd)
{
	struct sup_session *s = arg;

	s->lstats.timers++;
	drain_fd(fd);
	if (s->tick_cb)
		s->tick_cb(s->tick_arg);
}

static void begin_stop(struct sup_session *s, const char *reason);

static void on_duration(void *arg, int fd)
{
	struct sup_session *s = arg;

	s->lstats.timers++;
	drain_fd(fd);
	pr_info("duration reached, detaching");
	begin_stop(s, "duration");
}

void sup_thread_resume(struct sup_thread *t, int request, int sig)
{
	/* What was read of it at this stop is stale once it runs. */
	t->si_valid = t->sci_valid = t->regs_valid = t->stack_valid = false;
	if (ptrace(request, t->tid, 0L, (long)sig) < 0 && errno != ESRCH)
		pr_debug("ptrace(%d) on %d: %s", request, t->tid, strerror(errno));
}

/* Stop the session: attach mode (and run mode asked by the command) detach
 * every thread; the target runs on. */
static void begin_stop(struct sup_session *s, const char *reason)
{
	if (s->stopping)
		return;
	s->stopping = true;
	s->stop_reason = reason;
	s->stop_deadline = psup_now_ns() + SUP_DETACH_TIMEOUT_NS;
	sup_pause_release_all(s); /* a held thread detaches at its next stop */
	sup_detach_begin(s);
	if (!s->nthreads)
		s->done = true;
}

void sup_session_request_stop(struct sup_session *s)
{
	s->stop_requested = true;
}

/*
 * A SIGTRAP of a debug exception that is none of the program's: psup's
 * hardware breakpoints (progress points, unlock traps) count or signal
 * through perf and never reach the program, but on these KVM guests about
 * one visit in a million raises a #DB whose DR6 names no cause.
 * The kernel then takes it for an ICEBP (int1) instruction and sends the
 * thread a SIGTRAP (si_code TRAP_BRKPT, si_addr the breakpoint's address),
 * which killed the program: t5160's 60,000-visit point, 18 runs in 120 at
 * e084cba. A #DB with a cause psup's perf breakpoints did not claim
 * (TRAP_HWBKPT) cannot be the program's either: it cannot set debug
 * registers in threads psup traces. A real int1 is told by its 0xf1 byte
 * just before si_addr (a trap, as on Intel), or at si_addr (AMD KVM guests
 * report it as a fault: the thread's ip is still on the int1, 2026-11-26),
 * and is delivered like any other signal; unless si_addr is one of psup's
 * own breakpoints in that thread, whose instruction may follow one that
 * ends in 0xf1 (mov %rsi,%rcx is 48 89 f1). The dropped visit still
 * counts: nothing set RF, so the instruction runs again and its breakpoint
 * fires again.
 */
static bool stray_debug_trap(struct sup_session *s, pid_t tid)
{
	siginfo_t si;
	uint8_t code[2];

	if (sup_thread_siginfo(s, tid, &si) < 0)
		return false;
	if (si.si_code == TRAP_BRKPT) {
		uint64_t at = (uint64_t)(uintptr_t)si.si_addr;
		bool int1 = sup_thread_read(s, tid, at - 1, code, 2) != 2 || code[0] == 0xf1 ||
			    code[1] == 0xf1;

		if (int1 && !(s->hooks.own_breakpoint && s->hooks.own_breakpoint(s->hooks.arg, tid, at)))
			return false;
	} else if (si.si_code != TRAP_HWBKPT) {
		return false;
	}
	pr_debug("thread %d: a debug exception with no cause of the program's at %p (si_code %d): "
		 "its SIGTRAP dropped",
		 tid, si.si_addr, si.si_code);
	return true;
}

static void root_ended(struct sup_session *s, int status, int sig, bool core)
{
	s->result.exited = true;
	s->result.status = sig ? -1 : status;
	s->result.signal = sig;
	s->result.core = core;
	if (!s->result.reason)
		s->result.reason = "exit";
	if (!s->exec_seen && s->exec_err_fd >= 0) {
		int e = 0;
		if (read(s->exec_err_fd, &e, sizeof(e)) == (ssize_t)sizeof(e))
			s->result.exec_errno = e;
	}
}

/* SUP_ATTACH_NO_STOPS: the process's pidfd is no longer watched. */
static void told_pidfd_close(struct sup_session *s)
{
	if (s->told_pidfd < 0)
		return;
	sup_session_unwatch(s, s->told_pidfd);
	close(s->told_pidfd);
	s->told_pidfd = -1;
}

static void process_ended(struct sup_session *s, pid_t pid, int status, int sig, bool core)
{
	struct sup_process *p = sup_process_find(s, pid);

	if (p) {
		if (p->ended)
			return;
		p->ended = true;
		/* Its threads are gone: forget it, so fork storms do not grow
		 * the table. */
		if (!p->nthreads) {
			psup_u64map_remove(&s->procs, (uint64_t)pid);
			free(p);
		}
	}
	pr_debug("process %d ended: status %d signal %d", pid, status, sig);
	if (s->hooks.process_exit)
		s->hooks.process_exit(s->hooks.arg, pid, sig ? -1 : status, sig);
	if (pid == s->root) {
		/* (SUP_ATTACH_NO_STOPS: its end is known, the pidfd has
		 * nothing more to say.) */
		told_pidfd_close(s);
		root_ended(s, status, sig, core);
		/* Run mode: the target is done. Descendants still traced are
		 * detached and keep running (EXITKILL would kill them if psup
		 * exited while tracing them). */
		if (!s->attach_mode && s->nthreads && !s->causal_filter)
			begin_stop(s, "exit");
	}
}

static void await_end(struct sup_session *s, struct sup_thread *t, bool stopped);

/* The leader t, not traced any more, stays known for its process's end;
 * the process's execs are told by the records. */
static void leader_let_go(struct sup_session *s, struct sup_thread *t)
{
	struct sup_process *p = sup_process_find(s, t->pid);

	t->flags |= SUP_THREAD_LET_GO;
	if (p)
		p->exec_stops_from = EXEC_STOPS_NOT_YET;
}

/*
 * SUP_SPAWN_NO_STOPS: the root at the exec of the program, its hooks done
 * and still without the options of stops (sup_session_stops_back()), is let
 * go of: the caller learns everything else from the records, and a traced
 * root stopped at each of its signals (a shell's SIGCHLD at each child's
 * end: 1,000 wait statuses and resumes for a loop of 1,000 commands). It
 * stays psup's child: its end is the wait status a parent gets, and it dies
 * with psup (PR_SET_PDEATHSIG, set before its exec, in place of EXITKILL).
 * Its later execs are told by the records. true: let go.
 */
static bool let_go_root(struct sup_session *s, struct sup_thread *t)
{
	/* (stops_opts: SUP_SPAWN_NO_STOPS, whose root has PR_SET_PDEATHSIG,
	 * and no stops given back.) */
	if (t->tid != s->root || !s->stops_opts ||
	    (t->flags & (SUP_THREAD_DETACHING | SUP_THREAD_STEPPING | SUP_THREAD_SYSEXIT)))
		return false;
	if (ptrace(PTRACE_DETACH, t->tid, 0L, 0L) < 0) {
		pr_debug("letting go of %d: %s", t->tid, strerror(errno));
		return false;
	}
	leader_let_go(s, t);
	pr_debug("process %d let go of after its exec: its threads and children are told by the records",
		 t->pid);
	return true;
}

/*
 * SUP_ATTACH_NO_STOPS: a thread at a stop (its thread_new hook run: its
 * events open, inherited by the threads it creates from now on). Another
 * than the leader is let go of with the signal it stopped for, and
 * forgotten without a thread_gone (the caller keeps it: its exit record
 * ends it). An interrupt stop's broken call is restarted first, as at a
 * detach; debug registers are psup's only in modes that keep the stops.
 * The leader stays traced, its TRACECLONE taken away: its death status is
 * the process's, with its exit status (psup is not its parent), and its
 * execs stop as before. A thread that never stops keeps its TRACECLONE:
 * its next thread costs it a clone stop, where it loses it. true: let go.
 */
static bool let_go_attached(struct sup_session *s, struct sup_thread *t, const struct sup_stop *st, int sig)
{
	if (!s->attach_told || s->stopping ||
	    (t->flags & (SUP_THREAD_DETACHING | SUP_THREAD_STEPPING | SUP_THREAD_SYSEXIT | SUP_THREAD_AWAIT_CREATOR |
			 SUP_THREAD_EXITING)))
		return false;
	if (t->tid == t->pid) {
		if (t->flags & SUP_THREAD_NO_CLONES)
			return false;
		if (ptrace(PTRACE_SETOPTIONS, t->tid, 0L, s->root_opts & ~PTRACE_O_TRACECLONE) == 0)
			t->flags |= SUP_THREAD_NO_CLONES;
		else
			pr_debug("options of %d: %s", t->tid, strerror(errno));
		return false;
	}
	if (st->kind == SUP_STOP_EVENT_STOP)
		sup_thread_restart_interrupted(t);
	sup_thread_mask_restore(t);
	if (ptrace(PTRACE_DETACH, t->tid, 0L, (long)sig) < 0) {
		pr_debug("letting go of %d: %s", t->tid, strerror(errno));
		return false;
	}
	t->flags &= ~SUP_THREAD_REPORTED;
	sup_thread_remove(s, t, false);
	return true;
}

#define ATTACH_END_WAIT_US 20000
static void attach_leader_gone(struct sup_session *s);
static void wait_all(struct sup_session *s);
static void dispatch(struct sup_session *s, pid_t tid, int status);

/*
 * SUP_ATTACH_NO_STOPS: the process's pidfd is readable: every thread of it
 * has exited. The leader psup traces reports its death with its status:
 * collected here, or on its way. Otherwise the process ends here, without
 * a status: an exec by a thread psup does not trace took its leader
 * (attach_leader_gone()). (A zombie leader at the attach keeps the stops.)
 */
static pid_t reap(struct sup_session *s, pid_t pid, int *status);

static void attach_told_end(void *arg, int fd)
{
	struct sup_session *s = arg;
	struct sup_thread *t;
	char state;

	wait_all(s);
	/* A traced leader's death comes within microseconds of its group's
	 * end: looked for up to ATTACH_END_WAIT_US, after which the pidfd,
	 * still readable, asks again. */
	for (unsigned waited = 0;; waited += 200) {
		bool traced;
		int status;
		pid_t w;

		if (s->result.exited) {
			if (!s->nthreads)
				s->done = true;
			return;
		}
		t = sup_thread_find(s, s->root);
		traced = t && !(t->flags & SUP_THREAD_LET_GO);
		w = traced ? reap(s, s->root, &status) : -1;
		if (w == s->root) {
			dispatch(s, w, status); /* its death, with its status */
			continue;
		}
		/* (Not over after all: its leader went at an exec. The pidfd
		 * says whether the process is there, whatever now has its
		 * id; /proc, whether it is a zombie.) */
		bool alive = syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0 &&
			     sup_proc_state(s->root, &state) == 0 && state != 'Z' && state != 'X';
		if (alive) {
			if (traced && w < 0)
				attach_leader_gone(s);
			return;
		}
		if (w != 0)
			break; /* over, and no status will come */
		if (waited >= ATTACH_END_WAIT_US)
			return;
		usleep(200);
	}
	t = sup_thread_find(s, s->root);
	if (t)
		sup_thread_remove(s, t, true);
	process_ended(s, s->root, SUP_STATUS_UNKNOWN, 0, false); /* closes the pidfd */
	if (!s->nthreads)
		s->done = true;
}

int sup_session_watch_end(struct sup_session *s, pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	if (sup_session_watch(s, fd, attach_told_end, s) < 0) {
		close(fd);
		return -ENOMEM;
	}
	s->told_pidfd = fd;
	return 0;
}

bool sup_session_told(const struct sup_session *s)
{
	return s && (s->attach_told || s->stops_opts);
}

/*
 * A stop of a thread of the root psup let go of: it asked its parent, psup,
 * to trace it (PTRACE_TRACEME, as an anti-debugging check does), which
 * succeeded as it would without psup. It goes again at once, with its
 * signal; not with the SIGTRAP that its next exec raises for a tracer
 * without options (si_code SI_USER from the process itself), which would
 * kill it.
 */
static void let_go_again(pid_t tid, const struct sup_stop *st)
{
	int go = st->kind == SUP_STOP_SIGNAL ? st->sig : 0;
	siginfo_t si;

	if (go == SIGTRAP && ptrace(PTRACE_GETSIGINFO, tid, 0L, &si) == 0 && si.si_code == SI_USER)
		go = 0;
	if (ptrace(PTRACE_DETACH, tid, 0L, (long)go) < 0)
		pr_debug("letting go of %d again: %s", tid, strerror(errno));
}

static void on_thread_death(struct sup_session *s, pid_t tid, const struct sup_stop *st)
{
	struct sup_thread *t = sup_thread_find(s, tid);
	pid_t pid;

	if (!t) {
		/* A thread dropped by an exec (rule 9), or one we never knew. */
		pr_trace("exit of unknown %d", tid);
		return;
	}
	pid = t->pid;
	/* Killed while held for its creator's event: reported first, so
	 * that its end (and its process's) has a start. */
	if (t->flags & SUP_THREAD_AWAIT_CREATOR)
		await_end(s, t, false);
	sup_thread_remove(s, t, true);
	/* A leader's status is reported once the whole group is gone
	 * (delay_group_leader); it is the process's. Test: t1150-leader-exit. */
	if (tid == pid)
		process_ended(s, pid, st->status, st->kind == SUP_STOP_KILLED ? st->sig : 0, st->core);
	else {
		struct sup_process *p = sup_process_find(s, pid);
		/* Attach mode never saw a zombie leader: the process ends with
		 * its last seized thread (not without stops, which such a
		 * process does not get; its pidfd says). */
		if (p && !p->nthreads && s->attach_mode && !s->attach_told && !sup_thread_find(s, pid))
			process_ended(s, pid, st->status, st->kind == SUP_STOP_KILLED ? st->sig : 0,
				      st->core);
	}
}

static unsigned long event_msg(pid_t tid)
{
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, tid, 0L, &msg) < 0)
		return 0;
	return msg;
}

/* The ptrace options of t's process's threads: those it was seized with
 * (the root), or a descendant's (run mode). */
static long process_opts(const struct sup_session *s, const struct sup_thread *t)
{
	return s->attach_mode || t->pid == s->root ? s->root_opts : s->desc_opts;
}

/* t, a thread without exec stops, gets them: its process is getting
 * another thread. */
static void exec_stops_back(struct sup_session *s, struct sup_thread *t, long opts)
{
	struct sup_process *p = sup_process_find(s, t->pid);

	if (ptrace(PTRACE_SETOPTIONS, t->tid, 0L, opts | PTRACE_O_TRACEEXEC) < 0)
		pr_debug("options of %d: %s", t->tid, strerror(errno));
	t->flags &= ~SUP_THREAD_NO_EXEC;
	if (p && p->exec_stops_from == EXEC_STOPS_NOT_YET)
		p->exec_stops_from = psup_now_ns();
}

/* A thread or process created by t (clone, fork, vfork). Its own first stop
 * may have arrived already (rule 10). */
static void adopt_child(struct sup_session *s, struct sup_thread *t, pid_t child, bool is_process)
{
	struct sup_thread *c = sup_thread_find(s, child);
	/* The kernel copied the creator's options, as they were, into the
	 * child (ptrace_init_task()). */
	bool inherit_no_exec = t->flags & SUP_THREAD_NO_EXEC;

	if (!child)
		return;
	if (!is_process && syscall(SYS_tgkill, t->pid, child, 0) < 0) {
		/* clone(): a thread unless it made a new thread group (raw
		 * clone without CLONE_THREAD). tgkill's signal 0 says whether
		 * the child is in the creator's thread group in one system
		 * call, where reading /proc/PID/status (some fifty lines
		 * rendered) took ~15 us of the creator's clone stop; /proc
		 * decides what it cannot (the child killed already, another
		 * user's). Test: t3200-raw-clone. */
		struct sup_proc_status ps;
		is_process = sup_proc_status(child, &ps) == 0 && ps.tgid == child;
	}
	/* A process's second thread: its execs stop again (its new thread
	 * gets them at its first stop, first_stop_options()). */
	if (!is_process && inherit_no_exec)
		exec_stops_back(s, t, process_opts(s, t));
	if (c) {
		if (!c->parent)
			c->parent = t->tid;
		/* Held in its first stop (await_creator()): set up as if its
		 * stop came now. */
		if ((c->flags & SUP_THREAD_AWAIT_CREATOR) && inherit_no_exec)
			c->flags |= SUP_THREAD_NO_EXEC;
		/* A child of a thread psup lets go of goes too (nested.c). */
		if ((t->flags & SUP_THREAD_DETACHING) && !(c->flags & SUP_THREAD_DETACHING)) {
			c->flags |= SUP_THREAD_DETACHING;
			ptrace(PTRACE_INTERRUPT, c->tid, 0L, 0L);
		}
		sup_thread_report(s, c, is_process);
		return;
	}
	c = sup_thread_add(s, child, is_process ? child : t->pid, t->tid);
	if (!c) {
		pr_err("out of memory tracking thread %d", child);
		return;
	}
	if (inherit_no_exec)
		c->flags |= SUP_THREAD_NO_EXEC;
	if (s->stopping || (t->flags & SUP_THREAD_DETACHING))
		c->flags |= SUP_THREAD_DETACHING;
	sup_thread_report(s, c, is_process);
}

/* Rule 9: after an exec, only the execing thread lives on, as pid. Every
 * other thread of the process is gone, and per-thread state (perf fds) is
 * reset: report them all gone, then the survivor anew. True when the
 * survivor was resumed here, before the hooks (exec_may_run). */
static bool on_exec(struct sup_session *s, struct sup_thread *t)
{
	pid_t pid = t->pid;
	pid_t old_tid = (pid_t)event_msg(t->tid);
	bool detaching = t->flags & SUP_THREAD_DETACHING;
	pid_t parent = t->parent;
	struct user_regs_struct regs;
	bool have_regs, resumed;

	/* t may be a leader another thread's exec removed, its registers
	 * read at an earlier stop: the survivor's are new. */
	t->regs_valid = false;
	have_regs = sup_thread_regs_of(t, &regs) == 0;
	if (!old_tid)
		old_tid = t->tid;
	pr_debug("process %d exec (by thread %d)", pid, old_tid);
	s->exec_pid = pid;
	s->exec_ip = have_regs ? regs.rip : 0;
	s->exec_ns = psup_now_ns();
	/* Its new program starts while psup reports the exec: the hooks'
	 * work (the old program's last records drained, its thread's record,
	 * the new program's path) was 60-90 us of every exec stop of a
	 * fork/exec storm. A leader that stays a leader keeps its options. */
	resumed = old_tid == pid && pid != s->root && !detaching &&
		  !(t->flags & (SUP_THREAD_STEPPING | SUP_THREAD_SYSEXIT)) && s->hooks.exec_may_run &&
		  s->hooks.exec_may_run(s->hooks.arg, pid);
	if (resumed) {
		sup_thread_resume(t, PTRACE_CONT, 0);
		s->lstats.exec_early++;
	}
	for (size_t i = 0; i < s->threads.cap; i++) {
		if (!s->threads.keys[i])
			continue;
		struct sup_thread *o = (struct sup_thread *)(uintptr_t)s->threads.vals[i];
		if (o && o->pid == pid) {
			sup_thread_remove(s, o, true);
			i = (size_t)-1; /* removal moves entries: rescan */
		}
	}
	if (s->hooks.exec)
		s->hooks.exec(s->hooks.arg, pid, old_tid);
	t = sup_thread_add(s, pid, pid, parent);
	if (!t) {
		s->exec_pid = 0;
		return resumed;
	}
	t->flags |= SUP_THREAD_SEEN_STOP | (detaching ? SUP_THREAD_DETACHING : 0);
	/* Still at the same stop: the hooks ask for them again. */
	t->regs = regs;
	t->regs_valid = have_regs && !resumed;
	/* A thread other than the leader that execs becomes the leader with
	 * its own options: the leader's exit stop comes back (rule 9,
	 * first_stop_options()). Test: t3040-exec-from-thread. */
	if (old_tid != pid && !s->hooks.thread_exit_stops &&
	    ptrace(PTRACE_SETOPTIONS, pid, 0L, process_opts(s, t)) < 0)
		pr_debug("options of %d: %s", pid, strerror(errno));
	if (pid == s->root)
		s->exec_seen = true;
	sup_thread_report(s, t, false);
	s->exec_pid = 0;
	return resumed;
}

void sup_session_no_exit_stops(struct sup_session *s)
{
	/* A process the root forks is given these at its first stop, and
	 * the kernel copies them into the processes its descendants fork
	 * and into every thread's clone (first_stop_options()). */
	if (!s || s->attach_mode)
		return;
	s->desc_opts &= ~PTRACE_O_TRACEEXIT;
	if (ptrace(PTRACE_SETOPTIONS, s->root, 0L, s->root_opts & ~PTRACE_O_TRACEEXIT) == 0)
		s->root_opts &= ~PTRACE_O_TRACEEXIT;
	else
		pr_debug("options of %d: %s", s->root, strerror(errno));
}

int sup_session_stops_back(struct sup_session *s)
{
	if (!s || !s->stops_opts)
		return 0;
	if (ptrace(PTRACE_SETOPTIONS, s->root, 0L, s->root_opts | s->stops_opts) < 0)
		return -errno;
	s->root_opts |= s->stops_opts;
	s->desc_opts |= s->stops_opts;
	s->stops_opts = 0;
	return 0;
}

void sup_session_no_exec_stops(struct sup_session *s)
{
	if (s && !s->attach_mode)
		s->no_exec_stops = true;
}

/*
 * SUP_ATTACH_NO_STOPS: whether the traced leader is gone without a death
 * (an exec by a thread psup let go of or never traced took its id; the
 * kernel released the old leader silently): then it is let go of, and its
 * process's execs are told by the records. Asked when the records tell an
 * exec, which completed by then (the old leader resumed from its exit stop
 * and released). WNOWAIT: a status waiting is left for the loop.
 */
static void attach_leader_gone(struct sup_session *s)
{
	struct sup_thread *t = sup_thread_find(s, s->root);
	siginfo_t si;

	if (!t || (t->flags & SUP_THREAD_LET_GO))
		return;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)s->root, &si, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0 || errno != ECHILD)
		return;
	pr_debug("process %d exec'ed from a thread psup does not trace: its new program is told by the records",
		 s->root);
	leader_let_go(s, t);
}

bool sup_session_exec_stops(struct sup_session *s, pid_t pid, uint64_t time)
{
	struct sup_process *p;

	if (s && s->attach_told && pid == s->root)
		attach_leader_gone(s);
	p = s ? sup_process_find(s, pid) : NULL;
	return p && p->exec_stops_from <= time;
}

uint64_t sup_session_exec_entry(const struct sup_session *s, pid_t pid)
{
	return s && pid && s->exec_pid == pid ? s->exec_ip : 0;
}

uint64_t sup_session_exec_time(const struct sup_session *s, pid_t pid)
{
	return s && pid && s->exec_pid == pid ? s->exec_ns : psup_now_ns();
}

bool sup_session_in_exec(const struct sup_session *s, pid_t pid)
{
	return s && pid && s->exec_pid == pid;
}

struct sup_exec_told sup_session_exec_told(struct sup_session *s, struct sup_exec_told told)
{
	struct sup_exec_told before = { 0 };

	if (s) {
		before = (struct sup_exec_told){ .pid = s->exec_pid, .ns = s->exec_ns, .ip = s->exec_ip };
		s->exec_pid = told.pid;
		s->exec_ns = told.ns;
		s->exec_ip = told.ip;
	}
	return before;
}

/*
 * A thread's options at its first stop. A new process gets a descendant's
 * (no EXITKILL: t3055-vfork-wait). A thread other than a leader is let go
 * of at its exit without a stop (PTRACE_EVENT_EXIT) unless the hooks ask
 * for every exit stop: its death status ends it as well, one stop and one
 * resume fewer per thread (issue 20: spawn's 4 wait statuses per thread
 * became 3). The leader keeps its exit stop (a leader calling pthread_exit
 * stays a zombie the detach must know, t2070-attach-leader-exits; its maps
 * are read there, t1101-short-process-attributed) unless
 * sup_session_no_exit_stops() took it away, the root's too (the maps told
 * by mmap records; a zombie leader known from /proc).
 */
static void first_stop_options(struct sup_session *s, struct sup_thread *t)
{
	struct sup_thread *pt;
	long opts;

	if (t->tid == t->pid) {
		struct sup_process *p;

		if (s->attach_mode || t->pid == s->root)
			return;
		p = sup_process_find(s, t->pid);
		/* Forked by another descendant's leader: the kernel gave it
		 * the options of its creator (ptrace_init_task()), the same
		 * (one ptrace call, and its wait for the stopped thread, less
		 * per process of a fork/exec storm), exec stops or none as
		 * its creator had them then (adopt_child()). A creator with
		 * more threads had exec stops: its child, one thread, is
		 * given none (a call now, a stop less at its exec: node's and
		 * java's children). */
		pt = t->parent ? sup_thread_find(s, t->parent) : NULL;
		if (pt && pt->tid == pt->pid && pt->pid != s->root &&
		    (!s->no_exec_stops || (t->flags & SUP_THREAD_NO_EXEC))) {
			if (p && (t->flags & SUP_THREAD_NO_EXEC))
				p->exec_stops_from = EXEC_STOPS_NOT_YET;
			return;
		}
		opts = s->desc_opts;
		t->flags &= ~SUP_THREAD_NO_EXEC;
		if (s->no_exec_stops && p) {
			opts &= ~PTRACE_O_TRACEEXEC;
			t->flags |= SUP_THREAD_NO_EXEC;
			p->exec_stops_from = EXEC_STOPS_NOT_YET;
		}
	} else {
		struct sup_process *p = sup_process_find(s, t->pid);
		/* Made by a thread without exec stops, it has none either
		 * (adopt_child(); before its creator's clone stop, its process
		 * had that one thread): they come back, since the exec of a
		 * thread other than the leader must be seen (rule 9). */
		bool exec_back = (t->flags & SUP_THREAD_NO_EXEC) || (p && p->exec_stops_from == EXEC_STOPS_NOT_YET);

		opts = process_opts(s, t);
		/* Its creator had no exit stop (sup_session_no_exit_stops()):
		 * nor has it, copied in the clone. One ptrace call less before
		 * its resume: spawn's threads start about 10 us sooner. */
		if (!s->hooks.thread_exit_stops && (opts & PTRACE_O_TRACEEXIT)) {
			opts &= ~PTRACE_O_TRACEEXIT;
		} else if (!exec_back) {
			return;
		}
		if (exec_back) {
			exec_stops_back(s, t, opts);
			return;
		}
	}
	if (ptrace(PTRACE_SETOPTIONS, t->tid, 0L, opts) < 0)
		pr_debug("options of %d: %s", t->tid, strerror(errno));
}

static void dispatch(struct sup_session *s, pid_t tid, int status);

/*
 * Rule 10: a new thread's (or process's) first stop came before its
 * creator's clone or fork event; under load the creator may not have run
 * since its clone() returned in the kernel. Reported now, it would have no
 * creator: no creation context, no tid word for the join's blame, a process
 * with none of its parent's mappings (its samples [unknown] until /proc is
 * read). It is held in that stop, as it would be waiting for psup's answer
 * after its creator's stop, until the event comes (adopt_child(),
 * child_first_stop()) or, when the creator's process is not traced or
 * SUP_AWAIT_CREATOR_NS pass, reported without a creator. True when held.
 * Test: t3079-creator-late.
 */
static bool await_creator(struct sup_session *s, struct sup_thread *t, int status, bool new_process,
			  bool creator_traced)
{
	if (!creator_traced || s->stopping)
		return false;
	t->flags |= SUP_THREAD_AWAIT_CREATOR | (new_process ? SUP_THREAD_NEW_PROCESS : 0);
	t->first_status = status;
	t->await_until = psup_now_ns() + SUP_AWAIT_CREATOR_NS;
	if (!s->awaiting++ || t->await_until < s->await_next)
		s->await_next = t->await_until;
	s->lstats.creator_late++;
	return true;
}

/* A thread held by await_creator() goes on: reported (with its creator when
 * its event came) and, when still stopped, its first stop dispatched. */
static void await_end(struct sup_session *s, struct sup_thread *t, bool stopped)
{
	pid_t tid = t->tid;
	int status = t->first_status;
	bool new_process = t->flags & SUP_THREAD_NEW_PROCESS;

	t->flags &= ~(SUP_THREAD_AWAIT_CREATOR | SUP_THREAD_NEW_PROCESS);
	s->awaiting--;
	sup_thread_report(s, t, new_process);
	if (stopped)
		dispatch(s, tid, status);
}

/* The held threads whose creator's event did not come in time (all of them
 * when psup stops: they are then detached or killed as any other). */
static void await_expired(struct sup_session *s)
{
	uint64_t now = psup_now_ns();

	s->await_next = UINT64_MAX;
	for (size_t i = 0; s->awaiting && i < s->threads.cap; i++) {
		struct sup_thread *t = (struct sup_thread *)(uintptr_t)s->threads.vals[i];

		if (!s->threads.keys[i] || !t || !(t->flags & SUP_THREAD_AWAIT_CREATOR))
			continue;
		if (s->stopping || t->await_until <= now) {
			s->lstats.creator_never++;
			await_end(s, t, true);
			/* Its dispatch may add or remove entries: rescan. */
			s->await_next = UINT64_MAX;
			i = (size_t)-1;
		} else if (t->await_until < s->await_next) {
			s->await_next = t->await_until;
		}
	}
}

/* Dispatches child's status now: the one of the batch being dispatched, or
 * the next one (waited for when block). True when one was dispatched. */
static bool dispatch_now(struct sup_session *s, pid_t child, bool block)
{
	int status;
	pid_t r;

	for (size_t i = 0; i < s->nbatch; i++) {
		if (s->batch[i].tid == child && !s->batch[i].done) {
			s->batch[i].done = true;
			dispatch(s, child, s->batch[i].status);
			return true;
		}
	}
	do
		r = waitpid(child, &status, __WALL | (block ? 0 : WNOHANG));
	while (r < 0 && errno == EINTR);
	if (r != child)
		return false;
	s->lstats.statuses++;
	dispatch(s, child, status);
	return true;
}

/*
 * Once its creator is resumed from its clone (fork, vfork) stop, a new
 * thread whose first stop has come already, in the batch being dispatched
 * or since, is handled at once: it would otherwise wait for a second pass of
 * the loop (an epoll_wait, a signalfd read and a waitpid). The creator goes
 * first: resuming the new thread first started it ~25 us sooner on spawn,
 * but held its creator so long that the second thread of each round started
 * 200-270 us after the first instead of 40-50, and spawn 5000 took 2.9-3.1 s
 * instead of 2.3. The new thread was reported (thread_new) by adopt_child(),
 * so what must be ready before it runs is. True when a status was
 * dispatched. PSUP_TEST_CLONE_WAIT=1 waits for the first stop (a test hook:
 * every new thread is then resumed here; its death ends the wait too).
 */
static bool child_first_stop(struct sup_session *s, pid_t child)
{
	struct sup_thread *c = child ? sup_thread_find(s, child) : NULL;

	if (c && (c->flags & SUP_THREAD_AWAIT_CREATOR)) {
		if (s->test_creator_late == 2)
			return false;
		await_end(s, c, true);
		return true;
	}
	if (!c || (c->flags & SUP_THREAD_SEEN_STOP) || !dispatch_now(s, child, s->test_clone_wait))
		return false;
	s->lstats.early_first_stops++;
	return true;
}

static void dispatch(struct sup_session *s, pid_t tid, int status)
{
	struct sup_stop st;
	struct sup_thread *t;
	int sig = 0;
	int request = PTRACE_CONT;
	pid_t first_stop_child = 0;

	sup_stop_classify(status, &st);
	pr_trace("wait: %d %s sig=%d status=0x%x", tid, sup_stop_kind_name(st.kind), st.sig, status);
	if (st.kind == SUP_STOP_EXITED || st.kind == SUP_STOP_KILLED) {
		on_thread_death(s, tid, &st);
		return;
	}
	t = sup_thread_find(s, tid);
	if (!t) {
		/* Rule 10: a new thread's first stop can precede its
		 * creator's event. Adopt it, and wait for that event when
		 * the creator's process is traced (await_creator()). */
		struct sup_proc_status ps;
		bool have_ps = sup_proc_status(tid, &ps) == 0;
		pid_t tgid = have_ps ? ps.tgid : tid;
		struct sup_thread *rt = tgid == s->root ? sup_thread_find(s, s->root) : NULL;

		/* Another thread of the root psup let go of asked psup to
		 * trace it (PTRACE_TRACEME): it goes as the root would. */
		if (rt && (rt->flags & SUP_THREAD_LET_GO)) {
			let_go_again(tid, &st);
			return;
		}
		struct sup_process *p = sup_process_find(s, tgid);
		bool new_process = tgid == tid && !p;
		struct sup_process *from = new_process ? (have_ps ? sup_process_find(s, ps.ppid) : NULL) : p;
		bool creator_traced = from && from->nthreads && !from->ended;

		t = sup_thread_add(s, tid, tgid, 0);
		if (!t) {
			ptrace(PTRACE_CONT, tid, 0L, 0L);
			return;
		}
		if (s->stopping)
			t->flags |= SUP_THREAD_DETACHING;
		else if (await_creator(s, t, status, new_process, creator_traced))
			return;
		sup_thread_report(s, t, new_process);
	}
	if (t->flags & SUP_THREAD_LET_GO) {
		let_go_again(tid, &st);
		return;
	}
	if (!(t->flags & SUP_THREAD_SEEN_STOP))
		first_stop_options(s, t);
	t->flags |= SUP_THREAD_SEEN_STOP;
	/* The program traces a child of its own (nested.c). */
	if (st.kind == SUP_STOP_SECCOMP && !(t->flags & SUP_THREAD_DETACHING)) {
		if (sup_nested_on_seccomp(s, t))
			return;
		if (!s->causal_filter) {
			sup_seccomp_foreign(s, t);
			return;
		}
	}
	/* Causal profiling's stops (pause.c). */
	if (!(t->flags & SUP_THREAD_DETACHING) && sup_pause_on_stop(s, t, &st))
		return;

	if (t->drain_sig || t->mask_saved)
		sup_thread_drain_at_stop(s, t, st.kind == SUP_STOP_SIGNAL ? st.sig : 0);
	if (st.kind == SUP_STOP_EVENT_STOP && t->drain_sig == -1) {
		/* psup's own interrupt for a drain: a call it broke that the
		 * kernel does not restart is re-executed. */
		t->drain_sig = 0;
		sup_thread_restart_interrupted(t);
	}
	switch (st.kind) {
	case SUP_STOP_SIGNAL:
		/* Rule 11: the program's signals are delivered unchanged;
		 * psup's own (its sampling signal, its debug traps) are
		 * consumed by the command's hook. */
		sig = st.sig;
		if (s->hooks.signal_stop) {
			int act = s->hooks.signal_stop(s->hooks.arg, tid, sig);
			if (act & SUP_SIGNAL_SUPPRESS)
				sig = 0;
			if (act & SUP_SIGNAL_STEP)
				request = PTRACE_SINGLESTEP;
			t = sup_thread_find(s, tid);
			if (!t)
				return;
		}
		if (sig == SIGTRAP && stray_debug_trap(s, tid))
			sig = 0;
		break;
	case SUP_STOP_GROUP:
		if (t->flags & SUP_THREAD_DETACHING)
			break;
		/* Rule 3: keep job control working. */
		sup_thread_resume(t, PTRACE_LISTEN, 0);
		return;
	case SUP_STOP_CLONE:
	case SUP_STOP_FORK:
	case SUP_STOP_VFORK: {
		pid_t child = (pid_t)event_msg(tid);

		/* PSUP_TEST_CREATOR_LATE: its child's first stop goes
		 * first (rule 10's order, made certain). */
		if (s->test_creator_late && child && !sup_thread_find(s, child))
			dispatch_now(s, child, true);
		adopt_child(s, t, child, st.kind != SUP_STOP_CLONE);
		first_stop_child = child;
		break;
	}
	case SUP_STOP_EXEC:
		if (on_exec(s, t))
			return;
		t = sup_thread_find(s, tid);
		if (!t)
			return;
		if (let_go_root(s, t))
			return;
		break;
	case SUP_STOP_EXIT:
		/* Rule 8: resumed at once, even when detaching. */
		t->flags |= SUP_THREAD_EXITING;
		if (s->hooks.thread_exiting)
			s->hooks.thread_exiting(s->hooks.arg, t->tid, t->pid);
		break;
	default:
		break;
	}
	if (t->flags & SUP_THREAD_DETACHING) {
		if (st.kind == SUP_STOP_EVENT_STOP)
			sup_thread_restart_interrupted(t);
		if (sup_thread_own_signal_pending(s, t)) {
			/* Its next stop is the signal's delivery, where the
			 * hook consumes it; detach there. */
			sup_thread_resume(t, PTRACE_CONT, sig);
		} else {
			sup_thread_mask_restore(t);
			sup_detach_thread(s, t, sig);
		}
		/* A child held for this event goes now (detached with it). */
		if (first_stop_child)
			child_first_stop(s, first_stop_child);
		if (s->stopping && !s->nthreads)
			s->done = true;
		return;
	}
	if (t->flags & SUP_THREAD_STEPPING)
		request = PTRACE_SINGLESTEP;
	/* PTRACE_SYSCALL keeps an awaited syscall-exit stop coming (pause.c). */
	else if (t->flags & SUP_THREAD_SYSEXIT)
		request = PTRACE_SYSCALL;
	if (request == PTRACE_CONT && let_go_attached(s, t, &st, sig)) {
		if (first_stop_child)
			child_first_stop(s, first_stop_child);
		return;
	}
	sup_thread_resume(t, request, sig);
	if (first_stop_child)
		child_first_stop(s, first_stop_child);
}

static bool is_death(int status)
{
	return WIFEXITED(status) || WIFSIGNALED(status);
}

/*
 * Dispatches a batch of statuses. A thread's death comes last: its hooks
 * are the slow ones (the thread's last records drained, its creation
 * context unwound, records written), and the stops beside it in the batch
 * (a creator at its clone, a new thread's first stop) each hold a thread
 * until psup answers. A death stays in place when another status of the
 * batch has its id (it goes in that status's pass). The first stop of a
 * thread psup does not know yet comes after the known threads' stops: its
 * creator's clone or fork stop, when it is in the batch, handles it with
 * its creator known (child_first_stop()), where it went first half the
 * time and took rule 10's way (its /proc status read for its process, and
 * a new process given options the kernel had copied from its creator).
 */
static void dispatch_batch(struct sup_session *s, struct sup_status *b, size_t n)
{
	s->batch = b;
	s->nbatch = n;
	for (size_t i = 0; i < n; i++) {
		b[i].done = false;
		b[i].pass = is_death(b[i].status) ? 2 : !sup_thread_find(s, b[i].tid);
	}
	/* A death beside another status of its id goes in that one's pass,
	 * in the batch's order: an id reaped and reused, or a thread psup
	 * does not know yet, stopped and then killed. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n && b[i].pass == 2; j++)
			if (b[j].tid == b[i].tid && b[j].pass < 2)
				b[i].pass = b[j].pass;
	for (unsigned pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < n; i++) {
			if (b[i].done || b[i].pass != pass)
				continue;
			b[i].done = true;
			dispatch(s, b[i].tid, b[i].status);
		}
	s->batch = NULL;
	s->nbatch = 0;
}

/* psup's real-time priority (sched_raise()). */
static int sched_fifo(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
}

/*
 * A stopped thread waits for psup, and psup must get a CPU to answer it.
 * Under the default policy a woken psup waited behind a busy thread of the
 * program on its CPU until the scheduler preempted that thread, up to ~2 ms
 * (the wake-up granularity on 2 CPUs), while the other CPU could sit idle:
 * on the causal Amdahl program 22% of the seccomp stops were answered after
 * more than 0.5 ms (p90 2.1 ms), and the line executions meanwhile became
 * delays the stopped threads paid later on the critical path. The lowest
 * real-time priority lets psup preempt at once (p90 33 us); it is never
 * passed on (SCHED_RESET_ON_FORK), and the kernel's real-time throttling
 * bounds it. Without CAP_SYS_NICE, or when psup was given another policy
 * than the default, psup keeps its policy. s->sched_old is the policy to
 * go back to, -1 when nothing changed.
 */
static void sched_raise(struct sup_session *s)
{
	int old = sched_getscheduler(0);

	s->sched_old = -1;
	/* A policy chosen for psup (batch, idle, real-time) stays. */
	if (old < 0 || (old & ~SCHED_RESET_ON_FORK) != SCHED_OTHER)
		return;
	if (sched_fifo() < 0) {
		pr_debug("no real-time priority for psup (%s): stops may wait for a CPU",
			 strerror(errno));
		return;
	}
	s->sched_old = old;
}

/* psup at the policy it started with: for a wait (reap()), or for good at
 * the loop's end (then sched_old is reset). */
static void sched_lower(struct sup_session *s)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (s->sched_old >= 0 && sched_setscheduler(0, s->sched_old, &sp) < 0)
		pr_debug("restoring psup's scheduling policy: %s", strerror(errno));
}

/* After a wait at the old policy: the priority back. */
static void sched_back(struct sup_session *s)
{
	if (s->sched_old >= 0 && sched_fifo() < 0)
		pr_debug("psup's real-time priority back: %s", strerror(errno));
}

/*
 * Reaping a process at psup's real-time priority could spin for a second.
 * The wait that reaps a thread group's leader flushes its /proc entries
 * (release_task(), proc_flush_pid(), shrink_dcache_parent()), and loops,
 * yielding only to tasks of its priority, while another task holds them
 * on a list of its own: its last other thread, still in its exit after
 * the notice that woke psup, preempted by psup on the same CPU. Beside two
 * busy loops on the 2 CPUs, `psup run -- java -version` took 1.03-1.06 s
 * in 3 of 6 runs (0.12 natively, 0.14-0.23 in the others), 0.97-0.99 s of
 * it psup's system time in d_walk(), until the kernel's real-time
 * throttling let the thread finish. So stops are collected first (they
 * reap nothing), each death is looked at before it is reaped (WNOWAIT),
 * and a leader's (or a process's psup traces no thread of) is reaped at
 * psup's old policy: the thread it waits for runs. Test: t1105.
 */
static bool is_leader(struct sup_session *s, pid_t pid)
{
	struct sup_thread *t = sup_thread_find(s, pid);

	return !t || t->pid == t->tid;
}

/* The death of pid, reaped (at the old policy for a leader): waitpid()'s. */
static pid_t reap(struct sup_session *s, pid_t pid, int *status)
{
	bool leader = is_leader(s, pid);
	pid_t w;

	if (leader)
		sched_lower(s);
	do
		w = waitpid(pid, status, WNOHANG | __WALL);
	while (w < 0 && errno == EINTR);
	if (leader)
		sched_back(s);
	return w;
}

/* Rule 5: collect every pending status before handling any. */
static void wait_all(struct sup_session *s)
{
	enum { BATCH = 256 };
	struct sup_status pend[BATCH];

	for (;;) {
		size_t n = 0;
		bool gone = false; /* no child left */
		siginfo_t si = { 0 };

		/* The stops, each status as waitpid() gives it (ECHILD: none
		 * can come, zombies left or not). */
		while (n < BATCH) {
			if (waitid(P_ALL, 0, &si, WSTOPPED | WNOHANG | __WALL) < 0) {
				if (errno == EINTR)
					continue;
				if (errno != ECHILD)
					pr_err("waitid: %s", strerror(errno));
				break;
			}
			if (!si.si_pid)
				break;
			pend[n].tid = si.si_pid;
			pend[n].status = (si.si_status << 8) | 0x7f;
			n++;
		}
		/* The deaths, each looked at, then reaped (reap()); ECHILD
		 * here: no child at all. */
		while (n < BATCH) {
			int status;
			pid_t r;

			si.si_pid = 0;
			if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0) {
				if (errno == EINTR)
					continue;
				if (errno == ECHILD)
					gone = true;
				else
					pr_err("waitid: %s", strerror(errno));
				break;
			}
			if (!si.si_pid || (r = reap(s, si.si_pid, &status)) <= 0)
				break;
			pend[n].tid = r;
			pend[n].status = status;
			n++;
		}
		s->lstats.statuses += n;
		dispatch_batch(s, pend, n);
		if (gone) {
			/* Rule 10: nothing left to wait for. But for
			 * SUP_ATTACH_NO_STOPS, whose process may run on
			 * untraced: its pidfd tells its end. */
			if (s->told_pidfd >= 0 && !s->stopping)
				attach_leader_gone(s);
			else
				s->done = true;
			return;
		}
		/* Done when nothing is left to trace: the run target ended, or
		 * every attached thread is gone. No SIGCHLD would come again. */
		if (!s->nthreads && (s->attach_mode || s->result.exited) && s->told_pidfd < 0)
			s->done = true;
		if (n < BATCH)
			return;
	}
}

/*
 * Run mode, a SIGINT that no terminal sent: `kill -INT` of psup by a process
 * that is none of the program's. The terminal's Ctrl-C (si_code SI_KERNEL)
 * reaches the program itself, in psup's process group; this one reached
 * psup alone, and nothing happened (issue 22 item 9). It stops the
 * recording: psup detaches (the record is written at once) and passes the
 * SIGINT on to the program as Ctrl-C would, unless the program has one
 * pending already (a kill of the whole group); the command then mirrors the
 * program's end. With psup's seccomp filter the program needs its tracer to
 * the end (rule 4): the SIGINT is passed on only. Test:
 * t4035-interrupt-psup-alone.
 */
static bool sigint_from_elsewhere(struct sup_session *s, const struct signalfd_siginfo *si)
{
	int code = si->ssi_code;

	if (si->ssi_signo != SIGINT || s->attach_mode || !si->ssi_pid)
		return false;
	if (code != SI_USER && code != SI_QUEUE && code != SI_TKILL)
		return false;
	/* Processes psup does not trace (told by the records) are the
	 * program's too. */
	return !sup_process_find(s, (pid_t)si->ssi_pid) &&
	       !(!s->causal_filter && s->root && sup_proc_descends_from((pid_t)si->ssi_pid, s->root));
}

static void interrupt_run(struct sup_session *s)
{
	struct sup_proc_status ps;
	uint64_t bit = 1ULL << (SIGINT - 1);

	/* Once the program was reaped its pid may be another process's. */
	if (!s->result.exited && (sup_proc_status(s->root, &ps) < 0 || !((ps.sigpnd | ps.shdpnd) & bit)))
		kill(s->root, SIGINT);
	if (!s->causal_filter)
		begin_stop(s, "interrupted");
}

static void on_signals(void *arg, int fd)
{
	struct sup_session *s = arg;
	struct signalfd_siginfo si[8];
	bool chld = false;
	ssize_t r;

	/* One read takes every pending signal (a standard signal is pending
	 * once), and only a full one may have left more: reading on to see
	 * EAGAIN would cost one more system call per stop of the program. */
	do {
		r = read(fd, si, sizeof(si));
		for (ssize_t i = 0; r > 0 && i < r / (ssize_t)sizeof(si[0]); i++) {
			int sig = (int)si[i].ssi_signo;

			if (sig == SIGCHLD) {
				chld = true;
				continue;
			}
			pr_debug("psup received signal %d", sig);
			if (s->attach_mode) {
				begin_stop(s, "interrupted");
			} else if (sigint_from_elsewhere(s, &si[i])) {
				pr_debug("SIGINT from pid %u: stopping the recording", si[i].ssi_pid);
				interrupt_run(s);
			} else if (!s->result.exited &&
				   (sig == SIGTERM || sig == SIGHUP || getpgid(s->root) != getpgrp())) {
				/* Run mode: the target decides what the signal
				 * means. Ctrl-C and Ctrl-\ reach it from the
				 * terminal already, unless it left psup's
				 * process group (setsid). */
				kill(s->root, sig);
			}
		}
	} while (r == (ssize_t)sizeof(si));
	if (chld)
		wait_all(s);
}

/*
 * A watched fd that hung up stays ready: epoll is level-triggered and
 * EPOLLHUP/EPOLLERR cannot be masked, so each epoll_wait would return it at
 * once. A thread's perf ring reports EPOLLHUP from its thread's exit
 * (perf_event_exit_task(), before the exit notification) until psup reaps the
 * thread and closes the ring: each short process of a shell loop spun psup
 * for that window (7.5 million waits for 300 processes), and a zombie leader
 * whose threads run on for its whole life (16 million in 8 s of
 * tests/targets/leader_exit 0.5). psup's SCHED_FIFO turned the spin into the
 * program's starvation. The callback has drained what was left; the watch
 * stays registered (the owner's sup_session_unwatch() frees it) but leaves
 * the epoll set. Nothing more can arrive on a hung-up ring, and the tick
 * drains every ring anyway. Test: t1099-no-busy-loop.
 */
static void watch_hung_up(struct sup_session *s, struct sup_watch *w)
{
	if (w->dead || w->hung_up)
		return;
	w->hung_up = true;
	s->lstats.hangups++;
	if (epoll_ctl(s->epfd, EPOLL_CTL_DEL, w->fd, NULL) < 0)
		pr_debug("epoll: cannot drop hung-up fd %d: %s", w->fd, strerror(errno));
}

void sup_session_loop_stats(const struct sup_session *s, struct sup_loop_stats *out)
{
	*out = s->lstats;
}

/* The detach deadline passed: say which threads did not stop, with their
 * state, so that the user (or a failed test's log) knows what held it. */
static void report_unstopped(struct sup_session *s)
{
	char list[160] = "";
	size_t len = 0, named = 0;

	for (size_t i = 0; i < s->threads.cap && named < 4; i++) {
		if (!s->threads.keys[i] || !s->threads.vals[i])
			continue;
		const struct sup_thread *t = (const struct sup_thread *)(uintptr_t)s->threads.vals[i];
		struct sup_proc_status ps;
		char st = sup_proc_status(t->tid, &ps) == 0 ? ps.state : '?';
		int n = snprintf(list + len, sizeof(list) - len, "%s%d (state %c, flags %#x)",
				 named ? ", " : "", t->tid, st, t->flags);
		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
		named++;
	}
	pr_err("%u thread(s) did not stop for detaching within %llu s: %s%s; leaving them to the kernel",
	       s->nthreads, SUP_DETACH_TIMEOUT_NS / 1000000000ULL, list, named < s->nthreads ? ", ..." : "");
}

int sup_session_run(struct sup_session *s)
{
	struct epoll_event evs[64];

	sched_raise(s);

	/* Statuses may have queued before the loop started. */
	wait_all(s);
	while (!s->done) {
		int timeout = -1;

		/* With psup's seccomp filter the program needs its tracer to
		 * the end: a stop request stops profiling only (the command's
		 * hooks do nothing more), never the tracing. */
		if (s->stop_requested && !s->stopping && !s->causal_filter)
			begin_stop(s, "interrupted");
		if (s->done)
			break;
		uint64_t now = s->awaiting || s->stopping ? psup_now_ns() : 0;

		if (s->awaiting && (s->stopping || now >= s->await_next))
			await_expired(s);
		if (s->stopping) {
			if (now >= s->stop_deadline) {
				report_unstopped(s);
				s->done = true;
				break;
			}
			timeout = (int)((s->stop_deadline - now) / 1000000ULL) + 1;
		}
		if (s->awaiting) {
			int ms = s->await_next > now ? (int)((s->await_next - now) / 1000000ULL) + 1 : 0;

			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		int n = epoll_wait(s->epfd, evs, (int)PSUP_ARRAY_SIZE(evs), timeout);
		s->lstats.waits++;
		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			sched_lower(s);
			s->sched_old = -1;
			return -err;
		}
		for (int i = 0; i < n; i++) {
			struct sup_watch *w = evs[i].data.ptr;
			if (w->dead)
				continue;
			w->cb(w->arg, w->fd);
			if (evs[i].events & (EPOLLHUP | EPOLLERR))
				watch_hung_up(s, w);
		}
		free_dead_watches(s);
	}
	if (s->stopping && s->attach_mode) {
		s->result.detached = true;
		if (!s->result.reason)
			s->result.reason = s->stop_reason;
	} else if (s->stopping && !s->result.exited) {
		s->result.detached = true;
		s->result.reason = s->stop_reason;
	}
	sched_lower(s);
	s->sched_old = -1;
	return 0;
}

void sup_session_result(const struct sup_session *s, struct sup_result *out)
{
	*out = s->result;
	if (!out->reason)
		out->reason = s->stop_reason ? s->stop_reason : "exit";
}

pid_t sup_session_pid(const struct sup_session *s)
{
	return s->root;
}

unsigned sup_session_nthreads(const struct sup_session *s)
{
	return s->nthreads;
}

void sup_session_free(struct sup_session *s)
{
	if (!s)
		return;
	if (s->nthreads && !s->done) {
		/* An error path: never harm the target for psup's failure.
		 * Detaching ends EXITKILL's hold too; a run-mode target stays
		 * psup's child, to be waited for by the caller. */
		begin_stop(s, "error");
		sup_session_run(s);
	}
	sup_session_release(s);
	free(s);
}
