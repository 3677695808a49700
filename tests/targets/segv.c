/* segv [abort]
 *
 * segv:        main -> crash_here() stores through a NULL pointer: the process
 *              dies of SIGSEGV (shell status 139).
 * segv abort:  main -> abort_here() calls abort(): dies of SIGABRT (134).
 * Exit: never normally; 64 usage; 1 if it somehow survived.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read through a volatile so GCC cannot see the NULL and turn the store into
 * a trap instruction (-fisolate-erroneous-paths-dereference gives SIGILL). */
static int *volatile null_ptr;

__attribute__((noipa)) void crash_here(void)
{
	*null_ptr = 42; /* MARK:segv */
}

__attribute__((noipa)) void abort_here(void)
{
	abort(); /* MARK:abort */
}

int main(int argc, char **argv)
{
	if (argc == 1)
		crash_here();
	else if (argc == 2 && !strcmp(argv[1], "abort"))
		abort_here();
	else {
		fprintf(stderr, "usage: segv [abort]\n");
		return 64;
	}
	fprintf(stderr, "segv: still alive after the fault\n");
	return 1;
}
