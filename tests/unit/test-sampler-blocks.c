/*
 * The sampler's optional blocked-time events (SMP_EVENT_BLOCKS, context
 * switches with the user regs at kernel entry) and wakeups
 * (SMP_EVENT_WAKEUPS, sched:sched_waking in the waker's context), both
 * redirected into the main event's ring: synthetic records of every kind
 * through the parser (truncated at every length: run it under ASan), the
 * tracefs format parser, then a real child whose two threads ping-pong ~1000
 * times through a futex at a known address, sampled on both threads; and
 * the cost per context switch with the two events on and off (printed, not
 * checked). Exits 77 when wakeups cannot be sampled here, after the rest ran.
 */
#include "sampler/sampler.h"

#include <linux/futex.h>
#include <linux/perf_event.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "sampler/sampler-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"
#include "tests/unit/perf-records.h"

/* ---- synthetic records ------------------------------------------------ */

struct got {
	int samples, lost_calls, switches, blocks, wakeups;
	struct smp_sample s;
	struct smp_block b;
	struct smp_wakeup w;
	uint8_t stack[64];
	uint64_t lost;
	struct smp_switch sw;
};

static void got_sample(void *arg, const struct smp_sample *s)
{
	struct got *g = arg;

	g->samples++;
	g->s = *s;
}

static void got_lost(void *arg, pid_t tid, uint64_t count)
{
	struct got *g = arg;

	(void)tid;
	g->lost_calls++;
	g->lost += count;
}

static void got_switch(void *arg, const struct smp_switch *sw)
{
	struct got *g = arg;

	g->switches++;
	g->sw = *sw;
}

static void got_block(void *arg, const struct smp_block *b)
{
	struct got *g = arg;

	g->blocks++;
	g->b = *b;
}

static void got_wakeup(void *arg, const struct smp_wakeup *w)
{
	struct got *g = arg;

	g->wakeups++;
	g->w = *w;
	if (w->stack && w->stack_size)
		memcpy(g->stack, w->stack,
		       w->stack_size < sizeof(g->stack) ? w->stack_size
							: sizeof(g->stack));
}

static void put_regs(struct buf *b, uint64_t base)
{
	put64(b, PERF_SAMPLE_REGS_ABI_64);
	for (int i = 0; i < SMP_NREGS; i++)
		put64(b, base + (uint64_t)i);
}

/* A block sample: id, tid, time, cpu, regs. */
static void make_block(struct buf *b, uint64_t id, bool regs, uint64_t time)
{
	put_hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	put64(b, id);
	put64(b, (uint64_t)502 << 32 | 501);
	put64(b, time);
	put64(b, 1); /* cpu 1 */
	if (regs)
		put_regs(b, 0x2000);
	else
		put64(b, PERF_SAMPLE_REGS_ABI_NONE);
	fix_size(b);
}

/* A sched_waking sample: id, tid, time, cpu, raw (36 bytes as on 6.18, wakee pid
 * at 24), regs, [stack]; without regs for the every-wakeup event
 * (SMP_SYNTH_ID_WAKEUP_ALL). */
static void make_wakeup(struct buf *b, uint64_t id, bool stack,
			size_t stack_bytes, uint64_t dyn, uint32_t raw_size,
			uint64_t time)
{
	bool regs = id != SMP_SYNTH_ID_WAKEUP_ALL;

	put_hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	put64(b, id);
	put64(b, (uint64_t)602 << 32 | 601);
	put64(b, time);
	put64(b, 0); /* cpu 0 */
	put32(b, raw_size);
	for (uint32_t i = 0; i < raw_size; i++)
		b->b[b->n + i] = 0xaa;
	if (raw_size >= 28) {
		uint32_t pid = 777;

		memcpy(b->b + b->n + 24, &pid, 4);
	}
	b->n += raw_size;
	if (regs)
		put_regs(b, 0x3000);
	if (stack && regs) {
		put64(b, stack_bytes);
		for (size_t i = 0; i < stack_bytes; i++)
			b->b[b->n++] = (uint8_t)(i * 3 + 5);
		if (stack_bytes)
			put64(b, dyn);
	}
	fix_size(b);
}

static void make_main(struct buf *b, uint64_t id, uint64_t time)
{
	put_hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(b, id);
	put64(b, 0x401234);
	put64(b, (uint64_t)4321 << 32 | 1234);
	put64(b, time);
	put64(b, 1); /* cpu 1 */
	put64(b, 1000000);
	put64(b, time * 1000); /* read: the count */
	put_regs(b, 0x1000);
	put64(b, 16);
	for (int i = 0; i < 16; i++)
		b->b[b->n++] = (uint8_t)i;
	put64(b, 16);
	fix_size(b);
}

