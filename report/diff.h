#ifndef PSUP_REPORT_DIFF_H
#define PSUP_REPORT_DIFF_H

/*
 * psup diff: two sets of runs of one program (BASE and NEW), compared per
 * function and per source line. Each run is one sample of the time a
 * function takes; several runs per side give a mean and a standard
 * deviation, and Welch's t-test says whether the change is beyond the runs'
 * spread (DCPI's dcpistats, Anderson et al. SOSP 1997, section 3: profiles
 * of many runs vary, so compare distributions, not single counts).
 *
 * Functions match by (image, name), lines by (image, function, file, line):
 * never by address, which a rebuild moves. An image is named by its file
 * name; a NEW image whose build-id equals a BASE image's takes that image's
 * name (a renamed copy of one build).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report/report.h"

/* Two-sided significance level of the test; see rep_diff_welch(). */
#define REP_DIFF_ALPHA 0.05

/* One side of a row: the per-run values' mean and standard deviation (in
 * ns for clock events, else events), and the mean share of the run's
 * samples (0..1). */
struct rep_diff_side {
	unsigned n; /* runs */
	double mean, sd, share;
};

struct rep_diff_row {
	const char *function; /* NULL for the whole program */
	const char *image;    /* file name of the image; NULL for the program */
	const char *file;     /* lines only: the source file */
	unsigned line;        /* lines only */
	struct rep_diff_side base, new;
	double change;       /* new.mean - base.mean */
	double change_pct;   /* 100 * change / base.mean; INFINITY when base is 0 */
	double share_change; /* new.share - base.share (fraction) */
	double p;            /* two-sided p-value; NAN when a side has one run */
	bool significant;    /* p < REP_DIFF_ALPHA */
};

struct rep_diff;

/*
 * Compares the runs in base with those in new (each run of a profile, i.e.
 * each file loaded into it, is one sample). Fails with -EINVAL and one line
 * in err when the two cannot be compared: different programs, code without
 * symbols (nothing to match by name), no function in common, no samples,
 * different sampling events. Returns 0, -EINVAL or -ENOMEM; *out is freed
 * with rep_diff_free().
 */
int rep_diff_new(const struct rep_profile *base, const struct rep_profile *new,
		 struct rep_diff **out, char *err, size_t errlen);
void rep_diff_free(struct rep_diff *d);

/* Rows, sorted: significant changes first, then by the size of the change
 * in time per run (descending). The program row is apart. Pointers stay
 * valid until rep_diff_free(). */
const struct rep_diff_row *rep_diff_program(const struct rep_diff *d);
size_t rep_diff_nfunctions(const struct rep_diff *d);
const struct rep_diff_row *rep_diff_function(const struct rep_diff *d, size_t i);
size_t rep_diff_nlines(const struct rep_diff *d);
const struct rep_diff_row *rep_diff_line(const struct rep_diff *d, size_t i);
/* Whether the values can be given a significance (two runs or more on
 * each side). */
bool rep_diff_can_judge(const struct rep_diff *d);

struct rep_diff_options {
	enum rep_format format; /* text, markdown or json */
	unsigned top;           /* rows per table; 0: all */
};

/* Prints the comparison (text, markdown or json); 0 or -EIO. */
int rep_diff_print(const struct rep_diff *d, const struct rep_diff_options *o, FILE *out);
/*
 * psup diff --format html: one page that needs nothing else (report/html.h)
 * with the summary, the differential flame graph of new's calling contexts
 * against base's (merged over each side's runs: colours compare shares, so
 * the number of runs does not matter) and the function and line tables of
 * rep_diff_print(). base and new are the profiles d was made from. 0,
 * -ENOMEM or -EIO.
 */
int rep_diff_print_html(const struct rep_diff *d, const struct rep_profile *base,
			const struct rep_profile *new, const struct rep_diff_options *o, FILE *out);

/* --fail-if-slower: whether the program or a function got slower by a
 * significant change of more than pct percent; if so, why gets one line
 * naming the worst such row (the program first). Needs
 * rep_diff_can_judge(). */
bool rep_diff_slower(const struct rep_diff *d, double pct, char *why, size_t len);

/* ---- the statistics, for tests ---------------------------------------- */

/* Mean and sample standard deviation (n - 1) of n values; sd 0 for n < 2. */
void rep_diff_mean_sd(const double *v, unsigned n, double *mean, double *sd);
/* Two-sided p-value of Welch's t-test for means m1, m2 with variances
 * v1, v2 of n1, n2 values (Welch-Satterthwaite degrees of freedom); NAN
 * when n1 or n2 is below 2. Equal means give 1; zero variances with
 * different means give 0. */
double rep_diff_welch(double m1, double v1, unsigned n1, double m2, double v2, unsigned n2);
/* P(|T| >= t) for Student's t with df degrees of freedom (df > 0). */
double rep_diff_t_two_sided(double t, double df);

#endif
