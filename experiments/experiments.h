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

/*
 * Witch exact mode (experiments/witch-exact.c): the ground truth behind
 * --witch-exact, as DeadSpy, RedSpy and LoadSpy measure it (Witch paper,
 * sections 3, 5 and 6). The caller single-steps the program and feeds every
 * memory access of every instruction, in program order; this module keeps,
 * per process and per byte of memory, a shadow of the last accesses (who
 * stored it last and whether a load read it since; who loaded it last and
 * the value loaded) and judges each access:
 *
 * - dead store: each byte stored is judged at its next access. Stored again
 *   before any load read it: that byte is wasted, for the pair (first store's
 *   context, killing store's context). Loaded first: it is used, for the pair
 *   (store, load). A byte never accessed again is not judged.
 * - silent store: a store to bytes that were stored before is judged against
 *   the memory before it: if it writes the value already there it is silent
 *   (waste), else use, for the pair (previous store's context, this store's
 *   context); bytes never stored before are not judged.
 * - silent load: a load of bytes loaded before is silent (waste) when it
 *   reads the value that the previous load of those bytes read, even if
 *   stores changed and restored it in between (LoadCraft 6.2); else use, for
 *   the pair (previous load's context, this load's context).
 *
 * Silent store and silent load give one verdict per access (section 6.4:
 * all bytes of an instruction are wasteful or none), over the bytes that have
 * a predecessor, counted in bytes. Floats and doubles (EXP_WEXACT_FP32/FP64,
 * from SYM_INSN_FP32/FP64) are equal within a relative precision (the paper's
 * evaluation uses 1%): |a - b| <= precision * max(|a|, |b|), or bitwise equal.
 * A read-modify-write access is its load, then its store.
 *
 * The fraction of each analysis is the paper's equation 1:
 * waste / (waste + use), totals over all pairs.
 *
 * Shadow memory is kept per 64-byte line touched (about 10 bytes of shadow
 * per byte of memory touched), in a hash per process; it is freed when the
 * process ends or execs. A process starts with an empty shadow (a forked
 * child too). Not thread-safe: one caller.
 */

enum exp_wexact_kind {
	EXP_WEXACT_DEAD_STORE,
	EXP_WEXACT_SILENT_STORE,
	EXP_WEXACT_SILENT_LOAD,
	EXP_WEXACT_KINDS,
};

/* The same values as SYM_ACCESS_READ/WRITE and SYM_INSN_FP32/FP64, so
 * (access.flags | (insn.flags & (SYM_INSN_FP32 | SYM_INSN_FP64))) can be
 * passed as is. */
enum exp_wexact_flags {
	EXP_WEXACT_READ = 1 << 0,
	EXP_WEXACT_WRITE = 1 << 1,
	EXP_WEXACT_FP32 = 1 << 2,
	EXP_WEXACT_FP64 = 1 << 3,
};

#define EXP_WEXACT_PRECISION 0.01 /* 1%, the paper's section 7 */
#define EXP_WEXACT_MAX_SIZE 4096u /* bytes of one access (fxsave is 512) */

struct exp_wexact_access {
	uint64_t ctx;  /* calling context of the instruction (any value) */
	uint64_t addr;
	unsigned size; /* bytes, 1..EXP_WEXACT_MAX_SIZE */
	unsigned flags; /* enum exp_wexact_flags: READ and/or WRITE, FP32/FP64 */
	/* Memory at [addr, addr + size) before the instruction ran: the value
	 * read by a load, the value overwritten by a store. Required. */
	const uint8_t *before;
	/* Memory after the instruction ran: the value written. Required with
	 * WRITE, ignored otherwise. Not kept after the call. */
	const uint8_t *after;
};

struct exp_wexact;

/* precision: relative precision of float comparisons, >= 0 (0: floats must
 * be exactly equal; EXP_WEXACT_PRECISION is the paper's). Caller frees with
 * exp_wexact_free(). Returns 0, -EINVAL or -ENOMEM. */
int exp_wexact_new(double precision, struct exp_wexact **out);
void exp_wexact_free(struct exp_wexact *w);

/* One access of an instruction of process pid. Accesses of one instruction
 * in the order they happen (string ops: the read before the write). Returns
 * 0, -EINVAL (size 0 or too large, no READ/WRITE, missing value) or -ENOMEM
 * (the analysis stays consistent: that access is dropped). Allocates only
 * when a new line, context or pair is first seen. */
int exp_wexact_access(struct exp_wexact *w, pid_t pid, const struct exp_wexact_access *a);

/* Process pid ended or exec'ed: its shadow is freed (pending stores stay
 * unjudged). Totals and pairs are kept. */
void exp_wexact_process_end(struct exp_wexact *w, pid_t pid);

struct exp_wexact_total {
	uint64_t waste; /* bytes */
	uint64_t use;   /* bytes */
};

/* Totals of one analysis over all pairs. */
void exp_wexact_total(const struct exp_wexact *w, enum exp_wexact_kind kind,
		      struct exp_wexact_total *out);
/* Equation 1: waste / (waste + use); 0 when nothing was judged. */
double exp_wexact_fraction(const struct exp_wexact_total *t);

struct exp_wexact_pair {
	uint64_t watch_ctx; /* the earlier access (first store, previous load) */
	uint64_t trap_ctx;  /* the access that judged it */
	uint64_t waste, use; /* bytes */
};

/* Every pair of one analysis, most waste first (then most use, then by
 * contexts). *out is malloc'ed (NULL when *n is 0); the caller frees it with
 * free(). Returns 0 or -ENOMEM. */
int exp_wexact_pairs(const struct exp_wexact *w, enum exp_wexact_kind kind,
		     struct exp_wexact_pair **out, size_t *n);

struct exp_wexact_stats {
	uint64_t accesses;              /* calls that were counted */
	uint64_t bytes_loaded, bytes_stored;
	uint64_t processes;             /* with a shadow now */
	uint64_t shadow_bytes;          /* memory held by the shadows now */
};

void exp_wexact_stats(const struct exp_wexact *w, struct exp_wexact_stats *out);

#endif
