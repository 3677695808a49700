#ifndef PSUP_EXPERIMENTS_EXPERIMENTS_H
#define PSUP_EXPERIMENTS_EXPERIMENTS_H

/*
 * The analyses. Each consumes events (unwound samples, thread lifecycles)
 * and writes records; none touches ptrace.
 *
 * The sample profile (DCPI, section 3): counts per (thread, calling
 * context) aggregated in memory, never raw samples. A calling context is a
 * node of a tree interned by (parent node, location); a location is one
 * address of one process, symbolized once, when first seen, and written as a
 * "loc" record. Memory and records grow with the number of distinct contexts,
 * not with run time.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rep_writer;
struct sym_space;

struct exp_profile;

/* Records go to w (not owned). Caller frees with exp_profile_free(). */
int exp_profile_new(struct rep_writer *w, struct exp_profile **out);
void exp_profile_free(struct exp_profile *p);

enum exp_sample_flags {
	EXP_SAMPLE_KERNEL = 1 << 0, /* taken in the kernel: a [kernel] leaf above pcs */
};

/*
 * Adds one sample of thread tid of process pid. pcs[0] is the sampled
 * instruction (or, with EXP_SAMPLE_KERNEL, the user instruction the thread
 * entered the kernel from), then return addresses, innermost first.
 * sp resolves new addresses. Returns the sample's leaf node id (0 when there
 * was nothing to count: npcs 0 and no kernel leaf) or -errno (-ENOMEM, a
 * write error).
 */
int64_t exp_profile_add(struct exp_profile *p, struct sym_space *sp, pid_t pid, pid_t tid,
			const uint64_t *pcs, unsigned npcs, unsigned flags);
/* Interns the calling context pcs (innermost first) of process pid without
 * counting a sample: a thread's creation context. Returns its leaf node id,
 * 0 when npcs is 0, or -errno. */
int64_t exp_profile_context(struct exp_profile *p, struct sym_space *sp, pid_t pid,
			    const uint64_t *pcs, unsigned npcs);
/* Process pid exec'ed: its addresses mean something else now. */
void exp_profile_forget_process(struct exp_profile *p, pid_t pid);
/* Process pid ended: free what was kept for it. */
void exp_profile_process_end(struct exp_profile *p, pid_t pid);
/* Thread tid ended: write its pending counts and free its table. */
int exp_profile_thread_end(struct exp_profile *p, pid_t tid);
/* Writes the counts gathered since the last flush (one samples record per
 * thread) and clears them. */
int exp_profile_flush(struct exp_profile *p);

struct exp_profile_stats {
	uint64_t samples;
	uint64_t locs;
	uint64_t nodes;
};
void exp_profile_stats(const struct exp_profile *p, struct exp_profile_stats *out);

/*
 * Thread states (Tallent & Mellor-Crummey need to know which threads work):
 * per thread, the time running, runnable (preempted, waiting for a CPU) and
 * blocked, by what it blocked on. Fed from each thread's own ring, in order.
 */
enum exp_block_kind {
	EXP_BLOCK_FUTEX,  /* locks, condition variables, joins, semaphores */
	EXP_BLOCK_IO,     /* read, write, poll, epoll, accept, ... */
	EXP_BLOCK_SLEEP,  /* nanosleep, pause, sigtimedwait, ... */
	EXP_BLOCK_OTHER,
	EXP_BLOCK_KINDS
};

struct exp_thread_times {
	uint64_t running, runnable;        /* ns */
	uint64_t blocked[EXP_BLOCK_KINDS]; /* ns */
};

struct exp_tstate;

int exp_tstate_new(struct exp_tstate **out);
void exp_tstate_free(struct exp_tstate *ts);
/* Thread tid is known from time on: running, or blocked on kind (a thread
 * found asleep at an attach). */
int exp_tstate_thread_start(struct exp_tstate *ts, pid_t tid, uint64_t time, bool blocked,
			    enum exp_block_kind kind);
