#include "sampler/sampler.h"

#include <linux/perf_event.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/log.h"
#include "common/util.h"
#include "sampler/sampler-internal.h"

/* The largest sample a stack event writes: header, ip, tid, time, cpu,
 * period, read, abi + 18 regs, stack size + snapshot + dyn_size is 8416
 * bytes (a wakeup sample, with its identifier and 40 bytes of raw data,
 * 8448); round up. */
#define STACK_SAMPLE_MAX (SMP_STACK_SNAPSHOT + 512u)
/* A record's size is a u16, so nothing longer ever needs bouncing. */
#define BOUNCE_MAX 65536u

struct smp_thread {
	const struct smp_event *ev; /* borrowed: outlives the thread */
	pid_t tid;
	int fd;                             /* the main event: owns the ring */
	int block_fd, wake_fd, wake_all_fd; /* -1 unless asked for; output into fd's ring */
	int fork_fd;                        /* a CPU's ring: SMP_EVENT_TASKS' creators, or -1 */
	int cpu;                            /* a CPU's ring: its CPU; else -1 */
	/* smp_thread_open_inherited(): no ring; per CPU, the side-band events
	 * (INHERITED_KINDS of them, -1 where not asked for), each writing into
	 * that CPU's ring. */
	int *inh_fds;
	uint64_t *inh_ids;
	unsigned ninh;
	uint64_t wakeups_at_change; /* stats.wakeups at the last wakeup period change */
	void *map;                  /* metadata page + data pages */
	size_t map_len;
	uint8_t *data;
	size_t data_size; /* a power of two */
	uint64_t tail;    /* our copy of data_tail */
	uint8_t *bounce;  /* records that wrap are copied here */
	size_t bounce_size;
	uint64_t rng;
	struct smp_parse_ctx ctx;
	uint64_t samples_at_change; /* stats.samples at the last period change */
	struct smp_thread_stats stats;
};


static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Bytes of the sample_id_all trailer for this sample_type (perf_event.h:
 * struct sample_id, in that order at the end of non-sample records). */
static size_t trailer_size(uint64_t st)
{
	size_t n = 0;

	n += (st & PERF_SAMPLE_TID) ? 8 : 0;
	n += (st & PERF_SAMPLE_TIME) ? 8 : 0;
	n += (st & PERF_SAMPLE_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_CPU) ? 8 : 0;
	n += (st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	return n;
}

/* Reads pid/tid/time/cpu (cpu may be NULL) from the trailer of a non-sample
 * record of size len whose fixed body is body bytes. Returns -EINVAL when it
 * does not fit. */
static int parse_trailer(const struct smp_event *ev, const uint8_t *rec,
			 size_t len, size_t body, pid_t *pid, pid_t *tid,
			 uint64_t *time, int *cpu)
{
	uint64_t st = ev->attr.sample_type;
	size_t ts = ev->attr.sample_id_all ? trailer_size(st) : 0;
	const uint8_t *p;

	*pid = *tid = 0;
	*time = 0;
	if (cpu)
		*cpu = -1;
	if (len < sizeof(struct perf_event_header) + body + ts)
		return -EINVAL;
	p = rec + len - ts;
	if (!ev->attr.sample_id_all)
		return 0;
	if (st & PERF_SAMPLE_TID) {
		*pid = (pid_t)rd32(p);
		*tid = (pid_t)rd32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		*time = rd64(p);
		p += 8;
	}
	p += (st & PERF_SAMPLE_ID) ? 8 : 0;
	p += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	if ((st & PERF_SAMPLE_CPU) && cpu)
		*cpu = (int)rd32(p); /* { u32 cpu, res } */
	return 0;
}

/* A bounds-checked cursor over one record. */
struct cursor {
	const uint8_t *p, *end;
};

static inline bool cur_u64(struct cursor *c, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < 8)
		return false;
	*v = rd64(c->p);
	c->p += 8;
	return true;
}

/* PERF_SAMPLE_TID: little-endian { u32 pid, tid } */
static inline bool cur_tid(struct cursor *c, pid_t *pid, pid_t *tid)
{
	uint64_t v;

	if (!cur_u64(c, &v))
		return false;
	*pid = (pid_t)(uint32_t)v;
	*tid = (pid_t)(uint32_t)(v >> 32);
	return true;
}

/* PERF_SAMPLE_CPU: { u32 cpu, res }; -1 when not asked for; cpu NULL:
 * skipped. */
static inline bool cur_cpu(struct cursor *c, uint64_t st, int *cpu)
{
	uint64_t v = UINT32_MAX;

	if ((st & PERF_SAMPLE_CPU) && !cur_u64(c, &v))
		return false;
	if (cpu)
		*cpu = (st & PERF_SAMPLE_CPU) ? (int)(uint32_t)v : -1;
	return true;
}

/* PERF_SAMPLE_REGS_USER with SMP_REGS_MASK: { u64 abi; u64 regs[abi ? n : 0] } */
static inline bool cur_regs(struct cursor *c, uint64_t *regs, bool *have)
{
	uint64_t abi;

	if (!cur_u64(c, &abi))
		return false;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return true;
	/* SMP_REGS_MASK has exactly SMP_NREGS bits, written in bit order =
	 * enum smp_reg order. */
	if ((size_t)(c->end - c->p) < SMP_NREGS * 8)
		return false;
	for (int i = 0; i < SMP_NREGS; i++)
		regs[i] = rd64(c->p + 8 * i);
	c->p += SMP_NREGS * 8;
	*have = true;
	return true;
}

