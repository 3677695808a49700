#ifndef PSUP_REPORT_REPORT_H
#define PSUP_REPORT_REPORT_H

/*
 * The record format (one module owns the CBOR schema, both directions; the
 * schema is docs/format.md) and the report: a merged in-memory profile of one
 * or more record files, and its views.
 *
 * A record file is a CBOR sequence (RFC 8742): top-level maps, each with a
 * "type". Records are appended as they happen with one write() each, so a
 * kill of either process loses at most the record being written; the reader
 * accepts a truncated tail.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "experiments/experiments.h"

#define REP_FORMAT_VERSION 1

/* ---- writing ---------------------------------------------------------- */

struct rep_writer;

enum rep_writer_flags {
	REP_WRITER_FORCE = 1 << 0, /* overwrite an existing file */
};

/* Opens path by psup_output_open()'s rules (common/output.h): a new file,
 * -EEXIST for an existing one unless REP_WRITER_FORCE replaces it, or a
 * character device or FIFO as it is. Caller closes with rep_writer_close()
 * or rep_writer_discard(); psup_output_strerror() explains an error. */
int rep_writer_open(const char *path, unsigned flags, struct rep_writer **out);
/* Closes; returns the first write error seen, if any. NULL is fine. */
int rep_writer_close(struct rep_writer *w);
/* Writes the records encoded so far (they wait until REP_WRITER_BATCH bytes
 * do, or this, or the close); returns the first write error seen, if any.
 * NULL is fine. */
int rep_writer_flush(struct rep_writer *w);
/* Closes, and removes path if this writer created the file that is still
 * there (nothing that existed before). NULL is fine. */
void rep_writer_discard(struct rep_writer *w, const char *path);

struct rep_header {
	const char *mode;  /* "run" or "attach" */
	char *const *argv; /* the target command (run), NULL-terminated; may be NULL */
	pid_t pid;
	uint64_t wall_ns;  /* CLOCK_REALTIME at start */
	uint64_t mono_ns;  /* CLOCK_MONOTONIC at start (sample times use it) */
	const char *event; /* "task-clock" */
	uint64_t period;   /* base period, in the event's unit */
	unsigned jitter_pct;
	bool clock_event; /* period is in ns */
	bool hw_pmu;
	bool per_cpu; /* sampled by one cpu-clock event per CPU */
	/* How threads got their side-band events: "inherited" (per-CPU
	 * events a new thread inherits in clone()) or "per_thread" (opened
	 * for each thread), and why not inherited; NULL: not written. */
	const char *thread_events, *thread_events_why;
	/* How psup learnt of the threads and processes the program created:
	 * "records" (the kernel's, none stopped: psup run's default when only
	 * sampling per CPU) or "stopped" (each at its creation, ptrace); NULL:
	 * not written. */
	const char *new_threads;
	const char *hostname;
	unsigned cpus; /* CPUs the program may use (idleness's n); 0: unknown */
};
int rep_write_header(struct rep_writer *w, const struct rep_header *h);

struct rep_thread {
	pid_t tid, pid;
	pid_t parent;     /* creating thread, 0 when unknown (attach) */
	const char *name; /* comm, may be NULL */
	uint64_t time;    /* mono ns */
	uint64_t ctx;     /* node id of the creator's stack at clone, 0 if none */
};
int rep_write_thread(struct rep_writer *w, const struct rep_thread *t);
int rep_write_thread_end(struct rep_writer *w, pid_t tid, uint64_t time);
/* A live thread's new name: a "thread" record of tid, pid and name only
 * (docs/format.md: a later thread record for a live tid updates it). */
int rep_write_thread_rename(struct rep_writer *w, pid_t tid, pid_t pid, const char *name);
/* Time a thread spent in each scheduling state over its life, in ns: on a
 * CPU, runnable but waiting for one, and blocked (sleeping in the kernel),
 * split by what it waited on. */
struct rep_thread_times {
	uint64_t running, runnable, blocked_futex, blocked_io, blocked_sleep, blocked_other; /* ns */
};
/* Writes a "thread_times" record; the recorder writes one per thread, right
 * before the thread's thread_end (time: mono ns, as there). Files without it
 * are valid: the states are then unknown. */
