/*
 * Causal profiling in `psup run` and `psup attach` (Coz, done from outside
 * the process): the options, and the wiring between the recorder's events,
 * the progress points (experiments/progress.c), the experiment engine
 * (experiments/causal.c) and the supervisor's pauses and intercepted calls.
 */
#include "builtin/record.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/util.h"
#include "experiments/experiments.h"
#include "report/report.h"
#include "supervisor/supervisor.h"
#include "symbols/symbols.h"
#include "sampler/sampler.h"

/* Samples must reach the engine soon for pauses to follow the line's
 * execution: the rings are drained every 1 ms in causal mode (Coz processes
 * samples in batches of 10 at 1 kHz, i.e. every 10 ms). A pause that comes
 * after the line has given way to other code speeds that code up instead:
 * at 5 ms, a lock holder's preparation line (t5050, phases of ~5 ms) read
 * as half its own speedup and half its critical section's, and its falling
 * curve rose. */
#define CAUSAL_TICK_NS (1ULL * 1000000ULL)
/* The tick between experiments (exp_causal_wants_fast_tick()): nothing is
 * measured then, and each tick preempts a thread of the program. */
#define CAUSAL_SLOW_TICK_NS (5ULL * 1000000ULL)
/* Progress points in images loaded later (dlopen) are looked for this often. */
#define CAUSAL_RESCAN_NS (1000000000ULL)
#define MAX_SPECS 64
/* Pause requests per tick: each costs a /proc read and an interrupt, so a
 * program with hundreds of threads owing at once is served in turns rather
 * than stalling the loop. */
#define MAX_CANDIDATES 32

struct causal_spec {
	const char *text;
	enum exp_point_kind kind;
	const char *name;
	bool sampled;
};

struct causal_cmd {
	struct rec_mode mode; /* first: the recorder's view */
	bool enabled;
	bool attach;
	unsigned runs;
	bool runs_given; /* --runs: end to end */
	struct causal_spec specs[MAX_SPECS];
	unsigned nspecs;
	char *latency_dup[MAX_SPECS]; /* strings split from --latency, freed at release */
	unsigned nlatency_dup;
	const char *scope[MAX_SPECS];
	unsigned nscope;
	const char *binary_scope[MAX_SPECS];
	unsigned nbinary_scope;
	const char *line;
	int speedup;
	unsigned speedup_step; /* --speedup-step (0: the engine's default) */
	uint64_t experiment_ns;

	struct rep_writer *w;
	struct exp_progress *pp;
	struct exp_causal *eng;
	struct sup_session *sup;
	const struct rec_causal_sup *ops; /* the supervisor's functions (a test's fake) */
	uint64_t period_ns;
	bool failed;
	bool filter;         /* run mode: seccomp interception */
	bool no_intercept;   /* --no-intercept */
	bool no_wake_stops;  /* --no-wake-stops */
	bool no_futex_stops; /* --no-futex-stops */
	bool futex_records;  /* futex calls not intercepted: waits credited from block records */
	bool wakeups;        /* every wakeup is recorded (who woke whom) */
	bool clock;          /* sample periods are ns */
	uint64_t rate_t0, rate_stops0;
	bool warned_rate;
	pid_t root;
	bool root_exec_seen;
	uint64_t last_rescan, exec_time;
	bool warned_no_points;
	struct psup_u64map spaces; /* pid -> struct sym_space * (not owned) */
	uint64_t run_start;
	void (*drain)(void *arg);
	void *drain_arg;
	bool draining;
	bool bad_end; /* check_end(cz) said the options named nothing */
	/* Pause statistics: of the ended sessions (--runs), and the current
	 * one's as of the last tick (the session is freed before the end). */
	struct sup_pause_stats ps_done, ps_cur;
	/* Unlock traps (run mode): tid -> struct unlock_trap *, and pid ->
	 * the address of pthread_mutex_unlock in it + 1. */
	struct psup_u64map traps;
	struct psup_u64map unlock_at;
	struct psup_u64map trap_fds; /* every trap fd opened + 1 -> 1: a signal of a
				      * closed one may still be queued */
	bool traps_failed;           /* the kernel refused one: no more tries */
	uint64_t last_unlock_scan;
	/* pthread_mutex_unlock in psup's own libc (sym_own_symbol()): its
	 * offset in the file (device, inode); 0 unknown, 1 found, -1 none */
	int unlock_ready;
	uint64_t unlock_offset;
	dev_t unlock_dev;
	ino_t unlock_ino;
	pid_t no_pay_tid;      /* at a trap in the C library's own unlock */
	uint64_t libc_traps;   /* how many (the -v statistics) */
	uint64_t traps_opened; /* the -v statistics */
};

static struct causal_cmd *to_causal(struct rec_mode *m)
{
	return (struct causal_cmd *)m;
}

/* getopt ids of the causal options ('p' is -p/--progress). */
enum {
	CAUSAL_OPT_CAUSAL = 1,
	CAUSAL_OPT_LATENCY,
	CAUSAL_OPT_SAMPLED,
	CAUSAL_OPT_RUNS,
	CAUSAL_OPT_SCOPE,
	CAUSAL_OPT_BINARY_SCOPE,
	CAUSAL_OPT_LINE,
	CAUSAL_OPT_SPEEDUP,
	CAUSAL_OPT_EXPERIMENT_MS,
	CAUSAL_OPT_SPEEDUP_STEP,
	CAUSAL_OPT_NO_INTERCEPT,
	CAUSAL_OPT_NO_WAKE_STOPS,
	CAUSAL_OPT_NO_FUTEX_STOPS,
};

static const struct rec_option causal_options[] = {
	{ "causal", no_argument, 0, CAUSAL_OPT_CAUSAL },
	{ "progress", required_argument, 'p', 'p' },
	{ "latency", required_argument, 0, CAUSAL_OPT_LATENCY },
	{ "sampled-progress", required_argument, 0, CAUSAL_OPT_SAMPLED },
	{ "runs", required_argument, 0, CAUSAL_OPT_RUNS },
	{ "scope", required_argument, 0, CAUSAL_OPT_SCOPE },
	{ "binary-scope", required_argument, 0, CAUSAL_OPT_BINARY_SCOPE },
	{ "line", required_argument, 0, CAUSAL_OPT_LINE },
	{ "speedup", required_argument, 0, CAUSAL_OPT_SPEEDUP },
	{ "experiment-ms", required_argument, 0, CAUSAL_OPT_EXPERIMENT_MS },
	{ "speedup-step", required_argument, 0, CAUSAL_OPT_SPEEDUP_STEP },
	{ "no-intercept", no_argument, 0, CAUSAL_OPT_NO_INTERCEPT },
	{ "no-wake-stops", no_argument, 0, CAUSAL_OPT_NO_WAKE_STOPS },
	{ "no-futex-stops", no_argument, 0, CAUSAL_OPT_NO_FUTEX_STOPS },
	{ NULL, 0, 0, 0 },
};

struct unlock_trap {
	pid_t tid, pid;
	int fd; /* -1: none (not found yet, or refused) */
	bool armed;
	uint64_t retry_at; /* mono ns: look at its signal mask again */
	/* Traps in a row at the C library's own unlocks (see trap_is_libc),
	 * and the back-off they earned: disarmed until quiet_until. */
	unsigned libc_row;
	uint64_t quiet_until, backoff;
};

/* A new thread blocks every signal until its start routine runs (glibc's
 * pthread_create blocks them all around the clone): its trap is opened
 * later (trap_open()), and a thread found blocking psup's signal is looked
 * at again this often. */
#define TRAP_RETRY_NS (20ULL * 1000000ULL)

#define UNLOCK_NONE UINT64_MAX
/* How often the processes without a known pthread_mutex_unlock have their
 * mappings read again (a program loads libc at start, or never). */
