#ifndef PSUP_SUPERVISOR_INTERNAL_H
#define PSUP_SUPERVISOR_INTERNAL_H

#include "supervisor/supervisor.h"

#include <sys/ptrace.h>
#include <sys/user.h>
#include <signal.h>

#include "common/hash.h"

enum sup_thread_flags {
	SUP_THREAD_SEEN_STOP = 1 << 0, /* its first ptrace stop has arrived */
	SUP_THREAD_DETACHING = 1 << 1, /* interrupted; detach at its next stop */
	SUP_THREAD_EXITING = 1 << 2,   /* passed PTRACE_EVENT_EXIT */
	SUP_THREAD_REPORTED = 1 << 3,  /* thread_new hook called */
	SUP_THREAD_STEPPING = 1 << 4,  /* resume with PTRACE_SINGLESTEP (witch exact mode) */
	/* pause.c */
	SUP_THREAD_PAUSE_PENDING = 1 << 5, /* interrupted for a pause, stop to come */
	SUP_THREAD_HELD = 1 << 6,          /* held stopped until hold_until */
	SUP_THREAD_SYSEXIT = 1 << 7,       /* resumed with PTRACE_SYSCALL: its exit stop is psup's */
	SUP_THREAD_NO_EXEC = 1 << 8,       /* its options lack PTRACE_O_TRACEEXEC (sup_session_no_exec_stops()) */
	/* Its first stop came before its creator's clone or fork event (rule
	 * 10): held in it, not reported yet, until the event (loop.c,
	 * await_creator()). */
	SUP_THREAD_AWAIT_CREATOR = 1 << 9,
	SUP_THREAD_NEW_PROCESS = 1 << 10, /* with AWAIT_CREATOR: the first thread of a new process */
	/* SUP_SPAWN_NO_STOPS: the root, let go of (detached) after its exec:
	 * psup's child still, its end is the wait status a parent gets. */
	SUP_THREAD_LET_GO = 1 << 11,
	/* SUP_ATTACH_NO_STOPS: the leader, its TRACECLONE taken away at its
	 * first stop (let_go_attached()). */
	SUP_THREAD_NO_CLONES = 1 << 12,
};

struct sup_thread {
	pid_t tid;
	pid_t pid;    /* thread group */
	pid_t parent; /* creator, 0 when unknown */
	unsigned flags;
	unsigned own_signal_waits; /* detaching: resumes to let psup's signal come */
	int drain_sig;             /* unblock this signal at the next stop (control.c) */
	bool mask_saved;           /* saved_mask to be restored after its delivery */
	int drained_sig;           /* the signal unblocked while mask_saved */
	uint64_t saved_mask;
	/* The stop's siginfo, read once for the pause and signal hooks
	 * (sup_thread_siginfo()); si_valid is cleared when the thread is
	 * resumed (sup_thread_resume()), as sci_valid and regs_valid. */
	siginfo_t si;
	bool si_valid;
	/* A seccomp or syscall stop's call (sup_thread_syscall_info()): read
	 * once per stop, as si. */
	struct __ptrace_syscall_info sci;
	bool sci_valid;
	/* Its registers at this stop (sup_thread_regs_of(), set through
	 * sup_thread_set_regs()), as si: a clone stop asked twice (the
	 * creator's snapshot, the child's tid word). */
	struct user_regs_struct regs;
	bool regs_valid;
	/* Its stack from stack_addr as sup_thread_snapshot() read it at this
	 * stop (sup_thread_read_stack()), as si; the buffer is kept. */
	unsigned char *stack;
	size_t stack_len, stack_cap;
	uint64_t stack_addr;
	bool stack_valid;
	/* pause.c */
	uint64_t pause_t0;    /* mono ns: interrupt request (or seccomp stop seen) */
	uint64_t hold_until;  /* mono ns, SUP_THREAD_HELD */
	uint64_t hold_asked;  /* ns the hold hook asked for */
	int sysexit_nr;       /* SUP_THREAD_SYSEXIT: the call whose exit is awaited */
	bool held_at_seccomp; /* resume a hold with the call's own request */
	/* SUP_THREAD_AWAIT_CREATOR: its first stop's wait status, and when
	 * (mono ns) it is let go without its creator. */
	int first_status;
	uint64_t await_until;
};

struct sup_process {
	pid_t pid;
	unsigned nthreads;
	bool ended;
	/* From when (mono ns) its execs stop: 0, always; EXEC_STOPS_NOT_YET,
	 * not while it has one thread (sup_session_no_exec_stops()); when it
	 * got a second thread otherwise. */
	uint64_t exec_stops_from;
};
#define EXEC_STOPS_NOT_YET UINT64_MAX

