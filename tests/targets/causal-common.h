/* Shared by the causal target programs (tests/targets/causal-*.c).
 *
 * Work is the same dependent multiply-add loop everywhere (as in ratio.c),
 * written on ONE source line at each call site through CAUSAL_WORK so a
 * line's samples, breakpoints and experiments all name the marked line. The
 * asm barrier keeps the compiler from dropping or vectorizing the loop.
 *
 * Optional progress macros: built with -DCAUSAL_PSUP_H the programs use
 * include/psup.h (PSUP_PROGRESS...), with -DCAUSAL_COZ_H Coz's coz.h
 * (COZ_PROGRESS...); otherwise CAUSAL_PROGRESS expands to nothing and the
 * scenarios place breakpoint progress points with -p FILE:LINE.
 */
#ifndef PSUP_TESTS_CAUSAL_COMMON_H
#define PSUP_TESTS_CAUSAL_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(CAUSAL_PSUP_H)
#include "psup.h"
#define CAUSAL_PROGRESS PSUP_PROGRESS
#define CAUSAL_PROGRESS_NAMED(n) PSUP_PROGRESS_NAMED(n)
#define CAUSAL_BEGIN(n) PSUP_BEGIN(n)
#define CAUSAL_END(n) PSUP_END(n)
#elif defined(CAUSAL_COZ_H)
#include <coz.h>
#define CAUSAL_PROGRESS COZ_PROGRESS
#define CAUSAL_PROGRESS_NAMED(n) COZ_PROGRESS_NAMED(n)
#define CAUSAL_BEGIN(n) COZ_BEGIN(n)
#define CAUSAL_END(n) COZ_END(n)
#else
#define CAUSAL_PROGRESS do { } while (0)
#define CAUSAL_PROGRESS_NAMED(n) do { } while (0)
#define CAUSAL_BEGIN(n) do { } while (0)
#define CAUSAL_END(n) do { } while (0)
#endif

/* ITERS dependent multiply-adds on acc: ~1.5 ns each on the test machines. */
#define CAUSAL_WORK(acc, iters) for (unsigned long causal_i_ = 0; causal_i_ < (unsigned long)(iters); causal_i_++) { (acc) = (acc) * 6364136223846793005UL + causal_i_; __asm__ volatile("" : "+r"(acc)); }

static inline double causal_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A non-negative number from argv[i], or def when absent; exits 64 on junk. */
static inline double causal_arg(int argc, char **argv, int i, double def)
{
	char *end;
	double v;

	if (argc <= i)
		return def;
	v = strtod(argv[i], &end);
	if (end == argv[i] || *end || v < 0) {
		fprintf(stderr, "%s: bad argument '%s'\n", argv[0], argv[i]);
		exit(64);
	}
	return v;
}

/* Iterations left after cutting a line's work by pct percent (a real
 * speedup of that line, for ground truth). */
static inline unsigned long causal_cut(unsigned long iters, double pct)
{
	return (unsigned long)(iters * (1.0 - pct / 100.0) + 0.5);
}

/* The real speedup asked for a marked line: CAUSAL_CUT="name:pct[,name:pct]"
 * in the environment (the benchmark's ground truth), 0 when absent. */
static inline double causal_cut_pct(const char *name)
{
	const char *env = getenv("CAUSAL_CUT"), *p;
	size_t n = strlen(name);

	for (p = env; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, name, n) && p[n] == ':')
			return atof(p + n + 1);
	}
	return 0;
}

#endif
