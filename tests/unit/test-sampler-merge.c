/*
 * smp_merge: events of several rings handed on in time order, up to a
 * horizon; the later ones wait; stacks are copies.
 */
#include "sampler/sampler.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

#define MAXSEEN 32

struct seen {
	char kind[MAXSEEN];
	uint64_t time[MAXSEEN];
	unsigned n;
	uint8_t stack0;
	const uint8_t *stack_ptr;
};

static void note(struct seen *s, char kind, uint64_t time)
{
	if (s->n < MAXSEEN) {
		s->kind[s->n] = kind;
		s->time[s->n] = time;
	}
	s->n++;
}

static void on_sample(void *arg, const struct smp_sample *x)
{
	struct seen *s = arg;

	note(s, 's', x->time);
	s->stack_ptr = x->stack;
	s->stack0 = x->stack && x->stack_size ? x->stack[0] : 0;
}

static void on_switch(void *arg, const struct smp_switch *sw)
{
	note(arg, sw->out ? 'o' : 'i', sw->time);
}

static void on_lost(void *arg, pid_t tid, uint64_t count)
{
	(void)tid;
	note(arg, 'l', count);
}

static void on_comm(void *arg, pid_t pid, pid_t tid, const char *name, bool exec, uint64_t time)
{
	(void)pid;
	(void)tid;
	(void)name;
	note(arg, exec ? 'x' : 'c', time);
}

static char mmap_path[32];

static void on_mmap(void *arg, const struct smp_mmap *m)
{
	note(arg, 'm', m->time);
	snprintf(mmap_path, sizeof(mmap_path), "%s", m->path);
}

/* An exec's name and the mappings in time order with the samples (the old
 * program's samples before the exec, the new one's mappings after it); a
 * rename in its place too (after the new thread's fork record, which
 * another CPU's ring may hold); a mapping's path is a copy. */
static void test_exec_and_mappings(void)
{
	struct smp_merge *m = NULL;
	struct seen s = { 0 };
	struct smp_sink out = { .sample = on_sample, .comm = on_comm, .mmap = on_mmap, .arg = &s };
	char path[32] = "/bin/true";

	CHECK_EQ_INT(smp_merge_new(&m), 0);
	if (!m)
		return;
	const struct smp_sink *in = smp_merge_sink(m);
	/* CPU 1's ring: the exec and its mappings; CPU 0's: samples
	 * around them and a rename. */
	in->comm(in->arg, 5, 5, "true", true, 20);
	in->mmap(in->arg, &(struct smp_mmap){ .pid = 5, .tid = 5, .time = 21, .path = path });
	memset(path, 0, sizeof(path)); /* the ring's space, reused */
	in->sample(in->arg, &(struct smp_sample){ .tid = 5, .time = 19 });
	in->sample(in->arg, &(struct smp_sample){ .tid = 5, .time = 22 });
	in->comm(in->arg, 5, 6, "worker", false, 23);
	CHECK_EQ_INT(smp_merge_flush(m, UINT64_MAX, &out), 0);
	CHECK_EQ_INT(s.n, 5);
	CHECK(!memcmp(s.kind, "sxmsc", 5));
	CHECK(!strcmp(mmap_path, "/bin/true"));
	/* Freed with a mapping kept: its path freed too (ASan). */
	in->mmap(in->arg, &(struct smp_mmap){ .pid = 5, .tid = 5, .time = 30, .path = "/x" });
	smp_merge_free(m);
}

int main(void)
{
	struct smp_merge *m = NULL;
	struct seen s = { 0 };
	struct smp_sink out = { .sample = on_sample, .lost = on_lost, .context_switch = on_switch, .arg = &s };
	uint8_t stack[64];

	CHECK_EQ_INT(smp_merge_new(&m), 0);
	const struct smp_sink *in = smp_merge_sink(m);
	/* Ring of CPU 0 first: the thread switched in there at 9 after it
	 * switched out on CPU 1 at 5; CPU 0 also sampled it at 3 and has a
	 * record after the horizon (12). */
	memset(stack, 0xab, sizeof(stack));
	in->sample(in->arg, &(struct smp_sample){ .tid = 7, .time = 3, .stack = stack, .stack_size = sizeof(stack) });
	in->context_switch(in->arg, &(struct smp_switch){ .tid = 7, .time = 9, .out = false });
	in->context_switch(in->arg, &(struct smp_switch){ .tid = 7, .time = 12, .out = true });
	in->lost(in->arg, 7, 2);
	/* Ring of CPU 1. */
	in->context_switch(in->arg, &(struct smp_switch){ .tid = 7, .time = 5, .out = true });
	in->context_switch(in->arg, &(struct smp_switch){ .tid = 8, .time = 9, .out = false });
	memset(stack, 0, sizeof(stack)); /* the ring's space, reused */
	CHECK_EQ_INT(smp_merge_flush(m, 10, &out), 0);
	/* The lost count (no time) first, then by time, ties in arrival
	 * order; 12 waits. */
	CHECK_EQ_INT(s.n, 5);
	CHECK(!memcmp(s.kind, "lsoii", 5));
	CHECK_EQ_INT(s.time[1], 3);
	CHECK_EQ_INT(s.time[2], 5);
	CHECK_EQ_INT(s.time[3], 9);
	CHECK_EQ_INT(s.time[4], 9);
	CHECK_EQ_INT(s.stack0, 0xab);
	CHECK(s.stack_ptr != stack);
	/* The next round: 11 read after the wait for 12, still before it. */
	s.n = 0;
	in->context_switch(in->arg, &(struct smp_switch){ .tid = 7, .time = 11, .out = false });
	CHECK_EQ_INT(smp_merge_flush(m, UINT64_MAX, &out), 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK(!memcmp(s.kind, "io", 2));
	CHECK_EQ_INT(s.time[0], 11);
	CHECK_EQ_INT(s.time[1], 12);
	/* Nothing kept: a flush hands on nothing. */
	s.n = 0;
	CHECK_EQ_INT(smp_merge_flush(m, UINT64_MAX, &out), 0);
	CHECK_EQ_INT(s.n, 0);
	/* Freed with events still kept (an error path): no leak under ASan. */
	in->sample(in->arg, &(struct smp_sample){ .tid = 7, .time = 30, .stack = stack, .stack_size = 8 });
	smp_merge_free(m);
	test_exec_and_mappings();
	return tap_done();
}
