#ifndef PSUP_SAMPLER_SAMPLER_H
#define PSUP_SAMPLER_SAMPLER_H

/*
 * The sampler: one perf_event sampling event per thread, its mmap ring buffer,
 * and the parsing of what the kernel writes there. It never stops a thread:
 * the supervisor drains the rings from its event loop.
 *
 * Event names go through libpfm4 ("task-clock", "cpu-clock", "cycles",
 * "instructions", "MEM_LOAD_RETIRED.L3_MISS", ...). Software events work on
 * every machine; hardware ones are tried at run time and refused with an
 * explanation when the machine has no PMU.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* x86-64 user registers captured with each sample, in perf's
 * PERF_REG_X86_* numbering compacted to this order (the mask the sampler
 * requests is SMP_REGS_MASK). */
enum smp_reg {
	SMP_REG_AX, SMP_REG_BX, SMP_REG_CX, SMP_REG_DX, SMP_REG_SI, SMP_REG_DI,
	SMP_REG_BP, SMP_REG_SP, SMP_REG_IP, SMP_REG_FLAGS,
	SMP_REG_R8, SMP_REG_R9, SMP_REG_R10, SMP_REG_R11, SMP_REG_R12,
	SMP_REG_R13, SMP_REG_R14, SMP_REG_R15,
	SMP_NREGS
};

/* Bytes of user stack copied with each sample when SMP_EVENT_STACK is set
 * (PERF_SAMPLE_STACK_USER). 8 KiB holds the frames of a typical unwind without
 * making the records (about 8.4 KiB each) too expensive to copy at 1 kHz. */
#define SMP_STACK_SNAPSHOT 8192u

/* Default ring sizes in data pages (4 KiB each) picked when ring_pages is 0.
 * With stacks: 128 pages = 512 KiB hold ~62 samples of ~8.4 KiB, i.e. 62 ms at
 * 1 kHz, so a supervisor draining every 10-20 ms (or at the half-ring wakeup,
 * ~31 ms) never loses samples, while staying within the default
 * perf_event_mlock_kb + RLIMIT_MEMLOCK of non-root users for a few threads.
 * Without stacks a sample is ~48 bytes and 16 pages hold over a second. */
#define SMP_RING_PAGES_STACK 128u
#define SMP_RING_PAGES_NOSTACK 16u

/* One event as parsed from the command line. Opaque. */
struct smp_event;

enum smp_event_flags {
	SMP_EVENT_STACK = 1 << 0,     /* capture user regs + a user stack snapshot */
	SMP_EVENT_SWITCHES = 1 << 1,  /* context-switch records (on/off CPU) */
};

/*
 * Parses an event name through libpfm4 (or perf's software names) and checks
 * it can be opened on this machine by opening it once on the calling thread.
 * period is in the event's unit (ns for task-clock/cpu-clock, events otherwise);
 * 0 picks the default (1 ms for clocks, 1,000,003 for counts). jitter_pct is
 * the DCPI-style randomization of the period (0 disables; default 10).
 * Returns 0 or -errno; on failure *why says in one line what went wrong and
 * the alternatives, e.g. "cycles: this machine has no hardware PMU (a virtual
 * machine?); use task-clock or cpu-clock" (-ENOENT for unknown names and
 * missing PMUs). *why is static or a per-thread buffer: not freed, valid
 * until the next smp_event_new() on this thread. why may be NULL.
 * Kernel samples (exclude_kernel=0) are used when permitted, else user only:
 * decided here, once. jitter_pct must be below 100.
 * The caller frees *out with smp_event_free().
 */
int smp_event_new(const char *name, uint64_t period, unsigned jitter_pct,
		  unsigned flags, struct smp_event **out, const char **why);
void smp_event_free(struct smp_event *ev);
/* The canonical name ("task-clock") and the base period, for records. */
const char *smp_event_name(const struct smp_event *ev);
uint64_t smp_event_period(const struct smp_event *ev);
/* true when this is a time-based (ns) event. */
bool smp_event_is_clock(const struct smp_event *ev);
/* true when samples taken in the kernel (in a syscall) are kept (with their
 * kernel ip and user regs); false when perf_event_paranoid limited the event
 * to user space, where such samples are dropped by the kernel. */
bool smp_event_samples_kernel(const struct smp_event *ev);

/* Whether the machine has a hardware PMU (a cycles event can be opened). */
bool smp_have_hw_pmu(void);

/* What the kernel wrote, one callback per record, in ring order. The pointers
 * inside are valid only during the callback (they may point into the ring or
 * into a per-thread bounce buffer for records that wrap). */
