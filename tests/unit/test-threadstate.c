/* Thread states from switch records and block samples, fed by hand. */
#include "experiments/experiments.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "tests/unit/tap.h"

/* A block probe answering from fields, counting what it was asked. */
struct fake {
	long nr; /* what /proc says */
	enum exp_block_kind name;
	bool raw;
	const uint8_t *code;
	size_t len;
	unsigned nr_calls, name_calls, code_calls;
};

static long fake_nr(void *arg)
{
	struct fake *f = arg;

	f->nr_calls++;
	return f->nr;
}

static enum exp_block_kind fake_name(void *arg, bool *raw)
{
	struct fake *f = arg;

	f->name_calls++;
	*raw = f->raw;
	return f->name;
}

static size_t fake_code(void *arg, uint8_t *buf, size_t len)
{
	struct fake *f = arg;
	size_t n = f->len < len ? f->len : len;

	f->code_calls++;
	if (n) /* f->code is NULL for a fake without code: memcpy wants a pointer */
		memcpy(buf, f->code + f->len - n, n);
	return n;
}

static enum exp_block_kind site(uint64_t *w, struct fake *f, uint64_t di, uint64_t si)
{
	struct exp_block_probe p = { fake_nr, fake_name, fake_code, f };

	return exp_block_site_kind(w, di, si, &p);
}

/* glibc 2.36's futex wait in __lll_lock_wait (static, stripped): the
 * number is loaded two instructions before the syscall. */
/* clang-format off */
static const uint8_t glibc_futex[] = {
	0x8b, 0x07, 0x41, 0x89, 0xf0, 0x83, 0xf8, 0x02, 0x74, 0x0b, 0xb8, 0x02, 0x00, 0x00,
	0x00, 0x87, 0x07, 0x85, 0xc0, 0x74, 0x3b, 0x44, 0x89, 0xc6, 0x45, 0x31, 0xd2, 0xba,
	0x02, 0x00, 0x00, 0x00, 0xb8, 0xca, 0x00, 0x00, 0x00, 0x40, 0x80, 0xf6, 0x80, 0x0f, 0x05,
};
/* clang-format on */
/* Go's runtime.usleep: MOVL $SYS_nanosleep, AX; SYSCALL after the
 * arguments (MOVQ SP, DI; MOVL $0, SI). */
/* clang-format off */
static const uint8_t go_usleep[] = {
	0x48, 0x89, 0xe7, 0xbe, 0x00, 0x00, 0x00, 0x00, 0xb8, 0x23, 0x00, 0x00, 0x00, 0x0f, 0x05,
};
/* clang-format on */
/* glibc's syscall(2): the number comes from the first argument. */
/* clang-format off */
static const uint8_t glibc_syscall[] = {
	0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89,
	0xca, 0x4d, 0x89, 0xc2, 0x4d, 0x89, 0xc8, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05,
};
/* clang-format on */
/* User code, no syscall before the address: lea ...(%rip),%r13; mov
 * ...(%rip),%ebx. */
/* clang-format off */
static const uint8_t user_code[] = {
	0x4c, 0x8d, 0x2d, 0xbf, 0x9c, 0x0b, 0x00, 0x8b, 0x1d, 0x66, 0x7a, 0x0b, 0x00,
};
/* clang-format on */