#define UNLOCK_SCAN_NS (100ULL * 1000000ULL)
/* A trap that fired this many times in a row at the C library's own
 * unlocks is disarmed, first for the shortest back-off, doubled at each
 * round until the longest; a trap at the program's unlock resets it. */
#define TRAP_LIBC_ROW 2
#define TRAP_BACKOFF_MIN_NS (50ULL * 1000000ULL)
#define TRAP_BACKOFF_MAX_NS (1000ULL * 1000000ULL)


/* ---- options ----------------------------------------------------------- */

static int add_spec(struct causal_cmd *cz, const char *text, enum exp_point_kind kind, const char *name, bool sampled)
{
	if (cz->nspecs == MAX_SPECS) {
		pr_err("too many progress points (at most %d)", MAX_SPECS);
		return 2;
	}
	cz->specs[cz->nspecs++] = (struct causal_spec){ text, kind, name, sampled };
	return -1;
}

static int causal_option(struct rec_mode *m, int c, const char *arg, bool attach)
{
	struct causal_cmd *cz = to_causal(m);
	long v;

	cz->attach = attach;
	switch (c) {
	case CAUSAL_OPT_CAUSAL:
		break;
	case 'p':
		if (add_spec(cz, arg, EXP_POINT_THROUGHPUT, NULL, false) >= 0)
			return 2;
		break;
	case CAUSAL_OPT_SAMPLED:
		if (add_spec(cz, arg, EXP_POINT_THROUGHPUT, NULL, true) >= 0)
			return 2;
		break;
	case CAUSAL_OPT_LATENCY: {
		const char *comma = strchr(arg, ',');
		if (!comma || comma == arg || !comma[1] || strchr(comma + 1, ',')) {
			pr_err("invalid --latency '%s': expected BEGIN,END (two FILE:LINE or FUNCTION)", arg);
			return 2;
		}
		if (cz->nlatency_dup + 2 > MAX_SPECS) {
			pr_err("too many latency pairs");
			return 2;
		}
		char *b = strndup(arg, (size_t)(comma - arg)), *e = strdup(comma + 1);
		if (!b || !e) {
			free(b);
			free(e);
			pr_err("out of memory");
			return 2;
		}
		cz->latency_dup[cz->nlatency_dup++] = b;
		cz->latency_dup[cz->nlatency_dup++] = e;
		/* The pair's name is the option's text: BEGIN,END. */
		if (add_spec(cz, b, EXP_POINT_BEGIN, arg, false) >= 0 || add_spec(cz, e, EXP_POINT_END, arg, false) >= 0)
			return 2;
		break;
	}
	case CAUSAL_OPT_RUNS:
		if (attach) {
			pr_err("--runs is for psup run (it runs the program several times)");
			return 2;
		}
		if (psup_parse_long(arg, 1, 100000, &v) < 0) {
			pr_err("invalid --runs '%s': expected a number of runs from 1 to 100000", arg);
			return 2;
		}
		cz->runs = (unsigned)v;
		cz->runs_given = true;
		break;
	case CAUSAL_OPT_SCOPE:
		if (cz->nscope == MAX_SPECS) {
			pr_err("too many --scope globs");
			return 2;
		}
		cz->scope[cz->nscope++] = arg;
		break;
	case CAUSAL_OPT_BINARY_SCOPE:
		if (cz->nbinary_scope == MAX_SPECS) {
			pr_err("too many --binary-scope globs");
			return 2;
		}
		cz->binary_scope[cz->nbinary_scope++] = arg;
		break;
	case CAUSAL_OPT_LINE: {
		const char *colon = strrchr(arg, ':');
		if (!colon || colon == arg || psup_parse_long(colon + 1, 1, INT_MAX, &v) < 0) {
			pr_err("invalid --line '%s': expected FILE:LINE, e.g. main.c:12", arg);
			return 2;
		}
		cz->line = arg;
		break;
	}
	case CAUSAL_OPT_SPEEDUP:
		if (psup_parse_long(arg, 0, 100, &v) < 0 || v % 5) {
			pr_err("invalid --speedup '%s': expected a percentage from 0 to 100, a multiple of 5", arg);
			return 2;
		}
		cz->speedup = (int)v;
		break;
	case CAUSAL_OPT_NO_INTERCEPT:
		cz->no_intercept = true;
		break;
	case CAUSAL_OPT_NO_WAKE_STOPS:
		cz->no_wake_stops = true;
		break;
	case CAUSAL_OPT_NO_FUTEX_STOPS:
		cz->no_futex_stops = true;
		break;
	case CAUSAL_OPT_SPEEDUP_STEP:
		if (psup_parse_long(arg, 5, 100, &v) < 0 || v % 5 || 100 % v) {
			pr_err("invalid --speedup-step '%s': expected 5, 10, 20, 25, 50 or 100", arg);
			return 2;
		}
		cz->speedup_step = (unsigned)v;
		break;
	case CAUSAL_OPT_EXPERIMENT_MS:
		if (psup_parse_long(arg, 1, 600000, &v) < 0) {
			pr_err("invalid --experiment-ms '%s': expected milliseconds from 1 to 600000", arg);
			return 2;
		}
		cz->experiment_ns = (uint64_t)v * 1000000ULL;
		break;
	default:
		return 2;
	}
	cz->enabled = true;
	return -1;
}

static int causal_check(struct rec_mode *m, bool attach, unsigned free_slots)
{
	struct causal_cmd *cz = to_causal(m);

	(void)free_slots;
	cz->attach = attach;
	if (!cz->enabled)
		return -1;
	/* --causal alone takes the program's own points (psup.h, coz.h):
	 * whether it has any is known once it runs (a warning then). */
	return -1;
}

static void causal_usage(FILE *f, bool attach)
{
	fputs("causal profiling (what if this line were X% faster?):\n"
	      "      --causal          run experiments, with the program's own progress\n"
	      "                        points (include/psup.h or Coz's coz.h macros)\n"
	      "  -p, --progress SPEC   throughput progress point, FILE:LINE or FUNCTION\n"
	      "                        (a hardware breakpoint counter; repeatable)\n"
	      "      --latency B,E     latency between two points (Little's law)\n"
	      "      --sampled-progress SPEC  progress counted from samples in SPEC\n",
	      f);
	if (!attach)
		fputs("      --runs N          end to end: run the program N times, one\n"
		      "                        experiment per run, whole-program time\n",
		      f);
	fputs("      --scope GLOB      source files experiments may speed up (default:\n"
	      "                        every source of the main executable; repeatable)\n"
	      "      --binary-scope GLOB  images experiments may speed up\n"
	      "      --line FILE:LINE  always speed up this line\n"
	      "      --speedup PCT     always this speedup (0..100, multiple of 5)\n"
	      "      --speedup-step N  random speedups in steps of N% (default 5)\n"
	      "      --experiment-ms N initial experiment length (default 10)\n",
	      f);
	if (!attach)
		fputs("      --no-intercept    no seccomp stops at synchronization calls: blocked\n"
		      "                        threads are credited from switch records (cheaper\n"
		      "                        for futex-heavy programs, less exact)\n"
		      "      --no-wake-stops   no stops at futex wakes: a woken thread takes over\n"
		      "                        its waker's debt (cheaper for condvar hand-offs;\n"
		      "                        see README for the programs it slows)\n"
		      "      --no-futex-stops  no stops at futex calls at all: waits credited from\n"
		      "                        block and switch records, wakes as --no-wake-stops;\n"
		      "                        I/O and sleeps still stop (lock-heavy programs)\n",
		      f);
}

static bool causal_enabled(const struct rec_mode *m)
{
	const struct causal_cmd *cz = (const struct causal_cmd *)m;

	return cz->enabled;
}

static unsigned causal_runs(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	return cz->enabled ? cz->runs : 1;
}

