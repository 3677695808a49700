#ifndef PSUP_REPORT_REPORT_INTERNAL_H
#define PSUP_REPORT_REPORT_INTERNAL_H

/*
 * Shared by the files of report/: the parsed form of one record (reader.c ->
 * model.c) and the merged profile (model.c -> views.c). Not a public API.
 */

#include "report/report.h"

#include <stdio.h>

#include "common/hash.h"

/* ---- a small hash index over rows kept elsewhere ----------------------- */

/* Maps keys to row numbers; the rows live in the caller's arrays, so the
 * caller gives the hash and an equality test of a key against a row. */
struct rep_index {
	uint32_t *slots; /* row + 1, 0 = empty */
	size_t cap, len;
	uint64_t seed; /* psup_hash_seed(): slots are keyed (common/hash.h) */
};
typedef bool (*rep_index_eq_fn)(const void *ctx, uint32_t row, const void *key);

void rep_index_init(struct rep_index *ix);
void rep_index_release(struct rep_index *ix);
/* Returns the row of key, or UINT32_MAX when absent. */
uint32_t rep_index_find(const struct rep_index *ix, uint64_t hash, rep_index_eq_fn eq,
			const void *ctx, const void *key);
/* Adds row under hash (the key must be absent); rehash needs every row's
 * hash, so the caller passes a callback giving it. Returns 0 or -ENOMEM. */
int rep_index_add(struct rep_index *ix, uint64_t hash, uint32_t row,
		  uint64_t (*row_hash)(const void *ctx, uint32_t row), const void *ctx);

/* FNV-1a, finalized; pass the index's seed, so that strings crafted to
 * collide under one seed do not under another. */
uint64_t rep_hash_bytes(const void *p, size_t n, uint64_t seed);

/* What rep_profile_load() reads from a pipe or device (or beyond a regular
 * file's size at open): a record file larger than this must be a file. */
#define REP_STREAM_MAX ((size_t)1 << 30)
/* rep_profile_load() with that bound given (for tests). */
int rep_profile_load_max(struct rep_profile *p, const char *path, size_t stream_max, char *err,
			 size_t errlen);

/* ---- one record as read ------------------------------------------------ */

/* A text string inside the input buffer (not NUL-terminated); p == NULL
 * when the key was absent or null. */
struct rep_slice {
	const char *p;
	size_t len;
};

struct rep_rframe {
	struct rep_slice function, file;
	uint64_t line;
};

enum rep_rec_type {
	REP_REC_UNKNOWN,
	REP_REC_HEADER,
	REP_REC_THREAD,
	REP_REC_THREAD_END,
	REP_REC_LOC,
	REP_REC_NODE,
	REP_REC_SAMPLES,
	REP_REC_LOST,
	REP_REC_EXEC,
	REP_REC_EXIT,
	REP_REC_END,
	REP_REC_THREAD_TIMES,
	REP_REC_IDLENESS,
	REP_REC_LOCK_WAITS,
	REP_REC_WITCH_CONFIG,
	REP_REC_WITCH_PAIRS,
	REP_REC_WITCH_STATS,
	/* causal records (causal.c) */
	REP_REC_EXPERIMENT,
	REP_REC_LINE_SAMPLES,
	REP_REC_CAUSAL_INFO,
	REP_REC_PROGRESS_TOTALS,
};

/* Keys of every record type; a key means the same thing in every record. */
/* clang-format off */
enum rep_key {
	REP_K_TYPE, REP_K_FORMAT, REP_K_VERSION, REP_K_PSUP, REP_K_MODE, REP_K_ARGV,
	REP_K_PID, REP_K_WALL_NS, REP_K_MONO_NS, REP_K_EVENT, REP_K_PERIOD,
	REP_K_JITTER, REP_K_CLOCK, REP_K_HW_PMU, REP_K_PER_CPU, REP_K_HOSTNAME, REP_K_TID,
	REP_K_PARENT, REP_K_NAME, REP_K_TIME, REP_K_CTX, REP_K_ID, REP_K_ADDR,
	REP_K_IMAGE, REP_K_BUILD_ID, REP_K_OFFSET, REP_K_FRAMES, REP_K_LOC,
	REP_K_COUNTS, REP_K_COUNT, REP_K_PATH, REP_K_STATUS, REP_K_SIGNAL,
	REP_K_REASON, REP_K_SAMPLES, REP_K_LOST, REP_K_UNWIND_FAILURES,
	REP_K_RUNNING, REP_K_RUNNABLE, REP_K_BLOCKED_FUTEX, REP_K_BLOCKED_IO,
	REP_K_BLOCKED_SLEEP, REP_K_BLOCKED_OTHER, REP_K_CPUS, REP_K_WAIT_NS, REP_K_TRACED,
	REP_K_WEIGHTING, REP_K_NEAR, REP_K_SYMBOLS, REP_K_THREAD_EVENTS, REP_K_THREAD_EVENTS_WHY,
	REP_K_NEW_THREADS,
	REP_K_NKEYS
};
/* clang-format on */
/* rep_rec.have is a bit per key */
_Static_assert(REP_K_NKEYS <= 128, "too many record keys for rep_rec.have");