/* The block sample before a switch-out: what the thread blocks on. */
void exp_tstate_block(struct exp_tstate *ts, pid_t tid, enum exp_block_kind kind);
/* A switch record: in, or out (preempt: still runnable). */
void exp_tstate_switch(struct exp_tstate *ts, pid_t tid, uint64_t time, bool out, bool preempt);
/* Thread tid ended at time: its totals in *out, and it is forgotten.
 * exited: it died, so its life ended at its last switch-out (later time is
 * psup's, reaping it), unless it was never seen switching out. -ENOENT for a
 * thread never started. */
int exp_tstate_thread_end(struct exp_tstate *ts, pid_t tid, uint64_t time, bool exited,
			  struct exp_thread_times *out);
/* What a thread that entered the kernel in function blocks on; arg0 and
 * arg1 are its first two argument registers (for syscall(2) itself). */
enum exp_block_kind exp_block_kind_of(const char *function, uint64_t arg0, uint64_t arg1);

/*
 * Parallel efficiency (Tallent & Mellor-Crummey 2009, section 2.1) and lock
 * blame. Each sample of a working thread carries n_idle / n_w of idleness,
 * n_w being the threads working at that instant, at most one per core
 * (ncpus: the CPUs the program may run on), n_idle = ncpus - n_w. A thread
 * works while it is running or runnable; it idles while blocked. Work
 * itself is the sample profile's counts; this writes "idleness" records
 * (per thread, node -> millionths of a sample) beside them.
 *
 * Lock blame: a futex wait (from a block sample: the address) ends when a
 * thread wakes the waiter (a wakeup sample: the waker's calling context);
 * the wait's time is charged to (process, address, waker context) and
 * written as "lock_waits" records. A wait nobody traced ended (a timeout, a
 * signal) is charged to context 0, one a traced thread ended without a
 * sampled context to context 0 with "traced" set.
 *
 * Events come from each thread's ring in its own order and are replayed in
 * one time order by exp_par_advance(), up to a time every ring is known to
 * be drained to. Node ids are the sample profile's.
 */
struct exp_par;

/* Records go to w (not owned); ncpus >= 1. Free with exp_par_free(). */
int exp_par_new(struct rep_writer *w, unsigned ncpus, struct exp_par **out);
void exp_par_free(struct exp_par *x);
/* The buffering calls return 0 or -ENOMEM. */
int exp_par_thread_start(struct exp_par *x, pid_t tid, uint64_t time, bool working);
int exp_par_thread_end(struct exp_par *x, pid_t tid, uint64_t time);
/* A switch record: in, or out (preempt: still runnable, so working). */
int exp_par_switch(struct exp_par *x, pid_t tid, uint64_t time, bool out, bool preempt);
/* A sample of tid at time, its leaf node (0: ignored). */
int exp_par_sample(struct exp_par *x, pid_t tid, uint64_t time, uint64_t node);
/* tid of process pid enters the kernel's scheduler at time from a futex
 * call on addr (a block sample): a wait, unless the switch-out that
 * follows is a preemption. */
int exp_par_block_futex(struct exp_par *x, pid_t pid, pid_t tid, uint64_t time, uint64_t addr);
/* waker woke wakee at time, from calling context node; EXP_PAR_UNSAMPLED
 * when the wakeup carried no context (wakeup samples with a stack are one
 * in SMP_WAKEUP_PERIOD). A sampled wakeup reported right after the same
 * wakeup unsampled (both events fire) moves the wait to its context. */
#define EXP_PAR_UNSAMPLED UINT64_MAX
int exp_par_wake(struct exp_par *x, pid_t waker, pid_t wakee, uint64_t time, uint64_t node);
/* Replays, in time order, the events up to time until; later ones wait.
 * Events older than an earlier until (a late ring) are replayed next time,
 * against the state of then. 0, -ENOMEM. */
int exp_par_advance(struct exp_par *x, uint64_t until);
/* Writes the idleness and lock waits replayed since the last flush. */
int exp_par_flush(struct exp_par *x);

struct exp_par_stats {
	uint64_t samples;     /* samples replayed */
	uint64_t idle_micro;  /* their idleness, millionths of a sample */
	uint64_t waits;       /* futex waits that ended */
	uint64_t blamed;      /* of which a traced waker ended */
	uint64_t sampled;     /* of which with the waker's context */
};
void exp_par_stats(const struct exp_par *x, struct exp_par_stats *out);

#endif
