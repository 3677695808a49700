#include "sampler/sampler.h"

/* linux/perf_event.h first: libpfm4's copy of it then stands aside. */
#include <linux/perf_event.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/pfmlib_perf_event.h>

#include "common/log.h"
#include "common/util.h"
#include "sampler/sampler-internal.h"

#define CLOCK_DEFAULT_PERIOD 1000000ULL /* 1 ms */
/* A prime, so a counting event's samples do not fall into step with loops
 * whose trip counts are round numbers. */
#define COUNT_DEFAULT_PERIOD 1000003ULL

#define ALTERNATIVES "use task-clock or cpu-clock"

/* *why strings that name the event are formatted here: one per thread, valid
 * until the next call that fills it. */
static __thread char why_buf[256];
static __thread char strerror_buf[192];

/* perf's software clock names, accepted without libpfm4 so the default event
 * never depends on libpfm4 knowing it. */
static const struct {
	const char *name;
	uint64_t config;
} builtin_clocks[] = {
	{ "task-clock", PERF_COUNT_SW_TASK_CLOCK },
	{ "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
};

static long sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
				int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/*
 * libpfm4 is opened when an event name needs it, not linked: loading it
 * relocates its event tables (41,000 relocations, ~290 page faults; an
 * empty program linked with it used 1.15 ms of CPU against 0.42, `perf
 * stat -r 50`), at every psup start, while the default events (task-clock,
 * cpu-clock) never ask it. docs/performance.md has the start-up numbers.
 */
static struct {
	int (*initialize)(void);
	int (*encode)(const char *, int, pfm_os_t, void *);
	const char *(*strerror)(int);
	int (*version)(void);
} pfm;
static pthread_once_t pfm_load_once = PTHREAD_ONCE_INIT, pfm_once = PTHREAD_ONCE_INIT;
static int pfm_init_ret = PFM_ERR_NOINIT;
static char pfm_missing[160]; /* why libpfm4 could not be loaded */

static void pfm_load(void)
{
	/* PSUP_TEST_LIBPFM: another file to load, for the tests of a
	 * machine without libpfm4 (t0010). */
	const char *lib = getenv("PSUP_TEST_LIBPFM");
	void *h = dlopen(lib ? lib : SMP_LIBPFM, RTLD_NOW | RTLD_LOCAL);

	if (h) {
		*(void **)&pfm.initialize = dlsym(h, "pfm_initialize");
		*(void **)&pfm.encode = dlsym(h, "pfm_get_os_event_encoding");
		*(void **)&pfm.strerror = dlsym(h, "pfm_strerror");
		*(void **)&pfm.version = dlsym(h, "pfm_get_version");
	}
	if (!h || !pfm.initialize || !pfm.encode || !pfm.strerror || !pfm.version) {
		const char *e = dlerror();
		snprintf(pfm_missing, sizeof(pfm_missing), "%s", e ? e : SMP_LIBPFM ": symbols missing");
		pfm.initialize = NULL;
	}
}

/* Initializing looks through every PMU model libpfm4 knows (--version took
 * 4 ms with it, 2 without): only for an event name. */
static void pfm_init_once(void)
{
	pthread_once(&pfm_load_once, pfm_load);
	if (pfm.initialize)
		pfm_init_ret = pfm.initialize();
}

int smp_pfm_encode(const char *name, int plm, int os, void *arg)
{
	pthread_once(&pfm_once, pfm_init_once);
	if (pfm_init_ret != PFM_SUCCESS)
		return PFM_ERR_NOINIT;
	return pfm.encode(name, plm, (pfm_os_t)os, arg);
}

int smp_pfm_version(const char **why)
{
	pthread_once(&pfm_load_once, pfm_load);
	if (!pfm.initialize) {
		if (why)
			*why = pfm_missing;
		return -ENOENT;
	}
	return pfm.version();
}

static bool is_clock_attr(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_TASK_CLOCK ||
		a->config == PERF_COUNT_SW_CPU_CLOCK);
}

/* Types whose ENOENT/EOPNOTSUPP means "no PMU for that", as opposed to the
 * software, tracepoint and breakpoint PMUs every kernel has. */
static bool is_hw_attr(const struct perf_event_attr *a)
{
	return a->type != PERF_TYPE_SOFTWARE && a->type != PERF_TYPE_TRACEPOINT &&
	       a->type != PERF_TYPE_BREAKPOINT;
}