struct rep_rec {
	enum rep_rec_type type;
	unsigned __int128 have;          /* bit rep_key for each key present (not null) */
	uint64_t u[REP_K_NKEYS];         /* unsigned and bool values */
	struct rep_slice s[REP_K_NKEYS]; /* text values */
	/* Arrays point into storage the reader reuses between records. */
	struct rep_slice *argv;
	size_t nargv;
	struct rep_rframe *frames;
	size_t nframes;
	uint64_t *counts;
	size_t ncounts;
	/* keys only causal records use (a key set of their own, so the two
	 * sets do not share the 64-bit have mask) */
	struct rep_crec *causal;
};

static inline bool rep_rec_has(const struct rep_rec *r, enum rep_key k)
{
	return (r->have >> k) & 1;
}

/* ---- the merged profile ------------------------------------------------ */

#define REP_NONE UINT32_MAX

struct rep_mframe {
	uint32_t function; /* string id; never 0 (unknown ones are named) */
	uint32_t file;     /* string id, 0 when unknown */
	uint32_t line;
};

/* The image of a loc whose record names none (or ""): the model and
 * annotate's addresses call it this. */
#define REP_IMAGE_UNKNOWN "[unknown]"
/* The most inlined frames a loc may have: psup writes at most 16 (one
 * address's, SYM_MAX_FRAMES). More is a hostile record: every view walks a
 * sample's path frame by frame, and the top-down tree has a level per
 * frame of each node, so a loc of 8,000 frames under a chain of 2,000
 * nodes made a 104 KiB record take 20 s and 1.9 GB per view. */
#define REP_LOC_MAX_FRAMES 64

/* A merged location: identity is (image, frames) -- an unknown function is
 * named "[image+0xoffset]", which puts the offset into the identity. */
struct rep_mloc {
	uint32_t image;    /* string id, never 0 */
	uint32_t build_id; /* string id of the first build-id seen, or 0 */
	uint64_t offset;
	uint32_t frames;  /* first of nframes in profile->frames */
	uint32_t nframes; /* >= 1, innermost first */
	uint64_t hash;
	/* string id of what the image offers ("dwarf", "symtab", "dynsym",
	 * "none"), 0 when unknown (an older record, not an ELF image) */
	uint32_t symbols;
	/* no function: the name is the image's group ("[ls] (no symbols)",
	 * "[libc.so.6] after memcpy"); the offset stays part of the identity,
	 * so views by instruction can still tell addresses apart */
	bool unnamed;
};

/* A calling-context tree node, merged by (parent, loc). */
struct rep_mnode {
	uint32_t parent; /* node row, REP_NONE for a root */
	uint32_t loc;
};

struct rep_mthread {
	uint32_t run;
	int tid, pid, parent;
	uint32_t name;     /* string id or 0: the latest name */
	uint32_t old_name; /* the first name, when renamed since; else 0 */
	uint64_t samples, lost;
	bool ended;
	/* mono ns of the thread record and of its thread_end, 0 when unknown */
	uint64_t start, end;
	/* thread_times records of the tid, summed; has_times: at least one */
	bool has_times;
	struct rep_thread_times times;
	struct psup_u64map leaves; /* node row + 1 -> samples */
	struct psup_u64map idle;   /* node row + 1 -> idleness, millionths of a sample */
	uint32_t ctx;              /* node row of the creation context, REP_NONE if none */
};

/* Futex waits of one lock (process, address) that one context ended,
 * merged over runs by (pid, address, context node). */
struct rep_mlock {
	uint32_t run;
	int pid;
	uint64_t addr;
	uint32_t ctx; /* node row of the waker, REP_NONE when not sampled */
	bool traced;  /* ctx REP_NONE: a traced thread woke them (between
				wakeup samples), else nobody psup traced */
	bool exit;    /* ended by the exit of a thread last sampled at ctx
				(pthread_join; record reason "exit") */
	uint64_t waits, wait_ns;
};

