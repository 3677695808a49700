#ifndef PSUP_SAMPLER_SAMPLER_INTERNAL_H
#define PSUP_SAMPLER_SAMPLER_INTERNAL_H

/*
 * What event.c and ring.c share, and the seams the unit tests use to feed
 * synthetic input (test-sampler.c). Not for other parts.
 */

#include "sampler/sampler.h"

#include <linux/perf_event.h>

#include "common/hash.h"

/* The registers smp_thread_open() asks for, in perf's PERF_REG_X86_* bits:
 * AX..FLAGS are bits 0-9, R8..R15 bits 16-23. The kernel writes them in bit
 * order, which is enum smp_reg's order. */
#define SMP_REGS_MASK (((1ULL << 10) - 1) | (((1ULL << 8) - 1) << 16))

/* The ids smp_parse_record() assumes without a thread (sampler.h). */
#define SMP_SYNTH_ID_MAIN 1
#define SMP_SYNTH_ID_BLOCK 2
#define SMP_SYNTH_ID_WAKEUP 3
#define SMP_SYNTH_ID_WAKEUP_ALL 4
#define SMP_SYNTH_ID_FORK 5

/* The tracepoint SMP_EVENT_TASKS samples per CPU, in the creator's context
 * after the clone made the new task, and the field read (the new thread). */
#define SMP_FORK_TRACEPOINT "sched/sched_process_fork"
#define SMP_FORK_FIELD "child_pid"

/* The tracepoint SMP_EVENT_WAKEUPS samples, and the field read from its raw
 * data (the wakee). */
#define SMP_WAKEUP_TRACEPOINT "sched/sched_waking"
#define SMP_WAKEUP_TRACEPOINT_OLD "sched/sched_wakeup" /* before 4.3 */
#define SMP_WAKEUP_FIELD "pid"

struct smp_event {
	char *name;                  /* canonical name, heap */
	struct perf_event_attr attr; /* everything smp_thread_open() passes */
	/* SMP_EVENT_BLOCKS / SMP_EVENT_WAKEUPS: opened beside attr on the
	 * same thread, output redirected into its ring. */
	struct perf_event_attr block_attr;
	struct perf_event_attr wake_attr;     /* 1 in ~SMP_WAKEUP_PERIOD, with stack */
	struct perf_event_attr wake_all_attr; /* every wakeup, who woke whom only */
	uint32_t wake_pid_off;                /* offset of the wakee's pid in the raw data */
	/* SMP_EVENT_TASKS: every clone's creator, with regs and stack, per
	 * CPU; fork_ok false where the tracepoint cannot be used (the fork
	 * and exit records still come). */
	struct perf_event_attr fork_attr;
	uint32_t fork_child_off; /* offset of the new thread's id in the raw data */
	bool fork_ok;
	uint64_t period; /* base period */
	unsigned jitter_pct;
	unsigned flags; /* enum smp_event_flags */
	bool is_clock;
	bool per_cpu; /* sampled by smp_cpu_open(); threads only count */
	/* Per CPU, a process's side-band events are inherited by its new
	 * threads (smp_thread_open_inherited()); false where the kernel
	 * refused inherit_thread (before 5.13) or smp_event_set_inherit() said
	 * so. */
	bool inherit;
	/* The CPUs' rings carry every wakeup (smp_cpu_open(), with inherit):
	 * threads' own rings then have none. */
	bool cpu_wakeups;
	/* Their ids (PERF_EVENT_IOC_ID) -> SMP_SYNTH_ID_BLOCK/WAKEUP/
	 * WAKEUP_ALL, for the CPU rings' parser. */
	struct psup_u64map *ids;
};

/* A ring's parsing state, carried from record to record: each sample's
 * weight is the event's count since the previous sample (PERF_SAMPLE_READ);
 * after a loss it falls back to the period in effect at the sample's time,
 * since hrtimer events report a stale PERF_SAMPLE_PERIOD. */
struct smp_parse_ctx {
	pid_t tid;            /* owner of the ring, for LOST records; 0: trailer */
	uint64_t cur_period;  /* set at switch_time */
	uint64_t prev_period; /* in effect before switch_time */
	uint64_t switch_time; /* CLOCK_MONOTONIC ns of the last period change */
	uint64_t last_count;  /* the event's count at the previous sample */
	bool count_valid;     /* last_count is usable (no loss since) */
	bool by_period;       /* a CPU's ring: the count runs on in idle time
				 * (whose samples are dropped), so the weight is
				 * the period in effect, never the count's delta */
	/* PERF_SAMPLE_IDENTIFIER of the ring's events (PERF_EVENT_IOC_ID),
	 * used when the main event has IDENTIFIER (blocks or wakeups on). */
	uint64_t id_main, id_block, id_wakeup, id_wakeup_all, id_fork;
	struct smp_thread_stats *stats; /* may be NULL */
};

/* Builds an event without opening it (no libpfm, no perf_event_open): only
 * the built-in clock names. For the unit tests' synthetic records. */
int smp_event_new_unchecked(const char *name, uint64_t period,
			    unsigned jitter_pct, unsigned flags,
			    struct smp_event **out);

/* libpfm4's pfm_get_os_event_encoding() (os a pfm_os_t), libpfm4 loaded
 * and initialized on first use; PFM_ERR_NOINIT when it cannot be. */
int smp_pfm_encode(const char *name, int plm, int os, void *arg);

/*
 * Finds tracepoint sys_event ("sched/sched_waking") in tracefs: its id, and
 * the offset and size of field (by name) in its raw data, from the format
 * file. Returns 0, -ENOENT (no tracefs or no such event or field), -EACCES
 * (tracefs not readable), or -EINVAL (a format it cannot parse).
 */
int smp_tracepoint_lookup(const char *sys_event, const char *field,
			  uint64_t *id, uint32_t *offset, uint32_t *size);
/* Parses a tracefs format file's text: the field's offset and size. */
int smp_tracepoint_parse_format(const char *text, const char *field,
				uint32_t *offset, uint32_t *size);

int smp_parse_record_ctx(const struct smp_event *ev, const void *rec,
			 size_t len, const struct smp_sink *sink,
			 struct smp_parse_ctx *ctx);

/*
 * Walks the records of a ring's data area (size a power of two) from *tail
 * to head, copying records that wrap into bounce (bounce_size bytes), calling
 * the sink, and advancing *tail past each one. Returns the number of records,
 * or -EIO when the framing is corrupt (size 0, larger than the ring or than
 * what head says was written): then *tail is left at the bad record.
 * Records the parser refuses are counted in ctx->stats->bad and skipped.
 */
int smp_ring_walk(const struct smp_event *ev, const uint8_t *data, size_t size,
		  uint64_t *tail, uint64_t head, uint8_t *bounce,
		  size_t bounce_size, const struct smp_sink *sink,
		  struct smp_parse_ctx *ctx);

#endif
