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
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sym_space;
struct sym_loc;

/* ---- records --------------------------------------------------------------- */

/* What a point measures in the records: a throughput point, or a
 * latency pair (BEGIN and END). */
enum exp_measure { EXP_MEASURE_THROUGHPUT,
		   EXP_MEASURE_LATENCY };

/* One progress point's change over one causal experiment. */
struct exp_point_delta {
	const char *name;
	enum exp_measure kind;
	uint64_t delta;                /* throughput: visits in the experiment */
	uint64_t arrivals, departures; /* latency: BEGIN and END visits in the experiment */
	int64_t in_flight_begin;       /* latency: arrivals - departures at experiment start */
	/* latency: the time average of the requests in flight over the
	 * experiment, when have_mean (written in thousandths) */
	double mean_in_flight;
	bool have_mean;
};

/*
 * A line's samples so far (docs/format.md, "line_samples"): count over the
 * whole run, count0 in the measured parts of the 0% experiments and time0
 * their length (ns; 0: none measured yet). Phase correction reads the
 * line's share of the run from the 0% parts: the pauses of other lines'
 * experiments hold the line's thread, so over the whole run it is sampled
 * less often than it runs.
 */
struct exp_line_samples {
	const char *file;
	unsigned line;
	uint64_t count, count0, time0;
};

/* One finished causal experiment (docs/format.md, "experiment"). */
struct exp_experiment {
	uint64_t time;             /* mono ns at the end */
	const char *file;          /* selected line: full source path as in DWARF */
	unsigned line;             /* its line number */
	unsigned speedup_pct;      /* 0..100 */
	uint64_t duration_ns;      /* wall time of the experiment */
	uint64_t delay_ns;         /* total virtual delay inserted (global count x
				      delay size), the paper's D, and observer_ns */
	uint64_t observer_ns;      /* the part of delay_ns that is the program's
				      time idle in psup's stops (causal.c) */
	uint64_t delays;           /* number of delay units (global count) */
	uint64_t selected_samples; /* samples in the selected line during the
				      experiment (all threads) */
	uint64_t total_samples;    /* all samples during the experiment */
	uint64_t pause_ns, pauses; /* real ptrace-stopped time inserted and number
				      of pauses, for the record */
	unsigned npoints;
	const struct exp_point_delta *points;
	bool end_to_end; /* --runs mode: duration_ns is the whole run */
};

/*
 * Where the analyses' records go. Data flows supervisor -> sampler ->
 * symbols -> experiments -> report, and experiments/ never calls report/:
 * the recorder (builtin/) fills this in with report/'s writer
 * (rec_sink_init()), the unit tests with what they check. Each function
 * returns 0 or -errno (a write error); ctx is passed back. A NULL sink, or
 * a NULL function, drops those records. The record each function writes
 * is in docs/format.md: loc (sl NULL: a kernel address), node, samples,
 * idleness, lock_waits, witch_pairs, witch_stats, experiment, line_samples,
 * progress_totals (cumulative counts of every point: delta = throughput
 * visits, arrivals / departures = latency BEGIN / END visits).
 */
struct exp_sink {
	void *ctx;
	int (*loc)(void *ctx, uint64_t id, pid_t pid, uint64_t addr, const struct sym_loc *sl);
	int (*node)(void *ctx, uint64_t id, uint64_t parent, uint64_t loc);
	int (*samples)(void *ctx, pid_t tid, const uint64_t *pairs, size_t npairs);
	int (*idleness)(void *ctx, pid_t tid, const uint64_t *pairs, size_t npairs);
	int (*lock_waits)(void *ctx, pid_t pid, uint64_t addr, uint64_t node, bool traced,
			  const char *reason, uint64_t waits, uint64_t wait_ns);
	int (*witch_pairs)(void *ctx, const char *kind, const uint64_t *vals, size_t n);
	int (*witch_stats)(void *ctx, const char *name, const uint64_t *vals, size_t n);
	int (*experiment)(void *ctx, const struct exp_experiment *e);
	int (*line_samples)(void *ctx, const struct exp_line_samples *ls);
	int (*progress_totals)(void *ctx, uint64_t time, unsigned n, const struct exp_point_delta *totals);
};

/* ---- the sample profile (experiments/profile.c) ---------------------------- */

struct exp_profile;

/* Records go to out (may be NULL; copied). Caller frees with
 * exp_profile_free(). */