/* Fills the parts of the attr that do not depend on the event's name. */
static void attr_fill_sampling(struct perf_event_attr *a, uint64_t period,
			       unsigned flags)
{
	a->size = sizeof(*a);
	a->sample_period = period;
	a->freq = 0;
	/* READ: the count at each sample makes exact weights (ring.c). CPU:
	 * a sample's and a switch record's CPU place a preempted thread
	 * behind whatever ran there meanwhile (causal crediting). */
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ;
	a->read_format = 0;
	if (flags & SMP_EVENT_STACK) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = SMP_REGS_MASK;
		a->sample_stack_user = SMP_STACK_SNAPSHOT;
	}
	/* Samples and the switch records share the clock of psup_now_ns(), so
	 * they can be placed against ptrace stops and progress points. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->context_switch = !!(flags & SMP_EVENT_SWITCHES);
	/* A thread renamed after its creation (a JVM names its threads once
	 * they run): PERF_RECORD_COMM carries the new name. */
	a->comm = 1;
	a->disabled = 0;
	a->inherit = 0;
	a->exclude_user = 0;
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->exclude_idle = 0;
	a->watermark = 1;
	/* wakeup_watermark is set per ring by smp_thread_open(). */
	/* With the extra events in the ring, each sample names its event;
	 * without them the main samples stay as they were. */
	if (flags & (SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS))
		a->sample_type |= PERF_SAMPLE_IDENTIFIER;
}

/*
 * The extra events: every one of their records' sample_id trailers must have
 * the main event's layout (TID, TIME, CPU, IDENTIFIER), since LOST records come
 * from whichever event lost, and SET_OUTPUT requires the same clock.
 * exclude_kernel is 0 whatever the main event decided: both fire inside the
 * kernel (sched-out, try_to_wake_up) with kernel regs, which exclude_kernel
 * would drop, every one (checked on 6.18: with exclude_kernel both count 0).
 */
static void attr_fill_extra(struct perf_event_attr *a, uint32_t type,
			    uint64_t config, uint64_t sample_type,
			    unsigned flags, uint32_t stack)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | sample_type;
	a->sample_regs_user = SMP_REGS_MASK;
	if ((sample_type & PERF_SAMPLE_STACK_USER) && (flags & SMP_EVENT_STACK))
		a->sample_stack_user = stack;
	else
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_STACK_USER;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	/* Enabled by smp_thread_open() once redirected into the ring. */
	a->disabled = 1;
	a->exclude_hv = 1;
}

static void attr_fill_block(struct perf_event_attr *a, unsigned flags)
{
	attr_fill_extra(a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
			PERF_SAMPLE_REGS_USER, flags, 0);
}

static void attr_fill_wakeup(struct perf_event_attr *a, uint64_t tp_id,
			     unsigned flags)
{
	attr_fill_extra(a, PERF_TYPE_TRACEPOINT, tp_id,
			PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |
				PERF_SAMPLE_STACK_USER,
			flags, SMP_WAKEUP_STACK);
	a->sample_period = SMP_WAKEUP_PERIOD;
}

/* SMP_EVENT_TASKS: every clone's creator, its registers and stack (the new
 * thread's creation context), and the new thread's id from the raw data.
 * Without SMP_EVENT_STACK (no call stacks) still the top of its stack,
 * where clone3's arguments lie (the tid word a join waits on). */
static void attr_fill_fork(struct perf_event_attr *a, uint64_t tp_id, unsigned flags)
{
	attr_fill_extra(a, PERF_TYPE_TRACEPOINT, tp_id,
			PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, flags | SMP_EVENT_STACK,
			(flags & SMP_EVENT_STACK) ? SMP_CREATOR_STACK : SMP_CREATOR_ARGS_STACK);
}

/* Every wakeup, without regs or stack: who woke whom, and when. */
static void attr_fill_wakeup_all(struct perf_event_attr *a, uint64_t tp_id,
				 unsigned flags)
{
	attr_fill_extra(a, PERF_TYPE_TRACEPOINT, tp_id, PERF_SAMPLE_RAW, flags, 0);
	a->sample_regs_user = 0;
}

/* ---- tracepoints ------------------------------------------------------- */

static const char *const tracefs_roots[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

/* Lines look like
 *	field:pid_t pid;	offset:24;	size:4;	signed:1;
 * The field's name is the last identifier of the declaration, before any
 * array bounds ("char comm[16]"). */
int smp_tracepoint_parse_format(const char *text, const char *field,
				uint32_t *offset, uint32_t *size)
{
	size_t flen = strlen(field);
	const char *line = text;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		const char *f = strstr(line, "field:");
		const char *semi, *end, *o, *z;

		if (!eol)
			eol = line + strlen(line);
		if (!f || f >= eol)
			goto next;
		semi = memchr(f, ';', (size_t)(eol - f));
		if (!semi)
			goto next;
		end = semi;
		/* "name[16]" -> "name" */
		{
			const char *br = memchr(f, '[', (size_t)(semi - f));

			if (br)
				end = br;
		}
		while (end > f && isspace((unsigned char)end[-1]))
			end--;
		if ((size_t)(end - f) <= flen || memcmp(end - flen, field, flen))
			goto next;
		{
			char before = end[-(ptrdiff_t)flen - 1];

			if (isalnum((unsigned char)before) || before == '_')
				goto next;
		}
		o = strstr(semi, "offset:");
		z = strstr(semi, "size:");
		if (!o || !z || o >= eol || z >= eol)
			return -EINVAL;
		{
			char *e1, *e2;
			unsigned long ov = strtoul(o + 7, &e1, 10);
			unsigned long zv = strtoul(z + 5, &e2, 10);

			if (e1 == o + 7 || e2 == z + 5 || ov > 65535 ||
			    zv > 65535)
				return -EINVAL;
			*offset = (uint32_t)ov;
			*size = (uint32_t)zv;
		}
		return 0;
next:
		line = *eol ? eol + 1 : NULL;
	}
	return -ENOENT;
}

