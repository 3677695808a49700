/* The sample aggregator: contexts interned once, counts per thread, the
 * kernel leaf, forgetting a process's addresses on exec, and records the
 * report reads back with the same totals. */
#include "experiments/experiments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin/record.h"
#include "report/report.h"
#include "tests/unit/tap.h"

static const struct rep_header header = {
	.mode = "run",
	.pid = 100,
	.event = "task-clock",
	.period = 1000000,
	.clock_event = true,
};

static char *report_json(const char *path, const char *views)
{
	struct rep_profile *p;
	struct rep_options o = { .format = REP_FORMAT_JSON };
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)views;
	if (rep_profile_new(&p) < 0)
		return NULL;
	if (rep_profile_load(p, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "load: %s\n", err);
		rep_profile_free(p);
		return NULL;
	}
	f = open_memstream(&buf, &len);
	rep_print(p, &o, f);
	fclose(f);
	rep_profile_free(p);
	return buf;
}

int main(void)
{
	char path[] = "/tmp/psup-test-profile-XXXXXX";
	struct rep_writer *w;
	struct exp_profile *prof;
	struct exp_profile_stats st;
	const uint64_t a[] = { 0x1003, 0x1002, 0x1001 }; /* leaf first */
	const uint64_t b[] = { 0x1004, 0x1002, 0x1001 };
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rep_write_header(w, &header) == 0);
	struct rep_thread t1 = { .tid = 100, .pid = 100, .name = "main" };
	struct rep_thread t2 = { .tid = 101, .pid = 100, .parent = 100, .name = "worker" };
	CHECK(rep_write_thread(w, &t1) == 0);
	CHECK(rep_write_thread(w, &t2) == 0);
	struct exp_sink out;
	rec_sink_init(&out, w);
	CHECK(exp_profile_new(&out, &prof) == 0);

	/* No address space: every address is in no known mapping, so all
	 * share one [unknown] location, and each frame is a node of the chain. */
	for (int i = 0; i < 5; i++)
		CHECK(exp_profile_add(prof, NULL, 100, 100, a, 3, 0) > 0);
	CHECK(exp_profile_add(prof, NULL, 100, 101, b, 3, 0) > 0);
	exp_profile_stats(prof, &st);
	CHECK_EQ_INT(st.samples, 6);
	CHECK_EQ_INT(st.locs, 1);
	CHECK_EQ_INT(st.nodes, 3); /* unknown -> unknown -> unknown */

	/* A kernel sample: one more location and one more node, once. */
	CHECK(exp_profile_add(prof, NULL, 100, 101, b, 3, EXP_SAMPLE_KERNEL) > 0);
	CHECK(exp_profile_add(prof, NULL, 100, 101, b, 3, EXP_SAMPLE_KERNEL) > 0);
	exp_profile_stats(prof, &st);
	CHECK_EQ_INT(st.locs, 2);
	CHECK_EQ_INT(st.nodes, 4);
	/* A kernel sample with no user state at all still counts. */
	CHECK(exp_profile_add(prof, NULL, 100, 101, NULL, 0, EXP_SAMPLE_KERNEL) > 0);
	exp_profile_stats(prof, &st);
	CHECK_EQ_INT(st.samples, 9);
	CHECK_EQ_INT(st.nodes, 5);
	/* Another process has its own [unknown]. */
	CHECK(exp_profile_add(prof, NULL, 200, 200, a, 1, 0) > 0);
	exp_profile_stats(prof, &st);
	CHECK_EQ_INT(st.locs, 3);
	CHECK_EQ_INT(st.samples, 10);

	CHECK(exp_profile_flush(prof) == 0);
	/* After an exec the process's locations are new. */
	exp_profile_forget_process(prof, 100);
	CHECK(exp_profile_add(prof, NULL, 100, 100, a, 3, 0) > 0);
	exp_profile_stats(prof, &st);
	CHECK_EQ_INT(st.locs, 4);
	/* A thread's end writes its pending counts. */
	CHECK(exp_profile_thread_end(prof, 100) == 0);
	CHECK(exp_profile_thread_end(prof, 12345) == 0);
	CHECK(exp_profile_flush(prof) == 0);
	struct rep_end e = { .reason = "exit", .samples = 11 };
	CHECK(rep_write_end(w, &e) == 0);
	exp_profile_free(prof);
	exp_profile_free(NULL);
	CHECK(rep_writer_close(w) == 0);

	char *json = report_json(path, NULL);
	CHECK(json != NULL);
	if (json) {
		CHECK(strstr(json, "\"samples\":11") != NULL || strstr(json, "\"samples\": 11") != NULL);
		CHECK(strstr(json, "[kernel]") != NULL);
		if (!strstr(json, "\"samples\":11") && !strstr(json, "\"samples\": 11"))
			fprintf(stderr, "%.2000s\n", json);
	}
	free(json);
	unlink(path);
	return tap_done();
}
