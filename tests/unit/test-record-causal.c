/*
 * The causal mode (builtin/record-causal.c) fed by hand: its options and
 * their errors, what it asks of the recorder (debug registers, spawn flags,
 * tick, runs), then a run through the recorder's hub without a sampler and
 * with a fake supervisor session: no experiment before the program's exec,
 * an experiment on the sampled line at a tick, pauses asked of the threads
 * that owe (only of the runnable ones), the pause hooks' answers, the
 * progress text, and the experiment record read back.
 */
#include "builtin/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "report/report-internal.h"
#include "sampler/sampler.h"
#include "supervisor/supervisor.h"
#include "tests/unit/tap.h"
#include "tests/unit/report-fixture.h"

#define MS 1000000ULL

/* The line every synthetic sample of the experiment lands in. */
__attribute__((noinline)) int causal_the_line(int x);
__attribute__((noinline)) int causal_the_line(int x)
{
	return x * 3 + 1;
}

/* The function of the sampled progress point. */
__attribute__((noinline)) int causal_progress_fn(int x);
__attribute__((noinline)) int causal_progress_fn(int x)
{
	return x * 5 + 2;
}

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
static int opt(struct rec_mode *m, const char *name, const char *arg, bool attach)
{
	int ret;

	for (const struct rec_option *o = m->options; o->name; o++) {
		if (strcmp(o->name, name))
			continue;
		capture_begin();
		ret = m->option(m, o->id, arg, attach);
		capture_end();
		return ret;
	}
	fprintf(stderr, "# no option %s\n", name);
	return 99;
}

/* ---- options --------------------------------------------------------------- */

static void test_options(void)
{
	struct rec_mode *m = rec_causal_new();

	CHECK(m && !m->enabled(m));
	CHECK_EQ_INT(m->tick_ns(m), 0);
	CHECK_EQ_INT(m->runs(m), 1);
	CHECK_EQ_INT(m->spawn_flags(m), 0);

	/* --speedup: 0..100 in steps of 5 */
	CHECK_EQ_INT(opt(m, "speedup", "7", false), 2);
	CHECK(strstr(errtext, "psup: invalid --speedup '7': expected a percentage from 0 to 100, a multiple of 5"));
	CHECK_EQ_INT(opt(m, "speedup", "105", false), 2);
	CHECK_EQ_INT(opt(m, "speedup", "-5", false), 2);
	CHECK_EQ_INT(opt(m, "speedup", "x", false), 2);
	CHECK(!m->enabled(m));
	CHECK_EQ_INT(opt(m, "speedup", "0", false), -1);
	CHECK_EQ_INT(opt(m, "speedup", "100", false), -1);
	/* any causal option turns the mode on */
	CHECK(m->enabled(m));
	CHECK_EQ_INT(m->tick_ns(m), MS);

	/* --runs: run mode only, 1..100000 */
	CHECK_EQ_INT(opt(m, "runs", "3", true), 2);
	CHECK(strstr(errtext, "--runs is for psup run"));
	CHECK_EQ_INT(opt(m, "runs", "0", false), 2);
	CHECK(strstr(errtext, "invalid --runs '0'"));
	CHECK_EQ_INT(opt(m, "runs", "100001", false), 2);
	CHECK_EQ_INT(opt(m, "runs", "3", false), -1);
	CHECK_EQ_INT(m->runs(m), 3);

	/* --latency BEGIN,END */
	CHECK_EQ_INT(opt(m, "latency", "a.c:1", false), 2);
	CHECK(strstr(errtext, "invalid --latency 'a.c:1': expected BEGIN,END"));
	CHECK_EQ_INT(opt(m, "latency", ",b", false), 2);
	CHECK_EQ_INT(opt(m, "latency", "a,", false), 2);
	CHECK_EQ_INT(opt(m, "latency", "a,b,c", false), 2);
	CHECK_EQ_INT(opt(m, "latency", "a.c:1,a.c:9", false), -1);

	/* --line FILE:LINE, --experiment-ms */
	CHECK_EQ_INT(opt(m, "line", "main.c", false), 2);
	CHECK(strstr(errtext, "invalid --line 'main.c': expected FILE:LINE"));
	CHECK_EQ_INT(opt(m, "line", ":12", false), 2);
	CHECK_EQ_INT(opt(m, "line", "main.c:0", false), 2);
	CHECK_EQ_INT(opt(m, "line", "main.c:12", false), -1);
	CHECK_EQ_INT(opt(m, "experiment-ms", "0", false), 2);
	CHECK(strstr(errtext, "invalid --experiment-ms '0'"));
	CHECK_EQ_INT(opt(m, "experiment-ms", "600001", false), 2);
	CHECK_EQ_INT(opt(m, "experiment-ms", "20", false), -1);

	/* after all options: nothing to refuse (points are looked for at run time) */
	CHECK_EQ_INT(m->check(m, false, 4), -1);
	rec_mode_free(m);
}

