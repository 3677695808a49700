/*
 * The recorder's event hub (builtin/record.c) fed by hand, without a
 * sampler or a supervisor: a fake mode logs which hooks the hub calls, in
 * which order and with which arguments, beside the real profile mode; the
 * record file reads back with the thread and the sample.
 */
#include "builtin/record.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "report/report-internal.h"
#include "sampler/sampler.h"
#include "supervisor/supervisor.h"
#include "tests/unit/tap.h"

/* What the fake mode saw: one line per hook call. */
static char seen[4096];

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	size_t len = strlen(seen);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(seen + len, sizeof(seen) - len, fmt, ap);
	va_end(ap);
	len = strlen(seen);
	snprintf(seen + len, sizeof(seen) - len, ";");
}

struct fake {
	struct rec_mode mode;
	bool started;
};

static int f_start(struct rec_mode *m, const struct rec_env *env)
{
	((struct fake *)m)->started = true;
	logf_("start attach=%d w=%d prof=%d", env->attach, env->w != NULL, env->prof != NULL);
	return 0;
}

static int f_header(struct rec_mode *m, struct sup_session *s)
{
	(void)m;
	logf_("header s=%d", s != NULL);
	return 0;
}

static int f_thread_new(struct rec_mode *m, struct sym_space *sp, pid_t tid, pid_t pid, pid_t parent,
			bool new_process, uint64_t time)
{
	(void)m;
	(void)sp;
	(void)time;
	logf_("thread_new %d %d %d %d", tid == getpid(), pid == getpid(), parent, new_process);
	return 0;
}

static int f_thread_exiting(struct rec_mode *m, pid_t tid, pid_t pid)
{
	(void)m;
	logf_("thread_exiting %d %d", tid == getpid(), pid == getpid());
	return 0;
}

static int f_thread_gone(struct rec_mode *m, pid_t tid, bool exited, uint64_t time)
{
	(void)m;
	logf_("thread_gone %d %d %d", tid == getpid(), exited, time > 0);
	return 0;
}

static int f_thread_drained(struct rec_mode *m, pid_t tid, bool exited, uint64_t time)
{
	(void)m;
	logf_("thread_drained %d %d %d", tid == getpid(), exited, time > 0);
	return 0;
}

static int f_process_exit(struct rec_mode *m, pid_t pid, bool root, uint64_t time)
{
	(void)m;
	logf_("process_exit %d %d %d", pid == getpid(), root, time > 0);
	return 0;
}

static int f_sample(struct rec_mode *m, const struct rec_sample *s)
{
	(void)m;
	logf_("sample n=%u pc=%#llx t=%llu period=%llu cpu=%d flags=%u", s->n,
	      s->n ? (unsigned long long)s->pcs[0] : 0ULL, (unsigned long long)s->time,
	      (unsigned long long)s->period, s->cpu, s->flags);
	return 0;
}

static int f_switch(struct rec_mode *m, const struct smp_switch *sw)
{
	(void)m;
	logf_("switch out=%d t=%llu", sw->out, (unsigned long long)sw->time);
	return 0;
}

static int f_block(struct rec_mode *m, const struct smp_block *b, enum exp_block_kind kind,
		   uint64_t futex)
{
	(void)m;
	logf_("block t=%llu kind=%d futex=%llu", (unsigned long long)b->time, kind,
	      (unsigned long long)futex);
	return 0;
}

static int f_wakeup(struct rec_mode *m, const struct smp_wakeup *wk, uint64_t node)
{
	(void)m;
	logf_("wakeup t=%llu unsampled=%d", (unsigned long long)wk->time, node == REC_UNSAMPLED);
	return 0;
}

static int f_signal_stop(struct rec_mode *m, struct sym_space *sp, pid_t tid, int sig)
{
	(void)m;
	(void)sp;
	(void)tid;
	logf_("signal_stop %d", sig);
	return sig == 40 ? SUP_SIGNAL_SUPPRESS : SUP_SIGNAL_DELIVER;
}

static bool f_own_breakpoint(struct rec_mode *m, pid_t tid, uint64_t addr)
{
	(void)m;
	(void)tid;
	return addr == 0x42;
}

static int f_flush(struct rec_mode *m)
{
	(void)m;
	logf_("flush");
	return 0;
}

static int f_finish(struct rec_mode *m, bool quiet)
{
	(void)m;
	logf_("finish quiet=%d", quiet);
	return 0;
}

static int f_end(struct rec_mode *m)
{
	(void)m;
	logf_("end");
	return 0;
}

static bool f_bad_end(struct rec_mode *m)
{
	(void)m;
	logf_("bad_end");
	return true;
}

static int f_tick(struct rec_mode *m, uint64_t now)
{
	(void)m;
	(void)now;
	logf_("tick");
	return 0;
}

static void f_free(struct rec_mode *m)
{
	logf_("free");
	free(m);
}

