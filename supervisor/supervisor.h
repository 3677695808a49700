#ifndef PSUP_SUPERVISOR_SUPERVISOR_H
#define PSUP_SUPERVISOR_SUPERVISOR_H

/*
 * The supervisor: process control and the event loop. One thread (the one
 * that calls these functions) owns ptrace: it spawns or seizes the target,
 * keeps the thread table, classifies every wait status, passes the program's
 * signals through unchanged, answers group stops with PTRACE_LISTEN, and
 * detaches leaving nothing behind. The same loop waits on the perf ring fds
 * and timers other parts register, and on psup's own signals (signalfd).
 *
 * The rules it follows are docs/ptrace-rules.md; comments name them.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- wait-status classification (pure; unit-tested) -------------------- */

enum sup_stop_kind {
	SUP_STOP_EXITED,     /* WIFEXITED */
	SUP_STOP_KILLED,     /* WIFSIGNALED */
	SUP_STOP_SIGNAL,     /* signal-delivery-stop: sig is to be injected */
	SUP_STOP_GROUP,      /* group-stop (PTRACE_EVENT_STOP with a stop signal) */
	SUP_STOP_EVENT_STOP, /* PTRACE_EVENT_STOP with SIGTRAP: interrupt, new thread, notify */
	SUP_STOP_CLONE,
	SUP_STOP_FORK,
	SUP_STOP_VFORK,
	SUP_STOP_VFORK_DONE,
	SUP_STOP_EXEC,
	SUP_STOP_EXIT, /* PTRACE_EVENT_EXIT */
	SUP_STOP_SECCOMP,
	SUP_STOP_SYSCALL, /* syscall-stop (PTRACE_O_TRACESYSGOOD) */
	SUP_STOP_UNKNOWN,
};

struct sup_stop {
	enum sup_stop_kind kind;
	int sig;    /* the signal: delivered, group-stop signal, or killing signal */
	int status; /* exit status for SUP_STOP_EXITED */
	bool core;  /* core dumped, for SUP_STOP_KILLED */
};

void sup_stop_classify(int wstatus, struct sup_stop *out);
const char *sup_stop_kind_name(enum sup_stop_kind kind);
/* true for SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU. */
bool sup_sig_is_stop(int sig);

/* ---- sessions ----------------------------------------------------------- */

struct sup_session;

/* What the command wires in. Every callback runs on the supervisor thread,
 * from sup_session_run() (or from sup_spawn()/sup_attach() for the first
 * threads). Any may be NULL. */
struct sup_hooks {
	/* A thread appeared: before it runs user code (run mode, and threads
	 * created after an attach) or as soon as it is seized (attach).
	 * parent: the thread that created it, 0 when unknown. new_process: the
	 * first thread of a process psup had not seen (parent is then the
	 * forking thread). When parent is known, it is ptrace-stopped at its
	 * clone/fork event during the call (it may be unwound). */
	void (*thread_new)(void *arg, pid_t tid, pid_t pid, pid_t parent, bool new_process);
	/* The thread is gone: exited (reaped, or dropped by an exec) or, when
	 * exited is false, detached while alive. */
	void (*thread_gone)(void *arg, pid_t tid, pid_t pid, bool exited);
	/* Process pid completed an execve. old_tid is the thread that called it
	 * (now known as pid); the other threads were reported gone before. */
	void (*exec)(void *arg, pid_t pid, pid_t old_tid);
	/* A process ended: status >= 0 for an exit, signal > 0 when killed. */
	void (*process_exit)(void *arg, pid_t pid, int status, int signal);
	void *arg;
	/* A signal-delivery stop of tid for sig (rule 11), also while
	 * detaching. Returns enum sup_signal_action bits: 0 delivers sig
	 * unchanged (the program's own); SUPPRESS consumes it (psup's sampling
	 * signal, psup's own debug traps); STEP resumes the thread with one
	 * single-step (the step ends in a SIGTRAP stop that comes here too; a
	 * detaching thread is detached instead). The sup_thread_* control calls
	 * below work on tid during the call. NULL: every signal is delivered. */
	int (*signal_stop)(void *arg, pid_t tid, int sig);
	/* The thread is at its PTRACE_EVENT_EXIT stop: it runs no more user
	 * code and its process's memory is still readable (the last chance to
	 * read counters there: psup.h progress points). It is resumed right
	 * after the call (rule 8): nothing slow here. Called for every
	 * process's leader; for the other threads only with
	 * thread_exit_stops. */
	void (*thread_exiting)(void *arg, pid_t tid, pid_t pid);
	/* Every thread stops at its exit. false: only the leaders do (a leader
	 * calling pthread_exit, exec, the maps read before the process is
	 * gone; sup_session_no_exit_stops() takes theirs away too); a
	 * non-leader thread is set up without PTRACE_O_TRACEEXIT at
	 * its first stop, which saves a stop and a resume per thread (spawn:
	 * 3 wait statuses per thread instead of 4), and its death status is
	 * its end. */
	bool thread_exit_stops;
	/* Whether addr is an execution breakpoint psup set in tid (breakpoint
	 * progress points, unlock traps): a SIGTRAP of a debug exception with
	 * no cause there is a stray of psup's, never the program's int1. */
	bool (*own_breakpoint)(void *arg, pid_t tid, uint64_t addr);
	/* Whether process pid, at its exec stop, may run its new program
	 * while the hooks of that stop (thread_gone, exec, thread_new) are
	 * called: then it is resumed first (unless it must stay: detaching,
	 * stepping, the first process, or a thread other than the leader,
	 * which gets new options). The hooks then must not need it stopped,
	 * and must take what it records from then on (sup_session_exec_time())
	 * as the new program's. NULL: never. */
	bool (*exec_may_run)(void *arg, pid_t pid);
};