static bool end_to_end(struct causal_cmd *cz)
{
	return cz->runs_given;
}

static unsigned causal_spawn_flags(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);
	unsigned flags = SUP_SPAWN_CAUSAL_FILTER;

	/* Crediting matters in end-to-end runs too: every run-mode causal
	 * session intercepts. */
	if (!cz->enabled || cz->attach || cz->no_intercept)
		return 0;
	/* A thread's exit wakes its joiner: the wakeup records tell it, and
	 * the joiner takes over what the thread still owed
	 * (exp_causal_wakeup()), so the exit needs no stop (two stops per
	 * round less for a program that makes and joins its threads each
	 * round). */
	if (cz->wakeups)
		flags |= SUP_SPAWN_CAUSAL_NO_EXIT;
	/* --no-futex-stops: a wait is seen in the block and switch records
	 * (exp_causal_block_futex), so no futex call stops; the calls that
	 * wait for I/O or time or send signals still do. The block records
	 * come with the wakeup records. */
	if (cz->no_futex_stops && cz->wakeups) {
		cz->futex_records = true;
		return flags | SUP_SPAWN_CAUSAL_NO_WAKES | SUP_SPAWN_CAUSAL_NO_FUTEX;
	}
	/* --no-wake-stops: who woke whom comes from the wakeup records
	 * (exp_causal_wakeup), so the wakes, two thirds of a condvar
	 * pipeline's futex calls, need no stop. */
	if (cz->no_wake_stops && cz->wakeups)
		return flags | SUP_SPAWN_CAUSAL_NO_WAKES;
	if (cz->no_wake_stops || cz->no_futex_stops)
		pr_warn("%s needs wakeup records (the sched_waking tracepoint: root or "
			"CAP_PERFMON, and no --no-lock-blame): the futex calls stop as usual",
			cz->no_futex_stops ? "--no-futex-stops" : "--no-wake-stops");
	return flags;
}

static uint64_t causal_tick_ns(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled)
		return 0;
	return !cz->eng || exp_causal_wants_fast_tick(cz->eng) ? CAUSAL_TICK_NS : CAUSAL_SLOW_TICK_NS;
}

/* ---- set-up ------------------------------------------------------------ */

static int fail(struct causal_cmd *cz, int err)
{
	if (err < 0)
		cz->failed = true;
	return err;
}

static int causal_start(struct rec_mode *m, const struct rec_env *env)
{
	struct causal_cmd *cz = to_causal(m);
	char why[256];
	int err;

	if (!cz->enabled)
		return 0;
	cz->drain = env->drain;
	cz->drain_arg = env->drain_arg;
	cz->attach = env->attach;
	cz->w = env->w;
	cz->period_ns = env->period ? env->period : 1000000;
	cz->clock = env->clock;
	cz->filter = !env->attach && !cz->no_intercept;
	/* A thread's exit system call stops at the filter, where its psup.h
	 * counters are read (hook_enter): no exit stop for the others (a
	 * stop and a resume fewer per thread: Figure 1 with threads per
	 * round ran 2-4% faster at --speedup 0, 3 runs). */
	cz->mode.exiting_leaders_only = cz->filter;
	cz->wakeups = env->wakeups;
	/* An attached process has exec'ed long ago; a spawned one not yet. */
	cz->root_exec_seen = env->attach;
	psup_u64map_init(&cz->spaces);
	err = exp_progress_new(&cz->pp);
	if (err < 0) {
		pr_err("causal profiling: %s", strerror(-err));
		return err;
	}
	for (unsigned i = 0; i < cz->nspecs; i++) {
		const struct causal_spec *s = &cz->specs[i];
		why[0] = '\0';
		err = exp_progress_add(cz->pp, s->text, s->kind, s->name, s->sampled, why, sizeof(why));
		if (err < 0) {
			pr_err("%s", why[0] ? why : strerror(-err));
			return err;
		}
	}
	struct exp_sink out;
	struct exp_causal_config cfg = {
		.period_ns = cz->period_ns,
		.experiment_ns = cz->experiment_ns,
		.fixed_speedup = cz->speedup,
		.speedup_step = cz->speedup_step,
		.fixed_line = cz->line,
		.scope = cz->scope,
		.nscope = cz->nscope,
		.binary_scope = cz->binary_scope,
		.nbinary_scope = cz->nbinary_scope,
	};
	rec_sink_init(&out, env->w);
	err = exp_causal_new(&cfg, end_to_end(cz) ? NULL : cz->pp, &out, &cz->eng);
	if (err < 0) {
		pr_err("causal profiling: %s", err == -EINVAL ? "invalid settings" : strerror(-err));
		return err;
	}
	return 0;
}

/* What a run without interception means for the predictions (the header's
 * note, after the mode that has none). */
#define NO_INTERCEPTION \
	"no system call interception; threads woken from a futex are credited when they " \
	"run again (after the fact, from switch records), and delays are not executed " \
	"before wake-ups (the woken thread takes its waker's debt over when wakeups are " \
	"recorded), so predictions for lines whose threads hand work over through locks " \
	"are less exact"

#define NO_FUTEX_INTERCEPTION \
	"futex calls are not intercepted; threads woken from a futex are credited when they " \
	"run again (from block and switch records, their debt from before the wait kept), and " \
	"delays are not executed before futex wake-ups (the woken thread takes its waker's " \
	"debt over)"

static int causal_header(struct rec_mode *m, struct sup_session *s)
{
	struct causal_cmd *cz = to_causal(m);

	(void)s;
	if (!cz->enabled || !cz->eng)
		return 0;
	struct rep_causal_info ci = {
		.mode = cz->attach ? "attach" : "run",
		.syscall_crediting = cz->filter,
		.period_ns = cz->period_ns,
		.scope_lines = 0,
		.note = cz->attach          ? "attach mode: " NO_INTERCEPTION
			: !cz->filter       ? "--no-intercept: " NO_INTERCEPTION
			: cz->futex_records ? "--no-futex-stops: " NO_FUTEX_INTERCEPTION
					    : NULL,
	};
	return fail(cz, rep_write_causal_info(cz->w, &ci));
}

static void drain_now(struct causal_cmd *cz);

/* ---- unlock traps ------------------------------------------------------ */

/*
 * Coz pays a thread's owed delays in its pthread_mutex_unlock wrapper,
 * before the real unlock: the threads waiting for the lock wait while it
 * pays. psup paid them at the intercepted futex calls instead, before a
 * contended lock's wait and at the unlock's wake (after the release), so a
 * line whose speedup makes a lock busier (t5050) came out as a speedup.
 * From outside the process: a perf breakpoint at the entry of
 * pthread_mutex_unlock per thread, enabled only while the thread owes
 * during an experiment (so a program pays no trap when nothing is owed),
 * raising a stop (psup's queued realtime signal, not a forced SIGTRAP) that
 * psup holds and never delivers. A thread that blocks that signal gets no
 * trap: the signal would wait, visible to its sigpending().
 */
/* The traps from slot *i of cz->traps on: the next one, *i past it; NULL
 * at the end. */
static struct unlock_trap *next_trap(struct causal_cmd *cz, size_t *i)
{
	for (; *i < cz->traps.cap; (*i)++)
		if (cz->traps.keys[*i] && cz->traps.vals[*i])
			return (struct unlock_trap *)(uintptr_t)cz->traps.vals[(*i)++];
	return NULL;
}

static void trap_arm(struct unlock_trap *tr, bool on)
{
	if (tr->fd < 0 || tr->armed == on)
		return;
	if (smp_bp_trap_enable(tr->fd, on) == 0)
		tr->armed = on;
}

static void trap_close(struct causal_cmd *cz, struct unlock_trap *tr)
{
	if (tr->fd >= 0)
		close(tr->fd);
	tr->fd = -1;
	tr->armed = false;
	if (cz->eng)
		exp_causal_set_trap(cz->eng, tr->tid, false);
}

