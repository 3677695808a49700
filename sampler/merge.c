/*
 * Several rings' events in time order (smp_merge in sampler.h).
 *
 * Each CPU's ring is in time order, but a thread's events are spread over
 * the rings of the CPUs it ran on once its events are inherited (written
 * into the ring of the CPU where they happen): read ring after ring, a
 * thread that switched out on CPU 1 and in on CPU 0 was seen switching in
 * before it switched out (0.6% of the switch records of a futex ping-pong
 * came out of order per thread). The events are copied (a sample's stack
 * snapshot too: the ring's space is reused once read) and handed on sorted
 * by time, up to a horizon taken before the rings were read: an event
 * after it may still have an earlier one in a ring read before it was
 * written, so it waits for the next flush.
 */
#include "sampler/sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum merge_kind {
	MERGE_SAMPLE,
	MERGE_LOST,
	MERGE_SWITCH,
	MERGE_BLOCK,
	MERGE_WAKEUP,
	MERGE_COMM,
	MERGE_MMAP,
	MERGE_TASK,
};

struct merge_entry {
	uint64_t time, seq;
	enum merge_kind kind;
	uint8_t *stack; /* owned copy of a sample's, wakeup's or creator's stack, or of an mmap's path */
	union {
		struct smp_sample sample;
		struct smp_switch sw;
		struct smp_block block;
		struct smp_wakeup wakeup;
		struct smp_mmap mmap;
		struct smp_task task;
		struct {
			pid_t tid;
			uint64_t count;
		} lost;
		struct {
			pid_t pid, tid;
			char name[16];
			bool has_name, exec;
		} comm;
	} u;
};

struct smp_merge {
	struct merge_entry *e;
	size_t n, cap;
	uint64_t seq;
	int err; /* -ENOMEM once an event could not be kept */
	struct smp_sink sink;
};

static struct merge_entry *add(struct smp_merge *m, enum merge_kind kind, uint64_t time)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct merge_entry *e = realloc(m->e, cap * sizeof(*e));
		if (!e) {
			m->err = -ENOMEM;
			return NULL;
		}
		m->e = e;
		m->cap = cap;
	}
	struct merge_entry *x = &m->e[m->n++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->time = time;
	x->seq = m->seq++;
	return x;
}

/* x keeps a copy of the stack its event points at (*stack, *size: the
 * event's own fields, made to point at the copy), or none. */
static void keep_stack(struct smp_merge *m, struct merge_entry *x, const uint8_t **stack, size_t *size)
{
	x->stack = NULL;
	if (*stack && *size) {
		x->stack = malloc(*size);
		if (x->stack)
			memcpy(x->stack, *stack, *size);
		else
			m->err = -ENOMEM;
	}
	*stack = x->stack;
	if (!x->stack)
		*size = 0;
}

static void on_sample(void *arg, const struct smp_sample *s)
{
	struct smp_merge *m = arg;
	struct merge_entry *x = add(m, MERGE_SAMPLE, s->time);

	if (!x)
		return;
	x->u.sample = *s;
	keep_stack(m, x, &x->u.sample.stack, &x->u.sample.stack_size);
}

/* Lost records carry no time here: they go out first in the flush that
 * follows (a count; the recorder rereads the maps after one, on_cpu_lost()). */
static void on_lost(void *arg, pid_t tid, uint64_t count)
{
	struct merge_entry *x = add(arg, MERGE_LOST, 0);

	if (x) {
		x->u.lost.tid = tid;
		x->u.lost.count = count;
	}
}

static void on_switch(void *arg, const struct smp_switch *sw)
{
	struct merge_entry *x = add(arg, MERGE_SWITCH, sw->time);

	if (x)
		x->u.sw = *sw;
}

static void on_block(void *arg, const struct smp_block *b)
{
	struct merge_entry *x = add(arg, MERGE_BLOCK, b->time);

	if (x)
		x->u.block = *b;
}

static void on_wakeup(void *arg, const struct smp_wakeup *w)
{
	struct smp_merge *m = arg;
	struct merge_entry *x = add(m, MERGE_WAKEUP, w->time);

	if (!x)
		return;
	x->u.wakeup = *w;
	keep_stack(m, x, &x->u.wakeup.stack, &x->u.wakeup.stack_size);
}

