/*
 * Where each thread's time goes: running, runnable (preempted, waiting for a
 * CPU), or blocked, and blocked on what: a futex (locks, condition variables,
 * joins), I/O, a sleep, or something else. Driven by each thread's own
 * records, which its ring keeps in time order: switch in/out records (with
 * the preempt flag) and the block sample written just before each switch-out,
 * whose user registers say where the thread entered the kernel.
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

enum tstate { TS_RUNNING, TS_RUNNABLE, TS_BLOCKED };

struct ts_thread {
	enum tstate state;
	enum exp_block_kind kind;    /* while blocked */
	enum exp_block_kind pending; /* from the block sample before a switch-out */
	bool have_pending;
	uint64_t since;
	struct exp_thread_times times;
};

struct exp_tstate {
	struct psup_u64map threads; /* tid -> struct ts_thread * */
};

int exp_tstate_new(struct exp_tstate **out)
{
	struct exp_tstate *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return -ENOMEM;
	psup_u64map_init(&ts->threads);
	*out = ts;
	return 0;
}

void exp_tstate_free(struct exp_tstate *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->threads.cap; i++)
		if (ts->threads.keys[i])
			free((void *)(uintptr_t)ts->threads.vals[i]);
	psup_u64map_release(&ts->threads);
	free(ts);
}

static struct ts_thread *find(struct exp_tstate *ts, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&ts->threads, (uint64_t)tid);

	return v ? (struct ts_thread *)(uintptr_t)*v : NULL;
}

int exp_tstate_thread_start(struct exp_tstate *ts, pid_t tid, uint64_t time, bool blocked,
			    enum exp_block_kind kind)
{
	struct ts_thread *t = find(ts, tid);
	uint64_t *v;

	if (t)
		return 0;
	t = calloc(1, sizeof(*t));
	v = t ? psup_u64map_upsert(&ts->threads, (uint64_t)tid, NULL) : NULL;
	if (!v) {
		free(t);
		return -ENOMEM;
	}
	*v = (uintptr_t)t;
	t->state = blocked ? TS_BLOCKED : TS_RUNNING;
	t->kind = kind;
	t->since = time;
	return 0;
}

/* Charges the time since the last change to the state the thread was in. */
static void charge(struct ts_thread *t, uint64_t time)
{
	uint64_t d = time > t->since ? time - t->since : 0;

	switch (t->state) {
	case TS_RUNNING:
		t->times.running += d;
		break;
	case TS_RUNNABLE:
		t->times.runnable += d;
		break;
	case TS_BLOCKED:
		t->times.blocked[t->kind] += d;
		break;
	}
	if (time > t->since)
		t->since = time;
}

void exp_tstate_block(struct exp_tstate *ts, pid_t tid, enum exp_block_kind kind)
{
	struct ts_thread *t = find(ts, tid);

	if (!t)
		return;
	t->pending = kind;
	t->have_pending = true;
}

void exp_tstate_switch(struct exp_tstate *ts, pid_t tid, uint64_t time, bool out, bool preempt)
{
	struct ts_thread *t = find(ts, tid);

	if (!t)
		return;
	charge(t, time);
	if (!out) {
		t->state = TS_RUNNING;
	} else if (preempt) {
		t->state = TS_RUNNABLE;
	} else {
		t->state = TS_BLOCKED;
		t->kind = t->have_pending ? t->pending : EXP_BLOCK_OTHER;
	}
	t->have_pending = false;
}

int exp_tstate_thread_end(struct exp_tstate *ts, pid_t tid, uint64_t time, bool exited,
			  struct exp_thread_times *out)
{
	struct ts_thread *t = find(ts, tid);

	if (!t)
		return -ENOENT;
	if (!exited || t->state == TS_RUNNING)
		charge(t, time);
	*out = t->times;
	psup_u64map_remove(&ts->threads, (uint64_t)tid);
	free(t);
	return 0;
}

/* "__libc_read", "__GI___futex_abstimed_wait_cancelable64" -> the name
 * without glibc's internal prefixes. */
static const char *plain_name(const char *f)
{
	for (;;) {
		while (*f == '_')
			f++;
		if (!strncmp(f, "GI_", 3))
			f += 3;
		else if (!strncmp(f, "libc_", 5))
			f += 5;
		else
			return f;
	}
}

static bool starts_with_any(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strncmp(s, *list, strlen(*list)))
			return true;
	return false;
}

enum exp_block_kind exp_block_kind_of(const char *function, uint64_t arg0, uint64_t arg1)
{
	static const char *const futex[] = {
		"futex", "lll_lock", "lll_timedlock", "pthread_mutex", "pthread_cond",
		"pthread_rwlock", "pthread_barrier", "pthread_join", "pthread_clockjoin",
		"pthread_timedjoin", "sem_wait", "sem_timedwait", "sem_clockwait", NULL,
	};
	static const char *const sleep[] = {
		"nanosleep", "clock_nanosleep", "usleep", "sleep", "pause", "sigsuspend",
		"sigtimedwait", "sigwaitinfo", "rt_sigtimedwait", NULL,
	};
	static const char *const io[] = {
		"read", "write", "pread", "pwrite", "preadv", "pwritev", "recv", "send",
		"poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect",
		"accept", "connect", "fsync", "fdatasync", "sync", "open", "close",
		"splice", "sendfile", "io_getevents", "io_uring_enter", "msgrcv", "msgsnd",
		"semop", "semtimedop", "flock", "fcntl", "ioctl", NULL,
	};
	const char *f;

	if (!function)
		return EXP_BLOCK_OTHER;
	f = plain_name(function);
	if (strstr(f, "futex") || starts_with_any(f, futex))
		return EXP_BLOCK_FUTEX;
	if (starts_with_any(f, sleep))
		return EXP_BLOCK_SLEEP;
	if (starts_with_any(f, io))
		return EXP_BLOCK_IO;
	/* syscall(2) itself (Rust's and Go-style raw futex locks): the
	 * registers hold the call's own arguments; a futex wait is an aligned
	 * address and a wait operation (WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2,
	 * WAIT_REQUEUE_PI; PRIVATE and CLOCK_REALTIME bits aside). */
	if (!strcmp(f, "syscall")) {
		unsigned op = (unsigned)arg1 & ~(128u | 256u);
		if (arg0 > 4096 && !(arg0 & 3) && (op == 0 || op == 9 || op == 6 || op == 13 || op == 11))
			return EXP_BLOCK_FUTEX;
	}
	return EXP_BLOCK_OTHER;
}
