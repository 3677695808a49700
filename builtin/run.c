/*
 * psup run / psup attach: the options, the usage, and the wiring of the
 * recorder (builtin/record.c) with its modes: the sampling profile, causal
 * experiments and witch. A mode's options are its own (rec_mode.options):
 * this file hands them over without knowing them.
 */
#include "builtin/builtin.h"
#include "builtin/record.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/supervisor.h"

/* The modes, in the order the recorder calls them. */
static struct rec_mode *(*const mode_new[])(void) = {
	rec_profile_new,
	rec_causal_new,
	rec_witch_new,
};
#define NMODES PSUP_ARRAY_SIZE(mode_new)

struct run_options {
	struct rec_options rec;
	bool no_follow;
	uint64_t duration_ns;
	struct rec_mode *modes[NMODES];
};

static void modes_free(struct run_options *o)
{
	for (size_t i = 0; i < NMODES; i++) {
		rec_mode_free(o->modes[i]);
		o->modes[i] = NULL;
	}
}

static void usage_run(FILE *f)
{
	fputs("usage: psup run [options] [--] COMMAND [ARGS...]\n"
	      "\n"
	      "Runs COMMAND under psup, sampling every thread of it and of its child\n"
	      "processes, and writes a record for `psup report`. Nothing is preloaded or\n"
	      "relinked. psup exits with COMMAND's exit status (or dies of its signal).\n"
	      "\n",
	      f);
}

static void usage_attach(FILE *f)
{
	fputs("usage: psup attach [options] PID\n"
	      "\n"
	      "Samples every thread of the running process PID, including threads it\n"
	      "creates later, until it exits, Ctrl-C, SIGTERM or --duration; then detaches\n"
	      "and leaves it running as before.\n"
	      "\n",
	      f);
}

static void usage_common(FILE *f, bool attach, const struct run_options *o)
{
	fputs("options:\n"
	      "  -o, --output FILE     record file (default psup.cbor; never overwritten\n"
	      "                        unless --force)\n"
	      "  -f, --force           replace FILE if it exists (a new file in its place;\n"
	      "                        another user's link is replaced, not followed)\n"
	      "  -e, --event NAME      sampling event: task-clock (default), cpu-clock, or a\n"
	      "                        hardware event through libpfm4 where the machine has a PMU\n"
	      "  -c, --period N        sampling period, in ns for clock events (default\n"
	      "                        1000000 = 1 ms), in events otherwise\n"
	      "      --jitter PCT      randomize each period by up to +-PCT% (default 10; 0 off)\n"
	      "      --no-call-graph   record the sampled instruction only, no unwinding\n"
	      "      --no-lock-blame   no wakeup events: futex waits are not blamed on the\n"
	      "                        threads that ended them (cheaper for programs that\n"
	      "                        switch threads 10^5 times a second)\n"
	      "      --sample-per-thread  one sampling timer per thread instead of one per\n"
	      "                        CPU (the default when permitted: root or CAP_PERFMON)\n",
	      f);
	for (size_t i = 0; i < NMODES; i++)
		if (!o->modes[i]->usage_own_section && o->modes[i]->usage)
			o->modes[i]->usage(f, attach);
	if (attach)
		fputs("  -d, --duration SEC    detach after SEC seconds\n"
		      "      --stops           keep every thread traced and stop each thread PID\n"
		      "                        creates (ptrace) to learn of it; by default, when only\n"
		      "                        sampling with per-CPU events (root or CAP_PERFMON),\n"
		      "                        threads are let go of at their first stop and the\n"
		      "                        kernel's records tell the new ones (--no-stops)\n",
		      f);
	else
		fputs("      --no-follow-forks sample the first process only, not its children\n"
		      "      --stops           stop each thread and process COMMAND creates (ptrace)\n"
		      "                        to learn of it; by default, when only sampling with\n"
		      "                        per-CPU events (root or CAP_PERFMON), the kernel's\n"
		      "                        records tell them and none is stopped (--no-stops)\n",
		      f);
	for (size_t i = 0; i < NMODES; i++)
		if (o->modes[i]->usage_own_section && o->modes[i]->usage)
			o->modes[i]->usage(f, attach);
	fputs("  -q, --quiet           no progress line, only errors\n"
	      "  -v, --verbose         debug messages (-vv: every ptrace stop too)\n"
	      "  -h, --help            this help\n",
	      f);
}