int exp_profile_new(const struct exp_sink *out, struct exp_profile **out_p);
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
	EXP_BLOCK_FUTEX, /* locks, condition variables, joins, semaphores */
	EXP_BLOCK_IO,    /* read, write, poll, epoll, accept, ... */
	EXP_BLOCK_SLEEP, /* nanosleep, pause, sigtimedwait, ... */
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
/* What system call nr (x86-64) blocks on. */
enum exp_block_kind exp_block_kind_of_nr(long nr);

/*
 * A blocking site: a user address where threads of one process entered the
 * kernel before a switch-out (a block sample's IP). What they block on is
 * the system call made there, whatever library made it; perf's registers
 * lack its number (AX is -ENOSYS at entry), so a site learns it once:
 *  - from its code: a syscall instruction just before it, and the number
 *    the instructions before that load into eax (glibc's wrappers, Go's
 *    runtime, musl); no syscall instruction: a preemption or a fault in
 *    user code, never asked again;
 *  - from /proc/PID/task/TID/syscall, while the thread is still blocked at
 *    the site: for the first EXP_BLOCK_SITE_EAGER reads, then at one sample
 *    in EXP_BLOCK_SITE_RECHECK (a lock-heavy program would pay a read per
 *    switch). It confirms or corrects the code's number; a second number
 *    later makes the site a raw syscall(2) wrapper;
 *  - until then, from the names of the functions at the site.
 * At a raw syscall(2) wrapper (also one named syscall), each wait is a
 * futex wait by its arguments (address, op), else the call /proc reports,
 * else the last one it reported.
 */
#define EXP_BLOCK_SITE_EAGER 16
#define EXP_BLOCK_SITE_RECHECK 256
#define EXP_BLOCK_CODE_BYTES 32
/* Answers besides a system call number. */
#define EXP_BLOCK_NR_UNKNOWN (-1L)  /* not known (/proc: not blocked there now) */
#define EXP_BLOCK_NR_NOT_NOW (-2L)  /* not read: the thread is known to run now */
#define EXP_BLOCK_NOT_SYSCALL (-3L) /* no syscall instruction there */
struct exp_block_probe {
	/* The number of the system call the sample's thread is blocked in at
	 * the site's address now (/proc), EXP_BLOCK_NR_UNKNOWN or _NOT_NOW. */
	long (*syscall_nr)(void *arg);
	/* The kind the names of the functions at the site say (asked once);
	 * *raw: the innermost is syscall(2) itself. */
	enum exp_block_kind (*by_name)(void *arg, bool *raw);
	/* Copies the n <= len bytes of code that end at the site into buf
	 * (asked once); returns n, 0 when unreadable. */
	size_t (*code_before)(void *arg, uint8_t *buf, size_t len);
	void *arg;
};
/* The system call number the code before a site (code[0..len), ending at
 * the site) loads into eax before its syscall instruction, or one of the
 * answers above. */
long exp_block_nr_from_code(const uint8_t *code, size_t len);
/* The kind of one block sample at a site whose word is *site (0 at first;
 * updated), arg0 and arg1 its first two argument registers (DI and SI:
 * syscall(2) moves its arguments there before entering the kernel). */
enum exp_block_kind exp_block_site_kind(uint64_t *site, uint64_t arg0, uint64_t arg1,
					const struct exp_block_probe *probe);

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

/* Records go to out (may be NULL; copied); ncpus >= 1. Free with
 * exp_par_free(). */
int exp_par_new(const struct exp_sink *out, unsigned ncpus, struct exp_par **out_x);
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
/* tid of process pid, started at time, has tid_word: the address the
 * kernel clears and wakes at its exit (CLONE_CHILD_CLEARTID's: the tid word
 * of glibc's struct pthread, which pthread_join waits on); 0 when it has
 * none (no call is recorded). A wait on that word is a join: ended by the
 * thread's wakeup, or without any wakeup seen while the thread lives or
 * within a second after its end, it is charged to its exit, from the
 * thread's last sampled context (lock_waits with reason "exit"). No exit
 * stop is needed: the thread's end is exp_par_thread_end(). */
int exp_par_thread_word(struct exp_par *x, pid_t pid, pid_t tid, uint64_t time, uint64_t tid_word);
/* Replays, in time order, the events up to time until; later ones wait.
 * Events older than an earlier until (a late ring) are replayed next time,
 * against the state of then. 0, -ENOMEM. */