int rep_write_thread_times(struct rep_writer *w, pid_t tid, uint64_t time,
			   const struct rep_thread_times *t);

struct rep_frame {
	const char *function; /* NULL when unknown */
	const char *file;     /* NULL when unknown */
	unsigned line;        /* 0 when unknown */
};
struct rep_loc {
	uint64_t id; /* >= 1, unique in the file */
	pid_t pid;
	uint64_t addr;
	const char *image;
	const char *build_id; /* may be NULL */
	uint64_t offset;
	unsigned nframes; /* innermost (inlined callee) first */
	const struct rep_frame *frames;
};
int rep_write_loc(struct rep_writer *w, const struct rep_loc *l);
/* What a loc's image offers to symbolize it (docs/format.md, "loc"). Apart
 * from rep_loc so that positional initializers of that one stay complete. */
struct rep_loc_symbols {
	/* no frames: the function that ends last before the address in its
	 * section ("near"); NULL when none */
	const char *near;
	/* "dwarf", "symtab", "dynsym" or "none"; NULL when unknown (not an
	 * ELF image) */
	const char *symbols;
};
/* rep_write_loc() with s (NULL: none). */
int rep_write_loc_ext(struct rep_writer *w, const struct rep_loc *l,
		      const struct rep_loc_symbols *s);
/* A calling-context tree node: a call path is a chain of nodes from a root
 * (parent 0, the outermost frame) to a leaf (the sampled instruction). */
int rep_write_node(struct rep_writer *w, uint64_t id, uint64_t parent, uint64_t loc);
/* Sample counts of thread tid since the last samples record of that thread:
 * pairs = { leaf node, count, leaf node, count, ... } (2 * npairs values). */
int rep_write_samples(struct rep_writer *w, pid_t tid, const uint64_t *pairs, size_t npairs);
int rep_write_lost(struct rep_writer *w, pid_t tid, uint64_t count);
/* Idleness of thread tid since its last idleness record (Tallent &
 * Mellor-Crummey, section 2.1): pairs = { leaf node, idleness in millionths
 * of a sample, ... } (2 * npairs values). */
int rep_write_idleness(struct rep_writer *w, pid_t tid, const uint64_t *pairs, size_t npairs);
/* Futex waits in process pid on address addr that the thread at calling
 * context ctx ended since the last such record: their number and total
 * time. ctx 0: no sampled context; traced then says whether a traced thread
 * ended them (a wakeup between wakeup samples) or none did (a timeout, a
 * signal, a thread psup does not trace). reason "exit" (else NULL): the
 * exit of a thread last sampled at ctx ended them (pthread_join). */
int rep_write_lock_waits(struct rep_writer *w, pid_t pid, uint64_t addr, uint64_t ctx,
			 bool traced, const char *reason, uint64_t waits, uint64_t wait_ns);
int rep_write_exec(struct rep_writer *w, pid_t pid, const char *path, uint64_t time);
/* A process of the tree ended: status >= 0 for an exit, signal > 0 for a kill. */
int rep_write_exit(struct rep_writer *w, pid_t pid, int status, int signal, uint64_t time);
struct rep_end {
	uint64_t time;          /* mono ns */
	const char *reason;     /* "exit", "detach", "interrupted", "error" */
	uint64_t samples, lost; /* totals */
	uint64_t unwind_failures;
	/* The header said "inherited" and the kernel refused inheritance for
	 * a new process later: why (NULL: it never did), and how many sets
	 * of events were opened per thread from then on. */
	const char *inherit_refused;
	uint64_t own_sets_after;
	/* The header said new threads were told by the records, and they were
	 * stopped after all (the root's events were not inherited). */
	bool new_threads_stopped;
};
int rep_write_end(struct rep_writer *w, const struct rep_end *e);

/* Witch (docs/format.md, "Witch records"). The run's analyses and how its
 * accesses were sampled; one per run, before any other witch record. */