/* getopt values of the modes' options: mode i's option id k is
 * OPT_MODE + i * OPT_MODE_SPAN + k (or its short letter). */
enum { OPT_JITTER = 256,
       OPT_NO_CG,
       OPT_NO_FOLLOW,
       OPT_NO_STOPS,
       OPT_STOPS,
       OPT_NO_LOCKS,
       OPT_PER_THREAD,
       OPT_MODE = 512,
       OPT_MODE_SPAN = 64 };
/* '+': stop at the command's name, so its own options are its own; ':': a
 * missing value is told apart from an unknown option. */
#define BASE_SHORTOPTS "+:o:fe:c:d:qvh"
#define MAX_LONGOPTS 64

/* Mode option c (a getopt value): *mode gets the mode's index, *id its id.
 * false when c is none of theirs. */
static bool mode_option_of(const struct run_options *o, int c, size_t *mode, int *id)
{
	for (size_t i = 0; i < NMODES; i++) {
		const struct rec_option *opt = o->modes[i]->options;
		for (; opt && opt->name; opt++) {
			if ((opt->short_name && c == opt->short_name) ||
			    (!opt->short_name && c == OPT_MODE + (int)i * OPT_MODE_SPAN + opt->id)) {
				*mode = i;
				*id = opt->id;
				return true;
			}
		}
	}
	return false;
}

