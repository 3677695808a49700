/*
 * Causal experiments (Coz, sections 2-3.4): the engine. See "causal
 * experiments" in experiments.h. It decides; the command pauses threads
 * through the supervisor and feeds samples and stops back.
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>

#include "common/hash.h"
#include "common/kcompat.h"
#include "common/log.h"
#include "common/util.h"
#include "symbols/symbols.h"

/* Lines picked from the last RECENT in-scope samples. */
#define RECENT 256
/* Address cache values: line index + 1, or OUT_OF_SCOPE. */
#define OUT_OF_SCOPE UINT64_MAX
/* Most progress points an experiment record carries. */
#define MAX_POINTS 64
/* Rises of the global count remembered per experiment, with the time of the
 * sample that caused each: what the count was when a thread woke up. */
#define HIST 4096
/* Samples reach psup at most this late: older history is not searched. */
#define HIST_LAG_NS (200ULL * 1000000ULL)
/* A thread whose last sample in the line is at most this many periods old
 * runs the line itself, and a debt of at most LINE_JITTER_UNITS delays is
 * the jitter of the samples between it and the others: the pause scan leaves
 * it to its own samples (exp_causal_pause_candidates()). Its samples reach
 * psup a few ms late. */
#define LINE_RECENT_PERIODS 3
#define LINE_JITTER_UNITS 2
/* Line samples remembered per experiment with their CPU: those that reach
 * psup before the switch-out of a thread they preempted (preempt_credit()). */
#define LINE_HIST 4096
/* psup's own samples remembered per experiment with their CPU, for the same
 * reason (observer_charge()). */
#define OBS_HIST 256

struct cz_line {
	char *file;
	unsigned line;
	uint64_t samples;  /* whole run */
	uint64_t samples0; /* in the measured parts of 0% experiments */
	uint64_t written;  /* samples at the last flush */
};

/* Raises of a thread's count kept (its count as of a past time, for the
 * wakeups that reach psup a few ms late), and wakeups kept per wakee. */
#define RAISES 8
#define WAKES 4
/* Threads gone lately, kept for the wakeups they made on their way out. */
#define GHOSTS 16
/* Pauses' kernel paths kept per thread: their samples reach psup a tick
 * or two later, while pauses come at most once a tick. */
#define KPATHS 8
/* After a pause's switch-in, the thread returns through the kernel (the
 * ptrace stop, the signal code) before its own code runs again. */
#define KPATH_TAIL_NS (100ULL * 1000ULL)

struct cz_thread {
	pid_t tid, pid;
	uint64_t local; /* delay units: samples in the line + pauses + credits */
	/* Its last raises by a hold or a credit: when, and the count before. */
	struct {
		uint64_t time, before;
	} raises[RAISES];
	unsigned rpos;
	/* Its last wakeups by a thread of the program (the wakeup records),
	 * not yet taken into account: when, and by whom. Coz's waker pays
	 * before it wakes, so the woken thread runs that much later; where
	 * psup does not stop the wakes (--no-wake-stops, attach,
	 * --no-intercept), the woken thread takes over what its waker still
	 * owed then (resolve_wakes). */
	struct {
		uint64_t time;
		pid_t waker;
	} wakes[WAKES];
	unsigned wpos;
	uint64_t credit_blocked; /* when the block credited at credited_at began */
	int64_t excess;          /* ns lost beyond what was asked (Coz's excess sleep) */
	uint64_t taken;          /* delay units owed for its wakers (resolve_wakes) */
	bool blocked;            /* switched out not preempted, or found in a call */
	/* Crediting (Coz 3.4.2) from switch records: a blocking call seen
	 * (WAIT_PENDING, since wait_t0), then the thread switched out not
	 * preempted (WAIT_BLOCKED: it blocked, or attach's block sample said
	 * futex), then its switch-in: credited as of that time. */
	enum { WAIT_NONE,
	       WAIT_PENDING,
	       WAIT_BLOCKED } wait;
	uint64_t wait_t0;
	uint64_t last_in, last_out; /* times of its last switch records */
	/* When it was last credited at a wake-up (0: never in this
	 * experiment): a line sample taken before then that reaches psup
	 * after the switch-in record ran while it was blocked, so it is
	 * credited too rather than paid later on the critical path. */
	uint64_t credited_at;
	/* Its first switch-in after wait_t0: when psup resumed it into its
	 * blocking call (0: not yet). */
	uint64_t resumed_at;
	bool holding; /* a hold asked by exp_causal_hold() has not ended */
	/* When psup last resumed it from a hold (0: its switch-in since was
	 * seen): the time until it runs again is lost too (resume_lag()). */
	uint64_t resumed_hold;
	/* When psup saw its stop for a pause request (0: none pending): the
	 * time from the stop's switch-out to then is lost too. */
	uint64_t interrupted_at;
	/* Its last pauses' kernel paths, from psup's request to shortly
	 * after its switch-in that followed (hi UINT64_MAX: not yet seen;
	 * kpath_pos: the next to fill). */
	struct kpath_span {
		uint64_t lo, hi;
	} kpath[KPATHS];
	unsigned kpath_pos;
	bool trap;         /* it has a trap on its mutex unlocks */
	uint64_t trap_hit; /* when it last stopped at its trap, 0: never */
	/* A blocking call does not make it pay first: its debt goes into the
	 * call and only the delays inserted while it was blocked are credited
	 * at its wake-up (Coz's pre_block() only notes the global count).
	 * call_at is when it entered the call (its switch-out into the stop
	 * that reported it; psup answers the stop later, and line samples
	 * taken meanwhile found it stopped), pre_global the count then as far
	 * as psup knew at the stop; carried, the debt (in units) it took in,
	 * is set at the credit, when every sample taken before the call has
	 * reached psup. */
	uint64_t call_at, pre_global;
	uint64_t carried;
	uint64_t line_at; /* time of its last sample in the selected line */
	/* Its last preemption in the experiment: switched out runnable on
	 * CPU pre_cpu at pre_out, back in at pre_in (0: not yet). Kept until
	 * the next one: a line sample of the wait may reach psup after the
	 * thread ran on and blocked. */
	uint64_t pre_out, pre_in;
	int pre_cpu;
	bool pre_behind; /* a line sample was taken there since */
	bool defer;      /* at a blocking call's stop: do not pay there */
	bool runnable;   /* on a CPU or waiting for one (its switch records) */
	/* A stop of psup's that is no pause (an intercepted call, a wait's
	 * return, an unlock trap): its switch-out (obs_out, 0: none), kept
	 * (obs_keep) whatever the thread does after its resume, or, at a
	 * wait, unless it blocks at once. Its span [cand_a, cand_b) waits for
	 * that at the resume's switch-in (cand_b 0: none); cand_blocked: it
	 * switched out soon after, not preempted: a block (dropped at its
	 * wake-up) or psup's next stop (kept: observer_stop). */
	uint64_t obs_out, cand_a, cand_b;
	bool cand_blocked;
	bool obs_held; /* held for a pause at that stop: the pause's time */
	bool obs_keep;
};

struct cz_proc {
	pid_t pid;
	char exe[PATH_MAX];
	bool exe_known;
	struct psup_u64map pcs; /* pc (| 1<<63 for return addresses) -> line + 1 */
	/* Addresses of the mutexes its threads unlocked at a trap (their
	 * futex word): a FUTEX_WAIT there is a wait for a mutex. */
	struct psup_u64map mutexes;
};
/* Most mutexes remembered per process. */
#define MAX_MUTEXES 4096

/* SETTLING: the experiment's time is up; no more samples count, and the
 * threads that can pay their remaining debt do: with samples reaching psup
 * a few ms late, forgiving the last debts would count delays (the paper's
 * D) that were never inserted. The experiment's time and progress are
 * those up to the settling (settle_vals): the settling itself runs the line
 * at its own speed, with no delays for it, and counted in, it pulled every
 * curve towards 0 (tests/targets/causal-saturated.c at --speedup 100: the
 * settling was 40% of each experiment's measured time, and the critical
 * section read 47-49% at 100% where the truth is 76%; 77-78% now,
 * bench/causal/run.py, 2 rounds). */
enum cz_state { CZ_IDLE,
		CZ_RUNNING,
		CZ_SETTLING };
/* Longest settling: a thread that keeps running without stopping (a stop
 * refused, an exit) must not hold the experiment open. */
#define SETTLE_MAX_NS (20ULL * 1000000ULL)

#define IDLE_SPANS 64

struct span {
	uint64_t a, b;
};

struct exp_causal {
	struct exp_causal_config cfg;
	/* The program's runnable threads, from the switch records; when none
	 * has been since (idle_since), and the last spans with none. */
	int nrunning;
	uint64_t idle_since;
	struct span idle[IDLE_SPANS];
	unsigned ipos;
	/* The last stop spans counted: idle time in two stops at once counts
	 * once. */
	struct span counted[IDLE_SPANS];
	unsigned cpos;
	uint64_t rec_time; /* the latest switch record's */
	uint64_t obs_ns;   /* the measured part's time idle in psup's stops */
	struct exp_progress *pp;
	struct exp_sink out;
	uint64_t rng;

	struct cz_line *lines;
	size_t nlines, caplines;
	struct psup_u64map line_ids; /* hash(file, line) -> index + 1 */
	struct psup_u64map threads;  /* tid -> struct cz_thread * */
	/* Threads gone in this experiment, the latest GHOSTS: a thread's
	 * exit wakes its joiner, and where the exit does not stop
	 * (SUP_SPAWN_CAUSAL_NO_EXIT) the joiner takes over what the thread
	 * still owed then (resolve_wakes()), whose records may be read after
	 * its end. */
	struct cz_thread *ghosts[GHOSTS];
	unsigned nghosts, gpos;   /* held, and the next to replace */
	struct psup_u64map procs; /* pid -> struct cz_proc * */
	char *fixed_file;         /* --line, suffix */
	unsigned fixed_lineno;
	int64_t fixed_index; /* its line index once seen, else -1 */

	uint32_t recent[RECENT];
	unsigned nrecent, recent_pos;

	enum cz_state state;
	uint64_t length; /* current experiment length */
	/* t_start: the delays' start (the warm-up's); t_measure: the
	 * measured part's (see warm_up_ns()). */
	uint64_t t_start, t_measure, t_settle;
	bool warming;
	/* The experiment that has just ended, if the next begins at once:
	 * its line and speedup (the program is as they left it). */
	bool have_last;
	int64_t last_sel;
	unsigned last_speedup;
	int64_t sel; /* selected line index, -1 none */
	unsigned speedup;
	uint64_t delay_ns; /* per unit during the experiment */
	uint64_t global;   /* global delay count in the experiment */
	uint64_t g0;       /* ... as its measured part began */
	uint64_t sel_samples, tot_samples, pause_ns, pauses;
	uint64_t time0; /* the measured parts of 0% experiments, ns (lines' samples0) */
	struct exp_point_value start_vals[MAX_POINTS];
	/* The points as the settling began (the latency integrals stop
	 * there too: flight_area is read no more while settling). */
	struct exp_point_value settle_vals[MAX_POINTS];
	unsigned nsettle;
	unsigned npoints;
	/* Latency pairs (in point_deltas' order): requests in flight at the
	 * last reading (at t_flight), and their integral over the experiment's
	 * virtual time so far (request-ns), read at every tick and every raise
	 * of the global count: Little's L is a time average, and two readings
	 * (start, end) of a count of 0..N made it noise. */
	bool latency;
	uint64_t t_flight;
	double flight_prev[MAX_POINTS], flight_area[MAX_POINTS];
	struct {
		uint64_t time, global;
	} hist[HIST];
	unsigned nhist, hpos;
	struct {
		uint64_t time;
		int cpu;
		pid_t tid;
	} line_hist[LINE_HIST];
	unsigned nline_hist, line_hpos;
	struct {
		uint64_t time, period;
		int cpu;
	} obs_hist[OBS_HIST];
	unsigned nobs_hist, obs_hpos;

