/*
 * libFuzzer entry point for the record reader and the views: any input must
 * either load (possibly as a truncated prefix) and print, or fail with a
 * one-line -EINVAL, without crashing, hanging or leaking.
 * Build and run: see docs/format.md ("Fuzzing the reader"); the seed corpus
 * of real recordings comes from tests/fuzz/make-corpus.sh.
 */
#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct rep_profile *p;
	char err[256];
	int rc;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (!devnull || rep_profile_new(&p))
		return 0;
	rc = rep_profile_load_buf(p, data, size, "fuzz", err, sizeof(err));
	if (rc == 0) {
		/* Every view, the calling-context trees included. */
		struct rep_options o = { .format = REP_FORMAT_TEXT, .views = REP_VIEW_ALL };

		if (rep_print(p, &o, devnull))
			abort();
		o.format = REP_FORMAT_MARKDOWN;
		o.top = 5;
		if (rep_print(p, &o, devnull))
			abort();
		o.format = REP_FORMAT_JSON;
		o.top = 0;
		if (rep_print(p, &o, devnull))
			abort();
		/* every level of the trees: output bounded by the record */
		{
			struct rep_tree_options t = { 0, 0.0 };

			o.format = REP_FORMAT_TEXT;
			if (rep_print_ext(p, &o, &t, devnull))
				abort();
		}
		/* the html page, and the causal-only format */
		o.format = REP_FORMAT_HTML;
		if (rep_print(p, &o, devnull))
			abort();
		if (rep_profile_has_causal(p)) {
			o.format = REP_FORMAT_COZ;
			if (rep_print(p, &o, devnull))
				abort();
		}
	} else if (rc != -EINVAL && rc != -ENOMEM) {
		abort();
	} else if (!err[0] || strchr(err, '\n')) {
		abort(); /* the reason must be one line */
	}
	rep_profile_free(p);
	return 0;
}
