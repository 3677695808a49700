/* busy [MAX_WALL_SECONDS]
 *
 * Prints "<pid> ready" on stdout (flushed), then spins in busy_loop() until
 * killed. On SIGUSR1 it prints "cpu <seconds>\n" (process CPU time so far) on
 * stdout, flushed: the handler only sets a flag and the loop prints, so the
 * output is async-signal-safe. For attach/detach tests: after psup detaches,
 * the CPU time keeps growing. As a safety net against orphans it gives up
 * after MAX_WALL_SECONDS (default 600).
 * Exit: never normally (killed by the test); 2 when MAX_WALL_SECONDS passed,
 * 64 usage, 71 setup failed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t report_wanted;
static volatile unsigned long sink;

static double clock_seconds(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_usr1(int sig)
{
	(void)sig;
	report_wanted = 1;
}

__attribute__((noipa)) void busy_loop(double max_wall)
{
	double end = clock_seconds(CLOCK_MONOTONIC) + max_wall;
	unsigned long acc = 1;

	for (;;) {
		for (unsigned long i = 0; i < 1000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:busy */
		sink = acc;
		if (report_wanted) {
			report_wanted = 0;
			printf("cpu %.6f\n", clock_seconds(CLOCK_PROCESS_CPUTIME_ID));
			fflush(stdout);
		}
		if (clock_seconds(CLOCK_MONOTONIC) > end)
			return;
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	double max_wall = 600;
	char *end;

	if (argc > 2 || (argc == 2 && ((max_wall = strtod(argv[1], &end)), *end || max_wall < 0))) {
		fprintf(stderr, "usage: busy [MAX_WALL_SECONDS]\n");
		return 64;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("busy: sigaction");
		return 71;
	}
	printf("%d ready\n", getpid());
	fflush(stdout);
	busy_loop(max_wall);
	fprintf(stderr, "busy: still running after %.0f s, giving up\n", max_wall);
	return 2;
}