	struct exp_causal_stats st;
	uint64_t sum_periods, nperiods; /* observed sample periods (ns) */
	uint64_t now;                   /* of the last tick */
	uint64_t last_trap;             /* the latest stop at an unlock trap */
};

/* ---- pure helpers --------------------------------------------------- */

/*
 * Coz section 2: half of the experiments at 0% (every line's baseline),
 * the rest uniform over step..100 in steps of step (default 5, as Coz).
 * Coarser steps (--speedup-step 25) put more experiments behind each
 * point of a curve, but also an eighth of them at 100%, where a line that
 * runs all the time on another thread pauses everyone else for the whole
 * experiment: its progress point then sees a few visits in almost no
 * effective time, and those experiments swung t5060's unrelated worker
 * line between -67% and +65% at 100%.
 */
unsigned exp_causal_pick_speedup(uint64_t *rng, unsigned step)
{
	uint64_t r = psup_rand_next(rng);

	if (!step || step > 100 || 100 % step)
		step = EXP_CAUSAL_DEFAULT_SPEEDUP_STEP;
	if (r & 1)
		return 0;
	return (unsigned)(((r >> 1) % (100 / step)) + 1) * step;
}

uint64_t exp_causal_next_length(uint64_t len, uint64_t min, uint64_t max, uint64_t min_delta,
				unsigned min_visits)
{
	/* Coz section 2: too few visits, double. */
	if (min_delta < min_visits)
		return len * 2 > max ? max : len * 2;
	/* Four times the visits needed: halve, back towards the initial
	 * length. A start-up that saw few visits must not keep every later
	 * experiment long (PARSEC's dedup kept 1.2 s experiments for a whole
	 * run, 73 experiments where Coz made 162); half of four times still
	 * passes, so the length does not swing back and forth. */
	if (min_delta >= 4ULL * min_visits && len / 2 >= min)
		return len / 2;
	return len;
}

/*
 * The fewest visits of a point that had any in an experiment (latency pairs
 * by their departures), 0 when none had: it sets the next experiment's
 * length. A point idle in this phase of the program (word_count's merge
 * loop while it maps) is not a slow one: counted, it drove the length to
 * its 2 s cap at once (8 experiments in 2.8 s; 108 without that point).
 */
uint64_t exp_causal_min_visits(const struct exp_point_delta *d, unsigned n)
{
	uint64_t min = UINT64_MAX;

	for (unsigned i = 0; i < n; i++) {
		uint64_t v = d[i].kind == EXP_MEASURE_LATENCY ? d[i].departures : d[i].delta;
		if (v && v < min)
			min = v;
	}
	return min == UINT64_MAX ? 0 : min;
}

uint64_t exp_causal_owed(uint64_t global, uint64_t local, uint64_t delay_ns, int64_t *excess)
{
	uint64_t owed;

	if (global <= local)
		return 0;
	owed = (global - local) * delay_ns;
	if (*excess > 0) {
		if ((uint64_t)*excess >= owed) {
			*excess -= (int64_t)owed;
			return 0;
		}
		owed -= (uint64_t)*excess;
		*excess = 0;
	} else if (*excess < 0) {
		/* A hold that ended early: the shortfall is owed too. */
		owed += (uint64_t) - *excess;
		*excess = 0;
	}
	return owed;
}

/* ---- lines and scope ---------------------------------------------------- */

static uint64_t line_hash(const char *file, unsigned line)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = file; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ line) * 1099511628211ULL;
	return h ? h : 1;
}

static bool fixed_matches(const struct exp_causal *c, const char *file, unsigned line)
{
	return c->fixed_file && line == c->fixed_lineno && sym_path_has_suffix(file, c->fixed_file);
}

/* Interns (file, line): its index, or -1 without memory. */
static int64_t line_intern(struct exp_causal *c, const char *file, unsigned line)
{
	uint64_t key = line_hash(file, line);
	uint64_t *v;

	/* Open addressing over the hash: a collision moves to key + 1. */
	for (;;) {
		bool created;
		v = psup_u64map_upsert(&c->line_ids, key, &created);
		if (!v)
			return -1;
		if (created)
			break;
		struct cz_line *l = &c->lines[*v - 1];
		if (l->line == line && !strcmp(l->file, file))
			return (int64_t)(*v - 1);
		key = key + 1 ? key + 1 : 1;
	}
	if (c->nlines == c->caplines) {
		size_t cap = c->caplines ? c->caplines * 2 : 64;
		struct cz_line *n = realloc(c->lines, cap * sizeof(*n));
		if (!n) {
			psup_u64map_remove(&c->line_ids, key);
			return -1;
		}
		c->lines = n;
		c->caplines = cap;
	}
	struct cz_line *l = &c->lines[c->nlines];
	memset(l, 0, sizeof(*l));
	l->file = strdup(file);
	if (!l->file) {
		psup_u64map_remove(&c->line_ids, key);
		return -1;
	}
	l->line = line;
	*v = ++c->nlines;
	if (c->fixed_index < 0 && fixed_matches(c, file, line))
		c->fixed_index = (int64_t)(c->nlines - 1);
	return (int64_t)(c->nlines - 1);
}

static bool glob_matches(const char *const *globs, unsigned n, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (unsigned i = 0; i < n; i++) {
		if (!fnmatch(globs[i], path, 0))
			return true;
		/* "main.c" or "*.c" name a file wherever it is. */
		if (!strchr(globs[i], '/') && !fnmatch(globs[i], base, 0))
			return true;
	}
	return false;
}

static struct cz_proc *proc_get(struct exp_causal *c, pid_t pid)
{
	bool created;
	uint64_t *v = psup_u64map_upsert(&c->procs, (uint64_t)pid, &created);
	struct cz_proc *p;

	if (!v)
		return NULL;
	if (!created)
		return (struct cz_proc *)(uintptr_t)*v;
	p = calloc(1, sizeof(*p));
	if (!p) {
		psup_u64map_remove(&c->procs, (uint64_t)pid);
		return NULL;
	}
	p->pid = pid;
	psup_u64map_init(&p->pcs);
	psup_u64map_init(&p->mutexes);
	*v = (uintptr_t)p;
	return p;
}

static void proc_free(struct cz_proc *p)
{
	psup_u64map_release(&p->pcs);
	psup_u64map_release(&p->mutexes);
	free(p);
}

static bool image_in_scope(struct exp_causal *c, struct cz_proc *p, const char *image)
{
	if (!image)
		return false;
	if (c->cfg.nbinary_scope)
		return glob_matches(c->cfg.binary_scope, c->cfg.nbinary_scope, image);
	/* Coz's default: the main executable. */
	if (!p->exe_known) {
		char path[64];
		ssize_t n;
		snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
		n = readlink(path, p->exe, sizeof(p->exe) - 1);
		p->exe[n > 0 ? n : 0] = '\0';
		p->exe_known = n > 0;
	}
	return p->exe_known && !strcmp(p->exe, image);
}

/* The in-scope line of one address: its innermost in-scope (inlined) frame. */
static uint64_t resolve_pc(struct exp_causal *c, struct sym_space *sp, struct cz_proc *p,
			   uint64_t pc, bool ret)
{
	uint64_t key = pc | (ret ? 1ULL << 63 : 0);
	uint64_t *v = psup_u64map_find(&p->pcs, key);
	struct sym_loc loc;

	if (v && *v)
		return *v;
	uint64_t val = OUT_OF_SCOPE;
	if (sp && key && sym_space_resolve(sp, pc, ret, &loc) == 0 && image_in_scope(c, p, loc.image)) {
		for (unsigned i = 0; i < loc.nframes; i++) {
			const struct sym_frame *f = &loc.frames[i];
			if (!f->file || !f->line)
				continue;
			if (c->cfg.nscope && !glob_matches(c->cfg.scope, c->cfg.nscope, f->file))
				continue;
			int64_t idx = line_intern(c, f->file, f->line);
			if (idx >= 0)
				val = (uint64_t)idx + 1;
			break;
		}
	}
	/* A failed lookup (a missing mapping) may succeed later: not cached. */
	if (key) {
		v = psup_u64map_upsert(&p->pcs, key, NULL);
		if (v)
			*v = val;
	}
	return val;
}

/* ---- threads ----------------------------------------------------------- */

static struct cz_thread *thread_find(struct exp_causal *c, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&c->threads, (uint64_t)tid);

	return v ? (struct cz_thread *)(uintptr_t)*v : NULL;
}

/* A waker: a live thread, or one gone lately (its exit woke its joiner).
 * Every wakeup record asks, most wakers outside the program: the ghosts are
 * looked through only where threads ended in this experiment. */
static struct cz_thread *waker_find(struct exp_causal *c, pid_t tid)
{
	struct cz_thread *t = thread_find(c, tid);

	for (unsigned i = 0; !t && i < c->nghosts; i++)
		if (c->ghosts[i]->tid == tid)
			t = c->ghosts[i];
	return t;
}

static void ghosts_free(struct exp_causal *c)
{
	for (unsigned i = 0; i < c->nghosts; i++)
		free(c->ghosts[i]);
	c->nghosts = c->gpos = 0;
}

int exp_causal_thread_new(struct exp_causal *c, pid_t tid, pid_t pid)
{
	struct cz_thread *t = thread_find(c, tid);
	uint64_t *v;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		v = psup_u64map_upsert(&c->threads, (uint64_t)tid, NULL);
		if (!v) {
			free(t);
			return -ENOMEM;
		}
		*v = (uintptr_t)t;
	}
	t->tid = tid;
	t->pid = pid;
	/* A new thread owes nothing: its creator's debt stays its creator's.
	 * Coz 3.4 gives it the creator's count (the creator's delays delayed
	 * the creation too), but psup's creator carries its debt through its
	 * blocking waits, where Coz's pays it at its next sample batch: a
	 * thread that makes threads, joins them and makes more (Figure 1 with
	 * threads per round) had the same debt paid again by every generation,
	 * and both loops read as contention (slopes -0.84 and -0.41 with
	 * --no-intercept, -0.73 to -0.78 without the unlock trap inside
	 * pthread_create that pays it first; -0.02..0.07 now). Test: t5010. */
	t->local = c->global;
	return 0;
}

static void observer_gone(struct exp_causal *c, struct cz_thread *t, uint64_t time);
static bool experimenting(const struct exp_causal *c);

