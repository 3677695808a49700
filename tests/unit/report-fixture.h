#ifndef PSUP_TESTS_REPORT_FIXTURE_H
#define PSUP_TESTS_REPORT_FIXTURE_H

/* What the unit tests of the recorder's modes share: a record file read
 * back and printed as psup report would. Include after tap.h. */

#include <stdio.h>
#include <stdlib.h>

#include "report/report.h"

/* The report of the record file at path with options o; the caller frees
 * the text. */
static char *render_file(const char *path, struct rep_options o)
{
	struct rep_profile *p;
	char err[256], *text = NULL;
	size_t len;
	FILE *f;

	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	f = open_memstream(&text, &len);
	CHECK(rep_print(p, &o, f) == 0);
	fclose(f);
	rep_profile_free(p);
	return text;
}

#endif
