/* witch-listing3 [N [ROUNDS]]
 *
 * The Witch paper's Listing 3 (dead stores through aliasing pointers): each
 * round zeroes array[1..N] (MARK:l3_zero), then N times stores through p
 * (MARK:l3_p) and q (MARK:l3_q), which point to the same int (the compiler
 * cannot know: q comes through a volatile), then zeroes the array again
 * (MARK:l3_rezero). Nothing is ever read, so every store judged is dead:
 * the pairs (l3_zero, l3_rezero), (l3_p, l3_q) and (l3_q, l3_p) waste about
 * 4 * N * ROUNDS bytes each and (l3_rezero, l3_zero) 4 * N * (ROUNDS - 1):
 * about 25% each. Every store judged is also silent (zero over zero).
 * Defaults: N = 100000, ROUNDS = 2000.
 * Exit: 0, or 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

static int cell;
static int *volatile alias = &cell;

int main(int argc, char **argv)
{
	unsigned long n = 100000, rounds = 2000;
	volatile int *array, *p = &cell, *q = alias;

	witch_args(argc, argv, "witch-listing3 [N [ROUNDS]]", &n, 1UL << 26, &rounds, 1UL << 30);
	array = calloc(n + 1, sizeof(*array));
	if (!array)
		return 1;
	for (unsigned long r = 0; r < rounds; r++) {
		for (unsigned long i = 1; i <= n; i++) array[i] = 0; /* MARK:l3_zero */
		for (unsigned long k = 1; k <= n; k++) {
			*p = 0; /* MARK:l3_p */
			*q = 0; /* MARK:l3_q */
		}
		for (unsigned long j = 1; j <= n; j++) array[j] = 0; /* MARK:l3_rezero */
	}
	free((void *)array);
	return 0;
}