/* getopt's tables: the common options, then each mode's. */
static int build_options(const struct run_options *o, struct option *longopts, char *shortopts,
			 size_t shortlen)
{
	static const struct option common[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "event", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'c' },
		{ "jitter", required_argument, NULL, OPT_JITTER },
		{ "no-call-graph", no_argument, NULL, OPT_NO_CG },
		{ "no-lock-blame", no_argument, NULL, OPT_NO_LOCKS },
		{ "sample-per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "no-follow-forks", no_argument, NULL, OPT_NO_FOLLOW },
		{ "no-stops", no_argument, NULL, OPT_NO_STOPS },
		{ "stops", no_argument, NULL, OPT_STOPS },
		{ "duration", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	size_t n = 0;

	snprintf(shortopts, shortlen, "%s", BASE_SHORTOPTS);
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(common); i++)
		longopts[n++] = common[i];
	for (size_t i = 0; i < NMODES; i++) {
		const struct rec_option *opt = o->modes[i]->options;
		for (; opt && opt->name; opt++) {
			assert(n + 1 < MAX_LONGOPTS &&
			       (opt->short_name || (opt->id >= 0 && opt->id < OPT_MODE_SPAN)));
			longopts[n++] = (struct option){
				opt->name,
				opt->has_arg,
				NULL,
				opt->short_name ? opt->short_name : OPT_MODE + (int)i * OPT_MODE_SPAN + opt->id,
			};
			if (opt->short_name) {
				size_t len = strlen(shortopts);
				snprintf(shortopts + len, shortlen - len, "%c%s", opt->short_name,
					 opt->has_arg == required_argument ? ":" : "");
			}
		}
	}
	longopts[n] = (struct option){ NULL, 0, NULL, 0 };
	return 0;
}

/* Makes the modes and parses the options into o. Returns -1 to go on, or
 * an exit status. The modes are o's to free (modes_free()). */
static int parse_options(int argc, char **argv, bool attach, struct run_options *o)
{
	struct option longopts[MAX_LONGOPTS];
	char shortopts[64];
	const char *cmd = attach ? "attach" : "run";
	unsigned taken = 0;
	char name[64];
	size_t mi;
	int c, id, li = -1;
	long v;

	*o = (struct run_options){
		.rec = { .output = "psup.cbor", .event = "task-clock", .jitter = 10, .no_stops = true },
	};
	for (size_t i = 0; i < NMODES; i++) {
		o->modes[i] = mode_new[i]();
		if (!o->modes[i]) {
			pr_err("out of memory");
			return 1;
		}
	}
	build_options(o, longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
		switch (c) {
		case 'o':
			o->rec.output = optarg;
			break;
		case 'f':
			o->rec.force = true;
			break;
		case 'e':
			o->rec.event = optarg;
			break;
		case 'c': {
			char *end;
			errno = 0;
			unsigned long long p = strtoull(optarg, &end, 10);
			if (*end || errno || !p || optarg[0] == '-') {
				pr_err("invalid period '%s': expected a positive integer", optarg);
				return 2;
			}
			o->rec.period = p;
			break;
		}
		case OPT_JITTER:
			if (psup_parse_long(optarg, 0, 50, &v) < 0) {
				pr_err("invalid jitter '%s': expected a percentage from 0 to 50", optarg);
				return 2;
			}
			o->rec.jitter = (unsigned)v;
			break;
		case OPT_NO_CG:
			o->rec.no_unwind = true;
			break;
		case OPT_NO_LOCKS:
			o->rec.no_lock_blame = true;
			break;
		case OPT_PER_THREAD:
			o->rec.per_thread = true;
			break;
		case OPT_NO_STOPS:
		case OPT_STOPS:
			o->rec.no_stops = c == OPT_NO_STOPS;
			o->rec.no_stops_asked = c == OPT_NO_STOPS;
			break;
		case OPT_NO_FOLLOW:
			if (attach)
				goto unknown;
			o->no_follow = true;
			break;
		case 'd': {
			char *end;
			if (!attach)
				goto unknown;
			errno = 0;
			double d = strtod(optarg, &end);
			if (*end || errno || !(d > 0) || d > 1e7) {
				pr_err("invalid duration '%s': expected seconds, e.g. 10 or 2.5", optarg);
				return 2;
			}
			o->duration_ns = (uint64_t)(d * 1e9);
			break;
		}
		case 'q':
			psup_log_level = PSUP_LOG_ERR;
			break;
		case 'v':
			if (psup_log_level < PSUP_LOG_TRACE)
				psup_log_level++;
			break;
		case 'h':
			if (attach)
				usage_attach(stdout);
			else
				usage_run(stdout);
			usage_common(stdout, attach, o);
			return 0;
		case ':':
		case '?':
			return builtin_option_error(NULL, cmd, c, li, longopts, argv);
		default:
			if (mode_option_of(o, c, &mi, &id)) {
				int rc = o->modes[mi]->option(o->modes[mi], id, optarg, attach);
				if (rc >= 0)
					return rc;
				break;
			}
unknown:
			/* an option of the other command (attach's -d, run's
			 * --no-follow-forks) */
			pr_err("option '%s' is for psup %s only; see 'psup %s --help'",
			       builtin_option_name(c, li, longopts, argv, name, sizeof(name)),
			       attach ? "run" : "attach", cmd);
			return 2;
		}
		li = -1;
	}
	/* x86 has 4 debug registers per thread: the modes' breakpoints
	 * first (progress points), watchpoints get the rest */
	for (size_t i = 0; i < NMODES; i++)
		if (o->modes[i]->debug_slots)
			taken += o->modes[i]->debug_slots(o->modes[i]);
	if (taken > 4)
		taken = 4;
	for (size_t i = 0; i < NMODES; i++) {
		if (o->modes[i]->check) {
			int rc = o->modes[i]->check(o->modes[i], attach, 4 - taken);
			if (rc >= 0)
				return rc;
		}
	}
	/* The modes the options did not ask for are off. */
	for (size_t i = 0; i < NMODES; i++) {
		if (o->modes[i]->enabled && !o->modes[i]->enabled(o->modes[i])) {
			rec_mode_free(o->modes[i]);
			o->modes[i] = NULL;
		}
	}
	/* Threads told by the records: only where no mode needs them
	 * stopped (pauses, debug registers). */
	for (size_t i = 0; i < NMODES && o->rec.no_stops; i++) {
		if (o->modes[i] && !o->modes[i]->no_stops_ok) {
			if (!o->rec.no_stops_asked) {
				o->rec.no_stops = false;
				break;
			}
			pr_err("--no-stops is for sampling only: the %s mode pauses threads and sets "
			       "their debug registers, which needs them stopped",
			       o->modes[i]->name);
			return 2;
		}
	}
	return -1;
}

/* The modes that are on, in order, handed to the recorder (which owns
 * them from then on). */
static unsigned take_modes(struct run_options *o, struct rec_mode **modes)
{
	unsigned n = 0;

	for (size_t i = 0; i < NMODES; i++) {
		if (o->modes[i])
			modes[n++] = o->modes[i];
		o->modes[i] = NULL;
	}
	return n;
}

/* Mirror the target's end (rule 14): its exit status, or its fatal signal
 * re-raised, so a shell shows "Segmentation fault" as it would without psup. */
static int mirror_exit(const struct sup_result *res)
{
	if (!res->signal)
		return res->status & 0xff;
	struct rlimit no_core = { 0, 0 };
	sigset_t set;

	setrlimit(RLIMIT_CORE, &no_core);
	signal(res->signal, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, res->signal);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	fflush(NULL);
	raise(res->signal);
	return 128 + res->signal;
}

/* One perf fd per thread: programs with a thousand threads exceed the usual
 * soft limit of 1024. Raised to the hard limit in psup only (a spawned
 * target keeps its own). */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cmd_run(int argc, char **argv)
{
	struct run_options o;
	struct rec_mode *modes[NMODES];
	struct rec *r;
	struct sup_result res;
	char why[512];
	bool bad_end;
	int ret, err;

	ret = parse_options(argc, argv, false, &o);
	if (ret >= 0) {
		modes_free(&o);
		return ret;
	}
	if (optind >= argc) {
		pr_err("no command to run; usage: psup run [options] [--] COMMAND [ARGS...]");
		modes_free(&o);
		return 2;
	}
	unsigned nmodes = take_modes(&o, modes);
	sup_ignore_sigpipe(); /* a reader that left is a write error (EPIPE) */
	ret = rec_new(&o.rec, "run", 0, modes, nmodes, &r);
	if (ret)
		return ret;
	rec_set_argv(r, argv + optind);
	/* Causal --runs N: the same session settings, N runs (record-causal.c). */
	for (unsigned run = 1;; run++) {
		rec_run_begin(r);
		err = rec_spawn(r, argv + optind, !o.no_follow, why, sizeof(why));
		if (err < 0) {
			pr_err("cannot run '%s': %s", argv[optind], why);
			rec_abort(r);
			return 1;
		}
		/* The child has its environment and limits: psup's own may change
	 * now. No debuginfod network queries while resolving symbols. */
		unsetenv("DEBUGINFOD_URLS");
		raise_fd_limit();
		rec_loop(r, &res);
		rec_run_end(r);
		if (run >= rec_runs(r) || res.exec_errno || !res.exited || res.signal || rec_failed(r))
			break;
		rec_session_end(r);
	}
	if (res.exec_errno) {
		psup_progress_end();
		pr_err("cannot run '%s': %s", argv[optind], strerror(res.exec_errno));
		rec_abort(r);
		return res.exec_errno == ENOENT || res.exec_errno == ENOTDIR ? 127 : 126;
	}
	pid_t pid = sup_session_pid(rec_session(r));
	rec_end(r, res.detached && !res.exited ? res.reason : "exit", &bad_end);
	if (!res.exited) {
		/* psup stopped profiling early (an error) and detached: the
		 * program runs on as psup's child; its end is still ours to
		 * mirror. */
		int status;
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				return 1;
		res.exited = true;
		res.status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
		res.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	if (bad_end)
		return 1; /* the options named nothing the program has */
	return mirror_exit(&res);
}

int cmd_attach(int argc, char **argv)
{
	struct run_options o;
	struct rec_mode *modes[NMODES];
	struct rec *r;
	struct sup_result res;
	char why[512];
	bool bad_end;
	long pid;
	int ret, err;

	ret = parse_options(argc, argv, true, &o);
	if (ret >= 0) {
		modes_free(&o);
		return ret;
	}
	if (optind != argc - 1) {
		pr_err("expected one PID; usage: psup attach [options] PID");
		modes_free(&o);
		return 2;
	}
	if (psup_parse_long(argv[optind], 1, INT_MAX, &pid) < 0) {
		pr_err("invalid pid '%s'", argv[optind]);
		modes_free(&o);
		return 2;
	}
	unsigned nmodes = take_modes(&o, modes);
	sup_ignore_sigpipe(); /* a reader that left is a write error (EPIPE) */
	ret = rec_new(&o.rec, "attach", (pid_t)pid, modes, nmodes, &r);
	if (ret)
		return ret;
	unsetenv("DEBUGINFOD_URLS"); /* no network queries for symbols */
	raise_fd_limit();
	err = rec_attach(r, (pid_t)pid, why, sizeof(why));
	if (err < 0) {
		pr_err("%s", why);
		rec_abort(r);
		return 1;
	}
	sup_session_set_duration(rec_session(r), o.duration_ns);
	if (!rec_quiet(r))
		pr_info("attached to %ld (%u threads); Ctrl-C detaches", pid,
			sup_session_nthreads(rec_session(r)));
	rec_loop(r, &res);
	rec_run_end(r); /* the session's statistics, before it goes */
	ret = rec_end(r, res.detached ? "detach" : "exit", &bad_end) < 0 ? 1 : 0;
	return bad_end ? 1 : ret;
}