/* PERF_SAMPLE_RAW, { u32 size; char data[size]; } padded by the kernel so
 * that the record stays 8-byte aligned (size counts the padding): the u32
 * field at off of a tracepoint's data. */
static inline bool cur_raw_u32(struct cursor *c, uint32_t off, uint32_t *v)
{
	uint32_t size;

	if ((size_t)(c->end - c->p) < 4)
		return false;
	size = rd32(c->p);
	if ((size_t)(c->end - c->p) - 4 < size || (4 + (size_t)size) % 8 != 0 || (size_t)off + 4 > size)
		return false;
	*v = rd32(c->p + 4 + off);
	c->p += 4 + (size_t)size;
	return true;
}

/* PERF_SAMPLE_STACK_USER: { u64 size; char data[size]; u64 dyn_size } */
static inline bool cur_stack(struct cursor *c, const uint8_t **stack,
			     size_t *stack_size)
{
	uint64_t size, dyn;

	if (!cur_u64(c, &size))
		return false;
	/* size 0 (no user regs: a kernel thread) has no dyn_size. */
	if (size) {
		if (size > (uint64_t)(c->end - c->p))
			return false;
		*stack = c->p;
		c->p += size;
		if (!cur_u64(c, &dyn) || dyn > size)
			return false;
		*stack_size = (size_t)dyn;
		if (!dyn)
			*stack = NULL;
	}
	return true;
}

/* A sample of the SMP_EVENT_BLOCKS event, after its identifier. */
static int parse_block(const struct smp_event *ev, struct cursor *c,
		       const struct smp_sink *sink, struct smp_parse_ctx *ctx)
{
	uint64_t st = ev->block_attr.sample_type;
	struct smp_block b;

	memset(&b, 0, sizeof(b));
	if ((st & PERF_SAMPLE_TID) && !cur_tid(c, &b.pid, &b.tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && !cur_u64(c, &b.time))
		return -EINVAL;
	if (!cur_cpu(c, st, NULL))
		return -EINVAL;
	if ((st & PERF_SAMPLE_REGS_USER) && !cur_regs(c, b.regs, &b.have_regs))
		return -EINVAL;
	if (ctx && ctx->stats)
		ctx->stats->blocks++;
	if (sink && sink->block)
		sink->block(sink->arg, &b);
	return 0;
}

/* A sample of the SMP_EVENT_WAKEUPS tracepoint, after its identifier. */
static int parse_wakeup(const struct smp_event *ev, struct cursor *c,
			const struct smp_sink *sink, struct smp_parse_ctx *ctx,
			bool sampled)
{
	uint64_t st = sampled ? ev->wake_attr.sample_type : ev->wake_all_attr.sample_type;
	struct smp_wakeup w;

	memset(&w, 0, sizeof(w));
	w.sampled = sampled;
	if ((st & PERF_SAMPLE_TID) && !cur_tid(c, &w.pid, &w.tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && !cur_u64(c, &w.time))
		return -EINVAL;
	if (!cur_cpu(c, st, NULL))
		return -EINVAL;
	if (st & PERF_SAMPLE_RAW) {
		uint32_t v;

		if (!cur_raw_u32(c, ev->wake_pid_off, &v))
			return -EINVAL;
		w.wakee_tid = (pid_t)v;
	}
	if ((st & PERF_SAMPLE_REGS_USER) && !cur_regs(c, w.regs, &w.have_regs))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STACK_USER) &&
	    !cur_stack(c, &w.stack, &w.stack_size))
		return -EINVAL;
	w.owner = ctx ? ctx->tid : 0;
	if (ctx && ctx->stats && sampled)
		ctx->stats->wakeups++;
	if (sink && sink->wakeup)
		sink->wakeup(sink->arg, &w);
	return 0;
}

/* A sample of SMP_EVENT_TASKS' fork tracepoint, after its identifier: the
 * creator's, at its clone. */
static int parse_fork(const struct smp_event *ev, struct cursor *c, const struct smp_sink *sink)
{
	uint64_t st = ev->fork_attr.sample_type;
	struct smp_task k;
	uint32_t v;

	memset(&k, 0, sizeof(k));
	k.kind = SMP_TASK_CREATOR;
	if ((st & PERF_SAMPLE_TID) && !cur_tid(c, &k.pid, &k.tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && !cur_u64(c, &k.time))
		return -EINVAL;
	if (!cur_cpu(c, st, NULL) || !(st & PERF_SAMPLE_RAW) || !cur_raw_u32(c, ev->fork_child_off, &v))
		return -EINVAL;
	k.child = (pid_t)v;
	if ((st & PERF_SAMPLE_REGS_USER) && !cur_regs(c, k.regs, &k.have_regs))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STACK_USER) && !cur_stack(c, &k.stack, &k.stack_size))
		return -EINVAL;
	if (sink && sink->task)
		sink->task(sink->arg, &k);
	return 0;
}

static int parse_sample(const struct smp_event *ev, const uint8_t *rec,
			size_t len, uint16_t misc, const struct smp_sink *sink,
			struct smp_parse_ctx *ctx)
{
	uint64_t st = ev->attr.sample_type, count = 0;
	bool have_count = false;
	struct cursor c = { rec + sizeof(struct perf_event_header), rec + len };
	struct smp_sample s;