struct sup_watch {
	int fd;
	void (*cb)(void *arg, int fd);
	void *arg;
	bool dead;
	bool hung_up; /* out of the epoll set: its fd reported EPOLLHUP/EPOLLERR */
	struct sup_watch *next_dead;
};

/* A wait status collected by wait_all() and not yet dispatched. */
struct sup_status {
	pid_t tid;
	int status;
	unsigned pass; /* dispatched in pass 0 (known threads' stops), 1 (stops
			* of threads psup does not know yet: new ones, rule
			* 10) or 2 (deaths) of the batch */
	bool done;     /* dispatched (a new thread's first stop may go early) */
};

struct sup_session {
	bool attach_mode;
	long desc_opts;  /* run mode: ptrace options of descendant processes */
	long root_opts;  /* those of the root process's threads (attach: seized with) */
	long stops_opts; /* SUP_SPAWN_NO_STOPS: the options that would have followed (sup_session_stops_back()) */
	/* SUP_ATTACH_NO_STOPS: the threads the process creates are not
	 * traced (once their creator stopped: let_go_attached()); the
	 * process's pidfd (-1: none, or closed at its end). */
	bool attach_told;
	int told_pidfd;
	/* A descendant process execs without a stop while it has one thread
	 * (sup_session_no_exec_stops()). */
	bool no_exec_stops;
	pid_t root; /* the target process */
	struct sup_hooks hooks;

	struct psup_u64map threads; /* tid -> struct sup_thread * */
	struct psup_u64map procs;   /* pid -> struct sup_process * */
	unsigned nthreads;

	int epfd;
	int sigfd;
	int tickfd;
	int durfd;
	void (*tick_cb)(void *arg);
	void *tick_arg;
	struct sup_watch *dead_watches;
	struct psup_u64map watches; /* fd + 1 -> struct sup_watch * */
	sigset_t old_mask;          /* psup's mask before its first session blocked its signals */

	int exec_err_fd; /* run mode: child's close-on-exec error pipe */
	bool exec_seen;
	/* While an exec stop is handled (its hooks): the process and its new
	 * program's entry IP (sup_session_exec_entry()). */
	pid_t exec_pid;
	uint64_t exec_ip;
	uint64_t exec_ns; /* when that stop was seen */
	bool stop_requested;
	bool stopping; /* detaching (attach) or killing (run) */
	const char *stop_reason;
	uint64_t stop_deadline; /* mono ns: give up detaching then */
	bool done;
	struct sup_result result;
	/* Signals psup's own events may have queued for a thread (witch:
	 * its sampling signal, SIGTRAP of its watchpoints): a thread is not
	 * detached while one is pending, or the program would get it. */
	sigset_t own_signals;
	bool have_own_signals;

	/* pause.c: causal profiling */
	bool causal_filter; /* run mode with psup's seccomp filter: never detach */
	struct sup_pause_hooks pause_hooks;
	int pausefd; /* timerfd: the earliest hold deadline */
	pid_t *held; /* tids held (unordered) */
	size_t nheld, capheld;
	struct sup_pause_stats pstats;
	struct sup_loop_stats lstats;
	/* wait_all()'s batch while it is dispatched: a creator's clone stop
	 * takes its child's first stop from it (loop.c, child_first_stop()). */
	struct sup_status *batch;
	size_t nbatch;
	bool test_clone_wait; /* PSUP_TEST_CLONE_WAIT: wait for that first stop */
	int sched_old;        /* the policy sup_session_run() raised psup from, -1: none (loop.c, reap()) */
	/* Threads held in their first stop for their creator's event
	 * (SUP_THREAD_AWAIT_CREATOR), and the earliest await_until. */
	unsigned awaiting;
	uint64_t await_next;
	/* PSUP_TEST_CREATOR_LATE: 1, a creator's clone or fork event waits
	 * for its child's first stop and comes after it (rule 10's order);
	 * 2, the child then waits out its await_until too. */
	int test_creator_late;
};

/* thread.c */
struct sup_thread *sup_thread_find(struct sup_session *s, pid_t tid);
struct sup_thread *sup_thread_add(struct sup_session *s, pid_t tid, pid_t pid, pid_t parent);
/* Removes and frees t, calls thread_gone if it was reported; ends the
 * process when its last thread goes (the caller reports the exit). */
