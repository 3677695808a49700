#ifndef PSUP_TESTS_TAP_H
#define PSUP_TESTS_TAP_H

/* A minimal checker for unit tests: CHECK() records a failure with its line
 * and goes on; the test's main returns tap_done(). */

#include <stdio.h>
#include <stdlib.h>

static int tap_failures, tap_checks;

#define CHECK(cond) \
	do { \
		tap_checks++; \
		if (!(cond)) { \
			tap_failures++; \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond); \
		} \
	} while (0)

#define CHECK_EQ_INT(a, b) \
	do { \
		long long _a = (long long)(a), _b = (long long)(b); \
		tap_checks++; \
		if (_a != _b) { \
			tap_failures++; \
			fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", \
				__FILE__, __LINE__, #a, _a, _b); \
		} \
	} while (0)

static inline int tap_done(void)
{
	printf("%d checks, %d failed\n", tap_checks, tap_failures);
	return tap_failures ? 1 : 0;
}

#endif
