/* stopper [WALL_SECONDS | --until FILE]
 *
 * Prints "<pid> ready" on stdout (flushed), then alternates ~1 ms CPU bursts
 * with 1 ms sleeps, counting bursts, until WALL_SECONDS (default 6) of wall
 * time have passed since start, or, with --until, until FILE exists (looked
 * at after every burst: the test says when it no longer needs the program). A SIGCONT handler counts continues. For
 * job-control tests: the test sends SIGTSTP/SIGSTOP/SIGCONT from outside and
 * checks the process is in state T while stopped and runs on after SIGCONT.
 * At the end it prints "bursts <n> sigcont <m>" on stdout.
 * Exit: 0 at the end, 64 usage, 71 setup failed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t cont_count;
static volatile unsigned long sink;

static double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_cont(int sig)
{
	(void)sig;
	cont_count++;
}

__attribute__((noipa)) unsigned long stopper_burst(unsigned long acc)
{
	for (unsigned long i = 0; i < 1000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:stopper_burst */
	return acc;
}

int main(int argc, char **argv)
{
	struct timespec ms = { 0, 1000000 };
	unsigned long acc = 1, bursts = 0;
	struct sigaction sa;
	const char *until_file = NULL;
	double wall = 6, end;
	char *endp;

	if (argc == 3 && !strcmp(argv[1], "--until")) {
		until_file = argv[2];
	} else if (argc > 2 || (argc == 2 && ((wall = strtod(argv[1], &endp)), *endp || wall < 0))) {
		fprintf(stderr, "usage: stopper [WALL_SECONDS | --until FILE]\n");
		return 64;
	}
	end = monotonic_seconds() + wall;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cont;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCONT, &sa, NULL)) {
		perror("stopper: sigaction");
		return 71;
	}
	printf("%d ready\n", getpid());
	fflush(stdout);

	while (until_file ? access(until_file, F_OK) != 0 : monotonic_seconds() < end) {
		acc = stopper_burst(acc);
		bursts++;
		nanosleep(&ms, NULL); /* EINTR from SIGCONT's handler is fine */
	}
	sink = acc;
	printf("bursts %lu sigcont %d\n", bursts, (int)cont_count);
	return 0;
}