static void check_truncations(const struct smp_event *ev, const struct buf *full)
{
	struct got g;
	struct smp_sink sink = { .sample = got_sample, .lost = got_lost, .context_switch = got_switch, .arg = &g, .block = got_block, .wakeup = got_wakeup };
	int refused = 0, tries = 0;

	memset(&g, 0, sizeof(g));
	for (size_t len = 0; len < full->n; len++) {
		struct buf b = *full;
		uint16_t sz = (uint16_t)len;

		tries++;
		refused += parse_exact(ev, &b, len, &sink) == -EINVAL;
		if (len >= sizeof(struct perf_event_header)) {
			memcpy(b.b + 6, &sz, 2);
			tries++;
			refused += parse_exact(ev, &b, len, &sink) == -EINVAL;
		}
	}
	CHECK_EQ_INT(refused, tries);
	CHECK_EQ_INT(g.samples + g.lost_calls + g.switches + g.blocks +
			     g.wakeups,
		     0);
}

static void test_attrs(void)
{
	struct smp_event *plain = NULL, *ev = NULL, *nostack = NULL;
	const unsigned all = SMP_EVENT_STACK | SMP_EVENT_SWITCHES |
			     SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS;

	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_STACK | SMP_EVENT_SWITCHES,
					     &plain),
		     0);
	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10, all, &ev), 0);
	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS,
					     &nostack),
		     0);
	if (!plain || !ev || !nostack)
		return;
	/* Current users see no change: no identifier without the flags. */
	CHECK(!(plain->attr.sample_type & PERF_SAMPLE_IDENTIFIER));
	CHECK(ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER);
	CHECK_EQ_INT(ev->attr.sample_type & ~(uint64_t)PERF_SAMPLE_IDENTIFIER,
		     plain->attr.sample_type);
	CHECK_EQ_INT(ev->block_attr.type, PERF_TYPE_SOFTWARE);
	CHECK_EQ_INT(ev->block_attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	CHECK_EQ_INT(ev->block_attr.sample_period, 1);
	CHECK_EQ_INT(ev->block_attr.sample_type,
		     PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			     PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER);
	CHECK(ev->block_attr.sample_regs_user == SMP_REGS_MASK);
	CHECK_EQ_INT(ev->block_attr.sample_stack_user, 0);
	CHECK_EQ_INT(ev->wake_attr.type, PERF_TYPE_TRACEPOINT);
	CHECK_EQ_INT(ev->wake_attr.sample_period, SMP_WAKEUP_PERIOD);
	CHECK_EQ_INT(ev->wake_all_attr.type, PERF_TYPE_TRACEPOINT);
	CHECK_EQ_INT(ev->wake_all_attr.sample_period, 1);
	CHECK_EQ_INT(ev->wake_all_attr.sample_type,
		     PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			     PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
	CHECK_EQ_INT(ev->wake_all_attr.sample_regs_user, 0);
	CHECK_EQ_INT(ev->wake_attr.sample_type,
		     PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			     PERF_SAMPLE_CPU | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |
			     PERF_SAMPLE_STACK_USER);
	CHECK_EQ_INT(ev->wake_attr.sample_stack_user, SMP_WAKEUP_STACK);
	CHECK(!(nostack->wake_attr.sample_type & PERF_SAMPLE_STACK_USER));
	/* The same trailer layout and clock on all three (SET_OUTPUT): a LOST
	 * record carries the trailer of whichever event lost. */
	{
		const uint64_t trailer = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
					 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
					 PERF_SAMPLE_IDENTIFIER;

		CHECK_EQ_INT(ev->block_attr.sample_type & trailer, ev->attr.sample_type & trailer);
		CHECK_EQ_INT(ev->wake_attr.sample_type & trailer, ev->attr.sample_type & trailer);
		CHECK_EQ_INT(ev->wake_all_attr.sample_type & trailer, ev->attr.sample_type & trailer);
	}
	CHECK(ev->block_attr.sample_id_all && ev->wake_attr.sample_id_all);
	CHECK(ev->block_attr.use_clockid &&
	      ev->block_attr.clockid == ev->attr.clockid);
	CHECK(ev->wake_attr.use_clockid &&
	      ev->wake_attr.clockid == ev->attr.clockid);
	CHECK(!ev->block_attr.exclude_kernel && !ev->wake_attr.exclude_kernel);
	CHECK(!ev->block_attr.context_switch && !ev->wake_attr.context_switch);
	smp_event_free(plain);
	smp_event_free(ev);
	smp_event_free(nostack);
}

static void test_synthetic(void)
{
	struct smp_event *ev = NULL, *nostack = NULL, *blocks_only = NULL;
	struct got g;
	struct smp_sink sink = { .sample = got_sample, .lost = got_lost, .context_switch = got_switch, .arg = &g, .block = got_block, .wakeup = got_wakeup };
	struct buf b;

	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_STACK | SMP_EVENT_SWITCHES |
						     SMP_EVENT_BLOCKS |
						     SMP_EVENT_WAKEUPS,
					     &ev),
		     0);
	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS,
					     &nostack),
		     0);
	CHECK_EQ_INT(smp_event_new_unchecked("task-clock", 0, 10,
					     SMP_EVENT_STACK | SMP_EVENT_BLOCKS,
					     &blocks_only),
		     0);
	if (!ev || !nostack || !blocks_only)
		return;

	/* A block: pid, tid, time, the regs at kernel entry. */
	memset(&g, 0, sizeof(g));
	make_block(&b, SMP_SYNTH_ID_BLOCK, true, 4242);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.blocks, 1);
	CHECK_EQ_INT(g.samples + g.wakeups, 0);
	CHECK_EQ_INT(g.b.pid, 501);
	CHECK_EQ_INT(g.b.tid, 502);
	CHECK_EQ_INT(g.b.time, 4242);
	CHECK(g.b.have_regs);
	CHECK_EQ_INT(g.b.regs[SMP_REG_AX], 0x2000);
	CHECK_EQ_INT(g.b.regs[SMP_REG_DI], 0x2000 + 5);
	CHECK_EQ_INT(g.b.regs[SMP_REG_IP], 0x2000 + 8);
	CHECK_EQ_INT(g.b.regs[SMP_REG_R15], 0x2000 + 17);
	check_truncations(ev, &b);
	/* A kernel thread's: no regs. */
	memset(&g, 0, sizeof(g));
	make_block(&b, SMP_SYNTH_ID_BLOCK, false, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.blocks, 1);
	CHECK(!g.b.have_regs);
	check_truncations(ev, &b);
	/* Trailing bytes after the fields are tolerated (future fields). */
	make_block(&b, SMP_SYNTH_ID_BLOCK, true, 1);
	put64(&b, 0);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);

	/* A wakeup with the waker's regs and stack. */
	memset(&g, 0, sizeof(g));
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 128, 48, 36, 999);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.wakeups, 1);
	CHECK_EQ_INT(g.samples + g.blocks, 0);
	CHECK_EQ_INT(g.w.pid, 601);
	CHECK_EQ_INT(g.w.tid, 602);
	CHECK_EQ_INT(g.w.time, 999);
	CHECK_EQ_INT(g.w.wakee_tid, 777);
	CHECK_EQ_INT(g.w.owner, 0);
	CHECK(g.w.have_regs);
	CHECK_EQ_INT(g.w.regs[SMP_REG_SP], 0x3000 + 7);
	CHECK_EQ_INT(g.w.stack_size, 48);
	CHECK_EQ_INT(g.stack[0], 5);
	CHECK_EQ_INT(g.stack[47], (uint8_t)(47 * 3 + 5));
	check_truncations(ev, &b);
	/* A waker without user context: regs ABI none, stack size 0. */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	put64(&b, SMP_SYNTH_ID_WAKEUP);
	put64(&b, 0);
	put64(&b, 5);
	put64(&b, 1); /* cpu */
	put32(&b, 36);
	memset(b.b + b.n, 0, 36);
	b.b[b.n + 24] = 9;
	b.n += 36;
	put64(&b, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&b, 0);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.wakeups, 1);
	CHECK(!g.w.have_regs);
	CHECK(g.w.stack == NULL && g.w.stack_size == 0);
	CHECK_EQ_INT(g.w.wakee_tid, 9);
	CHECK_EQ_INT(g.w.tid, 0);
	check_truncations(ev, &b);
	/* dyn_size past the snapshot; raw sizes that break the 8-byte
	 * alignment or cannot hold the pid field: refused. */
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 65, 36, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 32, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 20, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 0xfffffffcu & 4092,
		    1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	{
		/* A raw size larger than the record. */
		uint32_t huge = 0x7ffffffc;

		make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 36, 1);
		memcpy(b.b + 8 + 32, &huge, 4); /* hdr, id, tid, time, cpu */
		CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	}
	/* Every wakeup: who woke whom, no regs; not a sampled one. */
	memset(&g, 0, sizeof(g));
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP_ALL, false, 0, 0, 36, 8);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.wakeups, 1);
	CHECK_EQ_INT(g.w.wakee_tid, 777);
	CHECK(!g.w.sampled && !g.w.have_regs && g.w.stack_size == 0);
	check_truncations(ev, &b);
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 36, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK(g.w.sampled && g.w.have_regs);
	/* Without SMP_EVENT_STACK the wakeup has regs only. */
	memset(&g, 0, sizeof(g));
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, false, 0, 0, 36, 7);
	CHECK_EQ_INT(smp_parse_record(nostack, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.wakeups, 1);
	CHECK_EQ_INT(g.w.wakee_tid, 777);
	CHECK(g.w.have_regs && g.w.stack_size == 0);
	check_truncations(nostack, &b);

	/* The main event's samples, with their identifier first. */
	memset(&g, 0, sizeof(g));
	make_main(&b, SMP_SYNTH_ID_MAIN, 321);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.samples, 1);
	CHECK_EQ_INT(g.blocks + g.wakeups, 0);
	CHECK_EQ_INT(g.s.ip, 0x401234);
	CHECK_EQ_INT(g.s.tid, 4321);
	CHECK_EQ_INT(g.s.time, 321);
	CHECK_EQ_INT(g.s.stack_size, 16);
	CHECK_EQ_INT(g.s.regs[SMP_REG_IP], 0x1000 + 8);
	check_truncations(ev, &b);
	/* An id of no event of the ring, and a wakeup id on an event that
	 * did not ask for wakeups: refused. */
	make_main(&b, 99, 1);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), -EINVAL);
	make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 36, 1);
	CHECK_EQ_INT(smp_parse_record(blocks_only, b.b, b.n, &sink), -EINVAL);

	/* With a thread's context: its ids, and the ring's owner. */
	{
		struct smp_thread_stats st;
		struct smp_parse_ctx ctx = { .tid = 602, .id_main = 70, .id_block = 71, .id_wakeup = 72, .count_valid = true, .stats = &st };

		memset(&st, 0, sizeof(st));
		memset(&g, 0, sizeof(g));
		make_block(&b, 71, true, 10);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		make_wakeup(&b, 72, true, 64, 64, 36, 11);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		make_main(&b, 70, 12);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx), 0);
		/* The synthetic ids mean nothing here. */
		make_block(&b, SMP_SYNTH_ID_BLOCK, true, 13);
		CHECK_EQ_INT(smp_parse_record_ctx(ev, b.b, b.n, &sink, &ctx),
			     -EINVAL);
		CHECK_EQ_INT(g.blocks, 1);
		CHECK_EQ_INT(g.wakeups, 1);
		CHECK_EQ_INT(g.samples, 1);
		CHECK_EQ_INT(g.w.owner, 602);
		/* Only the main samples count for the period changes and
		 * the weights. */
		CHECK_EQ_INT(st.samples, 1);
		CHECK_EQ_INT(st.blocks, 1);
		CHECK_EQ_INT(st.wakeups, 1);
		CHECK_EQ_INT(g.s.period, 12000);
	}

	/* Non-sample records end with { pid, tid, time, cpu, identifier }. */
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	put64(&b, (uint64_t)31 << 32 | 30);
	put64(&b, 32);
	put64(&b, 5);
	put64(&b, SMP_SYNTH_ID_MAIN);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.switches, 1);
	CHECK_EQ_INT(g.sw.tid, 31);
	CHECK_EQ_INT(g.sw.time, 32);
	CHECK_EQ_INT(g.sw.cpu, 5);
	CHECK(g.sw.out);
	check_truncations(ev, &b);
	memset(&g, 0, sizeof(g));
	put_hdr(&b, PERF_RECORD_LOST, 0);
	put64(&b, SMP_SYNTH_ID_WAKEUP);
	put64(&b, 6);
	put64(&b, (uint64_t)31 << 32 | 30);
	put64(&b, 33);
	put64(&b, 5);
	put64(&b, SMP_SYNTH_ID_WAKEUP);
	fix_size(&b);
	CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &sink), 0);
	CHECK_EQ_INT(g.lost, 6);
	check_truncations(ev, &b);

	/* NULL callbacks are fine. */
	{
		struct smp_sink empty = { 0 };

		make_block(&b, SMP_SYNTH_ID_BLOCK, true, 1);
		CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &empty), 0);
		CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, NULL), 0);
		make_wakeup(&b, SMP_SYNTH_ID_WAKEUP, true, 64, 64, 36, 1);
		CHECK_EQ_INT(smp_parse_record(ev, b.b, b.n, &empty), 0);
	}
	smp_event_free(ev);
	smp_event_free(nostack);
	smp_event_free(blocks_only);
}

