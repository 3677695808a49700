/* gen-contexts FILE N [chain]
 *   Writes a synthetic record file with N calling contexts (plus a root)
 *   through psup's own writer: one thread, one location per context in a
 *   function of its own (work_<i>), each context the leaf of 1 to 7 samples,
 *   context i called from a context before it (a random recursive tree,
 *   deterministic: depth about 3 ln N; with "chain", each context is
 *   called from the one before: depth N). For the report's scaling tests (the
 *   HTML page with 100,000 contexts, t8070). Not a profiled program: it
 *   links report/ instead.
 * Exit: 0, 64 usage, 1 a write failed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

int main(int argc, char **argv)
{
	struct rep_header h = { .mode = "run", .pid = 100, .wall_ns = 1, .mono_ns = 1000,
				.event = "task-clock", .period = 1000000, .clock_event = true,
				.hostname = "gen" };
	struct rep_thread th = { .tid = 100, .pid = 100, .name = "gen", .time = 1000 };
	struct rep_end e = { .time = 2000000000, .reason = "exit" };
	struct rep_writer *w;
	uint64_t *pairs, seed = 42, total = 0;
	unsigned long n;
	char fn[32];
	int rc;

	bool chain = argc == 4 && !strcmp(argv[3], "chain");

	if ((argc != 3 && !chain) || !(n = strtoul(argv[2], NULL, 10)) || n > 10000000) {
		fprintf(stderr, "usage: gen-contexts FILE N [chain]\n");
		return 64;
	}
	pairs = calloc(2 * n, sizeof(*pairs));
	if (!pairs || rep_writer_open(argv[1], REP_WRITER_FORCE, &w))
		return 1;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &th);
	for (unsigned long i = 1; !rc && i <= n; i++) {
		struct rep_frame f = { fn, "gen.c", (unsigned)i };
		struct rep_loc l = { i, 100, 0x1000 + i * 16, "/gen/app", NULL, i * 16, 1, &f };
		uint64_t parent = 0;

		snprintf(fn, sizeof(fn), "work_%lu", i);
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		if (i > 1)
			parent = chain ? i - 1 : 1 + (seed >> 33) % (i - 1);
		rc = rep_write_loc(w, &l);
		rc = rc ? rc : rep_write_node(w, i, parent, i);
		pairs[2 * (i - 1)] = i;
		pairs[2 * (i - 1) + 1] = 1 + i % 7;
		total += 1 + i % 7;
	}
	rc = rc ? rc : rep_write_samples(w, 100, pairs, n);
	rc = rc ? rc : rep_write_thread_end(w, 100, e.time);
	e.samples = total;
	rc = rc ? rc : rep_write_end(w, &e);
	if (rep_writer_close(w) && !rc)
		rc = -EIO;
	free(pairs);
	if (rc) {
		fprintf(stderr, "gen-contexts: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	return 0;
}