void exp_causal_thread_gone(struct exp_causal *c, pid_t tid, uint64_t time)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return;
	observer_gone(c, t, time ? time : c->now);
	psup_u64map_remove(&c->threads, (uint64_t)tid);
	if (!experimenting(c)) {
		free(t);
		return;
	}
	if (c->nghosts == GHOSTS)
		free(c->ghosts[c->gpos]);
	else
		c->nghosts++;
	c->ghosts[c->gpos] = t;
	c->gpos = (c->gpos + 1) % GHOSTS;
}

void exp_causal_process_forget(struct exp_causal *c, pid_t pid)
{
	uint64_t *v = psup_u64map_find(&c->procs, (uint64_t)pid);
	struct cz_proc *p;

	if (!v)
		return;
	p = (struct cz_proc *)(uintptr_t)*v;
	psup_u64map_remove(&c->procs, (uint64_t)pid);
	proc_free(p);
}

/* Whether t pays at its mutex unlocks: it has a trap and stopped at it
 * lately. A thread that never unlocks a pthread mutex (barriers, raw
 * futexes, I/O) pays before its blocking calls as before. */
static bool unlocks(const struct exp_causal *c, const struct cz_thread *t)
{
	return t->trap && t->trap_hit && c->now < t->trap_hit + EXP_CAUSAL_TRAP_RECENT_NS;
}

/* Whether the call is futex command cmd on a mutex t's process unlocked at
 * a trap (glibc's lock waits with FUTEX_WAIT on the mutex's first word and
 * its unlock wakes with FUTEX_WAKE there; condition variables, barriers and
 * semaphores use other words or commands). */
static bool mutex_futex(struct exp_causal *c, const struct cz_thread *t, int nr, const uint64_t args[6],
			unsigned cmd)
{
	uint64_t *v = psup_u64map_find(&c->procs, (uint64_t)t->pid);
	const struct cz_proc *p = v ? (const struct cz_proc *)(uintptr_t)*v : NULL;

	return p && nr == SYS_futex && ((unsigned)args[1] & FUTEX_CMD_MASK) == cmd &&
	       psup_u64map_find(&p->mutexes, args[0]);
}

/* Raises t's count to at least to, as of time (kept for local_at). */
static void raise_local(struct cz_thread *t, uint64_t to, uint64_t time)
{
	if (t->local >= to)
		return;
	t->raises[t->rpos].time = time;
	t->raises[t->rpos].before = t->local;
	t->rpos = (t->rpos + 1) % RAISES;
	t->local = to;
}

/* t's count as of time: before its first raise after time (its own line
 * samples, a unit each, are not told apart: they raise the global count
 * alike). When older raises fell out of the history, the answer is too high
 * and a debt taken over from t too small. */
static uint64_t local_at(const struct cz_thread *t, uint64_t time)
{
	uint64_t l = t->local;

	for (unsigned i = 0; i < RAISES; i++)
		if (t->raises[i].time > time && t->raises[i].before < l)
			l = t->raises[i].before;
	return l;
}

/* Credits t at a wake-up (at time) with the global count g: the delays
 * inserted while it was blocked, not the debt it carried into the call. */
static void credit_to(struct cz_thread *t, uint64_t g, uint64_t time)
{
	raise_local(t, g > t->carried ? g - t->carried : 0, time);
}

/* ---- samples -------------------------------------------------------------- */

/* An experiment runs or settles. */
static bool experimenting(const struct exp_causal *c)
{
	return c->state == CZ_RUNNING || c->state == CZ_SETTLING;
}

/* Whether a sample taken at time falls in the running part of the current
 * experiment (settling included for samples taken before it began). */
static bool in_experiment(const struct exp_causal *c, uint64_t time)
{
	if (c->state == CZ_RUNNING)
		return !time || time >= c->t_start;
	if (c->state == CZ_SETTLING)
		return time && time >= c->t_start && time < c->t_settle;
	return false;
}

/* Whether a sample taken at time, in the experiment, falls in its measured
 * part (after the warm-up). */
static bool measured(const struct exp_causal *c, uint64_t time)
{
	return !c->warming && (!time || time >= c->t_measure);
}

/*
 * A rise of the global count by a sample taken at time: the threads credited
 * at a wake-up after that time were blocked while the line ran (they were
 * credited as of their wake-up, Coz 3.4.2), but the sample came from another
 * thread's ring after their switch-in record. Without this they would owe the
 * delay and pay it at their next call, on the critical path, and a serial
 * line whose waiters wake right after it looked barely worth speeding up.
 */
static bool credited_late(const struct exp_causal *c, const struct cz_thread *t, uint64_t time)
{
	return t->credited_at && t->credited_at >= time && t->local < c->global;
}

/*
 * A thread preempted by the line waits while the line runs: had the line
 * been faster, it would have run that much sooner, as a thread blocked on
 * it wakes sooner (Coz 3.4.2). The model behind virtual speedup gives each
 * thread a CPU of its own; on a machine with more runnable threads than
 * CPUs (two workers and the thread that released them on two cores, or
 * psup's own work) a thread behind the line on its CPU would otherwise owe
 * the line's delays and pay them on the critical path: Amdahl's parallel
 * line read 21% at 100% against a truth of 48%. So each line sample taken
 * on the CPU of a thread's preemption, while it waited, credits it a unit
 * (up to the global count). Samples on other CPUs do not: the thread did
 * not wait for them. A sample reaching psup before the preemption's
 * switch-out record is found in line_hist when the record comes.
 */
static void preempt_credit(struct exp_causal *c, struct cz_thread *t, uint64_t units, uint64_t time)
{
	uint64_t to = t->local + units < c->global ? t->local + units : c->global;

	t->pre_behind = true;
	if (to <= t->local)
		return;
	pr_trace("causal: thread %d credited %llu while preempted by the line", t->tid,
		 (unsigned long long)(to - t->local));
	raise_local(t, to, time);
}

static bool preempted_then(const struct cz_thread *t, pid_t by, uint64_t time, int cpu)
{
	return t->tid != by && t->pre_out && cpu == t->pre_cpu && time > t->pre_out &&
	       (!t->pre_in || time <= t->pre_in);
}

static void line_on_cpu(struct exp_causal *c, pid_t tid, uint64_t time, int cpu)
{
	c->line_hist[c->line_hpos].time = time;
	c->line_hist[c->line_hpos].cpu = cpu;
	c->line_hist[c->line_hpos].tid = tid;
	c->line_hpos = (c->line_hpos + 1) % LINE_HIST;
	if (c->nline_hist < LINE_HIST)
		c->nline_hist++;
}

/* by's line sample taken at time on cpu (-1: not known), which raised the
 * global count or not: one walk credits the threads it left behind, those
 * woken late (credited_late) and those waiting on that CPU (preempted_then). */
static void credit_behind(struct exp_causal *c, const struct cz_thread *by, uint64_t time, bool rose,
			  int cpu)
{
	for (size_t i = 0; i < c->threads.cap; i++) {
		if (!c->threads.keys[i] || !c->threads.vals[i])
			continue;
		struct cz_thread *t = (struct cz_thread *)(uintptr_t)c->threads.vals[i];
		if (t == by)
			continue;
		if (rose && credited_late(c, t, time))
			credit_to(t, c->global, t->credited_at);
		if (cpu >= 0 && preempted_then(t, by->tid, time, cpu))
			preempt_credit(c, t, 1, time);
	}
}

/*
 * The observer is not the program. psup runs at SCHED_FIFO on the
 * program's CPUs: whatever it does there (draining rings, unwinding,
 * pausing and resuming) preempts a thread of the program, which then waits
 * for its CPU. That wait is a delay only that thread paid, and it grows
 * with the experiment's pauses: counted nowhere, it was the program's, and
 * a line whose speedup only makes others pause (a spinner beside the
 * worker, both busy, as many busy threads as CPUs) read as contention. So
 * each of psup's own samples in the CPU rings (per-CPU sampling), taken on
 * the CPU of a thread's preemption while it waited, counts its period as
 * time that thread already lost: its excess, as a hold's overshoot, comes
 * off what it owes (Coz's excess sleep). Sampling makes it exact on
 * average, as for the line's own samples.
 */
static void observer_charge(struct exp_causal *c, struct cz_thread *t, uint64_t ns)
{
	t->excess += (int64_t)ns;
	c->st.observer_ns += ns;
	c->st.observer_samples++;
}

static void observer_commit(struct exp_causal *c, struct cz_thread *t);

void exp_causal_interrupted(struct exp_causal *c, pid_t tid, uint64_t now)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return;
	/* Stopped for a pause: it ran since its last stop's resume. */
	if (t->cand_b)
		observer_commit(c, t);
	t->interrupted_at = now;
	/* Resumed at once when it owes nothing: exp_causal_held() sets the
	 * resume's time when it is held. */
	t->resumed_hold = now;
}

void exp_causal_observer(struct exp_causal *c, int cpu, uint64_t time, uint64_t period)
{
	if (cpu < 0 || !period || !in_experiment(c, time))
		return;
	c->obs_hist[c->obs_hpos].time = time;
	c->obs_hist[c->obs_hpos].period = period;
	c->obs_hist[c->obs_hpos].cpu = cpu;
	c->obs_hpos = (c->obs_hpos + 1) % OBS_HIST;
	if (c->nobs_hist < OBS_HIST)
		c->nobs_hist++;
	for (size_t i = 0; i < c->threads.cap; i++) {
		if (!c->threads.keys[i] || !c->threads.vals[i])
			continue;
		struct cz_thread *t = (struct cz_thread *)(uintptr_t)c->threads.vals[i];
		if (preempted_then(t, 0, time, cpu))
			observer_charge(c, t, period);
	}
}

/* t switched out preempted at time on cpu: the line samples taken there
 * since, already read, credit it now (one raise: the thread's raise history
 * is short); later ones as they come. */
static void preempted(struct exp_causal *c, struct cz_thread *t, uint64_t time, int cpu)
{
	uint64_t n = 0, first = 0;

	t->pre_out = time;
	t->pre_in = 0;
	t->pre_cpu = cpu;
	t->pre_behind = false;
	for (unsigned k = 0; k < c->nline_hist; k++) {
		unsigned i = (c->line_hpos + LINE_HIST - 1 - k) % LINE_HIST;
		if (c->line_hist[i].time + HIST_LAG_NS < time)
			break;
		if (preempted_then(t, c->line_hist[i].tid, c->line_hist[i].time, c->line_hist[i].cpu)) {
			n++;
			if (!first || c->line_hist[i].time < first)
				first = c->line_hist[i].time;
		}
	}
	if (n)
		preempt_credit(c, t, n, first);
	for (unsigned k = 0; k < c->nobs_hist; k++) {
		unsigned i = (c->obs_hpos + OBS_HIST - 1 - k) % OBS_HIST;
		if (c->obs_hist[i].time + HIST_LAG_NS < time)
			break;
		if (preempted_then(t, 0, c->obs_hist[i].time, c->obs_hist[i].cpu))
			observer_charge(c, t, c->obs_hist[i].period);
	}
}

static void flight_take_out(struct exp_causal *c, double ns, uint64_t time);
static void resume_lag(struct exp_causal *c, struct cz_thread *t, uint64_t time);