static void test_format(void)
{
	static const char fmt[] =
		"name: sched_waking\n"
		"ID: 375\n"
		"format:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\n"
		"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
		"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
		"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
		"\n"
		"print fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n";
	uint32_t off = 0, size = 0;
	uint64_t id = 0;
	int ret;

	CHECK_EQ_INT(smp_tracepoint_parse_format(fmt, "pid", &off, &size), 0);
	CHECK_EQ_INT(off, 24);
	CHECK_EQ_INT(size, 4);
	CHECK_EQ_INT(smp_tracepoint_parse_format(fmt, "comm", &off, &size), 0);
	CHECK_EQ_INT(off, 8);
	CHECK_EQ_INT(size, 16);
	CHECK_EQ_INT(smp_tracepoint_parse_format(fmt, "common_pid", &off, &size),
		     0);
	CHECK_EQ_INT(off, 4);
	CHECK_EQ_INT(smp_tracepoint_parse_format(fmt, "id", &off, &size),
		     -ENOENT);
	CHECK_EQ_INT(smp_tracepoint_parse_format(fmt, "rio", &off, &size),
		     -ENOENT);
	CHECK_EQ_INT(smp_tracepoint_parse_format("", "pid", &off, &size),
		     -ENOENT);
	CHECK_EQ_INT(smp_tracepoint_parse_format("\tfield:pid_t pid;\toffset:x;"
						 "\tsize:4;\n",
						 "pid", &off, &size),
		     -EINVAL);
	CHECK_EQ_INT(smp_tracepoint_parse_format("\tfield:pid_t pid;\n\toffset:"
						 "24;\tsize:4;\n",
						 "pid", &off, &size),
		     -EINVAL);
	/* This machine's, when tracefs is readable. */
	ret = smp_tracepoint_lookup(SMP_WAKEUP_TRACEPOINT, "pid", &id, &off,
				    &size);
	if (ret == 0) {
		CHECK(id > 0);
		CHECK_EQ_INT(size, 4);
		printf("# %s: id %llu, pid at %u\n", SMP_WAKEUP_TRACEPOINT,
		       (unsigned long long)id, off);
	} else {
		printf("# %s: lookup %d\n", SMP_WAKEUP_TRACEPOINT, ret);
		CHECK(ret == -ENOENT || ret == -EACCES);
	}
	CHECK_EQ_INT(smp_tracepoint_lookup("sched/no_such_event_xyz", "pid", &id,
					   &off, &size) < 0,
		     1);
}