struct rep_witch_config {
	const char *kinds;         /* "dead,silent,load" (those asked for) */
	const char *event;         /* sampling source: "task-clock" or a precise event */
	uint64_t period;           /* in the event's unit */
	bool clock;                /* time samples (period in ns) */
	bool exact;                /* --witch-exact: every access, single-stepped */
	uint64_t fp_precision_ppm; /* float equality precision, parts per million */
	uint64_t slots;            /* debug registers per thread for witch */
	uint64_t weight;           /* accesses one sample stands for (1 for time) */
	const char *weighting;     /* "instructions", "time" or "events" (docs/format.md) */
};
int rep_write_witch_config(struct rep_writer *w, const struct rep_witch_config *c);
/* Bytes attributed since the previous record of kind ("dead", "silent",
 * "load"): vals = { watch node, trap node, waste, use } * (n / 4). */
int rep_write_witch_pairs(struct rep_writer *w, const char *kind, const uint64_t *vals, size_t n);
/* Counters since the previous record of name: a kind, or "all" (skips); the
 * order is docs/format.md's. */
int rep_write_witch_stats(struct rep_writer *w, const char *name, const uint64_t *vals, size_t n);

/* ---- reading and reporting -------------------------------------------- */

/* The merged view of one or more record files. Opaque. */
struct rep_profile;

int rep_profile_new(struct rep_profile **out);
void rep_profile_free(struct rep_profile *p);
/*
 * Reads path and merges it into p. Locations merge by (image, function, file,
 * line) so runs of different processes and builds add up. A truncated tail
 * is accepted (a warning says what was read); anything else malformed fails
 * with -EINVAL and a one-line reason in err. Returns 0 or -errno.
 */
int rep_profile_load(struct rep_profile *p, const char *path, char *err, size_t errlen);
/* Loads from memory (the fuzzer and unit tests use it). name is used in
 * messages ("<buffer>" when NULL).
 *
 * Both loads write "<name>: <reason>" into err (errno text for an unreadable
 * file; "<name>: record N: <reason>" for a malformed one, N counting from 1).
 * Every record refers only to loc and node ids defined by earlier records of
 * the same file. After an error p holds part of the file: free it. */
int rep_profile_load_buf(struct rep_profile *p, const void *buf, size_t len,
			 const char *name, char *err, size_t errlen);
/* Whether the file loaded last ended in a truncated record (the recorder was
 * killed mid-write); *nrecords gets the number of complete records read. */
bool rep_profile_truncated(const struct rep_profile *p, size_t *nrecords);

enum rep_format {
	REP_FORMAT_TEXT,
	REP_FORMAT_MARKDOWN,
	REP_FORMAT_JSON,
	/* one self-contained HTML page: a flame graph (report/html.c), the
	 * tables, the other views as text, the causal plots as inline SVG */
	REP_FORMAT_HTML,
	/* causal only: Coz's profile.coz text format, for `coz plot` */
	REP_FORMAT_COZ,
	/* causal only: Coz's JSON Lines form (profile.jsonl, Coz >= 0.2.5) */
	REP_FORMAT_COZ_JSONL,
	/* exports (report/export.h): every sample with its whole stack (at
	 * most 2048 frames), whatever the views and cuts say */
	REP_FORMAT_PPROF,      /* pprof's profile.proto, gzipped (binary) */
	REP_FORMAT_FOLDED,     /* "root;...;leaf COUNT" lines (FlameGraph) */
	REP_FORMAT_SPEEDSCOPE, /* speedscope's JSON file format */
};

enum rep_view_bits {
	REP_VIEW_SUMMARY = 1 << 0,
	REP_VIEW_IMAGES = 1 << 1,
	REP_VIEW_FUNCTIONS = 1 << 2,
	REP_VIEW_LINES = 1 << 3,
	REP_VIEW_THREADS = 1 << 4,
	/* the calling-context tree from the outermost callers down */
	REP_VIEW_TOP_DOWN = 1 << 5,
	/* per function (by self samples), its callers as a tree */
	REP_VIEW_BOTTOM_UP = 1 << 6,
	/* futex waits by lock, blamed on the contexts that released them */
	REP_VIEW_LOCKS = 1 << 7,
	/* work, idleness and overhead of the top functions, read as in
	 * Tallent & Mellor-Crummey's Table 1 */
	REP_VIEW_EFFICIENCY = 1 << 8,
	/* the causal profile (experiments): predicted program speedup per line */
	REP_VIEW_CAUSAL = 1 << 9,
	/* witch: wasted-access fractions and pairs (report/witch.c) */
	REP_VIEW_WITCH = 1 << 10,
	/* summary, images, functions, lines, threads; plus efficiency, locks,
	 * causal and witch when the files have that data */
	REP_VIEW_DEFAULT = 0x1f,
	REP_VIEW_ALL = 0x7ff,
};