int exp_par_advance(struct exp_par *x, uint64_t until);
/* Writes the idleness and lock waits replayed since the last flush. */
int exp_par_flush(struct exp_par *x);

struct exp_par_stats {
	uint64_t samples;    /* samples replayed */
	uint64_t idle_micro; /* their idleness, millionths of a sample */
	uint64_t waits;      /* futex waits that ended */
	uint64_t blamed;     /* of which a traced waker ended */
	uint64_t sampled;    /* of which with the waker's context */
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
	uint64_t ctx; /* calling context of the instruction (any value) */
	uint64_t addr;
	unsigned size;  /* bytes, 1..EXP_WEXACT_MAX_SIZE */
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
	uint64_t watch_ctx;  /* the earlier access (first store, previous load) */
	uint64_t trap_ctx;   /* the access that judged it */
	uint64_t waste, use; /* bytes */
};

/* Every pair of one analysis, most waste first (then most use, then by
 * contexts). *out is malloc'ed (NULL when *n is 0); the caller frees it with
 * free(). Returns 0 or -ENOMEM. */
int exp_wexact_pairs(const struct exp_wexact *w, enum exp_wexact_kind kind,
		     struct exp_wexact_pair **out, size_t *n);

struct exp_wexact_stats {
	uint64_t accesses; /* calls that were counted */
	uint64_t bytes_loaded, bytes_stored;
	uint64_t processes;    /* with a shadow now */
	uint64_t shadow_bytes; /* memory held by the shadows now */
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
	unsigned flags; /* enum exp_witch_access_flags */
};

struct exp_witch_arm {
	unsigned slot; /* debug register */
	enum exp_witch_kind kind;
	uint64_t addr;
	unsigned len;
	bool readwrite; /* RW watch (dead, load), else W (silent) */
};

struct exp_witch_plan {
	unsigned kinds; /* analyses the sample counted for */
	unsigned narm;
	struct exp_witch_arm arm[EXP_WITCH_KINDS];
};

/* The analyses' counters. */
struct exp_witch_kind_stats {
	uint64_t samples, armed, replaced, not_chosen, traps, waste_traps, use_traps;
	uint64_t dropped; /* load: traps that were stores (kept watching) */
	uint64_t unknown; /* traps whose access could not be told load or store */
	uint64_t expired; /* watches still armed when their thread ended */
};
#define EXP_WITCH_KIND_COUNTERS 10