/*
 * When a thread's trap is opened. With the futex calls intercepted, at the
 * thread's first futex call (hook_enter()): a thread that never makes one
 * takes no lock another thread waits for, so a trap would only cost it, and
 * in that stop psup reads the thread's signal mask with ptrace. Otherwise at
 * the first tick where the thread owes (traps_update()), the mask read from
 * /proc. Both costs were per thread of a program that makes threads per
 * task: /proc/TID/status of a new thread took 35-47 us (its /proc entry is
 * made on first use), the breakpoint on a running thread another 13 us and
 * an interrupt of its CPU; Figure 1 with both threads made per round (`psup
 * run --causal --line causal-figure1.c:40 --speedup 0 -- causal-figure1-psuph
 * 4 spawn`) made 6% more rounds without traps, none of its threads making a
 * futex call but the joiner.
 */
static bool traps_at_futex_stops(const struct causal_cmd *cz)
{
	return cz->filter && !cz->futex_records;
}

/* Whether thread tid blocks sig (or cannot be asked): with ptrace when it
 * is stopped, else from /proc. */
static bool blocks_signal(struct causal_cmd *cz, pid_t tid, int sig, bool stopped)
{
	uint64_t blk;
	int err = stopped && cz->sup ? sup_thread_sigmask(cz->sup, tid, &blk) : sup_thread_sigstate(tid, NULL, &blk);

	return err < 0 || ((blk >> (sig - 1)) & 1);
}

static void trap_open(struct causal_cmd *cz, struct unlock_trap *tr, bool stopped)
{
	uint64_t *at = psup_u64map_find(&cz->unlock_at, (uint64_t)tr->pid);
	int fd;

	if (tr->fd >= 0 || !at || *at == UNLOCK_NONE || cz->traps_failed)
		return;
	tr->retry_at = 0;
	if (blocks_signal(cz, tr->tid, smp_witch_signal(), stopped)) {
		tr->retry_at = psup_now_ns() + TRAP_RETRY_NS;
		return;
	}
	fd = smp_bp_trap_open(tr->tid, *at - 1);
	if (fd < 0) {
		/* No debug register left (progress points, witch) or no
		 * breakpoints in this kernel: delays are paid at the calls. */
		pr_debug("causal: no unlock trap for thread %d: %s", tr->tid, smp_bp_strerror(fd));
		if (fd != -ENOSPC && fd != -ESRCH)
			cz->traps_failed = true;
		return;
	}
	tr->fd = fd;
	cz->traps_opened++;
	uint64_t *v = psup_u64map_upsert(&cz->trap_fds, (uint64_t)fd + 1, NULL);
	if (v)
		*v = 1;
	exp_causal_set_trap(cz->eng, tr->tid, true);
}

/* Whether tr is to be opened now: none yet, and not refused (it blocked
 * psup's signal) less than TRAP_RETRY_NS ago. */
static bool trap_due(const struct causal_cmd *cz, const struct unlock_trap *tr, uint64_t now)
{
	return tr->fd < 0 && tr->retry_at && now >= tr->retry_at && !cz->failed;
}

/* A futex call of tid, stopped (hook_enter()): its trap, when due. */
static void trap_at_futex(struct causal_cmd *cz, pid_t tid, uint64_t now)
{
	uint64_t *v = psup_u64map_find(&cz->traps, (uint64_t)tid);
	struct unlock_trap *tr = v ? (struct unlock_trap *)(uintptr_t)*v : NULL;

	if (tr && trap_due(cz, tr, now))
		trap_open(cz, tr, true);
}

/*
 * Where pthread_mutex_unlock is in pid: psup finds it in its own copy of
 * libc (offset from the load base) and in pid the mapping of the same file
 * (device and inode) at offset 0. A program with another libc (static, musl,
 * a chroot) has none found: its delays are paid at the calls as before.
 * 0 when not (yet) found.
 */
static uint64_t unlock_address(struct causal_cmd *cz, pid_t pid)
{
	uint64_t base;

	if (!cz->unlock_ready)
		cz->unlock_ready = sym_own_symbol("libc.so.6", "pthread_mutex_unlock", &cz->unlock_offset,
						  &cz->unlock_dev, &cz->unlock_ino) == 0
					   ? 1
					   : -1;
	if (cz->unlock_ready < 0 || sym_maps_file_base(pid, cz->unlock_dev, cz->unlock_ino, &base) < 0)
		return 0;
	return base + cz->unlock_offset;
}

/* Finds pthread_mutex_unlock in pid (libc is mapped by the dynamic loader,
 * after the exec) and opens the traps of its threads. */
static void find_unlock(struct causal_cmd *cz, pid_t pid)
{
	uint64_t *at = psup_u64map_find(&cz->unlock_at, (uint64_t)pid), addr;
	struct unlock_trap *tr;
	bool created;

	if (at && *at != UNLOCK_NONE)
		return;
	addr = unlock_address(cz, pid);
	if (!addr)
		return;
	at = psup_u64map_upsert(&cz->unlock_at, (uint64_t)pid, &created);
	if (!at)
		return;
	*at = addr + 1;
	pr_debug("causal: pthread_mutex_unlock of %d at %#llx", pid, (unsigned long long)addr);
	if (traps_at_futex_stops(cz))
		return;
	for (size_t i = 0; (tr = next_trap(cz, &i));)
		if (tr->pid == pid)
			trap_open(cz, tr, false);
}

static void trap_forget_process(struct causal_cmd *cz, pid_t pid)
{
	struct unlock_trap *tr;

	for (size_t i = 0; (tr = next_trap(cz, &i));)
		if (tr->pid == pid)
			trap_close(cz, tr);
	psup_u64map_remove(&cz->unlock_at, (uint64_t)pid);
}

static void trap_thread_new(struct causal_cmd *cz, pid_t tid, pid_t pid)
{
	struct unlock_trap *tr;
	uint64_t *slot;
	bool created;

	if (!cz->filter || cz->traps_failed)
		return;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return;
	slot = psup_u64map_upsert(&cz->traps, (uint64_t)tid, &created);
	if (!slot) {
		free(tr);
		return;
	}
	if (!created && *slot) {
		struct unlock_trap *old = (struct unlock_trap *)(uintptr_t)*slot;
		trap_close(cz, old);
		free(old);
	}
	tr->tid = tid;
	tr->pid = pid;
	tr->fd = -1;
	/* Opened at its first futex call or the first tick where it owes
	 * (traps_at_futex_stops()), not in the clone stop: a thread made by
	 * pthread_create blocks every signal until it runs its start routine.
	 * Not 20 ms after the clone either (fewer traps for short threads):
	 * t5050's hammer line read flat in 2 quiet runs of 4 (slope -0.02 and
	 * -0.04 against -0.20 to -0.32). */
	tr->retry_at = psup_now_ns();
	*slot = (uint64_t)(uintptr_t)tr;
}

static void trap_thread_gone(struct causal_cmd *cz, pid_t tid)
{
	uint64_t *slot = psup_u64map_find(&cz->traps, (uint64_t)tid);

	if (!slot || !*slot)
		return;
	struct unlock_trap *tr = (struct unlock_trap *)(uintptr_t)*slot;
	trap_close(cz, tr);
	free(tr);
	psup_u64map_remove(&cz->traps, (uint64_t)tid);
}

/* Arms the traps of the threads that owe, disarms the others; without
 * traps at futex stops, gives one to a thread that owes for the first time,
 * or that blocked psup's signal when last looked at. A thread that never
 * owes has none: opening one is a
 * breakpoint installed on a running thread (an IPI to its CPU) and a close
 * at its end, per thread of a program that makes threads per task (Figure 1
 * with both threads made per round opened 2535 for 3068 threads in 5 s). */