enum sup_signal_action {
	SUP_SIGNAL_DELIVER = 0,
	SUP_SIGNAL_SUPPRESS = 1 << 0,
	SUP_SIGNAL_STEP = 1 << 1,
};

enum sup_spawn_flags {
	SUP_SPAWN_FOLLOW_FORKS = 1 << 0,    /* trace child processes too */
	SUP_SPAWN_CAUSAL_FILTER = 1 << 1,   /* install sup_seccomp's filter (see the causal section) */
	SUP_SPAWN_CAUSAL_NO_WAKES = 1 << 2, /* ... without the futex wakes (waits only) */
	SUP_SPAWN_CAUSAL_NO_FUTEX = 1 << 3, /* ... without the futex waits (with NO_WAKES: no futex call) */
	/* Only the first process's first thread is traced, up to its exec
	 * (the program's start), then let go of: it stays psup's child (its
	 * end is a parent's wait status) and dies with psup
	 * (PR_SET_PDEATHSIG). The threads and processes it creates are never
	 * traced (no TRACECLONE, no fork options, no filter): the caller
	 * learns them from the kernel's records. Not with the causal filter. */
	SUP_SPAWN_NO_STOPS = 1 << 4,
	SUP_SPAWN_CAUSAL_NO_EXIT = 1 << 5, /* the causal filter without a thread's exit (its joiner's wake told by records) */
};

/*
 * Forks and execs argv[0] (searched in PATH) under ptrace: the child stops
 * itself, is seized with TRACECLONE|TRACEEXEC|TRACEEXIT|EXITKILL (+ fork and
 * vfork when following), then execs. Returns once the child is seized and
 * resumed; the exec itself is seen by sup_session_run() (an exec failure is
 * reported through sup_session_result()). On failure *why says why in one
 * line. Caller frees with sup_session_free(). *out is set before the first
 * hook runs, so hooks may watch fds; it is NULL again on failure.
 */
int sup_spawn(char *const argv[], unsigned flags, const struct sup_hooks *hooks,
	      struct sup_session **out, char *why, size_t whylen);

/*
 * Makes a write to a pipe or FIFO whose reader left fail with EPIPE in psup,
 * as any other write error, instead of killing psup with SIGPIPE (the record
 * of -o /dev/stdout | head). A program sup_spawn() starts later gets the
 * disposition psup had before, as it would without psup.
 */
void sup_ignore_sigpipe(void);

enum {
	/* No thread the process creates is traced once its creator stopped
	 * (TRACECLONE goes at a thread's first stop): the caller learns them
	 * from the kernel's records. The threads found are seized as always
	 * (their thread_new hook opens their events, which the threads they
	 * create inherit); another than the leader is let go of at its first
	 * stop. The leader stays traced: its death status is the process's.
	 * A pidfd tells the end of a process whose leader an exec by an
	 * untraced thread took away: the process_exit hook then gets
	 * SUP_STATUS_UNKNOWN. Dropped for a zombie leader, and without
	 * pidfd_open() (Linux 5.3): sup_session_told() says. */
	SUP_ATTACH_NO_STOPS = 1 << 0,
};

