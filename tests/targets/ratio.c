/* ratio MODE CPU_SECONDS
 *
 * Spends CPU in a 3:1 ratio between work_three() (3 units per round) and
 * work_one() (1 unit per round) until the process used CPU_SECONDS. A unit is
 * the same loop of UNIT_ITERS dependent multiply-adds everywhere, with an asm
 * barrier so the compiler can neither drop nor vectorize it.
 *   direct  the loops sit in work_three/work_one
 *   inline  they sit in always_inline inl_three/inl_one
 *   lib     they sit in lib_three/lib_one of libratio.so
 * Each loop is on one source line ending in a marker comment named after its
 * function ("MARK" ":" then three, one, inl_three, inl_one; lib_three and
 * lib_one in libratio.c), so scenarios find the expected line numbers with
 * grep -n; each marker appears exactly once under tests/targets/.
 * Exit: 0 on success, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT_ITERS 1000000UL

enum mode { MODE_DIRECT, MODE_INLINE, MODE_LIB };

/* From libratio.so (tests/targets/libratio.c). */
unsigned long lib_three(unsigned long acc);
unsigned long lib_one(unsigned long acc);

static volatile unsigned long sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline __attribute__((always_inline)) unsigned long inl_three(unsigned long acc)
{
	for (unsigned long i = 0; i < 3 * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:inl_three */
	return acc;
}

static inline __attribute__((always_inline)) unsigned long inl_one(unsigned long acc)
{
	for (unsigned long i = 0; i < UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:inl_one */
	return acc;
}

/* noipa: no cloning, inlining or identical-code folding, so both symbols
 * exist under their own names and each keeps its own samples. */
__attribute__((noipa)) unsigned long work_three(enum mode mode, unsigned long acc)
{
	switch (mode) {
	case MODE_DIRECT:
		for (unsigned long i = 0; i < 3 * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:three */
		return acc;
	case MODE_INLINE:
		return inl_three(acc);
	case MODE_LIB:
		return lib_three(acc);
	}
	return acc;
}

__attribute__((noipa)) unsigned long work_one(enum mode mode, unsigned long acc)
{
	switch (mode) {
	case MODE_DIRECT:
		for (unsigned long i = 0; i < UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:one */
		return acc;
	case MODE_INLINE:
		return inl_one(acc);
	case MODE_LIB:
		return lib_one(acc);
	}
	return acc;
}

int main(int argc, char **argv)
{
	unsigned long acc = 1;
	enum mode mode;
	double seconds;
	char *end;

	if (argc != 3) {
		fprintf(stderr, "usage: ratio direct|inline|lib CPU_SECONDS\n");
		return 64;
	}
	if (!strcmp(argv[1], "direct"))
		mode = MODE_DIRECT;
	else if (!strcmp(argv[1], "inline"))
		mode = MODE_INLINE;
	else if (!strcmp(argv[1], "lib"))
		mode = MODE_LIB;
	else {
		fprintf(stderr, "ratio: unknown MODE '%s' (direct, inline or lib)\n", argv[1]);
		return 64;
	}
	seconds = strtod(argv[2], &end);
	if (*end || seconds < 0) {
		fprintf(stderr, "ratio: bad CPU_SECONDS '%s'\n", argv[2]);
		return 64;
	}

	while (cpu_seconds() < seconds) {
		acc = work_three(mode, acc);
		acc = work_one(mode, acc);
	}
	sink = acc;
	return 0;
}
