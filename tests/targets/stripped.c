/* stripped CPU_SECONDS
 *
 * Burns CPU_SECONDS of process CPU time in hidden_loop(), a static function
 * defined right after the global stripped_exported(), then exits 0. Built
 * stripped (-s) for the report's handling of code without symbols
 * (t8020-report-stripped): "stripped-static" (static: no symbol table at
 * all) and "stripped-exports" (-rdynamic: only the global functions keep a
 * name, in .dynsym; hidden_loop has none and follows stripped_exported).
 * Exit: 0, or 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* Exported (under -rdynamic) and called once, so it stays a function. */
__attribute__((noipa)) unsigned long stripped_exported(unsigned long x)
{
	return x * 2654435761UL + 1;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* static and noipa: a function of its own, with no name once stripped */
static __attribute__((noipa)) void hidden_loop(double seconds)
{
	unsigned long acc = stripped_exported(1);

	while (cpu_seconds() < seconds) {
		for (unsigned long i = 0; i < 1000000; i++) {
			acc = acc * 6364136223846793005UL + i;
			__asm__ volatile("" : "+r"(acc));
		}
	}
	sink = acc;
}

int main(int argc, char **argv)
{
	char *end;
	double secs;

	if (argc != 2 || (secs = strtod(argv[1], &end)) <= 0 || *end) {
		fprintf(stderr, "usage: stripped CPU_SECONDS\n");
		return 64;
	}
	hidden_loop(secs);
	return 0;
}
