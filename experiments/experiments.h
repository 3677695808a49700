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
 * in the order they happen (sym_insn_decode() lists them so: reads first).
 * Returns 0, -EINVAL (size 0 or too large, wrapping around the address
 * space, no READ/WRITE, a missing value) or -ENOMEM: when the shadow could
 * not grow the access is dropped whole; when only a new pair could not be
 * created, the bytes for that pair are not counted. Allocates only when a
 * line, context or pair is first seen. */
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

/*
 * Witch, sampled (experiments/witch.c; Witch paper sections 4-6): the
 * decisions and the attribution of DeadCraft, SilentCraft and LoadCraft. The
 * command samples an access, asks here what to watch (reservoir replacement
 * over the debug registers, section 4.1), arms it, and reports each trap;
 * waste and use go to (watch context, trap context) pairs in proportion to
 * the samples of the watch's context (mu and eta, section 4.2). Contexts are
 * node ids of exp_profile_context(). No ptrace here.
 */
enum exp_witch_kind {
	EXP_WITCH_DEAD,   /* dead stores: a store overwritten before any load */
	EXP_WITCH_SILENT, /* silent stores: a store of the value already there */
	EXP_WITCH_LOAD,   /* silent loads: a load of the value loaded last time */
	EXP_WITCH_KINDS,
};

#define EXP_WITCH_MAX_SLOTS 4

/* Access flags: the same values as SYM_ACCESS_READ/WRITE and
 * SYM_INSN_FP32/FP64. */
enum exp_witch_access_flags {
	EXP_WITCH_READ = 1 << 0,
	EXP_WITCH_WRITE = 1 << 1,
	EXP_WITCH_FP32 = 1 << 2,
	EXP_WITCH_FP64 = 1 << 3,
};

struct exp_witch_config {
	unsigned kinds;      /* 1 << enum exp_witch_kind, at least one */
	unsigned slots;      /* debug registers per thread for witch (<= 4, >= kinds) */
	double fp_precision; /* relative; 0.01 is the paper's */
	uint64_t weight;     /* P of section 4.2: accesses one sample stands for (1 for time samples) */
	uint64_t seed;       /* 0: random */
};

/* One access of a sampled instruction: addr/size as decoded, len the bytes a
 * debug register watches at addr (sym_watch_range()). */
struct exp_witch_access {
	uint64_t addr;
	unsigned size, len;
	unsigned flags;      /* enum exp_witch_access_flags */
};

struct exp_witch_arm {
	unsigned slot;       /* debug register */
	enum exp_witch_kind kind;
	uint64_t addr;
	unsigned len;
	bool readwrite;      /* RW watch (dead, load), else W (silent) */
};

struct exp_witch_plan {
	unsigned kinds;      /* analyses the sample counted for */
	unsigned narm;
	struct exp_witch_arm arm[EXP_WITCH_KINDS];
};

/* The analyses' counters. */
struct exp_witch_kind_stats {
	uint64_t samples, armed, replaced, not_chosen, traps, waste_traps, use_traps;
	uint64_t dropped;    /* load: traps that were stores (kept watching) */
	uint64_t unknown;    /* traps whose access could not be told load or store */
	uint64_t expired;    /* watches still armed when their thread ended */
};
#define EXP_WITCH_KIND_COUNTERS 10

enum exp_witch_skip {
	EXP_WITCH_SKIP_SYSCALL,     /* the thread was in a system call */
	EXP_WITCH_SKIP_NO_ACCESS,   /* the instruction accesses no memory (of a watched kind) */
	EXP_WITCH_SKIP_UNWATCHABLE, /* gather/scatter, unknown size */
	EXP_WITCH_SKIP_DECODE,      /* bytes not an instruction */
	EXP_WITCH_SKIP_READ,        /* code or data unreadable */
	EXP_WITCH_SKIP_STEP,        /* a signal came before the sampled access ran */
	EXP_WITCH_SKIP_BLOCKED,     /* the thread blocks the sampling signal */
	EXP_WITCH_SKIP_STRAY,       /* a trap on a register no longer watched */
	EXP_WITCH_SKIPS,
};