static void traps_update(struct causal_cmd *cz, uint64_t now)
{
	struct unlock_trap *tr;
	bool at_futex = traps_at_futex_stops(cz);

	for (size_t i = 0; (tr = next_trap(cz, &i));) {
		if (!at_futex && trap_due(cz, tr, now) && exp_causal_trap_would_want(cz->eng, tr->tid))
			trap_open(cz, tr, false);
		if (tr->fd >= 0)
			trap_arm(tr, !cz->failed && now >= tr->quiet_until &&
					     exp_causal_trap_wanted(cz->eng, tr->tid));
	}
}

static void traps_release(struct causal_cmd *cz)
{
	struct unlock_trap *tr;

	for (size_t i = 0; (tr = next_trap(cz, &i));) {
		if (tr->fd >= 0)
			close(tr->fd);
		free(tr);
	}
	psup_u64map_release(&cz->traps);
	psup_u64map_release(&cz->unlock_at);
	psup_u64map_release(&cz->trap_fds);
}

static bool causal_own_breakpoint(struct rec_mode *m, pid_t tid, uint64_t addr)
{
	struct causal_cmd *cz = to_causal(m);
	uint64_t *v = psup_u64map_find(&cz->traps, (uint64_t)tid);
	const struct unlock_trap *tr = v ? (const struct unlock_trap *)(uintptr_t)*v : NULL;
	uint64_t *at = tr && tr->fd >= 0 ? psup_u64map_find(&cz->unlock_at, (uint64_t)tr->pid) : NULL;

	if (at && *at != UNLOCK_NONE && *at - 1 == addr)
		return true;
	return cz->pp && exp_progress_has_breakpoint(cz->pp, tid, addr);
}

/*
 * Whether the unlock tid trapped in was called by the C library or the
 * dynamic loader themselves (its return address, at the top of the stack
 * at the function's entry, is in their code): pthread_create unlocks the
 * loader's TLS lock (GL(dl_load_tls_lock), a recursive pthread mutex)
 * through a function pointer, dlopen and the TLS setup others. Coz's
 * wrapper never sees those calls (it interposes the program's calls by
 * symbol), so nothing is paid there; each was a stop of a thread making
 * threads, in the middle of pthread_create (issue 19: Figure 1 with two
 * threads created per round ran 1.5x slower with the traps armed, ~1.1x
 * without).
 */
static bool trap_is_libc(struct causal_cmd *cz, pid_t tid, pid_t pid, const struct user_regs_struct *regs)
{
	uint64_t *v = psup_u64map_find(&cz->spaces, (uint64_t)pid);
	struct sym_space *sp = v ? (struct sym_space *)(uintptr_t)*v : NULL;
	const char *path, *base;
	uint64_t ret = 0;

	if (!sp || !cz->sup || sup_thread_read(cz->sup, tid, regs->rsp, &ret, sizeof(ret)) != (long)sizeof(ret))
		return false;
	path = sym_space_mapping_path(sp, ret);
	if (!path)
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) || !strncmp(base, "ld-", 3);
}

static bool hook_trap(void *arg, pid_t tid, const siginfo_t *si)
{
	struct causal_cmd *cz = arg;
	uint64_t *v = psup_u64map_find(&cz->traps, (uint64_t)tid);
	const struct unlock_trap *tr = v ? (const struct unlock_trap *)(uintptr_t)*v : NULL;

	if (!tr || tr->fd < 0 || !smp_bp_trap_is_ours(si, tr->fd)) {
		/* one of a trap closed since (its signal was queued): psup's,
		 * never the program's, and nothing to pay */
		return si->si_signo == smp_witch_signal() && si->si_code == POLL_IN &&
		       si->si_fd >= 0 && psup_u64map_find(&cz->trap_fds, (uint64_t)si->si_fd + 1);
	}
	/* It stays armed while it owes (each tick decides): Coz pays at
	 * every unlock, so the wake after the release owes nothing, and a
	 * woken waiter is credited for delays its waker really paid. */
	struct user_regs_struct regs;
	uint64_t mutex = 0;
	struct unlock_trap *mine = (struct unlock_trap *)(uintptr_t)*v;
	if (cz->sup && sup_thread_regs(cz->sup, tid, &regs) == 0) {
		mutex = regs.rdi; /* pthread_mutex_unlock(mutex) */
		if (trap_is_libc(cz, tid, tr->pid, &regs)) {
			/* Not the program's unlock: consumed, nothing paid,
			 * and after a few in a row the trap rests (traps_update). */
			cz->libc_traps++;
			cz->no_pay_tid = tid;
			if (++mine->libc_row >= TRAP_LIBC_ROW) {
				uint64_t now = psup_now_ns();
				mine->libc_row = 0;
				mine->backoff = mine->backoff ? mine->backoff * 2 : TRAP_BACKOFF_MIN_NS;
				if (mine->backoff > TRAP_BACKOFF_MAX_NS)
					mine->backoff = TRAP_BACKOFF_MAX_NS;
				mine->quiet_until = now + mine->backoff;
				trap_arm(mine, false);
			}
			return true;
		}
		mine->libc_row = 0;
		mine->backoff = 0;
	}
	/* Every record read first: the engine looks at the trap's stop. */
	if (!cz->failed)
		drain_now(cz);
	if (cz->eng)
		exp_causal_trapped(cz->eng, tid, psup_now_ns(), mutex);
	return true;
}

/* ---- supervisor hooks -------------------------------------------------- */

static uint64_t hook_hold(void *arg, pid_t tid, bool in_syscall)
{
	struct causal_cmd *cz = arg;
	uint64_t ns;

	if (tid == cz->no_pay_tid && !in_syscall) {
		/* its trap was at the C library's own unlock (hook_trap) */
		cz->no_pay_tid = 0;
		return 0;
	}
	if (cz->failed)
		return 0;
	ns = exp_causal_hold(cz->eng, tid, in_syscall);
	if (ns)
		pr_trace("causal: hold %d for %llu us", tid, (unsigned long long)(ns / 1000));
	return ns;
}

static void hook_interrupted(void *arg, pid_t tid, uint64_t now)
{
	struct causal_cmd *cz = arg;

	if (!cz->failed)
		exp_causal_interrupted(cz->eng, tid, now);
}

/* Holds ran out: the samples taken while they ran are taken in first. */
static void hook_due(void *arg)
{
	struct causal_cmd *cz = arg;
	if (!cz->failed)
		drain_now(cz);
}

/* A hold ran out: the line ran on meanwhile, so the thread is held on
 * until it owes less than a pause is worth. Resumed at once instead, it
 * paid the rest at its next stop, wherever that was: after a client's think
 * time, inside the request it had just begun (the latency a faster server
 * shortens, t5110). */
static uint64_t hook_held(void *arg, pid_t tid, uint64_t asked, uint64_t lost, bool may_extend)
{
	struct causal_cmd *cz = arg;
	uint64_t ns;

	exp_causal_held(cz->eng, tid, asked, lost, psup_now_ns());
	if (!may_extend || cz->failed)
		return 0;
	ns = exp_causal_hold_on(cz->eng, tid, psup_now_ns());
	if (ns)
		pr_trace("causal: hold %d on for %llu us", tid, (unsigned long long)(ns / 1000));
	return ns;
}

/*
 * Samples reach psup a few ms after they are taken. Before deciding what a
 * thread owes ahead of a call that blocks or wakes, and before crediting it
 * when a blocking call returns, every sample taken so far is taken in:
 * otherwise the delays of line executions already past would be credited
 * instead of executed (a late sample arriving after the thread blocked), or
 * charged to a thread that was blocked while they ran (a late sample arriving
 * after its credit). During every experiment, 0% included: the cost must not
 * depend on the speedup.
 */