/* Debug registers: one per breakpoint progress point (sampled ones take
 * none) and the unlock trap of run mode with interception; at most 4. */
static void test_slots_and_flags(void)
{
	struct rec_mode *m = rec_causal_new();

	CHECK_EQ_INT(m->debug_slots(m), 0);
	CHECK_EQ_INT(opt(m, "causal", NULL, false), -1);
	CHECK_EQ_INT(m->debug_slots(m), 1);
	CHECK_EQ_INT(m->spawn_flags(m), SUP_SPAWN_CAUSAL_FILTER);
	CHECK_EQ_INT(opt(m, "progress", "a.c:1", false), -1);
	CHECK_EQ_INT(opt(m, "sampled-progress", "a.c:2", false), -1);
	CHECK_EQ_INT(m->debug_slots(m), 2);
	CHECK_EQ_INT(opt(m, "latency", "a.c:3,a.c:4", false), -1);
	CHECK_EQ_INT(m->debug_slots(m), 4);
	CHECK_EQ_INT(opt(m, "progress", "a.c:5", false), -1);
	CHECK_EQ_INT(m->debug_slots(m), 4);
	/* --no-wake-stops without wakeup records: the wakes stop as usual */
	CHECK_EQ_INT(opt(m, "no-wake-stops", NULL, false), -1);
	capture_begin();
	CHECK_EQ_INT(m->spawn_flags(m), SUP_SPAWN_CAUSAL_FILTER);
	capture_end();
	CHECK(strstr(errtext, "--no-wake-stops needs wakeup records"));
	CHECK_EQ_INT(opt(m, "no-intercept", NULL, false), -1);
	CHECK_EQ_INT(m->spawn_flags(m), 0);
	CHECK_EQ_INT(m->debug_slots(m), 4);
	rec_mode_free(m);

	/* attach: no interception, no unlock trap */
	m = rec_causal_new();
	CHECK_EQ_INT(opt(m, "progress", "a.c:1", true), -1);
	CHECK_EQ_INT(m->debug_slots(m), 1);
	CHECK_EQ_INT(m->spawn_flags(m), 0);
	rec_mode_free(m);

	/* --help: --runs and the interception options are psup run's */
	char *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	m = rec_causal_new();
	m->usage(f, false);
	fflush(f);
	CHECK(strstr(text, "--runs N") && strstr(text, "--no-intercept") && strstr(text, "--speedup PCT"));
	fclose(f);
	free(text);
	f = open_memstream(&text, &len);
	m->usage(f, true);
	fflush(f);
	CHECK(!strstr(text, "--runs") && !strstr(text, "--no-intercept") && strstr(text, "--speedup PCT"));
	fclose(f);
	free(text);
	CHECK(m->usage_own_section);
	rec_mode_free(m);
}

/* ---- a fake session ------------------------------------------------------ */

#define FAKE_SESSION ((struct sup_session *)&fake)