	/* Only the fields smp_thread_open() asks for, in the kernel's order
	 * (perf_event.h, PERF_RECORD_SAMPLE); addr/id are never requested. */
	if (st & (PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
		  PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
		  PERF_SAMPLE_BRANCH_STACK))
		return -EOPNOTSUPP;
	if (st & PERF_SAMPLE_IDENTIFIER) {
		/* The extra events share the ring: the first field says
		 * whose sample this is. */
		uint64_t id, id_main = SMP_SYNTH_ID_MAIN,
			     id_block = SMP_SYNTH_ID_BLOCK,
			     id_wakeup = SMP_SYNTH_ID_WAKEUP,
			     id_wakeup_all = SMP_SYNTH_ID_WAKEUP_ALL,
			     id_fork = SMP_SYNTH_ID_FORK;

		if (!cur_u64(&c, &id))
			return -EINVAL;
		if (ctx && ctx->id_main) {
			id_main = ctx->id_main;
			id_block = ctx->id_block;
			id_wakeup = ctx->id_wakeup;
			id_wakeup_all = ctx->id_wakeup_all;
			id_fork = ctx->id_fork;
		}
		if (id != id_main) {
			/* A CPU's ring: the inherited events of every
			 * process write there too, each set with its ids. */
			const uint64_t *kind = ev->ids ? psup_u64map_find(ev->ids, id) : NULL;

			if (kind) {
				id_block = SMP_SYNTH_ID_BLOCK;
				id_wakeup = SMP_SYNTH_ID_WAKEUP;
				id_wakeup_all = SMP_SYNTH_ID_WAKEUP_ALL;
				id = *kind;
			}
			if ((ev->flags & SMP_EVENT_BLOCKS) && id == id_block)
				return parse_block(ev, &c, sink, ctx);
			if ((ev->flags & SMP_EVENT_WAKEUPS) && id == id_wakeup)
				return parse_wakeup(ev, &c, sink, ctx, true);
			if ((ev->flags & SMP_EVENT_WAKEUPS) && id == id_wakeup_all)
				return parse_wakeup(ev, &c, sink, ctx, false);
			if ((ev->flags & SMP_EVENT_TASKS) && id == id_fork && id)
				return parse_fork(ev, &c, sink);
			return -EINVAL;
		}
	}
	memset(&s, 0, sizeof(s));
	if ((st & PERF_SAMPLE_IP) && !cur_u64(&c, &s.ip))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TID) && !cur_tid(&c, &s.pid, &s.tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && !cur_u64(&c, &s.time))
		return -EINVAL;
	if (!cur_cpu(&c, st, &s.cpu))
		return -EINVAL;
	if ((st & PERF_SAMPLE_PERIOD) && !cur_u64(&c, &s.period))
		return -EINVAL;
	if (st & PERF_SAMPLE_READ) {
		/* read_format 0: the event's value alone. */
		if (ev->attr.read_format || !cur_u64(&c, &count))
			return -EINVAL;
		have_count = true;
	}
	if ((st & PERF_SAMPLE_REGS_USER) && !cur_regs(&c, s.regs, &s.have_regs))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STACK_USER) &&
	    !cur_stack(&c, &s.stack, &s.stack_size))
		return -EINVAL;
	s.user = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;

	/*
	 * The weight. Kernel 6.18 (checked by experiment, see
	 * thread_randomize_period()): after PERF_EVENT_IOC_PERIOD the hrtimer
	 * clocks fire at the new period but PERF_SAMPLE_PERIOD keeps the period
	 * of the open (hw.last_period is only set when the hrtimer is set up),
	 * and each change restarts the period, dropping the part already run.
	 * The count read at each sample gives the exact weight instead: the
	 * task time (or events) since the previous sample, partial periods
	 * included. After a loss that delta would pile the lost samples' time
	 * on one sample, so then it is the period in effect at the sample.
	 */
	if (ctx) {
		if (have_count && ctx->count_valid && !ctx->by_period &&
		    count > ctx->last_count)
			s.period = count - ctx->last_count;
		else if (ev->is_clock && ctx->cur_period)
			s.period = s.time < ctx->switch_time ? ctx->prev_period
							     : ctx->cur_period;
		ctx->last_count = count;
		ctx->count_valid = have_count;
	}
	if (ctx && ctx->stats)
		ctx->stats->samples++;
	if (sink && sink->sample)
		sink->sample(sink->arg, &s);
	return 0;
}

/*
 * { u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino,
 *   ino_generation; u32 prot, flags; char filename[] (NUL-padded to 8);
 *   sample_id } (perf_event.h). A record with a build-id in place of the
 * device and inode (PERF_RECORD_MISC_MMAP_BUILD_ID) is never asked for.
 * The name is the kernel's, NUL-padded in the record and handed on in
 * place: a record without a NUL in it is refused.
 */