struct exp_witch_stats {
	uint64_t signals;    /* sampling signals consumed */
	uint64_t samples;    /* samples given to exp_witch_sample() */
	uint64_t no_slot;    /* arming failed: no hardware slot (ENOSPC) */
	uint64_t arm_failed; /* arming failed otherwise */
	uint64_t skipped[EXP_WITCH_SKIPS];
	struct exp_witch_kind_stats kind[EXP_WITCH_KINDS];
};

struct exp_witch;

/* Records go to w (not owned). -EINVAL for a bad config. Caller frees with
 * exp_witch_free(). */
int exp_witch_new(struct rep_writer *w, const struct exp_witch_config *c, struct exp_witch **out);
void exp_witch_free(struct exp_witch *x);
const char *exp_witch_kind_name(enum exp_witch_kind kind); /* "dead", "silent", "load" */
const char *exp_witch_skip_name(enum exp_witch_skip why);
/* Debug registers this analysis uses per thread. */
unsigned exp_witch_slots(const struct exp_witch *x, enum exp_witch_kind kind);

/* A sample of thread tid in context ctx: the accesses of the instruction
 * (before it runs). Counts it (mu) for each analysis that looks at such an
 * access and says in *plan which registers to arm (at most one per
 * analysis; an armed register replaced by the reservoir is simply re-armed).
 * The caller arms them after the access ran and calls exp_witch_armed(). */
int exp_witch_sample(struct exp_witch *x, pid_t tid, uint64_t ctx,
		     const struct exp_witch_access *acc, unsigned nacc, struct exp_witch_plan *plan);
/* Arming slot of a plan ended: err 0 with the watched bytes' value (len of
 * the arm) after the sampled access, or -errno (-ENOSPC counted apart). */
void exp_witch_armed(struct exp_witch *x, pid_t tid, unsigned slot, int err, const uint8_t *value);
bool exp_witch_slot_is_armed(const struct exp_witch *x, pid_t tid, unsigned slot);
int exp_witch_slot_range(const struct exp_witch *x, pid_t tid, unsigned slot, uint64_t *addr,
			 unsigned *len);

struct exp_witch_verdict {
	enum exp_witch_kind kind;
	bool disarm;  /* the register is free now: disarm it */
	bool dropped; /* a store on a load watch: ignored, keep watching */
	bool waste;
	double bytes; /* attributed */
};
/* Slot of tid trapped: trap_flags is the trapping access (EXP_WITCH_READ
 * and/or WRITE; 0 when unknown), value the watched bytes now, trap_ctx the
 * trapping context. Attributes waste or use to the pair. -ENOENT when the
 * slot is not armed. */
int exp_witch_trap(struct exp_witch *x, pid_t tid, unsigned slot, unsigned trap_flags,
		   const uint8_t *value, uint64_t trap_ctx, struct exp_witch_verdict *out);
/* The caller disarmed slot (e.g. at exec). */
void exp_witch_disarmed(struct exp_witch *x, pid_t tid, unsigned slot);
/* Thread tid ended or exec'ed: its watches are forgotten. */
void exp_witch_thread_end(struct exp_witch *x, pid_t tid);
void exp_witch_skip(struct exp_witch *x, enum exp_witch_skip why);
void exp_witch_signal_seen(struct exp_witch *x);
void exp_witch_get_stats(const struct exp_witch *x, struct exp_witch_stats *out);
/* Waste and use bytes of one analysis so far (equation 1's terms). */
int exp_witch_totals(const struct exp_witch *x, enum exp_witch_kind kind, double *waste,
		     double *use);
/* Writes what accumulated since the last flush: witch_pairs and witch_stats
 * records (docs/format.md). */
int exp_witch_flush(struct exp_witch *x);

#endif