static void drain_now(struct causal_cmd *cz)
{
	struct exp_causal_stats st;

	exp_causal_stats(cz->eng, &st);
	if (st.running && cz->drain && !cz->draining) {
		cz->draining = true;
		cz->drain(cz->drain_arg);
		cz->draining = false;
	}
}

static bool hook_enter(void *arg, pid_t tid, int nr, const uint64_t args[6])
{
	struct causal_cmd *cz = arg;
	if (cz->failed)
		return false;
	/* A thread's end (its exit, not the process's: exit_group ends the
	 * leader too, which stops at its exit): the last chance to read the
	 * counters of a process whose leader is gone already. */
	if (nr == SYS_exit && cz->pp)
		exp_progress_thread_exiting(cz->pp, tid, 0);
	if ((nr == SYS_futex || nr == SYS_futex_waitv) && traps_at_futex_stops(cz))
		trap_at_futex(cz, tid, psup_now_ns());
	drain_now(cz);
	return exp_causal_syscall_enter(cz->eng, tid, nr, args, psup_now_ns());
}

/* The return of a wait for I/O or time: the samples taken while it waited
 * are taken in before the hold hook says what it owes. */
static void hook_exit(void *arg, pid_t tid, int nr, int64_t ret)
{
	struct causal_cmd *cz = arg;
	(void)nr;
	(void)ret;
	if (!cz->failed) {
		drain_now(cz);
		exp_causal_syscall_exit(cz->eng, tid);
	}
}

static void causal_session(struct rec_mode *m, struct sup_session *s)
{
	struct causal_cmd *cz = to_causal(m);
	struct sup_pause_hooks h = {
		.hold = hook_hold,
		.due = hook_due,
		.held = hook_held,
		.interrupted = hook_interrupted,
		.syscall_enter = hook_enter,
		.syscall_exit = hook_exit,
		.trap = cz->filter ? hook_trap : NULL,
		.arg = cz,
	};

	if (!cz->enabled || !cz->eng)
		return;
	cz->sup = s;
	cz->root = cz->ops->session_pid(s);
	/* Holds end on a timer: psup's own timers without the default 50 us
	 * of slack (set after the spawn, so the program keeps its own). */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		pr_debug("timer slack: %s", strerror(errno));
	cz->ops->set_pause_hooks(s, &h);
}

/* ---- recorder events ------------------------------------------------- */

static void remember_space(struct causal_cmd *cz, pid_t pid, struct sym_space *sp)
{
	uint64_t *v = psup_u64map_upsert(&cz->spaces, (uint64_t)pid, NULL);

	if (v)
		*v = (uintptr_t)sp;
}

static void find_points(struct causal_cmd *cz, struct sym_space *sp, pid_t pid)
{
	if (!sp || !cz->pp)
		return;
	int err = exp_progress_process(cz->pp, sp, pid);
	if (err < 0)
		pr_debug("progress points in %d: %s", pid, strerror(-err));
}

static int causal_thread_new(struct rec_mode *m, struct sym_space *sp, pid_t tid, pid_t pid, pid_t parent,
			     bool new_process, uint64_t time)
{
	struct causal_cmd *cz = to_causal(m);

	(void)time;
	(void)parent; /* a new thread owes nothing (exp_causal_thread_new) */
	if (!cz->enabled || !cz->eng)
		return 0;
	if (exp_causal_thread_new(cz->eng, tid, pid) < 0)
		pr_debug("causal: no state for thread %d", tid);
	trap_thread_new(cz, tid, pid);
	if (new_process) {
		remember_space(cz, pid, sp);
		/* Before the root's exec its image is still psup's own. */
		if (cz->root_exec_seen)
			find_points(cz, sp, pid);
	}
	if (cz->pp && exp_progress_thread_new(cz->pp, tid, pid) < 0)
		pr_debug("causal: no progress counters for thread %d", tid);
	return 0;
}

static int causal_thread_gone(struct rec_mode *m, pid_t tid, bool exited, uint64_t time)
{
	struct causal_cmd *cz = to_causal(m);
	int err = 0;

	if (!cz->enabled || !cz->eng)
		return 0;
	/* A detach (attach mode's end, a stop request without the filter)
	 * lets the threads go one by one, closing their counters: the
	 * experiment ends with the first (for the others there is none left
	 * to end), and the ticks start none while the session stops. */
	if (!exited && !end_to_end(cz) && !cz->failed)
		err = fail(cz, exp_causal_finish(cz->eng, time));
	if (cz->pp)
		exp_progress_thread_gone(cz->pp, tid);
	trap_thread_gone(cz, tid);
	exp_causal_thread_gone(cz->eng, tid, time);
	return err;
}

static void causal_exec(struct rec_mode *m, struct sym_space *sp, pid_t pid)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled || !cz->eng)
		return;
	exp_causal_process_forget(cz->eng, pid);
	/* The kernel dropped the traps (remove_on_exec); the new image's
	 * libc is found again. */
	trap_forget_process(cz, pid);
	/* Source-level counters of the new image count from their initial
	 * values (visits before psup looked included). */
	if (cz->pp)
		exp_progress_process_exec(cz->pp, pid);
	if (pid == cz->root) {
		cz->root_exec_seen = true;
		cz->exec_time = psup_now_ns();
	}
	remember_space(cz, pid, sp);
	find_points(cz, sp, pid);
}

static int causal_process_exit(struct rec_mode *m, pid_t pid, bool root, uint64_t time)
{
	struct causal_cmd *cz = to_causal(m);
	int err = 0;

	if (!cz->enabled || !cz->eng)
		return 0;
	/* Never delay the exit: the running experiment ends at the exit (cut
	 * short), and nobody owes anything any more. */
	if (root && !end_to_end(cz) && !cz->failed)
		err = fail(cz, exp_causal_finish(cz->eng, time));
	exp_causal_process_forget(cz->eng, pid);
	if (cz->pp)
		exp_progress_process_end(cz->pp, pid);
	psup_u64map_remove(&cz->spaces, (uint64_t)pid);
	return err;
}

static int causal_sample(struct rec_mode *m, const struct rec_sample *s)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled || !cz->eng || cz->failed)
		return 0;
	if (cz->clock && (s->flags & EXP_SAMPLE_KERNEL))
		exp_causal_kernel_sample(cz->eng, s->tid, s->time, s->period);
	if (!s->n)
		return 0;
	if (cz->clock)
		exp_causal_observe_period(cz->eng, s->period);
	exp_causal_sample(cz->eng, s->sp, s->pid, s->tid, s->pcs, s->n, s->time, s->cpu);
	if (cz->pp)
		exp_progress_sample(cz->pp, s->pid, s->pcs[0]);
	return 0;
}

static int causal_switch(struct rec_mode *m, const struct smp_switch *sw)
{
	struct causal_cmd *cz = to_causal(m);

	if (cz->enabled && cz->eng)
		exp_causal_switch(cz->eng, sw->tid, sw->out, sw->preempt, sw->time, sw->cpu);
	return 0;
}

static void causal_observer(struct rec_mode *m, int cpu, uint64_t time, uint64_t period)
{
	struct causal_cmd *cz = to_causal(m);

	if (cz->enabled && cz->eng)
		exp_causal_observer(cz->eng, cpu, time, period);
}

static int causal_block(struct rec_mode *m, const struct smp_block *b, enum exp_block_kind kind,
			uint64_t futex)
{
	struct causal_cmd *cz = to_causal(m);

	(void)futex;
	/* With futex interception, crediting happens at the call's return
	 * instead. */
	if (kind == EXP_BLOCK_FUTEX && cz->enabled && cz->eng && (!cz->filter || cz->futex_records))
		exp_causal_block_futex(cz->eng, b->tid, b->time);
	return 0;
}

