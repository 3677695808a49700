/*
 * The sampler: the record parser fed synthetic records (every field, each
 * record type, truncation at every length, a ring that wraps, corrupt
 * framing), then real task-clock sampling of a child that spins for 300 ms of
 * CPU time, with the default ring and with tiny rings whose records wrap.
 */
#include "sampler/sampler.h"

#include <linux/perf_event.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "sampler/sampler-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"
#include "tests/unit/perf-records.h"

#define CANARY 0x5053555053555053ULL

/* ---- synthetic records ------------------------------------------------ */

struct got {
	int samples, lost_calls, switches, unknown;
	struct smp_sample s; /* the last sample (pointers copied out) */
	uint8_t stack[64];
	uint64_t lost;
	pid_t lost_tid;
	struct smp_switch sw;
	int comms, mmaps;
	pid_t comm_pid, comm_tid;
	char comm[16];
	bool comm_exec;
	uint64_t comm_time;
	struct smp_mmap mm; /* the last mapping (path copied out) */
	char mm_path[64];
};

static void got_comm(void *arg, pid_t pid, pid_t tid, const char *name, bool exec, uint64_t time)
{
	struct got *g = arg;

	g->comms++;
	g->comm_pid = pid;
	g->comm_tid = tid;
	snprintf(g->comm, sizeof(g->comm), "%s", name ? name : "");
	g->comm_exec = exec;
	g->comm_time = time;
}

static void got_mmap(void *arg, const struct smp_mmap *m)
{
	struct got *g = arg;

	g->mmaps++;
	g->mm = *m;
	snprintf(g->mm_path, sizeof(g->mm_path), "%s", m->path);
	g->mm.path = g->mm_path;
}

static void got_sample(void *arg, const struct smp_sample *s)
{
	struct got *g = arg;

	g->samples++;
	g->s = *s;
	if (s->stack && s->stack_size)
		memcpy(g->stack, s->stack,
		       s->stack_size < sizeof(g->stack) ? s->stack_size
							: sizeof(g->stack));
}

static void got_lost(void *arg, pid_t tid, uint64_t count)
{
	struct got *g = arg;

	g->lost_calls++;
	g->lost += count;
	g->lost_tid = tid;
}

static void got_switch(void *arg, const struct smp_switch *sw)
{
	struct got *g = arg;

	g->switches++;
	g->sw = *sw;
}

/* sample_id: tid, time, cpu (3, and the reserved half set: ignored). */
static void put_trailer(struct buf *b, uint32_t pid, uint32_t tid, uint64_t time)
{
	put64(b, (uint64_t)tid << 32 | pid);
	put64(b, time);
	put64(b, (uint64_t)0xffffffff << 32 | 3);
}

/* A sample as a STACK event writes it: stack_bytes reserved, dyn valid. */
static void make_sample(struct buf *b, uint16_t misc, bool regs,
			size_t stack_bytes, uint64_t dyn, uint64_t time)
{
	put_hdr(b, PERF_RECORD_SAMPLE, misc);
	put64(b, 0x401234);                    /* ip */
	put64(b, (uint64_t)4321 << 32 | 1234); /* pid 1234, tid 4321 */
	put64(b, time);
	put64(b, (uint64_t)0xffffffff << 32 | 1); /* cpu 1, reserved */
	put64(b, 1000000);                        /* period */
	put64(b, time * 1000);                    /* read: the count */
	if (regs) {
		put64(b, PERF_SAMPLE_REGS_ABI_64);
		for (int i = 0; i < SMP_NREGS; i++)
			put64(b, 0x1000 + (uint64_t)i);
		put64(b, stack_bytes);
		for (size_t i = 0; i < stack_bytes; i++)
			b->b[b->n++] = (uint8_t)(i * 7 + 1);
		if (stack_bytes)
			put64(b, dyn);
	} else {
		put64(b, PERF_SAMPLE_REGS_ABI_NONE);
		put64(b, 0); /* no stack, no dyn_size */
	}
	fix_size(b);
}

/* Every shorter length, and every smaller header size, must be refused. */
static void check_truncations(const struct smp_event *ev, const struct buf *full)
{
	struct got g;
	struct smp_sink sink = { .sample = got_sample, .lost = got_lost, .context_switch = got_switch, .arg = &g };
	int refused = 0, tries = 0;

	memset(&g, 0, sizeof(g));
	for (size_t len = 0; len < full->n; len++) {
		struct buf b = *full;
		uint16_t sz = (uint16_t)len;

		tries++;
		refused += parse_exact(ev, &b, len, &sink) == -EINVAL;
		/* The header claims fewer bytes than the fields need. */
		if (len >= sizeof(struct perf_event_header)) {
			memcpy(b.b + 6, &sz, 2);
			tries++;
			refused += parse_exact(ev, &b, len, &sink) == -EINVAL;
		}
	}
	CHECK_EQ_INT(refused, tries);
	CHECK_EQ_INT(g.samples + g.lost_calls + g.switches, 0);
}