void exp_causal_sample(struct exp_causal *c, struct sym_space *sp, pid_t pid, pid_t tid,
		       const uint64_t *pcs, unsigned npcs, uint64_t time, int cpu)
{
	struct cz_proc *p = proc_get(c, pid);
	struct cz_thread *t = thread_find(c, tid);
	uint64_t val = OUT_OF_SCOPE;
	bool counts = in_experiment(c, time), meas = counts && measured(c, time);

	c->st.samples++;
	if (meas)
		c->tot_samples++;
	if (!p)
		return;
	if (t)
		t->blocked = false; /* it ran */
	/* Coz 3.4: out-of-scope samples belong to the first in-scope frame
	 * of their call stack (the call site of printf, not strlen). */
	for (unsigned i = 0; i < npcs && val == OUT_OF_SCOPE; i++)
		val = resolve_pc(c, sp, p, pcs[i], i > 0);
	if (val == OUT_OF_SCOPE)
		return;
	uint64_t idx = val - 1;
	c->lines[idx].samples++;
	if (meas && !c->speedup)
		c->lines[idx].samples0++;
	c->st.in_scope_samples++;
	c->recent[c->recent_pos] = (uint32_t)idx;
	c->recent_pos = (c->recent_pos + 1) % RECENT;
	if (c->nrecent < RECENT)
		c->nrecent++;
	if (!counts || (int64_t)idx != c->sel || !t)
		return;
	if (meas)
		c->sel_samples++;
	if (time > t->line_at)
		t->line_at = time;
	pr_trace("causal: sample of %d in the line at %llu (local %llu, global %llu)", tid,
		 (unsigned long long)time, (unsigned long long)t->local + 1, (unsigned long long)c->global);
	/* Coz 3.4.3: the sample counts for this thread only; it raises the
	 * global count when it gets ahead, and the others owe the difference. */
	t->local++;
	bool rose = t->local > c->global;
	if (rose) {
		uint64_t units = t->local - c->global;
		if (meas)
			flight_take_out(c, (double)units * (double)c->delay_ns, time);
		else if (!c->warming)
			c->g0 += units; /* from the warm-up, arriving late */
		c->global = t->local;
		c->hist[c->hpos].time = time ? time : psup_now_ns();
		c->hist[c->hpos].global = c->global;
		c->hpos = (c->hpos + 1) % HIST;
		if (c->nhist < HIST)
			c->nhist++;
	}
	if (!time)
		return;
	if (cpu >= 0)
		line_on_cpu(c, tid, time, cpu);
	else if (!rose)
		return;
	credit_behind(c, t, time, rose, cpu);
}

/* The global count as of time: its highest value caused by a sample taken
 * at or before time (samples arrive out of order across threads). */
static uint64_t global_at(const struct exp_causal *c, uint64_t time)
{
	uint64_t g = 0;

	for (unsigned k = 0; k < c->nhist; k++) {
		unsigned i = (c->hpos + HIST - 1 - k) % HIST;
		if (c->hist[i].time <= time && c->hist[i].global > g)
			g = c->hist[i].global;
		/* Entries come in arrival order, at most HIST_LAG_NS late. */
		if (c->hist[i].time + HIST_LAG_NS < time)
			break;
	}
	return g;
}

/* The debt t took into its blocking call: the global count as of the call
 * (known only now: samples reach psup a few ms late; at least what psup
 * knew then) less its own count. */
static void set_carried(const struct exp_causal *c, struct cz_thread *t)
{
	uint64_t pre = global_at(c, t->call_at);

	if (pre < t->pre_global)
		pre = t->pre_global;
	t->carried = pre > t->local ? pre - t->local : 0;
}

/*
 * The wakeups that ended t's last credited block take effect: t takes over
 * what its waker owed at the wakeup (the global count then less the
 * waker's count then), so it owes that much more time, paid at its next
 * hold. Owed as time, not as a lower count: a later credit for the same
 * wake-up (credited_late) keeps it owed, and t's own line samples still
 * raise the global count. Lowered, its count made the line samples of a
 * woken line executor (a server woken by its client) pay its debt instead
 * of delaying the others, while it was held for the rest in the middle of
 * the request. Called once every ring
 * was read (a tick, an intercepted call): the line samples taken before
 * the wakeup may come from a ring read after the waker's. A wakeup after
 * the credit waits for the block it ends; one before the block is stale.
 */
static void resolve_wakes(struct exp_causal *c, struct cz_thread *t)
{
	/* Not credited yet (still blocked, or its switch-in not read). */
	if (t->wait != WAIT_NONE)
		return;
	for (unsigned i = 0; i < WAKES; i++) {
		uint64_t time = t->wakes[i].time;
		if (!time || (t->credited_at && time > t->credited_at))
			continue;
		t->wakes[i].time = 0;
		if (!t->credited_at || time < t->credit_blocked)
			continue;
		const struct cz_thread *w = waker_find(c, t->wakes[i].waker);
		uint64_t g = global_at(c, time), l = w ? local_at(w, time) : g;
		if (g <= l)
			continue;
		pr_trace("causal: thread %d takes over its waker's debt of %llu", t->tid,
			 (unsigned long long)(g - l));
		t->taken += g - l;
	}
}

static void resolve_all_wakes(struct exp_causal *c)
{
	for (size_t i = 0; i < c->threads.cap; i++)
		if (c->threads.keys[i] && c->threads.vals[i])
			resolve_wakes(c, (struct cz_thread *)(uintptr_t)c->threads.vals[i]);
}

/* ---- the observer's stops ------------------------------------------------ */

/*
 * A stop of psup's that is no pause is psup's, not the program's: while the
 * thread waits for psup and for its resume, the program makes no progress
 * when no other thread of it is runnable either. That time is taken out of
 * the experiment's duration as a delay all threads took would be (Coz: only
 * the inserted delays leave the effective duration, and a pause every
 * thread takes changes nothing), at every speedup alike, once for stops of
 * several threads at once. Another thread held for a pause meanwhile is not
 * runnable: without the stop the stopped one would have run. The rest of a
 * stop, another thread running, is the stopped thread's own loss: it comes
 * off what that thread owes (observer_commit()).
 */
/* A thread that blocks within this long of its resume from a wait's stop
 * would have waited anyway: the stop cost the program nothing. */
#define OBS_BLOCK_NS (30ULL * 1000ULL)
/* A stop longer than this is not psup's answer (job control, a lost
 * record). */
#define OBS_STOP_MAX_NS (20ULL * 1000000ULL)

static void span_push(struct span *ring, unsigned *pos, uint64_t a, uint64_t b)
{
	ring[*pos] = (struct span){ a, b };
	*pos = (*pos + 1) % IDLE_SPANS;
}

/* How much of [lo, hi) the stop spans counted already cover (their union). */
static uint64_t counted_within(const struct exp_causal *c, uint64_t lo, uint64_t hi)
{
	struct span in[IDLE_SPANS];
	unsigned n = 0;
	uint64_t sum = 0, end = lo;

	for (unsigned i = 0; i < IDLE_SPANS; i++) {
		uint64_t a = c->counted[i].a > lo ? c->counted[i].a : lo;
		uint64_t b = c->counted[i].b < hi ? c->counted[i].b : hi;
		if (b <= a)
			continue;
		unsigned k = n++;
		for (; k > 0 && in[k - 1].a > a; k--)
			in[k] = in[k - 1];
		in[k] = (struct span){ a, b };
	}
	for (unsigned i = 0; i < n; i++) {
		if (in[i].b <= end)
			continue;
		sum += in[i].b - (in[i].a > end ? in[i].a : end);
		end = in[i].b;
	}
	return sum;
}

/* The time in [a, b) with no thread of the program runnable, not counted
 * for another stop. */
static uint64_t idle_within(const struct exp_causal *c, uint64_t a, uint64_t b)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < IDLE_SPANS; i++) {
		uint64_t lo = c->idle[i].a > a ? c->idle[i].a : a;
		uint64_t hi = c->idle[i].b < b ? c->idle[i].b : b;
		if (hi > lo)
			sum += hi - lo - counted_within(c, lo, hi);
	}
	return sum;
}

/* The stop span [cand_a, cand_b) of t counts: its idle time within the
 * measured part of the experiment, if one is running. */
static void observer_commit(struct exp_causal *c, struct cz_thread *t)
{
	uint64_t lo = t->cand_a, hi = t->cand_b, ns = 0, span = hi > lo ? hi - lo : 0;

	t->cand_b = 0;
	if (!experimenting(c))
		return;
	if (!c->warming) {
		if (lo < c->t_measure)
			lo = c->t_measure;
		if (c->state == CZ_SETTLING && hi > c->t_settle)
			hi = c->t_settle;
		if (hi > lo) {
			ns = idle_within(c, lo, hi);
			span_push(c->counted, &c->cpos, lo, hi);
		}
	}
	/* The rest of the stop, other threads running meanwhile, t lost on
	 * its own: off what it owes, as psup's preemptions and a pause's
	 * overshoot (observer_charge()). Left as the program's, a thread
	 * that owes for the line paid it on top of the stops it made at its
	 * synchronization calls, which at 0% hid in time it would have
	 * waited anyway: once the line is virtually faster it waits less,
	 * and both landed on the path a speedup moves the bottleneck to
	 * (the pipeline's producer, the latency program's clients;
	 * docs/causal.md, "The observer is not the program", has the A/B). */
	if (span > ns) {
		t->excess += (int64_t)(span - ns);
		c->st.observer_stop_credit_ns += span - ns;
	}
	if (!ns)
		return;
	c->obs_ns += ns;
	c->st.observer_idle_ns += ns;
	/* The requests in flight meanwhile did not wait that long either. */
	flight_take_out(c, (double)ns, hi);
}

static void set_runnable(struct exp_causal *c, struct cz_thread *t, bool runnable, uint64_t time)
{
	if (t->runnable == runnable)
		return;
	t->runnable = runnable;
	if (runnable) {
		if (c->nrunning++ == 0 && c->idle_since && time > c->idle_since)
			span_push(c->idle, &c->ipos, c->idle_since, time);
		c->idle_since = 0;
	} else if (c->nrunning > 0 && --c->nrunning == 0) {
		c->idle_since = time;
	}
}

static void observer_switch(struct exp_causal *c, struct cz_thread *t, bool out, bool preempt, uint64_t time)
{
	if (time > c->rec_time)
		c->rec_time = time;
	if (!out) {
		set_runnable(c, t, true, time);
		/* Woken from a block right after its resume from a wait: it
		 * would have waited anyway. */
		if (t->cand_b && t->cand_blocked)
			t->cand_b = 0;
		if (t->obs_out) {
			if (!t->obs_held && time > t->obs_out && time - t->obs_out <= OBS_STOP_MAX_NS) {
				c->st.observer_stop_ns += time - t->obs_out;
				c->st.observer_stops++;
				t->cand_a = t->obs_out;
				t->cand_b = time;
				t->cand_blocked = false;
				if (t->obs_keep)
					observer_commit(c, t);
			}
			t->obs_out = 0;
		}
		return;
	}
	set_runnable(c, t, preempt, time);
	/* Switched out again with no switch-in since its stop's: that record
	 * was lost, and the stop's end with it. */
	if (t->obs_out && time > t->obs_out)
		t->obs_out = 0;
	if (t->cand_b && !t->cand_blocked) {
		if (!preempt && time - t->cand_b < OBS_BLOCK_NS)
			t->cand_blocked = true; /* a block, or psup's next stop */
		else
			observer_commit(c, t);
	}
}