static int parse_mmap2(const struct smp_event *ev, const uint8_t *r, size_t len, uint16_t misc,
		       const struct smp_sink *sink, struct smp_parse_ctx *ctx)
{
	const size_t body = 8 + 3 * 8 + 8 + 2 * 8 + 8;
	size_t ts = ev->attr.sample_id_all ? trailer_size(ev->attr.sample_type) : 0;
	const uint8_t *p = r + sizeof(struct perf_event_header);
	struct smp_mmap m;
	pid_t pid, tid;

	if (parse_trailer(ev, r, len, body, &pid, &tid, &m.time, NULL))
		return -EINVAL;
	(void)pid;
	(void)tid;
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
		return 0;
	m.pid = (pid_t)rd32(p);
	m.tid = (pid_t)rd32(p + 4);
	m.start = rd64(p + 8);
	m.len = rd64(p + 16);
	m.pgoff = rd64(p + 24);
	m.dev_major = rd32(p + 32);
	m.dev_minor = rd32(p + 36);
	m.inode = rd64(p + 40);
	m.prot = rd32(p + 56);
	m.flags = rd32(p + 60);
	m.path = (const char *)p + body;
	if (!memchr(m.path, '\0', len - sizeof(struct perf_event_header) - body - ts))
		return -EINVAL;
	if (ctx && ctx->stats)
		ctx->stats->mmaps++;
	if (sink && sink->mmap)
		sink->mmap(sink->arg, &m);
	return 0;
}

int smp_parse_record_ctx(const struct smp_event *ev, const void *rec,
			 size_t len, const struct smp_sink *sink,
			 struct smp_parse_ctx *ctx)
{
	const uint8_t *r = rec;
	struct perf_event_header h;
	struct smp_switch sw;
	uint64_t count;
	pid_t pid, tid;
	uint64_t time;

	if (!ev || !rec || len < sizeof(h))
		return -EINVAL;
	memcpy(&h, r, sizeof(h));
	if (h.size < sizeof(h) || h.size > len)
		return -EINVAL;
	len = h.size;

	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		return parse_sample(ev, r, len, h.misc, sink, ctx);
	case PERF_RECORD_LOST:
		/* { u64 id; u64 lost; sample_id } */
		if (parse_trailer(ev, r, len, 16, &pid, &tid, &time, NULL))
			return -EINVAL;
		count = rd64(r + sizeof(h) + 8);
		goto lost;
	case PERF_RECORD_LOST_SAMPLES:
		/* { u64 lost; sample_id } */
		if (parse_trailer(ev, r, len, 8, &pid, &tid, &time, NULL))
			return -EINVAL;
		count = rd64(r + sizeof(h));
		goto lost;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		/* { sample_id } or { u32 next_prev_pid, tid; sample_id } */
		if (parse_trailer(ev, r, len,
				  h.type == PERF_RECORD_SWITCH ? 0 : 8, &sw.pid,
				  &sw.tid, &sw.time, &sw.cpu))
			return -EINVAL;
		sw.out = !!(h.misc & PERF_RECORD_MISC_SWITCH_OUT);
		sw.preempt = sw.out &&
			     (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		if (ctx && ctx->stats)
			ctx->stats->switches++;
		if (sink && sink->context_switch)
			sink->context_switch(sink->arg, &sw);
		return 0;
	case PERF_RECORD_COMM: {
		/* { u32 pid, tid; char comm[] (NUL-padded to 8); sample_id } */
		char name[16];
		size_t ts = ev->attr.sample_id_all ? trailer_size(ev->attr.sample_type) : 0;
		size_t room;

		if (len < sizeof(h) + 8 + ts)
			return -EINVAL;
		room = len - sizeof(h) - 8 - ts;
		if (room > sizeof(name) - 1)
			room = sizeof(name) - 1;
		memcpy(name, r + sizeof(h) + 8, room);
		name[room] = '\0';
		if (parse_trailer(ev, r, len, 8, &pid, &tid, &time, NULL))
			return -EINVAL;
		pid = (pid_t)rd32(r + sizeof(h));
		tid = (pid_t)rd32(r + sizeof(h) + 4);
		if (sink && sink->comm)
			sink->comm(sink->arg, pid, tid, name, h.misc & PERF_RECORD_MISC_COMM_EXEC, time);
		return 0;
	}
	case PERF_RECORD_MMAP2:
		return parse_mmap2(ev, r, len, h.misc, sink, ctx);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		/* { u32 pid, ppid; u32 tid, ptid; u64 time; sample_id } */
		struct smp_task k;
		const uint8_t *b = r + sizeof(h);

		if (!(ev->flags & SMP_EVENT_TASKS))
			return 0; /* (every task's: the comm records bring them) */
		if (parse_trailer(ev, r, len, 24, &pid, &tid, &time, NULL))
			return -EINVAL;
		memset(&k, 0, sizeof(k));
		k.kind = h.type == PERF_RECORD_FORK ? SMP_TASK_FORK : SMP_TASK_EXIT;
		k.pid = (pid_t)rd32(b);
		k.ppid = (pid_t)rd32(b + 4);
		k.tid = (pid_t)rd32(b + 8);
		k.ptid = (pid_t)rd32(b + 12);
		/* The trailer's time: the clock psup asked for (the body's is
		 * the kernel's local clock). */
		k.time = time;
		if (sink && sink->task)
			sink->task(sink->arg, &k);
		return 0;
	}
	default:
		/* throttle, unthrottle, ...: nothing the profile needs. */
		return 0;
	}

lost:
	/* The trailer names the task current when the kernel wrote the
	 * record; the ring's owner is the one that lost samples. */
	if (ctx && ctx->tid)
		tid = ctx->tid;
	if (ctx) {
		ctx->count_valid = false;
		if (ctx->stats)
			ctx->stats->lost += count;
	}
	if (sink && sink->lost)
		sink->lost(sink->arg, tid, count);
	return 0;
}