/* process_exit's status of a process whose end psup saw without its status. */
#define SUP_STATUS_UNKNOWN (-2)

/*
 * Seizes every thread of pid (rescanning /proc/PID/task until no new thread
 * appears), without stopping them, with TRACECLONE|TRACEEXEC (flags
 * SUP_ATTACH_*); never EXITKILL, never a seccomp filter. Errors are
 * explained in *why (already traced, other user, ptrace_scope, zombie, no
 * such process, psup itself).
 */
int sup_attach(pid_t pid, unsigned flags, const struct sup_hooks *hooks, struct sup_session **out,
	       char *why, size_t whylen);
/* Whether the threads the program creates are left to the caller's records
 * (SUP_SPAWN_NO_STOPS with no stops given back, SUP_ATTACH_NO_STOPS). */
bool sup_session_told(const struct sup_session *s);

/* Watch fd (EPOLLIN) in the loop; cb runs when it is readable. */
int sup_session_watch(struct sup_session *s, int fd, void (*cb)(void *arg, int fd), void *arg);
/*
 * Run mode: the first process and those created from now on (forked by the
 * program, and theirs) stop at no exit (PTRACE_EVENT_EXIT), their leaders as
 * their other threads: a process's death status is its end, and
 * thread_exiting is not called. For hooks that need no leader's exit stop:
 * the maps of a process are known without reading them there. A process
 * has one stop and one resume less, and a new thread no PTRACE_SETOPTIONS
 * at its first stop. Call it while the first process is stopped (its exec
 * stop), else it keeps its exit stop. Attach mode keeps them (a leader
 * calling pthread_exit must be known to detach).
 */
void sup_session_no_exit_stops(struct sup_session *s);
/*
 * SUP_SPAWN_NO_STOPS taken back: the threads and processes the root creates
 * from now on are stopped and reported (TRACECLONE, and the fork options
 * where forks are followed; no nested-tracer filter). Call it while the
 * root is stopped with one thread (at its exec stop: the caller learnt there
 * that the records cannot tell them). 0 or -errno.
 */
int sup_session_stops_back(struct sup_session *s);
/*
 * Run mode: a process forked from now on execs without an exec stop
 * (PTRACE_EVENT_EXEC) while it has one thread, and the exec hooks are not
 * called for it (thread_gone, exec, thread_new): the caller learns such an
 * exec otherwise (the kernel's records of it). With its second thread a
 * process stops at its execs again (an exec by another thread than the
 * leader changes thread ids). A fork/exec storm's process has one stop and
 * one resume less. Attach mode and the first process keep their stops.
 */
void sup_session_no_exec_stops(struct sup_session *s);
/* Whether an exec of process pid at time (mono ns) stops, so the exec
 * hooks report it; false for a process psup no longer traces. */
bool sup_session_exec_stops(struct sup_session *s, pid_t pid, uint64_t time);
/* While psup handles pid's exec stop (the thread_gone, exec and thread_new
 * hooks it calls): the IP its new program starts at, where its thread
 * stopped; 0 otherwise. A switch-out drained then at that IP is the exec
 * stop's, not a wait of the program. */
uint64_t sup_session_exec_entry(const struct sup_session *s, pid_t pid);
/* Then, when psup saw that stop (mono ns): its process may run already
 * (exec_may_run), so what it records after is the new program's; the time
 * now otherwise (and for NULL). */
uint64_t sup_session_exec_time(const struct sup_session *s, pid_t pid);
/* Whether psup is reporting an exec of pid: at its exec stop, or told. */
bool sup_session_in_exec(const struct sup_session *s, pid_t pid);
/*
 * An exec without a stop (sup_session_no_exec_stops()), learnt otherwise,
 * that the caller reports now with the hooks' own functions: until the
 * exec told before is given back, the three functions above answer for it
 * as for a stop (its pid, its time, an entry IP of 0: not known). Returns
 * the exec reported before (pid 0: none), to be given back the same way at
 * the end.
 */