struct smp_sample {
	pid_t pid, tid;
	uint64_t time;      /* CLOCK_MONOTONIC ns */
	uint64_t ip;
	uint64_t period;    /* the weight of this sample, in the event's unit */
	bool user;          /* ip is a user-space address */
	bool have_regs;     /* regs[] valid (user regs at the sample) */
	uint64_t regs[SMP_NREGS];
	const uint8_t *stack; /* user stack snapshot, starting at regs[SMP_REG_SP] */
	size_t stack_size;    /* valid bytes (dyn_size) */
};

struct smp_switch {
	pid_t pid, tid;
	uint64_t time;
	bool out;      /* switched out (else in) */
	bool preempt;  /* switched out while runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) */
};

struct smp_sink {
	void (*sample)(void *arg, const struct smp_sample *s);
	void (*lost)(void *arg, pid_t tid, uint64_t count);
	void (*context_switch)(void *arg, const struct smp_switch *sw); /* may be NULL */
	void *arg;
};

/* One thread's sampling event and ring. Opaque. */
struct smp_thread;

/*
 * Opens ev for thread tid (perf_event_open with pid = tid, cpu = -1, enabled,
 * close-on-exec) and maps its ring (ring_pages data pages, a power of two;
 * 0 picks a default sized for the stack snapshots). The fd becomes readable
 * (EPOLLIN) when the ring is half full. Returns 0 or -errno (-ESRCH: the
 * thread is gone; -EINVAL: ring_pages not a power of two, or with
 * SMP_EVENT_STACK smaller than one stack sample, i.e. < 4 pages). When the
 * default ring is refused (-EPERM/-ENOMEM: mlock limits) it is halved down to
 * that minimum. ev must outlive the thread. Caller frees with
 * smp_thread_close().
 */
int smp_thread_open(const struct smp_event *ev, pid_t tid, unsigned ring_pages,
		    struct smp_thread **out);
int smp_thread_fd(const struct smp_thread *t);
pid_t smp_thread_tid(const struct smp_thread *t);
/*
 * Reads every complete record in the ring, calls the sink, then advances the
 * tail; afterwards, when samples arrived since the last change, sets a new
 * randomized period (DCPI: sampling cannot lock onto loops), at most once
 * every 8 samples (the ioctl is an IPI costing ~15 us here). smp_sample.period
 * is the event's count since the thread's previous sample (task ns for clocks):
 * exact even across period changes; after lost samples it is the period in
 * effect instead (the kernel's own field is stale after a change for clocks).
 * Never blocks, never allocates.
 * sink and its callbacks may be NULL. Returns the number of records or
 * -EIO when the ring's framing is corrupt (its content is then dropped).
 */
int smp_thread_drain(struct smp_thread *t, const struct smp_sink *sink);
/* Disables the event, drains what remains, unmaps and closes. NULL is fine. */
void smp_thread_close(struct smp_thread *t, const struct smp_sink *sink);

/* Counters of one thread's ring since smp_thread_open(), for records and
 * tests (wrapped counts the records copied through the bounce buffer). */
struct smp_thread_stats {
	uint64_t records;      /* every record parsed */
	uint64_t samples;      /* PERF_RECORD_SAMPLE */
	uint64_t lost;         /* samples lost (RECORD_LOST + RECORD_LOST_SAMPLES) */
	uint64_t switches;     /* PERF_RECORD_SWITCH */
	uint64_t wrapped;      /* records that wrapped around the ring's end */
	uint64_t bad;          /* records refused by the parser (skipped) */
	uint64_t period_sets;  /* successful PERF_EVENT_IOC_PERIOD calls */
};
void smp_thread_get_stats(const struct smp_thread *t, struct smp_thread_stats *out);

/*
 * Parses one raw ring record (struct perf_event_header + body) as this
 * thread's event would have written it, calling the sink. Exposed for the
 * unit tests, which feed synthetic records. sample_type and regs mask are
 * the ones smp_thread_open() requests for ev. len is the bytes available
 * (header.size must fit in it). Returns 0 (unknown record types are ignored)
 * or -EINVAL for a truncated or malformed record (the sink is not called).
 * period is the kernel's field as written.
 */
int smp_parse_record(const struct smp_event *ev, const void *rec, size_t len,
		     const struct smp_sink *sink);

/* One line explaining a perf_event_open failure (perf_event_paranoid, no PMU,
 * EMFILE, ...). err may be negative or positive. Returns a static string or a
 * per-thread buffer valid until the next call on this thread. */
const char *smp_open_strerror(int err);

#endif
