/*
 * psup report: reads record files, merges them and prints the views.
 * stdout carries only the report; diagnostics go to stderr.
 */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builtin/builtin.h"
#include "common/log.h"
#include "common/output.h"
#include "report/report.h"

static const char report_usage[] =
	"usage: psup report [options] [FILE...]\n"
	"\n"
	"Reads psup record files (default: psup.cbor), merges them and prints the\n"
	"profile.\n"
	"\n"
	"  --format FMT        text (default), markdown, json, html (one\n"
	"                      self-contained page: a flame graph, the tables, and\n"
	"                      the causal plots; it loads nothing from the network)\n"
	"                      or, for a causal profile, coz (Coz's legacy\n"
	"                      profile.coz format, for `coz plot`) or coz-jsonl\n"
	"                      (Coz's JSON Lines profile.jsonl, Coz 0.2.5 and\n"
	"                      later); exports of every sample with its whole\n"
	"                      stack, whatever --view and the cuts say: pprof\n"
	"                      (gzipped profile.proto, for `go tool pprof`,\n"
	"                      Parca, Pyroscope; needs -o or a pipe), folded\n"
	"                      ('root;...;leaf COUNT' lines, for FlameGraph) or\n"
	"                      speedscope (speedscope's JSON)\n"
	"  --view LIST         comma-separated views: summary, images, functions,\n"
	"                      lines, threads, top-down, bottom-up, flat (functions\n"
	"                      and lines), efficiency (work, idleness and overhead\n"
	"                      of the top functions), locks (futex waits blamed\n"
	"                      on the holders), causal (predicted program speedup\n"
	"                      per line), witch (wasted memory accesses), all\n"
	"                      (default: summary, images, functions, lines,\n"
	"                      threads, and efficiency, locks, causal and witch\n"
	"                      when the files have them)\n"
	"  --overhead LIST     comma-separated glob patterns of functions that are\n"
	"                      parallel overhead (synchronization, thread\n"
	"                      management); '+LIST' adds to the default list, which\n"
	"                      covers glibc's pthread, futex and semaphore code\n"
	"  --top N             rows per table and functions of bottom-up (default:\n"
	"                      20 for text and markdown, 50 for html, all for json;\n"
	"                      0 means all)\n"
	"  --min-percent P     hide rows below P percent of the samples, and tree\n"
	"                      subtrees below P percent (top-down: inclusive,\n"
	"                      bottom-up: self samples; default: 0 for tables, 1\n"
	"                      for trees in text and markdown, 0 in json)\n"
	"  --depth N           levels of the top-down and bottom-up trees (default:\n"
	"                      12 for text and markdown, 64 for json; 0 means all)\n"
	"  --pretty            indent json for people (the default when stdout is a\n"
	"                      terminal; pipes and files get one compact line)\n"
	"  -o, --output FILE   write the report to FILE instead of stdout (never an\n"
	"                      input; an existing FILE only with --force)\n"
	"  -f, --force         replace FILE if it exists\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 on success, 1 when a file cannot be read or is corrupt,\n"
	"2 on bad usage.\n";

/* Whether a and b name the same file (links followed, hard links too). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int parse_views(const char *arg, unsigned *views)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "summary", REP_VIEW_SUMMARY },
		{ "images", REP_VIEW_IMAGES },
		{ "functions", REP_VIEW_FUNCTIONS },
		{ "lines", REP_VIEW_LINES },
		{ "threads", REP_VIEW_THREADS },
		{ "top-down", REP_VIEW_TOP_DOWN },
		{ "bottom-up", REP_VIEW_BOTTOM_UP },
		{ "efficiency", REP_VIEW_EFFICIENCY },
		{ "locks", REP_VIEW_LOCKS },
		{ "causal", REP_VIEW_CAUSAL },
		{ "witch", REP_VIEW_WITCH },
		{ "flat", REP_VIEW_FUNCTIONS | REP_VIEW_LINES },
		{ "all", REP_VIEW_ALL },
	};
	const char *s = arg;

	*views = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		bool found = false;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strlen(names[i].name) == n && strncmp(s, names[i].name, n) == 0) {
				*views |= names[i].bit;
				found = true;
			}
		}
		if (!found && n) {
			pr_err("report: unknown view '%.*s' (summary, images, functions, lines, threads, "
			       "top-down, bottom-up, flat, efficiency, locks, causal, witch, all)",
			       (int)n, s);
			return -EINVAL;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	if (!*views) {
		pr_err("report: --view needs at least one view");
		return -EINVAL;
	}
	return 0;
}

/* The JSON report, indented: rendered compact into memory first, since the
 * views write it in many pieces. 0, -ENOMEM or -EIO. */
