/*
 * The witch mode (builtin/record-witch.c) fed by hand: its options and
 * their errors, the check of the debug registers left to it, --help; then
 * runs through the recorder's hub without a sampler or a session: the
 * witch_config record its header writes (read back), the answers of its
 * signal-stop hook for signals that are not its own, the closing summary.
 * (Its own signals need a ptrace-stopped thread: the scenarios t6xxx.)
 */
#include "builtin/record.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report-internal.h"
#include "supervisor/supervisor.h"
#include "tests/unit/tap.h"
#include "tests/unit/report-fixture.h"

/* ---- stderr of a call ------------------------------------------------- */

static char errtext[4096];
static int saved_fd = -1;
static FILE *errfile;

static void capture_begin(void)
{
	fflush(stderr);
	errfile = tmpfile();
	saved_fd = dup(2);
	dup2(fileno(errfile), 2);
}

static void capture_end(void)
{
	size_t n;

	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(errfile);
	n = fread(errtext, 1, sizeof(errtext) - 1, errfile);
	errtext[n] = '\0';
	fclose(errfile);
}

/* The mode's option called name, as run.c gives it; the error line in errtext. */
static int opt(struct rec_mode *m, const char *name, const char *arg)
{
	int ret;

	for (const struct rec_option *o = m->options; o->name; o++) {
		if (strcmp(o->name, name))
			continue;
		capture_begin();
		ret = m->option(m, o->id, arg, false);
		capture_end();
		return ret;
	}
	fprintf(stderr, "# no option %s\n", name);
	return 99;
}

static int check(struct rec_mode *m, unsigned free_slots)
{
	int ret;

	capture_begin();
	ret = m->check(m, false, free_slots);
	capture_end();
	return ret;
}

static void test_options(void)
{
	struct rec_mode *m = rec_witch_new();

	CHECK(m && !m->enabled(m));
	/* --witch LIST */
	CHECK_EQ_INT(opt(m, "witch", "dead,bogus"), 2);
	CHECK(strstr(errtext, "psup: unknown witch analysis 'bogus' (dead, silent, load)"));
	CHECK_EQ_INT(opt(m, "witch", ""), 2);
	CHECK(strstr(errtext, "psup: --witch needs at least one analysis: dead, silent, load"));
	CHECK(!m->enabled(m));
	CHECK_EQ_INT(opt(m, "witch", "silent,load"), -1);
	CHECK(m->enabled(m));
	/* --witch-period: ns of task-clock, at least 10000 */
	CHECK_EQ_INT(opt(m, "witch-period", "9999"), 2);
	CHECK(strstr(errtext, "psup: invalid witch period '9999': expected an integer >= 10000"));
	CHECK_EQ_INT(opt(m, "witch-period", "-10000"), 2);
	CHECK_EQ_INT(opt(m, "witch-period", "1e6"), 2);
	CHECK_EQ_INT(opt(m, "witch-period", "10000"), -1);
	/* --witch-fp-precision: a fraction below 1, or a percentage */
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "1.0"), 2);
	CHECK(strstr(errtext, "psup: invalid float precision '1.0': expected a fraction like 0.01 or 1%"));
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "-0.1"), 2);
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "nan"), 2);
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "100%"), 2);
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "2%"), -1);
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "0"), -1);
	/* --witch-weight */
	CHECK_EQ_INT(opt(m, "witch-weight", "cycles"), 2);
	CHECK(strstr(errtext, "psup: unknown witch weighting 'cycles' (time, instructions)"));
	CHECK_EQ_INT(opt(m, "witch-weight", "time"), -1);
	CHECK_EQ_INT(opt(m, "witch-exact", NULL), -1);

	/* the debug registers the progress points left: none is an error */
	CHECK_EQ_INT(check(m, 0), 2);
	CHECK(strstr(errtext, "psup: --witch: the progress points (-p, --latency) take all 4 debug registers"));
	CHECK_EQ_INT(check(m, 2), -1);
	CHECK(!errtext[0]);
	rec_mode_free(m);

	/* the witch-* options need --witch */
	static const char *const alone[][2] = {
		{ "witch-period", "20000" },
		{ "witch-exact", NULL },
		{ "witch-weight", "instructions" },
	};
	for (unsigned i = 0; i < 3; i++) {
		m = rec_witch_new();
		CHECK_EQ_INT(opt(m, alone[i][0], alone[i][1]), -1);
		CHECK(!m->enabled(m));
		CHECK_EQ_INT(check(m, 4), 2);
		CHECK(strstr(errtext, "psup: --witch-period, --witch-exact and --witch-weight need --witch"));
		rec_mode_free(m);
	}
	/* the precision alone says nothing wrong (it has a default) */
	m = rec_witch_new();
	CHECK_EQ_INT(opt(m, "witch-fp-precision", "0.5"), -1);
	CHECK_EQ_INT(check(m, 0), -1);
	CHECK(!m->enabled(m));

	char *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	m->usage(f, false);
	fflush(f);
	CHECK(strstr(text, "--witch LIST") && strstr(text, "--witch-weight W"));
	fclose(f);
	free(text);
	rec_mode_free(m);
}

