/* spin CPU_SECONDS [EXIT_STATUS]
 *
 * Burns CPU_SECONDS of process CPU time in spin_loop(), then exits with
 * EXIT_STATUS (default 0). Nearly every sample should land in spin_loop.
 * Exit: EXIT_STATUS on success, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* noipa: keep the symbol exactly "spin_loop" (no clone, no inlining, no
 * folding) so scenarios can look for it by name. */
__attribute__((noipa)) void spin_loop(double seconds)
{
	unsigned long acc = 1;

	while (cpu_seconds() < seconds) {
		/* ~1 ms of work between clock reads, so the clock_gettime
		 * syscall stays a small share of the samples. */
		for (unsigned long i = 0; i < 1000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:spin */
	}
	sink = acc;
}

int main(int argc, char **argv)
{
	char *end;
	double seconds;
	long status = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: spin CPU_SECONDS [EXIT_STATUS]\n");
		return 64;
	}
	seconds = strtod(argv[1], &end);
	if (*end || seconds < 0) {
		fprintf(stderr, "spin: bad CPU_SECONDS '%s'\n", argv[1]);
		return 64;
	}
	if (argc == 3) {
		status = strtol(argv[2], &end, 10);
		if (*end || status < 0 || status > 255) {
			fprintf(stderr, "spin: bad EXIT_STATUS '%s'\n", argv[2]);
			return 64;
		}
	}
	spin_loop(seconds);
	return (int)status;
}
