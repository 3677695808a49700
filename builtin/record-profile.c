/*
 * The sampling profile, a mode of the recorder (record.h): each sample
 * counted in its calling context (experiments/profile.c, through the
 * recorder's shared exp_profile), the threads' running, runnable and blocked
 * time (experiments/threadstate.c), and parallel efficiency and lock blame
 * (experiments/parallel.c). Always on.
 */
#include "builtin/record.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "experiments/experiments.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "supervisor/supervisor.h"

struct rec_profile {
	struct rec_mode mode; /* first: the recorder's view */
	struct rep_writer *w;
	struct exp_profile *prof; /* the recorder's (not owned) */
	struct exp_tstate *ts;
	struct exp_par *par; /* idleness and lock blame */
	struct sup_session *sup;
	bool attach;
};

static struct rec_profile *to_profile(struct rec_mode *m)
{
	return (struct rec_profile *)m;
}

static int profile_start(struct rec_mode *m, const struct rec_env *env)
{
	struct rec_profile *pf = to_profile(m);
	struct exp_sink out;
	int err;

	pf->w = env->w;
	pf->prof = env->prof;
	pf->attach = env->attach;
	err = exp_tstate_new(&pf->ts);
	if (err < 0) {
		pr_err("out of memory");
		return err;
	}
	rec_sink_init(&out, env->w);
	err = exp_par_new(&out, env->cpus, &pf->par);
	if (err < 0) {
		pr_err("cannot set up the profile: %s", strerror(-err));
		return err;
	}
	return 0;
}

static int profile_header(struct rec_mode *m, struct sup_session *s)
{
	to_profile(m)->sup = s;
	return 0;
}

static void profile_session(struct rec_mode *m, struct sup_session *s)
{
	to_profile(m)->sup = s;
}

/*
 * A thread starts running (run mode: it is about to). One found by an attach
 * may be asleep: /proc says so, and its system call says on what.
 */
static int profile_thread_new(struct rec_mode *m, struct sym_space *sp, pid_t tid, pid_t pid,
			      pid_t parent, bool new_process, uint64_t time)
{
	struct rec_profile *pf = to_profile(m);
	enum exp_block_kind kind = EXP_BLOCK_OTHER;
	struct sup_syscall sc;
	bool blocked = false;
	char state;

	/* (Its tid word comes with its creator's registers: thread_creator.) */
	(void)sp;
	(void)parent;
	(void)new_process;
	if (pf->attach) {
		blocked = sup_proc_state(tid, &state) == 0 && (state == 'S' || state == 'D');
		if (blocked && sup_thread_syscall(pid, tid, &sc) == 0)
			kind = exp_block_kind_of_nr(sc.nr);
	}
	/* (An exec's survivor started at its exec stop: it may run already.) */
	if (exp_tstate_thread_start(pf->ts, tid, time, blocked, kind) < 0)
		pr_debug("no state for thread %d", tid);
	return exp_par_thread_start(pf->par, tid, time, !blocked);
}

/*
 * The word the kernel clears and wakes when the new thread exits (what
 * pthread_join waits on: experiments/parallel.c blames the join on the
 * exit, and the thread needs no exit stop): CLONE_CHILD_CLEARTID's
 * child_tid, from its creator's registers and stack at the clone (its
 * clone stop's snapshot, or its sample told by the records). clone3's
 * first argument points at its struct clone_args, which glibc builds on
 * the caller's stack (in the snapshot, unless none was taken); clone's is
 * the flags, which fit in 32 bits where an address does not. 0 when it
 * asked for none (Go's runtime, a raw clone) or cannot be read. Threads
 * only (a new process has its own copy of the word).
 */
static int profile_thread_creator(struct rec_mode *m, pid_t tid, pid_t pid, uint64_t time,
				  const struct smp_sample *c)
{
	struct rec_profile *pf = to_profile(m);
	uint64_t di = c->regs[SMP_REG_DI], sp = c->regs[SMP_REG_SP], word = 0;

	if (di > UINT32_MAX) {
		/* An address (clone's flags fit in 32 bits): clone3's
		 * arguments, read where the snapshot has them, else unknown. */
		uint64_t args[3]; /* flags, pidfd, child_tid */

		if (di >= sp && di - sp < c->stack_size && c->stack_size - (di - sp) >= sizeof(args)) {
			memcpy(args, c->stack + (di - sp), sizeof(args));
			word = (args[0] & CLONE_CHILD_CLEARTID) ? args[2] : 0;
		}
	} else {
		word = (di & CLONE_CHILD_CLEARTID) ? c->regs[SMP_REG_R10] : 0;
	}
	return exp_par_thread_word(pf->par, pid, tid, time, word);
}