/* t stopped for psup (every record read): at a call that waits (a block
 * right after its resume is no cost of the stop), or (keep) at one that
 * wakes another thread, at a wait's return or at an unlock trap, where the
 * stop delays the thread or whoever it wakes whatever it does next. */
static void observer_stop(struct exp_causal *c, struct cz_thread *t, bool keep)
{
	/* The switch-out after the last stop's resume was into this one: the
	 * thread ran between them, so the last stop delayed it. */
	if (t->cand_b)
		observer_commit(c, t);
	/* Outside experiments nothing counts, and the records are not read
	 * at its stops: no span. */
	t->obs_out = experimenting(c) && t->last_out > t->last_in ? t->last_out : 0;
	t->obs_held = false;
	t->obs_keep = keep;
}

/* t died at time; the records read may have gone past it (another thread's
 * switch-out then was not yet the program's last). */
static void observer_gone(struct exp_causal *c, struct cz_thread *t, uint64_t time)
{
	set_runnable(c, t, false, time > c->rec_time ? time : c->rec_time);
}

void exp_causal_switch(struct exp_causal *c, pid_t tid, bool out, bool preempt, uint64_t time,
		       int cpu)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return;
	if (time)
		observer_switch(c, t, out, preempt, time);
	t->blocked = out && !preempt;
	if (out && preempt && time && cpu >= 0 && t->wait == WAIT_NONE && in_experiment(c, time))
		preempted(c, t, time, cpu);
	else if (!out && time && t->pre_out && !t->pre_in)
		t->pre_in = time;
	if (!out && time)
		resume_lag(c, t, time);
	if (time && out)
		t->last_out = time;
	else if (time)
		t->last_in = time;
	/* The switch-out of the ptrace stop that reported the call came
	 * before wait_t0; its resume's switch-in is ignored while pending. */
	if (out && !preempt && t->wait == WAIT_PENDING && (!time || time > t->wait_t0))
		t->wait = WAIT_BLOCKED;
	if (!out && time && t->wait == WAIT_PENDING && !t->resumed_at && time > t->wait_t0)
		t->resumed_at = time;
	if (!out && t->wait == WAIT_BLOCKED) {
		/* Woken from a blocking call, by a thread of the program that
		 * executed its delays first (they run before every wake-up;
		 * without interception, presumably). Credited with the delays
		 * of line executions up to its wake-up, not those that reached
		 * psup since (its switch-in record is a few ms late). */
		uint64_t g = time ? global_at(c, time) : c->global;
		t->wait = WAIT_NONE;
		t->credited_at = time;
		t->credit_blocked = t->last_out;
		set_carried(c, t);
		if (t->local + t->carried < g) {
			pr_trace("causal: thread %d credited %llu at its wake-up", tid,
				 (unsigned long long)(g - t->local - t->carried));
			credit_to(t, g, time);
		}
	}
}

void exp_causal_observe_period(struct exp_causal *c, uint64_t period_ns)
{
	/* Ignore nonsense (a period after lost samples is the nominal one;
	 * one above 100x the configured is not a sample period). */
	if (!period_ns || period_ns > 100 * c->cfg.period_ns)
		return;
	/* Halve both sums now and then: the mean follows the recent samples
	 * and cannot overflow. */
	if (c->nperiods >= (1u << 20)) {
		c->sum_periods /= 2;
		c->nperiods /= 2;
	}
	c->sum_periods += period_ns;
	c->nperiods++;
}

void exp_causal_block_futex(struct exp_causal *c, pid_t tid, uint64_t time)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return;
	t->wait = WAIT_BLOCKED;
	/* Its debt goes into the wait, as at an intercepted one (Coz's
	 * pre_block() notes the global count): the credit at its wake-up
	 * covers only the delays inserted while it was blocked. Credited up
	 * to the global count instead, a thread that owed when it blocked had
	 * that debt forgiven. */
	if (time && experimenting(c)) {
		t->call_at = time;
		t->pre_global = global_at(c, time);
	}
}

void exp_causal_wakeup(struct exp_causal *c, pid_t waker, pid_t wakee, uint64_t time)
{
	struct cz_thread *w, *t;

	/* Every wakeup record comes here: the cheap test first. */
	if (!time || waker == wakee || !experimenting(c))
		return;
	w = waker_find(c, waker);
	t = thread_find(c, wakee);
	if (!w || !t)
		return;
	for (unsigned i = 0; i < WAKES; i++)
		if (t->wakes[i].time == time)
			return; /* the same wakeup from the other ring */
	t->wakes[t->wpos].time = time;
	t->wakes[t->wpos].waker = waker;
	t->wpos = (t->wpos + 1) % WAKES;
}

/* ---- intercepted calls and holds --------------------------------------- */

static bool can_block(int nr, const uint64_t args[6])
{
	if (nr == SYS_futex) {
		switch ((unsigned)args[1] & FUTEX_CMD_MASK) {
		case FUTEX_WAIT:
		case FUTEX_WAIT_BITSET:
		case FUTEX_LOCK_PI:
		case FUTEX_LOCK_PI2:
		case FUTEX_WAIT_REQUEUE_PI:
			return true;
		default:
			return false; /* wakes: delays before, nothing after */
		}
	}
	return nr == SYS_futex_waitv || nr == SYS_rt_sigtimedwait || nr == SYS_rt_sigsuspend;
}

/* The intercepted calls that wake another thread: futex wakes, signals sent,
 * a thread's exit (its joiner). */
static bool wakes(int nr, const uint64_t args[6])
{
	switch (nr) {
	case SYS_futex:
		return !can_block(nr, args);
	case SYS_kill:
	case SYS_tkill:
	case SYS_tgkill:
	case SYS_rt_sigqueueinfo:
	case SYS_rt_tgsigqueueinfo:
	case SYS_exit:
		return true;
	default:
		return false;
	}
}

void exp_causal_syscall_exit(struct exp_causal *c, pid_t tid)
{
	struct cz_thread *t = thread_find(c, tid);

	if (t)
		observer_stop(c, t, true);
}

/* The intercepted calls that wait for time or an event and are made to
 * wait: a thread pays at their return what accumulated meanwhile. Not the
 * reads and receives (they return at once in I/O loops, where a second stop
 * per call would double psup's cost: a thread that blocked in one pays at its
 * next intercepted call), nor a poll or epoll_wait with a zero timeout. */
static bool pays_after(int nr, const uint64_t args[6])
{
	switch (nr) {
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_pause:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_accept:
	case SYS_accept4:
	case SYS_wait4:
	case SYS_waitid:
		return true;
	case SYS_poll:
		return args[2] != 0;
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
		return args[3] != 0;
	default:
		return false;
	}
}

bool exp_causal_syscall_enter(struct exp_causal *c, pid_t tid, int nr, const uint64_t args[6],
			      uint64_t now)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return false;
	observer_stop(c, t, wakes(nr, args));
	/* Its previous blocking call returned without blocking (no
	 * switch-out since its resume): the value had changed, a thread of
	 * the program woke it before it could sleep. Coz 3.4.1 credits a
	 * thread after any call that may block, blocked or not, and here
	 * psup's own stop at that call is often why it did not block: it was
	 * stopped while the waker ran its line and released it, and it would
	 * otherwise owe that line's delays, paid on the critical path.
	 * Credited as of its resume into the call (it returned microseconds
	 * later), not of a later switch-in: it ran on since, preempted now
	 * and then, and owes what the line did meanwhile. */
	/* (A switch-out not preempted with no switch-in after it is this
	 * very stop, no block: every record was drained before this call.) */
	bool returned = t->wait == WAIT_PENDING || (t->wait == WAIT_BLOCKED && t->last_out >= t->last_in);
	if (returned && t->resumed_at && experimenting(c)) {
		uint64_t g = global_at(c, t->resumed_at);
		set_carried(c, t);
		if (t->local + t->carried < g) {
			pr_trace("causal: thread %d credited %llu after a wait that did not block", tid,
				 (unsigned long long)(g - t->local - t->carried));
			credit_to(t, g, t->resumed_at);
		}
	}
	/* Every ring was read: its last wake-up's wakers are known. */
	resolve_wakes(c, t);
	t->wait = WAIT_NONE;
	t->carried = 0;
	t->defer = false;
	/* Every sample taken so far was taken in before this call (the
	 * command drains them): none can still arrive late for its last
	 * wake-up. */
	t->credited_at = 0;
	/* A call that can block is followed into its wait at any time: one
	 * begun between two experiments can end in the next, and is credited
	 * at its wake-up as any other (exp_causal_switch()), with no debt
	 * taken in (forgive_all() zeroes call_at and pre_global). Left out, the
	 * threads that waited across an experiment's start owed all the
	 * line had done at their wake-up, and paid it on the critical path:
	 * Amdahl's workers, asleep at the barrier while the serial line ran,
	 * paid its delays in the parallel phase that followed. */
	bool blocks = can_block(nr, args);
	if (blocks) {
		t->wait = WAIT_PENDING;
		t->wait_t0 = now;
		t->resumed_at = 0;
	}
	/* The rest only during experiments, 0% included: the same work at
	 * every speedup (Coz section 2: only line-dependent costs cancel
	 * out). */
	if (!experimenting(c))
		return false;
	if (blocks) {
		/* Credited from its switch records when it blocks and wakes
		 * (exp_causal_switch): no stop at the call's return, which
		 * would cost as much as this one. It does not pay first, as
		 * Coz's wrappers do not (pre_block() notes the global count):
		 * it pays its debt after the wait. Paid before it, the debt
		 * hid in time it would have waited anyway, while the
		 * experiment counted it as inserted: a thread that waits for
		 * its turn at a lock taken more often because the line ran
		 * faster (the contention a falling curve shows; t5050's
		 * client, on a condition variable) had the delays owed for
		 * that line absorbed by the very wait they should have
		 * lengthened, and the curve rose. */
		/* Except for a mutex (known from an unlock trap): a wait for
		 * it ends with the lock taken, so a debt carried through it
		 * was paid inside the critical section that followed, which
		 * the debt had nothing to do with. On a saturated lock that
		 * lengthened every critical section by the debts of the
		 * waiters' work outside it (tests/targets/causal-saturated.c,
		 * the critical section at 25/50/100%: truth 23-25/47-49/76%,
		 * psup 13/24-25/39-42% with the debt carried, 17-21/31-34/
		 * 47-49% paid before; 2 runs each, bench/causal/run.py). Paid
		 * now, before the wait, it is as if the thread came for the
		 * lock that much later, which is what a virtual speedup of the
		 * others asks. Waits on condition variables, barriers and
		 * other words keep their debt (above). */
		unsigned cmd = (unsigned)args[1] & FUTEX_CMD_MASK;
		t->defer = !((cmd == FUTEX_WAIT || cmd == FUTEX_LOCK_PI) && mutex_futex(c, t, nr, args, cmd));
		t->call_at = t->last_out > t->last_in && t->last_out <= now ? t->last_out : now;
		t->pre_global = global_at(c, t->call_at);
	} else if (c->state == CZ_RUNNING && unlocks(c, t) && mutex_futex(c, t, nr, args, FUTEX_WAKE)) {
		/* The wake of a mutex's unlock runs after the release: what
		 * the thread still owes waits for its next unlock trap (armed
		 * while it owes), inside the lock, as Coz pays. */
		t->defer = true;
	} else if (pays_after(nr, args)) {
		/* A wait for time or an event: not credited, and the delays
		 * inserted meanwhile are paid when it returns (Coz 3.4.1:
		 * "added when it resumes"), at a stop at its exit. Paid at the
		 * next call instead, they landed wherever that was: inside a
		 * request that a client began after its think time (t5110),
		 * where they lengthened the very latency a faster server
		 * shortens. */
		return true;
	}
	return false;
}

