/* common/sigmask.c: a request to block every signal and the request that
 * restores the mask it replaced leave the real mask alone; every other
 * request sees, and makes, what the calls asked for. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "tests/unit/tap.h"

static sigset_t real_mask(void)
{
	sigset_t m;

	sigemptyset(&m);
	pthread_sigmask(SIG_SETMASK, NULL, &m);
	return m;
}

static bool same(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return false;
	return true;
}

static void test_block_all_and_restore(void)
{
	sigset_t start = real_mask(), full, old, now, q;

	sigfillset(&full);
	CHECK(sigprocmask(SIG_SETMASK, &full, &old) == 0);
	CHECK(same(&old, &start));
	now = real_mask();
	CHECK(same(&now, &start));
	CHECK(sigprocmask(SIG_SETMASK, NULL, &q) == 0 && same(&q, &full));
	/* A nested pair inside. */
	CHECK(sigprocmask(SIG_SETMASK, &full, &q) == 0 && same(&q, &full));
	CHECK(sigprocmask(SIG_SETMASK, &q, NULL) == 0);
	now = real_mask();
	CHECK(same(&now, &start));
	CHECK(sigprocmask(SIG_SETMASK, &old, &q) == 0 && same(&q, &full));
	now = real_mask();
	CHECK(same(&now, &start));
}

static void test_other_request_applies_it(void)
{
	sigset_t start = real_mask(), full, old, one, q, now;

	sigfillset(&full);
	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	sigprocmask(SIG_SETMASK, &full, &old);
	/* Not the restore: the full set is applied first, then this. */
	CHECK(sigprocmask(SIG_UNBLOCK, &one, &q) == 0 && sigismember(&q, SIGUSR1) == 1 && sigismember(&q, SIGINT) == 1);
	now = real_mask();
	CHECK(sigismember(&now, SIGUSR1) == 0 && sigismember(&now, SIGUSR2) == 1 && sigismember(&now, SIGINT) == 1);
	CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
	now = real_mask();
	CHECK(same(&now, &start));
	/* An ordinary block and unblock are real. */
	CHECK(sigprocmask(SIG_BLOCK, &one, NULL) == 0);
	now = real_mask();
	CHECK(sigismember(&now, SIGUSR1) == 1);
	CHECK(sigprocmask(SIG_UNBLOCK, &one, NULL) == 0);
	now = real_mask();
	CHECK(same(&now, &start));
}

int main(void)
{
	test_block_all_and_restore();
	test_other_request_applies_it();
	return tap_done();
}
