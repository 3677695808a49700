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
 * sp resolves new addresses. Returns 0 or -errno (-ENOMEM, a write error).
 */
int exp_profile_add(struct exp_profile *p, struct sym_space *sp, pid_t pid, pid_t tid,
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

#endif
