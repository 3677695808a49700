/* nodump CPU_SECONDS
 *
 * Makes itself not dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent and
 * gpg-agent do), prints "ready", then burns CPU_SECONDS of CPU time in
 * spin_loop(). Run by an ordinary user under that user's psup: psup can
 * sample it but not read its maps (t1098-unreadable-targets).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) void spin_loop(double seconds)
{
	while (cpu_seconds() < seconds)
		for (unsigned long i = 0; i < 1000000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nodump CPU_SECONDS\n");
		return 64;
	}
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		perror("prctl");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	spin_loop(atof(argv[1]));
	return 0;
}