static void test_synthetic(void)
{
	struct smp_event *ev = NULL, *ev_nostack = NULL;
	struct got g;
	struct smp_sink sink = { .sample = got_sample, .lost = got_lost, .context_switch = got_switch, .arg = &g };
	struct buf b;

	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_STACK | SMP_EVENT_SWITCHES,
					     &ev),
		     0);
	CHECK_EQ_INT(smp_event_new_unchecked("cpu-clock", 0, 0,
					     SMP_EVENT_SWITCHES, &ev_nostack),
		     0);
	if (!ev || !ev_nostack)
		return;
	CHECK(smp_event_is_clock(ev));
	CHECK_EQ_INT(smp_event_period(ev), 1000000);
	CHECK(!strcmp(smp_event_name(ev), "task-clock"));
	CHECK(ev->attr.sample_regs_user == SMP_REGS_MASK);
	CHECK_EQ_INT(__builtin_popcountll(SMP_REGS_MASK), SMP_NREGS);
	CHECK_EQ_INT(ev->attr.sample_stack_user, SMP_STACK_SNAPSHOT);
	CHECK(ev->attr.use_clockid && ev->attr.clockid == CLOCK_MONOTONIC);
	CHECK(ev->attr.context_switch && ev->attr.sample_id_all);
	CHECK(!ev_nostack->attr.sample_regs_user);

	/* A user sample with regs and a stack whose valid part is smaller
	 * than what the kernel reserved. */
	memset(&g, 0, sizeof(g));
	make_sample(&b, PERF_RECORD_MISC_USER, true, 256, 40, 777);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.samples, 1);
	CHECK_EQ_INT(g.s.pid, 1234);
	CHECK_EQ_INT(g.s.tid, 4321);
	CHECK_EQ_INT(g.s.ip, 0x401234);
	CHECK_EQ_INT(g.s.time, 777);
	CHECK_EQ_INT(g.s.cpu, 1);
	CHECK_EQ_INT(g.s.period, 1000000);
	CHECK(g.s.user);
	CHECK(g.s.have_regs);
	CHECK_EQ_INT(g.s.regs[SMP_REG_AX], 0x1000);
	CHECK_EQ_INT(g.s.regs[SMP_REG_SP], 0x1000 + 7);
	CHECK_EQ_INT(g.s.regs[SMP_REG_IP], 0x1000 + 8);
	CHECK_EQ_INT(g.s.regs[SMP_REG_R15], 0x1000 + 17);
	CHECK_EQ_INT(g.s.stack_size, 40);
	CHECK_EQ_INT(g.stack[0], 1);
	CHECK_EQ_INT(g.stack[39], (uint8_t)(39 * 7 + 1));
	check_truncations(ev, &b);

	/* The same record, with an 8 KiB snapshot, a dyn_size past the
	 * snapshot: refused, never read. */
	make_sample(&b, PERF_RECORD_MISC_USER, true, 64, 65, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	make_sample(&b, PERF_RECORD_MISC_USER, true, SMP_STACK_SNAPSHOT,
		    SMP_STACK_SNAPSHOT, 1);
	memset(&g, 0, sizeof(g));
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.s.stack_size, SMP_STACK_SNAPSHOT);

	/* A sample in the kernel of a kernel thread: no user regs, no stack. */
	memset(&g, 0, sizeof(g));
	make_sample(&b, PERF_RECORD_MISC_KERNEL, false, 0, 0, 5);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.samples, 1);
	CHECK(!g.s.user);
	CHECK(!g.s.have_regs);
	CHECK_EQ_INT(g.s.stack_size, 0);
	CHECK(g.s.stack == NULL);
	check_truncations(ev, &b);

	/* Weights: the count since the previous sample; after a loss (or
	 * with no previous count) the period set at switch_time. */
	{
		struct smp_parse_ctx ctx = { .cur_period = 2000000,
					     .prev_period = 1500000,
					     .switch_time = 1000 };
		struct buf lost;

		put_hdr(&lost, PERF_RECORD_LOST_SAMPLES, 0);
		put64(&lost, 3);
		put_trailer(&lost, 1, 1, 1);
		fix_size(&lost);

		memset(&g, 0, sizeof(g));
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 999);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 1500000);
		CHECK(ctx.count_valid && ctx.last_count == 999000);
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 2300);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 2300000 - 999000);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, lost.b, lost.n, &sink, &ctx),
			     0);
		CHECK(!ctx.count_valid);
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 9000);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 2000000);
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 9500);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 500000);
		/* A refused record leaves the state alone. */
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 17, 9900);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx),
			     -EINVAL);
		CHECK(ctx.last_count == 9500000);
	}

	/* A CPU's ring: its count runs on while the CPU idles (those samples
	 * are dropped), so every weight is the period in effect. */
	{
		struct smp_parse_ctx ctx = { .cur_period = 1000000,
					     .prev_period = 1100000,
					     .switch_time = 1000,
					     .count_valid = true,
					     .by_period = true };

		memset(&g, 0, sizeof(g));
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 999);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 1100000);
		make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 9000);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		CHECK_EQ_INT(g.s.period, 1000000);
	}

	/* PERF_RECORD_LOST { id, lost, sample_id } */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_LOST, 0);
	put64(&b, 99);
	put64(&b, 17);
	put_trailer(&b, 10, 11, 12);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.lost_calls, 1);
	CHECK_EQ_INT(g.lost, 17);
	CHECK_EQ_INT(g.lost_tid, 11);
	check_truncations(ev, &b);

	/* PERF_RECORD_LOST_SAMPLES { lost, sample_id } */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_LOST_SAMPLES, 0);
	put64(&b, 5);
	put_trailer(&b, 10, 13, 12);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.lost, 5);
	CHECK_EQ_INT(g.lost_tid, 13);
	check_truncations(ev, &b);

	/* PERF_RECORD_SWITCH: in, out, out while runnable. */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_SWITCH, 0);
	put_trailer(&b, 20, 21, 22);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.switches, 1);
	CHECK(!g.sw.out && !g.sw.preempt);
	CHECK_EQ_INT(g.sw.pid, 20);
	CHECK_EQ_INT(g.sw.tid, 21);
	CHECK_EQ_INT(g.sw.time, 22);
	CHECK_EQ_INT(g.sw.cpu, 3);
	check_truncations(ev, &b);
	put_hdr(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	put_trailer(&b, 20, 21, 23);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK(g.sw.out && !g.sw.preempt);
	CHECK_EQ_INT(g.sw.time, 23);
	put_hdr(&b, PERF_RECORD_SWITCH,
		PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	put_trailer(&b, 20, 21, 24);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK(g.sw.out && g.sw.preempt);
	CHECK_EQ_INT(g.switches, 3);

	/* PERF_RECORD_COMM of an exec: its name and its time. */
	{
		struct smp_sink cs = { .comm = got_comm, .mmap = got_mmap, .arg = &g };

		memset(&g, 0, sizeof(g));
		put_hdr(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
		put32(&b, 30);
		put32(&b, 31);
		memcpy(b.b + b.n, "true\0\0\0\0", 8);
		b.n += 8;
		put_trailer(&b, 30, 31, 40);
		fix_size(&b);
		CHECK_EQ_INT(parse_exact(ev, &b, b.n, &cs), 0);
		CHECK_EQ_INT(g.comms, 1);
		CHECK(g.comm_exec && g.comm_pid == 30 && g.comm_tid == 31);
		CHECK(!strcmp(g.comm, "true"));
		CHECK_EQ_INT(g.comm_time, 40);

		/* PERF_RECORD_MMAP2 { pid, tid, addr, len, pgoff, maj, min,
		 * ino, ino_generation, prot, flags, filename, sample_id }. */
		static const char name[] = "/usr/bin/a b (deleted)"; /* 23 bytes with its NUL */
		size_t full;

		put_hdr(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
		put32(&b, 30);
		put32(&b, 31);
		put64(&b, 0x7f0000001000);
		put64(&b, 0x3000);
		put64(&b, 0x1000);
		put32(&b, 8);
		put32(&b, 3);
		put64(&b, 123456);
		put64(&b, 0);
		put32(&b, 5); /* PROT_READ | PROT_EXEC */
		put32(&b, 2); /* MAP_PRIVATE */
		memset(b.b + b.n, 0, 24);
		memcpy(b.b + b.n, name, sizeof(name));
		b.n += 24;
		put_trailer(&b, 30, 31, 41);
		fix_size(&b);
		full = b.n;
		CHECK_EQ_INT(parse_exact(ev, &b, full, &cs), 0);
		CHECK_EQ_INT(g.mmaps, 1);
		CHECK(g.mm.pid == 30 && g.mm.tid == 31);
		CHECK(g.mm.start == 0x7f0000001000 && g.mm.len == 0x3000 && g.mm.pgoff == 0x1000);
		CHECK(g.mm.dev_major == 8 && g.mm.dev_minor == 3 && g.mm.inode == 123456);
		CHECK(g.mm.prot == 5 && g.mm.flags == 2);
		CHECK_EQ_INT(g.mm.time, 41);
		CHECK(!strcmp(g.mm_path, name));
		/* Too short for its fields and its trailer: refused, unread
		 * past its end (ASan). */
		for (size_t len = 0; len < sizeof(struct perf_event_header) + 64 + 24; len++) {
			struct buf t = b;
			uint16_t sz = (uint16_t)len;

			memcpy(t.b + 6, &sz, 2);
			if (len >= sizeof(struct perf_event_header))
				CHECK_EQ_INT(parse_exact(ev, &t, len, &cs), -EINVAL);
		}
		CHECK_EQ_INT(g.mmaps, 1);
		/* A build-id in place of the device and inode: never asked
		 * for, skipped. */
		memcpy(b.b + 2, &(uint16_t){ PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID }, 2);
		CHECK_EQ_INT(parse_exact(ev, &b, full, &cs), 0);
		CHECK_EQ_INT(g.mmaps, 1);
	}

	/* Unknown types (and types psup does not ask for) are skipped. */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, 0x7777, 0);
	put64(&b, 1);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	put_hdr(&b, PERF_RECORD_THROTTLE, 0);
	put64(&b, 1);
	put64(&b, 2);
	put64(&b, 3);
	put_trailer(&b, 1, 2, 3);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.samples + g.lost_calls + g.switches, 0);

	/* A NULL sink and NULL callbacks are fine. */
	make_sample(&b, PERF_RECORD_MISC_USER, true, 16, 16, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, NULL), 0);
	{
		struct smp_sink empty = { 0 };

		CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &empty), 0);
	}
	/* A header shorter than itself. */
	put_hdr(&b, PERF_RECORD_SAMPLE, 0);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, 8, &sink), -EINVAL);

	smp_event_free(ev);
	smp_event_free(ev_nostack);
}