/* What t owes at global count g, in ns: its count's debt less its excess,
 * and the debts it took over from its wakers. */
static uint64_t owes(const struct cz_thread *t, uint64_t g, uint64_t delay_ns, int64_t *excess)
{
	return exp_causal_owed(g, t->local, delay_ns, excess) + t->taken * delay_ns;
}

/* Whether t is behind: its count, or a debt taken over (at 0% too). */
static bool behind(const struct exp_causal *c, const struct cz_thread *t)
{
	return t->local < c->global || t->taken;
}

/* What t owes up to the global count g, counted as paid: its count raised
 * to g as of time, a hold asked when it owes. */
static uint64_t charge(struct cz_thread *t, uint64_t g, uint64_t delay_ns, uint64_t time)
{
	uint64_t owed = owes(t, g, delay_ns, &t->excess);

	t->taken = 0;

	if (owed)
		pr_trace("causal: thread %d owes %llu ns: global %llu, local %llu", t->tid,
			 (unsigned long long)owed, (unsigned long long)g, (unsigned long long)t->local);
	raise_local(t, g, time);
	if (owed)
		t->holding = true;
	return owed;
}

/* The mean sample period observed (the configured one until 100 samples). */
static uint64_t period_ns(const struct exp_causal *c)
{
	return c->nperiods >= 100 ? c->sum_periods / c->nperiods : c->cfg.period_ns;
}

/* Whether t owes enough now for a pause (settling: any debt). */
static bool worth_a_pause(const struct exp_causal *c, const struct cz_thread *t)
{
	uint64_t min = c->state == CZ_SETTLING ? 1 : c->cfg.pause_min_ns;
	int64_t excess = t->excess;

	return owes(t, c->global, c->delay_ns, &excess) >= min;
}

uint64_t exp_causal_hold(struct exp_causal *c, pid_t tid, bool in_syscall)
{
	struct cz_thread *t = thread_find(c, tid);

	/* At 0% too (owing nothing): the counts move alike, so unlock traps
	 * stop 0% experiments where the others pay. */
	if (!t || !experimenting(c))
		return 0;
	if (in_syscall) {
		t->blocked = true;
		return 0;
	}
	if (t->defer) {
		t->defer = false;
		return 0;
	}
	/* Woke from a blocking call whose switch-in record has not reached
	 * psup: its credit is not known yet; the next tick decides. */
	if (t->wait == WAIT_BLOCKED)
		return 0;
	/* It owes the line executions up to when it stopped (its switch-out
	 * record, when psup has it), not those during psup's own delay in
	 * answering the stop: then it was not running. */
	uint64_t g = c->global, stopped = t->last_out > t->last_in ? t->last_out : 0;
	if (stopped) {
		uint64_t at = global_at(c, stopped);
		if (at < g)
			g = at;
	}
	/* Raised as of its stop: it wakes nobody while held. */
	uint64_t hold = charge(t, g, c->delay_ns, stopped ? stopped : c->now);
	if (hold)
		t->obs_held = true; /* its stop is the pause's (exp_causal_held) */
	return hold;
}

void exp_causal_held(struct exp_causal *c, pid_t tid, uint64_t asked_ns, uint64_t lost_ns,
		     uint64_t now)
{
	struct cz_thread *t = thread_find(c, tid);

	c->pause_ns += lost_ns;
	c->pauses++;
	if (t) {
		t->excess += (int64_t)lost_ns - (int64_t)asked_ns;
		t->holding = false;
		t->resumed_hold = now;
	}
}

/*
 * A thread resumed from a hold runs again only when its CPU is free: psup
 * itself, woken on that CPU (the one the hold left idle) and running at
 * SCHED_FIFO, goes on with its work there first. That lag is the
 * observer's cost, paid by the held thread only, and it grows with the
 * pauses, i.e. with the speedup: counted nowhere, it made a line that only
 * makes other threads pause (a spinner beside the worker) read as
 * contention. Its switch-in record says when it ran: the lag is lost time
 * like a hold's overshoot (Coz's excess sleep, which Coz measures around
 * its nanosleep, so up to the thread's return to its CPU as well). A lag
 * longer than RESUME_LAG_MAX is not psup's (job control, a stop).
 */
#define RESUME_LAG_MAX (20ULL * 1000000ULL)

/* t lost lag ns more to a pause (a lag of its stop or of its resume): an
 * excess like a hold's overshoot; *sum and *n are the -v totals. */
static void pause_lag(struct exp_causal *c, struct cz_thread *t, uint64_t lag, uint64_t *sum,
		      uint64_t *n)
{
	t->excess += (int64_t)lag;
	c->pause_ns += lag;
	*sum += lag;
	(*n)++;
}

static void resume_lag(struct exp_causal *c, struct cz_thread *t, uint64_t time)
{
	struct kpath_span *kp = &t->kpath[(t->kpath_pos + KPATHS - 1) % KPATHS];

	if (!t->resumed_hold || time < t->resumed_hold)
		return; /* a record from before the resume, late */
	/* the latest pause's kernel path ends shortly after this switch-in */
	if (kp->hi == UINT64_MAX && time >= kp->lo)
		kp->hi = time + KPATH_TAIL_NS;
	/* A pause's own stop: its switch-out, the last record before this
	 * switch-in (one thread's records come in order), came before psup
	 * saw the stop. */
	if (t->interrupted_at && t->last_out && t->last_out <= t->interrupted_at &&
	    t->interrupted_at - t->last_out <= RESUME_LAG_MAX && t->last_out > t->last_in)
		pause_lag(c, t, t->interrupted_at - t->last_out, &c->st.stop_lag_ns, &c->st.stops);
	if (time - t->resumed_hold <= RESUME_LAG_MAX)
		pause_lag(c, t, time - t->resumed_hold, &c->st.resume_lag_ns, &c->st.resumes);
	t->interrupted_at = t->resumed_hold = 0;
}

/*
 * A pause costs the paused thread time in the kernel, on its own CPU time:
 * the interrupt, the signal code, the ptrace stop that wakes psup, and on
 * the way back the same path out. Its switch records put that time in its
 * running time, not in the stop, so neither the stop's lag nor the
 * resume's counts it: the spinner's worker ran 2.47 ms of CPU per round at
 * a fixed 50% against 2.35-2.41 at 0% (8,600 pauses in 10 s), and a line
 * whose speedup only makes others pause read as a falling curve. The
 * thread's samples taken in the kernel between psup's request and shortly
 * after its switch-in count their period as lost to the pause (exact on
 * average, as sampling is); its own code runs in user mode, so a sample
 * before the interrupt landed does not count.
 */
void exp_causal_pause_sent(struct exp_causal *c, pid_t tid, uint64_t now)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t)
		return;
	t->kpath[t->kpath_pos].lo = now;
	t->kpath[t->kpath_pos].hi = UINT64_MAX;
	t->kpath_pos = (t->kpath_pos + 1) % KPATHS;
}

void exp_causal_kernel_sample(struct exp_causal *c, pid_t tid, uint64_t time, uint64_t period)
{
	struct cz_thread *t;

	if (!time || !period || !in_experiment(c, time) || !(t = thread_find(c, tid)))
		return;
	for (unsigned i = 0; i < KPATHS; i++) {
		uint64_t lo = t->kpath[i].lo, hi = t->kpath[i].hi;

		/* one whose switch-in never came (the thread blocked, or
		 * exited) lasts as long as a resume's lag may */
		if (hi == UINT64_MAX)
			hi = lo + RESUME_LAG_MAX;
		if (lo && time >= lo && time < hi) {
			pause_lag(c, t, period, &c->st.stop_kernel_ns, &c->st.stop_kernel_samples);
			return;
		}
	}
}

uint64_t exp_causal_hold_on(struct exp_causal *c, pid_t tid, uint64_t now)
{
	struct cz_thread *t = thread_find(c, tid);

	if (!t || !experimenting(c) || !c->delay_ns ||
	    !worth_a_pause(c, t))
		return 0;
	return charge(t, c->global, c->delay_ns, now);
}

unsigned exp_causal_pause_candidates(struct exp_causal *c, pid_t *tids, unsigned max)
{
	unsigned n = 0;

	if (!experimenting(c) || !c->delay_ns)
		return 0;
	for (size_t i = 0; i < c->threads.cap && n < max; i++) {
		if (!c->threads.keys[i] || !c->threads.vals[i])
			continue;
		struct cz_thread *t = (struct cz_thread *)(uintptr_t)c->threads.vals[i];
		if (t->blocked || t->wait == WAIT_BLOCKED || !behind(c, t))
			continue;
		/* Waiting for its CPU behind the line: a hold now would keep
		 * it from running when the CPU frees, and the line may credit
		 * it more. It pays once it runs again. (Not any preempted
		 * thread: psup's own tick preempts one, which then was never
		 * paused at ticks, and t5050's falling curve went flat.) */
		if (t->pre_out && !t->pre_in && t->pre_behind)
			continue;
		/* Running the line itself: its own samples, still to come,
		 * catch it up. Coz's threads pay in their own sample handler,
		 * after counting their own samples (in batches of ten), so two
		 * threads running the line side by side pay only for the
		 * imbalance; paid at each tick, they paused for whichever
		 * sample came first (Amdahl's parallel line: 740 pauses in
		 * 5 s at 100%, predicting 21% where the truth is 48%). A debt
		 * of more than a few samples is not jitter: it is paid. */
		if (t->line_at && c->now < t->line_at + LINE_RECENT_PERIODS * period_ns(c) && !t->taken &&
		    c->global - t->local <= LINE_JITTER_UNITS)
			continue;
		if (worth_a_pause(c, t))
			tids[n++] = t->tid;
	}
	return n;
}

void exp_causal_set_trap(struct exp_causal *c, pid_t tid, bool has_trap)
{
	struct cz_thread *t = thread_find(c, tid);

	if (t) {
		t->trap = has_trap;
		t->trap_hit = 0;
	}
}

/* Counts move at 0% too, so 0% experiments trap where the others would
 * pay: a stop inside a critical section lengthens it whatever the speedup,
 * and only costs paid alike cancel (Coz section 2). */
static bool trap_owed(const struct exp_causal *c, const struct cz_thread *t)
{
	return t && c->state == CZ_RUNNING && behind(c, t);
}

bool exp_causal_trap_would_want(struct exp_causal *c, pid_t tid)
{
	return trap_owed(c, thread_find(c, tid));
}