static int write_thread_times(struct rec_profile *pf, pid_t tid, bool exited, uint64_t now)
{
	struct exp_thread_times et;

	if (exp_tstate_thread_end(pf->ts, tid, now, exited, &et) < 0)
		return 0;
	struct rep_thread_times tt = {
		.running = et.running,
		.runnable = et.runnable,
		.blocked_futex = et.blocked[EXP_BLOCK_FUTEX],
		.blocked_io = et.blocked[EXP_BLOCK_IO],
		.blocked_sleep = et.blocked[EXP_BLOCK_SLEEP],
		.blocked_other = et.blocked[EXP_BLOCK_OTHER],
	};
	return rep_write_thread_times(pf->w, tid, now, &tt);
}

static int profile_thread_drained(struct rec_mode *m, pid_t tid, bool exited, uint64_t time)
{
	struct rec_profile *pf = to_profile(m);
	int err = write_thread_times(pf, tid, exited, time);

	int err2 = exp_par_thread_end(pf->par, tid, time);

	return err < 0 ? err : err2;
}

static int profile_sample(struct rec_mode *m, const struct rec_sample *s)
{
	struct rec_profile *pf = to_profile(m);
	/* Any failure here (a write, or memory for a record whose id is now
	 * taken) would leave later records pointing at nothing: stop. */
	int64_t node = exp_profile_add(pf->prof, s->sp, s->pid, s->tid, s->pcs, s->n, s->flags);

	if (node < 0)
		return (int)node;
	if (node > 0)
		return exp_par_sample(pf->par, s->tid, s->time, (uint64_t)node);
	return 0;
}

static int profile_switch(struct rec_mode *m, const struct smp_switch *sw)
{
	struct rec_profile *pf = to_profile(m);

	exp_tstate_switch(pf->ts, sw->tid, sw->time, sw->out, sw->preempt);
	return exp_par_switch(pf->par, sw->tid, sw->time, sw->out, sw->preempt);
}

static int profile_block(struct rec_mode *m, const struct smp_block *b, enum exp_block_kind kind,
			 uint64_t futex)
{
	struct rec_profile *pf = to_profile(m);

	exp_tstate_block(pf->ts, b->tid, kind);
	if (kind == EXP_BLOCK_FUTEX)
		return exp_par_block_futex(pf->par, b->pid, b->tid, b->time, futex);
	return 0;
}

static int profile_wakeup(struct rec_mode *m, const struct smp_wakeup *wk, uint64_t node)
{
	return exp_par_wake(to_profile(m)->par, wk->tid, wk->wakee_tid, wk->time, node);
}

static int profile_tick(struct rec_mode *m, uint64_t now)
{
	return exp_par_advance(to_profile(m)->par, now);
}

/* idleness and lock records name nodes the profile wrote already (the
 * recorder flushes the calling contexts first) */
static int profile_flush(struct rec_mode *m)
{
	return exp_par_flush(to_profile(m)->par);
}

static int profile_finish(struct rec_mode *m, bool quiet)
{
	(void)quiet;
	return exp_par_advance(to_profile(m)->par, UINT64_MAX);
}

static void profile_free(struct rec_mode *m)
{
	struct rec_profile *pf = to_profile(m);

	exp_par_free(pf->par);
	exp_tstate_free(pf->ts);
	free(pf);
}

struct rec_mode *rec_profile_new(void)
{
	struct rec_profile *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->mode = (struct rec_mode){
		.name = "profile",
		.start = profile_start,
		.header = profile_header,
		.session = profile_session,
		.thread_new = profile_thread_new,
		.thread_creator = profile_thread_creator,
		.no_stops_ok = true,
		.thread_drained = profile_thread_drained,
		.sample = profile_sample,
		.context_switch = profile_switch,
		.block = profile_block,
		.wakeup = profile_wakeup,
		.tick = profile_tick,
		.flush = profile_flush,
		.finish = profile_finish,
		.free = profile_free,
	};
	return &pf->mode;
}