static void test_block_sites(void)
{
	struct fake f;
	uint64_t w;

	/* Numbers. */
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_futex), EXP_BLOCK_FUTEX);
#ifdef SYS_futex_waitv
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_futex_waitv), EXP_BLOCK_FUTEX);
#endif
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_nanosleep), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_clock_nanosleep), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_rt_sigsuspend), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_pause), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_read), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_epoll_pwait), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_recvfrom), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_accept4), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_wait4), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_waitid), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of_nr(SYS_getpid), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of_nr(-1), EXP_BLOCK_OTHER);

	/* The number in the code before a site. */
	CHECK_EQ_INT(exp_block_nr_from_code(glibc_futex, sizeof(glibc_futex)), SYS_futex);
	CHECK_EQ_INT(exp_block_nr_from_code(go_usleep, sizeof(go_usleep)), SYS_nanosleep);
	CHECK_EQ_INT(exp_block_nr_from_code(glibc_syscall, sizeof(glibc_syscall)), EXP_BLOCK_NR_UNKNOWN);
	CHECK_EQ_INT(exp_block_nr_from_code(user_code, sizeof(user_code)), EXP_BLOCK_NOT_SYSCALL);
	CHECK_EQ_INT(exp_block_nr_from_code(go_usleep + sizeof(go_usleep) - 2, 2), EXP_BLOCK_NR_UNKNOWN);
	CHECK_EQ_INT(exp_block_nr_from_code(go_usleep, 1), EXP_BLOCK_NOT_SYSCALL);

	/* A stripped futex wait: the code tells at the first sample, though
	 * the thread has moved on (/proc: not blocked there); the name is
	 * asked once, the code once, /proc a bounded number of times. */
	memset(&f, 0, sizeof(f));
	f.nr = EXP_BLOCK_NR_UNKNOWN;
	f.name = EXP_BLOCK_OTHER;
	f.code = glibc_futex;
	f.len = sizeof(glibc_futex);
	w = 0;
	for (int i = 0; i < 1000; i++)
		CHECK_EQ_INT(site(&w, &f, 0x4bb340, 128), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(f.name_calls, 1);
	CHECK_EQ_INT(f.code_calls, 1);
	CHECK(f.nr_calls <= EXP_BLOCK_SITE_EAGER + 1000 / EXP_BLOCK_SITE_RECHECK);

	/* /proc corrects the code's number; a second number later makes it a
	 * raw wrapper: futex waits by their arguments, others as last seen. */
	f.nr = SYS_read;
	CHECK_EQ_INT(site(&(uint64_t){ 0 }, &f, 0x4bb340, 128), EXP_BLOCK_IO);
	memset(&f, 0, sizeof(f));
	f.nr = SYS_futex;
	w = 0;
	CHECK_EQ_INT(site(&w, &f, 0x4bb340, 128), EXP_BLOCK_FUTEX);
	f.nr = EXP_BLOCK_NR_UNKNOWN;
	CHECK_EQ_INT(site(&w, &f, 3, 0x1000), EXP_BLOCK_FUTEX); /* one number so far */
	f.nr = SYS_read;
	CHECK_EQ_INT(site(&w, &f, 3, 0x1000), EXP_BLOCK_IO);
	f.nr = EXP_BLOCK_NR_UNKNOWN;
	CHECK_EQ_INT(site(&w, &f, 3, 0x1000), EXP_BLOCK_IO);
	CHECK_EQ_INT(site(&w, &f, 0x4bb340, 128), EXP_BLOCK_FUTEX);

	/* Neither code nor /proc tells: the name does meanwhile, and /proc is
	 * read a bounded number of times; a thread found running costs no
	 * try, and a number learned late still counts. */
	memset(&f, 0, sizeof(f));
	f.nr = EXP_BLOCK_NR_NOT_NOW;
	f.name = EXP_BLOCK_FUTEX;
	w = 0;
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(site(&w, &f, 3, 0), EXP_BLOCK_FUTEX);
	f.nr = SYS_clock_nanosleep;
	CHECK_EQ_INT(site(&w, &f, 3, 0), EXP_BLOCK_SLEEP);
	f.nr = EXP_BLOCK_NR_UNKNOWN;
	f.nr_calls = 0;
	w = 0;
	for (int i = 0; i < 5000; i++)
		CHECK_EQ_INT(site(&w, &f, 3, 0), EXP_BLOCK_FUTEX);
	CHECK(f.nr_calls <= EXP_BLOCK_SITE_EAGER + 5000 / EXP_BLOCK_SITE_RECHECK);

	/* syscall(2) by its name: futex waits by their arguments (DI, SI: the
	 * wrapper has moved them there), with no read of /proc. */
	memset(&f, 0, sizeof(f));
	f.raw = true;
	f.nr = SYS_read;
	w = 0;
	CHECK_EQ_INT(site(&w, &f, 0x7f0000001000, 128), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(f.nr_calls, 0);
	CHECK_EQ_INT(site(&w, &f, 3, 0x1000), EXP_BLOCK_IO);
	CHECK_EQ_INT(f.code_calls, 0);

	/* No syscall instruction before the site (a preemption in user
	 * code): never a blocking call, whatever the name, never read. */
	memset(&f, 0, sizeof(f));
	f.nr = SYS_read;
	f.name = EXP_BLOCK_IO; /* "read_config" */
	f.code = user_code;
	f.len = sizeof(user_code);
	w = 0;
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(site(&w, &f, 0, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(f.nr_calls, 0);
}

int main(void)
{
	struct exp_tstate *ts;
	struct exp_thread_times t;

	CHECK(exp_tstate_new(&ts) == 0);
	/* Runs 100, preempted 20, runs 30, blocks on a futex 50, runs 10,
	 * blocks without a block sample 5, runs 15, sleeps 40, ends. */
	CHECK(exp_tstate_thread_start(ts, 7, 1000, false, EXP_BLOCK_OTHER) == 0);
	exp_tstate_switch(ts, 7, 1100, true, true);
	exp_tstate_switch(ts, 7, 1120, false, false);
	exp_tstate_block(ts, 7, EXP_BLOCK_FUTEX);
	exp_tstate_switch(ts, 7, 1150, true, false);
	exp_tstate_switch(ts, 7, 1200, false, false);
	exp_tstate_switch(ts, 7, 1210, true, false);
	exp_tstate_switch(ts, 7, 1215, false, false);
	exp_tstate_block(ts, 7, EXP_BLOCK_SLEEP);
	exp_tstate_switch(ts, 7, 1230, true, false);
	CHECK(exp_tstate_thread_end(ts, 7, 1270, false, &t) == 0);
	CHECK_EQ_INT(t.running, 100 + 30 + 10 + 15);
	CHECK_EQ_INT(t.runnable, 20);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_FUTEX], 50);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_OTHER], 5);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_SLEEP], 40);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_IO], 0);
	CHECK(exp_tstate_thread_end(ts, 7, 1300, false, &t) == -ENOENT);

	/* A block sample before a preemption (leaving FUTEX_WAKE) does not
	 * make the later voluntary switch a futex wait. */
	CHECK(exp_tstate_thread_start(ts, 8, 0, false, EXP_BLOCK_OTHER) == 0);
	exp_tstate_block(ts, 8, EXP_BLOCK_FUTEX);
	exp_tstate_switch(ts, 8, 10, true, true);
	exp_tstate_switch(ts, 8, 20, false, false);
	exp_tstate_switch(ts, 8, 30, true, false);
	CHECK(exp_tstate_thread_end(ts, 8, 40, false, &t) == 0);
	CHECK_EQ_INT(t.running, 20);
	CHECK_EQ_INT(t.runnable, 10);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_OTHER], 10);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_FUTEX], 0);

	/* Found asleep at an attach; records out of order do not go negative. */
	CHECK(exp_tstate_thread_start(ts, 9, 100, true, EXP_BLOCK_IO) == 0);
	exp_tstate_switch(ts, 9, 90, false, false);
	exp_tstate_switch(ts, 9, 150, true, false);
	CHECK(exp_tstate_thread_end(ts, 9, 160, false, &t) == 0);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_IO], 0);
	CHECK_EQ_INT(t.running, 50);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_OTHER], 10);
	/* A thread that died: its life ends at its last switch-out, not when
	 * psup got round to reaping it; one last seen running runs until now. */
	CHECK(exp_tstate_thread_start(ts, 10, 0, false, EXP_BLOCK_OTHER) == 0);
	exp_tstate_switch(ts, 10, 30, true, false);
	CHECK(exp_tstate_thread_end(ts, 10, 500, true, &t) == 0);
	CHECK_EQ_INT(t.running, 30);
	CHECK_EQ_INT(t.blocked[EXP_BLOCK_OTHER], 0);
	CHECK(exp_tstate_thread_start(ts, 11, 0, false, EXP_BLOCK_OTHER) == 0);
	CHECK(exp_tstate_thread_end(ts, 11, 40, true, &t) == 0);
	CHECK_EQ_INT(t.running, 40);
	/* Unknown threads are ignored. */
	exp_tstate_switch(ts, 99, 5, true, false);
	exp_tstate_block(ts, 99, EXP_BLOCK_IO);
	exp_tstate_free(ts);
	exp_tstate_free(NULL);

	/* Classification by the function the thread entered the kernel from. */
	CHECK_EQ_INT(exp_block_kind_of("__GI___futex_abstimed_wait_cancelable64", 0, 0), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("__lll_lock_wait", 0, 0), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("pthread_cond_wait", 0, 0), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("__libc_read", 0, 0), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of("epoll_wait", 0, 0), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of("__GI___clock_nanosleep", 0, 0), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of("pthread_create", 0, 0), EXP_BLOCK_OTHER);
	/* Go's runtime, whose system calls are its own. */
	CHECK_EQ_INT(exp_block_kind_of("runtime.usleep", 0, 0), EXP_BLOCK_SLEEP);
	CHECK_EQ_INT(exp_block_kind_of("runtime.futex", 0, 0), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("runtime.futexsleep", 0, 0), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("runtime.read", 0, 0), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of("runtime.epollwait", 0, 0), EXP_BLOCK_IO);
	CHECK_EQ_INT(exp_block_kind_of("runtime.mcall", 0, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of("runtime.recv", 0, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of("runtime.selectgo", 0, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of(NULL, 0, 0), EXP_BLOCK_OTHER);
	/* syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, ...) */
	CHECK_EQ_INT(exp_block_kind_of("syscall", 0x7f0000001000, 128), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("syscall", 3, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of("syscall", 0x7f0000001000, 1), EXP_BLOCK_OTHER);
	test_block_sites();
	return tap_done();
}