bool exp_causal_trap_wanted(struct exp_causal *c, pid_t tid)
{
	struct cz_thread *t = thread_find(c, tid);

	return t && t->trap && trap_owed(c, t);
}

void exp_causal_trapped(struct exp_causal *c, pid_t tid, uint64_t now, uint64_t mutex)
{
	struct cz_thread *t = thread_find(c, tid);
	struct cz_proc *p = t ? proc_get(c, t->pid) : NULL;

	if (p && mutex && (p->mutexes.len < MAX_MUTEXES || psup_u64map_find(&p->mutexes, mutex)))
		psup_u64map_upsert(&p->mutexes, mutex, NULL);
	c->last_trap = now;
	if (t) {
		t->trap_hit = now;
		/* psup's stop too (at 0% as at every speedup), the mutex
		 * still held: unless it pays there, the time is the
		 * observer's. */
		observer_stop(c, t, true);
	}
}

/* ---- experiments ----------------------------------------------------- */

static void forgive_all(struct exp_causal *c)
{
	ghosts_free(c);
	for (size_t i = 0; i < c->threads.cap; i++) {
		if (!c->threads.keys[i] || !c->threads.vals[i])
			continue;
		struct cz_thread *t = (struct cz_thread *)(uintptr_t)c->threads.vals[i];
		t->local = 0;
		memset(t->raises, 0, sizeof(t->raises));
		memset(t->wakes, 0, sizeof(t->wakes));
		/* A wait begun in an earlier experiment took no debt of this
		 * one in: its count then is not this one's. */
		t->call_at = 0;
		t->pre_global = 0;
		t->carried = 0;
		t->defer = false;
		t->credited_at = 0;
		t->pre_out = t->pre_in = 0;
		t->holding = false;
		/* Excess is settled within an experiment: a hold that ran long
		 * in one must not shorten the pauses of the next, whose own
		 * delays it would then under-insert. */
		t->excess = 0;
		t->taken = 0;
		t->resumed_hold = t->interrupted_at = 0;
		/* A stop begun before (its records perhaps not read then, as
		 * outside experiments) is not this one's. */
		t->obs_out = t->cand_b = 0;
	}
	c->global = 0;
	c->nline_hist = c->line_hpos = 0;
	c->nobs_hist = c->obs_hpos = 0;
}

static unsigned read_points(struct exp_causal *c, struct exp_point_value *out)
{
	unsigned n;

	if (!c->pp)
		return 0;
	n = exp_progress_npoints(c->pp);
	if (n > MAX_POINTS)
		n = MAX_POINTS;
	if (n && exp_progress_read(c->pp, out, n) < 0)
		return 0;
	return n;
}

static bool pick_line(struct exp_causal *c)
{
	if (c->fixed_file) {
		if (c->fixed_index < 0)
			return false; /* not seen yet: its path is unknown */
		c->sel = c->fixed_index;
		return true;
	}
	if (!c->nrecent)
		return false;
	/* Coz section 2: random, never systematic. */
	c->sel = c->recent[psup_rand_next(&c->rng) % c->nrecent];
	return true;
}

/* Builds the point deltas from start (NULL: totals since the beginning)
 * to end: throughput points one each, a latency pair (BEGIN and END of the
 * same name) one together; *min_delta: exp_causal_min_visits() of them. */
static unsigned point_deltas(const struct exp_point_value *start, unsigned nstart,
			     const struct exp_point_value *end, unsigned n,
			     struct exp_point_delta *out, uint64_t *min_delta)
{
	static const struct exp_point_value zero;
	unsigned k = 0;

	for (unsigned i = 0; i < n && (!start || i < nstart); i++) {
		const struct exp_point_value *s = start ? &start[i] : &zero, *e = &end[i];
		uint64_t d = e->count >= s->count ? e->count - s->count : 0;
		if (e->kind == EXP_POINT_THROUGHPUT) {
			out[k++] = (struct exp_point_delta){ .name = e->name, .kind = EXP_MEASURE_THROUGHPUT, .delta = d };
			continue;
		}
		/* Find or make the pair's entry. */
		unsigned j;
		for (j = 0; j < k; j++)
			if (out[j].kind == EXP_MEASURE_LATENCY && !strcmp(out[j].name, e->name))
				break;
		if (j == k)
			out[k++] = (struct exp_point_delta){ .name = e->name, .kind = EXP_MEASURE_LATENCY };
		if (e->kind == EXP_POINT_BEGIN) {
			out[j].arrivals = d;
			if (start)
				out[j].in_flight_begin += (int64_t)s->count;
		} else {
			out[j].departures = d;
			if (start)
				out[j].in_flight_begin -= (int64_t)s->count;
		}
	}
	*min_delta = k ? exp_causal_min_visits(out, k) : UINT64_MAX;
	return k;
}

/* Adds the requests in flight since the last reading to each latency
 * pair's integral (trapezoids over real time), d[0..k) being the point
 * deltas read at now. The delays are taken out where they are inserted
 * (flight_take_out): the integral ends as one over virtual time. */
static void track_in_flight(struct exp_causal *c, const struct exp_point_delta *d, unsigned k, uint64_t now)
{
	double dt = now > c->t_flight ? (double)(now - c->t_flight) : 0;

	for (unsigned j = 0; j < k; j++) {
		if (d[j].kind != EXP_MEASURE_LATENCY)
			continue;
		double cur = (double)d[j].in_flight_begin + (double)d[j].arrivals - (double)d[j].departures;
		c->flight_area[j] += (c->flight_prev[j] + cur) / 2 * dt;
		c->flight_prev[j] = cur;
	}
	if (now > c->t_flight)
		c->t_flight = now;
}

/* Adds the points' values vals[0..n), read at now, to the in-flight
 * integrals. */
static void flight_at(struct exp_causal *c, const struct exp_point_value *vals, unsigned n, uint64_t now)
{
	struct exp_point_delta d[MAX_POINTS];
	uint64_t min;

	if (n)
		track_in_flight(c, d, point_deltas(c->start_vals, c->npoints, vals, n, d, &min), now);
}

/* Reads the points at now into the in-flight integrals. */
static void read_in_flight(struct exp_causal *c, uint64_t now)
{
	struct exp_point_value vals[MAX_POINTS];

	flight_at(c, vals, read_points(c, vals), now);
}

/* ns of virtual time that never passed for the requests then in flight:
 * the global count rose (that many delays), or the program sat idle in
 * psup's stops (observer_commit()). A delay: the line ran, faster in the
 * program psup shows, while they waited for it. Taken out of the integral
 * with the requests in flight as the sample is taken in (a few ms after it
 * was taken, usually within the same request): the time average of a
 * reading at every tick missed that the delays come while the line runs,
 * i.e. while its requests are in flight, and the virtual time between two
 * ticks went to the mean of their counts (the latency line's curve stayed
 * near 20% where the truth is 97%). */
static void flight_take_out(struct exp_causal *c, double ns, uint64_t time)
{
	if (!c->latency || !ns)
		return;
	/* Settling: the integral ends where the settling began (a late
	 * sample from before it still takes its delays out). */
	if (c->state != CZ_SETTLING)
		read_in_flight(c, time);
	for (unsigned j = 0; j < MAX_POINTS; j++)
		c->flight_area[j] -= c->flight_prev[j] * ns; /* 0: no pair */
}

/* The measured part of the experiment begins at now: its points, samples,
 * pauses and delays from here. */
static void measure(struct exp_causal *c, uint64_t now)
{
	c->warming = false;
	c->g0 = c->global;
	c->sel_samples = c->tot_samples = c->pause_ns = c->pauses = 0;
	c->obs_ns = 0;
	c->npoints = read_points(c, c->start_vals);
	c->t_measure = now;
	c->latency = false;
	for (unsigned i = 0; i < c->npoints; i++)
		c->latency |= c->start_vals[i].kind != EXP_POINT_THROUGHPUT;
	c->t_flight = now;
	memset(c->flight_area, 0, sizeof(c->flight_area));
	memset(c->flight_prev, 0, sizeof(c->flight_prev));
	if (c->latency)
		flight_at(c, c->start_vals, c->npoints, now);
}

/*
 * An experiment warms up at its speedup before it is measured. A program
 * holds work in flight (a queue between pipeline stages, threads waiting
 * at a lock), and how much depends on the speedup: the experiment before,
 * at another speedup, left it where that speedup had it. Measured at once,
 * the first milliseconds of a line's 100% drew on a queue that the 0%
 * before had filled: the pipeline's consumer read 78% at 100% where the
 * truth caps at 50% (its producer is then the bottleneck), 59% with 50 ms
 * experiments, 53% with 200 ms ones. The warm-up takes the place of Coz's
 * cool-off between experiments (10 ms without delays, which left the queue
 * as 0% has it): at the experiment's speedup, its delays inserted and paid,
 * its samples and progress not counted. It grows with the experiment's
 * length: a program whose points are visited slowly drains its queues
 * slowly too.
 */
static uint64_t warm_up_ns(const struct exp_causal *c)
{
	return c->cfg.warmup_ns > c->length / 2 ? c->cfg.warmup_ns : c->length / 2;
}

static void start(struct exp_causal *c, uint64_t now, bool warm_up)
{
	c->speedup = c->cfg.fixed_speedup >= 0 ? (unsigned)c->cfg.fixed_speedup
					       : exp_causal_pick_speedup(&c->rng, c->cfg.speedup_step);
	/* After an experiment that ran the same (0% after 0%, whatever the
	 * line: a quarter of them), the program is warm already. */
	if (c->have_last && c->speedup == c->last_speedup && (!c->speedup || c->sel == c->last_sel))
		warm_up = false;
	c->delay_ns = period_ns(c) * c->speedup / 100;
	forgive_all(c);
	c->nhist = c->hpos = 0;
	c->t_start = now;
	c->state = CZ_RUNNING;
	if (warm_up && !c->cfg.no_warmup) {
		c->warming = true;
		c->t_measure = now + warm_up_ns(c);
	} else {
		measure(c, now);
	}
}