static struct rec_mode *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	f->mode = (struct rec_mode){
		.name = "fake",
		.start = f_start,
		.header = f_header,
		.thread_new = f_thread_new,
		.thread_exiting = f_thread_exiting,
		.thread_gone = f_thread_gone,
		.thread_drained = f_thread_drained,
		.process_exit = f_process_exit,
		.sample = f_sample,
		.context_switch = f_switch,
		.block = f_block,
		.wakeup = f_wakeup,
		.signal_stop = f_signal_stop,
		.own_breakpoint = f_own_breakpoint,
		.flush = f_flush,
		.tick = f_tick,
		.finish = f_finish,
		.end = f_end,
		.bad_end = f_bad_end,
		.free = f_free,
	};
	return &f->mode;
}

int main(void)
{
	char path[] = "/tmp/psup-test-recorder-XXXXXX";
	struct rec_mode *modes[2] = { rec_profile_new(), fake_new() };
	struct rep_writer *w;
	struct rec *r;
	pid_t me = getpid();
	bool bad = false;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rec_new_bare(w, "run", modes, 2, &r) == 0);
	CHECK(!strcmp(seen, "start attach=0 w=1 prof=1;"));
	seen[0] = '\0';

	const struct sup_hooks *h = rec_hooks(r);
	const struct smp_sink *sink = rec_sink(r);

	/* the first thread: the header first, and in run mode nothing more
	 * (psup's own child before its exec is not the program); the program's
	 * thread is reported again at the exec */
	h->thread_new(h->arg, me, me, 0, true);
	CHECK(!strcmp(seen, "header s=0;"));
	h->exec(h->arg, me, me);
	h->thread_new(h->arg, me, me, 0, false);
	struct smp_sample s = { .pid = me, .tid = me, .time = 1000, .period = 999, .cpu = 1, .ip = 0x1234, .user = true };
	sink->sample(sink->arg, &s);
	struct smp_switch sw = { .tid = me, .time = 2000, .out = true, .cpu = 1 };
	sink->context_switch(sink->arg, &sw);
	struct smp_block b = { .pid = me, .tid = me, .time = 2000 };
	sink->block(sink->arg, &b);
	/* a wakeup of an untraced thread is nobody's; of a traced one, the
	 * modes' (unsampled: no stack) */
	struct smp_wakeup wk = { .pid = me, .tid = me, .wakee_tid = me + 100000, .time = 3000 };
	sink->wakeup(sink->arg, &wk);
	wk.wakee_tid = me;
	wk.time = 3001;
	sink->wakeup(sink->arg, &wk);
	CHECK(h->signal_stop != NULL);
	CHECK_EQ_INT(h->signal_stop(h->arg, me, 40), SUP_SIGNAL_SUPPRESS);
	CHECK_EQ_INT(h->signal_stop(h->arg, me, 10), SUP_SIGNAL_DELIVER);
	CHECK(h->own_breakpoint(h->arg, me, 0x42));
	CHECK(!h->own_breakpoint(h->arg, me, 0x43));
	h->thread_exiting(h->arg, me, me);
	h->thread_gone(h->arg, me, me, true);
	h->process_exit(h->arg, me, 0, 0);
	const char *want =
		"header s=0;thread_new 1 1 0 0;"
		"sample n=1 pc=0x1234 t=1000 period=999 cpu=1 flags=0;"
		"switch out=1 t=2000;block t=2000 kind=3 futex=0;wakeup t=3001 unsampled=1;"
		"signal_stop 40;signal_stop 10;"
		"thread_exiting 1 1;thread_gone 1 1 1;thread_drained 1 1 1;process_exit 1 0 1;";
	CHECK(!strcmp(seen, want));
	if (strcmp(seen, want))
		fprintf(stderr, "# saw  %s\n# want %s\n", seen, want);
	CHECK_EQ_INT(EXP_BLOCK_OTHER, 3);

	/* In the run's first second the loop ticks every 10 ms to drain, but a
	 * mode that asks no tick of its own is called at most every ~100 ms:
	 * ten ticks in a row reach it once (twice if they took 95 ms). */
	seen[0] = '\0';
	uint64_t t0 = psup_now_ns();
	for (int i = 0; i < 10; i++)
		rec_tick(r);
	unsigned ticks = 0;
	for (const char *p = seen; (p = strstr(p, "tick;")); p++)
		ticks++;
	if (psup_now_ns() - t0 < 90000000ULL)
		CHECK_EQ_INT(ticks, 1);
	else
		CHECK(ticks >= 1 && ticks <= 2);

	/* the end: the last events, the last flush, the totals, the verdict */
	seen[0] = '\0';
	CHECK(rec_end(r, "exit", &bad) == 0);
	CHECK(bad);
	CHECK(!strcmp(seen, "finish quiet=1;flush;end;bad_end;free;"));
	if (strcmp(seen, "finish quiet=1;flush;end;bad_end;free;"))
		fprintf(stderr, "# saw %s\n", seen);
	CHECK(rep_writer_close(w) == 0);

	/* what the hub and the profile mode wrote reads back */
	struct rep_profile *p;
	char err[256];
	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	CHECK_EQ_INT(p->samples, 1);
	CHECK_EQ_INT(p->nthreads, 1);
	rep_profile_free(p);
	unlink(path);
	return tap_done();
}