static char *render(const char *path)
{
	return render_file(path, (struct rep_options){ REP_FORMAT_JSON, REP_VIEW_WITCH, 0, 0.0, NULL });
}

/* A sampling run: the configuration record, a thread whose sampling event
 * could not be opened (it is gone), signals that are the program's. */
static void test_run(void)
{
	char path[] = "/tmp/psup-test-record-witch-XXXXXX";
	struct rec_mode *wm = rec_witch_new();
	struct rec_mode *modes[2] = { rec_profile_new(), wm };
	struct rep_writer *w;
	struct rec *r;
	const pid_t me = getpid();
	/* a thread of this process that does not exist: its event is not opened */
	const pid_t gone = 4000001;
	bool bad = true;
	char *json;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(opt(wm, "witch", "dead,silent"), -1);
	CHECK_EQ_INT(opt(wm, "witch-fp-precision", "2%"), -1);
	CHECK_EQ_INT(opt(wm, "witch-weight", "instructions"), -1);
	CHECK_EQ_INT(check(wm, 3), -1);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rec_new_bare(w, "run", modes, 2, &r) == 0);

	const struct sup_hooks *h = rec_hooks(r);

	capture_begin();
	h->thread_new(h->arg, gone, me, 0, true);
	capture_end();
	/* a thread gone before its event opened is no failure */
	CHECK(!strstr(errtext, "cannot sample"));
	/* the program's own signals are delivered; so are those of threads
	 * witch does not know */
	CHECK_EQ_INT(h->signal_stop(h->arg, gone, SIGUSR1), SUP_SIGNAL_DELIVER);
	CHECK_EQ_INT(h->signal_stop(h->arg, me + 1, SIGTRAP), SUP_SIGNAL_DELIVER);
	CHECK_EQ_INT(wm->tick(wm, 0), 0);
	h->thread_gone(h->arg, gone, me, true);
	h->process_exit(h->arg, me, 0, 0);
	capture_begin();
	CHECK_EQ_INT(wm->finish(wm, false), 0);
	capture_end();
	CHECK(strstr(errtext, "psup: witch: dead 0.0% wasted (0 samples, 0 traps)"));
	CHECK(strstr(errtext, "psup: witch: silent 0.0% wasted (0 samples, 0 traps)"));
	CHECK(!strstr(errtext, "witch: load"));
	CHECK(!strstr(errtext, "could not be sampled"));
	CHECK(rec_end(r, "exit", &bad) == 0);
	CHECK(!bad);
	CHECK(rep_writer_close(w) == 0);

	json = render(path);
	CHECK(json && strstr(json, "\"dead\":{") && strstr(json, "\"silent\":{"));
	CHECK(json && !strstr(json, "\"load\":{"));
	CHECK(json && strstr(json, "\"fp_precision\":0.020000"));
	CHECK(json && strstr(json, "\"debug_registers\":3"));
	CHECK(json && strstr(json, "\"exact\":false"));
	/* without a precise memory event, task-clock weighed as asked */
	if (json && strstr(json, "\"event\":\"task-clock\""))
		CHECK(strstr(json, "\"weighting\":\"instructions\""));
	if (!json || !strstr(json, "\"debug_registers\":3"))
		fprintf(stderr, "# %s\n", json ? json : "(none)");
	free(json);
	unlink(path);
}

/* --witch-exact: single steps, no watchpoints; its summary in bytes. */
static void test_exact(void)
{
	char path[] = "/tmp/psup-test-record-witch-XXXXXX";
	struct rec_mode *wm = rec_witch_new();
	struct rep_writer *w;
	struct rec *r;
	bool bad = true;
	char *json;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(opt(wm, "witch", "load"), -1);
	CHECK_EQ_INT(opt(wm, "witch-exact", NULL), -1);
	CHECK_EQ_INT(check(wm, 4), -1);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rec_new_bare(w, "run", &wm, 1, &r) == 0);
	/* the headers as the hub writes them at the first thread (a thread
	 * of exact mode needs a session to step it) */
	struct rep_header hdr = { .mode = "run", .pid = getpid(), .event = "task-clock", .period = 1000000, .clock_event = true };
	CHECK_EQ_INT(rep_write_header(w, &hdr), 0);
	CHECK_EQ_INT(wm->header(wm, NULL), 0);
	capture_begin();
	CHECK_EQ_INT(wm->finish(wm, false), 0);
	capture_end();
	CHECK(strstr(errtext, "psup: witch exact: load 0.0% wasted (0 of 0 bytes)"));
	CHECK(rec_end(r, "exit", &bad) == 0);
	CHECK(!bad);
	CHECK(rep_writer_close(w) == 0);

	json = render(path);
	CHECK(json && strstr(json, "\"load\":{") && !strstr(json, "\"dead\":{"));
	CHECK(json && strstr(json, "\"event\":\"single-step\""));
	CHECK(json && strstr(json, "\"exact\":true"));
	CHECK(json && strstr(json, "\"debug_registers\":0"));
	if (!json || !strstr(json, "\"exact\":true"))
		fprintf(stderr, "# %s\n", json ? json : "(none)");
	free(json);
	unlink(path);
}

int main(void)
{
	test_options();
	test_run();
	test_exact();
	return tap_done();
}
