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
#include <sys/syscall.h>
#include <sys/user.h>

#include "common/hash.h"
#include "symbols/symbols.h"

enum tstate { TS_RUNNING,
	      TS_RUNNABLE,
	      TS_BLOCKED };

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

/* A futex wait's first two arguments: an aligned address and a wait
 * operation (WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI; the
 * PRIVATE and CLOCK_REALTIME bits aside). */
static bool looks_like_futex_wait(uint64_t addr, uint64_t op)
{
	unsigned o = (unsigned)op & ~(128u | 256u);

	return addr > 4096 && !(addr & 3) && op <= 0xffffffffu &&
	       (o == 0 || o == 9 || o == 6 || o == 13 || o == 11);
}

enum exp_block_kind exp_block_kind_of(const char *function, uint64_t arg0, uint64_t arg1)
{
	/* clang-format off */
	static const char *const futex[] = {
		"futex", "lll_lock", "lll_timedlock", "pthread_mutex", "pthread_cond",
		"pthread_rwlock", "pthread_barrier", "pthread_join", "pthread_clockjoin",
		"pthread_timedjoin", "sem_wait", "sem_timedwait", "sem_clockwait", NULL,
	};
	/* clang-format on */
	/* clang-format off */
	static const char *const sleep[] = {
		"nanosleep", "clock_nanosleep", "usleep", "sleep", "pause", "sigsuspend",
		"sigtimedwait", "sigwaitinfo", "rt_sigtimedwait", NULL,
	};
	/* clang-format on */
	/* clang-format off */
	static const char *const io[] = {
		"read", "write", "pread", "pwrite", "preadv", "pwritev", "recv", "send",
		"poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect",
		"accept", "connect", "fsync", "fdatasync", "sync", "open", "close",
		"splice", "sendfile", "io_getevents", "io_uring_enter", "msgrcv", "msgsnd",
		"semop", "semtimedop", "flock", "fcntl", "ioctl", NULL,
	};
	/* clang-format on */
	/* Go's runtime makes its own system calls: those below, and its
	 * futex calls. Its other functions' names (runtime.recv,
	 * runtime.selectgo, runtime.readvarint) would match the lists above
	 * by their prefixes. */
	static const struct {
		const char *name;
		enum exp_block_kind kind;
	} go[] = {
		{ "runtime.usleep", EXP_BLOCK_SLEEP },
		{ "runtime.read", EXP_BLOCK_IO },
		{ "runtime.write1", EXP_BLOCK_IO },
		{ "runtime.epollwait", EXP_BLOCK_IO },
	};
	const char *f;

	if (!function)
		return EXP_BLOCK_OTHER;
	if (!strncmp(function, "runtime.", 8)) {
		for (size_t i = 0; i < sizeof(go) / sizeof(go[0]); i++)
			if (!strcmp(function, go[i].name))
				return go[i].kind;
		return strstr(function, "futex") ? EXP_BLOCK_FUTEX : EXP_BLOCK_OTHER;
	}
	f = plain_name(function);
	if (strstr(f, "futex") || starts_with_any(f, futex))
		return EXP_BLOCK_FUTEX;
	if (starts_with_any(f, sleep))
		return EXP_BLOCK_SLEEP;
	if (starts_with_any(f, io))
		return EXP_BLOCK_IO;
	if (!strcmp(f, "syscall") && looks_like_futex_wait(arg0, arg1))
		return EXP_BLOCK_FUTEX;
	return EXP_BLOCK_OTHER;
}

enum exp_block_kind exp_block_kind_of_nr(long nr)
{
	switch (nr) {
	case SYS_futex:
#ifdef SYS_futex_waitv
	case SYS_futex_waitv:
#endif
#ifdef SYS_futex_wait
	case SYS_futex_wait:
#endif
		return EXP_BLOCK_FUTEX;
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
		return EXP_BLOCK_SLEEP;
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_readv:
	case SYS_writev:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_preadv2:
	case SYS_pwritev2:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_sendmmsg:
	case SYS_accept:
	case SYS_accept4:
	case SYS_connect:
	case SYS_open:
	case SYS_openat:
#ifdef SYS_openat2
	case SYS_openat2:
#endif
	case SYS_close:
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_sync:
	case SYS_syncfs:
	case SYS_sync_file_range:
	case SYS_getdents64:
	case SYS_newfstatat:
	case SYS_statx:
	case SYS_splice:
	case SYS_tee:
	case SYS_sendfile:
	case SYS_copy_file_range:
	case SYS_io_getevents:
	case SYS_io_pgetevents:
	case SYS_io_uring_enter:
	case SYS_msgrcv:
	case SYS_msgsnd:
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_mq_timedreceive:
	case SYS_mq_timedsend:
	case SYS_flock:
	case SYS_fcntl:
	case SYS_ioctl:
		return EXP_BLOCK_IO;
	default:
		/* wait4 and waitid among them: a wait for another process,
		 * neither a lock of this one (no futex, nobody to blame), nor
		 * I/O, nor a sleep for a time it chose. */
		return EXP_BLOCK_OTHER;
	}
}