int smp_tracepoint_lookup(const char *sys_event, const char *field,
			  uint64_t *id, uint32_t *offset, uint32_t *size)
{
	char path[256], *text = NULL, *end;
	int err = -ENOENT, e;

	for (size_t i = 0; i < PSUP_ARRAY_SIZE(tracefs_roots); i++) {
		unsigned long long v;

		snprintf(path, sizeof(path), "%s/events/%s/id", tracefs_roots[i],
			 sys_event);
		e = psup_read_file(path, &text, NULL);
		if (e) {
			/* Keep the most telling error: permission beats
			 * absence. */
			if (e == -EACCES || e == -EPERM)
				err = -EACCES;
			continue;
		}
		v = strtoull(text, &end, 10);
		if (end == text) {
			free(text);
			return -EINVAL;
		}
		free(text);
		text = NULL;
		snprintf(path, sizeof(path), "%s/events/%s/format",
			 tracefs_roots[i], sys_event);
		e = psup_read_file(path, &text, NULL);
		if (e)
			return e == -EACCES || e == -EPERM ? -EACCES : -ENOENT;
		e = smp_tracepoint_parse_format(text, field, offset, size);
		free(text);
		if (e)
			return e;
		*id = v;
		return 0;
	}
	return err;
}

/* A fresh system may leave tracefs unmounted (nothing has asked for it yet).
 * As trace-cmd's libtracefs and perf do, mount it at its usual place when
 * we may: it is a view of the kernel's tracing state, mounting it changes
 * nothing else, and it stays for the next tool. */
static bool tracefs_mount(void)
{
	char events[64];
	struct stat st;

	if (stat(tracefs_roots[0], &st) || !S_ISDIR(st.st_mode))
		return false;
	snprintf(events, sizeof(events), "%s/events", tracefs_roots[0]);
	if (!stat(events, &st))
		return false; /* mounted already: the event is missing */
	if (mount("nodev", tracefs_roots[0], "tracefs", 0, NULL)) {
		pr_debug("sampler: mounting tracefs at %s: %s",
			 tracefs_roots[0], strerror(errno));
		return false;
	}
	pr_info("mounted tracefs at %s (for the wakeup tracepoint)",
		tracefs_roots[0]);
	return true;
}

static int wakeup_tp_lookup(uint64_t *id, uint32_t *off, uint32_t *size)
{
	int err = smp_tracepoint_lookup(SMP_WAKEUP_TRACEPOINT, SMP_WAKEUP_FIELD,
					id, off, size);

	/* Kernels before 4.3 have no sched_waking: sched_wakeup fired in
	 * try_to_wake_up() itself there, in the waker's context too. */
	if (err == -ENOENT)
		err = smp_tracepoint_lookup(SMP_WAKEUP_TRACEPOINT_OLD,
					    SMP_WAKEUP_FIELD, id, off, size);
	return err;
}

/* The fork tracepoint, as the wakeup one: found once (with it, in
 * wakeup_tp_init()), and a probe event held open to the end by the same
 * keeper, so that closing the CPUs' events waits for no grace period. */
static int fork_tp_err = -ENOENT;
static uint64_t fork_tp_id;
static uint32_t fork_tp_child_off;

/* The fork tracepoint's probe event, or -1 (fork_tp_err says why). */
static int fork_tp_open(void)
{
	struct perf_event_attr a;
	uint32_t size;
	int fd = -1, err;

	err = smp_tracepoint_lookup(SMP_FORK_TRACEPOINT, SMP_FORK_FIELD, &fork_tp_id, &fork_tp_child_off,
				    &size);
	if (!err && size != 4)
		err = -EINVAL;
	if (!err) {
		attr_fill_fork(&a, fork_tp_id, SMP_EVENT_STACK);
		fd = (int)sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			err = -errno;
	}
	if (err)
		pr_debug("sampler: %s unusable (%d): no creation contexts for threads told by records",
			 SMP_FORK_TRACEPOINT, err);
	fork_tp_err = err;
	return fd;
}

static pthread_once_t wakeup_tp_once = PTHREAD_ONCE_INIT;
static int wakeup_tp_err; /* 0: usable */
static uint64_t wakeup_tp_id;
static uint32_t wakeup_tp_pid_off;
static bool wakeup_tp_found; /* described in tracefs (the open may fail) */
/*
 * The probe's event stays open for the life of psup: closing a tracepoint
 * event that was its last user unregisters the probe, and the kernel waits
 * for an RCU grace period there, 35-55 ms here. Closed at once, the probe,
 * the check of the real attributes and the real events at teardown each
 * paid it (about 0.1 s of every psup run); held open, only the exit does.
 */
