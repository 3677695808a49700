#ifndef PSUP_REPORT_EXPORT_H
#define PSUP_REPORT_EXPORT_H

/*
 * The profile in other tools' formats (report --format pprof, folded,
 * speedscope): every sample of every thread with its whole call stack
 * (REP_EXPORT_MAX_FRAMES frames at most), inlined frames as frames of
 * their own, whatever --view, --top and --min-percent say. Shared by
 * export.c (folded, speedscope) and pprof.c.
 * Not a public API: report.h's rep_print_ext() calls rep_export_print().
 */

#include "report/report-internal.h"

/* Whether f is one of the export formats. */
bool rep_format_is_export(enum rep_format f);
/* Writes p in o->format (an export format) to out. 0, -ENOMEM or -EIO. */
int rep_export_print(const struct rep_profile *p, const struct rep_options *o, FILE *out);
/* pprof's gzipped profile.proto (pprof.c). 0, -ENOMEM or -EIO. */
int rep_export_pprof(const struct rep_profile *p, FILE *out);

/* A thread's samples: (node row, count) pairs with a count, sorted by node
 * row (the maps' slot order depends on a random seed, and outputs must
 * not). *pairs is malloc'ed (2 * *n values); the caller frees it. */
int rep_export_leaves(const struct rep_mthread *t, uint64_t **pairs, size_t *n);
/*
 * The most frames of one stack the exports give: what psup records at most
 * (128 addresses, builtin/record.c, of up to 16 inlined frames each,
 * symbols.h). A record can say more (a chain of nodes as long as the file,
 * a loc of thousands of frames), and every sample prints its whole stack:
 * the folded and speedscope outputs grew with the number of samples times
 * their depth times their frames, gigabytes from a 100 KiB file. A deeper
 * stack keeps its innermost frames (those that have the samples' time),
 * under a "[truncated]" root frame. Test: test-report-hostile.
 */
#define REP_EXPORT_MAX_FRAMES 2048

/* The call path of one sample, as rep_export_stack() walks it. */
struct rep_export_path {
	uint32_t *locs; /* loc rows, leaf first: n of them (cap allocated) */
	size_t n, cap;
	uint32_t skip;  /* outermost frames of locs[n - 1] left out */
	bool truncated; /* frames nearer the root were left out */
};

/* The loc rows of node's call path that hold its innermost
 * REP_EXPORT_MAX_FRAMES frames into path (locs grown as needed; the caller
 * frees path->locs). 0 or -ENOMEM. */
int rep_export_stack(const struct rep_profile *p, uint32_t node, struct rep_export_path *path);
/* Whether every run that has samples counted time (the period is in ns):
 * only then do the exports give times as well as sample counts. */
bool rep_export_timed(const struct rep_profile *p);
/* Wall time of a run, ns (its end, or its last record, minus its start). */
uint64_t rep_export_run_ns(const struct rep_run *r);

#endif