struct rep_run {
	uint32_t file;  /* string id of the file name */
	uint32_t *argv; /* string ids, nargv of them */
	uint32_t nargv;
	bool has_argv;
	uint32_t mode, event, hostname, version, exec_path, end_reason;
	uint32_t thread_events, thread_events_why; /* header's; 0: absent */
	uint32_t new_threads;                      /* header's (the end's when it says); 0: absent */
	uint64_t own_sets_after;                   /* "inherited_then_per_thread": sets opened per thread */
	uint64_t period, jitter, wall_ns, mono_ns, last_time, end_time;
	bool clock, hw_pmu, per_cpu;
	int pid;
	bool complete; /* an "end" record was read */
	bool truncated;
	size_t nrecords; /* complete records read */
	uint64_t samples, lost, unwind_failures, end_samples, end_lost;
	/* Lost in per-CPU rings (lost records with no tid): every task's
	 * samples on those CPUs, not attributable to the program's. */
	uint64_t lost_cpu;
	bool exited;     /* an exit record of the root pid */
	int exit_status; /* -1 when none */
	int exit_signal; /* 0 when none */
	uint32_t nthreads, nprocesses;
	bool has_times;    /* a thread of the run has thread_times */
	uint32_t cpus;     /* header's "cpus", 0 when absent */
	bool has_idleness; /* an idleness record was read, or thread times with cpus */
};

struct rep_strtab {
	char **strs; /* id -> NUL-terminated copy; id 0 is NULL */
	uint32_t *lens;
	uint32_t len, cap;
	struct rep_index ix;
};

struct rep_profile {
	struct rep_strtab strs;

	struct rep_mloc *locs;
	uint32_t nlocs, locs_cap;
	struct rep_index loc_ix;
	struct rep_mframe *frames;
	uint32_t nframes, frames_cap;

	struct rep_mnode *nodes;
	uint32_t nnodes, nodes_cap;
	struct psup_u64map node_ix; /* (parent+1) << 32 | (loc+1) -> row + 1 */

	struct rep_mthread *threads;
	uint32_t nthreads, threads_cap;

	struct rep_run *runs;
	uint32_t nruns, runs_cap;

	uint64_t samples;
	uint64_t idle_micro; /* all idleness, millionths of a sample */
	bool has_idleness;

	struct rep_mlock *locks;
	uint32_t nlocks, locks_cap;
	struct psup_u64map lock_ix; /* hash of (run, pid, addr, ctx) -> row + 1 */

	/* The last load stopped at a truncated record. */
	bool last_truncated;
	size_t last_nrecords;
	/* witch records, merged (report/witch.c); NULL when none */
	struct rep_witch *witch;
	/* causal experiments (causal.c), NULL until a causal record is read */
	struct rep_causal *causal;
	/* When set, called with each record after the model applied it (the
	 * annotate view reads addresses the merged model does not keep); a
	 * nonzero return stops the load with it. */
	int (*observe)(void *arg, const struct rep_rec *r);
	void *observe_arg;
};

static inline const char *rep_str(const struct rep_profile *p, uint32_t id)
{
	return id && id < p->strs.len ? p->strs.strs[id] : NULL;
}

/* Returns the id of s (interning a copy), 0 for a NULL slice, or a negative
 * errno. */
int64_t rep_strtab_intern(struct rep_strtab *t, const char *s, size_t len);

/* The per-file state of a load (model.c). */
struct rep_loadctx {
	struct rep_profile *p;
	uint32_t run;             /* REP_NONE until the header */
	size_t index;             /* record number, from 0 */
	struct psup_u64map locs;  /* file loc id -> loc row + 1 */
	struct psup_u64map nodes; /* file node id -> node row + 1 */
	struct psup_u64map tids;  /* tid -> thread row + 1 */
	struct psup_u64map pids;  /* pid -> 1 (counts processes) */
	char *err;
	size_t errlen;
	const char *name;
};

void rep_loadctx_init(struct rep_loadctx *c, struct rep_profile *p, const char *name,
		      char *err, size_t errlen);