struct rep_options {
	enum rep_format format;
	unsigned views;     /* rep_view_bits; 0 means REP_VIEW_DEFAULT */
	unsigned top;       /* rows per table, and functions of the
				    bottom-up view; 0 means all */
	double min_percent; /* hide rows below this share */
	/* Parallel overhead: comma-separated glob patterns of function names
	 * (NULL: the default list, see rep_overhead_flags); a leading '+'
	 * adds to the default list instead of replacing it. */
	const char *overhead;
};

/* How much of the top-down and bottom-up trees to print. (Separate from
 * rep_options so that positional initializers of that one stay complete.) */
struct rep_tree_options {
	unsigned depth;     /* levels shown; 0 means all */
	double min_percent; /* hide subtrees below this share: of inclusive
				    samples (top-down), of self samples
				    (bottom-up) */
};

/* Prints the views of o->views to out; 0, -ENOMEM or -EIO. The tree views
 * print every level and node. */
int rep_print(const struct rep_profile *p, const struct rep_options *o, FILE *out);
/* Same, the tree views cut as t says (NULL: every level and node). */
int rep_print_ext(const struct rep_profile *p, const struct rep_options *o,
		  const struct rep_tree_options *t, FILE *out);

/* Copies the JSON text buf (len bytes, e.g. what rep_print() wrote for
 * REP_FORMAT_JSON) to out indented for people: one member or element per
 * line, two spaces per level, empty objects and arrays kept as {} and [].
 * Strings are copied as they are. 0 or -EIO. */
int rep_json_pretty(const char *buf, size_t len, FILE *out);

/* ---- causal profiles (Coz) -------------------------------------------- */

/*
 * Records of causal experiments (docs/format.md, "Causal records"). The
 * recorder writes one "experiment" record when an experiment ends, the
 * per-line sample totals phase correction needs, and one "causal_info"
 * record that says how the experiments were run. report/causal.c turns them
 * into the causal view.
 */

/* The experiment and point types are the causal engine's
 * (experiments/experiments.h): what it measures is what is written. */

/* Writes an "experiment" record. file may be NULL only for an end-to-end
 * experiment without a selected line. */
int rep_write_experiment(struct rep_writer *w, const struct exp_experiment *e);
/* Samples per in-scope source line so far (cumulative; the latest record
 * per (file, line) wins): what phase correction (Coz eq. 5-8) needs.
 * Written at each flush and at the end. The record carries the monotonic
 * time of the call, which gives the runtime the count covers; count0 and
 * time0 only when time0 is not 0. */
int rep_write_line_samples(struct rep_writer *w, const struct exp_line_samples *ls);
/* Same with the time given (mono ns, the clock of the header's mono_ns). */
int rep_write_line_samples_at(struct rep_writer *w, const struct exp_line_samples *ls,
			      uint64_t time);

struct rep_causal_info {
	const char *mode;       /* "run" or "attach" */
	bool syscall_crediting; /* seccomp-based delay crediting in use */
	uint64_t period_ns;     /* sampling period: delay = speedup x period */
	unsigned scope_lines;   /* source lines in scope */
	const char *note;       /* e.g. the attach caveat; may be NULL */
};
int rep_write_causal_info(struct rep_writer *w, const struct rep_causal_info *ci);
/* Cumulative counts of every progress point since the start of the run (the
 * latest record of a file wins): the visits the report shows per point,
 * including those outside experiments. Takes the experiment's struct with
 * totals in it: delta = throughput visits, arrivals / departures = latency
 * BEGIN / END visits, in_flight_begin unused (0). Write it at each flush and
 * at the end. */
int rep_write_progress_totals(struct rep_writer *w, uint64_t time, unsigned n,
			      const struct exp_point_delta *totals);

/* Whether any loaded file holds causal experiment records (the report then
 * shows the causal view by default). */
bool rep_profile_has_causal(const struct rep_profile *p);
/* Number of experiment records loaded. */
size_t rep_profile_nexperiments(const struct rep_profile *p);

#endif