static int write_experiment(struct exp_causal *c, uint64_t now, bool end_to_end, uint64_t *min_delta)
{
	struct exp_point_value end[MAX_POINTS];
	struct exp_point_delta deltas[MAX_POINTS];
	unsigned n;

	/* Measured up to the settling (see CZ_SETTLING; settle_begin()). */
	if (c->state == CZ_SETTLING) {
		n = c->nsettle;
		memcpy(end, c->settle_vals, n * sizeof(end[0]));
		c->st.settle_ns += now - c->t_settle;
		now = c->t_settle;
	} else {
		n = read_points(c, end);
	}
	unsigned k = point_deltas(c->start_vals, c->npoints, end, n, deltas, min_delta);
	const struct cz_line *l = c->sel >= 0 ? &c->lines[c->sel] : NULL;
	struct exp_experiment e = {
		.time = now,
		.file = l ? l->file : NULL,
		.line = l ? l->line : 0,
		.speedup_pct = c->speedup,
		.duration_ns = now - c->t_measure,
		.delay_ns = (c->global - c->g0) * c->delay_ns + c->obs_ns,
		.observer_ns = c->obs_ns,
		.delays = c->global - c->g0,
		.selected_samples = c->sel_samples,
		.total_samples = c->tot_samples,
		.pause_ns = c->pause_ns,
		.pauses = c->pauses,
		.npoints = k,
		.points = deltas,
		.end_to_end = end_to_end,
	};
	if (c->latency && e.duration_ns > e.delay_ns) {
		/* The mean over the effective duration (the report's L,
		 * weighed by it): W = integral / arrivals. */
		double eff = (double)(e.duration_ns - e.delay_ns);
		track_in_flight(c, deltas, k, now); /* settled: at t_flight already */
		for (unsigned j = 0; j < k; j++)
			if (deltas[j].kind == EXP_MEASURE_LATENCY) {
				/* Signed: the delays taken out can exceed
				 * the integral by the noise of a short
				 * experiment; clamped here, that noise would
				 * only ever add. The report clamps the sum. */
				deltas[j].mean_in_flight = c->flight_area[j] / eff;
				deltas[j].have_mean = true;
			}
	}
	int err = c->out.experiment ? c->out.experiment(c->out.ctx, &e) : 0;

	pr_trace("causal: experiment %u%%: %.1f ms, %llu delays of %.0f us, %llu samples in the line "
		 "of %llu, %llu pauses (%.1f ms), first point +%llu",
		 c->speedup, e.duration_ns / 1e6, (unsigned long long)e.delays, c->delay_ns / 1e3,
		 (unsigned long long)c->sel_samples, (unsigned long long)c->tot_samples, (unsigned long long)c->pauses,
		 c->pause_ns / 1e6, k ? (unsigned long long)deltas[0].delta : 0ULL);
	if (err == 0)
		c->st.experiments++;
	return err;
}

static int end_experiment(struct exp_causal *c, uint64_t now, bool cut)
{
	uint64_t min_delta = UINT64_MAX;
	uint64_t measured_end = c->state == CZ_SETTLING ? c->t_settle : now;
	int err = 0;

	/* Whether written or dropped, its samples counted in samples0. */
	if (!c->speedup && !c->warming && measured_end > c->t_measure)
		c->time0 += measured_end - c->t_measure;
	/* Cut short: kept when it measured half its length, dropped when it
	 * measured less, neither while it was still warming up. */
	if (!cut || (!c->warming && now - c->t_measure >= c->length / 2))
		err = write_experiment(c, now, false, &min_delta);
	else if (!c->warming)
		c->st.dropped++;
	if (!cut && c->pp && min_delta != UINT64_MAX)
		c->length = exp_causal_next_length(c->length, c->cfg.experiment_ns,
						   c->cfg.max_experiment_ns, min_delta,
						   c->cfg.min_visits);
	c->have_last = !cut;
	c->last_sel = c->sel;
	c->last_speedup = c->speedup;
	/* No delays owed outside an experiment. */
	c->delay_ns = 0;
	forgive_all(c);
	c->state = CZ_IDLE;
	return err;
}

/* Whether every thread that can pay has paid (blocked ones pay or are
 * credited when they run again: Coz 3.4.1). */
static bool settled(struct exp_causal *c)
{
	for (size_t i = 0; i < c->threads.cap; i++) {
		if (!c->threads.keys[i] || !c->threads.vals[i])
			continue;
		struct cz_thread *t = (struct cz_thread *)(uintptr_t)c->threads.vals[i];
		if (t->holding)
			return false;
		if (t->blocked || t->wait == WAIT_BLOCKED)
			continue;
		int64_t excess = t->excess;
		if (owes(t, c->global, c->delay_ns, &excess))
			return false;
	}
	return true;
}

/* The experiment's end as measured: its points, and its latency integrals,
 * as its settling begins at now. */
static void settle_begin(struct exp_causal *c, uint64_t now)
{
	c->nsettle = read_points(c, c->settle_vals);
	if (c->latency)
		flight_at(c, c->settle_vals, c->nsettle, now);
}

int exp_causal_tick(struct exp_causal *c, uint64_t now)
{
	c->now = now;
	if (experimenting(c))
		resolve_all_wakes(c);
	switch (c->state) {
	case CZ_RUNNING:
		if (c->warming && now >= c->t_measure)
			measure(c, now);
		if (c->warming || now - c->t_measure < c->length)
			break;
		c->state = CZ_SETTLING;
		/* A sample taken before now still counts when it arrives. */
		c->t_settle = now;
		settle_begin(c, now);
		/* fall through */
	case CZ_SETTLING:
		if (!c->delay_ns || settled(c) || now - c->t_settle >= SETTLE_MAX_NS)
			return end_experiment(c, now, false);
		break;
	case CZ_IDLE:
		if (pick_line(c))
			start(c, now, true);
		else
			c->have_last = false; /* the program runs as at 0% */
		return 0;
	}
	/* Running on: the latency pairs' reading of this tick (from the
	 * measured part's start: measure()). */
	if (c->latency && c->state == CZ_RUNNING && !c->warming)
		read_in_flight(c, now);
	return 0;
}

/*
 * Every experiment, 0% included: a tick preempts a thread of a program
 * that keeps its CPUs busy, and the thread running the line owes nothing
 * that time could come off. At 5 ms for 0% experiments only, the baseline
 * paid less of psup than the experiments it is measured against, and
 * Figure 1's loop a with threads per round read -11 / -8 / -2% at
 * 25 / 50 / 100% where the truth is +4 (docs/causal.md, "Experiments").
 */
bool exp_causal_wants_fast_tick(const struct exp_causal *c)
{
	return experimenting(c) || c->latency ||
	       (c->last_trap && c->now < c->last_trap + EXP_CAUSAL_TRAP_RECENT_NS);
}

int exp_causal_flush(struct exp_causal *c)
{
	if (c->pp && c->out.progress_totals) {
		/* Every point's visits over the whole run, outside experiments
		 * too: what the report shows per point. */
		struct exp_point_value vals[MAX_POINTS];
		struct exp_point_delta totals[MAX_POINTS];
		uint64_t min;
		unsigned n = read_points(c, vals);
		unsigned k = point_deltas(NULL, 0, vals, n, totals, &min);
		if (k) {
			int err = c->out.progress_totals(c->out.ctx, psup_now_ns(), k, totals);
			if (err < 0)
				return err;
		}
	}
	for (size_t i = 0; i < c->nlines; i++) {
		struct cz_line *l = &c->lines[i];
		if (l->samples == l->written)
			continue;
		struct exp_line_samples ls = { l->file, l->line, l->samples, l->samples0, c->time0 };
		int err = c->out.line_samples ? c->out.line_samples(c->out.ctx, &ls) : 0;
		if (err < 0)
			return err;
		l->written = l->samples;
	}
	return 0;
}

int exp_causal_finish(struct exp_causal *c, uint64_t now)
{
	int err = 0;

	if (experimenting(c))
		err = end_experiment(c, now, c->state == CZ_RUNNING);
	c->state = CZ_IDLE;
	c->delay_ns = 0;
	if (err == 0)
		err = exp_causal_flush(c);
	return err;
}

int exp_causal_run_begin(struct exp_causal *c, uint64_t now)
{
	if (!pick_line(c))
		c->sel = -1;
	start(c, now, false);
	if (c->sel < 0) {
		/* Nothing sampled yet: a baseline run. */
		c->speedup = 0;
		c->delay_ns = 0;
	}
	return 0;
}

int exp_causal_run_end(struct exp_causal *c, uint64_t now)
{
	uint64_t min_delta;
	int err = 0;

	if (c->state == CZ_RUNNING)
		err = write_experiment(c, now, true, &min_delta);
	c->state = CZ_IDLE;
	c->delay_ns = 0;
	forgive_all(c);
	if (err == 0)
		err = exp_causal_flush(c);
	return err;
}

void exp_causal_stats(const struct exp_causal *c, struct exp_causal_stats *out)
{
	*out = c->st;
	out->lines = (unsigned)c->nlines;
	out->experiment_ns = c->length;
	out->running = experimenting(c);
	out->file = out->running && c->sel >= 0 ? c->lines[c->sel].file : NULL;
	out->line = out->running && c->sel >= 0 ? c->lines[c->sel].line : 0;
	out->speedup_pct = c->speedup;
	out->fixed_line_seen = c->fixed_index >= 0;
}

/* ---- lifecycle ------------------------------------------------------ */

int exp_causal_new(const struct exp_causal_config *cfg, struct exp_progress *pp,
		   const struct exp_sink *out, struct exp_causal **out_c)
{
	struct exp_causal *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	if (!c->cfg.experiment_ns)
		c->cfg.experiment_ns = EXP_CAUSAL_DEFAULT_EXPERIMENT_NS;
	if (!c->cfg.max_experiment_ns)
		c->cfg.max_experiment_ns = EXP_CAUSAL_DEFAULT_MAX_NS;
	if (c->cfg.max_experiment_ns < c->cfg.experiment_ns)
		c->cfg.max_experiment_ns = c->cfg.experiment_ns;
	if (!c->cfg.warmup_ns)
		c->cfg.warmup_ns = EXP_CAUSAL_DEFAULT_WARMUP_NS;
	if (!c->cfg.min_visits)
		c->cfg.min_visits = EXP_CAUSAL_MIN_VISITS;
	if (!c->cfg.pause_min_ns)
		c->cfg.pause_min_ns = EXP_CAUSAL_PAUSE_MIN_NS;
	if (!c->cfg.period_ns)
		c->cfg.period_ns = 1000000;
	if (c->cfg.fixed_speedup > 100)
		goto invalid;
	c->fixed_index = -1;
	c->sel = -1;
	if (cfg->fixed_line) {
		const char *colon = strrchr(cfg->fixed_line, ':');
		long v;
		if (!colon || colon == cfg->fixed_line || psup_parse_long(colon + 1, 1, INT_MAX, &v) < 0)
			goto invalid;
		c->fixed_file = strndup(cfg->fixed_line, (size_t)(colon - cfg->fixed_line));
		if (!c->fixed_file) {
			free(c);
			return -ENOMEM;
		}
		c->fixed_lineno = (unsigned)v;
	}
	c->pp = pp;
	if (out)
		c->out = *out;
	c->rng = cfg->seed ? cfg->seed : psup_rand_seed();
	if (!c->rng)
		c->rng = 0x9e3779b97f4a7c15ULL;
	c->length = c->cfg.experiment_ns;
	psup_u64map_init(&c->line_ids);
	psup_u64map_init(&c->threads);
	psup_u64map_init(&c->procs);
	*out_c = c;
	return 0;
invalid:
	free(c);
	return -EINVAL;
}

void exp_causal_free(struct exp_causal *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->threads.cap; i++)
		if (c->threads.keys[i])
			free((void *)(uintptr_t)c->threads.vals[i]);
	ghosts_free(c);
	for (size_t i = 0; i < c->procs.cap; i++) {
		if (!c->procs.keys[i] || !c->procs.vals[i])
			continue;
		proc_free((struct cz_proc *)(uintptr_t)c->procs.vals[i]);
	}
	for (size_t i = 0; i < c->nlines; i++)
		free(c->lines[i].file);
	free(c->lines);
	free(c->fixed_file);
	psup_u64map_release(&c->line_ids);
	psup_u64map_release(&c->threads);
	psup_u64map_release(&c->procs);
	free(c);
}
