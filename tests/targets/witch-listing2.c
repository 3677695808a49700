/* witch-listing2 [N [ROUNDS]]
 *
 * The Witch paper's Listing 2 (a long-distance dead store): each round zeroes
 * array[1..N] (line MARK:l2_zero), then rewrites it with array[j] = j (line
 * MARK:l2_rewrite), then reads it back (line MARK:l2_read). Every zeroing
 * store is dead, killed by the rewrite; every rewrite is used by the read.
 * So, over the array, dead stores are half of the bytes judged: the pair
 * (l2_zero, l2_rewrite) wastes 4 * N * ROUNDS bytes and (l2_rewrite,
 * l2_read) uses as many. No store is silent: the rewrite puts j over 0,
 * the next round's zeroing puts 0 over j.
 * The array is volatile so each access is one 4-byte mov, none merged,
 * vectorized or removed. Defaults: N = 100000, ROUNDS = 2000.
 * Exit: 0 when the sum read back is right, 1 when not, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

int main(int argc, char **argv)
{
	unsigned long n = 100000, rounds = 2000, sum = 0, expect;
	volatile int *array;

	witch_args(argc, argv, "witch-listing2 [N [ROUNDS]]", &n, 1UL << 26, &rounds, 1UL << 30);
	array = calloc(n + 1, sizeof(*array));
	if (!array)
		return 1;
	for (unsigned long r = 0; r < rounds; r++) {
		for (unsigned long i = 1; i <= n; i++) array[i] = 0; /* MARK:l2_zero */
		for (unsigned long j = 1; j <= n; j++) array[j] = (int)j; /* MARK:l2_rewrite */
		for (unsigned long j = 1; j <= n; j++) sum += (unsigned long)array[j]; /* MARK:l2_read */
	}
	expect = rounds * (n * (n + 1) / 2);
	free((void *)array);
	if (sum != expect) {
		fprintf(stderr, "witch-listing2: read %lu, expected %lu\n", sum, expect);
		return 1;
	}
	return 0;
}