/* ---- threads told by records (SMP_EVENT_TASKS) ------------------------- */

struct got_tasks {
	int n;
	struct smp_task k[4];
	uint8_t stack[64];
};

static void got_task(void *arg, const struct smp_task *k)
{
	struct got_tasks *g = arg;

	if (g->n < 4)
		g->k[g->n] = *k;
	if (k->stack && k->stack_size)
		memcpy(g->stack, k->stack, k->stack_size < sizeof(g->stack) ? k->stack_size : sizeof(g->stack));
	g->n++;
}

/* A fork or exit record: { pid, ppid, tid, ptid, time; sample_id }. */
static void make_task(struct buf *b, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		      uint64_t time)
{
	put_hdr(b, type, 0);
	put32(b, pid);
	put32(b, ppid);
	put32(b, tid);
	put32(b, ptid);
	put64(b, 999); /* the kernel's local clock: not the one asked for */
	put_trailer(b, ptid, ptid, time);
	fix_size(b);
}

static void test_synthetic_tasks(void)
{
	struct smp_event *ev = NULL, *evid = NULL;
	struct got_tasks g;
	struct smp_sink sink = { .task = got_task, .arg = &g };
	struct buf b;

	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 0,
					     SMP_EVENT_STACK | SMP_EVENT_SWITCHES | SMP_EVENT_TASKS, &ev),
		     0);
	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 0,
					     SMP_EVENT_STACK | SMP_EVENT_SWITCHES | SMP_EVENT_BLOCKS |
						     SMP_EVENT_TASKS,
					     &evid),
		     0);
	if (!ev || !evid)
		return;
	/* A new thread (its process's id is its creator's), then its end;
	 * the time is the trailer's. */
	memset(&g, 0, sizeof(g));
	make_task(&b, PERF_RECORD_FORK, 30, 30, 32, 31, 50);
	CHECK_EQ_INT(parse_exact(ev, &b, b.n, &sink), 0);
	make_task(&b, PERF_RECORD_EXIT, 30, 30, 32, 32, 60);
	CHECK_EQ_INT(parse_exact(ev, &b, b.n, &sink), 0);
	CHECK_EQ_INT(g.n, 2);
	CHECK(g.k[0].kind == SMP_TASK_FORK && g.k[0].pid == 30 && g.k[0].ppid == 30 && g.k[0].tid == 32 &&
	      g.k[0].ptid == 31 && g.k[0].time == 50);
	CHECK(g.k[1].kind == SMP_TASK_EXIT && g.k[1].tid == 32 && g.k[1].time == 60);
	/* Too short for its fields and trailer: refused. */
	make_task(&b, PERF_RECORD_FORK, 30, 30, 32, 31, 50);
	for (size_t len = sizeof(struct perf_event_header); len < b.n; len++) {
		struct buf t = b;
		uint16_t sz = (uint16_t)len;

		memcpy(t.b + 6, &sz, 2);
		CHECK_EQ_INT(parse_exact(ev, &t, len, &sink), -EINVAL);
	}
	CHECK_EQ_INT(g.n, 2);

	/* The creator's sample at its clone: its id, tid, time, cpu, the
	 * tracepoint's raw data (child_pid at 20), its regs and stack. */
	CHECK(evid->fork_attr.sample_type & PERF_SAMPLE_RAW);
	CHECK_EQ_INT(evid->fork_attr.sample_stack_user, SMP_CREATOR_STACK);
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	put64(&b, SMP_SYNTH_ID_FORK);
	put64(&b, (uint64_t)31 << 32 | 30);
	put64(&b, 55);
	put64(&b, 1);
	put32(&b, 28); /* raw: 28 bytes, the record stays 8-aligned */
	memset(b.b + b.n, 0, 28);
	memcpy(b.b + b.n + 20, &(uint32_t){ 32 }, 4);
	b.n += 28;
	put64(&b, PERF_SAMPLE_REGS_ABI_64);
	for (int i = 0; i < SMP_NREGS; i++)
		put64(&b, 0x2000 + (uint64_t)i);
	put64(&b, 16);
	for (int i = 0; i < 16; i++)
		b.b[b.n++] = (uint8_t)(i + 1);
	put64(&b, 16);
	fix_size(&b);
	CHECK_EQ_INT(parse_exact(evid, &b, b.n, &sink), 0);
	CHECK_EQ_INT(g.n, 1);
	CHECK(g.k[0].kind == SMP_TASK_CREATOR && g.k[0].pid == 30 && g.k[0].tid == 31 && g.k[0].child == 32 &&
	      g.k[0].time == 55);
	CHECK(g.k[0].have_regs && g.k[0].regs[SMP_REG_AX] == 0x2000 && g.k[0].stack_size == 16);
	CHECK(g.stack[0] == 1 && g.stack[15] == 16);
	/* Its raw data shorter than the field: refused. */
	memset(b.b + sizeof(struct perf_event_header) + 32, 0, 0);
	memcpy(b.b + sizeof(struct perf_event_header) + 32, &(uint32_t){ 20 }, 4);
	CHECK_EQ_INT(parse_exact(evid, &b, b.n, &sink), -EINVAL);
	CHECK_EQ_INT(g.n, 1);

	/* Through a merge, in time order with the stack kept. */
	{
		struct smp_merge *m = NULL;

		CHECK_EQ_INT(smp_merge_new(&m), 0);
		if (m) {
			struct buf f;

			memcpy(b.b + sizeof(struct perf_event_header) + 32, &(uint32_t){ 28 }, 4);
			make_task(&f, PERF_RECORD_FORK, 30, 30, 32, 31, 50);
			CHECK_EQ_INT(smp_parse_record(evid, b.b, b.n, smp_merge_sink(m)), 0);
			CHECK_EQ_INT(smp_parse_record(ev, f.b, f.n, smp_merge_sink(m)), 0);
			memset(&g, 0, sizeof(g));
			CHECK_EQ_INT(smp_merge_flush(m, UINT64_MAX, &sink), 0);
			CHECK_EQ_INT(g.n, 2);
			CHECK(g.k[0].kind == SMP_TASK_FORK && g.k[1].kind == SMP_TASK_CREATOR);
			CHECK(g.stack[0] == 1 && g.stack[15] == 16);
			smp_merge_free(m);
		}
	}
	smp_event_free(ev);
	smp_event_free(evid);
}