int smp_parse_record(const struct smp_event *ev, const void *rec, size_t len,
		     const struct smp_sink *sink)
{
	return smp_parse_record_ctx(ev, rec, len, sink, NULL);
}

int smp_ring_walk(const struct smp_event *ev, const uint8_t *data, size_t size,
		  uint64_t *tail, uint64_t head, uint8_t *bounce,
		  size_t bounce_size, const struct smp_sink *sink,
		  struct smp_parse_ctx *ctx)
{
	struct perf_event_header h;
	const uint8_t *rec;
	int n = 0, err;

	if (head - *tail > size)
		return -EIO;
	while (head != *tail) {
		uint64_t avail = head - *tail;
		size_t off = (size_t)(*tail & (size - 1));
		size_t first;

		if (avail < sizeof(h))
			return -EIO;
		first = size - off;
		if (first >= sizeof(h)) {
			memcpy(&h, data + off, sizeof(h));
		} else {
			memcpy(&h, data + off, first);
			memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		}
		/* A size the kernel cannot have written: stop rather than
		 * loop on it or read past what was published. */
		if (h.size < sizeof(h) || h.size > size || h.size > avail ||
		    h.size > bounce_size)
			return -EIO;
		if (first >= h.size) {
			rec = data + off;
		} else {
			memcpy(bounce, data + off, first);
			memcpy(bounce + first, data, h.size - first);
			rec = bounce;
			if (ctx && ctx->stats)
				ctx->stats->wrapped++;
		}
		err = smp_parse_record_ctx(ev, rec, h.size, sink, ctx);
		if (err) {
			pr_debug("sampler: record type %u size %u refused (%d)",
				 h.type, h.size, err);
			if (ctx && ctx->stats)
				ctx->stats->bad++;
		}
		if (ctx && ctx->stats)
			ctx->stats->records++;
		*tail += h.size;
		n++;
	}
	return n;
}

static long sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
				int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* Opens one of the extra events on t's thread, disabled, redirects its
 * records into t's ring, learns its id, then enables it. */
