#ifndef PSUP_BUILTIN_RECORD_H
#define PSUP_BUILTIN_RECORD_H

/*
 * The recorder of psup run / psup attach (builtin/record.c): one event hub
 * between the supervisor's thread events, the sampler's rings and the record
 * file. What is done with the events is up to its modes: the sampling
 * profile (record-profile.c), causal experiments (record-causal.c) and witch
 * (record-witch.c). As perf's builtin-record.c drives a struct perf_tool,
 * the hub knows struct rec_mode and never a mode: it calls the hooks of
 * every mode in the order the modes were given; a NULL hook is skipped.
 * Everything runs on the supervisor's thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "experiments/experiments.h"

struct exp_profile;
struct rep_writer;
struct smp_block;
struct smp_sample;
struct smp_sink;
struct smp_switch;
struct smp_wakeup;
struct sup_hooks;
struct sup_result;
struct sup_session;
struct sym_space;
struct rec;
struct rec_mode;

/* What a mode gets when the record file is open (rec_mode.start). */
struct rec_env {
	struct rep_writer *w;     /* the record file (not owned) */
	struct exp_profile *prof; /* calling contexts: node ids every mode shares */
	uint64_t period;          /* the sampling period; ns when clock */
	bool clock;               /* a time-based sampling event */
	bool attach;              /* psup attach (else psup run) */
	bool wakeups;             /* every wakeup reaches the wakeup hook */
	unsigned cpus;            /* CPUs the program may use */
	/* drain(drain_arg) takes every sample of every ring in now (the
	 * sample hooks run inside). */
	void (*drain)(void *arg);
	void *drain_arg;
};

/* One sample, unwound: pcs[0] the sampled instruction (user space), then
 * the return addresses; n may be 0 (nothing known in user space). */
struct rec_sample {
	pid_t pid, tid;
	struct sym_space *sp; /* pid's address space, NULL when unknown */
	const uint64_t *pcs;
	unsigned n;
	uint64_t time, period;
	int cpu;
	unsigned flags; /* EXP_SAMPLE_* */
};

/* An option of a mode: getopt's long name, has_arg and short letter (0:
 * none); id is what the mode's option hook gets. */
struct rec_option {
	const char *name;
	int has_arg;
	int short_name;
	int id;
};

/*
 * A mode: an object made by its _new() and freed by its free hook; the
 * struct is the first member of the mode's own. Hooks returning int return
 * 0 or -errno (a record write failed: the hub stops profiling and calls
 * every stop hook).
 */
struct rec_mode {
	const char *name;

	/* ---- options (builtin/run.c) ---- */
	const struct rec_option *options; /* ends with a NULL name */
	/* One of its options. Returns -1 to go on, or an exit status (2)
	 * after a one-line error. */
	int (*option)(struct rec_mode *m, int id, const char *arg, bool attach);
	/* Debug registers per thread its options take (breakpoints). */
	unsigned (*debug_slots)(struct rec_mode *m);
	/* After all options; free_slots: the debug registers no mode took.
	 * Returns -1 to go on, or an exit status after an error message. */
	int (*check)(struct rec_mode *m, bool attach, unsigned free_slots);
	/* Its lines of --help: among the common options, or (own_section)
	 * in a section of its own after them. */
	void (*usage)(FILE *f, bool attach);
	bool usage_own_section;
	/* Whether the options asked for it (a mode that is off is freed
	 * before the recorder starts). NULL: always on. */
	bool (*enabled)(const struct rec_mode *m);

	/* ---- set-up ---- */
	/* The record file is open. Returns 0 or -errno after an error message. */
	int (*start)(struct rec_mode *m, const struct rec_env *env);
	/* Extra sup_spawn() flags; asked before each spawn. */
	unsigned (*spawn_flags)(struct rec_mode *m);
	/* Runs of the program (psup run): the largest a mode asks for, at least 1. */
	unsigned (*runs)(struct rec_mode *m);
	/* The loop's tick period it needs (0: the recorder's); the shortest
	 * wins. Asked again after every tick: the period follows it. */
	uint64_t (*tick_ns)(struct rec_mode *m);
	/* After the header record, at the first thread: session s exists
	 * (inside sup_spawn()/sup_attach()), no thread was reported yet. */
	int (*header)(struct rec_mode *m, struct sup_session *s);
	/* After each sup_spawn()/sup_attach() returned. */
	void (*session)(struct rec_mode *m, struct sup_session *s);
	/* psup run: a run of the program begins / ended (its session goes). */
	int (*run_begin)(struct rec_mode *m);
	int (*run_end)(struct rec_mode *m);