/* ---- a synthetic ring --------------------------------------------------- */

#define RING 512

static void ring_put(uint8_t *data, uint64_t *head, const struct buf *b)
{
	for (size_t i = 0; i < b->n; i++)
		data[(*head + i) & (RING - 1)] = b->b[i];
	*head += b->n;
}

struct seq {
	int n;
	uint64_t times[64];
};

static void seq_sample(void *arg, const struct smp_sample *s)
{
	struct seq *q = arg;

	if (q->n < 64)
		q->times[q->n] = s->time;
	q->n++;
}

static void seq_switch(void *arg, const struct smp_switch *sw)
{
	struct seq *q = arg;

	if (q->n < 64)
		q->times[q->n] = sw->time;
	q->n++;
}

static void test_ring_walk(void)
{
	struct smp_event *ev = NULL;
	uint8_t data[RING], bounce[RING];
	struct smp_thread_stats st;
	struct smp_parse_ctx ctx = { .stats = &st };
	struct seq q;
	struct smp_sink sink = { .sample = seq_sample,
				 .context_switch = seq_switch,
				 .arg = &q };
	struct buf b;
	uint64_t head, tail;
	int n;

	CHECK_EQ_INT(smp_event_new_unchecked("cpu-clock", 0, 0,
					     SMP_EVENT_SWITCHES, &ev),
		     0);
	if (!ev)
		return;

	/* Start near the end (at a position past 2^32 too) so records wrap;
	 * 48-byte samples and 24-byte switches alternate. */
	memset(data, 0xee, sizeof(data));
	memset(&q, 0, sizeof(q));
	memset(&st, 0, sizeof(st));
	head = tail = (1ULL << 32) + RING - 40;
	for (int i = 0; i < 6; i++) {
		if (i % 2 == 0) {
			put_hdr(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
			put64(&b, 0x400000 + (uint64_t)i);
			put64(&b, 1);
			put64(&b, 100 + (uint64_t)i);
			put64(&b, 0); /* cpu */
			put64(&b, 1000000);
			put64(&b, 5000);
		} else {
			put_hdr(&b, PERF_RECORD_SWITCH, 0);
			put_trailer(&b, 1, 1, 100 + (uint64_t)i);
		}
		fix_size(&b);
		ring_put(data, &head, &b);
	}
	n = smp_ring_walk(ev, data, RING, &tail, head, bounce, RING, &sink, &ctx);
	CHECK_EQ_INT(n, 6);
	CHECK(tail == head);
	CHECK_EQ_INT(q.n, 6);
	for (int i = 0; i < 6 && i < q.n; i++)
		CHECK_EQ_INT(q.times[i], 100 + i);
	CHECK(st.wrapped >= 1);
	CHECK_EQ_INT(st.samples, 3);
	CHECK_EQ_INT(st.switches, 3);
	CHECK_EQ_INT(st.bad, 0);

	/* Nothing to read. */
	CHECK_EQ_INT(smp_ring_walk(ev, data, RING, &tail, head, bounce, RING,
				   &sink, &ctx),
		     0);

	/* A framed but malformed record is skipped, the next one read. */
	memset(&st, 0, sizeof(st));
	q.n = 0;
	put_hdr(&b, PERF_RECORD_SAMPLE, 0);
	put64(&b, 1);
	fix_size(&b); /* 16 bytes: no tid, time, period, count */
	ring_put(data, &head, &b);
	put_hdr(&b, PERF_RECORD_SWITCH, 0);
	put_trailer(&b, 1, 1, 555);
	fix_size(&b);
	ring_put(data, &head, &b);
	n = smp_ring_walk(ev, data, RING, &tail, head, bounce, RING, &sink, &ctx);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(st.bad, 1);
	CHECK_EQ_INT(q.n, 1);
	CHECK_EQ_INT(q.times[0], 555);

	/* Corrupt framing stops the walk at the bad record. */
	{
		uint64_t t0 = tail;
		static const uint16_t bad_sizes[] = { 0, 4, RING + 8, 64 };

		for (size_t i = 0; i < PSUP_ARRAY_SIZE(bad_sizes); i++) {
			uint64_t h = t0;

			put_hdr(&b, PERF_RECORD_SWITCH, 0);
			put_trailer(&b, 1, 1, 1);
			fix_size(&b);
			memcpy(b.b + 6, &bad_sizes[i], 2);
			b.n = 24;
			ring_put(data, &h, &b);
			tail = t0;
			/* size 64 > the 24 bytes head says were written */
			CHECK_EQ_INT(smp_ring_walk(ev, data, RING, &tail, h,
						   bounce, RING, &sink, &ctx),
				     -EIO);
			CHECK(tail == t0);
		}
		/* head further than a ring ahead of tail */
		tail = t0;
		CHECK_EQ_INT(smp_ring_walk(ev, data, RING, &tail, t0 + RING + 8,
					   bounce, RING, &sink, &ctx),
			     -EIO);
		/* a partial header */
		CHECK_EQ_INT(smp_ring_walk(ev, data, RING, &tail, t0 + 4,
					   bounce, RING, &sink, &ctx),
			     -EIO);
	}
	smp_event_free(ev);
}

/* ---- event names -------------------------------------------------------- */

static void test_event_names(void)
{
	struct smp_event *ev = NULL;
	const char *why = NULL;
	int ret;

	ret = smp_event_new("no-such-event-xyz", 0, 10, 0, &ev, &why);
	CHECK_EQ_INT(ret, -ENOENT);
	CHECK(ev == NULL);
	CHECK(why && !strcmp(why, "unknown event 'no-such-event-xyz'; try "
				  "task-clock, cpu-clock, or a libpfm4 name (see "
				  "`showevtinfo`)"));
	ret = smp_event_new("", 0, 10, 0, &ev, &why);
	CHECK(ret < 0 && why);
	ret = smp_event_new("task-clock", 0, 100, 0, &ev, &why);
	CHECK(ret == -EINVAL && why);

	why = NULL;
	ret = smp_event_new("cycles", 0, 10, SMP_EVENT_STACK, &ev, &why);
	if (smp_have_hw_pmu()) {
		CHECK_EQ_INT(ret, 0);
		smp_event_free(ev);
	} else {
		CHECK(ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV);
		CHECK(why && !strcmp(why, "cycles: this machine has no hardware "
					  "PMU (a virtual machine?); use task-clock "
					  "or cpu-clock"));
		printf("# cycles refused: %s\n", why ? why : "(null)");
	}
	ev = NULL;

	/* libpfm4 is loaded on demand (it is installed wherever psup builds):
	 * its version, then its spelling of the clock, canonicalized. */
	CHECK(smp_pfm_version(NULL) > 0);
	ret = smp_event_new("PERF_COUNT_SW_TASK_CLOCK", 0, 0, 0, &ev, &why);
	if (ret == 0) {
		CHECK(!strcmp(smp_event_name(ev), "task-clock"));
		CHECK(smp_event_is_clock(ev));
		smp_event_free(ev);
	} else {
		printf("# PERF_COUNT_SW_TASK_CLOCK: %s\n", why);
	}
	/* A counting software event gets the prime default period. */
	ret = smp_event_new("page-faults", 0, 0, 0, &ev, &why);
	CHECK_EQ_INT(ret, 0);
	if (!ret) {
		CHECK(!smp_event_is_clock(ev));
		CHECK_EQ_INT(smp_event_period(ev), 1000003);
		smp_event_free(ev);
	}
	smp_event_free(NULL);

	CHECK(strstr(smp_open_strerror(-EMFILE), "ulimit -n") != NULL);
	/* Root is refused only by a policy, which the message names (issue 22). */
	if (geteuid() == 0)
		CHECK(strstr(smp_open_strerror(EACCES), "denied") != NULL &&
		      strstr(smp_open_strerror(EACCES), "run as root") == NULL);
	else
		CHECK(strstr(smp_open_strerror(EACCES), "perf_event_paranoid is") != NULL);
	CHECK(strstr(smp_open_strerror(-ENOENT), "task-clock") != NULL);
	CHECK(strstr(smp_open_strerror(-ESRCH), "gone") != NULL);
	CHECK(smp_open_strerror(-ENOEXEC) != NULL);
}

/* ---- a real child ------------------------------------------------------- */

extern char __executable_start[], etext[];

static uint64_t stack_lo, stack_hi;

static void find_stack(void)
{
	char *maps = NULL, *line;

	if (psup_read_file("/proc/self/maps", &maps, NULL))
		return;
	for (line = strtok(maps, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, "[stack]")) {
			sscanf(line, "%lx-%lx", (unsigned long *)&stack_lo,
			       (unsigned long *)&stack_hi);
			break;
		}
	}
	free(maps);
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t spin_result;

/* Mostly user-space work in this binary's text; the clock read (a syscall
 * for CPU-time clocks) is a small part of each round. */
/* The machine's steal time since boot, in ns (all CPUs; /proc/stat). A
 * clock event counts time the task was on its CPU by the clock, steal
 * included; the spinner's CPU time (thread_cpu_s()) leaves the steal out:
 * on this shared VM a CI run read 455 and 605 ms of task-clock weights for
 * 300 ms of CPU time. */
static uint64_t steal_ns(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	long hz = sysconf(_SC_CLK_TCK);

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		v[7] = 0;
	fclose(f);
	return hz > 0 ? v[7] * (1000000000ULL / (unsigned long long)hz) : 0;
}

static __attribute__((noinline)) void spin(double seconds)
{
	volatile uint64_t canary = CANARY;
	uint64_t x = 88172645463325252ULL;
	double end = thread_cpu_s() + seconds;

	while (thread_cpu_s() < end) {
		for (int i = 0; i < 200000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		spin_result = x;
	}
	spin_result = x + canary;
}

struct run {
	pid_t child;
	uint64_t t_begin, t_end, last_time;
	uint64_t period_min, period_max, base, weight;
	int samples, user, in_text, kernel_with_user_ip, bad_tid, bad_time, bad_cpu;
	int with_regs, sp_ok, stack_ok, canary;
	int switch_in, switch_out, other_tid_switch;
	uint64_t lost;
	uint64_t sink_ns;
};

static void run_sample(void *arg, const struct smp_sample *s)
{
	struct run *r = arg;
	uint64_t t0 = psup_now_ns();

	r->samples++;
	if (s->tid != r->child || s->pid != r->child)
		r->bad_tid++;
	if (s->time < r->t_begin || s->time > r->t_end ||
	    s->time < r->last_time)
		r->bad_time++;
	r->last_time = s->time;
	if (s->cpu < 0 || s->cpu >= 4096)
		r->bad_cpu++;
	r->weight += s->period;
	if (s->period < r->period_min)
		r->period_min = s->period;
	if (s->period > r->period_max)
		r->period_max = s->period;
	if (s->user) {
		r->user++;
		if (s->ip >= (uint64_t)(uintptr_t)__executable_start &&
		    s->ip < (uint64_t)(uintptr_t)etext)
			r->in_text++;
	} else if (s->have_regs && s->regs[SMP_REG_IP] < (1ULL << 47)) {
		r->kernel_with_user_ip++;
	}
	if (s->have_regs) {
		r->with_regs++;
		if (s->regs[SMP_REG_SP] >= stack_lo &&
		    s->regs[SMP_REG_SP] < stack_hi)
			r->sp_ok++;
		if (s->stack && s->stack_size > 0 &&
		    s->stack_size <= SMP_STACK_SNAPSHOT &&
		    s->stack_size <= stack_hi - s->regs[SMP_REG_SP])
			r->stack_ok++;
		if (s->stack) {
			uint64_t c = CANARY;

			if (memmem(s->stack, s->stack_size, &c, sizeof(c)))
				r->canary++;
		}
	}
	r->sink_ns += psup_now_ns() - t0;
}

static void run_lost(void *arg, pid_t tid, uint64_t count)
{
	struct run *r = arg;

	(void)tid;
	r->lost += count;
}

static void run_switch(void *arg, const struct smp_switch *sw)
{
	struct run *r = arg;

	if (sw->tid != r->child)
		r->other_tid_switch++;
	if (sw->out)
		r->switch_out++;
	else
		r->switch_in++;
}

/*
 * Forks a child that waits on a pipe, opens ev on it, lets it spin for
 * `seconds` of CPU and drains until it exits. Returns 0, or -errno of the
 * open (the child is then killed).
 */
/* A child that waits on a pipe, then spins for seconds: returned once it
 * sleeps there (events opened then see its wakeup as a switch-in), with the
 * pipe's write end in *go for spinner_go(). -errno on failure. */
static pid_t spinner_fork(double seconds, int *go)
{
	int pipefd[2];
	pid_t pid;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(2);
		spin(seconds);
		_exit(0);
	}
	close(pipefd[0]);
	*go = pipefd[1];
	fx_wait_sleeping(pid, 0);
	return pid;
}

static void spinner_go(int go)
{
	CHECK(write(go, "g", 1) == 1);
	close(go);
}

static int run_child(const struct smp_event *ev, unsigned ring_pages,
		     double seconds, int poll_ms, struct run *r,
		     struct smp_thread_stats *stats, uint64_t *drain_ns,
		     int *drain_errors)
{
	struct smp_sink sink = { .sample = run_sample, .lost = run_lost, .context_switch = run_switch, .arg = r };
	struct smp_thread *t = NULL;
	int go, status, err;
	uint64_t deadline;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	memset(stats, 0, sizeof(*stats));
	r->period_min = UINT64_MAX;
	r->base = smp_event_period(ev);
	*drain_ns = 0;
	*drain_errors = 0;
	pid = spinner_fork(seconds, &go);
	if (pid < 0)
		return pid;
	r->child = pid;
	r->t_begin = psup_now_ns();
	r->t_end = UINT64_MAX;
	err = smp_thread_open(ev, pid, ring_pages, &t);
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(go);
		return err;
	}
	spinner_go(go);
	/* A safety net against a child that never ends, not a measurement. */
	deadline = psup_now_ns() + 60ULL * 1000000000ULL;
	for (;;) {
		struct pollfd pfd = { .fd = smp_thread_fd(t), .events = POLLIN };
		uint64_t t0;
		int n;

		poll(&pfd, 1, poll_ms);
		t0 = psup_now_ns();
		n = smp_thread_drain(t, &sink);
		*drain_ns += psup_now_ns() - t0;
		if (n < 0)
			(*drain_errors)++;
		int reaped = fx_reap(pid, &status, deadline);
		if (reaped) {
			CHECK(reaped > 0 && "child finished");
			break;
		}
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	smp_thread_get_stats(t, stats);
	/* Records left after the last drain go through close. */
	smp_thread_close(t, &sink);
	return 0;
}

static void test_real(void)
{
	struct smp_event *ev = NULL, *ev_nostack = NULL;
	const char *why = NULL;
	struct smp_thread_stats st;
	struct smp_thread *t;
	uint64_t drain_ns;
	int drain_errors, ret, status;
	struct run r;

	ret = smp_event_new("task-clock", 0, 10,
			    SMP_EVENT_STACK | SMP_EVENT_SWITCHES, &ev, &why);
	if (ret == -EACCES || ret == -EPERM || ret == -ENOSYS) {
		printf("# skipping real sampling: %s\n", why);
		return;
	}
	CHECK_EQ_INT(ret, 0);
	if (ret)
		return;
	CHECK(smp_event_samples_kernel(ev) == !ev->attr.exclude_kernel);
	printf("# task-clock: %s\n", smp_event_samples_kernel(ev)
					     ? "user and kernel samples"
					     : "user samples only");
	find_stack();
	CHECK(stack_hi > stack_lo);

	/* Bad ring sizes, a thread that is gone. */
	CHECK_EQ_INT(smp_thread_open(ev, getpid(), 3, &t), -EINVAL);
	CHECK_EQ_INT(smp_thread_open(ev, getpid(), 2, &t), -EINVAL);
	{
		pid_t gone = fork();

		if (gone == 0)
			_exit(0);
		waitpid(gone, &status, 0);
		CHECK_EQ_INT(smp_thread_open(ev, gone, 0, &t), -ESRCH);
	}
	smp_thread_close(NULL, NULL);

	/* The default ring, drained every 20 ms at most. */
	uint64_t steal0 = steal_ns();
	ret = run_child(ev, 0, 0.3, 20, &r, &st, &drain_ns, &drain_errors);
	uint64_t stolen = steal_ns() - steal0;
	CHECK_EQ_INT(ret, 0);
	if (!ret) {
		printf("# default ring: %d samples (%d user, %d in text, %d "
		       "kernel), lost %llu, switches in %d out %d, period "
		       "%llu..%llu, %llu period changes\n",
		       r.samples, r.user, r.in_text, r.samples - r.user,
		       (unsigned long long)r.lost, r.switch_in, r.switch_out,
		       (unsigned long long)r.period_min,
		       (unsigned long long)r.period_max,
		       (unsigned long long)st.period_sets);
		if (r.samples)
			printf("# drain cost: %.0f ns per sample (sink excluded), "
			       "%llu records\n",
			       (double)(drain_ns - r.sink_ns) / r.samples,
			       (unsigned long long)st.records);
		/* 300 ms of CPU at 1 ms (+-10%): ~300 samples (more by the
		 * steal: steal_ns()). */
		CHECK(r.samples > 50);
		CHECK(r.samples < 600 + (int)(stolen / 900000));
		CHECK_EQ_INT(drain_errors, 0);
		CHECK_EQ_INT(st.bad, 0);
		CHECK_EQ_INT(r.bad_tid, 0);
		CHECK_EQ_INT(r.bad_time, 0);
		/* Weights are task time between samples, all of them
		 * together the 300 ms the child spun (it slept before). One
		 * alone varies with the jitter and the timer's latency: a late
		 * hrtimer shortens the next gap (hrtimer_forward from the
		 * missed expiry), so only its sign is certain. */
		CHECK(r.period_min > 0);
		if (!r.lost) {
			CHECK(r.weight > 270000000);
			CHECK(r.weight < 450000000 + stolen);
		}
		printf("# weights: %.1f ms in all (%.1f ms of steal meanwhile)\n", r.weight / 1e6,
		       stolen / 1e6);
		/* The period was re-randomized. */
		CHECK(st.period_sets > 0);
		/* spin()'s loop is in this binary's text. */
		CHECK(r.in_text * 2 > r.samples);
		CHECK_EQ_INT(r.bad_cpu, 0);
		CHECK(r.user > 0);
		/* A kernel sample still has the user regs of the syscall. */
		CHECK_EQ_INT(r.kernel_with_user_ip + r.user, r.with_regs);
		CHECK_EQ_INT(r.with_regs, r.samples);
		CHECK_EQ_INT(r.sp_ok, r.with_regs);
		CHECK_EQ_INT(r.stack_ok, r.with_regs);
		CHECK(r.canary * 2 > r.with_regs);
		/* It slept on the pipe, then was woken: a switch-in. (No
		 * switch-out is certain: the events are gone before the
		 * exiting task's last switch.) */
		CHECK(r.switch_in >= 1);
		CHECK_EQ_INT(r.other_tid_switch, 0);
	}

	/* A 4-page ring (16 KiB) holds one 8.4 KiB stack sample: every other
	 * record wraps around the end; losses are expected and counted. */
	ret = run_child(ev, 4, 0.3, 1, &r, &st, &drain_ns, &drain_errors);
	CHECK_EQ_INT(ret, 0);
	if (!ret) {
		printf("# 4-page ring: %d samples, %llu wrapped, lost %llu, "
		       "drain cost %.0f ns per sample (sink excluded)\n",
		       r.samples, (unsigned long long)st.wrapped,
		       (unsigned long long)r.lost,
		       r.samples ? (double)(drain_ns - r.sink_ns) / r.samples
				 : 0.0);
		CHECK(r.samples >= 2);
		CHECK(st.wrapped >= 1);
		CHECK_EQ_INT(st.bad, 0);
		CHECK_EQ_INT(drain_errors, 0);
		CHECK_EQ_INT(r.bad_tid, 0);
		CHECK_EQ_INT(r.stack_ok, r.with_regs);
		CHECK_EQ_INT(r.with_regs, r.samples);
	}

	/* One page without stacks: small records wrapping. */
	ret = smp_event_new("cpu-clock", 0, 10, SMP_EVENT_SWITCHES, &ev_nostack,
			    &why);
	CHECK_EQ_INT(ret, 0);
	if (!ret) {
		ret = run_child(ev_nostack, 1, 0.3, 20, &r, &st, &drain_ns,
				&drain_errors);
		CHECK_EQ_INT(ret, 0);
		printf("# 1-page ring: %d samples, %llu wrapped, lost %llu\n",
		       r.samples, (unsigned long long)st.wrapped,
		       (unsigned long long)r.lost);
		CHECK(r.samples > 50);
		CHECK_EQ_INT(st.bad, 0);
		CHECK_EQ_INT(drain_errors, 0);
		CHECK_EQ_INT(r.bad_tid, 0);
		CHECK_EQ_INT(r.with_regs, 0);
		smp_event_free(ev_nostack);
	}
	smp_event_free(ev);
}

/* What the CPU rings say about one child: its samples among every task's. */
struct cpu_run {
	pid_t child;
	int samples, others, thread_samples, switch_in;
	uint64_t weight, period_min, period_max;
};

static void cpu_sample(void *arg, const struct smp_sample *s)
{
	struct cpu_run *r = arg;

	if (s->tid != r->child) {
		r->others++;
		return;
	}
	r->samples++;
	r->weight += s->period;
	if (s->period < r->period_min)
		r->period_min = s->period;
	if (s->period > r->period_max)
		r->period_max = s->period;
}

static void cpu_thread_sample(void *arg, const struct smp_sample *s)
{
	(void)s;
	((struct cpu_run *)arg)->thread_samples++;
}

static void cpu_switch(void *arg, const struct smp_switch *sw)
{
	struct cpu_run *r = arg;

	if (sw->tid == r->child && !sw->out)
		r->switch_in++;
}

/* A ring per online CPU of the ncpu first (offline ones skipped) into
 * rings, *n of them; 0, or the error that stopped it. */
static int open_cpu_rings(struct smp_event *ev, long ncpu, struct smp_thread **rings, int *n)
{
	int ret = 0;

	*n = 0;
	for (long cpu = 0; cpu < ncpu; cpu++) {
		ret = smp_cpu_open(ev, (int)cpu, 0, &rings[*n]);
		if (ret == -ENODEV)
			continue;
		if (ret)
			break;
		(*n)++;
	}
	return ret;
}

/* Sampling per CPU: the child's samples come from the CPU rings with the
 * period as weight, its own event only counts and still writes its
 * switch records. */
static void test_real_cpu(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct smp_thread *rings[64], *t = NULL;
	struct smp_event *ev = NULL;
	struct cpu_run r = { .period_min = UINT64_MAX };
	struct smp_sink cpu_sink = { .sample = cpu_sample, .arg = &r };
	struct smp_sink thread_sink = { .sample = cpu_thread_sample,
					.context_switch = cpu_switch,
					.arg = &r };
	int n = 0, go, status = 0, ret;
	const char *why = NULL;
	pid_t pid;

	if (ncpu > 64)
		ncpu = 64;
	ret = smp_event_new("task-clock", 0, 10, SMP_EVENT_SWITCHES, &ev, &why);
	if (ret) {
		printf("# skipping per-CPU sampling: %s\n", why);
		return;
	}
	CHECK_EQ_INT(smp_cpu_open(ev, 0, 0, &rings[0]), -EINVAL); /* not per CPU yet */
	CHECK_EQ_INT(smp_event_set_per_cpu(ev, true), 0);
	CHECK(smp_event_per_cpu(ev));
	ret = open_cpu_rings(ev, ncpu, rings, &n);
	for (int i = 0; i < n; i++)
		CHECK_EQ_INT(smp_thread_tid(rings[i]), -1);
	if (ret == -EACCES || ret == -EPERM) {
		printf("# skipping per-CPU sampling: not permitted here\n");
		goto out;
	}
	CHECK_EQ_INT(ret, 0);
	CHECK(n > 0);
	if (!n)
		goto out;
	uint64_t steal0 = steal_ns();
	pid = spinner_fork(0.3, &go);
	CHECK(pid > 0);
	if (pid <= 0)
		goto out;
	r.child = pid;
	ret = smp_thread_open(ev, pid, 0, &t);
	CHECK_EQ_INT(ret, 0);
	spinner_go(go);
	for (uint64_t deadline = psup_now_ns() + 60ULL * 1000000000ULL;;) {
		usleep(20000);
		for (int i = 0; i < n; i++)
			CHECK(smp_thread_drain(rings[i], &cpu_sink) >= 0);
		if (t)
			smp_thread_drain(t, &thread_sink);
		int reaped = fx_reap(pid, &status, deadline);
		if (reaped) {
			CHECK(reaped > 0 && "child finished");
			break;
		}
	}
	for (int i = 0; i < n; i++)
		smp_thread_drain(rings[i], &cpu_sink);
	smp_thread_close(t, &thread_sink);
	uint64_t stolen = steal_ns() - steal0;
	printf("# per CPU (%d rings): %d samples of the child, %d of other tasks, "
	       "weights %.1f ms in all, period %llu..%llu, %.1f ms of steal meanwhile\n",
	       n, r.samples, r.others, r.weight / 1e6,
	       (unsigned long long)r.period_min, (unsigned long long)r.period_max, stolen / 1e6);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* 300 ms of CPU at 1 ms (+-10%), weighed by the period alone; the
	 * clock runs on through steal (steal_ns()). */
	CHECK(r.samples > 50);
	CHECK(r.samples < 600 + (int)(stolen / 900000));
	CHECK(r.period_min >= 900000 && r.period_max <= 1100000);
	CHECK(r.weight > 200000000 && r.weight < 500000000 + stolen * 11 / 10);
	CHECK_EQ_INT(r.thread_samples, 0);
	CHECK(r.switch_in >= 1);
out:
	for (int i = 0; i < n; i++)
		smp_thread_close(rings[i], NULL);
	smp_event_free(ev);
}

/* A CPU's ring sees every task's wakeups on that CPU: its stacked-wakeup
 * period is redrawn every 64 of them, not every 8 (each redraw is an IPI to
 * a CPU that may run the program: 9,400 of them on spawn 5000). */
static void test_cpu_wakeup_period(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned flags = SMP_EVENT_STACK | SMP_EVENT_SWITCHES | SMP_EVENT_WAKEUPS;
	struct smp_thread *rings[64];
	struct smp_event *ev = NULL;
	struct smp_sink sink = { 0 };
	uint64_t wakeups = 0, sets = 0;
	int n = 0, ret = 0, ping[2], pong[2], status = 0;
	const char *why = NULL;
	char c = 0;
	pid_t pid;

	if (ncpu > 64)
		ncpu = 64;
	if (smp_event_new("task-clock", 0, 10, flags, &ev, &why)) {
		printf("# skipping per-CPU wakeup periods: %s\n", why);
		return;
	}
	if (smp_event_set_per_cpu(ev, true) || !smp_event_inherits(ev)) {
		printf("# skipping per-CPU wakeup periods: no inherited events\n");
		smp_event_free(ev);
		return;
	}
	ret = open_cpu_rings(ev, ncpu, rings, &n);
	if (ret || !n || pipe(ping) || pipe(pong)) {
		printf("# skipping per-CPU wakeup periods: %s\n", strerror(-ret));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		while (read(ping[0], &c, 1) == 1 && c)
			if (write(pong[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	CHECK(pid > 0);
	/* 2 wakeups a round, one in ~16 of them with a 2 KiB stack: drained
	 * often enough that no ring fills */
	for (int i = 0; pid > 0 && i < 6000; i++) {
		c = 1;
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
		if (i % 100 == 0)
			for (int k = 0; k < n; k++)
				smp_thread_drain(rings[k], &sink);
	}
	c = 0;
	if (pid > 0 && write(ping[1], &c, 1) == 1)
		waitpid(pid, &status, 0);
	for (int k = 0; k < n; k++) {
		struct smp_thread_stats st;

		smp_thread_drain(rings[k], &sink);
		smp_thread_get_stats(rings[k], &st);
		wakeups += st.wakeups;
		sets += st.wake_period_sets;
	}
	close(ping[0]);
	close(ping[1]);
	close(pong[0]);
	close(pong[1]);
	printf("# per-CPU wakeups with a stack: %llu, period redrawn %llu times\n",
	       (unsigned long long)wakeups, (unsigned long long)sets);
	CHECK(wakeups >= 200);
	CHECK(sets * 64 <= wakeups + 64 * (uint64_t)n);
	CHECK(sets >= 1);
out:
	for (int i = 0; i < n; i++)
		smp_thread_close(rings[i], NULL);
	smp_event_free(ev);
}

int main(void)
{
	test_synthetic();
	test_synthetic_tasks();
	test_ring_walk();
	test_event_names();
	test_real();
	test_real_cpu();
	test_cpu_wakeup_period();
	return tap_done();
}