/* ---- a real ping-pong ----------------------------------------------------- */

#define ROUNDS 1000

/* Shared with the child (MAP_SHARED before fork: same address in both). */
struct shared {
	uint32_t turn; /* the ping-pong futex: 0 = A's move, 1 = B's */
	uint32_t go;   /* futex: the parent's start signal */
	pid_t tid[2];  /* A (the child's main thread), B */
	uint64_t ns;   /* the ping-pong's wall time */
	int rounds;
	int slept[2], eagain[2], failed[2], err[2]; /* FUTEX_WAIT's results */
};

static struct shared *sh;

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static void player(int me, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		while (__atomic_load_n(&sh->turn, __ATOMIC_ACQUIRE) != (uint32_t)me) {
			if (futex(&sh->turn, FUTEX_WAIT, (uint32_t)!me) == 0)
				sh->slept[me]++;
			else if (errno == EAGAIN)
				sh->eagain[me]++;
			else
				sh->failed[me]++, sh->err[me] = errno;
		}
		__atomic_store_n(&sh->turn, (uint32_t)!me, __ATOMIC_RELEASE);
		futex(&sh->turn, FUTEX_WAKE, 1);
	}
}

static void wait_go(int me)
{
	__atomic_store_n(&sh->tid[me], (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		futex(&sh->go, FUTEX_WAIT, 0);
}

static void *player_b(void *arg)
{
	(void)arg;
	wait_go(1);
	player(1, sh->rounds);
	return NULL;
}

static void child_main(int rounds)
{
	pthread_t b;
	uint64_t t0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sh->rounds = rounds;
	if (pthread_create(&b, NULL, player_b, NULL))
		_exit(3);
	wait_go(0);
	t0 = psup_now_ns();
	player(0, rounds);
	pthread_join(b, NULL);
	sh->ns = psup_now_ns() - t0;
	_exit(0);
}

/* What the sink saw of one thread's ring. */
struct side {
	pid_t tid, other;
	int samples, blocks, block_di, block_regs, block_bad_tid;
	int block_then_out, outs, ins;
	int voluntary, vol_futex, preempted; /* blocks, by their switch */
	int vol_enosys;                      /* vol_futex with AX = -ENOSYS */
	uint64_t last_block_regs[SMP_NREGS];
	bool last_block_have_regs;
	int woke, woke_other, woke_regs, woke_stack; /* tid == owner */
	int woke_sampled;                            /* of which with regs */
	int woken, woken_by_other;                   /* wakee == owner */
	int wake_bad;                                /* neither */
	int own_disorder, foreign_disorder;
	uint64_t last_own, last_any, lost, records, wrapped;
	bool last_was_block;
};

struct runs {
	struct side side[2];
	pid_t child;
};

/* Records written in the owner's own context (its samples, switches,
 * blocks, the wakeups it made) are in time order; wakeups of it, written
 * by the waker on another CPU, may race with its last records. */
static void own_time(struct side *s, uint64_t time)
{
	if (time < s->last_own)
		s->own_disorder++;
	s->last_own = time;
}

/* The sink's arg is the side: one sink per ring. */
static void r_sample(void *arg, const struct smp_sample *smp)
{
	struct side *s = arg;

	s->samples++;
	s->last_was_block = false;
	own_time(s, smp->time);
}

static void r_lost(void *arg, pid_t tid, uint64_t count)
{
	struct side *s = arg;

	(void)tid;
	s->lost += count;
	s->last_was_block = false;
}

static void r_switch(void *arg, const struct smp_switch *sw)
{
	struct side *s = arg;

	if (sw->out) {
		s->outs++;
		if (s->last_was_block) {
			const uint64_t *regs = s->last_block_regs;

			s->block_then_out++;
			if (sw->preempt) {
				s->preempted++;
			} else {
				s->voluntary++;
				/* futex(&turn, FUTEX_WAIT, other's value) */
				if (s->last_block_have_regs &&
				    regs[SMP_REG_DI] == (uint64_t)(uintptr_t)&sh->turn &&
				    regs[SMP_REG_SI] == FUTEX_WAIT &&
				    regs[SMP_REG_DX] <= 1) {
					s->vol_futex++;
					/* inside the call: its result not yet in AX */
					if (regs[SMP_REG_AX] == (uint64_t)-ENOSYS)
						s->vol_enosys++;
				}
			}
		}
	} else {
		s->ins++;
	}
	s->last_was_block = false;
	own_time(s, sw->time);
}

static void r_block(void *arg, const struct smp_block *b)
{
	struct side *s = arg;

	s->blocks++;
	if (b->tid != s->tid)
		s->block_bad_tid++;
	if (b->have_regs) {
		s->block_regs++;
		if (b->regs[SMP_REG_DI] == (uint64_t)(uintptr_t)&sh->turn)
			s->block_di++;
	}
	memcpy(s->last_block_regs, b->regs, sizeof(b->regs));
	s->last_block_have_regs = b->have_regs;
	s->last_was_block = true;
	own_time(s, b->time);
}

static void r_wakeup(void *arg, const struct smp_wakeup *w)
{
	struct side *s = arg;

	s->last_was_block = false;
	if (w->owner != s->tid) {
		s->wake_bad++;
	} else if (w->tid == s->tid && w->sampled) {
		/* the same wakeup comes once more, unsampled */
		s->woke_sampled++;
		if (w->have_regs)
			s->woke_regs++;
		if (w->stack && w->stack_size)
			s->woke_stack++;
		own_time(s, w->time);
	} else if (w->tid == s->tid) {
		s->woke++;
		if (w->wakee_tid == s->other)
			s->woke_other++;
		own_time(s, w->time);
	} else if (w->wakee_tid == s->tid) {
		if (w->sampled)
			return;
		s->woken++;
		if (w->tid == s->other)
			s->woken_by_other++;
		if (w->time < s->last_own)
			s->foreign_disorder++;
	} else {
		s->wake_bad++;
	}
}

static int wait_tids(void)
{
	for (int i = 0; i < 100000; i++) {
		if (__atomic_load_n(&sh->tid[0], __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&sh->tid[1], __ATOMIC_ACQUIRE))
			return 0;
		usleep(100);
	}
	return -ETIMEDOUT;
}

/*
 * Forks the ping-pong child, opens ev (NULL: nothing) on both threads
 * (ring_pages each), starts it and drains until it exits. *ns is the child's
 * own measure of the ping-pong. Returns 0 or -errno of an open.
 */
static int run_pingpong(const struct smp_event *ev, unsigned ring_pages,
			int rounds, struct runs *r, uint64_t *ns)
{
	struct smp_thread *t[2] = { NULL, NULL };
	struct smp_sink sink[2];
	int status, err = 0;
	uint64_t deadline;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	memset(sh, 0, sizeof(*sh));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child_main(rounds);
	r->child = pid;
	if (wait_tids()) {
		err = -ETIMEDOUT;
		goto kill;
	}
	for (int i = 0; i < 2; i++) {
		r->side[i].tid = sh->tid[i];
		r->side[i].other = sh->tid[!i];
		sink[i] = (struct smp_sink){ .sample = r_sample, .lost = r_lost, .context_switch = r_switch, .arg = &r->side[i], .block = r_block, .wakeup = r_wakeup };
	}
	for (int i = 0; i < 2 && ev; i++) {
		fx_wait_sleeping(pid, sh->tid[i]);
		err = smp_thread_open(ev, sh->tid[i], ring_pages, &t[i]);
		if (err)
			goto kill;
	}
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	futex(&sh->go, FUTEX_WAKE, INT_MAX);
	/* A safety net against a child that never ends, not a measurement. */
	deadline = psup_now_ns() + 60ULL * 1000000000ULL;
	for (;;) {
		struct pollfd pfd[2];
		int n = 0;

		for (int i = 0; i < 2; i++)
			if (t[i])
				pfd[n++] = (struct pollfd){ .fd = smp_thread_fd(t[i]),
							    .events = POLLIN };
		poll(pfd, (nfds_t)n, 2);
		for (int i = 0; i < 2; i++)
			if (t[i])
				CHECK(smp_thread_drain(t[i], &sink[i]) >= 0);
		int reaped = fx_reap(pid, &status, deadline);
		if (reaped) {
			CHECK(reaped > 0 && "child finished");
			break;
		}
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 2; i++) {
		if (t[i]) {
			struct smp_thread_stats st;

			/* What the child wrote last (a drain that failed
			 * inside close would go unnoticed). */
			CHECK(smp_thread_drain(t[i], &sink[i]) >= 0);
			smp_thread_get_stats(t[i], &st);
			CHECK_EQ_INT(st.bad, 0);
			r->side[i].records = st.records;
			r->side[i].wrapped = st.wrapped;
			smp_thread_close(t[i], &sink[i]);
		}
	}
	*ns = sh->ns;
	return 0;

kill:
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (int i = 0; i < 2; i++)
		smp_thread_close(t[i], NULL);
	return err;
}

static void print_side(const char *what, const struct side *s)
{
	printf("# %s tid %d: %d samples, %d blocks (%d with DI = the futex), "
	       "%d block+switch-out pairs of %d outs: %d voluntary (%d in "
	       "FUTEX_WAIT on it), %d preempted; woke %d (%d the other "
	       "thread), woken %d (%d by the other), lost %llu, disorder "
	       "%d own %d foreign, %llu records, %llu wrapped\n",
	       what, (int)s->tid, s->samples, s->blocks, s->block_di,
	       s->block_then_out, s->outs, s->voluntary, s->vol_futex,
	       s->preempted, s->woke, s->woke_other, s->woken,
	       s->woken_by_other, (unsigned long long)s->lost, s->own_disorder,
	       s->foreign_disorder, (unsigned long long)s->records,
	       (unsigned long long)s->wrapped);
}

static void test_real(bool wakeups)
{
	unsigned flags = SMP_EVENT_STACK | SMP_EVENT_SWITCHES | SMP_EVENT_BLOCKS |
			 (wakeups ? SMP_EVENT_WAKEUPS : 0);
	struct smp_event *ev = NULL;
	const char *why = NULL;
	struct runs r;
	uint64_t ns;
	int ret;

	ret = smp_event_new("task-clock", 0, 10, flags, &ev, &why);
	CHECK_EQ_INT(ret, 0);
	if (ret) {
		printf("# blocks/wakeups refused: %s\n", why);
		return;
	}
	/* 4 MiB per ring: each wakeup copies an 8 KiB stack. */
	ret = run_pingpong(ev, 1024, ROUNDS, &r, &ns);
	/* Once in ~35 runs under load, a run saw almost nothing of the child
	 * (no samples, 0-1 blocks) for reasons not yet understood. Print it
	 * and run again once; a second such run fails the checks below. */
	if (ret == 0 && (r.side[0].blocks < 100 || r.side[1].blocks < 100)) {
		printf("# a run saw almost nothing; its numbers, then one more run:\n");
		print_side("A", &r.side[0]);
		print_side("B", &r.side[1]);
		printf("# child: slept %d/%d eagain %d/%d failed %d/%d\n", sh->slept[0],
		       sh->slept[1], sh->eagain[0], sh->eagain[1], sh->failed[0], sh->failed[1]);
		ret = run_pingpong(ev, 1024, ROUNDS, &r, &ns);
	}
	CHECK_EQ_INT(ret, 0);
	if (ret) {
		smp_event_free(ev);
		return;
	}
	for (int i = 0; i < 2; i++) {
		struct side *s = &r.side[i];

		print_side(i ? "B" : "A", s);
		/* Each of ~1000 rounds switches each thread out once or
		 * twice: it blocks in FUTEX_WAIT unless the partner was
		 * quicker, and when both share a CPU the wakee preempts its
		 * waker on the way out of FUTEX_WAKE. Records may be lost. */
		CHECK(s->blocks >= 100);
		CHECK_EQ_INT(s->block_bad_tid, 0);
		CHECK_EQ_INT(s->block_regs, s->blocks);
		CHECK_EQ_INT(s->own_disorder, 0);
		CHECK_EQ_INT(s->wake_bad, 0);
		/* A block sample is written just before the switch-out record
		 * of the same switch. */
		if (!s->lost)
			CHECK(s->block_then_out * 10 >= s->outs * 9);
		/* The user regs of a thread that blocked are its syscall's
		 * arguments: futex(&turn, FUTEX_WAIT, val). The others (the
		 * start signal, the join, the exit) are a handful. */
		CHECK(s->voluntary >= 50);
		CHECK(s->vol_futex * 10 >= s->voluntary * 9);
		CHECK_EQ_INT(s->vol_enosys, s->vol_futex);
		/* Preempted ones leave FUTEX_WAKE(&turn): DI is the futex
		 * too, for nearly all of them. */
		CHECK(s->block_di * 10 >= s->blocks * 8);
		if (wakeups) {
			/* Half or more of the FUTEX_WAKEs find the partner
			 * asleep (the rest find it still running, with nothing
			 * to wake). The others are wakeups made in the
			 * thread's context by interrupts and softirqs (timers,
			 * perf waking the drainer): a few percent, more on a
			 * loaded machine. */
			CHECK(s->woke_other >= 50);
			CHECK(s->woke_other * 10 >= s->woke * 6);
			/* One in SMP_WAKEUP_PERIOD (randomized) carries the
			 * waker's regs and stack: between a quarter and a
			 * sixty-fourth of them, generously. */
			CHECK_EQ_INT(s->woke_regs, s->woke_sampled);
			CHECK_EQ_INT(s->woke_stack, s->woke_sampled);
			CHECK(s->woke_sampled * 4 <= s->woke);
			CHECK(s->woke_sampled * 64 >= s->woke);
			/* The wakee-side deliveries, when there are any, come
			 * from the partner or the parent's start signal. */
			CHECK(s->woken_by_other + 2 >= s->woken);
		} else {
			CHECK_EQ_INT(s->woke + s->woken, 0);
		}
	}
	printf("# ping-pong under sampling: %.1f us per round trip; FUTEX_WAIT "
	       "slept %d/%d times, EAGAIN %d/%d, failed %d/%d (errno %d/%d)\n",
	       (double)ns / ROUNDS / 1e3, sh->slept[0], sh->slept[1],
	       sh->eagain[0], sh->eagain[1], sh->failed[0], sh->failed[1],
	       sh->err[0], sh->err[1]);

	/* sched_wakeup, as opposed to sched_waking: how many wakeups it shows
	 * in the waker's context (it fires where the wakee is activated). */
	if (wakeups) {
		struct smp_event *alt = NULL;
		uint64_t id;
		uint32_t off, size;

		if (smp_tracepoint_lookup("sched/sched_wakeup", "pid", &id, &off,
					  &size) == 0 &&
		    smp_event_new("task-clock", 0, 10, flags, &alt, &why) == 0) {
			alt->wake_attr.config = id;
			alt->wake_pid_off = off;
			if (run_pingpong(alt, 512, ROUNDS, &r, &ns) == 0)
				printf("# with sched_wakeup instead: A woke %d "
				       "(woken %d), B woke %d (woken %d) in "
				       "%d rounds\n",
				       r.side[0].woke, r.side[0].woken,
				       r.side[1].woke, r.side[1].woken, ROUNDS);
			smp_event_free(alt);
		}
	}
	smp_event_free(ev);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Wall time of the ping-pong with the main event alone vs with the two
 * extra events, interleaved, median of 5. Printed, never checked. */
static void measure_cost(bool wakeups)
{
	struct smp_event *base = NULL, *extra = NULL;
	unsigned flags = SMP_EVENT_STACK | SMP_EVENT_SWITCHES;
	uint64_t t_none[5], t_base[5], t_extra[5];
	struct runs r;
	const char *why;
	const int rounds = 5000;

	if (smp_event_new("task-clock", 0, 10, flags, &base, &why) ||
	    smp_event_new("task-clock", 0, 10,
			  flags | SMP_EVENT_BLOCKS |
				  (wakeups ? SMP_EVENT_WAKEUPS : 0),
			  &extra, &why))
		goto out;
	for (int i = 0; i < 5; i++) {
		if (run_pingpong(NULL, 0, rounds, &r, &t_none[i]) ||
		    run_pingpong(base, 512, rounds, &r, &t_base[i]) ||
		    run_pingpong(extra, 512, rounds, &r, &t_extra[i]))
			goto out;
	}
	qsort(t_none, 5, sizeof(uint64_t), cmp_u64);
	qsort(t_base, 5, sizeof(uint64_t), cmp_u64);
	qsort(t_extra, 5, sizeof(uint64_t), cmp_u64);
	/* A round trip is two context switches (each thread blocks once,
	 * is woken once). */
	printf("# cost (median of 5, %d round trips): no events %.2f us, "
	       "main event %.2f us, + blocks%s %.2f us per switch: %+.2f us per "
	       "switch for the extra events\n",
	       rounds, t_none[2] / 2e3 / rounds, t_base[2] / 2e3 / rounds,
	       wakeups ? "+wakeups" : "", t_extra[2] / 2e3 / rounds,
	       ((double)t_extra[2] - (double)t_base[2]) / 2e3 / rounds);
out:
	smp_event_free(base);
	smp_event_free(extra);
}

/* This process's open perf events. */
static unsigned count_perf_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;
	char path[300], link[64];

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			n += strcmp(link, "anon_inode:[perf_event]") == 0;
		}
	}
	closedir(d);
	return n;
}