void sup_thread_remove(struct sup_session *s, struct sup_thread *t, bool exited);
void sup_thread_report(struct sup_session *s, struct sup_thread *t, bool new_process);
struct sup_process *sup_process_find(struct sup_session *s, pid_t pid);
struct sup_process *sup_process_get(struct sup_session *s, pid_t pid);
/* What psup needs of /proc/TID/status. */
struct sup_proc_status {
	pid_t tgid, ppid, tracer;
	long uid;                /* real uid, -1 when unknown */
	char state;              /* R S D T t Z X ... */
	bool signal_pending;     /* SigPnd or ShdPnd not empty */
	uint64_t sigpnd, sigblk; /* the thread's own pending and blocked signals */
	uint64_t shdpnd;         /* its process's pending signals */
	uint64_t sigign, sigcgt; /* ignored, and caught by a handler */
};
/* Reads /proc/TID/status: 0 or -errno (-ENOENT: gone). */
int sup_proc_status(pid_t tid, struct sup_proc_status *out);
/* Whether process pid descends from ancestor (itself included), by /proc's
 * parent links. */
bool sup_proc_descends_from(pid_t pid, pid_t ancestor);

/* loop.c */
int sup_session_init(struct sup_session *s, bool attach_mode);
void sup_session_release(struct sup_session *s);
/* SUP_ATTACH_NO_STOPS: watches pid's pidfd for its end. 0 or -errno
 * (-ENOSYS before Linux 5.3). */
int sup_session_watch_end(struct sup_session *s, pid_t pid);
/* Restart a stopped thread. ESRCH is not an error (rule 6): the thread is
 * dying and its exit status is still to come through wait. */
void sup_thread_resume(struct sup_thread *t, int request, int sig);

/* control.c */
/* Detaching t: one of the session's own signals is pending for it (it must
 * be dequeued, and consumed by the hook, before the detach). */
bool sup_thread_own_signal_pending(struct sup_session *s, struct sup_thread *t);
/* At any stop of t: a drain asked by sup_thread_drain_signal() unblocks the
 * signal now; after the signal's delivery the program's mask comes back. */
void sup_thread_drain_at_stop(struct sup_session *s, struct sup_thread *t, int delivered_sig);
/* The program's own signal mask back, if a drain changed it (detach). */
void sup_thread_mask_restore(struct sup_thread *t);
/* The call t is stopped at (PTRACE_GET_SYSCALL_INFO, once per stop: every
 * ptrace request on a stopped thread costs the program's hand-offs time).
 * NULL when it cannot be read. The pointer is t's, valid until t resumes. */
const struct __ptrace_syscall_info *sup_thread_syscall_info(struct sup_thread *t);
/* t's registers at this stop, read once per stop, and set (the copy
 * follows). 0 or -errno. */
int sup_thread_regs_of(struct sup_thread *t, struct user_regs_struct *regs);
int sup_thread_set_regs(struct sup_thread *t, const struct user_regs_struct *regs);
/* pause.c */
/* At a stop of t (not detaching): handles psup's seccomp and syscall-exit
 * stops and the stop a pause asked for. true when t was resumed or is held
 * (the caller does nothing more), false to go on with the normal path. */
bool sup_pause_on_stop(struct sup_session *s, struct sup_thread *t, const struct sup_stop *st);
/* Resumes every held thread now (detach, end of the session). */
void sup_pause_release_all(struct sup_session *s);
void sup_pause_release(struct sup_session *s);

/* attach.c */
/* Interrupts every thread for detaching; the loop detaches each at its next stop. */
void sup_detach_begin(struct sup_session *s);
/* At psup's own interrupt stop: re-execute a call the interrupt made fail
 * with EINTR that the kernel will not restart (epoll_wait, semop, ...). */
void sup_thread_restart_interrupted(struct sup_thread *t);
/* Detaches t from the stop it is in, injecting sig (rule 12). */
void sup_detach_thread(struct sup_session *s, struct sup_thread *t, int sig);
/* pause.c: a stop of the program's own seccomp filter gets the ENOSYS it
 * would have had without a tracer. */
void sup_seccomp_foreign(struct sup_session *s, struct sup_thread *t);
/* nested.c: a stop of the run-mode ptrace filter (SUP_SECCOMP_PTRACE_DATA):
 * lets go of what the program wants to trace, resumes t. False when the
 * stop is not that filter's. */
bool sup_nested_on_seccomp(struct sup_session *s, struct sup_thread *t);

#endif