static struct {
	struct sup_pause_hooks hooks;
	bool have_hooks;
	pid_t paused[16];
	unsigned npaused;
	pid_t held;     /* sup_thread_is_held says yes of it */
	pid_t sleeping; /* /proc says 'S' of it, 'R' of the others */
	bool stopping;
} fake;

static pid_t f_session_pid(const struct sup_session *s)
{
	CHECK(s == FAKE_SESSION);
	return getpid();
}

static void f_set_pause_hooks(struct sup_session *s, const struct sup_pause_hooks *h)
{
	CHECK(s == FAKE_SESSION);
	fake.hooks = *h;
	fake.have_hooks = true;
}

static void f_pause_stats(const struct sup_session *s, struct sup_pause_stats *out)
{
	CHECK(s == FAKE_SESSION);
	memset(out, 0, sizeof(*out));
}

static bool f_is_stopping(const struct sup_session *s)
{
	(void)s;
	return fake.stopping;
}

static bool f_is_held(struct sup_session *s, pid_t tid)
{
	(void)s;
	return tid == fake.held;
}

static int f_pause(struct sup_session *s, pid_t tid)
{
	CHECK(s == FAKE_SESSION);
	if (fake.npaused < 16)
		fake.paused[fake.npaused++] = tid;
	return 0;
}

static int f_proc_state(pid_t tid, char *state)
{
	*state = tid == fake.sleeping ? 'S' : 'R';
	return 0;
}

static const struct rec_causal_sup fake_sup = {
	.session_pid = f_session_pid,
	.set_pause_hooks = f_set_pause_hooks,
	.pause_stats = f_pause_stats,
	.is_stopping = f_is_stopping,
	.is_held = f_is_held,
	.pause = f_pause,
	.proc_state = f_proc_state,
};

static bool paused(pid_t tid)
{
	for (unsigned i = 0; i < fake.npaused; i++)
		if (fake.paused[i] == tid)
			return true;
	return false;
}

/* A sample of tid at pc, taken at time, as the rings hand it to the hub. */
static void sample_at(const struct smp_sink *sink, pid_t tid, void *pc, uint64_t time)
{
	struct smp_sample s = { .pid = getpid(), .tid = tid, .time = time, .period = MS, .cpu = 0, .ip = (uint64_t)(uintptr_t)pc, .user = true };

	sink->sample(sink->arg, &s);
}

static char *render(const char *path)
{
	return render_file(path, (struct rep_options){ REP_FORMAT_JSON, REP_VIEW_CAUSAL, 0, 0.0, NULL });
}

/* ---- a run through the hub ---------------------------------------------- */