/* Every wakeup has an unsampled record (a sampled twin only adds a stack). */
static int causal_wakeup(struct rec_mode *m, const struct smp_wakeup *wk, uint64_t node)
{
	struct causal_cmd *cz = to_causal(m);

	(void)node;
	if (!wk->sampled && cz->enabled && cz->eng)
		exp_causal_wakeup(cz->eng, wk->tid, wk->wakee_tid, wk->time);
	return 0;
}

/* Only a thread on a CPU or waiting for one is paused: the switch records
 * lag by a few ms, so /proc says the last word (an interrupt reaching a
 * thread blocked meanwhile is let go at its stop anyway). */
static bool is_runnable(struct causal_cmd *cz, pid_t tid)
{
	char state;

	return cz->ops->proc_state(tid, &state) == 0 && state == 'R';
}

/* The processes' symbol spaces from slot *i of cz->spaces on: the next
 * one (*pid its process), *i past it; NULL at the end. Before the root's
 * exec its image is still psup's own: skipped. */
static struct sym_space *next_space(struct causal_cmd *cz, size_t *i, pid_t *pid)
{
	for (; *i < cz->spaces.cap; (*i)++) {
		if (!cz->spaces.keys[*i] || !cz->spaces.vals[*i])
			continue;
		*pid = (pid_t)cz->spaces.keys[*i];
		if (*pid == cz->root && !cz->root_exec_seen)
			continue;
		return (struct sym_space *)(uintptr_t)cz->spaces.vals[(*i)++];
	}
	return NULL;
}

static void rescan(struct causal_cmd *cz, uint64_t now)
{
	struct sym_space *sp;
	pid_t pid;

	if (now - cz->last_rescan < CAUSAL_RESCAN_NS)
		return;
	cz->last_rescan = now;
	for (size_t i = 0; (sp = next_space(cz, &i, &pid));)
		find_points(cz, sp, pid);
	if (!cz->warned_no_points && !end_to_end(cz) && cz->root_exec_seen && cz->exec_time &&
	    now - cz->exec_time > CAUSAL_RESCAN_NS && exp_progress_npoints(cz->pp) == 0) {
		cz->warned_no_points = true;
		pr_warn("causal: the program has no progress point (no psup.h or coz.h counter was "
			"found); give one with -p, --latency, --sampled-progress, or use --runs");
	}
}

/* Intercepted calls cost a ptrace stop each: say so when they are many. */
static void check_rate(struct causal_cmd *cz, uint64_t now)
{
	if (!cz->filter || cz->warned_rate)
		return;
	if (!cz->rate_t0 || cz->ps_cur.seccomp_stops < cz->rate_stops0) {
		cz->rate_t0 = now;
		cz->rate_stops0 = cz->ps_cur.seccomp_stops;
		return;
	}
	if (now - cz->rate_t0 < 1000000000ULL)
		return;
	double rate = (double)(cz->ps_cur.seccomp_stops - cz->rate_stops0) * 1e9 / (double)(now - cz->rate_t0);
	cz->rate_t0 = now;
	cz->rate_stops0 = cz->ps_cur.seccomp_stops;
	if (rate < 2000)
		return;
	cz->warned_rate = true;
	pr_warn("causal: %.0f synchronization and blocking calls/s intercepted, each a ptrace stop (tens to "
		"hundreds of us on a VM): the program runs slower under psup; %s--no-futex-stops credits "
		"futex waits from block records instead, --no-intercept every blocked thread from switch "
		"records (cheaper, less exact; see docs/causal.md)",
		rate,
		cz->no_wake_stops ? "" : "--no-wake-stops lets the wakes run without a stop, ");
}

static int causal_tick(struct rec_mode *m, uint64_t now)
{
	struct causal_cmd *cz = to_causal(m);
	pid_t tids[MAX_CANDIDATES];
	unsigned n;
	int err;

	if (!cz->enabled || !cz->eng || cz->failed || !cz->sup)
		return 0;
	if (cz->pp) {
		char msg[512];
		rescan(cz, now);
		while (exp_progress_check(cz->pp, now, msg, sizeof(msg)) > 0)
			pr_warn("%s", msg);
	}
	cz->ops->pause_stats(cz->sup, &cz->ps_cur);
	/* Detaching (causal_thread_gone): no experiment, no pause. */
	if (cz->ops->is_stopping(cz->sup))
		return 0;
	check_rate(cz, now);
	if (!cz->root_exec_seen)
		return 0;
	/* End to end, the run is the experiment: no state machine. */
	if (!end_to_end(cz)) {
		err = exp_causal_tick(cz->eng, now);
		if (err < 0)
			return fail(cz, err);
	}
	if (cz->filter && !cz->traps_failed && now - cz->last_unlock_scan >= UNLOCK_SCAN_NS) {
		pid_t pid;
		cz->last_unlock_scan = now;
		for (size_t i = 0; next_space(cz, &i, &pid);)
			find_unlock(cz, pid);
	}
	if (cz->filter)
		traps_update(cz, now);
	n = exp_causal_pause_candidates(cz->eng, tids, MAX_CANDIDATES);
	for (unsigned i = 0; i < n; i++) {
		if (cz->ops->is_held(cz->sup, tids[i]) || !is_runnable(cz, tids[i]))
			continue;
		err = cz->ops->pause(cz->sup, tids[i]);
		if (err >= 0)
			exp_causal_pause_sent(cz->eng, tids[i], psup_now_ns());
		else if (err != -EALREADY)
			pr_trace("pause of %d: %s", tids[i], strerror(-err));
	}
	return 0;
}

static int causal_flush(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled || !cz->eng || cz->failed)
		return 0;
	return fail(cz, exp_causal_flush(cz->eng));
}

static int causal_run_begin(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled || !cz->eng || !end_to_end(cz))
		return 0;
	cz->root_exec_seen = false;
	return exp_causal_run_begin(cz->eng, psup_now_ns());
}

static void add_stats(struct sup_pause_stats *to, const struct sup_pause_stats *s)
{
	to->requests += s->requests;
	to->holds += s->holds;
	to->extended += s->extended;
	to->skipped += s->skipped;
	to->held_ns += s->held_ns;
	to->lost_ns += s->lost_ns;
	to->interrupt_ns += s->interrupt_ns;
	to->seccomp_stops += s->seccomp_stops;
	to->seccomp_foreign += s->seccomp_foreign;
	to->trap_stops += s->trap_stops;
}

static int causal_run_end(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	if (!cz->enabled || !cz->eng)
		return 0;
	/* The session is freed after this: keep its statistics. */
	if (cz->sup) {
		cz->ops->pause_stats(cz->sup, &cz->ps_cur);
		add_stats(&cz->ps_done, &cz->ps_cur);
		memset(&cz->ps_cur, 0, sizeof(cz->ps_cur));
		cz->sup = NULL;
	}
	if (!end_to_end(cz) || cz->failed)
		return 0;
	return fail(cz, exp_causal_run_end(cz->eng, psup_now_ns()));
}

static bool check_end(struct causal_cmd *cz);