struct sup_exec_told {
	pid_t pid;
	uint64_t ns;
	uint64_t ip; /* 0 for a told exec */
};
struct sup_exec_told sup_session_exec_told(struct sup_session *s, struct sup_exec_told told);
/* Stop watching fd. Safe from inside any callback, including fd's own. */
void sup_session_unwatch(struct sup_session *s, int fd);
/* Call cb every period_ns (a timerfd in the loop). One tick per session. */
int sup_session_set_tick(struct sup_session *s, uint64_t period_ns, void (*cb)(void *arg), void *arg);
/* The tick's period from now on (its next expiry period_ns from now). 0 or
 * -errno. */
int sup_session_tick_period(struct sup_session *s, uint64_t period_ns);
/* Attach mode: detach after duration_ns (0: no limit). */
void sup_session_set_duration(struct sup_session *s, uint64_t duration_ns);

/*
 * Runs the loop. Run mode: until the root process ends (remaining traced
 * descendants are detached and left running). SIGTERM/SIGHUP to psup are
 * forwarded to the root process; SIGINT/SIGQUIT reach it from the terminal
 * on their own. Attach mode: until the process ends, or Ctrl-C / SIGTERM /
 * SIGHUP / the duration, which detach every thread. Returns 0 or -errno.
 */
int sup_session_run(struct sup_session *s);

/* Ask the loop to end: every thread is detached and runs on. */
void sup_session_request_stop(struct sup_session *s);

struct sup_result {
	bool exited; /* the root process ended (status or signal valid) */
	int status;  /* exit status */
	int signal;  /* killing signal, 0 if it exited */
	bool core;
	bool detached;      /* attach mode: psup detached, the target runs on */
	const char *reason; /* "exit", "detach", "duration", "interrupted" */
	int exec_errno;     /* run mode: errno of a failed execve, else 0 */
};
void sup_session_result(const struct sup_session *s, struct sup_result *out);
pid_t sup_session_pid(const struct sup_session *s);
unsigned sup_session_nthreads(const struct sup_session *s);
/* Detaches from whatever is still traced (an error path: the target runs
 * on; a run-mode target is still the caller's child to wait for), frees.
 * NULL is fine. */
void sup_session_free(struct sup_session *s);

struct user_regs_struct;

/*
 * For a thread psup holds in a ptrace stop (e.g. a creator inside a
 * thread_new hook): copies its user registers and up to len bytes of its
 * stack from the stack pointer up. Returns the bytes of stack copied (0 is
 * possible) or -errno (-ESRCH: not stopped or gone).
 */
int sup_thread_snapshot(struct sup_session *s, pid_t tid, struct user_regs_struct *regs,
			void *stack, size_t len);

/* One line on why attaching to pid is not possible, from /proc and sysctl
 * (already traced by N, other user, ptrace_scope, zombie, no such process).
 * Writes into buf and returns it. */
const char *sup_attach_diagnose(pid_t pid, int err, char *buf, size_t len);
/* Why an ordinary user's psup may not read or trace pid although the user
 * runs it: " (it runs a setuid ...; run psup as root)" or " (it is not
 * dumpable ...)", for the end of a message; "" when neither or as root.
 * Returns buf. */
const char *sup_proc_access_why(pid_t pid, char *buf, size_t len);
/* Whether pid, just after an exec, runs a setuid or setgid program without
 * the ids it names: the kernel drops them for a traced exec unless the
 * tracer is privileged. */
bool sup_proc_lost_setid(pid_t pid);

/* ---- control of a thread in a ptrace stop (control.c) ------------------
 *
 * For the hooks (signal_stop, thread_new with a stopped creator): the thread
 * must be in a ptrace stop psup holds, else -ESRCH. Each is one or two
 * system calls, no allocation: cheap enough for every sample.
 */

struct user_regs_struct;
/* The signal's siginfo at a signal-delivery stop (PTRACE_GETSIGINFO). */
int sup_thread_siginfo(struct sup_session *s, pid_t tid, siginfo_t *si);
/* The thread's user registers (PTRACE_GETREGS). */
int sup_thread_regs(struct sup_session *s, pid_t tid, struct user_regs_struct *regs);
/* Copies len bytes at addr of tid's address space (process_vm_readv).
 * Returns the bytes read (short at an unmapped page) or -errno. */
long sup_thread_read(struct sup_session *s, pid_t tid, uint64_t addr, void *buf, size_t len);
/* The same by process, for a thread the session does not hold (one told
 * by the records): nothing says the process is still the one meant (it
 * may have exec'd or ended since), so only for bytes whose misreading
 * costs a guess, never a write or a decision about the program. */