static int print_pretty(const struct rep_profile *p, const struct rep_options *o,
			const struct rep_tree_options *t, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return -ENOMEM;
	rc = rep_print_ext(p, o, t, mem);
	if (fclose(mem) != 0 && !rc)
		rc = -ENOMEM;
	if (!rc)
		rc = rep_json_pretty(buf, len, out);
	free(buf);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_FORMAT = 256,
	       OPT_VIEW,
	       OPT_TOP,
	       OPT_MIN_PERCENT,
	       OPT_DEPTH,
	       OPT_OVERHEAD,
	       OPT_PRETTY };
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "view", required_argument, NULL, OPT_VIEW },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "min-percent", required_argument, NULL, OPT_MIN_PERCENT },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "overhead", required_argument, NULL, OPT_OVERHEAD },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* views 0: the default set, plus what the files have data for */
	struct rep_options opt = { REP_FORMAT_TEXT, 0, 0, 0.0, NULL };
	struct rep_tree_options topt = { 0, 0.0 };
	static char *const default_files[] = { "psup.cbor", NULL };
	char *const *files;
	const char *output = NULL;
	struct psup_output of = { .fd = -1 };
	bool force = false;
	struct rep_profile *p = NULL;
	bool top_set = false, min_set = false, depth_set = false, pretty = false;
	FILE *out = stdout;
	char err[512];
	int c, rc, nfiles, status = 1, li = -1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fho:", longopts, &li)) != -1) {
		char *end;

		switch (c) {
		case OPT_FORMAT:
			if (strcmp(optarg, "text") == 0)
				opt.format = REP_FORMAT_TEXT;
			else if (strcmp(optarg, "markdown") == 0 || strcmp(optarg, "md") == 0)
				opt.format = REP_FORMAT_MARKDOWN;
			else if (strcmp(optarg, "json") == 0)
				opt.format = REP_FORMAT_JSON;
			else if (strcmp(optarg, "html") == 0)
				opt.format = REP_FORMAT_HTML;
			else if (strcmp(optarg, "coz") == 0)
				opt.format = REP_FORMAT_COZ;
			else if (strcmp(optarg, "coz-jsonl") == 0)
				opt.format = REP_FORMAT_COZ_JSONL;
			else if (strcmp(optarg, "pprof") == 0)
				opt.format = REP_FORMAT_PPROF;
			else if (strcmp(optarg, "folded") == 0)
				opt.format = REP_FORMAT_FOLDED;
			else if (strcmp(optarg, "speedscope") == 0)
				opt.format = REP_FORMAT_SPEEDSCOPE;
			else {
				pr_err("report: unknown format '%s' (text, markdown, json, html, coz, "
				       "coz-jsonl, pprof, folded, speedscope)",
				       optarg);
				return 2;
			}
			break;
		case OPT_VIEW:
			if (parse_views(optarg, &opt.views))
				return 2;
			break;
		case OPT_TOP: {
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 0 || n > (long)UINT32_MAX) {
				pr_err("report: --top needs a number of rows, not '%s'", optarg);
				return 2;
			}
			opt.top = (unsigned)n;
			top_set = true;
			break;
		}
		case OPT_MIN_PERCENT:
			errno = 0;
			opt.min_percent = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(opt.min_percent) ||
			    opt.min_percent < 0 || opt.min_percent > 100) {
				pr_err("report: --min-percent needs a percentage from 0 to 100, not '%s'",
				       optarg);
				return 2;
			}
			min_set = true;
			break;
		case OPT_DEPTH: {
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 0 || n > (long)UINT32_MAX) {
				pr_err("report: --depth needs a number of levels, not '%s'", optarg);
				return 2;
			}
			topt.depth = (unsigned)n;
			depth_set = true;
			break;
		}
		case OPT_OVERHEAD:
			if (!optarg[0] || !strcmp(optarg, "+")) {
				pr_err("report: --overhead needs glob patterns, e.g. 'my_spin_lock*' or "
				       "'+my_spin_lock*'");
				return 2;
			}
			opt.overhead = optarg;
			break;
		case OPT_PRETTY:
			pretty = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		case ':':
		case '?':
		default:
			return builtin_option_error("report", "report", c, li, longopts, argv);
		}
		li = -1;
	}
	if (!top_set)
		opt.top = opt.format == REP_FORMAT_JSON ? 0 : opt.format == REP_FORMAT_HTML ? 50
											    : 20;
	/* People read the hot paths; scripts get every context, down to a depth
	 * that every parser still reads: jq 1.6 (Debian 12's) refuses the
	 * top-down tree of a 90-deep stack ("Exceeds depth limit for parsing";
	 * 80 still reads); a deep unwound stack of a sanitizer build in t1096
	 * was refused at the old default of 256. Test: t8030. */
	if (!depth_set)
		topt.depth = opt.format == REP_FORMAT_JSON ? 64 : 12;
	if (min_set)
		topt.min_percent = opt.min_percent;
	else
		topt.min_percent = opt.format == REP_FORMAT_JSON ? 0.0 : 1.0;
	files = optind < argc ? argv + optind : default_files;
	nfiles = optind < argc ? argc - optind : 1;
	for (int i = 0; output && i < nfiles; i++) {
		if (same_file(output, files[i])) {
			pr_err("report: %s is also an input (%s); name another output file", output,
			       files[i]);
			return 2;
		}
	}

	rc = rep_profile_new(&p);
	if (rc) {
		pr_err("report: %s", strerror(-rc));
		return 1;
	}
	for (int i = 0; i < nfiles; i++) {
		size_t nrec;

		rc = rep_profile_load(p, files[i], err, sizeof(err));
		if (rc) {
			pr_err("%s", err);
			goto out;
		}
		if (rep_profile_truncated(p, &nrec))
			pr_warn("%s: truncated after %zu records (the recording was cut short)",
				files[i], nrec);
	}
	if ((opt.format == REP_FORMAT_COZ || opt.format == REP_FORMAT_COZ_JSONL) &&
	    !rep_profile_has_causal(p)) {
		pr_err("report: --format %s needs causal experiments, and %s %s none (record with "
		       "psup run -p FILE:LINE, --latency, --causal or --runs)",
		       opt.format == REP_FORMAT_COZ ? "coz" : "coz-jsonl",
		       nfiles == 1 ? files[0] : "these files", nfiles == 1 ? "has" : "have");
		goto out;
	}
	if (opt.format == REP_FORMAT_PPROF && !output && isatty(STDOUT_FILENO)) {
		pr_err("report: --format pprof writes gzipped binary data; name a file with -o, "
		       "e.g. -o cpu.pb.gz");
		goto out;
	}
	if (output) {
		out = builtin_output_open("report", output, force, &of);
		if (!out)
			goto out;
	}
	/* A person reads a terminal; scripts (jq, tests) read pipes and files,
	 * which keep the compact single line. */
	if (opt.format == REP_FORMAT_JSON && !output && isatty(STDOUT_FILENO))
		pretty = true;
	/* The views say -EIO for any failed write; the errno of the write
	 * that failed (ENOSPC on /dev/full) says what to do about it. */
	errno = 0;
	if (opt.format == REP_FORMAT_JSON && pretty)
		rc = print_pretty(p, &opt, &topt, out);
	else
		rc = rep_print_ext(p, &opt, &topt, out);
	if (rc == -EIO && errno && errno != EIO)
		rc = -errno;
	if (output) {
		errno = 0;
		if (fclose(out) != 0 && !rc)
			rc = errno ? -errno : -EIO;
		of.fd = -1;
	}
	if (rc) {
		pr_err("report: cannot write %s: %s", output ? output : "stdout", strerror(-rc));
		goto out_discard;
	}
	status = 0;
	goto out;
out_discard:
	/* Half a report is none: drop the file this run made. */
	if (output)
		psup_output_discard(&of, output);
	if (of.fd >= 0)
		close(of.fd);
out:
	rep_profile_free(p);
	return status;
}