static int causal_end(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);
	struct exp_causal_stats st;
	struct sup_pause_stats ps = cz->ps_done;
	int err = 0;

	if (!cz->enabled || !cz->eng)
		return 0;
	if (!cz->failed)
		err = fail(cz, exp_causal_finish(cz->eng, psup_now_ns()));
	exp_causal_stats(cz->eng, &st);
	/* cz->sup may be freed already (rec_end frees the session first). */
	add_stats(&ps, &cz->ps_cur);
	pr_info("causal: %llu experiment%s (%llu cut short and dropped), %u lines in scope",
		(unsigned long long)st.experiments, st.experiments == 1 ? "" : "s",
		(unsigned long long)st.dropped, st.lines);
	if (st.experiments && st.settle_ns)
		pr_info("causal: settling (the last debts paid, not measured) took %.1f ms per experiment",
			(double)st.settle_ns / 1e6 / (double)st.experiments);
	if (st.experiments && st.observer_stops)
		pr_info("causal: %llu of psup's stops in experiments (system calls, unlock traps), %.1f us each "
			"from switch-out to switch-in; the program idle meanwhile %.2f ms per experiment, left out "
			"of their durations; %.1f ms with another thread running, off the stopped threads' debts",
			(unsigned long long)st.observer_stops, (double)st.observer_stop_ns / 1e3 / (double)st.observer_stops,
			(double)st.observer_idle_ns / 1e6 / (double)st.experiments,
			(double)st.observer_stop_credit_ns / 1e6);
	/* What a pause costs beyond what was asked (the excess, subtracted
	 * from later pauses) and how long an interrupt takes to stop a thread:
	 * the numbers docs/performance.md quotes ("What causal mode costs"). */
	if (st.observer_samples)
		pr_info("causal: psup took %.1f ms from threads waiting for their CPU (%llu of its samples)",
			(double)st.observer_ns / 1e6, (unsigned long long)st.observer_samples);
	if (st.stop_kernel_samples)
		pr_info("causal: pauses took %.1f ms of their threads' time in the kernel (%llu of their "
			"samples)",
			(double)st.stop_kernel_ns / 1e6, (unsigned long long)st.stop_kernel_samples);
	if (ps.requests || ps.seccomp_stops)
		pr_info("causal: %llu pauses (%llu of them held on, %.1f ms held, %+.1f us excess per "
			"pause, %.1f us from stop to psup, %.1f us from resume to running, %.1f us from "
			"interrupt to psup, %llu "
			"found blocked), %llu intercepted calls, %llu unlock traps (%llu at the C "
			"library's own unlocks, %llu opened)",
			(unsigned long long)ps.holds, (unsigned long long)ps.extended,
			(double)ps.lost_ns / 1e6,
			ps.holds ? ((double)ps.lost_ns - (double)ps.held_ns) / 1e3 / (double)ps.holds : 0.0,
			st.stops ? (double)st.stop_lag_ns / 1e3 / (double)st.stops : 0.0,
			st.resumes ? (double)st.resume_lag_ns / 1e3 / (double)st.resumes : 0.0,
			ps.requests ? (double)ps.interrupt_ns / 1e3 / (double)ps.requests : 0.0,
			(unsigned long long)ps.skipped, (unsigned long long)ps.seccomp_stops,
			(unsigned long long)ps.trap_stops, (unsigned long long)cz->libc_traps,
			(unsigned long long)cz->traps_opened);
	cz->bad_end = check_end(cz);
	return err;
}

static bool check_end(struct causal_cmd *cz)
{
	struct exp_point_value vals[MAX_SPECS];
	struct exp_causal_stats st;
	int n;

	if (!cz->enabled || !cz->eng || cz->failed)
		return false;
	n = cz->pp ? exp_progress_read(cz->pp, vals, MAX_SPECS) : 0;
	for (int i = 0; i < n && i < (int)cz->nspecs; i++) {
		if (!vals[i].resolved) {
			pr_err("progress point '%s' matches no code of the program (no such FILE:LINE or "
			       "function in its images); see 'psup report' for the run",
			       cz->specs[i].text);
			return true;
		}
	}
	if (!end_to_end(cz) && n <= 0) {
		pr_err("--causal: the program has no progress point (no psup.h or coz.h counter); give "
		       "one with -p FILE:LINE|FUNCTION, --latency BEGIN,END or --sampled-progress SPEC, "
		       "or use --runs N for whole-program time");
		return true;
	}
	exp_causal_stats(cz->eng, &st);
	if (cz->line && !st.fixed_line_seen) {
		pr_err("--line %s: no sample of the program fell on that line (no such line in "
		       "scope, or it never ran)",
		       cz->line);
		return true;
	}
	return false;
}

static bool causal_bad_end(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	return cz->bad_end;
}

static void causal_stop(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	/* Every hook checks this: the program runs on, traced (the filter
	 * needs its tracer) but never held again. */
	cz->failed = true;
}

static void causal_progress(struct rec_mode *m, char *buf, size_t len)
{
	struct causal_cmd *cz = to_causal(m);
	struct exp_causal_stats st;

	if (!cz->enabled || !cz->eng)
		return;
	exp_causal_stats(cz->eng, &st);
	snprintf(buf, len, ", %llu experiment%s",
		 (unsigned long long)st.experiments, st.experiments == 1 ? "" : "s");
}

static void causal_free(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);

	exp_causal_free(cz->eng);
	cz->eng = NULL;
	exp_progress_free(cz->pp);
	cz->pp = NULL;
	psup_u64map_release(&cz->spaces);
	traps_release(cz);
	for (unsigned i = 0; i < cz->nlatency_dup; i++)
		free(cz->latency_dup[i]);
	cz->nlatency_dup = 0;
	cz->sup = NULL;
	free(cz);
}

static int causal_thread_exiting(struct rec_mode *m, pid_t tid, pid_t pid)
{
	struct causal_cmd *cz = to_causal(m);

	/* The last chance to read psup.h counters: after the reaping the
	 * memory is gone (exact counts at exit: t5100-causal-count). */
	if (cz->enabled && cz->pp)
		exp_progress_thread_exiting(cz->pp, tid, pid);
	return 0;
}

static unsigned causal_debug_slots(struct rec_mode *m)
{
	struct causal_cmd *cz = to_causal(m);
	unsigned n = 0;

	/* one hardware breakpoint per -p or --latency end, before lookups
	 * (sampled points and source-level counters take none) */
	for (unsigned i = 0; i < cz->nspecs; i++)
		if (!cz->specs[i].sampled)
			n++;
	/* and the unlock trap of run mode with interception */
	if (cz->enabled && !cz->attach && !cz->no_intercept)
		n++;
	return n < 4 ? n : 4;
}

static const struct rec_causal_sup real_sup = {
	.session_pid = sup_session_pid,
	.set_pause_hooks = sup_session_set_pause_hooks,
	.pause_stats = sup_session_pause_stats,
	.is_stopping = sup_session_is_stopping,
	.is_held = sup_thread_is_held,
	.pause = sup_thread_pause,
	.proc_state = sup_proc_state,
};

void rec_causal_set_sup(struct rec_mode *m, const struct rec_causal_sup *sup)
{
	to_causal(m)->ops = sup ? sup : &real_sup;
}

struct rec_mode *rec_causal_new(void)
{
	struct causal_cmd *cz = calloc(1, sizeof(*cz));

	if (!cz)
		return NULL;
	cz->runs = 1;
	cz->speedup = -1;
	cz->ops = &real_sup;
	cz->mode = (struct rec_mode){
		.name = "causal",
		.options = causal_options,
		.option = causal_option,
		.debug_slots = causal_debug_slots,
		.check = causal_check,
		.usage = causal_usage,
		.usage_own_section = true,
		.enabled = causal_enabled,
		.start = causal_start,
		.spawn_flags = causal_spawn_flags,
		.runs = causal_runs,
		.tick_ns = causal_tick_ns,
		.header = causal_header,
		.session = causal_session,
		.run_begin = causal_run_begin,
		.run_end = causal_run_end,
		.thread_new = causal_thread_new,
		.thread_exiting = causal_thread_exiting,
		.thread_gone = causal_thread_gone,
		.exec = causal_exec,
		.process_exit = causal_process_exit,
		.sample = causal_sample,
		.context_switch = causal_switch,
		.observer = causal_observer,
		.block = causal_block,
		.wakeup = causal_wakeup,
		.own_breakpoint = causal_own_breakpoint,
		.tick = causal_tick,
		.flush = causal_flush,
		.progress = causal_progress,
		.end = causal_end,
		.stop = causal_stop,
		.bad_end = causal_bad_end,
		.free = causal_free,
	};
	return &cz->mode;
}
