/* Thread states from switch records and block samples, fed by hand. */
#include "experiments/experiments.h"

#include <errno.h>

#include "tests/unit/tap.h"

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
	CHECK_EQ_INT(exp_block_kind_of(NULL, 0, 0), EXP_BLOCK_OTHER);
	/* syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, ...) */
	CHECK_EQ_INT(exp_block_kind_of("syscall", 0x7f0000001000, 128), EXP_BLOCK_FUTEX);
	CHECK_EQ_INT(exp_block_kind_of("syscall", 3, 0), EXP_BLOCK_OTHER);
	CHECK_EQ_INT(exp_block_kind_of("syscall", 0x7f0000001000, 1), EXP_BLOCK_OTHER);
	return tap_done();
}