long exp_block_nr_from_code(const uint8_t *code, size_t len)
{
	long nr = EXP_BLOCK_NR_UNKNOWN;

	if (len < 2 || code[len - 2] != 0x0f || code[len - 1] != 0x05)
		return EXP_BLOCK_NOT_SYSCALL;
	/* Decoded from each byte on: the starts that land on the syscall
	 * instruction itself agree once they meet the real instructions
	 * (x86 resynchronizes), so every one that sets eax must say the
	 * same, or nothing is known. */
	for (size_t start = 0; start + 2 < len; start++) {
		struct user_regs_struct regs = { 0 };
		uint32_t unknown = ~0u;
		size_t at = start;

		while (at < len - 2) {
			regs.rip = at;
			if (sym_insn_advance(code + at, len - 2 - at, &regs, &unknown) < 0)
				break;
			at = regs.rip;
		}
		if (at != len - 2 || (unknown & 1u))
			continue;
		if (nr != EXP_BLOCK_NR_UNKNOWN && (uint64_t)nr != regs.rax)
			return EXP_BLOCK_NR_UNKNOWN;
		if (regs.rax > 0xfffff)
			return EXP_BLOCK_NR_UNKNOWN;
		nr = (long)regs.rax;
	}
	return nr;
}

/*
 * A site's word: bits 0-3 its state, 4-7 the kind its function's name
 * says, 8-27 the system call number + 1 (CODED, FIXED: the one; VARIES:
 * the last seen), 28-35 the reads of /proc made for it (up to 255), 36-63
 * the samples seen at it (wrapping).
 */
enum site_state {
	SITE_NEW,    /* never seen */
	SITE_USER,   /* not after a syscall instruction: a preemption, a fault */
	SITE_GUESS,  /* no number yet: its name tells meanwhile */
	SITE_CODED,  /* the number its code loads, not yet seen through /proc */
	SITE_FIXED,  /* one system call, seen through /proc */
	SITE_VARIES, /* several: a raw syscall(2) wrapper */
};

#define SITE_NR_MAX 0xfffffL
#define SITE_STATE(v) ((enum site_state)((v)&0xf))
#define SITE_NAME_KIND(v) ((enum exp_block_kind)(((v) >> 4) & 0xf))
#define SITE_NR(v) ((long)(((v) >> 8) & SITE_NR_MAX) - 1)
#define SITE_TRIES(v) ((unsigned)(((v) >> 28) & 0xff))
#define SITE_COUNT(v) ((v) >> 36)

static uint64_t site_word(enum site_state st, enum exp_block_kind name_kind, long nr, unsigned tries,
			  uint64_t count)
{
	uint64_t n = nr >= 0 && nr < SITE_NR_MAX ? (uint64_t)nr + 1 : 0;

	return (uint64_t)st | (uint64_t)name_kind << 4 | n << 8 | (uint64_t)(tries < 255 ? tries : 255) << 28 |
	       count << 36;
}

/* A new site: its name, then its code. */
static enum site_state site_first(const struct exp_block_probe *probe, enum exp_block_kind *name_kind,
				  long *nr)
{
	uint8_t code[EXP_BLOCK_CODE_BYTES];
	size_t n;
	bool raw = false;

	*name_kind = probe->by_name(probe->arg, &raw);
	if (raw)
		return SITE_VARIES;
	n = probe->code_before(probe->arg, code, sizeof(code));
	if (!n || n > sizeof(code))
		return SITE_GUESS; /* unreadable: /proc may tell */
	*nr = exp_block_nr_from_code(code, n);
	if (*nr == EXP_BLOCK_NOT_SYSCALL)
		return SITE_USER;
	return *nr >= 0 ? SITE_CODED : SITE_GUESS;
}

enum exp_block_kind exp_block_site_kind(uint64_t *site, uint64_t arg0, uint64_t arg1,
					const struct exp_block_probe *probe)
{
	uint64_t v = *site, count = (SITE_COUNT(v) + 1) & ((1ULL << 28) - 1);
	enum exp_block_kind name_kind = SITE_NAME_KIND(v), kind;
	enum site_state st = SITE_STATE(v);
	unsigned tries = SITE_TRIES(v);
	long nr = SITE_NR(v), now = EXP_BLOCK_NR_UNKNOWN;

	if (st == SITE_NEW)
		st = site_first(probe, &name_kind, &nr);
	/* The first EXP_BLOCK_SITE_EAGER reads, then one in
	 * EXP_BLOCK_SITE_RECHECK samples. A futex wait at a raw site tells
	 * itself by its arguments, with no read (raw futex locks switch
	 * often). */
	if (st != SITE_USER && (tries < EXP_BLOCK_SITE_EAGER || !(count % EXP_BLOCK_SITE_RECHECK)) &&
	    !(st == SITE_VARIES && looks_like_futex_wait(arg0, arg1))) {
		now = probe->syscall_nr(probe->arg);
		if (now != EXP_BLOCK_NR_NOT_NOW)
			tries++;
	}
	switch (st) {
	case SITE_USER:
		kind = EXP_BLOCK_OTHER;
		break;
	case SITE_GUESS:
	case SITE_CODED:
		if (now >= 0) {
			st = SITE_FIXED;
			nr = now;
		}
		kind = st == SITE_GUESS ? name_kind : exp_block_kind_of_nr(nr);
		break;
	case SITE_FIXED:
		if (now >= 0 && now != nr) {
			st = SITE_VARIES;
			nr = now;
		}
		kind = exp_block_kind_of_nr(nr);
		break;
	case SITE_VARIES:
	default:
		/* Each call there: a futex wait by its arguments, else the
		 * one /proc reports, else the last one it reported. */
		if (looks_like_futex_wait(arg0, arg1)) {
			kind = EXP_BLOCK_FUTEX;
			break;
		}
		if (now >= 0)
			nr = now;
		kind = nr >= 0 ? exp_block_kind_of_nr(nr) : EXP_BLOCK_OTHER;
		break;
	}
	*site = site_word(st, name_kind, nr, tries, count);
	return kind;
}