void rep_loadctx_release(struct rep_loadctx *c);
/* Applies one record; returns 0, or -EINVAL with c->err set, or -ENOMEM. */
int rep_model_apply(struct rep_loadctx *c, const struct rep_rec *r);
/* Called at the end of a file: the truncation state and record count. */
void rep_model_finish(struct rep_loadctx *c, bool truncated);
/* Writes "<name>: record N: <reason>" into c->err. */
void rep_load_error(struct rep_loadctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- calling-context trees for the top-down and bottom-up views (cct.c) -- */

/*
 * Tallent & Mellor-Crummey 2009, sections 2 and 5: the top-down (calling
 * context) view looks down the call chains from the outermost callers, the
 * bottom-up (callers) view looks up from each function to its callers; the
 * flat view is the functions and lines tables.
 *
 * A tree node is one function on one path: every frame of a location is a
 * level of its own (inlined frames included), and siblings merge when they
 * agree on (function, image, call site, inlined). The call site is the
 * (file, line) in the caller where the call was made -- in the top-down tree
 * the caller is the parent, in the bottom-up tree the node itself is the
 * caller and the call site is where it called the callee below it (its
 * parent in that tree).
 * Row 0 is a root that stands for every sample; it has no function.
 */
struct rep_cnode {
	uint32_t parent;     /* REP_NONE for row 0 */
	uint32_t function;   /* string id, 0 only for row 0 */
	uint32_t image;      /* string id */
	uint32_t file, line; /* the call site, 0 when unknown or none */
	uint32_t fn;         /* dense (function, image) index, REP_NONE for row 0 */
	uint32_t depth;      /* row 0 has depth 0 */
	bool inlined;        /* an inlined frame (not the outermost of its loc) */
	bool spawned;        /* top-down: the outermost frame of threads created
				at the parent context (the parent is where the
				creator called clone; file/line its call site) */
	/* top-down: samples in the context (with its callees) / with the
	 * function as the innermost frame. bottom-up: samples of the root
	 * function (with its callees / itself) that came through this path. */
	uint64_t inclusive, exclusive;
	/* top-down only: idleness (millionths of a sample) and overhead
	 * (samples in synchronization and thread management), the same way */
	uint64_t idle_incl, idle_excl, overhead_incl, overhead_excl;
	uint32_t first_child, nchildren; /* into rep_ctree.children */
};

struct rep_ctree {
	struct rep_cnode *nodes;
	uint32_t n, cap;
	uint32_t *children; /* per node, sorted: see the builders */
	uint32_t nfns;      /* distinct (function, image) pairs */
	uint32_t max_depth;
	uint64_t hidden; /* bottom-up: nodes left out by the cuts */
	struct rep_index ix;
	const struct rep_profile *p;
};

/*
 * Builds the top-down tree of p, merged over threads and runs, in time
 * linear in the number of nodes and frames (plus sorting the children by
 * inclusive samples, descending). t is initialized here; release it with
 * rep_ctree_release() whatever this returns (0 or -ENOMEM).
 */
int rep_ctree_top_down(struct rep_ctree *t, const struct rep_profile *p);
/* Same, threads rooted at their creation contexts (see spawned), with
 * idleness, and overhead where overhead[profile node] (NULL: none). */
int rep_ctree_top_down_ext(struct rep_ctree *t, const struct rep_profile *p, const bool *overhead);
/*
 * Builds the bottom-up tree from a top-down one: the children of row 0 are
 * the functions, the children of a node are its callers, sorted by exclusive
 * then inclusive samples, descending. exclusive counts the function's self
 * samples; inclusive its samples with callees, each sample once, through the
 * innermost occurrence of the function on the path (so recursion is not
 * counted twice and inclusive >= exclusive everywhere).
 *
 * Only what a view shows is built, the rest is counted in t->hidden: at most
 * max_depth levels (the function is level 1), nodes with at least
 * min_percent of all samples as exclusive, the first max_functions
 * functions (0: no limit, for each). Time: the items carried up the shown
 * levels, sorted once per shown node. Release t with rep_ctree_release()
 * whatever this returns (0 or -ENOMEM).
 */
int rep_ctree_bottom_up(struct rep_ctree *t, const struct rep_ctree *td, uint32_t max_depth,
			double min_percent, uint32_t max_functions);
void rep_ctree_release(struct rep_ctree *t);
/* The child of node named by these fields, or REP_NONE (for tests). */
uint32_t rep_ctree_child(const struct rep_ctree *t, uint32_t node, const char *function,
			 uint32_t line);

/* ---- shared by the views (views.c) -------------------------------------- */

/* The last component of path (path itself when it ends in '/'). */
const char *rep_base_name(const char *path);

/* ---- parallel efficiency (parallel.c) ------------------------------------ */

/* The default overhead patterns (glob, comma-separated): synchronization
 * and thread management in glibc's pthread, futex and semaphore code. */
extern const char rep_overhead_default[];
/*
 * Per profile node, whether a sample with it as the leaf is parallel
 * overhead (Tallent & Mellor-Crummey, section 2.2): walking from the leaf
 * to its callers through system libraries (libc, ld.so, libstdc++, libgcc,
 * the kernel, the vdso), up to and including the first frame outside them,
 * some function matches one of patterns (NULL: the default). *out is
 * malloc'ed, p->nnodes entries; the caller frees it. 0 or -ENOMEM.
 */
int rep_overhead_flags(const struct rep_profile *p, const char *patterns, bool **out);
/* Whether two threads of one run that have samples were alive at the same
 * time (thread to thread_end; the run's start and end where unknown): only
 * then is there parallelism for the efficiency view to read. A program
 * that ran one thread at a time (an exec replaces the thread, it does not
 * overlap it) has idleness too, but no parallel structure to improve. */
bool rep_profile_parallel(const struct rep_profile *p);
/* The efficiency summary and lock-blame views. 0 or -ENOMEM. */
int rep_view_efficiency(const struct rep_profile *p, const struct rep_ctree *td,
			const struct rep_options *o, FILE *out);
int rep_view_locks(const struct rep_profile *p, const struct rep_options *o, FILE *out);

/* Makes room for one more element (index n) in a uint32-counted array,
 * doubling it. 0 or -ENOMEM. */
int rep_grow32(void **arr, uint32_t *cap, uint32_t n, size_t sz);

/* a + b, saturating: merged counts never wrap. */
static inline uint64_t rep_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* a * b, saturating: a count times a period (a record may say 1e18 of
 * each) never wraps to a small weight. */
static inline uint64_t rep_sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* ---- witch (witch.c) ------------------------------------------------------ */

struct rep_witch;
/* Applies a witch_config / witch_pairs / witch_stats record. 0, -EINVAL
 * (c->err set) or -ENOMEM. */
int rep_witch_apply(struct rep_loadctx *c, const struct rep_rec *r);
void rep_witch_free(struct rep_witch *w);
bool rep_witch_present(const struct rep_profile *p);
/* The witch view in o->format (JSON: a ",\"witch\":{...}" member). */
int rep_witch_print(const struct rep_profile *p, const struct rep_options *o, FILE *out);

/* ---- causal records and the causal view (causal.c) --------------------- */

/* Keys of the causal records beyond the common ones ("type", "time", "mode",
 * "count" are read as rep_key). */
/* clang-format off */
enum rep_ckey {
	REP_CK_FILE, REP_CK_LINE, REP_CK_SPEEDUP, REP_CK_DURATION, REP_CK_DELAY,
	REP_CK_DELAYS, REP_CK_SELECTED_SAMPLES, REP_CK_TOTAL_SAMPLES, REP_CK_PAUSE,
	REP_CK_PAUSES, REP_CK_END_TO_END, REP_CK_POINTS, REP_CK_SYSCALL_CREDITING,
	REP_CK_PERIOD_NS, REP_CK_SCOPE_LINES, REP_CK_NOTE, REP_CK_COUNT0, REP_CK_TIME0,
	REP_CK_NKEYS
};
/* clang-format on */
_Static_assert(REP_CK_NKEYS <= 64, "too many causal record keys");

/* One progress point of an experiment record, as read. */
struct rep_rpoint {
	struct rep_slice name, kind;
	uint64_t delta, arrivals, departures;
	int64_t in_flight;
	int64_t mean_milli; /* the seventh item, when have_mean */
	bool have_mean;
};

struct rep_crec {
	uint64_t have; /* 1 << rep_ckey per key present */
	uint64_t u[REP_CK_NKEYS];
	struct rep_slice s[REP_CK_NKEYS];
	struct rep_rpoint *points; /* reused between records by the reader */
	size_t npoints, points_cap;
};

static inline bool rep_crec_has(const struct rep_crec *r, enum rep_ckey k)
{
	return r && (r->have & (1ULL << k));
}

struct rep_causal;

/* Applies an experiment, line_samples or causal_info record; 0, -EINVAL
 * with c->err set, or -ENOMEM. */
int rep_causal_apply(struct rep_loadctx *c, const struct rep_rec *r);
/* NULL is fine. */
void rep_causal_free(struct rep_causal *cz);
/* The causal view in o->format (text, markdown, json: the ",\"causal\":{}"
 * member of the report object; html and coz: the whole output). 0, -ENOMEM
 * or -EIO. */
int rep_causal_print(const struct rep_profile *p, const struct rep_options *o, FILE *out);

#endif