	/* ---- lifecycle ---- */
	/* A thread appeared (supervisor's thread_new, or told by the
	 * records with --no-stops): its ring is open. sp: pid's address space
	 * (NULL when unknown); time: when it began. */
	int (*thread_new)(struct rec_mode *m, struct sym_space *sp, pid_t tid, pid_t pid, pid_t parent,
			  bool new_process, uint64_t time);
	/* A new thread of its creator's process, after thread_new: the
	 * creator's registers and stack at the clone (creator), copied at its
	 * clone stop, or sampled at time where the records told the thread.
	 * Not for a new process, an exec's survivor or a thread found by an
	 * attach; not where neither was taken. */
	int (*thread_creator)(struct rec_mode *m, pid_t tid, pid_t pid, uint64_t time,
			      const struct smp_sample *creator);
	/* The mode works on threads psup does not stop (--no-stops): it
	 * pauses none, sets no debug register, reads nothing at a stop. */
	bool no_stops_ok;
	/* At its PTRACE_EVENT_EXIT stop: its memory is still readable. A
	 * mode that sets it makes every thread stop at its exit (a stop and a
	 * resume per thread); without, only leaders do. */
	int (*thread_exiting)(struct rec_mode *m, pid_t tid, pid_t pid);
	/* thread_exiting is wanted at the leaders' exits only: the mode sees
	 * the other threads' ends elsewhere (causal mode's stop at the exit
	 * system call), and they are spared an exit stop each. */
	bool exiting_leaders_only;
	/* It exited, or was detached alive (exited false), at time; its
	 * last samples are still in its ring. */
	int (*thread_gone)(struct rec_mode *m, pid_t tid, bool exited, uint64_t time);
	/* Its ring was drained and closed: no more events of it. */
	int (*thread_drained)(struct rec_mode *m, pid_t tid, bool exited, uint64_t time);
	/* Process pid exec'ed (its threads but one were reported gone). */
	void (*exec)(struct rec_mode *m, struct sym_space *sp, pid_t pid);
	/* Process pid ended at time; root: the process psup started or attached to. */
	int (*process_exit)(struct rec_mode *m, pid_t pid, bool root, uint64_t time);

	/* ---- events ---- */
	int (*sample)(struct rec_mode *m, const struct rec_sample *s);
	int (*context_switch)(struct rec_mode *m, const struct smp_switch *sw);
	/* psup itself was sampled on cpu at time (a CPU ring: per-CPU
	 * sampling only): the observer took period ns of that CPU. */
	void (*observer)(struct rec_mode *m, int cpu, uint64_t time, uint64_t period);
	/* tid blocked (a block sample) on kind; futex: the futex word's
	 * address when kind is EXP_BLOCK_FUTEX. */
	int (*block)(struct rec_mode *m, const struct smp_block *b, enum exp_block_kind kind,
		     uint64_t futex);
	/* A traced thread woke one (wakee traced too); node: the waker's
	 * calling context for a sampled wakeup, REC_UNSAMPLED otherwise. */
	int (*wakeup)(struct rec_mode *m, const struct smp_wakeup *wk, uint64_t node);
	/* The supervisor's signal_stop hook (sp: tid's address space, may be
	 * NULL). Returns enum sup_signal_action bits; the first mode that
	 * returns non-zero decides. */
	int (*signal_stop)(struct rec_mode *m, struct sym_space *sp, pid_t tid, int sig);
	/* Whether addr is an execution breakpoint the mode set in tid. */
	bool (*own_breakpoint)(struct rec_mode *m, pid_t tid, uint64_t addr);

	/* ---- periodic ---- */
	/* The loop's tick, after every ring was drained up to now: at the
	 * shortest period a mode asks (tick_ns), at most 100 ms; the run's
	 * first second drains every 10 ms without calling it. */
	int (*tick)(struct rec_mode *m, uint64_t now);
	/* Counts to the record file (every few seconds, and at the end). */
	int (*flush)(struct rec_mode *m);
	/* Appends its part of the progress line (", 12 experiments"). */
	void (*progress)(struct rec_mode *m, char *buf, size_t len);

	/* ---- teardown ---- */
	/* The run is over, the last events are in: before the last flush.
	 * quiet: no summary on stderr. */
	int (*finish)(struct rec_mode *m, bool quiet);
	/* After the last flush, before the end record. */
	int (*end)(struct rec_mode *m);
	/* Profiling stops (a write failed): no more pauses, no more records. */
	void (*stop)(struct rec_mode *m);
	/* At the very end: true (after one error line) when the options named
	 * nothing the program has; psup then exits 1. */
	bool (*bad_end)(struct rec_mode *m);
	void (*free)(struct rec_mode *m);
};