static int thread_open_extra(struct smp_thread *t,
			     const struct perf_event_attr *a, int *fd,
			     uint64_t *id)
{
	struct perf_event_attr attr = *a;

	attr.disabled = 1;
	*fd = (int)sys_perf_event_open(&attr, t->tid, t->cpu, -1,
				       PERF_FLAG_FD_CLOEXEC);
	if (*fd < 0) {
		*fd = -1;
		return -errno;
	}
	if (ioctl(*fd, PERF_EVENT_IOC_SET_OUTPUT, t->fd) < 0 ||
	    ioctl(*fd, PERF_EVENT_IOC_ID, id) < 0 ||
	    ioctl(*fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -errno;
	return 0;
}

/* Opens attr on (pid, cpu) and maps its ring: the part a thread's ring and
 * a CPU's share. *out is allocated with no extra event. */
static int ring_open(const struct smp_event *ev, struct perf_event_attr attr, pid_t pid,
		     int cpu, unsigned ring_pages, struct smp_thread **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	bool stack = ev->flags & SMP_EVENT_STACK;
	bool shrink = ring_pages == 0;
	unsigned min_pages;
	struct smp_thread *t;
	int err;

	if (ring_pages == 0)
		ring_pages = stack ? SMP_RING_PAGES_STACK : SMP_RING_PAGES_NOSTACK;
	if (ring_pages & (ring_pages - 1))
		return -EINVAL;
	/* The kernel reserves the whole snapshot in every stack sample, so a
	 * ring smaller than one sample would only ever record losses. */
	min_pages = 1;
	while (stack && min_pages * page < STACK_SAMPLE_MAX)
		min_pages *= 2;
	if (ring_pages < min_pages)
		return -EINVAL;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ev = ev;
	t->tid = pid;
	t->fd = -1;
	t->block_fd = -1;
	t->wake_fd = -1;
	t->wake_all_fd = -1;
	t->fork_fd = -1;
	t->cpu = cpu;
	t->map = MAP_FAILED;

	attr.disabled = 0;
	attr.watermark = 1;
	for (;;) {
		/* Wakeup (EPOLLIN) at half the ring: the supervisor drains
		 * while the other half still has room. */
		attr.wakeup_watermark = (uint32_t)(ring_pages * page / 2);
		t->fd = (int)sys_perf_event_open(&attr, pid, cpu, -1,
						 PERF_FLAG_FD_CLOEXEC);
		if (t->fd < 0) {
			err = -errno;
			goto fail;
		}
		t->map_len = (1 + (size_t)ring_pages) * page;
		t->map = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE,
			      MAP_SHARED, t->fd, 0);
		if (t->map != MAP_FAILED)
			break;
		err = -errno;
		/* Over perf_event_mlock_kb + RLIMIT_MEMLOCK (non-root, many
		 * threads): a smaller default ring beats no samples. */
		if (!shrink || (err != -EPERM && err != -ENOMEM) ||
		    ring_pages / 2 < min_pages)
			goto fail;
		close(t->fd);
		t->fd = -1;
		ring_pages /= 2;
		pr_debug("sampler: %s %d: ring refused (%d), trying %u pages",
			 cpu < 0 ? "tid" : "cpu", cpu < 0 ? pid : cpu, err, ring_pages);
	}
	t->data = (uint8_t *)t->map + page;
	t->data_size = (size_t)ring_pages * page;
	t->bounce_size = t->data_size < BOUNCE_MAX ? t->data_size : BOUNCE_MAX;
	t->bounce = malloc(t->bounce_size);
	if (!t->bounce) {
		err = -ENOMEM;
		goto fail;
	}
	t->rng = psup_rand_seed() ^ psup_hash64((uint64_t)(cpu < 0 ? pid : -2 - cpu));
	if (!t->rng)
		t->rng = 0x9e3779b97f4a7c15ULL;
	t->ctx.tid = pid > 0 ? pid : 0;
	t->ctx.cur_period = ev->period;
	t->ctx.prev_period = ev->period;
	t->ctx.switch_time = 0;
	/* The event counts from the open: the first sample's weight is its
	 * count. */
	t->ctx.last_count = 0;
	t->ctx.count_valid = true;
	t->ctx.stats = &t->stats;
	if ((ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER) &&
	    ioctl(t->fd, PERF_EVENT_IOC_ID, &t->ctx.id_main) < 0) {
		err = -errno;
		goto fail;
	}
	*out = t;
	return 0;

fail:
	if (t->map != MAP_FAILED)
		munmap(t->map, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
	free(t->bounce);
	free(t);
	return err;
}

int smp_thread_open(const struct smp_event *ev, pid_t tid, unsigned ring_pages,
		    struct smp_thread **out)
{
	struct perf_event_attr attr = ev->attr;
	struct smp_thread *t;
	int err;

	/* Sampled per CPU: the thread's event only counts (no timer to stop
	 * and restart at each of its context switches) and carries its
	 * switch records and extra events. */
	if (ev->per_cpu)
		attr.sample_period = 0;
	err = ring_open(ev, attr, tid, -1, ring_pages, &t);
	if (err)
		return err;
	/* The extra events share the ring: their samples carry an id. */
	if (!(ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
		goto out;
	if (ev->flags & SMP_EVENT_BLOCKS) {
		err = thread_open_extra(t, &ev->block_attr, &t->block_fd, &t->ctx.id_block);
		if (err)
			goto fail;
	}
	/* The CPUs' rings have every wakeup already (smp_cpu_open()). */
	if ((ev->flags & SMP_EVENT_WAKEUPS) && !ev->cpu_wakeups) {
		err = thread_open_extra(t, &ev->wake_attr, &t->wake_fd, &t->ctx.id_wakeup);
		if (!err)
			err = thread_open_extra(t, &ev->wake_all_attr, &t->wake_all_fd,
						&t->ctx.id_wakeup_all);
		if (err)
			goto fail;
	}
out:
	*out = t;
	return 0;

fail:
	smp_thread_close(t, NULL);
	return err;
}

/* One inherited event of tid on cpu, writing into ring (that CPU's), its id
 * known to the CPU rings' parser as kind (SMP_SYNTH_ID_*). */
static int inherited_open(struct smp_thread *t, const struct perf_event_attr *a, int cpu,
			  const struct smp_thread *ring, uint64_t kind, bool processes, int *fd, uint64_t *id)
{
	struct perf_event_attr attr = *a;
	uint64_t *v;

	/* Enabled from the start: tid is stopped (at its first stop, or
	 * before it, at its creator's fork stop), so it has nothing to record
	 * until it is resumed, long after its output is set. An ENABLE ioctl
	 * per CPU was an IPI to the CPU tid last ran on, two per process of a
	 * fork/exec storm. Test: t3076-process-storm-syscalls. */
	attr.disabled = 0;
	/* Without inherit_thread, new processes too: the kernel copies the
	 * events in fork() as in clone(), and every copy points at this one
	 * (inherit_event() takes the original's parent). */
	attr.inherit = 1;
	attr.inherit_thread = !processes;
	*fd = (int)sys_perf_event_open(&attr, t->tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (*fd < 0) {
		*fd = -1;
		return -errno;
	}
	if (ioctl(*fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) < 0 || ioctl(*fd, PERF_EVENT_IOC_ID, id) < 0)
		return -errno;
	if (kind != SMP_SYNTH_ID_MAIN) {
		v = psup_u64map_upsert(t->ev->ids, *id, NULL);
		if (!v)
			return -ENOMEM;
		*v = kind;
	}
	return 0;
}

int smp_thread_open_inherited(const struct smp_event *ev, pid_t tid, struct smp_thread *const *cpu_rings,
			      unsigned ncpu, bool processes, struct smp_thread **out)
{
	struct smp_thread *t;
	unsigned i;
	int err = 0;

	if (!ev->inherit || !ncpu)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ev = ev;
	t->tid = tid;
	t->fd = t->block_fd = t->wake_fd = t->wake_all_fd = t->fork_fd = t->cpu = -1;
	t->map = MAP_FAILED;
	t->ninh = ncpu;
	t->inh_fds = malloc(t->ninh * sizeof(*t->inh_fds));
	t->inh_ids = calloc(t->ninh, sizeof(*t->inh_ids));
	if (!t->inh_fds || !t->inh_ids) {
		t->ninh = 0;
		smp_thread_close(t, NULL);
		return -ENOMEM;
	}
	for (i = 0; i < t->ninh; i++)
		t->inh_fds[i] = -1;
	/* One event per CPU: the block event (a sample at each switch-out)
	 * carries the switch records too, or without blocks a dummy does (an
	 * inherited event takes PERF_SAMPLE_READ only with a group read, and a
	 * record's sample_id holds no read value: the trailers keep the CPU
	 * ring's layout). Renames come from the CPU events' comm records, the
	 * wakeups from their tracepoint events (smp_cpu_open()): a tracepoint
	 * event costs the kernel a search of every trace event at each copy,
	 * which would be in every clone(). */
	struct perf_event_attr side = ev->attr;
	uint64_t kind = SMP_SYNTH_ID_MAIN;

	if (ev->flags & SMP_EVENT_BLOCKS) {
		side = ev->block_attr;
		kind = SMP_SYNTH_ID_BLOCK;
	} else {
		side.type = PERF_TYPE_SOFTWARE;
		side.config = PERF_COUNT_SW_DUMMY;
		side.sample_period = 0;
		side.sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
	}
	side.comm = 0;
	/* The executable mappings as they are made: a process's maps are
	 * known without reading /proc, and after it is gone (a short
	 * process's samples are drained after its end). */
	side.mmap = 1;
	side.mmap2 = 1;
	side.context_switch = !!(ev->flags & SMP_EVENT_SWITCHES);
	for (i = 0; i < ncpu && !err; i++)
		err = inherited_open(t, &side, cpu_rings[i]->cpu, cpu_rings[i], kind, processes, &t->inh_fds[i],
				     &t->inh_ids[i]);
	if (err) {
		smp_thread_close(t, NULL);
		return err;
	}
	*out = t;
	return 0;
}

int smp_cpu_open(const struct smp_event *ev, int cpu, unsigned ring_pages, struct smp_thread **out)
{
	struct perf_event_attr attr = ev->attr;

	if (!ev->per_cpu || cpu < 0)
		return -EINVAL;
	/* Every task on the CPU, the idle task left out; task-clock has no
	 * meaning without a task. The samples name their thread. */
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.exclude_idle = 1;
	attr.context_switch = 0;
	int err = ring_open(ev, attr, -1, cpu, ring_pages, out);
	if (err)
		return err;
	(*out)->ctx.by_period = true;
	/* Inherited, the wakeups are the CPU's: every task's, which the
	 * caller filters (smp_thread_open_inherited()). */
	if (ev->inherit && (ev->flags & SMP_EVENT_WAKEUPS) &&
	    (attr.sample_type & PERF_SAMPLE_IDENTIFIER)) {
		struct smp_thread *t = *out;

		err = thread_open_extra(t, &ev->wake_attr, &t->wake_fd, &t->ctx.id_wakeup);
		if (!err)
			err = thread_open_extra(t, &ev->wake_all_attr, &t->wake_all_fd, &t->ctx.id_wakeup_all);
		if (err) {
			smp_thread_close(t, NULL);
			*out = NULL;
			return err;
		}
	}
	/* Every clone's creator on this CPU, any task's (the caller keeps
	 * its program's): without it, threads told by records have no
	 * creation context, nothing worse. */
	if (ev->inherit && (ev->flags & SMP_EVENT_TASKS) && ev->fork_ok &&
	    (attr.sample_type & PERF_SAMPLE_IDENTIFIER)) {
		struct smp_thread *t = *out;

		err = thread_open_extra(t, &ev->fork_attr, &t->fork_fd, &t->ctx.id_fork);
		if (err) {
			pr_debug("sampler: CPU %d: %s: %s", cpu, SMP_FORK_TRACEPOINT, strerror(-err));
			if (t->fork_fd >= 0)
				close(t->fork_fd);
			t->fork_fd = -1;
			t->ctx.id_fork = 0;
		}
	}
	return 0;
}

int smp_thread_fd(const struct smp_thread *t)
{
	return t->fd;
}

pid_t smp_thread_tid(const struct smp_thread *t)
{
	return t->tid;
}

bool smp_thread_inherits(const struct smp_thread *t)
{
	return t->ninh > 0;
}

void smp_thread_get_stats(const struct smp_thread *t,
			  struct smp_thread_stats *out)
{
	*out = t->stats;
}

/*
 * DCPI-style period randomization: base * (1 + u), u uniform in
 * [-jitter, +jitter]%.
 *
 * Verified on kernel 6.18 (task-clock on a spinning child, draining every
 * 20 ms): after PERF_EVENT_IOC_PERIOD to 3 ms the samples' spacing went from
 * 1000 us to 3000 us at once, and to 500 us after a change to 0.5 ms; the
 * samples' PERF_SAMPLE_PERIOD stayed at the open's 1 ms (see parse_sample()).
 * The ioctl restarts the period (period_left = 0): the task time since the
 * last sample goes to the next sample's weight (parse_sample() weighs by
 * count), but the spacing grows, so changing at every drain of a supervisor
 * that drains more often than the period cost 15% of the samples. The ioctl
 * is also an IPI to the target's CPU when it runs: ~13-20 us measured on these
 * VMs. So the period changes once every JITTER_EVERY samples: the sampling
 * phase still moves at random every few ms, at ~1/8 of the cost.
 */
#define JITTER_EVERY 8
/* A CPU's ring weighs its samples by the period (parse_sample()), so the part
 * of a period a change drops is lost time: at one change in 8 samples about
 * 6% of the CPU time went unsampled. One in 64 loses under 1%, and each
 * change is an IPI to a CPU that may be running the program. */
#define JITTER_EVERY_CPU 64

static void thread_randomize_period(struct smp_thread *t)
{
	const struct smp_event *ev = t->ev;
	uint64_t base = ev->period, span, next, now;

	if (!ev->jitter_pct ||
	    t->stats.samples - t->samples_at_change <
		    (t->ctx.by_period ? JITTER_EVERY_CPU : JITTER_EVERY))
		return;
	span = base / 100 * ev->jitter_pct + base % 100 * ev->jitter_pct / 100;
	if (!span)
		return;
	next = base - span + psup_rand_next(&t->rng) % (2 * span + 1);
	if (!next)
		next = 1;
	now = psup_now_ns();
	if (ioctl(t->fd, PERF_EVENT_IOC_PERIOD, &next) < 0) {
		pr_debug("sampler: tid %d: PERF_EVENT_IOC_PERIOD: %d", t->tid,
			 -errno);
		return;
	}
	t->ctx.prev_period = t->ctx.cur_period;
	t->ctx.cur_period = next;
	t->ctx.switch_time = now;
	t->samples_at_change = t->stats.samples;
	t->stats.period_sets++;
}

/*
 * Wakeups with a stack come one in SMP_WAKEUP_PERIOD on average, the period
 * drawn anew every JITTER_EVERY of them from [P/2, 3P/2]: a fixed period
 * could lock onto a program that wakes its threads in a fixed order. A CPU's
 * ring sees every task's wakeups on that CPU (the program's stops and
 * resumes among them): redrawn every JITTER_EVERY of them, spawn 5000 made
 * 9,400 of these ioctls, each an IPI to a CPU that may run the program, so
 * there the period is redrawn every JITTER_EVERY_CPU (still every ~1,000
 * wakeups).
 */
static void thread_randomize_wakeups(struct smp_thread *t)
{
	uint64_t next;

	if (t->wake_fd < 0 || t->stats.wakeups - t->wakeups_at_change <
				      (t->ctx.by_period ? JITTER_EVERY_CPU : JITTER_EVERY))
		return;
	next = SMP_WAKEUP_PERIOD / 2 + psup_rand_next(&t->rng) % (SMP_WAKEUP_PERIOD + 1);
	if (ioctl(t->wake_fd, PERF_EVENT_IOC_PERIOD, &next) < 0)
		pr_debug("sampler: tid %d: wakeup period: %d", t->tid, -errno);
	else
		t->stats.wake_period_sets++;
	t->wakeups_at_change = t->stats.wakeups;
}

static int thread_drain(struct smp_thread *t, const struct smp_sink *sink,
			bool randomize)
{
	struct perf_event_mmap_page *mp = t->map;
	uint64_t head;
	int n;

	if (t->map == MAP_FAILED)
		return 0; /* inherited: its records are in the CPUs' rings */
	head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);

	n = smp_ring_walk(t->ev, t->data, t->data_size, &t->tail, head,
			  t->bounce, t->bounce_size, sink, &t->ctx);
	if (n == -EIO) {
		/* Framing lost: nothing after this point can be trusted to
		 * start a record. Drop what was written so the ring does not
		 * stay full (and fail the same way at every drain). */
		pr_debug("sampler: tid %d: corrupt ring at %llu (head %llu), "
			 "dropped",
			 t->tid, (unsigned long long)t->tail,
			 (unsigned long long)head);
		t->tail = head;
	}
	/* Our reads of the records happen before the kernel may reuse them. */
	__atomic_store_n(&mp->data_tail, t->tail, __ATOMIC_RELEASE);
	if (randomize) {
		thread_randomize_period(t);
		thread_randomize_wakeups(t);
	}
	return n;
}

int smp_thread_drain(struct smp_thread *t, const struct smp_sink *sink)
{
	return thread_drain(t, sink, true);
}

void smp_thread_close(struct smp_thread *t, const struct smp_sink *sink)
{
	if (!t)
		return;
	if (t->inh_fds) {
		/* Closing the parents removes their copies in every thread. */
		for (unsigned i = 0; i < t->ninh; i++) {
			if (t->inh_fds[i] < 0)
				continue;
			psup_u64map_remove(t->ev->ids, t->inh_ids[i]);
			close(t->inh_fds[i]);
		}
		free(t->inh_fds);
		free(t->inh_ids);
		free(t);
		return;
	}
	if (t->block_fd >= 0)
		ioctl(t->block_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (t->wake_fd >= 0)
		ioctl(t->wake_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (t->wake_all_fd >= 0)
		ioctl(t->wake_all_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (t->fork_fd >= 0)
		ioctl(t->fork_fd, PERF_EVENT_IOC_DISABLE, 0);
	ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
	if (sink)
		thread_drain(t, sink, false);
	/* The redirected events hold references on the ring: close them
	 * first, though the kernel frees it only after the last anyway. */
	if (t->block_fd >= 0)
		close(t->block_fd);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	if (t->wake_all_fd >= 0)
		close(t->wake_all_fd);
	if (t->fork_fd >= 0)
		close(t->fork_fd);
	munmap(t->map, t->map_len);
	close(t->fd);
	free(t->bounce);
	free(t);
}
