/*
 * The command line of the witch test programs: NAME [A [B]], two optional
 * positive numbers (a size and a count of rounds). A bad one, or more
 * arguments, is a one-line error and exit status 64.
 */
#ifndef PSUP_TESTS_WITCH_ARGS_H
#define PSUP_TESTS_WITCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long witch_arg(const char *name, const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > max) {
		fprintf(stderr, "%s: bad number '%s' (1..%lu)\n", name, s, max);
		exit(64);
	}
	return v;
}

/* *a and *b keep their defaults when not given. */
static void witch_args(int argc, char **argv, const char *usage, unsigned long *a,
		       unsigned long amax, unsigned long *b, unsigned long bmax)
{
	char prog[64];

	snprintf(prog, sizeof(prog), "%.*s", (int)strcspn(usage, " "), usage);
	if (argc > 3) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(64);
	}
	if (argc > 1)
		*a = witch_arg(prog, argv[1], amax);
	if (argc > 2)
		*b = witch_arg(prog, argv[2], bmax);
}

#endif