enum exp_witch_skip {
	EXP_WITCH_SKIP_SYSCALL,     /* the thread was in a system call */
	EXP_WITCH_SKIP_NO_ACCESS,   /* the instruction accesses no memory (of a watched kind) */
	EXP_WITCH_SKIP_UNWATCHABLE, /* gather/scatter, unknown size */
	EXP_WITCH_SKIP_DECODE,      /* bytes not an instruction */
	EXP_WITCH_SKIP_READ,        /* code or data unreadable */
	EXP_WITCH_SKIP_STEP,        /* the sampled access did not run first (a signal, another
				     * access to its bytes, another way than predicted) */
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

/* Records go to out (may be NULL; copied). -EINVAL for a bad config.
 * Caller frees with exp_witch_free(). */
int exp_witch_new(const struct exp_sink *out, const struct exp_witch_config *c, struct exp_witch **out_x);
void exp_witch_free(struct exp_witch *x);
const char *exp_witch_kind_name(enum exp_witch_kind kind); /* "dead", "silent", "load" */
const char *exp_witch_skip_name(enum exp_witch_skip why);
/* Debug registers this analysis uses per thread. */
unsigned exp_witch_slots(const struct exp_witch *x, enum exp_witch_kind kind);

/* A sample of thread tid in context ctx: the accesses of the instruction
 * (before it runs). Counts it (mu, by weight[kind] when weight is not NULL,
 * else 1) for each analysis that looks at such an access and says in *plan
 * which registers to arm (at most one per analysis; an armed register
 * replaced by the reservoir is simply re-armed). The caller arms them after
 * the access ran and calls exp_witch_armed(). */
int exp_witch_sample(struct exp_witch *x, pid_t tid, uint64_t ctx,
		     const struct exp_witch_access *acc, unsigned nacc, const double *weight,
		     struct exp_witch_plan *plan);
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

/* ---- causal experiments (Coz, sections 2-3.4) -------------------------- */

/*
 * The experiment engine. One experiment at a time: a line picked at random
 * from recent in-scope samples (or fixed by --line), a speedup from
 * {0, 5, ..., 100}% with P(0) = 1/2 (other steps: --speedup-step;
 * or fixed by --speedup), warmed up at its speedup (at least 10 ms, half
 * the length when that is longer: delays inserted, nothing measured; not
 * after an experiment with the same line and speedup, or 0% after 0%), then
 * measured for the experiment length (doubled, up to a cap, when a
 * progress point saw fewer than the minimum visits, halved back when they
 * saw four times as many), then the next.
 *
 * Virtual speedup (3.4): a sample whose first in-scope frame is the selected
 * line adds one to its thread's local count; when a local count passes the
 * global count it raises the global one (3.4.3, minimizing delays: a line
 * run by every thread does not pause every thread n-1 times). Every thread
 * owes (global - local) x delay, delay = speedup x the mean sampling period;
 * the engine does not pause anyone itself (it never touches ptrace): the
 * command asks the supervisor to stop the candidates, and at the stop asks
 * the engine how long to hold (exp_causal_hold), then reports the real time
 * lost (exp_causal_held), whose excess over the asked time is subtracted from
 * later pauses, like Coz's excess sleep. Crediting (3.4.2): after a call that
 * blocked on another thread returns, the thread's local count jumps to the
 * global one.
 *
 * Records: one experiment record per finished experiment (streamed), the
 * per-line sample totals at each flush (phase correction, eq. 5-8).
 */

struct exp_progress;

#define EXP_CAUSAL_DEFAULT_EXPERIMENT_NS (10ULL * 1000000ULL) /* Coz: 10 ms */
#define EXP_CAUSAL_DEFAULT_SPEEDUP_STEP 5
#define EXP_CAUSAL_DEFAULT_MAX_NS (2ULL * 1000000000ULL)  /* doubling cap */
#define EXP_CAUSAL_DEFAULT_WARMUP_NS (10ULL * 1000000ULL) /* Coz's cool-off: 10 ms */
#define EXP_CAUSAL_MIN_VISITS 5                           /* Coz: 5 */
#define EXP_CAUSAL_PAUSE_MIN_NS (100000ULL)               /* batch debts below 0.1 ms (a stop costs ~20 us) */

struct exp_causal_config {
	uint64_t period_ns;         /* mean sampling period (task ns) */
	uint64_t experiment_ns;     /* initial length (0: default) */
	uint64_t max_experiment_ns; /* doubling cap (0: default) */
	uint64_t warmup_ns;         /* least warm-up at each speedup (0: default) */
	bool no_warmup;             /* measure from the start (unit tests) */
	unsigned min_visits;        /* (0: default) */
	uint64_t pause_min_ns;      /* debts below this are not worth a stop (0: default) */
	int fixed_speedup;          /* 0..100, or -1: random */
	unsigned speedup_step;      /* random speedups' step (0: 5) */
	const char *fixed_line;     /* "FILE:LINE" (path suffix), or NULL */
	const char *const *scope;   /* source path globs (fnmatch); none: every source */
	unsigned nscope;
	const char *const *binary_scope; /* image path globs; none: the main executable */
	unsigned nbinary_scope;
	uint64_t seed; /* 0: random */
};

struct exp_causal;

/* Validates cfg (fixed_line must parse: -EINVAL). pp (may be NULL: no
 * progress points, end-to-end) is not owned; records go to out (may be
 * NULL; copied). Caller frees with exp_causal_free(). */
int exp_causal_new(const struct exp_causal_config *cfg, struct exp_progress *pp,
		   const struct exp_sink *out, struct exp_causal **out_c);
void exp_causal_free(struct exp_causal *c);

/* Thread lifecycle. A new thread owes nothing (its creator's debt stays
 * its creator's: see causal.c). */
int exp_causal_thread_new(struct exp_causal *c, pid_t tid, pid_t pid);
/* time: its death's (0: not known). */
void exp_causal_thread_gone(struct exp_causal *c, pid_t tid, uint64_t time);
/* Process pid exec'ed or ended: its address cache goes. */
void exp_causal_process_forget(struct exp_causal *c, pid_t pid);

/* An unwound sample (pcs[0] the sampled instruction, then return
 * addresses) taken at time (CLOCK_MONOTONIC ns; 0: now) on cpu (-1: not
 * known). sp resolves addresses. Samples reach psup a few ms late: one
 * counts for the experiment when it was taken during it, not when it
 * arrives. A line sample credits the threads preempted on its CPU while
 * they waited (exp_causal_switch). */
void exp_causal_sample(struct exp_causal *c, struct sym_space *sp, pid_t pid, pid_t tid,
		       const uint64_t *pcs, unsigned npcs, uint64_t time, int cpu);
/* A sample's period (ns of thread time it stands for; clock events only):
 * delays are speedup x the mean observed period once 100 were seen (the
 * timer overflows a little late, and the period is randomized), else the
 * configured one. */
void exp_causal_observe_period(struct exp_causal *c, uint64_t period_ns);
/* Switch records (time: the record's, CLOCK_MONOTONIC; 0: now; cpu: where,
 * -1 not known), for which threads may be paused (running or runnable) and
 * which waited behind the line: a thread preempted on a CPU is credited a
 * unit for each line sample taken there until it switched in again. */
void exp_causal_switch(struct exp_causal *c, pid_t tid, bool out, bool preempt, uint64_t time,
		       int cpu);
/* A thread switched out blocked on a futex at time (its block record;
 * crediting without interception of futex calls, attach mode,
 * --no-intercept or --no-futex-stops: it is credited at its next switch-in
 * with the global count as of that switch-in's time, less the debt it had
 * at time, which it still owes). */
void exp_causal_block_futex(struct exp_causal *c, pid_t tid, uint64_t time);
/* Thread waker woke wakee at time (a wakeup record, from either ring, in
 * any order with the switch records). Coz's wrappers make a waker pay before
 * it wakes, so the wakee runs that much later. A run without stops at the
 * wakes (SUP_SPAWN_CAUSAL_NO_WAKES), attach mode and --no-intercept let the
 * waker wake while it still owes: at the wake-up that ends its block the
 * wakee takes over what the waker owed at time (after its usual credit),
 * and pays it itself; the waker still pays its own. A line runner woken by a
 * thread that owes then waits as long as under Coz (the lock's contention a
 * falling curve shows). */
void exp_causal_wakeup(struct exp_causal *c, pid_t waker, pid_t wakee, uint64_t time);

/* Run mode's intercepted calls, at time now. A call that can block on
 * another thread makes the thread's next block and wake-up (its switch
 * records) a credit: no stop at its return. The thread does not pay at such
 * a call (exp_causal_hold asks nothing): its debt goes into the wait and is
 * paid after it, and only the delays inserted while it was blocked are
 * credited (Coz's pre_block/post_block). Returns true when the thread
 * must stop at the call's return to pay what it owes then (exp_causal_hold):
 * a wait for I/O or time during an experiment. */
bool exp_causal_syscall_enter(struct exp_causal *c, pid_t tid, int nr, const uint64_t args[6],
			      uint64_t now);

/* The stop at the return of such a wait (every record read): psup's own,
 * with the thread awake (see exp_causal_syscall_enter). */
void exp_causal_syscall_exit(struct exp_causal *c, pid_t tid);

/* How long to hold stopped thread tid now (ns, 0: not at all); counts the
 * owed delays as paid. in_syscall: it is blocked, do not hold (it pays when
 * it runs again). */
uint64_t exp_causal_hold(struct exp_causal *c, pid_t tid, bool in_syscall);
/* The hold ended at now (psup resumes it next): lost_ns really lost by the
 * thread so far; the time from now to its next switch-in is lost too. */
void exp_causal_held(struct exp_causal *c, pid_t tid, uint64_t asked_ns, uint64_t lost_ns,
		     uint64_t now);
/* After exp_causal_held, for a hold that ran out: how much longer to hold
 * tid (ns, 0: resume it), the line having run on while it was held: what it
 * owes now, when a pause is worth it. Counts it as paid, as exp_causal_hold. */
uint64_t exp_causal_hold_on(struct exp_causal *c, pid_t tid, uint64_t now);
/* tid stopped for a pause request (in user code); psup sees the stop at
 * now, before exp_causal_hold: the time since its switch-out, and until it
 * runs again, is lost to the pause (counted when its records say when). */
void exp_causal_interrupted(struct exp_causal *c, pid_t tid, uint64_t now);
/* psup asked tid to stop for a pause at now: from then until shortly after
 * it runs again, the thread's time in the kernel is the pause's (the
 * interrupt, the ptrace stop and its return: exp_causal_kernel_sample). */
void exp_causal_pause_sent(struct exp_causal *c, pid_t tid, uint64_t now);
/* A sample of tid taken in the kernel at time (period ns): inside one of
 * its pauses' kernel paths it is time lost to the pause, which comes off
 * what it owes, like a hold's overshoot. */
void exp_causal_kernel_sample(struct exp_causal *c, pid_t tid, uint64_t time, uint64_t period);
/* psup itself was sampled on cpu at time (a per-CPU ring): a thread of the
 * program preempted there meanwhile lost period ns to the observer, which
 * comes off what it owes, like a hold's overshoot. */
void exp_causal_observer(struct exp_causal *c, int cpu, uint64_t time, uint64_t period);
/* Threads worth pausing now: owing at least pause_min_ns, not known to be
 * blocked, not waiting for their CPU behind the line, not running the line
 * with a debt of its samples' jitter. Writes up to max tids; returns how
 * many. */
unsigned exp_causal_pause_candidates(struct exp_causal *c, pid_t *tids, unsigned max);
/*
 * Unlock traps (Coz pays a thread's delays in its pthread_mutex_unlock
 * wrapper, before the release: the other threads then wait for the lock
 * while it pays, which is how a faster line that makes a lock busier shows
 * its cost). The command gives a thread a trap at the unlock's entry
 * (set_trap true) and arms it while trap_wanted says so (the thread owes
 * during an experiment); trapped says the thread stopped there (its hold
 * is then asked as for any pause; mutex: the address unlocked, its first
 * argument). A thread that stopped at its trap in the last
 * EXP_CAUSAL_TRAP_RECENT_NS does not pay before a FUTEX_WAKE on a mutex
 * seen at a trap (the unlock's wake, after the release): what it still
 * owes waits for its next trap. (No thread pays before a blocking wait:
 * exp_causal_syscall_enter.) An armed thread is still a pause candidate:
 * a pause must follow the line's execution, not wait for an unlock.
 */
/* A thread counts as unlocking mutexes this long after its last trap. */
#define EXP_CAUSAL_TRAP_RECENT_NS (100ULL * 1000000ULL)
void exp_causal_set_trap(struct exp_causal *c, pid_t tid, bool has_trap);
bool exp_causal_trap_wanted(struct exp_causal *c, pid_t tid);
/* Whether tid would want its trap armed now if it had one: a thread is
 * given one when it first would (one breakpoint opened per thread that
 * ever owes, not per thread). */
bool exp_causal_trap_would_want(struct exp_causal *c, pid_t tid);
void exp_causal_trapped(struct exp_causal *c, pid_t tid, uint64_t now, uint64_t mutex);

/* Drives experiments: starts, ends (writing the record), cools off. Call
 * often (every few ms) and after draining samples. 0 or -errno (a write). */
int exp_causal_tick(struct exp_causal *c, uint64_t now);
/* Whether the engine needs its tick often now: in every experiment (above
 * 0% pauses follow the line; a 0% one is their baseline, and pays the ticks
 * they pay). Between experiments it is slow (the gap before the next one),
 * but for a program with latency points or with unlock traps stopped in the
 * last 100 ms: their gap stays one fast tick, as it was. */
bool exp_causal_wants_fast_tick(const struct exp_causal *c);
/* Writes the per-line sample totals (the sink's line_samples). */
int exp_causal_flush(struct exp_causal *c);
/* The program ended (or psup stops): the running experiment is cut short;
 * it is written with its real duration when it ran at least half its
 * length, dropped otherwise (a few ms of exit would only add noise); the
 * totals are flushed. No delays are owed afterwards. */
int exp_causal_finish(struct exp_causal *c, uint64_t now);

/* End-to-end (--runs): one experiment per run. begin picks the line and
 * speedup (from the lines sampled so far; none yet: speedup 0 on no line);
 * end writes it with the run's duration. */
int exp_causal_run_begin(struct exp_causal *c, uint64_t now);
int exp_causal_run_end(struct exp_causal *c, uint64_t now);

struct exp_causal_stats {
	uint64_t experiments; /* written */
	uint64_t dropped;     /* cut short at the end and dropped */
	uint64_t in_scope_samples, samples;
	unsigned lines;         /* distinct in-scope lines seen */
	uint64_t experiment_ns; /* current length */
	bool running;
	const char *file; /* current experiment's line (NULL when none) */
	unsigned line, speedup_pct;
	bool fixed_line_seen; /* --line: a sample fell on it */
	/* From psup's resume of a held thread to its switch-in, over every
	 * hold whose switch-in was seen (lost time, as a hold's overshoot). */
	uint64_t resume_lag_ns, resumes;
	/* From a pause's stop (its switch-out) to psup's notice of it. */
	uint64_t stop_lag_ns, stops;
	/* The program's samples in the kernel paths of its pauses, and their
	 * periods (exp_causal_kernel_sample). */
	uint64_t stop_kernel_ns, stop_kernel_samples;
	/* psup's own samples on the CPU of a preempted thread, and their
	 * periods: time psup took from the program (exp_causal_observer). */
	uint64_t observer_ns, observer_samples;
	/* The experiments' settling, left out of their measured time. */
	uint64_t settle_ns;
	/* Measured time the program spent idle in psup's stops at
	 * intercepted calls, left out of the experiments' durations. */
	uint64_t observer_idle_ns;
	/* Those stops (not pauses), from switch-out to switch-in. */
	uint64_t observer_stop_ns, observer_stops;
	/* Their time with another thread of the program runnable, in any
	 * part of an experiment: each its thread's own loss, off its debt. */
	uint64_t observer_stop_credit_ns;
};
void exp_causal_stats(const struct exp_causal *c, struct exp_causal_stats *out);

/* Pure helpers, exposed for the unit tests. */
/* A speedup in {0, step, 2 step, ..., 100} (step 0 or not dividing 100:
 * the default): 0 with probability 1/2, else uniform. */
unsigned exp_causal_pick_speedup(uint64_t *rng, unsigned step);
/* The next experiment length: doubled (up to max) when min_delta
 * (exp_causal_min_visits()) is below min_visits, halved (down to min) when
 * it is at least four times min_visits. */
uint64_t exp_causal_next_length(uint64_t len, uint64_t min, uint64_t max, uint64_t min_delta,
				unsigned min_visits);
/* The fewest visits of a point that had any (latency: departures), 0 when
 * none had: what the experiment length follows. */
uint64_t exp_causal_min_visits(const struct exp_point_delta *d, unsigned n);
/* Owed ns of a thread: (global - local) x delay minus its excess (never
 * negative; *excess is updated by what was used). */
uint64_t exp_causal_owed(uint64_t global, uint64_t local, uint64_t delay_ns, int64_t *excess);

/* ---- progress points (experiments/progress.c) ---------------------------- */

/*
 * Progress points (Coz 3.2), counted from outside the program:
 *  - breakpoint points (-p FILE:LINE|FUNCTION, --latency BEGIN,END): a perf
 *    hardware breakpoint counter (sampler/bp.c) on each code site of the
 *    spec (symbols/lookup.c: a line's first statement in each function
 *    instance, a function's entries, inlined copies included), in every
 *    thread, opened when the thread appears; a visit costs the thread a
 *    debug exception (SMP_BP_VISIT_NS), never a ptrace stop;
 *  - sampled points (--sampled-progress): samples whose ip is in the code;
 *  - source-level points (include/psup.h PSUP_PROGRESS, PSUP_BEGIN, ...):
 *    counters in the section "psup_points" of the program's images, found
 *    when a process's images are looked at, read with process_vm_readv.
 *    They are added as points of their own (npoints grows), named as in
 *    the source; the same name and kind anywhere is one point.
 * Counts are cumulative since psup started watching (threads and processes
 * gone included); the engine takes differences.
 */
struct exp_progress;
enum exp_point_kind { EXP_POINT_THROUGHPUT,
		      EXP_POINT_BEGIN,
		      EXP_POINT_END };

/* Caller frees with exp_progress_free() (closes every breakpoint fd). */
int exp_progress_new(struct exp_progress **out);
void exp_progress_free(struct exp_progress *pp);
/* From the CLI: a breakpoint point (sampled=false) or sampled point; name
 * defaults to the spec text. A latency pair is two calls (BEGIN then END)
 * with the same name. -EINVAL + one line in why for a malformed spec or a
 * (name, kind) given twice; -ENOMEM. */
int exp_progress_add(struct exp_progress *pp, const char *spec, enum exp_point_kind kind,
		     const char *name, bool sampled, char *why, size_t whylen);
/* Process pid (re)appeared or its maps changed (first thread after exec,
 * dlopen seen by the symbols refresh, a periodic retry): re-reads its maps
 * (sym_space_refresh), and when they changed since the last call, resolves
 * the specs in every image and finds psup.h counters; opens breakpoints
 * on the known threads of pid for new sites (closing, with their counts
 * kept, those of sites unmapped). Cheap when nothing changed. 0 or -errno. */
int exp_progress_process(struct exp_progress *pp, struct sym_space *sp, pid_t pid);
/* pid exec'ed (or is the process psup just spawned, before its first
 * exp_progress_process): what it had is retired, and its psup.h counters
 * are counted from their initial values, so visits made before psup
 * looked (libraries loaded at start-up) count too. Without this call a
 * process's counters count from when they are found: right for attach
 * and for forked children, whose counters start with the parent's counts. */
void exp_progress_process_exec(struct exp_progress *pp, pid_t pid);
/* Exit or exec: counters of pid gone; their last values read stand (see
 * exp_progress_thread_exiting(); after a single-threaded exec the visits
 * since the previous read are lost). Its threads' breakpoints are closed,
 * their counts kept. */
void exp_progress_process_end(struct exp_progress *pp, pid_t pid);
/* A new thread (before it runs user code): open its breakpoint counters.
 * The process need not be looked up yet. 0 or -errno (-ENOMEM); a thread
 * without a free debug register is not an error (a note says so). */
int exp_progress_thread_new(struct exp_progress *pp, pid_t tid, pid_t pid);
/* The thread exited or psup detaches from it: read its counters a last
 * time, close them. */
void exp_progress_thread_gone(struct exp_progress *pp, pid_t tid);
/* Thread tid of pid is at its PTRACE_EVENT_EXIT stop (sup_hooks
 * thread_exiting) or at its exit system call: its process's memory is
 * still there, so the psup.h counters are read now; at the last thread's
 * exit this is their final count (exp_progress_process_end() comes after
 * the reaping, too late to read anything). One process_vm_readv; nothing
 * when pid has none. pid 0: tid's, as known. */
void exp_progress_thread_exiting(struct exp_progress *pp, pid_t tid, pid_t pid);
/* A sample's ip (pcs[0]) in process pid: counts for sampled points. No
 * allocation, no system call. */
void exp_progress_sample(struct exp_progress *pp, pid_t pid, uint64_t pc);
unsigned exp_progress_npoints(const struct exp_progress *pp);

struct exp_point_value {
	const char *name; /* owned by pp, valid until exp_progress_free() */
	enum exp_point_kind kind;
	uint64_t count;
	bool resolved; /* CLI points: found in some process; psup.h: true */
};
/* Current cumulative counts of every point (breakpoint counters read now,
 * source-level counters read from the targets' memory now), in a stable
 * order: CLI points in the order added, then psup.h points in the order
 * found (appended: npoints may grow after an exp_progress_process). Fills
 * min(n, npoints) entries and returns that number, or -ENOMEM. */
int exp_progress_read(struct exp_progress *pp, struct exp_point_value *out, unsigned n);
/* How many debug registers per thread the points use (witch gets 4 minus
 * this): the most sites in one process, at most 4; before any lookup, one
 * per breakpoint point. */
unsigned exp_progress_debug_slots(const struct exp_progress *pp);
/* Whether tid has a breakpoint progress point's breakpoint at addr. */
bool exp_progress_has_breakpoint(struct exp_progress *pp, pid_t tid, uint64_t addr);
/* Messages for the user, one per call: resolution notes ("-p main.c:12: no
 * code at line 12; using line 13 (main.c:13)", an ambiguous file, a spec
 * not found, no free debug register) and, once per point, the visit-rate
 * warning when a breakpoint point's visits cost more than 2% of a CPU (with
 * the rate, the cost and the alternatives). Call each tick (at least once
 * a second) until it returns 0: returns 1 with a line in msg, else 0. */
int exp_progress_check(struct exp_progress *pp, uint64_t now_ns, char *msg, size_t len);

#endif