/* A name in its place in time: an exec's among the process's records
 * (after the old program's, before the new one's mappings); a rename after
 * the thread's fork record, which another CPU's ring may hold (a thread
 * named by its creator right after pthread_create kept its creator's name
 * when renames went out first in the flush). */
static void on_comm(void *arg, pid_t pid, pid_t tid, const char *name, bool exec, uint64_t time)
{
	struct merge_entry *x = add(arg, MERGE_COMM, time);

	if (!x)
		return;
	x->u.comm.pid = pid;
	x->u.comm.tid = tid;
	x->u.comm.exec = exec;
	x->u.comm.has_name = name != NULL;
	if (name)
		snprintf(x->u.comm.name, sizeof(x->u.comm.name), "%s", name);
}

static void on_mmap(void *arg, const struct smp_mmap *m)
{
	struct smp_merge *mg = arg;
	size_t n = strlen(m->path) + 1;
	struct merge_entry *x = add(mg, MERGE_MMAP, m->time);

	if (!x)
		return;
	x->u.mmap = *m;
	x->stack = malloc(n);
	if (!x->stack) {
		mg->err = -ENOMEM;
		mg->n--;
		return;
	}
	memcpy(x->stack, m->path, n);
	x->u.mmap.path = (const char *)x->stack;
}

static void on_task(void *arg, const struct smp_task *k)
{
	struct smp_merge *m = arg;
	struct merge_entry *x = add(m, MERGE_TASK, k->time);

	if (!x)
		return;
	x->u.task = *k;
	keep_stack(m, x, &x->u.task.stack, &x->u.task.stack_size);
}

int smp_merge_new(struct smp_merge **out)
{
	struct smp_merge *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->sink = (struct smp_sink){ .sample = on_sample,
				     .lost = on_lost,
				     .context_switch = on_switch,
				     .arg = m,
				     .block = on_block,
				     .wakeup = on_wakeup,
				     .comm = on_comm,
				     .mmap = on_mmap,
				     .task = on_task };
	*out = m;
	return 0;
}

const struct smp_sink *smp_merge_sink(struct smp_merge *m)
{
	return &m->sink;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct merge_entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void dispatch(const struct merge_entry *x, const struct smp_sink *sink)
{
	switch (x->kind) {
	case MERGE_SAMPLE:
		if (sink->sample)
			sink->sample(sink->arg, &x->u.sample);
		break;
	case MERGE_LOST:
		if (sink->lost)
			sink->lost(sink->arg, x->u.lost.tid, x->u.lost.count);
		break;
	case MERGE_SWITCH:
		if (sink->context_switch)
			sink->context_switch(sink->arg, &x->u.sw);
		break;
	case MERGE_BLOCK:
		if (sink->block)
			sink->block(sink->arg, &x->u.block);
		break;
	case MERGE_WAKEUP:
		if (sink->wakeup)
			sink->wakeup(sink->arg, &x->u.wakeup);
		break;
	case MERGE_COMM:
		if (sink->comm)
			sink->comm(sink->arg, x->u.comm.pid, x->u.comm.tid,
				   x->u.comm.has_name ? x->u.comm.name : NULL, x->u.comm.exec, x->time);
		break;
	case MERGE_MMAP:
		if (sink->mmap)
			sink->mmap(sink->arg, &x->u.mmap);
		break;
	case MERGE_TASK:
		if (sink->task)
			sink->task(sink->arg, &x->u.task);
		break;
	}
}

int smp_merge_flush(struct smp_merge *m, uint64_t horizon, const struct smp_sink *sink)
{
	size_t k = 0, i;
	int err = m->err;

	m->err = 0;
	if (!m->n)
		return err;
	qsort(m->e, m->n, sizeof(*m->e), entry_cmp);
	for (i = 0; i < m->n && m->e[i].time <= horizon; i++) {
		dispatch(&m->e[i], sink);
		free(m->e[i].stack);
	}
	/* Those after the horizon wait, in order, for the next flush. */
	for (; i < m->n; i++)
		m->e[k++] = m->e[i];
	m->n = k;
	return err;
}

void smp_merge_free(struct smp_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].stack);
	free(m->e);
	free(m);
}
