/* witch-sigs SECONDS
 *
 * A program witch must not change: it does dead stores (so psup arms
 * watchpoints and takes traps) while it
 *  - raises SIGTRAP itself and executes int3, with a handler that counts them
 *    (each must arrive exactly once: psup's own traps must never reach it);
 *  - installs a handler for every realtime signal and checks none arrives
 *    (psup's sampling signal is a realtime one and must never be delivered);
 *  - in a second phase blocks every signal for a while (sigprocmask), then
 *    unblocks and checks nothing was pending and nothing arrives, and that
 *    its SIGTRAP handler is still there.
 * Prints "ready" once its handlers are installed. Exit 0 when all checks
 * hold, 1 with a message when not, 64 on a usage error.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t traps, rt_seen;
static volatile int sink[4096];

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

static void on_rt(int sig)
{
	rt_seen = sig;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void work(double until)
{
	while (now() < until) {
		for (int i = 0; i < 4096; i++)
			sink[i] = 0; /* MARK:sigs_dead */
		for (int i = 0; i < 4096; i++)
			sink[i] = i;
	}
}

int main(int argc, char **argv)
{
	double secs, end;
	int expect = 0;
	sigset_t all, pending;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: witch-sigs SECONDS\n");
		return 64;
	}
	signal(SIGTRAP, on_trap);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		signal(s, on_rt);
	printf("ready\n");
	fflush(stdout);
	/* Phase 1: the program's own SIGTRAPs among psup's traps. */
	end = now() + secs / 2;
	while (now() < end) {
		work(now() + 0.02);
		raise(SIGTRAP);
		expect++;
		__asm__ volatile("int3");
		expect++;
	}
	/* Phase 2: every signal blocked while working. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	work(now() + secs / 2);
	sigpending(&pending);
	for (int s = 1; s < 65; s++)
		if (sigismember(&pending, s) == 1) {
			fprintf(stderr, "witch-sigs: signal %d pending while blocked\n", s);
			return 1;
		}
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	work(now() + 0.05);
	/* Its SIGTRAP handler survived psup's traps during phase 2 (a debug
	 * trap while SIGTRAP is blocked would have reset it to the default,
	 * which kills here). */
	raise(SIGTRAP);
	expect++;
	if (traps != expect) {
		fprintf(stderr, "witch-sigs: %d SIGTRAPs handled, %d raised\n", (int)traps, expect);
		return 1;
	}
	if (rt_seen) {
		fprintf(stderr, "witch-sigs: got realtime signal %d\n", (int)rt_seen);
		return 1;
	}
	printf("ok %d traps\n", (int)traps);
	return 0;
}
