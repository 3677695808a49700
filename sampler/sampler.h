#ifndef PSUP_SAMPLER_SAMPLER_H
#define PSUP_SAMPLER_SAMPLER_H

/*
 * The sampler: one perf_event event per thread with its mmap ring buffer
 * (sampling, or only counting when the clock is sampled per CPU, see
 * smp_event_set_per_cpu()), and the parsing of what the kernel writes there.
 * It never stops a thread: the supervisor drains the rings from its event
 * loop.
 *
 * Event names go through libpfm4 ("task-clock", "cpu-clock", "cycles",
 * "instructions", "MEM_LOAD_RETIRED.L3_MISS", ...). Software events work on
 * every machine; hardware ones are tried at run time and refused with an
 * explanation when the machine has no PMU.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

/* x86-64 user registers captured with each sample, in perf's
 * PERF_REG_X86_* numbering compacted to this order (the mask the sampler
 * requests is SMP_REGS_MASK). */
/* clang-format off */
enum smp_reg {
	SMP_REG_AX, SMP_REG_BX, SMP_REG_CX, SMP_REG_DX, SMP_REG_SI, SMP_REG_DI,
	SMP_REG_BP, SMP_REG_SP, SMP_REG_IP, SMP_REG_FLAGS,
	SMP_REG_R8, SMP_REG_R9, SMP_REG_R10, SMP_REG_R11, SMP_REG_R12,
	SMP_REG_R13, SMP_REG_R14, SMP_REG_R15,
	SMP_NREGS
};
/* clang-format on */

/* Bytes of user stack copied with each sample when SMP_EVENT_STACK is set
 * (PERF_SAMPLE_STACK_USER). 8 KiB holds the frames of a typical unwind without
 * making the records (about 8.4 KiB each) too expensive to copy at 1 kHz. */
#define SMP_STACK_SNAPSHOT 8192u
/* The waker's stack in a wakeup sample: enough for the frames from the
 * futex call up to the code that released the lock, and a quarter of the
 * copy at every wakeup of a lock-heavy program. */
#define SMP_WAKEUP_STACK 2048u
/* The creator's stack in its sample at a clone (SMP_EVENT_TASKS): the
 * frames from the clone call up through the creating code; half a sample's,
 * since a program starting a thousand threads writes one per thread into
 * the CPUs' rings at once (8 KiB each overflowed them under a sanitizer
 * build in t3070). */
#define SMP_CREATOR_STACK 4096u
/* Without call stacks, the part of it that holds clone3's arguments. */
#define SMP_CREATOR_ARGS_STACK 512u
/* Wakeups carry that stack one time in SMP_WAKEUP_PERIOD on average (the
 * period is randomized); every wakeup still says who woke whom. A lock-heavy
 * program wakes threads 10^5 times a second: unwinding each would cost the
 * supervisor more than the program. */
#define SMP_WAKEUP_PERIOD 16u

/* Default ring sizes in data pages (4 KiB each) picked when ring_pages is 0.
 * With stacks: 128 pages = 512 KiB hold ~62 samples of ~8.4 KiB, i.e. 62 ms at
 * 1 kHz, so a supervisor draining every 10-20 ms (or at the half-ring wakeup,
 * ~31 ms) never loses samples, while staying within the default
 * perf_event_mlock_kb + RLIMIT_MEMLOCK of non-root users for a few threads.
 * Without stacks a sample is ~64 bytes and 16 pages hold over a second. */
#define SMP_RING_PAGES_STACK 128u
#define SMP_RING_PAGES_NOSTACK 16u

/* One event as parsed from the command line. Opaque. */
struct smp_event;

