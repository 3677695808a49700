/*
 * psup diff: compares the runs of two record-file sets (report/diff.c) and,
 * with --fail-if-slower, gates CI on a slowdown beyond the runs' noise.
 * stdout carries only the comparison; diagnostics go to stderr.
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
#include "report/diff.h"
#include "report/report.h"

static const char diff_usage[] =
	"usage: psup diff [options] BASE.cbor... -- NEW.cbor...\n"
	"\n"
	"Compares the runs recorded in the BASE files with those in the NEW files\n"
	"(one record file per run; '--' separates the two sets, everything after it\n"
	"is a NEW file): per function and per source line, the time per run and the\n"
	"share of the samples on each side, the change, and whether the change is\n"
	"beyond the runs' spread (Welch's t-test, p < 0.05; each side needs two runs\n"
	"or more, one run per side shows the changes untested). Functions of\n"
	"different builds match by image and function name, not by address; an\n"
	"image renamed between the sides matches by its build-id.\n"
	"\n"
	"  --format FMT           text (default), markdown, json or html: one\n"
	"                         page, nothing fetched, with the differential\n"
	"                         flame graph of NEW against BASE (red grew,\n"
	"                         blue shrank) and the tables (use with -o)\n"
	"  --top N                rows per table (default: 20 for text, markdown\n"
	"                         and html, all for json; 0 means all)\n"
	"  --fail-if-slower PCT   exit 1, saying why in one line, when the whole\n"
	"                         program or a function got slower by more than PCT\n"
	"                         percent per run and the change is significant;\n"
	"                         needs two runs or more on each side (one run\n"
	"                         cannot tell a slowdown from noise)\n"
	"  --pretty               indent json for people (the default when stdout\n"
	"                         is a terminal)\n"
	"  -o, --output FILE      write to FILE instead of stdout (an existing FILE\n"
	"                         only with --force)\n"
	"  -f, --force            replace FILE if it exists\n"
	"  -h, --help             show this help\n"
	"\n"
	"example: psup run -o a1.cbor -- ./old && psup run -o a2.cbor -- ./old &&\n"
	"         psup run -o b1.cbor -- ./new && psup run -o b2.cbor -- ./new &&\n"
	"         psup diff --fail-if-slower 5 a1.cbor a2.cbor -- b1.cbor b2.cbor\n"
	"         psup diff --format html -o diff.html a1.cbor a2.cbor -- b1.cbor b2.cbor\n"
	"\n"
	"Exit status (as diff(1)): 0 when no gate failed, 1 when --fail-if-slower\n"
	"found a slowdown, 2 on bad usage or files that cannot be read or compared.\n";

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int load_side(struct rep_profile **p, char **files, int n)
{
	char err[512];
	int rc = rep_profile_new(p);

	if (rc) {
		pr_err("diff: %s", strerror(-rc));
		return rc;
	}
	for (int i = 0; i < n; i++) {
		size_t nrec;

		rc = rep_profile_load(*p, files[i], err, sizeof(err));
		if (rc) {
			pr_err("%s", err);
			return rc;
		}
		if (rep_profile_truncated(*p, &nrec))
			pr_warn("%s: truncated after %zu records (the recording was cut short)",
				files[i], nrec);
	}
	return 0;
}

static int print_pretty(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return -ENOMEM;
	rc = rep_diff_print(d, o, mem);
	if (fclose(mem) != 0 && !rc)
		rc = -ENOMEM;
	if (!rc)
		rc = rep_json_pretty(buf, len, out);
	free(buf);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_FORMAT = 256,
	       OPT_TOP,
	       OPT_FAIL,
	       OPT_PRETTY };
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "fail-if-slower", required_argument, NULL, OPT_FAIL },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rep_diff_options opt = { REP_FORMAT_TEXT, 0 };
	struct rep_profile *side[2] = { NULL, NULL };
	struct rep_diff *d = NULL;
	struct psup_output of = { .fd = -1 };
	const char *output = NULL;
	double fail_pct = NAN;
	bool force = false, top_set = false, pretty = false;
	FILE *out = stdout;
	char err[512], why[512];
	char **files[2];
	int nfiles[2], c, rc, split, status = 2, li = -1;

	/* Everything after the first "--" is a NEW file; getopt reads only
	 * what comes before it. */
	for (split = 1; split < argc && strcmp(argv[split], "--"); split++)
		;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(split, argv, ":fho:", longopts, &li)) != -1) {
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
			else {
				pr_err("diff: unknown format '%s' (text, markdown, json, html)", optarg);
				return 2;
			}
			break;
		case OPT_TOP: {
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 0 || n > (long)UINT32_MAX) {
				pr_err("diff: --top needs a number of rows, not '%s'", optarg);
				return 2;
			}
			opt.top = (unsigned)n;
			top_set = true;
			break;
		}
		case OPT_FAIL:
			errno = 0;
			fail_pct = strtod(optarg, &end);
			if (errno || end == optarg || (*end && strcmp(end, "%")) || !isfinite(fail_pct) ||
			    fail_pct < 0) {
				pr_err("diff: --fail-if-slower needs a percentage (0 or more), not '%s'",
				       optarg);
				return 2;
			}
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
			fputs(diff_usage, stdout);
			return 0;
		case ':':
		case '?':
		default:
			return builtin_option_error("diff", "diff", c, li, longopts, argv);
		}
		li = -1;
	}
	files[0] = argv + optind;
	nfiles[0] = split - optind;
	files[1] = split < argc ? argv + split + 1 : NULL;
	nfiles[1] = split < argc ? argc - split - 1 : 0;
	if (split >= argc || nfiles[0] < 1 || nfiles[1] < 1) {
		pr_err("diff: needs BASE files, '--', then NEW files (psup diff a1.cbor a2.cbor -- "
		       "b1.cbor b2.cbor)");
		return 2;
	}
	if (!top_set)
		opt.top = opt.format == REP_FORMAT_JSON ? 0 : 20;
	for (int s = 0; s < 2; s++)
		for (int i = 0; output && i < nfiles[s]; i++)
			if (same_file(output, files[s][i])) {
				pr_err("diff: %s is also an input; name another output file", output);
				return 2;
			}
	/* One run per side has no spread to test against: a gate on it would
	 * either pass everything or fail on noise. */
	if (!isnan(fail_pct) && (nfiles[0] < 2 || nfiles[1] < 2)) {
		pr_err("diff: --fail-if-slower needs two runs or more on each side to tell a "
		       "slowdown from noise (got %d BASE, %d NEW); record each side again",
		       nfiles[0], nfiles[1]);
		return 2;
	}

	for (int s = 0; s < 2; s++)
		if (load_side(&side[s], files[s], nfiles[s]))
			goto out;
	rc = rep_diff_new(side[0], side[1], &d, err, sizeof(err));
	if (rc) {
		pr_err("%s", err);
		goto out;
	}
	if (output) {
		out = builtin_output_open("diff", output, force, &of);
		if (!out)
			goto out;
	}
	if (opt.format == REP_FORMAT_JSON && !output && isatty(STDOUT_FILENO))
		pretty = true;
	errno = 0;
	if (opt.format == REP_FORMAT_JSON && pretty)
		rc = print_pretty(d, &opt, out);
	else if (opt.format == REP_FORMAT_HTML)
		rc = rep_diff_print_html(d, side[0], side[1], &opt, out);
	else
		rc = rep_diff_print(d, &opt, out);
	if (rc == -EIO && errno && errno != EIO)
		rc = -errno;
	if (output) {
		errno = 0;
		if (fclose(out) != 0 && !rc)
			rc = errno ? -errno : -EIO;
		of.fd = -1;
	} else if (fflush(stdout) != 0 && !rc) {
		rc = errno ? -errno : -EIO;
	}
	if (rc) {
		pr_err("diff: cannot write %s: %s", output ? output : "stdout", strerror(-rc));
		goto out_discard;
	}
	status = 0;
	if (!isnan(fail_pct) && rep_diff_slower(d, fail_pct, why, sizeof(why))) {
		pr_err("%s", why);
		status = 1;
	}
	goto out;
out_discard:
	if (output)
		psup_output_discard(&of, output);
	if (of.fd >= 0)
		close(of.fd);
out:
	rep_diff_free(d);
	rep_profile_free(side[0]);
	rep_profile_free(side[1]);
	return status;
}
