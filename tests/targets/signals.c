/* signals COUNT
 *
 * A child thread sends COUNT SIGUSR1 to the main thread (blocked in
 * pthread_join), one at a time: after each it waits (30 s at most) until the
 * handler posted a semaphore, so no two signals can coalesce. Then a SIGTRAP
 * handler is installed and hit once by raise(SIGTRAP), once by an int3
 * instruction (a kernel-generated SIGTRAP, si_code SI_KERNEL) and once by an
 * int1 (icebp: a debug exception with no cause in DR6, si_code TRAP_BRKPT,
 * which psup must tell from a stray trap of its own breakpoints). Intel
 * reports the int1 as a trap (ip after it); AMD KVM guests report it as a
 * fault (ip still on it, so returning would run it forever): the handler
 * steps over it there.
 * Exit: 0 when every count is right, 1 wrong SIGUSR1 count, 2 raise(SIGTRAP)
 * not handled exactly once, 3 int3 not handled exactly once, 4 int1 not
 * handled exactly once, 64 usage,
 * 71 setup failed, 124 a SIGUSR1 was not handled within 30 s.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30

static volatile sig_atomic_t usr1_count;
static volatile sig_atomic_t trap_count;
static sem_t handled;
static pthread_t main_thread;
static unsigned long count;

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	(void)ctx;
	usr1_count++;
	sem_post(&handled); /* async-signal-safe */
}

extern const unsigned char signals_int1[]; /* the int1 in main() */

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	if (uc->uc_mcontext.gregs[REG_RIP] == (greg_t)(uintptr_t)signals_int1)
		uc->uc_mcontext.gregs[REG_RIP]++; /* reported as a fault: step over */
	trap_count++;
}

static void *sender(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < count; i++) {
		struct timespec deadline;
		int err;

		err = pthread_kill(main_thread, SIGUSR1);
		if (err) {
			fprintf(stderr, "signals: pthread_kill #%lu: %s\n", i, strerror(err));
			_exit(71);
		}
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += WAIT_TIMEOUT_S;
		while (sem_clockwait(&handled, CLOCK_MONOTONIC, &deadline)) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "signals: SIGUSR1 #%lu not handled within %d s (%d handled): %s\n",
				i + 1, WAIT_TIMEOUT_S, (int)usr1_count, strerror(errno));
			_exit(124);
		}
	}
	return NULL;
}

static int install(int sig, void (*action)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = action;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	pthread_t tid;
	sigset_t usr1;
	char *end;
	int err;

	if (argc != 2 || (count = strtoul(argv[1], &end, 10), *end) || argv[1][0] == '-') {
		fprintf(stderr, "usage: signals COUNT\n");
		return 64;
	}
	if (sem_init(&handled, 0, 0) || install(SIGUSR1, on_usr1) || install(SIGTRAP, on_trap)) {
		perror("signals: setup");
		return 71;
	}
	main_thread = pthread_self();

	/* Only the main thread may take SIGUSR1 (pthread_kill targets it anyway;
	 * this also keeps a stray process-directed SIGUSR1 off the sender). */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	err = pthread_create(&tid, NULL, sender, NULL);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	if (err) {
		fprintf(stderr, "signals: pthread_create: %s\n", strerror(err));
		return 71;
	}
	pthread_join(tid, NULL);
	if ((unsigned long)usr1_count != count) {
		fprintf(stderr, "signals: SIGUSR1 handler ran %d times, expected %lu\n", (int)usr1_count, count);
		return 1;
	}

	raise(SIGTRAP);
	if (trap_count != 1) {
		fprintf(stderr, "signals: SIGTRAP handler ran %d times after raise(), expected 1\n", (int)trap_count);
		return 2;
	}
	__asm__ volatile("int3");
	if (trap_count != 2) {
		fprintf(stderr, "signals: SIGTRAP handler ran %d times after int3, expected 2\n", (int)trap_count);
		return 3;
	}
	__asm__ volatile("signals_int1: .byte 0xf1"); /* int1 */
	if (trap_count != 3) {
		fprintf(stderr, "signals: SIGTRAP handler ran %d times after int1, expected 3\n", (int)trap_count);
		return 4;
	}
	return 0;
}