static void test_run(void)
{
	char path[] = "/tmp/psup-test-record-causal-XXXXXX";
	struct rec_mode *cm = rec_causal_new();
	struct rec_mode *modes[2] = { rec_profile_new(), cm };
	struct rep_writer *w;
	struct rec *r;
	const pid_t me = getpid();
	/* threads of this process that exist only for the mode */
	const pid_t b = 3000001, c = 3000002, d = 3000003;
	char progress[128], spec[64], *json;
	bool bad = true;
	int fd = mkstemp(path);
	uint64_t t;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(opt(cm, "speedup", "50", false), -1);
	CHECK_EQ_INT(opt(cm, "experiment-ms", "10", false), -1);
	CHECK_EQ_INT(opt(cm, "no-intercept", NULL, false), -1);
	snprintf(spec, sizeof(spec), "causal_progress_fn");
	CHECK_EQ_INT(opt(cm, "sampled-progress", spec, false), -1);
	CHECK_EQ_INT(cm->check(cm, false, 4), -1);
	rec_causal_set_sup(cm, &fake_sup);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rec_new_bare(w, "run", modes, 2, &r) == 0);

	const struct sup_hooks *h = rec_hooks(r);
	const struct smp_sink *sink = rec_sink(r);

	/* the first thread (the header; in run mode psup's own child until
	 * its exec, which no mode sees), then the session */
	h->thread_new(h->arg, me, me, 0, true);
	cm->session(cm, FAKE_SESSION);
	CHECK(fake.have_hooks);
	/* no unlock traps without interception */
	CHECK(fake.have_hooks && fake.hooks.trap == NULL && fake.hooks.hold && fake.hooks.held);

	/* Before the root's exec its image is psup's: no experiment. */
	t = psup_now_ns();
	sample_at(sink, me, causal_the_line, t + 1 * MS);
	CHECK_EQ_INT(cm->tick(cm, t + 2 * MS), 0);
	cm->progress(cm, progress, sizeof(progress));
	CHECK(!strcmp(progress, ", 0 experiments"));
	CHECK_EQ_INT(fake.npaused, 0);

	/* The exec: the program's thread is reported anew, and its threads
	 * follow; the next tick starts an experiment on the sampled line at
	 * 50%. */
	h->exec(h->arg, me, me);
	h->thread_new(h->arg, me, me, 0, false);
	h->thread_new(h->arg, b, me, me, false);
	h->thread_new(h->arg, c, me, me, false);
	h->thread_new(h->arg, d, me, me, false);
	sample_at(sink, me, causal_the_line, t + 3 * MS);
	CHECK_EQ_INT(cm->tick(cm, t + 4 * MS), 0);
	CHECK_EQ_INT(fake.npaused, 0);
	/* me runs the line 4 times: the others owe 4 x 0.5 ms; the tick
	 * pauses those that run (not c, asleep, nor d, held already). */
	fake.sleeping = c;
	fake.held = d;
	for (int i = 0; i < 4; i++)
		sample_at(sink, me, causal_the_line, t + 5 * MS + (uint64_t)i * 100000);
	for (int i = 0; i < 3; i++)
		sample_at(sink, b, causal_progress_fn, t + 5 * MS + (uint64_t)i * 100000);
	CHECK_EQ_INT(cm->tick(cm, t + 6 * MS), 0);
	CHECK_EQ_INT(fake.npaused, 1);
	CHECK(paused(b));
	CHECK(!paused(me) && !paused(c) && !paused(d));
	/* At b's stop the supervisor asks how long to hold it. */
	CHECK_EQ_INT(fake.hooks.hold(fake.hooks.arg, b, false), 2 * MS);
	CHECK_EQ_INT(fake.hooks.hold(fake.hooks.arg, b, false), 0);
	CHECK_EQ_INT(fake.hooks.held(fake.hooks.arg, b, 2 * MS, 2 * MS, true), 0);
	CHECK_EQ_INT(fake.hooks.hold(fake.hooks.arg, me, false), 0);
	CHECK_EQ_INT(fake.hooks.hold(fake.hooks.arg, c, false), 2 * MS);
	CHECK_EQ_INT(fake.hooks.held(fake.hooks.arg, c, 2 * MS, 2 * MS, false), 0);
	/* the mode set none of its breakpoints */
	CHECK(!cm->own_breakpoint(cm, me, (uint64_t)(uintptr_t)causal_the_line));
	CHECK(!h->own_breakpoint(h->arg, me, (uint64_t)(uintptr_t)causal_the_line));

	/* That was its warm-up (10 ms, the default): measured from there,
	 * 10 ms later the experiment settles: d still owes, and is paused
	 * once it is no longer held; paid, the experiment ends and its record
	 * is written. */
	CHECK_EQ_INT(cm->tick(cm, t + 14 * MS), 0);
	for (int i = 0; i < 3; i++)
		sample_at(sink, b, causal_progress_fn, t + 18 * MS + (uint64_t)i * 100000);
	fake.npaused = 0;
	CHECK_EQ_INT(cm->tick(cm, t + 25 * MS), 0);
	cm->progress(cm, progress, sizeof(progress));
	CHECK(!strcmp(progress, ", 0 experiments"));
	CHECK_EQ_INT(fake.npaused, 0);
	fake.held = 0;
	CHECK_EQ_INT(cm->tick(cm, t + 26 * MS), 0);
	CHECK_EQ_INT(fake.npaused, 1);
	CHECK(paused(d));
	CHECK_EQ_INT(fake.hooks.hold(fake.hooks.arg, d, false), 2 * MS);
	CHECK_EQ_INT(fake.hooks.held(fake.hooks.arg, d, 2 * MS, 2 * MS, true), 0);
	CHECK_EQ_INT(cm->tick(cm, t + 27 * MS), 0);
	cm->progress(cm, progress, sizeof(progress));
	CHECK(!strcmp(progress, ", 1 experiment"));
	if (strcmp(progress, ", 1 experiment"))
		fprintf(stderr, "# progress '%s'\n", progress);

	/* A detach lets the threads go one by one: no more pauses. */
	fake.npaused = 0;
	fake.stopping = true;
	sample_at(sink, me, causal_the_line, t + 40 * MS);
	CHECK_EQ_INT(cm->tick(cm, t + 50 * MS), 0);
	CHECK_EQ_INT(fake.npaused, 0);
	h->thread_gone(h->arg, b, me, true);
	h->thread_gone(h->arg, c, me, true);
	h->thread_gone(h->arg, d, me, true);
	h->thread_gone(h->arg, me, me, true);
	h->process_exit(h->arg, me, 0, 0);
	capture_begin();
	CHECK(rec_end(r, "exit", &bad) == 0);
	capture_end();
	/* the sampled point resolved: the options named what the program has */
	CHECK(!bad);
	CHECK(strstr(errtext, "psup: causal: 1 experiment (0 cut short and dropped), 2 lines in scope"));
	if (!strstr(errtext, "causal: 1 experiment (0 cut short and dropped), 2"))
		fprintf(stderr, "# stderr: %s\n", errtext);
	CHECK(rep_writer_close(w) == 0);

	/* the header's note, the experiment on the line, the point's visits */
	json = render(path);
	CHECK(json && strstr(json, "\"syscall_crediting\":false"));
	CHECK(json && strstr(json, "\"note\":\"--no-intercept: no system call interception"));
	CHECK(json && strstr(json, "\"experiments\":1,"));
	CHECK(json && strstr(json, "{\"name\":\"causal_progress_fn\",\"kind\":\"throughput\",\"visits\":6}"));
	CHECK(json && strstr(json, "\"line\":\"test-record-causal.c:"));
	if (!json || !strstr(json, "\"visits\":6}"))
		fprintf(stderr, "# %s\n", json ? json : "(none)");
	free(json);
	unlink(path);
}

/* --causal on a program without progress points: psup exits 1, saying why. */
static void test_no_points(void)
{
	char path[] = "/tmp/psup-test-record-causal-XXXXXX";
	struct rec_mode *cm = rec_causal_new();
	struct rep_writer *w;
	struct rec *r;
	const pid_t me = getpid();
	bool bad = false;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(opt(cm, "causal", NULL, true), -1);
	rec_causal_set_sup(cm, &fake_sup);
	memset(&fake, 0, sizeof(fake));
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rec_new_bare(w, "attach", &cm, 1, &r) == 0);

	const struct sup_hooks *h = rec_hooks(r);

	h->thread_new(h->arg, me, me, 0, true);
	cm->session(cm, FAKE_SESSION);
	h->thread_gone(h->arg, me, me, false);
	capture_begin();
	CHECK(rec_end(r, "detach", &bad) == 0);
	capture_end();
	CHECK(bad);
	CHECK(strstr(errtext, "psup: --causal: the program has no progress point"));
	CHECK(rep_writer_close(w) == 0);
	unlink(path);
}

int main(void)
{
	test_options();
	test_slots_and_flags();
	test_run();
	test_no_points();
	return tap_done();
}
