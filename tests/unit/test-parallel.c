/* Work, idleness and lock blame (experiments/parallel.c): events arriving
 * out of time order across threads are replayed in order; idleness is
 * n_idle / n_w per working sample with n_w at most the CPUs; futex waits go
 * to the waker's context, or to none; the records read back with the same
 * totals. */
#include "experiments/experiments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin/record.h"
#include "report/report-internal.h"
#include "tests/unit/tap.h"

#define M 1000000ULL /* a sample, in millionths */

static const struct rep_header header = {
	.mode = "run",
	.pid = 100,
	.event = "task-clock",
	.period = 1000000,
	.clock_event = true,
	.cpus = 2,
};

int main(void)
{
	char path[] = "/tmp/psup-test-parallel-XXXXXX";
	struct rep_writer *w;
	struct exp_profile *prof;
	struct exp_par *x;
	struct exp_par_stats st;
	/* no address space: every address is [unknown], so contexts differ
	 * by their depth */
	const uint64_t a[] = { 0x1003, 0x1001 }, b[] = { 0x1004 };
	const uint64_t c[] = { 0x1005, 0x1002, 0x1001 }, d[] = { 0x1006, 0x1005, 0x1002, 0x1001 };
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(rep_writer_open(path, REP_WRITER_FORCE, &w) == 0);
	CHECK(rep_write_header(w, &header) == 0);
	struct exp_sink out;
	rec_sink_init(&out, w);
	CHECK(exp_profile_new(&out, &prof) == 0);
	CHECK(exp_par_new(&out, 2, &x) == 0);
	int64_t na = exp_profile_add(prof, NULL, 100, 101, a, 2, 0);
	int64_t nb = exp_profile_add(prof, NULL, 100, 101, b, 1, 0);
	int64_t nc = exp_profile_context(prof, NULL, 100, c, 3);
	int64_t nd = exp_profile_context(prof, NULL, 100, d, 4);
	CHECK(na > 0 && nb > 0 && nc > 0 && na != nb && nb != nc && na != nc);
	CHECK(nd > 0 && nd != na && nd != nb && nd != nc);

	/* Thread 101 works alone from 0; 102 sleeps until 11; 103 comes at 22. */
	CHECK(exp_par_thread_start(x, 101, 0, true) == 0);
	CHECK(exp_par_thread_start(x, 102, 0, false) == 0);
	for (uint64_t t = 1; t <= 10; t++)
		CHECK(exp_par_sample(x, 101, t, (uint64_t)na) == 0);
	for (uint64_t t = 12; t <= 21; t++)
		CHECK(exp_par_sample(x, 101, t, (uint64_t)nb) == 0);
	/* 102's ring is drained after 101's: its switch-in arrives late */
	CHECK(exp_par_switch(x, 102, 11, false, false) == 0);
	CHECK(exp_par_thread_start(x, 103, 22, true) == 0);
	for (uint64_t t = 23; t <= 25; t++)
		CHECK(exp_par_sample(x, 103, t, (uint64_t)na) == 0);
	CHECK(exp_par_sample(x, 101, 26, 0) == 0); /* no node: ignored */

	/* Only what is up to 15 is replayed. */
	CHECK(exp_par_advance(x, 15) == 0);
	exp_par_stats(x, &st);
	CHECK_EQ_INT(st.samples, 14);
	CHECK_EQ_INT(st.idle_micro, 10 * M); /* 1 working of 2 CPUs: 1 each */
	CHECK(exp_par_advance(x, 100) == 0);
	exp_par_stats(x, &st);
	CHECK_EQ_INT(st.samples, 23);
	CHECK_EQ_INT(st.idle_micro, 10 * M); /* 2 and 3 working: none idle */

	/* 102 and 103 block; 101 alone again: 3 samples of 1 idle each. */
	CHECK(exp_par_block_futex(x, 100, 102, 30, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 30, true, false) == 0);
	CHECK(exp_par_switch(x, 103, 30, true, false) == 0);
	for (uint64_t t = 31; t <= 33; t++)
		CHECK(exp_par_sample(x, 101, t, (uint64_t)nb) == 0);
	/* 101 wakes 102 at 40 from context nc: a 10 ns wait blamed on nc */
	CHECK(exp_par_wake(x, 101, 102, 40, (uint64_t)nc) == 0);
	CHECK(exp_par_switch(x, 102, 41, false, false) == 0);
	/* 102 waits again; a timeout ends it (no wake): 5 ns on context 0 */
	CHECK(exp_par_block_futex(x, 100, 102, 50, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 50, true, false) == 0);
	CHECK(exp_par_switch(x, 102, 55, false, false) == 0);
	/* a wake of a thread that was not in a futex wait blames nothing */
	CHECK(exp_par_wake(x, 101, 103, 60, (uint64_t)nc) == 0);
	/* a wakeup without context, then the same wakeup sampled 2 us later:
	 * the 20 ns wait moves to the sampled context */
	CHECK(exp_par_block_futex(x, 100, 102, 62, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 62, true, false) == 0);
	CHECK(exp_par_wake(x, 101, 102, 82, EXP_PAR_UNSAMPLED) == 0);
	CHECK(exp_par_wake(x, 101, 102, 2082, (uint64_t)nc) == 0);
	CHECK(exp_par_switch(x, 102, 3000, false, false) == 0);
	/* an early wakeup (before the switch-out: FUTEX_WAKE raced the
	 * FUTEX_WAIT), unsampled then sampled: the wait it ends, 3 ns, is
	 * the sampled context's */
	CHECK(exp_par_wake(x, 101, 102, 3500, EXP_PAR_UNSAMPLED) == 0);
	CHECK(exp_par_wake(x, 101, 102, 3502, (uint64_t)nc) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 3510, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 3510, true, false) == 0);
	CHECK(exp_par_switch(x, 102, 3513, false, false) == 0);
	/* a sampled wakeup first, its unsampled twin after: counted once */
	CHECK(exp_par_block_futex(x, 100, 102, 3600, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 3600, true, false) == 0);
	CHECK(exp_par_wake(x, 101, 102, 3604, (uint64_t)nc) == 0);
	CHECK(exp_par_wake(x, 101, 102, 3605, EXP_PAR_UNSAMPLED) == 0);
	CHECK(exp_par_switch(x, 102, 3606, false, false) == 0);
	/* preempted inside a futex call (its FUTEX_WAKE): not a wait */
	CHECK(exp_par_block_futex(x, 100, 102, 3700, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 3700, true, true) == 0);
	CHECK(exp_par_switch(x, 102, 3750, false, false) == 0);
	/* one left without a context: 7 ns */
	CHECK(exp_par_block_futex(x, 100, 102, 4000, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 4000, true, false) == 0);
	CHECK(exp_par_wake(x, 101, 102, 4007, EXP_PAR_UNSAMPLED) == 0);
	CHECK(exp_par_switch(x, 102, 4010, false, false) == 0);
	/* a join: 102 waits on the tid word of 104's struct pthread; 104
	 * exits and no wakeup is seen (it came after its events closed): the
	 * 150 ns go to 104's exit, from its last sampled context nb */
	CHECK(exp_par_thread_start(x, 104, 4100, true) == 0);
	CHECK(exp_par_thread_word(x, 100, 104, 4100, 0x7f00002d0) == 0);
	for (uint64_t t = 4101; t <= 4103; t++)
		CHECK(exp_par_sample(x, 104, t, (uint64_t)nb) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 4200, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 102, 4200, true, false) == 0);
	CHECK(exp_par_thread_end(x, 104, 4340) == 0);
	CHECK(exp_par_switch(x, 102, 4350, false, false) == 0);
	/* a wait far from any thread's tcb stays unblamed (2 ns) */
	CHECK(exp_par_block_futex(x, 100, 102, 4400, 0xbeef0) == 0);
	CHECK(exp_par_switch(x, 102, 4400, true, false) == 0);
	CHECK(exp_par_switch(x, 102, 4402, false, false) == 0);
	/* nor one on another word near it (a Go runtime's futex in the
	 * exiting thread's data, 8 bytes from its tid word), however soon
	 * after the exit it ends */
	CHECK(exp_par_thread_start(x, 106, 4403, true) == 0);
	CHECK(exp_par_thread_word(x, 100, 106, 4403, 0x7f00012d0) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 4405, 0x7f00012d8) == 0);
	CHECK(exp_par_switch(x, 102, 4405, true, false) == 0);
	CHECK(exp_par_thread_end(x, 106, 4407) == 0);
	CHECK(exp_par_switch(x, 102, 4408, false, false) == 0);
	/* 105 reuses 104's stack, so its struct pthread: the join on it goes
	 * to 105's exit (context na), not 104's; waits of another process, or
	 * below the tcb, or ended long after the exit, are no joins */
	CHECK(exp_par_thread_start(x, 105, 4500, true) == 0);
	CHECK(exp_par_thread_word(x, 100, 105, 4500, 0x7f00002d0) == 0);
	CHECK(exp_par_sample(x, 105, 4501, (uint64_t)na) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 4502, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 102, 4502, true, false) == 0);
	CHECK(exp_par_thread_end(x, 105, 4511) == 0);
	CHECK(exp_par_switch(x, 102, 4512, false, false) == 0);
	CHECK(exp_par_block_futex(x, 200, 202, 4513, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 202, 4513, true, false) == 0);
	CHECK(exp_par_switch(x, 202, 4514, false, false) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 4515, 0x7effffff0) == 0);
	CHECK(exp_par_switch(x, 102, 4515, true, false) == 0);
	CHECK(exp_par_switch(x, 102, 4516, false, false) == 0);
	CHECK(exp_par_block_futex(x, 100, 102, 4520, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 102, 4520, true, false) == 0);
	CHECK(exp_par_switch(x, 102, 4510 + 2000000000ULL, false, false) == 0);
	/* no exit stop (issue 20): 107's end is learnt from its death
	 * status, after 109's join on its word ended; the join is still its
	 * exit's (10 ns, from nc). Samples beside another working thread
	 * carry no idleness. */
	CHECK(exp_par_thread_start(x, 109, 5000, true) == 0);
	CHECK(exp_par_thread_start(x, 107, 5000, true) == 0);
	CHECK(exp_par_thread_word(x, 100, 107, 5000, 0x7f00002d0) == 0);
	CHECK(exp_par_sample(x, 107, 5001, (uint64_t)nc) == 0);
	CHECK(exp_par_block_futex(x, 100, 109, 5010, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 109, 5010, true, false) == 0);
	CHECK(exp_par_switch(x, 109, 5020, false, false) == 0);
	CHECK(exp_par_thread_end(x, 107, 5030) == 0);
	/* 108's exit wakes 109's join itself (inherited events outlive the
	 * wakeup): its exit's too (5 ns, from nd), not its wakeup's */
	CHECK(exp_par_thread_start(x, 108, 5100, true) == 0);
	CHECK(exp_par_thread_word(x, 100, 108, 5100, 0x7f00002d0) == 0);
	CHECK(exp_par_sample(x, 108, 5101, (uint64_t)nd) == 0);
	CHECK(exp_par_block_futex(x, 100, 109, 5110, 0x7f00002d0) == 0);
	CHECK(exp_par_switch(x, 109, 5110, true, false) == 0);
	CHECK(exp_par_wake(x, 108, 109, 5115, EXP_PAR_UNSAMPLED) == 0);
	CHECK(exp_par_switch(x, 109, 5120, false, false) == 0);
	CHECK(exp_par_thread_end(x, 108, 5130) == 0);
	CHECK(exp_par_thread_end(x, 109, 5200) == 0);
	CHECK(exp_par_thread_end(x, 103, 70) == 0);
	CHECK(exp_par_advance(x, 3000000000ULL) == 0);
	exp_par_stats(x, &st);
	CHECK_EQ_INT(st.samples, 32);
	CHECK_EQ_INT(st.idle_micro, 13 * M);
	CHECK_EQ_INT(st.waits, 15);
	CHECK_EQ_INT(st.blamed, 9);
	CHECK_EQ_INT(st.sampled, 4);

	/* Three CPUs, three threads: 2 working leave 1 idle, shared by 2. */
	struct exp_par *y;
	CHECK(exp_par_new(&out, 3, &y) == 0);
	CHECK(exp_par_thread_start(y, 201, 0, true) == 0);
	CHECK(exp_par_thread_start(y, 202, 0, true) == 0);
	CHECK(exp_par_sample(y, 201, 5, (uint64_t)na) == 0);
	CHECK(exp_par_advance(y, 10) == 0);
	exp_par_stats(y, &st);
	CHECK_EQ_INT(st.idle_micro, M / 2);
	exp_par_free(y);

	CHECK(exp_profile_flush(prof) == 0);
	CHECK(exp_par_flush(x) == 0);
	exp_par_free(x);
	exp_profile_free(prof);
	CHECK(rep_writer_close(w) == 0);

	/* Read back: idleness per thread and node, lock rows. */
	struct rep_profile *p;
	char err[256];
	CHECK(rep_profile_new(&p) == 0);
	CHECK(rep_profile_load(p, path, err, sizeof(err)) == 0);
	CHECK(p->has_idleness);
	CHECK_EQ_INT(p->runs[0].cpus, 2);
	CHECK_EQ_INT(p->idle_micro, 13 * M);
	CHECK_EQ_INT(p->nlocks, 11);
	uint64_t blamed = 0, unblamed = 0, unsampled = 0, joins = 0, others = 0;
	for (uint32_t i = 0; i < p->nlocks; i++) {
		const struct rep_mlock *l = &p->locks[i];
		if (l->exit) {
			/* four exits of threads with the same tid word, each its own */
			CHECK_EQ_INT(l->addr, 0x7f00002d0);
			CHECK_EQ_INT(l->waits, 1);
			CHECK(l->ctx != REP_NONE && l->traced);
			joins += l->wait_ns;
			continue;
		}
		if (l->addr != 0xbeef0) {
			/* another process, another word near the tid word, too
			 * late: no join */
			CHECK(l->ctx == REP_NONE && !l->traced && l->waits == 1);
			others += l->wait_ns;
			continue;
		}
		if (p->locks[i].ctx != REP_NONE) {
			CHECK_EQ_INT(p->locks[i].waits, 4);
			blamed += p->locks[i].wait_ns;
		} else if (p->locks[i].traced) {
			CHECK_EQ_INT(p->locks[i].waits, 1);
			unsampled += p->locks[i].wait_ns;
		} else {
			CHECK_EQ_INT(p->locks[i].waits, 2);
			unblamed += p->locks[i].wait_ns;
		}
	}
	CHECK_EQ_INT(blamed, 10 + 20 + 3 + 4);
	CHECK_EQ_INT(unsampled, 7);
	CHECK_EQ_INT(unblamed, 5 + 2);
	CHECK_EQ_INT(joins, 150 + 10 + 10 + 5);
	CHECK_EQ_INT(others, 1 + 1 + 3 + 2000000000ULL - 10);
	rep_profile_free(p);
	unlink(path);
	return tap_done();
}