int main(void)
{
	const char *why = NULL;
	char wakeups_why[256] = "";
	struct smp_event *ev = NULL;
	bool wakeups;
	int ret;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	test_attrs();
	test_synthetic();
	test_format();

	unsigned perf_fds = count_perf_fds();
	wakeups = smp_have_wakeup_tracepoint();
	/* The probe's event stays open: closing a tracepoint's last event
	 * waits for an RCU grace period (35-55 ms), which every run paid up
	 * to three times. (The fork tracepoint's probe too, where it has
	 * one.) */
	if (wakeups)
		CHECK(count_perf_fds() == perf_fds + 1 || count_perf_fds() == perf_fds + 2);
	ret = smp_event_new("task-clock", 0, 10, SMP_EVENT_WAKEUPS, &ev, &why);
	if (wakeups) {
		CHECK_EQ_INT(ret, 0);
	} else {
		/* Refused cleanly, with the reason; blocks alone may work. */
		CHECK(ret < 0 && ev == NULL && why && strstr(why, "wakeups"));
		printf("# wakeups refused: %s\n", why ? why : "(null)");
	}
	smp_event_free(ev);
	ev = NULL;
	/* why is overwritten by the next smp_event_new(). */
	if (why)
		snprintf(wakeups_why, sizeof(wakeups_why), "%s", why);

	/* Both events need kernel samples; without them nothing real runs. */
	ret = smp_event_new("task-clock", 0, 10, SMP_EVENT_BLOCKS, &ev, &why);
	if (ret == -EACCES || ret == -EPERM) {
		CHECK(ev == NULL && why && strstr(why, "blocks"));
		printf("# SKIP real runs: %s\n", why);
		return tap_failures ? tap_done() : (tap_done(), 77);
	}
	CHECK_EQ_INT(ret, 0);
	smp_event_free(ev);
	ev = NULL;

	test_real(wakeups);
	measure_cost(wakeups);
	if (!wakeups) {
		printf("# SKIP wakeups: %s\n", wakeups_why);
		return tap_failures ? tap_done() : (tap_done(), 77);
	}
	return tap_done();
}
