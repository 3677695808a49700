/* causal-signals SECONDS
 *
 * A program with its own SIGPROF and SIGSEGV handlers (what breaks
 * in-process profilers such as Coz, which take SIGPROF for themselves). It
 * arms ITIMER_PROF every 1 ms and counts the ticks; every 50th item it
 * touches a PROT_NONE page, and its SIGSEGV handler makes the page writable
 * (counted) so the store is retried; the main thread then protects the page
 * again. Work per item ~1 ms (marker causal_sig_work), counted at
 * marker causal_sig_done (causal_sig_item_done()). A second thread does other
 * work (marker causal_sig_other).
 * Runs until SECONDS of wall time passed; prints "items N ticks T segv S";
 * exits 0 when the handlers saw every fault (S = items / 50) and at least one
 * tick, 1 otherwise.
 * Exit: 0, 1 when its own handlers misbehaved, 64 on a usage error.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "causal-common.h"

static volatile sig_atomic_t ticks, faults;
static char *guard;
static long page;
static volatile int stop;
static unsigned long items;
static volatile unsigned long sink;

static void on_prof(int sig)
{
	(void)sig;
	ticks++;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((char *)si->si_addr < guard || (char *)si->si_addr >= guard + page)
		_exit(99);
	faults++;
	mprotect(guard, page, PROT_READ | PROT_WRITE);
}

__attribute__((noipa)) void causal_sig_item_done(void)
{
	items++; CAUSAL_PROGRESS; /* MARK:causal_sig_done */
}

static void *other(void *arg)
{
	unsigned long acc = 9;

	(void)arg;
	while (!stop) {
		CAUSAL_WORK(acc, 300000) /* MARK:causal_sig_other */
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5), deadline;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct sigaction sa;
	unsigned long acc = 1, expect;
	pthread_t t;

	page = sysconf(_SC_PAGESIZE);
	guard = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		return 71;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGSEGV, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	if (pthread_create(&t, NULL, other, NULL))
		return 70;
	deadline = causal_now() + seconds;
	while (causal_now() < deadline) {
		CAUSAL_WORK(acc, 600000) /* MARK:causal_sig_work */
		causal_sig_item_done();
		if (items % 50 == 0) {
			*(volatile char *)guard = (char)acc;
			mprotect(guard, page, PROT_NONE);
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	sink = acc;
	expect = items / 50;
	printf("items %lu ticks %d segv %d\n", items, (int)ticks, (int)faults);
	return (ticks > 0 && (unsigned long)faults == expect) ? 0 : 1;
}