/* The wakeup hook's node when the wakeup carried no stack. */
#define REC_UNSAMPLED EXP_PAR_UNSAMPLED

/* The modes (each _new() returns NULL when out of memory). */
/* Fills s in so that the analyses' records (experiments/) go to w
 * (builtin/sink.c); w NULL: they are dropped. */
void rec_sink_init(struct exp_sink *s, struct rep_writer *w);

struct rec_mode *rec_profile_new(void);
struct rec_mode *rec_causal_new(void);
struct rec_mode *rec_witch_new(void);
/* Frees m through its free hook; NULL does nothing. */
void rec_mode_free(struct rec_mode *m);

/* What the causal mode asks of the supervisor's session (its pauses and
 * their hooks, and /proc for whether a thread runs): the supervisor's own
 * functions unless a unit test gives a fake (rec_causal_set_sup, before the
 * session hook; NULL: the supervisor's again). */
struct sup_pause_hooks;
struct sup_pause_stats;
struct rec_causal_sup {
	pid_t (*session_pid)(const struct sup_session *s);
	void (*set_pause_hooks)(struct sup_session *s, const struct sup_pause_hooks *h);
	void (*pause_stats)(const struct sup_session *s, struct sup_pause_stats *out);
	bool (*is_stopping)(const struct sup_session *s);
	bool (*is_held)(struct sup_session *s, pid_t tid);
	int (*pause)(struct sup_session *s, pid_t tid);
	int (*proc_state)(pid_t tid, char *state);
};
void rec_causal_set_sup(struct rec_mode *m, const struct rec_causal_sup *sup);

/* How the recorder samples (psup run/attach's common options). */
struct rec_options {
	const char *output;  /* record file */
	bool force;          /* overwrite it */
	const char *event;   /* sampling event name */
	uint64_t period;     /* 0: the event's default */
	unsigned jitter;     /* percent */
	bool no_unwind;      /* --no-call-graph */
	bool no_lock_blame;  /* no wakeup events */
	bool per_thread;     /* no per-CPU sampling */
	bool no_stops;       /* threads and processes told by the records, not stopped */
	bool no_stops_asked; /* ... by --no-stops (else by default: no warning without) */
};

/*
 * Opens the sampling event and the record file and starts the modes
 * (modes[0..n), owned by the recorder from now on, also on failure).
 * mode: "run" or "attach"; pid: the process to attach to (0 for a run).
 * Returns 0, or 1 after an error message (everything freed, the file
 * removed).
 */
int rec_new(const struct rec_options *o, const char *mode, pid_t pid, struct rec_mode **modes,
	    unsigned n, struct rec **out);
/* A recorder without a sampler, writing to w (not owned): the hooks and
 * the sink below are fed by hand (unit tests). */
int rec_new_bare(struct rep_writer *w, const char *mode, struct rec_mode **modes, unsigned n,
		 struct rec **out);
/* The supervisor's hooks and the rings' sink of r. */
const struct sup_hooks *rec_hooks(struct rec *r);
const struct smp_sink *rec_sink(struct rec *r);
/* The loop's tick, as the supervisor's timer calls it (unit tests). */
void rec_tick(struct rec *r);

/* psup run: the command (for the header); runs one run of it. */
void rec_set_argv(struct rec *r, char *const *argv);
int rec_spawn(struct rec *r, char *const argv[], bool follow_forks, char *why, size_t whylen);
/* psup attach: seizes pid. */
int rec_attach(struct rec *r, pid_t pid, char *why, size_t whylen);
struct sup_session *rec_session(struct rec *r);
/* Frees the session of the run that ended (--runs: another follows). */
void rec_session_end(struct rec *r);
/* The event loop, until the program ends or psup detaches. */
void rec_loop(struct rec *r, struct sup_result *res);
int rec_run_begin(struct rec *r);
int rec_run_end(struct rec *r);
unsigned rec_runs(struct rec *r);
/* Whether a record write failed (profiling stopped). */
bool rec_failed(const struct rec *r);
bool rec_quiet(const struct rec *r);
/* Writes the last records and frees r. *bad_end: a mode said the options
 * named nothing the program has (its bad_end hook); psup then exits 1.
 * Returns 0 or -errno. */
int rec_end(struct rec *r, const char *reason, bool *bad_end);
/* Before any record that matters: frees r (and its session) and removes
 * the file. */
void rec_abort(struct rec *r);

#endif