enum smp_event_flags {
	SMP_EVENT_STACK = 1 << 0,    /* capture user regs + a user stack snapshot */
	SMP_EVENT_SWITCHES = 1 << 1, /* context-switch records (on/off CPU) */
	/* Two more events per thread, off by default, for blocked-time
	 * analyses (parallel efficiency, lock blame: a waiter's blocked time
	 * on a futex is handed to the context of the thread that woke it).
	 * Both write into the ring of the thread's main event, so one ring per
	 * thread stays drained in order; their samples reach the sink's
	 * block/wakeup callbacks. Both need kernel samples (they fire inside
	 * the kernel, where exclude_kernel would drop every one of them):
	 * root, CAP_PERFMON or perf_event_paranoid <= 1. */
	SMP_EVENT_BLOCKS = 1 << 2,  /* one struct smp_block per switch-out */
	SMP_EVENT_WAKEUPS = 1 << 3, /* one struct smp_wakeup per wakeup */
	/* The program's threads and processes told by the kernel's records
	 * (struct smp_task), for a recorder that does not stop them: the CPUs'
	 * fork and exit records (every task's, which the comm records bring
	 * with them), and per CPU a sample of every clone's creator (the
	 * sched_process_fork tracepoint, with its registers and stack: the new
	 * thread's creation context). Per CPU with inheritance only
	 * (smp_cpu_open()). */
	SMP_EVENT_TASKS = 1 << 4,
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
/* The canonical name ("task-clock"), the base period and its jitter (+-%),
 * for records. */
const char *smp_event_name(const struct smp_event *ev);
uint64_t smp_event_period(const struct smp_event *ev);
unsigned smp_event_jitter(const struct smp_event *ev);
/* true when this is a time-based (ns) event. */
bool smp_event_is_clock(const struct smp_event *ev);
/*
 * Sampling per CPU (clock events only): smp_cpu_open() opens one cpu-clock
 * event per CPU for every task on it, and the threads' events opened after
 * this only count: they still carry the switch records and the extra events,
 * but no timer. A per-thread clock's timer is stopped at each switch-out and
 * started at each switch-in, which on these VMs reprograms the local APIC
 * timer, a VM exit, every time: a futex ping-pong ran 2.15x native with
 * per-thread sampling, 1.27x per CPU (docs/performance.md, "Programs that switch threads often"). The CPU
 * events need root, perf_event_paranoid <= 0 or
 * CAP_PERFMON; set this before opening any thread. -EINVAL: not a clock.
 */
int smp_event_set_per_cpu(struct smp_event *ev, bool on);
bool smp_event_per_cpu(const struct smp_event *ev);
/*
 * Per CPU, where the kernel has inherit_thread (5.13), smp_event_set_per_cpu()
 * also turns inheritance on: smp_thread_open_inherited() gives a thread
 * side-band events (switch records, blocks, wakeups) that every thread it
 * creates from then on inherits (and every process, if asked), writing into
 * the CPUs' rings. A new thread then costs psup no perf_event_open and no ring: the
 * kernel copies the events in the creator's clone(), as for perf record's
 * inherited per-CPU events. smp_event_set_inherit(ev, false) turns it off;
 * smp_event_inherits() says whether it is on.
 */
/* Set before the CPUs are opened: with inheritance smp_cpu_open() opens the
 * wakeup events per CPU, for every task, and smp_thread_open() none. */
void smp_event_set_inherit(struct smp_event *ev, bool on);
bool smp_event_inherits(const struct smp_event *ev);
/* true when samples taken in the kernel (in a syscall) are kept (with their
 * kernel ip and user regs); false when perf_event_paranoid limited the event
 * to user space, where such samples are dropped by the kernel. */
bool smp_event_samples_kernel(const struct smp_event *ev);

/* Whether the machine has a hardware PMU (a cycles event can be opened). */
bool smp_have_hw_pmu(void);

/* libpfm4's version (pfm_get_version()), loading it (SMP_LIBPFM) on first
 * use as an event name does; -ENOENT with *why (may be NULL) when it cannot
 * be loaded. */
#define SMP_LIBPFM "libpfm.so.4"
int smp_pfm_version(const char **why);

/* Whether SMP_EVENT_WAKEUPS can work here: the sched:sched_waking tracepoint
 * (sched_wakeup before 4.3) is described in tracefs (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing: root-only on most systems) and a perf event on
 * it with raw data can be opened (CAP_PERFMON, or perf_event_paranoid -1).
 * Decided once per process; cheap afterwards. */
bool smp_have_wakeup_tracepoint(void);

/* Hands the tracepoint probes to the keeper process that closes them after
 * psup's exit (its RCU grace period is nobody's wait; sampler/event.c).
 * Once; later calls do nothing. Call it when there is time, off the
 * program's start, and before psup may end without exit() (a re-raised
 * signal); exit() makes it (atexit) if nothing did. */
void smp_keep_probes(void);

/* What the kernel wrote, one callback per record, in ring order. The pointers
 * inside are valid only during the callback (they may point into the ring or
 * into a per-thread bounce buffer for records that wrap). */
struct smp_sample {
	pid_t pid, tid;
	uint64_t time; /* CLOCK_MONOTONIC ns */
	int cpu;       /* where it was taken (-1: not known) */
	uint64_t ip;
	uint64_t period; /* the weight of this sample, in the event's unit */
	bool user;       /* ip is a user-space address */
	bool have_regs;  /* regs[] valid (user regs at the sample) */
	uint64_t regs[SMP_NREGS];
	const uint8_t *stack; /* user stack snapshot, starting at regs[SMP_REG_SP] */
	size_t stack_size;    /* valid bytes (dyn_size) */
};

struct smp_switch {
	pid_t pid, tid;
	uint64_t time;
	int cpu;      /* where it switched (-1: not known) */
	bool out;     /* switched out (else in) */
	bool preempt; /* switched out while runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) */
};

/* An executable mapping made in a traced process (PERF_RECORD_MMAP2: an
 * mmap, the images an exec maps, an mprotect that adds PROT_EXEC). The
 * kernel writes it as it happens, so in time order with the samples it
 * names. path is the kernel's (" (deleted)" appended to a file since
 * removed), NUL-terminated, valid during the call only. */
struct smp_mmap {
	pid_t pid, tid;
	uint64_t time;
	uint64_t start, len, pgoff;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t prot, flags; /* PROT_*, MAP_* */
	const char *path;
};

/*
 * SMP_EVENT_TASKS: a thread or process begins or ends (PERF_RECORD_FORK and
 * PERF_RECORD_EXIT, written by the creator and by the ending thread into
 * the ring of the CPU it runs on), or a creator's sample at its clone
 * (SMP_TASK_CREATOR: written after the fork record, before the new thread
 * can run, on the same CPU; pid/tid are the creator's, child the new
 * thread as the initial pid namespace numbers it; its user
 * registers are those of the clone system call's entry).
 */
enum smp_task_kind { SMP_TASK_FORK,
		     SMP_TASK_EXIT,
		     SMP_TASK_CREATOR };

struct smp_task {
	enum smp_task_kind kind;
	pid_t pid, tid;   /* the new or ending thread; SMP_TASK_CREATOR: the creator */
	pid_t ppid, ptid; /* SMP_TASK_FORK: its creator's process and thread */
	uint64_t time;
	pid_t child; /* SMP_TASK_CREATOR: the thread created */
	bool have_regs;
	uint64_t regs[SMP_NREGS];
	const uint8_t *stack; /* the creator's user stack, from regs[SMP_REG_SP] */
	size_t stack_size;
};

/*
 * SMP_EVENT_BLOCKS: the software event context-switches, sampled at every
 * switch-out of the thread (period 1), written while the thread is still
 * current, immediately before the PERF_RECORD_SWITCH out record of the same
 * switch when SMP_EVENT_SWITCHES is set (same ring, same CPU: the next record
 * of the thread, barring losses). It carries no kernel ip: the user regs are
 * what the thread had when it entered the kernel (task_pt_regs() on x86-64):
 *  - regs[SMP_REG_IP] is where it entered: the instruction after `syscall`
 *    inside libc's wrapper (the futex wait in pthread_mutex_lock,
 *    pthread_cond_wait, sem_wait; read, epoll_wait, ...); SP and BP are the
 *    wrapper's (no stack is copied; a frame-pointer walk needs memory the
 *    consumer does not have, so unwind from a main sample or the thread's
 *    last snapshot, or attribute to the blocking call site alone);
 *  - for a thread blocked in a system call, the syscall's arguments are the
 *    user regs as saved at entry: DI, SI, DX, R10, R8, R9 = arguments 1-6. A
 *    futex(2) wait has regs[SMP_REG_DI] = the futex's address and
 *    regs[SMP_REG_SI] = the op (FUTEX_WAIT, FUTEX_WAIT_PRIVATE = 128,
 *    FUTEX_WAIT_BITSET|PRIVATE = 137 for glibc's mutexes and condvars): the
 *    lock or condition variable it blocks on. Verified on kernel 6.18 by
 *    tests/unit/test-sampler-blocks.c: every voluntary switch-out of a
 *    thread in FUTEX_WAIT on a known address had DI = it and SI = FUTEX_WAIT.
 *    regs[SMP_REG_AX] is -ENOSYS there (the kernel's placeholder; the syscall
 *    number, orig_ax, is not among perf's registers).
 *  - a PREEMPTED thread gives a block sample too, with the regs of the user
 *    code it was interrupted in or, when preempted on its way out of a
 *    syscall, that syscall's arguments: a thread that FUTEX_WAKEs a waiter on
 *    its own CPU is preempted by it at once, with DI = the futex (half the
 *    switches of the test's ping-pong). Only the PERF_RECORD_SWITCH out that
 *    follows tells them apart (preempt set): blame-shifting consumers need
 *    SMP_EVENT_SWITCHES, and the blocked time is up to the thread's next
 *    switch-in record.
 */
struct smp_block {
	pid_t pid, tid;
	uint64_t time;  /* CLOCK_MONOTONIC ns, the switch-out */
	bool have_regs; /* false for a thread without user context */
	uint64_t regs[SMP_NREGS];
};

/*
 * SMP_EVENT_WAKEUPS: the tracepoint sched:sched_waking (period 1), which fires
 * at the start of try_to_wake_up(), in the WAKER's context: current is the
 * thread that called futex wake (or wrote the pipe, posted the semaphore,
 * unlocked the mutex with waiters, exited with a joiner, ...), so pid/tid,
 * regs and stack are the waker's, and wakee_tid is the thread made runnable:
 * "tid woke wakee_tid". It fires only when the wakee was sleeping (a
 * FUTEX_WAKE that finds no sleeper, or one not yet off its CPU, gives none).
 * sched_waking rather than sched_wakeup (used only on kernels before 4.3,
 * which lack sched_waking): sched_wakeup fires where the wakee is activated,
 * which may be the target CPU's IPI handler (the scheduler's wakelist: an
 * idle target, another LLC), not the waker; on this 2-CPU VM both gave the
 * same counts.
 *
 * The kernel may also deliver the tracepoint to the WAKEE's event (perf's
 * __perf_task()) when that event is active, i.e. the wakee is still on a CPU
 * on its way to sleep: not seen in the test's 2000 wakeups on 6.18, but
 * possible. So a ring's wakeups come in two kinds, told apart by owner:
 *  - tid == owner: the ring's thread woke wakee_tid (its regs/stack);
 *  - wakee_tid == owner, tid != owner: the ring's thread was woken by tid.
 *    When both threads are sampled the waker's ring has it too: count a
 *    wakeup from the waker's side.
 * The thread's context includes the interrupts and softirqs that run while
 * it is current: their wakeups (timers, I/O completions, perf waking the
 * supervisor polling the ring) are attributed to it, with its regs and
 * stack: a few percent of a futex ping-pong's, more on a loaded machine.
 * Consumers blaming locks keep the wakeups whose wakee is a thread of the
 * same process and whose waker regs are in a wake syscall (futex: regs[SMP_REG_DI]
 * = the futex). Each copies the waker's stack: ~8.4 KiB
 * per wakeup with SMP_EVENT_STACK, so futex-heavy programs need bigger rings
 * or lose records (counted as lost). Measured cost on this VM: ~8 us more
 * per context switch for blocks + wakeups, on top of ~9 us for the main
 * event with stacks and switch records (futex ping-pong, median of 5).
 */
struct smp_wakeup {
	pid_t pid, tid; /* the waker: the task current at the wakeup */
	uint64_t time;
	pid_t wakee_tid; /* the thread woken (raw data's pid field) */
	pid_t owner;     /* the thread whose ring this came from; 0 from
			       * smp_parse_record() */
	bool sampled;    /* one of the wakeups that carry regs and stack
			       * (else only who woke whom, at every wakeup; a
			       * sampled wakeup comes twice: once each way) */
	bool have_regs;  /* user regs of the waker (false: kernel thread) */
	uint64_t regs[SMP_NREGS];
	const uint8_t *stack; /* the waker's user stack (SMP_EVENT_STACK) */
	size_t stack_size;
};

/* block and wakeup come after arg so that positional initializers written
 * before they existed ({ sample, lost, switch, arg }) still mean the same. */
struct smp_sink {
	void (*sample)(void *arg, const struct smp_sample *s);
	void (*lost)(void *arg, pid_t tid, uint64_t count);
	void (*context_switch)(void *arg, const struct smp_switch *sw); /* may be NULL */
	void *arg;
	void (*block)(void *arg, const struct smp_block *b);   /* may be NULL */
	void (*wakeup)(void *arg, const struct smp_wakeup *w); /* may be NULL */
	/* A thread's name set (PERF_RECORD_COMM: prctl(PR_SET_NAME),
	 * pthread_setname_np, a write to /proc/.../comm; exec: at an exec).
	 * name is NUL-terminated, at most 15 bytes; may be NULL. time: the
	 * record's (0 where the ring's records carry none). */
	void (*comm)(void *arg, pid_t pid, pid_t tid, const char *name, bool exec, uint64_t time);
	/* An executable mapping made (struct smp_mmap): the records of the
	 * inherited events (smp_thread_open_inherited()). May be NULL. */
	void (*mmap)(void *arg, const struct smp_mmap *m);
	/* SMP_EVENT_TASKS: a thread began or ended (struct smp_task). May be
	 * NULL. */
	void (*task)(void *arg, const struct smp_task *t);
};

/* One thread's sampling event and ring. Opaque. */
struct smp_thread;

/*
 * Opens ev for thread tid (perf_event_open with pid = tid, cpu = -1, enabled,
 * close-on-exec) and maps its ring (ring_pages data pages, a power of two;
 * 0 picks a default sized for the stack snapshots). With SMP_EVENT_BLOCKS /
 * SMP_EVENT_WAKEUPS their events are opened on the same thread and redirected
 * into this ring (PERF_EVENT_IOC_SET_OUTPUT); the period randomization only
 * touches the main event. The fd becomes readable
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

/*
 * Events of several rings in time order. Each CPU's ring is in order, but
 * a thread whose events are inherited has them in the rings of every CPU it
 * ran on: read one ring after another, its switch-in could come before the
 * switch-out that preceded it. Drain the rings into smp_merge_sink(m)
 * (events are copied, stacks included), then smp_merge_flush(m, horizon,
 * sink) hands every kept event at or before horizon to sink, sorted by
 * time (stable), and keeps the later ones for the next flush: take the
 * horizon (psup_now_ns()) before reading the rings, UINT64_MAX at the end.
 * Lost records and renames go out at the next flush; an exec's name and
 * the mappings go in their time's place.
 * The flush returns -ENOMEM when events could not be kept since the last
 * one (they are lost), else 0. sink must not drain into m.
 */
struct smp_merge;
int smp_merge_new(struct smp_merge **out);
const struct smp_sink *smp_merge_sink(struct smp_merge *m);
int smp_merge_flush(struct smp_merge *m, uint64_t horizon, const struct smp_sink *sink);
void smp_merge_free(struct smp_merge *m);
/* Disables the events, drains what remains, unmaps and closes them all.
 * NULL is fine. */
void smp_thread_close(struct smp_thread *t, const struct smp_sink *sink);
/*
 * The side-band events of thread tid and of every thread it creates from
 * now on (with processes, of every process too, and their threads),
 * inherited: for each of the ncpu CPU rings (smp_cpu_open()), a
 * dummy event with its switch records and the SMP_EVENT_BLOCKS and
 * SMP_EVENT_WAKEUPS events, on that CPU, redirected into that ring, whose
 * parser knows their ids; renames come from the CPU events' comm records,
 * the executable mappings those threads make from their records
 * (PERF_RECORD_MMAP2, sink->mmap). The records name their thread; drain the CPU rings for them. t has no
 * ring (smp_thread_fd() -1, smp_thread_drain() reads nothing). Closing it
 * removes the events from every thread that inherited them, so it stays
 * open while any of them is traced. Kernels 5.13+ (inherit_thread); ev must
 * inherit (smp_event_inherits(), else -EINVAL). 0 or -errno (-ESRCH: gone).
 */
int smp_thread_open_inherited(const struct smp_event *ev, pid_t tid, struct smp_thread *const *cpu_rings,
			      unsigned ncpu, bool processes, struct smp_thread **out);
/* true for smp_thread_open_inherited()'s. */
bool smp_thread_inherits(const struct smp_thread *t);

/*
 * The sampling event of CPU cpu for an event set per CPU: every task that
 * runs there is sampled (the idle task excepted), into a ring drained with
 * smp_thread_drain() and closed with smp_thread_close() like a thread's
 * (smp_thread_tid() says -1). The samples name their task: the caller keeps
 * its own threads' and drops the others'. Each sample's weight is the
 * period in effect (the CPU's count runs on while it idles, so its delta
 * would add the idle time). -EACCES/-EPERM: not
 * permitted; -ENODEV: no such CPU (offline); -EINVAL: ev not per CPU.
 */
int smp_cpu_open(const struct smp_event *ev, int cpu, unsigned ring_pages,
		 struct smp_thread **out);

/* Counters of one thread's ring since smp_thread_open(), for records and
 * tests (wrapped counts the records copied through the bounce buffer). */
struct smp_thread_stats {
	uint64_t records;          /* every record parsed */
	uint64_t samples;          /* PERF_RECORD_SAMPLE of the main event */
	uint64_t blocks;           /* samples of SMP_EVENT_BLOCKS */
	uint64_t wakeups;          /* samples of SMP_EVENT_WAKEUPS */
	uint64_t lost;             /* samples lost (RECORD_LOST + RECORD_LOST_SAMPLES) */
	uint64_t switches;         /* PERF_RECORD_SWITCH */
	uint64_t mmaps;            /* PERF_RECORD_MMAP2 */
	uint64_t wrapped;          /* records that wrapped around the ring's end */
	uint64_t bad;              /* records refused by the parser (skipped) */
	uint64_t period_sets;      /* successful PERF_EVENT_IOC_PERIOD calls */
	uint64_t wake_period_sets; /* the same, of the wakeups with a stack */
};
void smp_thread_get_stats(const struct smp_thread *t, struct smp_thread_stats *out);

/*
 * Parses one raw ring record (struct perf_event_header + body) as this
 * thread's event would have written it, calling the sink. Exposed for the
 * unit tests, which feed synthetic records. sample_type and regs mask are
 * the ones smp_thread_open() requests for ev. len is the bytes available
 * (header.size must fit in it). Returns 0 (unknown record types are ignored)
 * or -EINVAL for a truncated or malformed record (the sink is not called).
 * period is the kernel's field as written. With SMP_EVENT_BLOCKS/WAKEUPS every
 * sample starts with its event's id (PERF_SAMPLE_IDENTIFIER), which the kernel
 * assigns at open; without a thread the ids are taken to be 1 (main event),
 * 2 (blocks) and 3 (wakeups), and other ids are refused.
 */
int smp_parse_record(const struct smp_event *ev, const void *rec, size_t len,
		     const struct smp_sink *sink);

/* One line explaining a perf_event_open failure (perf_event_paranoid, no PMU,
 * EMFILE, ...). err may be negative or positive. Returns a static string or a
 * per-thread buffer valid until the next call on this thread. */
const char *smp_open_strerror(int err);

/* ---- witch sampling (sampler/witch.c) -----------------------------------
 *
 * One more event per thread for witch: every overflow sends
 * smp_witch_signal() to that thread (fasync: F_SETOWN_EX F_OWNER_TID,
 * F_SETSIG, O_ASYNC), so it stops at a ptrace signal-delivery stop at the
 * sampled point; psup reads the thread there and consumes the signal.
 * Default: task-clock (a time sample: the instruction about to run is
 * decoded). With a precise memory event (PEBS), the sample's data address
 * comes from the event's ring instead (smp_witch_last_mem_sample()).
 */
struct smp_witch_config {
	uint64_t period;     /* ns of task-clock, or events of mem_attr */
	unsigned jitter_pct; /* randomization of each period, < 100 */
	bool mem_event;      /* use mem_attr (smp_mem_event_find()) */
	struct perf_event_attr mem_attr;
};

struct smp_witch;

/* The realtime signal witch events send (SIGRTMAX - 1). */
int smp_witch_signal(void);
/* Opens and enables the event of tid. Caller frees with smp_witch_close().
 * -ESRCH: the thread is gone. */
int smp_witch_open(const struct smp_witch_config *c, pid_t tid, struct smp_witch **out);
int smp_witch_fd(const struct smp_witch *w);
/* Whether si (from a signal-delivery stop) is this event's overflow signal:
 * signal, si_code POLL_IN and si_fd all match. */
bool smp_witch_is_ours(const struct smp_witch *w, const siginfo_t *si);
/* At a sample: the next randomized period. */
void smp_witch_next(struct smp_witch *w);
/* Stops / restarts the overflows (a thread blocking the signal). */
int smp_witch_enable(struct smp_witch *w, bool on);
bool smp_witch_is_enabled(const struct smp_witch *w);
void smp_witch_close(struct smp_witch *w);

/* A precise memory sample: the instruction and the data address it used. */
struct smp_mem_sample {
	pid_t pid, tid;
	uint64_t ip, addr;
};
/* Parses one PERF_RECORD_SAMPLE of a precise memory event with sample_type
 * IP|TID|ADDR (ADDR required). -ENOENT for another record type, -EINVAL for
 * a malformed one. Pure: unit-tested on synthetic records. */
int smp_mem_sample_parse(const void *rec, size_t len, uint64_t sample_type,
			 struct smp_mem_sample *out);
/* The newest sample in a precise event's ring (consumes the ring). */
int smp_witch_last_mem_sample(struct smp_witch *w, struct smp_mem_sample *out);
/* Looks for a precise store (loads: load) event with data addresses
 * through libpfm4 and fills c->mem_attr and name. -ENOENT when the machine
 * has none (no PMU, no PEBS): then task-clock samples are decoded. */
int smp_mem_event_find(bool loads, struct smp_witch_config *c, char *name, size_t namelen);

/* A watchpoint on [addr, addr + len) of thread tid (len 1, 2, 4 or 8,
 * addr aligned to it): write, or read-or-write. Its trap sends
 * smp_witch_signal() to the thread (si_fd = smp_wp_fd()), no SIGTRAP.
 * -ENOSPC: no debug register left (perf breakpoints, progress points, other
 * watchpoints of the thread); -ESRCH: the thread is gone. Caller frees with
 * smp_wp_close(), which disarms it. */
struct smp_wp;
int smp_wp_open(pid_t tid, uint64_t addr, unsigned len, bool readwrite, struct smp_wp **out);
int smp_wp_fd(const struct smp_wp *w);
bool smp_wp_is_ours(const struct smp_wp *w, const siginfo_t *si);
void smp_wp_close(struct smp_wp *w);
/* ---- breakpoint counters (sampler/bp.c) ---- */

/*
 * Progress points by hardware breakpoint: a perf_event (PERF_TYPE_BREAKPOINT,
 * HW_BREAKPOINT_X, bp_len sizeof(long)) counting the executions of the
 * instruction at addr by thread tid, user space only, close-on-exec, and
 * dropped by the kernel at the thread's next exec (remove_on_exec, where the
 * kernel has it). Counting only: no sample, no signal, no ptrace stop; each
 * visit is still a debug exception, which costs SMP_BP_VISIT_NS.
 * Opened per thread (never inherited): the caller opens one for each new
 * thread before it runs user code. Uses one of the thread's 4 debug
 * registers. Returns the fd, or -errno: -ENOSPC when the thread has no
 * free debug register, -ESRCH when it is gone, -EINVAL for a bad address.
 */
int smp_bp_open(pid_t tid, uint64_t addr);
/* The count so far (also after the thread exited). 0 or -errno. */
int smp_bp_read(int fd, uint64_t *count);
/* Closes it (fd < 0 is fine). */
void smp_bp_close(int fd);
/* One line explaining an smp_bp_open() failure. Static string. */
const char *smp_bp_strerror(int err);
/*
 * A trapping breakpoint (causal profiling: a thread that owes delays pays
 * them at the entry of the mutex unlock, before the lock is released, as
 * Coz's pthread_mutex_unlock wrapper does): HW_BREAKPOINT_X at addr for
 * thread tid, created disabled; once enabled, each execution of the
 * instruction queues smp_witch_signal() to the thread (POLL_IN, si_fd the
 * event's; the kernel sets RF, so the instruction runs when the thread goes
 * on), which a tracer sees as a signal-delivery stop at that instruction.
 * A queued signal, not perf's sigtrap: a forced SIGTRAP would unblock
 * SIGTRAP in a thread that blocks it and reset the program's handler.
 * Dropped at the thread's exec. Uses one debug register. Returns the fd or
 * -errno (as smp_bp_open).
 */
int smp_bp_trap_open(pid_t tid, uint64_t addr);
/* Enables or disables it (an ioctl: the thread need not be stopped). */
int smp_bp_trap_enable(int fd, bool on);
/* Whether si is a trap of the smp_bp_trap_open() breakpoint fd. */
bool smp_bp_trap_is_ours(const siginfo_t *si, int fd);

/* The cost of one breakpoint visit to the visiting thread, measured on
 * the development VMs (KVM, kernel 6.18): a debug exception and its
 * return. tests/unit/test-progress.c prints the figure of the machine it
 * runs on ("bp visit cost"). */
#define SMP_BP_VISIT_NS 11000u

#endif