static int wakeup_tp_probe = -1;

/*
 * The exit's grace period is not psup's either: a keeper process holds a
 * copy of the probe's fd until psup is gone, so the last close (and the
 * wait) happens in the keeper, which nobody waits for. A child of psup's
 * makes the keeper and exits at once (the keeper is not psup's child:
 * psup's wait loop ends on ECHILD, and a child would show in its process
 * tree). The keeper keeps nothing else open (a pipe's reader waiting for
 * psup's output must see its end), leaves the terminal's session (Ctrl-C
 * is psup's), and waits on a pipe whose only writer is psup: end of file
 * once psup has exited, however it ends. Without it, every psup run ended
 * 35-55 ms after its work (psup run -- /bin/true: ~50 ms of ~55).
 *
 * The keeper lingers a second after psup is gone: the grace period is
 * waited for with the kernel's event_mutex held, and the next psup run
 * needs that mutex to read the tracepoint's format and open its events, so
 * a run started right after another waited for the first one's keeper
 * (psup run -- /bin/true in a loop: 42 ms a run, 24 of them in that read).
 * Started within the second, the next run's probe holds the tracepoint:
 * the old keeper's close is not its last and waits for nothing.
 */
#define KEEPER_LINGER_S 1
/*
 * The keeper is not made before the program starts (a fork of it took
 * 0.4-1.2 ms): smp_keep_probes() makes it when the recorder first has time (its
 * first tick), or at the recorder's end if that comes first (psup run
 * re-raises a program's fatal signal without exit()); atexit() for any
 * other user of the probes.
 */
static int keep_fd = -1, keep_fd2 = -1;
static pid_t keep_owner;

/*
 * The keeper shares psup's memory (CLONE_VM), so that making it copies no
 * page table (fork() did, twice: 0.4-0.7 ms of a short run's end) and
 * psup's own exit leaves the address space to the keeper to take down
 * (its last user). Its arguments and stack, and those of the child that
 * makes it (CLONE_VFORK: psup waits for that one), lie in a region psup
 * never unmaps. The keeper runs beside psup on the same memory, TLS
 * included: it makes its system calls raw (no errno, nothing of psup's
 * touched) and touches nothing but that region.
 */
#define KEEPER_STACK (64 * 1024)

struct keeper_region {
	int fd, fd2, end;
	char parent_stack[KEEPER_STACK] __attribute__((aligned(16)));
	char stack[KEEPER_STACK] __attribute__((aligned(16)));
};