long sup_proc_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* As sup_thread_read(), from the copy sup_thread_snapshot() made of its
 * stack at this stop when that covers [addr, addr + len): a creator's
 * clone_args lie there (clone3 from glibc's pthread_create), and each read
 * of another process's memory pins its pages. For the thread's own data
 * only: another thread may write its stack while it is stopped. */
long sup_thread_read_stack(struct sup_session *s, pid_t tid, uint64_t addr, void *buf, size_t len);

/* x86 debug registers: 4 address slots, one control register (DR7), one
 * status register (DR6), per thread, set through ptrace (the kernel backs
 * each with a hw_breakpoint slot it shares with perf breakpoint events). */
#define SUP_DEBUG_SLOTS 4

enum sup_watch_kind {
	SUP_WATCH_EXEC = 0,      /* trap before executing addr (len must be 1) */
	SUP_WATCH_WRITE = 1,     /* trap after a write */
	SUP_WATCH_READWRITE = 3, /* trap after a read or a write (x86 has no read-only) */
};

/* Arms slot (0-3) on [addr, addr + len): len is 1, 2, 4 or 8 and addr must
 * be aligned to it. -ENOSPC: no hardware slot left (perf breakpoints took
 * them); -EINVAL: bad slot, length or alignment, or a kernel address. */
int sup_thread_watch_set(struct sup_session *s, pid_t tid, unsigned slot, uint64_t addr,
			 unsigned len, enum sup_watch_kind kind);
/* Disarms slot (DR7 enable bit off; the address register stays). */
int sup_thread_watch_clear(struct sup_session *s, pid_t tid, unsigned slot);
/* Reads DR6 (bits 0-3: which slot trapped, bit 14: single-step) and clears
 * it, so the next trap reports only itself. */
int sup_thread_debug_status(struct sup_session *s, pid_t tid, uint64_t *dr6);
/* Signals psup's own events may queue for the target's threads (witch:
 * its sampling signal and SIGTRAP). A thread with one of them pending is
 * not detached until it was dequeued at a signal-delivery stop (where the
 * signal_stop hook consumes psup's own, and delivers the program's). */
void sup_session_set_own_signals(struct sup_session *s, const sigset_t *set);
/* tid queued sig while blocking it (a realtime sampling signal: it would
 * wait there, visible to sigpending(), taken by a sigwait of the program's):
 * interrupts tid and unblocks sig at its stop, so the thread takes it at once
 * at a signal-delivery stop (where the signal_stop hook consumes it), then
 * puts the program's mask back. Returns 0 or -errno. */
int sup_thread_drain_signal(struct sup_session *s, pid_t tid, int sig);
/* The thread's blocked signals (bit sig - 1), PTRACE_GETSIGMASK. */
int sup_thread_sigmask(struct sup_session *s, pid_t tid, uint64_t *mask);
/* The thread's own pending and its blocked signals (bit sig - 1) from
 * /proc/TID/status: the thread need not be stopped. Either may be NULL.
 * 0 or -errno. */
int sup_thread_sigstate(pid_t tid, uint64_t *pending, uint64_t *blocked);

/* /proc of a thread psup need not hold (supervisor/procfs.c); 0 or -errno
 * (-ENOENT: gone). The state letter of /proc/TID/stat (R, S, D, ...). */
int sup_proc_state(pid_t tid, char *state);
/* The state letter of the text of a /proc/TID/stat ('?' when malformed). */
char sup_proc_stat_state(const char *stat);
/* Its name (/proc/TID/comm, without the newline), "" when unknown. */
int sup_proc_comm(pid_t tid, char *buf, size_t len);
/* The system call a thread is blocked in, from /proc/PID/task/TID/syscall
 * (the thread need not be stopped; psup must be allowed to trace it). */
struct sup_syscall {
	long nr;          /* -1: blocked, but not in a system call (a fault) */
	uint64_t args[6]; /* as the thread passed them (nr >= 0) */
	uint64_t sp, pc;  /* pc: the user address it entered the kernel from */
};
/* 0, -EAGAIN when the thread is running or runnable (nothing to tell), or
 * -errno (-ENOENT: gone). */
int sup_thread_syscall(pid_t pid, pid_t tid, struct sup_syscall *out);
/* Whether the session is detaching (or killing) every thread. */
bool sup_session_is_stopping(const struct sup_session *s);
/* Exact mode: from now on every resume of tid (after any stop) is a
 * single-step, until turned off. */
int sup_thread_set_stepping(struct sup_session *s, pid_t tid, bool on);
/* DR7 of tid as the kernel holds it (tests: nothing left armed). */
int sup_thread_debug_control(struct sup_session *s, pid_t tid, uint64_t *dr7);
/* ---- causal profiling: pausing threads, intercepting sync calls -------- */

/*
 * Coz's virtual speedups need two things only the supervisor can do: hold a
 * thread still for a while (a pause), and see a thread at the system calls
 * that can block on or wake another thread, before and after them.
 *
 * Pausing keeps the thread ptrace-stopped: sup_thread_pause() interrupts it;
 * at its interrupt stop, when it is in user code (not inside a blocking call,
 * where an interrupt would make calls fail with EINTR or re-check their
 * condition), the hold hook says how long to keep it, and a timer resumes
 * it. A thread found inside a system call is let go at once (its call
 * restarts; the never-restarted ones are re-issued as at a detach).
 *
 * Interception (run mode only, SUP_SPAWN_CAUSAL_FILTER): a seccomp filter
 * installed in the child after the seize and before exec returns
 * SECCOMP_RET_TRACE for futex operations that can block or wake (block only,
 * with SUP_SPAWN_CAUSAL_NO_WAKES; wake only with SUP_SPAWN_CAUSAL_NO_FUTEX;
 * none with both), futex_waitv, the signal-sending calls,
 * sigtimedwait/sigsuspend, a thread's exit (not with
 * SUP_SPAWN_CAUSAL_NO_EXIT), and the calls that block on I/O or time.
 * Everything else runs untouched. Because such a filter makes the calls fail
 * with ENOSYS once nobody traces the process, a session with the filter never
 * detaches: it supervises every descendant until it exits (they are traced
 * with EXITKILL, so a killed psup takes them along: ptrace-rules.md scenario 3),
 * and a stop request (a write error) only stops profiling, not tracing.
 */

/* SECCOMP_RET_DATA of psup's filter: a stop with other data comes from the
 * program's own filter, which psup answers with the ENOSYS the program would
 * have seen without a tracer. */
#define SUP_SECCOMP_DATA 0x7053u
/* SECCOMP_RET_DATA of the filter every run-mode program gets where no
 * privilege is lost by it: ptrace(TRACEME/ATTACH/SEIZE) stops, so that psup
 * lets go of the thread the program wants to trace (supervisor/nested.c). */
#define SUP_SECCOMP_PTRACE_DATA 0x7054u

struct sup_pause_hooks {
	/* tid is stopped where holding it changes nothing the program sees
	 * (an interrupt stop in user code, or before an intercepted call):
	 * return the ns to hold it, 0 to resume at once. in_syscall: the
	 * thread turned out to be inside a blocking call (it is resumed at
	 * once whatever is returned; the hook may note it is blocked). */
	uint64_t (*hold)(void *arg, pid_t tid, bool in_syscall);
	/* The pause timer fired, at the earliest hold's deadline (held is
	 * called next for each hold that ran out): the hook may take in what
	 * happened meanwhile; the time it takes counts as lost by those
	 * threads. It must not pause, resume or hold threads. */
	void (*due)(void *arg);
	/* A hold ended: asked_ns as returned by hold, lost_ns the time the
	 * thread really lost (from its stop as seen by psup to its resume, or
	 * to the end of this segment when it is held on), for Coz's excess
	 * accounting. may_extend: the thread can be held on (its hold ran
	 * out, it is not being let go); return the ns to hold it on for (it
	 * came to owe more while held), 0 to resume it. It must not pause,
	 * resume or hold threads itself. */
	uint64_t (*held)(void *arg, pid_t tid, uint64_t asked_ns, uint64_t lost_ns, bool may_extend);
	/* An intercepted call is about to run (before hold is asked). Return
	 * true to see its return through syscall_exit, after which hold is
	 * asked again (the thread may pay there). */
	bool (*syscall_enter)(void *arg, pid_t tid, int nr, const uint64_t args[6]);
	void (*syscall_exit)(void *arg, pid_t tid, int nr, int64_t ret);
	/* A signal-delivery stop: true when it is a trap the hooks set for
	 * pausing (it is then never delivered: hold is asked, and the thread
	 * resumes without the signal). */
	bool (*trap)(void *arg, pid_t tid, const siginfo_t *si);
	/* A pause request's stop, in user code, as psup sees it at now
	 * (before hold is asked): the thread stopped for the pause alone, so
	 * the time from its stop to now is lost to the pause too. */
	void (*interrupted)(void *arg, pid_t tid, uint64_t now);
	void *arg;
};

/* Sets the hooks (copied). Before sup_session_run(). */
void sup_session_set_pause_hooks(struct sup_session *s, const struct sup_pause_hooks *h);

/* Asks for a pause of tid: PTRACE_INTERRUPT now, the hold hook decides at
 * the stop. 0, -EALREADY (a pause is pending or held), -ESRCH (not traced
 * or gone), -EBUSY (detaching, exiting). Never blocks. */
int sup_thread_pause(struct sup_session *s, pid_t tid);
bool sup_thread_is_held(struct sup_session *s, pid_t tid);

struct sup_pause_stats {
	uint64_t requests;        /* sup_thread_pause() calls that interrupted */
	uint64_t holds;           /* stops held (interrupt and seccomp), and extensions */
	uint64_t extended;        /* holds extended as they ran out (held hook) */
	uint64_t skipped;         /* interrupt stops found inside a system call */
	uint64_t held_ns;         /* total asked hold time */
	uint64_t lost_ns;         /* total time lost by held threads */
	uint64_t interrupt_ns;    /* total latency from interrupt request to its stop */
	uint64_t seccomp_stops;   /* intercepted calls (psup's filter) */
	uint64_t seccomp_foreign; /* stops of the program's own filter (ENOSYS) */
	uint64_t trap_stops;      /* traps of the pause hooks (sup_pause_hooks.trap) */
};
void sup_session_pause_stats(const struct sup_session *s, struct sup_pause_stats *out);

/* What the loop did, for psup's cost per program event (-v prints it). A
 * loop that waits only for work makes about one wait per status, timer
 * expiration or ring past its watermark. Test: t1099-no-busy-loop. */
struct sup_loop_stats {
	uint64_t waits;             /* epoll_wait calls */
	uint64_t statuses;          /* wait statuses dispatched */
	uint64_t timers;            /* timer expirations handled: tick, duration, pauses */
	uint64_t hangups;           /* watched fds taken out of the epoll set at EPOLLHUP/EPOLLERR */
	uint64_t early_first_stops; /* new threads resumed in the pass of their creator's clone stop */
	uint64_t creator_late;      /* first stops held for their creator's later clone or fork event */
	uint64_t creator_never;     /* of those, let go without it (SUP_AWAIT_CREATOR_NS) */
	uint64_t exec_early;        /* exec stops resumed before their hooks (exec_may_run) */
};
void sup_session_loop_stats(const struct sup_session *s, struct sup_loop_stats *out);

/*
 * The filter (classic BPF) psup installs with SUP_SPAWN_CAUSAL_FILTER. *out
 * is malloc'ed; the caller frees it. Exposed for the unit test, which loads
 * it into a child and checks which calls stop.
 */
struct sock_fprog;
int sup_seccomp_filter(struct sock_fprog **out, bool waits, bool wakes, bool exits);
/* Installs prog into the calling thread (no allocation; async-signal-safe,
 * for a forked child): without NO_NEW_PRIVS first (privileged, setuid keeps
 * working), with it when that is refused. 0 or -errno. */
int sup_seccomp_install(const struct sock_fprog *prog);
/* The ptrace filter (SUP_SECCOMP_PTRACE_DATA): *out is malloc'ed, the caller
 * frees it. Installed with sup_seccomp_install_privileged() only. */
int sup_seccomp_ptrace_filter(struct sock_fprog **out);
/* Installs prog only where that needs no NO_NEW_PRIVS (CAP_SYS_ADMIN, or
 * NO_NEW_PRIVS set already). Async-signal-safe. 0 or -errno. */
int sup_seccomp_install_privileged(const struct sock_fprog *prog);
/* Whether the calls nr/args would stop under psup's filter (the filter's
 * logic in C, for the engine and the tests). */
bool sup_seccomp_traps(int nr, const uint64_t args[6], bool waits, bool wakes, bool exits);

#endif