static inline long keeper_syscall(long nr, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

__attribute__((no_sanitize("address", "undefined"))) static int keeper_main(void *arg)
{
	const struct keeper_region *k = arg;
	long kept = keeper_syscall(SYS_fcntl, k->fd, F_DUPFD, 3);
	long kept2 = k->fd2 >= 0 ? keeper_syscall(SYS_fcntl, k->fd2, F_DUPFD, 3) : -1;
	long end = keeper_syscall(SYS_fcntl, k->end, F_DUPFD, 3);
	struct timespec linger = { KEEPER_LINGER_S, 0 };
	char c;

	keeper_syscall(SYS_setsid, 0, 0, 0);
	if (kept < 0 || end < 0 || keeper_syscall(SYS_dup2, kept, 0, 0) < 0 ||
	    keeper_syscall(SYS_dup2, end, 1, 0) < 0)
		keeper_syscall(SYS_exit, 1, 0, 0);
	/* The second probe, if any, in place of stderr. */
	if (kept2 < 0 || keeper_syscall(SYS_dup2, kept2, 2, 0) < 0)
		keeper_syscall(SYS_close, 2, 0, 0);
	keeper_syscall(SYS_close_range, 3, ~0U, 0);
	while (keeper_syscall(SYS_read, 1, (long)&c, 1) == -EINTR)
		;
	while (keeper_syscall(SYS_nanosleep, (long)&linger, (long)&linger, 0) == -EINTR)
		;
	keeper_syscall(SYS_exit, 0, 0, 0);
	return 0;
}

/* psup is stopped meanwhile (CLONE_VFORK). The keeper is not psup's
 * child: psup's wait loop ends on ECHILD, and a child would show in its
 * process tree. */
__attribute__((no_sanitize("address", "undefined"))) static int keeper_parent(void *arg)
{
	struct keeper_region *k = arg;

	clone(keeper_main, k->stack + sizeof(k->stack), CLONE_VM | SIGCHLD, k);
	return 0;
}

static void keep_after_exit(int fd, int fd2)
{
	struct keeper_region *k;
	int pipefd[2], saved = errno;
	pid_t child;

	k = mmap(NULL, sizeof(*k), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (k == MAP_FAILED)
		return;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		munmap(k, sizeof(*k));
		return;
	}
	k->fd = fd;
	k->fd2 = fd2;
	k->end = pipefd[0];
	child = clone(keeper_parent, k->parent_stack + sizeof(k->parent_stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
		      k);
	close(pipefd[0]);
	if (child < 0) {
		close(pipefd[1]);
		munmap(k, sizeof(*k));
		errno = saved;
		return;
	}
	while (waitpid(child, NULL, __WALL) < 0 && errno == EINTR)
		;
	errno = saved;
	/* The write end stays open, never written, for psup's life; the
	 * region stays mapped for the keeper's. */
}

static void wakeup_tp_init(void)
{
	struct perf_event_attr a;
	uint32_t size;
	int fd, err;

	err = wakeup_tp_lookup(&wakeup_tp_id, &wakeup_tp_pid_off, &size);
	if (err == -ENOENT && tracefs_mount())
		err = wakeup_tp_lookup(&wakeup_tp_id, &wakeup_tp_pid_off,
				       &size);
	if (!err && size != 4)
		err = -EINVAL;
	wakeup_tp_found = !err;
	if (!err) {
		attr_fill_wakeup(&a, wakeup_tp_id, SMP_EVENT_STACK);
		fd = (int)sys_perf_event_open(&a, 0, -1, -1,
					      PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			err = -errno;
		else
			wakeup_tp_probe = fd;
	}
	if (err)
		pr_debug("sampler: %s unusable (%d)", SMP_WAKEUP_TRACEPOINT,
			 err);
	wakeup_tp_err = err;
	/* The fork tracepoint's probe (SMP_EVENT_TASKS) shares the keeper. */
	fd = fork_tp_open();
	keep_fd = wakeup_tp_probe >= 0 ? wakeup_tp_probe : fd;
	keep_fd2 = wakeup_tp_probe >= 0 ? fd : -1;
	keep_owner = getpid();
	if (keep_fd >= 0)
		atexit(smp_keep_probes);
}

void smp_keep_probes(void)
{
	/* Once, by psup itself (not by a child of it that calls exit()). */
	if (keep_fd < 0 || getpid() != keep_owner)
		return;
	keep_after_exit(keep_fd, keep_fd2);
	keep_fd = keep_fd2 = -1;
}

bool smp_have_wakeup_tracepoint(void)
{
	pthread_once(&wakeup_tp_once, wakeup_tp_init);
	return wakeup_tp_err == 0;
}

static void why_wakeups_failed(int err, const char **why)
{
	if (err == -ENOENT && !wakeup_tp_found)
		snprintf(why_buf, sizeof(why_buf),
			 "wakeups: no tracepoint " SMP_WAKEUP_TRACEPOINT
			 " (tracefs not mounted at /sys/kernel/tracing?)");
	else if (err == -EACCES && !wakeup_tp_found)
		snprintf(why_buf, sizeof(why_buf),
			 "wakeups: tracefs is not readable (it is root-only); "
			 "run as root");
	else if (err == -EINVAL && !wakeup_tp_found)
		snprintf(why_buf, sizeof(why_buf),
			 "wakeups: cannot parse the format of " SMP_WAKEUP_TRACEPOINT);
	else if (err == -EACCES || err == -EPERM)
		snprintf(why_buf, sizeof(why_buf),
			 "wakeups: tracepoint raw data refused (needs "
			 "perf_event_paranoid -1 or CAP_PERFMON): %s",
			 smp_open_strerror(err));
	else
		snprintf(why_buf, sizeof(why_buf), "wakeups: %s",
			 smp_open_strerror(err));
	*why = why_buf;
}

/* Fills and checks the extra events' attrs of ev (flags already set).
 * Returns 0 or -errno with *why. */
static int event_open_extras(struct smp_event *ev, const char **why)
{
	int fd;

	if (ev->flags & SMP_EVENT_BLOCKS) {
		attr_fill_block(&ev->block_attr, ev->flags);
		fd = (int)sys_perf_event_open(&ev->block_attr, 0, -1, -1,
					      PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = -errno;

			char *text = NULL;
			long paranoid = 99;

			if ((err == -EACCES || err == -EPERM) &&
			    psup_read_file("/proc/sys/kernel/perf_event_paranoid",
					   &text, NULL) == 0) {
				paranoid = strtol(text, NULL, 10);
				free(text);
			}
			if (paranoid != 99 && paranoid > 1)
				snprintf(why_buf, sizeof(why_buf),
					 "blocks: the context-switch event "
					 "fires in the kernel and needs kernel "
					 "samples, refused with "
					 "perf_event_paranoid %ld; set it to 1 "
					 "or lower, or run as root",
					 paranoid);
			else
				snprintf(why_buf, sizeof(why_buf),
					 "blocks: the context-switch event "
					 "needs kernel samples: %s",
					 smp_open_strerror(err));
			*why = why_buf;
			return err;
		}
		close(fd);
	}
	if (ev->flags & SMP_EVENT_WAKEUPS) {
		if (!smp_have_wakeup_tracepoint()) {
			why_wakeups_failed(wakeup_tp_err, why);
			return wakeup_tp_err;
		}
		attr_fill_wakeup(&ev->wake_attr, wakeup_tp_id, ev->flags);
		attr_fill_wakeup_all(&ev->wake_all_attr, wakeup_tp_id, ev->flags);
		ev->wake_pid_off = wakeup_tp_pid_off;
		fd = (int)sys_perf_event_open(&ev->wake_attr, 0, -1, -1,
					      PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = -errno;

			why_wakeups_failed(err, why);
			return err;
		}
		close(fd);
	}
	if (ev->flags & SMP_EVENT_TASKS) {
		smp_have_wakeup_tracepoint(); /* finds the fork tracepoint too */
		ev->fork_ok = !fork_tp_err;
		if (ev->fork_ok) {
			attr_fill_fork(&ev->fork_attr, fork_tp_id, ev->flags);
			ev->fork_child_off = fork_tp_child_off;
		}
	}
	return 0;
}

static int event_alloc(const char *canon, const struct perf_event_attr *base,
		       uint64_t period, unsigned jitter_pct, unsigned flags,
		       struct smp_event **out)
{
	struct smp_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->name = strdup(canon);
	ev->ids = calloc(1, sizeof(*ev->ids));
	if (!ev->name || !ev->ids) {
		free(ev->name);
		free(ev->ids);
		free(ev);
		return -ENOMEM;
	}
	psup_u64map_init(ev->ids);
	ev->attr = *base;
	ev->is_clock = is_clock_attr(base);
	if (!period)
		period = ev->is_clock ? CLOCK_DEFAULT_PERIOD : COUNT_DEFAULT_PERIOD;
	ev->period = period;
	ev->jitter_pct = jitter_pct;
	ev->flags = flags;
	attr_fill_sampling(&ev->attr, period, flags);
	*out = ev;
	return 0;
}

static int builtin_lookup(const char *name, struct perf_event_attr *a)
{
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(builtin_clocks); i++) {
		if (!strcmp(name, builtin_clocks[i].name)) {
			memset(a, 0, sizeof(*a));
			a->type = PERF_TYPE_SOFTWARE;
			a->config = builtin_clocks[i].config;
			return (int)i;
		}
	}
	return -ENOENT;
}

int smp_event_new_unchecked(const char *name, uint64_t period,
			    unsigned jitter_pct, unsigned flags,
			    struct smp_event **out)
{
	struct perf_event_attr a;
	int i;

	if (!name || jitter_pct >= 100)
		return -EINVAL;
	i = builtin_lookup(name, &a);
	if (i < 0)
		return i;
	i = event_alloc(builtin_clocks[i].name, &a, period, jitter_pct, flags,
			out);
	if (i)
		return i;
	/* The raw layout of sched_waking on kernels 4.x-6.x. */
	if (flags & SMP_EVENT_BLOCKS)
		attr_fill_block(&(*out)->block_attr, flags);
	if (flags & SMP_EVENT_WAKEUPS) {
		attr_fill_wakeup(&(*out)->wake_attr, 0, flags);
		attr_fill_wakeup_all(&(*out)->wake_all_attr, 0, flags);
		(*out)->wake_pid_off = 24;
	}
	/* sched_process_fork's child_pid on 6.x (4 bytes of __data_loc per name). */
	if (flags & SMP_EVENT_TASKS) {
		attr_fill_fork(&(*out)->fork_attr, 0, flags);
		(*out)->fork_child_off = 20;
		(*out)->fork_ok = true;
	}
	return 0;
}

/* Looks name up in libpfm4. Returns 0, -ENOENT (unknown) or -EINVAL with
 * *why set. */
static int pfm_lookup(const char *name, struct perf_event_attr *a,
		      const char **why)
{
	struct perf_event_attr pa;
	pfm_perf_encode_arg_t arg;
	int ret;

	pthread_once(&pfm_once, pfm_init_once);
	if (!pfm.initialize) {
		snprintf(why_buf, sizeof(why_buf),
			 "%s: event names other than task-clock and cpu-clock "
			 "need libpfm4 (%s); " ALTERNATIVES,
			 name, pfm_missing);
		*why = why_buf;
		return -ENOENT;
	}
	if (pfm_init_ret != PFM_SUCCESS) {
		snprintf(why_buf, sizeof(why_buf),
			 "%s: libpfm4 failed to initialize (%s); " ALTERNATIVES,
			 name, pfm.strerror(pfm_init_ret));
		*why = why_buf;
		return -ENOENT;
	}
	memset(&pa, 0, sizeof(pa));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &pa;
	arg.size = sizeof(arg);
	/* Ask for user and kernel: the exclude bits are ours to decide. */
	ret = pfm.encode(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT,
			 &arg);
	if (ret == PFM_ERR_NOTFOUND) {
		snprintf(why_buf, sizeof(why_buf),
			 "unknown event '%s'; try task-clock, cpu-clock, or a "
			 "libpfm4 name (see `showevtinfo`)",
			 name);
		*why = why_buf;
		return -ENOENT;
	}
	if (ret != PFM_SUCCESS) {
		snprintf(why_buf, sizeof(why_buf), "event '%s': %s", name,
			 pfm.strerror(ret));
		*why = why_buf;
		return -EINVAL;
	}
	/* Keep only what names the event; the rest is set for sampling. */
	memset(a, 0, sizeof(*a));
	a->type = pa.type;
	a->config = pa.config;
	a->config1 = pa.config1;
	a->config2 = pa.config2;
	a->precise_ip = pa.precise_ip;
	return 0;
}

/* Names a software clock the way perf does, whatever spelling libpfm4 took
 * ("PERF_COUNT_SW_TASK_CLOCK", "perf::task-clock"). */
static const char *canonical_name(const char *name,
				  const struct perf_event_attr *a)
{
	if (a->type == PERF_TYPE_SOFTWARE) {
		for (size_t i = 0; i < PSUP_ARRAY_SIZE(builtin_clocks); i++)
			if (a->config == builtin_clocks[i].config)
				return builtin_clocks[i].name;
	}
	return name;
}

static void why_open_failed(const char *name, const struct perf_event_attr *a,
			    int err, const char **why)
{
	if ((err == ENOENT || err == EOPNOTSUPP || err == ENODEV) &&
	    is_hw_attr(a)) {
		if (!smp_have_hw_pmu())
			snprintf(why_buf, sizeof(why_buf),
				 "%s: this machine has no hardware PMU (a "
				 "virtual machine?); " ALTERNATIVES,
				 name);
		else
			snprintf(why_buf, sizeof(why_buf),
				 "%s: this machine's PMU cannot sample this "
				 "event (%s); " ALTERNATIVES,
				 name, strerror(err));
	} else {
		snprintf(why_buf, sizeof(why_buf), "%s: %s", name,
			 smp_open_strerror(err));
	}
	*why = why_buf;
}

int smp_event_new(const char *name, uint64_t period, unsigned jitter_pct,
		  unsigned flags, struct smp_event **out, const char **why)
{
	static const char *dummy;
	struct perf_event_attr a;
	const char *canon;
	struct smp_event *ev = NULL;
	int fd, err, i;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (!name || !*name) {
		*why = "empty event name; try task-clock or cpu-clock";
		return -EINVAL;
	}
	if (jitter_pct >= 100) {
		*why = "the period jitter must be below 100%";
		return -EINVAL;
	}
	if (flags & ~(unsigned)(SMP_EVENT_STACK | SMP_EVENT_SWITCHES |
				SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS | SMP_EVENT_TASKS)) {
		*why = "unknown event flags";
		return -EINVAL;
	}
	i = builtin_lookup(name, &a);
	if (i < 0) {
		err = pfm_lookup(name, &a, why);
		if (err)
			return err;
	}
	canon = canonical_name(name, &a);
	err = event_alloc(canon, &a, period, jitter_pct, flags, &ev);
	if (err) {
		*why = "out of memory";
		return err;
	}

	/*
	 * Open it once on this thread, exactly as smp_thread_open() will (but
	 * disabled), so a refusal is reported now with its cause instead of
	 * once per thread later. Kernel samples first: a sample taken inside a
	 * syscall then keeps its kernel ip and the user regs still say where
	 * the user code was; with exclude_kernel the sample is dropped and the
	 * time in syscalls vanishes from the profile. perf_event_paranoid >= 2
	 * refuses that to non-root (EACCES): decided once, here.
	 */
	ev->attr.disabled = 1;
	fd = (int)sys_perf_event_open(&ev->attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		pr_debug("sampler: %s: kernel samples refused, user only",
			 ev->name);
		ev->attr.exclude_kernel = 1;
		fd = (int)sys_perf_event_open(&ev->attr, 0, -1, -1,
					      PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0) {
		err = -errno;
		why_open_failed(ev->name, &ev->attr, -err, why);
		smp_event_free(ev);
		return err;
	}
	close(fd);
	ev->attr.disabled = 0;
	err = event_open_extras(ev, why);
	if (err) {
		smp_event_free(ev);
		return err;
	}
	*out = ev;
	return 0;
}

void smp_event_free(struct smp_event *ev)
{
	if (!ev)
		return;
	if (ev->ids)
		psup_u64map_release(ev->ids);
	free(ev->ids);
	free(ev->name);
	free(ev);
}

const char *smp_event_name(const struct smp_event *ev)
{
	return ev->name;
}

uint64_t smp_event_period(const struct smp_event *ev)
{
	return ev->period;
}

unsigned smp_event_jitter(const struct smp_event *ev)
{
	return ev->jitter_pct;
}

/* Whether the kernel takes a disabled user-only event of this type and
 * config on psup's own thread (opened and closed): 0 or -errno. */
static int probe_event(uint32_t type, uint64_t config, bool inherit_thread)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.disabled = 1;
	a.inherit = inherit_thread;
	a.inherit_thread = inherit_thread;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Whether this kernel takes inherit_thread (5.13 and later): a dummy
 * event on psup's own thread, opened once. */
static bool kernel_inherits_threads(void)
{
	static int known; /* 0 not asked, 1 yes, -1 no */
	int err;

	if (known)
		return known > 0;
	err = probe_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, true);
	known = err ? -1 : 1;
	if (err)
		pr_debug("sampler: no inherit_thread (%s): one set of events per thread", strerror(-err));
	return known > 0;
}

int smp_event_set_per_cpu(struct smp_event *ev, bool on)
{
	if (on && !ev->is_clock)
		return -EINVAL;
	ev->per_cpu = on;
	smp_event_set_inherit(ev, on);
	return 0;
}

void smp_event_set_inherit(struct smp_event *ev, bool on)
{
	ev->inherit = on && ev->per_cpu && kernel_inherits_threads();
	ev->cpu_wakeups = ev->inherit && (ev->flags & SMP_EVENT_WAKEUPS);
}

bool smp_event_inherits(const struct smp_event *ev)
{
	return ev->inherit;
}

bool smp_event_per_cpu(const struct smp_event *ev)
{
	return ev->per_cpu;
}

bool smp_event_is_clock(const struct smp_event *ev)
{
	return ev->is_clock;
}

bool smp_event_samples_kernel(const struct smp_event *ev)
{
	return !ev->attr.exclude_kernel;
}

static int hw_pmu_state; /* 0 unknown, 1 yes, 2 no */

bool smp_have_hw_pmu(void)
{
	int state = __atomic_load_n(&hw_pmu_state, __ATOMIC_RELAXED);
	int err;

	if (state)
		return state == 1;
	err = probe_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false);
	if (!err) {
		state = 1;
	} else if (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV) {
		state = 2;
	} else {
		/* Refused for another reason (perf_event_paranoid 3, a
		 * seccomp policy): whether the PMU exists is still visible. */
		state = (access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
			 access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0)
				? 1
				: 2;
	}
	__atomic_store_n(&hw_pmu_state, state, __ATOMIC_RELAXED);
	return state == 1;
}

/* Whether a seccomp filter confines psup ("Seccomp: 2" in its status). */
static bool under_seccomp(void)
{
	char *text = NULL, *p;
	bool on = false;

	if (psup_read_file("/proc/self/status", &text, NULL) == 0) {
		p = strstr(text, "\nSeccomp:");
		on = p && atoi(p + 9) == 2;
		free(text);
	}
	return on;
}

const char *smp_open_strerror(int err)
{
	char *text = NULL;
	long paranoid = 99;

	if (err < 0)
		err = -err;
	switch (err) {
	case EACCES:
	case EPERM:
		if (psup_read_file("/proc/sys/kernel/perf_event_paranoid", &text,
				   NULL) == 0) {
			paranoid = strtol(text, NULL, 10);
			free(text);
		}
		/* Root is refused only by a policy: "run as root" would
		 * not help (issue 22). */
		if (geteuid() == 0)
			return under_seccomp()
				       ? "perf_event_open is denied by a seccomp policy "
					 "(a container's?); allow perf_event_open in it, "
					 "e.g. docker --security-opt seccomp=unconfined"
				       : "perf_event_open is denied to root by a security "
					 "module (SELinux, AppArmor, lockdown); allow it "
					 "there";
		if (paranoid == 99)
			return "permission denied (perf_event_paranoid "
			       "unreadable); run as root";
		if (paranoid > 2)
			snprintf(strerror_buf, sizeof(strerror_buf),
				 "perf_event_paranoid is %ld; set it to 2 or "
				 "lower (sysctl kernel.perf_event_paranoid=2) "
				 "or run as root",
				 paranoid);
		else
			snprintf(strerror_buf, sizeof(strerror_buf),
				 "permission denied although perf_event_paranoid "
				 "is %ld (a security module, or no ptrace access "
				 "to the thread?); run as root",
				 paranoid);
		return strerror_buf;
	case EMFILE:
		return "too many open files (raise ulimit -n)";
	case ENFILE:
		return "the system's open-file table is full (fs.file-max)";
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return "this machine has no hardware PMU for this event (a "
		       "virtual machine?); " ALTERNATIVES;
	case ESRCH:
		return "the thread is gone";
	case ENOSYS:
		return "this kernel has no perf_event support (CONFIG_PERF_EVENTS)";
	case EBUSY:
		return "the PMU is busy (another profiler or the NMI watchdog)";
	case E2BIG:
	case EINVAL:
		return "the kernel refused the event's settings (period, sample "
		       "type or precise level)";
	default:
		return strerror(err);
	}
}
